#!/usr/bin/env bash
# The test command: a venv under target/py with the tests' Python oracles
# (numpy for the reference forward passes, tiktoken, safetensors, ...),
# first on PATH so every test's `python3` is the venv's; the real test
# models (cached under target/); every test of the workspace; then the
# Python package built with the README's command into the same venv and
# its tests, with Debian's chromium for the feature page's browser test.
# Nothing is installed into the system Python.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/py
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r crates/python/requirements-test.txt
export PATH="$PWD/$venv/bin:$PATH"

scripts/fetch-test-data.sh
cargo test --workspace --locked "$@"

"$venv/bin/python" -m pip install --quiet ./crates/python
scripts/install-chromium.sh
"$venv/bin/python" -m pytest -q crates/python/tests
