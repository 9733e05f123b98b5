//! EMBD: layout, round trips, the real all-MiniLM-L6-v2, every rejection
//! rule, single-bit corruption, truncation at every section boundary, and
//! mutated files (never a panic).

mod common;

use std::collections::BTreeMap;

use modelbin_format::convert::{HfOptions, from_hf_dir};
use modelbin_format::embd::{self, Embd, SpecialTokens, Vocabulary, WriteOptions};
use modelbin_format::io::checksum::{crc32, fnv1a32};
use modelbin_format::model::BertConfig;
use modelbin_format::{DType, Error, TensorStore, TensorView};
use modelbin_format::{EmbdError, LayoutError, ModelError, TllmError};
use proptest::prelude::*;

use common::OwnedTensor;

const TOKENS: [&str; 8] = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "##lo", "wörld",
];
const SPECIALS: SpecialTokens = SpecialTokens {
    pad: 0,
    unk: 1,
    cls: 2,
    sep: 3,
    mask: 4,
};

/// Metadata of a tiny BERT: hidden 4, 2 heads, 1 layer, FFN 8, 8 positions.
fn tiny_metadata() -> BTreeMap<String, String> {
    [
        ("model_name", "tiny"),
        ("model_version", "1.0.0"),
        ("embedding_dim", "4"),
        ("vocab_size", "8"),
        ("num_layers", "1"),
        ("num_attention_heads", "2"),
        ("hidden_size", "4"),
        ("intermediate_size", "8"),
        ("max_position_emb", "8"),
        ("created_at", "2025-01-16T12:00:00Z"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// Every tensor of the tiny BERT, F32, with distinct values.
fn tiny_tensors() -> Vec<OwnedTensor> {
    let config = BertConfig::from_metadata(&tiny_metadata(), 2).unwrap();
    config
        .tensors()
        .enumerate()
        .map(|(i, (name, shape))| {
            let n: usize = shape.iter().product();
            let data = (0..n)
                .flat_map(|j| ((i * 100 + j) as f32 * 0.01).to_le_bytes())
                .collect();
            OwnedTensor {
                name,
                dtype: DType::F32,
                shape,
                data,
            }
        })
        .collect()
}

fn write(
    metadata: &BTreeMap<String, String>,
    vocab: Option<&Vocabulary<'_>>,
    tensors: &[OwnedTensor],
    options: WriteOptions,
) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.embd");
    let views: Vec<TensorView<'_>> = tensors.iter().map(OwnedTensor::view).collect();
    let size = embd::write_file(&path, &views, metadata, vocab, &options, &mut |_, _| {}).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len() as u64, size);
    bytes
}

fn tiny_file() -> Vec<u8> {
    let vocab = Vocabulary {
        tokens: &TOKENS,
        specials: SPECIALS,
    };
    write(
        &tiny_metadata(),
        Some(&vocab),
        &tiny_tensors(),
        WriteOptions::default(),
    )
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn fix_header_crc(b: &mut [u8]) {
    let crc = crc32(&b[..56]);
    put_u32(b, 56, crc);
}

fn open(bytes: &[u8]) -> Result<Embd<&[u8]>, Error> {
    Embd::from_buffer(bytes)
}

fn open_err(bytes: &[u8]) -> Error {
    match open(bytes) {
        Ok(_) => panic!("the file must be rejected"),
        Err(e) => e,
    }
}

#[test]
fn layout_follows_the_decisions() {
    let b = tiny_file();
    assert_eq!(&b[..4], b"EMBD");
    assert_eq!(u16::from_le_bytes([b[4], b[5]]), 1);
    assert_eq!(
        u32_at(&b, 8),
        0b111,
        "VOCAB_EMBEDDED | TENSORS_ALIGNED | CHECKSUM_ENABLED"
    );
    assert_eq!(u32_at(&b, 12), 64, "metadata right after the header");
    let metadata_size = u32_at(&b, 16);
    assert_eq!(
        u32_at(&b, 64 + 4) + 8,
        metadata_size,
        "metadata_size = 8 + total_size"
    );
    let vocab_offset = u32_at(&b, 20) as usize;
    assert_eq!(vocab_offset, 64 + metadata_size as usize);
    let total_size = u32_at(&b, vocab_offset + 4);
    assert_eq!(
        u32_at(&b, vocab_offset + 8),
        12 + total_size,
        "special block after the entries"
    );
    let special = vocab_offset + 12 + total_size as usize;
    let ids: Vec<u32> = (0..5).map(|i| u32_at(&b, special + 4 * i)).collect();
    assert_eq!(ids, [0, 1, 2, 3, 4]);
    let index = u32_at(&b, 28) as usize;
    assert_eq!(index, special + 20);
    let count = u32_at(&b, 32) as usize;
    assert_eq!(count, tiny_tensors().len());
    let data_offset = u32_at(&b, 36) as usize;
    assert_eq!(data_offset % 64, 0);
    let data_size = u64_at(&b, 40) as usize;
    assert_eq!(u64_at(&b, 48) as usize, data_offset + data_size + 16);
    assert_eq!(u64_at(&b, 48) as usize, b.len());
    assert_eq!(u32_at(&b, 56), crc32(&b[..56]));
    let footer = b.len() - 16;
    assert_eq!(u32_at(&b, footer), crc32(&b[data_offset..footer]));
    assert_eq!(u32_at(&b, footer + 4), crc32(&b[..footer]));
    assert_eq!(&b[footer + 8..footer + 12], b"DBME");
    // Descriptors: FNV-1a of the name, data offsets multiples of 64.
    let names_start = index + 32 * count;
    let mut name_at = names_start;
    for i in 0..count {
        let d = index + 32 * i;
        let len = u16::from_le_bytes([b[d + 6], b[d + 7]]) as usize;
        assert_eq!(u32_at(&b, d), fnv1a32(&b[name_at..name_at + len]));
        assert_eq!(u64_at(&b, d + 24) % 64, 0);
        name_at += len;
    }
    assert!(b[name_at..data_offset].iter().all(|&x| x == 0));
}

#[test]
fn round_trips_tensors_metadata_and_vocabulary() {
    let b = tiny_file();
    let file = open(&b).unwrap();
    file.verify().unwrap();
    assert_eq!(file.metadata(), Some(&tiny_metadata()));
    assert_eq!(file.tokens().collect::<Vec<_>>(), TOKENS);
    assert_eq!(file.special_tokens(), Some(SPECIALS));
    let tensors = tiny_tensors();
    assert_eq!(file.len(), tensors.len());
    for (ours, want) in file.tensors().zip(&tensors) {
        assert_eq!(ours, want.view());
    }
    let config = BertConfig::validate(&file).unwrap();
    assert_eq!(
        (config.hidden_size, config.num_heads, config.type_vocab_size),
        (4, 2, 2)
    );
}

#[test]
fn all_nine_dtypes_and_every_layout_option_round_trip() {
    // Every EMBD dtype code (the code table itself is pinned in dtype.rs).
    let dtypes: Vec<DType> = (0..9).map(|c| DType::from_embd_code(c).unwrap()).collect();
    let tensors: Vec<OwnedTensor> = dtypes
        .iter()
        .enumerate()
        .map(|(i, &dtype)| {
            let shape = [vec![3], vec![2, 5], vec![1, 2, 3], vec![2, 1, 1, 3]][i % 4].clone();
            let n: usize = shape.iter().product::<usize>() * dtype.size();
            OwnedTensor {
                name: format!("t{i}.{dtype}"),
                dtype,
                shape,
                data: (0..n).map(|j| (j * 7 + i) as u8).collect(),
            }
        })
        .collect();
    let vocab = Vocabulary {
        tokens: &TOKENS,
        specials: SPECIALS,
    };
    for (checksums, aligned, with_vocab) in [
        (true, true, true),
        (false, true, true),
        (true, false, true),
        (false, false, false),
    ] {
        let options = WriteOptions { checksums, aligned };
        let mut metadata = tiny_metadata();
        metadata.insert("extra key".into(), "ünïcode value".into());
        let b = write(&metadata, with_vocab.then_some(&vocab), &tensors, options);
        let file = open(&b).unwrap();
        file.verify().unwrap();
        assert_eq!(file.header().has(embd::flags::CHECKSUM_ENABLED), checksums);
        assert_eq!(file.token_count(), if with_vocab { 8 } else { 0 });
        assert_eq!(file.metadata(), Some(&metadata));
        for (ours, want) in file.tensors().zip(&tensors) {
            assert_eq!(ours, want.view());
        }
    }
}

#[test]
fn the_real_minilm_converts_losslessly_and_opens_cheaply() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("minilm.embd");
    let model_dir = common::minilm_safetensors().parent().unwrap().to_owned();
    let (count, size) =
        from_hf_dir(&model_dir, &out, HfOptions::default(), &mut |_, _| {}).unwrap();
    assert_eq!(count, 103, "104 tensors minus embeddings.position_ids");
    let start = std::time::Instant::now();
    let file = embd::open(&out).unwrap();
    let opened = start.elapsed();
    println!("open + validate of a {size}-byte file: {opened:?}");
    file.verify().unwrap();
    let config = BertConfig::validate(&file).unwrap();
    assert_eq!(
        (config.num_layers, config.hidden_size, config.max_seq_length),
        (6, 384, 256)
    );
    assert_eq!(file.token_count(), 30522);
    assert_eq!(file.token(101), Some("[CLS]"));
    assert_eq!(file.metadata_value("pooling"), Some("mean"));
    assert_eq!(file.metadata_value("normalize"), Some("true"));
    let source = modelbin_format::safetensors::open(common::minilm_safetensors()).unwrap();
    for tensor in source
        .tensors()
        .filter(|t| t.name() != "embeddings.position_ids")
    {
        assert_eq!(file.tensor(tensor.name()).unwrap(), tensor);
    }
    let vocab = std::fs::read_to_string(model_dir.join("vocab.txt")).unwrap();
    assert!(vocab.lines().eq(file.tokens()));
}

#[test]
fn every_single_bit_flip_is_detected_and_located() {
    let good = tiny_file();
    let data_offset = u32_at(&good, 36) as usize;
    let footer = good.len() - 16;
    for byte in 0..good.len() {
        for bit in 0..8 {
            let mut b = good.clone();
            b[byte] ^= 1 << bit;
            let message = match open(&b) {
                Err(e) => e.to_string(),
                Ok(file) => match file.verify() {
                    Err(e) => e.to_string(),
                    Ok(()) => panic!("flip of bit {bit} of byte {byte} went unnoticed"),
                },
            };
            if (data_offset..footer).contains(&byte) {
                assert!(
                    message.contains("tensor data") || message.contains("padding"),
                    "byte {byte}: {message}"
                );
            }
            if (64..data_offset).contains(&byte) && open(&b).is_ok() {
                assert!(
                    message.contains("metadata, vocabulary or tensor index"),
                    "byte {byte}: {message}"
                );
            }
        }
    }
}

#[test]
fn truncation_at_every_section_boundary_names_the_section() {
    let b = tiny_file();
    let boundaries = [
        (0, "EMBD magic"),
        (10, "flags"),
        (63, "reserved"),
        (64, "metadata section"),
        (u32_at(&b, 20) as usize, "vocabulary section"),
        (u32_at(&b, 28) as usize, "tensor index"),
        (u32_at(&b, 36) as usize, "tensor data"),
        (b.len() - 16, "footer"),
        (b.len() - 1, "footer"),
    ];
    for (cut, section) in boundaries {
        for at in [cut.saturating_sub(1), cut, cut + 1]
            .into_iter()
            .filter(|&at| at < b.len())
        {
            let message = open_err(&b[..at]).to_string();
            assert!(message.contains("truncated"), "cut at {at}: {message}");
            let expected_here = if at == cut { section } else { "" };
            assert!(message.contains(expected_here), "cut at {at}: {message}");
        }
    }
    let mut long = b.clone();
    long.push(0);
    assert!(matches!(
        open_err(&long),
        Error::Layout(LayoutError::TrailingBytes { count: 1, .. })
    ));
}

/// A copy of the tiny file with `edit` applied and the header CRC redone.
fn edited(edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut b = tiny_file();
    edit(&mut b);
    fix_header_crc(&mut b);
    b
}

#[test]
fn header_rules() {
    let mut b = tiny_file();
    b[0] = b'X';
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::BadMagic { .. })
    ));
    // Bytes that are not printable ASCII are escaped, never printed raw.
    b[..4].copy_from_slice(&[0xEF, b',', 0, 0]);
    assert_eq!(
        open_err(&b).to_string(),
        r#"bad magic at byte 0: expected "EMBD", found "\xef,\x00\x00""#
    );
    let b = edited(|b| b[4] = 2);
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::UnsupportedVersion { found: 2, .. })
    ));
    let b = edited(|b| b[6] = 7);
    open(&b).expect("a higher minor version is read");
    let mut b = tiny_file();
    b[20] ^= 1;
    assert!(matches!(
        open_err(&b),
        Error::Embd(EmbdError::ChecksumMismatch {
            section: "header",
            ..
        })
    ));
    let b = edited(|b| b[61] = 1);
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::NonZeroReserved { offset: 61, .. })
    ));
    let b = edited(|b| b[8] |= 0x10);
    assert!(matches!(
        open_err(&b),
        Error::Embd(EmbdError::UnsupportedFlags { .. })
    ));
    let b = edited(|b| b[8] |= 0x08);
    assert!(open_err(&b).to_string().contains("COMPRESSED"));
    let b = edited(|b| put_u32(b, 12, 65));
    assert!(matches!(
        open_err(&b),
        Error::Embd(EmbdError::SectionMisplaced {
            section: "metadata section",
            ..
        })
    ));
    let b = edited(|b| {
        let v = u32_at(b, 20);
        put_u32(b, 20, v + 1)
    });
    assert!(matches!(
        open_err(&b),
        Error::Embd(EmbdError::SectionMisplaced {
            section: "vocabulary section",
            ..
        })
    ));
    let b = edited(|b| {
        let v = u32_at(b, 28);
        put_u32(b, 28, v - 1)
    });
    assert!(matches!(
        open_err(&b),
        Error::Embd(EmbdError::SectionMisplaced {
            section: "tensor index",
            ..
        })
    ));
    let b = edited(|b| {
        let v = u32_at(b, 36);
        put_u32(b, 36, v + 64)
    });
    let err = open_err(&b);
    assert!(
        matches!(
            err,
            Error::Layout(LayoutError::InvalidHeader { offset: 48, .. })
        ),
        "{err:?}"
    );
    let b = edited(|b| {
        let v = u64_at(b, 48);
        b[48..56].copy_from_slice(&(v + 1).to_le_bytes())
    });
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::InvalidHeader { offset: 48, .. })
    ));
    let b = edited(|b| b[40..48].copy_from_slice(&u64::MAX.to_le_bytes()));
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::Overflow { .. })
    ));
    // Found by fuzzing: data offset + size fits, adding the footer does not.
    let b = edited(|b| {
        let size = u64::MAX - u64::from(u32_at(b, 36)) - 3;
        b[40..48].copy_from_slice(&size.to_le_bytes())
    });
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::Overflow { .. })
    ));
    let b = edited(|b| put_u32(b, 32, u32::MAX));
    assert!(matches!(
        open_err(&b),
        Error::Embd(EmbdError::SectionMisplaced {
            section: "tensor data",
            ..
        })
    ));
    let b = edited(|b| {
        b[8] &= !1;
    });
    assert!(open_err(&b).to_string().contains("VOCAB_EMBEDDED is clear"));
}

