//! Decoder language models against transformers itself: random models of
//! every family, saved by transformers in F32, F16 and BF16 (sharded or
//! not, tied or untied, grouped-query or not, with the hub's name and
//! config layouts), and transformers' outputs on them
//! (tests/reference/lm_reference.py, run in the heavy venv). Every site of
//! every block and the logits must be within 1e-4 of transformers' largest
//! value, and greedy generation must give the same tokens.

mod heavy;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use modelbin_format::TensorStore;
use modelbin_format::safetensors;
use modelbin_infer::generation::Sampling;
use modelbin_infer::lm::{self, LanguageModel, LoadOptions, Site};
use modelbin_infer::tllm::argmax;
use serde_json::Value;

/// The bound: |ours − transformers| ≤ TOLERANCE · max |transformers|.
const TOLERANCE: f64 = 1e-4;

/// The directory of the reference models, made once per test process.
fn models() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        heavy::run("tests/reference/lm_reference.py", &[dir.path()]);
        dir
    })
    .path()
}

/// Every model directory, by name.
fn model_dirs() -> Vec<(String, PathBuf)> {
    let mut dirs: Vec<_> = std::fs::read_dir(models())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("expected.json").exists())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 10, "{dirs:?}");
    dirs
}

/// transformers' outputs for one model.
struct Expected {
    json: Value,
    file: safetensors::SafeTensors<modelbin_format::io::source::MappedFile>,
}

impl Expected {
    fn read(dir: &Path) -> Expected {
        let json =
            serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
        let file = safetensors::open(dir.join("expected.safetensors")).unwrap();
        Expected { json, file }
    }

    fn ids(&self, key: &str) -> Vec<u32> {
        let flat = |v: &Value| -> Vec<u32> {
            match v {
                Value::Array(items) => items
                    .iter()
                    .flat_map(|i| match i {
                        Value::Array(_) => flat_ids(i),
                        n => vec![n.as_u64().unwrap() as u32],
                    })
                    .collect(),
                _ => panic!("{key}"),
            }
        };
        flat(&self.json[key])
    }

    fn tensor(&self, name: &str) -> Vec<f32> {
        self.file
            .tensor(name)
            .unwrap()
            .to_f32()
            .unwrap()
            .into_owned()
    }
}

fn flat_ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap() as u32)
        .collect()
}

/// max |ours − theirs| / max |theirs|.
fn relative_error(ours: &[f32], theirs: &[f32]) -> f64 {
    assert_eq!(ours.len(), theirs.len());
    let scale = theirs.iter().fold(0.0f64, |m, v| m.max(f64::from(v.abs())));
    let worst = ours
        .iter()
        .zip(theirs)
        .fold(0.0f64, |m, (a, b)| m.max(f64::from((a - b).abs())));
    worst / scale.max(f64::MIN_POSITIVE)
}

/// Each row's argmax.
fn argmaxes(logits: &[f32], vocab: usize) -> Vec<u32> {
    logits.chunks_exact(vocab).map(argmax).collect()
}

#[test]
fn every_family_matches_transformers() {
    let mut report = Vec::new();
    for (name, dir) in model_dirs() {
        let expected = Expected::read(&dir);
        let model = LanguageModel::open(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
        let c = model.config();
        let layers = expected.json["layers"].as_u64().unwrap() as usize;
        assert_eq!(
            (c.layers, c.hidden),
            (layers, expected.json["hidden"].as_u64().unwrap() as usize)
        );
        let windows = expected.ids("windows");
        let window = expected.json["windows"][0].as_array().unwrap().len();
        let all: Vec<usize> = (0..layers).collect();
        let mut worst_site = 0.0f64;
        for site in Site::ALL {
            let ours = model.activations(&windows, window, &all, site).unwrap();
            for (layer, ours) in ours.iter().enumerate() {
                let theirs = expected.tensor(&format!("{}.{layer}", site.name()));
                let err = relative_error(ours, &theirs);
                assert!(
                    err <= TOLERANCE,
                    "{name} {} layer {layer}: {err:e}",
                    site.name()
                );
                worst_site = worst_site.max(err);
            }
        }
        let sequence = expected.ids("sequence");
        let vocab = c.vocab_size;
        let logits = model.logits(&sequence).unwrap();
        let theirs = expected.tensor("logits");
        let logits_err = relative_error(&logits, &theirs);
        assert!(logits_err <= TOLERANCE, "{name} logits: {logits_err:e}");
        assert_eq!(argmaxes(&logits, vocab), argmaxes(&theirs, vocab), "{name}");
        // A hook that halves block 0's output, as transformers' did.
        let mut session = model.session();
        let spliced = session
            .extend_with_hook(&sequence, true, &mut |layer, site, rows| {
                if (layer, site) == (0, Site::ResidPost) {
                    rows.iter_mut().for_each(|v| *v *= 0.5);
                }
            })
            .unwrap();
        let spliced_err = relative_error(&spliced, &expected.tensor("spliced_logits"));
        assert!(spliced_err <= TOLERANCE, "{name} spliced: {spliced_err:e}");
        // The KV cache in pieces gives the whole pass's logits.
        let mut session = model.session();
        let mut pieces = Vec::new();
        for chunk in sequence.chunks(7) {
            pieces.extend(session.extend(chunk, true).unwrap());
        }
        let pieces_err = relative_error(&pieces, &theirs);
        assert!(
            pieces_err <= TOLERANCE,
            "{name} cached pieces: {pieces_err:e}"
        );
        let prompt = expected.ids("prompt");
        let generated = expected.ids("generated");
        let ours = lm::generate(
            &model,
            &prompt,
            generated.len(),
            Sampling::default(),
            &[],
            |_| {},
        )
        .unwrap();
        assert_eq!(ours.ids, generated, "{name}: greedy generation");
        report.push(format!(
            "{name:32} {:>9} sites {worst_site:.1e}  logits {logits_err:.1e}  spliced {spliced_err:.1e}  cached {pieces_err:.1e}  generation equal ({} tokens)",
            expected.json["dtype"].as_str().unwrap(),
            generated.len()
        ));
    }
    eprintln!("{}", report.join("\n"));
}

#[test]
fn int8_stays_within_a_cosine_of_099_per_vector() {
    for (name, dir) in model_dirs() {
        let f32_model = LanguageModel::open(&dir).unwrap();
        let int8 = LanguageModel::open_with(&dir, LoadOptions::int8(true)).unwrap();
        assert!(int8.is_int8() && !f32_model.is_int8());
        let expected = Expected::read(&dir);
        let windows = expected.ids("windows");
        let window = expected.json["windows"][0].as_array().unwrap().len();
        let last = f32_model.config().layers - 1;
        let h = f32_model.config().hidden;
        let a = &f32_model
            .activations(&windows, window, &[last], Site::ResidPost)
            .unwrap()[0];
        let b = &int8
            .activations(&windows, window, &[last], Site::ResidPost)
            .unwrap()[0];
        let worst = a
            .chunks_exact(h)
            .zip(b.chunks_exact(h))
            .map(|(a, b)| modelbin_infer::cosine(a, b))
            .fold(1.0f32, f32::min);
        assert!(worst >= 0.99, "{name}: cosine {worst}");
    }
}
