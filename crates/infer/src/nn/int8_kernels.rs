//! Integer kernels for int8 products. For up to [`QMR`] rows of quantized
//! activations `x` (u8, with a scale `sx` and zero point `zx` per row) and
//! one panel of [`QNR`] weight rows `w` (i8, one scale per block of
//! inputs) a kernel computes, in f32:
//! - `S[r, j]`: block by block, the exact i32 sum `Σ x[r, i] · w[j, i]`
//!   over the block's inputs, converted, times the block's scale `s[b, j]`,
//!   plus the running sum (one fused multiply-add);
//! - `E[r, j]`: for each outlier `(channel c, value v)` of row `r`, in list
//!   order, `w[j, c] · (v · s[block of c, j])` plus the running sum (fused)
//!   (outliers are activations too large to quantize with the rest of
//!   their row, see [`crate::nn::quantized`]);
//! - the output `bias[j] + (sx · (S − zx · C[j]) + E)`, both inner steps
//!   fused, where `C[j]` is the panel's scaled weight sum.
//!
//! Every variant performs the same f32 operations in the same order, so all
//! give identical tiles:
//! - portable: plain Rust;
//! - AVX2: the bytes widened to i16 and multiplied by `vpmaddwd` (u8 · i8
//!   pairs overflow the i16 sums of `vpmaddubsw`), pairs of sums added by
//!   `vphaddd`;
//! - AVX-512 VNNI: `vpdpbusd`, which multiplies u8 by i8 directly.
//!
//! Scales per block cost a conversion and a fused multiply-add per block
//! for every accumulator; the outliers cost a byte extraction per feature.
//!
//! A panel stores its `QNR` weight rows in groups of four inputs: group `g`
//! holds, for each row `j` in turn, `w[j, 4g..4g + 4]` (`4 · QNR` bytes).
//! Its scales are `QNR` f32 per block, block after block.

/// Calls `module::kernel::<R>(rows, first, panel, tile)` on the `count` rows in
/// runs of three (the SIMD kernels' most), the last run shorter.
#[cfg(target_arch = "x86_64")]
macro_rules! in_threes {
    ($module:ident :: $kernel:ident, $rows:expr, $count:expr, $panel:expr, $tile:expr) => {
        for first in (0..$count).step_by(3) {
            match $count - first {
                1 => $module::$kernel::<1>($rows, first, $panel, $tile),
                2 => $module::$kernel::<2>($rows, first, $panel, $tile),
                _ => $module::$kernel::<3>($rows, first, $panel, $tile),
            }
        }
    };
}

/// Weight rows (output features) per panel.
pub const QNR: usize = 64;
/// Activation rows per kernel call.
pub const QMR: usize = 6;

/// Which integer kernel runs the products.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Int8Kernel {
    /// Plain Rust, on any CPU.
    Portable,
    /// x86-64 AVX2 and FMA (`vpmaddwd`).
    Avx2,
    /// x86-64 AVX-512 with VNNI (`vpdpbusd` on 512-bit registers).
    Avx512Vnni,
}

/// An activation kept in f32: its input channel and value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Outlier {
    /// The input feature.
    pub channel: u32,
    /// Its value, unquantized.
    pub value: f32,
}

/// Quantized activation rows as the kernels read them.
pub(crate) struct Rows<'a> {
    /// `count` rows of `k4` values, each row's quantized inputs.
    pub values: &'a [u8],
    /// The same values widened to u16 (for the AVX2 kernel; may be empty
    /// for the others).
    pub wide: &'a [u16],
    /// How many rows, 1..=[`QMR`].
    pub count: usize,
    /// Values per row, a multiple of four.
    pub k4: usize,
    /// `per_row` outliers for each row, row after row.
    pub outliers: &'a [Outlier],
    /// Outliers per row.
    pub per_row: usize,
    /// Each row's scale.
    pub scales: &'a [f32],
    /// Each row's zero point (an integer in 0..=255).
    pub zero_points: &'a [f32],
}

