#!/usr/bin/env python3
"""SAELens's reconstruction evals of an autoencoder spliced into a decoder
language model: `modelbin.sae.evaluate(..., model=DIR)` (what `modelbin sae
eval --model` runs: opening the model, the reconstruction pass over the
dataset's vectors, then clean, spliced and zero-ablated passes over
--windows windows of tokens.bin) against the torch loop an SAELens user
runs (`get_recons_loss`'s computation with transformers forward hooks,
tests/reference/lm_sae_eval_reference.py, in float32 as SAELens computes
it, batches of --batch windows under `torch.inference_mode()`, the model
and SAELens's SAE already loaded), in
the same run, alternating, best of --repeats, on --threads threads.

The model is scripts/bench/lm_record.py's random GPT-2 small (or with
--shape gemma3-270m its Gemma 3 270M, the autoencoder then JumpReLU as
Gemma Scope's is: SAELens's JumpReLUSAE with random weights); the dataset
is its recording of tests/data/opticks.txt at block --layer's resid_post,
and the autoencoder a TopK one trained briefly on it by modelbin.

Usage (heavy venv, the package installed in it, as scripts/test.sh does):
  $(scripts/heavy-venv.sh)/bin/python scripts/bench/lm_sae_eval.py
"""

import argparse
import atexit
import importlib.util
import os
import pathlib
import shutil
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--windows", type=int, default=16)
    parser.add_argument("--window", type=int, default=128)
    parser.add_argument("--layer", type=int, default=6)
    parser.add_argument("--batch", type=int, default=4, help="transformers' windows per batch")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--shape", default="gpt2-small")
    args = parser.parse_args()
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)

    import numpy as np
    import torch
    import transformers as tf
    from sae_lens import SAE
    from sae_lens.util import get_special_token_ids

    import modelbin

    sys.path.insert(0, str(ROOT / "scripts/bench"))
    from lm_record import corpus_lines, gpt2_small
    reference = load("lm_sae_eval_reference", ROOT / "tests/reference/lm_sae_eval_reference.py")

    torch.set_num_threads(args.threads)
    tmp = pathlib.Path(tempfile.mkdtemp())
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    directory = tmp / args.shape
    texts = corpus_lines()
    model = gpt2_small(directory, texts, args.shape)
    dataset = pathlib.Path(modelbin.acts.record(
        directory, texts=texts[:400], out=tmp / "acts", layers=[args.layer],
        tokens_per_text=args.window, progress=False))
    sae_dir = tmp / "sae"
    if args.shape == "gemma3-270m":
        from sae_lens import JumpReLUSAE, JumpReLUSAEConfig

        d_in = model.config.hidden_size
        jump = JumpReLUSAE(JumpReLUSAEConfig(d_in=d_in, d_sae=3072, apply_b_dec_to_input=False))
        with torch.no_grad():
            jump.W_enc.normal_(0, d_in ** -0.5)
            jump.W_dec.copy_(jump.W_enc.T)
            jump.threshold.fill_(1.0)
        jump.cfg.metadata.hook_name = f"blocks.{args.layer}.hook_resid_post"
        jump.save_model(str(sae_dir))
    else:
        modelbin.sae.train(dataset, layer=args.layer, out=sae_dir, d_sae=3072, k=32, steps=50,
                           batch_size=1024, progress=False)
    windows = np.fromfile(dataset / "tokens.bin", dtype="<u4").reshape(-1, args.window)
    assert len(windows) >= args.windows, f"the recording has {len(windows)} windows"
    tokens = torch.tensor(windows[:args.windows].astype(np.int64))
    special = get_special_token_ids(tf.AutoTokenizer.from_pretrained(directory))
    sae = SAE.load_from_disk(str(sae_dir), device="cpu")

    def theirs():
        started = time.perf_counter()
        sums = {}
        with torch.inference_mode():
            for start in range(0, len(tokens), args.batch):
                batch = reference.recons_metrics(model, tokens[start:start + args.batch],
                                                 special, "resid_post", args.layer, sae,
                                                 dtype=torch.float32)
                for key in ["clean", "spliced", "zero_ablated"]:
                    sums[key] = sums.get(key, 0.0) + batch[key] * batch["tokens"]
                for key in ["kl_spliced", "kl_zero_ablated"]:
                    sums[key] = sums.get(key, 0.0) + batch[key] * batch["kl_positions"]
                for key in ["tokens", "kl_positions"]:
                    sums[key] = sums.get(key, 0) + batch[key]
        result = {k: sums[k] / sums["tokens"] for k in ["clean", "spliced", "zero_ablated"]}
        result.update({k: sums[k] / sums["kl_positions"]
                       for k in ["kl_spliced", "kl_zero_ablated"]})
        return time.perf_counter() - started, result

    def ours():
        started = time.perf_counter()
        result = modelbin.sae.evaluate(sae_dir, dataset, layer=args.layer, model=directory,
                                       ce_windows=args.windows, threads=args.threads,
                                       progress=False)
        return time.perf_counter() - started, result["cross_entropy"]

    best_theirs = best_ours = float("inf")
    for _ in range(args.repeats):
        seconds, their_result = theirs()
        best_theirs = min(best_theirs, seconds)
        seconds, our_result = ours()
        best_ours = min(best_ours, seconds)
    error = max(abs(our_result[k] - v) for k, v in their_result.items())
    count = args.windows * args.window
    print(f"| {args.shape}, {args.windows} windows of {args.window} ({count} tokens), "
          f"block {args.layer} "
          f"resid_post, d_sae 3072 | torch + transformers hooks {best_theirs:.2f} s "
          f"| modelbin sae.evaluate(model=) {best_ours:.2f} s "
          f"({best_theirs / best_ours:.2f}x) | largest difference {error:.1e} "
          f"(recovered {our_result['recovered']:.4f}) |")


if __name__ == "__main__":
    main()
