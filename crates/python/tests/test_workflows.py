"""The workflows Python shares with the command line — convert, cost, SAE
training and evaluation — give the command line's results: the same bytes,
the same JSON, bit-identical autoencoders."""

import json
import math
import pathlib
import subprocess

import numpy as np
import pytest

import modelbin
import modelbin.numpy as mnp
from sae_data import sine_dataset


def run(cli, *args):
    done = subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_convert_writes_the_commands_bytes(tmp_path, cli):
    tensors = {"a": np.arange(12, dtype=np.float32).reshape(3, 4),
               "b": np.array([1, -2, 3], dtype=np.int64)}
    source = tmp_path / "in.safetensors"
    mnp.save_file(tensors, str(source))
    report = modelbin.convert(source, tmp_path / "ours.bt", progress=False)
    run(cli, "convert", source, "-o", tmp_path / "theirs.bt")
    assert (tmp_path / "ours.bt").read_bytes() == (tmp_path / "theirs.bt").read_bytes()
    assert report == {"from": "safetensors", "to": "bintensors", "tensors": 2,
                      "bytes_written": (tmp_path / "ours.bt").stat().st_size}
    back = modelbin.convert(tmp_path / "ours.bt", tmp_path / "back", to="safetensors",
                            progress=False)
    assert back["to"] == "safetensors"
    np.testing.assert_array_equal(mnp.load_file(str(tmp_path / "back"))["a"], tensors["a"])
    with pytest.raises(ValueError, match="cannot tell the output format"):
        modelbin.convert(source, tmp_path / "out.unknown")
    with pytest.raises(ValueError, match="unknown weight dtype"):
        modelbin.convert(source, tmp_path / "x.embd", dtype="f8")
    with pytest.raises(FileNotFoundError):
        modelbin.convert(tmp_path / "missing.bt", tmp_path / "y.bt")


def test_cost_is_the_commands_json(tmp_path, cli):
    text = "The quick brown fox jumps over the lazy dog. " * 20
    (tmp_path / "text.txt").write_text(text)
    theirs = json.loads(run(cli, "tokens", "cost", "-m", "gpt-4o-2024-08-06",
                            "--output-tokens", "500", "--json", tmp_path / "text.txt"))
    assert modelbin.cost("gpt-4o-2024-08-06", text, output_tokens=500) == theirs
    counted = modelbin.get_encoding("o200k_base").encode_ordinary(text)
    assert modelbin.cost("GPT-4o-2024-08-06", len(counted), 500)["total_cost"] == \
        theirs["total_cost"]
    with pytest.raises(KeyError, match="gpt-4-32k"):
        modelbin.cost("gpt-4-32k", 10)
    with pytest.raises(ValueError, match="no output price"):
        modelbin.cost("text-embedding-3-small", 10, output_tokens=100)
    with pytest.raises(ValueError, match="cached"):
        modelbin.cost("gpt-4o", 10, cached_tokens=11)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"as_of": "2026-11-01", "currency": "USD",
                                  "unit": "per 1M tokens", "models": {
                                      "house-model": {"input": 2.0, "output": 4.0,
                                                      "encoding": "cl100k_base"}}}))
    ours = modelbin.cost("house-model", 1_000_000, 1_000_000, prices=prices)
    assert (ours["encoding"], ours["total_cost"]) == ("cl100k_base", 6.0)
    # A dict works as a table; its currency and unit are honoured.
    euros = modelbin.cost("house-model", 1000, 2000, prices={
        "as_of": "2026-11-01", "currency": "EUR", "unit": "per 1K tokens",
        "models": {"house-model": {"input": 0.5, "output": 1.5, "encoding": "cl100k_base"}}})
    assert (euros["currency"], euros["input_cost"], euros["output_cost"]) == ("EUR", 0.5, 3.0)
    with pytest.raises(ValueError, match="currency `bananas`"):
        modelbin.cost("house-model", 10, prices={"as_of": "2026-11-01", "currency": "bananas",
                                                 "unit": "per 1M tokens", "models": {}})


