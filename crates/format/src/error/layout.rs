//! Rules of the binary layout shared by the readers (sizes, offsets, headers, dtypes, names).

use super::At;

/// Errors of the rules of the binary layout shared by the readers (sizes, offsets, headers, dtypes, names).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// A count in the file is above the format's documented cap.
    #[error("{what} {count} at byte {offset} exceeds the limit of {limit}")]
    CountTooLarge {
        /// The field.
        what: &'static str,
        /// Absolute byte offset of the field.
        offset: u64,
        /// The value found.
        count: u64,
        /// The documented cap.
        limit: u64,
    },
    /// The input ended before a field could be read.
    #[error("truncated {what} at byte {offset}: needs {needed} bytes, {available} left")]
    Truncated {
        /// The field being read.
        what: &'static str,
        /// Absolute byte offset of the field.
        offset: u64,
        /// Bytes the field needs.
        needed: u64,
        /// Bytes that remained.
        available: u64,
    },
    /// The declared header size is above the format's limit.
    #[error("header size {size} at byte 0 exceeds the limit of {limit} bytes")]
    HeaderTooLarge {
        /// The declared (or, when writing, the encoded) header size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The declared header runs past the end of the file.
    #[error(
        "header of {size} bytes declared at byte 0 runs past the end of the {file_len}-byte file"
    )]
    HeaderPastEnd {
        /// Declared header size.
        size: u64,
        /// Actual file size.
        file_len: u64,
    },
    /// A dtype code or name this format does not define.
    #[error("unknown dtype {found} at byte {offset}")]
    UnknownDtype {
        /// Offset of the dtype field.
        offset: u64,
        /// The code or name found.
        found: String,
    },
    /// A string field is not valid UTF-8.
    #[error("{what} at byte {offset} is not valid UTF-8")]
    InvalidUtf8 {
        /// The field.
        what: &'static str,
        /// Offset of the string's bytes.
        offset: u64,
    },
    /// Two tensors share a name.
    #[error("duplicate tensor name `{name}`{at}")]
    DuplicateTensorName {
        /// The repeated name.
        name: String,
        /// Where the second occurrence starts, when reading.
        at: At,
    },
    /// Two metadata entries share a key.
    #[error("duplicate metadata key `{key}`{at}")]
    DuplicateMetadataKey {
        /// The repeated key.
        key: String,
        /// Where the second occurrence starts.
        at: At,
    },
    /// A tensor's data range does not start where the previous one ended.
    #[error(
        "tensor `{name}` (header byte {offset}): data range {start}..{end} should start at {expected} (ranges must follow each other from 0, with no gap beyond alignment padding)"
    )]
    NonContiguousData {
        /// Tensor name.
        name: String,
        /// Offset of the tensor's entry in the file.
        offset: u64,
        /// Declared start.
        start: u64,
        /// Declared end.
        end: u64,
        /// Where it should start.
        expected: u64,
    },
    /// A tensor's data range ends before it starts.
    #[error(
        "tensor `{name}` (header byte {offset}): data range {start}..{end} ends before it starts"
    )]
    ReversedDataRange {
        /// Tensor name.
        name: String,
        /// Offset of the tensor's entry in the file.
        offset: u64,
        /// Declared start.
        start: u64,
        /// Declared end.
        end: u64,
    },
    /// The byte count of a tensor disagrees with dtype × shape.
    #[error("tensor `{name}`{at}: {dtype} {shape:?} needs {expected} bytes, found {found}")]
    ByteCountMismatch {
        /// Tensor name.
        name: String,
        /// Where its entry starts, when reading.
        at: At,
        /// Its dtype.
        dtype: crate::DType,
        /// Its shape.
        shape: Vec<usize>,
        /// Bytes that dtype × shape needs.
        expected: u64,
        /// Bytes it has.
        found: u64,
    },
    /// Arithmetic on sizes or offsets from the file overflows 64 bits.
    #[error("{what} overflows 64 bits{at}")]
    Overflow {
        /// The quantity being computed.
        what: String,
        /// Where the inputs were read.
        at: At,
    },
    /// Bytes other than the padding follow the encoded header.
    #[error(
        "{count} unexpected bytes after the header payload at byte {offset}, before the padding"
    )]
    JunkAfterHeader {
        /// Offset of the first unexpected byte.
        offset: u64,
        /// How many there are.
        count: u64,
    },
    /// The header is padded with fewer bytes than the alignment needs.
    #[error(
        "header ends at byte {offset}, which is not 8-byte aligned: padding must be {expected} bytes, found {found}"
    )]
    ShortPadding {
        /// Where the header ends.
        offset: u64,
        /// Padding bytes the alignment needs.
        expected: u64,
        /// Padding bytes present.
        found: u64,
    },
    /// A padding byte is not the expected filler.
    #[error("padding byte 0x{byte:02X} at byte {offset} (expected 0x{expected:02X})")]
    BadPadding {
        /// Offset of the byte.
        offset: u64,
        /// The byte found.
        byte: u8,
        /// The filler the format uses.
        expected: u8,
    },
    /// The file is shorter than its header says.
    #[error(
        "data section truncated: the header describes {expected} bytes of data starting at byte {offset}, the file has {found}"
    )]
    DataTruncated {
        /// Where the data section starts.
        offset: u64,
        /// Bytes the header describes.
        expected: u64,
        /// Bytes present.
        found: u64,
    },
    /// The file continues past its last described byte.
    #[error(
        "{count} trailing bytes at byte {offset}, past the end of the data the header describes"
    )]
    TrailingBytes {
        /// Offset of the first trailing byte.
        offset: u64,
        /// How many there are.
        count: u64,
    },
    /// A structurally invalid header (JSON formats, missing fields, wrong types).
    #[error("invalid {format} header at byte {offset}: {reason}")]
    InvalidHeader {
        /// The format.
        format: &'static str,
        /// Offset of the header or of the offending part.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A dtype that the target format cannot represent.
    #[error("tensor `{name}`: dtype {dtype} cannot be stored in {format}")]
    UnsupportedDtype {
        /// Tensor name.
        name: String,
        /// The dtype.
        dtype: String,
        /// The target format.
        format: &'static str,
    },
    /// The file does not start with the format's magic bytes.
    #[error("bad magic at byte 0: expected {expected}, found {found}")]
    BadMagic {
        /// The magic the format uses.
        expected: &'static str,
        /// What the file has (escaped).
        found: String,
    },
    /// A version this reader does not support.
    #[error("{format} version {found} at byte {offset} is not supported (expected {expected})")]
    UnsupportedVersion {
        /// The format.
        format: &'static str,
        /// Offset of the version field.
        offset: u64,
        /// Version found.
        found: u32,
        /// Version supported.
        expected: u32,
    },
    /// The file size disagrees with what the header implies.
    #[error(
        "the header implies a file of {expected} bytes, the file has {found} ({})",
        if found < expected { "truncated" } else { "bytes past the end" }
    )]
    FileSizeMismatch {
        /// Size the header implies.
        expected: u64,
        /// Actual size.
        found: u64,
    },
    /// Reserved bytes that are not zero.
    #[error("reserved byte at {offset} is 0x{byte:02X}, must be 0")]
    NonZeroReserved {
        /// Offset of the byte.
        offset: u64,
        /// Its value.
        byte: u8,
    },
    /// A tensor name the target format reserves.
    #[error("tensor name `{name}` is reserved in {format}")]
    ReservedName {
        /// The name.
        name: String,
        /// The format.
        format: &'static str,
    },
}

