//! Products against int8 weights: the weights (INT8 with per-row scales,
//! as `convert --dtype int8` stores them) are packed once into panels for
//! the integer kernels; each call quantizes its activations per row
//! (symmetric, scale `max |x| / 127`) and scales the exact i32 sums back
//! to floats: `out[r, j] = bias[j] + sx[r] · sw[j] · Σ_i qx[r, i] · qw[j, i]`.

use crate::int8_kernels::{Int8Kernel, QMR, QNR};
use crate::panel_tasks::{for_each_block, row_tiles};

/// The widest input an int8 product accepts: beyond it the VNNI kernel's
/// i32 sums could overflow (255 · 127 per product).
pub const MAX_INPUT_FEATURES: usize = 65_536;

/// An int8 weight matrix `q[n, k]` with per-row scales, packed for
/// `x · Wᵀ`.
#[derive(Debug, Clone)]
pub struct QuantizedWeights {
    n: usize,
    k: usize,
    /// `k` rounded up to a multiple of four.
    k4: usize,
    /// `ceil(n / QNR)` panels of `k4 · QNR` bytes (see
    /// [`crate::int8_kernels`]), zero past `n` and `k`.
    panels: Vec<i8>,
    /// Per row: Σ_i q[j, i], zero past `n`.
    column_sums: Vec<i32>,
    scales: Vec<f32>,
}

impl QuantizedWeights {
    /// Packs the rows of `parts` (each row-major with rows of `k`, stacked
    /// in order: `n` rows in all), with one scale per row. A stored −128 is
    /// read as −127 (the quantizer never writes it; the kernels assume it
    /// away).
    ///
    /// # Panics
    /// If the sizes disagree or `k` exceeds [`MAX_INPUT_FEATURES`].
    pub fn new(parts: &[&[i8]], scales: Vec<f32>, k: usize) -> Self {
        let n = scales.len();
        let rows: Vec<&[i8]> = parts
            .iter()
            .flat_map(|p| p.chunks_exact(k.max(1)))
            .collect();
        assert!(rows.len() == n && k > 0 && k <= MAX_INPUT_FEATURES);
        assert!(parts.iter().all(|p| p.len() % k == 0));
        let k4 = k.next_multiple_of(4);
        let panel_count = n.div_ceil(QNR);
        let mut panels = vec![0i8; panel_count * k4 * QNR];
        // Panel by panel, group by group: the writes run in order.
        for (p, panel) in panels.chunks_exact_mut(k4 * QNR).enumerate() {
            let panel_rows = &rows[p * QNR..((p + 1) * QNR).min(n)];
            for (group, out) in panel.chunks_exact_mut(4 * QNR).enumerate() {
                for (row, out) in panel_rows.iter().zip(out.chunks_exact_mut(4)) {
                    let four = &row[(4 * group).min(k)..(4 * group + 4).min(k)];
                    for (d, &v) in out.iter_mut().zip(four) {
                        *d = v.max(-127);
                    }
                }
            }
        }
        let mut column_sums = vec![0i32; panel_count * QNR];
        for (sum, row) in column_sums.iter_mut().zip(&rows) {
            *sum = row.iter().map(|&v| i32::from(v.max(-127))).sum();
        }
        QuantizedWeights {
            n,
            k,
            k4,
            panels,
            column_sums,
            scales,
        }
    }

    /// `out[m, n] = bias + x[m, k] · Wᵀ` through `kernel`, spread over the
    /// rayon pool.
    ///
    /// # Panics
    /// If the sizes disagree, or `kernel` is not available on this CPU.
    pub fn linear(&self, x: &[f32], bias: &[f32], out: &mut [f32], kernel: Int8Kernel) {
        let (n, k) = (self.n, self.k);
        let m = x.len() / k.max(1);
        assert!(x.len() == m * k && out.len() == m * n && bias.len() == n);
        let rows = QuantizedRows::new(x, k, self.k4);
        for_each_block(m, n, QNR, QMR, out, |rows_range, panels, out, ldo| {
            self.block(&rows, rows_range, bias, panels, out, ldo, kernel)
        });
    }

    /// The rows `rows` of `x · Wᵀ + bias` for the given panels into `out`
    /// (those rows, row stride `ldo`, column 0 being the first panel's).
    #[allow(clippy::too_many_arguments)]
    fn block(
        &self,
        x: &QuantizedRows,
        rows: std::ops::Range<usize>,
        bias: &[f32],
        panels: std::ops::Range<usize>,
        out: &mut [f32],
        ldo: usize,
        kernel: Int8Kernel,
    ) {
        let k4 = self.k4;
        let first = panels.start;
        let mut tile = [0i32; QMR * QNR];
        for p in panels {
            let panel = &self.panels[p * k4 * QNR..(p + 1) * k4 * QNR];
            let sums = &self.column_sums[p * QNR..(p + 1) * QNR];
            let col = (p - first) * QNR;
            let width = QNR.min(self.n - p * QNR);
            let (bias, scales) = (&bias[p * QNR..], &self.scales[p * QNR..]);
            for (row0, count) in row_tiles(rows.clone(), QMR) {
                kernel.tile(&x.values[row0 * k4..], count, k4, panel, sums, &mut tile);
                for r in 0..count {
                    let at = (row0 - rows.start + r) * ldo + col;
                    let scale = x.scales[row0 + r];
                    for (j, d) in out[at..at + width].iter_mut().enumerate() {
                        *d = bias[j] + scale * scales[j] * tile[r * QNR + j] as f32;
                    }
                }
            }
        }
    }
}

/// Activations quantized per row: `values[r, i] = round(x[r, i] / scales[r])`
/// (to nearest, ties to even) in −127..=127, rows padded with zeros to
/// `k4`.
struct QuantizedRows {
    values: Vec<i8>,
    scales: Vec<f32>,
}

