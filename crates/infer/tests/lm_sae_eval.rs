//! The reconstruction evals of an autoencoder spliced into a decoder
//! language model against SAELens's definition computed with transformers
//! (tests/reference/lm_sae_eval_reference.py, run in the heavy venv): a
//! random GPT-2, Llama, Gemma 2 and Gemma 3, autoencoders saved by SAELens at
//! resid_post, mlp_out and attn_out, the special tokens taken from the
//! model's tokenizer. Every number within 1e-4. The same autoencoders
//! steer the models: the logits with `α · W_dec[latent]` added at the site
//! equal transformers' with the same forward hook, α = 0 generates exactly
//! what the plain model does, and a large α raises the token the latent's
//! decoder row raises most through the unembedding and makes transformers'
//! likeliest token ours. Gemma 2 and Gemma 3 carry JumpReLU autoencoders
//! as Gemma Scope's (on raw inputs, `b_dec` not subtracted).

mod heavy;

use std::path::Path;

use modelbin_infer::generation::{Sampling, generate_with};
use modelbin_infer::lm::{LanguageModel, Site, Steered, generate};
use modelbin_infer::model::{HookedModel, OpenOptions};
use modelbin_infer::sae::config::SaeConfig;
use modelbin_infer::sae::splice::{Splice, Target};
use modelbin_infer::sae::steer::steering;
use modelbin_infer::sae::{Sae, saelens};
use serde_json::Value;

const TOLERANCE: f64 = 1e-4;

#[test]
fn evals_and_steering_equal_transformers_and_saelens() {
    let dir = tempfile::tempdir().unwrap();
    heavy::run("tests/reference/lm_sae_eval_reference.py", &[dir.path()]);
    for name in ["gpt2", "llama", "gemma2", "gemma3"] {
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
        let opened =
            modelbin_infer::lm::TokenizedModel::open(&model_dir, OpenOptions::default()).unwrap();
        let special = opened.tokens().unwrap().special_tokens();
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
            check_steering(&model, &model_dir.join(case), &windows[0], want);
        }
        check_refusals(&model_dir, &model);
    }
}

/// Steering by the autoencoder in `dir` against transformers' hook, at
/// α = 0 against the plain model, and at a large α.
fn check_steering(model: &LanguageModel, dir: &Path, ids: &[u32], want: &Value) {
    let (sae, config) = saelens::load(dir).unwrap();
    let steer: Vec<(usize, f32)> = want["steer"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_u64().unwrap() as usize,
                p[1].as_f64().unwrap() as f32,
            )
        })
        .collect();
    let steered = steering(model, model.dir(), &sae, dir, &config, &steer).unwrap();
    let ours = steered.session(model).extend(ids, true).unwrap();
    let theirs: Vec<f64> = want["steered"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()))
        .collect();
    let scale = theirs.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let worst = ours
        .iter()
        .zip(&theirs)
        .fold(0.0f64, |m, (&a, &b)| m.max((f64::from(a) - b).abs()));
    assert!(
        worst <= TOLERANCE * scale,
        "{}: steered logits off by {worst:e}",
        dir.display()
    );
    // α = 0: the plain logits, bit for bit, and the plain generation.
    let latent = want["latent"].as_u64().unwrap() as usize;
    let zero = steering(model, model.dir(), &sae, dir, &config, &[(latent, 0.0)]).unwrap();
    assert_eq!(
        zero.session(model).extend(ids, true).unwrap(),
        model.logits(ids).unwrap()
    );
    let stop: &[u32] = &[];
    let plain = generate(model, &ids[..4], 12, Sampling::default(), stop, |_| {}).unwrap();
    let same = generate_with(
        &Steered::new(model, &zero),
        &ids[..4],
        12,
        Sampling::default(),
        stop,
        |_| {},
    );
    assert_eq!(same.unwrap().ids, plain.ids);
    // A large α raises the latent's top token, and the likeliest token is
    // transformers' under the same push.
    let top = want["top_raised"].as_u64().unwrap() as usize;
    let alpha = want["big_alpha"].as_f64().unwrap() as f32;
    let big = steering(model, model.dir(), &sae, dir, &config, &[(latent, alpha)]).unwrap();
    let vocab = model.config().vocab_size;
    let last = |logits: Vec<f32>| logits[logits.len() - vocab..].to_vec();
    let before = probabilities(&last(model.logits(ids).unwrap()));
    let after = probabilities(&last(big.session(model).extend(ids, true).unwrap()));
    assert!(
        after[top] > before[top],
        "{}: {} -> {}",
        dir.display(),
        before[top],
        after[top]
    );
    let argmax = (0..vocab)
        .max_by(|&a, &b| after[a].total_cmp(&after[b]))
        .unwrap();
    assert_eq!(
        argmax as u64,
        want["big_argmax"].as_u64().unwrap(),
        "{}",
        dir.display()
    );
    refuse_latent(model, &sae, dir, &config);
}

/// A latent past the autoencoder's, and a configuration without a hook
/// name, are refused by their variants.
fn refuse_latent(model: &LanguageModel, sae: &Sae<f32>, dir: &Path, config: &SaeConfig) {
    assert!(matches!(
        steering(model, model.dir(), sae, dir, config, &[(sae.d_sae, 1.0)]),
        Err(modelbin_infer::Error::Sae(
            modelbin_infer::SaeError::NoSuchLatent { .. }
        ))
    ));
    let mut unhooked = config.clone();
    unhooked.hook_name = None;
    assert!(matches!(
        steering(model, model.dir(), sae, dir, &unhooked, &[(0, 1.0)]),
        Err(modelbin_infer::Error::Sae(
            modelbin_infer::SaeError::NoHookName { .. }
        ))
    ));
    let mut odd = config.clone();
    odd.hook_name = Some("blocks.0.attn.hook_z".into());
    assert!(matches!(
        steering(model, model.dir(), sae, dir, &odd, &[(0, 1.0)]),
        Err(modelbin_infer::Error::Sae(
            modelbin_infer::SaeError::UnknownHook { .. }
        ))
    ));
    let mut deep = config.clone();
    deep.hook_name = Some("blocks.9.hook_resid_post".into());
    assert!(matches!(
        steering(model, model.dir(), sae, dir, &deep, &[(0, 1.0)]),
        Err(modelbin_infer::Error::Lm(
            modelbin_infer::LmError::NoSuchLayer { layer: 9, .. }
        ))
    ));
}

/// `softmax(logits)` in f64.
fn probabilities(logits: &[f32]) -> Vec<f64> {
    let max = logits.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let exp: Vec<f64> = logits.iter().map(|&v| f64::from(v - max).exp()).collect();
    let sum: f64 = exp.iter().sum();
    exp.iter().map(|e| e / sum).collect()
}

/// A layer past the model's blocks and an autoencoder of another width
/// are refused by their variants.
fn check_refusals(dir: &Path, model: &LanguageModel) {
    let layers = model.config().layers as i64;
    assert!(matches!(
        Target::lm(model.clone(), layers, Site::ResidPost),
        Err(modelbin_infer::Error::Lm(
            modelbin_infer::LmError::NoSuchLayer { .. }
        ))
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
