//! The crate's error: the engines' own failures, and each area's error
//! (`lm/error.rs`, `sae/error.rs`, `record/error.rs`, `vit/error.rs`,
//! `tllm/train/error.rs`) as a variant.

use std::path::PathBuf;

use crate::lm::error::LmError;
use crate::record::error::RecordError;
use crate::sae::error::SaeError;
use crate::tllm::train::error::TrainingError;
use crate::vit::error::ImageError;

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
    /// A kernel tier asked for that this CPU cannot run.
    #[error("the {0} kernel needs CPU features this machine lacks")]
    KernelUnavailable(&'static str),
    /// `MODELBIN_INT8_TIER` names no int8 kernel.
    #[error(
        "MODELBIN_INT8_TIER={0:?} names no int8 kernel (portable, avx2, avx-vnni or avx512-vnni)"
    )]
    UnknownKernel(String),
    /// A kernel tier name that names none.
    #[error("{name:?} names no kernel tier ({known})")]
    UnknownTier {
        /// The name given.
        name: String,
        /// The names there are.
        known: &'static str,
    },
    /// Kernel tiers set after the process chose others: the tiers are
    /// fixed at first use.
    #[error(
        "the kernel tiers are chosen already (f32 {f32}, int8 {int8}); set them before the first model loads"
    )]
    KernelsAlreadyChosen {
        /// The f32 tier in use.
        f32: &'static str,
        /// The int8 tier in use.
        int8: &'static str,
    },
    /// The input has no tokens.
    #[error("the input has no tokens")]
    EmptyInput,
    /// Images of a size the vision transformer cannot take.
    #[error("images of {height}×{width} pixels: {reason}")]
    ImageSize {
        /// Their height in pixels.
        height: usize,
        /// Their width in pixels.
        width: usize,
        /// Why the model cannot take them.
        reason: String,
    },
    /// A result that is NaN or infinite: the model's weights (see
    /// `modelbin verify`) or its configuration make it so. Never returned
    /// as a value.
    #[error("{what} came out NaN or infinite; verifying the model file checks its weights")]
    NonFinite {
        /// The result: "the embedding", "the logits", ...
        what: &'static str,
    },
    /// A saved line index (`modelbin search --index`) whose embedding of a
    /// line holds a NaN or an infinity: it would rank first (NaN) or never
    /// (infinity), so the index is refused when loaded.
    #[error(
        "{path}: row {row} of the index ({file}:{line}) holds {value}; embeddings must be finite: build the index again"
    )]
    NonFiniteIndexRow {
        /// The index file.
        path: PathBuf,
        /// The row (0-based, in index order).
        row: usize,
        /// The file the row's line comes from.
        file: PathBuf,
        /// The line number (1-based).
        line: u32,
        /// The first bad value.
        value: f32,
    },
    /// The system refused to start a pool's worker threads.
    #[error("cannot start the worker threads: {0}")]
    ThreadPool(String),
    /// A sampling parameter out of range.
    #[error("invalid sampling parameter: {0}")]
    BadSampling(String),
    /// Search chunks that cannot be cut: of no tokens, or overlapping by
    /// a whole chunk.
    #[error(
        "chunks of {tokens} tokens overlapping by {overlap}: a chunk needs at least one token and more than its overlap"
    )]
    BadChunks {
        /// The tokens asked per chunk.
        tokens: usize,
        /// The overlap asked.
        overlap: usize,
    },
    /// A training run that cannot start or continue.
    #[error(transparent)]
    Training(#[from] TrainingError),
    /// A sparse-autoencoder run that cannot start or continue.
    #[error(transparent)]
    Sae(#[from] SaeError),
    /// A recording that cannot start.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// Work that needs more memory than this process may take.
    #[error(transparent)]
    Memory(#[from] modelbin_format::io::memory::Shortfall),
    /// An image that cannot be read, or an image processor's configuration
    /// that cannot be followed.
    #[error(transparent)]
    Image(#[from] ImageError),
    /// A decoder language model that cannot be loaded or run.
    #[error(transparent)]
    Lm(#[from] LmError),
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
