//! Products against int8 weights. The weights (INT8 with a scale per block
//! of 32 inputs of each row, as `convert --dtype int8` stores them) are
//! packed once into panels for the integer kernels. Each call quantizes its
//! activations row by row:
//! - the row's [`OUTLIERS`] largest magnitudes stay in f32 (the outliers:
//!   a transformer's activations have a few channels far larger than the
//!   rest, which would leave the rest a handful of levels);
//! - the others are quantized asymmetrically to u8: with `lo ≤ 0 ≤ hi` the
//!   smallest and largest of them, the scale is `sx = hi / 255 − lo / 255`,
//!   the zero point `zx = round(−lo · (1 / sx))` and
//!   `q = round(x · (1 / sx) + zx)`, held to 0..=255 (rounding to nearest,
//!   ties to even). The outliers' `q` is `zx`, which adds nothing.
//!
//! With `S[r, j] = Σ_b s[j, b] · Σ_{i in b} q[r, i] · w[j, i]` and
//! `C[j] = Σ_b s[j, b] · Σ_{i in b} w[j, i]` the output is
//! `out[r, j] = bias[j] + (sx · (S[r, j] − zx · C[j]) + Σ_outliers x[r, c] · w[j, c] · s[j, b(c)])`
//! (see [`crate::nn::int8_kernels`] for the order of the f32 operations).

use std::sync::OnceLock;

use rayon::prelude::*;

use crate::nn::int8_kernels::{Int8Kernel, Outlier, Panel, QMR, QNR, Rows, Tile};
use crate::nn::kernels::Tier;
use crate::nn::panel_tasks::{BlockOut, for_each_block, row_tiles};

/// The widest input an int8 product accepts: beyond it the i32 sums of a
/// block that spans a whole row could overflow (255 · 127 per product).
pub const MAX_INPUT_FEATURES: usize = 65_536;

/// How many activations of each row stay in f32.
pub const OUTLIERS: usize = 4;

/// An int8 weight matrix `q[n, k]` with a scale per block of inputs of each
/// row, packed for `x · Wᵀ`.
#[derive(Debug, Clone)]
pub struct QuantizedWeights {
    n: usize,
    k: usize,
    /// `k` rounded up to a multiple of four.
    k4: usize,
    /// Groups of four inputs per scale block.
    block4: usize,
    /// `ceil(n / QNR)` panels of `k4 · QNR` bytes (see
    /// [`crate::nn::int8_kernels`]), zero past `n` and `k`.
    panels: Vec<i8>,
    /// The same panels in pairs of inputs, made on the first product of a
    /// kernel that reads them.
    pairs: OnceLock<Vec<i8>>,
    /// Per panel, `QNR` scales per block, zero past `n`.
    scales: Vec<f32>,
    /// Per row: `Σ_b s[j, b] · Σ_{i in b} q[j, i]`, zero past `n`.
    scaled_sums: Vec<f32>,
}

