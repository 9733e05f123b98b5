//! The TLLM forward pass against an independent numpy reference
//! (tests/reference/tllm_reference.py, float64) on random models of several
//! configurations, and the cached incremental path against full recompute.

use std::path::Path;
use std::process::Command;

use modelbin_format::tllm::{self, Config};
use modelbin_infer::Error;
use modelbin_infer::rng::Rng;
use modelbin_infer::tllm::{Model, Sampling, generate};

/// A TLLM file with every tensor (biases and LayerNorm included) random.
fn random_model(dir: &Path, config: Config, seed: u64) -> std::path::PathBuf {
    let mut rng = Rng::new(seed);
    let data: Vec<Vec<u8>> = config
        .tensors()
        .iter()
        .map(|spec| {
            (0..spec.shape.len())
                .flat_map(|_| (rng.normal(0.3) as f32).to_le_bytes())
                .collect()
        })
        .collect();
    let path = dir.join(format!("model-{seed}.tllm"));
    let slices: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
    tllm::write_file(&path, &config, &slices, &mut |_, _| {}).unwrap();
    path
}

fn reference_logits(model: &Path, ids: &[u32]) -> Vec<Vec<f64>> {
    run_reference(model, ids, &[])
}

/// The reference's residual stream after block `layer`.
fn reference_residual(model: &Path, ids: &[u32], layer: usize) -> Vec<Vec<f64>> {
    run_reference(model, ids, &["--residual", &layer.to_string()])
}

fn run_reference(model: &Path, ids: &[u32], extra: &[&str]) -> Vec<Vec<f64>> {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/reference/tllm_reference.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(model)
        .arg(serde_json::to_string(ids).unwrap())
        .args(extra)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "reference failed (numpy installed? scripts/fetch-test-data.sh installs it): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn config(d: u32, layers: u32, heads: u32, ffn: u32, seq: u32, vocab: u32) -> Config {
    Config {
        model_dim: d,
        n_layers: layers,
        n_heads: heads,
        ffn_hidden_dim: ffn,
        max_seq_len: seq,
        vocab_size: vocab,
        dropout: 0.1,
    }
}

/// Largest |ours − reference| relative to max(1, largest |reference|).
fn relative_error(ours: &[f32], reference: &[Vec<f64>]) -> f64 {
    let flat: Vec<f64> = reference.iter().flatten().copied().collect();
    assert_eq!(ours.len(), flat.len());
    let scale = flat.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    ours.iter()
        .zip(&flat)
        .map(|(&a, &b)| (f64::from(a) - b).abs())
        .fold(0.0, f64::max)
        / scale
}

#[test]
fn logits_match_the_numpy_reference() {
    let dir = tempfile::tempdir().unwrap();
    let configs = [
        config(16, 1, 1, 32, 8, 20),
        config(32, 2, 4, 48, 16, 300),
        config(24, 3, 3, 40, 12, 256),
        config(64, 2, 8, 128, 32, 64),
    ];
    for (seed, config) in configs.into_iter().enumerate() {
        let path = random_model(dir.path(), config, seed as u64);
        let model = Model::open(&path).unwrap();
        let mut rng = Rng::new(100 + seed as u64);
        let len = 1 + (rng.next_u64() % u64::from(config.max_seq_len)) as usize;
        let ids: Vec<u32> = (0..len)
            .map(|_| (rng.next_u64() % u64::from(config.vocab_size)) as u32)
            .collect();
        let ours = model.forward(&ids).unwrap();
        let err = relative_error(&ours, &reference_logits(&path, &ids));
        assert!(err < 1e-4, "config {config:?}: relative error {err}");
    }
}

#[test]
fn cached_decoding_matches_full_recompute() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(32, 2, 4, 64, 24, 50);
    let model = Model::open(random_model(dir.path(), config, 9)).unwrap();
    let ids: Vec<u32> = (0..24).map(|i| (i * 7 % 50) as u32).collect();
    let full = model.forward(&ids).unwrap();
    let v = config.vocab_size as usize;
    // One token at a time, then chunks of uneven sizes.
    let mut session = model.session();
    for (i, &id) in ids.iter().enumerate() {
        let step = session.extend(&[id], false).unwrap();
        for (a, b) in step.iter().zip(&full[i * v..(i + 1) * v]) {
            assert!((a - b).abs() < 1e-4, "position {i}: {a} vs {b}");
        }
    }
    let mut session = model.session();
    let mut done = 0;
    for chunk in [5, 1, 10, 8] {
        let logits = session.extend(&ids[done..done + chunk], true).unwrap();
        for (a, b) in logits.iter().zip(&full[done * v..(done + chunk) * v]) {
            assert!((a - b).abs() < 1e-4);
        }
        done += chunk;
    }
    assert!(
        matches!(
            session.extend(&[1], false),
            Err(Error::SequenceTooLong { len: 25, max: 24 })
        ),
        "context is full"
    );
}