def test_chats_with_tools_and_images_are_counted_and_priced_as_the_command(tmp_path, cli):
    chat = {"model": "gpt-4o", "messages": [
        {"role": "user", "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "look", "arguments": "{\"zoom\": 2}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a cat"}],
        "tools": [{"type": "function", "function": {
            "name": "look", "description": "Look closer.", "parameters": {
                "type": "object", "properties": {"zoom": {"type": "number",
                                                          "description": "Zoom"}}}}}]}
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(chat))
    theirs = json.loads(run(cli, "tokens", "cost", "-m", "gpt-4o", "--messages", path, "--json"))
    with pytest.warns(UserWarning, match="counted as 1024x1024"):
        assert modelbin.cost("gpt-4o", chat) == theirs
    # The tools' tokens add to the messages' (an empty chat is the 3 tokens
    # that prime the reply).
    with pytest.warns(UserWarning, match="size of image"):
        without_tools = modelbin.cost("gpt-4o", messages=chat["messages"])["input_tokens"]
    tools = modelbin.count_messages({"messages": [], "tools": chat["tools"]}) - 3
    assert without_tools + tools == theirs["input_tokens"]
    with pytest.warns(UserWarning):
        assert modelbin.count_messages(chat) == theirs["input_tokens"]
    low = [{"role": "user", "content": [{"type": "image_url", "image_url": {
        "url": "https://example.com/a.png", "detail": "low"}}]}]
    encoding = modelbin.get_encoding("o200k_base")
    assert modelbin.count_messages(low) == 3 + encoding.count("user") + 85 + 3
    with pytest.raises(ValueError, match="not a chat"):
        modelbin.count_messages({"messages": "hi"})


@pytest.mark.parametrize("architecture", ["topk", "batchtopk", "relu"])
def test_sae_training_is_bit_identical_to_the_command(tmp_path, cli, architecture):
    data = sine_dataset(tmp_path / "acts")
    args = dict(layer=-1, d_sae=64, k=4, steps=30, batch_size=32, lr=3e-3, seed=7, threads=2,
                architecture=architecture)
    steps = []
    ours = modelbin.sae.train(data, out=tmp_path / "ours", progress=False,
                              on_step=steps.append, **args)
    run(cli, "sae", "train", data, "--layer", "-1", "--d-sae", "64", "-k", "4", "--steps", "30",
        "--batch-size", "32", "--lr", "3e-3", "--seed", "7", "--threads", "2",
        "--architecture", architecture, "--out", tmp_path / "theirs")
    weights = "sae_weights.safetensors"
    assert (tmp_path / "ours" / weights).read_bytes() == \
        (tmp_path / "theirs" / weights).read_bytes()
    assert [s["step"] for s in steps] == list(range(1, 31))
    assert ours.summary["steps"] == 30 and math.isfinite(ours.summary["fvu"])
    assert ours.path == str(tmp_path / "ours")

    theirs = json.loads(run(cli, "sae", "eval", tmp_path / "theirs", data, "--layer", "-1",
                            "--batch-size", "32", "--json"))
    assert modelbin.sae.evaluate(tmp_path / "ours", data, layer=-1, batch_size=32,
                                 progress=False) == theirs
    assert modelbin.sae.evaluate(ours, data, layer=-1, progress=False) == theirs

    lines = run(cli, "sae", "features", tmp_path / "theirs", data, "--layer", "-1", "--top", "3",
                "--latents", "6", "--json", "--html", tmp_path / "theirs.html")
    found = modelbin.sae.features(tmp_path / "ours", data, layer=-1, top=3, latents=6,
                                  html=tmp_path / "ours.html", progress=False)
    assert found == [json.loads(line) for line in lines.splitlines()]
    assert len(found) == 6 and all(len(f["top"]) <= 3 for f in found)
    assert (tmp_path / "ours.html").read_text().replace(str(tmp_path / "ours"), "SAE") == \
        (tmp_path / "theirs.html").read_text().replace(str(tmp_path / "theirs"), "SAE")
    one = modelbin.sae.features(ours, data, layer=-1, latent=found[0]["latent"], progress=False)
    assert [f["latent"] for f in one] == [found[0]["latent"]]
    with pytest.raises(ValueError, match="latent 64: the autoencoder has 64 latents"):
        modelbin.sae.features(ours, data, layer=-1, latent=64, progress=False)


