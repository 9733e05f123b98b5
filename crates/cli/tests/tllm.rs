//! TLLM commands end to end: init, inspect, logits, generate, convert.

use std::path::Path;

mod common;

fn modelbin(args: &[&str]) -> std::process::Output {
    common::run(args, "")
}

fn ok(args: &[&str]) -> String {
    common::ok(args, "")
}

fn fails(args: &[&str]) -> String {
    common::fails(args, "")
}

fn usage(args: &[&str]) -> String {
    common::usage(args, "")
}

fn init(dir: &Path, extra: &[&str]) -> String {
    let path = dir.join("m.tllm").to_str().unwrap().to_owned();
    let mut args = vec![
        "init-tllm",
        "--dim",
        "16",
        "--layers",
        "2",
        "--heads",
        "2",
        "--ffn",
        "32",
        "--seq",
        "16",
        "--seed",
        "7",
    ];
    args.extend(extra);
    args.push(&path);
    ok(&args);
    path
}

#[test]
fn init_inspect_and_logits() {
    let dir = tempfile::tempdir().unwrap();
    let model = init(dir.path(), &[]);
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["inspect", "--json", &model])).unwrap();
    assert_eq!(json["config"]["model_dim"], 16);
    assert_eq!(json["config"]["vocab_size"], 256);
    let tensors = json["tensors"].as_array().unwrap();
    assert_eq!(tensors.len(), 2 + 2 * 12 + 1);
    let ln = tensors
        .iter()
        .find(|t| t["name"] == "layers.0.ln1.weight")
        .unwrap();
    assert_eq!(
        (ln["mean"].as_f64(), ln["std"].as_f64()),
        (Some(1.0), Some(0.0))
    );
    let emb = &tensors[0];
    assert!(
        (emb["std"].as_f64().unwrap() - 0.02).abs() < 0.003,
        "N(0, 0.02): {emb}"
    );
    assert_eq!(emb["nan"], 0);

    let last: Vec<f32> = serde_json::from_str(&ok(&[
        "tllm", "logits", "--model", &model, "--ids", "1,2,3",
    ]))
    .unwrap();
    assert_eq!(last.len(), 256);
    let all: Vec<Vec<f32>> = serde_json::from_str(&ok(&[
        "tllm", "logits", "--model", &model, "--ids", "1,2,3", "--all",
    ]))
    .unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all[2], last);

    let err = fails(&["tllm", "logits", "--model", &model, "--ids", "1,256"]);
    assert!(err.contains("token id 256"), "{err}");
    let long: Vec<String> = (0..17).map(|i| i.to_string()).collect();
    let err = fails(&[
        "tllm",
        "logits",
        "--model",
        &model,
        "--ids",
        &long.join(","),
    ]);
    assert!(err.contains("max_seq_len"), "{err}");
}

#[test]
fn generate_text_and_ids() {
    let dir = tempfile::tempdir().unwrap();
    let model = init(dir.path(), &[]);
    let sampled = [
        "generate",
        "--model",
        &model,
        "--prompt",
        "hi",
        "--max-tokens",
        "5",
        "--temperature",
        "0.9",
        "--top-k",
        "10",
        "--seed",
        "3",
        "--json",
    ];
    let json: serde_json::Value = serde_json::from_str(&ok(&sampled)).unwrap();
    assert_eq!(json["ids"].as_array().unwrap().len(), 5);
    assert_eq!(json["stopped"], "max_tokens");
    let again: serde_json::Value = serde_json::from_str(&ok(&sampled)).unwrap();
    assert_eq!(json["ids"], again["ids"], "seeded");
    let out = modelbin(&[
        "generate",
        "--model",
        &model,
        "--ids",
        "1,2",
        "--max-tokens",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("tokens/s"));

    let small = dir.path().join("small.tllm");
    ok(&[
        "init-tllm",
        "--dim",
        "8",
        "--heads",
        "2",
        "--vocab",
        "10",
        small.to_str().unwrap(),
    ]);
    let err = fails(&[
        "generate",
        "--model",
        small.to_str().unwrap(),
        "--prompt",
        "x",
    ]);
    assert!(err.contains("--ids"), "{err}");
    let out = ok(&[
        "generate",
        "--model",
        small.to_str().unwrap(),
        "--ids",
        "1",
        "--max-tokens",
        "4",
    ]);
    assert_eq!(out.split_whitespace().count(), 4, "{out}");
}

#[test]
fn convert_losslessly_through_tensor_formats() {
    let dir = tempfile::tempdir().unwrap();
    let model = init(dir.path(), &["--dropout", "0.1"]);
    for ext in ["safetensors", "bt"] {
        let mid = dir.path().join(format!("m.{ext}"));
        let back = dir.path().join(format!("back-{ext}.tllm"));
        ok(&["convert", &model, mid.to_str().unwrap()]);
        let json: serde_json::Value =
            serde_json::from_str(&ok(&["inspect", "--json", mid.to_str().unwrap()])).unwrap();
        assert_eq!(json["metadata"]["tllm.n_heads"], "2");
        assert_eq!(json["tensors"][0]["dtype"], "F32");
        ok(&["convert", mid.to_str().unwrap(), back.to_str().unwrap()]);
        assert_eq!(
            std::fs::read(&back).unwrap(),
            std::fs::read(&model).unwrap(),
            "{ext}"
        );
    }
    // A tensor file that is not a TLLM model.
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/worked-example.bt");
    let err = fails(&[
        "convert",
        sample.to_str().unwrap(),
        dir.path().join("x.tllm").to_str().unwrap(),
    ]);
    assert!(err.contains("tllm.model_dim"), "{err}");
}

#[test]
fn bad_files_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let model = init(dir.path(), &[]);
    let mut bytes = std::fs::read(&model).unwrap();
    bytes[..4].copy_from_slice(b"TLLM");
    let ascii = dir.path().join("ascii.tllm");
    std::fs::write(&ascii, &bytes).unwrap();
    let err = fails(&["verify", ascii.to_str().unwrap()]);
    assert!(err.contains("little-endian"), "{err}");
    let truncated = dir.path().join("short.tllm");
    std::fs::write(&truncated, &std::fs::read(&model).unwrap()[..1000]).unwrap();
    let err = fails(&[
        "generate",
        "--model",
        truncated.to_str().unwrap(),
        "--ids",
        "1",
    ]);
    assert!(err.contains("truncated"), "{err}");
    let err = usage(&[
        "init-tllm",
        "--dim",
        "10",
        "--heads",
        "3",
        dir.path().join("bad.tllm").to_str().unwrap(),
    ]);
    assert!(err.contains("--heads 3: must divide --dim"), "{err}");
}

