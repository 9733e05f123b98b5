//! BPE2 and `.tiktoken` vocabulary rules.

/// Errors of the BPE2 and `.tiktoken` vocabulary rules.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Bpe2Error {
    /// A vocabulary with no tokens.
    #[error("the vocabulary has no tokens (token_count 0 at byte {offset})")]
    EmptyVocabulary {
        /// Offset of the count field.
        offset: u64,
    },
    /// A token's bytes lie outside the token blob.
    #[error(
        "token {rank} (table entry at byte {offset}): bytes {start}..{end} lie outside the {blob_size}-byte blob"
    )]
    TokenOutsideBlob {
        /// The token's rank.
        rank: u32,
        /// Offset of its table entry.
        offset: u64,
        /// Start within the blob.
        start: u64,
        /// End within the blob.
        end: u64,
        /// Size of the blob.
        blob_size: u64,
    },
    /// A token whose bytes start before the previous token's end: token
    /// bytes lie in the blob in rank order and never share bytes.
    #[error(
        "token {rank} (table entry at byte {offset}) starts at blob byte {start}, before the previous token's end at {previous_end}: token bytes must not overlap and must be in rank order"
    )]
    OverlappingToken {
        /// The token's rank.
        rank: u32,
        /// Offset of its table entry.
        offset: u64,
        /// Its start within the blob.
        start: u64,
        /// Where the previous non-empty token ends.
        previous_end: u64,
    },
    /// A token longer than the declared maximum.
    #[error("token {rank} (table entry at byte {offset}) is {len} bytes, over max_token_len {max}")]
    TokenTooLong {
        /// The token's rank.
        rank: u32,
        /// Offset of its table entry.
        offset: u64,
        /// Its length.
        len: u32,
        /// The declared maximum.
        max: u32,
    },
    /// The declared maximum token length is not the longest token's length.
    #[error("max_token_len at byte 12 says {declared}, the longest token is {actual} bytes")]
    MaxTokenLenMismatch {
        /// Declared in the header.
        declared: u32,
        /// Actual longest token.
        actual: u32,
    },
    /// An empty table entry whose offset is not 0.
    #[error(
        "token {rank} (table entry at byte {offset}) is empty but has offset {start} (an absent rank is (0, 0))"
    )]
    NonCanonicalEmptyToken {
        /// The rank.
        rank: u32,
        /// Offset of the table entry.
        offset: u64,
        /// The stray offset.
        start: u32,
    },
    /// Two ranks with the same bytes.
    #[error("token {rank} (table entry at byte {offset}) has the same bytes as token {earlier}")]
    DuplicateToken {
        /// The later rank.
        rank: u32,
        /// Offset of its table entry.
        offset: u64,
        /// The earlier rank with those bytes.
        earlier: u32,
    },
    /// A malformed line of a `.tiktoken` file.
    #[error(".tiktoken line {line} (byte {offset}): {reason}")]
    InvalidTiktokenLine {
        /// 1-based line number.
        line: usize,
        /// Offset of the line's start.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// Tokens that cannot make a vocabulary (duplicate ranks, too sparse ranks).
    #[error("invalid vocabulary: {0}")]
    InvalidVocabulary(String),
}

impl Bpe2Error {
    /// The byte offset the error names, when it has one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Bpe2Error::EmptyVocabulary { offset, .. } => Some(*offset),
            Bpe2Error::TokenOutsideBlob { offset, .. } => Some(*offset),
            Bpe2Error::OverlappingToken { offset, .. } => Some(*offset),
            Bpe2Error::TokenTooLong { offset, .. } => Some(*offset),
            Bpe2Error::NonCanonicalEmptyToken { offset, .. } => Some(*offset),
            Bpe2Error::DuplicateToken { offset, .. } => Some(*offset),
            Bpe2Error::InvalidTiktokenLine { offset, .. } => Some(*offset),
            Bpe2Error::MaxTokenLenMismatch { .. } => Some(12),
            _ => None,
        }
    }
}
