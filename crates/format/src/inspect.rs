//! Summaries of files, printed by `modelbin inspect` as text or JSON.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::file::TensorFile;
use crate::tensor::TensorStore;
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

impl TensorFileSummary {
    /// Summarises an opened tensor file.
    pub fn of(file: &TensorFile) -> Self {
        let data_offset = file.data_offset();
        let file_size = file.file_bytes().len() as u64;
        let tensors: Vec<TensorSummary> = file
            .tensors()
            .enumerate()
            .map(|(index, view)| TensorSummary {
                name: view.name().to_owned(),
                dtype: view.dtype(),
                shape: view.shape().to_vec(),
                offset: file.table().data_start(index),
                bytes: view.data().len() as u64,
            })
            .collect();
        TensorFileSummary {
            format: file.format(),
            file_size,
            header_size: file.header_len(),
            data_offset,
            data_size: file_size - data_offset,
            metadata: file.metadata().cloned(),
            tensor_count: tensors.len(),
            tensors,
        }
    }
}