impl QuantizedWeights {
    /// Packs the rows of `parts` (each row-major with rows of `k`, stacked
    /// in order: `n` rows in all) with their scales: `ceil(k / block)` per
    /// row, each for `block` consecutive inputs. A stored −128 is read as
    /// −127 (the quantizer never writes it).
    ///
    /// # Panics
    /// If the sizes disagree, if `k` exceeds [`MAX_INPUT_FEATURES`], or if
    /// `block` is neither a multiple of four nor at least `k`.
    pub fn new(parts: &[&[i8]], scales: &[f32], k: usize, block: usize) -> Self {
        assert!(k > 0 && k <= MAX_INPUT_FEATURES && block > 0);
        assert!(block.is_multiple_of(4) || block >= k);
        let blocks = k.div_ceil(block);
        let n = scales.len() / blocks;
        let rows: Vec<&[i8]> = parts.iter().flat_map(|p| p.chunks_exact(k)).collect();
        assert!(rows.len() == n && scales.len() == n * blocks);
        assert!(parts.iter().all(|p| p.len() % k == 0));
        let k4 = k.next_multiple_of(4);
        let block4 = block.div_ceil(4).min(k4 / 4);
        let panel_count = n.div_ceil(QNR);
        let mut panels = vec![0i8; panel_count * k4 * QNR];
        // Panel by panel, row by row: a row is read in order, and its groups
        // of four land `QNR` groups apart in the panel (24 KB to 98 KB for
        // MiniLM, which stays in the core's L2 cache).
        for (p, panel) in panels.chunks_exact_mut(k4 * QNR).enumerate() {
            let panel_rows = &rows[p * QNR..((p + 1) * QNR).min(n)];
            for (j, row) in panel_rows.iter().enumerate() {
                let (whole, rest) = row.as_chunks::<4>();
                for (group, four) in whole.iter().enumerate() {
                    let at = (group * QNR + j) * 4;
                    panel[at..at + 4].copy_from_slice(&four.map(|v| v.max(-127)));
                }
                if !rest.is_empty() {
                    let at = (whole.len() * QNR + j) * 4;
                    for (d, &v) in panel[at..at + rest.len()].iter_mut().zip(rest) {
                        *d = v.max(-127);
                    }
                }
            }
        }
        let mut packed_scales = vec![0.0f32; panel_count * blocks * QNR];
        let mut scaled_sums = vec![0.0f32; panel_count * QNR];
        for (j, (row, row_scales)) in rows.iter().zip(scales.chunks_exact(blocks)).enumerate() {
            let (p, at) = (j / QNR, j % QNR);
            for (b, (values, &scale)) in row.chunks(block).zip(row_scales).enumerate() {
                packed_scales[(p * blocks + b) * QNR + at] = scale;
                let sum: i32 = values.iter().map(|&v| i32::from(v.max(-127))).sum();
                scaled_sums[j] += sum as f32 * scale;
            }
        }
        QuantizedWeights {
            n,
            k,
            k4,
            block4,
            panels,
            pairs: OnceLock::new(),
            scales: packed_scales,
            scaled_sums,
        }
    }

    /// `out[m, n] = bias + x[m, k] · Wᵀ` through `kernel`, spread over the
    /// rayon pool.
    ///
    /// # Panics
    /// If the sizes disagree, or `kernel` is not available on this CPU.
    pub fn linear(&self, x: &[f32], bias: &[f32], out: &mut [f32], kernel: Int8Kernel) {
        let (n, k) = (self.n, self.k);
        let m = x.len() / k;
        assert!(x.len() == m * k && out.len() == m * n && bias.len() == n);
        let rows = QuantizedRows::new(x, k, self.k4, kernel.reads_pairs());
        let pairs: &[i8] = if kernel.reads_pairs() {
            self.pairs.get_or_init(|| in_pairs(&self.panels, self.k4))
        } else {
            &[]
        };
        for_each_block(m, n, QNR, QMR, out, |rows_range, panels, out| {
            self.block(&rows, pairs, rows_range, bias, panels, out, kernel)
        });
    }

    /// The rows `rows` of `x · Wᵀ + bias` for the given panels into `out`
    /// (those rows, column 0 being the first panel's).
    #[allow(clippy::too_many_arguments)]
    fn block(
        &self,
        x: &QuantizedRows,
        pairs: &[i8],
        rows: std::ops::Range<usize>,
        bias: &[f32],
        panels: std::ops::Range<usize>,
        out: &mut BlockOut<'_>,
        kernel: Int8Kernel,
    ) {
        let k4 = self.k4;
        let blocks = (k4 / 4).div_ceil(self.block4);
        let first = panels.start;
        let mut tile: Tile = [0.0; QMR * QNR];
        for p in panels {
            let width = QNR.min(self.n - p * QNR);
            let mut panel_bias = [0.0f32; QNR];
            panel_bias[..width].copy_from_slice(&bias[p * QNR..p * QNR + width]);
            let panel = Panel {
                weights: &self.panels[p * k4 * QNR..(p + 1) * k4 * QNR],
                pairs: pairs.get(p * k4 * QNR..(p + 1) * k4 * QNR).unwrap_or(&[]),
                scales: &self.scales[p * blocks * QNR..(p + 1) * blocks * QNR],
                block4: self.block4,
                sums: self.scaled_sums[p * QNR..(p + 1) * QNR].try_into().unwrap(),
                bias: &panel_bias,
            };
            let col = (p - first) * QNR;
            for (row0, count) in row_tiles(rows.clone(), QMR) {
                let tile_rows = Rows {
                    values: &x.values[row0 * k4..],
                    wide: x.wide.get(row0 * k4..).unwrap_or(&[]),
                    count,
                    k4,
                    outliers: &x.outliers[row0 * x.per_row..],
                    per_row: x.per_row,
                    scales: &x.scales[row0..],
                    zero_points: &x.zero_points[row0..],
                };
                kernel.tile(&tile_rows, &panel, &mut tile);
                for (r, values) in tile.chunks_exact(QNR).take(count).enumerate() {
                    out.row(row0 - rows.start + r)[col..col + width]
                        .copy_from_slice(&values[..width]);
                }
            }
        }
    }
}

