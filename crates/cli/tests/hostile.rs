//! Hostile input, end to end: small crafted files and special files, each
//! run through the `modelbin` binary under an address-space limit
//! (`RLIMIT_AS`) and a timeout. Every case must end with exit 0 or 1 (never
//! a panic's 101, never a signal, never the timeout), within its peak-RSS
//! bound, and with the right result where there is one. The cases and
//! figures are in docs/reliability.md.

mod common;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::bounded::{ADDRESS_SPACE, MIB, Run, arg, entries, mkfifo, modelbin, run_bounded};

use modelbin_format::tensor::TensorView;
use modelbin_format::{DType, bintensors, safetensors, tllm};

fn write_bt(path: &Path, tensors: &[TensorView<'_>], metadata: Option<&BTreeMap<String, String>>) {
    std::fs::write(
        path,
        bintensors::serialize(tensors.to_vec(), metadata).unwrap(),
    )
    .unwrap();
}

/// A TLLM file of `config` with all-zero weights.
fn write_tllm(path: &Path, config: &tllm::Config) {
    let specs = config.tensors();
    let zeros = vec![0u8; specs.iter().map(|s| s.shape.len() * 4).max().unwrap()];
    let data: Vec<&[u8]> = specs.iter().map(|s| &zeros[..s.shape.len() * 4]).collect();
    tllm::write_file(path, config, &data, &mut |_, _| {}).unwrap();
}

fn tiny_config(n_layers: u32, max_seq_len: u32) -> tllm::Config {
    tllm::Config {
        model_dim: 1,
        n_layers,
        n_heads: 1,
        ffn_hidden_dim: 1,
        max_seq_len,
        vocab_size: 1,
        dropout: 0.0,
    }
}

#[test]
fn tllm_metadata_claiming_billions_of_layers_is_checked_before_use() {
    let dir = tempfile::tempdir().unwrap();
    let mut metadata = tiny_config(1, 1).to_metadata();
    metadata.insert("tllm.n_layers".into(), "2147483647".into());
    let input = dir.path().join("x.bt");
    let data = [0u8; 4];
    write_bt(
        &input,
        &[TensorView::new("tok_embeddings", DType::F32, &[1, 1], &data).unwrap()],
        Some(&metadata),
    );
    let output = dir.path().join("y.tllm");
    modelbin(&["convert", arg(&input), arg(&output)])
        .assert_fails_with(32 * MIB, "describes 25769803767 tensors, the file has 1");
    assert!(!output.exists());
}

#[test]
fn huge_ranks_and_names_are_printed_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let shape = vec![1usize; 21_846];
    let name = "n".repeat(65_536);
    let byte = [7u8];
    let tensors = [
        TensorView::new("deep", DType::U8, &shape, &byte).unwrap(),
        TensorView::new(&name, DType::U8, &[1], &byte).unwrap(),
    ];
    let bt = dir.path().join("x.bt");
    write_bt(&bt, &tensors, None);
    let st = dir.path().join("x.safetensors");
    safetensors::write_file(&st, tensors.to_vec(), None, &mut |_, _| {}).unwrap();
    for path in [&bt, &st] {
        for command in ["inspect", "verify"] {
            let run = modelbin(&[command, arg(path)]);
            run.assert_bounded(64 * MIB);
            assert_eq!(run.code, Some(0), "{run:?}");
        }
        let table = modelbin(&["inspect", arg(path)]);
        // The long name does not pad every other row to its width.
        let deep = table.stdout.lines().find(|l| l.contains("deep")).unwrap();
        assert!(deep.len() < 100_000, "{} bytes", deep.len());
        assert!(table.stdout.contains(&name));
    }
}

