//! The operations the training forward and backward passes are made of,
//! generic over the float type: matrix products through the inference
//! kernels' gemm, LayerNorm and GELU with their derivatives, attention-head
//! slicing, causal softmax and dropout.

use modelbin_format::tllm::LAYER_NORM_EPS;
use num_traits::Float;

use crate::nn::kernels::{GELU_TANH_C, GELU_TANH_CUBIC, gemm_strided};
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
    /// The vectorisable `tanh` of the inference kernels (within 2e-7),
    /// with separate multiplies and adds: the inference GELU fuses them
    /// where the CPU has FMA, so the two can differ in the last bits.
    fn fast_tanh(self) -> Self {
        crate::nn::kernels::tanh::<crate::nn::kernels::Separate>(self)
    }
}

impl Real for f64 {}

/// `c (+)= op(a) · op(b)` through the inference kernels' product: `a` is
/// `m × k` (stored `k × m` when transposed), `b` is `k × n` (stored `n × k`
/// when transposed), `c` is `m × n`, all row-major.
pub(super) fn mm<R: Real>(
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
pub(super) struct LnCache<R> {
    xhat: Vec<R>,
    rstd: Vec<R>,
}

pub(super) fn ln_forward<R: Real>(
    x: &[R],
    w: &[R],
    b: &[R],
    d: usize,
    out: &mut [R],
) -> LnCache<R> {
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
pub(super) fn ln_backward<R: Real>(
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

pub(super) fn gelu<R: Real>(u: R) -> R {
    let c = R::of(GELU_TANH_C);
    let inner = c * (u + R::of(GELU_TANH_CUBIC) * u * u * u);
    R::of(0.5) * u * (R::one() + inner.fast_tanh())
}

pub(super) fn gelu_grad<R: Real>(u: R) -> R {
    let c = R::of(GELU_TANH_C);
    let inner = c * (u + R::of(GELU_TANH_CUBIC) * u * u * u);
    let t = inner.fast_tanh();
    let dinner = c * (R::one() + R::of(3.0 * GELU_TANH_CUBIC) * u * u);
    R::of(0.5) * (R::one() + t) + R::of(0.5) * u * (R::one() - t * t) * dinner
}

/// Columns `h·hd..(h+1)·hd` of a `[T, d]` matrix, as a dense `[T, hd]`.
pub(super) fn head_columns<R: Real>(m: &[R], h: usize, hd: usize, d: usize) -> Vec<R> {
    m.chunks_exact(d)
        .flat_map(|row| row[h * hd..(h + 1) * hd].iter().copied())
        .collect()
}

/// Writes a dense `[T, hd]` into columns `h·hd..(h+1)·hd` of a `[T, d]`.
pub(super) fn scatter_head<R: Real>(src: &[R], dst: &mut [R], h: usize, hd: usize, d: usize) {
    for (row, values) in dst.chunks_exact_mut(d).zip(src.chunks_exact(hd)) {
        row[h * hd..(h + 1) * hd].copy_from_slice(values);
    }
}

/// Softmax of `row[..=i] · scale` in place, zeros after position `i`.
pub(super) fn causal_softmax<R: Real>(row: &mut [R], i: usize, scale: R) {
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
pub(super) fn dropout_mask<R: Real>(len: usize, rate: f32, rng: &mut Rng) -> Option<Vec<R>> {
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

pub(super) fn apply_mask<R: Real>(x: &mut [R], mask: &Option<Vec<R>>) {
    if let Some(mask) = mask {
        x.iter_mut().zip(mask).for_each(|(v, &m)| *v *= m);
    }
}

/// The backward pass of `y = x·W (+ b)` over `rows` rows, `W` of
/// `[inputs, outputs]` at offset `weight` of the parameters `p`: adds the
/// gradients of `W` (and of `b`, at offset `bias`) into `grad` and returns
/// the gradient of `x`.
pub(super) fn linear_backward<R: Real>(
    (x, dy): (&[R], &[R]),
    p: &[R],
    grad: &mut [R],
    (weight, bias): (usize, Option<usize>),
    (rows, inputs, outputs): (usize, usize, usize),
) -> Vec<R> {
    let size = inputs * outputs;
    mm(
        (x, true),
        (dy, false),
        &mut grad[weight..][..size],
        (inputs, rows, outputs),
        true,
    );
    if let Some(bias) = bias {
        for row in dy.chunks_exact(outputs) {
            grad[bias..][..outputs]
                .iter_mut()
                .zip(row)
                .for_each(|(g, &r)| *g += r);
        }
    }
    let mut dx = vec![R::zero(); rows * inputs];
    mm(
        (dy, false),
        (&p[weight..][..size], true),
        &mut dx,
        (rows, outputs, inputs),
        false,
    );
    dx
}
