//! Hostile input and output, end to end through the `modelbin` binary
//! under an address-space limit: outputs that are special files, standard
//! output that fails or closes, endless lines, configurations that claim
//! more than the file holds, FIFOs, checkpoints killed mid-write, memory
//! limits and non-finite values. Special files are made in a temporary
//! directory (FIFOs, and device nodes with the null, zero and full
//! devices' numbers); no test writes to a system path. The cases are in
//! docs/reliability.md.

mod common;

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::bounded::{
    ADDRESS_SPACE, MIB, arg, device, entries, mkfifo, modelbin, run_bounded, run_bounded_to,
};
use modelbin_format::tensor::TensorView;
use modelbin_format::{DType, tllm};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn worked_example() -> PathBuf {
    repo().join("tests/data/worked-example.bt")
}

/// Reads the FIFO `path` to its end on another thread.
fn drain(path: &Path) -> std::thread::JoinHandle<Vec<u8>> {
    let path = path.to_path_buf();
    std::thread::spawn(move || std::fs::read(path).unwrap())
}

#[test]
fn outputs_that_are_special_files_are_streamed_into_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let regular = dir.path().join("regular.safetensors");
    modelbin(&["convert", arg(&worked_example()), "-o", arg(&regular)]).assert_bounded(64 * MIB);
    let expected = std::fs::read(&regular).unwrap();

    let fifo = dir.path().join("pipe");
    mkfifo(&fifo);
    let link = dir.path().join("link-to-pipe");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    for target in [&fifo, &link] {
        let reader = drain(&fifo);
        let run = modelbin(&[
            "convert",
            arg(&worked_example()),
            "-o",
            arg(target),
            "--to",
            "safetensors",
        ]);
        run.assert_bounded(64 * MIB);
        assert_eq!(run.code, Some(0), "{run:?}");
        assert_eq!(reader.join().unwrap(), expected);
    }
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );

    if let Some(null) = device(dir.path(), "null", 3) {
        let run = modelbin(&[
            "convert",
            arg(&worked_example()),
            "-o",
            arg(&null),
            "--to",
            "safetensors",
        ]);
        assert_eq!(run.code, Some(0), "{run:?}");
        assert!(
            std::fs::metadata(&null)
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }
    // No temporary file was left beside any of them.
    assert!(
        entries(dir.path())
            .iter()
            .all(|name| !name.contains(".tmp-modelbin-"))
    );

    // `-o -` is standard output; the report goes to stderr.
    let run = run_bounded(
        &[
            "convert",
            arg(&worked_example()),
            "-o",
            "-",
            "--to",
            "safetensors",
        ],
        ADDRESS_SPACE,
        Stdio::null(),
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    // The run's stdout is read back as lossy UTF-8.
    assert_eq!(run.stdout, String::from_utf8_lossy(&expected));
    assert!(run.stderr.contains("-> - (safetensors)"), "{run:?}");
}

#[test]
fn a_full_standard_output_is_exit_1_and_a_closed_one_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let Some(full) = device(dir.path(), "full", 7) else {
        eprintln!("mknod is not allowed here; the full device case is skipped");
        return;
    };
    let example = worked_example();
    let commands: [&[&str]; 6] = [
        &["inspect", arg(&example)],
        &["verify", arg(&example)],
        &["tokens", "count", "--text", "hello"],
        &["tokens", "models"],
        &["completions", "bash"],
        &["man"],
    ];
    for args in commands {
        let stdout = Stdio::from(File::options().write(true).open(&full).unwrap());
        let run = run_bounded_to(args, ADDRESS_SPACE, Stdio::null(), Some(stdout));
        run.assert_bounded(64 * MIB);
        assert_eq!(run.code, Some(1), "{args:?}: {run:?}");
        assert!(
            run.stderr
                .starts_with("error: cannot write to standard output: No space left"),
            "{args:?}: {run:?}"
        );
        assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    }
    // A reader that goes away: quiet, exit 0.
    for args in [&["man"][..], &["completions", "bash"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_modelbin"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{args:?}: {output:?}");
        assert!(output.stderr.is_empty(), "{output:?}");
    }
}

