//! The fixed parts: the 64-byte header (with its CRC), the sections it
//! places, and the 16-byte footer.

use crate::error::At;
use crate::io::bytes::ByteReader;
use crate::io::checksum::crc32;
use crate::{EmbdError, Error, LayoutError, Result};

use crate::embd::{
    DESCRIPTOR_LEN, END_MAGIC, FOOTER_LEN, HEADER_CRC_SPAN, HEADER_LEN, MAGIC, VERSION_MAJOR,
};

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

pub(in crate::embd) fn read_header(file: &[u8]) -> Result<Header> {
    let mut r = ByteReader::new(file, 0);
    let magic = r.array::<4>("EMBD magic")?;
    if &magic != MAGIC {
        return Err(Error::Layout(LayoutError::BadMagic {
            expected: "\"EMBD\"",
            found: format!("\"{}\"", magic.escape_ascii()),
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
pub(in crate::embd) struct Sections {
    /// End of the tensor index (descriptors and names).
    pub(in crate::embd) index_end: u64,
}

impl Sections {
    /// Checks that the sections follow each other as the layout says and
    /// end exactly at the end of a `file_len`-byte file.
    pub(in crate::embd) fn of(h: &Header, file_len: u64) -> Result<Sections> {
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
pub(in crate::embd) fn truncation_error(
    h: &Header,
    file_len: u64,
    data_offset: u64,
    footer_at: u64,
) -> Error {
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

pub(in crate::embd) fn read_footer(file: &[u8], h: &Header) -> Result<Footer> {
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
