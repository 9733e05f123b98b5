//! Values that would make a NaN or an infinity (model weights, saved index
//! rows, prices, checkpoint constants) and thread counts past the shared
//! limit: each refused with exit 1 (2 for a flag) and one line naming it,
//! and nothing written.

mod common;

use std::path::{Path, PathBuf};

use common::bounded::MIB;
use common::{ok, s, usage};
use modelbin_format::saev::{Metadata, Writer};
use modelbin_format::{DType, TensorStore, TensorView, safetensors};

/// The tiny BERT model of the tests' common helpers, with `value` at
/// element 1 of the tensor `poisoned` (when given).
fn tiny_bert(dir: &Path, poisoned: Option<(&str, f32)>) -> PathBuf {
    let path = dir.join(if poisoned.is_some() {
        "poisoned.embd"
    } else {
        "tiny.embd"
    });
    common::tiny_embd(&path, &[], poisoned);
    path
}

/// Runs a command that must fail with exit 1 and one line, bounded in
/// memory and time (its figures are docs/reliability.md's, through
/// scripts/hostile-figures.sh); returns the line.
fn refused(args: &[&str]) -> String {
    let run = common::bounded::modelbin(args);
    run.assert_bounded(64 * MIB);
    assert_eq!(run.code, Some(1), "{args:?}: {run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    run.stderr
}

fn refs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// The entries of directory `dir` (none when it does not exist).
fn entries(dir: &Path) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default()
}

#[test]
fn a_non_finite_bert_weight_is_refused_at_load_and_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("t.txt");
    std::fs::write(&text, "a b c a b c a b c a b c").unwrap();
    let record = |model: &'_ Path, root: &'_ Path| -> Vec<String> {
        [
            "acts",
            "record",
            "-m",
            s(model),
            "--tokens-per-text",
            "4",
            "-o",
            s(root),
            s(&text),
        ]
        .map(String::from)
        .to_vec()
    };
    let tensor = "encoder.layer.0.intermediate.dense.weight";
    for value in [f32::NAN, f32::NEG_INFINITY] {
        let model = tiny_bert(dir.path(), Some((tensor, value)));
        match modelbin_infer::Embedder::open(&model) {
            Err(modelbin_infer::Error::Format(modelbin_format::Error::Model(
                modelbin_format::ModelError::NonFinite { name, index, .. },
            ))) => assert_eq!((name.as_str(), index), (tensor, 1)),
            other => panic!("{:?}", other.map(|_| ())),
        }
        let root = dir.path().join("acts");
        let err = refused(&refs(&record(&model, &root)));
        assert!(
            err.contains(&format!("tensor `{tensor}` holds {value} at element 1")),
            "{err}"
        );
        assert!(entries(&root).is_empty(), "{:?}", entries(&root));
    }
    // The same model without the bad value records.
    let model = tiny_bert(dir.path(), None);
    let root = dir.path().join("acts");
    ok(&refs(&record(&model, &root)), "");
    assert_eq!(entries(&root).len(), 1);
}

/// Rewrites the line index at `path` with `value` in row `row`.
fn forge_index_row(path: &Path, row: usize, value: f32) {
    let file = safetensors::open(path).unwrap();
    let metadata = file.metadata().cloned();
    let owned: Vec<(String, DType, Vec<usize>, Vec<u8>)> = file
        .tensors()
        .map(|t| {
            let mut data = t.data().to_vec();
            if t.name() == "embeddings" {
                let at = row * t.shape()[1] * 4;
                data[at..at + 4].copy_from_slice(&value.to_le_bytes());
            }
            (t.name().to_owned(), t.dtype(), t.shape().to_vec(), data)
        })
        .collect();
    drop(file);
    let views = owned
        .iter()
        .map(|(name, dtype, shape, data)| TensorView::new(name, *dtype, shape, data).unwrap());
    safetensors::write_file(path, views, metadata.as_ref(), &mut |_, _| {}).unwrap();
}

#[test]
fn a_non_finite_row_of_a_saved_index_is_refused_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_bert(dir.path(), None);
    let lines = dir.path().join("lines.txt");
    std::fs::write(&lines, "a b\n\nb c\nc a\n").unwrap();
    let index = dir.path().join("index.safetensors");
    let search = |extra: &[&str]| {
        let mut args = vec![
            "search",
            "-m",
            s(&model),
            "-q",
            "a c",
            "--embeddings",
            s(&index),
        ];
        args.extend_from_slice(extra);
        args.iter().map(|a| a.to_string()).collect::<Vec<_>>()
    };
    ok(&refs(&search(&[s(&lines)])), "");
    assert_eq!(ok(&refs(&search(&[])), "").lines().count(), 3);
    for value in [f32::NAN, f32::INFINITY] {
        forge_index_row(&index, 1, value);
        match modelbin_infer::search::LineIndex::load(&index) {
            Err(modelbin_infer::Error::NonFiniteIndexRow { row, line, .. }) => {
                assert_eq!((row, line), (1, 3));
            }
            other => panic!("{other:?}"),
        }
        let err = refused(&refs(&search(&[])));
        assert!(
            err.contains(&format!(
                "row 1 of the index ({}:3) holds {value}",
                s(&lines)
            )),
            "{err}"
        );
    }
}

