//! The command line's grammar end to end: one id syntax, several paths,
//! `--json` as one compact document per item on every command, exit 2 for
//! invalid values, safe defaults, directories, completions and man page.

mod common;

use std::path::Path;

use common::{fails, ok, run as modelbin, s, usage};

const WORKED_EXAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/worked-example.bt"
);

/// A random byte-level TLLM model of the default shape in `dir`.
fn model(dir: &Path) -> String {
    let path = dir.join("m.tllm");
    ok(&["tllm", "init", "--seed", "1", "-o", s(&path)], "");
    s(&path).to_owned()
}

/// Every line of `text` parsed as JSON (each must be one compact document).
fn json_lines(text: &str) -> Vec<serde_json::Value> {
    assert!(text.ends_with('\n'), "{text:?}");
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

#[test]
fn ids_are_commas_and_or_spaces_everywhere() {
    let expected = "hello world";
    for args in [
        vec!["15339", "1917"],
        vec!["15339,1917"],
        vec!["15339 1917"],
        vec!["[15339, 1917]"],
    ] {
        let mut command = vec!["tokens", "decode", "-e", "cl100k_base"];
        command.extend(&args);
        assert_eq!(ok(&command, ""), expected, "{args:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let m = model(dir.path());
    let reference = ok(&["tllm", "logits", "-m", &m, "--ids", "1,2,3"], "");
    assert_eq!(
        ok(&["tllm", "logits", "-m", &m, "--ids", "1 2 3"], ""),
        reference
    );
    assert_eq!(
        ok(&["tllm", "logits", "-m", &m, "--ids", "1", "2", "3"], ""),
        reference
    );
    let err = usage(&["tokens", "decode", "15339,x"], "");
    assert!(err.contains("`x` is not a token id"), "{err}");
}

#[test]
fn invalid_values_exit_2_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let m = model(dir.path());
    let corpus = dir.path().join("c.txt");
    std::fs::write(&corpus, "abcdefgh".repeat(100)).unwrap();
    for (args, flag) in [
        (
            vec!["tllm", "generate", "-m", &m, "--ids", "1", "--top-p", "2"],
            "--top-p",
        ),
        (
            vec!["tllm", "generate", "-m", &m, "--ids", "1", "--top-k", "0"],
            "--top-k",
        ),
        (
            vec![
                "tllm",
                "generate",
                "-m",
                &m,
                "--ids",
                "1",
                "--temperature",
                "-1",
            ],
            "--temperature",
        ),
        (vec!["tokens", "count", "-e", "cl100k"], "--encoding"),
        (vec!["tokens", "count", "-m", "llama-3"], "--model"),
        (
            vec!["tllm", "train", s(&corpus), "-o", "x.tllm", "--steps", "0"],
            "--steps",
        ),
        (
            vec!["tllm", "init", "--heads", "3", "-o", "x.tllm"],
            "--heads",
        ),
        (vec!["inspect", WORKED_EXAMPLE, "--filter", "("], "--filter"),
        (
            vec!["tllm", "train", s(&corpus), "-o", "x.tllm", "--lr=-1"],
            "--lr",
        ),
        (
            vec![
                "tllm",
                "train",
                s(&corpus),
                "-o",
                "x.tllm",
                "--val-fraction",
                "1.5",
            ],
            "--val-fraction",
        ),
        (
            vec![
                "tllm",
                "train",
                s(&corpus),
                "-o",
                "x.tllm",
                "--batch-size",
                "0",
            ],
            "--batch-size",
        ),
    ] {
        let err = usage(&args, "");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}

#[test]
fn several_paths_one_line_each_and_exit_1_if_any_fails() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.bt");
    let out = modelbin(&["verify", WORKED_EXAMPLE, s(&missing), WORKED_EXAMPLE], "");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(
        stdout
            .lines()
            .all(|l| l.ends_with("OK (bintensors, 2 tensors, 59 bytes)"))
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    // The path once, not twice.
    assert_eq!(
        stderr,
        format!(
            "error: {}: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
    let out = modelbin(&["verify", "--json", WORKED_EXAMPLE, s(&missing)], "");
    assert_eq!(out.status.code(), Some(1));
    let verdicts = json_lines(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(verdicts.len(), 2);
    assert_eq!(
        (
            verdicts[0]["valid"].as_bool(),
            verdicts[1]["valid"].as_bool()
        ),
        (Some(true), Some(false))
    );
    assert!(
        verdicts[1]["error"]
            .as_str()
            .unwrap()
            .contains("No such file")
    );
    let inspected = json_lines(&ok(
        &["inspect", "--json", WORKED_EXAMPLE, WORKED_EXAMPLE],
        "",
    ));
    assert_eq!(inspected.len(), 2);
    assert_eq!(inspected[0]["parameter_count"], 5);
}

#[test]
fn inspect_filters_tensors_and_counts_parameters() {
    let text = ok(&["inspect", WORKED_EXAMPLE, "--filter", "^ma"], "");
    assert!(text.contains("tensors: 2, 5 parameters"), "{text}");
    assert!(text.contains("mask") && !text.contains("  w "), "{text}");
}

#[test]
fn directories_say_what_they_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let m = model(dir.path());
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let err = fails(&["embed", "-m", s(&empty), "x"], "");
    assert!(err.contains("neither a SAEV dataset"), "{err}");
    let err = fails(&["search", "-m", &m, "-q", "x", s(&empty)], "");
    assert_eq!(
        err.trim_end(),
        format!(
            "error: no text files (.txt, .text, .md, .rst, .jsonl, .ndjson, .parquet) under {}",
            empty.display()
        )
    );
    let tensors = dir.path().join("t.safetensors");
    ok(&["convert", &m, s(&tensors)], "");
    let err = fails(
        &["tllm", "generate", "-m", s(&tensors), "--prompt", "x"],
        "",
    );
    assert!(
        err.contains("the file's format is safetensors; tllm commands take a TLLM model"),
        "{err}"
    );
    directories_of_datasets_say_what_they_are_not();
}

fn directories_of_datasets_say_what_they_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let err = fails(&["inspect", s(dir.path())], "");
    assert!(
        err.contains("is a directory, but neither a SAEV dataset"),
        "{err}"
    );
    let root = dir.path().join("acts");
    ok(
        &[
            "acts",
            "write-synthetic",
            "-o",
            s(&root),
            "--n-imgs",
            "2",
            "--patches",
            "2",
            "--d-vit",
            "4",
            "--max-patches-per-shard",
            "12",
        ],
        "",
    );
    let commands = [
        vec!["verify", s(&root)],
        vec!["acts", "verify", s(&root)],
        vec!["acts", "inspect", s(&root)],
    ];
    // A root holding one dataset stands for it.
    for command in &commands {
        ok(command, "");
    }
    // Holding two, it is refused, naming both.
    ok(
        &[
            "acts",
            "write-synthetic",
            "-o",
            s(&root),
            "--n-imgs",
            "3",
            "--patches",
            "2",
            "--d-vit",
            "4",
        ],
        "",
    );
    for command in &commands {
        let err = fails(command, "");
        assert!(
            err.contains("is a SAEV root; name one of its datasets:")
                && err.matches(root.to_str().unwrap()).count() == 3,
            "{command:?}: {err}"
        );
    }
}

#[test]
fn json_is_one_compact_line_on_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let m = model(dir.path());
    let text = dir.path().join("t.txt");
    std::fs::write(&text, "hello world").unwrap();
    let converted = dir.path().join("w.safetensors");
    let root = dir.path().join("acts");
    let written = json_lines(&ok(
        &[
            "acts",
            "write-synthetic",
            "-o",
            s(&root),
            "--n-imgs",
            "2",
            "--patches",
            "2",
            "--d-vit",
            "4",
            "--max-patches-per-shard",
            "12",
            "--json",
        ],
        "",
    ));
    let dataset = written[0]["path"].as_str().unwrap().to_owned();
    let commands: Vec<Vec<&str>> = vec![
        vec!["inspect", WORKED_EXAMPLE, "--json"],
        vec!["verify", WORKED_EXAMPLE, "--json"],
        vec!["convert", WORKED_EXAMPLE, "-o", s(&converted), "--json"],
        vec!["tokens", "encode", "--json", "-t", "hi"],
        vec!["tokens", "decode", "--json", "15339"],
        vec!["tokens", "count", "--json", s(&text)],
        vec!["tokens", "cost", "-m", "gpt-4o", "--json", s(&text)],
        vec!["tokens", "models", "--json"],
        vec!["tllm", "logits", "-m", &m, "--ids", "1", "--json"],
        vec![
            "tllm",
            "generate",
            "-m",
            &m,
            "--ids",
            "1",
            "--max-tokens",
            "3",
            "--json",
        ],
        vec!["acts", "inspect", &dataset, "--json"],
        vec!["acts", "verify", &dataset, "--json"],
        vec![
            "acts", "get", &dataset, "--img", "1", "--layer", "-1", "--token", "0", "--json",
        ],
        vec!["acts", "stats", &dataset, "--json"],
        vec!["acts", "bench", &dataset, "--json"],
    ];
    for command in commands {
        let lines = json_lines(&ok(&command, ""));
        assert_eq!(lines.len(), 1, "{command:?}");
    }
    let init = dir.path().join("n.tllm");
    let report = json_lines(&ok(&["tllm", "init", "-o", s(&init), "--json"], ""));
    let inspected = json_lines(&ok(&["inspect", "--json", s(&init)], ""));
    assert_eq!(
        report[0]["parameter_count"],
        inspected[0]["parameter_count"]
    );
    assert_eq!(
        report[0]["bytes_written"],
        std::fs::metadata(&init).unwrap().len()
    );
}

#[test]
fn training_and_init_never_replace_a_model_silently() {
    let dir = tempfile::tempdir().unwrap();
    let m = model(dir.path());
    let before = std::fs::read(&m).unwrap();
    let err = usage(&["tllm", "init", "-o", &m], "");
    assert!(err.contains("exists; pass --force"), "{err}");
    let corpus = dir.path().join("c.txt");
    std::fs::write(&corpus, "abcdefgh".repeat(200)).unwrap();
    let err = usage(&["tllm", "train", s(&corpus), "-o", &m, "--steps", "1"], "");
    assert!(
        err.contains("pass --resume to continue training it or --force"),
        "{err}"
    );
    assert_eq!(std::fs::read(&m).unwrap(), before);
    let summary = json_lines(&ok(
        &[
            "tllm",
            "train",
            s(&corpus),
            "-o",
            &m,
            "--steps",
            "2",
            "--force",
            "--eval-every",
            "1",
            "--json",
        ],
        "",
    ));
    assert_eq!(summary.len(), 1);
    assert_eq!(summary[0]["path"], m.as_str());
    assert_eq!(summary[0]["steps"], 2);
    assert_ne!(std::fs::read(&m).unwrap(), before);
}

#[test]
fn generation_slides_past_the_context() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("short.tllm");
    ok(&["tllm", "init", "--seq", "8", "-o", s(&path)], "");
    let report = json_lines(&ok(
        &[
            "tllm",
            "generate",
            "-m",
            s(&path),
            "--ids",
            "1 2 3",
            "--max-tokens",
            "20",
            "--json",
        ],
        "",
    ));
    assert_eq!(report[0]["ids"].as_array().unwrap().len(), 20);
    assert_eq!(report[0]["stopped"], "max_tokens");
}

#[test]
fn old_spellings_still_work() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.tllm");
    ok(&["init-tllm", "--seed", "1", s(&path)], "");
    let new = dir.path().join("n.tllm");
    ok(&["tllm", "init", "--seed", "1", "--out", s(&new)], "");
    assert_eq!(std::fs::read(&path).unwrap(), std::fs::read(&new).unwrap());
    let ids = |args: &[&str]| json_lines(&ok(args, ""))[0]["ids"].clone();
    assert_eq!(
        ids(&[
            "generate",
            "--model",
            s(&path),
            "--ids",
            "1",
            "--max-tokens",
            "4",
            "--json"
        ]),
        ids(&[
            "tllm",
            "generate",
            "-m",
            s(&new),
            "--ids",
            "1",
            "--max-tokens",
            "4",
            "--json"
        ])
    );
    let a = dir.path().join("a.safetensors");
    let b = dir.path().join("b.safetensors");
    ok(&["convert", WORKED_EXAMPLE, s(&a)], "");
    ok(&["convert", WORKED_EXAMPLE, "-o", s(&b)], "");
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

#[test]
fn text_arguments_count_like_files() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.txt");
    std::fs::write(&file, "hello world").unwrap();
    let report = json_lines(&ok(
        &["tokens", "count", "--json", "-t", "hello world", s(&file)],
        "",
    ));
    let inputs = report[0]["inputs"].as_array().unwrap();
    assert_eq!(inputs[0]["input"], "--text 1");
    assert_eq!(inputs[0]["tokens"], inputs[1]["tokens"]);
    assert_eq!(report[0]["total"], 4);
    // A missing input is reported; the others are still counted.
    let out = modelbin(&["tokens", "count", s(&file), "missing.txt", s(&file)], "");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 3);
}

