//! Hostile tokenizer.json files: each refusal is a typed error, matched on
//! its variant.

use modelbin_tokenize::{Error, HfTokenizer, HfTokenizerError as E, hf_byte_char};
use serde_json::{Value, json};

/// A byte-level BPE file: every byte's token (ids 0..=255 in byte order),
/// then `extra` tokens, with `merges`.
fn byte_level(extra: &[&str], merges: Value) -> Value {
    let mut vocab = serde_json::Map::new();
    for b in 0..=255u8 {
        vocab.insert(hf_byte_char(b).to_string(), json!(b));
    }
    for (i, t) in extra.iter().enumerate() {
        vocab.insert((*t).to_owned(), json!(256 + i));
    }
    json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
        "post_processor": null, "decoder": null,
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                  "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
                  "ignore_merges": false, "vocab": vocab, "merges": merges}
    })
}

fn load(file: &Value) -> Result<HfTokenizer, Error> {
    HfTokenizer::from_json(serde_json::to_string(file).unwrap().as_bytes())
}

fn refusal(file: &Value) -> E {
    match load(file) {
        Err(Error::HfTokenizer(e)) => e,
        Err(other) => panic!("expected an HfTokenizerError, got {other}"),
        Ok(_) => panic!("expected a refusal"),
    }
}

/// One tokenizer can be shared across threads.
#[test]
fn shared_across_threads() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    let t = load(&byte_level(&["ab"], json!(["a b"]))).unwrap();
    send_sync(&t);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| assert_eq!(t.encode("ab", false).unwrap(), [256]));
        }
    });
}

#[test]
fn a_plain_byte_level_file_loads() {
    let t = load(&byte_level(&["ab"], json!(["a b"]))).unwrap();
    assert_eq!(t.engine(), "modelbin");
    assert_eq!(t.encode("abab", false).unwrap(), [256, 256]);
    assert_eq!(t.vocab_size(), 257);
}

#[test]
fn malformed_json() {
    for bytes in [&b"{"[..], b"", b"[]", b"\xff\xfe", b"{\"version\":\"1.0\"}"] {
        let e = HfTokenizer::from_json(bytes).unwrap_err();
        assert!(
            matches!(
                e,
                Error::HfTokenizer(E::Json {
                    what: "tokenizer.json",
                    ..
                })
            ),
            "{:?}: {e}",
            String::from_utf8_lossy(bytes)
        );
    }
    let mut file = byte_level(&[], json!([]));
    file["added_tokens"] = json!([{"id": 1, "content": "x"}]);
    assert!(matches!(refusal(&file), E::Json { .. }));
    let e = HfTokenizer::from_json(b"{\"model\": 3}").unwrap_err();
    assert!(matches!(
        e,
        Error::HfTokenizer(E::UnsupportedType {
            component: "model",
            ..
        })
    ));
}

#[test]
fn version_and_unknown_types() {
    let mut file = byte_level(&[], json!([]));
    file["version"] = json!("2.0");
    assert!(matches!(refusal(&file), E::Version(v) if v == "2.0"));

    let mut file = byte_level(&[], json!([]));
    file["model"]["type"] = json!("SentencePieceMagic");
    assert!(matches!(
        refusal(&file),
        E::UnsupportedType { component: "model", kind } if kind == "SentencePieceMagic"
    ));

    let mut file = byte_level(&[], json!([]));
    file["pre_tokenizer"] =
        json!({"type": "Sequence", "pretokenizers": [{"type": "ByteLevel"}, {"type": "Shout"}]});
    assert!(matches!(
        refusal(&file),
        E::UnsupportedType { component: "pre_tokenizer", kind } if kind == "Shout"
    ));

    let mut file = byte_level(&[], json!([]));
    file["normalizer"] = json!({"kind": "NFC"});
    assert!(matches!(
        refusal(&file),
        E::UnsupportedType {
            component: "normalizer",
            ..
        }
    ));
}

#[test]
fn merges_naming_tokens_missing_from_the_vocab() {
    let e = refusal(&byte_level(&["ab"], json!(["a b", "ab zz"])));
    assert!(matches!(e, E::MergeNotInVocab { index: 1, token } if token == "zz"));
    // Both parts known, the joined token not.
    let e = refusal(&byte_level(&[], json!([["a", "b"]])));
    assert!(matches!(e, E::MergeNotInVocab { index: 0, token } if token == "ab"));
    let e = refusal(&byte_level(&["ab"], json!(["a b c"])));
    assert!(matches!(e, E::BadMerge { index: 0, .. }));
}

#[test]
fn a_vocab_missing_byte_alphabet_entries() {
    let mut file = byte_level(&[], json!([]));
    let vocab = file["model"]["vocab"].as_object_mut().unwrap();
    vocab.remove(&hf_byte_char(b' ').to_string());
    assert!(matches!(
        refusal(&file),
        E::MissingByte {
            byte: b' ',
            char: 'Ġ'
        }
    ));
}

