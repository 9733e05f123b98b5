#!/usr/bin/env python3
"""PyTorch CPU anchor for `modelbin sae train`: the same TopK sparse autoencoder,
trained the same way, on the same SAEV data.

Algorithm (Gao et al. 2024, as in crates/infer/src/sae/train.rs and docs/sae.md):

- inputs are scaled by s so that E||s x||^2 = d_in, s from the first batch;
- b_dec = mean of the first scaled batch; W_dec rows random unit vectors,
  W_enc their copy (tied init), b_enc = 0;
- per step on a scaled batch X [B, d_in]:
    pre  = (X - b_dec) @ W_enc^T + b_enc          (W_enc stored [d_sae, d_in])
    z    = TopK(ReLU(pre)) per row
    x^   = z @ W_dec + b_dec
    mse  = sum (x^ - X)^2 / (B d_in)
    aux  = AuxK: the top aux_k dead latents' ReLU(pre) reconstruct e = X - x^
           (held constant) without bias; sum (e^ - e)^2 / (B d_in); only when a
           latent is dead (not fired for --dead-after inputs), as in ours
    loss = mse + aux / 32;
- backward; remove from each W_dec row's gradient its component along the row;
  Adam (0.9, 0.999, eps 1e-8), lr 1e-3 with linear warmup over 5% of the
  steps (at most 1000), cosine to lr/10 (the schedule runs over warmup + timed
  steps); renormalise the W_dec rows.

Decoding (--decode):
  dense          SAELens style: z scattered into a dense [B, d_sae] tensor, z @ W_dec
  embedding_bag  sparse: F.embedding_bag(indices, W_dec, per_sample_weights=values,
                 mode="sum"), the CPU path of EleutherAI's sparsify (eager_decode);
                 its backward is an index_add over the k rows per input.
Encoding (--encoder): pre is computed densely for every latent in all three.
  centered  F.linear(x - b_dec, W_enc, b_enc) and autograd, as SAELens writes it:
            topk's backward scatters into a dense [B, d_sae] gradient, and the
            backward pays two dense products (W_enc's gradient and the input's,
            needed for b_dec's)
  folded    F.linear(x, W_enc, b_enc - W_enc b_dec): the same values; autograd
            skips the input gradient
  sparse    a custom autograd Function (like sparsify's FusedEncoder) whose
            backward touches only the selected latents: W_enc's gradient is
            S^T (x - b_dec) with torch.sparse.mm over B (k + aux_k) entries
The six combinations give the same gradients (to float rounding, AuxK
included). The defaults, sparse + embedding_bag, were the fastest here: at
d_in 384, d_sae 4096, k 32, batch 4096 on one thread, 0.27 s a step against
1.28 s for centered + dense.

Data: --saev DIR --layer L reads the dataset's shards with numpy.memmap
(docs/formats/saev.md): each epoch is a seeded permutation of the view, each
batch gathers its vectors from the shards (sorted for locality). --random
draws Gaussian batches (a pool of 8, cycled). Data loading is inside the
timed loop, as in `modelbin sae train`, whose rate counts its loader too.

--warmup-steps are run first and not timed. Prints one JSON line to stdout;
diagnostics go to stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class SaevView:
    """One layer of a SAEV dataset, batches drawn from np.memmap shards."""

    def __init__(self, root: str, layer: int, patches: str, seed: int):
        with open(os.path.join(root, "metadata.json"), encoding="utf-8") as f:
            md = json.load(f)
        layers = md["layers"]
        if layer not in layers:
            raise SystemExit(f"--layer {layer}: the dataset recorded layers {layers}")
        self.layer_index = layers.index(layer)
        n_layers = len(layers)
        cls = bool(md["cls_token"])
        p = int(md["n_patches_per_img"])
        t = p + int(cls)
        self.d = int(md["d_vit"])
        self.n_imgs = int(md["n_imgs"])
        per_shard = int(md["max_patches_per_shard"]) // (n_layers * t)
        if per_shard < 1:
            raise SystemExit(f"{root}: a shard holds no image")
        if patches == "image":
            self.first_token, self.tokens = int(cls), p
        elif patches == "cls":
            if not cls:
                raise SystemExit("--patches cls: the dataset has no CLS token")
            self.first_token, self.tokens = 0, 1
        else:
            self.first_token, self.tokens = 0, t
        self.per_shard = per_shard
        n_shards = -(-self.n_imgs // per_shard)
        image_bytes = n_layers * t * self.d * 4
        self.shards = []
        for s in range(n_shards):
            path = os.path.join(root, f"acts{s:06d}.bin")
            imgs = min(per_shard, self.n_imgs - s * per_shard)
            if os.path.getsize(path) < imgs * image_bytes:
                raise SystemExit(f"{path}: shorter than its {imgs} images")
            m = np.memmap(path, dtype="<f4", mode="r", shape=(imgs, n_layers, t, self.d))
            self.shards.append(m)
        self.len = self.n_imgs * self.tokens
        self.rng = np.random.default_rng(seed)
        self.order = np.empty(0, dtype=np.int64)
        self.pos = 0

    def batch(self, b: int) -> np.ndarray:
        """The next `b` vectors of the shuffled epochs ([b, d] float32)."""
        idx = []
        need = b
        while need:
            if self.pos == len(self.order):
                self.order = self.rng.permutation(self.len)
                self.pos = 0
            take = self.order[self.pos:self.pos + need]
            self.pos += len(take)
            need -= len(take)
            idx.append(take)
        idx = np.sort(np.concatenate(idx))
        img, tok = np.divmod(idx, self.tokens)
        tok += self.first_token
        shard, local = np.divmod(img, self.per_shard)
        out = np.empty((b, self.d), dtype=np.float32)
        # idx is sorted, so each shard's vectors are one contiguous run.
        bounds = np.searchsorted(shard, np.arange(len(self.shards) + 1))
        for s in range(len(self.shards)):
            lo, hi = bounds[s], bounds[s + 1]
            if lo < hi:
                out[lo:hi] = self.shards[s][local[lo:hi], self.layer_index, tok[lo:hi]]
        return out


class RandomData:
    def __init__(self, d: int, b: int, seed: int, pool: int = 8):
        g = torch.Generator().manual_seed(seed)
        self.pool = [torch.randn(b, d, generator=g) for _ in range(pool)]
        self.i = 0

    def batch(self, b: int) -> torch.Tensor:
        x = self.pool[self.i % len(self.pool)]
        self.i += 1
        return x


def lr_at(step: int, lr: float, warmup: int, steps: int) -> float:
    """modelbin's AdamW::lr_at: step is 1-based."""
    lo = lr / 10.0
    if step <= warmup:
        return lr * step / max(warmup, 1)
    span = max(steps - warmup, 1)
    progress = min((step - warmup) / span, 1.0)
    return lo + 0.5 * (lr - lo) * (1.0 + math.cos(math.pi * progress))


