#!/usr/bin/env python3
"""Reference for one TLLM training step, independent of modelbin's Rust code,
in float64 numpy: the mean next-byte cross-entropy of a batch (forward pass of
tllm_reference.py), its gradient by an analytic backward pass written here
(and, for the test, checked against central finite differences), and one
AdamW step (bias-corrected moments, decoupled weight decay on matrices and
embeddings, global-norm clipping).

    tllm_train_step.py MODEL.tllm WINDOWS.json LR WEIGHT_DECAY CLIP
        -> JSON {"loss", "params" (updated, file order), "grad",
                 "max_abs_grad", "max_abs_diff_numeric"}

WINDOWS.json is a list of byte lists (inputs followed by the last target).
Finite differences make this mode slow: for tiny models.

    tllm_train_step.py MODEL.tllm --time-step BATCH
        -> JSON seconds of one analytic training step (loss, gradient, AdamW)
           on BATCH random windows of max_seq_len + 1 tokens, for benchmarks.
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


GELU_C = math.sqrt(2.0 / math.pi)


def ln_forward(x, w, b):
    mean = x.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
    xhat = (x - mean) * rstd
    return xhat * w + b, xhat, rstd


def ln_backward(dout, xhat, rstd, w, grads, wkey, bkey):
    grads[wkey] += (dout * xhat).sum(0)
    grads[bkey] += dout.sum(0)
    g = dout * w
    return rstd * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))


def loss_and_grad(model, windows):
    """Mean loss and its gradient, {key: array} with the keys of flatten()."""
    grads = {key: np.zeros_like(get(model, key)) for key, _ in flatten(model)}
    d, heads = model["d"], model["heads"]
    hd = d // heads
    total, count = 0.0, 0
    for w in windows:
        ids, targets = np.array(w[:-1]), np.array(w[1:])
        t = len(ids)
        mask = np.triu(np.ones((t, t), dtype=bool), k=1)
        x = model["tok"][ids] + model["pos"][:t]
        caches = []
        for layer in model["layers"]:
            a, xhat1, rstd1 = ln_forward(x, layer["ln1_w"], layer["ln1_b"])
            q, k, v = a @ layer["q"], a @ layer["k"], a @ layer["v"]
            probs = np.zeros((heads, t, t))
            ctx = np.zeros((t, d))
            for h in range(heads):
                c = slice(h * hd, (h + 1) * hd)
                s = q[:, c] @ k[:, c].T / math.sqrt(hd)
                s[mask] = -np.inf
                s = np.exp(s - s.max(-1, keepdims=True))
                s /= s.sum(-1, keepdims=True)
                probs[h] = s
                ctx[:, c] = s @ v[:, c]
            hres = x + ctx @ layer["o"]
            b, xhat2, rstd2 = ln_forward(hres, layer["ln2_w"], layer["ln2_b"])
            u = b @ layer["w1"] + layer["b1"]
            th = np.tanh(GELU_C * (u + 0.044715 * u**3))
            g = 0.5 * u * (1.0 + th)
            caches.append((xhat1, rstd1, a, q, k, v, probs, ctx, xhat2, rstd2, b, u, th, g))
            x = hres + g @ layer["w2"] + layer["b2"]
        logits = x @ model["output"]
        m = logits.max(-1, keepdims=True)
        e = np.exp(logits - m)
        z = e.sum(-1, keepdims=True)
        total += float((np.log(z[:, 0]) + m[:, 0] - logits[np.arange(t), targets]).sum())
        count += t
        dlogits = e / z
        dlogits[np.arange(t), targets] -= 1.0
        grads["output"] += x.T @ dlogits
        dx = dlogits @ model["output"].T
        for i in reversed(range(len(model["layers"]))):
            layer = model["layers"][i]
            xhat1, rstd1, a, q, k, v, probs, ctx, xhat2, rstd2, b, u, th, g = caches[i]
            key = lambda name: (i, name)  # noqa: E731
            grads[key("w2")] += g.T @ dx
            grads[key("b2")] += dx.sum(0)
            du = (dx @ layer["w2"].T) * (
                0.5 * (1.0 + th) + 0.5 * u * (1.0 - th**2) * GELU_C * (1.0 + 3 * 0.044715 * u**2)
            )
            grads[key("w1")] += b.T @ du
            grads[key("b1")] += du.sum(0)
            dh = dx + ln_backward(du @ layer["w1"].T, xhat2, rstd2, layer["ln2_w"], grads, key("ln2_w"), key("ln2_b"))
            grads[key("o")] += ctx.T @ dh
            dctx = dh @ layer["o"].T
            dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
            for h in range(heads):
                c = slice(h * hd, (h + 1) * hd)
                p = probs[h]
                dp = dctx[:, c] @ v[:, c].T
                dv[:, c] += p.T @ dctx[:, c]
                ds = p * (dp - (dp * p).sum(-1, keepdims=True)) / math.sqrt(hd)
                dq[:, c] += ds @ k[:, c]
                dk[:, c] += ds.T @ q[:, c]
            grads[key("q")] += a.T @ dq
            grads[key("k")] += a.T @ dk
            grads[key("v")] += a.T @ dv
            da = dq @ layer["q"].T + dk @ layer["k"].T + dv @ layer["v"].T
            dx = dh + ln_backward(da, xhat1, rstd1, layer["ln1_w"], grads, key("ln1_w"), key("ln1_b"))
        np.add.at(grads["tok"], ids, dx)
        grads["pos"][:t] += dx
    return total / count, {key: g / count for key, g in grads.items()}


def adamw(model, grads, lr, wd, clip):
    """The updated parameters after one AdamW step from zero moments, flat."""
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))
    scale = clip / norm if clip > 0 and norm > clip else 1.0
    beta1, beta2, eps = 0.9, 0.95, 1e-8
    out = []
    for key, is_matrix in flatten(model):
        g = grads[key] * scale
        m, v = (1 - beta1) * g, (1 - beta2) * g * g
        p = get(model, key).copy()
        if is_matrix:
            p -= lr * wd * p
        p -= lr * (m / (1 - beta1)) / (np.sqrt(v / (1 - beta2)) + eps)
        out.extend(p.reshape(-1).tolist())
    return out


def numeric_grad(model, windows):
    grads = {}
    eps = 1e-6
    for key, _ in flatten(model):
        array = get(model, key)
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
        grads[key] = g
    return grads


def time_step(model, batch):
    import time

    rng = np.random.default_rng(0)
    windows = [list(rng.integers(0, model["vocab"], model["seq"] + 1)) for _ in range(batch)]
    start = time.perf_counter()
    loss, grads = loss_and_grad(model, windows)
    adamw(model, grads, 1e-3, 0.1, 1.0)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "tokens": batch * model["seq"], "loss": loss}))


def main():
    model = load(sys.argv[1])
    if sys.argv[2] == "--time-step":
        time_step(model, int(sys.argv[3]))
        return
    windows = json.load(open(sys.argv[2]))
    lr, wd, clip = (float(x) for x in sys.argv[3:6])
    loss, grads = loss_and_grad(model, windows)
    numeric = numeric_grad(model, windows)
    diff = max(float(np.abs(grads[k] - numeric[k]).max()) for k in grads)
    print(
        json.dumps(
            {
                "loss": loss,
                "params": adamw(model, grads, lr, wd, clip),
                "grad": [float(x) for key, _ in flatten(model) for x in grads[key].reshape(-1)],
                "max_abs_grad": max(float(np.abs(g).max()) for g in grads.values()),
                "max_abs_diff_numeric": diff,
            }
        )
    )


if __name__ == "__main__":
    main()
