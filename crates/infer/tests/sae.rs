//! TopK sparse autoencoders: recovery of a planted dictionary, and the
//! SAELens files read back by the `safetensors` crate.

use modelbin_infer::rng::Rng;
use modelbin_infer::sae::train::{Architecture, Options, Trainer, total_variance};
use modelbin_infer::sae::{Activation, Sae, checkpoint, saelens};

const D_IN: usize = 64;
const FEATURES: usize = 512;
const ACTIVE: usize = 3;

/// Unit-norm random directions, one row each.
fn dictionary(rng: &mut Rng) -> Vec<f32> {
    let mut f: Vec<f32> = (0..FEATURES * D_IN)
        .map(|_| rng.normal(1.0) as f32)
        .collect();
    modelbin_infer::sae::train::normalize_rows(&mut f, D_IN);
    f
}

/// `rows` vectors, each the sum of `ACTIVE` random features with
/// coefficients in [1, 2), plus N(0, 0.01²) noise per value.
fn sample(rng: &mut Rng, dict: &[f32], rows: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; rows * D_IN];
    for row in out.chunks_exact_mut(D_IN) {
        for _ in 0..ACTIVE {
            let f = rng.below(FEATURES);
            let c = 1.0 + rng.uniform() as f32;
            row.iter_mut()
                .zip(&dict[f * D_IN..][..D_IN])
                .for_each(|(x, &d)| *x += c * d);
        }
        row.iter_mut().for_each(|x| *x += rng.normal(0.01) as f32);
    }
    out
}

#[test]
fn a_planted_dictionary_is_recovered() {
    let mut rng = Rng::new(1);
    let dict = dictionary(&mut rng);
    let steps = 1500;
    let mut options = Options::new(Architecture::TopK { k: ACTIVE }, 1024, steps, 4e-3);
    options.aux_k = D_IN / 2;
    options.dead_after = 50_000;
    let warm = sample(&mut rng, &dict, 4096);
    let mut trainer = Trainer::new(&warm, D_IN, options);
    let mut last = None;
    for _ in 0..steps {
        let batch = sample(&mut rng, &dict, 512);
        last = Some(trainer.step(&batch, 2));
    }
    let report = last.unwrap();
    let sae = trainer.unscaled();
    // Every planted feature against its best decoder row.
    let recovered = dict
        .chunks_exact(D_IN)
        .filter(|f| {
            sae.w_dec.chunks_exact(D_IN).any(|row| {
                let norm = row.iter().map(|v| v * v).sum::<f32>().sqrt();
                row.iter().zip(*f).map(|(a, b)| a * b).sum::<f32>() / norm >= 0.9
            })
        })
        .count();
    let held_out = sample(&mut Rng::new(99), &dict, 2048);
    let recon = sae.forward(&held_out, 2048);
    let error: f64 = recon
        .iter()
        .zip(&held_out)
        .map(|(r, x)| f64::from(r - x).powi(2))
        .sum();
    let fvu = error / total_variance(&held_out, D_IN);
    eprintln!("recovered {recovered} of {FEATURES}; held-out FVU {fvu:.4}; last step {report:?}");
    assert!(recovered * 10 >= FEATURES * 9, "{recovered} of {FEATURES}");
    assert!(fvu <= 0.1, "FVU {fvu}");
}