#[test]
fn metadata_rules() {
    let vocab = Vocabulary {
        tokens: &TOKENS,
        specials: SPECIALS,
    };
    let tensors = tiny_tensors();
    let mut missing = tiny_metadata();
    missing.remove("created_at");
    let b = write(&missing, Some(&vocab), &tensors, WriteOptions::default());
    assert!(matches!(
        open_err(&b),
        Error::Model(ModelError::MissingMetadata { key: "created_at" })
    ));
    for (key, value) in [
        ("hidden_size", "four"),
        ("num_layers", "0"),
        ("vocab_size", "9"),
    ] {
        let mut bad = tiny_metadata();
        bad.insert(key.into(), value.into());
        let b = write(&bad, Some(&vocab), &tensors, WriteOptions::default());
        assert!(
            matches!(
                open_err(&b),
                Error::Model(ModelError::InvalidMetadata { .. })
            ),
            "{key}={value}"
        );
    }
    // Duplicate key: rename the second key to the first (same length).
    let mut two = tiny_metadata();
    two.insert("aa".into(), "1".into());
    two.insert("ab".into(), "2".into());
    let mut b = write(&two, Some(&vocab), &tensors, WriteOptions::default());
    let at = b.windows(2).position(|w| w == b"ab").unwrap();
    b[at + 1] = b'a';
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::DuplicateMetadataKey { .. })
    ));
    // Invalid UTF-8 in a key.
    let mut b = tiny_file();
    let at = b.windows(10).position(|w| w == b"model_name").unwrap();
    b[at] = 0xFF;
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::InvalidUtf8 { .. })
    ));
    // total_size disagreeing with metadata_size.
    let mut b = tiny_file();
    let v = u32_at(&b, 68);
    put_u32(&mut b, 68, v - 1);
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::InvalidHeader { offset: 68, .. })
    ));
    // An entry count larger than the entries (no huge allocation).
    let mut b = tiny_file();
    put_u32(&mut b, 64, u32::MAX);
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::Truncated { .. })
    ));
}

