//! `modelbin sae train|eval` end to end on small SAEV datasets.

mod common;

use std::path::{Path, PathBuf};

use common::{fails, ok, s, usage};
use modelbin_format::saev::{Metadata, Writer};

fn refs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// A dataset of `n_imgs` images of 1 CLS + 4 patches of width `d` at
/// layers -2 and -1, values from a sine, with `poison` (image, layer index,
/// token) set to NaN.
fn dataset(root: &Path, d: u64, poison: Option<(usize, usize, usize)>) -> PathBuf {
    let metadata = Metadata {
        vit_family: "test".into(),
        vit_ckpt: "sine".into(),
        layers: vec![-2, -1],
        n_patches_per_img: 4,
        cls_token: true,
        d_vit: d,
        seed: 0,
        n_imgs: 64,
        max_patches_per_shard: 200,
        data: "sine values".into(),
    };
    let per_img = 2 * 5 * d as usize;
    let mut writer = Writer::create(root, metadata).unwrap();
    for img in 0..64 {
        let mut values: Vec<f32> = (0..per_img)
            .map(|i| ((img * per_img + i) as f32 * 0.37).sin())
            .collect();
        if let Some((at_img, layer, token)) = poison
            && at_img == img
        {
            values[(layer * 5 + token) * d as usize] = f32::NAN;
        }
        writer.push(&values).unwrap();
    }
    writer.finish().unwrap()
}

#[test]
fn train_then_eval_in_saelens_layout() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(&dir.path().join("acts"), 16, None);
    let out = dir.path().join("sae");
    let log = dir.path().join("log.jsonl");
    let train = |out: &Path, extra: &[&str]| {
        let mut args = vec![
            "sae",
            "train",
            s(&data),
            "--layer",
            "-1",
            "--d-sae",
            "64",
            "-k",
            "4",
            "--steps",
            "30",
            "--batch-size",
            "64",
            "-o",
            s(out),
        ];
        args.extend(extra);
        ok(&args, "")
    };
    let summary: serde_json::Value =
        serde_json::from_str(&train(&out, &["--log", s(&log), "--json"])).unwrap();
    assert_eq!(summary["steps"], 30);
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 30);
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("cfg.json")).unwrap()).unwrap();
    assert_eq!(
        (
            config["d_in"].as_u64(),
            config["d_sae"].as_u64(),
            config["k"].as_u64()
        ),
        (Some(16), Some(64), Some(4))
    );
    assert_eq!(config["metadata"]["layer"], -1);
    assert_eq!(config["metadata"]["patches"], "image");
    let eval: serde_json::Value = serde_json::from_str(&ok(
        &["sae", "eval", s(&out), s(&data), "--layer", "-1", "--json"],
        "",
    ))
    .unwrap();
    assert_eq!(eval["vectors"], 64 * 4);
    assert!(eval["l0"].as_f64().unwrap() <= 4.0);
    let explained = eval["explained_variance"].as_f64().unwrap();
    assert!(explained > 0.0 && explained <= 1.0, "{eval}");
    let histogram: Vec<u64> = serde_json::from_value(eval["density_histogram"].clone()).unwrap();
    assert_eq!(histogram.iter().sum::<u64>(), 64);
    // inspect and verify take the autoencoder's directory (its weights).
    let inspected: serde_json::Value =
        serde_json::from_str(&ok(&["inspect", "--json", s(&out)], "")).unwrap();
    assert_eq!(inspected["format"], "safetensors");
    assert_eq!(inspected["tensor_count"], 4);
    ok(&["verify", s(&out)], "");
    // Same seed, same autoencoder.
    let again = dir.path().join("again");
    train(&again, &[]);
    assert_eq!(
        std::fs::read(out.join("sae_weights.safetensors")).unwrap(),
        std::fs::read(again.join("sae_weights.safetensors")).unwrap()
    );
}

