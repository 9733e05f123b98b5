//! The `modelbin` binary end to end: output, exit codes, never a panic.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const WORKED_EXAMPLE: &[u8] = include_bytes!("../../../tests/data/worked-example.bt");

fn modelbin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_modelbin"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

fn sample(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn inspect_prints_the_tensor_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = sample(dir.path(), "w.bt", WORKED_EXAMPLE);
    let out = modelbin(&["inspect", arg(&path)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("bintensors, 59 bytes"), "{text}");
    assert!(text.contains("format = pt"), "{text}");
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip_while(|l| !l.contains("NAME"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["NAME", "DTYPE", "SHAPE", "OFFSET", "BYTES"]);
    assert_eq!(rows[1], ["w", "F32", "[2]", "48", "8"]);
    assert_eq!(rows[2], ["mask", "BOOL", "[3]", "56", "3"]);
}

#[test]
fn inspect_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = sample(dir.path(), "w.bt", WORKED_EXAMPLE);
    let out = modelbin(&["inspect", "--json", arg(&path)]);
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["format"], "bintensors");
    assert_eq!(json["file_size"], 59);
    assert_eq!(json["data_offset"], 48);
    assert_eq!(json["metadata"]["a"], "b");
    assert_eq!(json["tensors"][1]["name"], "mask");
    assert_eq!(json["tensors"][1]["dtype"], "BOOL");
    assert_eq!(json["tensors"][1]["shape"], serde_json::json!([3]));
    assert_eq!(json["tensors"][1]["offset"], 56);
}

#[test]
fn verify_accepts_valid_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = sample(dir.path(), "w.bt", WORKED_EXAMPLE);
    let out = modelbin(&["verify", arg(&path)]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("OK (bintensors, 2 tensors, 59 bytes)"));
    let out = modelbin(&["verify", "--json", arg(&path)]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["valid"], true);
    assert_eq!(json["summary"]["tensor_count"], 2);
}

#[test]
fn verify_names_the_problem_and_its_offset_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut padding = WORKED_EXAMPLE.to_vec();
    padding[45] = b'x';
    let mut trailing = WORKED_EXAMPLE.to_vec();
    trailing.push(0);
    let cases: [(&str, &[u8], &str); 3] = [
        (
            "truncated.bt",
            &WORKED_EXAMPLE[..58],
            "data section truncated",
        ),
        ("padding.bt", &padding, "padding byte 0x78 at byte 45"),
        ("trailing.bt", &trailing, "1 trailing bytes at byte 59"),
    ];
    for (name, bytes, expected) in cases {
        let path = sample(dir.path(), name, bytes);
        let out = modelbin(&["verify", arg(&path)]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(expected), "{name}: {err}");
        assert!(err.contains("byte"), "{err}");

        let out = modelbin(&["verify", "--json", arg(&path)]);
        assert_eq!(out.status.code(), Some(1));
        let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(json["valid"], false);
        assert!(json["error"].as_str().unwrap().contains(expected));
    }
}

#[test]
fn no_input_makes_it_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs: Vec<Vec<u8>> = (0..WORKED_EXAMPLE.len())
        .map(|n| WORKED_EXAMPLE[..n].to_vec())
        .collect();
    for i in 0..WORKED_EXAMPLE.len() {
        let mut b = WORKED_EXAMPLE.to_vec();
        b[i] ^= 0xFF;
        inputs.push(b);
    }
    inputs.push(b"{\"not\": \"a tensor file\"}".to_vec());
    for (i, bytes) in inputs.iter().enumerate() {
        let path = sample(dir.path(), &format!("case{i}.bt"), bytes);
        for command in ["verify", "inspect"] {
            let out = modelbin(&[command, arg(&path)]);
            let code = out.status.code();
            assert!(
                matches!(code, Some(0 | 1)),
                "{command} case {i}: {code:?} {}",
                stderr(&out)
            );
        }
    }
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(modelbin(&[]).status.code(), Some(2));
    assert_eq!(modelbin(&["inspect"]).status.code(), Some(2));
    assert_eq!(modelbin(&["frobnicate"]).status.code(), Some(2));
    let dir = tempfile::tempdir().unwrap();
    let path = sample(dir.path(), "w.bt", WORKED_EXAMPLE);
    let out = modelbin(&["convert", arg(&path), "out.onnx"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("pass --to"));
    let out = modelbin(&["convert", arg(&path), "out", "--to", "onnx"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown format `onnx`"));
}

#[test]
fn missing_files_and_unknown_formats_exit_1() {
    let out = modelbin(&["inspect", "/nonexistent/model.bt"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("/nonexistent/model.bt"));
    let dir = tempfile::tempdir().unwrap();
    let path = sample(dir.path(), "notes.txt", b"hello");
    let out = modelbin(&["verify", arg(&path)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not a recognised format"));
}

#[test]
fn convert_round_trip_through_safetensors() {
    let dir = tempfile::tempdir().unwrap();
    let src = sample(dir.path(), "w.bt", WORKED_EXAMPLE);
    let st = dir.path().join("w.safetensors");
    let back = dir.path().join("back.bin");
    let out = modelbin(&["convert", arg(&src), arg(&st)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("(bintensors) ->"));
    let out = modelbin(&["convert", "--json", arg(&st), arg(&back), "--to", "bt"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["from"], "safetensors");
    assert_eq!(json["to"], "bintensors");
    assert_eq!(json["bytes_written"], 59);
    assert_eq!(std::fs::read(&back).unwrap(), WORKED_EXAMPLE);
}

#[test]
fn convert_the_real_minilm_model() {
    let model = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-data/all-MiniLM-L6-v2/model.safetensors");
    assert!(model.is_file(), "run scripts/fetch-test-data.sh first");
    let dir = tempfile::tempdir().unwrap();
    let bt = dir.path().join("minilm.bt");
    let out = modelbin(&["convert", arg(&model), arg(&bt)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("104 tensors"));
    let out = modelbin(&["verify", arg(&bt)]);
    assert_eq!(out.status.code(), Some(0));
    let out = modelbin(&["inspect", "--json", arg(&bt)]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["tensor_count"], 104);
    assert_eq!(json["metadata"]["format"], "pt");
}