#[test]
fn vocabulary_rules() {
    let vocab_offset = u32_at(&tiny_file(), 20) as usize;
    let mut b = tiny_file();
    let total = u32_at(&b, vocab_offset + 4) as usize;
    put_u32(&mut b, vocab_offset + 12 + total + 8, 8);
    assert!(
        open_err(&b)
            .to_string()
            .contains("cls_id 8 is outside the 8-token vocabulary")
    );
    let mut b = tiny_file();
    put_u32(&mut b, vocab_offset + 8, 0);
    assert!(matches!(
        open_err(&b),
        Error::Embd(EmbdError::SectionMisplaced {
            section: "special token ids",
            ..
        })
    ));
    let mut b = tiny_file();
    let at = b.windows(2).position(|w| w == "ö".as_bytes()).unwrap();
    b[at + 1] = 0x20;
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::InvalidUtf8 { what: "token", .. })
    ));
    let mut b = tiny_file();
    put_u32(&mut b, vocab_offset, u32::MAX);
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::Truncated { .. })
    ));
    let mut b = tiny_file();
    put_u32(&mut b, vocab_offset, 7);
    let err = open_err(&b);
    assert!(
        matches!(err, Error::Layout(LayoutError::InvalidHeader { .. })),
        "7 tokens leave bytes before the special ids: {err:?}"
    );
    // Writing refuses special ids outside the vocabulary.
    let bad = Vocabulary {
        tokens: &TOKENS[..3],
        specials: SPECIALS,
    };
    let dir = tempfile::tempdir().unwrap();
    let err = embd::write_file(
        dir.path().join("x"),
        &[],
        &tiny_metadata(),
        Some(&bad),
        &WriteOptions::default(),
        &mut |_, _| {},
    );
    assert!(matches!(err, Err(Error::Unrepresentable { .. })));
}

