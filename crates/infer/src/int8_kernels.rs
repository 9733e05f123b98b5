//! Integer kernels for int8 products: `tile[r, j] = Σ_i x[r, i] · w[j, i]`
//! over a panel of [`QNR`] weight rows, exact in i32, for up to [`QMR`]
//! rows of quantized activations.
//!
//! A panel stores its `QNR` weight rows in groups of four columns: group
//! `g` holds, for each row `j` in turn, `w[j, 4g..4g + 4]` (`4 · QNR`
//! bytes). Activations and weights lie in −127..=127, so every variant
//! computes the same sums:
//! - portable: plain i32 arithmetic;
//! - AVX2: `vpmaddubsw` on |x| and w·sign(x) (no pair of products can
//!   saturate an i16 at these magnitudes), then `vpmaddwd` with ones;
//! - AVX-512 VNNI: `vpdpbusd` on x + 128 (as u8) and w, then subtracting
//!   128 · Σ_i w[j, i], kept per panel row.

/// Weight rows (output features) per panel.
pub const QNR: usize = 64;
/// Activation rows per kernel call.
pub const QMR: usize = 6;

/// Which integer kernel runs the products.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Int8Kernel {
    /// Plain Rust, on any CPU.
    Portable,
    /// x86-64 AVX2 (`vpmaddubsw`, `vpmaddwd`).
    Avx2,
    /// x86-64 AVX-512 with VNNI (`vpdpbusd` on 512-bit registers).
    Avx512Vnni,
}

