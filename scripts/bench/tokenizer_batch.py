#!/usr/bin/env python3
"""Batch tokenization into numpy, against quicktok (PyPI quicktok-v1) in one
run on the same documents: flat ids (``encode_ordinary_batch_to_numpy``
against quicktok's ``encode_batch``) and counts (``count_batch`` against
quicktok's ``count_batch``), at 1 and 2 threads, both encodings, on the
mixed corpus of python_bench.py. Ids and counts are checked equal to
tiktoken's first. Best of --repeat passes; prints a JSON line per case and
a markdown table with the ratios.

    scripts/bench/python.sh batch     # installs the anchors, then runs this
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from python_bench import corpus, timed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    import modelbin
    import quicktok
    import tiktoken

    docs = corpus(5_000_000)
    size = sum(len(d.encode("utf-8")) for d in docs)
    print(json.dumps({"documents": len(docs), "bytes": size}))
    rows = []
    for name in ("cl100k_base", "o200k_base"):
        ours, qt, ref = (modelbin.get_encoding(name), quicktok.get_encoding(name),
                         tiktoken.get_encoding(name))
        expected = ref.encode_ordinary_batch(docs, num_threads=2)
        ids, offsets = ours.encode_ordinary_batch_to_numpy(docs, num_threads=2)
        assert np.array_equal(ids, np.concatenate([np.asarray(e, np.uint32) for e in expected]))
        assert np.array_equal(np.diff(offsets), [len(e) for e in expected])
        assert np.array_equal(ours.count_batch(docs, num_threads=2), np.diff(offsets))
        for threads in (1, 2):
            cases = [
                ("flat ids", lambda: ours.encode_ordinary_batch_to_numpy(docs, num_threads=threads),
                 lambda: qt.encode_batch(docs, threads, False)),
                ("counts", lambda: ours.count_batch(docs, num_threads=threads),
                 lambda: quicktok.count_batch(qt, docs, threads)),
            ]
            for case, mine, theirs in cases:
                # Interleaved, best of each.
                best_mine = best_theirs = float("inf")
                for _ in range(args.repeat):
                    best_mine = min(best_mine, timed(mine, repeat=1))
                    best_theirs = min(best_theirs, timed(theirs, repeat=1))
                mb = (size / best_mine / 1e6, size / best_theirs / 1e6)
                rows.append((name, case, threads, *mb))
                print(json.dumps({"encoding": name, "case": case, "threads": threads,
                                  "modelbin MB/s": round(mb[0], 1),
                                  "quicktok MB/s": round(mb[1], 1)}), flush=True)
    print("\n| encoding | case | threads | modelbin | quicktok | ratio |")
    print("|---|---|---|---|---|---|")
    for name, case, threads, mine, theirs in rows:
        print(f"| {name} | {case} | {threads} | {mine:.1f} MB/s | {theirs:.1f} MB/s | "
              f"{mine / theirs:.2f}× |")


if __name__ == "__main__":
    sys.exit(main())
