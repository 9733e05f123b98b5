#!/usr/bin/env python3
"""Recording a decoder language model end to end: `modelbin.acts.record`
(tokenizing, SAELens's windows, the forward pass, the SAEV files written)
against the loop an SAELens user runs with transformers (the Hugging Face
tokenizer, SAELens's own `concat_and_batch_sequences`, batches of windows
through the base model under `torch.inference_mode()`, a forward hook on
the block copying its output out as numpy; nothing written to disk), in the
same run, alternating, best of --repeats, on --threads threads.

The model is random, in GPT-2 small's shape (12 layers, 768 wide, 12 heads,
vocabulary 50257) or with --shape gemma3-270m in Gemma 3 270M's (18 layers,
640 wide, 4 query heads and 1 key/value head of 256, MLP 2048, vocabulary
262144, sliding windows of 512 on five layers in six, its two RoPE bases),
saved by transformers (F32) with a byte-level BPE tokenizer trained by the
tokenizers library on tests/data/opticks.txt; the texts are that file's
non-empty lines. --int8 records with modelbin's int8 weights (the vectors
then compared by their cosine). Both sides load the model and the
tokenizer from the directory inside the timed run, as a recording script
does: transformers' `from_pretrained`, modelbin's `acts.record` opening and
hashing it.

Usage (heavy venv, the package installed in it, as scripts/test.sh does):
  $(scripts/heavy-venv.sh)/bin/python scripts/bench/lm_record.py
"""

import argparse
import atexit
import os
import pathlib
import shutil
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def corpus_lines():
    """The non-empty lines of tests/data/opticks.txt."""
    return [line for line in (ROOT / "tests/data/opticks.txt").read_text().splitlines()
            if line.strip()]


SHAPES = ("gpt2-small", "gemma3-270m")


def gemma3_270m_config():
    """Gemma 3 270M's configuration (google/gemma-3-270m's config.json)."""
    import transformers as tf

    return tf.Gemma3TextConfig(
        vocab_size=262144, hidden_size=640, intermediate_size=2048, num_hidden_layers=18,
        num_attention_heads=4, num_key_value_heads=1, head_dim=256,
        max_position_embeddings=32768, query_pre_attn_scalar=256, sliding_window=512,
        sliding_window_pattern=6, rope_theta=1000000.0, rope_local_base_freq=10000.0,
        bos_token_id=2, eos_token_id=1, pad_token_id=0)


def gpt2_small(directory, texts, shape="gpt2-small"):
    """A random model in GPT-2 small's (or `shape`'s) shape saved in
    `directory` by transformers (F32), with a byte-level BPE tokenizer of
    8000 tokens trained on `texts`; returns the model, in eval mode."""
    import torch
    import transformers as tf
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    torch.manual_seed(0)
    if shape == "gemma3-270m":
        model = tf.Gemma3ForCausalLM(gemma3_270m_config())
    else:
        model = tf.GPT2LMHeadModel(tf.GPT2Config())
    model.eval()
    model.save_pretrained(directory)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=8000, special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tf.PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|endoftext|>",
                               eos_token="<|endoftext|>").save_pretrained(directory)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--windows", type=int, default=32)
    parser.add_argument("--window", type=int, default=128)
    parser.add_argument("--layer", type=int, default=11)
    parser.add_argument("--batch", type=int, default=8, help="transformers' windows per batch")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--shape", choices=SHAPES, default="gpt2-small")
    parser.add_argument("--int8", action="store_true", help="modelbin's int8 weights")
    args = parser.parse_args()
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)

    import numpy as np
    import torch
    import transformers as tf
    from sae_lens.tokenization_and_batching import concat_and_batch_sequences

    import modelbin

    torch.set_num_threads(args.threads)
    texts = corpus_lines()
    tmp = pathlib.Path(tempfile.mkdtemp())
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    directory = tmp / args.shape
    model = gpt2_small(directory, texts, args.shape)
    del model

    # Enough texts for the windows asked (counted with the HF tokenizer).
    hf = tf.AutoTokenizer.from_pretrained(directory)
    needed, used, total = args.windows * args.window, [], 0
    for text in texts:
        used.append(text)
        total += len(hf(text)["input_ids"]) + 1
        if total > needed + args.window:
            break

    def theirs():
        started = time.perf_counter()
        model = tf.AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
        base = getattr(model, "transformer", None) or model.model
        blocks = getattr(base, "h", None) or base.layers
        tokenizer = tf.AutoTokenizer.from_pretrained(directory)
        ids = (torch.tensor(tokenizer(t)["input_ids"], dtype=torch.long) for t in used)
        windows = list(concat_and_batch_sequences(
            ids, args.window, begin_batch_token_id=tokenizer.bos_token_id,
            begin_sequence_token_id=None, sequence_separator_token_id=tokenizer.bos_token_id))
        windows = torch.stack(windows[:args.windows])
        rows = []
        hook = blocks[args.layer].register_forward_hook(
            lambda module, inputs, output: rows.append(
                (output[0] if isinstance(output, tuple) else output).numpy().copy()))
        with torch.inference_mode():
            for start in range(0, len(windows), args.batch):
                base(windows[start:start + args.batch])
        hook.remove()
        return time.perf_counter() - started, np.concatenate(rows), windows.numpy()

    def ours(i):
        started = time.perf_counter()
        path = modelbin.acts.record(directory, texts=used, out=tmp / f"acts{i}",
                                    layers=[args.layer], tokens_per_text=args.window,
                                    int8=args.int8, progress=False)
        return time.perf_counter() - started, path

    best_theirs = best_ours = float("inf")
    for i in range(args.repeats):
        seconds, their_rows, their_windows = theirs()
        best_theirs = min(best_theirs, seconds)
        seconds, path = ours(i)
        best_ours = min(best_ours, seconds)
    kept = np.fromfile(pathlib.Path(path) / "tokens.bin", dtype="<u4").reshape(-1, args.window)
    n = min(len(kept), len(their_windows))
    assert (kept[:n] == their_windows[:n]).all(), "the windows differ"
    dataset = modelbin.saev.Dataset(path, layer=args.layer, patches="image")
    ours_first = np.stack([dataset.get(0, args.layer, t) for t in range(args.window)])
    error = np.abs(ours_first - their_rows[0]).max() / np.abs(their_rows[0]).max()
    # Rows of zeros (a padding token's embedding, which transformers
    # zeroes) have no direction.
    cosine = min(float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
                 for a, b in zip(ours_first, their_rows[0]) if np.linalg.norm(b) > 0)
    tokens = args.windows * args.window
    print(f"| {args.shape}, windows of {args.window}, block {args.layer} resid_post, "
          f"{tokens} tokens | transformers + SAELens batching {tokens / best_theirs:,.0f} tok/s "
          f"| modelbin acts.record{' int8' if args.int8 else ''} {tokens / best_ours:,.0f} tok/s "
          f"({best_theirs / best_ours:.2f}x) | first window's max error {error:.1e}, "
          f"least cosine {cosine:.5f} |")


if __name__ == "__main__":
    main()
