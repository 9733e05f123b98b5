//! The embedded vocabularies are exactly what modelbin's converter makes from
//! the official `.tiktoken` files (shipped in tiktoken-rs; copied to
//! target/test-data/tiktoken/ by scripts/fetch-test-data.sh). Regenerate with
//! `modelbin convert target/test-data/tiktoken/NAME.tiktoken crates/tokenize/vocab/NAME.bpe2`.

use modelbin_format::bpe2;

#[test]
fn embedded_vocabularies_are_the_converters_output() {
    for name in ["cl100k_base", "o200k_base", "p50k_base", "r50k_base"] {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let source = std::fs::read(
            dir.join("../../target/test-data/tiktoken")
                .join(format!("{name}.tiktoken")),
        )
        .expect("run scripts/fetch-test-data.sh");
        let built = bpe2::build_from_tiktoken(&source, true).unwrap();
        let embedded = std::fs::read(dir.join("vocab").join(format!("{name}.bpe2"))).unwrap();
        assert!(built == embedded, "{name}: vocab/{name}.bpe2 is stale");
        let tokenizer = modelbin_tokenize::Tokenizer::embedded(name).unwrap();
        assert_eq!(tokenizer.name(), Some(name));
    }
    assert!(matches!(
        modelbin_tokenize::Tokenizer::embedded("gpt-9"),
        Err(modelbin_tokenize::Error::UnknownEncodingName(name)) if name == "gpt-9"
    ));
}

#[test]
fn every_tiktoken_encoding_is_built_in_with_its_special_tokens() {
    use modelbin_tokenize::Tokenizer;
    // (name, n_vocab, special tokens, one of them) as tiktoken 0.14.0's
    // openai_public.py defines them.
    let expected = [
        ("gpt2", 50257, 1, ("<|endoftext|>", 50256)),
        ("r50k_base", 50257, 1, ("<|endoftext|>", 50256)),
        ("p50k_base", 50281, 1, ("<|endoftext|>", 50256)),
        ("p50k_edit", 50284, 4, ("<|fim_suffix|>", 50283)),
        ("cl100k_base", 100277, 5, ("<|endofprompt|>", 100276)),
        ("o200k_base", 200019, 2, ("<|endofprompt|>", 200018)),
        ("o200k_harmony", 201088, 1091, ("<|call|>", 200012)),
    ];
    for (name, n_vocab, count, (special, id)) in expected {
        let tokenizer = Tokenizer::embedded(name).unwrap();
        assert_eq!(tokenizer.name(), Some(name));
        assert_eq!(tokenizer.vocab_size(), n_vocab, "{name}");
        assert_eq!(tokenizer.special_tokens().len(), count, "{name}");
        assert_eq!(tokenizer.encode_single_token(special.as_bytes()), Some(id));
        assert_eq!(tokenizer.decode_bytes(&[id]).unwrap(), special.as_bytes());
        let hello = tokenizer.encode_ordinary("hello world").unwrap();
        assert_eq!(tokenizer.decode(&hello).unwrap(), "hello world");
    }
    // o200k_harmony's reserved range covers 200,018, which keeps
    // <|endofprompt|> as its text in decoding.
    let harmony = Tokenizer::embedded("o200k_harmony").unwrap();
    assert_eq!(
        harmony.encode_single_token(b"<|reserved_200018|>"),
        Some(200018)
    );
    assert_eq!(harmony.decode_bytes(&[200018]).unwrap(), b"<|endofprompt|>");
    assert_eq!(
        harmony.encode_single_token(b"<|reserved_201087|>"),
        Some(201087)
    );
    assert_eq!(harmony.encode_single_token(b"<|reserved_201088|>"), None);
}

#[test]
fn encode_bytes_merges_invalid_utf8_with_the_last_piece() {
    let cl100k = modelbin_tokenize::Tokenizer::embedded("cl100k_base").unwrap();
    // tiktoken's tests/test_encoding.py::test_encode_bytes.
    assert_eq!(cl100k.encode_bytes(b" \xec\x8b\xa4\xed").unwrap(), [62085]);
    for n in 0..10 {
        let bytes = vec![0x80; n];
        let ids = cl100k.encode_bytes(&bytes).unwrap();
        assert_eq!(cl100k.decode_bytes(&ids).unwrap(), bytes);
    }
    let text = "hello world";
    assert_eq!(
        cl100k.encode_bytes(text.as_bytes()).unwrap(),
        cl100k.encode_ordinary(text).unwrap()
    );
}