/// One panel of packed weights and their scales.
pub(crate) struct Panel<'a> {
    /// `k4 / 4` groups of `4 · QNR` bytes.
    pub weights: &'a [i8],
    /// `QNR` scales per block.
    pub scales: &'a [f32],
    /// Groups of four inputs per block (the last block may hold fewer).
    pub block4: usize,
    /// `QNR` scaled weight sums `C[j]`.
    pub sums: &'a [f32; QNR],
    /// `QNR` biases.
    pub bias: &'a [f32; QNR],
}

/// What a kernel writes: the outputs, row stride [`QNR`].
pub(crate) type Tile = [f32; QMR * QNR];

impl Int8Kernel {
    /// Every kernel this CPU can run, the portable one first.
    pub fn available() -> Vec<Int8Kernel> {
        let mut kernels = vec![Int8Kernel::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                kernels.push(Int8Kernel::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vnni")
            {
                kernels.push(Int8Kernel::Avx512Vnni);
            }
        }
        kernels
    }

    /// The fastest kernel this CPU can run.
    pub fn best() -> Int8Kernel {
        Int8Kernel::available()
            .pop()
            .unwrap_or(Int8Kernel::Portable)
    }

    /// The kernel's name: `portable`, `avx2` or `avx512-vnni`.
    pub fn name(self) -> &'static str {
        match self {
            Int8Kernel::Portable => "portable",
            Int8Kernel::Avx2 => "avx2",
            Int8Kernel::Avx512Vnni => "avx512-vnni",
        }
    }

    /// Whether the kernel reads [`Rows::wide`].
    pub(crate) fn reads_wide_rows(self) -> bool {
        self == Int8Kernel::Avx2
    }