impl Int8Kernel {
    /// Every kernel this CPU can run, the portable one first.
    pub fn available() -> Vec<Int8Kernel> {
        let mut kernels = vec![Int8Kernel::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
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

    /// The products of `rows` rows of `x` (each `k4` values, a multiple of
    /// four) with one panel of `QNR` weight rows, into `tile` (row stride
    /// `QNR`).
    ///
    /// # Panics
    /// If the kernel is not [available](Int8Kernel::available), if `rows`
    /// is 0 or above [`QMR`], or if the slices are shorter than the shapes.
    pub(crate) fn tile(
        self,
        x: &[i8],
        rows: usize,
        k4: usize,
        panel: &[i8],
        column_sums: &[i32],
        tile: &mut [i32; QMR * QNR],
    ) {
        assert!((1..=QMR).contains(&rows) && k4.is_multiple_of(4));
        assert!(x.len() >= rows * k4 && panel.len() >= k4 * QNR && column_sums.len() >= QNR);
        match self {
            Int8Kernel::Portable => portable(x, rows, k4, panel, tile),
            #[cfg(target_arch = "x86_64")]
            Int8Kernel::Avx2 => {
                assert!(std::arch::is_x86_feature_detected!("avx2"));
                // SAFETY: AVX2 was detected; the sizes were asserted above,
                // and each arm passes the rows `x` holds.
                unsafe {
                    match rows {
                        1 => x86::avx2::<1>(x, k4, panel, tile),
                        2 => x86::avx2::<2>(x, k4, panel, tile),
                        3 => x86::avx2::<3>(x, k4, panel, tile),
                        4 => x86::avx2::<4>(x, k4, panel, tile),
                        5 => x86::avx2::<5>(x, k4, panel, tile),
                        _ => x86::avx2::<QMR>(x, k4, panel, tile),
                    }
                }
            }
            #[cfg(target_arch = "x86_64")]
            Int8Kernel::Avx512Vnni => {
                assert!(
                    std::arch::is_x86_feature_detected!("avx512f")
                        && std::arch::is_x86_feature_detected!("avx512bw")
                        && std::arch::is_x86_feature_detected!("avx512vnni")
                );
                // SAFETY: AVX-512 F/BW/VNNI were detected; the sizes were
                // asserted above, and each arm passes the rows `x` holds.
                unsafe {
                    match rows {
                        1 => x86::vnni::<1>(x, k4, panel, column_sums, tile),
                        2 => x86::vnni::<2>(x, k4, panel, column_sums, tile),
                        3 => x86::vnni::<3>(x, k4, panel, column_sums, tile),
                        4 => x86::vnni::<4>(x, k4, panel, column_sums, tile),
                        5 => x86::vnni::<5>(x, k4, panel, column_sums, tile),
                        _ => x86::vnni::<QMR>(x, k4, panel, column_sums, tile),
                    }
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => panic!("the {} kernel needs x86-64", self.name()),
        }
    }
}

/// The portable kernel: one row at a time, the panel's `QNR` sums in a
/// local array.
fn portable(x: &[i8], rows: usize, k4: usize, panel: &[i8], tile: &mut [i32; QMR * QNR]) {
    for r in 0..rows {
        let mut acc = [0i32; QNR];
        for (xs, group) in x[r * k4..(r + 1) * k4]
            .chunks_exact(4)
            .zip(panel.chunks_exact(4 * QNR))
        {
            let xs: [i32; 4] = std::array::from_fn(|t| i32::from(xs[t]));
            for (acc, ws) in acc.iter_mut().zip(group.chunks_exact(4)) {
                *acc += xs[0] * i32::from(ws[0])
                    + xs[1] * i32::from(ws[1])
                    + xs[2] * i32::from(ws[2])
                    + xs[3] * i32::from(ws[3]);
            }
        }
        tile[r * QNR..(r + 1) * QNR].copy_from_slice(&acc);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{QMR, QNR};

    /// Four activation bytes of row `r` at group `g`, as one i32.
    ///
    /// # Safety
    /// `x` must hold at least `(r + 1) · k4` bytes and `g < k4 / 4`.
    #[inline(always)]
    unsafe fn four(x: &[i8], r: usize, k4: usize, g: usize) -> i32 {
        // SAFETY: the caller keeps r·k4 + 4g + 4 ≤ x.len().
        unsafe {
            x.as_ptr()
                .add(r * k4 + 4 * g)
                .cast::<i32>()
                .read_unaligned()
        }
    }

    /// The AVX2 kernel: eight features at a time, for `ROWS` rows.
    ///
    /// # Safety
    /// AVX2 must be available; `x` holds `ROWS` rows; other sizes as
    /// [`super::Int8Kernel::tile`] asserts.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2<const ROWS: usize>(
        x: &[i8],
        k4: usize,
        panel: &[i8],
        tile: &mut [i32; QMR * QNR],
    ) {
        let ones = _mm256_set1_epi16(1);
        for chunk in 0..QNR / 8 {
            let mut acc = [_mm256_setzero_si256(); ROWS];
            for g in 0..k4 / 4 {
                // SAFETY: group g's chunk of eight features is 32 bytes
                // inside the panel (k4 · QNR bytes, asserted by the caller).
                let w = unsafe {
                    _mm256_loadu_si256(panel.as_ptr().add(g * 4 * QNR + chunk * 32).cast())
                };
                for (r, acc) in acc.iter_mut().enumerate() {
                    // SAFETY: r < ROWS and g < k4 / 4.
                    let xs = _mm256_set1_epi32(unsafe { four(x, r, k4, g) });
                    let pairs =
                        _mm256_maddubs_epi16(_mm256_sign_epi8(xs, xs), _mm256_sign_epi8(w, xs));
                    *acc = _mm256_add_epi32(*acc, _mm256_madd_epi16(pairs, ones));
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                // SAFETY: eight i32 at r·QNR + 8·chunk lie inside the tile.
                unsafe {
                    _mm256_storeu_si256(tile.as_mut_ptr().add(r * QNR + chunk * 8).cast(), *acc)
                };
            }
        }
    }

    /// The AVX-512 VNNI kernel: all `QNR` features of `ROWS` rows at once.
    ///
    /// # Safety
    /// AVX-512 F, BW and VNNI must be available; `x` holds `ROWS` rows;
    /// other sizes as [`super::Int8Kernel::tile`] asserts.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn vnni<const ROWS: usize>(
        x: &[i8],
        k4: usize,
        panel: &[i8],
        column_sums: &[i32],
        tile: &mut [i32; QMR * QNR],
    ) {
        const LANES: usize = QNR / 16;
        let offset = _mm512_set1_epi8(-128);
        let mut acc = [[_mm512_setzero_si512(); LANES]; ROWS];
        for g in 0..k4 / 4 {
            // SAFETY: group g is 4·QNR bytes inside the panel.
            let w: [__m512i; LANES] = std::array::from_fn(|l| unsafe {
                _mm512_loadu_si512(panel.as_ptr().add(g * 4 * QNR + l * 64).cast())
            });
            for (r, acc) in acc.iter_mut().enumerate() {
                // SAFETY: r < ROWS and g < k4 / 4. XOR with 0x80 maps the
                // i8 x to the u8 x + 128.
                let xs = _mm512_xor_si512(_mm512_set1_epi32(unsafe { four(x, r, k4, g) }), offset);
                for (acc, w) in acc.iter_mut().zip(&w) {
                    *acc = _mm512_dpbusd_epi32(*acc, xs, *w);
                }
            }
        }
        // SAFETY: column_sums holds QNR i32 (asserted by the caller).
        let sums: [__m512i; LANES] = std::array::from_fn(|l| unsafe {
            _mm512_slli_epi32::<7>(_mm512_loadu_si512(column_sums.as_ptr().add(16 * l).cast()))
        });
        for (r, acc) in acc.iter().enumerate() {
            for (l, (acc, sums)) in acc.iter().zip(&sums).enumerate() {
                // SAFETY: sixteen i32 at r·QNR + 16·l lie inside the tile.
                unsafe {
                    _mm512_storeu_si512(
                        tile.as_mut_ptr().add(r * QNR + l * 16).cast(),
                        _mm512_sub_epi32(*acc, *sums),
                    )
                };
            }
        }
    }
}
