//! Numeric kernels: matrix products (the gemm crate, runtime-dispatched SIMD), LayerNorm,
//! RMSNorm, GELU (tanh, exact erf and CLIP's sigmoid forms), SiLU, ReLU, softmax.

/// `c[m, n] (+)= a[m, k] · b[k, n]`, all row-major; `accumulate` adds to `c`.
pub fn matmul(
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    (m, k, n): (usize, usize, usize),
    accumulate: bool,
) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    // SAFETY: the three slices hold the m×k, k×n and m×n dense row-major
    // matrices the strides describe (asserted above); `c` is borrowed
    // mutably, so it aliases neither `a` nor `b`.
    unsafe { gemm_strided((m, k, n), (a, [k, 1]), (b, [n, 1]), (c, n), accumulate) }
}

/// `c[m, n] (+)= a[m, k] · w[n, k]ᵀ`: a product with a PyTorch-layout
/// (`[out, in]`) weight matrix, without transposing it.
pub fn matmul_bt(
    a: &[f32],
    w: &[f32],
    c: &mut [f32],
    (m, k, n): (usize, usize, usize),
    accumulate: bool,
) {
    assert!(a.len() >= m * k && w.len() >= k * n && c.len() >= m * n);
    // SAFETY: as in `matmul`; `w` read with strides (1, k) is the k×n
    // transpose of the dense n×k matrix it holds.
    unsafe { gemm_strided((m, k, n), (a, [k, 1]), (w, [1, k]), (c, n), accumulate) }
}

/// `c = a · b (+ c)` over strided matrices of any float type the gemm
/// crate handles (f32 for inference and training, f64 for gradient
/// checks): `a` is m×k with strides `[row, col]`, `b` is k×n likewise, `c`
/// is m×n with row stride `ldc`.
///
/// # Safety
/// Every element the shapes and strides address must lie inside its slice.
pub unsafe fn gemm_strided<T: num_traits::One + Copy + 'static>(
    (m, k, n): (usize, usize, usize),
    (a, [rsa, csa]): (&[T], [usize; 2]),
    (b, [rsb, csb]): (&[T], [usize; 2]),
    (c, ldc): (&mut [T], usize),
    accumulate: bool,
) {
    // SAFETY: the caller guarantees the strided matrices lie inside the
    // slices; `c` is a unique borrow.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            ldc as isize,
            accumulate,
            a.as_ptr(),
            csa as isize,
            rsa as isize,
            b.as_ptr(),
            csb as isize,
            rsb as isize,
            T::one(),
            T::one(),
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

use crate::nn::f32_tier::F32Tier;

/// Runs `$body` compiled for the [chosen](F32Tier::chosen) tier: AVX-512F,
/// else AVX2 + FMA, else plain code. In the body, `Madd` is the
/// [`MulAdd`] to use: [`Fused`] in the AVX2 and AVX-512 builds,
/// [`Separate`] in the plain one (compiled without FMA, a fused
/// multiply-add is a slow library call). So results can differ in the last
/// bits between CPUs with and without FMA; the two FMA builds agree.
macro_rules! simd_dispatch {
    (($($arg:ident: $ty:ty),*) $body:block) => {
        simd_dispatch!(($($arg: $ty),*) -> () $body)
    };
    (($($arg:ident: $ty:ty),*) -> $ret:ty $body:block) => {{
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx512f,avx2,fma,f16c")]
            fn avx512($($arg: $ty),*) -> $ret {
                #[allow(dead_code)]
                type Madd = Fused;
                $body
            }
            #[target_feature(enable = "avx2,fma")]
            fn avx2($($arg: $ty),*) -> $ret {
                #[allow(dead_code)]
                type Madd = Fused;
                $body
            }
            match F32Tier::chosen() {
                // SAFETY: `chosen` checked the tier's features.
                F32Tier::Avx512 => return unsafe { avx512($($arg),*) },
                // SAFETY: as above.
                F32Tier::Avx2 => return unsafe { avx2($($arg),*) },
                F32Tier::Portable => {}
            }
        }
        #[allow(dead_code)]
        type Madd = Separate;
        $body
    }};
}

/// `a · b + c`, as the element-wise kernels compute it.
pub trait MulAdd {
    /// `a · b + c`.
    fn mul_add(a: f32, b: f32, c: f32) -> f32;
}

