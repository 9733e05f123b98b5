#!/usr/bin/env python3
"""Reference for N training steps of modelbin's sparse autoencoder trainer,
written from its specification (not from crates/infer/src/sae/), in float64
numpy: TopK, BatchTopK or ReLU + L1 codes, the AuxK loss on dead latents,
JumpReLU with its L0 penalty, thresholds and rectangle-kernel
pseudo-derivatives (SAELens 6.54's "step" mode: loss Σ‖x̂ − x‖²/B + l0_coeff ·
L0/B, θ clamped at 0 before each step), an analytic backward pass (selection
held fixed), removal of the decoder-parallel gradient, Adam with linear warmup
then cosine decay to lr/10, and unit-norm decoder rows.

    sae_train_step.py < IN.json     -> OUT.json
    sae_train_step.py --self-test   -> gradients against central finite differences

IN.json: {"d_in", "d_sae", "architecture": "topk" | "batchtopk" | "relu" | "jumprelu",
          "k", "aux_k", "aux_coeff", "l1_coeff", "l0_coeff", "bandwidth",
          "thresholds" [d_sae] (jumprelu), "dead_after", "lr", "warmup",
          "steps", "beta1", "beta2", "eps", "scale",
          "w_enc" [d_sae*d_in], "b_enc" [d_sae], "w_dec" [d_sae*d_in], "b_dec" [d_in],
          "since_fired" [d_sae], "threshold" (float or null), "batches" [[B*d_in], ...]}
w_enc and w_dec are row-major [d_sae, d_in] (row j = latent j); each batch is
raw (unscaled) input for one step. "steps" is the schedule length, not the
number of batches.
OUT.json: {"w_enc", "b_enc", "w_dec", "b_dec", "since_fired", "threshold",
           "thresholds" (jumprelu),
           "reports": [{"mse", "fvu", "l0", "dead_fraction", "aux_mse"} per step]}
"""
import json
import math
import sys

import numpy as np

NAMES = ("w_enc", "b_enc", "w_dec", "b_dec")


def top_mask(values, count):
    """Mask of the `count` largest entries along the last axis, ties to the lower index."""
    order = np.argsort(-values, axis=-1, kind="stable")[..., :count]
    mask = np.zeros(values.shape, dtype=bool)
    np.put_along_axis(mask, order, True, axis=-1)
    return mask


def select(cfg, pre, thresholds=None):
    """Which pre-activations fire: the architecture's selection, and only where positive."""
    r = np.maximum(pre, 0.0)
    arch = cfg["architecture"]
    if arch == "jumprelu":
        return pre > thresholds
    if arch == "topk":
        mask = top_mask(r, cfg["k"])
    elif arch == "batchtopk":
        mask = top_mask(r.reshape(-1), cfg["k"] * r.shape[0]).reshape(r.shape)
    elif arch == "relu":
        mask = np.ones(r.shape, dtype=bool)
    else:
        raise ValueError(f"unknown architecture {arch!r}")
    return mask & (r > 0)


def select_aux(cfg, pre, dead):
    """AuxK selection (per row, the aux_k largest among dead latents), or None when AuxK is off."""
    if cfg["architecture"] in ("relu", "jumprelu") or cfg["aux_k"] <= 0 or not dead.any():
        return None
    r = np.maximum(pre, 0.0)
    return top_mask(np.where(dead, r, -1.0), cfg["aux_k"]) & dead & (r > 0)


def forward(cfg, p, X, dead, fixed=None):
    """Loss terms and cache of one step; `fixed` = (mask, aux_mask, e) holds the
    selection and the AuxK target constant (as the backward pass assumes)."""
    n = X.size
    C = X - p["b_dec"]
    pre = C @ p["w_enc"].T + p["b_enc"]
    thresholds = p.get("thresholds")
    mask, amask, e = fixed if fixed else (select(cfg, pre, thresholds),
                                          select_aux(cfg, pre, dead), None)
    z = np.where(mask, pre, 0.0)
    xhat = z @ p["w_dec"] + p["b_dec"]
    f = dict(C=C, pre=pre, mask=mask, amask=amask, z=z, xhat=xhat,
             mse=((xhat - X) ** 2).sum() / n, aux_mse=0.0)
    f["loss"] = f["mse"]
    if cfg["architecture"] == "jumprelu":
        # SAELens's: squared error summed over values, averaged over inputs,
        # plus the L0 penalty averaged over inputs.
        B = X.shape[0]
        f["loss"] = ((xhat - X) ** 2).sum() / B + cfg["l0_coeff"] * mask.sum() / B
    if amask is not None:
        f["e"] = X - xhat if e is None else e
        f["za"] = np.where(amask, pre, 0.0)
        f["ehat"] = f["za"] @ p["w_dec"]
        f["aux_mse"] = ((f["ehat"] - f["e"]) ** 2).sum() / n
        f["loss"] += cfg["aux_coeff"] * f["aux_mse"]
    if cfg["architecture"] == "relu":
        f["loss"] += cfg["l1_coeff"] * z.sum() / n
    return f


