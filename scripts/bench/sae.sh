#!/usr/bin/env bash
# `modelbin sae train` against a PyTorch CPU TopK SAE (scripts/bench/sae_torch.py)
# with the same d_in, d_sae, k and batch, on the same SAEV dataset, at 1 and 2
# threads. Prints one JSON line per run and a table of vectors/s.
#
# PyTorch runs from the heavy test venv (scripts/heavy-venv.sh: torch and numpy
# pinned, made once outside the clone and reused), so the benchmark does not
# install a second copy of the 5 GB CUDA build. No GPU is used
# (torch.cuda.is_available() is False).
#
# Settings (environment): STEPS (timed steps, default 100), THREADS ("1 2"),
# D_SAE (4096), K (32), BATCH (4096), D_IN (384, as MiniLM), N_IMGS (8400
# images of 49 patches: 411,600 vectors, one epoch for 100 steps), VARIANTS
# (torch encoder:decode pairs, default "sparse:embedding_bag", the fastest;
# "centered:dense" is SAELens's formulation, see sae_torch.py --help).
set -euo pipefail
cd "$(dirname "$0")/../.."

STEPS="${STEPS:-100}"
THREADS="${THREADS:-1 2}"
D_SAE="${D_SAE:-4096}"
K="${K:-32}"
BATCH="${BATCH:-4096}"
D_IN="${D_IN:-384}"
N_IMGS="${N_IMGS:-8400}"
VARIANTS="${VARIANTS:-sparse:embedding_bag}"

python="$(scripts/heavy-venv.sh)/bin/python"

cargo build --release -p modelbin
modelbin=target/release/modelbin

# The dataset: N_IMGS images of 49 patches + CLS, one layer (-1), N(0, 1)
# values, written once (its directory is named by its metadata's hash).
data_root=target/bench-sae/data
marker="$data_root/d$D_IN-n$N_IMGS.path"
if [ ! -s "$marker" ] || [ ! -f "$(cat "$marker")/metadata.json" ]; then
    rm -rf "$data_root"
    mkdir -p "$data_root"
    "$modelbin" acts write-synthetic -o "$data_root" --n-imgs "$N_IMGS" --layers=-1 \
        --d-vit "$D_IN" --json >"$data_root/written.json"
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["path"])' \
        "$data_root/written.json" >"$marker"
fi
dataset=$(cat "$marker")

out=target/bench-sae
results="$out/results.jsonl"
: >"$results"
for t in $THREADS; do
    "$modelbin" sae train "$dataset" --layer=-1 --d-sae "$D_SAE" -k "$K" \
        --batch-size "$BATCH" --steps "$STEPS" --threads "$t" --json -o "$out/out" --force |
        python3 -c 'import json, sys; r = json.loads(sys.stdin.read()); r.update(impl="modelbin", threads=int(sys.argv[1])); print(json.dumps(r))' "$t" |
        tee -a "$results"
    for v in $VARIANTS; do
        "$python" scripts/bench/sae_torch.py --saev "$dataset" --layer=-1 --d-sae "$D_SAE" \
            -k "$K" --batch-size "$BATCH" --steps "$STEPS" --threads "$t" \
            --encoder "${v%%:*}" --decode "${v##*:}" | tee -a "$results"
    done
done

python3 - "$results" <<'EOF'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
ours = {r["threads"]: r for r in rows if r["impl"] == "modelbin"}
torch = [r for r in rows if r["impl"] == "torch"]
if torch:
    t0 = torch[0]
    print(f"\nTopK SAE training, d_in {t0['d_in']}, d_sae {t0['d_sae']}, k {t0['k']}, "
          f"batch {t0['batch_size']}, {t0['steps']} steps; torch {t0['torch']}")
print(f"{'threads':>7} | {'torch variant':<24} | {'modelbin vec/s':>14} | {'torch vec/s':>11} | "
      f"{'ours/torch':>10} | {'fvu ours':>8} | {'fvu torch':>9}")
for r in torch:
    o = ours.get(r["threads"])
    if o is None:
        continue
    variant = f"{r['encoder']}/{r['decode']}"
    print(f"{r['threads']:>7} | {variant:<24} | {o['vectors_per_second']:>14.0f} | "
          f"{r['vectors_per_second']:>11.0f} | {o['vectors_per_second'] / r['vectors_per_second']:>10.2f} | "
          f"{o['fvu']:>8.4f} | {r['final_fvu']:>9.4f}")
EOF
