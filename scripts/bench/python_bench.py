#!/usr/bin/env python3
"""The Python package against its anchors, in one run on the same inputs.

Tokenizer: a mixed corpus (this repository's docs and sources, a public-domain
book, generated multilingual, emoji, number and whitespace lines), split into
documents; ids are checked equal to tiktoken's before anything is timed.
Tensors: load_file of a large safetensors file, every value read once.
Embeddings: SentenceEmbedder.encode against onnxruntime running the same
MiniLM graph (scripts/bench/minilm_onnx.py) on the same token ids, checked
equal (cosine) first. SAEV: ShuffledLoader against numpy fancy indexing on
np.memmap shards, over one dataset written by modelbin.saev.Writer.

Run by scripts/bench/python.sh, which installs the anchors. Prints a JSON
line per measurement and a table.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import sys
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
# tiktoken reads the real vocabularies from a local cache (no network here),
# set up as the tests do.
sys.path.insert(0, str(REPO / "crates" / "python" / "tests"))
import conftest  # noqa: E402,F401


def corpus(target_bytes: int) -> list:
    """Documents of mixed text, about ``target_bytes`` in all."""
    texts = []
    for pattern in ("*.md", "docs/**/*.md", "crates/**/*.rs", "crates/**/*.py", "tests/data/opticks.txt"):
        for path in sorted(REPO.glob(pattern)):
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
    rng = random.Random(0)
    scripts = ["Ελληνικά κείμενα", "русский текст", "日本語のテキストです", "中文文本", "한국어 텍스트",
               "עברית", "العربية", "हिन्दी पाठ", "ภาษาไทย", "tiếng Việt"]
    generated = []
    for _ in range(20000):
        kind = rng.randrange(4)
        if kind == 0:
            generated.append(" ".join(rng.choice(scripts) for _ in range(rng.randint(3, 20))))
        elif kind == 1:
            generated.append("".join(chr(rng.randint(0x1F300, 0x1FAFF)) for _ in range(rng.randint(1, 30))))
        elif kind == 2:
            generated.append(" ".join(str(rng.randint(0, 10**12)) for _ in range(rng.randint(1, 30))))
        else:
            generated.append(" " * rng.randint(1, 200) + "x" + "\n" * rng.randint(1, 5))
    texts.append("\n".join(generated))
    docs = []
    for text in texts:
        for start in range(0, len(text), 4000):
            docs.append(text[start:start + 4000])
    out, size, i = [], 0, 0
    while size < target_bytes:
        doc = docs[i % len(docs)]
        out.append(doc)
        size += len(doc.encode("utf-8"))
        i += 1
    return out


def timed(fn, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def report(rows, name, seconds, size, unit="MB/s"):
    rows.append((name, size / seconds / 1e6))
    print(json.dumps({"case": name, "seconds": round(seconds, 4), unit: round(size / seconds / 1e6, 2)}))


def bench_tokenizers():
    import modelbin
    import quicktok
    import tiktoken

    docs = corpus(5_000_000)
    size = sum(len(d.encode("utf-8")) for d in docs)
    print(json.dumps({"documents": len(docs), "bytes": size}))
    rows = []
    for name in ("cl100k_base", "o200k_base"):
        ours, ref, qt = modelbin.get_encoding(name), tiktoken.get_encoding(name), quicktok.get_encoding(name)
        expected = ref.encode_ordinary_batch(docs, num_threads=2)
        assert ours.encode_ordinary_batch(docs, num_threads=2) == expected, "modelbin differs from tiktoken"
        tokens, offsets = qt.encode_batch(docs, 2, False)
        assert all(list(tokens[offsets[i]:offsets[i + 1]]) == expected[i] for i in range(len(docs))), \
            "quicktok differs from tiktoken"
        for label, fn in [
            ("modelbin encode_ordinary (per document, 1 thread)", lambda: [ours.encode_ordinary(d) for d in docs]),
            ("quicktok encode_ordinary (per document, 1 thread)", lambda: [qt.encode_ordinary(d) for d in docs]),
            ("tiktoken encode_ordinary (per document, 1 thread)", lambda: [ref.encode_ordinary(d) for d in docs]),
            ("modelbin encode_ordinary_batch (2 threads)", lambda: ours.encode_ordinary_batch(docs, num_threads=2)),
            ("quicktok encode_batch (2 threads)", lambda: qt.encode_batch(docs, 2, False)),
            ("tiktoken encode_ordinary_batch (2 threads)", lambda: ref.encode_ordinary_batch(docs, num_threads=2)),
        ]:
            report(rows, f"{name}: {label}", timed(fn), size)
    return rows


def bench_load_file(path: pathlib.Path):
    import safetensors.numpy as st

    import modelbin.numpy as mnp

    if not path.exists():
        rng = np.random.default_rng(0)
        tensors = {f"layer{i}.weight": rng.standard_normal((4096, 4096), dtype=np.float32) for i in range(16)}
        st.save_file(tensors, path)
    size = path.stat().st_size
    rows = []

    def read_all(load):
        arrays = load(path)
        return sum(float(a.sum(dtype=np.float64)) for a in arrays.values())

    assert read_all(mnp.load_file) == read_all(st.load_file)
    report(rows, "modelbin.numpy.load_file + read every value", timed(lambda: read_all(mnp.load_file)), size)
    report(rows, "safetensors.numpy.load_file + read every value", timed(lambda: read_all(st.load_file)), size)
    report(rows, "modelbin.numpy.load_file (open only)", timed(lambda: mnp.load_file(path)), size)
    report(rows, "safetensors.numpy.load_file (open only)", timed(lambda: st.load_file(path)), size)
    return rows


def rate(rows, name, seconds, count, unit):
    rows.append((name, f"{count / seconds:,.1f} {unit}"))
    print(json.dumps({"case": name, "seconds": round(seconds, 4), unit: round(count / seconds, 2)}))


def bench_embedder(threads: int):
    """Batch 1 and 32 at ``threads`` (our pool's size is fixed per process
    by RAYON_NUM_THREADS, set by python.sh)."""
    import argparse

    sys.path.insert(0, str(REPO / "scripts" / "bench"))
    import minilm_onnx

    import modelbin

    model_dir = REPO / "target" / "test-data" / "all-MiniLM-L6-v2"
    embd = REPO / "target" / "bench" / "minilm.embd"
    if not embd.exists():
        import subprocess
        subprocess.run(["cargo", "run", "--quiet", "--release", "-p", "modelbin", "--", "convert",
                        str(model_dir), str(embd)], check=True, cwd=REPO)
    with open(REPO / "tests" / "data" / "minilm" / "sentences.jsonl", encoding="utf-8") as f:
        sentences = [json.loads(line) for line in f if line.strip()]
    ours = modelbin.SentenceEmbedder(embd)
    session = minilm_onnx.session(argparse.Namespace(onnx=minilm_onnx.DEFAULT_ONNX, model_dir=str(model_dir)),
                                  threads)
    inputs = [ours.tokenize([s]) for s in sentences]

    def onnx_all():
        return np.concatenate([session.run(None, x)[0] for x in inputs])

    ours_all = ours.encode(sentences, batch_size=1)
    reference = onnx_all()
    cosine = float(np.min(np.sum(ours_all * reference, axis=1)))
    assert cosine >= 0.9999, f"embeddings differ from onnxruntime's: min cosine {cosine}"
    print(json.dumps({"sentences": len(sentences), "min_cosine_vs_onnxruntime": round(cosine, 9)}))
    rows = []
    label = f"{threads} thread{'s' if threads > 1 else ''}, batch 1"
    rate(rows, f"SentenceEmbedder.encode ({label})",
         timed(lambda: [ours.encode(s) for s in sentences]), len(sentences), "sentences/s")
    rate(rows, f"onnxruntime ({label})", timed(onnx_all), len(sentences), "sentences/s")
    rate(rows, f"SentenceEmbedder.encode ({threads} thread{'s' if threads > 1 else ''}, batch_size 32)",
         timed(lambda: ours.encode(sentences, batch_size=32)), len(sentences), "sentences/s")
    return rows


def bench_saev_loader():
    import modelbin

    root = REPO / "target" / "bench" / "saev"
    d, tokens, images = 768, 197, 2000  # 1.2 GB: ViT-B/16 shapes, one layer
    metadata = {"vit_family": "clip", "vit_ckpt": "bench", "layers": [-1], "n_patches_per_img": tokens - 1,
                "cls_token": True, "d_vit": d, "seed": 0, "n_imgs": images,
                "max_patches_per_shard": 200 * tokens, "data": "random"}
    if not root.exists():
        rng = np.random.default_rng(0)
        with modelbin.saev.Writer(root, metadata) as writer:
            for _ in range(images // 100):
                writer.write(rng.standard_normal((100, 1, tokens, d), dtype=np.float32))
    (path,) = [p for p in root.iterdir() if p.is_dir()]
    per_shard = metadata["max_patches_per_shard"] // tokens
    shards = [np.memmap(path / f"acts{i:06d}.bin", dtype=np.float32, mode="r", shape=(per_shard, 1, tokens, d))
              for i in range(images // per_shard)]
    batch = 4096
    total = images * tokens

    def ours():
        n = 0
        for b in modelbin.saev.ShuffledLoader(path, layer=-1, patches="all", batch_size=batch, seed=0,
                                              num_threads=2):
            n += len(b)
        assert n == total

    def numpy_gather():
        order = np.random.default_rng(0).permutation(total)
        for start in range(0, total, batch):
            idx = order[start:start + batch]
            img, token = np.divmod(idx, tokens)
            shard, row = np.divmod(img, per_shard)
            out = np.empty((len(idx), d), dtype=np.float32)
            for s in np.unique(shard):
                sel = shard == s
                out[sel] = shards[s][row[sel], 0, token[sel]]

    rows = []
    rate(rows, "saev.ShuffledLoader (2 threads, batches of 4096, one epoch)", timed(ours), total / batch,
         "batches/s")
    rate(rows, "numpy fancy indexing on np.memmap (batches of 4096, one epoch)", timed(numpy_gather),
         total / batch, "batches/s")
    return rows


def main():
    rows = bench_tokenizers()
    rows += bench_load_file(REPO / "target" / "bench" / "one-gigabyte.safetensors")
    rows = [(name, f"{value:,.1f} MB/s") for name, value in rows]
    rows += bench_embedder(threads=int(os.environ.get("RAYON_NUM_THREADS", "2")))
    rows += bench_saev_loader()
    print()
    print("| case | rate |")
    print("|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    os.makedirs(REPO / "target" / "bench", exist_ok=True)
    sys.exit(main())