    /// The outputs of `rows` against `panel`, into `tile`.
    ///
    /// # Panics
    /// If the kernel is not [available](Int8Kernel::available), if the
    /// row count is 0 or above [`QMR`], if an outlier's channel lies past
    /// the rows' values, or if the slices are shorter than the shapes.
    pub(crate) fn tile(self, rows: &Rows<'_>, panel: &Panel<'_>, tile: &mut Tile) {
        let (count, k4) = (rows.count, rows.k4);
        let blocks = (k4 / 4).div_ceil(panel.block4.max(1));
        assert!((1..=QMR).contains(&count) && k4.is_multiple_of(4) && panel.block4 > 0);
        assert!(rows.values.len() >= count * k4 && rows.outliers.len() >= count * rows.per_row);
        assert!(rows.scales.len() >= count && rows.zero_points.len() >= count);
        assert!(panel.weights.len() >= k4 * QNR && panel.scales.len() >= blocks * QNR);
        assert!(
            rows.outliers[..count * rows.per_row]
                .iter()
                .all(|o| (o.channel as usize) < k4)
        );
        match self {
            Int8Kernel::Portable => portable(rows, panel, tile),
            #[cfg(target_arch = "x86_64")]
            Int8Kernel::Avx2 => {
                assert!(
                    std::arch::is_x86_feature_detected!("avx2")
                        && std::arch::is_x86_feature_detected!("fma")
                );
                assert!(rows.wide.len() >= count * k4);
                // SAFETY: AVX2 was detected and the sizes were asserted
                // above; each call passes at most three rows from `first`.
                unsafe { in_threes!(x86::avx2, rows, count, panel, tile) }
            }
            #[cfg(target_arch = "x86_64")]
            Int8Kernel::Avx512Vnni => {
                assert!(
                    std::arch::is_x86_feature_detected!("avx512f")
                        && std::arch::is_x86_feature_detected!("avx512bw")
                        && std::arch::is_x86_feature_detected!("avx512vnni")
                );
                // SAFETY: AVX-512 F/BW/VNNI were detected and the sizes were
                // asserted above; each call passes at most three rows from
                // `first`.
                unsafe { in_threes!(x86::vnni, rows, count, panel, tile) }
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => panic!("the {} kernel needs x86-64", self.name()),
        }
    }
}

/// The portable kernel: one row at a time, the panel's `QNR` sums in local
/// arrays.
fn portable(rows: &Rows<'_>, panel: &Panel<'_>, tile: &mut Tile) {
    let (k4, groups) = (rows.k4, rows.k4 / 4);
    for r in 0..rows.count {
        let x = &rows.values[r * k4..(r + 1) * k4];
        let mut sums = [0.0f32; QNR];
        for (block, first) in (0..groups).step_by(panel.block4).enumerate() {
            let mut acc = [0i32; QNR];
            for g in first..(first + panel.block4).min(groups) {
                let xs: [i32; 4] = std::array::from_fn(|t| i32::from(x[4 * g + t]));
                let weights = &panel.weights[g * 4 * QNR..(g + 1) * 4 * QNR];
                for (acc, ws) in acc.iter_mut().zip(weights.chunks_exact(4)) {
                    *acc += xs[0] * i32::from(ws[0])
                        + xs[1] * i32::from(ws[1])
                        + xs[2] * i32::from(ws[2])
                        + xs[3] * i32::from(ws[3]);
                }
            }
            let scales = &panel.scales[block * QNR..(block + 1) * QNR];
            for ((sum, &acc), &scale) in sums.iter_mut().zip(&acc).zip(scales) {
                *sum = (acc as f32).mul_add(scale, *sum);
            }
        }
        let mut extra = [0.0f32; QNR];
        for outlier in &rows.outliers[r * rows.per_row..(r + 1) * rows.per_row] {
            let c = outlier.channel as usize;
            let block = c / 4 / panel.block4;
            let scales = &panel.scales[block * QNR..(block + 1) * QNR];
            let weights = &panel.weights[c / 4 * 4 * QNR..];
            for (j, (extra, &scale)) in extra.iter_mut().zip(scales).enumerate() {
                let w = f32::from(weights[4 * j + c % 4]);
                *extra = w.mul_add(outlier.value * scale, *extra);
            }
        }
        let (scale, zero) = (rows.scales[r], rows.zero_points[r]);
        for (j, out) in tile[r * QNR..(r + 1) * QNR].iter_mut().enumerate() {
            let centred = (-zero).mul_add(panel.sums[j], sums[j]);
            *out = panel.bias[j] + scale.mul_add(centred, extra[j]);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{Panel, QNR, Rows, Tile};

    /// The four activations `values[at..at + 4]` read as one word `W`
    /// (whose size is four elements').
    ///
    /// # Safety
    /// `at + 4 ≤ values.len()`.
    #[inline(always)]
    unsafe fn four_at<T, W>(values: &[T], at: usize) -> W {
        debug_assert!(size_of::<W>() == 4 * size_of::<T>() && at + 4 <= values.len());
        // SAFETY: the caller keeps the four elements inside `values`.
        unsafe { values.as_ptr().add(at).cast::<W>().read_unaligned() }
    }

    /// The AVX2 kernel for rows `first..first + ROWS`, eight features at a
    /// time.
    ///
    /// # Safety
    /// AVX2 and FMA must be available; the sizes as [`super::Int8Kernel::tile`]
    /// asserts them, `rows.wide` included, and `first + ROWS ≤ rows.count`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn avx2<const ROWS: usize>(
        rows: &Rows<'_>,
        first: usize,
        panel: &Panel<'_>,
        tile: &mut Tile,
    ) {
        let (k4, groups) = (rows.k4, rows.k4 / 4);
        let (w, s) = (panel.weights.as_ptr(), panel.scales.as_ptr());
        for chunk in 0..QNR / 8 {
            let mut sums = [_mm256_setzero_ps(); ROWS];
            for (block, start) in (0..groups).step_by(panel.block4).enumerate() {
                // Lanes 2t and 2t + 1 of `low` (`high`) hold the two halves
                // of feature t's (t + 4's) sum.
                let mut low = [_mm256_setzero_si256(); ROWS];
                let mut high = [_mm256_setzero_si256(); ROWS];
                for g in start..(start + panel.block4).min(groups) {
                    // SAFETY: group g's eight features are 32 bytes inside
                    // the panel (k4 · QNR bytes).
                    let (wl, wh) = unsafe {
                        let at = w.add(g * 4 * QNR + chunk * 32);
                        (
                            _mm256_cvtepi8_epi16(_mm_loadu_si128(at.cast())),
                            _mm256_cvtepi8_epi16(_mm_loadu_si128(at.add(16).cast())),
                        )
                    };
                    for r in 0..ROWS {
                        // SAFETY: row first + r holds k4 wide values; 4g + 4
                        // ≤ k4.
                        let xs = unsafe { four_at::<_, i64>(rows.wide, (first + r) * k4 + 4 * g) };
                        let xs = _mm256_set1_epi64x(xs);
                        low[r] = _mm256_add_epi32(low[r], _mm256_madd_epi16(wl, xs));
                        high[r] = _mm256_add_epi32(high[r], _mm256_madd_epi16(wh, xs));
                    }
                }
                // SAFETY: the block's scales hold QNR f32.
                let scale = unsafe { _mm256_loadu_ps(s.add(block * QNR + chunk * 8)) };
                for r in 0..ROWS {
                    // [f0 f1 f4 f5 | f2 f3 f6 f7], reordered to f0..f7.
                    let pairs = _mm256_hadd_epi32(low[r], high[r]);
                    let acc = _mm256_permute4x64_epi64::<0b11_01_10_00>(pairs);
                    sums[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), scale, sums[r]);
                }
            }
            // SAFETY: eight f32 lie at 8 · chunk in the panel's arrays.
            let (bias, weight_sums) = unsafe {
                (
                    _mm256_loadu_ps(panel.bias.as_ptr().add(chunk * 8)),
                    _mm256_loadu_ps(panel.sums.as_ptr().add(chunk * 8)),
                )
            };
            for (r, sums) in sums.iter().enumerate() {
                let at = (first + r) * QNR + chunk * 8;
                let zero = _mm256_set1_ps(rows.zero_points[first + r]);
                let scale = _mm256_set1_ps(rows.scales[first + r]);
                // SAFETY: the caller's guarantees are `outliers`'; eight f32
                // at `at` lie inside the tile.
                unsafe {
                    let extra = outliers(rows, first + r, panel, chunk);
                    let centred = _mm256_fnmadd_ps(zero, weight_sums, *sums);
                    let value = _mm256_fmadd_ps(scale, centred, extra);
                    _mm256_storeu_ps(tile.as_mut_ptr().add(at), _mm256_add_ps(bias, value));
                }
            }
        }
    }

    /// Features `8 · chunk..8 · chunk + 8` of row `r`'s outlier products.
    ///
    /// # Safety
    /// AVX2 and FMA must be available; the sizes as [`super::Int8Kernel::tile`]
    /// asserts them.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn outliers(rows: &Rows<'_>, r: usize, panel: &Panel<'_>, chunk: usize) -> __m256 {
        let mut extra = _mm256_setzero_ps();
        for outlier in &rows.outliers[r * rows.per_row..(r + 1) * rows.per_row] {
            let c = outlier.channel as usize;
            let block = c / 4 / panel.block4;
            // SAFETY: c < k4 (asserted), so group c / 4 lies inside the
            // panel, and its block's scales exist.
            let (words, scale) = unsafe {
                (
                    _mm256_loadu_si256(
                        panel
                            .weights
                            .as_ptr()
                            .add(c / 4 * 4 * QNR + chunk * 32)
                            .cast(),
                    ),
                    _mm256_loadu_ps(panel.scales.as_ptr().add(block * QNR + chunk * 8)),
                )
            };
            // Byte c % 4 of each feature's four, sign-extended.
            let shift = _mm256_set1_epi32(24 - 8 * (c % 4) as i32);
            let w = _mm256_srai_epi32::<24>(_mm256_sllv_epi32(words, shift));
            let scaled = _mm256_mul_ps(_mm256_set1_ps(outlier.value), scale);
            extra = _mm256_fmadd_ps(_mm256_cvtepi32_ps(w), scaled, extra);
        }
        extra
    }

