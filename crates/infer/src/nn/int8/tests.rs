//! The int8 product against a plain computation of its formula, and
//! against f32, in every kernel this CPU runs.

use super::quantize::QuantizedRows;
use super::*;
use modelbin_format::io::rng::Rng;

fn random_i8(rng: &mut Rng, len: usize) -> Vec<i8> {
    (0..len).map(|_| (rng.next_u64() % 255) as i8).collect()
}

/// The module's formula, computed plainly from the quantized rows.
fn formula(
    weights: &QuantizedWeights,
    q: &[i8],
    scales: &[f32],
    block: usize,
    x: &[f32],
    bias: &[f32],
) -> Vec<f32> {
    let (n, k) = (weights.n, weights.k);
    let blocks = k.div_ceil(block);
    let rows = QuantizedRows::new(x, k, weights.k4, false);
    let m = x.len() / k;
    let mut out = vec![0.0; m * n];
    for r in 0..m {
        for j in 0..n {
            let w = |i: usize| i32::from(q[j * k + i].max(-127));
            let (mut sum, mut sums) = (0.0f32, 0.0f32);
            for b in 0..blocks {
                let inputs = b * block..((b + 1) * block).min(k);
                let dot: i32 = inputs
                    .clone()
                    .map(|i| i32::from(rows.values[r * weights.k4 + i]) * w(i))
                    .sum();
                let plain: i32 = inputs.map(w).sum();
                sum = (dot as f32).mul_add(scales[j * blocks + b], sum);
                sums += plain as f32 * scales[j * blocks + b];
            }
            let mut extra = 0.0f32;
            for o in &rows.outliers[r * rows.per_row..(r + 1) * rows.per_row] {
                let c = o.channel as usize;
                extra = (w(c) as f32).mul_add(o.value * scales[j * blocks + c / block], extra);
            }
            let centred = (-rows.zero_points[r]).mul_add(sums, sum);
            out[r * n + j] = bias[j] + rows.scales[r].mul_add(centred, extra);
        }
    }
    out
}

#[test]
fn every_kernel_gives_the_formula_on_ragged_shapes() {
    let mut rng = Rng::new(7);
    for (m, n, k, block) in [
        (1, 1, 1, 32),
        (2, 33, 3, 32),
        (7, 64, 8, 8),
        (13, 130, 37, 32),
        (13, 70, 37, 37),
        (6, 200, 384, 32),
        (25, 70, 1539, 32),
        (4, 40, 1539, 1539),
    ] {
        let q = random_i8(&mut rng, n * k);
        let blocks = k.div_ceil(block);
        let scales: Vec<f32> = (0..n * blocks)
            .map(|i| 0.001 * (i % 7 + 1) as f32)
            .collect();
        let weights = QuantizedWeights::new(&[&q[..n / 2 * k], &q[n / 2 * k..]], &scales, k, block);
        // Ordinary values plus, now and then, one far larger.
        let x: Vec<f32> = (0..m * k)
            .map(|i| {
                let v = rng.uniform() as f32 * 4.0 - 2.0;
                if i % 29 == 3 { v * 40.0 } else { v }
            })
            .collect();
        let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.01).collect();
        let want = formula(&weights, &q, &scales, block, &x, &bias);
        for kernel in Int8Kernel::available() {
            for threads in [1, 2, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let mut got = vec![f32::NAN; m * n];
                pool.install(|| weights.linear(&x, &bias, &mut got, kernel));
                assert_eq!(
                    got,
                    want,
                    "{} ({m},{n},{k},{block}) {threads} threads",
                    kernel.name()
                );
            }
        }
    }
}

#[test]
fn products_are_close_to_float_ones() {
    // Weights quantized the converter's way; the error comes from the
    // weights' half steps and the activations' half steps.
    let mut rng = Rng::new(11);
    let (m, n, k) = (9, 48, 200);
    let w: Vec<f32> = (0..n * k).map(|_| rng.uniform() as f32 - 0.5).collect();
    let block = modelbin_format::embd::int8::BLOCK;
    let (q, scales) = super::quantize_weight_blocks(&w, k, block);
    let weights = QuantizedWeights::new(&[&q], &scales, k, block);
    let mut x: Vec<f32> = (0..m * k)
        .map(|_| rng.uniform() as f32 * 2.0 - 0.5)
        .collect();
    x[5] = 60.0;
    x[k + 17] = -90.0;
    let mut out = vec![0.0; m * n];
    weights.linear(&x, &vec![0.0; n], &mut out, Int8Kernel::best());
    for r in 0..m {
        let row = &x[r * k..(r + 1) * k];
        let rest_max = row
            .iter()
            .map(|v| v.abs())
            .filter(|&v| v < 50.0)
            .fold(0.0f32, f32::max);
        for j in 0..n {
            let exact: f32 = row
                .iter()
                .zip(&w[j * k..(j + 1) * k])
                .map(|(a, b)| a * b)
                .sum();
            // |Δw| ≤ 0.5/127 per weight (|w| ≤ 0.5), |Δx| ≤ step/2.
            let bound = k as f32 * (rest_max * 0.5 / 127.0 + 0.5 * 2.5 / 255.0);
            assert!(
                (out[r * n + j] - exact).abs() <= bound,
                "[{r},{j}] {} vs {exact}",
                out[r * n + j]
            );
        }
    }
}

#[test]
fn tiny_nan_and_infinite_rows_behave_like_f32() {
    let (n, k) = (3, 8);
    let weights = QuantizedWeights::new(&[&[1i8; 24]], &[1.0; 3], k, 32);
    let rows = [
        vec![1e-40f32; k],
        [vec![f32::NAN; 5], vec![1.0; k - 5]].concat(),
        [vec![f32::INFINITY], vec![1.0; k - 1]].concat(),
        vec![0.0; k],
    ]
    .concat();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let mut portable = vec![0.0; 4 * n];
    weights.linear(&rows, &[0.5; 3], &mut portable, Int8Kernel::Portable);
    for kernel in Int8Kernel::available() {
        let mut out = vec![0.0; 4 * n];
        weights.linear(&rows, &[0.5; 3], &mut out, kernel);
        assert_eq!(bits(&out), bits(&portable), "{}", kernel.name());
        let row = |r: usize| &out[r * n..(r + 1) * n];
        assert!(
            row(0).iter().all(|v| (v - 0.5).abs() < 1e-6),
            "{:?}",
            row(0)
        );
        assert!(row(1).iter().all(|v| v.is_nan()), "{:?}", row(1));
        assert!(row(2).iter().all(|v| !v.is_finite()), "{:?}", row(2));
        assert_eq!(row(3), [0.5; 3]);
    }
}

#[test]
fn extreme_values_do_not_saturate() {
    // Every product at 255 · ±127 (the u8 activations' extreme), and a
    // stored −128 read as −127.
    let (n, k) = (64, 1536);
    let mut q = vec![127i8; n * k];
    q[..k].fill(-128);
    let weights = QuantizedWeights::new(&[&q], &vec![1.0; n * k / 32], k, 32);
    for sign in [1.0f32, -1.0] {
        let x = vec![sign; 2 * k];
        for kernel in Int8Kernel::available() {
            let mut out = vec![0.0; 2 * n];
            weights.linear(&x, &vec![0.0; n], &mut out, kernel);
            let full = 127.0 * k as f32;
            let close = |got: f32, want: f32| (got - want).abs() <= 1e-6 * want.abs();
            assert!(close(out[0], -sign * full), "{} {}", kernel.name(), out[0]);
            assert!(close(out[1], sign * full), "{} {}", kernel.name(), out[1]);
        }
    }
}
