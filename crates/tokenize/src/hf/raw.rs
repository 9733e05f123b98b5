//! The serde shapes of `tokenizer.json` and `tokenizer_config.json`, and
//! the checks every file passes before either engine sees it: version,
//! limits, known component types, dropout, merges in the vocabulary.
//!
//! Components are kept as [`serde_json::Value`] until a module that owns
//! them reads them (`pretok`, `post`, `bpe`), so that a shape modelbin
//! does not run itself still loads for the `tokenizers` route.

use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::Value;

use crate::hf::error::HfTokenizerError as E;

/// The largest `tokenizer.json` read, in bytes (Gemma 3's is 33 MB).
pub const MAX_FILE_BYTES: u64 = 128 << 20;
/// The largest `tokenizer_config.json` read, in bytes.
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;
/// The most vocabulary entries (Gemma 3 has 262,144).
pub const MAX_VOCAB: usize = 1 << 22;
/// The most merges.
pub const MAX_MERGES: usize = 1 << 22;
/// The most added tokens.
pub const MAX_ADDED: usize = 1 << 20;
/// Ids must be below this (so that every id, and one past it, fits).
pub const MAX_ID: u32 = 1 << 24;
/// The longest pre-tokenizer regex, in bytes.
pub const MAX_REGEX_BYTES: usize = 16 << 10;
/// The most pieces and ids in a post-processor's template.
pub const MAX_TEMPLATE: usize = 1 << 10;

/// The model types `tokenizers` knows.
const MODELS: &[&str] = &["BPE", "WordPiece", "WordLevel", "Unigram"];
/// The normalizer types `tokenizers` knows.
const NORMALIZERS: &[&str] = &[
    "BertNormalizer",
    "StripNormalizer",
    "Strip",
    "StripAccents",
    "NFC",
    "NFD",
    "NFKC",
    "NFKD",
    "Sequence",
    "Lowercase",
    "Nmt",
    "Precompiled",
    "Replace",
    "Prepend",
    "ByteLevel",
];
/// The pre-tokenizer types `tokenizers` knows.
const PRE_TOKENIZERS: &[&str] = &[
    "BertPreTokenizer",
    "ByteLevel",
    "Delimiter",
    "CharDelimiterSplit",
    "Metaspace",
    "Whitespace",
    "Sequence",
    "Split",
    "Punctuation",
    "WhitespaceSplit",
    "Digits",
    "UnicodeScripts",
    "FixedLength",
];
/// The post-processor types `tokenizers` knows.
const POST_PROCESSORS: &[&str] = &[
    "RobertaProcessing",
    "BertProcessing",
    "ByteLevel",
    "TemplateProcessing",
    "Sequence",
];
/// The decoder types `tokenizers` knows.
const DECODERS: &[&str] = &[
    "BPEDecoder",
    "ByteLevel",
    "WordPiece",
    "Metaspace",
    "CTC",
    "Sequence",
    "Replace",
    "Fuse",
    "Strip",
    "ByteFallback",
];

/// A whole `tokenizer.json`.
#[derive(Debug, Deserialize)]
pub(crate) struct RawFile {
    /// `"1.0"`.
    #[serde(default)]
    pub version: Option<String>,
    /// Added tokens, in file order.
    #[serde(default)]
    pub added_tokens: Vec<RawAddedToken>,
    /// The normalizer.
    #[serde(default)]
    pub normalizer: Option<Value>,
    /// The pre-tokenizer.
    #[serde(default)]
    pub pre_tokenizer: Option<Value>,
    /// The post-processor.
    #[serde(default)]
    pub post_processor: Option<Value>,
    /// The decoder.
    #[serde(default)]
    pub decoder: Option<Value>,
    /// The model (its `type` decides its shape).
    pub model: Value,
}

