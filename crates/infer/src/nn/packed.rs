//! Matrix products against weights packed for a register-tiled kernel.
//!
//! A general GEMM packs both operands on every call; with the few rows of a
//! sentence (tens of tokens) against a large weight matrix, that packing
//! costs as much as the arithmetic. Here a PyTorch-layout weight `W[n, k]` is
//! rearranged once into panels of [`NR`] output features (`k × NR` floats,
//! contiguous), and a register-tiled kernel multiplies a few input rows by
//! one or two panels, reading the rows where they are. On x86-64 the kernel
//! is compiled for AVX-512F and for AVX2 with FMA, and runs the process's
//! [`F32Tier`] (by default the widest the CPU has, detected at run time);
//! on the portable tier the product goes through the
//! `gemm` crate on the unpacked weights. Both SIMD kernels add each output's
//! products one `k` step after another by fused multiply-adds from zero, so
//! they give the same bits.
//!
//! Packing all of a model's weights takes longer than embedding a sentence
//! (42 MB for all-MiniLM-L6-v2), so [`linear_unpacked`] multiplies by
//! weights as stored, packing one panel at a time into a small buffer that
//! the same kernel then reads: the results are bit for bit those of the
//! packed weights, without their memory.

use std::ops::Range;

use rayon::prelude::*;

use crate::nn::f32_tier::F32Tier;
use crate::nn::kernels::matmul_bt;
use crate::nn::panel_tasks::{BlockOut, for_each_block, row_tiles};

/// Output features per panel: one AVX-512 register, two AVX2 ones.
pub const NR: usize = 16;
/// How many `k` steps ahead the kernels prefetch the panels.
const PREFETCH_STEPS: usize = 32;

/// The register tile of a SIMD tier's kernel: up to `rows` input rows by
/// `panels` adjacent panels, one accumulator register per row and vector.
#[derive(Debug, Clone, Copy)]
struct Tile {
    rows: usize,
    panels: usize,
    order: TileOrder,
}

/// The order in which a block's row tiles meet its groups of panels.
///
/// Measured with `kernel_bench` on ViT-B and ViT-S products (1,576 rows,
/// one thread, Xeon with AVX-512), as shares of the FMA peak:
/// - The AVX2 tile's panel (16 features, 48 KB over 768 steps) stays in
///   L1 while every row tile of a block passes over it: groups outer,
///   82–88%, against 73–84% rows outer.
/// - The AVX-512 tile's two panels (96 KB) do not, and there groups outer
///   writes each group's sums down every row of the block, a column strip
///   whose cache misses cost a tenth of the time (the products ran at
///   86–94% with those writes left out): rows outer, each row tile keeps
///   its inputs in L1 and writes its sums along the rows, 82–89%, against
///   72–87% groups outer.
#[derive(Debug, Clone, Copy)]
enum TileOrder {
    /// For each group of panels, every row tile of a block of rows.
    GroupsOuter,
    /// For each row tile, every group of a block of panels (panels for
    /// half the L2 cache, [`PANEL_BLOCK_FLOATS`]).
    RowsOuter,
}

impl Tile {
    /// AVX2 has 16 vector registers: 6 rows × the two halves of one panel
    /// take 12, the panel's two vectors and a broadcast the rest.
    const AVX2: Tile = Tile {
        rows: 6,
        panels: 1,
        order: TileOrder::GroupsOuter,
    };
    /// AVX-512 has 32: 12 rows × 2 panels take 24, the two panel vectors
    /// and the broadcasts the rest. Each row's value then feeds two
    /// multiply-adds and each panel vector twelve, so the two loads per
    /// step (panel vectors, row values) keep both FMA units busy.
    const AVX512: Tile = Tile {
        rows: 12,
        panels: 2,
        order: TileOrder::RowsOuter,
    };

    /// The tile of `tier`'s kernel.
    fn of(tier: F32Tier) -> Tile {
        match tier {
            F32Tier::Avx512 => Tile::AVX512,
            _ => Tile::AVX2,
        }
    }

