#!/usr/bin/env python3
"""Recording on a local Ray instance against one process: examples/ray_record.py
with --workers recorder actors against one `modelbin.acts.record` call over
the same texts, alternating, best of --repeats, as tokens per second.

The model is a byte-level TLLM (dim 256, 6 layers) made by the command
line; the texts are 8 files of 200 windows of 128 bytes; layer -1. Both
sides share this machine's cores: one process already runs its forward on
every core, so the ratio measures Ray's overhead here, not scaling across
machines.

Usage (light venv with the package installed, as scripts/test.sh makes it):
  target/py/bin/python scripts/bench/ray_record.py
"""

import argparse
import atexit
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cli", default=str(ROOT / "target/debug/modelbin"))
    args = parser.parse_args()

    import ray

    import modelbin

    sys.path.insert(0, str(ROOT / "examples"))
    import ray_record

    tmp = pathlib.Path(tempfile.mkdtemp())
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    model = tmp / "m.tllm"
    subprocess.run([args.cli, "tllm", "init", "--dim", "256", "--layers", "6", "--heads", "4",
                    "--ffn", "1024", "--seq", "128", "--seed", "1", "-o", str(model)],
                   check=True, capture_output=True)
    texts = tmp / "texts"
    texts.mkdir()
    for i in range(8):
        (texts / f"{i}.txt").write_bytes(bytes((i * 13 + j * 7) % 251 for j in range(128 * 200)))
    tokens = 8 * 128 * 200
    settings = {"layers": [-1], "tokens_per_text": 128}

    ray.cloudpickle.register_pickle_by_value(ray_record)
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level="ERROR",
             log_to_driver=False)
    best = {"one": float("inf"), "ray": float("inf")}
    for _ in range(args.repeats):
        for side in ("one", "ray"):
            out = tmp / side
            shutil.rmtree(out, ignore_errors=True)
            started = time.perf_counter()
            if side == "one":
                modelbin.acts.record(model, [texts], out=out, progress=False, **settings)
            else:
                ray_record.record(str(model), [str(texts)], str(out), images=False,
                                  workers=args.workers, settings=settings, log=lambda *_: None)
            best[side] = min(best[side], time.perf_counter() - started)
    ray.shutdown()
    print(f"| {tokens:,} tokens, TLLM 256×6, layer -1 | one process {tokens / best['one']:,.0f} "
          f"tok/s | Ray, {args.workers} recorder actors {tokens / best['ray']:,.0f} tok/s "
          f"({best['one'] / best['ray']:.2f}×) |")


if __name__ == "__main__":
    main()