def test_sae_training_refuses_and_stops_cleanly(tmp_path):
    data = sine_dataset(tmp_path / "acts")
    with pytest.raises(ValueError, match="layer 5: the dataset recorded layers"):
        modelbin.sae.train(data, layer=5, out=tmp_path / "x", steps=2, progress=False)
    with pytest.raises(ValueError, match="k 80 is more than d_sae 64"):
        modelbin.sae.train(data, layer=-1, d_sae=64, k=80, out=tmp_path / "x", progress=False)
    # Settings out of range are refused by keyword before the dataset is read.
    for kwargs, message in [(dict(d_sae=0), "d_sae must be at least 1"),
                            (dict(k=0), "k must be at least 1"),
                            (dict(steps=0), "steps must be at least 1"),
                            (dict(batch_size=0), "batch_size must be at least 1"),
                            (dict(lr=float("nan")), "lr must be a finite number above 0"),
                            (dict(l1_coeff=0.0), "l1_coeff must be a finite number above 0"),
                            (dict(architecture="gated"), 'architecture="gated": one of')]:
        with pytest.raises(ValueError, match=message):
            modelbin.sae.train(tmp_path / "missing", layer=-1, out=tmp_path / "x",
                               progress=False, **kwargs)
    assert not (tmp_path / "x").exists()

    def interrupt(report):
        if report["step"] == 3:
            raise KeyboardInterrupt

    out = tmp_path / "stopped"
    with pytest.raises(KeyboardInterrupt):
        modelbin.sae.train(data, layer=-1, d_sae=32, k=4, steps=20, batch_size=16, out=out,
                           progress=False, on_step=interrupt)
    assert sorted(p.name for p in out.iterdir()) == []
    modelbin.sae.train(data, layer=-1, d_sae=32, k=4, steps=4, batch_size=16, out=out,
                       progress=False)
    with pytest.raises(ValueError, match=r"holds an autoencoder; pass force=True"):
        modelbin.sae.train(data, layer=-1, d_sae=32, k=4, steps=4, batch_size=16, out=out,
                           progress=False)
    modelbin.sae.train(data, layer=-1, d_sae=32, k=4, steps=4, batch_size=16, out=out,
                       progress=False, force=True)
    with pytest.raises(ValueError, match="takes vectors of 16 values"):
        other = sine_dataset(tmp_path / "wide", d=8)
        modelbin.sae.evaluate(out, other, layer=-1, progress=False)


