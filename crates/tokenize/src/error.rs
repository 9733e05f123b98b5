//! The error type of this crate.

/// fancy-regex's default backtrack limit, which custom patterns keep.
pub const BACKTRACK_LIMIT: usize = 1_000_000;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong building a tokenizer or encoding and decoding.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The vocabulary file is invalid.
    #[error(transparent)]
    Format(#[from] modelbin_format::Error),
    /// The vocabulary's source hash names no known encoding and no pattern was given.
    #[error(
        "vocabulary source hash {hash} is not a known encoding (cl100k_base, o200k_base, p50k_base, r50k_base): give a pre-tokenizer pattern"
    )]
    UnknownEncoding {
        /// Hex SHA-256 of the vocabulary's source.
        hash: String,
    },
    /// No encoding has this name.
    #[error(
        "unknown encoding `{0}` (known: gpt2, r50k_base, p50k_base, p50k_edit, cl100k_base, o200k_base, o200k_harmony)"
    )]
    UnknownEncodingName(String),
    /// A custom pre-tokenizer pattern does not compile.
    #[error("invalid pre-tokenizer pattern: {0}")]
    BadPattern(String),
    /// A custom pre-tokenizer pattern failed while matching: fancy-regex
    /// gives up on a match that needs more than its backtrack limit.
    #[error(
        "the pre-tokenizer pattern failed at byte {offset}: {reason} \
         (fancy-regex allows {BACKTRACK_LIMIT} backtracking steps per match)"
    )]
    PatternFailed {
        /// Where in the text the failed search started.
        offset: usize,
        /// fancy-regex's message.
        reason: String,
    },
    /// The vocabulary cannot encode every byte.
    #[error("the vocabulary has no token for byte 0x{0:02X}, so it cannot encode arbitrary text")]
    MissingByte(u8),
    /// Text contains a special token that is not allowed.
    #[error(
        "text contains the disallowed special token {token:?} at byte {offset}; allow it, or encode it as ordinary text"
    )]
    DisallowedSpecial {
        /// The special token.
        token: String,
        /// Where it starts in the text.
        offset: usize,
    },
    /// A special token name the vocabulary does not have.
    #[error("unknown special token {0:?}")]
    UnknownSpecial(String),
    /// A model no table knows.
    #[error("unknown model `{model}` (known: {known})")]
    UnknownModel {
        /// The model asked for.
        model: String,
        /// The models (or prefixes) that are known.
        known: String,
    },
    /// A priced model whose entry names no encoding and whose name tiktoken
    /// does not map to one.
    #[error(
        "model `{0}` has a price but no encoding tiktoken knows it by: add \"encoding\": \"o200k_base\" (or another built-in encoding) to its price entry"
    )]
    NoEncoding(String),
    /// More cached input tokens than input tokens.
    #[error("{cached} cached tokens are more than the {input} input tokens")]
    CachedAboveInput {
        /// Cached tokens.
        cached: u64,
        /// Input tokens.
        input: u64,
    },
    /// Cached tokens for a model without a cached-input price.
    #[error("{0} has no cached-input price")]
    NoCachedPrice(String),
    /// Output tokens for a model that produces none (no output price).
    #[error("{0} has no output price: it produces no output tokens")]
    NoOutputPrice(String),
    /// A cost beyond what a double holds (prices near 1e308, or counts near
    /// 2⁶⁴ at huge prices): refused rather than printed as `inf`.
    #[error(
        "{model}: {input_tokens} input and {output_tokens} output tokens cost more than a number can hold at its prices"
    )]
    CostNotFinite {
        /// The entry that prices the model.
        model: String,
        /// Input tokens.
        input_tokens: u64,
        /// Output tokens.
        output_tokens: u64,
    },
    /// A chat conversation that is not OpenAI's shape.
    #[error("not a chat (a JSON array of messages, or a request body with \"messages\"): {0}")]
    BadChat(String),
    /// A price table that does not parse.
    #[error("invalid price table: {0}")]
    BadPriceTable(String),
    /// A token id outside the vocabulary.
    #[error("token id {0} is not in the vocabulary")]
    UnknownToken(u32),
    /// A Hugging Face `tokenizer.json` that cannot be used.
    #[error(transparent)]
    HfTokenizer(#[from] crate::hf::error::HfTokenizerError),
    /// A WordPiece vocabulary that cannot be used.
    #[error("invalid WordPiece vocabulary: {0}")]
    InvalidWordPiece(String),
}
