//! The weights' quantizer: rows of float weights to INT8 values with a
//! scale per block of consecutive inputs, the form `convert --dtype int8`
//! stores (`modelbin_format::embd::int8`) and [`super::pack`] lays out for
//! the kernels. It is symmetric: a block's scale is its largest magnitude
//! over [`QMAX`] and `q = round(w / scale)` (halves away from zero), so
//! every `q` lies in −127..=127 and `|w − q · scale| ≤ scale / 2`; a block
//! of zeros has scale 0.

use modelbin_format::embd::int8::QMAX;

use crate::nn::f32_tier::F32Tier;

/// Quantizes the rows of `k` values of `w` with a scale per `block`
/// consecutive values of a row (the last block of a row possibly shorter):
/// the INT8 values and the scales, `ceil(k / block)` per row. A row's
/// non-finite value gives its block a non-finite scale, which storage
/// refuses. This is the [`modelbin_format::embd::int8::Quantizer`] the
/// faces pass to conversions.
///
/// ```
/// let (q, scales) = modelbin_infer::quantize_weight_blocks(&[0.5, -1.0, 0.0, 0.0], 2, 2);
/// assert_eq!(scales, [1.0 / 127.0, 0.0]);
/// assert_eq!(q, [64, -127, 0, 0]);
/// ```
pub fn quantize_weight_blocks(w: &[f32], k: usize, block: usize) -> (Vec<i8>, Vec<f32>) {
    match F32Tier::chosen() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `chosen` checked the tier's features.
        F32Tier::Avx512 => unsafe { quantize_avx512(w, k, block) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        F32Tier::Avx2 => unsafe { quantize_avx2(w, k, block) },
        _ => quantize(w, k, block),
    }
}

/// [`quantize`] compiled for [`F32Tier::Avx2`]: the same operations on
/// wider vectors, so the same values.
///
/// # Safety
/// The features [`F32Tier::Avx2`] checks must be available.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn quantize_avx2(w: &[f32], k: usize, block: usize) -> (Vec<i8>, Vec<f32>) {
    quantize(w, k, block)
}

/// [`quantize`] compiled for [`F32Tier::Avx512`], likewise.
///
/// # Safety
/// The features [`F32Tier::Avx512`] checks must be available.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
unsafe fn quantize_avx512(w: &[f32], k: usize, block: usize) -> (Vec<i8>, Vec<f32>) {
    quantize(w, k, block)
}

/// [`quantize_weight_blocks`], in the element-wise tier's build.
#[inline(always)]
fn quantize(w: &[f32], k: usize, block: usize) -> (Vec<i8>, Vec<f32>) {
    let block = block.max(1);
    let mut q = Vec::with_capacity(w.len());
    let mut scales = Vec::with_capacity(w.len() / block + 1);
    for row in w.chunks_exact(k.max(1)) {
        for block in row.chunks(block) {
            // A NaN gives its block a NaN scale (a largest magnitude that
            // passed over it would quantize it to 0 unseen).
            let largest = largest_magnitude_bits(block);
            let scale = if largest > f32::INFINITY.to_bits() {
                f32::NAN
            } else {
                f32::from_bits(largest) / QMAX
            };
            scales.push(scale);
            if scale > 0.0 {
                q.extend(block.iter().map(|v| level(v / scale)));
            } else {
                q.resize(q.len() + block.len(), 0);
            }
        }
    }
    (q, scales)
}

/// The bits of the largest magnitude of `values` (0 for none). Magnitudes
/// order as their bits do, a NaN's above every number's: integer maxima,
/// which the compiler vectorises.
fn largest_magnitude_bits(values: &[f32]) -> u32 {
    values
        .iter()
        .map(|v| v.to_bits() & 0x7fff_ffff)
        .max()
        .unwrap_or(0)
}

/// `x` rounded to the nearest integer, halves away from zero, held to
/// −127..=127 (0 for a NaN): `x.round().clamp(-QMAX, QMAX) as i8`, in
/// arithmetic the compiler vectorises (`f32::round` is a library call on
/// baseline x86-64). Past ±128 the value only needs to stay past ±127.5,
/// which keeps the integer part in range; the fraction `x − trunc(x)` is
/// exact.
#[inline(always)]
fn level(x: f32) -> i8 {
    let x = x.clamp(-128.0, 128.0);
    let whole = x as i32;
    let fraction = x - whole as f32;
    let rounded = whole + i32::from(fraction >= 0.5) - i32::from(fraction <= -0.5);
    rounded.clamp(-127, 127) as i8
}

