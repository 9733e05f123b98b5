//! Training throughput of `modelbin_infer::tllm::train` against one training step
//! of the numpy reference (tests/reference/tllm_train_step.py, float64,
//! analytic backward pass, AdamW) on the same shapes, in the same run; with
//! the FLOP rate and its fraction of the machine's peak (2 cores × the AVX2
//! FMA peak measured by the embed bench, passed as `PEAK_GFLOPS_PER_CORE`,
//! default 116).
//!
//! Run: `cargo bench -p modelbin-infer --bench train` (needs python3 + numpy).

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use modelbin_format::tllm::Config;
use modelbin_infer::tllm::train::Trainer;
use modelbin_infer::tllm::train::optim::AdamW;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// FLOPs of one training token: forward + two backward products for every
/// matrix parameter, plus attention (12·T·d per layer).
fn flops_per_token(c: &Config) -> f64 {
    let (d, f, l) = (
        c.model_dim as f64,
        c.ffn_hidden_dim as f64,
        c.n_layers as f64,
    );
    let (t, v) = (c.max_seq_len as f64, c.vocab_size as f64);
    6.0 * (l * (4.0 * d * d + 2.0 * d * f) + d * v) + 12.0 * t * d * l
}

fn main() {
    let peak: f64 = std::env::var("PEAK_GFLOPS_PER_CORE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(116.0);
    let optimizer = AdamW {
        lr: 1e-3,
        warmup: 10,
        steps: 1000,
        weight_decay: 0.1,
        clip: 1.0,
        beta1: 0.9,
        beta2: 0.95,
        eps: 1e-8,
    };
    let shapes = [
        ("default", (64, 2, 4, 256, 64), 16, 20),
        ("15M shape", (288, 6, 6, 768, 256), 8, 3),
    ];
    println!(
        "config       batch×seq  threads  modelbin tok/s  GFLOP/s  % peak  numpy step tok/s  ratio"
    );
    for (name, (d, layers, heads, ffn, seq), batch, steps) in shapes {
        let config = Config {
            model_dim: d,
            n_layers: layers,
            n_heads: heads,
            ffn_hidden_dim: ffn,
            max_seq_len: seq,
            vocab_size: 256,
            dropout: 0.0,
        };
        let window: Vec<u8> = (0..=seq).map(|i| (i * 31 % 256) as u8).collect();
        let windows: Vec<&[u8]> = vec![window.as_slice(); batch];
        let tokens = (batch * seq as usize) as f64;
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("m.tllm");
        Trainer::new(config, optimizer, batch, 0)
            .unwrap()
            .save(&model)
            .unwrap();
        let numpy = Command::new("python3")
            .arg(repo().join("tests/reference/tllm_train_step.py"))
            .arg(&model)
            .args(["--time-step", &batch.to_string()])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
            .and_then(|j| j["seconds"].as_f64())
            .map(|s| tokens / s);
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut trainer = Trainer::new(config, optimizer, batch, 0).unwrap();
            pool.install(|| trainer.step_on(&windows));
            let start = Instant::now();
            for _ in 0..steps {
                pool.install(|| trainer.step_on(&windows));
            }
            let rate = tokens * steps as f64 / start.elapsed().as_secs_f64();
            let gflops = rate * flops_per_token(&config) / 1e9;
            let (theirs, ratio) = match numpy {
                Some(n) => (format!("{n:.0}"), format!("{:.1}x", rate / n)),
                None => ("n/a".into(), "-".into()),
            };
            println!(
                "{name:<12} {:>9}  {threads:>7}  {rate:>14.0}  {gflops:>7.1}  {:>5.0}%  {theirs:>16}  {ratio:>5}",
                format!("{batch}×{seq}"),
                100.0 * gflops / (peak * threads as f64)
            );
        }
    }
}