/// A byte-level BPE2 vocabulary (256 byte tokens and `hi`) in `dir`.
fn byte_vocabulary(dir: &Path) -> PathBuf {
    use base64::Engine as _;
    let source = dir.join("bytes.tiktoken");
    let lines: String = (0..=255u8)
        .map(|b| {
            format!(
                "{} {b}\n",
                base64::engine::general_purpose::STANDARD.encode([b])
            )
        })
        .collect::<String>()
        + "aGk= 256\n";
    std::fs::write(&source, lines).unwrap();
    let vocab = dir.join("bytes.bpe2");
    modelbin(&["convert", arg(&source), arg(&vocab)]).assert_bounded(64 * MIB);
    vocab
}

#[test]
fn custom_patterns_that_match_nothing_or_backtrack_too_long_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let vocab = byte_vocabulary(dir.path());
    for pattern in ["x*", ""] {
        let run = modelbin(&[
            "tokens",
            "encode",
            "--vocab",
            arg(&vocab),
            "--pattern",
            pattern,
            "--text",
            "hixx",
        ]);
        run.assert_bounded(64 * MIB);
        assert_eq!(run.code, Some(0), "{pattern:?}: {run:?}");
    }
    let text = format!("{}b", "a".repeat(30));
    let run = modelbin(&[
        "tokens",
        "encode",
        "--vocab",
        arg(&vocab),
        "--pattern",
        r"(a|aa)+(?=c)|\S",
        "--text",
        &text,
    ]);
    run.assert_bounded(64 * MIB);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("backtracking steps per match"),
        "{run:?}"
    );
    // --pattern with a built-in encoding is refused, not ignored.
    let run = modelbin(&[
        "tokens",
        "encode",
        "-e",
        "cl100k_base",
        "--pattern",
        "x",
        "--text",
        "a",
    ]);
    assert_eq!(run.code, Some(2), "{run:?}");
}

#[test]
fn an_endless_line_is_an_error_naming_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let Some(zero) = device(dir.path(), "zero", 5) else {
        eprintln!("mknod is not allowed here; the endless-line case is skipped");
        return;
    };
    let vocab = byte_vocabulary(dir.path());
    for args in [
        &["tokens", "encode", "--jsonl", "--max-line-bytes", "1048576"][..],
        &[
            "tokens",
            "decode",
            "--jsonl",
            "--vocab",
            arg(&vocab),
            "--pattern",
            r"\S+|\s+",
        ],
        &["tokens", "encode", "--jsonl"],
    ] {
        let run = run_bounded(args, ADDRESS_SPACE, Stdio::from(File::open(&zero).unwrap()));
        run.assert_bounded(256 * MIB);
        assert_eq!(run.code, Some(1), "{args:?}: {run:?}");
        assert!(
            run.stderr.contains("stdin line 1 is longer than"),
            "{run:?}"
        );
        assert!(run.stderr.contains("--max-line-bytes"), "{run:?}");
    }
    let model = tiny_embd(dir.path(), "1", "1e-12");
    let run = run_bounded(
        &["embed", "-m", arg(&model), "--max-line-bytes", "1000"],
        ADDRESS_SPACE,
        Stdio::from(File::open(&zero).unwrap()),
    );
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr
            .contains("stdin line 1 is longer than 1000 bytes"),
        "{run:?}"
    );
}

/// A tiny EMBD model (hidden 4, 2 heads, FFN 8) whose metadata claims
/// `num_layers` layers, with one layer's tensors present.
fn tiny_embd(dir: &Path, num_layers: &str, layer_norm_eps: &str) -> PathBuf {
    let path = dir.join(format!("tiny-{num_layers}-{layer_norm_eps}.embd"));
    common::tiny_embd(
        &path,
        &[
            ("num_layers", num_layers),
            ("layer_norm_eps", layer_norm_eps),
        ],
        None,
    );
    path
}

