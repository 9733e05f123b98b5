#!/usr/bin/env python3
"""Per-category tokenizer throughput in Python, single thread, both encodings:
modelbin's Python package vs quicktok (PyPI quicktok-v1) vs tiktoken, on the
corpus that scripts/bench/corpus.py builds in target/bench-corpus.

Each category file is split into documents by the rule shared with
crates/tokenize/examples/corpus_bench.rs (corpus.split_documents: split on
"\\n\\n", merge consecutive parts while the document stays <= 4096 UTF-8 bytes).
Before anything is timed, modelbin's ids must equal tiktoken's on every
document of every category (an AssertionError names the first that differs);
quicktok's are compared too and its differing documents are counted (reported,
not fatal). Then each implementation encodes every document with
encode_ordinary, one call per document, in one thread; the best of --repeat
passes (passes interleaved across implementations) gives MB/s (10^6 bytes of
UTF-8 input per second). Each pass starts with modelbin's piece cache empty.

Output: one JSON line per (category, encoding, implementation), an "overall"
line per (encoding, implementation) (all bytes / sum of the per-category best
times), a "check" line per (category, encoding) with a digest of tiktoken's ids
(compared with tiktoken-rs's by scripts/bench/tokenizer.sh), then a markdown
table on stderr. Run by scripts/bench/tokenizer.sh (pinned to one core with
taskset), or directly in the venv:

    TIKTOKEN_CACHE_DIR=target/test-data/tiktoken-cache target/py/bin/python \\
        scripts/bench/tokenizer_python.py [--categories a b] [--sample BYTES]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
from corpus import CATEGORIES, split_documents  # noqa: E402

ENCODINGS = ("cl100k_base", "o200k_base")
IMPLS = ("modelbin-py", "quicktok", "tiktoken")
MASK64 = (1 << 64) - 1


def ids_digest(all_ids) -> str:
    """"<tokens>:<hex>" where hex is sum over the category's ids, in order, of
    (position + 1) * (id + 1) mod 2^64; corpus_bench.rs computes the same."""
    n, acc = 0, 0
    try:
        import numpy as np
        for ids in all_ids:
            if not ids:
                continue
            a = np.asarray(ids, dtype=np.uint64) + np.uint64(1)
            pos = np.arange(n + 1, n + len(ids) + 1, dtype=np.uint64)
            with np.errstate(over="ignore"):
                acc = (acc + int((a * pos).sum(dtype=np.uint64))) & MASK64
            n += len(ids)
    except ImportError:
        for ids in all_ids:
            for t in ids:
                n += 1
                acc = (acc + n * (t + 1)) & MASK64
    return f"{n}:{acc:016x}"


def tiktoken_cache() -> str:
    """tiktoken's cache directory holding the real .tiktoken files (from
    scripts/fetch-test-data.sh) under the names tiktoken gives their download
    addresses, as crates/python/tests/conftest.py sets it up: no network."""
    import hashlib
    import shutil
    cache = REPO / "target" / "test-data" / "tiktoken-cache"
    cache.mkdir(parents=True, exist_ok=True)
    for name in ENCODINGS:
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        target = cache / hashlib.sha1(url.encode()).hexdigest()
        source = REPO / "target" / "test-data" / "tiktoken" / f"{name}.tiktoken"
        if not target.exists() and source.exists():
            shutil.copy(source, target)
    return str(cache)


def load_documents(corpus_dir: pathlib.Path, names, sample):
    out = {}
    for name in names:
        path = corpus_dir / f"{name}.txt"
        if not path.exists():
            sys.exit(f"{path}: missing; run scripts/bench/corpus.py")
        docs = split_documents(path.read_bytes().decode("utf-8"))  # no newline translation, as in Rust
        if sample:
            kept, size = [], 0
            for d in docs:
                if size >= sample:
                    break
                kept.append(d)
                size += len(d.encode("utf-8"))
            docs = kept
        out[name] = docs
    return out


def best_times(fns, docs, repeat, before_pass):
    """Best wall time per implementation over ``repeat`` interleaved passes.
    ``before_pass()`` runs before each pass, untimed: it empties modelbin's
    piece cache, so that no pass times text the cache has seen before (the
    other tokenizers keep no such state)."""
    best = {k: float("inf") for k in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            before_pass()
            gc.collect()
            gc.disable()
            start = time.perf_counter()
            for d in docs:
                fn(d)
            elapsed = time.perf_counter() - start
            gc.enable()
            best[name] = min(best[name], elapsed)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(REPO / "target" / "bench-corpus"))
    ap.add_argument("--categories", nargs="*", help="default: all")
    ap.add_argument("--encodings", nargs="*", default=list(ENCODINGS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sample", type=int, default=0, help="only the first BYTES of each category")
    args = ap.parse_args()

    os.environ.setdefault("TIKTOKEN_CACHE_DIR", tiktoken_cache())
    import modelbin
    import quicktok
    import tiktoken

    names = args.categories or [n for n, _ in CATEGORIES]
    docs_by = load_documents(pathlib.Path(args.corpus), names, args.sample)
    sizes = {n: sum(len(d.encode("utf-8")) for d in docs) for n, docs in docs_by.items()}

    def emit(rec):
        print(json.dumps({"bench": "tokenizer-corpus", "side": "python", **rec}), flush=True)

    results = {}   # (category, encoding, impl) -> MB/s
    for enc_name in args.encodings:
        ours, qt, ref = (modelbin.get_encoding(enc_name), quicktok.get_encoding(enc_name),
                         tiktoken.get_encoding(enc_name))
        fns = {"modelbin-py": ours.encode_ordinary, "quicktok": qt.encode_ordinary,
               "tiktoken": ref.encode_ordinary}
        # Exactness first, on everything, before any timing.
        quicktok_bad = {}
        for name in names:
            docs = docs_by[name]
            expected = [ref.encode_ordinary(d) for d in docs]
            for i, (d, want) in enumerate(zip(docs, expected)):
                got = ours.encode_ordinary(d)
                assert got == want, (f"modelbin differs from tiktoken: {enc_name}, category {name}, "
                                     f"document {i} ({len(d.encode('utf-8'))} bytes, starts {d[:80]!r})")
            bad = [i for i, (d, want) in enumerate(zip(docs, expected)) if list(qt.encode_ordinary(d)) != want]
            quicktok_bad[name] = bad
            emit({"check": "exact", "category": name, "encoding": enc_name, "documents": len(docs),
                  "bytes": sizes[name], "tokens": sum(map(len, expected)), "modelbin_equals_tiktoken": True,
                  "quicktok_differing_documents": len(bad), "tiktoken_digest": ids_digest(expected)})
        totals = {k: 0.0 for k in IMPLS}
        for name in names:
            docs = docs_by[name]
            best = best_times(fns, docs, args.repeat, modelbin.clear_piece_cache)
            for impl in IMPLS:
                totals[impl] += best[impl]
                mbs = sizes[name] / best[impl] / 1e6
                results[(name, enc_name, impl)] = mbs
                emit({"category": name, "encoding": enc_name, "impl": impl, "bytes": sizes[name],
                      "documents": len(docs), "seconds": round(best[impl], 6), "MB/s": round(mbs, 3),
                      **({"exact": not quicktok_bad[name]} if impl == "quicktok" else {})})
        total_bytes = sum(sizes[n] for n in names)
        for impl in IMPLS:
            mbs = total_bytes / totals[impl] / 1e6
            results[("overall", enc_name, impl)] = mbs
            emit({"category": "overall", "encoding": enc_name, "impl": impl, "bytes": total_bytes,
                  "documents": sum(len(docs_by[n]) for n in names), "seconds": round(totals[impl], 6),
                  "MB/s": round(mbs, 3)})

    # Markdown table (stderr, so stdout stays JSON lines).
    out = sys.stderr
    print("\n| category | encoding | modelbin-py MB/s | quicktok MB/s | tiktoken MB/s | modelbin/quicktok | modelbin/tiktoken |",
          file=out)
    print("|---|---|---:|---:|---:|---:|---:|", file=out)
    for name in names + ["overall"]:
        for enc_name in args.encodings:
            m, q, t = (results[(name, enc_name, i)] for i in IMPLS)
            print(f"| {name} | {enc_name} | {m:.1f} | {q:.1f} | {t:.1f} | {m / q:.2f} | {m / t:.2f} |", file=out)


if __name__ == "__main__":
    main()