/// One instruction and one rounding: for code compiled with FMA.
pub struct Fused;

impl MulAdd for Fused {
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
}

/// A product and a sum: for code compiled without FMA.
pub struct Separate;

impl MulAdd for Separate {
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        a * b + c
    }
}

/// Partial results of the element-wise reductions (sums, maxima): one
/// AVX2 register of f32 in every tier, so that all tiers reduce in the same
/// order.
const LANES: usize = 8;

/// LayerNorm of each `dim`-wide row of `x` into `out`: biased variance.
/// A row of finite values whose squares overflow f32 (a residual stream
/// pushed far by steering) is normalised in f64, exactly, rather than to
/// zeros.
pub fn layer_norm(x: &[f32], weight: &[f32], bias: &[f32], out: &mut [f32], dim: usize, eps: f32) {
    simd_dispatch!((
        x: &[f32],
        weight: &[f32],
        bias: &[f32],
        out: &mut [f32],
        dim: usize,
        eps: f32
    ) {
        for (row, dst) in x.chunks_exact(dim).zip(out.chunks_exact_mut(dim)) {
            let mean = lane_sum(row, |v| v) / dim as f32;
            let var = lane_sum(row, |v| (v - mean) * (v - mean)) / dim as f32;
            if !(mean.is_finite() && var.is_finite()) {
                wide_norm(row, weight, Some(bias), dst, eps);
                continue;
            }
            let inv = 1.0 / (var + eps).sqrt();
            for (((d, &v), &w), &b) in dst.iter_mut().zip(row).zip(weight).zip(bias) {
                *d = (v - mean) * inv * w + b;
            }
        }
    });
}

/// `Σ f(v)` over `values`, summed in [`LANES`] lanes so that the loop
/// vectorises (then the lanes, then the remainder).
#[inline(always)]
fn lane_sum(values: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let chunks = values.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane += f(v);
        }
    }
    lanes.iter().sum::<f32>() + rest.iter().map(|&v| f(v)).sum::<f32>()
}

/// `e^x` in f32 to within 2 ulp (Cephes' `expf`: reduction by ln 2 and a
/// degree-6 polynomial), written so that loops over it vectorise, with
/// `M`'s multiply-adds. Results below `e^-87.3` flush to the smallest
/// normal, above `e^88` saturate there; NaN stays NaN.
#[inline(always)]
pub fn exp<M: MulAdd>(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let x = x.clamp(-87.336_54, 88.0);
    // Adding 1.5·2^23 rounds x·log2(e) to the nearest integer n (no
    // rounding instruction needed, so this vectorises even on baseline
    // x86-64) and leaves n in the low mantissa bits, for building 2^n.
    let shifted = M::mul_add(x, std::f32::consts::LOG2_E, 12_582_912.0);
    let n = shifted - 12_582_912.0;
    let r = M::mul_add(-n, LN2_LO, M::mul_add(-n, LN2_HI, x));
    // Estrin's scheme: three independent pairs, then two levels, where
    // Horner's rule would chain five multiply-adds (and the loops would be
    // bound by that latency).
    let r2 = r * r;
    let high = M::mul_add(1.987_569_1e-4, r, 1.398_2e-3);
    let middle = M::mul_add(8.333_452e-3, r, 4.166_579_6e-2);
    let low = M::mul_add(1.666_666_5e-1, r, 0.5);
    let p = M::mul_add(M::mul_add(high, r2, middle), r2, low);
    let e = M::mul_add(p, r2, r) + 1.0;
    let n_bits = shifted.to_bits().wrapping_sub(0x4B40_0000);
    e * f32::from_bits(n_bits.wrapping_add(127) << 23)
}

/// The error function to within 3e-7 (Abramowitz & Stegun 7.1.26 with
/// [`exp`]), vectorisable.
#[inline(always)]
pub fn erf<M: MulAdd>(x: f32) -> f32 {
    let z = x.abs();
    let t = 1.0 / M::mul_add(0.327_591_1, z, 1.0);
    let poly = M::mul_add(1.061_405_4, t, -1.453_152);
    let poly = M::mul_add(poly, t, 1.421_413_8);
    let poly = M::mul_add(poly, t, -0.284_496_74);
    let poly = M::mul_add(poly, t, 0.254_829_6);
    let value = M::mul_add(-poly * t, exp::<M>(-z * z), 1.0);
    value.copysign(x)
}

