//! Matrix products against weights packed for a register-tiled kernel.
//!
//! A general GEMM packs both operands on every call; with the few rows of a
//! sentence (tens of tokens) against a large weight matrix, that packing
//! costs as much as the arithmetic. Here a PyTorch-layout weight `W[n, k]` is
//! rearranged once into panels of [`NR`] output features (`k × NR` floats,
//! contiguous), and a register-tiled kernel multiplies up to [`MR`] input
//! rows by one panel, reading the rows where they are. On x86-64 with AVX2
//! and FMA the kernel uses them (detected at run time); elsewhere the product
//! goes through the `gemm` crate on the unpacked weights.
//!
//! Packing all of a model's weights takes longer than embedding a sentence
//! (42 MB for all-MiniLM-L6-v2), so [`linear_unpacked`] multiplies by
//! weights as stored, packing one panel at a time into a small buffer that
//! the same kernel then reads: the results are bit for bit those of the
//! packed weights, without their memory.

use rayon::prelude::*;

use crate::nn::kernels::matmul_bt;
use crate::nn::panel_tasks::{BlockOut, for_each_block, row_tiles};

/// Output features per panel.
pub const NR: usize = 16;
/// Input rows per kernel call.
pub const MR: usize = 6;
/// How many `k` steps ahead the kernel prefetches the panel.
const PREFETCH_STEPS: usize = 32;

/// A weight matrix `W[n, k]` packed for `x · Wᵀ`.
#[derive(Debug, Clone)]
pub struct PackedWeights {
    n: usize,
    k: usize,
    /// `ceil(n / NR)` panels of `k × NR`, zero-padded past `n`.
    panels: Vec<f32>,
    /// The weights as given, for the portable path (empty on the SIMD one).
    plain: Vec<f32>,
    simd: bool,
}

impl PackedWeights {
    /// Packs the rows of `parts` (each row-major with rows of `k`, stacked
    /// in order).
    pub fn new(parts: &[&[f32]], k: usize) -> Self {
        let rows = rows_of(parts, k);
        let n = rows.len();
        let simd = simd_available();
        let (panels, plain) = if simd {
            let mut panels = vec![0.0f32; n.div_ceil(NR) * k * NR];
            panels
                .par_chunks_exact_mut(k * NR)
                .enumerate()
                .for_each(|(p, panel)| pack_panel(&rows, p, panel));
            (panels, Vec::new())
        } else {
            (Vec::new(), parts.concat())
        };
        PackedWeights {
            n,
            k,
            panels,
            plain,
            simd,
        }
    }

    /// The weights `W[n, k]`, row-major, as they were given.
    pub fn rows(&self) -> Vec<f32> {
        if !self.simd {
            return self.plain.clone();
        }
        let (n, k) = (self.n, self.k);
        let mut rows = vec![0.0f32; n * k];
        for (r, row) in rows.chunks_exact_mut(k).enumerate() {
            let panel = &self.panels[r / NR * k * NR..];
            for (d, &v) in row.iter_mut().zip(panel[r % NR..].iter().step_by(NR)) {
                *d = v;
            }
        }
        rows
    }

    /// `out[m, n] = bias + x[m, k] · Wᵀ`, spread over the rayon pool: by
    /// rows when there are many, by panels otherwise.
    pub fn linear(&self, x: &[f32], bias: &[f32], out: &mut [f32]) {
        let (n, k) = (self.n, self.k);
        let m = x.len() / k;
        assert!(x.len() == m * k && out.len() == m * n && bias.len() == n);
        if !self.simd {
            let rows_per_task = m.div_ceil(rayon::current_num_threads()).max(16);
            out.par_chunks_mut(n * rows_per_task)
                .zip(x.par_chunks(k * rows_per_task))
                .for_each(|(out, x)| {
                    for row in out.chunks_exact_mut(n) {
                        row.copy_from_slice(bias);
                    }
                    matmul_bt(x, &self.plain, out, (x.len() / k, k, n), true);
                });
            return;
        }
        // SAFETY: `simd` is set only when AVX2 and FMA were detected.
        unsafe { by_panels(Panels::Packed(&self.panels), k, n, x, bias, out) };
    }
}

/// `out[m, n] = bias + x[m, k] · Wᵀ` for the weights as stored (the rows of
/// `parts` stacked, as for [`PackedWeights::new`]), each task packing one
/// panel at a time: the same results as packing them first. (When the rows
/// are split between tasks, each task packs every panel.) Only where
/// [`simd_available`].
pub fn linear_unpacked(parts: &[&[f32]], k: usize, x: &[f32], bias: &[f32], out: &mut [f32]) {
    assert!(simd_available(), "the packed kernel needs AVX2 and FMA");
    let rows = rows_of(parts, k);
    let (m, n) = (x.len() / k, rows.len());
    assert!(x.len() == m * k && out.len() == m * n && bias.len() == n);
    // SAFETY: AVX2 and FMA were asserted above.
    unsafe { by_panels(Panels::Unpacked(&rows), k, n, x, bias, out) };
}

