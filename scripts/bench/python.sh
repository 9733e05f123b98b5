#!/usr/bin/env bash
# The Python package's benchmarks against tiktoken, quicktok, safetensors,
# onnxruntime and numpy, in the test venv (target/py) with the anchors added.
# `python.sh batch` runs only batch tokenization into numpy against quicktok.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/py
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet -r crates/python/requirements-test.txt \
    -r scripts/bench/requirements.txt quicktok-v1==0.4.0
"$venv/bin/python" -m pip install --quiet ./crates/python
scripts/fetch-test-data.sh >/dev/null
# The embedder's thread pool is sized once per process.
export RAYON_NUM_THREADS="${RAYON_NUM_THREADS:-2}"
if [ "${1:-}" = batch ]; then
    exec "$venv/bin/python" scripts/bench/tokenizer_batch.py
fi
"$venv/bin/python" scripts/bench/python_bench.py
