"""examples/ray_record.py on a local Ray instance with 2 workers: the union of
the slices the recorder actors write holds a one-process recording's vectors,
vector for vector, for a vision transformer, a byte-level text model and a
decoder language model (a GPT-2 directory); a recorder
killed mid-slice leaves its slice absent, never partial, and a second run
records only the missing slices."""

import json
import os
import signal
import struct
import subprocess
import sys
import time
import zlib

import numpy as np
import pytest
import ray
from safetensors.numpy import save_file

import modelbin
from conftest import REPO

sys.path.insert(0, str(REPO / "examples"))
import ray_record  # noqa: E402

SCRIPT = REPO / "examples" / "ray_record.py"


@pytest.fixture(scope="module")
def local_ray():
    ray.cloudpickle.register_pickle_by_value(ray_record)
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True,
             logging_level="ERROR", log_to_driver=False)
    yield
    ray.shutdown()


def write_clip(folder, width=16, patch=8, side=32):
    """A CLIP vision tower of width 16, 2 blocks, 8×8 patches on 32×32
    images, with varied weights, and CLIP's preprocessing scaled to it (as
    crates/cli/tests/record_images.rs writes it)."""
    h, f = width, 2 * width
    shapes = [("embeddings.class_embedding", [h]),
              ("embeddings.patch_embedding.weight", [h, 3, patch, patch]),
              ("embeddings.position_embedding.weight", [(side // patch) ** 2 + 1, h]),
              ("pre_layrnorm.weight", [h]), ("pre_layrnorm.bias", [h])]
    for block in range(2):
        for part, rows, cols in [("self_attn.q_proj", h, h), ("self_attn.k_proj", h, h),
                                 ("self_attn.v_proj", h, h), ("self_attn.out_proj", h, h),
                                 ("mlp.fc1", f, h), ("mlp.fc2", h, f),
                                 ("layer_norm1", h, 0), ("layer_norm2", h, 0)]:
            name = f"encoder.layers.{block}.{part}"
            shapes.append((f"{name}.weight", [rows, cols] if cols else [rows]))
            shapes.append((f"{name}.bias", [rows]))
    tensors = {}
    for t, (name, shape) in enumerate(shapes):
        i = np.arange(int(np.prod(shape)), dtype=np.int64)
        values = (((i + 31 * t) * 7919) % 23).astype(np.float32) * 0.02 - 0.2
        if name.endswith(("layer_norm1.weight", "layer_norm2.weight", "pre_layrnorm.weight")):
            values = values + 1.0
        tensors[name] = values.reshape(shape)
    folder.mkdir(parents=True)
    save_file(tensors, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({
        "model_type": "clip_vision_model", "hidden_size": h, "intermediate_size": f,
        "num_hidden_layers": 2, "num_attention_heads": 2, "patch_size": patch,
        "image_size": side, "hidden_act": "quick_gelu"}))
    (folder / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "CLIPImageProcessor", "do_resize": True,
        "size": {"shortest_edge": 36}, "resample": 3, "do_center_crop": True,
        "crop_size": {"height": side, "width": side}, "do_rescale": True,
        "rescale_factor": 1.0 / 255.0, "do_normalize": True,
        "image_mean": [0.48145466, 0.4578275, 0.40821073],
        "image_std": [0.26862954, 0.26130258, 0.27577711], "do_convert_rgb": True}))
    return folder


def write_png(path, pixels):
    """An 8-bit RGB PNG of ``pixels`` (uint8 ``[h, w, 3]``)."""
    h, w, _ = pixels.shape
    raw = b"".join(b"\x00" + pixels[row].tobytes() for row in range(h))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def tllm(cli, path, dim, layers, seq):
    subprocess.run([str(cli), "tllm", "init", "--dim", str(dim), "--layers", str(layers),
                    "--heads", "2", "--ffn", str(2 * dim), "--seq", str(seq), "--seed", "3",
                    "-o", str(path)], check=True, capture_output=True)
    return path


def byte_level_alphabet():
    """GPT-2's byte-to-character map: printable bytes stand for themselves,
    the others for the characters from U+0100 on, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    shifted = iter(range(256, 512))
    return [chr(b) if b in printable else chr(next(shifted)) for b in range(256)]


def write_gpt2(folder, width=16, layers=2, positions=64):
    """A random GPT-2 directory as transformers saves one (config.json,
    model.safetensors with tied embeddings) with a byte-level tokenizer of
    the 256 bytes and no merges, and no BOS (no tokenizer_config.json)."""
    folder.mkdir()
    vocab = 257
    (folder / "config.json").write_text(json.dumps({
        "model_type": "gpt2", "vocab_size": vocab, "n_embd": width, "n_layer": layers,
        "n_head": 2, "n_positions": positions, "activation_function": "gelu_new"}))
    rng = np.random.default_rng(11)
    weights = {"wte.weight": [vocab, width], "wpe.weight": [positions, width],
               "ln_f.weight": [width], "ln_f.bias": [width]}
    for i in range(layers):
        for name, shape in [("ln_1.weight", [width]), ("ln_1.bias", [width]),
                            ("attn.c_attn.weight", [width, 3 * width]),
                            ("attn.c_attn.bias", [3 * width]),
                            ("attn.c_proj.weight", [width, width]), ("attn.c_proj.bias", [width]),
                            ("ln_2.weight", [width]), ("ln_2.bias", [width]),
                            ("mlp.c_fc.weight", [width, 4 * width]),
                            ("mlp.c_fc.bias", [4 * width]),
                            ("mlp.c_proj.weight", [4 * width, width]),
                            ("mlp.c_proj.bias", [width])]:
            weights[f"h.{i}.{name}"] = shape
    save_file({name: rng.normal(0, 0.2, shape).astype(np.float32)
               for name, shape in weights.items()}, str(folder / "model.safetensors"))
    alphabet = byte_level_alphabet()
    (folder / "tokenizer.json").write_text(json.dumps({
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": 256, "content": "<|endoftext|>", "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": False,
                          "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                          "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {c: i for i, c in enumerate(alphabet)}, "merges": []}}))
    return folder


def same_vectors(a, b):
    """Every vector of every layer and token, in order, equal."""
    x = modelbin.saev.Dataset(a, layer="all", patches="all")
    y = modelbin.saev.Dataset(b, layer="all", patches="all")
    assert len(x) == len(y) > 0
    assert np.array_equal(x[0:len(x)], y[0:len(y)])


def test_images_on_two_workers_equal_one_process(local_ray, tmp_path):
    model = write_clip(tmp_path / "clip")
    images = tmp_path / "images"
    (images / "b").mkdir(parents=True)
    rng = np.random.default_rng(5)
    for i in range(11):
        folder = images / "b" if i % 3 == 0 else images
        write_png(folder / f"{i:02d}.png", rng.integers(0, 256, (40 + i, 36, 3), dtype=np.uint8))
    lines = []
    union = ray_record.record(str(model), [str(images)], str(tmp_path / "ray"), images=True,
                              workers=2, slices=3, settings={"layers": [0, -1]},
                              log=lines.append)
    assert union == str(tmp_path / "ray" / "union.json")
    assert len([line for line in lines if "recorded in" in line]) == 3
    one = modelbin.acts.record(model, images=[images], out=tmp_path / "one", layers=[0, -1],
                               progress=False)
    same_vectors(union, one)
    # The slices keep the images in the one-process order.
    members = json.loads(open(union).read())["members"]
    listed = []
    for member in members:
        entries = (tmp_path / "ray" / member["path"] / "images.jsonl").read_text().splitlines()
        listed += [json.loads(e)["path"] for e in entries]
    assert listed == [json.loads(e)["path"] for e in
                      (tmp_path / "one" / os.path.basename(one) / "images.jsonl")
                      .read_text().splitlines()]
    # Each slice's data names its files.
    first = modelbin.saev.Dataset(tmp_path / "ray" / members[0]["path"])
    assert json.dumps(listed[0]) in first.metadata["data"]
    # Read as one: the union and the one-process dataset shuffle alike.
    ours = modelbin.saev.ShuffledLoader(union, layer=-1, batch_size=7, seed=4)
    theirs = modelbin.saev.ShuffledLoader(one, layer=-1, batch_size=7, seed=4)
    for a, b in zip(ours, theirs):
        assert np.array_equal(a, b)
    dataset = modelbin.saev.Dataset(union)
    assert dataset.union["n_imgs"] == 11 and len(dataset.union["members"]) == 3
    assert dataset.get(10, -1, 0).shape == (16,)
    # A second run finds every slice recorded.
    lines.clear()
    again = ray_record.record(str(model), [str(images)], str(tmp_path / "ray"), images=True,
                              workers=2, slices=3, settings={"layers": [0, -1]},
                              log=lines.append)
    assert again == union and all("already recorded" in line for line in lines)
    # Other inputs into the same root are refused.
    with pytest.raises(ValueError, match="other inputs"):
        ray_record.record(str(model), [str(images / "b")], str(tmp_path / "ray"),
                          images=True, workers=2, slices=3, settings={"layers": [0, -1]})


def test_text_on_two_workers_equals_one_process(local_ray, tmp_path, cli):
    model = tllm(cli, tmp_path / "m.tllm", 16, 2, 16)
    texts = tmp_path / "texts"
    texts.mkdir()
    # 40 bytes a file: five whole windows of 8 byte tokens, so no window
    # crosses a slice.
    for i in range(5):
        (texts / f"{i}.txt").write_text((f"text {i}, " * 10)[:40])
    union = ray_record.record(str(model), [str(texts)], str(tmp_path / "ray"), images=False,
                              workers=2, slices=2,
                              settings={"layers": [0, -1], "tokens_per_text": 8})
    one = modelbin.acts.record(model, [texts], out=tmp_path / "one", layers=[0, -1],
                               tokens_per_text=8, progress=False)
    same_vectors(union, one)
    members = json.loads(open(union).read())["members"]
    assert [m["n_imgs"] for m in members] == [10, 15]


def test_a_language_model_on_two_workers_equals_one_process(local_ray, tmp_path):
    model = write_gpt2(tmp_path / "gpt2")
    texts = tmp_path / "texts"
    texts.mkdir()
    # 48 ASCII bytes a file, one token each without merges: three whole
    # windows of 16, so no window crosses a slice.
    for i in range(4):
        (texts / f"{i}.txt").write_text((f"words of file {i}; " * 5)[:48])
    settings = {"layers": [0, -1], "tokens_per_text": 16, "site": "mlp_out"}
    union = ray_record.record(str(model), [str(texts)], str(tmp_path / "ray"), images=False,
                              workers=2, slices=2, settings=settings)
    one = modelbin.acts.record(model, [texts], out=tmp_path / "one", progress=False,
                               **settings)
    same_vectors(union, one)
    members = json.loads(open(union).read())["members"]
    assert [m["n_imgs"] for m in members] == [6, 6]
    first = modelbin.saev.Dataset(tmp_path / "ray" / members[0]["path"])
    assert first.metadata["vit_family"] == "gpt2"
    assert first.metadata["data"]["site"] == "mlp_out"


def recorder_pids(driver):
    """The recorder actors' processes among ``driver``'s descendants."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    parents[int(entry), "cmd"] = f.read()
            except OSError:
                continue
    found = []
    for pid in [p for p in parents if isinstance(p, int)]:
        if b"Recorder" not in parents.get((pid, "cmd"), b""):
            continue
        up = pid
        while up in parents and up not in (0, 1, driver):
            up = parents[up]
        if up == driver:
            found.append(pid)
    return found


def test_a_killed_recorder_leaves_no_partial_slice_and_a_rerun_records_the_rest(tmp_path, cli):
    model = tllm(cli, tmp_path / "m.tllm", 192, 6, 64)
    texts = tmp_path / "texts"
    texts.mkdir()
    for i in range(6):
        (texts / f"{i}.txt").write_bytes(bytes((i * 7 + j) % 251 for j in range(64 * 150)))
    root = tmp_path / "ray"
    args = [sys.executable, str(SCRIPT), "-m", str(model), str(texts), "-o", str(root),
            "--workers", "2", "--slices", "6", "--tokens-per-text", "64", "--retries", "0"]
    driver = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO / "examples")})
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and driver.poll() is None and time.monotonic() < deadline:
        partial = list(root.glob("slices/*/*.partial"))
        pids = recorder_pids(driver.pid) if partial else []
        if pids:
            os.kill(pids[0], signal.SIGKILL)
            killed = pids[0]
        time.sleep(0.01)
    out, err = driver.communicate(timeout=300)
    assert killed is not None, f"no recorder was caught mid-slice: {out} {err}"
    assert driver.returncode == 1, out + err
    assert "missing" in err
    assert not (root / "union.json").exists()
    plan = json.loads((root / "slices.json").read_text())
    done = [i for i, s in enumerate(plan["slices"]) if s["dataset"]]
    missing = [i for i, s in enumerate(plan["slices"]) if s["dataset"] is None]
    assert missing, plan
    # Every slice left is complete: a dataset that opens, or a .partial
    # directory, which reads as no dataset.
    for folder in root.glob("slices/*/*"):
        if not folder.name.endswith(".partial"):
            modelbin.saev.Dataset(folder)
    # The second run records only what is missing.
    again = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    lines = again.stdout.splitlines()
    already = sorted(int(line.split()[1].rstrip(":")) for line in lines
                     if "already recorded" in line)
    recorded = sorted(int(line.split()[1].rstrip(":")) for line in lines
                      if "recorded in" in line)
    # The other recorder may finish its slice after the failed run wrote
    # slices.json: that slice is then complete on disk, and found so.
    assert set(done) <= set(already) and set(recorded) <= set(missing)
    assert recorded and sorted(already + recorded) == list(range(6))
    union = lines[-1]
    assert union == str(root / "union.json")
    plan = json.loads((root / "slices.json").read_text())
    assert all(s["dataset"] for s in plan["slices"])
    one = modelbin.acts.record(model, [texts], out=tmp_path / "one", layers=[-1],
                               tokens_per_text=64, progress=False)
    same_vectors(union, one)