#[cfg(test)]
mod tests {
    use modelbin_format::embd::int8::{BLOCK, blocks_per_row, dequantize};

    use super::*;

    #[test]
    fn quantization_is_symmetric_per_block_and_round_trips_within_half_a_step() {
        let w = [0.6, -1.0, 0.25, 0.0, 0.0, 0.0, 3.0, 1.0, -2.0];
        let (q, scales) = quantize_weight_blocks(&w, 3, BLOCK);
        assert_eq!(scales, [1.0 / 127.0, 0.0, 3.0 / 127.0]);
        assert_eq!(q, [76, -127, 32, 0, 0, 0, 127, 42, -85]);
        // Rows of 40 inputs: a block of 32, then one of 8.
        let w: Vec<f32> = (0..80)
            .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.1 * (1 + i / 32) as f32)
            .collect();
        let (q, scales) = quantize_weight_blocks(&w, 40, BLOCK);
        assert_eq!(scales.len(), 2 * blocks_per_row(40));
        assert_eq!(blocks_per_row(40), 2);
        let back = dequantize(&q, &scales, 40, BLOCK);
        for (i, (a, b)) in w.iter().zip(&back).enumerate() {
            let scale = scales[i / 40 * 2 + i % 40 / BLOCK];
            assert!((a - b).abs() <= scale / 2.0 + 1e-7, "{i}: {a} vs {b}");
        }
        for (blocks, row) in scales.chunks(2).zip(w.chunks(40)) {
            let max = |v: &[f32]| v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
            assert_eq!(blocks, [max(&row[..32]) / QMAX, max(&row[32..]) / QMAX]);
        }
    }

    #[test]
    fn levels_round_halves_away_from_zero_as_f32_round_does() {
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -2.5,
            0.499_999_97,
            126.5,
            127.5,
            -127.5,
            128.0,
            1e30,
            -1e30,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
        ];
        values.extend((-2600..=2600).map(|i| i as f32 * 0.05));
        values.extend((0..1000).map(|i| f32::from_bits(0x42fe_0000 + i)));
        for v in values {
            let want = v.round().clamp(-QMAX, QMAX) as i8;
            assert_eq!(level(v), want, "{v}");
        }
    }

    /// The quantizer's definition, computed plainly.
    fn plain(w: &[f32], k: usize, block: usize) -> (Vec<i8>, Vec<f32>) {
        let (mut q, mut scales) = (Vec::new(), Vec::new());
        for row in w.chunks_exact(k) {
            for block in row.chunks(block) {
                let scale = if block.iter().any(|v| v.is_nan()) {
                    f32::NAN
                } else {
                    block.iter().fold(0.0f32, |m, v| m.max(v.abs())) / QMAX
                };
                scales.push(scale);
                q.extend(block.iter().map(|v| {
                    if scale > 0.0 {
                        (v / scale).round().clamp(-QMAX, QMAX) as i8
                    } else {
                        0
                    }
                }));
            }
        }
        (q, scales)
    }

    #[test]
    fn quantization_equals_its_plain_definition() {
        let mut rng = modelbin_format::io::rng::Rng::new(5);
        let specials = [
            0.0,
            -0.0,
            f32::NAN,
            f32::INFINITY,
            -f32::INFINITY,
            1e-42,
            3e38,
        ];
        let w: Vec<f32> = (0..40 * 100)
            .map(|i| match rng.next_u64() % 200 {
                0 => specials[i % specials.len()],
                1..=20 => 0.0,
                _ => (rng.uniform() as f32 - 0.5) * 10f32.powi((i % 7) as i32 - 3),
            })
            .collect();
        for (k, block) in [(100, 32), (100, 100), (40, 36), (1, 32)] {
            let (want_q, want_scales) = plain(&w, k, block);
            for tier in F32Tier::available() {
                let (q, scales) = F32Tier::capped(tier, || quantize_weight_blocks(&w, k, block));
                assert_eq!(q, want_q, "{tier:?} {k} {block}");
                let bits = |v: &[f32]| v.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&scales), bits(&want_scales), "{tier:?} {k} {block}");
            }
        }
    }

    #[test]
    fn a_non_finite_weight_gives_its_block_a_non_finite_scale() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let (_, scales) = quantize_weight_blocks(&[1.0, bad, 2.0, 3.0], 4, 2);
            assert!(!scales[0].is_finite(), "{bad}: {scales:?}");
            assert_eq!(scales[1], 3.0 / QMAX, "{bad}");
        }
    }
}
