"""The feature browser of ``sae features``: its data against numpy over the
engine's codes (densities, histograms, intervals, the contexts' per-token
activations, the decoder effects against the models' own matrices), and
its page in a real headless Chromium (scripts/install-chromium.sh installs
Debian's ``chromium``): the index lists every latent, sorting, band filters
and search change it, a latent's view shows shaded tokens and a histogram,
and the console stays free of errors. Screenshots go to
target/sae-page/."""

import hashlib
import json
import pathlib
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest
from safetensors.numpy import load_file

import modelbin
from browser import Browser, chromium
from conftest import REPO

sys.path.insert(0, str(REPO / "tests" / "reference"))
import tllm_reference  # noqa: E402

BINS = 24
SHOTS = REPO / "target" / "sae-page"
RANK = {"typical": 0, "rare": 1, "dense": 2, "ultra-rare": 3, "dead": 4}


@pytest.fixture(scope="module")
def tllm_run(tmp_path_factory, cli):
    """A byte-level TLLM, its recording over the start of Newton's Opticks,
    a TopK autoencoder trained on it and everything `features` finds."""
    root = tmp_path_factory.mktemp("page")
    model = root / "m.tllm"
    done = subprocess.run([str(cli), "tllm", "init", "--seq", "32", "--seed", "2", "-o",
                           str(model)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = root / "opticks.txt"
    text.write_bytes((REPO / "tests" / "data" / "opticks.txt").read_bytes()[:12000])
    data = modelbin.acts.record(model, [text], out=root / "acts", progress=False)
    sae = modelbin.sae.train(data, layer=-1, out=root / "sae", d_sae=96, k=6, steps=60,
                             batch_size=256, lr=3e-3, progress=False)
    html = root / "page.html"
    found = modelbin.sae.features(sae, data, layer=-1, top=4, quantiles=4, samples=2,
                                  latents=96, html=html, model=model, progress=False)
    return dict(model=model, text=text.read_bytes(), data=data, sae=sae, found=found,
                html=html)


def test_the_data_is_what_numpy_counts_over_the_codes(tllm_run):
    sae, found, text = tllm_run["sae"], tllm_run["found"], tllm_run["text"]
    vectors = modelbin.saev.Dataset(tllm_run["data"], layer=-1)[:]
    codes = sae.encode(vectors)
    n = len(codes)
    assert sorted(f["latent"] for f in found) == list(range(96))
    ranks = [(RANK[f["band"]], abs(np.log10(max(f["density"], 1e-300)) + 2)) for f in found]
    assert ranks == sorted(ranks), "browsing order: by band, then density nearest 1%"
    output = tllm_reference.load(str(tllm_run["model"]))["output"]
    for f in found:
        j = f["latent"]
        column = codes[:, j]
        fired = np.flatnonzero(column > 0)
        assert f["fired"] == len(fired) and f["density"] == pytest.approx(len(fired) / n)
        if not len(fired):
            assert f["band"] == "dead" and f["top"] == [] and f["quantiles"] == []
            continue
        values = column[fired]
        top = np.float32(values.max())
        assert f["max"] == top and f["mean"] == pytest.approx(values.mean(), rel=1e-5)
        bins = np.minimum((values / top * np.float32(BINS)).astype(int), BINS - 1)
        assert f["histogram"] == np.bincount(bins, minlength=BINS).tolist()
        # The strongest: by value, the earlier input among equals.
        strongest = sorted(fired, key=lambda i: (-column[i], i))[:4]
        assert [c["img"] * 32 + c["token"] for c in f["top"]] == strongest
        np.testing.assert_array_equal(np.float32([c["value"] for c in f["top"]]),
                                      column[strongest])
        intervals = np.minimum((values / top * np.float32(4)).astype(int), 3)
        assert [q["fired"] for q in f["quantiles"]] == \
            np.bincount(intervals, minlength=4).tolist()
        for q, interval in zip(f["quantiles"], range(4)):
            assert len(q["samples"]) == min(2, q["fired"])
            for c in q["samples"]:
                assert q["low"] <= c["value"] <= q["high"]
        for c in f["top"] + [c for q in f["quantiles"] for c in q["samples"]]:
            at = c["img"] * 32 + c["token"]
            start = at - c["at"]
            # The recorded text, a byte that begins no character as \xNN
            # and line breaks as ⏎.
            shown = text[start:start + len(c["tokens"])].decode("utf-8", "backslashreplace")
            assert "".join(c["tokens"]) == shown.replace("\n", "⏎")
            # Every token's activation is the latent's code there.
            expected = codes[start:start + len(c["tokens"]), j]
            np.testing.assert_allclose(c["acts"], expected, rtol=5e-4)
        # The direct effect on the next token: the decoder row times the
        # unembedding, read by the independent numpy reader.
        effect = sae.W_dec[j].astype(np.float64) @ output
        raised = f["effects"]["logits"]["raised"]
        lowered = f["effects"]["logits"]["lowered"]
        assert [t["id"] for t in raised] == np.argsort(-effect, kind="stable")[:8].tolist()
        assert [t["id"] for t in lowered] == np.argsort(effect, kind="stable")[:8].tolist()
        np.testing.assert_allclose([t["value"] for t in raised], effect[[t["id"] for t in raised]],
                                   rtol=1e-4, atol=1e-6)


def test_the_page_is_never_written_over_an_input(tllm_run):
    metadata = pathlib.Path(tllm_run["data"]) / "metadata.json"
    before = metadata.read_bytes()
    with pytest.raises(modelbin.FormatError, match="the output is the input"):
        modelbin.sae.features(tllm_run["sae"], tllm_run["data"], layer=-1, top=1, quantiles=1,
                              samples=0, html=metadata, progress=False)
    assert metadata.read_bytes() == before


def test_bert_latents_list_the_nearest_word_pieces(tmp_path, minilm_dir):
    data = modelbin.acts.record(minilm_dir, [REPO / "tests" / "data" / "minilm" / "sentences.jsonl"],
                                out=tmp_path / "acts", tokens_per_text=16, progress=False)
    sae = modelbin.sae.train(data, layer=-1, out=tmp_path / "sae", d_sae=32, k=4, steps=20,
                             batch_size=64, progress=False)
    found = modelbin.sae.features(sae, data, layer=-1, latents=3, model=minilm_dir,
                                  progress=False)
    embeddings = load_file(str(minilm_dir / "model.safetensors"))[
        "embeddings.word_embeddings.weight"].astype(np.float64)
    vocab = (minilm_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    special = np.array([t.startswith("[") and t.endswith("]") for t in vocab])
    for f in found:
        row = sae.W_dec[f["latent"]].astype(np.float64)
        cosine = embeddings @ row / (np.linalg.norm(embeddings, axis=1) * np.linalg.norm(row))
        cosine[special] = -np.inf
        nearest = np.argsort(-cosine, kind="stable")[:8]
        pieces = f["effects"]["nearest"]["pieces"]
        assert [p["id"] for p in pieces] == nearest.tolist()
        assert [p["token"] for p in pieces] == [vocab[i] for i in nearest]
        np.testing.assert_allclose([p["value"] for p in pieces], cosine[nearest], rtol=1e-4)
        # Word pieces read as the recorded text: `##` pieces join the word.
        for c in f["top"]:
            assert not any(t.startswith("##") for t in c["tokens"])
    # A notebook shows one latent's view in a frame of its own.
    shown = found[0]._repr_html_()
    assert shown.startswith("<iframe srcdoc=") and "&quot;open&quot;" in shown
    with pytest.raises(ValueError, match="decoder effects are read from TLLM, BERT and decoder language"):
        sine = tmp_path / "sine"
        metadata = {"vit_family": "test", "vit_ckpt": "x", "layers": [-1],
                    "n_patches_per_img": 4, "cls_token": False, "d_vit": 384, "seed": 0,
                    "n_imgs": 8, "max_patches_per_shard": 100, "data": "zeros"}
        with modelbin.saev.Writer(sine, metadata) as writer:
            writer.write(np.zeros((8, 1, 4, 384), dtype=np.float32))
        (path,) = sine.iterdir()
        modelbin.sae.features(sae, path, layer=-1, model=minilm_dir, progress=False)


@pytest.fixture(scope="module")
def browser():
    binary = chromium()
    if binary is None:
        pytest.skip("no chromium: scripts/install-chromium.sh installs Debian's package "
                    "(it needs apt and root or sudo)")
    with Browser(binary, width=1280, height=820) as b:
        yield b


def rows(browser):
    """The latents the index shows, in order."""
    return browser.evaluate(
        "Array.from(document.querySelectorAll('#index a:not([hidden])'))"
        ".map(a => Number(a.dataset.latent))")


def test_the_page_in_a_real_browser(tllm_run, browser):
    found = tllm_run["found"]
    by_latent = {f["latent"]: f for f in found}
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.open(tllm_run["html"].as_uri())
    browser.screenshot(SHOTS / "index.png")
    # The index lists every latent, mid-density first, under a header
    # naming its columns.
    assert rows(browser) == [f["latent"] for f in found]
    head = browser.evaluate(
        "Array.from(document.querySelectorAll('#index-head span')).map(s => s.textContent)")
    assert head == ["latent", "density", "max", "band", "top tokens"]
    # Each header cell sits above its column.
    columns = browser.evaluate(
        "(() => { const box = (e) => e.getBoundingClientRect();"
        " const head = Array.from(document.querySelectorAll('#index-head span')).map(box);"
        " const row = Array.from(document.querySelector('#rows a').children).map(box);"
        " return head.map((h, i) => [h.left, h.bottom, row[i].left, row[i].top]); })()")
    for head_left, head_bottom, left, top in columns:
        assert abs(head_left - left) < 2 and head_bottom <= top + 1
    # Sorting reorders it.
    browser.evaluate("const s = document.getElementById('sort'); s.value = 'index';"
                     "s.dispatchEvent(new Event('change'))")
    assert rows(browser) == list(range(96))
    browser.evaluate("s.value = 'density-desc'; s.dispatchEvent(new Event('change'))")
    assert rows(browser) == sorted(by_latent, key=lambda j: (-by_latent[j]["density"], j))
    # Turning a band off hides its latents.
    band = found[0]["band"]
    browser.evaluate(f"document.querySelector('#bands button[data-band=\"{band}\"]').click()")
    assert rows(browser) == [j for j in sorted(by_latent, key=lambda j: (-by_latent[j]["density"], j))
                             if by_latent[j]["band"] != band]
    assert browser.evaluate("document.getElementById('shown').textContent") == \
        f"{sum(f['band'] != band for f in found)} of 96 latents shown"
    browser.evaluate(f"document.querySelector('#bands button[data-band=\"{band}\"]').click()")
    assert len(rows(browser)) == 96
    # Searching by token text keeps the latents that fire on it.
    word = next(t for f in found for t in (c["tokens"][c["at"]].strip().lower() for c in f["top"])
                if t.isalpha())
    browser.evaluate(f"const q = document.getElementById('search'); q.value = {json.dumps(word)};"
                     "q.dispatchEvent(new Event('input'));"
                     "new Promise(r => setTimeout(r, 400))")
    matching = [j for j in rows(browser)]
    assert 0 < len(matching) < 96
    for j in matching:
        f = by_latent[j]
        shown = [c["tokens"][c["at"]] for c in f["top"]] + \
            [c["tokens"][c["at"]] for q in f["quantiles"] for c in q["samples"]] + \
            [t["token"] for t in f["effects"]["logits"]["raised"]]
        assert any(word in t.lower() for t in shown), (j, word)
    browser.evaluate("q.value = ''; q.dispatchEvent(new Event('input'));"
                     "s.value = 'browse'; s.dispatchEvent(new Event('change'));"
                     "new Promise(r => setTimeout(r, 400))")
    assert rows(browser) == [f["latent"] for f in found]
    # A latent's view: a histogram bar per bin, every context's tokens with
    # their values on hover, the firing ones shaded.
    latent = found[0]
    browser.evaluate(f"location.hash = '#latent-{latent['latent']}'")
    view = browser.evaluate(
        "({title: document.querySelector('#latent h2').textContent,"
        " bars: document.querySelectorAll('#latent svg.hist rect').length,"
        " contexts: document.querySelectorAll('#latent .ctx').length,"
        " hits: document.querySelectorAll('#latent .tok.hit').length,"
        " tokens: document.querySelectorAll('#latent .tok').length,"
        " shaded: Array.from(document.querySelectorAll('#latent .tok[style]')).map(t => t.title),"
        " effects: document.querySelectorAll('#latent .effects td').length})")
    contexts = latent["top"] + [c for q in latent["quantiles"] for c in q["samples"]]
    assert view["title"].startswith(f"Latent {latent['latent']}")
    assert view["bars"] == BINS
    assert view["contexts"] == view["hits"] == len(contexts)
    assert view["tokens"] == sum(len(c["tokens"]) for c in contexts)
    assert len(view["shaded"]) == sum(a > 0 for c in contexts for a in c["acts"])
    assert all(": " in title for title in view["shaded"])
    assert view["effects"] == 2 * 2 * 8
    browser.screenshot(SHOTS / "latent.png")
    # A latent whose strongest input sits on a space: the outlined token
    # of every context is shown by itself (a space as ␣), never blank, and
    # each interval says how many inputs it counts and how many it shows.
    spaced = next(f for f in found if any(c["tokens"][c["at"]] == " " for c in f["top"]))
    for f in (latent, spaced):
        browser.evaluate(f"location.hash = '#latent-{f['latent']}'")
        shown = f["top"] + [c for q in reversed(f["quantiles"]) for c in q["samples"]]
        hits = browser.evaluate(
            "Array.from(document.querySelectorAll('#latent .tok.hit')).map(t => t.textContent)")
        assert hits == [c["tokens"][c["at"]].replace(" ", "␣") or "∅" for c in shown]
        assert all(h.strip() for h in hits)
        headings = browser.evaluate(
            "Array.from(document.querySelectorAll('#latent h4')).map(h => h.textContent)")
        assert len(headings) == len(f["quantiles"])
        for heading, q in zip(headings, reversed(f["quantiles"])):
            assert f"]: {q['fired']} input{'' if q['fired'] == 1 else 's'}, " in heading
            assert heading.endswith(f"; {len(q['samples'])} shown")
            assert (q["fired"] > 0) == (len(q["samples"]) > 0)
    assert "␣" in hits
    # The index's preview shows tokens by themselves too: every latent's
    # preview names its tokens, none blank.
    previews = browser.evaluate(
        "Array.from(document.querySelectorAll('#rows a .prev')).map(p => p.textContent)")
    assert all(p.strip() for preview in previews if preview for p in preview.split(" · "))
    # A preview cut by the column's width is whole in its title.
    titles = browser.evaluate(
        "Array.from(document.querySelectorAll('#rows a .prev')).map(p => p.title)")
    assert titles == previews
    # Densities read alike down the column: three significant digits.
    densities = browser.evaluate(
        "Array.from(document.querySelectorAll('#rows a .den')).map(d => d.textContent)")
    assert all(d == "0%" or len(d.rstrip("%").replace(".", "").lstrip("0")) == 3
               for d in densities), densities
    preview = browser.evaluate(
        f"document.querySelector('#rows a[data-latent=\"{spaced['latent']}\"] .prev').textContent")
    assert "␣" in preview and all(p.strip() for p in preview.split(" · "))
    assert browser.errors() == []


def test_a_notebook_cell_shows_one_latent(tllm_run, browser, tmp_path):
    feature = tllm_run["found"][1]
    cell = tmp_path / "cell.html"
    cell.write_text("<!doctype html><meta charset='utf-8'>" + feature._repr_html_(),
                    encoding="utf-8")
    browser.open(cell.as_uri())
    title = browser.evaluate(
        "new Promise(r => { const f = document.querySelector('iframe');"
        " const read = () => f.contentDocument.querySelector('#latent h2');"
        " const poll = () => read() ? r(read().textContent) : setTimeout(poll, 50); poll(); })")
    assert title.startswith(f"Latent {feature['latent']}")
    assert browser.errors() == []


def png(pixels):
    """A PNG file of an RGB ``uint8`` array ``[height, width, 3]``."""
    height, width, _ = pixels.shape
    raw = b"".join(b"\x00" + row.tobytes() for row in pixels)

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data)))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) +
            chunk(b"IEND", b""))


