//! The error types of this crate.

use std::path::PathBuf;

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
    /// An int8 kernel asked for that this CPU cannot run.
    #[error("the {0} kernel needs CPU features this machine lacks")]
    KernelUnavailable(&'static str),
    /// The input has no tokens.
    #[error("the input has no tokens")]
    EmptyInput,
    /// A result that is NaN or infinite: the model's weights (see
    /// `modelbin verify`) or its configuration make it so. Never returned
    /// as a value.
    #[error("{what} came out NaN or infinite; check the model with `modelbin verify`")]
    NonFinite {
        /// The result: "the embedding", "the logits", ...
        what: &'static str,
    },
    /// A sampling parameter out of range.
    #[error("invalid sampling parameter: {0}")]
    BadSampling(String),
    /// A training run that cannot start or continue.
    #[error(transparent)]
    Training(#[from] TrainingError),
}

/// Why a training run cannot start or continue.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrainingError {
    /// The corpus holds no bytes.
    #[error("the corpus is empty")]
    EmptyCorpus,
    /// A corpus file cannot be read.
    #[error("{path}: {source}")]
    ReadCorpus {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The validation fraction is outside [0, 1).
    #[error("the validation fraction {0} must be in [0, 1)")]
    ValidationFraction(f64),
    /// A part of the corpus is too short for what it must hold.
    #[error("the {part} part of the corpus has {bytes} bytes; it needs at least {needed}")]
    CorpusTooShort {
        /// `training` or `validation`.
        part: &'static str,
        /// Its length.
        bytes: usize,
        /// The least it needs (one sequence plus its target for training,
        /// two bytes for validation).
        needed: usize,
    },
    /// A batch of no sequences.
    #[error("the batch size must be at least 1")]
    EmptyBatch,
    /// A checkpoint of another model configuration than the one asked for.
    #[error(
        "{path}: the checkpoint is a different model ({saved}) from the one asked for ({requested})"
    )]
    OtherConfiguration {
        /// The checkpoint.
        path: PathBuf,
        /// Its configuration.
        saved: String,
        /// The one asked for.
        requested: String,
    },
    /// A checkpoint trained with another seed (batches would differ).
    #[error("{path}: the checkpoint was trained with seed {saved}, not {requested}")]
    OtherSeed {
        /// The checkpoint.
        path: PathBuf,
        /// Its seed.
        saved: u64,
        /// The one asked for.
        requested: u64,
    },
    /// The optimiser state beside a checkpoint cannot be used.
    #[error("{path}: {reason}")]
    OptimizerState {
        /// The sidecar file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

/// `values` unchanged when every one is finite, else [`Error::NonFinite`]
/// naming `what`.
pub(crate) fn finite<T: AsRef<[f32]>>(values: T, what: &'static str) -> Result<T> {
    if values.as_ref().iter().all(|v| v.is_finite()) {
        Ok(values)
    } else {
        Err(Error::NonFinite { what })
    }
}