#[test]
fn saelens_files_round_trip_and_hold_the_documented_tensors() {
    let mut rng = Rng::new(5);
    let (d_in, d_sae) = (6, 10);
    let mut values = |n: usize| (0..n).map(|_| rng.normal(1.0) as f32).collect::<Vec<f32>>();
    let sae = Sae {
        d_in,
        d_sae,
        activation: Activation::TopK(3),
        w_enc: values(d_sae * d_in),
        b_enc: values(d_sae),
        w_dec: values(d_sae * d_in),
        b_dec: values(d_in),
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sae");
    saelens::save(&out, &sae, serde_json::json!({"layer": -1})).unwrap();
    let (back, config) = saelens::load(&out).unwrap();
    assert_eq!(back, sae);
    for (key, value) in [
        ("architecture", serde_json::json!("topk")),
        ("d_in", serde_json::json!(6)),
        ("d_sae", serde_json::json!(10)),
        ("k", serde_json::json!(3)),
        ("dtype", serde_json::json!("float32")),
        ("apply_b_dec_to_input", serde_json::json!(true)),
        ("normalize_activations", serde_json::json!("none")),
    ] {
        assert_eq!(config[key], value, "{key}");
    }
    assert_eq!(config["metadata"]["layer"], -1);
    // The weights as the safetensors crate reads them: W_enc is [d_in, d_sae].
    let bytes = std::fs::read(out.join(saelens::WEIGHTS_FILE)).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let w_enc = file.tensor("W_enc").unwrap();
    assert_eq!(
        (w_enc.dtype(), w_enc.shape()),
        (safetensors::Dtype::F32, &[d_in, d_sae][..])
    );
    let at = |i: usize, j: usize| {
        f32::from_le_bytes(w_enc.data()[(i * d_sae + j) * 4..][..4].try_into().unwrap())
    };
    assert_eq!(at(2, 7), sae.w_enc[7 * d_in + 2]);
    assert_eq!(file.tensor("W_dec").unwrap().shape(), &[d_sae, d_in]);
    assert_eq!(file.tensor("b_enc").unwrap().shape(), &[d_sae]);
    assert_eq!(file.tensor("b_dec").unwrap().shape(), &[d_in]);
}

#[test]
fn a_checkpointed_run_continues_bit_for_bit() {
    let mut rng = Rng::new(21);
    let dict = dictionary(&mut rng);
    let batches: Vec<Vec<f32>> = (0..6).map(|_| sample(&mut rng, &dict, 64)).collect();
    let mut options = Options::new(Architecture::BatchTopK { k: ACTIVE }, 128, 6, 4e-3);
    options.aux_k = 8;
    options.dead_after = 64;
    let mut straight = Trainer::new(&batches[0], D_IN, options);
    for batch in &batches {
        straight.step(batch, 2);
    }
    let mut first = Trainer::new(&batches[0], D_IN, options);
    for batch in &batches[..3] {
        first.step(batch, 2);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(checkpoint::CHECKPOINT_FILE);
    checkpoint::save(&path, &first, &serde_json::json!({"epoch": 0, "batch": 3})).unwrap();
    let (mut resumed, record) = checkpoint::load(&path, D_IN, options).unwrap();
    assert_eq!(record["batch"], 3);
    assert_eq!(resumed.steps_done(), 3);
    for batch in &batches[3..] {
        resumed.step(batch, 2);
    }
    assert_eq!(resumed.sae, straight.sae);
    assert_eq!(resumed.dead(), straight.dead());
    // Another shape is refused.
    let mut other = options;
    other.d_sae = 64;
    assert!(matches!(
        checkpoint::load(&path, D_IN, other),
        Err(modelbin_infer::Error::Format(modelbin_format::Error::InvalidArgument(reason)))
            if reason.contains("not [64 latents, 64]")
    ));
}

#[test]
fn a_configuration_out_of_range_is_refused() {
    let sae = Sae {
        d_in: 2,
        d_sae: 3,
        activation: Activation::TopK(2),
        w_enc: vec![0.5; 6],
        b_enc: vec![0.0; 3],
        w_dec: vec![0.5; 6],
        b_dec: vec![0.0; 2],
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sae");
    saelens::save(&out, &sae, serde_json::json!({})).unwrap();
    let config_path = out.join(saelens::CONFIG_FILE);
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
    for (key, value, expected) in [
        ("k", serde_json::json!(0), "`k` 0 is not in [1, d_sae = 3]"),
        (
            "k",
            serde_json::json!(1_000_000_000_000u64),
            "is not in [1, d_sae = 3]",
        ),
        ("d_sae", serde_json::json!(0), "must be positive"),
    ] {
        let mut bad = config.clone();
        bad[key] = value;
        std::fs::write(&config_path, bad.to_string()).unwrap();
        assert!(
            matches!(
                saelens::load(&out),
                Err(modelbin_infer::Error::Format(modelbin_format::Error::InvalidArgument(reason)))
                    if reason.contains(expected)
            ),
            "{key}"
        );
    }
}
