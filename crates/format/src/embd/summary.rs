//! What `modelbin inspect` reports about an EMBD model: header, flags,
//! checksums, metadata, vocabulary size, the BERT configuration the tensors
//! make (or why they make none), and every tensor.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Embd, Footer, Header, SpecialTokens, flags};
use crate::Format;
use crate::inspect::TensorSummary;
use crate::model::BertConfig;
use crate::tensor::TensorStore;

/// What `inspect` reports about an EMBD sentence-embedding model.
#[derive(Debug, Clone, Serialize)]
pub struct EmbdSummary {
    /// The format.
    pub format: Format,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// The header, as stored.
    pub header: Header,
    /// Names of the flags that are set.
    pub flags: Vec<&'static str>,
    /// The footer's checksums.
    pub footer: Footer,
    /// The metadata.
    pub metadata: BTreeMap<String, String>,
    /// Vocabulary tokens (0 without a vocabulary).
    pub token_count: usize,
    /// The special token ids, with a vocabulary.
    pub special_tokens: Option<SpecialTokens>,
    /// The BERT configuration, when the tensors make a usable model.
    pub model: Option<BertConfig>,
    /// Why the tensors do not make a usable model, otherwise.
    pub model_error: Option<String>,
    /// Number of tensors.
    pub tensor_count: usize,
    /// Elements of all tensors together.
    pub parameter_count: u64,
    /// Every tensor, in data order.
    pub tensors: Vec<TensorSummary>,
}

impl EmbdSummary {
    /// Summarises a validated EMBD file.
    pub fn of<B: AsRef<[u8]>>(file: &Embd<B>) -> Self {
        let header = *file.header();
        let flags = [
            (flags::VOCAB_EMBEDDED, "VOCAB_EMBEDDED"),
            (flags::TENSORS_ALIGNED, "TENSORS_ALIGNED"),
            (flags::CHECKSUM_ENABLED, "CHECKSUM_ENABLED"),
        ]
        .into_iter()
        .filter(|&(bit, _)| header.has(bit))
        .map(|(_, name)| name)
        .collect();
        let (model, model_error) = match BertConfig::validate(file) {
            Ok(config) => (Some(config), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let tensors = TensorSummary::all(file);
        EmbdSummary {
            format: Format::Embd,
            file_size: file.file_bytes().len() as u64,
            header,
            flags,
            footer: *file.footer(),
            metadata: file.metadata().cloned().unwrap_or_default(),
            token_count: file.token_count(),
            special_tokens: file.special_tokens(),
            model,
            model_error,
            tensor_count: tensors.len(),
            parameter_count: TensorSummary::parameter_count(&tensors),
            tensors,
        }
    }
}
