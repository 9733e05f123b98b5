//! `HfTokenizer` against Hugging Face's Python `tokenizers` (the heavy
//! venv): tokenizer.json files trained by the real library on a corpus
//! (tests/hf/make_tokenizers.py), byte-level GPT-2 and RoBERTa style,
//! Llama 3 and Qwen2 `Split` regex style, an `ignore_merges` file, a
//! Metaspace/byte-fallback BPE, a Unigram, and the hand-made merge-order
//! counter-example. Ids must be equal with and without special tokens, on
//! code, CJK, emoji, whitespace runs, Unicode spaces and special-token
//! strings inside text; decoding must give the library's text back.

mod heavy;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use modelbin_tokenize::HfTokenizer;
use serde_json::Value;

/// The trained files and the oracle's ids, made once per test run.
fn generated() -> &'static (PathBuf, Value) {
    static MADE: OnceLock<(PathBuf, Value)> = OnceLock::new();
    MADE.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hf-tokenizers");
        let status = Command::new(heavy::python())
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hf/make_tokenizers.py"))
            .arg(root.join("tests/data/opticks.txt"))
            .arg(&out)
            .status()
            .expect("run make_tokenizers.py");
        assert!(status.success(), "make_tokenizers.py failed");
        let expected = std::fs::read(out.join("expected.json")).unwrap();
        (out, serde_json::from_slice(&expected).unwrap())
    })
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

/// Every text's ids (three ways) and decoding equal the oracle's.
fn check(name: &str, engine: &str) {
    let (dir, expected) = generated();
    let tokenizer = HfTokenizer::open(&dir.join(name).join("tokenizer.json")).unwrap();
    assert_eq!(tokenizer.engine(), engine, "{name}");
    let texts = expected["texts"].as_array().unwrap();
    let oracle = &expected["tokenizers"][name];
    let mut mismatches = vec![];
    for (i, text) in texts.iter().enumerate() {
        let text = text.as_str().unwrap();
        let with = tokenizer.encode(text, true).unwrap();
        let without = tokenizer.encode(text, false).unwrap();
        let ordinary = tokenizer.encode_ordinary(text).unwrap();
        for (what, got, want) in [
            ("with", &with, ids(&oracle["with"][i])),
            ("without", &without, ids(&oracle["without"][i])),
            ("ordinary", &ordinary, ids(&oracle["ordinary"][i])),
        ] {
            if *got != want {
                mismatches.push(format!("{what} {text:?}:\n  ours {got:?}\n  HF   {want:?}"));
            }
        }
        let decoded = tokenizer.decode_bytes(&without).unwrap();
        let want = oracle["decoded"][i].as_str().unwrap();
        if decoded != want.as_bytes() {
            mismatches.push(format!(
                "decode {text:?}: ours {:?} HF {want:?}",
                String::from_utf8_lossy(&decoded)
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{name}: {} mismatches of {} texts:\n{}",
        mismatches.len(),
        texts.len(),
        mismatches[..mismatches.len().min(8)].join("\n")
    );
}

#[test]
fn gpt2_style_byte_level() {
    check("gpt2", "modelbin");
}

#[test]
fn roberta_style_prefix_space_and_processing() {
    check("roberta", "modelbin");
}

#[test]
fn llama3_style_split_regex() {
    check("llama3", "modelbin");
}

#[test]
fn qwen2_style_single_digits_and_nfc() {
    check("qwen2", "modelbin");
}

#[test]
fn ignore_merges_looks_up_whole_pieces() {
    check("ignore_merges", "modelbin");
}

#[test]
fn merge_order_counter_example() {
    check("counter", "modelbin");
    let (dir, _) = generated();
    let tokenizer = HfTokenizer::open(&dir.join("counter/tokenizer.json")).unwrap();
    let a = tokenizer.encode("a", false).unwrap()[0];
    let bc = tokenizer.encode("bc", false).unwrap();
    assert_eq!(bc.len(), 1);
    assert_eq!(tokenizer.encode("abc", false).unwrap(), [a, bc[0]]);
}

#[test]
fn metaspace_byte_fallback_goes_to_tokenizers() {
    check("metaspace", "tokenizers");
}

#[test]
fn unigram_goes_to_tokenizers() {
    check("unigram", "tokenizers");
}

/// BOS and EOS from the post-processor, and the vocabulary size.
#[test]
fn bos_eos_and_vocab_size() {
    let (dir, _) = generated();
    let open = |name: &str| HfTokenizer::open(&dir.join(name).join("tokenizer.json")).unwrap();
    let llama3 = open("llama3");
    let bos = llama3.encode("<|begin_of_text|>", false).unwrap()[0];
    assert_eq!(llama3.bos_id(), Some(bos));
    assert!(llama3.adds_bos());
    assert_eq!(llama3.eos_id(), None);
    let gpt2 = open("gpt2");
    assert_eq!(gpt2.bos_id(), None);
    assert!(!gpt2.adds_bos());
    let roberta = open("roberta");
    let (s, end) = (
        roberta.encode("<s>", false).unwrap()[0],
        roberta.encode("</s>", false).unwrap()[0],
    );
    assert_eq!((roberta.bos_id(), roberta.eos_id()), (Some(s), Some(end)));
    assert!(roberta.adds_bos());
    let metaspace = open("metaspace");
    assert_eq!(metaspace.bos_id(), Some(1));
    assert!(metaspace.adds_bos());
    assert_eq!(metaspace.token_bytes(3 + 0x41), Some(b"A".to_vec()));
    for t in [&llama3, &gpt2, &roberta, &metaspace] {
        let highest = (0..t.vocab_size())
            .rev()
            .find(|&id| t.token_bytes(id).is_some());
        assert_eq!(highest, Some(t.vocab_size() - 1));
        assert!(t.token_bytes(t.vocab_size()).is_none());
    }
}

/// A directory with a tokenizer_config.json: the ids equal transformers'
/// `AutoTokenizer`'s (which drops `add_bos_token` when tokenizer.json is
/// there), and BOS is the config's `bos_token`.
#[test]
fn directory_with_config_matches_auto_tokenizer() {
    let (dir, expected) = generated();
    let tokenizer = HfTokenizer::open_dir(&dir.join("gpt2_config")).unwrap();
    let texts = expected["texts"].as_array().unwrap();
    for (i, text) in texts.iter().enumerate() {
        let text = text.as_str().unwrap();
        let want = ids(&expected["auto"]["ids"][i]);
        assert_eq!(tokenizer.encode(text, true).unwrap(), want, "{text:?}");
    }
    let bos = expected["auto"]["bos"].as_u64().unwrap() as u32;
    assert_eq!(tokenizer.bos_id(), Some(bos));
    assert_eq!(tokenizer.eos_id(), Some(bos));
    assert!(!tokenizer.adds_bos());
}