/// One entry of `added_tokens`. Every field is required, as `tokenizers`
/// requires them; the `id` is only a hint (see `added`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct RawAddedToken {
    /// The id the file gives.
    #[allow(
        dead_code,
        reason = "tokenizers assigns ids itself; kept for the shape"
    )]
    pub id: u32,
    /// The token's text.
    pub content: String,
    /// Matches only as a whole word.
    pub single_word: bool,
    /// Swallows the whitespace on its left.
    pub lstrip: bool,
    /// Swallows the whitespace on its right.
    pub rstrip: bool,
    /// Matched in the normalized text (else in the raw text).
    pub normalized: bool,
    /// A special token (not extracted by `encode_ordinary`).
    pub special: bool,
}

/// `model` when its type is `BPE`: the fields modelbin's engine reads
/// (`dropout` is checked by [`RawFile::parse`]; `unk_token`, `fuse_unk` and
/// `byte_fallback` never act when every byte has a token).
#[derive(Debug, Deserialize)]
pub(crate) struct RawBpe {
    #[serde(default)]
    pub continuing_subword_prefix: Option<String>,
    #[serde(default)]
    pub end_of_word_suffix: Option<String>,
    #[serde(default)]
    pub ignore_merges: Option<bool>,
    /// Token → id.
    pub vocab: FxHashMap<String, u32>,
    /// The merges, in rank order.
    pub merges: RawMerges,
}

/// The two forms of `merges`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum RawMerges {
    /// `[["a", "b"], …]` (tokenizers ≥ 0.20).
    Pairs(Vec<(String, String)>),
    /// `["a b", …]`.
    Lines(Vec<String>),
}

impl RawMerges {
    /// How many merges are listed.
    pub fn len(&self) -> usize {
        match self {
            RawMerges::Pairs(p) => p.len(),
            RawMerges::Lines(l) => l.len(),
        }
    }

    /// The merges as pairs, in rank order; a line must split on one space
    /// into exactly two parts, and `#version` lines are skipped, as
    /// `tokenizers` reads them.
    pub fn pairs(&self) -> Result<Vec<(&str, &str)>, E> {
        match self {
            RawMerges::Pairs(p) => Ok(p.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect()),
            RawMerges::Lines(lines) => lines
                .iter()
                .filter(|l| !l.starts_with("#version"))
                .enumerate()
                .map(|(index, line)| {
                    let mut parts = line.split(' ');
                    match (parts.next(), parts.next(), parts.next()) {
                        (Some(a), Some(b), None) => Ok((a, b)),
                        _ => Err(E::BadMerge {
                            index,
                            merge: line.chars().take(200).collect(),
                        }),
                    }
                })
                .collect(),
        }
    }
}

/// The `type` of a component object, if it has one.
pub(crate) fn type_of(value: &Value) -> Option<&str> {
    value.get("type").and_then(Value::as_str)
}

/// Fails with [`E::Limit`] when `found > limit`.
pub(crate) fn within(what: &'static str, found: usize, limit: usize) -> Result<(), E> {
    if found > limit {
        return Err(E::Limit {
            what,
            found: found as u64,
            limit: limit as u64,
        });
    }
    Ok(())
}

impl RawFile {
    /// Parses and checks a `tokenizer.json`: JSON shape, version, known
    /// component types (nested sequences too), counts within the limits.
    pub fn parse(bytes: &[u8]) -> Result<RawFile, E> {
        within(
            "the file size in bytes",
            bytes.len(),
            MAX_FILE_BYTES as usize,
        )?;
        let file: RawFile =
            serde_json::from_slice(bytes).map_err(|e| E::json("tokenizer.json", &e))?;
        if let Some(v) = &file.version
            && v != "1.0"
        {
            return Err(E::Version(v.chars().take(50).collect()));
        }
        within(
            "the number of added tokens",
            file.added_tokens.len(),
            MAX_ADDED,
        )?;
        check_types("model", Some(&file.model), MODELS, "")?;
        check_types(
            "normalizer",
            file.normalizer.as_ref(),
            NORMALIZERS,
            "normalizers",
        )?;
        check_types(
            "pre_tokenizer",
            file.pre_tokenizer.as_ref(),
            PRE_TOKENIZERS,
            "pretokenizers",
        )?;
        check_types(
            "post_processor",
            file.post_processor.as_ref(),
            POST_PROCESSORS,
            "processors",
        )?;
        check_types("decoder", file.decoder.as_ref(), DECODERS, "decoders")?;
        file.check_model_sizes()?;
        Ok(file)
    }

