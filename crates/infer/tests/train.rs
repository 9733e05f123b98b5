//! Training: one step equals an independent numpy reference step (whose
//! analytic gradient is itself checked against finite differences); runs are
//! deterministic for a seed and thread count, with dropout; a checkpoint
//! resumes bit for bit; a small model learns the project's own text.

use std::path::PathBuf;
use std::process::Command;

use modelbin_format::tllm::Config;
use modelbin_infer::tllm::train::Trainer;
use modelbin_infer::tllm::train::data::Corpus;
use modelbin_infer::tllm::train::optim::AdamW;
use modelbin_infer::tllm::{Model, Sampling, generate};
use modelbin_infer::{Error, TrainingError};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn optimizer(steps: u64) -> AdamW {
    AdamW {
        lr: 3e-3,
        warmup: 2,
        steps,
        weight_decay: 0.1,
        clip: 1.0,
        beta1: 0.9,
        beta2: 0.95,
        eps: 1e-8,
    }
}

fn config(d: u32, layers: u32, heads: u32, ffn: u32, seq: u32, vocab: u32, dropout: f32) -> Config {
    Config {
        model_dim: d,
        n_layers: layers,
        n_heads: heads,
        ffn_hidden_dim: ffn,
        max_seq_len: seq,
        vocab_size: vocab,
        dropout,
    }
}

/// The pinned training text: Isaac Newton's *Opticks* (4th edition, 1730;
/// public domain), as Go's source tree ships it for its compression tests
/// (Debian `golang-1.19-src` 1.19.8-2, `src/testdata/Isaac.Newton-Opticks.txt`,
/// SHA-256 d4a9ac22…7bbd). The same bytes at every commit, so the learning
/// bound means the same thing everywhere.
fn pinned_text() -> Vec<u8> {
    std::fs::read(repo().join("tests/data/opticks.txt")).unwrap()
}

