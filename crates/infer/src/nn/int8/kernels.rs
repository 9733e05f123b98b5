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
//!   their row, see [`super::quantize`]);
//! - the output `bias[j] + (sx · (S − zx · C[j]) + E)`, both inner steps
//!   fused, where `C[j]` is the panel's scaled weight sum.
//!
//! Every variant performs the same f32 operations in the same order, so all
//! give identical tiles:
//! - portable: plain Rust;
//! - AVX2: the bytes widened to i16 and multiplied by `vpmaddwd`, which
//!   adds the products of two inputs into an i32 (see below for why not
//!   `vpmaddubsw`);
//! - AVX-VNNI: `vpdpbusd` on 256-bit registers, which multiplies u8 by i8
//!   and adds four products into an i32 directly;
//! - AVX-512 VNNI: `vpdpbusd` on 512-bit registers.
//!
//! `vpmaddubsw` multiplies u8 by i8 too, but adds each pair of products
//! into an i16 with saturation: two products of 255 · 127 reach 64,770,
//! past i16's 32,767, so it is exact only with activations held to 0..=127
//! (or weights to −64..=64). Activations quantized to 7 bits lower the
//! smallest cosine to f32 over the golden and generated texts from 0.99916
//! to 0.99851, below the 0.999 this engine keeps; the 8-bit weights come
//! from the file. Splitting the activations (high and low bits, each
//! product pair then small enough to sum in i16) takes two `vpmaddubsw` per
//! 32 products, and the single one with its widening `vpmaddwd` already
//! takes two multiplies: the same multiplier work as two `vpmaddwd` on
//! widened bytes, which are exact (255 · 127 · 2 fits an i32 with room to
//! spare). So the AVX2 kernel widens.
//!
//! Scales per block cost a conversion and a fused multiply-add per block
//! for every accumulator; the outliers cost a byte extraction per feature.
//!
//! A panel stores its `QNR` weight rows in groups of four inputs: group `g`
//! holds, for each row `j` in turn, `w[j, 4g..4g + 4]` (`4 · QNR` bytes),
//! the layout `vpdpbusd` reads. The AVX2 kernel reads the same weights in
//! pairs of inputs, eight rows at a time (a strip): pair `p` of strip `c`
//! holds, for each of its rows `j`, `w[8c + j, 2p..2p + 2]` (16 bytes at
//! `(c · k4 / 2 + p) · 16`), so one `vpmaddwd` of a pair gives eight whole
//! sums without a horizontal add, and a strip is read from end to end.
//! Its scales are `QNR` f32 per block, block after block.

/// Calls `module::kernel::<R>(rows, first, panel, tile)` on the `count` rows in
/// runs of the largest of `sizes` (the kernel's most rows), the last run
/// shorter.
#[cfg(target_arch = "x86_64")]
macro_rules! in_runs {
    ($module:ident :: $kernel:ident, [$($size:literal),+], $rows:expr, $count:expr, $panel:expr, $tile:expr) => {{
        const MOST: usize = [$($size),+][[$($size),+].len() - 1];
        let mut first = 0;
        while first < $count {
            let run = ($count - first).min(MOST);
            match run {
                $($size => $module::$kernel::<$size>($rows, first, $panel, $tile),)+
                _ => unreachable!("runs of 1..={MOST} rows"),
            }
            first += run;
        }
    }};
}

/// Weight rows (output features) per panel.
pub const QNR: usize = 64;
/// Activation rows per kernel call.
pub const QMR: usize = 6;

