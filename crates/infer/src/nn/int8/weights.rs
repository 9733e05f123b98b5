//! The weights' quantizer: rows of float weights to INT8 values with a
//! scale per block of consecutive inputs, the form `convert --dtype int8`
//! stores (`modelbin_format::embd::int8`) and [`super::pack`] lays out for
//! the kernels. It is symmetric: a block's scale is its largest magnitude
//! over [`QMAX`] and `q = round(w / scale)` (halves away from zero), so
//! every `q` lies in −127..=127 and `|w − q · scale| ≤ scale / 2`; a block
//! of zeros has scale 0.

use modelbin_format::embd::int8::QMAX;

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
    let block = block.max(1);
    let mut q = Vec::with_capacity(w.len());
    let mut scales = Vec::with_capacity(w.len() / block + 1);
    for row in w.chunks_exact(k.max(1)) {
        for block in row.chunks(block) {
            // `f32::max` passes over NaN, which would quantize it to 0
            // unseen: a NaN gives its block a NaN scale instead.
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
    fn a_non_finite_weight_gives_its_block_a_non_finite_scale() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let (_, scales) = quantize_weight_blocks(&[1.0, bad, 2.0, 3.0], 4, 2);
            assert!(!scales[0].is_finite(), "{bad}: {scales:?}");
            assert_eq!(scales[1], 3.0 / QMAX, "{bad}");
        }
    }
}
