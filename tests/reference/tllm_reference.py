#!/usr/bin/env python3
"""Reference forward pass of a TLLM model, written from docs/formats/tllm.md
with numpy in float64, independent of modelbin's Rust code.

    tllm_reference.py MODEL.tllm '[1, 2, 3]'        -> JSON logits, [T][V]
    tllm_reference.py MODEL.tllm --bench N            -> JSON seconds per token
                                                        generating N tokens greedily
                                                        by full recompute (no cache)
"""
import json
import struct
import sys
import time

import numpy as np


def load(path):
    data = open(path, "rb").read()
    magic, version = struct.unpack_from("<II", data, 0)
    assert magic == 0x544C4C4D and version == 1, "not a TLLM v1 file"
    d, n_layers, n_heads, ffn, seq, vocab = struct.unpack_from("<6i", data, 8)
    offset = 36

    def matrix(rows, cols):
        nonlocal offset
        r, c = struct.unpack_from("<QQ", data, offset)
        assert (r, c) == (rows, cols)
        offset += 16
        m = np.frombuffer(data, dtype="<f4", count=r * c, offset=offset).reshape(r, c)
        offset += r * c * 4
        return m.astype(np.float64)

    def vector(n):
        nonlocal offset
        (length,) = struct.unpack_from("<Q", data, offset)
        assert length == n
        offset += 8
        v = np.frombuffer(data, dtype="<f4", count=n, offset=offset)
        offset += n * 4
        return v.astype(np.float64)

    model = {"d": d, "heads": n_heads, "seq": seq, "vocab": vocab}
    model["tok"] = matrix(vocab, d)
    model["pos"] = matrix(seq, d)
    model["layers"] = []
    for _ in range(n_layers):
        layer = {}
        for name in ("q", "k", "v", "o"):
            layer[name] = matrix(d, d)
        layer["w1"] = matrix(d, ffn)
        layer["b1"] = vector(ffn)
        layer["w2"] = matrix(ffn, d)
        layer["b2"] = vector(d)
        for name in ("ln1_w", "ln1_b", "ln2_w", "ln2_b"):
            layer[name] = vector(d)
        model["layers"].append(layer)
    model["output"] = matrix(d, vocab)
    assert offset == len(data), "trailing bytes"
    return model


def layer_norm(x, w, b):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # biased
    return (x - mean) / np.sqrt(var + 1e-5) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def forward(model, ids, residual_after=None):
    """Logits at every position, or with `residual_after` = l the residual
    stream after block l (0-based)."""
    t = len(ids)
    d, heads = model["d"], model["heads"]
    hd = d // heads
    x = model["tok"][ids] + model["pos"][:t]
    mask = np.triu(np.full((t, t), -np.inf), k=1)
    for index, layer in enumerate(model["layers"]):
        a = layer_norm(x, layer["ln1_w"], layer["ln1_b"])
        q, k, v = a @ layer["q"], a @ layer["k"], a @ layer["v"]
        out = np.zeros_like(x)
        for h in range(heads):
            cols = slice(h * hd, (h + 1) * hd)
            scores = q[:, cols] @ k[:, cols].T / np.sqrt(hd) + mask
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            out[:, cols] = scores @ v[:, cols]
        h_ = x + out @ layer["o"]
        b = layer_norm(h_, layer["ln2_w"], layer["ln2_b"])
        x = h_ + gelu_tanh(b @ layer["w1"] + layer["b1"]) @ layer["w2"] + layer["b2"]
        if index == residual_after:
            return x
    return x @ model["output"]


def main():
    model = load(sys.argv[1])
    if sys.argv[2] == "--bench":
        n = int(sys.argv[3])
        ids = [0]
        start = time.perf_counter()
        for _ in range(n):
            ids.append(int(np.argmax(forward(model, ids)[-1])))
        print(json.dumps({"seconds_per_token": (time.perf_counter() - start) / n}))
        return
    ids = json.loads(sys.argv[2])
    residual_after = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--residual" else None
    print(json.dumps(forward(model, ids, residual_after).tolist()))


if __name__ == "__main__":
    main()
