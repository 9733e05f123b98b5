//! Running the `modelbin` binary from the integration tests.
#![allow(dead_code)] // each test binary uses a different subset

pub mod bounded;
pub mod lm;
pub mod slices;

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// A path as the `&str` an argument list takes.
pub fn s(p: &std::path::Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

/// Runs `modelbin args`, feeding `stdin`.
pub fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_modelbin"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that fails before reading its input closes the pipe early.
    if let Err(e) = child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    child.wait_with_output().unwrap()
}

/// Runs a command that must succeed; returns its stdout.
pub fn ok(args: &[&str], stdin: &str) -> String {
    let out = run(args, stdin);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs a command that must fail with exit 1 and a one-line error; returns it.
pub fn fails(args: &[&str], stdin: &str) -> String {
    let out = run(args, stdin);
    assert_eq!(out.status.code(), Some(1), "{args:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

/// Runs a command that must be refused as a usage error (exit 2: a bad
/// flag or value); returns its stderr.
#[allow(dead_code)]
pub fn usage(args: &[&str], stdin: &str) -> String {
    let out = run(args, stdin);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    String::from_utf8(out.stderr).unwrap()
}

/// A tiny BERT model in EMBD at `path`: hidden 4, 2 heads, FFN 8, one
/// layer's tensors, 8 word pieces and 8 positions. `metadata` entries
/// replace the defaults after the tensors are made (so a claim may differ
/// from the tensors present); `poisoned` sets element 1 of that tensor.
pub fn tiny_embd(path: &std::path::Path, metadata: &[(&str, &str)], poisoned: Option<(&str, f32)>) {
    use modelbin_format::embd::{self, SpecialTokens, Vocabulary, WriteOptions};
    let mut entries: std::collections::BTreeMap<String, String> = [
        ("model_name", "tiny"),
        ("model_version", "1.0.0"),
        ("embedding_dim", "4"),
        ("vocab_size", "8"),
        ("num_layers", "1"),
        ("num_attention_heads", "2"),
        ("hidden_size", "4"),
        ("intermediate_size", "8"),
        ("max_position_emb", "8"),
        ("created_at", "2025-01-16T12:00:00Z"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let config = modelbin_format::model::BertConfig::from_metadata(&entries, 2).unwrap();
    let tensors: Vec<(String, Vec<usize>, Vec<u8>)> = config
        .tensors()
        .enumerate()
        .map(|(i, (name, shape))| {
            let n: usize = shape.iter().product();
            let mut values: Vec<f32> = (0..n)
                .map(|j| ((i * 7 + j) % 13) as f32 * 0.1 + 0.05)
                .collect();
            if let Some((tensor, value)) = poisoned
                && tensor == name
            {
                values[1] = value;
            }
            let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            (name, shape, data)
        })
        .collect();
    let views: Vec<modelbin_format::TensorView<'_>> = tensors
        .iter()
        .map(|(name, shape, data)| {
            modelbin_format::TensorView::new(name, modelbin_format::DType::F32, shape, data)
                .unwrap()
        })
        .collect();
    for (key, value) in metadata {
        entries.insert((*key).to_owned(), (*value).to_owned());
    }
    let tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"];
    let vocabulary = Vocabulary {
        tokens: &tokens,
        specials: SpecialTokens {
            pad: 0,
            unk: 1,
            cls: 2,
            sep: 3,
            mask: 4,
        },
    };
    embd::write_file(
        path,
        &views,
        &entries,
        Some(&vocabulary),
        &WriteOptions::default(),
        &mut |_, _| {},
    )
    .unwrap();
}
