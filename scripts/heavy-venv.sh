#!/usr/bin/env bash
# Prints the path of the heavy test venv (torch, transformers,
# sentence-transformers, sae-lens, ...: crates/python/requirements-heavy.txt),
# making it first when missing. It lives outside the clone, in
# ~/.cache/modelbin-test/<hash of the requirements>, because it is 6.5 GB:
# a fresh clone reuses it, and a change of the requirements makes a new one.
# 4 GB of it are the CUDA libraries (nvidia-*) torch's PyPI wheel depends on;
# the tests run on the CPU, but `import torch` loads libtorch_cuda.so, which
# links them, so they cannot be left out (installed --no-deps, torch 2.15
# fails to import: "libcudart.so.13: cannot open shared object file"). The path printed is a thin venv on top of
# it (its site-packages added by a .pth file) holding the packages whose
# declared dependencies are far wider than what the tests import
# (requirements-heavy-nodeps.txt: saev's activation reader, torchvision),
# installed without those dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

requirements=crates/python/requirements-heavy.txt
hash=$(sha256sum "$requirements" | cut -c1-16)
root=${MODELBIN_TEST_CACHE:-$HOME/.cache/modelbin-test}
venv="$root/$hash"
if [ ! -f "$venv/.complete" ]; then
    echo "heavy-venv: making $venv (torch and friends, 6.5 GB, once)" >&2
    rm -rf "$venv"
    mkdir -p "$root"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
    # --no-cache-dir: a cached copy of the wheels would take 5 GB more.
    "$venv/bin/python" -m pip install --quiet --no-cache-dir -r "$requirements" >&2
    touch "$venv/.complete"
fi

nodeps=crates/python/requirements-heavy-nodeps.txt
layer="$venv-$(sha256sum "$nodeps" | cut -c1-16)"
if [ ! -f "$layer/.complete" ]; then
    rm -rf "$layer"
    python3 -m venv "$layer"
    purelib() { "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
    purelib "$venv" > "$(purelib "$layer")/zz-heavy.pth"
    "$layer/bin/python" -m pip install --quiet --no-deps -r "$nodeps" >&2
    touch "$layer/.complete"
fi
echo "$layer"