/// Offset of descriptor `i` in the tiny file.
fn descriptor(b: &[u8], i: usize) -> usize {
    u32_at(b, 28) as usize + 32 * i
}

#[test]
fn tensor_index_rules() {
    let b0 = tiny_file();
    let d1 = descriptor(&b0, 1);
    let mut b = b0.clone();
    b[d1 + 4] = 9;
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::UnknownDtype { .. })
    ));
    let mut b = b0.clone();
    b[d1 + 5] = 0;
    assert!(open_err(&b).to_string().contains("ndim 0"));
    let mut b = b0.clone();
    b[d1 + 5] = 5;
    assert!(open_err(&b).to_string().contains("ndim 5"));
    let mut b = b0.clone();
    put_u32(&mut b, d1 + 16, 3);
    assert!(open_err(&b).to_string().contains("non-zero shape[2]"));
    let mut b = b0.clone();
    b[d1] ^= 1;
    assert!(matches!(
        open_err(&b),
        Error::Embd(EmbdError::NameHashMismatch { .. })
    ));
    let mut b = b0.clone();
    let offset = u64_at(&b, d1 + 24);
    b[d1 + 24..d1 + 32].copy_from_slice(&(offset + 4).to_le_bytes());
    assert!(matches!(
        open_err(&b),
        Error::Embd(EmbdError::MisalignedTensor { .. })
    ));
    let mut b = b0.clone();
    let first = u64_at(&b, descriptor(&b, 0) + 24);
    b[d1 + 24..d1 + 32].copy_from_slice(&first.to_le_bytes());
    assert!(matches!(
        open_err(&b),
        Error::Embd(EmbdError::OverlappingTensors { .. })
    ));
    let mut b = b0.clone();
    let last = descriptor(&b, u32_at(&b, 32) as usize - 1);
    b[last + 24..last + 32].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::DataTruncated { .. })
    ));
    let mut b = b0.clone();
    put_u32(&mut b, d1 + 8, u32::MAX);
    let err = open_err(&b);
    assert!(
        matches!(
            err,
            Error::Layout(LayoutError::DataTruncated { offset: 1856, .. })
        ),
        "{err:?}"
    );
    // A non-zero padding byte between two tensors, and before the data.
    let mut b = b0.clone();
    let data = u32_at(&b, 36) as usize;
    // Token-type embeddings ([2, 4] f32) end at 288; the next tensor starts at 320.
    b[data + 300] = 1;
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::BadPadding { .. })
    ));
    let mut b = b0.clone();
    b[data - 1] = 1;
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::BadPadding { .. })
    ));
}

