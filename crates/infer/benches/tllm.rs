//! TLLM generation speed (one core): tokens/s with the KV cache, without it
//! (full recompute per token), and the numpy reference's per-token cost
//! (tests/reference/tllm_reference.py, full recompute) in the same run.
//!
//! Configs: a small model (dim 64, 2 layers, 2 heads, ffn 128,
//! seq 128, vocab 256) and the "15M" shape (dim 288, 6 layers, 6 heads, ffn
//! 768, seq 256, vocab 256; 4.9M parameters with a byte vocabulary).
//!
//! Run: `cargo bench -p modelbin-infer --bench tllm` (needs python3 + numpy
//! for the reference rows; scripts/fetch-test-data.sh installs numpy).

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use modelbin_format::tllm::Config;
use modelbin_infer::tllm::{Model, Sampling, argmax, generate};

const TOKENS: usize = 128;

fn config(name: &str) -> Config {
    let (d, l, h, f, s) = match name {
        "default" => (64, 2, 2, 128, 128),
        _ => (288, 6, 6, 768, 256),
    };
    Config {
        model_dim: d,
        n_layers: l,
        n_heads: h,
        ffn_hidden_dim: f,
        max_seq_len: s,
        vocab_size: 256,
        dropout: 0.0,
    }
}

fn generation(c: &mut Criterion) {
    let scratch = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let reference =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/reference/tllm_reference.py");
    let mut group = c.benchmark_group(format!("generate {TOKENS} tokens"));
    group.throughput(Throughput::Elements(TOKENS as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    for name in ["default", "15M"] {
        let model = Model::random(config(name), 1, 0.02).unwrap();
        let path = scratch.join(format!("{name}.tllm"));
        model.save(&path).unwrap();
        group.bench_function(BenchmarkId::new("modelbin KV cache", name), |b| {
            b.iter(|| generate(&model, &[0], TOKENS, Sampling::default(), None, |_| {}).unwrap())
        });
        group.bench_function(BenchmarkId::new("modelbin full recompute", name), |b| {
            b.iter(|| {
                let mut ids = vec![0u32];
                let v = model.config().vocab_size as usize;
                for _ in 0..TOKENS {
                    let logits = model.forward(black_box(&ids)).unwrap();
                    ids.push(argmax(&logits[logits.len() - v..]));
                }
                ids
            })
        });
        group.bench_function(
            BenchmarkId::new("numpy reference (full recompute)", name),
            |b| {
                b.iter_custom(|iters| {
                    let out = Command::new("python3")
                        .arg(&reference)
                        .arg(&path)
                        .args(["--bench", &TOKENS.to_string()])
                        .output()
                        .expect("python3 with numpy");
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                    let per_token = report["seconds_per_token"].as_f64().unwrap();
                    Duration::from_secs_f64(per_token * TOKENS as f64 * iters as f64)
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, generation);
criterion_main!(benches);