/// Which integer kernel runs the int8 products: the int8 tiers. The
/// process uses one, [chosen](crate::Kernels) once (by default the fastest
/// this CPU runs); a model can be given another
/// ([`Bert::set_int8_kernel`](crate::bert::Bert::set_int8_kernel)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Int8Kernel {
    /// Plain Rust, on any CPU.
    Portable,
    /// x86-64 AVX2 and FMA (`vpmaddwd`).
    Avx2,
    /// x86-64 AVX-VNNI with AVX2 and FMA (`vpdpbusd` on 256-bit registers).
    AvxVnni,
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
    /// The same weights in strips of eight rows, each `k4 / 2` pairs of 16
    /// bytes (for the AVX2 kernel; may be empty for the others).
    pub pairs: &'a [i8],
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
    /// Every kernel, slowest first.
    pub const ALL: [Int8Kernel; 4] = [
        Int8Kernel::Portable,
        Int8Kernel::Avx2,
        Int8Kernel::AvxVnni,
        Int8Kernel::Avx512Vnni,
    ];

    /// Whether this CPU can run the kernel.
    pub fn is_available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let avx2 = has!("avx2") && has!("fma");
            match self {
                Int8Kernel::Portable => true,
                Int8Kernel::Avx2 => avx2,
                Int8Kernel::AvxVnni => avx2 && has!("avxvnni"),
                Int8Kernel::Avx512Vnni => has!("avx512f") && has!("avx512bw") && has!("avx512vnni"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Int8Kernel::Portable
        }
    }

    /// Every kernel this CPU can run, the portable one first, the fastest
    /// last.
    pub fn available() -> Vec<Int8Kernel> {
        Int8Kernel::ALL
            .into_iter()
            .filter(|k| k.is_available())
            .collect()
    }

    /// The fastest kernel this CPU can run.
    pub fn best() -> Int8Kernel {
        Int8Kernel::available()
            .pop()
            .unwrap_or(Int8Kernel::Portable)
    }

    /// The kernel named `name` (see [`Int8Kernel::name`]).
    pub fn from_name(name: &str) -> Option<Int8Kernel> {
        Int8Kernel::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The kernel's name: `portable`, `avx2`, `avx-vnni` or `avx512-vnni`.
    pub fn name(self) -> &'static str {
        match self {
            Int8Kernel::Portable => "portable",
            Int8Kernel::Avx2 => "avx2",
            Int8Kernel::AvxVnni => "avx-vnni",
            Int8Kernel::Avx512Vnni => "avx512-vnni",
        }
    }

    /// Whether the kernel reads [`Rows::wide`] and [`Panel::pairs`].
    pub(crate) fn reads_pairs(self) -> bool {
        matches!(self, Int8Kernel::Avx2 | Int8Kernel::AvxVnni)
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
                assert!(self.is_available());
                assert!(rows.wide.len() >= count * k4 && panel.pairs.len() >= k4 * QNR);
                // SAFETY: AVX2 was detected and the sizes were asserted
                // above; each call passes at most six rows from `first`.
                unsafe { in_runs!(x86::avx2, [1, 2, 3, 4, 5, 6], rows, count, panel, tile) }
            }
            #[cfg(target_arch = "x86_64")]
            Int8Kernel::AvxVnni => {
                assert!(self.is_available());
                // SAFETY: AVX-VNNI, AVX2 and FMA were detected and the sizes
                // were asserted above; each call passes at most six rows
                // from `first`.
                unsafe { in_runs!(x86::avx_vnni, [1, 2, 3, 4, 5, 6], rows, count, panel, tile) }
            }
            #[cfg(target_arch = "x86_64")]
            Int8Kernel::Avx512Vnni => {
                assert!(self.is_available());
                // SAFETY: AVX-512 F/BW/VNNI were detected and the sizes were
                // asserted above; each call passes at most three rows from
                // `first`.
                unsafe { in_runs!(x86::vnni, [1, 2, 3], rows, count, panel, tile) }
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => panic!("the {} kernel needs x86-64", self.name()),
        }
    }
}

impl std::str::FromStr for Int8Kernel {
    type Err = crate::Error;

