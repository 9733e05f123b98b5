#!/usr/bin/env bash
# Real text for the tokenizer benchmarks, in target/bench-data/:
#   prose.txt   English prose: Vim's help files (Debian package vim-runtime)
#   source.txt  source code: the Rust sources of this workspace's dependencies
# Each is cut to 8 MB.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/target/bench-data"
mkdir -p "$out"
limit=$((8 * 1024 * 1024))

vim_docs=$(ls -d /usr/share/vim/vim*/doc 2>/dev/null | head -n 1 || true)
if [ -z "$vim_docs" ]; then
    echo "fetch-bench-data: installing vim-runtime (Vim's help files) with apt-get" >&2
    apt-get update -qq && apt-get install -y -qq vim-runtime >/dev/null
    vim_docs=$(ls -d /usr/share/vim/vim*/doc | head -n 1)
fi
cargo fetch --locked --manifest-path "$root/Cargo.toml" >/dev/null
sources=$(cargo metadata --locked --format-version 1 --manifest-path "$root/Cargo.toml" |
    python3 -c '
import json, os, sys
for p in sorted(json.load(sys.stdin)["packages"], key=lambda p: p["name"]):
    print(os.path.join(os.path.dirname(p["manifest_path"]), "src"))
')

# Concatenates files (paths on stdin) into $1, up to $limit bytes, ending at
# the last whole line.
concat() {
    python3 -c '
import sys
limit, out = int(sys.argv[1]), bytearray()
for path in sys.stdin.read().split():
    out += open(path, "rb").read()
    if len(out) >= limit:
        break
out = out[:limit]
out = out[: out.rfind(b"\n") + 1]
out.decode("utf-8")
open(sys.argv[2], "wb").write(out)
' "$limit" "$1"
}

ls "$vim_docs"/*.txt | concat "$out/prose.txt"
echo "$sources" | while read -r dir; do [ -d "$dir" ] && find "$dir" -name '*.rs' | sort; done | concat "$out/source.txt"
ls -l "$out" >&2
