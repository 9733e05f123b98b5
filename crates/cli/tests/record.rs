//! `modelbin acts record` and `acts tokens`: recorded activations equal the
//! models' own forward passes (TLLM against the library, BERT against the
//! independent numpy reference), and the token ids kept beside them.

mod common;

use std::path::Path;
use std::process::Command;

use common::{fails, ok, s, usage};

/// A random TLLM model of 16-token context with `layers` layers, made by
/// `tllm init` in `dir`.
fn tiny_tllm(dir: &Path, layers: &str) -> std::path::PathBuf {
    let model = dir.join("m.tllm");
    ok(
        &[
            "tllm",
            "init",
            "--seq",
            "16",
            "--layers",
            layers,
            "--seed",
            "4",
            "-o",
            s(&model),
        ],
        "",
    );
    model
}

#[test]
fn recorded_activations_are_the_models_residual_stream() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_tllm(dir.path(), "3");
    let text = dir.path().join("t.txt");
    let words = "The residual stream of a tiny model, recorded window by window. ";
    std::fs::write(&text, words.repeat(3)).unwrap();
    let root = dir.path().join("acts");
    let report: serde_json::Value = serde_json::from_str(&ok(
        &[
            "acts",
            "record",
            "-m",
            s(&model),
            "--layers",
            "0,-1",
            "--tokens-per-text",
            "8",
            "-o",
            s(&root),
            "--json",
            s(&text),
        ],
        "",
    ))
    .unwrap();
    let bytes = words.len() * 3;
    assert_eq!(report["images"], bytes / 8);
    assert_eq!(report["vectors"], 2 * 8 * (bytes / 8));
    let dataset = modelbin_format::saev::open(report["path"].as_str().unwrap()).unwrap();
    let metadata = dataset.metadata();
    assert_eq!(
        (
            metadata.vit_family.as_str(),
            metadata.d_vit,
            metadata.n_patches_per_img,
            metadata.cls_token
        ),
        ("tllm", 64, 8, false)
    );
    assert_eq!(metadata.layers, [0, -1]);
    assert_eq!(metadata.data["files"][0]["bytes"], bytes);
    // The windows' token ids are kept: the text's bytes.
    let kept: Vec<u32> = dataset.token_ids().unwrap().all().collect();
    let expected: Vec<u32> = words
        .repeat(3)
        .bytes()
        .take(kept.len())
        .map(u32::from)
        .collect();
    assert_eq!((kept.len(), kept), (bytes / 8 * 8, expected));
    let shown: serde_json::Value = serde_json::from_str(&ok(
        &[
            "acts",
            "tokens",
            report["path"].as_str().unwrap(),
            "--img",
            "1",
            "--json",
        ],
        "",
    ))
    .unwrap();
    assert_eq!(shown["text"], &words.repeat(3)[8..16]);
    // A text dataset is worded by its windows, in every face.
    let path = report["path"].as_str().unwrap();
    let n_windows = bytes / 8;
    let described = ok(&["inspect", path], "");
    assert!(
        described.contains("x tokens 8 per window;") && described.contains("windows per shard"),
        "{described}"
    );
    let inspected: serde_json::Value =
        serde_json::from_str(&ok(&["inspect", "--json", path], "")).unwrap();
    assert_eq!(inspected["unit"], "window");
    let past = n_windows.to_string();
    let refused = common::usage(&["acts", "tokens", path, "--img", &past], "");
    assert!(
        refused.contains(&format!("the dataset has {n_windows} windows")),
        "{refused}"
    );
    let help = ok(&["sae", "train", "--help"], "");
    assert!(help.contains("a text window's tokens"), "{help}");
    assert!(dataset.vocabulary().unwrap().is_none());
    dataset.verify().unwrap();
    let tllm = modelbin_infer::tllm::Model::open(&model).unwrap();
    for img in [0usize, 5, bytes / 8 - 1] {
        let ids: Vec<u32> = words.repeat(3).as_bytes()[img * 8..][..8]
            .iter()
            .map(|&b| u32::from(b))
            .collect();
        let streams = tllm.residual_stream(&ids, &[0, 2]).unwrap();
        for (stream, layer) in streams.iter().zip([0i64, -1]) {
            for token in 0..8 {
                assert_eq!(
                    dataset.vector(img as u64, layer, token as u64).unwrap(),
                    &stream[token * 64..][..64],
                    "image {img}, layer {layer}, token {token}"
                );
            }
        }
    }
    // The same recording again is a no-op that reports the dataset.
    let (m, r, t) = (s(&model), s(&root), s(&text));
    let args = [
        "acts",
        "record",
        "-m",
        m,
        "--layers",
        "0,-1",
        "--tokens-per-text",
        "8",
        "-o",
        r,
        t,
    ];
    let again = ok(&args, "");
    assert_eq!(
        again.trim_end(),
        format!(
            "{}: already recorded ({} windows, {} vectors); nothing to do",
            report["path"].as_str().unwrap(),
            bytes / 8,
            2 * 8 * (bytes / 8)
        )
    );
    assert_eq!(report["existing"], false);
    // Refused before any work.
    let err = usage(
        &["acts", "record", "-m", m, "-o", r, "--layers", "3", t],
        "",
    );
    assert!(err.contains("--layers 3: the model has 3 blocks"), "{err}");
    let err = usage(
        &[
            "acts",
            "record",
            "-m",
            m,
            "-o",
            r,
            "--tokens-per-text",
            "17",
            t,
        ],
        "",
    );
    assert!(
        err.contains("at most 16 tokens fit the model's context"),
        "{err}"
    );
    let short = dir.path().join("short.txt");
    std::fs::write(&short, "abc").unwrap();
    let err = fails(
        &["acts", "record", "-m", s(&model), "-o", s(&root), s(&short)],
        "",
    );
    assert!(err.contains("fewer than one window of 16"), "{err}");
}