    /// The kernel named `name`; [`Error::UnknownTier`](crate::Error::UnknownTier)
    /// if none is.
    fn from_str(name: &str) -> crate::Result<Int8Kernel> {
        Int8Kernel::from_name(name).ok_or_else(|| crate::Error::UnknownTier {
            name: name.to_string(),
            known: "portable, avx2, avx-vnni or avx512-vnni",
        })
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

    /// The elements `values[at..]` that fill one word `W`, read as that
    /// word (four u8 as an i32, two u16 as an i32...).
    ///
    /// # Safety
    /// The word's elements lie inside `values`.
    #[inline(always)]
    unsafe fn word_at<T, W>(values: &[T], at: usize) -> W {
        debug_assert!(at + size_of::<W>() / size_of::<T>() <= values.len());
        // SAFETY: the caller keeps the word inside `values`.
        unsafe { values.as_ptr().add(at).cast::<W>().read_unaligned() }
    }

    /// The AVX2 kernel for rows `first..first + ROWS` (six at most: their
    /// block sums and running sums take 12 of the 16 registers), eight
    /// features at a time, reading the panel's pairs.
    ///
    /// # Safety
    /// AVX2 and FMA must be available; the sizes as [`super::Int8Kernel::tile`]
    /// asserts them, `rows.wide` and `panel.pairs` included, and
    /// `first + ROWS ≤ rows.count`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn avx2<const ROWS: usize>(
        rows: &Rows<'_>,
        first: usize,
        panel: &Panel<'_>,
        tile: &mut Tile,
    ) {
        let (k4, pairs, block2) = (rows.k4, rows.k4 / 2, 2 * panel.block4);
        let (w, s) = (panel.pairs.as_ptr(), panel.scales.as_ptr());
        for chunk in 0..QNR / 8 {
            let mut sums = [_mm256_setzero_ps(); ROWS];
            for (block, start) in (0..pairs).step_by(block2).enumerate() {
                let mut acc = [_mm256_setzero_si256(); ROWS];
                for p in start..(start + block2).min(pairs) {
                    // SAFETY: pair p of the strip is 16 bytes inside the
                    // panel (k4 · QNR bytes).
                    let ws = unsafe {
                        _mm256_cvtepi8_epi16(_mm_loadu_si128(
                            w.add((chunk * pairs + p) * 16).cast(),
                        ))
                    };
                    for (r, acc) in acc.iter_mut().enumerate() {
                        // SAFETY: row first + r holds k4 wide values; 2p + 2
                        // ≤ k4.
                        let xs = unsafe { word_at::<_, i32>(rows.wide, (first + r) * k4 + 2 * p) };
                        *acc = _mm256_add_epi32(*acc, _mm256_madd_epi16(ws, _mm256_set1_epi32(xs)));
                    }
                }
                // SAFETY: the block's scales hold QNR f32.
                let scale = unsafe { _mm256_loadu_ps(s.add(block * QNR + chunk * 8)) };
                for (sum, acc) in sums.iter_mut().zip(&acc) {
                    *sum = _mm256_fmadd_ps(_mm256_cvtepi32_ps(*acc), scale, *sum);
                }
            }
            for (r, sums) in sums.iter().enumerate() {
                // SAFETY: as `finish` requires.
                unsafe {
                    let extra = outliers::<true>(rows, first + r, panel, chunk);
                    finish(rows, first + r, panel, chunk, *sums, extra, tile);
                }
            }
        }
    }

