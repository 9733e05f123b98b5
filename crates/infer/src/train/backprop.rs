//! The TLLM forward pass with its hand-written backward pass, generic over
//! the float type (f32 for training, f64 for gradient checks).
//!
//! Parameters live in one flat vector in TLLM file order
//! ([`ParamLayout`]); gradients use the same layout. Dropout (the header's
//! rate) applies to the output of each attention and feed-forward sublayer
//! before its residual add, as in GPT-2's residual dropout.

use std::ops::Range;

use modelbin_format::tllm::{Config, LAYER_NORM_EPS, LayerTensor::*, ModelTensor, PerLayerTensor};
use num_traits::Float;

use crate::kernels::{GELU_TANH_C, GELU_TANH_CUBIC, gemm_strided};

use crate::rng::Rng;

/// A float type the trainer computes in.
pub trait Real:
    Float
    + Send
    + Sync
    + std::iter::Sum
    + std::ops::AddAssign
    + std::ops::SubAssign
    + std::ops::MulAssign
    + std::fmt::Debug
    + 'static
{
    /// Converts from f64.
    fn of(x: f64) -> Self {
        Self::from(x).unwrap_or_else(Self::nan)
    }

    /// `tanh`, as fast as the type allows.
    fn fast_tanh(self) -> Self {
        self.tanh()
    }
}

impl Real for f32 {
    /// The vectorisable `tanh` of the inference kernels (within 2e-7).
    fn fast_tanh(self) -> Self {
        crate::kernels::tanh(self)
    }
}

impl Real for f64 {}

/// Where each tensor sits in the flat parameter vector (TLLM file order).
#[derive(Debug, Clone)]
pub struct ParamLayout {
    d: usize,
    heads: usize,
    f: usize,
    v: usize,
    tok: usize,
    pos: usize,
    /// Per layer, each tensor's offset.
    layers: Vec<PerLayerTensor<usize>>,
    output: usize,
    /// Each tensor's range, in file order.
    ranges: Vec<(ModelTensor, Range<usize>)>,
}

impl ParamLayout {
    /// The layout of `config`'s tensors.
    pub fn new(config: &Config) -> Self {
        let mut ranges = Vec::new();
        let mut at = 0;
        for tensor in config.model_tensors() {
            let len = tensor.shape(config).len();
            ranges.push((tensor, at..at + len));
            at += len;
        }
        let start = |wanted: ModelTensor| {
            ranges
                .iter()
                .find(|(t, _)| *t == wanted)
                .map_or(0, |(_, r)| r.start)
        };
        let layers = (0..config.n_layers)
            .map(|l| PerLayerTensor::from_fn(|t| start(ModelTensor::Layer(l, t))))
            .collect();
        ParamLayout {
            d: config.model_dim as usize,
            heads: config.n_heads as usize,
            f: config.ffn_hidden_dim as usize,
            v: config.vocab_size as usize,
            tok: start(ModelTensor::TokEmbeddings),
            pos: start(ModelTensor::PosEmbeddings),
            layers,
            output: start(ModelTensor::Output),
            ranges,
        }
    }

    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.ranges.last().map_or(0, |(_, r)| r.end)
    }

    /// Whether there are no parameters (never, for a valid configuration).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ranges of the tensors weight decay applies to (matrices, the
    /// embeddings included; not biases or LayerNorm parameters).
    pub fn decayed(&self) -> Vec<Range<usize>> {
        self.ranges
            .iter()
            .filter(|(tensor, _)| match tensor {
                ModelTensor::Layer(_, t) => t.is_matrix(),
                _ => true,
            })
            .map(|(_, range)| range.clone())
            .collect()
    }

    /// Each tensor's range, in file order, for per-tensor checks.
    pub fn tensor_ranges(&self) -> Vec<Range<usize>> {
        self.ranges.iter().map(|(_, range)| range.clone()).collect()
    }
}

/// `c (+)= op(a) · op(b)` through the inference kernels' product: `a` is
/// `m × k` (stored `k × m` when transposed), `b` is `k × n` (stored `n × k`
/// when transposed), `c` is `m × n`, all row-major.
fn mm<R: Real>(
    (a, a_transposed): (&[R], bool),
    (b, b_transposed): (&[R], bool),
    c: &mut [R],
    (m, k, n): (usize, usize, usize),
    accumulate: bool,
) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    let a_strides = if a_transposed { [1, m] } else { [k, 1] };
    let b_strides = if b_transposed { [1, k] } else { [n, 1] };
    // SAFETY: the asserted lengths hold the dense matrices these strides
    // describe; `c` is a unique borrow.
    unsafe {
        gemm_strided(
            (m, k, n),
            (a, a_strides),
            (b, b_strides),
            (c, n),
            accumulate,
        )
    }
}