#[test]
fn footer_and_checksum_rules() {
    let footer = tiny_file().len() - 16;
    let mut b = tiny_file();
    b[footer + 8] = b'X';
    assert!(open_err(&b).to_string().contains("end magic"));
    let mut b = tiny_file();
    b[footer + 13] = 1;
    assert!(matches!(
        open_err(&b),
        Error::Layout(LayoutError::NonZeroReserved { .. })
    ));
    let mut b = tiny_file();
    let data = u32_at(&b, 36) as usize;
    b[data + 3] ^= 0x80;
    let file = open(&b).expect("opening skips the data checksum");
    assert!(matches!(
        file.verify(),
        Err(Error::Embd(EmbdError::ChecksumMismatch {
            section: "tensor data",
            ..
        }))
    ));
    let mut b = tiny_file();
    let at = b.windows(5).position(|w| w == b"hello").unwrap();
    b[at] = b'j';
    let file = open(&b).unwrap();
    let err = file.verify().unwrap_err().to_string();
    assert!(
        err.contains("metadata, vocabulary or tensor index"),
        "{err}"
    );
    // Checksums present while the flag says there are none.
    let b = edited(|b| b[8] &= !4);
    assert!(
        open_err(&b)
            .to_string()
            .contains("CHECKSUM_ENABLED is clear")
    );
}

