#!/usr/bin/env bash
# The anchors' own test suites, run against modelbin (see
# crates/python/drop_in/README.md). Needs the venv scripts/test.sh made, with
# modelbin installed in it.
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
        local tmp
        tmp=$(mktemp -d "$cache/unpack.XXXXXX")
        tar -xzf "$archive" -C "$tmp" "$name-$version/$tests"
        mkdir -p "$dir"
        mv "$tmp/$name-$version/$tests" "$dir/tests"
        rm -rf "$tmp"
    fi
    echo "$dir"
}

dir=$(suite tiktoken 0.14.0 231dec90efcdccf1b565a1416107736f1e09b1a08fe736ef9d6363e626d03874 tests)
cp "$drop_in/tiktoken_conftest.py" "$dir/conftest.py"
echo "drop-in: tiktoken 0.14.0's own tests against modelbin" >&2
PYTHONPATH="$PWD/$drop_in/shims${PYTHONPATH:+:$PYTHONPATH}" \
    "$python" -m pytest -q -p no:cacheprovider --rootdir "$dir" "$dir/tests"
