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
//! (see [`kernels`] for the order of the f32 operations).
//!
//! The folder owns int8 in this crate, one job per file:
//! - [`quantize`]: the activations' side, choosing each row's scale, zero
//!   point and outliers and rounding to u8;
//! - [`weights`]: the weights' quantizer (symmetric, a scale per block),
//!   which int8 storage and [`crate::vit`]'s quantized layers share;
//! - [`pack`]: the weights' side, laying int8 rows and their block scales
//!   out in the panels the kernels read;
//! - [`kernels`]: the integer kernels and their CPU tiers ([`Int8Kernel`]).
//!
//! This file holds the product that joins them ([`QuantizedWeights::linear`]).

pub(crate) mod kernels;
pub(crate) mod pack;
pub(crate) mod quantize;
pub(crate) mod weights;

pub use kernels::Int8Kernel;
pub use pack::QuantizedWeights;
pub use weights::quantize_weight_blocks;

use kernels::{Panel, QMR, QNR, Rows, Tile};
use pack::in_pairs;
use quantize::QuantizedRows;

use crate::nn::panel_tasks::{BlockOut, for_each_block, row_tiles};

/// The widest input an int8 product accepts: beyond it the i32 sums of a
/// block that spans a whole row could overflow (255 · 127 per product).
pub const MAX_INPUT_FEATURES: usize = 65_536;

/// How many activations of each row stay in f32.
pub const OUTLIERS: usize = 4;

impl QuantizedWeights {
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

#[cfg(test)]
mod tests;