#[test]
fn a_cost_beyond_a_double_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let prices = dir.path().join("prices.json");
    std::fs::write(
        &prices,
        r#"{"as_of": "2026-11-01", "currency": "USD", "unit": "per 1M tokens",
            "models": {"gpt-4o": {"input": 1e308, "output": 1e300}}}"#,
    )
    .unwrap();
    let cost = |extra: &[&str]| {
        let mut args = vec!["tokens", "cost", "-m", "gpt-4o", "--prices", s(&prices)];
        args.extend_from_slice(extra);
        refused(&args)
    };
    for err in [
        cost(&["--text", "one two three"]),
        cost(&["--text", "hi", "--output-tokens", "18446744073709551615"]),
    ] {
        assert!(
            err.contains("cost more than a number can hold") && !err.contains("inf"),
            "{err}"
        );
    }
    // One token at 1e308 per million is still a number.
    let out = ok(
        &[
            "tokens",
            "cost",
            "-m",
            "gpt-4o",
            "--prices",
            s(&prices),
            "--text",
            "hi",
            "--json",
        ],
        "",
    );
    let estimate: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        estimate["total_cost"].as_f64().unwrap().is_finite(),
        "{out}"
    );
}

/// A dataset of 32 images of 4 patches of width 8 at layer -1.
fn dataset(root: &Path) -> PathBuf {
    let metadata = Metadata {
        vit_family: "test".into(),
        vit_ckpt: "sine".into(),
        layers: vec![-1],
        n_patches_per_img: 4,
        cls_token: false,
        d_vit: 8,
        seed: 0,
        n_imgs: 32,
        max_patches_per_shard: 1000,
        data: "sine values".into(),
    };
    let mut writer = Writer::create(root, metadata).unwrap();
    for img in 0..32 {
        let values: Vec<f32> = (0..32)
            .map(|i| ((img * 32 + i) as f32 * 0.37).sin())
            .collect();
        writer.push(&values).unwrap();
    }
    writer.finish().unwrap()
}

#[test]
fn a_checkpoint_with_an_input_scale_of_zero_is_refused_and_nothing_saved() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(&dir.path().join("acts"));
    let out = dir.path().join("sae");
    let train = |steps: &str, resume: bool| {
        let mut args = vec![
            "sae",
            "train",
            s(&data),
            "--layer=-1",
            "--d-sae",
            "16",
            "-k",
            "2",
            "--batch-size",
            "8",
            "--steps",
            steps,
            "--threads",
            "1",
            "--checkpoint-every",
            "2",
            "-o",
            s(&out),
        ];
        if resume {
            args.push("--resume");
        }
        args.iter().map(|a| a.to_string()).collect::<Vec<_>>()
    };
    ok(&refs(&train("4", false)), "");
    // Set the checkpoint's scale to 0.
    let checkpoint = out.join("checkpoint.safetensors");
    let file = safetensors::open(&checkpoint).unwrap();
    let mut metadata = file.metadata().cloned().unwrap();
    let mut state: serde_json::Value = serde_json::from_str(&metadata["modelbin.sae"]).unwrap();
    state["scale"] = 0.into();
    metadata.insert("modelbin.sae".into(), state.to_string());
    let owned: Vec<(String, DType, Vec<usize>, Vec<u8>)> = file
        .tensors()
        .map(|t| {
            (
                t.name().to_owned(),
                t.dtype(),
                t.shape().to_vec(),
                t.data().to_vec(),
            )
        })
        .collect();
    drop(file);
    let views = owned
        .iter()
        .map(|(name, dtype, shape, data)| TensorView::new(name, *dtype, shape, data).unwrap());
    safetensors::write_file(&checkpoint, views, Some(&metadata), &mut |_, _| {}).unwrap();
    let weights = out.join("sae_weights.safetensors");
    let before = std::fs::read(&weights).unwrap();
    let err = refused(&refs(&train("8", true)));
    assert!(
        err.contains("scale is 0; the input scale must be a positive normal number"),
        "{err}"
    );
    assert_eq!(std::fs::read(&weights).unwrap(), before);
}

#[test]
fn thread_counts_past_the_shared_limit_are_refused_as_flags() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(&dir.path().join("acts"));
    let model = tiny_bert(dir.path(), None);
    let out = dir.path().join("sae");
    for args in [
        &[
            "sae",
            "train",
            s(&data),
            "--layer=-1",
            "--threads",
            "257",
            "-o",
            s(&out),
        ][..],
        &[
            "sae",
            "eval",
            s(&out),
            s(&data),
            "--layer=-1",
            "--threads",
            "1000000",
        ],
        &["acts", "bench", s(&data), "--threads", "257"],
        &["embed", "-m", s(&model), "--threads", "100000", "a"],
    ] {
        let err = usage(args, "");
        assert!(err.contains("limit of 256 threads"), "{args:?}: {err}");
    }
    assert!(!out.exists());
}