/// Where a product's panels come from.
enum Panels<'a> {
    /// Packed already, one after another.
    Packed(&'a [f32]),
    /// Packed one at a time from these weight rows.
    Unpacked(&'a [&'a [f32]]),
}

impl Panels<'_> {
    /// Panel `p` (`k × NR`), packed into `buffer` if need be.
    fn panel<'s>(&'s self, p: usize, k: usize, buffer: &'s mut Vec<f32>) -> &'s [f32] {
        match self {
            Panels::Packed(panels) => &panels[p * k * NR..(p + 1) * k * NR],
            Panels::Unpacked(rows) => {
                buffer.resize(k * NR, 0.0);
                pack_panel(rows, p, buffer);
                buffer
            }
        }
    }
}

/// `out[m, n] = bias + x[m, k] · Wᵀ` over the pool, panel by panel from
/// `panels`.
///
/// # Safety
/// The CPU must support AVX2 and FMA ([`simd_available`]).
unsafe fn by_panels(
    panels: Panels<'_>,
    k: usize,
    n: usize,
    x: &[f32],
    bias: &[f32],
    out: &mut [f32],
) {
    let m = x.len() / k;
    for_each_block(m, n, NR, MR, out, |rows, task_panels, out| {
        let x = &x[rows.start * k..rows.end * k];
        let first = task_panels.start;
        let mut buffer = Vec::new();
        for p in task_panels {
            let panel = panels.panel(p, k, &mut buffer);
            let bias = &bias[panel_features(p, n)];
            // SAFETY: the CPU support is the caller's.
            unsafe { panel_product(x, k, panel, bias, out, (p - first) * NR) };
        }
    });
}

/// The rows of `parts` (each row-major with rows of `k`), in order.
fn rows_of<'a>(parts: &[&'a [f32]], k: usize) -> Vec<&'a [f32]> {
    assert!(
        k > 0 && parts.iter().all(|p| p.len() % k == 0),
        "weight shape"
    );
    parts.iter().flat_map(|p| p.chunks_exact(k)).collect()
}

/// Writes panel `p` of `rows` (rows `p·NR` on, each `k` long) column by
/// column into `panel` (`k × NR`), zero past the last row.
fn pack_panel(rows: &[&[f32]], p: usize, panel: &mut [f32]) {
    let rows = &rows[p * NR..rows.len().min((p + 1) * NR)];
    if rows.len() < NR {
        panel.fill(0.0);
    }
    // Row by row: each row is read in order, and the panel (24 KB to
    // 96 KB for MiniLM) stays in the core's L2 cache while its columns fill.
    for (j, row) in rows.iter().enumerate() {
        for (d, &v) in panel[j..].iter_mut().step_by(NR).zip(row.iter()) {
            *d = v;
        }
    }
}

/// `out = bias + x · Wᵀ` for the features of one panel (`panel`, `k × NR`;
/// `bias` is theirs, one per feature), `x` holding whole rows of `k`, one
/// per row of `out`, the panel's features from column `col` of `out`.
///
/// # Safety
/// The CPU must support AVX2 and FMA ([`simd_available`]).
unsafe fn panel_product(
    x: &[f32],
    k: usize,
    panel: &[f32],
    bias: &[f32],
    out: &mut BlockOut<'_>,
    col: usize,
) {
    let m = x.len() / k;
    let mut tile = [0.0f32; MR * NR];
    for (row0, rows) in row_tiles(0..m, MR) {
        let x_rows = &x[row0 * k..(row0 + rows) * k];
        // SAFETY: the CPU support is the caller's; `x_rows` holds `rows`
        // rows of `k`, `panel` is `k × NR` (checked by the kernel).
        unsafe { kernel_rows(x_rows, k, panel, &mut tile) };
        for r in 0..rows {
            let dst = &mut out.row(row0 + r)[col..col + bias.len()];
            for (j, d) in dst.iter_mut().enumerate() {
                *d = bias[j] + tile[r * NR + j];
            }
        }
    }
}

/// The features of panel `p` among `n`.
fn panel_features(p: usize, n: usize) -> std::ops::Range<usize> {
    p * NR..n.min((p + 1) * NR)
}

/// Whether this CPU runs the packed kernel (x86-64 with AVX2 and FMA).
pub fn simd_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `tile[r, j] = Σ_kk x[r, kk] · panel[kk, j]` for the (1 to `MR`) rows of
/// `x`, through the kernel compiled for exactly that many rows (a short
/// sentence's last rows would otherwise cost a whole tile).
///
/// # Safety
/// As for [`kernel`].
#[cfg(target_arch = "x86_64")]
unsafe fn kernel_rows(x: &[f32], k: usize, panel: &[f32], tile: &mut [f32; MR * NR]) {
    // SAFETY: the caller's guarantees are `kernel`'s; each arm passes
    // exactly the rows `x` holds.
    unsafe {
        match x.len() / k {
            1 => kernel::<1>(x, k, panel, tile),
            2 => kernel::<2>(x, k, panel, tile),
            3 => kernel::<3>(x, k, panel, tile),
            4 => kernel::<4>(x, k, panel, tile),
            5 => kernel::<5>(x, k, panel, tile),
            _ => kernel::<MR>(x, k, panel, tile),
        }
    }
}