fn minilm() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-data/all-MiniLM-L6-v2")
}

/// `hidden_states[layer + 1]` of `ids` by tests/reference/bert_reference.py
/// (float64).
fn reference_hidden_states(ids: &[u32], layer: i64) -> Vec<Vec<f64>> {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/reference/bert_reference.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(minilm())
        .arg(serde_json::to_string(ids).unwrap())
        .args(["--layer", &layer.to_string()])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "reference failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn recorded_bert_activations_are_the_reference_hidden_states() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("t.txt");
    let content = "Sparse autoencoders read the hidden states of a sentence encoder. \
                   Each window of word pieces becomes one image of the dataset.";
    std::fs::write(&text, content).unwrap();
    let root = dir.path().join("acts");
    let report: serde_json::Value = serde_json::from_str(&ok(
        &[
            "acts",
            "record",
            "-m",
            s(&minilm()),
            "--layers",
            "0,-1",
            "--tokens-per-text",
            "8",
            "--cls",
            "-o",
            s(&root),
            "--json",
            s(&text),
        ],
        "",
    ))
    .unwrap();
    let dataset = modelbin_format::saev::open(report["path"].as_str().unwrap()).unwrap();
    let metadata = dataset.metadata();
    assert_eq!(
        (
            metadata.vit_family.as_str(),
            metadata.d_vit,
            metadata.n_patches_per_img,
            metadata.cls_token,
            metadata.data["vocab_size"].as_u64()
        ),
        ("bert", 384, 8, true, Some(30522))
    );
    dataset.verify().unwrap();
    // The kept ids are the text's word pieces, whole windows of them.
    let embedder = modelbin_infer::Embedder::open_model(minilm()).unwrap();
    let pieces = embedder.tokenizer().pieces(content);
    let kept: Vec<u32> = dataset.token_ids().unwrap().all().collect();
    assert_eq!(kept, pieces[..pieces.len() / 8 * 8]);
    assert_eq!(metadata.n_imgs as usize, pieces.len() / 8);
    let vocabulary = dataset.vocabulary().unwrap().unwrap();
    assert_eq!(vocabulary.len(), 30522);
    assert_eq!(vocabulary[kept[0] as usize], "sparse");
    let shown: serde_json::Value = serde_json::from_str(&ok(
        &[
            "acts",
            "tokens",
            report["path"].as_str().unwrap(),
            "--img",
            "0",
            "--json",
        ],
        "",
    ))
    .unwrap();
    assert!(
        shown["text"].as_str().unwrap().starts_with("sparse auto"),
        "{shown}"
    );
    // Each image is [CLS] and its window, run as [CLS] window [SEP].
    let specials = embedder.tokenizer().specials();
    for img in [0u64, metadata.n_imgs - 1] {
        let mut ids = vec![specials.cls];
        ids.extend(dataset.token_ids().unwrap().window(img).unwrap());
        ids.push(specials.sep);
        for layer in [0i64, -1] {
            let expected = reference_hidden_states(&ids, layer);
            for (token, row) in expected.iter().take(9).enumerate() {
                let ours = dataset.vector(img, layer, token as u64).unwrap();
                let worst = ours
                    .iter()
                    .zip(row)
                    .map(|(&a, &b)| (f64::from(a) - b).abs())
                    .fold(0.0, f64::max);
                assert!(
                    worst < 1e-4,
                    "image {img}, layer {layer}, token {token}: off by {worst}"
                );
            }
        }
    }
    let err = usage(
        &[
            "acts",
            "record",
            "-m",
            s(&minilm()),
            "--tokens-per-text",
            "511",
            "-o",
            s(&root),
            s(&text),
        ],
        "",
    );
    assert!(
        err.contains("at most 510 tokens fit the model's context"),
        "{err}"
    );
}