#[test]
fn a_claimed_million_layers_is_refused_without_building_from_the_claim() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_embd(dir.path(), "1000000", "1e-12");
    for args in [
        &["verify", arg(&model)][..],
        &["inspect", arg(&model)],
        &["embed", "-m", arg(&model), "hello"],
    ] {
        let run = modelbin(args);
        run.assert_bounded(64 * MIB);
        assert!(run.elapsed < Duration::from_secs(5), "{run:?}");
        let missing = "required tensor `encoder.layer.1.attention.self.query.weight` is missing";
        assert!(
            run.stderr.contains(missing) || run.stdout.contains(missing),
            "{args:?}: {run:?}"
        );
    }
    // A LayerNorm epsilon of 0 divides a constant input by zero.
    let model = tiny_embd(dir.path(), "1", "0");
    let run = modelbin(&["embed", "-m", arg(&model), "hello"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stderr.contains("layer_norm_eps"), "{run:?}");
}

#[test]
fn a_fifo_config_is_refused_and_a_fifo_text_waits_for_its_writer() {
    let dir = tempfile::tempdir().unwrap();
    let sae = dir.path().join("sae");
    std::fs::create_dir(&sae).unwrap();
    mkfifo(&sae.join("cfg.json"));
    match modelbin_infer::sae::saelens::load(&sae) {
        Err(modelbin_infer::Error::Format(modelbin_format::Error::NotRegularFile {
            kind, ..
        })) => {
            assert_eq!(kind, "a FIFO")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    let prices = dir.path().join("prices.json");
    mkfifo(&prices);
    let run = modelbin(&[
        "tokens",
        "cost",
        "-m",
        "gpt-4o",
        "--prices",
        arg(&prices),
        "--text",
        "hi",
    ]);
    run.assert_bounded(64 * MIB);
    assert!(run.stderr.contains("is a FIFO"), "{run:?}");

    let text = dir.path().join("text");
    mkfifo(&text);
    let writer = {
        let text = text.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1000));
            std::fs::write(text, "hello world").unwrap();
        })
    };
    let run = modelbin(&["tokens", "count", "-e", "cl100k_base", arg(&text)]);
    writer.join().unwrap();
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.trim_start().starts_with("2 "), "{run:?}");
}

#[test]
fn prices_must_be_finite_and_not_negative() {
    let dir = tempfile::tempdir().unwrap();
    // JSON has no infinity: a number too large for f64 fails to parse.
    for (value, message) in [
        (
            "-1.0",
            "input price -1 must be a finite number, zero or more",
        ),
        ("1e999", "number out of range"),
    ] {
        let prices = dir.path().join("prices.json");
        std::fs::write(
            &prices,
            format!(
                r#"{{"as_of": "2026-11-01", "currency": "USD", "unit": "per 1M tokens", "models": {{"gpt-4o": {{"input": {value}}}}}}}"#
            ),
        )
        .unwrap();
        let run = modelbin(&[
            "tokens",
            "cost",
            "-m",
            "gpt-4o",
            "--prices",
            arg(&prices),
            "--text",
            "hi",
        ]);
        assert_eq!(run.code, Some(1), "{run:?}");
        assert!(run.stderr.contains(message), "{run:?}");
    }
}

/// A TLLM file of `config` whose first weight is `first` (the rest 0.01).
/// A TLLM of width 4, one layer, two heads, FFN 8, 8 positions and 4
/// tokens.
fn tiny_tllm_config() -> tllm::Config {
    tllm::Config {
        model_dim: 4,
        n_layers: 1,
        n_heads: 2,
        ffn_hidden_dim: 8,
        max_seq_len: 8,
        vocab_size: 4,
        dropout: 0.0,
    }
}

fn tllm_with_first_weight(path: &Path, config: &tllm::Config, first: f32) {
    let specs = config.tensors();
    let buffers: Vec<Vec<u8>> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (0..s.shape.len())
                .flat_map(|j| if i == 0 && j == 0 { first } else { 0.01 }.to_le_bytes())
                .collect()
        })
        .collect();
    let data: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    tllm::write_file(path, config, &data, &mut |_, _| {}).unwrap();
}

