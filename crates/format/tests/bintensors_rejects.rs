//! One test per rejection rule of the BinTensors reader, on hand-built bytes.

mod common;

use common::WORKED_EXAMPLE;
use modelbin_format::Error;
use modelbin_format::bintensors::BinTensors;
use modelbin_format::{At, BintensorsError, LayoutError};

/// Varint as bincode `standard()` writes it.
fn varint(v: u64) -> Vec<u8> {
    match v {
        0..=250 => vec![v as u8],
        251..=0xFFFF => [vec![0xFB], (v as u16).to_le_bytes().to_vec()].concat(),
        0x1_0000..=0xFFFF_FFFF => [vec![0xFC], (v as u32).to_le_bytes().to_vec()].concat(),
        _ => [vec![0xFD], v.to_le_bytes().to_vec()].concat(),
    }
}

fn string(s: &[u8]) -> Vec<u8> {
    [varint(s.len() as u64), s.to_vec()].concat()
}

/// A tensor entry: name, dtype code, shape, offsets.
fn entry(name: &[u8], dtype: u64, shape: &[u64], start: u64, end: u64) -> Vec<u8> {
    let mut out = string(name);
    out.extend(varint(dtype));
    out.extend(varint(shape.len() as u64));
    shape.iter().for_each(|&d| out.extend(varint(d)));
    out.extend(varint(start));
    out.extend(varint(end));
    out
}

/// A whole file: prefix, payload (no metadata, the given entries), padding, data.
fn file(entries: &[Vec<u8>], data: &[u8]) -> Vec<u8> {
    let mut payload = vec![0];
    payload.extend(varint(entries.len() as u64));
    entries.iter().for_each(|e| payload.extend(e));
    with_payload(&payload, data)
}

fn with_payload(payload: &[u8], data: &[u8]) -> Vec<u8> {
    let mut header = payload.to_vec();
    header.resize(header.len().next_multiple_of(8), b' ');
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend(header);
    out.extend_from_slice(data);
    out
}

fn parse(bytes: &[u8]) -> Result<(), Error> {
    BinTensors::from_buffer(bytes).map(|_| ())
}

const F32: u64 = 11;
const U8: u64 = 1;

#[test]
fn the_builder_makes_valid_files() {
    parse(&file(
        &[entry(b"w", F32, &[2], 0, 8), entry(b"m", U8, &[3], 8, 11)],
        &[0; 11],
    ))
    .unwrap();
}

#[test]
fn truncated_files() {
    for len in 0..8 {
        assert!(matches!(
            parse(&WORKED_EXAMPLE[..len]),
            Err(Error::Layout(LayoutError::Truncated {
                what: "header size",
                ..
            }))
        ));
    }
    // Cut inside the header: the declared header runs past the end.
    assert!(matches!(
        parse(&WORKED_EXAMPLE[..20]),
        Err(Error::Layout(LayoutError::HeaderPastEnd {
            size: 40,
            file_len: 20
        }))
    ));
    // Cut inside the data.
    assert!(matches!(
        parse(&WORKED_EXAMPLE[..58]),
        Err(Error::Layout(LayoutError::DataTruncated {
            offset: 48,
            expected: 11,
            found: 10
        }))
    ));
    // A header that stops mid-entry (unpadded, so nothing follows the name).
    let mut bytes = 4u64.to_le_bytes().to_vec();
    bytes.extend([0, 1, 1, b'w']);
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::Truncated {
            what: "dtype",
            offset: 12,
            ..
        }))
    ));
}

#[test]
fn header_length_beyond_the_file() {
    let mut bytes = WORKED_EXAMPLE.to_vec();
    bytes[..8].copy_from_slice(&1000u64.to_le_bytes());
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::HeaderPastEnd {
            size: 1000,
            file_len: 59
        }))
    ));
    bytes[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::HeaderTooLarge { .. }))
    ));
}

#[test]
fn header_over_100_mb() {
    let mut bytes = 100_000_001u64.to_le_bytes().to_vec();
    bytes.extend([0u8; 16]);
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::HeaderTooLarge {
            size: 100_000_001,
            limit: 100_000_000
        }))
    ));
}

#[test]
fn overlapping_and_gapped_offsets() {
    let overlapping = file(
        &[entry(b"w", F32, &[2], 0, 8), entry(b"m", U8, &[3], 7, 10)],
        &[0; 10],
    );
    assert!(matches!(
        parse(&overlapping),
        Err(Error::Layout(LayoutError::NonContiguousData { ref name, start: 7, expected: 8, .. })) if name == "m"
    ));
    let gapped = file(
        &[entry(b"w", F32, &[2], 0, 8), entry(b"m", U8, &[3], 9, 12)],
        &[0; 12],
    );
    assert!(matches!(
        parse(&gapped),
        Err(Error::Layout(LayoutError::NonContiguousData {
            start: 9,
            expected: 8,
            ..
        }))
    ));
    let not_from_zero = file(&[entry(b"w", F32, &[2], 4, 12)], &[0; 12]);
    assert!(matches!(
        parse(&not_from_zero),
        Err(Error::Layout(LayoutError::NonContiguousData {
            expected: 0,
            ..
        }))
    ));
    let reversed = file(
        &[
            entry(b"w", F32, &[0], 0, 0),
            entry(b"m", U8, &[0], 0, u64::MAX),
        ],
        &[],
    );
    assert!(matches!(
        parse(&reversed),
        Err(Error::Layout(LayoutError::ByteCountMismatch { .. }))
    ));
    let backwards = file(
        &[entry(b"w", U8, &[2], 0, 2), entry(b"m", U8, &[0], 2, 1)],
        &[0; 2],
    );
    assert!(matches!(
        parse(&backwards),
        Err(Error::Layout(LayoutError::ReversedDataRange {
            start: 2,
            end: 1,
            ..
        }))
    ));
}

