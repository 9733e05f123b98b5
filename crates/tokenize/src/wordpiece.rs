//! BERT WordPiece tokenization, equal to Hugging Face's `BertTokenizer`
//! (`BertNormalizer` + `BertPreTokenizer` + `WordPiece` + the `[CLS] … [SEP]`
//! template) as sentence-transformers drives it.
//!
//! The steps, in Hugging Face's order:
//! 1. literal special tokens (`[CLS]`, `[SEP]`, `[MASK]`, `[UNK]`, `[PAD]`,
//!    exact case) are cut out of the raw text and become their ids;
//! 2. each remaining segment is cleaned (U+0000, U+FFFD and Cc/Cf/Co removed,
//!    except `\t\n\r`; whitespace becomes a space), CJK ideographs get spaces
//!    around them, and, for uncased vocabularies, the text is NFD-decomposed,
//!    stripped of non-spacing marks (Mn) and lowercased one character at a time;
//! 3. words are split on whitespace, and every punctuation character is a word;
//! 4. each word is split greedily, longest match first, into vocabulary pieces
//!    (`##` marks a continuation); a word of more than 100 characters, or one
//!    with any part that matches nothing, is a single `[UNK]`.
//!
//! Character classes come from the `unicode_categories` tables that Hugging
//! Face tokenizers uses, so that every character is classified as it is there.
//! (Its "other" class is Cc, Cf and Co: unassigned code points are kept.)

use aho_corasick::{AhoCorasick, MatchKind};
use rustc_hash::FxHashMap;
use unicode_categories::UnicodeCategories;
use unicode_normalization::UnicodeNormalization;

use modelbin_format::embd::{Embd, SpecialTokens};

use crate::{Error, Result};

/// The prefix that marks a piece continuing a word.
const CONTINUATION: &str = "##";

/// Words longer than this many characters become one `[UNK]`.
pub const MAX_CHARS_PER_WORD: usize = 100;

/// A WordPiece tokenizer over a BERT vocabulary.
#[derive(Debug, Clone)]
pub struct WordPiece {
    tokens: Vec<Box<str>>,
    word_start: FxHashMap<Box<str>, u32>,
    continuation: FxHashMap<Box<str>, u32>,
    /// Longest piece, in bytes (bounds the longest-match search).
    longest_piece: usize,
    specials: SpecialTokens,
    literal_specials: AhoCorasick,
    literal_ids: Vec<u32>,
    uncased: bool,
}

