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
        io: modelbin_infer::sae::Io::default(),
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
        assert_eq!(config.json[key], value, "{key}");
    }
    assert_eq!(config.json["metadata"]["layer"], -1);
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

/// A small autoencoder saved in `dir/sae`, its `cfg.json`'s path and JSON.
fn saved(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf, serde_json::Value) {
    let sae = Sae {
        d_in: 2,
        d_sae: 3,
        activation: Activation::TopK(2),
        w_enc: vec![0.5; 6],
        b_enc: vec![0.0; 3],
        w_dec: vec![0.5; 6],
        b_dec: vec![0.0; 2],
        io: modelbin_infer::sae::Io::default(),
    };
    let out = dir.join("sae");
    saelens::save(&out, &sae, serde_json::json!({})).unwrap();
    let config_path = out.join(saelens::CONFIG_FILE);
    let config = serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
    (out, config_path, config)
}

/// `saelens::load` of `out` after `edit` changed its `cfg.json`.
fn load_edited(
    out: &std::path::Path,
    config_path: &std::path::Path,
    config: &serde_json::Value,
    edit: impl FnOnce(&mut serde_json::Value),
) -> modelbin_infer::Result<(Sae<f32>, modelbin_infer::sae::config::SaeConfig)> {
    let mut edited = config.clone();
    edit(&mut edited);
    std::fs::write(config_path, edited.to_string()).unwrap();
    saelens::load(out)
}

#[test]
fn every_cfg_key_that_changes_the_computation_is_refused_by_name_when_unusable() {
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let (out, config_path, config) = saved(dir.path());
    for (key, value) in [
        ("k", json!(0)),
        ("k", json!(1_000_000_000_000u64)),
        ("k", json!("2")),
        ("d_sae", json!(0)),
        ("d_sae", json!(null)),
        ("d_in", json!(2.5)),
        ("architecture", json!("gated")),
        ("architecture", json!("batchtopk")),
        ("architecture", json!(7)),
        ("apply_b_dec_to_input", json!("false")),
        ("apply_b_dec_to_input", json!(0)),
        ("normalize_activations", json!("l2")),
        ("rescale_acts_by_decoder_norm", json!("yes")),
        ("reshape_activations", json!("hook_z")),
        ("dtype", json!("bfloat16")),
        ("dtype", json!("float64")),
        ("hook_head_index", json!(3)),
    ] {
        let result = load_edited(&out, &config_path, &config, |c| c[key] = value.clone());
        assert!(
            matches!(
                &result,
                Err(modelbin_infer::Error::Sae(modelbin_infer::SaeError::BadConfig { key: named, .. }))
                    if named == key
            ),
            "{key} = {value}: {result:?}"
        );
    }
    // A key that is absent is called missing, not malformed (a sparsify
    // folder has no `d_sae`).
    let result = load_edited(&out, &config_path, &config, |c| {
        c.as_object_mut().unwrap().remove("d_sae");
    });
    assert!(
        matches!(
            &result,
            Err(modelbin_infer::Error::Sae(modelbin_infer::SaeError::BadConfig { key, reason, .. }))
                if key == "d_sae" && reason == "missing; it is required"
        ),
        "{result:?}"
    );
    // A SAELens 6 file keeps its hook under `metadata`, and needs its
    // architecture.
    let result = load_edited(&out, &config_path, &config, |c| {
        c["metadata"] = json!({"sae_lens_version": "6.54.12", "hook_head_index": 0});
    });
    assert!(matches!(
        result,
        Err(modelbin_infer::Error::Sae(modelbin_infer::SaeError::BadConfig { key, .. })) if key == "hook_head_index"
    ));
    let result = load_edited(&out, &config_path, &config, |c| {
        c["normalize_activations"] = json!(true);
        c["sae_lens_version"] = json!("6.1.0");
    });
    assert!(matches!(
        result,
        Err(modelbin_infer::Error::Sae(modelbin_infer::SaeError::BadConfig { key, .. })) if key == "normalize_activations"
    ));
    let result = load_edited(&out, &config_path, &config, |c| {
        c.as_object_mut().unwrap().remove("architecture");
        c["sae_lens_version"] = json!("6.1.0");
    });
    assert!(matches!(
        result,
        Err(modelbin_infer::Error::Sae(modelbin_infer::SaeError::BadConfig { key, .. })) if key == "architecture"
    ));
    // The older layout: no architecture is `standard`, or `topk` through
    // its activation function; a boolean normalisation is read.
    let (sae, _) = load_edited(&out, &config_path, &config, |c| {
        c.as_object_mut().unwrap().remove("architecture");
        c["normalize_activations"] = json!(false);
    })
    .unwrap();
    assert_eq!(sae.activation, Activation::Relu);
    let (sae, _) = load_edited(&out, &config_path, &config, |c| {
        c.as_object_mut().unwrap().remove("architecture");
        c["activation_fn"] = json!("topk");
        c["activation_fn_kwargs"] = json!({"k": 1});
    })
    .unwrap();
    assert_eq!(sae.activation, Activation::TopK(1));
    let result = load_edited(&out, &config_path, &config, |c| {
        c["activation_fn"] = json!("tanh-relu")
    });
    assert!(matches!(
        result,
        Err(modelbin_infer::Error::Sae(modelbin_infer::SaeError::BadConfig { key, .. })) if key == "activation_fn"
    ));
    // Read and honoured.
    let (sae, config_read) = load_edited(&out, &config_path, &config, |c| {
        c["apply_b_dec_to_input"] = json!(false);
        c["normalize_activations"] = json!("layer_norm");
        c["rescale_acts_by_decoder_norm"] = json!(true);
        c["hook_name"] = json!("blocks.1.hook_mlp_out");
    })
    .unwrap();
    let io = modelbin_infer::sae::Io {
        subtract_b_dec: false,
        normalization: modelbin_infer::sae::Normalization::LayerNorm,
        rescale_by_decoder_norm: true,
    };
    assert_eq!((sae.io, config_read.io), (io, io));
    assert_eq!(
        config_read.hook_name.as_deref(),
        Some("blocks.1.hook_mlp_out")
    );
}