#[test]
fn non_finite_weights_fail_verify_and_never_reach_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let config = tiny_tllm_config();
    let model = dir.path().join("nan.tllm");
    tllm_with_first_weight(&model, &config, f32::NAN);
    let run = modelbin(&["verify", arg(&model)]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr
            .contains("holds NaN at element 0; model weights must be finite"),
        "{run:?}"
    );
    for args in [
        &["tllm", "logits", "-m", arg(&model), "--ids", "0,1"][..],
        &[
            "tllm",
            "generate",
            "-m",
            arg(&model),
            "--ids",
            "0",
            "--max-tokens",
            "3",
        ],
    ] {
        let run = modelbin(args);
        assert_eq!(run.code, Some(1), "{args:?}: {run:?}");
        assert!(
            run.stderr.contains("the logits came out NaN or infinite"),
            "{run:?}"
        );
        assert!(
            !run.stdout.contains("null") && !run.stdout.contains("NaN"),
            "{run:?}"
        );
    }
}

#[test]
fn inspect_escapes_control_characters_in_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("escape.bt");
    let metadata = BTreeMap::from([("note".to_owned(), "\u{1b}[31mred\u{7}".to_owned())]);
    let data = 1.0f32.to_le_bytes();
    let view = TensorView::new("w", DType::F32, &[1], &data).unwrap();
    std::fs::write(
        &path,
        modelbin_format::bintensors::serialize(vec![view], Some(&metadata)).unwrap(),
    )
    .unwrap();
    let run = modelbin(&["inspect", arg(&path)]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        !run.stdout.contains('\u{1b}') && !run.stdout.contains('\u{7}'),
        "{run:?}"
    );
    assert!(run.stdout.contains(r"note = \u{1b}[31mred\u{7}"), "{run:?}");
}

#[test]
fn memory_beyond_the_address_space_limit_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("big.tllm");
    let run = run_bounded(
        &[
            "tllm",
            "init",
            "--dim",
            "2048",
            "--layers",
            "12",
            "--ffn",
            "8192",
            "-o",
            arg(&out),
        ],
        2048 * MIB,
        Stdio::null(),
    );
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr.contains("the address-space limit (ulimit -v)"),
        "{run:?}"
    );
    assert!(run.elapsed < Duration::from_secs(5), "{run:?}");
    assert!(!out.exists());
}

#[test]
fn every_kill_of_a_checkpointing_run_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus.txt");
    std::fs::write(
        &corpus,
        "the quick brown fox jumps over the lazy dog. ".repeat(200),
    )
    .unwrap();
    let out = dir.path().join("model.tllm");
    let shape = [
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
    let mut first: Vec<&str> = vec![
        "tllm",
        "train",
        arg(&corpus),
        "--out",
        arg(&out),
        "--steps",
        "2",
        "--checkpoint-every",
        "1",
    ];
    first.extend(shape);
    let run = modelbin(&first);
    assert_eq!(run.code, Some(0), "{run:?}");
    for kill in 0..8u64 {
        let mut args: Vec<&str> = vec![
            "tllm",
            "train",
            arg(&corpus),
            "--out",
            arg(&out),
            "--steps",
            "100000",
            "--checkpoint-every",
            "1",
            "--resume",
        ];
        args.extend(shape);
        let mut child = Command::new(env!("CARGO_BIN_EXE_modelbin"))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kills land at different instants of the checkpoint cycle.
        std::thread::sleep(Duration::from_millis(300 + 37 * kill));
        child.kill().unwrap();
        child.wait().unwrap();
        let mut check: Vec<&str> = vec![
            "tllm",
            "train",
            arg(&corpus),
            "--out",
            arg(&out),
            "--steps",
            "1",
            "--resume",
            "--json",
        ];
        check.extend(shape);
        let run = modelbin(&check);
        // The checkpoint pair loads; then one step is fewer than it has.
        assert_eq!(run.code, Some(2), "kill {kill}: {run:?}");
        assert!(
            run.stderr.contains("is already trained for"),
            "kill {kill}: {run:?}"
        );
    }
}