def backward(cfg, p, X, f):
    """Gradient of f["loss"] for each parameter, straight-through the fixed selection."""
    n = X.size if cfg["architecture"] != "jumprelu" else X.shape[0]
    dxhat = 2.0 * (f["xhat"] - X) / n
    g = {"w_dec": f["z"].T @ dxhat, "b_dec": dxhat.sum(0)}
    dpre = (dxhat @ p["w_dec"].T) * f["mask"]
    if cfg["architecture"] == "relu":
        dpre += cfg["l1_coeff"] / n * f["mask"]
    if f["amask"] is not None:
        dehat = cfg["aux_coeff"] * 2.0 * (f["ehat"] - f["e"]) / n
        g["w_dec"] += f["za"].T @ dehat
        dpre += (dehat @ p["w_dec"].T) * f["amask"]
    g["w_enc"] = dpre.T @ f["C"]
    g["b_enc"] = dpre.sum(0)
    g["b_dec"] -= (dpre @ p["w_enc"]).sum(0)
    if cfg["architecture"] == "jumprelu":
        # The rectangle kernel's pseudo-derivatives: through the codes
        # (−θ/ε · ∂loss/∂z) and through the L0 count (−1/ε per input, times
        # l0_coeff / B), where |pre − θ| < ε/2.
        theta, eps = p["thresholds"], cfg["bandwidth"]
        u = (f["pre"] - theta) / eps
        window = ((u > -0.5) & (u < 0.5)).astype(np.float64)
        dz = dxhat @ p["w_dec"].T
        g["thresholds"] = (-(theta / eps) * dz * window
                           - cfg["l0_coeff"] / X.shape[0] / eps * window).sum(0)
    return g


def lr_at(cfg, t):
    """Learning rate of step t (1-based): linear warmup, then cosine down to lr/10."""
    lr, warmup = cfg["lr"], cfg["warmup"]
    if t <= warmup:
        return lr * t / max(warmup, 1)
    progress = min(1.0, (t - warmup) / max(1, cfg["steps"] - warmup))
    return lr / 10 + 0.5 * (lr - lr / 10) * (1 + math.cos(math.pi * progress))


def step(cfg, p, state, batch, t):
    """One training step t in place on p and state; returns its report."""
    X = cfg["scale"] * np.asarray(batch, dtype=np.float64).reshape(-1, cfg["d_in"])
    B = X.shape[0]
    dead = state["since_fired"] >= cfg["dead_after"]
    if "thresholds" in p:
        p["thresholds"] = np.maximum(p["thresholds"], 0.0)
    f = forward(cfg, p, X, dead)
    if cfg["architecture"] == "batchtopk" and f["mask"].any():
        m = float(f["z"][f["mask"]].min())
        thr = state["threshold"]
        state["threshold"] = m if thr is None else thr + 0.01 * (m - thr)
    g = backward(cfg, p, X, f)
    w = p["w_dec"]
    g["w_dec"] -= (g["w_dec"] * w).sum(1, keepdims=True) * w
    lr, b1, b2, eps = lr_at(cfg, t), cfg["beta1"], cfg["beta2"], cfg["eps"]
    for name in p:
        m, v = state["adam"][name]
        m[:] = b1 * m + (1 - b1) * g[name]
        v[:] = b2 * v + (1 - b2) * g[name] ** 2
        p[name] -= lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    norms = np.linalg.norm(p["w_dec"], axis=1, keepdims=True)
    p["w_dec"] /= np.where(norms > 0, norms, 1.0)
    fired = f["mask"].any(0)
    state["since_fired"] = np.where(fired, 0, state["since_fired"] + B)
    sse = ((f["xhat"] - X) ** 2).sum()
    return {
        "mse": float(f["mse"]),
        "fvu": float(sse / ((X - X.mean(0)) ** 2).sum()),
        "l0": float(f["mask"].sum() / B),
        "dead_fraction": float((state["since_fired"] >= cfg["dead_after"]).mean()),
        "aux_mse": float(f["aux_mse"]),
    }