    /// The AVX-VNNI kernel for rows `first..first + ROWS` (six at most),
    /// sixteen features at a time: twelve independent `vpdpbusd` chains,
    /// enough to cover its latency.
    ///
    /// # Safety
    /// AVX-VNNI, AVX2 and FMA must be available; the sizes as
    /// [`super::Int8Kernel::tile`] asserts them, and `first + ROWS ≤
    /// rows.count`.
    #[target_feature(enable = "avx2,fma,avxvnni")]
    pub(super) unsafe fn avx_vnni<const ROWS: usize>(
        rows: &Rows<'_>,
        first: usize,
        panel: &Panel<'_>,
        tile: &mut Tile,
    ) {
        const CHUNKS: usize = 2;
        let (k4, groups) = (rows.k4, rows.k4 / 4);
        let (w, s) = (panel.weights.as_ptr(), panel.scales.as_ptr());
        for pass in 0..QNR / (8 * CHUNKS) {
            let mut sums = [[_mm256_setzero_ps(); CHUNKS]; ROWS];
            for (block, start) in (0..groups).step_by(panel.block4).enumerate() {
                let mut acc = [[_mm256_setzero_si256(); CHUNKS]; ROWS];
                for g in start..(start + panel.block4).min(groups) {
                    // SAFETY: group g's features of this pass are 32 bytes
                    // per chunk inside the panel.
                    let ws: [__m256i; CHUNKS] = std::array::from_fn(|c| unsafe {
                        _mm256_loadu_si256(w.add(g * 4 * QNR + (pass * CHUNKS + c) * 32).cast())
                    });
                    for (r, acc) in acc.iter_mut().enumerate() {
                        // SAFETY: row first + r holds k4 values and 4g + 4 ≤ k4.
                        let xs =
                            unsafe { word_at::<_, i32>(rows.values, (first + r) * k4 + 4 * g) };
                        let xs = _mm256_set1_epi32(xs);
                        for (acc, ws) in acc.iter_mut().zip(&ws) {
                            *acc = _mm256_dpbusd_avx_epi32(*acc, xs, *ws);
                        }
                    }
                }
                for c in 0..CHUNKS {
                    // SAFETY: the block's scales hold QNR f32.
                    let scale =
                        unsafe { _mm256_loadu_ps(s.add(block * QNR + (pass * CHUNKS + c) * 8)) };
                    for (sums, acc) in sums.iter_mut().zip(&acc) {
                        sums[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[c]), scale, sums[c]);
                    }
                }
            }
            for (r, sums) in sums.iter().enumerate() {
                for (c, sums) in sums.iter().enumerate() {
                    let chunk = pass * CHUNKS + c;
                    // SAFETY: as `finish` requires.
                    unsafe {
                        let extra = outliers::<false>(rows, first + r, panel, chunk);
                        finish(rows, first + r, panel, chunk, *sums, extra, tile);
                    }
                }
            }
        }
    }

    /// Writes features `8 · chunk..8 · chunk + 8` of row `r` into the tile:
    /// `bias + (sx · (sums − zx · C) + extra)`.
    ///
    /// # Safety
    /// AVX2 and FMA must be available; `r < rows.count ≤ QMR`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn finish(
        rows: &Rows<'_>,
        r: usize,
        panel: &Panel<'_>,
        chunk: usize,
        sums: __m256,
        extra: __m256,
        tile: &mut Tile,
    ) {
        let at = r * QNR + chunk * 8;
        let zero = _mm256_set1_ps(rows.zero_points[r]);
        let scale = _mm256_set1_ps(rows.scales[r]);
        // SAFETY: eight f32 lie at 8 · chunk in the panel's arrays and at
        // `at` inside the tile.
        unsafe {
            let bias = _mm256_loadu_ps(panel.bias.as_ptr().add(chunk * 8));
            let weight_sums = _mm256_loadu_ps(panel.sums.as_ptr().add(chunk * 8));
            let centred = _mm256_fnmadd_ps(zero, weight_sums, sums);
            let value = _mm256_fmadd_ps(scale, centred, extra);
            _mm256_storeu_ps(tile.as_mut_ptr().add(at), _mm256_add_ps(bias, value));
        }
    }

    /// Features `8 · chunk..8 · chunk + 8` of row `r`'s outlier products,
    /// the weights read from the panel's pairs (`PAIRS`) or its groups of
    /// four.
    ///
    /// # Safety
    /// AVX2 and FMA must be available; the sizes as [`super::Int8Kernel::tile`]
    /// asserts them, and with `PAIRS`, `panel.pairs` holds `k4 · QNR` bytes.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn outliers<const PAIRS: bool>(
        rows: &Rows<'_>,
        r: usize,
        panel: &Panel<'_>,
        chunk: usize,
    ) -> __m256 {
        let mut extra = _mm256_setzero_ps();
        for outlier in &rows.outliers[r * rows.per_row..(r + 1) * rows.per_row] {
            let c = outlier.channel as usize;
            let block = c / 4 / panel.block4;
            // SAFETY: c < k4 (asserted), so its group of four and its pair
            // lie inside the panel, and its block's scales exist.
            let (w, scale) = unsafe {
                let w = if PAIRS {
                    let at = panel.pairs.as_ptr().add((chunk * rows.k4 / 2 + c / 2) * 16);
                    let words = _mm256_cvtepi8_epi16(_mm_loadu_si128(at.cast()));
                    // Half c % 2 of each feature's pair, sign-extended.
                    let shift = _mm_cvtsi32_si128(16 - 16 * (c % 2) as i32);
                    _mm256_srai_epi32::<16>(_mm256_sll_epi32(words, shift))
                } else {
                    let at = panel.weights.as_ptr().add(c / 4 * 4 * QNR + chunk * 32);
                    let words = _mm256_loadu_si256(at.cast());
                    // Byte c % 4 of each feature's four, sign-extended.
                    let shift = _mm256_set1_epi32(24 - 8 * (c % 4) as i32);
                    _mm256_srai_epi32::<24>(_mm256_sllv_epi32(words, shift))
                };
                let scale = _mm256_loadu_ps(panel.scales.as_ptr().add(block * QNR + chunk * 8));
                (w, scale)
            };
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
                    let xs = unsafe { word_at::<_, i32>(rows.values, (first + r) * k4 + 4 * g) };
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

#[cfg(test)]
mod tests {
    use super::Int8Kernel;

    #[test]
    fn kernels_are_found_by_their_names() {
        for kernel in Int8Kernel::ALL {
            assert_eq!(Int8Kernel::from_name(kernel.name()), Some(kernel));
        }
        assert_eq!(Int8Kernel::from_name("avx512"), None);
        assert_eq!(Int8Kernel::from_name(""), None);
        let available = Int8Kernel::available();
        assert_eq!(available[0], Int8Kernel::Portable);
        assert_eq!(Int8Kernel::best(), *available.last().unwrap());
        assert!(available.iter().all(|k| k.is_available()));
    }
}
