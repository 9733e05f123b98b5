//! EMBD (`.embd`, `.weights`): BERT sentence-embedding weights with their
//! WordPiece vocabulary, in one memory-mappable file.
//!
//! Layout (little-endian, all offsets absolute): a 64-byte header | metadata
//! (string pairs) | vocabulary (tokens by id, then the five special ids) |
//! tensor index (32-byte descriptors, then the name table) | zero padding to
//! 64 | tensor data (each tensor 64-byte aligned) | a 16-byte footer with the
//! CRC-32s of the data and of the whole file and the end magic `DBME`.
//! See `docs/formats/embd.md` for every rule.
//!
//! Opening validates the structure and the header CRC, which is cheap (no
//! pass over the tensor data); [`Embd::verify`] also checks the data and file
//! CRCs. [`BertConfig::validate`](crate::model::BertConfig::validate) checks
//! that the tensors make a BERT model.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | [`Embd`], [`open`], `from_buffer`, `verify` |
//! | `read/` | one file per section: header and footer, metadata, vocabulary, tensor index |
//! | `write/` | [`write_file`], [`recast`]; `storage.rs`: the bytes each storage dtype writes |
//! | `int8.rs` | how int8 weights and their scales are stored |
//! | `error.rs` | [`EmbdError`] |
//! | `summary.rs` | [`EmbdSummary`] for `inspect` |
//!
//! Converting a Hugging Face directory to EMBD, and EMBD to a
//! sentence-transformers directory, is in [`crate::convert`].

mod error;
pub mod int8;
mod read;
mod summary;
mod write;

use std::collections::BTreeMap;
use std::path::Path;

use crate::io::checksum::crc32;
use crate::io::source::MappedFile;
use crate::tensor::TensorStore;
use crate::tensor::table::TensorTable;
use crate::{Error, Result};

pub use error::EmbdError;
pub use read::{Footer, Header, REQUIRED_KEYS, SpecialTokens, flags, metadata_number};
use read::{
    Sections, TokenTable, check_metadata, read_footer, read_header, read_metadata,
    read_tensor_index, read_vocabulary,
};
pub use summary::EmbdSummary;
pub(crate) use write::storage::{Stored, check_weight_dtype};
pub use write::{Vocabulary, WriteOptions, recast, write_file};

/// Magic bytes at the start of the file.
pub const MAGIC: &[u8; 4] = b"EMBD";
/// Magic bytes closing the footer.
pub const END_MAGIC: &[u8; 4] = b"DBME";
/// The major version this module reads and writes.
pub const VERSION_MAJOR: u16 = 1;
/// The minor version this module writes (higher minor versions are read).
pub const VERSION_MINOR: u16 = 0;
/// Size of the header.
pub const HEADER_LEN: u64 = 64;
/// Size of the footer.
pub const FOOTER_LEN: u64 = 16;
/// Size of one tensor descriptor.
pub const DESCRIPTOR_LEN: u64 = 32;
/// Alignment of tensor data when [`flags::TENSORS_ALIGNED`] is set.
pub const ALIGNMENT: u64 = 64;
/// Bytes the header CRC covers.
pub(crate) const HEADER_CRC_SPAN: usize = 56;
/// Size of the special-id block of the vocabulary.
pub(crate) const SPECIAL_BLOCK_LEN: u64 = 20;

/// A validated EMBD file over any byte buffer (a mapped file, a `Vec<u8>`).
#[derive(Debug)]
pub struct Embd<B> {
    buf: B,
    header: Header,
    footer: Footer,
    /// Read by the BERT checks of [`crate::model`] as well.
    pub(crate) metadata: BTreeMap<String, String>,
    vocabulary: Option<TokenTable>,
    table: TensorTable,
    /// Offset of each tensor's descriptor, in data order (as the table).
    descriptor_offsets: Vec<u64>,
}

/// Opens and validates an EMBD file, memory-mapped. Checks the header CRC
/// and the structure; [`Embd::verify`] checks the other two CRCs.
pub fn open(path: impl AsRef<Path>) -> Result<Embd<MappedFile>> {
    Embd::from_buffer(MappedFile::open(path)?)
}

impl<B: AsRef<[u8]>> Embd<B> {
    /// Validates `buf` as a whole EMBD file.
    pub fn from_buffer(buf: B) -> Result<Self> {
        let file = buf.as_ref();
        let header = read_header(file)?;
        let sections = Sections::of(&header, file.len() as u64)?;
        let metadata = read_metadata(file, &header)?;
        let vocabulary = read_vocabulary(file, &header)?;
        check_metadata(&metadata, vocabulary.as_ref())?;
        let (table, descriptor_offsets) = read_tensor_index(file, &header, &sections)?;
        let footer = read_footer(file, &header)?;
        Ok(Embd {
            buf,
            header,
            footer,
            metadata,
            vocabulary,
            table,
            descriptor_offsets,
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The footer's checksums.
    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// The value of metadata `key` (the whole map is
    /// [`TensorStore::metadata`]).
    pub fn metadata_value(&self, key: &str) -> Option<&str> {
        self.metadata.get(key).map(String::as_str)
    }

    /// Number of vocabulary tokens (0 without a vocabulary).
    pub fn token_count(&self) -> usize {
        self.vocabulary.as_ref().map_or(0, |v| v.tokens.len())
    }

    /// The special token ids, when the file has a vocabulary.
    pub fn special_tokens(&self) -> Option<SpecialTokens> {
        self.vocabulary.as_ref().map(|v| v.specials)
    }

    /// The token with id `id`.
    pub fn token(&self, id: u32) -> Option<&str> {
        let &(start, len) = self.vocabulary.as_ref()?.tokens.get(id as usize)?;
        let start = start as usize;
        // Validated as UTF-8 when the file was opened.
        std::str::from_utf8(&self.buf.as_ref()[start..start + usize::from(len)]).ok()
    }

    /// Every token, by id.
    pub fn tokens(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.token_count() as u32).map(|id| self.token(id).unwrap_or_default())
    }

    /// Offset of the descriptor of the tensor called `name`.
    pub fn descriptor_offset(&self, name: &str) -> Option<u64> {
        self.table
            .find(name)
            .map(|index| self.descriptor_offsets[index])
    }

    /// Checks the data and file CRC-32s (when the file has checksums): the
    /// integrity check that opening skips because it reads every byte.
    pub fn verify(&self) -> Result<()> {
        if !self.header.has(flags::CHECKSUM_ENABLED) {
            return Ok(());
        }
        let file = self.buf.as_ref();
        let footer_at = self.header.footer_offset();
        let data = &file[self.header.tensor_data_offset as usize..footer_at as usize];
        let computed = crc32(data);
        if computed != self.footer.data_checksum {
            return Err(Error::Embd(EmbdError::ChecksumMismatch {
                section: "tensor data",
                offset: footer_at,
                stored: self.footer.data_checksum,
                computed,
            }));
        }
        let computed = crc32(&file[..footer_at as usize]);
        if computed != self.footer.file_checksum {
            return Err(Error::Embd(EmbdError::ChecksumMismatch {
                section: "metadata, vocabulary or tensor index (file checksum)",
                offset: footer_at + 4,
                stored: self.footer.file_checksum,
                computed,
            }));
        }
        Ok(())
    }
}

impl<B: AsRef<[u8]>> crate::tensor::sealed::Sealed for Embd<B> {
    fn table(&self) -> &TensorTable {
        &self.table
    }
}

impl<B: AsRef<[u8]>> TensorStore for Embd<B> {
    fn file_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    fn metadata(&self) -> Option<&BTreeMap<String, String>> {
        Some(&self.metadata)
    }
}
