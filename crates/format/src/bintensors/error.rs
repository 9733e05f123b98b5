//! BinTensors encoding rules (varints and option tags).

/// Errors of the BinTensors encoding rules (varints and option tags).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BintensorsError {
    /// A varint starts with a tag byte that no encoding uses (0xFE, 0xFF).
    #[error("invalid varint tag 0x{tag:02X} at byte {offset}")]
    InvalidVarintTag {
        /// Offset of the tag byte.
        offset: u64,
        /// The tag byte.
        tag: u8,
    },
    /// A varint uses more bytes than its value needs.
    #[error(
        "non-canonical varint at byte {offset}: {value} is encoded in a longer form than needed"
    )]
    NonCanonicalVarint {
        /// Offset of the varint.
        offset: u64,
        /// The decoded value.
        value: u64,
    },
    /// An `Option` tag other than 0 or 1.
    #[error("invalid option tag {tag} at byte {offset} (expected 0 or 1)")]
    InvalidOptionTag {
        /// Offset of the tag.
        offset: u64,
        /// The tag found.
        tag: u8,
    },
}

impl BintensorsError {
    /// The byte offset the error names, when it has one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            BintensorsError::InvalidVarintTag { offset, .. } => Some(*offset),
            BintensorsError::NonCanonicalVarint { offset, .. } => Some(*offset),
            BintensorsError::InvalidOptionTag { offset, .. } => Some(*offset),
        }
    }
}
