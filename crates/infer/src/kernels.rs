//! Numeric kernels: matrix products (the gemm crate, runtime-dispatched SIMD), LayerNorm,
//! GELU (tanh and exact erf forms), softmax.

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
    unsafe { sgemm((m, k, n), (a, [k, 1]), (b, [n, 1]), (c, n), accumulate) }
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
    unsafe { sgemm((m, k, n), (a, [k, 1]), (w, [1, k]), (c, n), accumulate) }
}

/// `c = a · b (+ c)` over strided matrices: `a` is m×k with strides
/// `[row, col]`, `b` is k×n likewise, `c` is m×n with row stride `ldc`.
///
/// # Safety
/// Every element the shapes and strides address must lie inside its slice.
pub unsafe fn sgemm(
    (m, k, n): (usize, usize, usize),
    (a, [rsa, csa]): (&[f32], [usize; 2]),
    (b, [rsb, csb]): (&[f32], [usize; 2]),
    (c, ldc): (&mut [f32], usize),
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
            1.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// LayerNorm of each `dim`-wide row of `x` into `out`: biased variance.
pub fn layer_norm(x: &[f32], weight: &[f32], bias: &[f32], out: &mut [f32], dim: usize, eps: f32) {
    for (row, dst) in x.chunks_exact(dim).zip(out.chunks_exact_mut(dim)) {
        let mean = row.iter().sum::<f32>() / dim as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / dim as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for i in 0..dim {
            dst[i] = (row[i] - mean) * inv * weight[i] + bias[i];
        }
    }
}

/// GELU, tanh approximation, in place.
pub fn gelu_tanh(x: &mut [f32]) {
    const C: f32 = 0.797_884_6; // sqrt(2 / pi)
    for v in x {
        let u = *v;
        *v = 0.5 * u * (1.0 + (C * (u + 0.044_715 * u * u * u)).tanh());
    }
}

/// GELU with the exact error function, `x · Φ(x)`, in place.
pub fn gelu_erf(x: &mut [f32]) {
    for v in x {
        let u = *v;
        *v = 0.5 * u * (1.0 + erf(u * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// The error function, to within 1.2e-7 (Numerical Recipes' Chebyshev fit
/// of erfc, evaluated in f64).
pub fn erf(x: f32) -> f32 {
    let z = f64::from(x.abs());
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    let value = (1.0 - erfc) as f32;
    if x < 0.0 { -value } else { value }
}

/// Softmax in place.
pub fn softmax(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in x.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    for v in x.iter_mut() {
        *v /= sum;
    }
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
            assert!((erf(x) - want).abs() < 2e-7, "erf({x})");
        }
        let mut g = [1.0f32, -1.0];
        gelu_erf(&mut g);
        assert!((g[0] - 0.841_344_7).abs() < 1e-6 && (g[1] + 0.158_655_3).abs() < 1e-6);
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
