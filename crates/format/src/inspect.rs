//! Summaries of files, printed by `modelbin inspect` as text or JSON.
//!
//! Each format describes itself in its own `summary.rs`
//! ([`crate::bpe2::Bpe2Summary`], [`crate::embd::EmbdSummary`],
//! [`crate::tllm::TllmSummary`], [`crate::saev::SaevSummary`]; BinTensors and
//! safetensors share [`TensorFileSummary`]). This module holds what they
//! share: [`Summary`], which dispatches over them and is what
//! `modelbin inspect --json` prints, and the per-tensor rows
//! ([`TensorSummary`]) of every tensor table.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::any::AnyFile;
use crate::bpe2::Bpe2Summary;
use crate::embd::EmbdSummary;
use crate::file::TensorFile;
use crate::saev::SaevSummary;
use crate::tensor::TensorStore;
use crate::tllm::TllmSummary;
use crate::{DType, Format};

/// What `inspect` reports about a tensor file.
#[derive(Debug, Clone, Serialize)]
pub struct TensorFileSummary {
    /// The format.
    pub format: Format,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// Header size after the 8-byte prefix, padding included.
    pub header_size: u64,
    /// Absolute offset of the tensor data.
    pub data_offset: u64,
    /// Bytes of tensor data.
    pub data_size: u64,
    /// The string metadata, if the file has a metadata map.
    pub metadata: Option<BTreeMap<String, String>>,
    /// Number of tensors.
    pub tensor_count: usize,
    /// Elements of all tensors together.
    pub parameter_count: u64,
    /// Every tensor, in file order.
    pub tensors: Vec<TensorSummary>,
}

/// One tensor of a [`TensorFileSummary`].
#[derive(Debug, Clone, Serialize)]
pub struct TensorSummary {
    /// Its name.
    pub name: String,
    /// Its dtype.
    pub dtype: DType,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Absolute byte offset of its data in the file.
    pub offset: u64,
    /// Size of its data in bytes.
    pub bytes: u64,
}

impl TensorSummary {
    /// Every tensor of `store`, in file order.
    pub fn all(store: &impl TensorStore) -> Vec<TensorSummary> {
        store
            .tensors()
            .enumerate()
            .map(|(index, view)| TensorSummary {
                name: view.name().to_owned(),
                dtype: view.dtype(),
                shape: view.shape().to_vec(),
                offset: store.data_start(index).unwrap_or_default(),
                bytes: view.data().len() as u64,
            })
            .collect()
    }

    /// Elements of `tensors` together. Validation bounds every tensor's
    /// bytes by the file, so only a shape with a zero dimension could
    /// overflow the product: its factors saturate (and multiply by zero).
    pub fn parameter_count(tensors: &[TensorSummary]) -> u64 {
        tensors
            .iter()
            .map(|t| {
                if t.shape.contains(&0) {
                    0
                } else {
                    t.shape
                        .iter()
                        .fold(1u64, |n, &d| n.saturating_mul(d as u64))
                }
            })
            .fold(0u64, u64::saturating_add)
    }

    /// The headings of [`TensorSummary::table_row`]'s columns; the last
    /// [`TensorSummary::NUMERIC_COLUMNS`] are numbers (right-aligned).
    pub const TABLE_HEADINGS: [&str; 5] = ["NAME", "DTYPE", "SHAPE", "OFFSET", "BYTES"];
    /// How many of the last columns hold numbers.
    pub const NUMERIC_COLUMNS: usize = 2;

    /// The tensor as one row of `inspect`'s table.
    pub fn table_row(&self) -> Vec<String> {
        vec![
            self.name.clone(),
            self.dtype.to_string(),
            format!("{:?}", self.shape),
            self.offset.to_string(),
            self.bytes.to_string(),
        ]
    }
}

impl TensorFileSummary {
    /// Summarises a BinTensors or safetensors file whose header (after the
    /// 8-byte size prefix) is `header_len` bytes.
    pub(crate) fn of(format: Format, file: &impl TensorStore, header_len: u64) -> Self {
        let data_offset = 8 + header_len;
        let file_size = file.file_bytes().len() as u64;
        let tensors = TensorSummary::all(file);
        TensorFileSummary {
            format,
            file_size,
            header_size: header_len,
            data_offset,
            data_size: file_size - data_offset,
            metadata: file.metadata().cloned(),
            tensor_count: tensors.len(),
            parameter_count: TensorSummary::parameter_count(&tensors),
            tensors,
        }
    }
}

/// The summary of any file modelbin can read; its JSON form is what
/// `modelbin inspect --json` prints.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Summary {
    /// A BinTensors or safetensors file.
    Tensors(TensorFileSummary),
    /// A BPE2 vocabulary.
    Bpe2(Bpe2Summary),
    /// A TLLM model.
    Tllm(TllmSummary),
    /// A SAEV activation dataset.
    Saev(SaevSummary),
    /// An EMBD sentence-embedding model.
    Embd(EmbdSummary),
}

impl Summary {
    /// Summarises an opened file.
    pub fn of(file: &AnyFile) -> Summary {
        match file {
            AnyFile::Tensors(TensorFile::BinTensors(f)) => Summary::Tensors(f.summary()),
            AnyFile::Tensors(TensorFile::Safetensors(f)) => Summary::Tensors(f.summary()),
            AnyFile::Tensors(TensorFile::Embd(f)) => Summary::Embd(EmbdSummary::of(f)),
            AnyFile::Tensors(TensorFile::Tllm(f)) => Summary::Tllm(TllmSummary::of(f)),
            AnyFile::Bpe2(f) => Summary::Bpe2(Bpe2Summary::of(f)),
            AnyFile::Tiktoken {
                vocabulary,
                file_size,
            } => Summary::Bpe2(Bpe2Summary::of_tiktoken(vocabulary, *file_size)),
            AnyFile::Saev(d) => Summary::Saev(SaevSummary::of(d)),
        }
    }

    /// A one-line description: format, main counts, size.
    pub fn one_line(&self) -> String {
        match self {
            Summary::Tensors(s) => format!(
                "{}, {} tensors, {} bytes",
                s.format, s.tensor_count, s.file_size
            ),
            Summary::Bpe2(s) => format!(
                "{}{}, {} tokens, {} bytes",
                s.format,
                s.encoding.map(|e| format!(" ({e})")).unwrap_or_default(),
                s.present_tokens,
                s.file_size
            ),
            Summary::Saev(s) => format!(
                "{}, {} vectors of {} in {} shards",
                s.format, s.vectors, s.metadata["d_vit"], s.n_shards
            ),
            Summary::Tllm(s) => format!(
                "{}, {} parameters, {} bytes",
                s.format, s.parameter_count, s.file_size
            ),
            Summary::Embd(s) => format!(
                "{} ({}), {} tensors, {} tokens, {} bytes",
                s.format,
                s.metadata.get("model_name").map_or("?", String::as_str),
                s.tensor_count,
                s.token_count,
                s.file_size
            ),
        }
    }
}