/// `BertConfig::check` of a tiny file with this metadata and these tensors.
fn model_check(
    metadata: &BTreeMap<String, String>,
    vocab: bool,
    tensors: &[OwnedTensor],
) -> Result<BertConfig, Error> {
    let vocabulary = Vocabulary {
        tokens: &TOKENS,
        specials: SPECIALS,
    };
    let b = write(
        metadata,
        vocab.then_some(&vocabulary),
        tensors,
        WriteOptions::default(),
    );
    BertConfig::validate(&open(&b).unwrap())
}

#[test]
fn model_rules() {
    let mut tensors = tiny_tensors();
    let removed = tensors.remove(7);
    assert!(matches!(
        model_check(&tiny_metadata(), true, &tensors),
        Err(Error::Model(ModelError::MissingTensor { name })) if name == removed.name
    ));
    let mut tensors = tiny_tensors();
    tensors[5].shape = vec![2, 8];
    assert!(matches!(
        model_check(&tiny_metadata(), true, &tensors),
        Err(Error::Tllm(TllmError::DimensionMismatch { .. }))
    ));
    let mut tensors = tiny_tensors();
    tensors[3].dtype = DType::I32;
    assert!(matches!(
        model_check(&tiny_metadata(), true, &tensors),
        Err(Error::Model(ModelError::WrongDtype { .. }))
    ));
    let mut metadata = tiny_metadata();
    metadata.insert("num_attention_heads".into(), "3".into());
    assert!(matches!(
        model_check(&metadata, true, &tiny_tensors()),
        Err(Error::Model(ModelError::InvalidMetadata { .. }))
    ));
    assert!(
        matches!(
            model_check(&tiny_metadata(), false, &tiny_tensors()),
            Err(Error::Model(ModelError::InvalidMetadata { ref key, .. })) if key == "flags"
        ),
        "no vocabulary"
    );
    let mut metadata = tiny_metadata();
    metadata.insert("hidden_act".into(), "relu".into());
    assert!(
        matches!(
            model_check(&metadata, true, &tiny_tensors()),
            Err(Error::Model(ModelError::InvalidMetadata { ref key, .. })) if key == "hidden_act"
        ),
        "relu"
    );
    model_check(&tiny_metadata(), true, &tiny_tensors()).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    /// Mutated files are rejected with an error or read consistently; never
    /// a panic, whatever the bytes.
    #[test]
    fn mutated_files_never_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
        refresh_crc in any::<bool>(),
    ) {
        thread_local!(static GOOD: Vec<u8> = tiny_file());
        let mut b = GOOD.with(Clone::clone);
        for (at, value) in edits {
            let i = at.index(b.len());
            b[i] = value;
        }
        if refresh_crc {
            fix_header_crc(&mut b);
        }
        if truncate {
            b.truncate(cut.index(b.len()));
        }
        if let Ok(file) = open(&b) {
            let _ = file.verify();
            let _ = BertConfig::validate(&file);
            for t in file.tensors() {
                prop_assert_eq!(t.data().len() as u64, modelbin_format::tensor::byte_len(t.dtype(), t.shape()).unwrap());
            }
            prop_assert_eq!(file.tokens().count(), file.token_count());
        }
    }
}

