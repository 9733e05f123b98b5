//! Rate of the packed f32 product on a vision transformer's products, for
//! scripts/bench/kernel.py (which times torch's `linear` on the same shapes
//! in the same run):
//!
//! ```text
//! kernel_bench TIER ROWS WIDTH...          # TIER: avx512 or avx2
//! kernel_bench --int8 KERNEL ROWS WIDTH...  # KERNEL: avx512-vnni, avx-vnni, avx2
//! ```
//!
//! For each model width `d` it times the four products of a ViT block over
//! `ROWS` rows (tokens × images): `d → 3d` (query, key, value), `d → d`
//! (attention output), `d → 4d` and `4d → d` (MLP). Next to each rate it
//! prints the share of the peak: what this core's fused multiply-adds (or,
//! with `--int8` and a VNNI kernel, its `vpdpbusd`s, each 4 multiply-adds
//! per lane) reach on independent register chains of the tier's width,
//! measured in the same run (so a turbo clock or a noisy neighbour moves
//! both). With `--int8` the weights are quantized as the vision models'
//! are (a scale per 32 inputs) and the rates count an int8 multiply-add as
//! two operations. One thread; weights packed before timing; best of five
//! timings of at least 0.2 s each. Prints one JSON object.

use std::time::Instant;

use modelbin_infer::{
    F32Tier, Int8Kernel, Kernels, PackedWeights, QuantizedWeights, quantize_weight_blocks,
};

/// Floating-point operations per second of `work` (which does `flops`),
/// best of five timings of at least 0.2 s each.
fn rate(flops: f64, mut work: impl FnMut()) -> f64 {
    work();
    let started = Instant::now();
    let mut calls = 0u32;
    while started.elapsed().as_secs_f64() < 0.05 {
        work();
        calls += 1;
    }
    let per_timing = ((0.2 / started.elapsed().as_secs_f64()) * calls as f64).ceil() as u32;
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let started = Instant::now();
        for _ in 0..per_timing.max(1) {
            work();
        }
        best = best.min(started.elapsed().as_secs_f64() / per_timing.max(1) as f64);
    }
    flops / best
}

/// Fused multiply-adds on independent register chains, with no memory
/// access: a 4-cycle latency on 2 units needs 8 chains, and a few more
/// hide scheduling noise, as long as they and the two operands stay in
/// registers.
#[cfg(target_arch = "x86_64")]
mod peak {
    use std::arch::x86_64::*;

    /// Chains of 16-float registers (of 32).
    pub const AVX512_CHAINS: usize = 16;
    /// Chains of 8-float registers (of 16).
    pub const AVX2_CHAINS: usize = 10;

    /// `steps` multiply-adds on each of [`AVX512_CHAINS`] registers.
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn avx512(steps: usize) -> f32 {
        let mut acc = [_mm512_set1_ps(1.0); AVX512_CHAINS];
        let (a, b) = (_mm512_set1_ps(0.999_999), _mm512_set1_ps(1e-7));
        for _ in 0..steps {
            for acc in &mut acc {
                *acc = _mm512_fmadd_ps(*acc, a, b);
            }
        }
        acc.iter().map(|&v| _mm512_reduce_add_ps(v)).sum()
    }

