//! One rule for reading texts from files (`modelbin_format::io::texts`):
//! JSON Lines by `--jsonl` or by name, a string or an object's `--field`
//! per line, directories walked in sorted order for text files; the same in
//! `tokens`, `search` and `acts record`.

mod common;

use common::{fails, ok, s};
use modelbin_tokenize::Tokenizer;

fn count(text: &str) -> usize {
    Tokenizer::embedded("o200k_base")
        .unwrap()
        .encode_ordinary(text)
        .unwrap()
        .len()
}

/// A corpus directory: plain text, JSON Lines (strings and objects) in a
/// subdirectory, and a file no text command reads.
fn corpus() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("b")).unwrap();
    std::fs::write(dir.path().join("a.txt"), "plain words\n").unwrap();
    std::fs::write(
        dir.path().join("b/rows.jsonl"),
        "{\"id\": 1, \"text\": \"first row\"}\n\n\"second \\\"row\\\"\"\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("b/image.png"), [0x89, b'P', b'N', b'G']).unwrap();
    dir
}

#[test]
fn a_directory_gives_its_text_files_and_json_lines_give_their_texts() {
    let dir = corpus();
    let root = dir.path();
    let out = ok(&["tokens", "count", s(root)], "");
    let (a, rows) = (
        count("plain words\n"),
        count("first row") + count("second \"row\""),
    );
    assert_eq!(
        out,
        format!(
            "{a:>7} {}\n{rows:>7} {}\n{:>7} total\n",
            root.join("a.txt").display(),
            root.join("b/rows.jsonl").display(),
            a + rows
        )
    );
    // Each text of a JSON Lines file is encoded on its own.
    let rows_path = root.join("b/rows.jsonl");
    let encoded = ok(&["tokens", "encode", "--json", s(&rows_path)], "");
    let lines: Vec<serde_json::Value> = encoded
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["record"], 2);
    assert_eq!(
        lines[1]["ids"].as_array().unwrap().len(),
        count("second \"row\"")
    );
}

#[test]
fn jsonl_is_asked_for_with_its_field_and_a_line_without_text_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.txt");
    std::fs::write(&data, "{\"body\": \"abc def\"}\n{\"body\": \"ghi\"}\n").unwrap();
    // Not JSON Lines by name: plain text, quote characters and all.
    let plain = count("{\"body\": \"abc def\"}\n{\"body\": \"ghi\"}\n");
    assert!(ok(&["tokens", "count", s(&data)], "").starts_with(&format!("{plain:>7} ")));
    let asked = ok(
        &["tokens", "count", "--jsonl", "--field", "body", s(&data)],
        "",
    );
    assert!(asked.starts_with(&format!("{:>7} ", count("abc def") + count("ghi"))));
    let err = fails(&["tokens", "count", "--jsonl", s(&data)], "");
    assert_eq!(
        err.trim_end(),
        format!(
            "error: {} line 1: the object has no \"text\" field",
            data.display()
        )
    );
    // On standard input, one array of ids per line, objects included.
    let streamed = ok(
        &["tokens", "encode", "--jsonl", "--field", "body"],
        "{\"body\": \"ghi\"}\n\"ghi\"\n",
    );
    let ids = Tokenizer::embedded("o200k_base")
        .unwrap()
        .encode_ordinary("ghi")
        .unwrap();
    let line = serde_json::to_string(&ids).unwrap();
    assert_eq!(streamed, format!("{line}\n{line}\n"));
}

#[test]
fn a_text_recording_reads_a_directory_and_json_lines_by_the_same_rule() {
    let dir = corpus();
    let model = dir.path().join("m.tllm");
    ok(
        &[
            "tllm",
            "init",
            "--seq",
            "8",
            "--layers",
            "1",
            "-o",
            s(&model),
        ],
        "",
    );
    let root = dir.path().join("acts");
    let report: serde_json::Value = serde_json::from_str(&ok(
        &[
            "acts",
            "record",
            "-m",
            s(&model),
            "--tokens-per-text",
            "4",
            "-o",
            s(&root),
            "--json",
            s(dir.path()),
        ],
        "",
    ))
    .unwrap();
    let dataset = modelbin_format::saev::open(report["path"].as_str().unwrap()).unwrap();
    // The byte model reads each text of the JSON Lines file with a line
    // break after it, after the plain file's bytes.
    let text = "plain words\nfirst row\nsecond \"row\"\n";
    let kept: Vec<u32> = dataset.token_ids().unwrap().all().collect();
    let expected: Vec<u32> = text.bytes().map(u32::from).collect();
    assert_eq!(kept, expected[..text.len() / 4 * 4]);
    let files = &dataset.metadata().data["files"];
    assert_eq!(files.as_array().unwrap().len(), 2);
    assert_eq!(
        files[1]["json_lines"],
        serde_json::json!({"field": "text", "texts": 2})
    );
}