/// The panels `panels` (groups of four inputs, `k4 · QNR` bytes each)
/// rearranged for the AVX2 kernel: per panel, eight rows at a time (a
/// strip), the strip's pairs of inputs in order: pair `p` of strip `c`
/// holds, for its rows `j` in turn, `w[8c + j, 2p..2p + 2]` (16 bytes at
/// `(c · k4 / 2 + p) · 16`). The kernel reads a strip from end to end.
fn in_pairs(panels: &[i8], k4: usize) -> Vec<i8> {
    let mut pairs = vec![0i8; panels.len()];
    for (panel, out) in panels
        .chunks_exact(k4 * QNR)
        .zip(pairs.chunks_exact_mut(k4 * QNR))
    {
        for (g, group) in panel.chunks_exact(4 * QNR).enumerate() {
            for (j, four) in group.chunks_exact(4).enumerate() {
                for (half, two) in four.chunks_exact(2).enumerate() {
                    let at = ((j / 8 * k4 / 2 + 2 * g + half) * 8 + j % 8) * 2;
                    out[at..at + 2].copy_from_slice(two);
                }
            }
        }
    }
    pairs
}

/// Activations quantized per row (see the module documentation), rows
/// padded with zeros to `k4`.
struct QuantizedRows {
    /// `m` rows of `k4` quantized values.
    values: Vec<u8>,
    /// The same widened to u16, when the kernel reads them (else empty).
    wide: Vec<u16>,
    /// Each row's scale `sx`.
    scales: Vec<f32>,
    /// Each row's zero point `zx`, an integer in 0..=255.
    zero_points: Vec<f32>,
    /// `per_row` outliers per row.
    outliers: Vec<Outlier>,
    per_row: usize,
}

/// Adding 1.5 · 2²³ to an f32 in 0..=255 rounds it to the nearest
/// integer, ties to even, and leaves that integer in the low byte of the
/// sum's bits: plain arithmetic the compiler vectorises (`f32::round` is a
/// library call on baseline x86-64).
const ROUNDING: f32 = 12_582_912.0;

/// Values of `x` a quantization task takes at least: fewer are not worth
/// handing to another thread.
const QUANTIZE_TASK_VALUES: usize = 16 * 1024;