def run(cfg):
    """All steps of cfg["batches"] from cfg's parameters; the output JSON object."""
    d_sae, d_in = cfg["d_sae"], cfg["d_in"]
    shapes = {"w_enc": (d_sae, d_in), "b_enc": (d_sae,), "w_dec": (d_sae, d_in), "b_dec": (d_in,)}
    p = {name: np.array(cfg[name], dtype=np.float64).reshape(shapes[name]) for name in NAMES}
    if cfg["architecture"] == "jumprelu":
        shapes["thresholds"] = (d_sae,)
        p["thresholds"] = np.array(cfg["thresholds"], dtype=np.float64)
    state = {
        "since_fired": np.array(cfg["since_fired"], dtype=np.int64),
        "threshold": cfg.get("threshold"),
        "adam": {name: (np.zeros(shapes[name]), np.zeros(shapes[name])) for name in p},
    }
    reports = [step(cfg, p, state, batch, t) for t, batch in enumerate(cfg["batches"], start=1)]
    out = {name: p[name].reshape(-1).tolist() for name in p}
    out.update(since_fired=state["since_fired"].tolist(), threshold=state["threshold"], reports=reports)
    return out


def random_cfg(arch, rng, d_in=6, d_sae=10, B=5, steps=3):
    """A tiny random instance with about half the latents dead."""
    w_dec = rng.normal(size=(d_sae, d_in))
    w_dec /= np.linalg.norm(w_dec, axis=1, keepdims=True)
    return {
        "d_in": d_in, "d_sae": d_sae, "architecture": arch, "k": 3, "aux_k": 3,
        "aux_coeff": 1 / 32, "l1_coeff": 0.3, "dead_after": 10, "lr": 1e-2, "warmup": 1,
        "steps": steps, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "scale": 0.7,
        "w_enc": rng.normal(size=d_sae * d_in).tolist(), "b_enc": rng.normal(0.3, 0.5, d_sae).tolist(),
        "w_dec": w_dec.reshape(-1).tolist(), "b_dec": rng.normal(size=d_in).tolist(),
        "since_fired": [int(x) for x in rng.choice([0, 4, 10, 25], d_sae)], "threshold": None,
        "l0_coeff": 0.05, "bandwidth": 1.0, "thresholds": rng.uniform(0.0, 1.0, d_sae).tolist(),
        "batches": [rng.normal(size=B * d_in).tolist() for _ in range(steps)],
    }


def self_test():
    """Analytic gradients against central differences (selection and AuxK target fixed),
    then a short run per architecture; prints the max relative error per architecture."""
    rng = np.random.default_rng(0)
    worst = 0.0
    for arch in ("topk", "batchtopk", "relu", "jumprelu"):
        cfg = random_cfg(arch, rng)
        d_sae, d_in = cfg["d_sae"], cfg["d_in"]
        shapes = {"w_enc": (d_sae, d_in), "b_enc": (d_sae,), "w_dec": (d_sae, d_in), "b_dec": (d_in,)}
        p = {name: np.array(cfg[name]).reshape(shapes[name]) for name in NAMES}
        if arch == "jumprelu":
            p["thresholds"] = np.array(cfg["thresholds"])
        X = cfg["scale"] * np.array(cfg["batches"][0]).reshape(-1, d_in)
        dead = np.array(cfg["since_fired"]) >= cfg["dead_after"]
        f = forward(cfg, p, X, dead)
        assert arch in ("relu", "jumprelu") or (f["amask"] is not None and f["amask"].any()), \
            "AuxK not exercised"
        fixed = (f["mask"], f["amask"], f.get("e"))
        grads, rel = backward(cfg, p, X, f), 0.0
        for name in NAMES:
            numeric, flat = np.zeros(p[name].size), p[name].reshape(-1)
            for i in range(flat.size):
                keep = flat[i]
                flat[i] = keep + 1e-6
                up = forward(cfg, p, X, dead, fixed)["loss"]
                flat[i] = keep - 1e-6
                down = forward(cfg, p, X, dead, fixed)["loss"]
                flat[i] = keep
                numeric[i] = (up - down) / 2e-6
            err = np.abs(grads[name].reshape(-1) - numeric).max() / np.abs(numeric).max()
            rel = max(rel, float(err))
        out = run(cfg)
        norms = np.linalg.norm(np.array(out["w_dec"]).reshape(d_sae, d_in), axis=1)
        assert np.allclose(norms[norms > 0], 1.0) and len(out["reports"]) == len(cfg["batches"])
        print(f"{arch}: max relative gradient error {rel:.3e}, aux_mse {f['aux_mse']:.4f}, "
              f"l0 {out['reports'][0]['l0']:.2f}, threshold {out['threshold']}")
        worst = max(worst, rel)
    assert worst < 1e-6, worst
    print(f"ok, worst {worst:.3e}")


def main():
    if "--self-test" in sys.argv[1:]:
        self_test()
        return
    print(json.dumps(run(json.load(sys.stdin))))


if __name__ == "__main__":
    main()