GRID, PATCH, N_IMGS, D = 4, 8, 6, 8


@pytest.fixture(scope="module")
def image_run(tmp_path_factory):
    """Six 32×32 PNG pictures, each with a bright square on one patch of a
    4×4 grid; a dataset of their (made-up) activations with the image side
    files, in which dimension 0 is large on the bright patch; a ReLU
    autoencoder whose latent 0 reads dimension 0; and what `features`
    finds, with its page."""
    root = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(7)
    bright = [(3 * img + 1) % (GRID * GRID) for img in range(N_IMGS)]
    entries = []
    for img in range(N_IMGS):
        pixels = np.full((32, 32, 3), 30, dtype=np.uint8)
        r, c = divmod(bright[img], GRID)
        pixels[r * PATCH:(r + 1) * PATCH, c * PATCH:(c + 1) * PATCH] = (250, 220, 40 * img)
        path = root / f"picture{img}.png"
        path.write_bytes(png(pixels))
        entries.append({"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()})
    values = (rng.standard_normal((N_IMGS, 1, 1 + GRID * GRID, D)) * 0.3).astype(np.float32)
    for img in range(N_IMGS):
        values[img, 0, 1 + bright[img], 0] += 3 + img
    metadata = {"vit_family": "dinov2", "vit_ckpt": "tiny", "layers": [-1],
                "n_patches_per_img": GRID * GRID, "cls_token": True, "d_vit": D, "seed": 0,
                "n_imgs": N_IMGS, "max_patches_per_shard": 1000, "data": "six pictures"}
    with modelbin.saev.Writer(root / "acts", metadata) as writer:
        writer.write(values)
    (data,) = (root / "acts").iterdir()
    (data / "images.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    (data / "vision.json").write_text(json.dumps({
        "family": "dinov2", "model": "tiny", "patch_size": PATCH, "patch_grid": [GRID, GRID],
        "input_size": [32, 32], "registers": 0,
        "preprocessor_config": {"do_resize": True, "size": {"height": 32, "width": 32},
                                "do_center_crop": False}}))
    d_sae = 12
    w_enc = (rng.standard_normal((D, d_sae)) * 0.5).astype(np.float32)
    w_enc[:, 0] = 0
    w_enc[0, 0] = 1
    sae = modelbin.sae.SAE(w_enc, w_enc.T.copy(), np.full(d_sae, -0.3, np.float32),
                           np.zeros(D, np.float32), None, {"architecture": "standard"})
    html = root / "page.html"
    found = modelbin.sae.features(sae, data, layer=-1, top=3, quantiles=3, samples=2,
                                  latents=d_sae, html=html, progress=False)
    patches = values[:, 0, 1:, :]
    codes = np.maximum(patches @ sae.W_enc + sae.b_enc, 0)  # [img, patch, latent]
    return dict(root=root, data=data, sae=sae, found=found, html=html, codes=codes,
                bright=bright, entries=entries, values=values)


