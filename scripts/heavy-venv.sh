#!/usr/bin/env bash
# Prints the path of the heavy test venv (torch, transformers,
# sentence-transformers, sae-lens, ...: crates/python/requirements-heavy.txt),
# making it first when missing. It lives outside the clone, in
# ~/.cache/modelbin-test/<hash of the requirements>, because torch's PyPI
# wheels are about 5 GB: a fresh clone reuses it, and a change of the
# requirements makes a new one.
set -euo pipefail
cd "$(dirname "$0")/.."

requirements=crates/python/requirements-heavy.txt
hash=$(sha256sum "$requirements" | cut -c1-16)
root=${MODELBIN_TEST_CACHE:-$HOME/.cache/modelbin-test}
venv="$root/$hash"
if [ ! -f "$venv/.complete" ]; then
    echo "heavy-venv: making $venv (torch and friends, about 5 GB, once)" >&2
    rm -rf "$venv"
    mkdir -p "$root"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
    "$venv/bin/python" -m pip install --quiet -r "$requirements" >&2
    touch "$venv/.complete"
fi
echo "$venv"
