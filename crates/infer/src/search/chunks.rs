//! Cutting a document into overlapping chunks of at most N model tokens
//! for search, at word boundaries: each chunk is a span of the original
//! text (so a hit shows the words as written, not as the tokenizer
//! normalised them), holding whole words whose tokens add up to at most N.
//! A single word longer than N tokens is a chunk of its own (the model
//! truncates it, as it truncates any long input).

use crate::{Error, Result};

/// How files are cut into the texts a search index ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Segments {
    /// Each non-empty line (or JSON Lines record, or Parquet row).
    #[default]
    Lines,
    /// Each document (a plain file, a JSON Lines record, a Parquet row)
    /// cut into chunks of at most `tokens` tokens, each sharing up to
    /// `overlap` tokens of whole words with the chunk before it.
    Chunks {
        /// The most tokens in a chunk (at least 1).
        tokens: usize,
        /// The most tokens a chunk repeats from the one before (less than
        /// `tokens`).
        overlap: usize,
    },
}

impl Segments {
    /// Chunks of at most `tokens` tokens overlapping by `overlap` tokens,
    /// by default a quarter of `tokens` (whole words of the chunk before
    /// carry its context over a cut).
    pub fn chunks(tokens: usize, overlap: Option<usize>) -> Segments {
        Segments::Chunks {
            tokens,
            overlap: overlap.unwrap_or(tokens / 4),
        }
    }

    /// [`Error::BadChunks`] for chunks of no tokens, or overlapping by a
    /// whole chunk (a cut that could not move forward).
    pub fn check(self) -> Result<()> {
        match self {
            Segments::Chunks { tokens, overlap } if tokens == 0 || overlap >= tokens => {
                Err(Error::BadChunks { tokens, overlap })
            }
            _ => Ok(()),
        }
    }
}

/// The chunks of `document`, each with the number of line breaks before
/// its first word (so its line is the document's first line plus that).
/// `tokens_of(word)` counts a word's tokens; `tokens` and `overlap` are as
/// in [`Segments::Chunks`], with `overlap < tokens`.
pub fn chunks(
    document: &str,
    tokens: usize,
    overlap: usize,
    mut tokens_of: impl FnMut(&str) -> usize,
) -> Vec<(usize, &str)> {
    let words = words(document);
    let counts: Vec<usize> = words
        .iter()
        .map(|&(s, e)| tokens_of(&document[s..e]))
        .collect();
    let mut out = Vec::new();
    let (mut start, mut newlines, mut counted_to) = (0, 0, 0);
    while start < words.len() {
        let (mut end, mut total) = (start, 0);
        while end < words.len() && (end == start || total + counts[end] <= tokens) {
            total += counts[end];
            end += 1;
        }
        let (first, last) = (words[start].0, words[end - 1].1);
        newlines += document[counted_to..first].matches('\n').count();
        counted_to = first;
        out.push((newlines, &document[first..last]));
        if end == words.len() {
            break;
        }
        // Step back over whole words worth at most `overlap` tokens, but
        // always forward of this chunk's start.
        let (mut next, mut repeated) = (end, 0);
        while next > start + 1 && repeated + counts[next - 1] <= overlap {
            next -= 1;
            repeated += counts[next];
        }
        start = next;
    }
    out
}

/// The byte ranges of the whitespace-separated words of `text`.
fn words(text: &str) -> Vec<(usize, usize)> {
    let mut words = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                words.push((s, at));
                start = None;
            }
            (false, None) => start = Some(at),
            _ => {}
        }
    }
    if let Some(s) = start {
        words.push((s, text.len()));
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One token per character, so that the sums are easy to see.
    fn by_chars(word: &str) -> usize {
        word.chars().count()
    }

    #[test]
    fn chunks_hold_whole_words_up_to_the_budget_and_overlap_by_words() {
        let text = "aa bb\ncc dd\n\nee ff";
        assert_eq!(
            chunks(text, 4, 0, by_chars),
            [(0, "aa bb"), (1, "cc dd"), (3, "ee ff")]
        );
        assert_eq!(
            chunks(text, 6, 2, by_chars),
            [(0, "aa bb\ncc"), (1, "cc dd\n\nee"), (3, "ee ff")]
        );
    }

    #[test]
    fn chunks_that_cannot_move_forward_are_refused() {
        assert!(Segments::chunks(8, None).check().is_ok());
        assert_eq!(
            Segments::chunks(8, None),
            Segments::Chunks {
                tokens: 8,
                overlap: 2
            }
        );
        for (tokens, overlap) in [(0, 0), (8, 8), (8, 9)] {
            assert!(matches!(
                Segments::chunks(tokens, Some(overlap)).check(),
                Err(Error::BadChunks { .. })
            ));
        }
    }

    #[test]
    fn a_word_longer_than_the_budget_is_a_chunk_of_its_own_and_every_step_moves_on() {
        let text = "a longlongword b";
        assert_eq!(
            chunks(text, 3, 2, by_chars),
            [(0, "a"), (0, "longlongword"), (0, "b")]
        );
        // An overlap as large as the chunk still moves a word forward.
        assert_eq!(chunks("a b c", 2, 1, by_chars), [(0, "a b"), (0, "b c")]);
        assert!(chunks(" \n\t ", 5, 1, by_chars).is_empty());
    }
}