impl QuantizedRows {
    /// The rows of `x` (each `k` long) quantized, in parallel over runs of
    /// rows when there are many values.
    fn new(x: &[f32], k: usize, k4: usize, wide: bool) -> Self {
        let m = x.len() / k;
        let per_row = OUTLIERS.min(k);
        let mut rows = QuantizedRows {
            values: vec![0u8; m * k4],
            wide: Vec::new(),
            scales: vec![0.0; m],
            zero_points: vec![0.0; m],
            outliers: vec![
                Outlier {
                    channel: 0,
                    value: 0.0
                };
                m * per_row
            ],
            per_row,
        };
        let per_task = m
            .div_ceil(rayon::current_num_threads())
            .max(QUANTIZE_TASK_VALUES.div_ceil(k));
        // Chosen once, here: every task then runs the same build.
        let tier = Tier::widest();
        let run = |x: &[f32], out: RowsOut<'_>| match tier {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `widest` detected the tier's features.
            Tier::Avx512 => unsafe { quantize_avx512(x, k, k4, per_row, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Tier::Avx2 => unsafe { quantize_avx2(x, k, k4, per_row, out) },
            _ => quantize(x, k, k4, per_row, out),
        };
        if per_task >= m {
            run(x, rows.out());
        } else {
            rows.values
                .par_chunks_mut(per_task * k4)
                .zip(rows.scales.par_chunks_mut(per_task))
                .zip(rows.zero_points.par_chunks_mut(per_task))
                .zip(rows.outliers.par_chunks_mut(per_task * per_row))
                .zip(x.par_chunks(per_task * k))
                .for_each(|((((values, scales), zero_points), outliers), x)| {
                    let out = RowsOut {
                        values,
                        scales,
                        zero_points,
                        outliers,
                    };
                    run(x, out);
                });
        }
        if wide {
            rows.wide = rows.values.iter().map(|&v| u16::from(v)).collect();
        }
        rows
    }

    /// All the rows, as [`quantize`] writes them.
    fn out(&mut self) -> RowsOut<'_> {
        RowsOut {
            values: &mut self.values,
            scales: &mut self.scales,
            zero_points: &mut self.zero_points,
            outliers: &mut self.outliers,
        }
    }
}

/// Where [`quantize`] writes a run of rows: `k4` values, a scale, a zero
/// point and the outliers per row.
struct RowsOut<'a> {
    values: &'a mut [u8],
    scales: &'a mut [f32],
    zero_points: &'a mut [f32],
    outliers: &'a mut [Outlier],
}

/// [`quantize`] compiled for [`Tier::Avx2`]: the same operations on wider
/// vectors (no multiply-add is fused), so the same values.
///
/// # Safety
/// The features [`Tier::Avx2`] checks must be available.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn quantize_avx2(x: &[f32], k: usize, k4: usize, per_row: usize, out: RowsOut<'_>) {
    quantize(x, k, k4, per_row, out)
}

/// [`quantize`] compiled for [`Tier::Avx512`], likewise.
///
/// # Safety
/// The features [`Tier::Avx512`] checks must be available.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
unsafe fn quantize_avx512(x: &[f32], k: usize, k4: usize, per_row: usize, out: RowsOut<'_>) {
    quantize(x, k, k4, per_row, out)
}

/// Quantizes the rows of `x` (each `k` long, padded to `k4`) into `out`,
/// keeping `per_row` (at least one) outliers per row.
#[inline(always)]
fn quantize(x: &[f32], k: usize, k4: usize, per_row: usize, out: RowsOut<'_>) {
    let mut candidates = Vec::new();
    let rows = x
        .chunks_exact(k)
        .zip(out.values.chunks_exact_mut(k4))
        .zip(out.outliers.chunks_exact_mut(per_row))
        .zip(out.scales.iter_mut().zip(out.zero_points.iter_mut()));
    for (((row, values), outliers), (scale_out, zero_out)) in rows {
        let split = split_row(row, per_row, &mut candidates);
        // Divided first, so a range beyond f32::MAX does not overflow.
        let scale = split.hi / 255.0 - split.lo / 255.0;
        let inverse = 1.0 / scale;
        // A row of zeros, a scale so small its inverse overflows, or a
        // NaN or infinite value keep zeros; the scale carries a NaN into
        // the row's outputs, as f32 would.
        let zero = if inverse.is_finite() && scale.is_finite() {
            let zero = round_byte(-split.lo * inverse) as f32;
            for (q, &v) in values.iter_mut().zip(row) {
                *q = round_byte(v * inverse + zero);
            }
            zero
        } else {
            0.0
        };
        for outlier in &candidates[..per_row] {
            values[outlier.channel as usize] = zero as u8;
        }
        outliers.copy_from_slice(&candidates[..per_row]);
        *scale_out = scale;
        *zero_out = zero;
    }
}

