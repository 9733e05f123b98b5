//! EMBD: every rejection rule matched on its variant, single-bit corruption, truncation at every section boundary, and mutated files (never a panic).

mod common;

use common::OwnedTensor;
use common::embd::*;
use modelbin_format::embd::{self, Vocabulary, WriteOptions};
use modelbin_format::model::BertConfig;
use modelbin_format::{DType, Error, TensorStore};
use modelbin_format::{EmbdError, LayoutError, ModelError, TllmError};
use proptest::prelude::*;

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