#[test]
fn an_unfinished_dataset_leaves_no_partial_directory() {
    let dir = tempfile::tempdir().unwrap();
    let metadata = modelbin_format::saev::Metadata {
        vit_family: "clip".into(),
        vit_ckpt: "test".into(),
        layers: vec![-1],
        n_patches_per_img: 2,
        cls_token: false,
        d_vit: 4,
        seed: 0,
        n_imgs: 3,
        max_patches_per_shard: 100,
        data: serde_json::json!("test"),
    };
    let writer = modelbin_format::saev::Writer::create(dir.path(), metadata).unwrap();
    assert_eq!(entries(dir.path()).len(), 1);
    drop(writer);
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

/// Runs `modelbin args` in `dir` (a relative output lands there).
fn modelbin_in(dir: &Path, args: &[&str]) -> common::bounded::Run {
    common::bounded::run_bounded_in(Some(dir), args, ADDRESS_SPACE, Stdio::null(), None)
}

/// Runs `convert MODEL --to sentence-transformers -o OUTPUT` in `dir`.
fn export_in(dir: &Path, model: &Path, output: &str) -> common::bounded::Run {
    let args = [
        "convert",
        arg(model),
        "--to",
        "sentence-transformers",
        "-o",
        output,
    ];
    modelbin_in(dir, &args)
}

/// Exit 1 and one line on stderr holding `message`.
fn assert_refused(run: &common::bounded::Run, message: &str) {
    run.assert_fails_with(ADDRESS_SPACE, message);
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
}

#[test]
fn an_output_that_is_an_input_is_refused_by_identity_not_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_embd(dir.path(), "1", "1e-12");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "first note\nsecond note\n").unwrap();
    let index = dir.path().join("notes.safetensors");
    let run = modelbin(&[
        "embed",
        "-m",
        arg(&model),
        "--input",
        arg(&notes),
        "-o",
        arg(&index),
    ]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let index_bytes = std::fs::read(&index).unwrap();
    let model_bytes = std::fs::read(&model).unwrap();
    let link = dir.path().join("link.safetensors");
    std::os::unix::fs::symlink(&index, &link).unwrap();
    let respelled = dir.path().join("sub/../notes.safetensors");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let model_link = dir.path().join("model-link.embd");
    std::os::unix::fs::symlink(&model, &model_link).unwrap();
    let notes_link = dir.path().join("notes-link.txt");
    std::os::unix::fs::symlink(&notes, &notes_link).unwrap();
    let cases: [(&Path, &Path); 6] = [
        (&index, &index),
        (&index, &link),
        (&index, &respelled),
        (&notes, &notes_link),
        (&notes, &model_link),
        (&index, &model),
    ];
    for (input, output) in cases {
        let out = modelbin_in(
            dir.path(),
            &[
                "embed",
                "-m",
                arg(&model),
                "--input",
                arg(input),
                "-o",
                arg(output),
            ],
        );
        assert_refused(&out, "the output is the input");
    }
    // `search --embeddings` and `sae`/`tllm` logs and models check their
    // inputs the same way.
    let out = modelbin_in(
        dir.path(),
        &[
            "search",
            "-m",
            arg(&model),
            "-q",
            "note",
            "--embeddings",
            arg(&notes_link),
            arg(&notes),
        ],
    );
    assert_refused(&out, "the output is the input");
    let corpus = dir.path().join("corpus.txt");
    let text = "a small corpus of bytes. ".repeat(40);
    std::fs::write(&corpus, &text).unwrap();
    let corpus_link = dir.path().join("corpus-link.txt");
    std::os::unix::fs::symlink(&corpus, &corpus_link).unwrap();
    let shape = ["--dim", "8", "--heads", "1", "--ffn", "8", "--seq", "4"];
    for (out, extra) in [
        ("model.tllm", ["--log", arg(&corpus_link)]),
        (arg(&corpus_link), ["--force", "--json"]),
    ] {
        let mut args = vec!["tllm", "train", arg(&corpus), "--out", out, "--steps", "1"];
        args.extend(shape);
        args.extend(extra);
        assert_refused(&modelbin_in(dir.path(), &args), "the output is the input");
    }
    assert_eq!(std::fs::read_to_string(&corpus).unwrap(), text);
    assert_eq!(std::fs::read(&index).unwrap(), index_bytes);
    assert_eq!(std::fs::read(&model).unwrap(), model_bytes);
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "first note\nsecond note\n"
    );
}