/// `tile[r, j] = Σ_kk x[r, kk] · panel[kk, j]` for the `ROWS` rows of `x`.
///
/// # Safety
/// The CPU must support AVX2 and FMA; `x` holds `ROWS ≤ MR` whole rows of
/// `k`; `panel` holds `k × NR` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn kernel<const ROWS: usize>(x: &[f32], k: usize, panel: &[f32], tile: &mut [f32; MR * NR]) {
    use std::arch::x86_64::*;
    assert!(ROWS <= MR && x.len() == ROWS * k && panel.len() >= k * NR);
    let row_ptr: [*const f32; ROWS] = std::array::from_fn(|r| x[r * k..].as_ptr());
    let b = panel.as_ptr();
    let mut acc = [[_mm256_setzero_ps(); 2]; ROWS];
    for kk in 0..k {
        // SAFETY: kk < k, so kk·NR + 16 ≤ k·NR floats of the panel and
        // element kk of every row lie inside the slices (asserted above).
        // The prefetch address may lie past the panel: prefetches never
        // fault, and `wrapping_add` keeps the pointer arithmetic defined.
        unsafe {
            // With a few rows, the weights stream from memory once per
            // pass: fetching 32 steps (2 KB) ahead hides that latency.
            _mm_prefetch::<_MM_HINT_T0>(b.wrapping_add((kk + PREFETCH_STEPS) * NR).cast());
            let b0 = _mm256_loadu_ps(b.add(kk * NR));
            let b1 = _mm256_loadu_ps(b.add(kk * NR + 8));
            for (row, acc) in row_ptr.iter().zip(acc.iter_mut()) {
                let a = _mm256_set1_ps(*row.add(kk));
                acc[0] = _mm256_fmadd_ps(a, b0, acc[0]);
                acc[1] = _mm256_fmadd_ps(a, b1, acc[1]);
            }
        }
    }
    for (out, acc) in tile.chunks_exact_mut(NR).zip(acc) {
        // SAFETY: each chunk holds NR = 16 floats.
        unsafe {
            _mm256_storeu_ps(out.as_mut_ptr(), acc[0]);
            _mm256_storeu_ps(out.as_mut_ptr().add(8), acc[1]);
        }
    }
}

/// Never called: `simd` is false off x86-64.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn kernel_rows(_: &[f32], _: usize, _: &[f32], _: &mut [f32; MR * NR]) {
    unreachable!("the packed kernel needs x86-64 AVX2 and FMA")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packing keeps the weights: they come back as given, on either path.
    #[test]
    fn packed_weights_give_their_rows_back() {
        for (n, k) in [(1, 1), (17, 9), (33, 20)] {
            let w: Vec<f32> = (0..n * k).map(|i| (i as f32 * 0.7).sin()).collect();
            let (top, bottom) = w.split_at(n / 2 * k);
            assert_eq!(PackedWeights::new(&[top, bottom], k).rows(), w, "{n}×{k}");
        }
    }

    #[test]
    fn packed_products_equal_the_plain_ones() {
        for (m, n, k) in [
            (1, 5, 3),
            (2, 17, 9),
            (3, 16, 8),
            (5, 20, 4),
            (7, 33, 20),
            (11, 31, 12),
            (22, 48, 17),
            (130, 40, 64),
        ] {
            let w: Vec<f32> = (0..n * k)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
                .collect();
            let x: Vec<f32> = (0..m * k)
                .map(|i| ((i * 13 % 97) as f32 - 48.0) / 48.0)
                .collect();
            let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.1).collect();
            let parts = [&w[..n / 2 * k], &w[n / 2 * k..]];
            let packed = PackedWeights::new(&parts, k);
            for threads in [1, 2, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let mut ours = vec![f32::NAN; m * n];
                pool.install(|| packed.linear(&x, &bias, &mut ours));
                if simd_available() {
                    // Packing as it goes gives the same bits.
                    let mut unpacked = vec![f32::NAN; m * n];
                    pool.install(|| linear_unpacked(&parts, k, &x, &bias, &mut unpacked));
                    assert_eq!(
                        unpacked.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        ours.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        "({m},{n},{k}), {threads} threads"
                    );
                }
                for i in 0..m {
                    for j in 0..n {
                        let want =
                            bias[j] + (0..k).map(|p| x[i * k + p] * w[j * k + p]).sum::<f32>();
                        let got = ours[i * n + j];
                        assert!(
                            (got - want).abs() <= 1e-4 * want.abs().max(1.0),
                            "({m},{n},{k}) [{i},{j}] {got} vs {want}"
                        );
                    }
                }
            }
        }
    }
}
