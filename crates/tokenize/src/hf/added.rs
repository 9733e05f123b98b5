//! Added tokens: their ids, and the split of a text on them, as
//! `tokenizers`' `AddedVocabulary` does it.
//!
//! * Ids: the ids in `added_tokens` are only hints. Each token takes the id
//!   of its text in the model's vocabulary when it is there, else the next
//!   id from the model's vocabulary size (its number of entries) upwards.
//!   An exact repeat is ignored; a repeat of a text with other flags keeps
//!   the id and takes the new flags.
//! * Split: first the tokens with `normalized: false` are found in the raw
//!   text, then, in each remaining segment once normalized, the tokens with
//!   `normalized: true` (their text normalized too). Both searches are
//!   leftmost-longest and never overlap. A `single_word` match needs a
//!   non-word character (or the text's edge) on both sides, else it is
//!   skipped; `lstrip`/`rstrip` swallow the whitespace beside the match.
//! * Without special-token extraction ([`Extract::Ordinary`]), special
//!   tokens are not searched for, as `encode_special_tokens` does.

use std::borrow::Cow;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, MatchKind};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::hf::error::HfTokenizerError as E;
use crate::hf::pretok::Normalizer;
use crate::hf::raw::RawAddedToken;

/// Which added tokens a split extracts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Extract {
    /// All of them (`tokenizers`' default).
    All,
    /// All but the special ones.
    Ordinary,
}

/// One search: an automaton and the id of each of its patterns.
#[derive(Debug)]
struct Search {
    automaton: AhoCorasick,
    ids: Vec<u32>,
}

/// The added tokens of a tokenizer.
#[derive(Debug)]
pub(crate) struct AddedTokens {
    /// Searched in the raw text.
    raw: Option<Search>,
    /// Searched in the normalized segments.
    normalized: Option<Search>,
    /// The token each id stands for (the last flags given for its text).
    by_id: FxHashMap<u32, RawAddedToken>,
    /// The id of each text.
    by_text: FxHashMap<String, u32>,
}

/// A piece of text after the split.
pub(crate) enum Segment<'a> {
    /// An added token's id.
    Added(u32),
    /// Text to pre-tokenize (normalized).
    Text(&'a str),
}

impl AddedTokens {
    /// The added tokens of a file whose model has `model_size` entries and
    /// ids `model_id`; `normalizer` normalizes the `normalized: true` ones.
    pub fn new(
        tokens: &[RawAddedToken],
        model_size: u32,
        model_id: impl Fn(&str) -> Option<u32>,
        normalizer: Normalizer,
    ) -> Result<AddedTokens, E> {
        let mut specials: Vec<&RawAddedToken> = vec![];
        let mut special_texts: FxHashSet<&str> = FxHashSet::default();
        for t in tokens {
            if t.special && !t.content.is_empty() && special_texts.insert(&t.content) {
                specials.push(t);
            }
        }
        let mut ordinary: Vec<&RawAddedToken> = vec![];
        let mut seen: Vec<&RawAddedToken> = vec![];
        let mut seen_texts: FxHashMap<&str, Vec<usize>> = FxHashMap::default();
        let mut by_id: FxHashMap<u32, RawAddedToken> = FxHashMap::default();
        let mut by_text: FxHashMap<String, u32> = FxHashMap::default();
        let mut next_id = model_size;
        for t in tokens {
            let repeats = seen_texts.entry(&t.content).or_default();
            if t.content.is_empty() || repeats.iter().any(|&i| same_token(seen[i], t)) {
                continue;
            }
            repeats.push(seen.len());
            seen.push(t);
            let id = match by_text
                .get(&t.content)
                .copied()
                .or_else(|| model_id(&t.content))
            {
                Some(id) => id,
                None => {
                    next_id = next_id.checked_add(1).ok_or(E::Limit {
                        what: "an added token's id",
                        found: u64::from(u32::MAX),
                        limit: u64::from(u32::MAX) - 1,
                    })?;
                    next_id - 1
                }
            };
            by_text.insert(t.content.clone(), id);
            by_id.insert(id, t.clone());
            if !special_texts.contains(t.content.as_str()) {
                ordinary.push(t);
            }
        }
        let (mut raw, mut norm) = (vec![], vec![]);
        for t in specials.iter().chain(&ordinary) {
            let id = by_text[&t.content];
            if t.normalized {
                norm.push((normalizer.apply(&t.content).into_owned(), id));
            } else {
                raw.push((t.content.clone(), id));
            }
        }
        Ok(AddedTokens {
            raw: search(raw)?,
            normalized: search(norm)?,
            by_id,
            by_text,
        })
    }