#[test]
fn bad_inputs_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let model = Model::open(random_model(dir.path(), config(16, 1, 2, 16, 4, 10), 3)).unwrap();
    assert!(matches!(model.forward(&[]), Err(Error::EmptyInput)));
    let err = model.forward(&[1, 10]).unwrap_err().to_string();
    assert!(err.contains("token id 10 at position 1"), "{err}");
    let err = model.forward(&[1; 5]).unwrap_err().to_string();
    assert!(err.contains("max_seq_len of 4"), "{err}");
    let bad = Sampling {
        temperature: -1.0,
        ..Sampling::default()
    };
    assert!(matches!(
        generate(&model, &[1], 2, bad, None, |_| {}),
        Err(Error::BadSampling(m)) if m.contains("temperature")
    ));
    let bad = Sampling {
        top_p: Some(1.5),
        temperature: 1.0,
        ..Sampling::default()
    };
    assert!(matches!(
        generate(&model, &[1], 2, bad, None, |_| {}),
        Err(Error::BadSampling(m)) if m.contains("top-p")
    ));
}

#[test]
fn generation_is_greedy_or_seeded() {
    let dir = tempfile::tempdir().unwrap();
    let model = Model::open(random_model(dir.path(), config(32, 2, 2, 32, 32, 40), 5)).unwrap();
    let greedy = generate(&model, &[1, 2], 10, Sampling::default(), None, |_| {}).unwrap();
    assert_eq!(greedy.ids.len(), 10);
    // Greedy = argmax of the full forward at each step.
    let mut ids = vec![1, 2];
    for &next in &greedy.ids {
        let logits = model.forward(&ids).unwrap();
        let last = &logits[(ids.len() - 1) * 40..];
        assert_eq!(modelbin_infer::tllm::argmax(last), next);
        ids.push(next);
    }
    let sampled = Sampling {
        temperature: 1.0,
        top_k: Some(5),
        top_p: Some(0.9),
        seed: 42,
    };
    let a = generate(&model, &[1], 20, sampled, None, |_| {}).unwrap();
    let b = generate(&model, &[1], 20, sampled, None, |_| {}).unwrap();
    assert_eq!(a.ids, b.ids, "same seed, same tokens");
    let stop = a.ids[3];
    let stopped = generate(&model, &[1], 20, sampled, Some(stop), |_| {}).unwrap();
    assert_eq!(stopped.stopped, "stop_id");
    assert_eq!(stopped.ids.last(), Some(&stop));
    // Past max_seq_len (32) the window slides: each token is the argmax of
    // a full forward pass over the last 32 tokens.
    let long = generate(&model, &[1; 30], 20, Sampling::default(), None, |_| {}).unwrap();
    assert_eq!((long.ids.len(), long.stopped), (20, "max_tokens"));
    let mut ids = vec![1; 30];
    for &next in &long.ids {
        let window = &ids[ids.len().saturating_sub(32)..];
        let logits = model.forward(window).unwrap();
        let last = &logits[(window.len() - 1) * 40..];
        assert_eq!(modelbin_infer::tllm::argmax(last), next);
        ids.push(next);
    }
    let top1 = Sampling {
        temperature: 1.0,
        top_k: Some(1),
        ..Sampling::default()
    };
    assert_eq!(
        generate(&model, &[1, 2], 10, top1, None, |_| {})
            .unwrap()
            .ids,
        greedy.ids
    );
}

#[test]
fn the_residual_stream_matches_the_numpy_reference() {
    let dir = tempfile::tempdir().unwrap();
    let path = random_model(dir.path(), config(32, 3, 4, 48, 16, 300), 9);
    let model = Model::open(&path).unwrap();
    let ids = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3];
    let streams = model.residual_stream(&ids, &[2, 0]).unwrap();
    for (stream, layer) in streams.iter().zip([2, 0]) {
        assert_eq!(stream.len(), ids.len() * 32);
        let error = relative_error(stream, &reference_residual(&path, &ids, layer));
        assert!(error < 1e-4, "layer {layer}: {error}");
    }
}
