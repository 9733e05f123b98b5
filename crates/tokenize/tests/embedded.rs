//! The embedded vocabularies are exactly what modelbin's converter makes from
//! the official `.tiktoken` files (shipped in tiktoken-rs; copied to
//! target/test-data/tiktoken/ by scripts/fetch-test-data.sh). Regenerate with
//! `modelbin convert target/test-data/tiktoken/NAME.tiktoken crates/tokenize/vocab/NAME.bpe2`.

use modelbin_format::bpe2;

#[test]
fn embedded_vocabularies_are_the_converters_output() {
    for name in ["cl100k_base", "o200k_base"] {
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
        modelbin_tokenize::Tokenizer::embedded("p50k_base"),
        Err(modelbin_tokenize::Error::NotEmbedded(name)) if name == "p50k_base"
    ));
    assert!(matches!(
        modelbin_tokenize::Tokenizer::embedded("gpt-9"),
        Err(modelbin_tokenize::Error::UnknownEncodingName(name)) if name == "gpt-9"
    ));
}