/// A model directory of a decoder family modelbin does not run is refused
/// naming its model_type, not read as a BERT model.
#[test]
fn an_unsupported_decoder_directory_is_refused_by_its_model_type() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("mixtral");
    std::fs::create_dir(&model).unwrap();
    std::fs::write(model.join("config.json"), r#"{"model_type": "mixtral"}"#).unwrap();
    let text = dir.path().join("t.txt");
    std::fs::write(&text, "words").unwrap();
    let out = dir.path().join("acts");
    let err = fails(
        &["acts", "record", "-m", s(&model), "-o", s(&out), s(&text)],
        "",
    );
    assert!(err.contains("mixtral") && !err.contains("BERT"), "{err}");
}

/// A language model's recording names the model when a text is not UTF-8,
/// and refuses a BOS token its tokenizer does not have instead of putting
/// another in its place.
#[test]
fn language_model_recordings_name_the_model_and_refuse_an_unknown_bos() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("gpt2");
    common::lm::tiny_gpt2(&model, 1, 7);
    let bad = dir.path().join("a.txt");
    std::fs::write(&bad, b"caf\xe9 au lait").unwrap();
    let out = dir.path().join("acts");
    let err = fails(
        &[
            "acts",
            "record",
            "-m",
            s(&model),
            s(&bad),
            "-o",
            s(&out),
            "--tokens-per-text",
            "4",
        ],
        "",
    );
    assert!(
        err.contains("a.txt: is not UTF-8 text (a gpt2 language model reads text)"),
        "{err}"
    );
    let good = dir.path().join("b.txt");
    std::fs::write(&good, "some plain text to record").unwrap();
    std::fs::write(
        model.join("tokenizer_config.json"),
        r#"{"bos_token": "<nope>"}"#,
    )
    .unwrap();
    let err = fails(
        &[
            "acts",
            "record",
            "-m",
            s(&model),
            s(&good),
            "-o",
            s(&out),
            "--tokens-per-text",
            "4",
        ],
        "",
    );
    assert!(
        err.contains("tokenizer_config.json bos_token \"<nope>\" is not a token of tokenizer.json"),
        "{err}"
    );
    assert!(modelbin_format::saev::datasets_in(&out).is_empty());
}

/// `--max-tokens N` records the first whole windows that fit in N tokens,
/// the same vectors and ids as the full recording's first windows; the
/// summary says how many windows of the input were left, and a budget
/// below one window is refused.
#[test]
fn a_token_budget_records_the_first_whole_windows() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_tllm(dir.path(), "2");
    let text = dir.path().join("t.txt");
    std::fs::write(&text, "A budget of tokens, cut at a window. ".repeat(10)).unwrap();
    let record = |root: &str, extra: &[&str]| -> serde_json::Value {
        let root = dir.path().join(root);
        let mut args = vec![
            "acts",
            "record",
            "-m",
            s(&model),
            "--tokens-per-text",
            "8",
            "-o",
            s(&root),
            "--json",
        ];
        args.extend(extra);
        args.push(s(&text));
        serde_json::from_str(&ok(&args, "")).unwrap()
    };
    let all = record("all", &[]);
    let budget = record("budget", &["--max-tokens", "100"]);
    assert_eq!(
        (budget["images"].as_u64(), budget["tokens"].as_u64()),
        (Some(12), Some(96))
    );
    let windows = all["images"].as_u64().unwrap();
    assert_eq!(budget["windows_left"].as_u64(), Some(windows - 12));
    assert_eq!(all["windows_left"], 0);
    let open = |report: &serde_json::Value| {
        modelbin_format::saev::open(report["path"].as_str().unwrap()).unwrap()
    };
    let (whole, cut) = (open(&all), open(&budget));
    assert_eq!(cut.metadata().data["max_tokens"], 100);
    let ids =
        |d: &modelbin_format::saev::Dataset| -> Vec<u32> { d.token_ids().unwrap().all().collect() };
    assert_eq!(ids(&cut)[..], ids(&whole)[..96]);
    for img in [0, 11] {
        for token in [0, 7] {
            assert_eq!(
                cut.vector(img, -1, token).unwrap(),
                whole.vector(img, -1, token).unwrap()
            );
        }
    }
    // More than the input holds: every whole window, none left.
    let generous = record("generous", &["--max-tokens", "100000"]);
    assert_eq!(generous["images"], all["images"]);
    assert_eq!(generous["windows_left"], 0);
    let err = fails(
        &[
            "acts",
            "record",
            "-m",
            s(&model),
            "--tokens-per-text",
            "8",
            "--max-tokens",
            "7",
            "-o",
            s(&dir.path().join("small")),
            s(&text),
        ],
        "",
    );
    assert!(
        err.contains("max_tokens 7 is less than one window of 8 tokens"),
        "{err}"
    );
}