impl WordPiece {
    /// A tokenizer over `tokens` (the token with id `i` at index `i`). An
    /// uncased vocabulary lowercases and strips accents. A token that occurs
    /// twice maps to its later id, as in Hugging Face.
    pub fn new(tokens: Vec<Box<str>>, specials: SpecialTokens, uncased: bool) -> Result<Self> {
        let count = tokens.len();
        let special_strings = specials
            .all()
            .into_iter()
            .map(|id| {
                tokens
                    .get(id as usize)
                    .ok_or_else(|| {
                        Error::InvalidWordPiece(format!(
                            "special token id {id} is outside the {count}-token vocabulary"
                        ))
                    })
                    .map(|token| (token.to_string(), id))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut word_start = FxHashMap::default();
        let mut continuation = FxHashMap::default();
        let mut longest_piece = 0;
        for (id, token) in tokens.iter().enumerate() {
            let id = u32::try_from(id)
                .map_err(|_| Error::InvalidWordPiece("more than 2^32 tokens".into()))?;
            match token.strip_prefix(CONTINUATION) {
                Some(rest) => continuation.insert(rest.into(), id),
                None => word_start.insert(token.clone(), id),
            };
            longest_piece = longest_piece.max(token.len());
        }
        // An empty special token (a hostile vocabulary) would match
        // between every two characters: it is not matched in text at all.
        let special_strings: Vec<(String, u32)> = special_strings
            .into_iter()
            .filter(|(s, _)| !s.is_empty())
            .collect();
        let literal_specials = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(special_strings.iter().map(|(s, _)| s))
            .map_err(|e| Error::InvalidWordPiece(format!("special tokens: {e}")))?;
        Ok(WordPiece {
            tokens,
            word_start,
            continuation,
            longest_piece,
            specials,
            literal_specials,
            literal_ids: special_strings.into_iter().map(|(_, id)| id).collect(),
            uncased,
        })
    }

    /// A tokenizer over a `vocab.txt` (one token per line, id = line number),
    /// finding the special tokens by name.
    pub fn from_vocab_txt(text: &str, uncased: bool) -> Result<Self> {
        let tokens: Vec<Box<str>> = text
            .lines()
            .map(|line| line.trim_end_matches('\r').into())
            .collect();
        let specials = SpecialTokens::find(&tokens)?;
        WordPiece::new(tokens, specials, uncased)
    }

    /// The tokenizer for an EMBD file's vocabulary (uncased unless its
    /// `do_lower_case` metadata is `false`).
    pub fn from_embd<B: AsRef<[u8]>>(embd: &Embd<B>) -> Result<Self> {
        let specials = embd
            .special_tokens()
            .ok_or_else(|| Error::InvalidWordPiece("the EMBD file has no vocabulary".into()))?;
        let uncased = !matches!(embd.metadata_value("do_lower_case"), Some("false" | "0"));
        WordPiece::new(embd.tokens().map(Box::from).collect(), specials, uncased)
    }

    /// The special token ids.
    pub fn specials(&self) -> SpecialTokens {
        self.specials
    }

    /// Number of tokens in the vocabulary.
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// The string of token `id`, if it exists.
    pub fn token(&self, id: u32) -> Option<&str> {
        self.tokens.get(id as usize).map(|t| &**t)
    }

    /// The model input for `text`: `[CLS]`, the pieces, `[SEP]`, with the
    /// pieces cut so that the whole is at most `max_len` ids (at least the
    /// two specials are always there).
    pub fn encode(&self, text: &str, max_len: usize) -> Vec<u32> {
        let budget = max_len.saturating_sub(2);
        let mut ids = Vec::with_capacity(budget.min(text.len() + 1) + 2);
        ids.push(self.specials.cls);
        self.pieces_into(text, budget, &mut ids);
        ids.push(self.specials.sep);
        ids
    }

    /// [`encode`](Self::encode), and whether the input was cut: whether
    /// `[CLS]`, every piece of `text` and `[SEP]` come to more than
    /// `max_len` ids. The pieces are encoded up to one past the budget,
    /// which is enough to tell, since a shorter budget only cuts the same
    /// sequence of pieces shorter.
    pub fn encode_with_truncation(&self, text: &str, max_len: usize) -> (Vec<u32>, bool) {
        let budget = max_len.saturating_sub(2);
        let mut ids = Vec::with_capacity(budget.min(text.len() + 1) + 3);
        ids.push(self.specials.cls);
        self.pieces_into(text, budget.saturating_add(1), &mut ids);
        let pieces = ids.len() - 1;
        ids.truncate(1 + budget);
        ids.push(self.specials.sep);
        (ids, pieces + 2 > max_len)
    }

    /// The word pieces of `text`, without `[CLS]`/`[SEP]` and untruncated.
    pub fn pieces(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        self.pieces_into(text, usize::MAX, &mut ids);
        ids
    }

    /// Appends at most `budget` pieces of `text` to `out`.
    fn pieces_into(&self, text: &str, budget: usize, out: &mut Vec<u32>) {
        let limit = out.len().saturating_add(budget);
        let mut segment_start = 0;
        for found in self.literal_specials.find_iter(text) {
            self.segment_pieces(&text[segment_start..found.start()], limit, out);
            if out.len() >= limit {
                return;
            }
            out.push(self.literal_ids[found.pattern().as_usize()]);
            segment_start = found.end();
        }
        self.segment_pieces(&text[segment_start..], limit, out);
    }

    /// Normalises one segment without special tokens and appends its pieces
    /// until `out` holds `limit` ids.
    fn segment_pieces(&self, segment: &str, limit: usize, out: &mut Vec<u32>) {
        if out.len() >= limit || segment.is_empty() {
            return;
        }
        let normalized = self.normalize(segment);
        for word in split_words(&normalized) {
            if out.len() >= limit {
                return;
            }
            self.word_pieces(word, limit, out);
        }
    }

    /// `BertNormalizer`: clean text, isolate CJK ideographs and, for uncased
    /// vocabularies, strip accents then lowercase.
    fn normalize(&self, segment: &str) -> String {
        let mut cleaned = String::with_capacity(segment.len());
        for c in segment.chars() {
            if c == '\0' || c == '\u{FFFD}' || is_control(c) {
                continue;
            }
            if is_whitespace(c) {
                cleaned.push(' ');
            } else if is_cjk_ideograph(c) {
                cleaned.extend([' ', c, ' ']);
            } else {
                cleaned.push(c);
            }
        }
        if !self.uncased {
            return cleaned;
        }
        if cleaned.is_ascii() {
            cleaned.make_ascii_lowercase();
            return cleaned;
        }
        let mut out = String::with_capacity(cleaned.len());
        for c in cleaned.nfd().filter(|c| !c.is_mark_nonspacing()) {
            out.extend(c.to_lowercase());
        }
        out
    }

    /// Greedy longest-match-first split of one word.
    fn word_pieces(&self, word: &str, limit: usize, out: &mut Vec<u32>) {
        if word.chars().nth(MAX_CHARS_PER_WORD).is_some() {
            out.push(self.specials.unk);
            return;
        }
        let rollback = out.len();
        let mut start = 0;
        while start < word.len() {
            let table = if start == 0 {
                &self.word_start
            } else {
                &self.continuation
            };
            let mut end = word.len().min(start + self.longest_piece);
            let found = loop {
                while !word.is_char_boundary(end) {
                    end -= 1;
                }
                if end <= start {
                    break None;
                }
                if let Some(&id) = table.get(&word[start..end]) {
                    break Some(id);
                }
                end -= 1;
            };
            match found {
                Some(id) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    out.truncate(rollback);
                    out.push(self.specials.unk);
                    return;
                }
            }
        }
        out.truncate(limit.max(rollback));
    }
}

/// Splits normalised text into words: runs between whitespace, with each
/// punctuation character a word of its own (`BertPreTokenizer`).
fn split_words(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        rest = rest.trim_start_matches(char::is_whitespace);
        let first = rest.chars().next()?;
        let len = if is_punctuation(first) {
            first.len_utf8()
        } else {
            rest.find(|c: char| c.is_whitespace() || is_punctuation(c))
                .unwrap_or(rest.len())
        };
        let (word, tail) = rest.split_at(len);
        rest = tail;
        Some(word)
    })
}