/// `tanh(x)` from [`exp`], to within 2e-7 absolute, vectorisable.
#[inline(always)]
pub fn tanh<M: MulAdd>(x: f32) -> f32 {
    // tanh saturates to ±1 in f32 beyond |x| = 9.
    let e = exp::<M>(2.0 * x.clamp(-9.0, 9.0));
    (e - 1.0) / (e + 1.0)
}

/// `sqrt(2 / pi)`, the scale inside GELU's tanh approximation.
pub const GELU_TANH_C: f64 = 0.797_884_560_802_865_4;
/// The cubic coefficient inside GELU's tanh approximation.
pub const GELU_TANH_CUBIC: f64 = 0.044_715;

/// GELU, tanh approximation, in place:
/// `0.5 u (1 + tanh(C (u + CUBIC u³)))`.
pub fn gelu_tanh(x: &mut [f32]) {
    simd_dispatch!((x: &mut [f32]) {
        const C: f32 = GELU_TANH_C as f32;
        const CUBIC: f32 = GELU_TANH_CUBIC as f32;
        for v in x.iter_mut() {
            let u = *v;
            *v = 0.5 * u * (1.0 + tanh::<Madd>(C * Madd::mul_add(CUBIC * u * u, u, u)));
        }
    });
}

/// GELU with the exact error function, `x · Φ(x)`, in place.
pub fn gelu_erf(x: &mut [f32]) {
    simd_dispatch!((x: &mut [f32]) {
        for v in x.iter_mut() {
            let u = *v;
            *v = 0.5 * u * (1.0 + erf::<Madd>(u * std::f32::consts::FRAC_1_SQRT_2));
        }
    });
}

/// The factor inside CLIP's quick GELU, `x · σ(QUICK_GELU_SCALE · x)`.
pub const QUICK_GELU_SCALE: f32 = 1.702;

/// Quick GELU (OpenAI's CLIP), `x · σ(1.702 x)`, in place.
pub fn quick_gelu(x: &mut [f32]) {
    simd_dispatch!((x: &mut [f32]) {
        for v in x.iter_mut() {
            let u = *v;
            *v = u / (1.0 + exp::<Madd>(-QUICK_GELU_SCALE * u));
        }
    });
}

/// SiLU (`x · σ(x)`, transformers' `silu` / `swish`), in place.
pub fn silu(x: &mut [f32]) {
    simd_dispatch!((x: &mut [f32]) {
        for v in x.iter_mut() {
            let u = *v;
            *v = u / (1.0 + exp::<Madd>(-u));
        }
    });
}

/// ReLU, in place.
pub fn relu(x: &mut [f32]) {
    x.iter_mut().for_each(|v| *v = v.max(0.0));
}

/// RMSNorm of each `dim`-wide row of `x` into `out`, as Llama's:
/// `weight · x / √(mean(x²) + eps)`, no bias. A row of finite values whose
/// squares overflow f32 is normalised in f64, as [`layer_norm`] does.
pub fn rms_norm(x: &[f32], weight: &[f32], out: &mut [f32], dim: usize, eps: f32) {
    simd_dispatch!((x: &[f32], weight: &[f32], out: &mut [f32], dim: usize, eps: f32) {
        for (row, dst) in x.chunks_exact(dim).zip(out.chunks_exact_mut(dim)) {
            let mean = lane_sum(row, |v| v * v) / dim as f32;
            if !mean.is_finite() {
                wide_norm(row, weight, None, dst, eps);
                continue;
            }
            let inv = 1.0 / (mean + eps).sqrt();
            for ((d, &v), &w) in dst.iter_mut().zip(row).zip(weight) {
                *d = w * (v * inv);
            }
        }
    });
}

/// A LayerNorm (with `bias`) or an RMSNorm (without) of one row, in f64:
/// the squares of any finite f32 fit in f64, so a finite row gets its
/// normalised values (rounded to f32 at the end) however large it is. A
/// row holding NaN or an infinity gives NaN, as the f32 path does.
#[cold]
fn wide_norm(row: &[f32], weight: &[f32], bias: Option<&[f32]>, out: &mut [f32], eps: f32) {
    let n = row.len() as f64;
    let mean = match bias {
        Some(_) => row.iter().map(|&v| f64::from(v)).sum::<f64>() / n,
        None => 0.0,
    };
    let var = row
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / n;
    let inv = 1.0 / (var + f64::from(eps)).sqrt();
    for (i, (d, &v)) in out.iter_mut().zip(row).enumerate() {
        let normed = (f64::from(v) - mean) * inv * f64::from(weight[i]);
        *d = (normed + bias.map_or(0.0, |b| f64::from(b[i]))) as f32;
    }
}

