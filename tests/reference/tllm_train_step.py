#!/usr/bin/env python3
"""Reference for one TLLM training step, independent of modelbin's Rust code:
the mean next-byte cross-entropy of a batch with the forward pass of
tllm_reference.py (float64), its gradient by central finite differences, and
one AdamW step (bias-corrected moments, decoupled weight decay on matrices and
embeddings, global-norm clipping). Meant for tiny models.

    tllm_train_step.py MODEL.tllm WINDOWS.json LR WEIGHT_DECAY CLIP
        -> JSON {"loss": ..., "params": [... updated, file order ...]}

WINDOWS.json is a list of byte lists (inputs followed by the last target).

    tllm_train_step.py MODEL.tllm --time-loss BATCH
        -> JSON seconds of the forward pass and loss of BATCH random windows
           of max_seq_len + 1 tokens: a lower bound on one numpy training step
           (a backward pass costs about twice the forward), for benchmarks.
"""
import json
import math
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from tllm_reference import forward, load  # noqa: E402


def flatten(model):
    """The parameters in file order, with (name, is_matrix) per tensor."""
    parts = [("tok", True), ("pos", True)]
    for i in range(len(model["layers"])):
        for name in ("q", "k", "v", "o", "w1", "b1", "w2", "b2", "ln1_w", "ln1_b", "ln2_w", "ln2_b"):
            parts.append(((i, name), name in ("q", "k", "v", "o", "w1", "w2")))
    parts.append(("output", True))
    return parts


def get(model, key):
    if isinstance(key, tuple):
        return model["layers"][key[0]][key[1]]
    return model[key]


def loss_of(model, windows):
    total, count = 0.0, 0
    for w in windows:
        logits = forward(model, w[:-1])
        for t, target in enumerate(w[1:]):
            row = logits[t]
            m = row.max()
            total += math.log(np.exp(row - m).sum()) + m - row[target]
            count += 1
    return total / count


def time_loss(model, batch):
    import time

    rng = np.random.default_rng(0)
    windows = [list(rng.integers(0, model["vocab"], model["seq"] + 1)) for _ in range(batch)]
    start = time.perf_counter()
    loss = loss_of(model, windows)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "tokens": batch * model["seq"], "loss": loss}))


def main():
    model = load(sys.argv[1])
    if sys.argv[2] == "--time-loss":
        time_loss(model, int(sys.argv[3]))
        return
    windows = json.load(open(sys.argv[2]))
    lr, wd, clip = (float(x) for x in sys.argv[3:6])
    parts = flatten(model)
    tensors = []
    for key, is_matrix in parts:
        array = get(model, key)
        array.setflags(write=True)
        tensors.append((array, is_matrix))
    loss = loss_of(model, windows)
    grads = []
    eps = 1e-6
    for array, _ in tensors:
        g = np.zeros_like(array)
        flat, gflat = array.reshape(-1), g.reshape(-1)
        for i in range(flat.size):
            keep = flat[i]
            flat[i] = keep + eps
            up = loss_of(model, windows)
            flat[i] = keep - eps
            down = loss_of(model, windows)
            flat[i] = keep
            gflat[i] = (up - down) / (2 * eps)
        grads.append(g)
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    if clip > 0 and norm > clip:
        grads = [g * (clip / norm) for g in grads]
    beta1, beta2, adam_eps = 0.9, 0.95, 1e-8
    out = []
    for (array, is_matrix), g in zip(tensors, grads):
        m = (1 - beta1) * g
        v = (1 - beta2) * g * g
        p = array.copy()
        if is_matrix:
            p -= lr * wd * p
        p -= lr * (m / (1 - beta1)) / (np.sqrt(v / (1 - beta2)) + adam_eps)
        out.extend(p.reshape(-1).tolist())
    grad_flat = [float(x) for g in grads for x in g.reshape(-1)]
    print(json.dumps({"loss": loss, "params": out, "grad": grad_flat}))


if __name__ == "__main__":
    main()