def tree(root):
    """Every file under root, by relative path, with its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_recording_writes_the_commands_dataset(tmp_path, cli, minilm_dir):
    model = tmp_path / "m.tllm"
    run(cli, "tllm", "init", "--dim", "16", "--layers", "3", "--heads", "2", "--ffn", "32",
        "--seq", "16", "--seed", "4", "-o", model)
    text = tmp_path / "t.txt"
    text.write_text("The residual stream of a tiny model, recorded window by window. " * 40)
    ours = modelbin.acts.record(model, [text], out=tmp_path / "ours", layers=[0, -1],
                                tokens_per_text=8, progress=False)
    run(cli, "acts", "record", "-m", model, "--layers", "0,-1", "--tokens-per-text", "8",
        "-o", tmp_path / "theirs", text)
    assert tree(tmp_path / "ours") == tree(tmp_path / "theirs")
    assert modelbin.saev.Dataset(ours, layer=-1, patches="image")[0].shape == (16,)
    # The path is a str carrying what `acts record --json` prints.
    theirs = json.loads(run(cli, "acts", "record", "-m", model, "--layers", "0,-1",
                            "--tokens-per-text", "8", "-o", tmp_path / "again", text, "--json"))
    assert isinstance(ours, str) and ours.summary["path"] == ours
    assert set(ours.summary) == set(theirs)
    assert {k: ours.summary[k] for k in ("images", "vectors", "skipped", "skipped_files")} == \
        {k: theirs[k] for k in ("images", "vectors", "skipped", "skipped_files")} == \
        {"images": theirs["images"], "vectors": theirs["vectors"], "skipped": 0,
         "skipped_files": []}
    assert ours.summary["existing"] is False
    # Running the same cell again is a no-op that reports the dataset.
    before = tree(tmp_path / "ours")
    again = modelbin.acts.record(model, [text], out=tmp_path / "ours", layers=[0, -1],
                                 tokens_per_text=8, progress=False)
    assert again == ours and again.summary["existing"] is True
    assert again.summary["vectors"] == ours.summary["vectors"]
    assert tree(tmp_path / "ours") == before

    # A token budget, in both faces: the first whole windows, and the rest
    # of the input counted.
    budget = modelbin.acts.record(model, [text], out=tmp_path / "budget-py",
                                  tokens_per_text=8, max_tokens=100, progress=False)
    run(cli, "acts", "record", "-m", model, "--tokens-per-text", "8", "--max-tokens", "100",
        "-o", tmp_path / "budget-cli", text)
    assert tree(tmp_path / "budget-py") == tree(tmp_path / "budget-cli")
    assert (budget.summary["images"], budget.summary["tokens"]) == (12, 96)
    assert budget.summary["windows_left"] == theirs["images"] - 12
    with pytest.raises(ValueError, match="max_tokens 7 is less than one window of 8"):
        modelbin.acts.record(model, [text], out=tmp_path / "small", tokens_per_text=8,
                             max_tokens=7, progress=False)

    # JSON Lines read by the one rule: an object's field, in both faces.
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"body": f"row {i}: a few words of text"}) + "\n"
                            for i in range(8)))
    by_field = modelbin.acts.record(model, [rows], out=tmp_path / "rows-py", field="body",
                                    tokens_per_text=8, progress=False)
    run(cli, "acts", "record", "-m", model, "--field", "body", "--tokens-per-text", "8",
        "-o", tmp_path / "rows-cli", rows)
    assert tree(tmp_path / "rows-py") == tree(tmp_path / "rows-cli")
    assert json.loads((pathlib.Path(by_field) / "metadata.json").read_text())["data"]["files"][0][
        "json_lines"] == {"field": "body", "texts": 8}

    # The command line is a debug build here: a short text keeps BERT quick.
    short = tmp_path / "short.txt"
    short.write_text("The residual stream of a small model, recorded window by window. " * 3)
    bert = modelbin.acts.record(minilm_dir, [short], out=tmp_path / "bert", cls=True,
                                tokens_per_text=12, progress=False)
    run(cli, "acts", "record", "-m", minilm_dir, "--cls", "--tokens-per-text", "12",
        "-o", tmp_path / "bert-cli", short)
    assert tree(tmp_path / "bert") == tree(tmp_path / "bert-cli")
    assert json.loads((pathlib.Path(bert) / "metadata.json").read_text())["cls_token"] is True

    with pytest.raises(ValueError, match="layers 3: the model has 3 blocks"):
        modelbin.acts.record(model, [text], out=tmp_path / "x", layers=[3], progress=False)
    with pytest.raises(ValueError, match="at most 16 tokens fit"):
        modelbin.acts.record(model, [text], out=tmp_path / "x", tokens_per_text=17,
                             progress=False)

    def interrupt(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        modelbin._native.acts_record(str(model), [str(text)], str(tmp_path / "stopped"),
                                     layers=[-1], tokens_per_text=1, cls=False,
                                     max_patches_per_shard=2_400_000, progress=interrupt)
    assert list((tmp_path / "stopped").rglob("*.bin")) == []


def test_tllm_training_is_bit_identical_to_the_command(tmp_path, cli):
    text = tmp_path / "t.txt"
    text.write_text("A small corpus for a small model, read byte by byte. " * 30)
    shape = dict(dim=16, layers=1, heads=2, ffn=32, seq=16)
    steps = []
    model = modelbin.TLLM.train([text], tmp_path / "ours.tllm", steps=12, batch_size=4,
                                eval_every=5, seed=3, threads=2, progress=False,
                                on_step=steps.append, **shape)
    run(cli, "tllm", "train", text, "--out", tmp_path / "theirs.tllm", "--steps", "12",
        "--batch-size", "4", "--eval-every", "5", "--seed", "3", "--threads", "2",
        *[arg for key, value in shape.items() for arg in (f"--{key}", value)])
    assert (tmp_path / "ours.tllm").read_bytes() == (tmp_path / "theirs.tllm").read_bytes()
    assert [s["step"] for s in steps] == list(range(1, 13))
    assert [s["step"] for s in steps if "val_loss" in s] == [5, 10, 12]
    assert model.summary["steps"] == 12 and model.max_seq_len == 16
    with pytest.raises(ValueError, match="exists"):
        modelbin.TLLM.train([text], tmp_path / "ours.tllm", steps=2, progress=False, **shape)
    with pytest.raises(ValueError, match="already trained for 12 steps"):
        modelbin.TLLM.train([text], tmp_path / "ours.tllm", steps=12, seed=3, resume=True,
                            progress=False, **shape)


def test_line_index_answers_as_the_command(tmp_path, cli, minilm_dir):
    corpus = tmp_path / "lines.txt"
    corpus.write_text("The stock market fell sharply today.\n\nA man is eating a piece of bread.\n"
                      "It is raining.\n")
    embedder = modelbin.SentenceEmbedder(minilm_dir)
    index = modelbin.LineIndex.build(embedder, [corpus])
    assert len(index) == 3
    index.save(tmp_path / "ours.safetensors")
    run(cli, "embed", "-m", minilm_dir, "--input", corpus, "-o", tmp_path / "theirs.safetensors")
    theirs = [json.loads(line) for line in run(
        cli, "search", "-m", minilm_dir, "-q", "Someone eats food", "--top", "2", "--json",
        "--embeddings", tmp_path / "ours.safetensors").splitlines()]
    loaded = modelbin.LineIndex.load(tmp_path / "theirs.safetensors")
    ours = loaded.search(embedder, "Someone eats food", top=2)
    assert [(h["path"], h["line"], h["text"]) for h in ours] == \
        [(h["path"], h["line"], h["text"]) for h in theirs]
    assert ours[0]["text"] == "A man is eating a piece of bread."
    np.testing.assert_allclose([h["score"] for h in ours], [h["score"] for h in theirs],
                               rtol=1e-6)


def test_the_package_face(tmp_path):
    import tomllib

    cargo = tomllib.loads((pathlib.Path(__file__).parents[3] / "Cargo.toml").read_text())
    assert modelbin.__version__ == cargo["workspace"]["package"]["version"]
    assert set(dir(modelbin)) == set(modelbin.__all__) | {"__version__"}
    # A file that breaks its format names itself.
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\": 1}       ")
    with pytest.raises(modelbin.FormatError) as caught:
        modelbin.safe_open(broken, "np")
    assert caught.value.path == str(broken) and str(broken) in str(caught.value)
    # safetensors lists names sorted.
    mnp.save_file({"b": np.zeros(1, np.float32), "a": np.ones(1, np.float32)},
                  str(tmp_path / "two.safetensors"))
    with modelbin.safe_open(tmp_path / "two.safetensors", "np") as f:
        assert f.keys() == ["a", "b"]
    # Dataset slices stack examples.
    data = sine_dataset(tmp_path / "acts", n_imgs=4, d=8)
    ds = modelbin.saev.Dataset(data, layer=-1, patches="image")
    np.testing.assert_array_equal(ds[2:5], np.stack([ds[2], ds[3], ds[4]]))
    assert ds[3:3].shape == (0, 8)
