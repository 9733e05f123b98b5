//! `modelbin lm logits|generate` on tiny random GPT-2 directories: the
//! numbers equal the library's, steering by an autoencoder's latents adds
//! its decoder rows at its hook, and the refusals (an autoencoder trained
//! on another model, a steering that leaves float32, flags that do not
//! fit) exit with one line naming the cause.

mod common;

use common::lm::{HIDDEN, VOCAB, sae_on, tiny_gpt2};
use common::{fails, ok, s, usage};
use modelbin_infer::generation::Sampling;
use modelbin_infer::lm::{LanguageModel, generate};
use serde_json::{Value, json};

/// A tiny model in `root/name`, drawn from `seed`.
fn model(root: &std::path::Path, name: &str, seed: u64) -> std::path::PathBuf {
    let dir = root.join(name);
    tiny_gpt2(&dir, 2, seed);
    dir
}

/// An autoencoder at `hook` trained (its cfg says) on the model at `on`.
fn sae(root: &std::path::Path, name: &str, on: &std::path::Path, hook: &str) -> std::path::PathBuf {
    let dir = root.join(name);
    let checkpoint = modelbin_infer::identity::checkpoint_id(on).unwrap();
    sae_on(&dir, 16, json!({"hook_name": hook, "model": checkpoint}));
    dir
}

fn floats(value: &Value) -> Vec<f32> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() as f32)
        .collect()
}

#[test]
fn logits_equal_the_library_s() {
    let root = tempfile::tempdir().unwrap();
    let dir = model(root.path(), "gpt2", 1);
    let library = LanguageModel::open(&dir)
        .unwrap()
        .logits(&[5, 6, 7])
        .unwrap();
    let last: Value =
        serde_json::from_str(&ok(&["lm", "logits", "-m", s(&dir), "--ids", "5,6,7"], "")).unwrap();
    assert_eq!(floats(&last), library[2 * VOCAB..]);
    let all: Value = serde_json::from_str(&ok(
        &["lm", "logits", "-m", s(&dir), "--ids", "5 6", "7", "--all"],
        "",
    ))
    .unwrap();
    let rows: Vec<f32> = all.as_array().unwrap().iter().flat_map(floats).collect();
    assert_eq!(rows, library);
    // A text prompt is the tokenizer's ids: one per byte here.
    let text: Value = serde_json::from_str(&ok(
        &["lm", "logits", "-m", s(&dir), "--prompt", "\u{5}\u{6}\u{7}"],
        "",
    ))
    .unwrap();
    assert_eq!(text, last);
}

#[test]
fn greedy_generation_equals_the_library_s() {
    let root = tempfile::tempdir().unwrap();
    let dir = model(root.path(), "gpt2", 2);
    let lm = LanguageModel::open(&dir).unwrap();
    let want = generate(&lm, &[5, 6], 6, Sampling::default(), &[], |_| {}).unwrap();
    let out: Value = serde_json::from_str(&ok(
        &[
            "lm",
            "generate",
            "-m",
            s(&dir),
            "--ids",
            "5,6",
            "--max-tokens",
            "6",
            "--json",
            "--stop",
            "999",
        ],
        "",
    ))
    .unwrap();
    assert_eq!(out["ids"], json!(want.ids));
    assert_eq!(out["stopped"], "max_tokens");
}

#[test]
fn steering_adds_the_decoder_rows_at_the_autoencoder_s_hook() {
    let root = tempfile::tempdir().unwrap();
    let dir = model(root.path(), "gpt2", 3);
    let at_0 = sae(root.path(), "sae", &dir, "blocks.0.hook_resid_post");
    // `lm generate` of ids 5,6 for `max_tokens`, steered by each pair with
    // the autoencoder at block 0 (none: the plain model).
    let args = |max_tokens: &'static str, steer: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = ["lm", "generate", "-m", s(&dir), "--ids", "5,6"]
            .into_iter()
            .chain(["--max-tokens", max_tokens, "--stop", "999"])
            .map(String::from)
            .collect();
        if !steer.is_empty() {
            args.extend(["--sae".into(), s(&at_0).into()]);
        }
        for pair in steer {
            args.extend(["--steer".into(), pair.to_string()]);
        }
        args
    };
    let generate = |steer: &[&str]| -> Value {
        let mut args = args("8", steer);
        args.push("--json".into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        serde_json::from_str(&ok(&args, "")).unwrap()
    };
    let plain = generate(&[]);
    // α = 0 is the plain model.
    assert_eq!(generate(&["0:0"])["ids"], plain["ids"]);
    // A push large enough to swamp the residual stream: past 1e19 the
    // squares overflow float32 and the norms run in f64, and the model's
    // answer is the same as to any push that swamps it (1e15 here, whose
    // squares fit).
    let swamped = generate(&["3:1e15"]);
    for alpha in ["3:1e30", "3:-1e30", "3:3e38"] {
        let pushed = generate(&[alpha]);
        let want = if alpha.contains('-') {
            generate(&["3:-1e15"])
        } else {
            swamped.clone()
        };
        assert_eq!(pushed["ids"], want["ids"], "{alpha}");
    }
    // Four pushes of 3e38 along a unit row (some value of which is at
    // least 1/√8) leave float32's range: refused, naming them and the hook.
    let args = args("4", &["3:3e38"; 4]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let err = fails(&args, "");
    assert!(
        err.contains("steering by latent 3 × 3e38, latent 3 × 3e38, latent 3 × 3e38, latent 3 × 3e38 at")
            && err.contains(" at blocks.0.hook_resid_post: the steered residual stream is no longer finite in float32"),
        "{err}"
    );
}

/// `lm generate` of one token after id 5 from `model`, steered by `pair`
/// with the autoencoder `sae` (none: `--steer` alone).
fn steered<'a>(
    model: &'a std::path::Path,
    sae: Option<&'a std::path::Path>,
    pair: &'a str,
) -> Vec<&'a str> {
    let mut args = vec![
        "lm",
        "generate",
        "-m",
        s(model),
        "--ids",
        "5",
        "--max-tokens",
        "1",
    ];
    if let Some(sae) = sae {
        args.extend(["--sae", s(sae)]);
    }
    args.extend(["--steer", pair]);
    args
}

