//! The activations' side of int8 products: each row of inputs quantized
//! on the fly, as the [module documentation](super) gives the formula:
//! its [`OUTLIERS`] largest magnitudes set aside in f32, the rest rounded
//! to u8 with the row's own scale and zero point. The element-wise tier
//! ([`F32Tier`]) compiles the same code wider; every tier gives the same bytes.

use rayon::prelude::*;

use super::OUTLIERS;
use super::kernels::Outlier;
use crate::nn::f32_tier::F32Tier;

/// Activations quantized per row (see the module documentation), rows
/// padded with zeros to `k4`.
pub(super) struct QuantizedRows {
    /// `m` rows of `k4` quantized values.
    pub(super) values: Vec<u8>,
    /// The same widened to u16, when the kernel reads them (else empty).
    pub(super) wide: Vec<u16>,
    /// Each row's scale `sx`.
    pub(super) scales: Vec<f32>,
    /// Each row's zero point `zx`, an integer in 0..=255.
    pub(super) zero_points: Vec<f32>,
    /// `per_row` outliers per row.
    pub(super) outliers: Vec<Outlier>,
    /// Outliers per row.
    pub(super) per_row: usize,
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
    pub(super) fn new(x: &[f32], k: usize, k4: usize, wide: bool) -> Self {
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
        let tier = F32Tier::chosen();
        let run = |x: &[f32], out: RowsOut<'_>| match tier {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `chosen` checked the tier's features.
            F32Tier::Avx512 => unsafe { quantize_avx512(x, k, k4, per_row, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            F32Tier::Avx2 => unsafe { quantize_avx2(x, k, k4, per_row, out) },
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

/// [`quantize`] compiled for [`F32Tier::Avx2`]: the same operations on wider
/// vectors (no multiply-add is fused), so the same values.
///
/// # Safety
/// The features [`F32Tier::Avx2`] checks must be available.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn quantize_avx2(x: &[f32], k: usize, k4: usize, per_row: usize, out: RowsOut<'_>) {
    quantize(x, k, k4, per_row, out)
}

/// [`quantize`] compiled for [`F32Tier::Avx512`], likewise.
///
/// # Safety
/// The features [`F32Tier::Avx512`] checks must be available.
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
                let rows = F32Tier::capped(tier, || {
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
            let portable = quantized(F32Tier::Portable);
            for tier in [F32Tier::Avx2, F32Tier::Avx512] {
                if tier.usable() {
                    assert!(quantized(tier) == portable, "{tier:?}, {m}×{k}");
                }
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
}