impl LayoutError {
    /// The byte offset the error names, when it has one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            LayoutError::CountTooLarge { offset, .. } => Some(*offset),
            LayoutError::Truncated { offset, .. } => Some(*offset),
            LayoutError::UnknownDtype { offset, .. } => Some(*offset),
            LayoutError::InvalidUtf8 { offset, .. } => Some(*offset),
            LayoutError::DuplicateTensorName { at, .. } => at.0,
            LayoutError::DuplicateMetadataKey { at, .. } => at.0,
            LayoutError::NonContiguousData { offset, .. } => Some(*offset),
            LayoutError::ReversedDataRange { offset, .. } => Some(*offset),
            LayoutError::ByteCountMismatch { at, .. } => at.0,
            LayoutError::Overflow { at, .. } => at.0,
            LayoutError::JunkAfterHeader { offset, .. } => Some(*offset),
            LayoutError::ShortPadding { offset, .. } => Some(*offset),
            LayoutError::BadPadding { offset, .. } => Some(*offset),
            LayoutError::DataTruncated { offset, .. } => Some(*offset),
            LayoutError::TrailingBytes { offset, .. } => Some(*offset),
            LayoutError::InvalidHeader { offset, .. } => Some(*offset),
            LayoutError::UnsupportedVersion { offset, .. } => Some(*offset),
            LayoutError::NonZeroReserved { offset, .. } => Some(*offset),
            LayoutError::HeaderTooLarge { .. }
            | LayoutError::HeaderPastEnd { .. }
            | LayoutError::BadMagic { .. } => Some(0),
            _ => None,
        }
    }
}
