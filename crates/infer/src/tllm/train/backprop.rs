//! The TLLM forward pass with its hand-written backward pass, generic over
//! the float type (f32 for training, f64 for gradient checks), one
//! transformer block at a time.
//!
//! Parameters live in one flat vector in TLLM file order
//! ([`ParamLayout`]); gradients use the same layout. Dropout (the header's
//! rate) applies to the output of each attention and feed-forward sublayer
//! before its residual add, as in GPT-2's residual dropout.

use modelbin_format::tllm::{LayerTensor::*, PerLayerTensor};

use super::ops::{
    LnCache, apply_mask, causal_softmax, dropout_mask, gelu, gelu_grad, head_columns,
    linear_backward, ln_backward, ln_forward, mm, scatter_head,
};
use crate::rng::Rng;

pub use super::layout::ParamLayout;
pub use super::ops::Real;

/// One layer's saved activations.
struct LayerCache<R> {
    ln1: LnCache<R>,
    a: Vec<R>,
    qkv: [Vec<R>; 3],
    probs: Vec<R>,
    ctx: Vec<R>,
    drop1: Option<Vec<R>>,
    ln2: LnCache<R>,
    b: Vec<R>,
    u: Vec<R>,
    g: Vec<R>,
    drop2: Option<Vec<R>>,
}

/// Cross-entropy of next-token prediction over one sequence: the sum over
/// its positions of `-ln p(target)`, and, when `grad` is given, the
/// gradient of `scale ×` that sum added into it. `inputs` and `targets` have
/// the same length (≤ max_seq_len); ids are below vocab_size.
pub fn sequence_loss<R: Real>(
    layout: &ParamLayout,
    params: &[R],
    inputs: &[u32],
    targets: &[u32],
    dropout: f32,
    rng: &mut Rng,
    grad: Option<(&mut [R], R)>,
) -> f64 {
    let p = params;
    let (d, v) = (layout.d, layout.v);
    let t_len = inputs.len();
    // Embeddings.
    let mut x = vec![R::zero(); t_len * d];
    for (t, &id) in inputs.iter().enumerate() {
        let tok = &p[layout.tok + id as usize * d..][..d];
        let pos = &p[layout.pos + t * d..][..d];
        for i in 0..d {
            x[t * d + i] = tok[i] + pos[i];
        }
    }
    let mut caches = Vec::with_capacity(layout.layers.len());
    for o in &layout.layers {
        let (out, cache) = block_forward(layout, p, o, &x, dropout, rng);
        x = out;
        caches.push(cache);
    }
    let mut logits = vec![R::zero(); t_len * v];
    mm(
        (&x, false),
        (&p[layout.output..][..d * v], false),
        &mut logits,
        (t_len, d, v),
        false,
    );
    // Softmax cross-entropy; logits become probabilities.
    let mut loss = 0.0;
    for (t, &target) in targets.iter().enumerate() {
        let row = &mut logits[t * v..(t + 1) * v];
        let max = row.iter().copied().fold(R::neg_infinity(), R::max);
        let mut sum = R::zero();
        for value in row.iter_mut() {
            *value = (*value - max).exp();
            sum += *value;
        }
        loss += (sum.ln() + max - (row[target as usize].ln() + max))
            .to_f64()
            .unwrap_or(f64::NAN);
        for value in row.iter_mut() {
            *value = *value / sum;
        }
    }
    let Some((grad, loss_scale)) = grad else {
        return loss;
    };
    // Backward.
    let mut dlogits = logits;
    for (t, &target) in targets.iter().enumerate() {
        dlogits[t * v + target as usize] -= R::one();
    }
    dlogits.iter_mut().for_each(|g| *g *= loss_scale);
    let mut dx = linear_backward(
        (&x, &dlogits),
        p,
        grad,
        (layout.output, None),
        (t_len, d, v),
    );
    for (o, c) in layout.layers.iter().zip(caches).rev() {
        dx = block_backward(layout, p, o, c, dx, grad);
    }
    for (t, &id) in inputs.iter().enumerate() {
        let row = &dx[t * d..(t + 1) * d];
        grad[layout.tok + id as usize * d..][..d]
            .iter_mut()
            .zip(row)
            .for_each(|(g, &r)| *g += r);
        grad[layout.pos + t * d..][..d]
            .iter_mut()
            .zip(row)
            .for_each(|(g, &r)| *g += r);
    }
    loss
}