#[test]
fn a_model_directory_export_refuses_streams_and_missing_parents() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_embd(dir.path(), "1", "1e-12");
    let fifo = dir.path().join("pipe");
    mkfifo(&fifo);
    let export = |output: &str| export_in(dir.path(), &model, output);
    let before = entries(dir.path());
    assert_refused(
        &export("-"),
        "-: is standard output; this output is a directory",
    );
    assert_refused(&export(arg(&fifo)), "is a FIFO; this output is a directory");
    assert_refused(
        &export("nope/st"),
        "nope: the output directory does not exist",
    );
    assert_eq!(entries(dir.path()), before, "nothing was created");
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    let out = export("st");
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(dir.path().join("st/model.safetensors").is_file());
}

#[test]
fn an_export_removes_the_staging_directories_of_killed_runs() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_embd(dir.path(), "1", "1e-12");
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    // What `kill -9` during an export leaves: a staging directory, and the
    // EMBD staged from a model directory (with its temporary file).
    let stale = [
        format!(".st.partial-{dead}"),
        format!(".st.embd.partial-{dead}"),
        format!(".st.embd.partial-{dead}.tmp-modelbin-{dead}-0"),
    ];
    std::fs::create_dir_all(dir.path().join(&stale[0]).join("1_Pooling")).unwrap();
    std::fs::write(
        dir.path().join(&stale[0]).join("model.safetensors"),
        [0; 64],
    )
    .unwrap();
    std::fs::write(dir.path().join(&stale[1]), b"partial").unwrap();
    std::fs::write(dir.path().join(&stale[2]), b"partial").unwrap();
    // This test's process is alive: its staging directory is kept.
    let live = format!(".st.partial-{}", std::process::id());
    std::fs::create_dir(dir.path().join(&live)).unwrap();
    let out = export_in(dir.path(), &model, "st");
    assert_eq!(out.code, Some(0), "{out:?}");
    let left = entries(dir.path());
    for name in &stale {
        assert!(!left.contains(name), "{name} left: {left:?}");
    }
    assert!(left.contains(&live), "{left:?}");
    assert!(dir.path().join("st/config.json").is_file());
}

#[test]
fn search_hits_and_errors_print_no_escape_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_embd(dir.path(), "1", "1e-12");
    let hostile = "a\u{1b}[2J\u{1b}]52;c;SGVsbG8=\u{7} b";
    let notes = dir.path().join("notes\u{1b}[31m.txt");
    std::fs::write(&notes, format!("c\n{hostile}\n")).unwrap();
    let text = modelbin(&["search", "-m", arg(&model), "-q", "a b", arg(&notes)]);
    let json = modelbin(&[
        "search",
        "-m",
        arg(&model),
        "-q",
        "a b",
        "--json",
        arg(&notes),
    ]);
    for run in [&text, &json] {
        assert_eq!(run.code, Some(0), "{run:?}");
        assert!(
            !run.stdout.contains(['\u{1b}', '\u{7}']),
            "{:?}",
            run.stdout
        );
    }
    assert!(
        text.stdout
            .contains(r"a\u{1b}[2J\u{1b}]52;c;SGVsbG8=\u{7} b"),
        "{text:?}"
    );
    assert!(text.stdout.contains(r"notes\u{1b}[31m.txt:2"), "{text:?}");
    let hits: Vec<serde_json::Value> = json
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(hits.iter().any(|h| h["text"] == hostile), "{hits:?}");
    // An error quoting the file's name escapes it too.
    let missing = dir.path().join("gone\u{1b}]52;c;SGVsbG8=\u{7}.txt");
    let run = modelbin(&["search", "-m", arg(&model), "-q", "a", arg(&missing)]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(!run.stderr.contains(['\u{1b}', '\u{7}']), "{run:?}");
    assert!(run.stderr.contains(r"gone\u{1b}]52"), "{run:?}");
}

