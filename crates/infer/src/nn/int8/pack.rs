//! The weights' side of int8 products: int8 rows with a scale per block of
//! inputs (as `convert --dtype int8` stores them) laid out once in the
//! panels the [`kernels`](super::kernels) read, with the per-row sums the
//! zero points need, and (for the kernels that read them) the same panels
//! in pairs of inputs.

use std::sync::OnceLock;

use super::MAX_INPUT_FEATURES;
use super::kernels::QNR;

/// An int8 weight matrix `q[n, k]` with a scale per block of inputs of each
/// row, packed for `x · Wᵀ`: what the engines' int8 linear layers run on.
///
/// ```
/// use modelbin_infer::{Int8Kernel, QuantizedWeights, quantize_weight_blocks};
///
/// // Two output features of four inputs, one scale per row.
/// let w = [0.5f32, -1.0, 0.25, 1.0, 2.0, 0.0, -2.0, 1.0];
/// let (q, scales) = quantize_weight_blocks(&w, 4, 4);
/// let packed = QuantizedWeights::new(&[&q], &scales, 4, 4);
/// let mut out = [0.0f32; 2];
/// packed.linear(&[1.0, 2.0, 3.0, 4.0], &[0.0, 1.0], &mut out, Int8Kernel::Portable);
/// // 0.5 - 2 + 0.75 + 4 = 3.25 and 2 - 6 + 4 + 1 = 1, within int8's error.
/// assert!((out[0] - 3.25).abs() < 0.05 && (out[1] - 1.0).abs() < 0.05);
/// ```
#[derive(Debug, Clone)]
pub struct QuantizedWeights {
    /// Output features (rows).
    pub(super) n: usize,
    /// Input features.
    pub(super) k: usize,
    /// `k` rounded up to a multiple of four.
    pub(super) k4: usize,
    /// Groups of four inputs per scale block.
    pub(super) block4: usize,
    /// `ceil(n / QNR)` panels of `k4 · QNR` bytes (see
    /// [`super::kernels`]), zero past `n` and `k`.
    pub(super) panels: Vec<i8>,
    /// The same panels in pairs of inputs, made on the first product of a
    /// kernel that reads them.
    pub(super) pairs: OnceLock<Vec<i8>>,
    /// Per panel, `QNR` scales per block, zero past `n`.
    pub(super) scales: Vec<f32>,
    /// Per row: `Σ_b s[j, b] · Σ_{i in b} q[j, i]`, zero past `n`.
    pub(super) scaled_sums: Vec<f32>,
}

impl QuantizedWeights {
    /// Packs the rows of `parts` (each row-major with rows of `k`, stacked
    /// in order: `n` rows in all) with their scales: `ceil(k / block)` per
    /// row, each for `block` consecutive inputs. A stored −128 is read as
    /// −127 (the quantizer never writes it).
    ///
    /// # Panics
    /// If the sizes disagree, if `k` exceeds 65,536 (`MAX_INPUT_FEATURES`),
    /// or if `block` is neither a multiple of four nor at least `k`.
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
}

/// The panels `panels` (groups of four inputs, `k4 · QNR` bytes each)
/// rearranged for the AVX2 kernel: per panel, eight rows at a time (a
/// strip), the strip's pairs of inputs in order: pair `p` of strip `c`
/// holds, for its rows `j` in turn, `w[8c + j, 2p..2p + 2]` (16 bytes at
/// `(c · k4 / 2 + p) · 16`). The kernel reads a strip from end to end.
pub(super) fn in_pairs(panels: &[i8], k4: usize) -> Vec<i8> {
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