    /// The id of an added token's text.
    pub fn id(&self, text: &str) -> Option<u32> {
        self.by_text.get(text).copied()
    }

    /// The text of an added token's id.
    pub fn text(&self, id: u32) -> Option<&str> {
        self.by_id.get(&id).map(|t| t.content.as_str())
    }

    /// The highest added id.
    pub fn max_id(&self) -> Option<u32> {
        self.by_id.keys().copied().max()
    }

    /// Splits `text` into added tokens and normalized text segments, and
    /// gives each to `each` in order.
    pub fn split(
        &self,
        text: &str,
        normalizer: Normalizer,
        extract: Extract,
        each: &mut impl FnMut(Segment<'_>) -> crate::Result<()>,
    ) -> crate::Result<()> {
        self.find(
            text,
            self.raw.as_ref(),
            extract,
            &mut |segment| match segment {
                Segment::Added(id) => each(Segment::Added(id)),
                Segment::Text(raw) => {
                    let normal: Cow<'_, str> = normalizer.apply(raw);
                    self.find(&normal, self.normalized.as_ref(), extract, each)
                }
            },
        )
    }

    /// `find_matches` of `tokenizers`: the matches of `search` in
    /// `sentence` after the filters, and the text between them.
    fn find(
        &self,
        sentence: &str,
        search: Option<&Search>,
        extract: Extract,
        each: &mut impl FnMut(Segment<'_>) -> crate::Result<()>,
    ) -> crate::Result<()> {
        let Some(search) = search else {
            return if sentence.is_empty() {
                Ok(())
            } else {
                each(Segment::Text(sentence))
            };
        };
        let mut start_offset = 0;
        for m in search.automaton.find_iter(sentence) {
            let (mut start, mut stop) = (m.start(), m.end());
            let id = search.ids[m.pattern().as_usize()];
            let token = &self.by_id[&id];
            if extract == Extract::Ordinary && token.special {
                continue;
            }
            if token.single_word {
                let start_space = start == 0 || !ends_with_word(&sentence[..start]);
                let stop_space = stop == sentence.len() || !starts_with_word(&sentence[stop..]);
                if !start_space || !stop_space {
                    continue;
                }
            }
            if token.lstrip {
                let trimmed = sentence[..start]
                    .trim_end_matches(char::is_whitespace)
                    .len();
                start = trimmed.max(start_offset);
            }
            if token.rstrip {
                let rest = &sentence[stop..];
                stop += rest.len() - rest.trim_start_matches(char::is_whitespace).len();
            }
            if start_offset < start {
                each(Segment::Text(&sentence[start_offset..start]))?;
            }
            each(Segment::Added(id))?;
            start_offset = stop;
        }
        if start_offset < sentence.len() {
            each(Segment::Text(&sentence[start_offset..]))?;
        }
        Ok(())
    }
}

/// Whether two entries are the same token: every field but the id, which
/// `tokenizers` does not keep.
fn same_token(a: &RawAddedToken, b: &RawAddedToken) -> bool {
    (
        &a.content,
        a.single_word,
        a.lstrip,
        a.rstrip,
        a.normalized,
        a.special,
    ) == (
        &b.content,
        b.single_word,
        b.lstrip,
        b.rstrip,
        b.normalized,
        b.special,
    )
}

/// A leftmost-longest search for `patterns`, or `None` when there are none.
fn search(patterns: Vec<(String, u32)>) -> Result<Option<Search>, E> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let automaton = AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .build(patterns.iter().map(|(t, _)| t.as_str()))
        .map_err(|e| E::Invalid {
            what: "tokenizer.json added_tokens",
            reason: e.to_string(),
        })?;
    Ok(Some(Search {
        automaton,
        ids: patterns.into_iter().map(|(_, id)| id).collect(),
    }))
}

/// `\w` of the `regex` crate, which `tokenizers` uses for `single_word`.
fn word_regex() -> &'static fancy_regex::Regex {
    static WORD: OnceLock<fancy_regex::Regex> = OnceLock::new();
    WORD.get_or_init(|| fancy_regex::Regex::new(r"\w").expect("a valid regex"))
}

fn is_word(c: char) -> bool {
    let mut buf = [0; 4];
    word_regex()
        .is_match(c.encode_utf8(&mut buf))
        .unwrap_or(false)
}

fn ends_with_word(s: &str) -> bool {
    s.chars().next_back().is_some_and(is_word)
}

fn starts_with_word(s: &str) -> bool {
    s.chars().next().is_some_and(is_word)
}
