//! TLLM header and tensor-prefix rules.

/// Errors of the TLLM header and tensor-prefix rules.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TllmError {
    /// A TLLM file whose magic is written big-endian (ASCII "TLLM").
    #[error(
        "bad magic at byte 0: the bytes spell \"TLLM\", but the magic is the u32 0x544C4C4D written little-endian, i.e. bytes 4D 4C 4C 54 (\"MLLT\"); this file was written with the wrong byte order"
    )]
    TllmMagicByteOrder,
    /// A model configuration value out of range.
    #[error("invalid configuration: {field} = {value} at byte {offset}: {reason}")]
    InvalidConfig {
        /// The field.
        field: &'static str,
        /// Its value.
        value: String,
        /// Offset of the field.
        offset: u64,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// A tensor's stored dimensions disagree with the configuration.
    #[error(
        "tensor `{tensor}`: dimensions at byte {offset} are {found}, the configuration needs {expected}"
    )]
    DimensionMismatch {
        /// The tensor.
        tensor: String,
        /// Offset of its dimension prefix.
        offset: u64,
        /// What the configuration needs.
        expected: String,
        /// What the file says.
        found: String,
    },
}

impl TllmError {
    /// The byte offset the error names, when it has one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            TllmError::InvalidConfig { offset, .. } => Some(*offset),
            TllmError::DimensionMismatch { offset, .. } => Some(*offset),
            TllmError::TllmMagicByteOrder => Some(0),
        }
    }
}