    /// Output features of a whole tile.
    fn width(self) -> usize {
        self.panels * NR
    }
}

/// Input values per block of rows (1 MB, half the L2 cache of a recent
/// x86-64 core).
const X_BLOCK_FLOATS: usize = 1 << 18;
/// Panel values per block of output features, likewise.
const PANEL_BLOCK_FLOATS: usize = 1 << 18;
/// `k` steps per pass of the kernel over packed panels. Each pass loads
/// every tile's sums from the output and stores them back, and with the
/// wide outputs of a transformer's MLP (3,072 features) those sums come
/// from L3, not L1: fewer, longer passes cost less than keeping the
/// panels' slice (96 KB for two panels) in L1. 768 steps make GPT-2's
/// and ViT-B's 768-wide products one pass and MiniLM's 1,536-wide two.
/// Measured against 256 in the same runs (2 threads, AVX-512): GPT-2
/// small activations 1,282 against 1,072 tok/s (median of 4), MiniLM
/// `encode(batch_size=32)` 336–340 against 298–313 sentences/s.
const K_BLOCK: usize = 768;
/// Values in the largest tile, rows of its width.
const TILE_VALUES: usize = 12 * 2 * NR;

/// A weight matrix `W[n, k]` packed for `x · Wᵀ`, the product every
/// engine's f32 linear layers run.
///
/// ```
/// use modelbin_infer::PackedWeights;
///
/// // W is 2×3 (two output features of three inputs), as PyTorch stores it.
/// let w = [1.0, 0.0, 2.0, 0.0, 1.0, 0.0];
/// let packed = PackedWeights::new(&[&w], 3);
/// let mut out = [0.0; 2];
/// packed.linear(&[1.0, 2.0, 3.0], &[0.5, -0.5], &mut out);
/// assert_eq!(out, [7.5, 1.5]);
/// assert_eq!(packed.rows(), w);
/// ```
#[derive(Debug, Clone)]
pub struct PackedWeights {
    n: usize,
    k: usize,
    /// `ceil(n / NR)` panels of `k × NR`, zero-padded past `n`.
    panels: Vec<f32>,
    /// The weights as given, for the portable path (empty on the SIMD one).
    plain: Vec<f32>,
    /// The tier whose kernel multiplies by these weights.
    tier: F32Tier,
}

impl PackedWeights {
    /// Packs the rows of `parts` (each row-major with rows of `k`, stacked
    /// in order).
    ///
    /// # Panics
    /// If `k` is 0 or a part is not whole rows of `k`.
    pub fn new(parts: &[&[f32]], k: usize) -> Self {
        let rows = rows_of(parts, k);
        let n = rows.len();
        let tier = F32Tier::chosen();
        let (panels, plain) = if tier != F32Tier::Portable {
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
            tier,
        }
    }

