//! Exactly tiktoken's ids: tiktoken's own test vectors, and property tests
//! against `tiktoken-rs` on random text, over cl100k_base and o200k_base
//! (p50k_base and r50k_base load from BPE2 built from the real files).

use std::sync::OnceLock;

use modelbin_tokenize::{Error, Specials, Tokenizer};
use proptest::prelude::*;
use tiktoken_rs::CoreBPE;

fn ours(name: &str) -> &'static Tokenizer {
    match name {
        "cl100k_base" | "o200k_base" => Tokenizer::embedded(name).unwrap(),
        _ => {
            static P50K: OnceLock<Tokenizer> = OnceLock::new();
            static R50K: OnceLock<Tokenizer> = OnceLock::new();
            let cell = if name == "p50k_base" { &P50K } else { &R50K };
            cell.get_or_init(|| {
                let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../../target/test-data/tiktoken")
                    .join(format!("{name}.tiktoken"));
                let source = std::fs::read(&path).expect("run scripts/fetch-test-data.sh");
                let bpe2 = modelbin_format::bpe2::build_from_tiktoken(&source, true).unwrap();
                Tokenizer::from_bpe2(modelbin_tokenize::Source::Owned(bpe2), None).unwrap()
            })
        }
    }
}

fn reference(name: &str) -> &'static CoreBPE {
    static CL: OnceLock<CoreBPE> = OnceLock::new();
    static O2: OnceLock<CoreBPE> = OnceLock::new();
    static P5: OnceLock<CoreBPE> = OnceLock::new();
    static R5: OnceLock<CoreBPE> = OnceLock::new();
    match name {
        "cl100k_base" => CL.get_or_init(|| tiktoken_rs::cl100k_base().unwrap()),
        "o200k_base" => O2.get_or_init(|| tiktoken_rs::o200k_base().unwrap()),
        "p50k_base" => P5.get_or_init(|| tiktoken_rs::p50k_base().unwrap()),
        _ => R5.get_or_init(|| tiktoken_rs::r50k_base().unwrap()),
    }
}

const ENCODINGS: [&str; 4] = ["cl100k_base", "o200k_base", "p50k_base", "r50k_base"];

fn assert_exact(name: &str, text: &str) {
    let expected = reference(name).encode_ordinary(text);
    let got = ours(name).encode_ordinary(text).unwrap();
    assert_eq!(got, expected, "{name}: {text:?}");
    assert_eq!(ours(name).count(text).unwrap(), expected.len());
}

#[test]
fn tiktoken_test_vectors() {
    let cl = ours("cl100k_base");
    assert_eq!(cl.encode_ordinary("hello world").unwrap(), [15339, 1917]);
    assert_eq!(
        cl.encode_ordinary(" \u{85}0").unwrap(),
        reference("cl100k_base").encode_ordinary(" \u{85}0")
    );
    assert_eq!(cl.encode_ordinary("today\n \n").unwrap(), [31213, 27907]);
    for text in [
        "today\n \n\n",
        "today\n  \n",
        "today\n\n\n",
        "today\n\n\n\n",
        "👍",
        "1234567890",
    ] {
        assert_exact("cl100k_base", text);
    }
    let o2 = ours("o200k_base");
    assert_eq!(o2.encode_ordinary("hello world").unwrap(), [24912, 2375]);
    let p5 = ours("p50k_base");
    assert_eq!(p5.encode_ordinary("hello world").unwrap(), [31373, 995]);
    assert_eq!(p5.encode_ordinary(" \u{85}0").unwrap(), [220, 126, 227, 15]);
    let r5 = ours("r50k_base");
    assert_eq!(r5.encode_ordinary("hello world").unwrap(), [31373, 995]);
    assert_eq!(
        r5.encode(" <|endoftext|>", Specials::All, Specials::None)
            .unwrap(),
        [220, 50256]
    );
    for name in ENCODINGS {
        for text in [
            "",
            " ",
            "  ",
            "\n",
            "a",
            "'s",
            "I'M",
            "ſ'ſ'ſ",
            "x\r\n\r\n y",
            "\u{0301}AB",
            "a\u{0301}b",
        ] {
            assert_exact(name, text);
        }
    }
}

