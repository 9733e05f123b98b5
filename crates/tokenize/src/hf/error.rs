//! The typed refusals of a `tokenizer.json` (and `tokenizer_config.json`).

/// What is wrong with a `tokenizer.json`, or with encoding through it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HfTokenizerError {
    /// The file is not JSON, or not the shape of a `tokenizer.json`.
    #[error("{what} is not valid: {reason} (line {line}, column {column})")]
    Json {
        /// Which file: `tokenizer.json` or `tokenizer_config.json`.
        what: &'static str,
        /// serde_json's message.
        reason: String,
        /// 1-based line of the problem (0 when unknown).
        line: usize,
        /// 1-based column of the problem (0 when unknown).
        column: usize,
    },
    /// A `version` other than `"1.0"`, the only one `tokenizers` reads.
    #[error("tokenizer.json version {0:?} is not supported (only \"1.0\")")]
    Version(String),
    /// A component type that neither modelbin nor `tokenizers` knows.
    #[error("tokenizer.json: {component} type {kind:?} is not supported")]
    UnsupportedType {
        /// `model`, `normalizer`, `pre_tokenizer`, `post_processor` or `decoder`.
        component: &'static str,
        /// The `type` found (`(none)` when the object has no `type`).
        kind: String,
    },
    /// A merge that is not two tokens (`"a b"` with one space, or `["a", "b"]`).
    #[error("tokenizer.json: merge {index} {merge:?} is not two tokens separated by one space")]
    BadMerge {
        /// Index of the merge in `model.merges`.
        index: usize,
        /// The merge as written.
        merge: String,
    },
    /// A merge names a token (or makes one) that is not in the vocabulary.
    #[error("tokenizer.json: merge {index} needs the token {token:?}, which is not in model.vocab")]
    MergeNotInVocab {
        /// Index of the merge in `model.merges`.
        index: usize,
        /// The missing token (a part, or the two parts joined).
        token: String,
    },
    /// A byte-level vocabulary without the token of some byte: text holding
    /// that byte could not be encoded (Hugging Face silently drops it).
    #[error(
        "tokenizer.json: the byte-level vocabulary has no token {char:?} for byte 0x{byte:02X}, so some text cannot be encoded"
    )]
    MissingByte {
        /// The byte.
        byte: u8,
        /// Its character in the byte-level alphabet.
        char: char,
    },
    /// A `tokenizer_config.json` special token (`bos_token`, `eos_token`)
    /// that the tokenizer has no id for: transformers would add it as a new
    /// token, past the model's embedding, and taking another token in its
    /// place would record or run something else silently.
    #[error(
        "tokenizer_config.json {key} {token:?} is not a token of tokenizer.json (transformers would add it as a new token the model has no embedding for)"
    )]
    UnknownSpecialToken {
        /// `bos_token` or `eos_token`.
        key: &'static str,
        /// The token's text.
        token: String,
    },
    /// Two vocabulary entries with one id: ids would not decode.
    #[error("tokenizer.json: id {id} is given to both {first:?} and {second:?}")]
    DuplicateId {
        /// The id.
        id: u32,
        /// One token.
        first: String,
        /// The other.
        second: String,
    },
    /// BPE dropout above zero: encoding would be random.
    #[error("tokenizer.json: BPE dropout {0} makes encoding random; only 0 or null is supported")]
    Dropout(f64),
    /// A pre-tokenizer regex that does not compile, or is refused.
    #[error("tokenizer.json: the pre-tokenizer regex {pattern:?} is refused: {reason}")]
    Regex {
        /// The regex (cut to 200 chars).
        pattern: String,
        /// Why.
        reason: String,
    },
    /// A size beyond the documented limits.
    #[error("tokenizer.json: {what} is {found}, above the limit of {limit}")]
    Limit {
        /// What was counted.
        what: &'static str,
        /// How many (or how large).
        found: u64,
        /// The limit.
        limit: u64,
    },
    /// A field with a value that cannot be used.
    #[error("{what}: {reason}")]
    Invalid {
        /// Where: a file and field.
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// Hugging Face's `tokenizers` crate refused the file or the text.
    #[error("the tokenizers crate refused it: {0}")]
    Engine(String),
}

impl HfTokenizerError {
    /// The error of a serde_json failure on `what`.
    pub(crate) fn json(what: &'static str, e: &serde_json::Error) -> Self {
        HfTokenizerError::Json {
            what,
            reason: e.to_string(),
            line: e.line(),
            column: e.column(),
        }
    }
}
