#!/usr/bin/env python3
"""Reference forward pass of a Hugging Face BERT encoder (post-LayerNorm,
absolute positions, exact erf GELU), in float64 with numpy only, independent
of modelbin's Rust code. Reads `config.json` and `model.safetensors`.

    bert_reference.py MODEL_DIR '[101, 7592, 102]' --layer L   -> JSON [T][hidden]

prints Hugging Face's `hidden_states[L + 1]`: the output of block L (0-based;
negative counts from the end, -1 = last), or with `--layer embeddings`
`hidden_states[0]`. Attention mask all ones, token_type_ids all 0, position ids
0..T-1. `load` and `hidden_states` can be imported by other scripts.
"""
import json
import math
import os
import struct
import sys

import numpy as np

DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}


def read_safetensors(path):
    """All tensors of a safetensors file as float64 arrays (integers kept as
    int64), with a leading `bert.` stripped from the names."""
    data = open(path, "rb").read()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8 : 8 + n])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = (8 + n + o for o in info["data_offsets"])
        raw = data[begin:end]
        if info["dtype"] == "BF16":  # upper half of a float32
            array = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            array = np.frombuffer(raw, DTYPES[info["dtype"]])
        array = array.reshape(info["shape"])
        array = array.astype(np.int64 if array.dtype.kind in "iu" else np.float64)
        tensors[name[5:] if name.startswith("bert.") else name] = array
    return tensors


def load(model_dir):
    """The model as {"config": dict, "t": {name: array}}."""
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    assert config.get("hidden_act", "gelu") == "gelu", "only exact (erf) GELU"
    assert config.get("position_embedding_type", "absolute") == "absolute"
    return {"config": config, "t": read_safetensors(os.path.join(model_dir, "model.safetensors"))}


def erf(x):
    """Elementwise float64 erf (math.erf; numpy has none, scipy is not assumed)."""
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def gelu(x):
    """Exact GELU, x * Phi(x), as BERT's `gelu`."""
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def layer_norm(x, t, prefix, eps):
    """LayerNorm over the last axis (biased variance) with `prefix`.weight/.bias."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * t[prefix + ".weight"] + t[prefix + ".bias"]


def linear(x, t, prefix):
    """torch.nn.Linear: x @ W.T + b, W stored [out, in]."""
    return x @ t[prefix + ".weight"].T + t[prefix + ".bias"]


def attention(x, t, prefix, heads):
    """Bidirectional multi-head self-attention (no mask), before the output
    projection; `prefix` is `encoder.layer.N.attention.self`."""
    q, k, v = (linear(x, t, f"{prefix}.{name}") for name in ("query", "key", "value"))
    hd = x.shape[-1] // heads
    out = np.empty_like(q)
    for h in range(heads):
        cols = slice(h * hd, (h + 1) * hd)
        scores = q[:, cols] @ k[:, cols].T / math.sqrt(hd)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        out[:, cols] = (scores / scores.sum(axis=-1, keepdims=True)) @ v[:, cols]
    return out


def block(x, t, index, config):
    """One post-LN encoder block: LN(x + attn(x)), then LN(h + FFN(h))."""
    p, eps = f"encoder.layer.{index}", config["layer_norm_eps"]
    a = attention(x, t, p + ".attention.self", config["num_attention_heads"])
    h = layer_norm(x + linear(a, t, p + ".attention.output.dense"), t, p + ".attention.output.LayerNorm", eps)
    f = linear(gelu(linear(h, t, p + ".intermediate.dense")), t, p + ".output.dense")
    return layer_norm(h + f, t, p + ".output.LayerNorm", eps)


def hidden_states(model, ids, layer=-1):
    """Hidden states [T, hidden] after block `layer` (0-based, negative from
    the end), or the embedding output if `layer` is "embeddings"."""
    config, t = model["config"], model["t"]
    n = config["num_hidden_layers"]
    ids = np.asarray(ids, dtype=np.int64)
    x = (t["embeddings.word_embeddings.weight"][ids]
         + t["embeddings.position_embeddings.weight"][: len(ids)]
         + t["embeddings.token_type_embeddings.weight"][0])
    x = layer_norm(x, t, "embeddings.LayerNorm", config["layer_norm_eps"])
    if layer == "embeddings":
        return x
    last = layer + n if layer < 0 else layer
    if not 0 <= last < n:
        raise ValueError(f"layer {layer} out of range for {n} blocks")
    for index in range(last + 1):
        x = block(x, t, index, config)
    return x


def main():
    """CLI: MODEL_DIR IDS_JSON [--layer L|embeddings]; prints JSON [T][hidden]."""
    args = sys.argv[1:]
    layer = -1
    if "--layer" in args:
        i = args.index("--layer")
        layer = args[i + 1] if args[i + 1] == "embeddings" else int(args[i + 1])
        del args[i : i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    print(json.dumps(hidden_states(load(args[0]), json.loads(args[1]), layer).tolist()))


if __name__ == "__main__":
    main()