    /// `steps` multiply-adds on each of [`AVX2_CHAINS`] registers.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn avx2(steps: usize) -> f32 {
        let mut acc = [_mm256_set1_ps(1.0); AVX2_CHAINS];
        let (a, b) = (_mm256_set1_ps(0.999_999), _mm256_set1_ps(1e-7));
        for _ in 0..steps {
            for acc in &mut acc {
                *acc = _mm256_fmadd_ps(*acc, a, b);
            }
        }
        let mut lanes = [0.0f32; 8];
        for v in acc {
            let mut out = [0.0f32; 8];
            // SAFETY: `out` holds 8 floats.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr(), v) };
            for (l, o) in lanes.iter_mut().zip(out) {
                *l += o;
            }
        }
        lanes.iter().sum()
    }

    /// `steps` `vpdpbusd`s on each of [`AVX512_CHAINS`] 512-bit registers.
    ///
    /// # Safety
    /// The CPU must support AVX-512F and AVX-512 VNNI.
    #[target_feature(enable = "avx512f,avx512vnni")]
    pub unsafe fn avx512_vnni(steps: usize) -> i32 {
        let mut acc = [_mm512_set1_epi32(1); AVX512_CHAINS];
        let (a, b) = (
            _mm512_set1_epi32(0x0102_0304),
            _mm512_set1_epi32(0x0101_0101),
        );
        for _ in 0..steps {
            for acc in &mut acc {
                *acc = _mm512_dpbusd_epi32(*acc, a, b);
            }
        }
        acc.iter().map(|&v| _mm512_reduce_add_epi32(v)).sum()
    }

    /// `steps` `vpdpbusd`s on each of [`AVX2_CHAINS`] 256-bit registers.
    ///
    /// # Safety
    /// The CPU must support AVX-VNNI.
    #[target_feature(enable = "avx2,avxvnni")]
    pub unsafe fn avx_vnni(steps: usize) -> i32 {
        let mut acc = [_mm256_set1_epi32(1); AVX2_CHAINS];
        let (a, b) = (
            _mm256_set1_epi32(0x0102_0304),
            _mm256_set1_epi32(0x0101_0101),
        );
        for _ in 0..steps {
            for acc in &mut acc {
                *acc = _mm256_dpbusd_avx_epi32(*acc, a, b);
            }
        }
        let mut lanes = [0i32; 8];
        for v in acc {
            let mut out = [0i32; 8];
            // SAFETY: `out` holds 8 i32.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), v) };
            for (l, o) in lanes.iter_mut().zip(out) {
                *l = l.wrapping_add(o);
            }
        }
        lanes.iter().fold(0, |a, &b| a.wrapping_add(b))
    }
}

/// The FMA peak of one core at `tier`'s width, in flop/s.
#[cfg(target_arch = "x86_64")]
fn fma_peak(tier: F32Tier) -> f64 {
    const STEPS: usize = 1 << 16;
    let (lanes, chains) = match tier {
        F32Tier::Avx512 => (16, peak::AVX512_CHAINS),
        _ => (8, peak::AVX2_CHAINS),
    };
    let flops = (STEPS * chains * lanes * 2) as f64;
    rate(flops, || {
        // SAFETY: `main` checked that the CPU runs `tier`.
        let sum = unsafe {
            match tier {
                F32Tier::Avx512 => peak::avx512(STEPS),
                _ => peak::avx2(STEPS),
            }
        };
        std::hint::black_box(sum);
    })
}

#[cfg(not(target_arch = "x86_64"))]
fn fma_peak(_: F32Tier) -> f64 {
    unreachable!("the packed kernels need x86-64")
}

/// The `vpdpbusd` peak of one core for a VNNI `kernel`, in int8 operations
/// per second (a multiply and an add each); `None` for the other kernels.
#[cfg(target_arch = "x86_64")]
fn vnni_peak(kernel: Int8Kernel) -> Option<f64> {
    const STEPS: usize = 1 << 16;
    let lanes = match kernel {
        Int8Kernel::Avx512Vnni => 16 * peak::AVX512_CHAINS,
        Int8Kernel::AvxVnni => 8 * peak::AVX2_CHAINS,
        _ => return None,
    };
    let ops = (STEPS * lanes * 4 * 2) as f64;
    Some(rate(ops, || {
        // SAFETY: `main` checked that the CPU runs `kernel`.
        let sum = unsafe {
            match kernel {
                Int8Kernel::Avx512Vnni => peak::avx512_vnni(STEPS),
                _ => peak::avx_vnni(STEPS),
            }
        };
        std::hint::black_box(sum);
    }))
}

#[cfg(not(target_arch = "x86_64"))]
fn vnni_peak(_: Int8Kernel) -> Option<f64> {
    None
}

/// Deterministic values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32 / (1u64 << 23) as f32) - 1.0
        })
        .collect()
}

