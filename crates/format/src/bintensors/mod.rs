//! BinTensors (`.bt`): named tensors behind a bincode-encoded header,
//! byte-for-byte compatible with the reference crate `bintensors` 0.1.1.
//!
//! Layout: `u64 LE n` | `n` header bytes | tensor data. See
//! `docs/formats/bintensors.md` for the header encoding and every validation
//! rule; the reader is stricter than the reference, which accepts junk.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | [`BinTensors`], [`open`], `from_buffer`, `verify` |
//! | `read.rs` | parsing and validating the header |
//! | `write.rs` | [`serialize`], [`write_file`]: the header encoder and atomic writes |
//! | `varint.rs` | the varint both directions share |
//! | `error.rs` | [`BintensorsError`] |
//! | `summary.rs` | [`BinTensors::summary`] for `inspect` |

mod error;
mod read;
mod summary;
mod varint;
mod write;

use std::collections::BTreeMap;
use std::path::Path;

pub use error::BintensorsError;
pub use read::{MAX_HEADER_SIZE, MAX_METADATA_ENTRIES};
pub use write::{serialize, write_file};

use crate::Result;
use crate::io::source::MappedFile;
use crate::tensor::TensorStore;
use crate::tensor::table::{PrefixedHeader, TensorTable};

/// A validated BinTensors file over any byte buffer (a mapped file, a `Vec`,
/// a slice). Tensor access borrows from the buffer and copies nothing.
#[derive(Debug)]
pub struct BinTensors<B> {
    buf: B,
    header: PrefixedHeader,
}

/// Opens and validates a BinTensors file, memory-mapped.
pub fn open(path: impl AsRef<Path>) -> Result<BinTensors<MappedFile>> {
    BinTensors::from_buffer(MappedFile::open(path)?)
}

impl<B: AsRef<[u8]>> BinTensors<B> {
    /// Validates `buf` as a whole BinTensors file.
    pub fn from_buffer(buf: B) -> Result<Self> {
        let header = read::parse(buf.as_ref())?;
        Ok(BinTensors { buf, header })
    }

    /// Absolute offset of the tensor data (after the size prefix and the
    /// header).
    pub fn data_offset(&self) -> u64 {
        8 + self.header_len()
    }

    /// Opening checks every rule already (the format has no checksum): a
    /// no-op, for the same face as the other formats.
    pub fn verify(&self) -> Result<()> {
        Ok(())
    }

    /// Header size `n` (the bytes after the 8-byte prefix, padding included).
    pub fn header_len(&self) -> u64 {
        self.header.header_len
    }

    /// Size of the whole file.
    pub fn file_len(&self) -> u64 {
        self.buf.as_ref().len() as u64
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> B {
        self.buf
    }
}

impl<B: AsRef<[u8]>> crate::tensor::sealed::Sealed for BinTensors<B> {
    fn table(&self) -> &TensorTable {
        &self.header.table
    }
}

impl<B: AsRef<[u8]>> TensorStore for BinTensors<B> {
    fn file_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    fn metadata(&self) -> Option<&BTreeMap<String, String>> {
        self.header.metadata.as_ref()
    }
}
