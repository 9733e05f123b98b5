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
//! CRCs. [`bert::BertConfig::check`] checks that the tensors make a BERT model.

pub mod bert;
mod hf;
mod writer;

use crate::{Bpe2Error, EmbdError, LayoutError, ModelError};
use std::collections::BTreeMap;
use std::path::Path;

use crate::bytes::{ByteReader, bounded_capacity};
use crate::checksum::{crc32, fnv1a32};
use crate::error::At;
use crate::source::MappedFile;
use crate::table::{TableBuilder, TensorTable};
use crate::tensor::TensorStore;
use crate::{DType, Error, Result};

pub use hf::{HfOptions, from_hf_dir, is_hf_model_dir};
pub use writer::{Vocabulary, WriteOptions, recast, write_file};

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
const HEADER_CRC_SPAN: usize = 56;
/// Size of the special-id block of the vocabulary.
const SPECIAL_BLOCK_LEN: u64 = 20;

/// The header's flag bits.
pub mod flags {
    /// The vocabulary section holds the WordPiece vocabulary.
    pub const VOCAB_EMBEDDED: u32 = 1 << 0;
    /// Tensor data is 64-byte aligned.
    pub const TENSORS_ALIGNED: u32 = 1 << 1;
    /// The footer's data and file checksums are set.
    pub const CHECKSUM_ENABLED: u32 = 1 << 2;
    /// Compressed tensor data (reserved; rejected).
    pub const COMPRESSED: u32 = 1 << 3;
    /// Every bit this version defines.
    pub const KNOWN: u32 = VOCAB_EMBEDDED | TENSORS_ALIGNED | CHECKSUM_ENABLED | COMPRESSED;
}

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

/// The 64-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Header {
    /// Major version (1).
    pub version_major: u16,
    /// Minor version.
    pub version_minor: u16,
    /// Flag bits ([`flags`]).
    pub flags: u32,
    /// Offset of the metadata section (64).
    pub metadata_offset: u32,
    /// Size of the metadata section, its 8-byte header included.
    pub metadata_size: u32,
    /// Offset of the vocabulary section.
    pub vocab_offset: u32,
    /// Size of the vocabulary section.
    pub vocab_size: u32,
    /// Offset of the tensor index.
    pub tensor_index_offset: u32,
    /// Number of tensor descriptors.
    pub tensor_index_count: u32,
    /// Offset of the tensor data.
    pub tensor_data_offset: u32,
    /// Bytes from the tensor data offset to the end of the last tensor.
    pub tensor_data_size: u64,
    /// Size of the whole file.
    pub total_file_size: u64,
    /// CRC-32 of bytes 0..56.
    pub header_checksum: u32,
}

impl Header {
    /// Whether all of `bits` are set.
    pub fn has(&self, bits: u32) -> bool {
        self.flags & bits == bits
    }

    /// Offset of the footer.
    pub fn footer_offset(&self) -> u64 {
        self.total_file_size - FOOTER_LEN
    }
}

/// The 16-byte footer's checksums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Footer {
    /// CRC-32 of the tensor data section (0 without checksums).
    pub data_checksum: u32,
    /// CRC-32 of every byte before the footer (0 without checksums).
    pub file_checksum: u32,
}

/// The ids of BERT's five special tokens, as the vocabulary stores them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SpecialTokens {
    /// `[PAD]`.
    pub pad: u32,
    /// `[UNK]`: words the vocabulary cannot spell.
    pub unk: u32,
    /// `[CLS]`: first token of every sequence.
    pub cls: u32,
    /// `[SEP]`: last token of every sequence.
    pub sep: u32,
    /// `[MASK]`.
    pub mask: u32,
}

impl SpecialTokens {
    /// The ids in stored order: pad, unk, cls, sep, mask.
    pub fn all(&self) -> [u32; 5] {
        [self.pad, self.unk, self.cls, self.sep, self.mask]
    }