#[test]
fn byte_count_disagreeing_with_dtype_and_shape() {
    let bytes = file(&[entry(b"w", F32, &[3], 0, 8)], &[0; 8]);
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::ByteCountMismatch {
            expected: 12,
            found: 8,
            ..
        }))
    ));
}

#[test]
fn duplicate_tensor_names() {
    let bytes = file(
        &[entry(b"w", U8, &[1], 0, 1), entry(b"w", U8, &[1], 1, 2)],
        &[0; 2],
    );
    assert!(
        matches!(parse(&bytes), Err(Error::Layout(LayoutError::DuplicateTensorName { ref name, at: At(Some(_)) })) if name == "w")
    );
}

#[test]
fn duplicate_metadata_keys() {
    let mut payload = vec![1, 2];
    for _ in 0..2 {
        payload.extend(string(b"k"));
        payload.extend(string(b"v"));
    }
    payload.push(0);
    assert!(matches!(
        parse(&with_payload(&payload, &[])),
        Err(Error::Layout(LayoutError::DuplicateMetadataKey { ref key, .. })) if key == "k"
    ));
}

#[test]
fn unknown_dtype_byte() {
    let bytes = file(&[entry(b"w", 15, &[1], 0, 1)], &[0]);
    assert!(
        matches!(parse(&bytes), Err(Error::Layout(LayoutError::UnknownDtype { offset: 12, ref found })) if found == "15")
    );
}

#[test]
fn bad_utf8() {
    let name = file(&[entry(&[0xC3, 0x28], U8, &[1], 0, 1)], &[0]);
    assert!(matches!(
        parse(&name),
        Err(Error::Layout(LayoutError::InvalidUtf8 {
            what: "tensor name",
            offset: 11
        }))
    ));
    let mut payload = vec![1, 1];
    payload.extend(string(b"k"));
    payload.extend(string(&[0xFF]));
    payload.push(0);
    assert!(matches!(
        parse(&with_payload(&payload, &[])),
        Err(Error::Layout(LayoutError::InvalidUtf8 {
            what: "metadata value",
            ..
        }))
    ));
}

#[test]
fn non_canonical_varints() {
    // Shape dimension 2 written as 0xFB 02 00.
    let mut e = string(b"w");
    e.extend([U8 as u8, 1, 0xFB, 2, 0, 0, 2]);
    assert!(matches!(
        parse(&file(&[e], &[0; 2])),
        Err(Error::Bintensors(BintensorsError::NonCanonicalVarint {
            value: 2,
            offset: 14
        }))
    ));
    // A tag no varint uses.
    let mut e = string(b"w");
    e.extend([U8 as u8, 1, 0xFE, 2, 0]);
    assert!(matches!(
        parse(&file(&[e], &[])),
        Err(Error::Bintensors(BintensorsError::InvalidVarintTag {
            tag: 0xFE,
            ..
        }))
    ));
}

#[test]
fn invalid_option_tag() {
    let mut bytes = WORKED_EXAMPLE.to_vec();
    bytes[8] = 2;
    assert!(matches!(
        parse(&bytes),
        Err(Error::Bintensors(BintensorsError::InvalidOptionTag {
            tag: 2,
            offset: 8
        }))
    ));
}

#[test]
fn junk_in_the_padding() {
    let mut bytes = WORKED_EXAMPLE.to_vec();
    bytes[45] = 0;
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::BadPadding {
            offset: 45,
            byte: 0,
            ..
        }))
    ));

    // Bytes between the payload and the padding: 8 extra spaces.
    let mut payload = vec![0, 0];
    payload.resize(8, b' ');
    payload.extend([b' '; 8]);
    let mut bytes = 16u64.to_le_bytes().to_vec();
    bytes.extend(payload);
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::JunkAfterHeader {
            offset: 10,
            count: 8
        }))
    ));

    // Padding shorter than alignment needs.
    let mut bytes = 3u64.to_le_bytes().to_vec();
    bytes.extend([0, 0, b' ']);
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::ShortPadding {
            expected: 6,
            found: 1,
            ..
        }))
    ));
}

#[test]
fn trailing_bytes() {
    let mut bytes = WORKED_EXAMPLE.to_vec();
    bytes.push(0);
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::TrailingBytes {
            offset: 59,
            count: 1
        }))
    ));
}

#[test]
fn offsets_near_2_pow_64() {
    // A shape whose byte size overflows 64 bits.
    let bytes = file(&[entry(b"w", F32, &[1 << 62, 8], 0, u64::MAX)], &[]);
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::Overflow { .. }))
    ));
    // A consistent but absurd tensor: the data section cannot hold it.
    let bytes = file(&[entry(b"w", U8, &[u64::MAX], 0, u64::MAX)], &[0; 4]);
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::DataTruncated {
            expected: u64::MAX,
            found: 4,
            ..
        }))
    ));
    // An end near 2^64 followed by another tensor.
    let bytes = file(
        &[
            entry(b"a", U8, &[u64::MAX - 1], 0, u64::MAX - 1),
            entry(b"b", U8, &[1], u64::MAX - 1, u64::MAX),
        ],
        &[],
    );
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::DataTruncated {
            expected: u64::MAX,
            found: 0,
            ..
        }))
    ));
    // A count of tensors near 2^64 allocates nothing up front.
    let mut payload = vec![0];
    payload.extend(varint(u64::MAX));
    assert!(matches!(
        parse(&with_payload(&payload, &[])),
        Err(Error::Layout(LayoutError::Truncated { .. }))
    ));
}
