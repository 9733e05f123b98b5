//! Counting large texts in parallel chunks.
//!
//! A chunk may end at byte `b` when `text[b - 1]` is `\n`, `text[b - 2]` is
//! an ASCII non-space and `text[b]` is an ASCII letter: under all four
//! built-in patterns a piece ends at such a `\n` and nothing there looks
//! across it, so counting the chunks separately gives the one-pass total
//! (checked by property tests). Custom patterns are counted in one pass.

use rayon::prelude::*;

use crate::pretokenize::Pattern;
use crate::tokenizer::Tokenizer;

/// Texts shorter than this are counted in one pass.
const MIN_CHUNK: usize = 1 << 20;

/// The first safe boundary at or after `from`, if any.
pub fn safe_boundary(text: &[u8], from: usize) -> Option<usize> {
    let mut i = from.max(2);
    while i < text.len() {
        let nl = memchr_newline(&text[i - 1..])? + i - 1;
        let b = nl + 1;
        if b < text.len()
            && nl >= 1
            && text[nl - 1].is_ascii()
            && !text[nl - 1].is_ascii_whitespace()
            && text[b].is_ascii_alphabetic()
        {
            return Some(b);
        }
        i = b + 1;
    }
    None
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

/// Splits `text` into chunks of at least `min_chunk` bytes at safe boundaries.
pub fn chunks(text: &str, min_chunk: usize) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    while let Some(b) = safe_boundary(bytes, start + min_chunk) {
        out.push(&text[start..b]);
        start = b;
    }
    out.push(&text[start..]);
    out
}

impl Tokenizer {
    /// Like [`Tokenizer::count`], splitting large texts into chunks at
    /// boundaries where no piece can cross and counting them in parallel.
    /// Gives the same total.
    pub fn count_parallel(&self, text: &str) -> crate::Result<usize> {
        let threads = rayon::current_num_threads();
        if threads < 2 || text.len() < 2 * MIN_CHUNK || matches!(self.pattern(), Pattern::Custom(_))
        {
            return self.count(text);
        }
        let chunk = (text.len() / (threads * 4)).max(MIN_CHUNK);
        chunks(text, chunk)
            .par_iter()
            .map(|part| self.count(part))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{chunks, safe_boundary};
    use crate::{Pattern, Tokenizer};

    #[test]
    fn boundaries() {
        assert_eq!(safe_boundary(b"ab\ncd", 0), Some(3));
        assert_eq!(
            safe_boundary(b"a \ncd", 0),
            None,
            "space before the newline"
        );
        assert_eq!(
            safe_boundary(b"ab\n cd", 0),
            None,
            "space after the newline"
        );
        assert_eq!(
            safe_boundary(b"ab\n1d\nx", 0),
            Some(6),
            "a digit after the first newline"
        );
        assert_eq!(safe_boundary(b"ab\ncd", 4), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Counting chunk by chunk gives the one-pass count, for every pattern.
        #[test]
        fn chunked_counts_equal_one_pass(
            lines in prop::collection::vec("[a-zA-Z .,!?'0-9\t]{0,20}|\\PC{0,10}", 1..40),
            separators in prop::collection::vec(prop::sample::select(vec!["\n", "\n\n", " \n", "\r\n", "\n "]), 40),
            min_chunk in 1usize..50,
        ) {
            let text: String = lines.iter().zip(&separators).flat_map(|(l, s)| [l.as_str(), s]).collect();
            let parts = chunks(&text, min_chunk);
            prop_assert_eq!(parts.concat(), text.clone());
            for pattern in [Pattern::Cl100k, Pattern::O200k, Pattern::Gpt2] {
                let mut offset = 0;
                let mut chunked = vec![];
                for part in &parts {
                    pattern.split(part, |a, b| chunked.push((offset + a, offset + b))).unwrap();
                    offset += part.len();
                }
                let mut whole = vec![];
                pattern.split(&text, |a, b| whole.push((a, b))).unwrap();
                prop_assert_eq!(chunked, whole, "{:?} {:?}", pattern, parts);
            }
            for name in ["cl100k_base", "o200k_base"] {
                let t = Tokenizer::embedded(name).unwrap();
                let total: usize = parts.iter().map(|p| t.count(p).unwrap()).sum();
                prop_assert_eq!(total, t.count(&text).unwrap(), "{}", name);
            }
        }
    }
}