#[test]
fn checkpoints_resume_and_refuse_other_settings() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(&dir.path().join("acts"), 16, None);
    let out = dir.path().join("sae");
    let train = |steps: &str, extra: &[&str]| {
        let mut args = vec![
            "sae".to_string(),
            "train".into(),
            s(&data).into(),
            "--layer=-1".into(),
            "--d-sae".into(),
            "32".into(),
            "-k".into(),
            "4".into(),
            "--batch-size".into(),
            "16".into(),
            "--steps".into(),
            steps.into(),
            "-o".into(),
            s(&out).into(),
            "--json".into(),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        if !extra.contains(&"--threads") {
            args.extend(["--threads".to_string(), "2".to_string()]);
        }
        args
    };
    let err = usage(&refs(&train("6", &["--resume"])), "");
    assert!(err.contains("holds no checkpoint"), "{err}");
    ok(&refs(&train("6", &["--checkpoint-every", "3"])), "");
    let checkpoint = out.join("checkpoint.safetensors");
    assert!(checkpoint.is_file());
    let err = usage(&refs(&train("6", &["--resume"])), "");
    assert!(err.contains("already trained for 6 steps"), "{err}");
    // A run that stopped after its last checkpoint but before saving is
    // saved by --resume; a new run does not silently replace a checkpoint.
    std::fs::remove_file(out.join("cfg.json")).unwrap();
    let saved = ok(&refs(&train("6", &["--resume"])), "");
    assert!(saved.contains("nothing left to train"), "{saved}");
    assert!(out.join("cfg.json").is_file());
    std::fs::remove_file(out.join("cfg.json")).unwrap();
    let err = usage(&refs(&train("6", &[])), "");
    assert!(
        err.contains("holds a run's checkpoint; pass --resume"),
        "{err}"
    );
    ok(&refs(&train("6", &["--resume"])), "");
    let err = usage(&refs(&train("9", &["--resume", "--lr", "0.01"])), "");
    assert!(
        err.contains("other settings: lr 0.01 (checkpoint: 0.001)"),
        "{err}"
    );
    let err = usage(&refs(&train("9", &["--resume", "--threads", "1"])), "");
    assert!(
        err.contains("threads 1 (checkpoint: 2) — pass --threads 2"),
        "{err}"
    );
    let resumed: serde_json::Value =
        serde_json::from_str(&ok(&refs(&train("9", &["--resume"])), "")).unwrap();
    assert_eq!(resumed["steps"], 9);
    let (_, config) = modelbin_infer::sae::saelens::load(&out).unwrap();
    assert_eq!(config.json["metadata"]["steps"], 9);
}

#[test]
fn batchtopk_and_jumprelu_save_jumprelu_autoencoders_and_relu_a_standard_one() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(&dir.path().join("acts"), 16, None);
    for (architecture, saved) in [
        ("batchtopk", "jumprelu"),
        ("relu", "standard"),
        ("jumprelu", "jumprelu"),
    ] {
        let out = dir.path().join(architecture);
        ok(
            &[
                "sae",
                "train",
                s(&data),
                "--layer",
                "-1",
                "--architecture",
                architecture,
                "--d-sae",
                "64",
                "-k",
                "4",
                "--steps",
                "30",
                "--batch-size",
                "64",
                "-o",
                s(&out),
            ],
            "",
        );
        let (sae, config) = modelbin_infer::sae::saelens::load(&out).unwrap();
        assert_eq!(config.json["architecture"], saved);
        assert_eq!(config.json["metadata"]["trained_as"], architecture);
        match (&sae.activation, architecture) {
            (modelbin_infer::sae::Activation::JumpRelu(threshold), "batchtopk") => {
                assert!(threshold[0] > 0.0 && threshold.iter().all(|&t| t == threshold[0]));
                assert_eq!(config.json["metadata"]["k"], 4);
            }
            (modelbin_infer::sae::Activation::Relu, "relu") => {
                assert_eq!(config.json["metadata"]["l1_coeff"], 5.0);
            }
            // Thresholds learned one per latent, none below zero.
            (modelbin_infer::sae::Activation::JumpRelu(threshold), "jumprelu") => {
                assert!(threshold.iter().all(|&t| t >= 0.0));
                assert!(threshold.iter().any(|&t| t != threshold[0]));
                assert_eq!(config.json["metadata"]["l0_coeff"], 1.0);
                assert_eq!(config.json["metadata"]["bandwidth"], 0.05);
            }
            (other, _) => panic!("{architecture}: {other:?}"),
        }
        let eval: serde_json::Value = serde_json::from_str(&ok(
            &["sae", "eval", s(&out), s(&data), "--layer", "-1", "--json"],
            "",
        ))
        .unwrap();
        assert!(eval["l0"].as_f64().unwrap() > 0.0, "{architecture}: {eval}");
    }
}