def test_image_features_are_the_codes_numpy_computes(image_run):
    found, codes = image_run["found"], image_run["codes"]
    assert sorted(f["latent"] for f in found) == list(range(12))
    for f in found:
        j = f["latent"]
        per_image = codes[:, :, j].max(axis=1)
        fired = np.flatnonzero(per_image > 0)
        strongest = sorted(fired, key=lambda i: (-per_image[i], i))[:3]
        assert [c["img"] for c in f["top"]] == strongest
        for c in f["top"] + [c for q in f["quantiles"] for c in q["samples"]]:
            image = c["image"]
            assert image["grid"] == [GRID, GRID]
            assert image["path"] == image_run["entries"][c["img"]]["path"]
            np.testing.assert_allclose(image["acts"], codes[c["img"], :, j], rtol=5e-4)
        for c in f["top"]:
            assert c["value"] == pytest.approx(per_image[c["img"]], rel=5e-4)
            assert c["token"] == 1 + int(np.argmax(codes[c["img"], :, j]))
        if not len(fired):
            continue
        # Intervals count patches; each shows images with a patch in it
        # (up to --samples 2), each by its strongest patch there, so an
        # interval of weak patches of images strong elsewhere shows them.
        column = codes[:, :, j].astype(np.float32)
        bins = np.minimum((column / np.float32(f["max"]) * np.float32(3)).astype(int), 2)
        for q, interval in enumerate(f["quantiles"]):
            inside = (column > 0) & (bins == q)
            assert interval["fired"] == inside.sum()
            assert len(interval["samples"]) == min(2, inside.any(axis=1).sum())
            for c in interval["samples"]:
                there = np.where(inside[c["img"]], column[c["img"]], -np.inf)
                assert c["value"] == pytest.approx(there.max(), rel=5e-4)
                assert c["token"] == 1 + int(np.argmax(there))
    # Latent 0 reads dimension 0: its strongest patch is each image's
    # bright square, its top images the brightest.
    latent0 = next(f for f in found if f["latent"] == 0)
    assert [c["img"] for c in latent0["top"]] == [5, 4, 3]
    assert [c["token"] - 1 for c in latent0["top"]] == [image_run["bright"][i] for i in (5, 4, 3)]


