#!/usr/bin/env bash
# The anchors' own test suites, run against modelbin (see
# crates/python/drop_in/README.md). Needs the venv scripts/test.sh made, with
# modelbin installed in it. safetensors' suite needs PyTorch: it runs with the
# Python in $DROP_IN_TORCH_PYTHON (a venv with torch, numpy and ml_dtypes,
# modelbin importable from it, e.g. through PYTHONPATH) and is skipped
# without it.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-target/py/bin/python}
cache=target/drop-in
drop_in=crates/python/drop_in
mkdir -p "$cache"

# The test folder of a pinned sdist, unpacked once under $cache/NAME-VERSION.
# Usage: suite NAME VERSION SHA256 TESTS_PATH_IN_SDIST
suite() {
    local name=$1 version=$2 sha=$3 tests=$4
    local archive="$cache/$name-$version.tar.gz" dir="$cache/$name-$version"
    if [ ! -f "$archive" ]; then
        echo "drop-in: downloading the $name==$version sdist from PyPI" >&2
        "$python" -m pip download --quiet --no-deps --no-binary :all: \
            -d "$cache" "$name==$version"
    fi
    echo "$sha  $archive" | sha256sum --check --quiet
    if [ ! -d "$dir/tests" ]; then
        rm -rf "$dir"
        local tmp
        tmp=$(mktemp -d "$cache/unpack.XXXXXX")
        tar -xzf "$archive" -C "$tmp" "$name-$version/$tests"
        mkdir -p "$dir"
        mv "$tmp/$name-$version/$tests" "$dir/tests"
        rm -rf "$tmp"
    fi
    echo "$dir"
}

# Runs the suite in DIR with PYTHON and pytest's ARGS, after CONFTEST, from
# a scratch directory (safetensors' tests write files into the current one).
# Usage: run DIR PYTHON CONFTEST ARGS...
run() {
    local dir=$1 runner=$2 conftest=$3 root=$PWD
    shift 3
    case $runner in
        /*) ;;
        */*) runner=$root/$runner ;;
    esac
    cp "$conftest" "$dir/conftest.py"
    local scratch
    scratch=$(mktemp -d "$cache/run.XXXXXX")
    local status=0
    (cd "$scratch" && PYTHONPATH="$root/$drop_in/shims${PYTHONPATH:+:$PYTHONPATH}" \
        "$runner" -m pytest -q -p no:cacheprovider --rootdir "$root/$dir" "$@") || status=$?
    rm -rf "$scratch"
    return "$status"
}

dir=$(suite tiktoken 0.14.0 231dec90efcdccf1b565a1416107736f1e09b1a08fe736ef9d6363e626d03874 tests)
echo "drop-in: tiktoken 0.14.0's own tests against modelbin" >&2
run "$dir" "$python" "$drop_in/tiktoken_conftest.py" "$PWD/$dir/tests"

dir=$(suite safetensors 0.8.0 fabaf3e0f18a6618d9b36560682562157f77c2b71fcffc7b432be2baed9d753d \
    bindings/python/tests)
if [ -z "${DROP_IN_TORCH_PYTHON:-}" ]; then
    echo "drop-in: SKIPPED safetensors 0.8.0's test_simple.py: it needs PyTorch;" \
        "set DROP_IN_TORCH_PYTHON to a Python with torch and modelbin" >&2
else
    echo "drop-in: safetensors 0.8.0's test_simple.py against modelbin" >&2
    run "$dir" "$DROP_IN_TORCH_PYTHON" "$drop_in/safetensors_conftest.py" \
        "$PWD/$dir/tests/test_simple.py"
fi
