//! safetensors (`.safetensors`): `u64 LE n` | `n` bytes of JSON header | data.
//!
//! An independent strict reader (the `safetensors` crate panics on offsets
//! near 2^64) and a writer. Dtypes outside modelbin's [`DType`](crate::DType) set (F4,
//! F6_*, F8_E8M0, the FNUZ floats, C64) are reported as unsupported.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | [`SafeTensors`], [`open`], `from_buffer`, `verify` |
//! | `read.rs` | the strict JSON-header parser |
//! | `write.rs` | [`serialize`], [`write_file`]: the header encoder and atomic writes |
//! | `summary.rs` | [`SafeTensors::summary`] for `inspect` |
//! | `slicing.rs` | [`slicing::resolve`]: a Python index checked with safetensors' rules (`get_slice`) |
//! | `sharded.rs` | [`sharded::Sharded`]: a checkpoint split over shards by `model.safetensors.index.json` |
//! | `error.rs` | [`ShardError`]: the rules of a sharded checkpoint |
//!
//! A safetensors file has no rules of its own beyond the binary-layout
//! rules every tensor format shares: its errors are
//! [`LayoutError`](crate::LayoutError)s. Only a sharded checkpoint, whose
//! index ties files together, has an enum ([`ShardError`]).

pub(crate) mod error;
mod read;
pub mod sharded;
pub mod slicing;
mod summary;
mod write;

use std::collections::BTreeMap;
use std::path::Path;

pub use error::ShardError;
pub use write::{serialize, write_file};

use crate::Result;
use crate::io::source::MappedFile;
use crate::tensor::TensorStore;
use crate::tensor::table::{PrefixedHeader, TensorTable};

/// The format's name in errors.
const FORMAT: &str = "safetensors";
/// The header key of the string metadata.
const METADATA_KEY: &str = "__metadata__";

/// A validated safetensors file over any byte buffer. Tensor access is zero-copy.
#[derive(Debug)]
pub struct SafeTensors<B> {
    buf: B,
    metadata: Option<BTreeMap<String, String>>,
    table: TensorTable,
    header_len: u64,
}

/// Opens and validates a safetensors file, memory-mapped.
pub fn open(path: impl AsRef<Path>) -> Result<SafeTensors<MappedFile>> {
    SafeTensors::from_buffer(MappedFile::open(path)?)
}

impl<B: AsRef<[u8]>> SafeTensors<B> {
    /// Validates `buf` as a whole safetensors file.
    pub fn from_buffer(buf: B) -> Result<Self> {
        let PrefixedHeader {
            metadata,
            table,
            header_len,
        } = read::parse(buf.as_ref())?;
        Ok(SafeTensors {
            buf,
            metadata,
            table,
            header_len,
        })
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

    /// Header size `n` (JSON bytes after the 8-byte prefix, padding included).
    pub fn header_len(&self) -> u64 {
        self.header_len
    }
}

impl<B: AsRef<[u8]>> crate::tensor::sealed::Sealed for SafeTensors<B> {
    fn table(&self) -> &TensorTable {
        &self.table
    }
}

impl<B: AsRef<[u8]>> TensorStore for SafeTensors<B> {
    fn file_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    fn metadata(&self) -> Option<&BTreeMap<String, String>> {
        self.metadata.as_ref()
    }
}
