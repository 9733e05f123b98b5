//! Opening any tensor file (BinTensors or safetensors) behind one type.

use std::collections::BTreeMap;
use std::path::Path;

use crate::bintensors::{self, BinTensors};
use crate::safetensors::{self, SafeTensors};
use crate::source::MappedFile;
use crate::table::TensorTable;
use crate::tensor::TensorStore;
use crate::{Error, Format, Result};

/// A validated, memory-mapped tensor file of either tensor format.
#[derive(Debug)]
pub enum TensorFile {
    /// A BinTensors file.
    BinTensors(BinTensors<MappedFile>),
    /// A safetensors file.
    Safetensors(SafeTensors<MappedFile>),
}

impl TensorFile {
    /// Opens `path` as `format`; other formats are [`Error::UnsupportedFormat`].
    pub fn open(path: impl AsRef<Path>, format: Format, operation: &'static str) -> Result<Self> {
        match format {
            Format::BinTensors => bintensors::open(path).map(TensorFile::BinTensors),
            Format::Safetensors => safetensors::open(path).map(TensorFile::Safetensors),
            _ => Err(Error::UnsupportedFormat { format, operation }),
        }
    }

    /// The file's format.
    pub fn format(&self) -> Format {
        match self {
            TensorFile::BinTensors(_) => Format::BinTensors,
            TensorFile::Safetensors(_) => Format::Safetensors,
        }
    }

    /// Header size after the 8-byte prefix, padding included.
    pub fn header_len(&self) -> u64 {
        match self {
            TensorFile::BinTensors(f) => f.header_len(),
            TensorFile::Safetensors(f) => f.header_len(),
        }
    }
}

impl TensorStore for TensorFile {
    fn file_bytes(&self) -> &[u8] {
        match self {
            TensorFile::BinTensors(f) => f.file_bytes(),
            TensorFile::Safetensors(f) => f.file_bytes(),
        }
    }

    fn table(&self) -> &TensorTable {
        match self {
            TensorFile::BinTensors(f) => f.table(),
            TensorFile::Safetensors(f) => f.table(),
        }
    }

    fn metadata(&self) -> Option<&BTreeMap<String, String>> {
        match self {
            TensorFile::BinTensors(f) => f.metadata(),
            TensorFile::Safetensors(f) => f.metadata(),
        }
    }
}
