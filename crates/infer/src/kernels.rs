//! Numeric kernels: matrix products (matrixmultiply's sgemm), LayerNorm,
//! GELU (tanh form), softmax.

/// `c[m, n] (+)= a[m, k] · b[k, n]`, all row-major; `accumulate` adds to `c`.
pub fn matmul(
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    (m, k, n): (usize, usize, usize),
    accumulate: bool,
) {
    debug_assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    let beta = if accumulate { 1.0 } else { 0.0 };
    // SAFETY: the slices hold at least m×k, k×n and m×n elements (checked by
    // the callers' shapes, asserted above in debug builds), and the strides
    // describe dense row-major matrices inside them; `c` does not alias `a`/`b`.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            beta,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

/// LayerNorm of each `dim`-wide row of `x` into `out`: biased variance, eps 1e-5.
pub fn layer_norm(x: &[f32], weight: &[f32], bias: &[f32], out: &mut [f32], dim: usize) {
    for (row, dst) in x.chunks_exact(dim).zip(out.chunks_exact_mut(dim)) {
        let mean = row.iter().sum::<f32>() / dim as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / dim as f32;
        let inv = 1.0 / (var + 1e-5).sqrt();
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
    fn norms_and_activations() {
        let mut out = [0.0; 4];
        layer_norm(&[1.0, 2.0, 3.0, 4.0], &[1.0; 4], &[0.0; 4], &mut out, 4);
        assert!((out.iter().sum::<f32>()).abs() < 1e-5);
        let mut g = [0.0f32, 1.0, -1.0];
        gelu_tanh(&mut g);
        assert!((g[1] - 0.841_192).abs() < 1e-5 && (g[2] + 0.158_808).abs() < 1e-5);
        let mut p = [1.0f32, 2.0, 3.0];
        softmax(&mut p);
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6 && p[2] > p[1]);
    }
}
