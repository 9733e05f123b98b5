//! Rate of the packed f32 product on a vision transformer's products, for
//! scripts/bench/kernel.py (which times torch's `linear` on the same shapes
//! in the same run):
//!
//! ```text
//! kernel_bench TIER ROWS WIDTH...   # TIER: avx512 or avx2
//! ```
//!
//! For each model width `d` it times the four products of a ViT block over
//! `ROWS` rows (tokens × images): `d → 3d` (query, key, value), `d → d`
//! (attention output), `d → 4d` and `4d → d` (MLP). Next to each rate it
//! prints the share of the FMA peak: what this core's fused multiply-adds
//! reach on independent register chains of the tier's width, measured in
//! the same run (so a turbo clock or a noisy neighbour moves both). One
//! thread; weights packed before timing; best of five timings of at least
//! 0.2 s each. Prints one JSON object.

use std::time::Instant;

use modelbin_infer::{F32Tier, Int8Kernel, Kernels, PackedWeights};

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

fn main() -> Result<(), modelbin_infer::Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: kernel_bench TIER ROWS WIDTH...";
    let tier = args
        .first()
        .and_then(|name| F32Tier::from_name(name))
        .filter(|&t| t != F32Tier::Portable)
        .expect(usage);
    let rows: usize = args.get(1).and_then(|r| r.parse().ok()).expect(usage);
    let widths: Vec<usize> = args[2..].iter().map(|w| w.parse().expect(usage)).collect();
    modelbin_infer::set_kernels(
        Kernels {
            f32: tier,
            int8: Int8Kernel::Portable,
        }
        .check()?,
    )?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool");

    let peak = fma_peak(tier);
    let mut products = Vec::new();
    for &d in &widths {
        for (name, n, k) in [
            ("qkv", 3 * d, d),
            ("attn_out", d, d),
            ("mlp_in", 4 * d, d),
            ("mlp_out", d, 4 * d),
        ] {
            let weights = values(n * k, 1);
            let packed = PackedWeights::new(&[&weights], k);
            let x = values(rows * k, 2);
            let bias = values(n, 3);
            let mut out = vec![0.0f32; rows * n];
            let flops = 2.0 * (rows * n * k) as f64;
            let rate = pool.install(|| rate(flops, || packed.linear(&x, &bias, &mut out)));
            products.push(serde_json::json!({
                "width": d, "product": name, "m": rows, "n": n, "k": k,
                "gflops": rate / 1e9, "of_peak": rate / peak,
            }));
        }
    }
    let report = serde_json::json!({
        "tier": tier.name(),
        "peak_gflops": peak / 1e9,
        "products": products,
    });
    println!("{report}");
    Ok(())
}
