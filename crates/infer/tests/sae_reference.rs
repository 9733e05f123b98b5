//! Three training steps of each autoencoder architecture against an
//! independent float64 numpy reference (tests/reference/sae_train_step.py):
//! forward, selection (TopK, BatchTopK, ReLU, JumpReLU), AuxK on dead
//! latents, L1, JumpReLU's L0 penalty and its thresholds' pseudo-derivatives,
//! the decoder-parallel gradient removed, Adam with its schedule, unit-norm
//! rows, the dead-latent bookkeeping and the BatchTopK threshold.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use modelbin_infer::rng::Rng;
use modelbin_infer::sae::Activation;
use modelbin_infer::sae::train::{Architecture, Options, Trainer};
use serde_json::{Value, json};

const D_IN: usize = 6;
const D_SAE: usize = 24;
const ROWS: usize = 16;
const STEPS: usize = 3;

fn reference(input: &Value) -> Value {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/reference/sae_train_step.py");
    let mut child = Command::new("python3")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "reference failed (numpy installed? scripts/fetch-test-data.sh installs it): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Largest |ours − reference| over a parameter.
fn worst(ours: &[f32], reference: &Value) -> f64 {
    let reference = reference.as_array().unwrap();
    assert_eq!(ours.len(), reference.len());
    ours.iter()
        .zip(reference)
        .map(|(&a, b)| (f64::from(a) - b.as_f64().unwrap()).abs())
        .fold(0.0, f64::max)
}

fn check(architecture: Architecture, name: &str) {
    let mut rng = Rng::new(17);
    // Inputs with an offset and unequal scales, so the scale and b_dec
    // matter; one batch per step.
    let batches: Vec<Vec<f32>> = (0..STEPS)
        .map(|_| {
            (0..ROWS * D_IN)
                .map(|i| (rng.normal(1.0) * (1.0 + (i % D_IN) as f64) + 3.0) as f32)
                .collect()
        })
        .collect();
    let mut options = Options::new(architecture, D_SAE, 40, 3e-2);
    options.aux_k = 4;
    // Latents that did not fire in the last batch count as dead.
    options.dead_after = ROWS as u64;
    options.seed = 5;
    let mut trainer = Trainer::new(&batches[0], D_IN, options);
    let start = trainer.sae.clone();
    let (k, l1_coeff, (l0_coeff, bandwidth)) = match architecture {
        Architecture::TopK { k } | Architecture::BatchTopK { k } => (k, 0.0, (0.0, 0.0)),
        Architecture::Relu { l1_coeff } => (0, l1_coeff, (0.0, 0.0)),
        Architecture::JumpRelu {
            l0_coeff,
            bandwidth,
        } => (0, 0.0, (l0_coeff, bandwidth)),
    };
    let start_thresholds = match &start.activation {
        Activation::JumpRelu(t) if l0_coeff > 0.0 => Some(t.clone()),
        _ => None,
    };
    let opt = options.optimizer;
    let input = json!({
        "d_in": D_IN, "d_sae": D_SAE, "architecture": name, "k": k,
        "aux_k": options.aux_k, "aux_coeff": options.aux_coeff, "l1_coeff": l1_coeff,
        "dead_after": options.dead_after, "lr": opt.lr, "warmup": opt.warmup,
        "steps": opt.steps, "beta1": opt.beta1, "beta2": opt.beta2, "eps": opt.eps,
        "scale": trainer.scale, "w_enc": start.w_enc, "b_enc": start.b_enc,
        "w_dec": start.w_dec, "b_dec": start.b_dec, "since_fired": vec![0; D_SAE],
        "threshold": null, "batches": batches,
        "l0_coeff": l0_coeff, "bandwidth": bandwidth, "thresholds": start_thresholds,
    });
    let expected = reference(&input);
    let mut reports = Vec::new();
    for batch in &batches {
        reports.push(trainer.step(batch, 3));
    }
    for (field, ours) in [
        ("w_enc", &trainer.sae.w_enc),
        ("b_enc", &trainer.sae.b_enc),
        ("w_dec", &trainer.sae.w_dec),
        ("b_dec", &trainer.sae.b_dec),
    ] {
        let error = worst(ours, &expected[field]);
        assert!(error < 1e-5, "{name}: {field} off by {error}");
    }
    for (step, (ours, theirs)) in reports
        .iter()
        .zip(expected["reports"].as_array().unwrap())
        .enumerate()
    {
        for (key, value) in [
            ("mse", ours.mse),
            ("fvu", ours.fvu),
            ("l0", ours.l0),
            ("dead_fraction", ours.dead_fraction),
            ("aux_mse", ours.aux_mse),
        ] {
            let reference = theirs[key].as_f64().unwrap();
            assert!(
                (value - reference).abs() <= 1e-5 * reference.abs().max(1.0),
                "{name}, step {}: {key} {value} vs {reference}",
                step + 1
            );
        }
    }
    let dead = reports.iter().map(|r| r.dead_fraction).fold(0.0, f64::max);
    if k > 0 {
        assert!(dead > 0.0, "{name}: AuxK was never exercised");
        assert!(reports.iter().any(|r| r.aux_mse > 0.0), "{name}");
    }
    if let (Activation::JumpRelu(ours), Some(reference)) =
        (&trainer.sae.activation, expected.get("thresholds"))
    {
        let error = worst(ours, reference);
        assert!(error < 1e-5, "{name}: thresholds off by {error}");
        let start = start_thresholds.expect("JumpReLU starts from thresholds");
        let moved = ours.iter().zip(&start).filter(|(a, b)| a != b).count();
        assert!(moved > D_SAE / 2, "{name}: {moved} thresholds moved");
        return;
    }
    match (&trainer.sae.activation, expected["threshold"].as_f64()) {
        (Activation::JumpRelu(threshold), Some(reference)) => {
            assert!(
                threshold
                    .iter()
                    .all(|&t| (f64::from(t) - reference).abs() < 1e-5)
            );
        }
        (Activation::JumpRelu(_), None) => panic!("{name}: the reference kept no threshold"),
        (_, threshold) => assert_eq!(threshold, None, "{name}"),
    }
}

#[test]
fn topk_steps_equal_the_numpy_reference() {
    check(Architecture::TopK { k: 3 }, "topk");
}

#[test]
fn batchtopk_steps_equal_the_numpy_reference() {
    check(Architecture::BatchTopK { k: 3 }, "batchtopk");
}

#[test]
fn jumprelu_steps_equal_the_numpy_reference() {
    // A wide window, so most thresholds take both pseudo-derivatives.
    check(
        Architecture::JumpRelu {
            l0_coeff: 0.05,
            bandwidth: 1.0,
        },
        "jumprelu",
    );
}

#[test]
fn relu_steps_equal_the_numpy_reference() {
    check(Architecture::Relu { l1_coeff: 0.5 }, "relu");
}