    /// The weights `W[n, k]`, row-major, as they were given.
    pub fn rows(&self) -> Vec<f32> {
        if self.tier == F32Tier::Portable {
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
    ///
    /// # Panics
    /// If `x` is not whole rows of `k`, or `bias` and `out` do not hold
    /// `n` and `m × n` values.
    pub fn linear(&self, x: &[f32], bias: &[f32], out: &mut [f32]) {
        let (n, k) = (self.n, self.k);
        let m = x.len() / k;
        assert!(x.len() == m * k && out.len() == m * n && bias.len() == n);
        if self.tier == F32Tier::Portable {
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
        // SAFETY: `F32Tier::chosen` checked the tier's features.
        unsafe { by_panels(self.tier, Panels::Packed(&self.panels), k, n, x, bias, out) };
    }
}

/// `out[m, n] = bias + x[m, k] · Wᵀ` for the weights as stored (the rows of
/// `parts` stacked, as for [`PackedWeights::new`]), each task packing one
/// panel at a time: the same results as packing them first. (When the rows
/// are split between tasks, each task packs every panel.) Only where
/// [`simd_available`].
pub fn linear_unpacked(parts: &[&[f32]], k: usize, x: &[f32], bias: &[f32], out: &mut [f32]) {
    let tier = F32Tier::chosen();
    assert!(
        tier != F32Tier::Portable,
        "the packed kernel needs AVX2 and FMA"
    );
    let rows = rows_of(parts, k);
    let (m, n) = (x.len() / k, rows.len());
    assert!(x.len() == m * k && out.len() == m * n && bias.len() == n);
    // SAFETY: `F32Tier::chosen` checked the tier's features.
    unsafe { by_panels(tier, Panels::Unpacked(&rows), k, n, x, bias, out) };
}

/// The weights of a [`product_on_thread`], read where they are: `values`
/// from the first weight on, `stride` values between rows.
#[derive(Debug, Clone, Copy)]
pub(crate) enum StridedWeights<'a> {
    /// `W[n, k]`: row `j`, the `k` weights of output feature `j`, starts
    /// at `values[j · stride]` (attention's keys).
    Rows(&'a [f32], usize),
    /// `Wᵀ[k, n]`: row `kk`, step `kk`'s weight for each of the `n`
    /// features, starts at `values[kk · stride]` (attention's values).
    Columns(&'a [f32], usize),
}

/// `out[m, n] = x[m, k] · Wᵀ` on the calling thread, with `x`'s rows
/// `x_stride` apart: attention's products (a head's queries against its
/// keys, its scores against its values), each a rayon task of its own.
/// The panels are packed first (`n × k` values, a few tens of KB for a
/// head); each output adds its products in `k` order as in every packed
/// product. Only where [`simd_available`].
pub(crate) fn product_on_thread(
    (x, x_stride): (&[f32], usize),
    weights: StridedWeights<'_>,
    (m, k, n): (usize, usize, usize),
    out: &mut [f32],
) {
    let tier = F32Tier::chosen();
    assert!(
        tier != F32Tier::Portable,
        "the packed kernel needs AVX2 and FMA"
    );
    assert!(out.len() == m * n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        out.fill(0.0);
        return;
    }
    let mut panels = vec![0.0f32; n.div_ceil(NR) * k * NR];
    match weights {
        StridedWeights::Rows(values, stride) => {
            let rows: Vec<&[f32]> = (0..n)
                .map(|j| &values[j * stride..j * stride + k])
                .collect();
            for (p, panel) in panels.chunks_exact_mut(k * NR).enumerate() {
                pack_panel(&rows, p, panel);
            }
        }
        StridedWeights::Columns(values, stride) => {
            for (p, panel) in panels.chunks_exact_mut(k * NR).enumerate() {
                let features = p * NR..n.min((p + 1) * NR);
                for (kk, step) in panel.chunks_exact_mut(NR).enumerate() {
                    let at = kk * stride;
                    step[..features.len()]
                        .copy_from_slice(&values[at + features.start..at + features.end]);
                }
            }
        }
    }
    let tile = Tile::of(tier);
    let zeros = vec![0.0f32; n];
    let mut block = BlockOut::whole(out, n);
    let part = Part {
        x,
        k,
        stride: x_stride,
        rows: 0..m,
        steps: 0..k,
    };
    let panels: Vec<&[f32]> = panels.chunks_exact(k * NR).collect();
    for (g, group) in panels.chunks(tile.panels).enumerate() {
        let col = g * tile.width();
        let bias = &zeros[col..n.min(col + tile.width())];
        // SAFETY: `F32Tier::chosen` checked the tier's features.
        unsafe { panel_product(tier, &part, group, bias, &mut block, col) };
    }
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

/// `out[m, n] = bias + x[m, k] · Wᵀ` over the pool, a tile's panels at a
/// time from `panels`, through `tier`'s kernel.
///
/// # Safety
/// The CPU must support `tier`, a SIMD one.
unsafe fn by_panels(
    tier: F32Tier,
    panels: Panels<'_>,
    k: usize,
    n: usize,
    x: &[f32],
    bias: &[f32],
    out: &mut [f32],
) {
    let m = x.len() / k;
    let tile = Tile::of(tier);
    let panel_count = n.div_ceil(NR);
    // Panels packed as they go are packed once, for all of `k`, and meet
    // every row tile of a block before the next group is packed.
    let (k_block, order) = match panels {
        Panels::Packed(_) => (K_BLOCK, tile.order),
        Panels::Unpacked(_) => (k, TileOrder::GroupsOuter),
    };
    // Rows in blocks whose inputs stay in the core's L2 cache while every
    // panel passes over them: a task's rows of a vision transformer's
    // batch (megabytes) would otherwise come from L3 again for each tile
    // of panels, and the kernel would wait on them. Rows outer, a row
    // tile's inputs stay in L1 instead, and the groups come in blocks
    // whose panels stay in L2.
    let block_rows = match order {
        TileOrder::GroupsOuter => (X_BLOCK_FLOATS / k / tile.rows).max(1) * tile.rows,
        TileOrder::RowsOuter => m.max(1),
    };
    let groups_per_block = (PANEL_BLOCK_FLOATS / (k.min(k_block) * tile.width())).max(1);
    for_each_block(m, n, tile.width(), tile.rows, out, |rows, groups, out| {
        let x = &x[rows.start * k..rows.end * k];
        let mut buffers = vec![Vec::new(); tile.panels];
        // The product of rows `part_rows` over `steps` with group `g`.
        let mut product = |part_rows: Range<usize>, steps: &Range<usize>, g: usize, out: &mut _| {
            let group = g * tile.panels..panel_count.min((g + 1) * tile.panels);
            let bias = &bias[group.start * NR..n.min(group.end * NR)];
            let mut group_panels = [&[][..]; 2];
            let count = group.len();
            for ((slot, p), buffer) in group_panels.iter_mut().zip(group).zip(buffers.iter_mut()) {
                *slot = &panels.panel(p, k, buffer)[steps.start * NR..steps.end * NR];
            }
            let part = Part {
                x,
                k,
                stride: k,
                rows: part_rows,
                steps: steps.clone(),
            };
            let col = (g - groups.start) * tile.width();
            // SAFETY: the CPU support is the caller's.
            unsafe { panel_product(tier, &part, &group_panels[..count], bias, out, col) };
        };
        for block in (0..rows.len()).step_by(block_rows) {
            let block = block..rows.len().min(block + block_rows);
            match order {
                TileOrder::GroupsOuter => {
                    for first_step in (0..k).step_by(k_block) {
                        let steps = first_step..k.min(first_step + k_block);
                        for g in groups.clone() {
                            product(block.clone(), &steps, g, out);
                        }
                    }
                }
                TileOrder::RowsOuter => {
                    for first_group in groups.clone().step_by(groups_per_block) {
                        let group_block =
                            first_group..groups.end.min(first_group + groups_per_block);
                        for first_step in (0..k).step_by(k_block) {
                            let steps = first_step..k.min(first_step + k_block);
                            for (row0, tile_rows) in row_tiles(block.clone(), tile.rows) {
                                for g in group_block.clone() {
                                    product(row0..row0 + tile_rows, &steps, g, out);
                                }
                            }
                        }
                    }
                }
            }
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

/// Part of a product's input: some rows of `x` (`stride` apart, each of
/// `k` values), and in each the values of some `k` steps.
struct Part<'a> {
    x: &'a [f32],
    k: usize,
    /// Values from one row of `x` to the next.
    stride: usize,
    rows: std::ops::Range<usize>,
    steps: std::ops::Range<usize>,
}

/// Adds to the sums in `out` the products of `part` with the features of
/// adjacent panels (`panels`, each the part's steps `× NR`; `bias` is their
/// features', one each), the features from column `col` of `out`: on the
/// first steps the sums start at zero, on the last the bias is added.
///
/// # Safety
/// The CPU must support `tier`, a SIMD one.
unsafe fn panel_product(
    tier: F32Tier,
    part: &Part<'_>,
    panels: &[&[f32]],
    bias: &[f32],
    out: &mut BlockOut<'_>,
    col: usize,
) {
    let (k, stride, steps) = (part.k, part.stride, &part.steps);
    let width = panels.len() * NR;
    let features = col..col + bias.len();
    let mut tile = [0.0f32; TILE_VALUES];
    for (row0, rows) in row_tiles(part.rows.clone(), Tile::of(tier).rows) {
        let rows_in = KernelRows {
            x: &part.x[row0 * stride + steps.start..(row0 + rows - 1) * stride + steps.end],
            stride,
            steps: steps.len(),
        };
        let accumulate = steps.start > 0;
        if accumulate {
            for (r, tile_row) in tile.chunks_exact_mut(width).take(rows).enumerate() {
                copy_tile_row(
                    &mut tile_row[..bias.len()],
                    &out.row(row0 + r)[features.clone()],
                );
            }
        }
        // SAFETY: the CPU support is the caller's; the shapes are checked
        // by the kernel.
        unsafe { kernel_rows(tier, rows, rows_in, panels, &mut tile, accumulate) };
        let last = steps.end == k;
        for (r, tile_row) in tile.chunks_exact(width).take(rows).enumerate() {
            let dst = &mut out.row(row0 + r)[features.clone()];
            if last {
                for (d, (&b, &t)) in dst.iter_mut().zip(bias.iter().zip(tile_row)) {
                    *d = b + t;
                }
            } else {
                copy_tile_row(dst, &tile_row[..bias.len()]);
            }
        }
    }
}

/// Copies `src` into `dst` (equal lengths), a panel's width at a time. A
/// copy of a length unknown at compile time is a call into libc's memcpy,
/// and at 64 to 128 bytes per tile row the calls took a tenth of a GPT-2
/// forward's samples, where a wide product's sums pass through the tile
/// once per block of steps; fixed-width copies compile to vector moves.
#[inline(always)]
fn copy_tile_row(dst: &mut [f32], src: &[f32]) {
    let mut dst = dst.chunks_exact_mut(NR);
    let mut src = src.chunks_exact(NR);
    for (d, s) in (&mut dst).zip(&mut src) {
        let d: &mut [f32; NR] = d.try_into().expect("a chunk of NR");
        let s: &[f32; NR] = s.try_into().expect("a chunk of NR");
        *d = *s;
    }
    let rest = dst.into_remainder();
    if !rest.is_empty() {
        rest.copy_from_slice(src.remainder());
    }
}

/// The rows a kernel reads: from the start of `x`, rows `stride` apart,
/// `steps` values each.
#[derive(Debug, Clone, Copy)]
struct KernelRows<'a> {
    x: &'a [f32],
    stride: usize,
    steps: usize,
}

impl KernelRows<'_> {
    /// Pointers to the first values of `ROWS` rows, checked to lie in `x`
    /// with all their steps.
    fn pointers<const ROWS: usize>(self) -> [*const f32; ROWS] {
        assert!(ROWS > 0 && self.x.len() == (ROWS - 1) * self.stride + self.steps);
        std::array::from_fn(|r| self.x[r * self.stride..].as_ptr())
    }
}

/// Whether the packed kernel runs: the chosen tier is a SIMD one (x86-64
/// with AVX2 and FMA at least).
pub fn simd_available() -> bool {
    F32Tier::chosen() != F32Tier::Portable
}

/// The signature of a kernel for `PANELS` adjacent panels.
#[cfg(target_arch = "x86_64")]
type Kernel<const PANELS: usize> =
    unsafe fn(KernelRows<'_>, [&[f32]; PANELS], &mut [f32; TILE_VALUES], bool);

/// `tile[r, j] (+)= Σ_kk x[r, kk] · panels[kk, j]` (rows of the panels'
/// width; added to the tile's sums if `accumulate`) for the `rows` rows of
/// `x` (1 to the tier's tile rows), through `tier`'s kernel compiled for
/// exactly that many rows (a short sentence's last rows would otherwise
/// cost a whole tile).
///
/// # Safety
/// The CPU must support `tier`, a SIMD one; `panels` are 1 to the tier's
/// tile panels.
#[cfg(target_arch = "x86_64")]
unsafe fn kernel_rows(
    tier: F32Tier,
    rows: usize,
    x: KernelRows<'_>,
    panels: &[&[f32]],
    tile: &mut [f32; TILE_VALUES],
    accumulate: bool,
) {
    let avx2: [Kernel<1>; 6] = [
        avx2::kernel::<1>,
        avx2::kernel::<2>,
        avx2::kernel::<3>,
        avx2::kernel::<4>,
        avx2::kernel::<5>,
        avx2::kernel::<6>,
    ];
    // SAFETY: the caller's guarantees are the kernels'; each is chosen for
    // exactly `rows` rows (and checks that `x` holds them).
    unsafe {
        match (tier, panels) {
            (F32Tier::Avx512, &[a, b]) => {
                avx512::kernels::<2>()[rows - 1](x, [a, b], tile, accumulate)
            }
            (F32Tier::Avx512, &[a]) => avx512::kernels::<1>()[rows - 1](x, [a], tile, accumulate),
            (F32Tier::Avx2, &[a]) => avx2[rows - 1](x, [a], tile, accumulate),
            _ => unreachable!("{} panels for the {} kernel", panels.len(), tier.name()),
        }
    }
}

/// The AVX2 kernel: the two 8-float halves of one panel.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{KernelRows, NR, PREFETCH_STEPS, TILE_VALUES, Tile};

    /// `tile[r, j] (+)= Σ_kk x[r, kk] · panel[kk, j]` for the `ROWS` rows
    /// of `x`, rows of `NR` in `tile` (added to if `accumulate`).
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA; `ROWS` is at most the tile's; the
    /// panel holds `x.steps × NR` values.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn kernel<const ROWS: usize>(
        x: KernelRows<'_>,
        [panel]: [&[f32]; 1],
        tile: &mut [f32; TILE_VALUES],
        accumulate: bool,
    ) {
        let k = x.steps;
        assert!(ROWS <= Tile::AVX2.rows && panel.len() >= k * NR);
        let row_ptr = x.pointers::<ROWS>();
        let b = panel.as_ptr();
        let mut acc = [[_mm256_setzero_ps(); 2]; ROWS];
        if accumulate {
            for (acc, sums) in acc.iter_mut().zip(tile.chunks_exact(NR)) {
                // SAFETY: each chunk holds NR = 16 floats.
                unsafe {
                    acc[0] = _mm256_loadu_ps(sums.as_ptr());
                    acc[1] = _mm256_loadu_ps(sums.as_ptr().add(8));
                }
            }
        }
        for kk in 0..k {
            // SAFETY: kk < k, so kk·NR + 16 ≤ k·NR floats of the panel and
            // element kk of every row lie inside the slices (asserted
            // above). The prefetch address may lie past the panel:
            // prefetches never fault, and `wrapping_add` keeps the pointer
            // arithmetic defined.
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
}

/// The AVX-512 kernel: one 16-float register per panel.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::{Kernel, KernelRows, NR, PREFETCH_STEPS, TILE_VALUES, Tile};

    /// The kernel for `PANELS` panels, by rows (1 to the tile's).
    pub(super) fn kernels<const PANELS: usize>() -> [Kernel<PANELS>; 12] {
        [
            kernel::<1, PANELS>,
            kernel::<2, PANELS>,
            kernel::<3, PANELS>,
            kernel::<4, PANELS>,
            kernel::<5, PANELS>,
            kernel::<6, PANELS>,
            kernel::<7, PANELS>,
            kernel::<8, PANELS>,
            kernel::<9, PANELS>,
            kernel::<10, PANELS>,
            kernel::<11, PANELS>,
            kernel::<12, PANELS>,
        ]
    }

    /// `tile[r, j] (+)= Σ_kk x[r, kk] · panels[kk, j]` for the `ROWS` rows
    /// of `x`, rows of `PANELS · NR` in `tile` (added to if `accumulate`).
    ///
    /// # Safety
    /// The CPU must support AVX-512F; `ROWS` is at most the tile's; each
    /// panel holds `x.steps × NR` values.
    #[target_feature(enable = "avx512f")]
    unsafe fn kernel<const ROWS: usize, const PANELS: usize>(
        x: KernelRows<'_>,
        panels: [&[f32]; PANELS],
        tile: &mut [f32; TILE_VALUES],
        accumulate: bool,
    ) {
        let k = x.steps;
        assert!(
            ROWS <= Tile::AVX512.rows
                && PANELS <= Tile::AVX512.panels
                && panels.iter().all(|p| p.len() >= k * NR)
        );
        let row_ptr = x.pointers::<ROWS>();
        let b: [*const f32; PANELS] = panels.map(<[f32]>::as_ptr);
        let mut acc = [[_mm512_setzero_ps(); PANELS]; ROWS];
        if accumulate {
            for (acc, sums) in acc.iter_mut().zip(tile.chunks_exact(PANELS * NR)) {
                for (acc, sums) in acc.iter_mut().zip(sums.chunks_exact(NR)) {
                    // SAFETY: each chunk holds NR = 16 floats.
                    *acc = unsafe { _mm512_loadu_ps(sums.as_ptr()) };
                }
            }
        }
        for kk in 0..k {
            // SAFETY: as in the AVX2 kernel, for each panel.
            unsafe {
                let mut w = [_mm512_setzero_ps(); PANELS];
                for c in 0..PANELS {
                    _mm_prefetch::<_MM_HINT_T0>(
                        b[c].wrapping_add((kk + PREFETCH_STEPS) * NR).cast(),
                    );
                    w[c] = _mm512_loadu_ps(b[c].add(kk * NR));
                }
                // Index loops over constant counts unroll whole, keeping
                // the accumulators in registers.
                for r in 0..ROWS {
                    let a = _mm512_set1_ps(*row_ptr[r].add(kk));
                    for c in 0..PANELS {
                        acc[r][c] = _mm512_fmadd_ps(a, w[c], acc[r][c]);
                    }
                }
            }
        }
        for (out, acc) in tile.chunks_exact_mut(PANELS * NR).zip(acc) {
            for (out, acc) in out.chunks_exact_mut(NR).zip(acc) {
                // SAFETY: each chunk holds NR = 16 floats.
                unsafe { _mm512_storeu_ps(out.as_mut_ptr(), acc) };
            }
        }
    }
}

/// Never called: the tier is portable off x86-64.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn kernel_rows(
    _: F32Tier,
    _: usize,
    _: KernelRows<'_>,
    _: &[&[f32]],
    _: &mut [f32; TILE_VALUES],
    _: bool,
) {
    unreachable!("the packed kernels need x86-64")
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

    /// Products on one thread read strided inputs, and weights as rows or
    /// as columns, and give the plain products, on every SIMD tier.
    #[test]
    fn products_on_a_thread_read_strided_rows_and_columns() {
        for (m, k, n) in [
            (1, 1, 1),
            (5, 7, 3),
            (13, 64, 37),
            (30, 257, 64),
            (25, 64, 257),
        ] {
            let (x_stride, w_stride) = (k + 3, 2 * k.max(n) + 5);
            let x: Vec<f32> = (0..m * x_stride)
                .map(|i| ((i * 13 % 97) as f32 - 48.0) / 48.0)
                .collect();
            let w: Vec<f32> = (0..k.max(n) * w_stride)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
                .collect();
            let want = |i: usize, j: usize, weight: &dyn Fn(usize, usize) -> f32| {
                (0..k)
                    .map(|p| x[i * x_stride + p] * weight(j, p))
                    .sum::<f32>()
            };
            for tier in usable_tiers()
                .into_iter()
                .filter(|&t| t != F32Tier::Portable)
            {
                for (weights, weight) in [
                    (
                        StridedWeights::Rows(&w, w_stride),
                        &(|j: usize, p: usize| w[j * w_stride + p]) as &dyn Fn(usize, usize) -> f32,
                    ),
                    (
                        StridedWeights::Columns(&w, w_stride),
                        &(|j: usize, p: usize| w[p * w_stride + j]) as &dyn Fn(usize, usize) -> f32,
                    ),
                ] {
                    let mut out = vec![f32::NAN; m * n];
                    F32Tier::capped(tier, || {
                        product_on_thread((&x, x_stride), weights, (m, k, n), &mut out)
                    });
                    for i in 0..m {
                        for j in 0..n {
                            let (got, want) = (out[i * n + j], want(i, j, weight));
                            assert!(
                                (got - want).abs() <= 1e-4 * want.abs().max(1.0),
                                "({m},{k},{n}) {weights:?} {} [{i},{j}] {got} vs {want}",
                                tier.name()
                            );
                        }
                    }
                }
            }
        }
    }

    /// The tiers this CPU can run.
    fn usable_tiers() -> Vec<F32Tier> {
        [F32Tier::Portable, F32Tier::Avx2, F32Tier::Avx512]
            .into_iter()
            .filter(|t| t.usable())
            .collect()
    }

    /// Every tier's products against a scalar reference, on shapes ragged
    /// for every tile (rows, panels and pairs of panels cut short); packing
    /// as it goes gives the packed bits, and the SIMD tiers, which add in
    /// the same order, the same bits as each other.
    #[test]
    fn packed_products_equal_the_plain_ones() {
        for (m, n, k) in [
            (1, 5, 3),
            (2, 17, 9),
            (3, 16, 8),
            (5, 20, 4),
            (7, 33, 20),
            (11, 31, 12),
            (13, 47, 19),
            (22, 48, 17),
            (25, 80, 33),
            (14, 33, 530),
            (13, 35, 1700),
            // Row tiles over several blocks of panels, each over several
            // blocks of steps.
            (26, 680, 1700),
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
            let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            let mut simd_bits = Vec::new();
            for tier in usable_tiers() {
                let packed = F32Tier::capped(tier, || PackedWeights::new(&parts, k));
                for threads in [1, 2, 3] {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .build()
                        .unwrap();
                    let case = format!("({m},{n},{k}), {}, {threads} threads", tier.name());
                    let mut ours = vec![f32::NAN; m * n];
                    pool.install(|| packed.linear(&x, &bias, &mut ours));
                    if tier != F32Tier::Portable {
                        let mut unpacked = vec![f32::NAN; m * n];
                        pool.install(|| {
                            F32Tier::capped(tier, || {
                                linear_unpacked(&parts, k, &x, &bias, &mut unpacked)
                            })
                        });
                        assert_eq!(bits(&unpacked), bits(&ours), "{case}");
                        if simd_bits.is_empty() {
                            simd_bits = bits(&ours);
                        }
                        assert_eq!(bits(&ours), simd_bits, "{case}");
                    }
                    for i in 0..m {
                        for j in 0..n {
                            let want =
                                bias[j] + (0..k).map(|p| x[i * k + p] * w[j * k + p]).sum::<f32>();
                            let got = ours[i * n + j];
                            assert!(
                                (got - want).abs() <= 1e-4 * want.abs().max(1.0),
                                "{case} [{i},{j}] {got} vs {want}"
                            );
                        }
                    }
                }
            }
        }
    }
}