/// What LayerNorm keeps for its backward pass.
struct LnCache<R> {
    xhat: Vec<R>,
    rstd: Vec<R>,
}

fn ln_forward<R: Real>(x: &[R], w: &[R], b: &[R], d: usize, out: &mut [R]) -> LnCache<R> {
    let rows = x.len() / d;
    let mut xhat = vec![R::zero(); x.len()];
    let mut rstd = vec![R::zero(); rows];
    let n = R::of(d as f64);
    for r in 0..rows {
        let row = &x[r * d..(r + 1) * d];
        let mean = row.iter().copied().sum::<R>() / n;
        let var = row.iter().map(|&v| (v - mean) * (v - mean)).sum::<R>() / n;
        let inv = R::one() / (var + R::of(f64::from(LAYER_NORM_EPS))).sqrt();
        rstd[r] = inv;
        for i in 0..d {
            let h = (row[i] - mean) * inv;
            xhat[r * d + i] = h;
            out[r * d + i] = h * w[i] + b[i];
        }
    }
    LnCache { xhat, rstd }
}

/// Adds LayerNorm's input gradient to `dx` and its parameter gradients.
fn ln_backward<R: Real>(
    cache: &LnCache<R>,
    dout: &[R],
    w: &[R],
    d: usize,
    dx: &mut [R],
    (dw, db): (&mut [R], &mut [R]),
) {
    let n = R::of(d as f64);
    for (r, &inv) in cache.rstd.iter().enumerate() {
        let go = &dout[r * d..(r + 1) * d];
        let xh = &cache.xhat[r * d..(r + 1) * d];
        let mut mean_g = R::zero();
        let mut mean_gx = R::zero();
        for i in 0..d {
            let g = go[i] * w[i];
            mean_g += g;
            mean_gx += g * xh[i];
            dw[i] += go[i] * xh[i];
            db[i] += go[i];
        }
        mean_g = mean_g / n;
        mean_gx = mean_gx / n;
        for i in 0..d {
            let g = go[i] * w[i];
            dx[r * d + i] += inv * (g - mean_g - xh[i] * mean_gx);
        }
    }
}

fn gelu<R: Real>(u: R) -> R {
    let c = R::of(GELU_TANH_C);
    let inner = c * (u + R::of(GELU_TANH_CUBIC) * u * u * u);
    R::of(0.5) * u * (R::one() + inner.fast_tanh())
}

fn gelu_grad<R: Real>(u: R) -> R {
    let c = R::of(GELU_TANH_C);
    let inner = c * (u + R::of(GELU_TANH_CUBIC) * u * u * u);
    let t = inner.fast_tanh();
    let dinner = c * (R::one() + R::of(3.0 * GELU_TANH_CUBIC) * u * u);
    R::of(0.5) * (R::one() + t) + R::of(0.5) * u * (R::one() - t * t) * dinner
}

/// Columns `h·hd..(h+1)·hd` of a `[T, d]` matrix, as a dense `[T, hd]`.
fn head_columns<R: Real>(m: &[R], h: usize, hd: usize, d: usize) -> Vec<R> {
    m.chunks_exact(d)
        .flat_map(|row| row[h * hd..(h + 1) * hd].iter().copied())
        .collect()
}

/// Writes a dense `[T, hd]` into columns `h·hd..(h+1)·hd` of a `[T, d]`.
fn scatter_head<R: Real>(src: &[R], dst: &mut [R], h: usize, hd: usize, d: usize) {
    for (row, values) in dst.chunks_exact_mut(d).zip(src.chunks_exact(hd)) {
        row[h * hd..(h + 1) * hd].copy_from_slice(values);
    }
}

/// Softmax of `row[..=i] · scale` in place, zeros after position `i`.
fn causal_softmax<R: Real>(row: &mut [R], i: usize, scale: R) {
    let (visible, masked) = row.split_at_mut(i + 1);
    masked.iter_mut().for_each(|v| *v = R::zero());
    let max = visible
        .iter()
        .fold(R::neg_infinity(), |m, &v| m.max(v * scale));
    let mut sum = R::zero();
    for v in visible.iter_mut() {
        *v = (*v * scale - max).exp();
        sum += *v;
    }
    visible.iter_mut().for_each(|v| *v = *v / sum);
}