def test_features_over_a_union_of_slices_are_the_datasets(image_run, tmp_path):
    """The dataset cut into slices (images 0..2, 2 alone, 3..6), each with
    its own image list, and joined by a manifest: the same latents, inputs
    and page as the dataset, and a notebook cell draws each member's
    pictures."""
    data = image_run["data"]
    metadata = json.loads((data / "metadata.json").read_text())
    slices = []
    for a, b in [(0, 2), (2, 3), (3, N_IMGS)]:
        writer = modelbin.saev.Writer(tmp_path / "acts",
                                      dict(metadata, n_imgs=b - a, data=f"images {a}..{b}"))
        writer.write(image_run["values"][a:b])
        path = pathlib.Path(writer.close())
        (path / "images.jsonl").write_text(
            "".join(json.dumps(e) + "\n" for e in image_run["entries"][a:b]))
        (path / "vision.json").write_bytes((data / "vision.json").read_bytes())
        slices.append(path)
    union = modelbin.saev.write_union(tmp_path / "acts", slices)
    pages = []
    for dataset in [data, union]:
        pages.append(tmp_path / f"{len(pages)}.html")
        found = modelbin.sae.features(image_run["sae"], dataset, layer=-1, top=3, quantiles=3,
                                      samples=2, latents=12, html=pages[-1], progress=False)
        assert found == image_run["found"]
    assert pages[0].read_text() == pages[1].read_text()
    latent0 = next(f for f in found if f["latent"] == 0)
    shown = {c["img"] for c in latent0["top"] + [c for q in latent0["quantiles"]
                                                 for c in q["samples"]]}
    assert {0, 1, 2} & shown and {3, 4, 5} & shown, "images of several members"
    cell = latent0._repr_html_()
    assert cell.count("data:image/jpeg;base64,") == len(shown), "each image's picture once"