/// Settings out of range are usage errors naming the flag, refused before
/// the dataset is read (it does not exist here) and before any output.
#[test]
fn settings_out_of_range_name_their_flag() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-dataset");
    let out = dir.path().join("sae");
    let cases: [(&[&str], &str); 7] = [
        (
            &["--d-sae", "0"],
            "invalid value '0' for '--d-sae': must be at least 1",
        ),
        (
            &["-k", "0"],
            "invalid value '0' for '-k': must be at least 1",
        ),
        (
            &["--steps", "0"],
            "invalid value '0' for '--steps': must be at least 1",
        ),
        (
            &["--lr", "0"],
            "invalid value '0' for '--lr': must be a finite number > 0",
        ),
        (
            &["--lr", "inf"],
            "invalid value 'inf' for '--lr': must be a finite number > 0",
        ),
        (
            &["--architecture", "relu", "--l1-coeff=-1"],
            "invalid value '-1' for '--l1-coeff': must be a finite number > 0",
        ),
        (
            &["--batch-size", "0"],
            "invalid value '0' for '--batch-size': must be at least 1",
        ),
    ];
    for (flags, message) in cases {
        let mut args = vec!["sae", "train", s(&missing), "--layer", "-1", "-o", s(&out)];
        args.extend_from_slice(flags);
        let err = usage(&args, "");
        assert!(err.contains(message), "{flags:?}: {err}");
        assert!(!out.exists(), "{flags:?}");
    }
}

#[test]
fn bad_input_is_refused_before_training() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(&dir.path().join("acts"), 8, None);
    let out = dir.path().join("sae");
    let base = [
        "sae",
        "train",
        s(&data),
        "--steps",
        "2",
        "--d-sae",
        "16",
        "-k",
        "2",
    ];
    let train = |extra: &[&str]| -> Vec<String> {
        base.iter().chain(extra).map(|a| a.to_string()).collect()
    };
    let err = usage(&refs(&train(&["--layer", "5", "-o", s(&out)])), "");
    assert!(
        err.contains("--layer 5: the dataset recorded layers [-2, -1]"),
        "{err}"
    );
    let err = usage(
        &[
            "sae",
            "train",
            s(&data),
            "--layer",
            "-1",
            "--d-sae",
            "16",
            "-k",
            "32",
            "-o",
            s(&out),
        ],
        "",
    );
    assert!(err.contains("-k 32 is more than --d-sae 16"), "{err}");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let err = fails(
        &refs(&train(&["--layer", "-1", "-o", s(&file.join("sub"))])),
        "",
    );
    assert!(err.contains("a-file"), "{err}");
    ok(&refs(&train(&["--layer", "-1", "-o", s(&out)])), "");
    let err = usage(&refs(&train(&["--layer", "-1", "-o", s(&out)])), "");
    assert!(err.contains("holds an autoencoder; pass --force"), "{err}");
    ok(
        &refs(&train(&["--layer", "-1", "-o", s(&out), "--force"])),
        "",
    );
    // Decoder effects and the cross-entropy need a recording of a model
    // they read.
    for (command, needs) in [
        (
            "features",
            "decoder effects are read from TLLM, BERT and decoder language models",
        ),
        (
            "eval",
            "the cross-entropy is measured on TLLM and decoder language-model recordings",
        ),
    ] {
        let err = usage(
            &[
                "sae",
                command,
                s(&out),
                s(&data),
                "--layer",
                "-1",
                "--model",
                s(&out.join("cfg.json")),
            ],
            "",
        );
        assert!(
            err.contains(&format!(
                "--model: the dataset was recorded from a \"test\" model; {needs}"
            )),
            "{err}"
        );
    }
    // An autoencoder for other vectors.
    let wide = dataset(&dir.path().join("wide"), 12, None);
    let err = fails(&["sae", "eval", s(&out), s(&wide), "--layer", "-1"], "");
    assert!(
        err.contains("takes vectors of 8 values, the dataset holds 12"),
        "{err}"
    );
    // NaN in the data: named by its coordinates.
    let poisoned = dataset(&dir.path().join("nan"), 8, Some((9, 1, 3)));
    let err = fails(
        &[
            "sae",
            "train",
            s(&poisoned),
            "--layer",
            "-1",
            "--steps",
            "2",
            "-o",
            s(&dir.path().join("p")),
        ],
        "",
    );
    assert!(
        err.contains("image 9, layer -1, token 3 holds NaN or Inf"),
        "{err}"
    );
}

