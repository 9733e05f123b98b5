//! EMBD section, flag, checksum and tensor-placement rules.

/// Errors of the EMBD section, flag, checksum and tensor-placement rules.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbdError {
    /// Flag bits this reader does not know, or that it cannot handle.
    #[error("flags 0x{flags:08X} at byte {offset}: {reason}")]
    UnsupportedFlags {
        /// Offset of the flags field.
        offset: u64,
        /// The flags.
        flags: u32,
        /// Which bits are the problem.
        reason: String,
    },
    /// A stored CRC-32 that does not match the bytes it covers.
    #[error(
        "{section} checksum mismatch: stored 0x{stored:08X} at byte {offset}, computed 0x{computed:08X} (the {section} is corrupt)"
    )]
    ChecksumMismatch {
        /// The section the checksum covers.
        section: &'static str,
        /// Offset of the stored checksum.
        offset: u64,
        /// The stored value.
        stored: u32,
        /// The value computed over the bytes.
        computed: u32,
    },
    /// A section that does not start where the layout puts it.
    #[error(
        "{section} at byte {found} (header field at byte {offset}): it must start at byte {expected}"
    )]
    SectionMisplaced {
        /// The section.
        section: &'static str,
        /// Offset of the header field that places it.
        offset: u64,
        /// Where the layout puts it.
        expected: u64,
        /// Where the header puts it.
        found: u64,
    },
    /// Two tensors' data ranges overlap.
    #[error("tensor `{second}` (descriptor at byte {offset}) overlaps tensor `{first}`")]
    OverlappingTensors {
        /// The tensor that starts first.
        first: String,
        /// The tensor that starts inside it.
        second: String,
        /// Offset of the second tensor's descriptor.
        offset: u64,
    },
    /// A tensor whose data does not start on the alignment the flags promise.
    #[error(
        "tensor `{name}` (descriptor at byte {offset}): data offset {data_offset} is not a multiple of {alignment}"
    )]
    MisalignedTensor {
        /// Tensor name.
        name: String,
        /// Offset of its descriptor.
        offset: u64,
        /// Its data offset.
        data_offset: u64,
        /// The alignment required.
        alignment: u64,
    },
    /// A stored name hash that is not the hash of the stored name.
    #[error(
        "tensor `{name}` (descriptor at byte {offset}): stored name hash 0x{stored:08X}, FNV-1a of the name is 0x{computed:08X}"
    )]
    NameHashMismatch {
        /// Tensor name.
        name: String,
        /// Offset of its descriptor.
        offset: u64,
        /// The stored hash.
        stored: u32,
        /// The hash of the name.
        computed: u32,
    },
}

impl EmbdError {
    /// The byte offset the error names, when it has one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            EmbdError::UnsupportedFlags { offset, .. } => Some(*offset),
            EmbdError::ChecksumMismatch { offset, .. } => Some(*offset),
            EmbdError::SectionMisplaced { offset, .. } => Some(*offset),
            EmbdError::OverlappingTensors { offset, .. } => Some(*offset),
            EmbdError::MisalignedTensor { offset, .. } => Some(*offset),
            EmbdError::NameHashMismatch { offset, .. } => Some(*offset),
        }
    }
}