/// `v` held to 0..=255 and rounded to the nearest integer, ties to even
/// (NaN gives an unspecified byte).
#[inline(always)]
fn round_byte(v: f32) -> u8 {
    let v = if v < 255.0 { v } else { 255.0 };
    let v = if v > 0.0 { v } else { 0.0 };
    // The rounded value sits in the low byte of the sum's bits.
    (v + ROUNDING).to_bits() as u8
}

/// A row's range once its outliers are set aside.
struct Split {
    /// The smallest of the other values and 0 (NaN if they hold a NaN or
    /// an infinity).
    lo: f32,
    /// The largest of the other values and 0 (NaN likewise).
    hi: f32,
}

/// Magnitudes for ranking, a NaN counting as large as an infinity.
#[inline(always)]
fn magnitude(v: f32) -> f32 {
    if v.is_nan() { f32::INFINITY } else { v.abs() }
}

/// The `count`-th largest of `values` (`1 <= count <= RUN`; no NaN),
/// without branches (they would be mispredicted): the value with fewer
/// than `count` values above it and at least `count` at or above it.
#[inline(always)]
fn nth_largest(values: &[f32; RUN], count: usize) -> f32 {
    debug_assert!((1..=RUN).contains(&count) && !values.iter().any(|v| v.is_nan()));
    let count = count as u32;
    let mut found = f32::NEG_INFINITY;
    for &v in values {
        let (mut above, mut reaching) = (0u32, 0u32);
        for &w in values {
            above += u32::from(w > v);
            reaching += u32::from(w >= v);
        }
        let ranked = above < count && count <= reaching;
        found = if ranked { v } else { found };
    }
    found
}

/// Values per run of the vectorised passes.
const RUN: usize = 16;

/// Runs whose reaching lanes [`split_row`] records before gathering them.
const REACHING_GROUP: usize = 32;

/// Finds the `count` values of `row` of largest magnitude (NaN ranking with
/// the infinities; on a tie the first) and the range of the others.
/// `candidates` is left holding the outliers first, largest first.
///
/// Two passes the compiler vectorises:
/// - the largest magnitude of each residue class of the indices modulo
///   [`RUN`] (NaN ignored): the classes with the `count` largest maxima
///   hold `count` values at least the smallest of those, `least`, so every
///   outlier reaches `least`;
/// - the range of the values below `least`, and the runs holding any
///   others (NaN and infinities among them), which are then ranked one by
///   one; those that are not outliers join the range.
#[inline(always)]
fn split_row(row: &[f32], count: usize, candidates: &mut Vec<Outlier>) -> Split {
    // A run's lanes fit the bits of a u32 (the reaching lanes below).
    const { assert!(OUTLIERS <= RUN && RUN <= 32) };
    let mut maxima = [0.0f32; RUN];
    let (runs, tail) = row.as_chunks::<RUN>();
    for run in runs {
        for l in 0..RUN {
            let a = run[l].abs();
            maxima[l] = if a > maxima[l] { a } else { maxima[l] };
        }
    }
    for (max, &v) in maxima.iter_mut().zip(tail) {
        *max = if v.abs() > *max { v.abs() } else { *max };
    }
    let least = nth_largest(&maxima, count);
    let (mut lo, mut hi) = ([0.0f32; RUN], [0.0f32; RUN]);
    candidates.clear();
    // Groups of runs: the vector loop only records which lanes reach
    // `least`, and those are gathered after it (a push inside it kept
    // `lo` and `hi` in memory).
    for (g, group) in runs.chunks(REACHING_GROUP).enumerate() {
        let mut reaching = [0u32; REACHING_GROUP];
        for (run, bits) in group.iter().zip(&mut reaching) {
            for l in 0..RUN {
                let v = run[l];
                // False for a NaN.
                let below = v.abs() < least;
                let kept = if below { v } else { 0.0 };
                lo[l] = if kept < lo[l] { kept } else { lo[l] };
                hi[l] = if kept > hi[l] { kept } else { hi[l] };
                *bits |= u32::from(!below) << l;
            }
        }
        for (r, (run, &bits)) in group.iter().zip(&reaching).enumerate() {
            let mut bits = bits;
            while bits != 0 {
                let l = bits.trailing_zeros() as usize;
                candidates.push(Outlier {
                    channel: (RUN * (g * REACHING_GROUP + r) + l) as u32,
                    value: run[l],
                });
                bits &= bits - 1;
            }
        }
    }
    let first = row.len() - tail.len();
    for (l, &v) in tail.iter().enumerate() {
        // As in the runs: a NaN is no value below `least`.
        if v.abs() < least {
            (lo[l], hi[l]) = (lo[l].min(v), hi[l].max(v));
        } else {
            candidates.push(Outlier {
                channel: (first + l) as u32,
                value: v,
            });
        }
    }
    // The `count` largest candidates, largest first, ties in channel order:
    // one pass, so a row of many equal values stays linear.
    let mut top = [0usize; RUN];
    let mut kept = 0;
    for (i, candidate) in candidates.iter().enumerate() {
        let m = magnitude(candidate.value);
        let mut at = kept;
        while at > 0 && m > magnitude(candidates[top[at - 1]].value) {
            at -= 1;
        }
        if at < count {
            kept = (kept + 1).min(count);
            top.copy_within(at..kept - 1, at + 1);
            top[at] = i;
        }
    }
    let top = &top[..count];
    let mut bounds = (
        lo.into_iter().fold(0.0, f32::min),
        hi.into_iter().fold(0.0, f32::max),
    );
    let mut finite = true;
    for (i, other) in candidates.iter().enumerate() {
        if !top.contains(&i) {
            bounds = (bounds.0.min(other.value), bounds.1.max(other.value));
            finite &= other.value.is_finite();
        }
    }
    let chosen: [Outlier; OUTLIERS] = std::array::from_fn(|t| candidates[top[t.min(count - 1)]]);
    candidates[..count].copy_from_slice(&chosen[..count]);
    if !finite {
        return Split {
            lo: f32::NAN,
            hi: f32::NAN,
        };
    }
    Split {
        lo: bounds.0,
        hi: bounds.1,
    }
}

