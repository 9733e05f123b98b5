//! What the EMBD tests share: a small model, its vocabulary, written files and their section offsets.

use super::OwnedTensor;
use modelbin_format::ModelError;
use modelbin_format::embd::{self, Embd, SpecialTokens, Vocabulary, WriteOptions};
use modelbin_format::io::checksum::crc32;
use modelbin_format::model::BertConfig;
use modelbin_format::{DType, Error, TensorView};
use std::collections::BTreeMap;

pub const TOKENS: [&str; 8] = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "##lo", "wörld",
];

pub const SPECIALS: SpecialTokens = SpecialTokens {
    pad: 0,
    unk: 1,
    cls: 2,
    sep: 3,
    mask: 4,
};

/// Metadata of a tiny BERT: hidden 4, 2 heads, 1 layer, FFN 8, 8 positions.
pub fn tiny_metadata() -> BTreeMap<String, String> {
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
pub fn tiny_tensors() -> Vec<OwnedTensor> {
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

pub fn write(
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

pub fn tiny_file() -> Vec<u8> {
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

pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

pub fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

pub fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

pub fn fix_header_crc(b: &mut [u8]) {
    let crc = crc32(&b[..56]);
    put_u32(b, 56, crc);
}

pub fn open(bytes: &[u8]) -> Result<Embd<&[u8]>, Error> {
    Embd::from_buffer(bytes)
}

pub fn open_err(bytes: &[u8]) -> Error {
    match open(bytes) {
        Ok(_) => panic!("the file must be rejected"),
        Err(e) => e,
    }
}

/// A copy of the tiny file with `edit` applied and the header CRC redone.
pub fn edited(edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut b = tiny_file();
    edit(&mut b);
    fix_header_crc(&mut b);
    b
}

/// Offset of descriptor `i` in the tiny file.
pub fn descriptor(b: &[u8], i: usize) -> usize {
    u32_at(b, 28) as usize + 32 * i
}

/// `BertConfig::check` of a tiny file with this metadata and these tensors.
pub fn model_check(
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

/// The tiny model recast to `dtype` (through `embd::recast`), as bytes.
pub fn recast_bytes(bytes: &[u8], dtype: DType) -> Vec<u8> {
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

/// Recasting the tiny model to int8 with `bad` in row 1 of a linear weight
/// is refused, naming the block's scale.
pub fn refuses_to_quantize(bad: f32) {
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
