//! Why a recording cannot start or go on.

use std::path::PathBuf;

/// Why a recording cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// A TLLM model whose vocabulary is not byte-level.
    #[error("vocab_size {vocab_size} is not byte-level (≥ 256), so text cannot be its input")]
    NotByteLevel {
        /// Its vocabulary size.
        vocab_size: u32,
    },
    /// A file that is not a model this can record.
    #[error(
        "{path}: the file's format is {format}; recording reads TLLM and EMBD models (or a Hugging Face model directory)"
    )]
    NotAModel {
        /// The file.
        path: PathBuf,
        /// Its format.
        format: modelbin_format::Format,
    },
    /// A model that reads no text (a vision transformer), asked to record
    /// text.
    #[error("{path}: {model} reads no text; record images with it")]
    NoText {
        /// The model.
        path: PathBuf,
        /// How the model is named (`a dinov2 vision transformer`).
        model: String,
    },
    /// The CLS row asked of a model without one.
    #[error("cls: only a BERT model has a [CLS] token")]
    NoClsToken,
    /// A setting only a language model's recording takes, asked of
    /// another model's.
    #[error(
        "{setting}: applies to recordings of a decoder language model (or of images, for int8)"
    )]
    LanguageModelSetting {
        /// The setting (`int8`, `site`).
        setting: &'static str,
    },
    /// A window too short to hold its BOS token and a token of text.
    #[error(
        "tokens_per_text {window}: a window starts with the BOS token, so it must hold at least 2 tokens (or turn the BOS off)"
    )]
    WindowTooShortForBos {
        /// The window asked for.
        window: usize,
    },
    /// A layer the model does not have.
    #[error("layers {layer}: the model has {blocks} blocks")]
    NoSuchLayer {
        /// The layer asked for.
        layer: i64,
        /// The model's blocks.
        blocks: usize,
    },
    /// A BERT model whose context holds nothing besides CLS and SEP.
    #[error("{path}: the model's context holds no token besides [CLS] and [SEP]")]
    NoRoom {
        /// The model.
        path: PathBuf,
    },
    /// A window longer than the model's context.
    #[error("tokens_per_text {window}: at most {longest} tokens fit the model's context")]
    WindowTooLong {
        /// The window asked for.
        window: usize,
        /// The longest that fits.
        longest: usize,
    },
    /// A text file that is not UTF-8, for a model that reads text.
    #[error("{path}: is not UTF-8 text ({model} reads text)")]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// The model in use (`a BERT model`, `a gpt2 language model`).
        model: String,
    },
    /// Fewer tokens than one window.
    #[error("the text has {tokens} tokens, fewer than one window of {window}")]
    TooFewTokens {
        /// Tokens in the files.
        tokens: usize,
        /// The window.
        window: usize,
    },
    /// A token budget smaller than one window.
    #[error("max_tokens {max_tokens} is less than one window of {window} tokens")]
    MaxTokensBelowWindow {
        /// The budget.
        max_tokens: usize,
        /// The window.
        window: usize,
    },
    /// No file of the inputs decodes as an image.
    #[error("none of the {files} image files decodes; nothing to record")]
    NoImages {
        /// Image files found.
        files: usize,
    },
    /// An image file that does not decode (refused in strict mode, else
    /// skipped).
    #[error("{path}: {reason}")]
    BadImage {
        /// The file.
        path: PathBuf,
        /// Why it does not decode.
        reason: String,
    },
    /// An image file whose bytes changed, or that went away, between the
    /// start of the recording and its round.
    #[error("{path}: the file changed or went away while it was being recorded")]
    ImageChanged {
        /// The file.
        path: PathBuf,
    },
    /// The caller stopped the recording; nothing was written.
    #[error("interrupted")]
    Interrupted,
    /// A recorded vector that holds a NaN or an infinity: the recording
    /// stops before writing it (and leaves no dataset), whatever made it
    /// so (non-finite weights, constants or inputs).
    #[error(
        "{input}: the recorded vector of layer {layer}, token {token} holds {value}; nothing was written (verifying the model file checks its weights)"
    )]
    NonFinite {
        /// The input: the image file, or the text window.
        input: String,
        /// The layer, as the recording names it (negative from the end).
        layer: i64,
        /// The token (row) of the vector within the input: CLS first when
        /// it is recorded, then the patches or the window's tokens.
        token: usize,
        /// The first bad value.
        value: f32,
    },
}