#[test]
fn completions_and_man_page_come_from_the_definitions() {
    for shell in ["bash", "zsh", "fish"] {
        let script = ok(&["completions", shell], "");
        assert!(
            script.contains("modelbin") && script.contains("generate"),
            "{shell}"
        );
    }
    let man = ok(&["man"], "");
    // A page per command, subcommands included.
    assert!(
        man.contains(".TH modelbin-tllm-generate 1"),
        "{}",
        &man[..200]
    );
    assert!(
        man.starts_with(".ie") || man.starts_with(".TH"),
        "{}",
        &man[..40]
    );
    assert!(man.contains("modelbin"));
    usage(&["completions", "tcsh"], "");
}

#[test]
fn tiktoken_files_inspect_and_verify() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/test-data/tiktoken/p50k_base.tiktoken"
    );
    assert!(Path::new(path).is_file(), "run scripts/fetch-test-data.sh");
    let text = ok(&["inspect", path], "");
    assert!(text.contains(": tiktoken, 836186 bytes"), "{text}");
    assert!(text.contains("encoding: p50k_base"), "{text}");
    assert!(
        text.contains("tokens: 50280 present of 50281 ranks"),
        "{text}"
    );
    let verdict = json_lines(&ok(&["verify", "--json", path], ""));
    assert_eq!(verdict[0]["summary"]["format"], "tiktoken");
    assert_eq!(verdict[0]["summary"]["file_size"], 836_186);
    assert_eq!(verdict[0]["summary"]["encoding"], "p50k_base");
    // A broken line is an error naming it.
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.tiktoken");
    std::fs::write(&broken, "aGVsbG8= 0\nnot base64! 1\n").unwrap();
    let err = fails(&["verify", "--format", "tiktoken", s(&broken)], "");
    assert!(err.contains("broken.tiktoken"), "{err}");
}