/// The tiny model recast to `dtype` (through `embd::recast`), as bytes.
fn recast_bytes(bytes: &[u8], dtype: DType) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("recast.embd");
    embd::recast(
        &open(bytes).unwrap(),
        &path,
        Some(dtype),
        Some(modelbin_infer::quantize_weight_blocks),
        &mut |_, _| {},
    )
    .unwrap();
    std::fs::read(&path).unwrap()
}

#[test]
fn int8_recast_quantizes_the_linear_weights_and_word_embeddings_and_round_trips_within_half_a_step()
{
    use modelbin_format::embd::int8::{
        WORD_EMBEDDINGS, block_for, dequantize, is_quantized, scale_name,
    };
    let float_bytes = tiny_file();
    let float = open(&float_bytes).unwrap();
    let int8_bytes = recast_bytes(&float_bytes, DType::I8);
    let int8 = open(&int8_bytes).unwrap();
    int8.verify().unwrap();
    BertConfig::validate(&int8).unwrap();
    let mut quantized = 0;
    for tensor in float.tensors() {
        let stored = int8.tensor(tensor.name()).unwrap();
        if !is_quantized(tensor.name()) {
            assert_eq!(stored, tensor, "{} is kept as it is", tensor.name());
            continue;
        }
        quantized += 1;
        assert_eq!(stored.dtype(), DType::I8);
        let scales = int8.tensor(&scale_name(tensor.name())).unwrap();
        let (n, k) = (tensor.shape()[0], tensor.shape()[1]);
        let block = block_for(tensor.name(), k);
        let blocks = k.div_ceil(block);
        // The word embeddings: one scale per row, `[n]`; the linear
        // weights: `[n, blocks]`.
        let shape = if tensor.name() == WORD_EMBEDDINGS {
            vec![n]
        } else {
            vec![n, blocks]
        };
        assert_eq!((scales.dtype(), scales.shape()), (DType::F32, &shape[..]));
        let scales = scales.to_f32().unwrap();
        let back = dequantize(bytemuck::cast_slice(stored.data()), &scales, k, block);
        let want = tensor.to_f32().unwrap();
        for (i, (a, b)) in back.iter().zip(want.iter()).enumerate() {
            let scale = scales[i / k * blocks + i % k / block];
            assert!(
                (a - b).abs() <= scale / 2.0 + 1e-6,
                "{} [{i}]",
                tensor.name()
            );
        }
    }
    assert_eq!(quantized, 7);
    assert_eq!(int8.tensors().count(), float.tensors().count() + 7);
    // Back to F32: the dequantized values, no scale tensors.
    let again = recast_bytes(&int8_bytes, DType::F32);
    let again = open(&again).unwrap();
    assert_eq!(again.tensors().count(), float.tensors().count());
    for tensor in again.tensors() {
        assert_eq!(tensor.dtype(), DType::F32, "{}", tensor.name());
        if is_quantized(tensor.name()) {
            let scales = int8
                .tensor(&scale_name(tensor.name()))
                .unwrap()
                .to_f32()
                .unwrap();
            let q = int8.tensor(tensor.name()).unwrap();
            let k = q.shape()[1];
            let block = block_for(tensor.name(), k);
            let want = dequantize(bytemuck::cast_slice(q.data()), &scales, k, block);
            assert_eq!(tensor.to_f32().unwrap().as_ref(), want.as_slice());
        }
    }
}

