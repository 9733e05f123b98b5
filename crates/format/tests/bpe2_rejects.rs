//! One test per rejection rule of the BPE2 reader.

use modelbin_format::Error;
use modelbin_format::bpe2::{self, Bpe2};
use modelbin_format::{Bpe2Error, LayoutError};

/// A small valid vocabulary: ranks 0..=3 with rank 2 absent.
fn small() -> Vec<u8> {
    let tokens = [(b"a".to_vec(), 0), (b"b".to_vec(), 1), (b"ab".to_vec(), 3)];
    bpe2::build(&tokens, [7; 32]).unwrap()
}

fn parse(bytes: &[u8]) -> Result<(), Error> {
    Bpe2::from_buffer(bytes).map(|_| ())
}

fn set_u32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// Offset of rank `r`'s table entry.
fn entry(r: usize) -> usize {
    64 + 8 * r
}

#[test]
fn the_small_vocabulary_is_valid() {
    let bytes = small();
    assert_eq!(bytes.len(), 64 + 4 * 8 + 4);
    let file = Bpe2::from_buffer(bytes.as_slice()).unwrap();
    assert_eq!(file.token(3), Some(&b"ab"[..]));
    assert_eq!(file.token(2), None);
    assert_eq!(file.header().max_token_len, 2);
    assert_eq!(file.encoding(), None);
}

#[test]
fn truncated() {
    let bytes = small();
    for len in [0, 3, 10, 63] {
        assert!(
            matches!(
                parse(&bytes[..len]),
                Err(Error::Layout(LayoutError::Truncated { .. }))
                    | Err(Error::Layout(LayoutError::BadMagic { .. }))
            ),
            "{len}"
        );
    }
    for len in [64, 80, bytes.len() - 1] {
        assert!(
            matches!(
                parse(&bytes[..len]),
                Err(Error::Layout(LayoutError::FileSizeMismatch { .. }))
            ),
            "{len}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(
        parse(&longer),
        Err(Error::Layout(LayoutError::FileSizeMismatch {
            expected: 100,
            found: 101
        }))
    ));
}

#[test]
fn wrong_magic_and_version() {
    let mut bytes = small();
    bytes[..4].copy_from_slice(b"BPZ2");
    assert!(
        matches!(parse(&bytes), Err(Error::Layout(LayoutError::BadMagic { ref found, .. })) if found == "\"BPZ2\"")
    );
    let mut bytes = small();
    set_u32(&mut bytes, 4, 1);
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::UnsupportedVersion {
            found: 1,
            expected: 2,
            ..
        }))
    ));
}

#[test]
fn zero_token_count() {
    let mut bytes = small()[..64].to_vec();
    set_u32(&mut bytes, 8, 0);
    set_u32(&mut bytes, 12, 0);
    set_u32(&mut bytes, 16, 0);
    assert!(matches!(
        parse(&bytes),
        Err(Error::Bpe2(Bpe2Error::EmptyVocabulary { offset: 8 }))
    ));
}

#[test]
fn token_counts_above_the_cap_are_refused_before_the_size() {
    for count in [bpe2::MAX_TOKEN_COUNT + 1, u32::MAX] {
        let mut bytes = small();
        set_u32(&mut bytes, 8, count);
        assert!(matches!(
            parse(&bytes),
            Err(Error::Layout(LayoutError::CountTooLarge {
                what: "token_count",
                offset: 8,
                limit: 16_777_216,
                ..
            }))
        ));
    }
}

#[test]
fn overflowing_counts_are_size_mismatches() {
    let mut bytes = small();
    set_u32(&mut bytes, 8, bpe2::MAX_TOKEN_COUNT);
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::FileSizeMismatch { .. }))
    ));
    let mut bytes = small();
    set_u32(&mut bytes, 16, u32::MAX);
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::FileSizeMismatch { .. }))
    ));
}

#[test]
fn offsets_past_the_blob() {
    let mut bytes = small();
    set_u32(&mut bytes, entry(3), 3); // "ab" at 3..5 in a 4-byte blob
    assert!(matches!(
        parse(&bytes),
        Err(Error::Bpe2(Bpe2Error::TokenOutsideBlob {
            rank: 3,
            start: 3,
            end: 5,
            blob_size: 4,
            ..
        }))
    ));
    let mut bytes = small();
    set_u32(&mut bytes, entry(0), u32::MAX);
    assert!(matches!(
        parse(&bytes),
        Err(Error::Bpe2(Bpe2Error::TokenOutsideBlob { rank: 0, .. }))
    ));
}