#[test]
fn features_over_a_union_of_text_slices_are_the_datasets() {
    let dir = tempfile::tempdir().unwrap();
    let (model, _, data, sae) = text_recording(dir.path());
    // Windows 0..5, 5 alone, and 6 to the end.
    let unions = common::slices::union_of_slices(&data, &[0, 5, 6], &dir.path().join("slices"));
    for patches in ["all", "image"] {
        let more = ["--patches", patches, "--samples", "3", "--model", s(&model)];
        let found = common::slices::assert_same_features(&sae, &data, &unions, &more);
        // Inputs of the later members are shown, and those in the first
        // 12 tokens of a member show the text before them, its
        // neighbour's.
        let contexts: Vec<(u64, u64)> = found
            .lines()
            .flat_map(|line| {
                let feature: serde_json::Value = serde_json::from_str(line).unwrap();
                let mut hits = feature["top"].as_array().unwrap().clone();
                for q in feature["quantiles"].as_array().unwrap() {
                    hits.extend(q["samples"].as_array().unwrap().iter().cloned());
                }
                hits.into_iter()
                    .map(|h| (h["img"].as_u64().unwrap(), h["token"].as_u64().unwrap()))
            })
            .collect();
        assert!(contexts.iter().any(|c| c.0 >= 6), "{contexts:?}");
        let across = contexts
            .iter()
            .filter(|c| (c.0 == 5 || c.0 == 6) && c.1 < 12)
            .count();
        println!(
            "--patches {patches}: {across} of {} contexts run into another member",
            contexts.len()
        );
        assert!(across > 0);
    }
}

/// A TLLM, the text it recorded (`acts record`, token ids kept) and an
/// autoencoder trained over the `all` view of layer -1, under `dir`:
/// (model, text, dataset, autoencoder).
fn text_recording(dir: &Path) -> (PathBuf, String, PathBuf, PathBuf) {
    let model = dir.join("m.tllm");
    ok(
        &[
            "tllm",
            "init",
            "--seq",
            "16",
            "--seed",
            "2",
            "-o",
            s(&model),
        ],
        "",
    );
    let text = dir.join("t.txt");
    let content = "Features are read back in the words that made them fire. ".repeat(4);
    std::fs::write(&text, &content).unwrap();
    let root = dir.join("acts");
    let recorded: serde_json::Value = serde_json::from_str(&ok(
        &[
            "acts",
            "record",
            "-m",
            s(&model),
            "-o",
            s(&root),
            "--json",
            s(&text),
        ],
        "",
    ))
    .unwrap();
    let data = PathBuf::from(recorded["path"].as_str().unwrap());
    let out = dir.join("sae");
    ok(
        &[
            "sae",
            "train",
            s(&data),
            "--layer",
            "-1",
            "--patches",
            "all",
            "--d-sae",
            "32",
            "-k",
            "4",
            "--steps",
            "10",
            "--batch-size",
            "32",
            "-o",
            s(&out),
        ],
        "",
    );
    (model, content, data, out)
}

