#!/usr/bin/env bash
# The test command: fetch the real test models (cached under target/), run
# every test of the workspace, then build the Python package with the
# README's command in a venv under target/py and run its tests against
# tiktoken and safetensors.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-test-data.sh
cargo test --workspace --locked "$@"

venv=target/py
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r crates/python/requirements-test.txt
"$venv/bin/python" -m pip install --quiet ./crates/python
"$venv/bin/python" -m pytest -q crates/python/tests