    /// Vocabulary and merge counts, ids below [`MAX_ID`], and no dropout,
    /// whatever the model type.
    fn check_model_sizes(&self) -> Result<(), E> {
        match self.model.get("vocab") {
            Some(Value::Object(map)) => {
                within("the vocabulary size", map.len(), MAX_VOCAB)?;
                for id in map.values() {
                    let id = id.as_u64().unwrap_or(0);
                    if id >= u64::from(MAX_ID) {
                        return Err(E::Limit {
                            what: "a vocabulary id",
                            found: id,
                            limit: u64::from(MAX_ID) - 1,
                        });
                    }
                }
            }
            Some(Value::Array(list)) => within("the vocabulary size", list.len(), MAX_VOCAB)?,
            _ => {}
        }
        if let Some(Value::Array(merges)) = self.model.get("merges") {
            within("the number of merges", merges.len(), MAX_MERGES)?;
        }
        if let Some(d) = self.model.get("dropout").and_then(Value::as_f64)
            && d != 0.0
        {
            return Err(E::Dropout(d));
        }
        Ok(())
    }
}

/// Checks that `value` (and, for a `Sequence`, each member under `members`)
/// has a type `tokenizers` knows. The model's type may be absent (the
/// crate then guesses it from the fields).
fn check_types(
    component: &'static str,
    value: Option<&Value>,
    known: &[&str],
    members: &str,
) -> Result<(), E> {
    let Some(value) = value else { return Ok(()) };
    if value.is_null() {
        return Ok(());
    }
    let Some(kind) = type_of(value) else {
        if component == "model" && value.is_object() {
            return Ok(());
        }
        return Err(E::UnsupportedType {
            component,
            kind: "(none)".into(),
        });
    };
    if !known.contains(&kind) {
        return Err(E::UnsupportedType {
            component,
            kind: kind.chars().take(100).collect(),
        });
    }
    if kind == "Sequence"
        && let Some(Value::Array(list)) = value.get(members)
    {
        // serde_json caps nesting at 128, so this recursion is bounded.
        for member in list {
            check_types(component, Some(member), known, members)?;
        }
    }
    Ok(())
}

/// `bos_token` / `eos_token` in `tokenizer_config.json`: a string, or an
/// added-token object with `content`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum RawTokenName {
    /// `"<s>"`.
    Text(String),
    /// `{"content": "<s>", …}`.
    Object {
        /// The token's text.
        content: String,
    },
}

impl RawTokenName {
    /// The token's text.
    pub fn text(&self) -> &str {
        match self {
            RawTokenName::Text(t) | RawTokenName::Object { content: t } => t,
        }
    }
}

/// The fields of `tokenizer_config.json` modelbin reads.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawConfig {
    /// The BOS token.
    #[serde(default)]
    pub bos_token: Option<RawTokenName>,
    /// The EOS token.
    #[serde(default)]
    pub eos_token: Option<RawTokenName>,
}

impl RawConfig {
    /// Parses a `tokenizer_config.json`.
    pub fn parse(bytes: &[u8]) -> Result<RawConfig, E> {
        within(
            "tokenizer_config.json's size in bytes",
            bytes.len(),
            MAX_CONFIG_BYTES as usize,
        )?;
        serde_json::from_slice(bytes).map_err(|e| E::json("tokenizer_config.json", &e))
    }
}