class SparseTopKEncoder(torch.autograd.Function):
    """TopK(ReLU(W_enc (x - b_dec) + b_enc)) with a sparse backward, in the
    manner of sparsify's FusedEncoder: only the selected pre-activations
    (the k of each row, and the AuxK ones) carry a gradient, so the W_enc
    gradient is S^T (x - b_dec) for a sparse S of B (k + aux_k) entries
    (torch.sparse.mm) instead of a dense [d_sae, B] @ [B, d_in] product.
    x gets no gradient."""

    @staticmethod
    def forward(ctx, x, w_enc, b_enc, b_dec, k, aux_k, dead):
        with torch.no_grad():
            pre = torch.addmm(b_enc - w_enc @ b_dec, x, w_enc.t())
            act = pre.relu_()
            values, indices = act.topk(k, dim=1, sorted=False)
            if dead is not None:
                masked = act.masked_fill_(~dead, -math.inf)
                aux_values, aux_indices = masked.topk(aux_k, dim=1, sorted=False)
            else:
                aux_values = aux_indices = x.new_empty(x.shape[0], 0)
                aux_indices = aux_indices.long()
        ctx.save_for_backward(x, w_enc, b_dec, values, indices, aux_values, aux_indices)
        ctx.mark_non_differentiable(indices, aux_indices)
        return values, indices, aux_values, aux_indices

    @staticmethod
    def backward(ctx, g_values, _g_indices, g_aux_values, _g_aux_indices):
        x, w_enc, b_dec, values, indices, aux_values, aux_indices = ctx.saved_tensors
        b, d_sae = x.shape[0], w_enc.shape[0]
        grads, cols, rows = [], [], []
        for g, v, i in ((g_values, values, indices), (g_aux_values, aux_values, aux_indices)):
            if g is not None and i.shape[1] > 0:
                grads.append((g * (v > 0)).reshape(-1))  # ReLU's gradient
                cols.append(i.reshape(-1))
                rows.append(torch.arange(b).repeat_interleave(i.shape[1]))
        g, cols, rows = torch.cat(grads), torch.cat(cols), torch.cat(rows)
        s = torch.sparse_coo_tensor(torch.stack([cols, rows]), g, (d_sae, b),
                                    check_invariants=False)
        g_pre_sum = torch.zeros(d_sae).index_add_(0, cols, g)  # sum over the batch
        g_w_enc = torch.sparse.mm(s, x)
        g_w_enc.sub_(torch.outer(g_pre_sum, b_dec))
        g_b_dec = -(g_pre_sum @ w_enc)
        return None, g_w_enc, g_pre_sum, g_b_dec, None, None, None


