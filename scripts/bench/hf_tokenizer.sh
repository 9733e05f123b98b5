#!/usr/bin/env bash
# tokenizer.json speed: modelbin's byte-level engine against Hugging Face's
# `tokenizers` crate on the same files and corpus (one thread each, same
# process, alternating, best of PASSES). Trains GPT-2-style and Llama 3-style
# tokenizers with ~50k merges offline (scripts/bench/hf_train.py, heavy
# venv), builds the corpus if missing (scripts/bench/corpus.py), then runs
# crates/tokenize/examples/hf_bench.rs.
set -euo pipefail
cd "$(dirname "$0")/../.."
passes=${PASSES:-5}
python=${MODELBIN_HEAVY_PYTHON:-$(scripts/heavy-venv.sh)/bin/python}
[ -f target/bench-corpus/manifest.json ] || python3 scripts/bench/corpus.py --out target/bench-corpus
for style in gpt2 llama3; do
    json=target/bench-hf/$style-50k/tokenizer.json
    [ -f "$json" ] || "$python" scripts/bench/hf_train.py "$style" 50257 "$json"
done
flock /tmp/modelbin-build.lock cargo build --release -p modelbin-tokenize --example hf_bench
for style in gpt2 llama3; do
    echo "== $style-50k"
    RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false taskset -c 0 \
        target/release/examples/hf_bench "target/bench-hf/$style-50k/tokenizer.json" target/bench-corpus "$passes"
done