/// Whitespace as `BertNormalizer` sees it.
fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Characters `BertNormalizer` removes: Cc, Cf and Co, except `\t\n\r`.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r')
        && (c.is_other_control() || c.is_other_format() || c.is_other_private_use())
}

/// Punctuation as `BertPreTokenizer` sees it: ASCII punctuation or Unicode P*.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

/// The CJK ideograph blocks of the original BERT tokenizer.
fn is_cjk_ideograph(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> WordPiece {
        let vocab =
            "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nun\n##aff\n##able\nhello\n,\n!\n中\n##hello\n";
        WordPiece::from_vocab_txt(vocab, true).unwrap()
    }

    #[test]
    fn splits_greedily_and_marks_unknown_words() {
        let wp = tiny();
        assert_eq!(wp.pieces("Unaffable, HELLO!"), [5, 6, 7, 9, 8, 10]);
        assert_eq!(wp.pieces("unaffablex hello"), [1, 8]);
        assert_eq!(wp.pieces("中中"), [11, 11]);
    }

    #[test]
    fn literal_specials_and_truncation() {
        let wp = tiny();
        // `[pad]` is not the special token (case matters): three unknown words.
        assert_eq!(
            wp.encode("hello[SEP]hello [pad]", 512),
            [2, 8, 3, 8, 1, 1, 1, 3]
        );
        assert_eq!(wp.encode("hello hello hello", 4), [2, 8, 8, 3]);
        assert_eq!(wp.encode("", 256), [2, 3]);
        assert_eq!(wp.encode("hello", 0), [2, 3]);
    }

    /// The ids are `encode`'s, and the input counts as cut exactly when
    /// its untruncated pieces and the two specials exceed the length.
    #[test]
    fn truncation_is_reported_with_the_ids() {
        let wp = tiny();
        let texts = [
            "",
            "hello",
            "hello hello hello",
            "Unaffable, HELLO!",
            "unaffablex hello [SEP] 中中",
        ];
        for text in texts {
            for max_len in 0..12 {
                let cut = wp.pieces(text).len() + 2 > max_len;
                assert_eq!(
                    wp.encode_with_truncation(text, max_len),
                    (wp.encode(text, max_len), cut),
                    "{text:?} {max_len}"
                );
            }
        }
    }

    #[test]
    fn empty_special_tokens_are_not_matched_in_text() {
        let tokens: Vec<Box<str>> = ["", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]
            .into_iter()
            .map(Box::from)
            .collect();
        let specials = SpecialTokens {
            pad: 0,
            unk: 1,
            cls: 2,
            sep: 3,
            mask: 4,
        };
        let wp = WordPiece::new(tokens, specials, true).unwrap();
        assert_eq!(wp.encode("a a", 16), [2, 5, 5, 3]);
    }

    #[test]
    fn overlong_words_are_unknown() {
        let wp = tiny();
        let mut hundred = vec![8];
        hundred.extend([12; 19]);
        assert_eq!(wp.pieces(&"hello".repeat(20)), hundred);
        assert_eq!(wp.pieces(&"hello".repeat(21)), [1]);
    }
}