class TopKSae:
    def __init__(self, first: torch.Tensor, d_sae: int, k: int, aux_k: int,
                 dead_after: int, decode: str, encoder: str, seed: int):
        n, d_in = first.shape
        mean_square = float((first.double() ** 2).sum() / n)
        self.scale = math.sqrt(d_in / mean_square) if mean_square > 0 else 1.0
        g = torch.Generator().manual_seed(seed)
        w_dec = torch.randn(d_sae, d_in, generator=g)
        w_dec /= w_dec.norm(dim=1, keepdim=True)
        self.w_dec = w_dec.requires_grad_()
        self.w_enc = w_dec.detach().clone().requires_grad_()  # [d_sae, d_in]
        self.b_enc = torch.zeros(d_sae, requires_grad=True)
        self.b_dec = (first * self.scale).double().mean(0).float().requires_grad_()
        self.d_in, self.d_sae, self.k, self.aux_k = d_in, d_sae, k, aux_k
        self.dead_after, self.decode_mode = dead_after, decode
        self.encoder = encoder
        self.since_fired = torch.zeros(d_sae, dtype=torch.int64)

    def params(self):
        return [self.w_enc, self.b_enc, self.w_dec, self.b_dec]

    def decode(self, values: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
        """sum_j values_j W_dec[indices_j] per row, without bias."""
        if self.decode_mode == "embedding_bag":
            return F.embedding_bag(indices, self.w_dec, per_sample_weights=values, mode="sum")
        z = torch.zeros(values.shape[0], self.d_sae, dtype=values.dtype)
        z = z.scatter(1, indices, values)
        return z @ self.w_dec

    def loss(self, x: torch.Tensor):
        """x: a scaled batch. Returns (loss, squared error, fired mask, L0)."""
        if self.encoder == "sparse":
            return self.loss_sparse(x)
        b = x.shape[0]
        if self.encoder == "folded":
            # W_enc (x - b_dec) = W_enc x - W_enc b_dec: x needs no gradient,
            # so autograd skips the dense [B, d_sae] @ [d_sae, d_in] product
            # that the gradient of b_dec through (x - b_dec) would cost.
            pre = F.linear(x, self.w_enc, self.b_enc - self.w_enc @ self.b_dec)
        else:
            pre = F.linear(x - self.b_dec, self.w_enc, self.b_enc)  # [B, d_sae]
        act = F.relu(pre)
        values, indices = act.topk(self.k, dim=1, sorted=False)
        recon = self.decode(values, indices) + self.b_dec
        diff = recon - x
        squared_error = (diff * diff).sum()
        norm = b * self.d_in
        loss = squared_error / norm
        active = values.detach() > 0
        fired = torch.zeros(self.d_sae, dtype=torch.bool)
        fired[indices[active]] = True
        dead = self.since_fired >= self.dead_after
        n_dead = int(dead.sum())
        if self.aux_k > 0 and n_dead > 0:
            kept = min(self.aux_k, n_dead)
            masked = act.masked_fill(~dead, -math.inf)
            aux_values, aux_indices = masked.topk(kept, dim=1, sorted=False)
            residual = (x - recon).detach()
            aux_diff = self.decode(aux_values, aux_indices) - residual
            loss = loss + (aux_diff * aux_diff).sum() / norm / 32.0
        return loss, squared_error.detach(), fired, int(active.sum())

    def loss_sparse(self, x: torch.Tensor):
        b = x.shape[0]
        dead = self.since_fired >= self.dead_after
        n_dead = int(dead.sum())
        use_aux = self.aux_k > 0 and n_dead > 0
        values, indices, aux_values, aux_indices = SparseTopKEncoder.apply(
            x, self.w_enc, self.b_enc, self.b_dec, self.k,
            min(self.aux_k, n_dead), dead if use_aux else None)
        recon = self.decode(values, indices) + self.b_dec
        diff = recon - x
        squared_error = (diff * diff).sum()
        norm = b * self.d_in
        loss = squared_error / norm
        active = values.detach() > 0
        fired = torch.zeros(self.d_sae, dtype=torch.bool)
        fired[indices[active]] = True
        if use_aux:
            residual = (x - recon).detach()
            aux_diff = self.decode(aux_values, aux_indices) - residual
            loss = loss + (aux_diff * aux_diff).sum() / norm / 32.0
        return loss, squared_error.detach(), fired, int(active.sum())

    @torch.no_grad()
    def after_backward(self):
        g, w = self.w_dec.grad, self.w_dec
        g -= (g * w).sum(dim=1, keepdim=True) * w

    @torch.no_grad()
    def after_step(self, fired: torch.Tensor, rows: int):
        self.w_dec /= self.w_dec.norm(dim=1, keepdim=True).clamp_min(1e-30)
        self.since_fired += rows
        self.since_fired[fired] = 0


def total_variance(x: torch.Tensor) -> float:
    xd = x.double()
    return float(((xd - xd.mean(0)) ** 2).sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--saev", metavar="DIR", help="a SAEV dataset directory (<root>/<HASH>)")
    src.add_argument("--random", action="store_true", help="Gaussian inputs of --d-in values")
    ap.add_argument("--layer", type=int, help="the recorded layer to read (with --saev)")
    ap.add_argument("--patches", choices=["image", "cls", "all"], default="image")
    ap.add_argument("--d-in", type=int, help="input width (--random; checked against --saev)")
    ap.add_argument("--d-sae", type=int, default=4096)
    ap.add_argument("-k", "--k", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=100, help="timed steps")
    ap.add_argument("--warmup-steps", type=int, default=1, help="untimed steps run first")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--aux-k", type=int, help="default d_in / 2; 0: off")
    ap.add_argument("--dead-after", type=int, default=10_000_000)
    ap.add_argument("--decode", choices=["dense", "embedding_bag"], default="embedding_bag")
    ap.add_argument("--encoder", choices=["sparse", "folded", "centered"], default="sparse",
                    help="centered: F.linear(x - b_dec, W_enc, b_enc) and autograd, as SAELens "
                    "writes it; folded: F.linear(x, W_enc, b_enc - W_enc b_dec) and autograd, "
                    "the same values without the dense input gradient; sparse: a custom "
                    "autograd Function whose backward touches only the selected latents")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verbose", action="store_true", help="a line per step on stderr")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    if a.saev:
        if a.layer is None:
            ap.error("--saev needs --layer")
        data = SaevView(a.saev, a.layer, a.patches, a.seed)
        if a.d_in is not None and a.d_in != data.d:
            ap.error(f"--d-in {a.d_in}: the dataset's d_vit is {data.d}")
        d_in = data.d
        next_batch = lambda: torch.from_numpy(data.batch(a.batch_size))  # noqa: E731
        source = a.saev
    else:
        if a.d_in is None:
            ap.error("--random needs --d-in")
        d_in = a.d_in
        data = RandomData(d_in, a.batch_size, a.seed)
        next_batch = lambda: data.batch(a.batch_size)  # noqa: E731
        source = "random"
    if a.k > a.d_sae:
        ap.error(f"-k {a.k} is more than --d-sae {a.d_sae}")
    aux_k = d_in // 2 if a.aux_k is None else a.aux_k

    first = next_batch()
    sae = TopKSae(first, a.d_sae, a.k, aux_k, a.dead_after, a.decode,
                  a.encoder, a.seed)
    total_steps = a.warmup_steps + a.steps
    warmup = min(total_steps // 20, 1000)
    kwargs = {}
    if "fused" in torch.optim.Adam.__init__.__code__.co_varnames:
        kwargs["fused"] = True  # fused CPU Adam (torch >= 2.4)
    opt = torch.optim.Adam(sae.params(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8, **kwargs)

    def step(n: int, x_raw: torch.Tensor):
        x = x_raw * sae.scale
        for group in opt.param_groups:
            group["lr"] = lr_at(n, a.lr, warmup, total_steps)
        opt.zero_grad(set_to_none=True)
        loss, squared_error, fired, active = sae.loss(x)
        loss.backward()
        sae.after_backward()
        opt.step()
        sae.after_step(fired, x.shape[0])
        return x, float(squared_error), active

    batch = first
    n = 0
    for _ in range(a.warmup_steps):
        n += 1
        step(n, batch)
        batch = next_batch()
    started = time.perf_counter()
    vectors = 0
    x = squared_error = active = None
    for i in range(a.steps):
        if i > 0:
            batch = next_batch()
        n += 1
        x, squared_error, active = step(n, batch)
        vectors += batch.shape[0]
        if a.verbose:
            rate = vectors / (time.perf_counter() - started)
            log(f"step {n}: mse {squared_error / x.numel():.4f}, "
                f"fvu {squared_error / total_variance(x):.3f}, {rate:.0f} vectors/s")
    seconds = time.perf_counter() - started
    dead = int((sae.since_fired >= a.dead_after).sum())
    print(json.dumps({
        "impl": "torch",
        "torch": torch.__version__,
        "threads": a.threads,
        "d_in": d_in,
        "d_sae": a.d_sae,
        "k": a.k,
        "batch_size": a.batch_size,
        "steps": a.steps,
        "warmup_steps": a.warmup_steps,
        "decode": a.decode,
        "encoder": a.encoder,
        "data": source,
        "vectors_per_second": vectors / max(seconds, 1e-9),
        "seconds": seconds,
        "final_mse": squared_error / x.numel(),
        "final_fvu": squared_error / max(total_variance(x), sys.float_info.min),
        "final_l0": active / x.shape[0],
        "dead_fraction": dead / a.d_sae,
    }), flush=True)


if __name__ == "__main__":
    main()
