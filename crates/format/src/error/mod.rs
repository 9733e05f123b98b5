//! The error type of this crate: file and API errors at the top, the
//! rules of each format grouped in an enum of their own. Each format's enum
//! lives in its folder's `error.rs` ([`crate::EmbdError`], …) and the model
//! rules in [`crate::model`]; [`LayoutError`], the binary-layout rules
//! every reader shares, lives here.

use std::path::PathBuf;

mod layout;

pub use layout::LayoutError;

use crate::{BintensorsError, Bpe2Error, EmbdError, ModelError, SaevError, TllmError};

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while reading, validating or writing a file.
///
/// Each validation rule has its own variant so that callers (and tests) can
/// tell them apart; the message names the byte offset where it applies.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O failure.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A path that must be a regular file is something else (a directory,
    /// a FIFO, a device): refused at once, without reading or blocking.
    #[error("{path}: is {kind}, not a regular file")]
    NotRegularFile {
        /// The path.
        path: PathBuf,
        /// What it is: "a directory", "a FIFO", "a device", ...
        kind: &'static str,
    },
    /// A file read whole (a JSON document, a text list) is above its cap.
    #[error("{path}: {what} is {size} bytes, over the limit of {limit} bytes")]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// What the file is (for example "SAEV metadata.json").
        what: &'static str,
        /// Its size (or the bytes read before giving up).
        size: u64,
        /// The documented cap.
        limit: u64,
    },
    /// A line of a text input is longer than the line-length cap.
    #[error("{path}: line {line} is longer than {max} bytes")]
    LineTooLong {
        /// The file.
        path: PathBuf,
        /// The line's number (1-based).
        line: u64,
        /// The cap, in bytes (the line break not counted).
        max: u64,
    },
    /// A line of a JSON Lines text input is not a JSON string nor an
    /// object holding the text field as a string.
    #[error("{path} line {line}: {reason}")]
    BadJsonLine {
        /// The file.
        path: PathBuf,
        /// The line's number (1-based).
        line: u64,
        /// What the line holds instead.
        reason: String,
    },
    /// A Parquet file gives no texts.
    #[error(transparent)]
    Parquet(#[from] crate::io::texts::parquet::ParquetError),
    /// A JSON document holds more values than its documented cap.
    #[error("{what} holds up to {values} JSON values, over the limit of {limit}")]
    TooManyJsonValues {
        /// The document.
        what: &'static str,
        /// An upper bound on the values it holds.
        values: u64,
        /// The documented cap.
        limit: u64,
    },
    /// An output path names one of the operation's inputs.
    #[error("{output}: the output is the input {input}; write to another path")]
    OutputIsInput {
        /// The output path.
        output: PathBuf,
        /// The input file it is (same device and inode).
        input: PathBuf,
    },
    /// An output that is a directory (a model export) names something a
    /// directory cannot be made at: standard output, a FIFO, a device, a
    /// socket or a file.
    #[error("{path}: is {kind}; this output is a directory: name a new or empty directory")]
    NotADirectoryOutput {
        /// The output path.
        path: PathBuf,
        /// What it is: "standard output", "a FIFO", "a device", ...
        kind: &'static str,
    },
    /// No tensor has the requested name.
    #[error("no tensor named `{0}`")]
    TensorNotFound(String),
    /// More indices than the tensor has dimensions.
    #[error("{given} indices for a tensor of rank {rank}")]
    TooManyIndices {
        /// Indices given.
        given: usize,
        /// The tensor's rank.
        rank: usize,
    },
    /// An index or range outside a dimension.
    #[error("index {start}..{stop} is out of range for dimension {dim} of size {size}")]
    IndexOutOfRange {
        /// The dimension.
        dim: usize,
        /// Start of the requested range.
        start: usize,
        /// End (exclusive) of the requested range.
        stop: usize,
        /// The dimension's size.
        size: usize,
    },
    /// Data that the target format has no way to store.
    #[error("cannot be written as {format}: {reason}")]
    Unrepresentable {
        /// The target format.
        format: &'static str,
        /// What does not fit.
        reason: String,
    },
    /// The file's format was recognised but this operation does not handle it.
    #[error("{format} files are not supported by {operation}")]
    UnsupportedFormat {
        /// The format.
        format: crate::Format,
        /// The operation.
        operation: &'static str,
    },
    /// `convert` has no way from the input's format to the requested one.
    #[error("cannot convert {from} to {to}; {from} converts to: {}", list_formats(.supported))]
    UnsupportedConversion {
        /// The input's format ("model directory" for a Hugging Face directory).
        from: &'static str,
        /// The requested format.
        to: crate::Format,
        /// The formats this input converts to.
        supported: &'static [crate::Format],
    },
    /// An argument a caller passed to a library function cannot be used
    /// (not a property of any file).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// More worker threads asked for than [`crate::io::threads::MAX_THREADS`]:
    /// refused before any thread starts.
    #[error("{threads} threads is more than the limit of {limit} threads")]
    TooManyThreads {
        /// The threads asked for.
        threads: usize,
        /// The limit.
        limit: usize,
    },
    /// The content matches no known format.
    #[error(
        "{path}: not a recognised format (no known magic bytes, not a BinTensors or safetensors header)"
    )]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },
    /// The rules of a sharded safetensors checkpoint (its index and shards).
    #[error(transparent)]
    Shard(#[from] crate::safetensors::error::ShardError),
    /// Rules of the binary layout shared by the readers (sizes, offsets, headers, dtypes, names).
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// BinTensors encoding rules (varints and option tags).
    #[error(transparent)]
    Bintensors(#[from] BintensorsError),
    /// BPE2 and `.tiktoken` vocabulary rules.
    #[error(transparent)]
    Bpe2(#[from] Bpe2Error),
    /// TLLM header and tensor-prefix rules.
    #[error(transparent)]
    Tllm(#[from] TllmError),
    /// SAEV dataset rules (metadata, hash, shards) and its coordinates.
    #[error(transparent)]
    Saev(#[from] SaevError),
    /// EMBD section, flag, checksum and tensor-placement rules.
    #[error(transparent)]
    Embd(#[from] EmbdError),
    /// What a model needs of a file beyond its format (BERT in EMBD, TLLM in a tensor file).
    #[error(transparent)]
    Model(#[from] ModelError),

    /// A NumPy `.npz` archive that cannot be read.
    #[error(transparent)]
    Npz(#[from] crate::io::npz::NpzError),
}

impl Error {
    /// The byte offset in the file the error names, when it has one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::Layout(e) => e.offset(),
            Error::Bintensors(e) => e.offset(),
            Error::Bpe2(e) => e.offset(),
            Error::Embd(e) => e.offset(),
            Error::Tllm(e) => e.offset(),
            _ => None,
        }
    }

    /// The file or directory the error concerns, when it names one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Error::Io { path, .. }
            | Error::NotRegularFile { path, .. }
            | Error::FileTooLarge { path, .. }
            | Error::LineTooLong { path, .. }
            | Error::BadJsonLine { path, .. }
            | Error::OutputIsInput { output: path, .. }
            | Error::NotADirectoryOutput { path, .. }
            | Error::UnknownFormat { path } => Some(path),
            _ => None,
        }
    }

    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// `a, b, c`, or "nothing" for an empty list.
fn list_formats(formats: &[crate::Format]) -> String {
    if formats.is_empty() {
        return "nothing".into();
    }
    let names: Vec<&str> = formats.iter().map(|f| f.name()).collect();
    names.join(", ")
}

/// An optional byte offset, displayed as ` at byte N` when present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At(pub Option<u64>);

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(offset) => write!(f, " at byte {offset}"),
            None => Ok(()),
        }
    }
}