#[cfg(test)]
mod tests {
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

    /// Quantization gives the same bytes, scales, zero points and outliers
    /// in every tier this CPU runs.
    #[test]
    fn quantization_is_the_same_in_every_tier() {
        let mut rng = Rng::new(11);
        // Up to three groups of runs per row, and enough rows for several
        // tasks (the tier is chosen on the capped thread).
        for (m, k) in [(3, 37), (40, 384), (10, 1539), (64, 1539)] {
            let x: Vec<f32> = (0..m * k)
                .map(|i| {
                    let v = rng.uniform() as f32 * 4.0 - 2.0;
                    if i % 29 == 3 { v * 40.0 } else { v }
                })
                .collect();
            let quantized = |tier| {
                let rows = Tier::capped(tier, || {
                    QuantizedRows::new(&x, k, k.next_multiple_of(4), false)
                });
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                let outliers: Vec<(u32, u32)> = rows
                    .outliers
                    .iter()
                    .map(|o| (o.channel, o.value.to_bits()))
                    .collect();
                (
                    rows.values,
                    bits(&rows.scales),
                    bits(&rows.zero_points),
                    outliers,
                )
            };
            let portable = quantized(Tier::Portable);
            for tier in [Tier::Avx2, Tier::Avx512] {
                if tier.usable() {
                    assert!(quantized(tier) == portable, "{tier:?}, {m}×{k}");
                }
            }
        }
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
            let weights =
                QuantizedWeights::new(&[&q[..n / 2 * k], &q[n / 2 * k..]], &scales, k, block);
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
        let (q, scales) = modelbin_format::embd::int8::quantize(&w, k);
        let weights = QuantizedWeights::new(&[&q], &scales, k, modelbin_format::embd::int8::BLOCK);
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
    fn the_largest_values_of_a_row_are_its_outliers() {
        let mut candidates = Vec::new();
        let channels =
            |c: &[Outlier], n: usize| c[..n].iter().map(|o| o.channel).collect::<Vec<_>>();
        let split = split_row(&[1.0, -5.0, 3.0, -7.0, 5.0, 0.5], 3, &mut candidates);
        // Ties go to the first: −5 before 5.
        assert_eq!(channels(&candidates, 3), [3, 1, 4]);
        assert_eq!((split.lo, split.hi), (0.0, 3.0));
        // Runs past the first: the largest at 40 and 17; a value equal to
        // the third largest (the 6.0 at 33) that is not an outlier still
        // joins the range.
        let mut row: Vec<f32> = (0..50).map(|i| (i % 5) as f32 - 2.0).collect();
        (row[40], row[17], row[5], row[33]) = (-9.0, 8.0, 6.0, 6.0);
        let split = split_row(&row, 3, &mut candidates);
        assert_eq!(channels(&candidates, 3), [40, 17, 5]);
        assert_eq!((split.lo, split.hi), (-2.0, 6.0));
        // A NaN ranks first; one left among the others makes the range NaN.
        let split = split_row(&[1.0, f32::NAN, 2.0], 1, &mut candidates);
        assert_eq!(channels(&candidates, 1), [1]);
        assert_eq!((split.lo, split.hi), (0.0, 2.0));
        let split = split_row(&[1.0, f32::NAN, 2.0, f32::NAN], 1, &mut candidates);
        assert_eq!(channels(&candidates, 1), [1]);
        assert!(split.lo.is_nan() && split.hi.is_nan());
        let split = split_row(
            &[1.0, f32::INFINITY, -3.0, f32::NEG_INFINITY],
            1,
            &mut candidates,
        );
        assert_eq!(channels(&candidates, 1), [1]);
        assert!(split.lo.is_nan() && split.hi.is_nan());
    }

    #[test]
    fn outliers_and_ranges_match_a_plain_ranking() {
        let mut rng = Rng::new(5);
        let specials = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            3e38,
            -3e38,
        ];
        let mut candidates = Vec::new();
        for case in 0..3000 {
            // Short rows; rows around the end of the first group of runs
            // (whose reaching lanes are gathered together); rows reaching
            // into a fourth group.
            let group = RUN * REACHING_GROUP;
            let len = match case % 20 {
                9 => group - 20 + case % 60,
                19 => 3 * group + case % 60,
                _ => 1 + case % 40,
            };
            // Specials are rarer in long rows, where the first infinities
            // would otherwise always be the outliers.
            let odds = if len > 40 { 1000 } else { 10 };
            let row: Vec<f32> = (0..len)
                .map(|_| match rng.next_u64() % odds {
                    0 => specials[(rng.next_u64() % specials.len() as u64) as usize],
                    1..=3 => (rng.next_u64() % 3) as f32 - 1.0,
                    _ if case % 7 == 0 => 2.0,
                    _ => rng.uniform() as f32 * 8.0 - 4.0,
                })
                .collect();
            let count = OUTLIERS.min(len);
            let split = split_row(&row, count, &mut candidates);
            // Plain: indices by falling magnitude (NaN with the
            // infinities), ties by index.
            let mut order: Vec<usize> = (0..len).collect();
            order.sort_by(|&a, &b| magnitude(row[b]).total_cmp(&magnitude(row[a])));
            let want: Vec<u32> = order[..count].iter().map(|&i| i as u32).collect();
            let got: Vec<u32> = candidates[..count].iter().map(|o| o.channel).collect();
            assert_eq!(got, want, "{row:?}");
            assert!(
                candidates[..count]
                    .iter()
                    .all(|o| o.value.to_bits() == row[o.channel as usize].to_bits())
            );
            let others: Vec<f32> = order[count..].iter().map(|&i| row[i]).collect();
            if others.iter().any(|v| !v.is_finite()) {
                assert!(split.lo.is_nan() && split.hi.is_nan(), "{row:?}");
            } else {
                let lo = others.iter().fold(0.0f32, |m, &v| m.min(v));
                let hi = others.iter().fold(0.0f32, |m, &v| m.max(v));
                assert_eq!((split.lo, split.hi), (lo, hi), "{row:?}");
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
}
