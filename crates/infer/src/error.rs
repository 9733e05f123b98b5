//! The error type of this crate.

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong running a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The weight file is invalid.
    #[error(transparent)]
    Format(#[from] modelbin_format::Error),
    /// The vocabulary cannot make a tokenizer.
    #[error(transparent)]
    Tokenize(#[from] modelbin_tokenize::Error),
    /// A token id outside the vocabulary.
    #[error("token id {id} at position {position} is not below vocab_size {vocab_size}")]
    TokenOutOfRange {
        /// The id.
        id: u32,
        /// Its position in the input.
        position: usize,
        /// The model's vocabulary size.
        vocab_size: u32,
    },
    /// More tokens than the model's context.
    #[error("{len} tokens do not fit the model's max_seq_len of {max}")]
    SequenceTooLong {
        /// Tokens given (or reached).
        len: usize,
        /// The model's limit.
        max: u32,
    },
    /// No tokens to run.
    #[error("the input has no tokens")]
    EmptyInput,
    /// A sampling parameter out of range.
    #[error("invalid sampling parameter: {0}")]
    BadSampling(String),
    /// A training run that cannot start or continue.
    #[error("{0}")]
    BadTraining(String),
}
