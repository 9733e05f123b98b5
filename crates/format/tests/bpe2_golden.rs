//! BPE2 built from the real tiktoken vocabularies (shipped in the crates.io
//! package tiktoken-rs; copied to target/test-data/tiktoken/ by
//! scripts/fetch-test-data.sh): byte-identical to llm-cost's files, and back
//! to the official `.tiktoken` files byte for byte.

use std::path::PathBuf;

use modelbin_format::bpe2::{self, Bpe2, KNOWN_ENCODINGS, KnownEncoding};
use modelbin_format::io::checksum::{hex, sha256};

fn tiktoken(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-data/tiktoken")
        .join(format!("{name}.tiktoken"));
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run scripts/fetch-test-data.sh (scripts/test.sh does)",
            path.display()
        )
    })
}

#[test]
fn sources_are_the_official_files() {
    for encoding in KNOWN_ENCODINGS {
        assert_eq!(
            hex(&sha256(&tiktoken(encoding.name))),
            encoding.source_sha256,
            "{}",
            encoding.name
        );
    }
}

#[test]
fn without_special_tokens_the_files_equal_llm_costs() {
    for (name, expected) in [
        (
            "cl100k_base",
            "96b3d363ac49c6db661fe4e3a3ef253ca7caf605b27ca5e2740c5f1ed4de1317",
        ),
        (
            "o200k_base",
            "620d3af6e21bca7984f6621e767ed29d383f4f82546f822131e349950412945d",
        ),
    ] {
        let built = bpe2::build_from_tiktoken(&tiktoken(name), false).unwrap();
        assert_eq!(hex(&sha256(&built)), expected, "{name}");
    }
}

#[test]
fn every_encoding_round_trips_to_its_tiktoken_file() {
    for encoding in KNOWN_ENCODINGS {
        let source = tiktoken(encoding.name);
        for include_special_tokens in [false, true] {
            let built = bpe2::build_from_tiktoken(&source, include_special_tokens).unwrap();
            let file = Bpe2::from_buffer(built.as_slice()).unwrap();
            assert_eq!(file.encoding(), Some(&encoding));
            assert_eq!(file.header().source_hash, sha256(&source));
            let mut back = Vec::new();
            file.write_tiktoken(&mut back).unwrap();
            assert!(
                back == source,
                "{} (specials: {include_special_tokens}) does not round-trip",
                encoding.name
            );
        }
    }
}

#[test]
fn special_tokens_sit_at_their_ranks() {
    let built = bpe2::build_from_tiktoken(&tiktoken("cl100k_base"), true).unwrap();
    let file = Bpe2::from_buffer(built.as_slice()).unwrap();
    assert_eq!(file.token_count(), 100_277);
    assert_eq!(file.token(100_257), Some(&b"<|endoftext|>"[..]));
    assert_eq!(file.token(100_276), Some(&b"<|endofprompt|>"[..]));
    assert_eq!(
        file.token(100_261),
        None,
        "ranks 100261..100275 have no token"
    );
    assert_eq!(file.token(100_277), None);
    assert_eq!(file.token(0), Some(&b"!"[..]));

    let plain = bpe2::build_from_tiktoken(&tiktoken("cl100k_base"), false).unwrap();
    let plain = Bpe2::from_buffer(plain.as_slice()).unwrap();
    assert_eq!(plain.token_count(), 100_256);
    let o200k = KnownEncoding::by_name("o200k_base").unwrap();
    assert!(o200k.is_special(199_999));
}