#[test]
fn huge_merge_lists_and_absurd_sizes() {
    // One more merge than the limit: refused before any merge is read.
    let merges = vec![Value::String("a b".into()); (1 << 22) + 1];
    let e = refusal(&byte_level(&["ab"], Value::Array(merges)));
    assert!(matches!(
        e,
        E::Limit {
            what: "the number of merges",
            ..
        }
    ));

    let mut file = byte_level(&[], json!([]));
    file["model"]["vocab"]["huge"] = json!(4_000_000_000u64);
    assert!(matches!(
        refusal(&file),
        E::Limit {
            what: "a vocabulary id",
            ..
        }
    ));

    let mut file = byte_level(&[], json!([]));
    file["model"]["vocab"]["twin"] = json!(7);
    assert!(matches!(refusal(&file), E::DuplicateId { id: 7, .. }));

    let mut file = byte_level(&[], json!([]));
    file["model"]["dropout"] = json!(0.1);
    assert!(matches!(refusal(&file), E::Dropout(d) if d == 0.1));

    let mut file = byte_level(&[], json!([]));
    file["post_processor"] = json!({"type": "TemplateProcessing",
        "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [], "special_tokens": {}});
    assert!(matches!(refusal(&file), E::Invalid { .. }));
}

fn split_file(regex: &str) -> Value {
    let mut file = byte_level(&[], json!([]));
    file["pre_tokenizer"] = json!({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": false},
        {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]});
    file
}

#[test]
fn pathological_regexes() {
    assert!(matches!(refusal(&split_file("(unclosed")), E::Regex { .. }));
    let long = "a|".repeat(20_000) + "b";
    assert!(matches!(refusal(&split_file(&long)), E::Regex { .. }));
    // Exponential backtracking: fancy-regex gives up, and encode says so
    // rather than dropping the rest of the text.
    let t = load(&split_file(r"(?:a|(?=a)a)*(?=b)|.")).unwrap();
    let text = "a".repeat(60) + "c";
    assert!(matches!(
        t.encode(&text, false),
        Err(Error::PatternFailed { .. })
    ));
    // Gaps between matches are pre-tokens too.
    let t = load(&split_file(r"\d")).unwrap();
    let bytes = |s: &str| s.bytes().map(u32::from).collect::<Vec<_>>();
    assert_eq!(t.encode("ab1cd", false).unwrap(), bytes("ab1cd"));
}

#[test]
fn files_that_are_not_regular_or_too_large() {
    let dir = tempdir();
    let fifo = dir.join("tokenizer.json");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(matches!(HfTokenizer::open(&fifo), Err(Error::Format(_))));
    assert!(matches!(HfTokenizer::open_dir(&dir), Err(Error::Format(_))));
    std::fs::remove_file(&fifo).unwrap();
    // A sparse file beyond the cap is refused by its size, unread.
    let big = std::fs::File::create(&fifo).unwrap();
    big.set_len(modelbin_tokenize::hf::MAX_FILE_BYTES + 1)
        .unwrap();
    assert!(matches!(
        HfTokenizer::open(&fifo),
        Err(Error::Format(modelbin_format::Error::FileTooLarge { .. }))
    ));
    std::fs::write(
        &fifo,
        serde_json::to_vec(&byte_level(&[], json!([]))).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join("tokenizer_config.json"), b"{\"bos_token\": [1,").unwrap();
    assert!(matches!(
        HfTokenizer::open_dir(&dir),
        Err(Error::HfTokenizer(E::Json {
            what: "tokenizer_config.json",
            ..
        }))
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn special_tokens_the_tokenizer_lacks_are_refused_not_replaced() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hf-special-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = byte_level(&[], json!([]));
    std::fs::write(
        dir.join("tokenizer.json"),
        serde_json::to_vec(&file).unwrap(),
    )
    .unwrap();
    for (key, config) in [
        ("bos_token", json!({"bos_token": "<nope>"})),
        (
            "eos_token",
            json!({"bos_token": "a", "eos_token": {"content": "</nope>"}}),
        ),
    ] {
        std::fs::write(dir.join("tokenizer_config.json"), config.to_string()).unwrap();
        match HfTokenizer::open_dir(&dir) {
            Err(Error::HfTokenizer(E::UnknownSpecialToken { key: named, token })) => {
                assert_eq!(named, key);
                assert!(token.contains("nope"), "{token}");
            }
            other => panic!("{key}: {other:?}"),
        }
    }
    // A token the vocabulary has is its id.
    std::fs::write(
        dir.join("tokenizer_config.json"),
        json!({"bos_token": "a"}).to_string(),
    )
    .unwrap();
    assert_eq!(
        HfTokenizer::open_dir(&dir).unwrap().bos_id(),
        Some(u32::from(b'a'))
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hf-hostile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
