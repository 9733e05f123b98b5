//! The reconstruction evals of an autoencoder spliced into a decoder
//! language model against SAELens's definition computed with transformers
//! (tests/reference/lm_sae_eval_reference.py, run in the heavy venv): a
//! random GPT-2 and a random Llama, autoencoders saved by SAELens at
//! resid_post, mlp_out and attn_out, the special tokens taken from the
//! model's tokenizer. Every number within 1e-4.

mod heavy;

use std::path::Path;

use modelbin_infer::lm::{LanguageModel, Site};
use modelbin_infer::sae::saelens;
use modelbin_infer::sae::splice::{Splice, Target, special_tokens};
use serde_json::Value;

const TOLERANCE: f64 = 1e-4;

#[test]
fn evals_equal_saelens_on_transformers() {
    let dir = tempfile::tempdir().unwrap();
    heavy::run("tests/reference/lm_sae_eval_reference.py", &[dir.path()]);
    for name in ["gpt2", "llama"] {
        let model_dir = dir.path().join(name);
        let expected: Value =
            serde_json::from_slice(&std::fs::read(model_dir.join("expected.json")).unwrap())
                .unwrap();
        let windows: Vec<Vec<u32>> = expected["windows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| {
                w.as_array()
                    .unwrap()
                    .iter()
                    .map(|id| id.as_u64().unwrap() as u32)
                    .collect()
            })
            .collect();
        let model = LanguageModel::open(&model_dir).unwrap();
        let special = special_tokens(&model_dir, model.config()).unwrap();
        let theirs: Vec<u32> = expected["special"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(special, theirs, "{name}");
        for (case, want) in expected["cases"].as_object().unwrap() {
            let site: Site = want["site"].as_str().unwrap().parse().unwrap();
            let layer = want["layer"].as_i64().unwrap();
            let (sae, _) = saelens::load(&model_dir.join(case)).unwrap();
            let target = Target::lm(model.clone(), layer, site).unwrap();
            let got = Splice::new(target, windows.clone(), special.clone())
                .measure(&sae)
                .unwrap();
            let got = serde_json::to_value(got).unwrap();
            assert_eq!(got["tokens"], want["tokens"], "{name} {case}");
            assert_eq!(got["kl_positions"], want["kl_positions"], "{name} {case}");
            for key in [
                "clean",
                "spliced",
                "zero_ablated",
                "recovered",
                "kl_spliced",
                "kl_zero_ablated",
                "kl_recovered",
            ] {
                let (ours, theirs) = (got[key].as_f64().unwrap(), want[key].as_f64().unwrap());
                assert!(
                    (ours - theirs).abs() <= TOLERANCE,
                    "{name} {case} {key}: {ours} vs {theirs}"
                );
            }
            eprintln!("{name:6} {case:13} {got}");
        }
        check_refusals(&model_dir, &model);
    }
}

/// A layer past the model's blocks and an autoencoder of another width
/// are refused by their variants.
fn check_refusals(dir: &Path, model: &LanguageModel) {
    let layers = model.config().layers as i64;
    assert!(matches!(
        Target::lm(model.clone(), layers, Site::ResidPost),
        Err(modelbin_infer::Error::Lm(modelbin_infer::LmError::NoSuchLayer { .. }))
    ));
    let (mut sae, _) = saelens::load(&dir.join("resid_post.1")).unwrap();
    sae.d_in = 16;
    let target = Target::lm(model.clone(), 1, Site::ResidPost).unwrap();
    assert!(matches!(
        Splice::new(target, vec![vec![0, 1, 2]], Vec::new()).measure(&sae),
        Err(modelbin_infer::Error::Sae(
            modelbin_infer::SaeError::ModelWidth { sae: 16, model: 32 }
        ))
    ));
}