#[test]
fn a_long_context_model_allocates_its_kv_cache_by_use() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.tllm");
    write_tllm(&path, &tiny_config(4096, 1 << 21));
    let run = modelbin(&["tllm", "logits", "--model", arg(&path), "--ids", "0,0,0"]);
    run.assert_bounded(128 * MIB);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout.trim(), "[0.0]");
    let run = modelbin(&[
        "generate",
        "--model",
        arg(&path),
        "--ids",
        "0",
        "--max-tokens",
        "8",
    ]);
    run.assert_bounded(128 * MIB);
    assert_eq!(run.code, Some(0), "{run:?}");
}

#[test]
fn thousands_of_tllm_layers_verify_in_linear_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.tllm");
    write_tllm(&path, &tiny_config(16_000, 1));
    let run = modelbin(&["verify", arg(&path)]);
    run.assert_bounded(64 * MIB);
    assert_eq!(run.code, Some(0), "{run:?}");
    // A table row with statistics for each of the 192,003 tensors: about
    // 600 bytes each (the file spends 12 to 20 bytes on each).
    let run = modelbin(&["inspect", arg(&path)]);
    run.assert_bounded(160 * MIB);
    assert_eq!(run.code, Some(0), "{run:?}");
}

/// A BPE2 header for `token_count` ranks, longest token `max_len`, blob of
/// `blob_size` bytes.
fn bpe2_header(token_count: u32, max_len: u32, blob_size: u32) -> Vec<u8> {
    let mut header = b"BPE2".to_vec();
    for v in [2, token_count, max_len, blob_size] {
        header.extend(v.to_le_bytes());
    }
    header.resize(64, 0);
    header
}

#[test]
fn bpe2_tokens_aliasing_one_window_are_refused_in_linear_time() {
    let dir = tempfile::tempdir().unwrap();
    let (count, window) = (50_000u32, MIB as u32);
    let mut bytes = bpe2_header(count, window, window + count);
    for rank in 0..count {
        bytes.extend(rank.to_le_bytes());
        bytes.extend(window.to_le_bytes());
    }
    bytes.extend((0..window + count).map(|i| (i % 251) as u8));
    let path = dir.path().join("alias.bpe2");
    std::fs::write(&path, &bytes).unwrap();
    modelbin(&["verify", arg(&path)]).assert_fails_with(64 * MIB, "must not overlap");
    let out = dir.path().join("out.tiktoken");
    modelbin(&["convert", arg(&path), arg(&out)]).assert_fails_with(64 * MIB, "must not overlap");
}

#[test]
fn a_sparse_bpe2_claiming_four_billion_ranks_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse.bpe2");
    let file = File::create(&path).unwrap();
    std::io::Write::write_all(&mut &file, &bpe2_header(u32::MAX, 0, 0)).unwrap();
    let len = 64 + 8 * u64::from(u32::MAX);
    file.set_len(len).unwrap();
    // The file must be mapped: allow its size on top of the usual limit.
    let run = run_bounded(&["verify", arg(&path)], len + ADDRESS_SPACE, Stdio::null());
    run.assert_fails_with(64 * MIB, "exceeds the limit of 16777216");
}

#[test]
fn saev_metadata_is_capped_and_must_be_a_regular_file() {
    let root = tempfile::tempdir().unwrap();
    let dataset = |name: &str| {
        let dir = root.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        dir
    };
    for (name, size) in [("big24", 24 * MIB), ("big90", 90 * MIB)] {
        let dir = dataset(name);
        let mut text = String::from("{\"data\": \"");
        text.extend(std::iter::repeat_n('x', size as usize));
        text.push_str("\"}");
        std::fs::write(dir.join("metadata.json"), text).unwrap();
        modelbin(&["acts", "verify", arg(&dir)])
            .assert_fails_with(64 * MIB, "over the limit of 1048576 bytes");
    }
    // Under the byte cap, but a million values.
    let dir = dataset("values");
    let values = vec!["0"; 500_000].join(",");
    std::fs::write(
        dir.join("metadata.json"),
        format!("{{\"data\": [{values}]}}"),
    )
    .unwrap();
    modelbin(&["acts", "verify", arg(&dir)]).assert_fails_with(64 * MIB, "over the limit of 65536");
    let dir = dataset("zero");
    std::os::unix::fs::symlink("/dev/zero", dir.join("metadata.json")).unwrap();
    modelbin(&["acts", "verify", arg(&dir)]).assert_fails_with(64 * MIB, "is a device");
    let dir = dataset("fifo");
    mkfifo(&dir.join("metadata.json"));
    modelbin(&["acts", "verify", arg(&dir)]).assert_fails_with(64 * MIB, "is a FIFO");
}