#[test]
fn steering_refuses_an_autoencoder_of_another_model_hook_or_latent() {
    let root = tempfile::tempdir().unwrap();
    let dir = model(root.path(), "gpt2", 4);
    let other = model(root.path(), "other", 5);
    let of_other = sae(root.path(), "of-other", &other, "blocks.0.hook_resid_post");
    let err = fails(&steered(&dir, Some(&of_other), "0:1"), "");
    assert!(err.contains("was trained on sha256-tensors:"), "{err}");
    // The same tensors sharded are the same model.
    let sharded = root.path().join("sharded");
    tiny_gpt2(&sharded, 2, 5);
    shard(&sharded);
    ok(&steered(&sharded, Some(&of_other), "0:1"), "");
    // A hook the model has no such block for, and a latent past the
    // autoencoder's.
    let deep = sae(root.path(), "deep", &dir, "blocks.7.hook_resid_post");
    let err = fails(&steered(&dir, Some(&deep), "0:1"), "");
    assert!(err.contains("layer 7: the model has 2 layers"), "{err}");
    let at_0 = sae(root.path(), "at-0", &dir, "blocks.0.hook_mlp_out");
    let err = usage(&steered(&dir, Some(&at_0), "16:1"), "");
    assert!(
        err.contains("--steer 16:…: the autoencoder has 16 latents"),
        "{err}"
    );
    // --steer needs --sae, and an alpha that is a finite number.
    usage(&steered(&dir, None, "0:1"), "");
    usage(&steered(&dir, Some(&at_0), "0:inf"), "");
}

#[test]
fn configuration_values_of_the_wrong_type_are_refused_by_key() {
    let root = tempfile::tempdir().unwrap();
    let dir = model(root.path(), "gpt2", 6);
    let config_path = dir.join("config.json");
    let config: Value = serde_json::from_slice(&std::fs::read(&config_path).unwrap()).unwrap();
    for value in [json!("yes"), json!("no"), json!(1)] {
        let mut edited = config.clone();
        edited["scale_attn_by_inverse_layer_idx"] = value;
        std::fs::write(&config_path, edited.to_string()).unwrap();
        let err = fails(&["lm", "logits", "-m", s(&dir), "--ids", "5"], "");
        assert!(
            err.contains("config.json scale_attn_by_inverse_layer_idx"),
            "{err}"
        );
    }
    assert_eq!(HIDDEN, 8);
}

/// Splits `dir`'s `model.safetensors` into two shards with an index, as
/// `save_pretrained` does past its shard size.
fn shard(dir: &std::path::Path) {
    use modelbin_format::TensorStore;
    let single = dir.join("model.safetensors");
    let file = modelbin_format::safetensors::open(&single).unwrap();
    let names: Vec<String> = file.names().map(str::to_owned).collect();
    let (first, second) = names.split_at(names.len() / 2);
    let mut map = serde_json::Map::new();
    for (shard, part) in [("a.safetensors", first), ("b.safetensors", second)] {
        let views: Vec<_> = part.iter().map(|name| file.tensor(name).unwrap()).collect();
        modelbin_format::safetensors::write_file(dir.join(shard), views, None, &mut |_, _| {})
            .unwrap();
        for name in part {
            map.insert(name.clone(), shard.into());
        }
    }
    let index = json!({"metadata": {}, "weight_map": map});
    std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
    drop(file);
    std::fs::remove_file(single).unwrap();
}

#[test]
fn an_autoencoder_of_another_hook_is_refused_by_eval_and_features() {
    let root = tempfile::tempdir().unwrap();
    let dir = model(root.path(), "gpt2", 8);
    let text = root.path().join("a.txt");
    std::fs::write(
        &text,
        "the quick brown fox jumps over the lazy dog ".repeat(8),
    )
    .unwrap();
    let acts = root.path().join("acts");
    ok(
        &[
            "acts",
            "record",
            "-m",
            s(&dir),
            s(&text),
            "-o",
            s(&acts),
            "--layers",
            "1",
            "--tokens-per-text",
            "8",
        ],
        "",
    );
    let dataset = modelbin_format::saev::datasets_in(&acts).remove(0);
    let mlp = sae(root.path(), "mlp", &dir, "blocks.1.hook_mlp_out");
    let resid = sae(root.path(), "resid", &dir, "blocks.1.hook_resid_post");
    for command in [&["sae", "eval"][..], &["sae", "features"][..]] {
        let mut args = command.to_vec();
        args.extend([s(&mlp), s(&dataset), "--layer", "1"]);
        let err = fails(&args, "");
        assert!(
            err.contains("was trained at blocks.1.hook_mlp_out; the dataset's layer was recorded at blocks.1.hook_resid_post"),
            "{command:?}: {err}"
        );
    }
    let measured: Value = serde_json::from_str(&ok(
        &[
            "sae",
            "eval",
            s(&resid),
            s(&dataset),
            "--layer",
            "1",
            "--model",
            s(&dir),
            "--json",
            "--ce-windows",
            "2",
        ],
        "",
    ))
    .unwrap();
    assert!(
        measured["cross_entropy"]["recovered"].is_number(),
        "{measured}"
    );
}
