"""A tiny random GPT-2 directory as `save_pretrained` lays it out (hub
tensor names), with a byte-level tokenizer.json of the 256 byte tokens and
no merges, written without torch for the light suite."""

import json
import pathlib

import numpy as np

import modelbin

HIDDEN = 8
VOCAB = 256


def gpt2_byte_chars():
    """GPT-2's map from each byte to the character its vocabulary writes."""
    keep = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255]
    moved = [b for b in range(256) if b not in keep]
    return {**{b: chr(b) for b in keep}, **{b: chr(256 + n) for n, b in enumerate(moved)}}


def tiny_gpt2(directory, layers=2, tokenizer=True, eos=0, seed=49):
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    d = HIDDEN
    shapes = {"wte.weight": (VOCAB, d), "wpe.weight": (32, d), "ln_f.weight": (d,),
              "ln_f.bias": (d,)}
    for layer in range(layers):
        for name, shape in [("ln_1", (d,)), ("ln_2", (d,)), ("attn.c_attn", (d, 3 * d)),
                            ("attn.c_proj", (d, d)), ("mlp.c_fc", (d, 4 * d)),
                            ("mlp.c_proj", (4 * d, d))]:
            shapes[f"h.{layer}.{name}.weight"] = shape
            shapes[f"h.{layer}.{name}.bias"] = shape[-1:]
    rng = np.random.default_rng(seed)
    modelbin.numpy.save_file(
        {k: rng.normal(size=s).astype(np.float32) for k, s in shapes.items()},
        directory / "model.safetensors")
    (directory / "config.json").write_text(json.dumps({
        "model_type": "gpt2", "vocab_size": VOCAB, "n_positions": 32, "n_embd": d,
        "n_layer": layers, "n_head": 2, "bos_token_id": eos, "eos_token_id": eos}))
    if tokenizer:
        chars = gpt2_byte_chars()
        (directory / "tokenizer.json").write_text(json.dumps({
            "version": "1.0", "added_tokens": [], "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                              "trim_offsets": True, "use_regex": True},
            "post_processor": None, "decoder": {"type": "ByteLevel"},
            "model": {"type": "BPE", "vocab": {chars[b]: b for b in range(256)},
                      "merges": []}}))
    return directory
