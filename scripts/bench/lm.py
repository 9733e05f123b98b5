#!/usr/bin/env python3
"""Decoder language models: modelbin's `LanguageModel` against transformers on
CPU, in the same run, on a random model in GPT-2 small's shape (12 layers,
768 wide, 12 heads, vocabulary 50257), saved by transformers (F32).

Recording: the residual stream after block LAYER (`blocks.L.hook_resid_post`)
over WINDOWS windows of 128 tokens. transformers' side is the loop an
SAELens user runs: the windows as one batch through the model's base module
(no LM head: SAELens stops at the hooked layer) under
`torch.inference_mode()`, a forward hook on the block copying its output
out as numpy. modelbin's side is `LanguageModel::activations` on the same
ids (crates/infer/examples/lm_bench.rs), f32 and int8; the int8 rows'
cosine to the f32 rows is measured per vector.

Generation: greedy, batch 1, NEW tokens after a PROMPT-token prompt:
`model.generate(do_sample=False)` against `lm::generate`.

Both sides on --threads threads (`torch.set_num_threads`,
`RAYON_NUM_THREADS`), alternating, best of --repeats. Model loading is not
timed. Prints a Markdown table, then memory's read rate (lm_bench
bandwidth) and the ceiling it puts on generation at batch 1, which reads
every f32 weight once per token.

Usage (heavy venv, after `cargo build --release -p modelbin-infer --example lm_bench`):
  flock /tmp/modelbin-cpu.lock $(scripts/heavy-venv.sh)/bin/python scripts/bench/lm.py
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def lcg_ids(n, vocab):
    """The ids lm_bench draws (the same generator)."""
    state, out = 12345, []
    for _ in range(n):
        state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        out.append((state >> 33) % vocab)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--window", type=int, default=128)
    parser.add_argument("--layer", type=int, default=11)
    parser.add_argument("--prompt", type=int, default=16)
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--binary", default=str(ROOT / "target/release/examples/lm_bench"))
    args = parser.parse_args()
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)

    import torch
    import transformers as tf

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        directory = pathlib.Path(tmp) / "gpt2-small-random"
        torch.manual_seed(0)
        config = tf.GPT2Config(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12,
                               n_head=12)
        tf.GPT2LMHeadModel(config).eval().save_pretrained(directory)
        model = tf.AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
        vocab = config.vocab_size

        tokens = torch.tensor(lcg_ids(args.windows * args.window, vocab)).reshape(
            args.windows, args.window)
        block = model.transformer.h[args.layer]

        def transformers_record():
            rows = []
            handle = block.register_forward_hook(
                lambda m, a, o: rows.append((o[0] if isinstance(o, tuple) else o)
                                            .reshape(-1, config.n_embd).numpy().copy()))
            started = time.perf_counter()
            with torch.inference_mode():
                model.transformer(tokens)
            seconds = time.perf_counter() - started
            handle.remove()
            return seconds

        prompt = torch.tensor([lcg_ids(args.prompt, vocab)])

        def transformers_generate():
            started = time.perf_counter()
            with torch.inference_mode():
                out = model.generate(prompt, attention_mask=torch.ones_like(prompt),
                                     max_new_tokens=args.new, min_new_tokens=args.new,
                                     do_sample=False, pad_token_id=0)
            return time.perf_counter() - started, out[0, args.prompt:].tolist()

        def ours(*mode):
            out = subprocess.run([args.binary, mode[0], str(directory), *map(str, mode[1:])],
                                 check=True, capture_output=True, text=True)
            return json.loads(out.stdout)

        best = {}

        def keep(key, seconds):
            best[key] = min(best.get(key, float("inf")), seconds)

        cosines = []
        same_tokens = None
        for _ in range(args.repeats):
            keep("hf_record", transformers_record())
            run = ours("activations", args.windows, args.window, args.layer)
            keep("mb_record_f32", run["f32"])
            keep("mb_record_int8", run["int8"])
            cosines.append((run["cosine_min"], run["cosine_mean"]))
            seconds, hf_ids = transformers_generate()
            keep("hf_generate", seconds)
            run = ours("generate", args.prompt, args.new)
            keep("mb_generate_f32", run["f32"])
            keep("mb_generate_int8", run["int8"])
            same_tokens = next((i for i, (a, b) in enumerate(zip(run["ids"], hf_ids)) if a != b),
                               min(len(run["ids"]), len(hf_ids)))

        n = args.windows * args.window
        print(f"torch {torch.__version__}, transformers {tf.__version__}, "
              f"{args.threads} threads, best of {args.repeats}", file=sys.stderr)
        print("| task | transformers | modelbin f32 | modelbin int8 |")
        print("|---|---|---|---|")
        rate = lambda s: f"{n / s:,.0f} tok/s"
        print(f"| record {args.windows}×{args.window} tokens, block {args.layer} resid_post | "
              f"{rate(best['hf_record'])} | {rate(best['mb_record_f32'])} "
              f"({best['hf_record'] / best['mb_record_f32']:.2f}×) | "
              f"{rate(best['mb_record_int8'])} ({best['hf_record'] / best['mb_record_int8']:.2f}×) |")
        gen = lambda s: f"{args.new / s:,.1f} tok/s"
        print(f"| greedy generation, {args.prompt}-token prompt + {args.new} | "
              f"{gen(best['hf_generate'])} | {gen(best['mb_generate_f32'])} "
              f"({best['hf_generate'] / best['mb_generate_f32']:.2f}×) | "
              f"{gen(best['mb_generate_int8'])} "
              f"({best['hf_generate'] / best['mb_generate_int8']:.2f}×) |")
        # Generation at batch 1 reads every weight once per token (the
        # position table but one row; GPT-2's tied embedding once, as the
        # unembedding): memory's read rate bounds it, for both programs.
        weights = 4 * (sum(p.numel() for p in model.parameters())
                       - model.transformer.wpe.weight.numel())
        read = json.loads(subprocess.run([args.binary, "bandwidth", "1024"], check=True,
                                         capture_output=True, text=True).stdout)["gb_per_s"]
        print(f"\nmemory read rate {read:.1f} GB/s ({args.threads} threads); f32 weights read "
              f"per generated token {weights / 1e6:.0f} MB: at most "
              f"{read * 1e9 / weights:.1f} tok/s at batch 1 in f32")
        low = min(c[0] for c in cosines)
        mean = sum(c[1] for c in cosines) / len(cosines)
        print(f"int8 vs f32 cosine per vector: min {low:.4f}, mean {mean:.5f}; "
              f"greedy tokens equal to transformers' (leading run): {same_tokens}/{args.new}")


if __name__ == "__main__":
    main()