def test_the_image_page_in_a_real_browser(image_run, browser, tmp_path):
    found, html = image_run["found"], image_run["html"]
    page = html.read_text()
    data = json.loads(page.split('<script type="application/json" id="data">')[1]
                      .split("</script>")[0])
    uris = [i[2] for i in data["images"]["list"]]
    assert all(u.startswith("data:image/jpeg;base64,") for u in uris)
    assert all(page.count(u) == 1 for u in uris), "each picture once per page"
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.open(html.as_uri())
    assert rows(browser) == [f["latent"] for f in found]
    latent = next(f for f in found if f["latent"] == 0)
    browser.evaluate("location.hash = '#latent-0'")
    view = browser.evaluate(
        "({figures: Array.from(document.querySelectorAll('#latent figure.pic'))"
        "   .map(f => Number(f.dataset.img)),"
        " pictures: document.querySelectorAll('#latent figure.pic img').length,"
        " loaded: Array.from(document.querySelectorAll('#latent figure.pic img'))"
        "   .every(i => i.complete && i.naturalWidth === 32),"
        " cells: Array.from(document.querySelectorAll('#latent figure.pic'))"
        "   .map(f => Array.from(f.querySelectorAll('svg.heat rect'))"
        "   .map(r => Number(r.dataset.v))),"
        " title: document.querySelector('#latent figure.pic svg.heat rect title').textContent})")
    # The top images, then the intervals' samples, highest interval first.
    shown = latent["top"] + [c for q in reversed(latent["quantiles"]) for c in q["samples"]]
    assert view["figures"] == [c["img"] for c in shown]
    assert view["pictures"] == len(shown) and view["loaded"]
    for cells, c in zip(view["cells"], shown):
        assert len(cells) == GRID * GRID
        np.testing.assert_allclose(cells, c["image"]["acts"], rtol=2e-3)
    assert view["title"].startswith("patch (0, 0): ")
    headings = browser.evaluate(
        "Array.from(document.querySelectorAll('#latent h4')).map(h => h.textContent)")
    for heading, q in zip(headings, reversed(latent["quantiles"]), strict=True):
        n = len(q["samples"])
        assert f"]: {q['fired']} {'patch' if q['fired'] == 1 else 'patches'}, " in heading
        assert heading.endswith(f"; {n} {'image' if n == 1 else 'images'} shown")
    browser.screenshot(SHOTS / "images.png")
    assert browser.errors() == []
    # A notebook cell draws the same pictures.
    assert "data:image/jpeg;base64," in found[0]._repr_html_()
    # A missing picture: the heat map alone, with a note.
    top = latent["top"][0]["img"]
    pathlib.Path(image_run["entries"][top]["path"]).unlink()
    missing = tmp_path / "missing.html"
    modelbin.sae.features(image_run["sae"], image_run["data"], layer=-1, latent=0, top=3,
                          html=missing, progress=False)
    browser.open(missing.as_uri())
    browser.evaluate("location.hash = '#latent-0'")
    first = browser.evaluate(
        "(() => { const f = document.querySelector('#latent figure.pic');"
        " return {img: Number(f.dataset.img), blank: !!f.querySelector('.blank'),"
        " note: f.querySelector('.note').textContent,"
        " cells: f.querySelectorAll('svg.heat rect').length}; })()")
    assert first == {"img": top, "blank": True, "note": "image file missing",
                     "cells": GRID * GRID}
    assert browser.errors() == []