#[test]
fn int8_weights_are_refused_without_valid_scales() {
    let weight = "encoder.layer.0.attention.self.query.weight";
    let scale = format!("{weight}_scale");
    // The tiny model with the query weight as I8 and this scale tensor.
    let with_scale = |scale_tensor: Option<OwnedTensor>| {
        let mut tensors = tiny_tensors();
        let at = tensors.iter().position(|t| t.name == weight).unwrap();
        let rows = tensors[at].shape[0];
        tensors[at].dtype = DType::I8;
        tensors[at].data = vec![1u8; rows * tensors[at].shape[1]];
        tensors.extend(scale_tensor);
        model_check(&tiny_metadata(), true, &tensors)
    };
    let scales = |dtype: DType, shape: Vec<usize>, values: &[f32]| OwnedTensor {
        name: scale.clone(),
        dtype,
        shape,
        data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    };
    // One scale per row (the first converter's files) or per block of 32
    // inputs (the rows here have fewer: one block each).
    with_scale(Some(scales(DType::F32, vec![4], &[0.1, 0.2, 0.0, 1.0]))).unwrap();
    with_scale(Some(scales(DType::F32, vec![4, 1], &[0.1, 0.2, 0.0, 1.0]))).unwrap();
    assert!(matches!(
        with_scale(None),
        Err(Error::Model(ModelError::MissingTensor { name })) if name == scale
    ));
    assert!(matches!(
        with_scale(Some(scales(DType::I32, vec![4], &[0.1; 4]))),
        Err(Error::Model(ModelError::WrongDtype { name, .. })) if name == scale
    ));
    assert!(matches!(
        with_scale(Some(scales(DType::F32, vec![3], &[0.1; 3]))),
        Err(Error::Model(ModelError::WrongShape { name, .. })) if name == scale
    ));
    assert!(matches!(
        with_scale(Some(scales(DType::F32, vec![4, 2], &[0.1; 8]))),
        Err(Error::Model(ModelError::WrongShape { name, .. })) if name == scale
    ));
    for bad in [-0.5, f32::NAN, f32::INFINITY] {
        assert!(matches!(
            with_scale(Some(scales(DType::F32, vec![4], &[0.1, 0.1, bad, 0.1]))),
            Err(Error::Model(ModelError::InvalidScale { row: 2, .. }))
        ));
    }
    // I8 is for the linear layers' weights only.
    let mut tensors = tiny_tensors();
    let at = tensors
        .iter()
        .position(|t| t.name == "encoder.layer.0.attention.output.LayerNorm.weight")
        .unwrap();
    tensors[at].dtype = DType::I8;
    let len = tensors[at].shape[0];
    tensors[at].data.truncate(len);
    assert!(matches!(
        model_check(&tiny_metadata(), true, &tensors),
        Err(Error::Model(ModelError::WrongDtype {
            dtype: DType::I8,
            ..
        }))
    ));
}

#[test]
fn a_weight_that_is_not_finite_is_not_quantized() {
    for bad in [f32::INFINITY, f32::NAN] {
        refuses_to_quantize(bad);
    }
}

/// Recasting the tiny model to int8 with `bad` in row 1 of a linear weight
/// is refused, naming the block's scale.
fn refuses_to_quantize(bad: f32) {
    let weight = "encoder.layer.0.intermediate.dense.weight";
    let mut tensors = tiny_tensors();
    let at = tensors.iter().position(|t| t.name == weight).unwrap();
    let k = tensors[at].shape[1];
    // Row 1, column 0.
    tensors[at].data[4 * k..4 * k + 4].copy_from_slice(&bad.to_le_bytes());
    let vocabulary = Vocabulary {
        tokens: &TOKENS,
        specials: SPECIALS,
    };
    let bytes = write(
        &tiny_metadata(),
        Some(&vocabulary),
        &tensors,
        WriteOptions::default(),
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("int8.embd");
    let err = embd::recast(
        &open(&bytes).unwrap(),
        &out,
        Some(DType::I8),
        Some(modelbin_infer::quantize_weight_blocks),
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(
        matches!(&err, Error::Model(ModelError::InvalidScale { name, row: 1, .. }) if *name == format!("{weight}_scale")),
        "{bad}: {err}"
    );
    assert!(!out.exists());
}

#[test]
fn int8_storage_without_a_quantizer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("int8.embd");
    let err = embd::recast(
        &open(&tiny_file()).unwrap(),
        &out,
        Some(DType::I8),
        None,
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(why) if why.contains("quantizer")),
        "{err}"
    );
    assert!(!out.exists());
}
