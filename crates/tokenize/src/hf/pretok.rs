//! The normalizer and pre-tokenizer shapes that modelbin runs itself, read
//! from their JSON, and the split of a text segment into pre-tokens.
//!
//! Two pre-tokenizer shapes cover GPT-2, Pythia, RoBERTa, Llama 3, Qwen2
//! and tokenizers trained with the `tokenizers` library's byte-level
//! recipes:
//!
//! * `ByteLevel` (with `use_regex`, the default): GPT-2's regex, which is
//!   the GPT-2 pattern's built-in scanner ([`Pattern::Gpt2`]: the two
//!   regexes split alike). `add_prefix_space` puts a space before every
//!   segment that does not start with one.
//! * `Sequence[Split(Regex, Isolated), ByteLevel(use_regex: false,
//!   add_prefix_space: false)]`: every match and every gap between
//!   matches is a pre-token. Llama 3's and Qwen2's regexes run on built-in
//!   scanners ([`Pattern::Llama3`], [`Pattern::Qwen2`]); any other through
//!   `fancy-regex`, as in the `tokenizers` crate.
//!
//! The byte-level mapping is a bijection, so the pre-tokens are merged as
//! the text's own bytes. Normalizers: none, or `NFC`. Any other shape is
//! left to the `tokenizers` route (`None` from the readers here).

use std::borrow::Cow;

use serde_json::Value;
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};

use crate::hf::error::HfTokenizerError as E;
use crate::hf::raw::{MAX_REGEX_BYTES, type_of};
use crate::pretokenize::{Pattern, regex_matches};

/// fancy-regex's backtracking steps allowed per match (its default).
const BACKTRACK_LIMIT: usize = crate::error::BACKTRACK_LIMIT;
/// The compiled size allowed to a regex, in bytes.
const REGEX_SIZE_LIMIT: usize = 16 << 20;

/// The normalizers modelbin runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Normalizer {
    /// None.
    None,
    /// Unicode NFC.
    Nfc,
}

impl Normalizer {
    /// The normalizer of `value`, or `None` when modelbin does not run it.
    pub fn read(value: Option<&Value>) -> Option<Normalizer> {
        let Some(value) = value.filter(|v| !v.is_null()) else {
            return Some(Normalizer::None);
        };
        match type_of(value)? {
            "NFC" => Some(Normalizer::Nfc),
            "Sequence" => match value.get("normalizers")?.as_array()?.as_slice() {
                [] => Some(Normalizer::None),
                [one] => Normalizer::read(Some(one)),
                _ => None,
            },
            _ => None,
        }
    }

    /// `text` normalized.
    pub fn apply<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self {
            Normalizer::None => Cow::Borrowed(text),
            Normalizer::Nfc if is_nfc_quick(text.chars()) == IsNormalized::Yes => {
                Cow::Borrowed(text)
            }
            Normalizer::Nfc => Cow::Owned(text.nfc().collect()),
        }
    }
}

/// The pre-tokenizers modelbin runs.
#[derive(Debug)]
pub(crate) enum PreTokenizer {
    /// `ByteLevel` with GPT-2's regex.
    ByteLevel {
        /// Put a space before a segment that does not start with one.
        add_prefix_space: bool,
    },
    /// `Split(Regex, Isolated)` then `ByteLevel` without a regex, with a
    /// built-in scanner (Llama 3's and Qwen2's regexes: no gaps).
    Scanner(Pattern),
    /// `Split(Regex, Isolated)` then `ByteLevel` without a regex.
    Split(Box<fancy_regex::Regex>),
}

/// A bool field, or its default when absent.
fn flag(value: &Value, key: &str, default: bool) -> Option<bool> {
    match value.get(key) {
        None => Some(default),
        Some(v) => v.as_bool(),
    }
}