/// Softmax in place.
pub fn softmax(x: &mut [f32]) {
    scaled_softmax(x, 1.0);
}

/// Softmax of `scale · x` in place, for `scale > 0`.
pub fn scaled_softmax(x: &mut [f32], scale: f32) {
    let inverse = 1.0 / shifted_exp(x, scale);
    for v in x.iter_mut() {
        *v *= inverse;
    }
}

/// `e^(scale · (v − max))` in place of each value `v` of `x`, `max` the
/// largest, for `scale > 0`; returns their sum. That is softmax before its
/// division, for a caller that divides fewer values later (attention
/// divides each output row rather than each row of scores).
pub fn shifted_exp(x: &mut [f32], scale: f32) -> f32 {
    simd_dispatch!((x: &mut [f32], scale: f32) -> f32 {
        let mut max = [f32::NEG_INFINITY; LANES];
        let mut chunks = x.chunks_exact(LANES);
        for chunk in &mut chunks {
            for (m, &v) in max.iter_mut().zip(chunk) {
                // Not `f32::max`, whose NaN handling is three instructions
                // in a chain: a NaN is skipped either way (its own
                // exponential is then NaN, and so is the sum).
                *m = if v > *m { v } else { *m };
            }
        }
        let max = chunks
            .remainder()
            .iter()
            .chain(&max)
            .copied()
            .fold(f32::NEG_INFINITY, f32::max);
        // The exponentials apart from their sum: with the sum in the same
        // loop, the fused multiply-adds would keep it from vectorising.
        for v in x.iter_mut() {
            *v = exp::<Madd>((*v - max) * scale);
        }
        lane_sum(x, |v| v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_matches_naive() {
        let (m, k, n) = (3, 4, 5);
        let a: Vec<f32> = (0..m * k).map(|i| i as f32 * 0.5 - 2.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i as f32).sin()).collect();
        let mut c = vec![1.0; m * n];
        matmul(&a, &b, &mut c, (m, k, n), true);
        for i in 0..m {
            for j in 0..n {
                let want: f32 = 1.0 + (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum::<f32>();
                assert!((c[i * n + j] - want).abs() < 1e-4);
            }
        }
    }

    #[test]
    fn transposed_product_matches_plain() {
        let (m, k, n) = (4, 3, 5);
        let a: Vec<f32> = (0..m * k).map(|i| (i as f32).cos()).collect();
        let w: Vec<f32> = (0..n * k).map(|i| i as f32 * 0.25 - 1.0).collect();
        let wt: Vec<f32> = (0..k * n).map(|i| w[(i % n) * k + i / n]).collect();
        let (mut c1, mut c2) = (vec![0.0; m * n], vec![0.0; m * n]);
        matmul_bt(&a, &w, &mut c1, (m, k, n), false);
        matmul(&a, &wt, &mut c2, (m, k, n), false);
        for (x, y) in c1.iter().zip(&c2) {
            assert!((x - y).abs() <= 1e-6 * x.abs().max(1.0), "{x} vs {y}");
        }
    }

    #[test]
    fn erf_matches_known_values() {
        // erf values from Abramowitz & Stegun, table 7.1.
        for (x, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (2.0, 0.995_322_3),
            (-1.5, -0.966_105_15),
        ] {
            assert!((erf::<Separate>(x) - want).abs() < 3e-7, "erf({x})");
            assert!((erf::<Fused>(x) - want).abs() < 3e-7, "erf({x}), fused");
        }
        let mut g = [1.0f32, -1.0];
        gelu_erf(&mut g);
        assert!((g[0] - 0.841_344_7).abs() < 1e-6 && (g[1] + 0.158_655_3).abs() < 1e-6);
    }

    fn exp_is_within_two_ulp_with<M: MulAdd>() {
        let mut x = -87.0f32;
        while x < 88.0 {
            let (ours, want) = (exp::<M>(x), x.exp());
            assert!(
                (ours - want).abs() <= 2.5e-7 * want,
                "exp({x}) = {ours}, expected {want}"
            );
            x += 0.0137;
        }
        assert!(exp::<M>(f32::NAN).is_nan());
        assert!(exp::<M>(-1000.0) < 1e-37 && exp::<M>(f32::NEG_INFINITY) >= 0.0);
    }

    #[test]
    fn exp_is_within_two_ulp() {
        exp_is_within_two_ulp_with::<Separate>();
        exp_is_within_two_ulp_with::<Fused>();
    }

    #[test]
    fn tanh_is_within_2e7() {
        let mut x = -12.0f32;
        while x < 12.0 {
            assert!((tanh::<Separate>(x) - x.tanh()).abs() <= 2e-7, "tanh({x})");
            assert!(
                (tanh::<Fused>(x) - x.tanh()).abs() <= 2e-7,
                "tanh({x}), fused"
            );
            x += 0.00731;
        }
    }

    /// The tiers this CPU can run.
    fn usable_tiers() -> Vec<F32Tier> {
        [F32Tier::Portable, F32Tier::Avx2, F32Tier::Avx512]
            .into_iter()
            .filter(|t| t.usable())
            .collect()
    }

    /// Softmax, the three GELUs and LayerNorm of `x` in one tier.
    fn all_kernels(tier: F32Tier, x: &[f32]) -> [Vec<f32>; 5] {
        F32Tier::capped(tier, || {
            let mut softmax = x.to_vec();
            scaled_softmax(&mut softmax, 0.35);
            let mut erf = x.to_vec();
            gelu_erf(&mut erf);
            let mut tanh = x.to_vec();
            gelu_tanh(&mut tanh);
            let mut norm = vec![0.0; x.len()];
            let weight: Vec<f32> = (0..x.len()).map(|i| 1.0 + i as f32 * 0.01).collect();
            layer_norm(x, &weight, &vec![0.5; x.len()], &mut norm, x.len(), 1e-5);
            let mut quick = x.to_vec();
            quick_gelu(&mut quick);
            [softmax, erf, tanh, norm, quick]
        })
    }

    /// Each tier's kernels against plain scalar references, on lengths
    /// around both vector widths; the two FMA tiers give the same bits.
    #[test]
    fn vector_kernels_match_scalar_references() {
        let tiers = usable_tiers();
        let mut rng = modelbin_format::io::rng::Rng::new(3);
        for len in (1..70).chain([384, 1536]) {
            let x: Vec<f32> = (0..len)
                .map(|_| rng.uniform() as f32 * 16.0 - 8.0)
                .collect();
            let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let e: Vec<f64> = x
                .iter()
                .map(|&v| (f64::from(v - max) * 0.35).exp())
                .collect();
            let sum: f64 = e.iter().sum();
            let mean = x.iter().map(|&v| f64::from(v)).sum::<f64>() / len as f64;
            let var = x
                .iter()
                .map(|&v| (f64::from(v) - mean).powi(2))
                .sum::<f64>()
                / len as f64;
            let mut fma_tiers = Vec::new();
            for &tier in &tiers {
                let [softmax, erf, tanh, norm, quick] = all_kernels(tier, &x);
                for (o, e) in softmax.iter().zip(&e) {
                    assert!(
                        (f64::from(*o) - e / sum).abs() <= 1e-6 * (e / sum).max(1e-3),
                        "{tier:?} softmax, {len}"
                    );
                }
                for ((&erf, &tanh), &u) in erf.iter().zip(&tanh).zip(&x) {
                    let u64 = f64::from(u);
                    let exact = 0.5 * u64 * (1.0 + erf_f64(u64 / std::f64::consts::SQRT_2));
                    assert!(
                        (f64::from(erf) - exact).abs() <= 1e-6 * exact.abs().max(1.0),
                        "{tier:?} gelu({u})"
                    );
                    let inner = GELU_TANH_C * (u64 + GELU_TANH_CUBIC * u64.powi(3));
                    let want = 0.5 * u64 * (1.0 + inner.tanh());
                    assert!(
                        (f64::from(tanh) - want).abs() <= 1e-6 * want.abs().max(1.0),
                        "{tier:?} gelu_tanh({u})"
                    );
                }
                for (&quick, &u) in quick.iter().zip(&x) {
                    let u64 = f64::from(u);
                    let want = u64 / (1.0 + (-f64::from(QUICK_GELU_SCALE) * u64).exp());
                    assert!(
                        (f64::from(quick) - want).abs() <= 1e-6 * want.abs().max(1.0),
                        "{tier:?} quick_gelu({u})"
                    );
                }
                for (i, (&o, &v)) in norm.iter().zip(&x).enumerate() {
                    let want =
                        (f64::from(v) - mean) / (var + 1e-5).sqrt() * (1.0 + i as f64 * 0.01) + 0.5;
                    assert!(
                        (f64::from(o) - want).abs() <= 2e-6 * want.abs().max(1.0),
                        "{tier:?} layer_norm, {len}"
                    );
                }
                if tier != F32Tier::Portable {
                    fma_tiers.push(
                        [softmax, erf, tanh, norm, quick]
                            .map(|v| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>()),
                    );
                }
            }
            assert!(fma_tiers.windows(2).all(|w| w[0] == w[1]), "{len}");
            // Both FMA tiers were compared wherever the CPU has them.
            assert!(!F32Tier::Avx512.usable() || fma_tiers.len() == 2);
        }
    }

    /// Rows holding a NaN or infinities give NaN sums in every tier, and
    /// the FMA tiers agree on every value.
    #[test]
    fn softmax_of_nan_and_infinite_rows() {
        let rows: [&[f32]; 5] = [
            &[1.0, f32::NAN, 2.0],
            &[f32::NAN; 20],
            &[1.0, f32::INFINITY, 3.0],
            &[f32::NEG_INFINITY; 17],
            &[0.5, f32::NEG_INFINITY, 1.5],
        ];
        for row in rows {
            let mut fma_tiers = Vec::new();
            for tier in usable_tiers() {
                let mut values = row.to_vec();
                let sum = F32Tier::capped(tier, || shifted_exp(&mut values, 0.5));
                if row.iter().all(|v| v.is_finite() || *v == f32::NEG_INFINITY)
                    && row.iter().any(|v| v.is_finite())
                {
                    // A −∞ score gets a weight of (nearly) zero.
                    assert!(sum.is_finite() && values.iter().all(|v| v.is_finite()));
                    assert!(values[1] < 1e-30, "{tier:?} {row:?}");
                } else {
                    assert!(sum.is_nan(), "{tier:?} {row:?}");
                }
                if tier != F32Tier::Portable {
                    let bits: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
                    fma_tiers.push((bits, sum.to_bits()));
                }
            }
            assert!(fma_tiers.windows(2).all(|w| w[0] == w[1]), "{row:?}");
        }
    }

    /// The error function in f64, to about 1e-12 (its Maclaurin series
    /// below 3, the continued fraction of erfc above), as a reference.
    fn erf_f64(x: f64) -> f64 {
        let z = x.abs();
        let value = if z < 3.0 {
            let (mut term, mut sum, mut n) = (z, z, 0.0);
            while term.abs() > 1e-17 * sum.abs() {
                n += 1.0;
                term *= -z * z / n;
                sum += term / (2.0 * n + 1.0);
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        } else {
            // erfc(z) = exp(-z²)/√π · 1/(z + 1/2/(z + 1/(z + 3/2/(z + ...)))).
            let mut fraction = z;
            for k in (1..60).rev() {
                fraction = z + f64::from(k) / 2.0 / fraction;
            }
            1.0 - (-z * z).exp() / std::f64::consts::PI.sqrt() / fraction
        };
        value.copysign(x)
    }

    #[test]
    fn norms_and_activations() {
        let mut out = [0.0; 4];
        layer_norm(
            &[1.0, 2.0, 3.0, 4.0],
            &[1.0; 4],
            &[0.0; 4],
            &mut out,
            4,
            1e-5,
        );
        assert!((out.iter().sum::<f32>()).abs() < 1e-5);
        let mut g = [0.0f32, 1.0, -1.0];
        gelu_tanh(&mut g);
        assert!((g[1] - 0.841_192).abs() < 1e-5 && (g[2] + 0.158_808).abs() < 1e-5);
        let mut p = [1.0f32, 2.0, 3.0];
        softmax(&mut p);
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6 && p[2] > p[1]);
    }
}