#[test]
fn one_step_equals_the_numpy_reference() {
    let config = config(8, 1, 2, 16, 6, 16, 0.0);
    let mut trainer = Trainer::new(config, optimizer(10), 2, 5).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let before = dir.path().join("before.tllm");
    trainer.save(&before).unwrap();
    let windows: [&[u8]; 2] = [&[1, 2, 3, 4, 5, 6, 7], &[15, 0, 9, 9, 3, 12, 4]];
    let windows_file = dir.path().join("windows.json");
    std::fs::write(&windows_file, serde_json::to_string(&windows).unwrap()).unwrap();
    let report = trainer.step_on(&windows);
    let lr = optimizer(10).lr_at(1);
    let out = Command::new("python3")
        .arg(repo().join("tests/reference/tllm_train_step.py"))
        .args([before.as_os_str(), windows_file.as_os_str()])
        .args([lr.to_string(), "0.1".into(), "1.0".into()])
        .output()
        .expect("python3 with numpy (scripts/fetch-test-data.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The reference's own analytic gradient agrees with finite differences.
    let scale = reference["max_abs_grad"].as_f64().unwrap();
    let diff = reference["max_abs_diff_numeric"].as_f64().unwrap();
    assert!(
        diff < 1e-6 * scale.max(1e-3),
        "numpy analytic vs numeric gradient: {diff} (largest gradient {scale})"
    );
    let want_loss = reference["loss"].as_f64().unwrap();
    assert!(
        (report.loss - want_loss).abs() < 1e-5 * want_loss,
        "loss {} vs numpy {want_loss}",
        report.loss
    );
    let params: Vec<f64> = serde_json::from_value(reference["params"].clone()).unwrap();
    let grads: Vec<f64> = serde_json::from_value(reference["grad"].clone()).unwrap();
    assert_eq!(params.len(), trainer.parameters().len());
    let mut compared = 0;
    for (i, ((&ours, &want), &g)) in trainer
        .parameters()
        .iter()
        .zip(&params)
        .zip(&grads)
        .enumerate()
    {
        // Adam's first step moves each weight by about lr·sign(g): where the
        // gradient is within finite-difference noise of 0 the sign is noise.
        if g.abs() > 1e-6 {
            assert!(
                (f64::from(ours) - want).abs() < 2e-6,
                "parameter {i}: {ours} vs numpy {want} (gradient {g})"
            );
            compared += 1;
        }
    }
    assert!(
        compared > params.len() / 2,
        "{compared} of {} compared",
        params.len()
    );
}

#[test]
fn runs_are_deterministic_and_resume_bit_for_bit() {
    let text = pinned_text();
    let corpus = Corpus::new(text, 0.1, 16).unwrap();
    let config = config(16, 1, 2, 32, 16, 256, 0.1);
    let run = |steps: u64| {
        let mut t = Trainer::new(config, optimizer(6), 4, 11).unwrap();
        for _ in 0..steps {
            t.step(&corpus);
        }
        t
    };
    let straight = run(6);
    assert_eq!(
        straight.parameters(),
        run(6).parameters(),
        "same seed and threads: same weights"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ckpt.tllm");
    run(3).save(&path).unwrap();
    let mut resumed = Trainer::resume(&path, Some(config), optimizer(6), 4, 11).unwrap();
    assert_eq!(resumed.steps_done(), 3);
    for _ in 0..3 {
        resumed.step(&corpus);
    }
    assert_eq!(
        resumed.parameters(),
        straight.parameters(),
        "resumed run differs"
    );
    // A different configuration or seed is refused.
    let other = Config {
        model_dim: 32,
        ..config
    };
    assert!(matches!(
        Trainer::resume(&path, Some(other), optimizer(6), 4, 11),
        Err(Error::Training(TrainingError::OtherConfiguration { .. }))
    ));
    assert!(matches!(
        Trainer::resume(&path, Some(config), optimizer(6), 4, 12),
        Err(Error::Training(TrainingError::OtherSeed {
            saved: 11,
            requested: 12,
            ..
        }))
    ));
    // The sidecar is checked.
    let side = modelbin_infer::tllm::train::checkpoint::sidecar(&path);
    let mut bytes = std::fs::read(&side).unwrap();
    bytes[40] ^= 1;
    std::fs::write(&side, &bytes).unwrap();
    assert!(matches!(
        Trainer::resume(&path, Some(config), optimizer(6), 4, 11),
        Err(Error::Training(TrainingError::OptimizerState { .. }))
    ));
    // Weights of step 4 beside the optimiser state of step 3 (a run killed
    // between the two renames) are refused, not silently mixed.
    run(3).save(&path).unwrap();
    let step3_state = std::fs::read(&side).unwrap();
    run(4).save(&path).unwrap();
    std::fs::write(&side, &step3_state).unwrap();
    match Trainer::resume(&path, Some(config), optimizer(6), 4, 11) {
        Err(Error::Training(TrainingError::OptimizerState { reason, .. })) => {
            assert!(reason.contains("other weights"), "{reason}")
        }
        other => panic!("{:?}", other.map(|t| t.steps_done())),
    }
}

#[test]
fn a_small_model_learns_a_pinned_text() {
    let text = pinned_text();
    assert!(text.len() >= 100_000, "corpus of {} bytes", text.len());
    let mut counts = [0usize; 256];
    text.iter().for_each(|&b| counts[b as usize] += 1);
    let n = text.len() as f64;
    let unigram_bits: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| -(c as f64 / n) * (c as f64 / n).log2())
        .sum();
    let corpus = Corpus::new(text, 0.1, 64).unwrap();
    let config = config(64, 2, 4, 256, 64, 256, 0.0);
    let steps = 600;
    let opt = AdamW {
        warmup: 50,
        ..optimizer(steps)
    };
    let mut trainer = Trainer::new(config, opt, 16, 0).unwrap();
    let initial = trainer.validation_loss(&corpus).unwrap() / std::f64::consts::LN_2;
    for _ in 0..steps {
        trainer.step(&corpus);
    }
    let bits = trainer.validation_loss(&corpus).unwrap() / std::f64::consts::LN_2;
    println!(
        "validation: {initial:.3} bits per byte at start, {bits:.3} after {steps} steps; unigram {unigram_bits:.3}"
    );
    assert!(bits < 4.0, "validation {bits:.3} bits per byte");
    assert!(
        bits < unigram_bits - 1.0,
        "validation {bits:.3} vs unigram {unigram_bits:.3}"
    );
    // The trained file is a TLLM model that generates.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("learned.tllm");
    trainer.save(&path).unwrap();
    let model = Model::open(&path).unwrap();
    let out = generate(
        &model,
        &b"The ".map(u32::from),
        32,
        Sampling::default(),
        None,
        |_| {},
    )
    .unwrap();
    assert!(!out.ids.is_empty());
}