impl PreTokenizer {
    /// The pre-tokenizer of `value`: `Ok(None)` when modelbin does not run
    /// this shape, an error when its regex is refused.
    pub fn read(value: Option<&Value>) -> Result<Option<PreTokenizer>, E> {
        let Some(value) = value.filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let byte_level = |v: &Value, regex: bool| -> Option<bool> {
            if type_of(v)? != "ByteLevel" || flag(v, "use_regex", true)? != regex {
                return None;
            }
            // tokenizers requires both fields.
            v.get("trim_offsets")?.as_bool()?;
            v.get("add_prefix_space")?.as_bool()
        };
        match type_of(value) {
            Some("ByteLevel") => Ok(byte_level(value, true)
                .map(|add_prefix_space| PreTokenizer::ByteLevel { add_prefix_space })),
            Some("Sequence") => {
                let Some(list) = value.get("pretokenizers").and_then(Value::as_array) else {
                    return Ok(None);
                };
                match list.as_slice() {
                    [one] => PreTokenizer::read(Some(one)),
                    [split, bl] if byte_level(bl, false) == Some(false) => {
                        let Some(regex) = isolated_regex(split) else {
                            return Ok(None);
                        };
                        let compiled = compile(regex)?;
                        Ok(Some(match Pattern::from_regex(regex) {
                            Ok(p @ (Pattern::Llama3 | Pattern::Qwen2 | Pattern::Gpt2)) => {
                                PreTokenizer::Scanner(p)
                            }
                            _ => PreTokenizer::Split(Box::new(compiled)),
                        }))
                    }
                    _ => Ok(None),
                }
            }
            _ => Ok(None),
        }
    }

    /// Calls `each` with the bytes of every pre-token of `segment`, in
    /// order. Only a regex can fail (too much backtracking).
    pub fn pieces(&self, segment: &str, each: &mut impl FnMut(&[u8])) -> crate::Result<()> {
        match self {
            PreTokenizer::ByteLevel { add_prefix_space } => {
                let text: Cow<'_, str> = if *add_prefix_space && !segment.starts_with(' ') {
                    Cow::Owned(format!(" {segment}"))
                } else {
                    Cow::Borrowed(segment)
                };
                let bytes = text.as_bytes();
                Pattern::Gpt2.split(&text, |a, b| each(&bytes[a..b]))
            }
            PreTokenizer::Scanner(pattern) => {
                let bytes = segment.as_bytes();
                pattern.split(segment, |a, b| each(&bytes[a..b]))
            }
            PreTokenizer::Split(regex) => {
                // As `tokenizers` splits: every gap and every match is a
                // piece (an empty match only ends a gap).
                let bytes = segment.as_bytes();
                let mut gap_from = 0;
                regex_matches(regex, segment, |start, end| {
                    if gap_from < start {
                        each(&bytes[gap_from..start]);
                    }
                    if start < end {
                        each(&bytes[start..end]);
                    }
                    gap_from = end;
                })?;
                if gap_from < bytes.len() {
                    each(&bytes[gap_from..]);
                }
                Ok(())
            }
        }
    }
}

/// The regex of a `Split` with a `Regex` pattern, `Isolated` behaviour and
/// no inversion.
fn isolated_regex(split: &Value) -> Option<&str> {
    if type_of(split)? != "Split"
        || split.get("behavior")?.as_str()? != "Isolated"
        || split.get("invert")?.as_bool()?
    {
        return None;
    }
    split.get("pattern")?.get("Regex")?.as_str()
}

/// Compiles a pre-tokenizer regex within the limits.
pub(crate) fn compile(regex: &str) -> Result<fancy_regex::Regex, E> {
    let refuse = |reason: String| E::Regex {
        pattern: regex.chars().take(200).collect(),
        reason,
    };
    if regex.len() > MAX_REGEX_BYTES {
        return Err(refuse(format!(
            "it is {} bytes, above the limit of {MAX_REGEX_BYTES}",
            regex.len()
        )));
    }
    fancy_regex::RegexBuilder::new(regex)
        .backtrack_limit(BACKTRACK_LIMIT)
        .delegate_size_limit(REGEX_SIZE_LIMIT)
        .delegate_dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| refuse(e.to_string()))
}