#[test]
fn special_tokens_follow_tiktoken() {
    let cl = ours("cl100k_base");
    let text = "hi <|endoftext|> there<|fim_prefix|>";
    let err = cl.encode(text, Specials::None, Specials::All).unwrap_err();
    assert!(err.to_string().contains("<|endoftext|>"), "{err}");
    let ids = cl.encode(text, Specials::All, Specials::None).unwrap();
    assert_eq!(
        ids,
        reference("cl100k_base").encode_with_special_tokens(text)
    );
    let only = cl
        .encode(text, Specials::Only(&["<|endoftext|>"]), Specials::None)
        .unwrap();
    assert!(only.contains(&100257) && !only.contains(&100258));
    assert_eq!(
        cl.encode(text, Specials::None, Specials::None).unwrap(),
        cl.encode_ordinary(text).unwrap()
    );
    assert!(matches!(
        cl.encode("x", Specials::Only(&["<|nope|>"]), Specials::None),
        Err(Error::UnknownSpecial(s)) if s == "<|nope|>"
    ));
    assert_eq!(cl.decode(&ids).unwrap(), text);
    assert_eq!(cl.decode_bytes(&[100257]).unwrap(), b"<|endoftext|>");
    assert!(
        matches!(cl.decode(&[100261]), Err(Error::UnknownToken(100261))),
        "a rank with no token"
    );
    assert!(matches!(
        cl.decode(&[u32::MAX]),
        Err(Error::UnknownToken(u32::MAX))
    ));
}

#[test]
fn decode_is_lossy_like_tiktoken() {
    let cl = ours("cl100k_base");
    let ids = cl.encode_ordinary("👍").unwrap();
    assert_eq!(cl.decode(&ids[..1]).unwrap(), "\u{FFFD}");
    assert_eq!(cl.decode_bytes(&ids[..1]).unwrap(), [0xF0, 0x9F]);
}

#[test]
fn huge_single_pieces() {
    for name in ["cl100k_base", "o200k_base"] {
        let t = ours(name);
        for text in [
            "a".repeat(1_000_000),
            "_".repeat(1_000_000),
            " ".repeat(1_000_000),
        ] {
            let ids = t.encode_ordinary(&text).unwrap();
            assert_eq!(t.decode(&ids).unwrap(), text);
            assert_eq!(t.count(&text).unwrap(), ids.len());
        }
        // Compared with tiktoken-rs where it does not overflow its stack.
        let text = "a".repeat(20_000);
        assert_exact(name, &text);
        assert_exact(name, &" ".repeat(2_000));
    }
}

/// Text drawn from many scripts, and from the characters the patterns treat specially.
fn text() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        " ",
        "  ",
        "\n",
        "\r\n",
        "\t",
        "\u{A0}",
        "\u{3000}",
        "\u{85}",
        "'",
        "'s",
        "'S",
        "'ll",
        "'VE",
        "'re",
        "'m",
        "'d",
        "'t",
        "ſ",
        "’",
        "0",
        "12",
        "345",
        "٣",
        "½",
        "Ⅻ",
        "a",
        "Z",
        "hello",
        "World",
        "ÉCOLE",
        "naïve",
        "ǅ",
        "ß",
        "İ",
        "Ω",
        "中文",
        "日本語",
        "한국어",
        "العربية",
        "עברית",
        "हिन्दी",
        "ไทย",
        "👍",
        "🏳️‍🌈",
        "\u{0301}",
        "\u{200D}",
        "\u{FEFF}",
        "!",
        "?!",
        "...",
        "/",
        "//",
        "<|",
        "|>",
        "<|endoftext|>",
        "$",
        "\\",
        "e\u{0301}",
        "ＡＢＣ",
        "\u{1F600}",
        "\u{E000}",
        "ʰ",
        "ᵃ",
    ]);
    prop_oneof![
        prop::collection::vec(pieces, 0..40).prop_map(|v| v.concat()),
        "\\PC{0,60}",
        "[ \\t\\n\\r'a-zA-Z0-9.,!?]{0,80}",
        any::<String>(),
    ]
}

/// Random concatenations of vocabulary tokens (valid UTF-8 ones).
fn vocab_text(name: &'static str) -> impl Strategy<Value = String> {
    prop::collection::vec(0u32..100_000, 1..30).prop_map(move |ranks| {
        let t = ours(name);
        let bytes = t
            .decode_bytes(
                &ranks
                    .iter()
                    .copied()
                    .filter(|&r| t.decode_bytes(&[r]).is_ok())
                    .collect::<Vec<_>>(),
            )
            .unwrap();
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn random_text_matches_tiktoken(text in text()) {
        for name in ENCODINGS {
            assert_exact(name, &text);
        }
    }

    #[test]
    fn vocabulary_concatenations_match_cl100k(text in vocab_text("cl100k_base")) {
        assert_exact("cl100k_base", &text);
    }

    #[test]
    fn vocabulary_concatenations_match_o200k(text in vocab_text("o200k_base")) {
        assert_exact("o200k_base", &text);
    }

    #[test]
    fn decode_inverts_encode(text in text()) {
        for name in ["cl100k_base", "o200k_base"] {
            let t = ours(name);
            prop_assert_eq!(t.decode(&t.encode_ordinary(&text).unwrap()).unwrap(), text.clone());
        }
    }
}
