#!/usr/bin/env bash
# The test command: cmake and nasm for the libjpeg-turbo build
# (scripts/build-tools.sh); a venv under target/py with the tests' Python oracles
# (numpy for the reference forward passes, tiktoken, safetensors, ...),
# first on PATH so every test's `python3` is the venv's; the real test
# models (cached under target/); every test of the workspace; then the
# Python package built into the same venv and its tests (with Debian's
# chromium for the feature page's browser test); the tests that need torch
# (SAELens, sentence-transformers, transformers) in the heavy venv cached
# outside the clone (scripts/heavy-venv.sh); and the anchors' own test
# suites run against modelbin (scripts/drop-in-suites.sh). Nothing is
# installed into the system Python.
set -euo pipefail
cd "$(dirname "$0")/.."

# A fresh clone's build takes about 6 GB under target/ (and the heavy venv
# 6.5 GB once): warn before the compiler fails on a full disk.
mkdir -p target
free_gb=$(df -Pk target | awk 'NR == 2 { print int($4 / 1048576) }')
if [ "$free_gb" -lt 8 ]; then
    echo "test.sh: only ${free_gb} GB free under target/; the build needs about 6 GB" >&2
fi

venv=target/py
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r crates/python/requirements-test.txt
export PATH="$PWD/$venv/bin:$PATH"

scripts/build-tools.sh
scripts/fetch-test-data.sh
# The Rust tests whose oracle is transformers or HF tokenizers run it from
# the heavy venv, made (once) before them.
heavy=$(scripts/heavy-venv.sh)
export MODELBIN_HEAVY_PYTHON="$heavy/bin/python"
cargo test --workspace --locked "$@"

# The package, built once as a wheel and installed into both venvs.
wheels=target/wheels/test
rm -rf "$wheels"
"$venv/bin/python" -m pip wheel --quiet --no-deps -w "$wheels" ./crates/python
wheel=$(ls "$wheels"/modelbin-*.whl)
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps "$wheel"
scripts/install-chromium.sh
"$venv/bin/python" -m pytest -q crates/python/tests

"$heavy/bin/python" -m pip install --quiet --force-reinstall --no-deps "$wheel"
"$heavy/bin/python" -m pytest -q crates/python/tests_heavy
DROP_IN_TORCH_PYTHON="$heavy/bin/python" scripts/drop-in-suites.sh