#[test]
fn train_checkpoint_resume_and_generate() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus.txt");
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    std::fs::write(&corpus, text.repeat(2)).unwrap();
    let out = dir.path().join("m.tllm");
    let log = dir.path().join("log.jsonl");
    let (c, o, l) = (
        corpus.to_str().unwrap(),
        out.to_str().unwrap(),
        log.to_str().unwrap(),
    );
    let small = [
        "--dim",
        "16",
        "--layers",
        "1",
        "--heads",
        "2",
        "--ffn",
        "32",
        "--seq",
        "16",
        "--batch-size",
        "4",
    ];
    let mut args = vec![
        "tllm",
        "train",
        c,
        "--out",
        o,
        "--steps",
        "4",
        "--eval-every",
        "2",
        "--log",
        l,
        "--json",
    ];
    args.extend(small);
    let summary: serde_json::Value = serde_json::from_str(&ok(&args)).unwrap();
    assert_eq!(summary["steps"], 4);
    assert!(summary["val_loss"].as_f64().unwrap() > 0.0);
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 4);
    assert!(Path::new(&format!("{o}.opt")).is_file());
    // Under a pipe no bar is drawn; progress comes as plain lines instead
    // (every step here, where the interval is set to 0 s).
    let piped = std::process::Command::new(env!("CARGO_BIN_EXE_modelbin"))
        .args([
            "tllm",
            "train",
            c,
            "--out",
            &format!("{o}.piped"),
            "--steps",
            "3",
        ])
        .args(small)
        .env("MODELBIN_PROGRESS_EVERY", "0")
        .output()
        .unwrap();
    assert_eq!(piped.status.code(), Some(0));
    let stderr = String::from_utf8(piped.stderr).unwrap();
    for step in 1..=3 {
        assert!(
            stderr.contains(&format!("training: steps {step}/3 (")),
            "{stderr}"
        );
    }
    assert!(
        stderr.contains("tok/s") && stderr.contains("s left"),
        "{stderr}"
    );
    // Resume to 6 steps; the result loads in `generate`.
    let mut resume = vec!["tllm", "train", c, "--out", o, "--steps", "6", "--resume"];
    resume.extend(small);
    assert!(ok(&resume).contains("6 steps"));
    let generated = modelbin(&[
        "generate",
        "--model",
        o,
        "--prompt",
        "the ",
        "--max-tokens",
        "8",
    ]);
    assert_eq!(generated.status.code(), Some(0));
    // A different configuration on --resume is refused before any work.
    let mut other = vec![
        "tllm", "train", c, "--out", o, "--steps", "8", "--resume", "--dim", "32",
    ];
    other.extend(&small[2..]);
    assert!(fails(&other).contains("different model"));
}

#[test]
fn train_rejects_bad_input_before_working() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    let short = dir.path().join("short.txt");
    std::fs::write(&short, "too short").unwrap();
    let out = dir.path().join("m.tllm");
    let o = out.to_str().unwrap();
    assert!(
        fails(&["tllm", "train", empty.to_str().unwrap(), "--out", o])
            .contains("the corpus is empty")
    );
    assert!(
        fails(&["tllm", "train", short.to_str().unwrap(), "--out", o])
            .contains("has 9 bytes; it needs at least 65: use more text or a shorter --seq")
    );
    let missing = dir.path().join("missing.txt");
    assert!(
        fails(&["tllm", "train", missing.to_str().unwrap(), "--out", o]).contains("missing.txt")
    );
    let text = dir.path().join("text.txt");
    std::fs::write(&text, "abcdefgh".repeat(100)).unwrap();
    let err = fails(&[
        "tllm",
        "train",
        text.to_str().unwrap(),
        "--out",
        "/nonexistent/dir/m.tllm",
    ]);
    assert!(err.contains("cannot write the model"), "{err}");
    assert!(
        usage(&[
            "tllm",
            "train",
            text.to_str().unwrap(),
            "--out",
            o,
            "--heads",
            "3"
        ])
        .contains("--heads 3: must divide --dim")
    );
    assert!(
        fails(&[
            "tllm",
            "train",
            text.to_str().unwrap(),
            "--out",
            o,
            "--resume"
        ])
        .contains("m.tllm")
    );
    assert!(!out.exists());
}