/// One transformer block forward from `x` (`[T, d]`): its output and what
/// its backward pass needs.
fn block_forward<R: Real>(
    layout: &ParamLayout,
    p: &[R],
    o: &PerLayerTensor<usize>,
    x: &[R],
    dropout: f32,
    rng: &mut Rng,
) -> (Vec<R>, LayerCache<R>) {
    let (d, heads, f) = (layout.d, layout.heads, layout.f);
    let t_len = x.len() / d;
    let hd = d / heads;
    let scale = R::of(1.0 / (hd as f64).sqrt());
    let mut a = vec![R::zero(); t_len * d];
    let ln1 = ln_forward(x, &p[o[Ln1Weight]..][..d], &p[o[Ln1Bias]..][..d], d, &mut a);
    let mut qkv = [
        vec![R::zero(); t_len * d],
        vec![R::zero(); t_len * d],
        vec![R::zero(); t_len * d],
    ];
    for (out, w) in qkv.iter_mut().zip([o[AttnQ], o[AttnK], o[AttnV]]) {
        mm(
            (&a, false),
            (&p[w..][..d * d], false),
            out,
            (t_len, d, d),
            false,
        );
    }
    let mut probs = vec![R::zero(); heads * t_len * t_len];
    let mut ctx = vec![R::zero(); t_len * d];
    for h in 0..heads {
        let [qh, kh, vh] = [&qkv[0], &qkv[1], &qkv[2]].map(|m| head_columns(m, h, hd, d));
        let pr = &mut probs[h * t_len * t_len..][..t_len * t_len];
        mm((&qh, false), (&kh, true), pr, (t_len, hd, t_len), false);
        for (i, row) in pr.chunks_exact_mut(t_len).enumerate() {
            causal_softmax(row, i, scale);
        }
        let mut ch = vec![R::zero(); t_len * hd];
        mm(
            (pr, false),
            (&vh, false),
            &mut ch,
            (t_len, t_len, hd),
            false,
        );
        scatter_head(&ch, &mut ctx, h, hd, d);
    }
    let mut attn = vec![R::zero(); t_len * d];
    mm(
        (&ctx, false),
        (&p[o[AttnO]..][..d * d], false),
        &mut attn,
        (t_len, d, d),
        false,
    );
    let drop1 = dropout_mask(attn.len(), dropout, rng);
    apply_mask(&mut attn, &drop1);
    let h_res: Vec<R> = x.iter().zip(&attn).map(|(&a, &b)| a + b).collect();
    let mut b = vec![R::zero(); t_len * d];
    let ln2 = ln_forward(
        &h_res,
        &p[o[Ln2Weight]..][..d],
        &p[o[Ln2Bias]..][..d],
        d,
        &mut b,
    );
    let mut u = vec![R::zero(); t_len * f];
    for row in u.chunks_exact_mut(f) {
        row.copy_from_slice(&p[o[FfnBias1]..][..f]);
    }
    mm(
        (&b, false),
        (&p[o[FfnLinear1]..][..d * f], false),
        &mut u,
        (t_len, d, f),
        true,
    );
    let g: Vec<R> = u.iter().map(|&z| gelu(z)).collect();
    let mut ffn = vec![R::zero(); t_len * d];
    for row in ffn.chunks_exact_mut(d) {
        row.copy_from_slice(&p[o[FfnBias2]..][..d]);
    }
    mm(
        (&g, false),
        (&p[o[FfnLinear2]..][..f * d], false),
        &mut ffn,
        (t_len, f, d),
        true,
    );
    let drop2 = dropout_mask(ffn.len(), dropout, rng);
    apply_mask(&mut ffn, &drop2);
    let out = h_res.iter().zip(&ffn).map(|(&a, &b)| a + b).collect();
    let cache = LayerCache {
        ln1,
        a,
        qkv,
        probs,
        ctx,
        drop1,
        ln2,
        b,
        u,
        g,
        drop2,
    };
    (out, cache)
}