#[test]
fn features_show_the_text_around_the_strongest_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let (model, content, data, out) = text_recording(dir.path());
    let data = s(&data);
    let html = dir.path().join("f.html");
    let features_of = |more: &[&str]| {
        let args = [
            "sae",
            "features",
            s(&out),
            data,
            "--layer",
            "-1",
            "--patches",
            "all",
            "--latents",
            "3",
            "--top",
            "2",
            "--model",
            s(&model),
        ];
        ok(&[&args[..], more].concat(), "")
    };
    let lines = features_of(&["--json", "--html", s(&html)]);
    let features: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(features.len(), 3);
    for feature in &features {
        let fired = feature["fired"].as_u64().unwrap();
        let counted = |list: &serde_json::Value, key: &str| -> u64 {
            list.as_array()
                .unwrap()
                .iter()
                .map(|v| {
                    if key.is_empty() {
                        v.as_u64().unwrap()
                    } else {
                        v[key].as_u64().unwrap()
                    }
                })
                .sum()
        };
        // Every firing lands in one histogram bin and one interval.
        assert_eq!(counted(&feature["histogram"], ""), fired, "{feature}");
        assert_eq!(counted(&feature["quantiles"], "fired"), fired, "{feature}");
        let samples = feature["quantiles"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|q| q["samples"].as_array().unwrap());
        for hit in feature["top"].as_array().unwrap().iter().chain(samples) {
            let at = (hit["img"].as_u64().unwrap() * 16 + hit["token"].as_u64().unwrap()) as usize;
            let here = hit["at"].as_u64().unwrap() as usize;
            // The token is the recorded text's byte, the text around it
            // is the text's, and the activation read again on it is the
            // first pass's (to four digits).
            assert_eq!(hit["tokens"][here], content[at..at + 1], "{hit}");
            let tokens: String = hit["tokens"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
                .collect();
            assert!(content[at - here..].starts_with(&tokens), "{hit}");
            let value = hit["value"].as_f64().unwrap();
            let shaded = hit["acts"][here].as_f64().unwrap();
            assert!((shaded - value).abs() <= 5e-4 * value, "{hit}");
        }
        let effects = &feature["effects"]["logits"];
        assert_eq!(effects["raised"].as_array().unwrap().len(), 8, "{feature}");
        assert!(
            effects["raised"][0]["value"].as_f64() > effects["lowered"][0]["value"].as_f64(),
            "{feature}"
        );
    }
    // As text: each latent's strongest inputs, the token each sits on in
    // brackets and shown by itself (a space as ␣), and the tokens its
    // decoder raises and lowers, as --json lists them.
    let text = features_of(&[]);
    let mut spaces = 0;
    for feature in &features {
        for hit in feature["top"].as_array().unwrap() {
            let tokens: Vec<&str> = hit["tokens"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
                .collect();
            let at = hit["at"].as_u64().unwrap() as usize;
            let shown = match tokens[at] {
                "" => "∅".to_owned(),
                token => token.replace(' ', "␣"),
            };
            spaces += usize::from(tokens[at] == " ");
            let line = format!(
                "{}[{shown}]{}",
                tokens[..at].concat(),
                tokens[at + 1..].concat()
            );
            assert!(text.contains(&line), "{line:?} in\n{text}");
        }
        for (key, label) in [("raised", "raises"), ("lowered", "lowers")] {
            let listed: Vec<String> = feature["effects"]["logits"][key]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    let token = t["token"].as_str().unwrap();
                    assert!(!token.contains(' ') && !token.is_empty(), "{t}");
                    format!("{token} {:.3}", t["value"].as_f64().unwrap() as f32)
                })
                .collect();
            let line = format!("  {label} the next token: {}", listed.join(", "));
            assert!(text.contains(&line), "{line:?} in\n{text}");
        }
    }
    println!("{spaces} of the strongest inputs sit on a space");
    let page = std::fs::read_to_string(&html).unwrap();
    // The page's data: the index as columns, each latent's view as a string.
    assert!(page.starts_with("<!doctype html>"));
    assert!(page.contains("\"latent\":[") && page.contains("\"details\":["));
    // The cross-entropy with the reconstruction spliced into the model.
    let eval: serde_json::Value = serde_json::from_str(&ok(
        &[
            "sae",
            "eval",
            s(&out),
            data,
            "--layer=-1",
            "--patches",
            "all",
            "--model",
            s(&model),
            "--ce-windows",
            "3",
            "--json",
        ],
        "",
    ))
    .unwrap();
    let ce = &eval["cross_entropy"];
    assert_eq!(
        (ce["windows"].as_u64(), ce["tokens"].as_u64()),
        (Some(3), Some(45))
    );
    let (clean, spliced, zero) = (
        ce["clean"].as_f64().unwrap(),
        ce["spliced"].as_f64().unwrap(),
        ce["zero_ablated"].as_f64().unwrap(),
    );
    assert!(clean > 0.0 && spliced > 0.0 && zero > 0.0, "{ce}");
    assert!(((zero - spliced) / (zero - clean) - ce["recovered"].as_f64().unwrap()).abs() < 1e-9);
    // The KL to the clean model, at every position (bytes have no special
    // tokens).
    let (kl, kl_zero) = (
        ce["kl_spliced"].as_f64().unwrap(),
        ce["kl_zero_ablated"].as_f64().unwrap(),
    );
    assert_eq!(ce["kl_positions"].as_u64(), Some(48));
    assert!(kl >= 0.0 && kl_zero > 0.0, "{ce}");
    assert!(((kl_zero - kl) / kl_zero - ce["kl_recovered"].as_f64().unwrap()).abs() < 1e-9);
    let other = dir.path().join("other.tllm");
    ok(
        &[
            "tllm",
            "init",
            "--seq",
            "16",
            "--seed",
            "3",
            "-o",
            s(&other),
        ],
        "",
    );
    // Both commands that read the model refuse another one.
    for command in ["eval", "features"] {
        let err = usage(
            &[
                "sae",
                command,
                s(&out),
                data,
                "--layer=-1",
                "--model",
                s(&other),
            ],
            "",
        );
        assert!(
            err.contains("the dataset was recorded from sha256:"),
            "{command}: {err}"
        );
    }
    let err = usage(
        &[
            "sae",
            "features",
            s(&out),
            data,
            "--layer",
            "-1",
            "--latent",
            "32",
        ],
        "",
    );
    assert!(
        err.contains("--latent 32: the autoencoder has 32 latents"),
        "{err}"
    );
}