/// Inverted-dropout mask (`0` or `1/(1-p)` per element), or `None` at rate 0.
fn dropout_mask<R: Real>(len: usize, rate: f32, rng: &mut Rng) -> Option<Vec<R>> {
    (rate > 0.0).then(|| {
        let keep = R::of(1.0 / (1.0 - f64::from(rate)));
        (0..len)
            .map(|_| {
                if rng.uniform() < f64::from(rate) {
                    R::zero()
                } else {
                    keep
                }
            })
            .collect()
    })
}

fn apply_mask<R: Real>(x: &mut [R], mask: &Option<Vec<R>>) {
    if let Some(mask) = mask {
        x.iter_mut().zip(mask).for_each(|(v, &m)| *v *= m);
    }
}

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
    let (d, heads, f, v) = (layout.d, layout.heads, layout.f, layout.v);
    let t_len = inputs.len();
    let hd = d / heads;
    let scale = R::of(1.0 / (hd as f64).sqrt());
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
        let mut a = vec![R::zero(); t_len * d];
        let ln1 = ln_forward(
            &x,
            &p[o[Ln1Weight]..][..d],
            &p[o[Ln1Bias]..][..d],
            d,
            &mut a,
        );
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
        x = h_res.iter().zip(&ffn).map(|(&a, &b)| a + b).collect();
        caches.push(LayerCache {
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
        });
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
    mm(
        (&x, true),
        (&dlogits, false),
        &mut grad[layout.output..][..d * v],
        (d, t_len, v),
        true,
    );
    let mut dx = vec![R::zero(); t_len * d];
    mm(
        (&dlogits, false),
        (&p[layout.output..][..d * v], true),
        &mut dx,
        (t_len, v, d),
        false,
    );
    for (o, c) in layout.layers.iter().zip(caches).rev() {
        // x = h + drop(FFN(LN2(h)))
        let mut dffn = dx.clone();
        apply_mask(&mut dffn, &c.drop2);
        mm(
            (&c.g, true),
            (&dffn, false),
            &mut grad[o[FfnLinear2]..][..f * d],
            (f, t_len, d),
            true,
        );
        for row in dffn.chunks_exact(d) {
            grad[o[FfnBias2]..][..d]
                .iter_mut()
                .zip(row)
                .for_each(|(g, &r)| *g += r);
        }
        let mut du = vec![R::zero(); t_len * f];
        mm(
            (&dffn, false),
            (&p[o[FfnLinear2]..][..f * d], true),
            &mut du,
            (t_len, d, f),
            false,
        );
        du.iter_mut()
            .zip(&c.u)
            .for_each(|(g, &z)| *g *= gelu_grad(z));
        mm(
            (&c.b, true),
            (&du, false),
            &mut grad[o[FfnLinear1]..][..d * f],
            (d, t_len, f),
            true,
        );
        for row in du.chunks_exact(f) {
            grad[o[FfnBias1]..][..f]
                .iter_mut()
                .zip(row)
                .for_each(|(g, &r)| *g += r);
        }
        let mut db = vec![R::zero(); t_len * d];
        mm(
            (&du, false),
            (&p[o[FfnLinear1]..][..d * f], true),
            &mut db,
            (t_len, f, d),
            false,
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
        mm(
            (&c.ctx, true),
            (&dattn, false),
            &mut grad[o[AttnO]..][..d * d],
            (d, t_len, d),
            true,
        );
        let mut dctx = vec![R::zero(); t_len * d];
        mm(
            (&dattn, false),
            (&p[o[AttnO]..][..d * d], true),
            &mut dctx,
            (t_len, d, d),
            false,
        );
        let mut dqkv = [
            vec![R::zero(); t_len * d],
            vec![R::zero(); t_len * d],
            vec![R::zero(); t_len * d],
        ];
        for h in 0..heads {
            let [qh, kh, vh] = [&c.qkv[0], &c.qkv[1], &c.qkv[2]].map(|m| head_columns(m, h, hd, d));
            let dch = head_columns(&dctx, h, hd, d);
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
        dx = dx_in;
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