#[test]
fn special_files_are_refused_where_a_file_is_mapped() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.bt");
    mkfifo(&fifo);
    for command in ["verify", "inspect"] {
        modelbin(&[command, arg(&fifo)]).assert_fails_with(64 * MIB, "is a FIFO");
    }
    modelbin(&["verify", "/dev/zero"]).assert_fails_with(64 * MIB, "is a device");
    let out = dir.path().join("out.bt");
    modelbin(&["convert", arg(&fifo), arg(&out)]).assert_fails_with(64 * MIB, "is a FIFO");
}

#[test]
fn text_inputs_of_unknown_size_are_read_as_streams() {
    let text = std::fs::read("/proc/version").unwrap();
    let from_proc = modelbin(&["tokens", "count", "/proc/version"]);
    from_proc.assert_bounded(128 * MIB);
    let piped = {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("version.txt");
        std::fs::write(&copy, &text).unwrap();
        run_bounded(
            &["tokens", "count", "-"],
            ADDRESS_SPACE,
            Stdio::from(File::open(&copy).unwrap()),
        )
    };
    piped.assert_bounded(128 * MIB);
    let count = |run: &Run| -> u64 {
        run.stdout
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(count(&piped) > 0, "{piped:?}");
    assert_eq!(count(&from_proc), count(&piped));
}

#[test]
fn sigbus_from_a_shrinking_input_is_an_error_message() {
    // The handler itself, deterministically: a process blocked on stdin.
    let child = Command::new(env!("CARGO_BIN_EXE_modelbin"))
        .args(["tokens", "count", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGBUS) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("shrank while it was being read"));

    // A real truncation during a conversion: whichever moment it lands
    // (before the open, during the copy, after), the run ends with exit 0
    // or 1, never a signal.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.safetensors");
    let size = 1u64 << 30;
    let mut json =
        format!(r#"{{"t":{{"dtype":"U8","shape":[{size}],"data_offsets":[0,{size}]}}}}"#);
    while json.len() % 8 != 0 {
        json.push(' ');
    }
    let mut head = (json.len() as u64).to_le_bytes().to_vec();
    head.extend(json.as_bytes());
    std::fs::write(&input, &head).unwrap();
    // Sparse: a gigabyte of zeros that costs no disk.
    File::options()
        .write(true)
        .open(&input)
        .unwrap()
        .set_len(head.len() as u64 + size)
        .unwrap();
    let output = dir.path().join("out.bt");
    let limit = size + ADDRESS_SPACE;
    let cutter = {
        let input = input.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            File::options()
                .write(true)
                .open(&input)
                .unwrap()
                .set_len(100)
                .unwrap();
        })
    };
    let run = run_bounded(
        &["convert", arg(&input), arg(&output)],
        limit,
        Stdio::null(),
    );
    cutter.join().unwrap();
    // The mapped input's pages count as resident while they are read.
    run.assert_bounded(size + 64 * MIB);
    if run.code == Some(1) {
        assert!(
            run.stderr.contains("shrank") || run.stderr.contains("big.safetensors"),
            "{run:?}"
        );
        assert!(!output.exists(), "no output file after a failure");
    }
}