    /// The AVX-512 VNNI kernel: all `QNR` features of rows `first..first +
    /// ROWS` at once. Three rows at most: their block sums and running sums
    /// take 24 of the 32 registers.
    ///
    /// # Safety
    /// AVX-512 F, BW and VNNI must be available; `first + ROWS ≤
    /// rows.count`; other sizes as [`super::Int8Kernel::tile`] asserts.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn vnni<const ROWS: usize>(
        rows: &Rows<'_>,
        first: usize,
        panel: &Panel<'_>,
        tile: &mut Tile,
    ) {
        const LANES: usize = QNR / 16;
        let (k4, groups) = (rows.k4, rows.k4 / 4);
        let (w, s) = (panel.weights.as_ptr(), panel.scales.as_ptr());
        let mut sums = [[_mm512_setzero_ps(); LANES]; ROWS];
        for (block, start) in (0..groups).step_by(panel.block4).enumerate() {
            let mut acc = [[_mm512_setzero_si512(); LANES]; ROWS];
            for g in start..(start + panel.block4).min(groups) {
                // SAFETY: group g is 4·QNR bytes inside the panel.
                let ws: [__m512i; LANES] = std::array::from_fn(|l| unsafe {
                    _mm512_loadu_si512(w.add(g * 4 * QNR + l * 64).cast())
                });
                for (r, acc) in acc.iter_mut().enumerate() {
                    // SAFETY: row first + r holds k4 values and 4g + 4 ≤ k4.
                    let xs = unsafe { four_at::<_, i32>(rows.values, (first + r) * k4 + 4 * g) };
                    let xs = _mm512_set1_epi32(xs);
                    for (acc, ws) in acc.iter_mut().zip(&ws) {
                        *acc = _mm512_dpbusd_epi32(*acc, xs, *ws);
                    }
                }
            }
            // SAFETY: the block's scales hold QNR f32.
            let scale: [__m512; LANES] =
                std::array::from_fn(|l| unsafe { _mm512_loadu_ps(s.add(block * QNR + l * 16)) });
            for (sums, acc) in sums.iter_mut().zip(&acc) {
                for l in 0..LANES {
                    sums[l] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[l]), scale[l], sums[l]);
                }
            }
        }
        for (r, sums) in (first..).zip(&sums) {
            let mut extra = [_mm512_setzero_ps(); LANES];
            for outlier in &rows.outliers[r * rows.per_row..(r + 1) * rows.per_row] {
                let c = outlier.channel as usize;
                let block = c / 4 / panel.block4;
                let shift = _mm512_set1_epi32(24 - 8 * (c % 4) as i32);
                let value = _mm512_set1_ps(outlier.value);
                for (l, extra) in extra.iter_mut().enumerate() {
                    // SAFETY: c < k4 (asserted), so group c / 4 lies inside
                    // the panel, and its block's scales exist.
                    let (words, scale) = unsafe {
                        (
                            _mm512_loadu_si512(w.add(c / 4 * 4 * QNR + l * 64).cast()),
                            _mm512_loadu_ps(s.add(block * QNR + l * 16)),
                        )
                    };
                    // Byte c % 4 of each feature's four, sign-extended.
                    let w = _mm512_srai_epi32::<24>(_mm512_sllv_epi32(words, shift));
                    let scaled = _mm512_mul_ps(value, scale);
                    *extra = _mm512_fmadd_ps(_mm512_cvtepi32_ps(w), scaled, *extra);
                }
            }
            let zero = _mm512_set1_ps(rows.zero_points[r]);
            let scale = _mm512_set1_ps(rows.scales[r]);
            for l in 0..LANES {
                let at = r * QNR + l * 16;
                // SAFETY: sixteen f32 lie at 16 · l in the panel's arrays and
                // at `at` inside the tile.
                unsafe {
                    let bias = _mm512_loadu_ps(panel.bias.as_ptr().add(l * 16));
                    let weight_sums = _mm512_loadu_ps(panel.sums.as_ptr().add(l * 16));
                    let centred = _mm512_fnmadd_ps(zero, weight_sums, sums[l]);
                    let value = _mm512_fmadd_ps(scale, centred, extra[l]);
                    _mm512_storeu_ps(tile.as_mut_ptr().add(at), _mm512_add_ps(bias, value));
                }
            }
        }
    }
}
