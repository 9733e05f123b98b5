//! Opening any file that holds named tensors (BinTensors, safetensors,
//! EMBD, TLLM) behind one type.

use std::collections::BTreeMap;
use std::path::Path;

use crate::bintensors::{self, BinTensors};
use crate::embd::{self, Embd};
use crate::io::source::MappedFile;
use crate::safetensors::{self, SafeTensors};
use crate::tensor::table::TensorTable;
use crate::tensor::{TensorStore, sealed::Sealed};
use crate::tllm::{self, Tllm};
use crate::{Error, Format, Result, detect};

/// A validated, memory-mapped file of any format that holds named tensors.
#[derive(Debug)]
pub enum TensorFile {
    /// A BinTensors file.
    BinTensors(BinTensors<MappedFile>),
    /// A safetensors file.
    Safetensors(SafeTensors<MappedFile>),
    /// An EMBD sentence-embedding model.
    Embd(Embd<MappedFile>),
    /// A TLLM model.
    Tllm(Tllm<MappedFile>),
}

impl TensorFile {
    /// Opens `path`, its format detected from the content; a format without
    /// tensors is [`Error::UnsupportedFormat`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        TensorFile::open_as(path, detect::detect(path)?)
    }

    /// Opens `path` as `format`; a format without tensors is
    /// [`Error::UnsupportedFormat`].
    pub fn open_as(path: impl AsRef<Path>, format: Format) -> Result<Self> {
        match format {
            Format::BinTensors => bintensors::open(path).map(TensorFile::BinTensors),
            Format::Safetensors => safetensors::open(path).map(TensorFile::Safetensors),
            Format::Embd => embd::open(path).map(TensorFile::Embd),
            Format::Tllm => tllm::open(path).map(TensorFile::Tllm),
            _ => Err(Error::UnsupportedFormat {
                format,
                operation: "reading tensors",
            }),
        }
    }

    /// The file's format.
    pub fn format(&self) -> Format {
        match self {
            TensorFile::BinTensors(_) => Format::BinTensors,
            TensorFile::Safetensors(_) => Format::Safetensors,
            TensorFile::Embd(_) => Format::Embd,
            TensorFile::Tllm(_) => Format::Tllm,
        }
    }

    /// The full check of the format (see each format's `verify`).
    pub fn verify(&self) -> Result<()> {
        each!(self, file => file.verify())
    }
}

/// Runs `$body` with `$file` bound to the variant's reader, whatever it is.
macro_rules! each {
    ($self:expr, $file:ident => $body:expr) => {
        match $self {
            TensorFile::BinTensors($file) => $body,
            TensorFile::Safetensors($file) => $body,
            TensorFile::Embd($file) => $body,
            TensorFile::Tllm($file) => $body,
        }
    };
}
use each;

impl Sealed for TensorFile {
    fn table(&self) -> &TensorTable {
        each!(self, file => file.table())
    }
}

impl TensorStore for TensorFile {
    fn file_bytes(&self) -> &[u8] {
        each!(self, file => file.file_bytes())
    }

    fn metadata(&self) -> Option<&BTreeMap<String, String>> {
        each!(self, file => file.metadata())
    }
}