    /// The field names in stored order.
    pub const NAMES: [&'static str; 5] = ["pad_id", "unk_id", "cls_id", "sep_id", "mask_id"];

    /// The ids of `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]` and `[MASK]` in a
    /// token list (a `vocab.txt`); a token listed twice has its later id, as
    /// when Hugging Face loads the file.
    pub fn find(tokens: &[impl AsRef<str>]) -> Result<SpecialTokens> {
        let find = |name: &str| {
            tokens
                .iter()
                .rposition(|t| t.as_ref() == name)
                .map(|i| i as u32)
                .ok_or_else(|| {
                    Error::Bpe2(Bpe2Error::InvalidVocabulary(format!("no {name} token")))
                })
        };
        Ok(SpecialTokens {
            pad: find("[PAD]")?,
            unk: find("[UNK]")?,
            cls: find("[CLS]")?,
            sep: find("[SEP]")?,
            mask: find("[MASK]")?,
        })
    }
}

/// Where the vocabulary's tokens are.
#[derive(Debug, Clone)]
struct TokenTable {
    /// Absolute offset and length of each token's UTF-8 bytes, by id.
    tokens: Vec<(u32, u16)>,
    specials: SpecialTokens,
}

/// A validated EMBD file over any byte buffer (a mapped file, a `Vec<u8>`).
#[derive(Debug)]
pub struct Embd<B> {
    buf: B,
    header: Header,
    footer: Footer,
    metadata: BTreeMap<String, String>,
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

fn read_header(file: &[u8]) -> Result<Header> {
    let mut r = ByteReader::new(file, 0);
    let magic = r.array::<4>("EMBD magic")?;
    if &magic != MAGIC {
        return Err(Error::Layout(LayoutError::BadMagic {
            expected: "\"EMBD\"",
            found: String::from_utf8_lossy(&magic).escape_debug().to_string(),
        }));
    }
    let version_major = r.u16_le("version_major")?;
    let version_minor = r.u16_le("version_minor")?;
    if version_major != VERSION_MAJOR {
        return Err(Error::Layout(LayoutError::UnsupportedVersion {
            format: "EMBD",
            offset: 4,
            found: u32::from(version_major),
            expected: u32::from(VERSION_MAJOR),
        }));
    }
    let mut u32_field = |what| r.u32_le(what);
    let flags = u32_field("flags")?;
    let metadata_offset = u32_field("metadata_offset")?;
    let metadata_size = u32_field("metadata_size")?;
    let vocab_offset = u32_field("vocab_offset")?;
    let vocab_size = u32_field("vocab_size")?;
    let tensor_index_offset = u32_field("tensor_index_offset")?;
    let tensor_index_count = u32_field("tensor_index_count")?;
    let tensor_data_offset = u32_field("tensor_data_offset")?;
    let tensor_data_size = r.u64_le("tensor_data_size")?;
    let total_file_size = r.u64_le("total_file_size")?;
    let header_checksum = r.u32_le("header_checksum")?;
    let reserved = r.array::<4>("reserved")?;
    let computed = crc32(&file[..HEADER_CRC_SPAN]);
    if computed != header_checksum {
        return Err(Error::Embd(EmbdError::ChecksumMismatch {
            section: "header",
            offset: HEADER_CRC_SPAN as u64,
            stored: header_checksum,
            computed,
        }));
    }
    if let Some(i) = reserved.iter().position(|&b| b != 0) {
        return Err(Error::Layout(LayoutError::NonZeroReserved {
            offset: 60 + i as u64,
            byte: reserved[i],
        }));
    }
    if flags & !flags::KNOWN != 0 {
        return Err(Error::Embd(EmbdError::UnsupportedFlags {
            offset: 8,
            flags,
            reason: format!("bits 0x{:08X} are reserved", flags & !flags::KNOWN),
        }));
    }
    if flags & flags::COMPRESSED != 0 {
        return Err(Error::Embd(EmbdError::UnsupportedFlags {
            offset: 8,
            flags,
            reason: "COMPRESSED is reserved: compressed tensor data is not defined".into(),
        }));
    }
    Ok(Header {
        version_major,
        version_minor,
        flags,
        metadata_offset,
        metadata_size,
        vocab_offset,
        vocab_size,
        tensor_index_offset,
        tensor_index_count,
        tensor_data_offset,
        tensor_data_size,
        total_file_size,
        header_checksum,
    })
}

/// Where the sections lie, checked to follow each other as the layout says
/// and to end exactly at the end of the file.
#[derive(Debug, Clone, Copy)]
struct Sections {
    /// End of the tensor index (descriptors and names).
    index_end: u64,
}

impl Sections {
    fn of(h: &Header, file_len: u64) -> Result<Sections> {
        let place = |section, field_at: u64, expected: u64, found: u32| {
            if u64::from(found) == expected {
                Ok(())
            } else {
                Err(Error::Embd(EmbdError::SectionMisplaced {
                    section,
                    offset: field_at,
                    expected,
                    found: u64::from(found),
                }))
            }
        };
        place("metadata section", 12, HEADER_LEN, h.metadata_offset)?;
        let metadata_end = HEADER_LEN + u64::from(h.metadata_size);
        place("vocabulary section", 20, metadata_end, h.vocab_offset)?;
        if !h.has(flags::VOCAB_EMBEDDED) && h.vocab_size != 0 {
            return Err(Error::Layout(LayoutError::InvalidHeader {
                format: "EMBD",
                offset: 24,
                reason: format!("vocab_size is {} but VOCAB_EMBEDDED is clear", h.vocab_size),
            }));
        }
        let vocab_end = metadata_end + u64::from(h.vocab_size);
        place("tensor index", 28, vocab_end, h.tensor_index_offset)?;
        // The name table's length is only known from the descriptors; the
        // data offset bounds it, and the index reader checks the rest.
        let descriptors_end = vocab_end + u64::from(h.tensor_index_count) * DESCRIPTOR_LEN;
        let data_offset = u64::from(h.tensor_data_offset);
        if data_offset < descriptors_end {
            return Err(Error::Embd(EmbdError::SectionMisplaced {
                section: "tensor data",
                offset: 36,
                expected: descriptors_end,
                found: data_offset,
            }));
        }
        let overflow = || {
            Error::Layout(LayoutError::Overflow {
                what: "tensor_data_offset + tensor_data_size + 16".into(),
                at: At(Some(40)),
            })
        };
        let footer_at = data_offset
            .checked_add(h.tensor_data_size)
            .ok_or_else(overflow)?;
        let expected_total = footer_at.checked_add(FOOTER_LEN).ok_or_else(overflow)?;
        if h.total_file_size != expected_total {
            return Err(Error::Layout(LayoutError::InvalidHeader {
                format: "EMBD",
                offset: 48,
                reason: format!(
                    "total_file_size is {}, but tensor_data_offset + tensor_data_size + 16 = {expected_total}",
                    h.total_file_size
                ),
            }));
        }
        if file_len != h.total_file_size {
            return Err(truncation_error(h, file_len, data_offset, footer_at));
        }
        Ok(Sections {
            index_end: descriptors_end,
        })
    }
}

/// The error for a file whose length is not `total_file_size`, naming the
/// section the file ends in.
fn truncation_error(h: &Header, file_len: u64, data_offset: u64, footer_at: u64) -> Error {
    if file_len > h.total_file_size {
        return Error::Layout(LayoutError::TrailingBytes {
            offset: h.total_file_size,
            count: file_len - h.total_file_size,
        });
    }
    let bounds = [
        ("header", 0, HEADER_LEN),
        ("metadata section", HEADER_LEN, u64::from(h.vocab_offset)),
        (
            "vocabulary section",
            u64::from(h.vocab_offset),
            u64::from(h.tensor_index_offset),
        ),
        (
            "tensor index",
            u64::from(h.tensor_index_offset),
            data_offset,
        ),
        ("tensor data", data_offset, footer_at),
        ("footer", footer_at, h.total_file_size),
    ];
    let (what, start, end) = bounds
        .into_iter()
        .find(|&(_, _, end)| file_len < end)
        .unwrap_or(bounds[5]);
    Error::Layout(LayoutError::Truncated {
        what,
        offset: start,
        needed: end - start,
        available: file_len.saturating_sub(start),
    })
}

fn read_metadata(file: &[u8], h: &Header) -> Result<BTreeMap<String, String>> {
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

fn read_vocabulary(file: &[u8], h: &Header) -> Result<Option<TokenTable>> {
    if !h.has(flags::VOCAB_EMBEDDED) {
        return Ok(None);
    }
    let base = u64::from(h.vocab_offset);
    let section = &file[h.vocab_offset as usize..h.tensor_index_offset as usize];
    let mut r = ByteReader::new(section, base);
    let token_count = r.u32_le("vocabulary token_count")?;
    let total_size = r.u32_le("vocabulary total_size")?;
    let special_at = r.u32_le("vocabulary special_tokens offset")?;
    let expected = 12 + u64::from(total_size);
    if u64::from(special_at) != expected {
        return Err(Error::Embd(EmbdError::SectionMisplaced {
            section: "special token ids",
            offset: base + 8,
            expected: base + expected,
            found: base + u64::from(special_at),
        }));
    }
    if section.len() as u64 != expected + SPECIAL_BLOCK_LEN {
        return Err(Error::Layout(LayoutError::InvalidHeader {
            format: "EMBD",
            offset: 24,
            reason: format!(
                "vocab_size is {}, the vocabulary's own sizes add up to {}",
                section.len(),
                expected + SPECIAL_BLOCK_LEN
            ),
        }));
    }
    let mut entries = ByteReader::new(&section[12..expected as usize], base + 12);
    let mut tokens = Vec::with_capacity(bounded_capacity(
        u64::from(token_count),
        entries.remaining(),
        2,
    ));
    for _ in 0..token_count {
        let len = entries.u16_le("token_length")?;
        let start = entries.offset();
        entries.str(u64::from(len), "token")?;
        // The section lies below 4 GiB: its offsets are u32 in the header.
        tokens.push((start as u32, len));
    }
    if entries.remaining() != 0 {
        return Err(Error::Layout(LayoutError::InvalidHeader {
            format: "EMBD",
            offset: entries.offset(),
            reason: format!(
                "{} bytes after the {token_count} tokens, before the special ids",
                entries.remaining()
            ),
        }));
    }
    let mut specials = ByteReader::new(&section[expected as usize..], base + expected);
    let mut ids = [0u32; 5];
    for (id, name) in ids.iter_mut().zip(SpecialTokens::NAMES) {
        let at = specials.offset();
        *id = specials.u32_le(name)?;
        if *id >= token_count {
            return Err(Error::Layout(LayoutError::InvalidHeader {
                format: "EMBD",
                offset: at,
                reason: format!("{name} {id} is outside the {token_count}-token vocabulary"),
            }));
        }
    }
    let [pad, unk, cls, sep, mask] = ids;
    Ok(Some(TokenTable {
        tokens,
        specials: SpecialTokens {
            pad,
            unk,
            cls,
            sep,
            mask,
        },
    }))
}

/// The required keys are present, numeric ones are positive integers, and
/// `vocab_size` is the vocabulary's token count.
fn check_metadata(metadata: &BTreeMap<String, String>, vocab: Option<&TokenTable>) -> Result<()> {
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

/// One parsed tensor descriptor.
struct Descriptor<'a> {
    at: u64,
    name: &'a str,
    dtype: DType,
    shape: Vec<usize>,
    data_offset: u64,
}

fn read_tensor_index(
    file: &[u8],
    h: &Header,
    sections: &Sections,
) -> Result<(TensorTable, Vec<u64>)> {
    let index_start = u64::from(h.tensor_index_offset);
    let data_offset = u64::from(h.tensor_data_offset);
    let count = h.tensor_index_count as usize;
    let mut r = ByteReader::new(
        &file[index_start as usize..data_offset as usize],
        index_start,
    );
    // The descriptors fit before the data offset (checked by `Sections`).
    let descriptor_bytes = r.bytes(sections.index_end - index_start, "tensor descriptors")?;
    let mut names = r.clone();
    let mut descriptors = Vec::with_capacity(count);
    for (i, raw) in descriptor_bytes
        .chunks_exact(DESCRIPTOR_LEN as usize)
        .enumerate()
    {
        let at = index_start + i as u64 * DESCRIPTOR_LEN;
        descriptors.push(read_descriptor(raw, at, &mut names)?);
    }
    let index_end = names.offset();
    let alignment = if h.has(flags::TENSORS_ALIGNED) {
        ALIGNMENT
    } else {
        1
    };
    let expected_data_offset = index_end.next_multiple_of(alignment);
    if data_offset != expected_data_offset {
        return Err(Error::Embd(EmbdError::SectionMisplaced {
            section: "tensor data",
            offset: 36,
            expected: expected_data_offset,
            found: data_offset,
        }));
    }
    check_zero(names.rest(), index_end)?;
    place_tensors(file, h, descriptors, alignment)
}

fn read_descriptor<'a>(raw: &[u8], at: u64, names: &mut ByteReader<'a>) -> Result<Descriptor<'a>> {
    let mut d = ByteReader::new(raw, at);
    let name_hash = d.u32_le("name_hash")?;
    let dtype_code = d.u8("dtype")?;
    let ndim = d.u8("ndim")?;
    let name_len = d.u16_le("name_length")?;
    let mut dims = [0u32; 4];
    for dim in &mut dims {
        *dim = d.u32_le("shape")?;
    }
    let data_offset = d.u64_le("data_offset")?;
    let name = names.str(u64::from(name_len), "tensor name")?;
    let dtype = DType::from_embd_code(dtype_code).ok_or_else(|| {
        Error::Layout(LayoutError::UnknownDtype {
            offset: at + 4,
            found: dtype_code.to_string(),
        })
    })?;
    if !(1..=4).contains(&ndim) {
        return Err(Error::Layout(LayoutError::InvalidHeader {
            format: "EMBD",
            offset: at + 5,
            reason: format!("tensor `{name}` has ndim {ndim}; it must be 1 to 4"),
        }));
    }
    if let Some(extra) = dims[usize::from(ndim)..].iter().position(|&d| d != 0) {
        return Err(Error::Layout(LayoutError::InvalidHeader {
            format: "EMBD",
            offset: at + 8 + 4 * (u64::from(ndim) + extra as u64),
            reason: format!(
                "tensor `{name}` has ndim {ndim} but a non-zero shape[{}]",
                usize::from(ndim) + extra
            ),
        }));
    }
    let computed = fnv1a32(name.as_bytes());
    if computed != name_hash {
        return Err(Error::Embd(EmbdError::NameHashMismatch {
            name: name.to_owned(),
            offset: at,
            stored: name_hash,
            computed,
        }));
    }
    Ok(Descriptor {
        at,
        name,
        dtype,
        shape: dims[..usize::from(ndim)]
            .iter()
            .map(|&d| d as usize)
            .collect(),
        data_offset,
    })
}

/// Checks the tensors' placement (aligned, inside the data section, no
/// overlap, zero padding between them) and builds the table in data order.
fn place_tensors(
    file: &[u8],
    h: &Header,
    mut descriptors: Vec<Descriptor<'_>>,
    alignment: u64,
) -> Result<(TensorTable, Vec<u64>)> {
    descriptors.sort_by_key(|d| (d.data_offset, d.at));
    let data_offset = u64::from(h.tensor_data_offset);
    let name_bytes = descriptors.iter().map(|d| d.name.len()).sum();
    let mut builder = TableBuilder::aligned(descriptors.len(), name_bytes, alignment);
    let mut offsets = Vec::with_capacity(descriptors.len());
    let mut previous: Option<&str> = None;
    for d in &descriptors {
        if d.data_offset % alignment != 0 {
            return Err(Error::Embd(EmbdError::MisalignedTensor {
                name: d.name.to_owned(),
                offset: d.at,
                data_offset: d.data_offset,
                alignment,
            }));
        }
        if let Some(first) = previous.filter(|_| d.data_offset < builder.end()) {
            return Err(Error::Embd(EmbdError::OverlappingTensors {
                first: first.to_owned(),
                second: d.name.to_owned(),
                offset: d.at,
            }));
        }
        let bytes = crate::tensor::byte_len(d.dtype, &d.shape).ok_or_else(|| {
            Error::Layout(LayoutError::Overflow {
                what: format!("byte size of tensor `{}`", d.name),
                at: At(Some(d.at)),
            })
        })?;
        let end = d
            .data_offset
            .checked_add(bytes)
            .filter(|&end| end <= h.tensor_data_size)
            .ok_or_else(|| {
                Error::Layout(LayoutError::DataTruncated {
                    offset: data_offset,
                    expected: d.data_offset.saturating_add(bytes),
                    found: h.tensor_data_size,
                })
            })?;
        let gap_start = builder.end();
        if d.data_offset > gap_start && d.data_offset == builder.next_start() {
            let gap =
                &file[(data_offset + gap_start) as usize..(data_offset + d.data_offset) as usize];
            check_zero(gap, data_offset + gap_start)?;
        }
        builder.push(d.name, d.dtype, &d.shape, (d.data_offset, end), d.at)?;
        offsets.push(d.at);
        previous = Some(d.name);
    }
    Ok((builder.finish(data_offset, h.tensor_data_size)?, offsets))
}

/// Padding must be zero bytes.
fn check_zero(padding: &[u8], offset: u64) -> Result<()> {
    match padding.iter().position(|&b| b != 0) {
        None => Ok(()),
        Some(i) => Err(Error::Layout(LayoutError::BadPadding {
            offset: offset + i as u64,
            byte: padding[i],
            expected: 0,
        })),
    }
}

fn read_footer(file: &[u8], h: &Header) -> Result<Footer> {
    let at = h.footer_offset();
    let mut r = ByteReader::new(&file[at as usize..], at);
    let data_checksum = r.u32_le("data_checksum")?;
    let file_checksum = r.u32_le("file_checksum")?;
    let magic = r.array::<4>("end magic")?;
    if &magic != END_MAGIC {
        return Err(Error::Layout(LayoutError::InvalidHeader {
            format: "EMBD",
            offset: at + 8,
            reason: format!(
                "end magic is {:?}, expected \"DBME\"",
                String::from_utf8_lossy(&magic)
            ),
        }));
    }
    let reserved = r.array::<4>("footer reserved")?;
    if let Some(i) = reserved.iter().position(|&b| b != 0) {
        return Err(Error::Layout(LayoutError::NonZeroReserved {
            offset: at + 12 + i as u64,
            byte: reserved[i],
        }));
    }
    if !h.has(flags::CHECKSUM_ENABLED) && (data_checksum != 0 || file_checksum != 0) {
        return Err(Error::Layout(LayoutError::InvalidHeader {
            format: "EMBD",
            offset: at,
            reason: "CHECKSUM_ENABLED is clear but the footer holds checksums".into(),
        }));
    }
    Ok(Footer {
        data_checksum,
        file_checksum,
    })
}