#[test]
fn work_too_large_for_the_machine_is_refused_up_front() {
    let err = usage(
        &[
            "tllm", "init", "-o", "big.tllm", "--dim", "100000", "--layers", "100", "--ffn",
            "100000", "--vocab", "100000",
        ],
        "",
    );
    assert!(
        err.contains("needs about") && err.contains("GB of memory"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let err = usage(
        &[
            "acts",
            "write-synthetic",
            "-o",
            s(dir.path()),
            "--n-imgs",
            "1",
            "--patches",
            "2",
            "--d-vit",
            "1000000000",
        ],
        "",
    );
    assert!(
        err.contains("one image of this dataset needs about"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing left behind"
    );
}

#[test]
fn diverging_training_stops_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.txt");
    std::fs::write(&corpus, "abcdefgh".repeat(200)).unwrap();
    let out = dir.path().join("m.tllm");
    let err = fails(
        &[
            "tllm",
            "train",
            s(&corpus),
            "-o",
            s(&out),
            "--steps",
            "20",
            "--lr",
            "1e6",
        ],
        "",
    );
    assert!(
        err.contains("training diverged at step") && err.contains("lower --lr"),
        "{err}"
    );
    assert!(!out.exists());
    // A finished checkpoint past --steps: nothing to do, said plainly.
    ok(
        &["tllm", "train", s(&corpus), "-o", s(&out), "--steps", "3"],
        "",
    );
    let err = usage(
        &[
            "tllm",
            "train",
            s(&corpus),
            "-o",
            s(&out),
            "--steps",
            "2",
            "--resume",
        ],
        "",
    );
    assert!(err.contains("is already trained for 3 steps"), "{err}");
}

#[test]
fn inspect_json_names_its_path() {
    let lines = json_lines(&ok(&["inspect", "--json", WORKED_EXAMPLE], ""));
    assert_eq!(lines[0]["path"], WORKED_EXAMPLE);
}

#[test]
fn a_model_of_the_wrong_kind_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let m = model(dir.path());
    let err = fails(&["embed", "-m", &m, "hello"], "");
    assert!(
        err.contains("the file's format is tllm; embeddings need an EMBD model"),
        "{err}"
    );
    let text = dir.path().join("t.txt");
    std::fs::write(&text, "x".repeat(100)).unwrap();
    let err = fails(
        &[
            "acts",
            "record",
            "-m",
            WORKED_EXAMPLE,
            "-o",
            s(&dir.path().join("acts")),
            s(&text),
        ],
        "",
    );
    assert!(
        err.contains(
            "the file's format is bintensors; acts record reads TLLM and EMBD models (or a Hugging Face model directory)"
        ),
        "{err}"
    );
}

#[test]
fn help_lists_every_subcommand() {
    let top = ok(&["--help"], "");
    assert!(
        top.contains("train, eval, features") && top.contains("record a model's activations"),
        "{top}"
    );
    for (group, verbs) in [
        ("sae", &["train", "eval", "features"][..]),
        (
            "acts",
            &["record", "inspect", "verify", "get", "stats", "bench"][..],
        ),
    ] {
        let help = ok(&[group, "--help"], "");
        for verb in verbs {
            assert!(
                help.contains(&format!("  {verb} ")),
                "{group}: {verb}\n{help}"
            );
        }
    }
}