#[test]
fn tokens_longer_than_max_token_len() {
    let mut bytes = small();
    set_u32(&mut bytes, 12, 1);
    assert!(matches!(
        parse(&bytes),
        Err(Error::Bpe2(Bpe2Error::TokenTooLong {
            rank: 3,
            len: 2,
            max: 1,
            ..
        }))
    ));
    let mut bytes = small();
    set_u32(&mut bytes, 12, 9);
    assert!(matches!(
        parse(&bytes),
        Err(Error::Bpe2(Bpe2Error::MaxTokenLenMismatch {
            declared: 9,
            actual: 2
        }))
    ));
}

#[test]
fn duplicate_token_bytes() {
    let mut bytes = small();
    let blob = bytes.len() - 4;
    bytes[blob + 1] = b'a'; // blob "abab" -> "aaab": rank 1 is "a" too
    assert!(matches!(
        parse(&bytes),
        Err(Error::Bpe2(Bpe2Error::DuplicateToken {
            rank: 1,
            earlier: 0,
            ..
        }))
    ));
    let dup = [(b"a".to_vec(), 0), (b"a".to_vec(), 1)];
    let built = bpe2::build(&dup, [0; 32]);
    assert!(
        matches!(
            built,
            Err(Error::Bpe2(Bpe2Error::DuplicateToken {
                rank: 1,
                earlier: 0,
                ..
            }))
        ),
        "{built:?}"
    );
}

#[test]
fn aliased_or_overlapping_token_bytes() {
    let mut bytes = small();
    set_u32(&mut bytes, entry(1), 0); // rank 1 points at rank 0's byte
    assert!(matches!(
        parse(&bytes),
        Err(Error::Bpe2(Bpe2Error::OverlappingToken {
            rank: 1,
            start: 0,
            previous_end: 1,
            ..
        }))
    ));
    let mut bytes = small();
    set_u32(&mut bytes, entry(3), 1); // "ab" at 1..3 overlaps "b" at 1..2
    assert!(matches!(
        parse(&bytes),
        Err(Error::Bpe2(Bpe2Error::OverlappingToken {
            rank: 3,
            start: 1,
            previous_end: 2,
            ..
        }))
    ));
}

#[test]
fn stray_offset_on_an_absent_rank() {
    let mut bytes = small();
    set_u32(&mut bytes, entry(2), 1);
    assert!(matches!(
        parse(&bytes),
        Err(Error::Bpe2(Bpe2Error::NonCanonicalEmptyToken {
            rank: 2,
            start: 1,
            ..
        }))
    ));
}

#[test]
fn reserved_bytes_must_be_zero() {
    let mut bytes = small();
    bytes[60] = 1;
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::NonZeroReserved {
            offset: 60,
            byte: 1
        }))
    ));
}

#[test]
fn malformed_tiktoken_lines() {
    for (source, line) in [
        (&b"YQ== 0\nYg==\n"[..], 2),
        (b"YQ== 0\n!!!! 1\n", 2),
        (b"YQ== x\n", 1),
        (b"YQ== -1\n", 1),
        (b"YQ== 99999999999\n", 1),
        (b" 0\n", 1),
    ] {
        match bpe2::parse_tiktoken(source) {
            Err(Error::Bpe2(Bpe2Error::InvalidTiktokenLine { line: l, .. })) => assert_eq!(l, line),
            other => panic!("{source:?}: {other:?}"),
        }
    }
    let sparse = bpe2::parse_tiktoken(b"YQ== 4000000000\n").unwrap();
    assert!(
        matches!(
            bpe2::build(&sparse, [0; 32]),
            Err(Error::Bpe2(Bpe2Error::InvalidVocabulary(_)))
        ),
        "no 32 GB table for one token"
    );
    assert_eq!(
        bpe2::parse_tiktoken(b"YQ== 0\nYg== 1\n").unwrap(),
        [(b"a".to_vec(), 0), (b"b".to_vec(), 1)]
    );
}
