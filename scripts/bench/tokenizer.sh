#!/usr/bin/env bash
# Tokenizer throughput per text category (issue 17), single thread, both
# encodings, in one run: modelbin (Rust, in process) vs tiktoken-rs vs
# bpe-openai (crates/tokenize/examples/corpus_bench.rs), and modelbin's Python
# package vs quicktok vs tiktoken (scripts/bench/tokenizer_python.py), on the
# corpus scripts/bench/corpus.py builds (24 categories, ~9.6 MB, from packages
# installed here). Each side first checks modelbin's ids equal to its anchor's
# (tiktoken-rs / tiktoken) on every document, and this script checks that
# tiktoken and tiktoken-rs give the same ids (digests) on every category.
#
# Both timed runs are pinned to one core with taskset when it is available
# (BENCH_CPU, default 0). Options, through the environment:
#   REPEAT=3          passes per measurement (the best is kept)
#   SAMPLE=0          only the first SAMPLE bytes of each category (0: all)
#   CATEGORIES="a b"  only these categories
# Results: target/bench-results/tokenizer/{rust,python}.jsonl and table.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

venv=target/py
out=target/bench-results/tokenizer
mkdir -p "$out"
repeat="${REPEAT:-3}"
sample="${SAMPLE:-0}"
categories="${CATEGORIES:-}"

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet -r crates/python/requirements-test.txt quicktok-v1==0.4.0
"$venv/bin/python" -m pip install --quiet ./crates/python
scripts/fetch-test-data.sh >/dev/null
cargo fetch --locked >/dev/null

# The corpus (skipped when already built at the same version).
"$venv/bin/python" scripts/bench/corpus.py

pin=()
cpu="${BENCH_CPU:-0}"
if command -v taskset >/dev/null 2>&1 && taskset -c "$cpu" true 2>/dev/null; then
    pin=(taskset -c "$cpu")
else
    echo "tokenizer.sh: taskset not available; runs are not pinned" >&2
fi
# One thread everywhere (the per-document calls are single-threaded anyway).
export RAYON_NUM_THREADS=1

rust_args=(--repeat "$repeat" --sample "$sample")
py_args=(--repeat "$repeat" --sample "$sample")
if [ -n "$categories" ]; then
    rust_args+=(--categories "${categories// /,}")
    # shellcheck disable=SC2206
    py_args+=(--categories $categories)
fi

# Build with every core, then run pinned.
cargo build --quiet --release --locked -p modelbin-tokenize --example corpus_bench
echo "tokenizer.sh: Rust (modelbin, tiktoken-rs, bpe-openai)..." >&2
${pin[@]+"${pin[@]}"} cargo run --quiet --release --locked -p modelbin-tokenize --example corpus_bench -- \
    "${rust_args[@]}" > "$out/rust.jsonl"
echo "tokenizer.sh: Python (modelbin, quicktok, tiktoken)..." >&2
${pin[@]+"${pin[@]}"} "$venv/bin/python" scripts/bench/tokenizer_python.py "${py_args[@]}" > "$out/python.jsonl"

"$venv/bin/python" - "$out" <<'EOF'
"""One table from both runs, per category and overall."""
import json
import pathlib
import sys

sys.path.insert(0, "scripts/bench")
from corpus import CATEGORIES  # noqa: E402

out = pathlib.Path(sys.argv[1])
rates, checks, inexact = {}, {}, set()
for side in ("rust", "python"):
    for line in (out / f"{side}.jsonl").read_text().splitlines():
        rec = json.loads(line)
        key = (rec["category"], rec["encoding"])
        if rec.get("check"):
            checks.setdefault(key, {})[side] = rec
        else:
            rates[key + (rec["impl"],)] = rec["MB/s"]
            if rec.get("exact") is False:
                inexact.add(key + (rec["impl"],))

# tiktoken (Python) and tiktoken-rs saw the same documents and gave the same ids.
bad = [k for k, c in checks.items() if "rust" not in c or "python" not in c
       or c["rust"]["tiktoken_rs_digest"] != c["python"]["tiktoken_digest"]]
if bad:
    sys.exit(f"tiktoken and tiktoken-rs disagree (or saw different documents) on: {bad}")

order = [n for n, _ in CATEGORIES]
names = sorted({k[0] for k in checks if k[0] in order}, key=order.index) + ["overall"]
encodings = sorted({k[1] for k in checks})
cols = [("modelbin (Rust)", "modelbin-rs"), ("modelbin (Python)", "modelbin-py"), ("quicktok", "quicktok"),
        ("tiktoken", "tiktoken"), ("bpe-openai", "bpe-openai"), ("tiktoken-rs", "tiktoken-rs")]


def cell(key):
    v = rates.get(key)
    if v is None:
        return "–"
    return f"{v:.1f}" + ("*" if key in inexact else "")


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "–"


lines = ["MB/s (10^6 input bytes per second), one thread, best of the passes; documents of "
         "at most 4 kB, one encode_ordinary call each.", "",
         "| category | encoding | " + " | ".join(c for c, _ in cols)
         + " | modelbin/quicktok (Py) | modelbin/tiktoken (Py) | modelbin/tiktoken-rs | modelbin/bpe-openai |",
         "|---|---|" + "---:|" * (len(cols) + 4)]
for name in names:
    for enc in encodings:
        r = {i: rates.get((name, enc, i)) for _, i in cols}
        lines.append(f"| {name} | {enc} | " + " | ".join(cell((name, enc, i)) for _, i in cols)
                     + f" | {ratio(r['modelbin-py'], r['quicktok'])} | {ratio(r['modelbin-py'], r['tiktoken'])}"
                     + f" | {ratio(r['modelbin-rs'], r['tiktoken-rs'])} | {ratio(r['modelbin-rs'], r['bpe-openai'])} |")
total = {k: c for k, c in checks.items() if k[0] in order}
lines += ["", f"Exact: modelbin = tiktoken-rs and modelbin = tiktoken on every document "
          f"({sum(c['rust']['documents'] for c in total.values())} documents across both encodings); "
          "tiktoken and tiktoken-rs digests equal on every category."]
for side, field, label in (("python", "quicktok_differing_documents", "quicktok"),
                           ("rust", "bpe_openai_differing_documents", "bpe-openai")):
    diff = {f"{k[0]}/{k[1]}": c[side][field] for k, c in total.items() if c[side][field]}
    lines.append(f"{label}: " + (f"ids differ from tiktoken on {diff} (marked *)" if diff
                                 else "same ids as tiktoken on every document."))
table = "\n".join(lines)
(out / "table.md").write_text(table + "\n")
print(table)
EOF
