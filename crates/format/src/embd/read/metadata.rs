//! The metadata section: UTF-8 key/value pairs and the keys a model needs.

use std::collections::BTreeMap;

use crate::error::At;
use crate::io::bytes::ByteReader;
use crate::{Error, LayoutError, ModelError, Result};

use super::header::Header;
use super::vocabulary::TokenTable;
use crate::embd::HEADER_LEN;

/// The metadata keys every EMBD file has.
pub const REQUIRED_KEYS: [&str; 10] = [
    "model_name",
    "model_version",
    "embedding_dim",
    "vocab_size",
    "num_layers",
    "num_attention_heads",
    "hidden_size",
    "intermediate_size",
    "max_position_emb",
    "created_at",
];

/// The required keys whose values are positive integers.
const NUMERIC_KEYS: [&str; 7] = [
    "embedding_dim",
    "vocab_size",
    "num_layers",
    "num_attention_heads",
    "hidden_size",
    "intermediate_size",
    "max_position_emb",
];

pub(in crate::embd) fn read_metadata(file: &[u8], h: &Header) -> Result<BTreeMap<String, String>> {
    let section = &file[HEADER_LEN as usize..h.vocab_offset as usize];
    let mut r = ByteReader::new(section, HEADER_LEN);
    let entry_count = r.u32_le("metadata entry_count")?;
    let total_size = r.u32_le("metadata total_size")?;
    if u64::from(total_size) + 8 != section.len() as u64 {
        return Err(Error::Layout(LayoutError::InvalidHeader {
            format: "EMBD",
            offset: HEADER_LEN + 4,
            reason: format!(
                "metadata total_size {total_size} + 8 disagrees with metadata_size {}",
                section.len()
            ),
        }));
    }
    let mut metadata = BTreeMap::new();
    for _ in 0..entry_count {
        let at = r.offset();
        let key_len = r.u16_le("metadata key_length")?;
        let value_len = r.u16_le("metadata value_length")?;
        let key = r.str(u64::from(key_len), "metadata key")?;
        let value = r.str(u64::from(value_len), "metadata value")?;
        if metadata.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err(Error::Layout(LayoutError::DuplicateMetadataKey {
                key: key.to_owned(),
                at: At(Some(at)),
            }));
        }
    }
    if r.remaining() != 0 {
        return Err(Error::Layout(LayoutError::InvalidHeader {
            format: "EMBD",
            offset: r.offset(),
            reason: format!(
                "{} bytes after the {entry_count} metadata entries",
                r.remaining()
            ),
        }));
    }
    Ok(metadata)
}

/// The required keys are present, numeric ones are positive integers, and
/// `vocab_size` is the vocabulary's token count.
pub(in crate::embd) fn check_metadata(
    metadata: &BTreeMap<String, String>,
    vocab: Option<&TokenTable>,
) -> Result<()> {
    for key in REQUIRED_KEYS {
        if !metadata.contains_key(key) {
            return Err(Error::Model(ModelError::MissingMetadata { key }));
        }
    }
    for key in NUMERIC_KEYS {
        metadata_number(metadata, key)?;
    }
    if let Some(vocab) = vocab {
        let declared = metadata_number(metadata, "vocab_size")?;
        if declared != vocab.tokens.len() {
            return Err(Error::Model(ModelError::InvalidMetadata {
                key: "vocab_size".into(),
                value: declared.to_string(),
                reason: format!("the vocabulary has {} tokens", vocab.tokens.len()),
            }));
        }
    }
    Ok(())
}

/// The positive integer value of metadata `key`.
pub fn metadata_number(metadata: &BTreeMap<String, String>, key: &str) -> Result<usize> {
    let value = metadata.get(key).ok_or_else(|| {
        Error::Model(ModelError::InvalidMetadata {
            key: key.into(),
            value: String::new(),
            reason: "missing".into(),
        })
    })?;
    match value.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n as usize),
        _ => Err(Error::Model(ModelError::InvalidMetadata {
            key: key.into(),
            value: value.clone(),
            reason: "must be a positive integer below 2^32".into(),
        })),
    }
}