#[test]
fn tensors_the_architecture_lacks_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _, _) = saved(dir.path());
    let weights = out.join(saelens::WEIGHTS_FILE);
    let bytes = std::fs::read(&weights).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut tensors: Vec<(String, safetensors::tensor::TensorView<'_>)> =
        file.tensors().into_iter().collect();
    let ones = 1.0f32.to_le_bytes().repeat(3);
    let twos = 2.0f32.to_le_bytes().repeat(3);
    for (name, data, refused) in [
        ("scaling_factor", &ones, false),
        ("scaling_factor", &twos, true),
        ("b_gate", &ones, true),
    ] {
        let mut all = tensors.clone();
        all.push((
            name.to_owned(),
            safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![3], data).unwrap(),
        ));
        let written = safetensors::serialize(all, None).unwrap();
        std::fs::write(&weights, written).unwrap();
        let result = saelens::load(&out);
        if refused {
            assert!(
                matches!(&result, Err(modelbin_infer::Error::Sae(modelbin_infer::SaeError::UnexpectedTensor { name: named, .. })) if named == name),
                "{name}: {result:?}"
            );
        } else {
            result.unwrap();
        }
    }
    tensors.clear();
}

#[test]
fn normalised_inputs_and_rescaled_codes_follow_saelens_formulas() {
    use modelbin_infer::sae::{Io, Normalization};
    // d_in 4, 3 latents, ReLU; an input and its expected codes by hand.
    let mut sae = Sae {
        d_in: 4,
        d_sae: 3,
        activation: Activation::Relu,
        w_enc: vec![1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0],
        b_enc: vec![0.0, 0.0, 0.5],
        w_dec: vec![2.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 3.0, 4.0],
        b_dec: vec![0.1, -0.1, 0.0, 0.2],
        io: Io::default(),
    };
    let x = [3.0f64, 1.0, -1.0, 1.0];
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    // layer_norm: (x − μ) / (σ + 1e-5), σ unbiased; no b_dec subtracted.
    sae.io = Io {
        subtract_b_dec: false,
        normalization: Normalization::LayerNorm,
        rescale_by_decoder_norm: false,
    };
    let mean = x.iter().sum::<f64>() / 4.0;
    let std = (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 3.0).sqrt();
    let n: Vec<f64> = x.iter().map(|v| (v - mean) / (std + 1e-5)).collect();
    let pre = [n[0], n[1], n[0] + n[1] + n[2] + n[3] + 0.5];
    let codes = sae.encode(&x32, 1);
    let want: Vec<(usize, f64)> = pre
        .iter()
        .enumerate()
        .filter(|(_, v)| **v > 0.0)
        .map(|(j, &v)| (j, v))
        .collect();
    let got: Vec<(usize, f64)> = codes.active(0).map(|(j, v)| (j, f64::from(v))).collect();
    assert_eq!(got.len(), want.len(), "{got:?} {want:?}");
    for ((gj, gv), (wj, wv)) in got.iter().zip(&want) {
        assert_eq!(gj, wj);
        assert!((gv - wv).abs() < 1e-5, "{gv} {wv}");
    }
    // Decoding puts the scale back: y · σ + μ.
    let recon = sae.decode(&codes);
    let mut y = [0.1f64, -0.1, 0.0, 0.2];
    for &(j, v) in &want {
        for (i, yi) in y.iter_mut().enumerate() {
            *yi += v * f64::from(sae.w_dec[j * 4 + i]);
        }
    }
    for (r, yi) in recon.iter().zip(y) {
        assert!((f64::from(*r) - (yi * std + mean)).abs() < 1e-4, "{r} {yi}");
    }
    // rescale_acts_by_decoder_norm: codes times the row norms (2, 1, 5),
    // and decoding divides them out again.
    sae.io = Io {
        subtract_b_dec: true,
        normalization: Normalization::None,
        rescale_by_decoder_norm: true,
    };
    sae.activation = Activation::TopK(3);
    let centered: Vec<f64> = x
        .iter()
        .zip(&sae.b_dec)
        .map(|(v, b)| v - f64::from(*b))
        .collect();
    let pre = [
        centered[0] * 2.0,
        centered[1],
        (centered.iter().sum::<f64>() + 0.5) * 5.0,
    ];
    let codes = sae.encode(&x32, 1);
    let got: Vec<(usize, f64)> = codes.active(0).map(|(j, v)| (j, f64::from(v))).collect();
    let mut want: Vec<(usize, f64)> = pre
        .iter()
        .enumerate()
        .filter(|(_, v)| **v > 0.0)
        .map(|(j, &v)| (j, v))
        .collect();
    want.sort_by(|a, b| b.1.total_cmp(&a.1));
    assert_eq!(
        got.iter().map(|g| g.0).collect::<Vec<_>>(),
        want.iter().map(|w| w.0).collect::<Vec<_>>()
    );
    for (g, w) in got.iter().zip(&want) {
        assert!((g.1 - w.1).abs() < 1e-5);
    }
    let recon = sae.decode(&codes);
    let mut y = [0.1f64, -0.1, 0.0, 0.2];
    for &(j, v) in &want {
        let norm = [2.0, 1.0, 5.0][j];
        for (i, yi) in y.iter_mut().enumerate() {
            *yi += v / norm * f64::from(sae.w_dec[j * 4 + i]);
        }
    }
    for (r, yi) in recon.iter().zip(y) {
        assert!((f64::from(*r) - yi).abs() < 1e-5, "{r} {yi}");
    }
}