/// The four products of a ViT block of width `d`: name, outputs, inputs.
fn block_products(d: usize) -> [(&'static str, usize, usize); 4] {
    [
        ("qkv", 3 * d, d),
        ("attn_out", d, d),
        ("mlp_in", 4 * d, d),
        ("mlp_out", d, 4 * d),
    ]
}

/// What one run measures: the kernels, their peak, and each product's
/// rate as `(width, name, m, n, k, operations per second)`.
struct Run {
    tier: &'static str,
    peak: Option<f64>,
    products: Vec<(usize, &'static str, usize, usize, usize, f64)>,
}

/// The f32 products of `widths` over `rows` rows at `tier`.
fn f32_run(tier: F32Tier, rows: usize, widths: &[usize]) -> Run {
    let mut products = Vec::new();
    for &d in widths {
        for (name, n, k) in block_products(d) {
            let packed = PackedWeights::new(&[&values(n * k, 1)], k);
            let (x, bias) = (values(rows * k, 2), values(n, 3));
            let mut out = vec![0.0f32; rows * n];
            let flops = 2.0 * (rows * n * k) as f64;
            let rate = rate(flops, || packed.linear(&x, &bias, &mut out));
            products.push((d, name, rows, n, k, rate));
        }
    }
    Run {
        tier: tier.name(),
        peak: Some(fma_peak(tier)),
        products,
    }
}

/// The int8 products of `widths` over `rows` rows through `kernel`.
fn int8_run(kernel: Int8Kernel, rows: usize, widths: &[usize]) -> Run {
    let mut products = Vec::new();
    for &d in widths {
        for (name, n, k) in block_products(d) {
            let (q, scales) = quantize_weight_blocks(&values(n * k, 1), k, 32);
            let packed = QuantizedWeights::new(&[&q], &scales, k, 32);
            let (x, bias) = (values(rows * k, 2), values(n, 3));
            let mut out = vec![0.0f32; rows * n];
            let ops = 2.0 * (rows * n * k) as f64;
            let rate = rate(ops, || packed.linear(&x, &bias, &mut out, kernel));
            products.push((d, name, rows, n, k, rate));
        }
    }
    Run {
        tier: kernel.name(),
        peak: vnni_peak(kernel),
        products,
    }
}

fn main() -> Result<(), modelbin_infer::Error> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: kernel_bench [--int8] TIER ROWS WIDTH...";
    let int8 = args.first().is_some_and(|a| a == "--int8");
    if int8 {
        args.remove(0);
    }
    let tier = args.first().expect(usage);
    let rows: usize = args.get(1).and_then(|r| r.parse().ok()).expect(usage);
    let widths: Vec<usize> = args[2..].iter().map(|w| w.parse().expect(usage)).collect();
    let kernels = if int8 {
        let kernel = Int8Kernel::from_name(tier)
            .filter(|&k| k != Int8Kernel::Portable)
            .expect(usage);
        // The activations are quantized by the element-wise code of the
        // best f32 tier, as in a model.
        Kernels {
            f32: F32Tier::best(),
            int8: kernel,
        }
    } else {
        let f32 = F32Tier::from_name(tier)
            .filter(|&t| t != F32Tier::Portable)
            .expect(usage);
        Kernels {
            f32,
            int8: Int8Kernel::Portable,
        }
    };
    modelbin_infer::set_kernels(kernels.check()?)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool");
    let run = pool.install(|| {
        if int8 {
            int8_run(kernels.int8, rows, &widths)
        } else {
            f32_run(kernels.f32, rows, &widths)
        }
    });
    let products: Vec<_> = run
        .products
        .iter()
        .map(|&(d, name, m, n, k, rate)| {
            serde_json::json!({
                "width": d, "product": name, "m": m, "n": n, "k": k,
                "gflops": rate / 1e9, "of_peak": run.peak.map(|p| rate / p),
            })
        })
        .collect();
    let report = serde_json::json!({
        "tier": run.tier,
        "peak_gflops": run.peak.map(|p| p / 1e9),
        "products": products,
    });
    println!("{report}");
    Ok(())
}