/// One transformer block backward: adds the block's parameter gradients
/// into `grad` and returns the gradient of its input, given `dx`, the
/// gradient of its output.
fn block_backward<R: Real>(
    layout: &ParamLayout,
    p: &[R],
    o: &PerLayerTensor<usize>,
    c: LayerCache<R>,
    dx: Vec<R>,
    grad: &mut [R],
) -> Vec<R> {
    let (d, heads, f) = (layout.d, layout.heads, layout.f);
    let t_len = dx.len() / d;
    // x = h + drop(FFN(LN2(h)))
    let mut dffn = dx.clone();
    apply_mask(&mut dffn, &c.drop2);
    let mut du = linear_backward(
        (&c.g, &dffn),
        p,
        grad,
        (o[FfnLinear2], Some(o[FfnBias2])),
        (t_len, f, d),
    );
    du.iter_mut()
        .zip(&c.u)
        .for_each(|(g, &z)| *g *= gelu_grad(z));
    let db = linear_backward(
        (&c.b, &du),
        p,
        grad,
        (o[FfnLinear1], Some(o[FfnBias1])),
        (t_len, d, f),
    );
    let mut dh = dx;
    {
        let (head, tail) = grad.split_at_mut(o[Ln2Bias]);
        ln_backward(
            &c.ln2,
            &db,
            &p[o[Ln2Weight]..][..d],
            d,
            &mut dh,
            (&mut head[o[Ln2Weight]..][..d], &mut tail[..d]),
        );
    }
    // h = x + drop(Attn(LN1(x)))
    let mut dattn = dh.clone();
    apply_mask(&mut dattn, &c.drop1);
    let dctx = linear_backward((&c.ctx, &dattn), p, grad, (o[AttnO], None), (t_len, d, d));
    let dqkv = attention_backward(&c, &dctx, (t_len, heads, d));
    let mut da = vec![R::zero(); t_len * d];
    for (dm, w) in dqkv.iter().zip([o[AttnQ], o[AttnK], o[AttnV]]) {
        mm(
            (&c.a, true),
            (dm, false),
            &mut grad[w..][..d * d],
            (d, t_len, d),
            true,
        );
        mm(
            (dm, false),
            (&p[w..][..d * d], true),
            &mut da,
            (t_len, d, d),
            true,
        );
    }
    let mut dx_in = dh;
    {
        let (head, tail) = grad.split_at_mut(o[Ln1Bias]);
        ln_backward(
            &c.ln1,
            &da,
            &p[o[Ln1Weight]..][..d],
            d,
            &mut dx_in,
            (&mut head[o[Ln1Weight]..][..d], &mut tail[..d]),
        );
    }
    dx_in
}

/// The gradients of the query, key and value projections' outputs
/// (`[t_len, d]` each) from that of the attention's context `dctx`, head by
/// head, through the softmax the forward pass cached in `c.probs`.
fn attention_backward<R: Real>(
    c: &LayerCache<R>,
    dctx: &[R],
    (t_len, heads, d): (usize, usize, usize),
) -> [Vec<R>; 3] {
    let hd = d / heads;
    let scale = R::of(1.0 / (hd as f64).sqrt());
    let mut dqkv = [
        vec![R::zero(); t_len * d],
        vec![R::zero(); t_len * d],
        vec![R::zero(); t_len * d],
    ];
    for h in 0..heads {
        let [qh, kh, vh] = [&c.qkv[0], &c.qkv[1], &c.qkv[2]].map(|m| head_columns(m, h, hd, d));
        let dch = head_columns(dctx, h, hd, d);
        let pr = &c.probs[h * t_len * t_len..][..t_len * t_len];
        // dP = dctx_h · v_hᵀ; dv_h = Pᵀ · dctx_h
        let mut ds = vec![R::zero(); t_len * t_len];
        mm(
            (&dch, false),
            (&vh, true),
            &mut ds,
            (t_len, hd, t_len),
            false,
        );
        let mut dvh = vec![R::zero(); t_len * hd];
        mm(
            (pr, true),
            (&dch, false),
            &mut dvh,
            (t_len, t_len, hd),
            false,
        );
        // dS = P ∘ (dP − Σ_j P dP) · scale (zero where P is masked)
        for (p_row, ds_row) in pr.chunks_exact(t_len).zip(ds.chunks_exact_mut(t_len)) {
            let dot: R = p_row.iter().zip(ds_row.iter()).map(|(&p, &g)| p * g).sum();
            for (g, &p) in ds_row.iter_mut().zip(p_row) {
                *g = p * (*g - dot) * scale;
            }
        }
        let mut dqh = vec![R::zero(); t_len * hd];
        mm(
            (&ds, false),
            (&kh, false),
            &mut dqh,
            (t_len, t_len, hd),
            false,
        );
        let mut dkh = vec![R::zero(); t_len * hd];
        mm(
            (&ds, true),
            (&qh, false),
            &mut dkh,
            (t_len, t_len, hd),
            false,
        );
        for (m, g) in dqkv.iter_mut().zip([&dqh, &dkh, &dvh]) {
            scatter_head(g, m, h, hd, d);
        }
    }
    dqkv
}