#[test]
fn writes_never_replace_their_input_or_leave_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("a.bt");
    let data = [1u8, 2];
    write_bt(
        &input,
        &[TensorView::new("t", DType::U8, &[2], &data).unwrap()],
        None,
    );
    let before = std::fs::read(&input).unwrap();
    modelbin(&["convert", arg(&input), arg(&input), "--to", "safetensors"])
        .assert_fails_with(64 * MIB, "the output is the input");
    let link = dir.path().join("b.bt");
    std::fs::hard_link(&input, &link).unwrap();
    modelbin(&["convert", arg(&input), arg(&link), "--to", "safetensors"])
        .assert_fails_with(64 * MIB, "the output is the input");
    assert_eq!(std::fs::read(&input).unwrap(), before);

    let target = dir.path().join("out.safetensors");
    std::fs::create_dir(&target).unwrap();
    modelbin(&["convert", arg(&input), arg(&target)]).assert_fails_with(64 * MIB, "is a directory");
    let missing = dir.path().join("missing").join("out.safetensors");
    modelbin(&["convert", arg(&input), arg(&missing)])
        .assert_fails_with(64 * MIB, "the output directory does not exist");
    assert_eq!(entries(dir.path()), ["a.bt", "b.bt", "out.safetensors"]);
}

#[test]
fn text_without_whitespace_is_counted_in_linear_space() {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("letters.txt");
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let text: Vec<u8> = (0..8 * MIB)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            b'a' + (state % 26) as u8
        })
        .collect();
    std::fs::write(&path, &text).unwrap();
    let from_file = modelbin(&["tokens", "count", arg(&path)]);
    // The built-in vocabulary, the mapped input, the encoder's tables and
    // one bit per input byte: well under 20 bytes per input byte.
    from_file.assert_bounded(160 * MIB);
    let piped = run_bounded(
        &["tokens", "count", "-e", "o200k_base"],
        ADDRESS_SPACE,
        Stdio::from(File::open(&path).unwrap()),
    );
    piped.assert_bounded(160 * MIB);
    let count: u64 = from_file
        .stdout
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(count > 8 * MIB / 4, "{count}");
    assert_eq!(
        piped.stdout.split_whitespace().next(),
        from_file.stdout.split_whitespace().next()
    );
}

/// A header of one tensor whose shape has `rank` dimensions of 1, as
/// BinTensors (varint per dimension) or safetensors (`1,` per dimension).
fn deep_shape_file(dir: &Path, rank: usize, bintensors: bool) -> PathBuf {
    let mut header = Vec::new();
    if bintensors {
        header.extend([0, 1, 1, b't', 1, 0xFC]); // no metadata, 1 tensor "t", U8
        header.extend((rank as u32).to_le_bytes());
        header.resize(header.len() + rank, 1);
        header.extend([0, 1]); // data 0..1
    } else {
        let dims = vec!["1"; rank].join(",");
        header.extend(
            format!(r#"{{"t":{{"dtype":"U8","shape":[{dims}],"data_offsets":[0,1]}}}}"#).bytes(),
        );
    }
    header.resize(header.len().next_multiple_of(8), b' ');
    let path = dir.join(if bintensors {
        "deep.bt"
    } else {
        "deep.safetensors"
    });
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header);
    bytes.push(7);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The worst memory per header byte: a shape costs 8 bytes per dimension
/// (at least 1 header byte in BinTensors, 2 in safetensors) in the tensor
/// table, and `verify`/`inspect` copy it into their summary. Pinned here,
/// documented in docs/reliability.md.
#[test]
fn deep_shapes_cost_a_bounded_multiple_of_the_header() {
    let dir = tempfile::tempdir().unwrap();
    for (bintensors, rank, multiple) in [(true, 40_000_000, 18), (false, 30_000_000, 10)] {
        let path = deep_shape_file(dir.path(), rank, bintensors);
        let header = std::fs::metadata(&path).unwrap().len();
        let run = run_bounded(
            &["verify", arg(&path)],
            20 * header + ADDRESS_SPACE,
            Stdio::null(),
        );
        run.assert_bounded(multiple * header);
        assert_eq!(run.code, Some(0), "{run:?}");
    }
}