#[test]
fn decoded_text_is_the_product_raw_to_a_pipe_and_escaped_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let vocab = byte_vocabulary(dir.path());
    // ESC ] 5 2 ; c ; BEL, then "hi": the text a pipe asked for, byte for byte.
    let ids = "27 93 53 50 59 99 59 7 256";
    let vocab = ["--vocab", arg(&vocab), "--pattern", "."];
    let raw = modelbin(&[&["tokens", "decode"][..], &vocab, &[ids]].concat());
    assert_eq!(raw.code, Some(0), "{raw:?}");
    assert_eq!(raw.stdout, "\u{1b}]52;c;\u{7}hi");
    let json = modelbin(&[&["tokens", "decode", "--json"][..], &vocab, &[ids]].concat());
    assert_eq!(json.code, Some(0), "{json:?}");
    assert_eq!(json.stdout, "{\"text\":\"\\u001b]52;c;\\u0007hi\"}\n");
}

/// A text input that is an endless device (a zero device made here) is
/// read under the stream cap: the recording and the token count stop with
/// one line, under the address-space limit, instead of climbing to it.
#[test]
fn endless_text_streams_are_read_under_a_cap() {
    let dir = tempfile::tempdir().unwrap();
    let Some(zero) = device(dir.path(), "zero", 5) else {
        return;
    };
    let config = tllm::Config {
        vocab_size: 256,
        ..tiny_tllm_config()
    };
    let model = dir.path().join("bytes.tllm");
    tllm_with_first_weight(&model, &config, 0.01);
    let out = dir.path().join("acts");
    for args in [
        &[
            "acts",
            "record",
            "-m",
            arg(&model),
            "-o",
            arg(&out),
            arg(&zero),
        ][..],
        &["tokens", "count", arg(&zero)],
    ] {
        let run = modelbin(args);
        run.assert_fails_with(ADDRESS_SPACE, "zero: ");
        assert!(
            run.stderr.contains("no memory left for a stream input")
                || run.stderr.contains("over the limit of 1073741824 bytes"),
            "{args:?}: {run:?}"
        );
    }
}

/// `embed --input F -o X.safetensors` and `search` hold indexed lines to
/// the same line cap as every line reader: a 70 MB line (a sparse file)
/// is refused by default, and `--max-line-bytes` lowers the cap.
#[test]
fn indexed_lines_are_held_to_the_line_cap() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_embd(dir.path(), "1", "1e-12");
    let long = dir.path().join("long.txt");
    File::create(&long).unwrap().set_len(70_000_000).unwrap();
    let index = dir.path().join("index.safetensors");
    let embed = [
        "embed",
        "-m",
        arg(&model),
        "--input",
        arg(&long),
        "-o",
        arg(&index),
    ];
    modelbin(&embed).assert_fails_with(
        ADDRESS_SPACE,
        "long.txt: line 1 is longer than 67108864 bytes",
    );
    let short = dir.path().join("short.txt");
    std::fs::write(&short, format!("ok\n{}\n", "word ".repeat(40))).unwrap();
    let search = ["search", "-m", arg(&model), "-q", "word", arg(&short)];
    let with_cap = [&search[..], &["--max-line-bytes", "100"]].concat();
    let message = format!("error: {}: line 2 is longer than 100 bytes", arg(&short));
    modelbin(&with_cap).assert_fails_with(ADDRESS_SPACE, &message);
    let run = modelbin(&search);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!entries(dir.path()).contains(&"index.safetensors".to_owned()));
}

#[test]
fn parquet_pages_that_declare_more_than_memory_are_refused_before_reading() {
    // pyarrow's file with each page header rewritten to declare 128 MiB
    // (crates/format/tests/data/parquet/make.py): 512 MiB in all, more
    // than the address-space limit leaves, is refused before the decoder
    // reserves any of it.
    let lie =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../format/tests/data/parquet/page_lie.parquet");
    let run = run_bounded(
        &["tokens", "count", arg(&lie)],
        ADDRESS_SPACE,
        Stdio::null(),
    );
    run.assert_fails_with(
        64 * MIB,
        "column \"text\" declares 536870908 bytes of text, more than",
    );
}