/// Adding 1.5 · 2²³ to an f32 of magnitude below 2²² rounds it to the
/// nearest integer, ties to even, and leaves that integer in the low bits of
/// the sum: plain arithmetic the compiler vectorises (`f32::round` is a
/// library call on baseline x86-64).
const ROUNDING: f32 = 12_582_912.0;

impl QuantizedRows {
    fn new(x: &[f32], k: usize, k4: usize) -> Self {
        let m = x.len() / k.max(1);
        let mut values = vec![0i8; m * k4];
        let mut scales = Vec::with_capacity(m);
        for (row, out) in x
            .chunks_exact(k.max(1))
            .zip(values.chunks_exact_mut(k4.max(1)))
        {
            let scale = max_abs(row) / 127.0;
            scales.push(scale);
            let inverse = 1.0 / scale;
            // A row of zeros, a subnormal scale (whose inverse overflows) or
            // a NaN or infinite value keep their zeros; the scale carries a
            // NaN or infinity into the row's outputs, as f32 would.
            if inverse.is_finite() && scale.is_finite() {
                let base = ROUNDING.to_bits() as i32;
                for (q, v) in out.iter_mut().zip(row) {
                    // The rounded integer sits in the low mantissa bits of
                    // the sum (NaN lands outside the range and clamps).
                    let rounded = (v * inverse + ROUNDING).to_bits() as i32 - base;
                    *q = rounded.clamp(-127, 127) as i8;
                }
            }
        }
        QuantizedRows { values, scales }
    }
}

/// The largest magnitude in `row`, or NaN when it holds one (a NaN lane
/// stays NaN: comparisons with it are false), in eight
/// lanes the compiler vectorises.
fn max_abs(row: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let chunks = row.chunks_exact(8);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (lane, v) in lanes.iter_mut().zip(chunk) {
            let a = v.abs();
            // A NaN, once in the lane, stays.
            *lane = if a > *lane || a.is_nan() { a } else { *lane };
        }
    }
    rest.iter().chain(&lanes).fold(0.0f32, |m, v| {
        if v.abs() > m || v.is_nan() {
            v.abs()
        } else {
            m
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use modelbin_format::rng::Rng;

    fn random_i8(rng: &mut Rng, len: usize) -> Vec<i8> {
        (0..len).map(|_| (rng.next_u64() % 255) as i8).collect()
    }

    #[test]
    fn every_kernel_gives_the_portable_sums_on_ragged_shapes() {
        let mut rng = Rng::new(7);
        for (m, n, k) in [
            (1, 1, 1),
            (2, 65, 3),
            (7, 64, 8),
            (13, 130, 37),
            (6, 200, 384),
            (25, 70, 1539),
        ] {
            let q = random_i8(&mut rng, n * k);
            let scales: Vec<f32> = (0..n).map(|j| 0.001 * (j % 7 + 1) as f32).collect();
            let weights = QuantizedWeights::new(&[&q[..n / 2 * k], &q[n / 2 * k..]], scales, k);
            let x: Vec<f32> = (0..m * k)
                .map(|_| rng.uniform() as f32 * 4.0 - 2.0)
                .collect();
            let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.01).collect();
            let mut want = vec![0.0; m * n];
            weights.linear(&x, &bias, &mut want, Int8Kernel::Portable);
            // The portable sums are the plain integer products.
            let rows = QuantizedRows::new(&x, k, weights.k4);
            for r in 0..m {
                for j in 0..n {
                    let sum: i32 = (0..k)
                        .map(|i| {
                            i32::from(rows.values[r * weights.k4 + i])
                                * i32::from(q[j * k + i].max(-127))
                        })
                        .sum();
                    let value = bias[j] + rows.scales[r] * weights.scales[j] * sum as f32;
                    assert_eq!(want[r * n + j], value, "({m},{n},{k}) [{r},{j}]");
                }
            }
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
                        "{} ({m},{n},{k}) {threads} threads",
                        kernel.name()
                    );
                }
            }
        }
    }

    #[test]
    fn tiny_nan_and_infinite_rows_behave_like_f32() {
        let (n, k) = (3, 8);
        let weights = QuantizedWeights::new(&[&[1i8; 24]], vec![1.0; n], k);
        let rows = [
            vec![1e-40f32; k],
            [vec![f32::NAN], vec![1.0; k - 1]].concat(),
            [vec![f32::INFINITY], vec![1.0; k - 1]].concat(),
            vec![0.0; k],
        ]
        .concat();
        for kernel in Int8Kernel::available() {
            let mut out = vec![0.0; 4 * n];
            weights.linear(&rows, &[0.5; 3], &mut out, kernel);
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
        // Every product at ±127 · ±127, and a stored −128 read as −127.
        let (n, k) = (64, 1536);
        let mut q = vec![127i8; n * k];
        q[..k].fill(-128);
        let weights = QuantizedWeights::new(&[&q], vec![1.0; n], k);
        for sign in [1.0f32, -1.0] {
            let x = vec![sign; 2 * k];
            for kernel in Int8Kernel::available() {
                let mut out = vec![0.0; 2 * n];
                weights.linear(&x, &vec![0.0; n], &mut out, kernel);
                // x quantizes to ±127 with scale 1/127.
                let full = 127.0 * k as f32;
                let close = |got: f32, want: f32| (got - want).abs() <= 1e-6 * want.abs();
                assert!(close(out[0], -sign * full), "{} {}", kernel.name(), out[0]);
                assert!(close(out[1], sign * full), "{} {}", kernel.name(), out[1]);
            }
        }
    }
}
