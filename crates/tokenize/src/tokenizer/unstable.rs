//! tiktoken's `encode_with_unstable`: the ids of a text that text typed after
//! it cannot change, and the ways its last piece may be tokenized once more
//! text follows (for completion at a cursor).

use std::collections::BTreeSet;

use super::{Specials, Tokenizer};
use crate::Result;

impl Tokenizer {
    /// The stable ids of `text` and every completion of its unstable end.
    ///
    /// The unstable end is the text's last piece (grown backwards over
    /// whitespace tokens, which a following piece can take over); the stable
    /// ids are those before it. A completion is a token sequence that
    /// starts with the unstable bytes (up to where it covers them): a single
    /// token extending them; the tokens of any split of them into a prefix
    /// and the start of some token; and, when they end in whitespace, that
    /// whitespace encoded apart. Text ending in an allowed special token
    /// has no unstable end. Completions come sorted.
    ///
    /// ```
    /// use modelbin_tokenize::{Specials, Tokenizer};
    /// let cl100k = Tokenizer::embedded("cl100k_base")?;
    /// let (stable, completions) = cl100k.encode_with_unstable("hello fan", Specials::None)?;
    /// assert_eq!(cl100k.decode(&stable)?, "hello");
    /// for completion in &completions {
    ///     let ids = [stable.as_slice(), completion].concat();
    ///     assert!(cl100k.decode_bytes(&ids)?.starts_with(b"hello fan"));
    /// }
    /// assert!(completions.contains(&cl100k.encode_ordinary(" fantastic")?));
    /// # Ok::<(), modelbin_tokenize::Error>(())
    /// ```
    pub fn encode_with_unstable(
        &self,
        text: &str,
        allowed: Specials<'_>,
    ) -> Result<(Vec<u32>, Vec<Vec<u32>>)> {
        let mut ids = self.encode(text, allowed, Specials::None)?;
        let allowed = self.select(allowed)?;
        let tail_start = super::special_finder(&allowed)
            .and_then(|finder| finder.find_iter(text).last())
            .map_or(0, |m| m.end());
        let mut last_piece = None;
        self.pattern.split(&text[tail_start..], |start, end| {
            last_piece = Some((start, end))
        })?;
        let Some((start, end)) = last_piece else {
            return Ok((ids, Vec::new()));
        };
        let piece = &text.as_bytes()[tail_start + start..tail_start + end];
        let unstable_from =
            self.unstable_start(&ids, ids.len() - self.encode_single_piece(piece).len());
        let unstable = self.decode_bytes(&ids[unstable_from..])?;
        ids.truncate(unstable_from);
        Ok((ids, self.completions(&unstable)?.into_iter().collect()))
    }

    /// Where the ids that text after them could change start: at the last
    /// piece's first id, `last_piece`, or, when that id is whitespace, at the
    /// first of the whitespace ids before it (a following piece can take
    /// whitespace over, as `\s+(?!\S)` does).
    pub(super) fn unstable_start(&self, ids: &[u32], mut last_piece: usize) -> usize {
        let whitespace = |id: u32| {
            self.vocab
                .token(id)
                .is_some_and(|t| t.iter().all(|b| b" \n\t".contains(b)))
        };
        if ids.get(last_piece).is_some_and(|&id| whitespace(id)) {
            while last_piece > 0 && whitespace(ids[last_piece - 1]) {
                last_piece -= 1;
            }
        }
        last_piece
    }

    /// The token sequences that start with `unstable`, cut where they cover it.
    fn completions(&self, unstable: &[u8]) -> Result<BTreeSet<Vec<u32>>> {
        let mut completions = BTreeSet::new();
        for rank in self.ranks_starting_with(unstable) {
            completions.insert(vec![rank]);
        }
        for split in 1..unstable.len() {
            let (prefix, suffix) = unstable.split_at(split);
            for rank in self.ranks_starting_with(suffix) {
                let token = self.vocab.token(rank).expect("a mergeable rank has bytes");
                let possibility = [prefix, token].concat();
                let encoded = match std::str::from_utf8(&possibility) {
                    Ok(text) => self.encode_ordinary(text)?,
                    Err(_) => self.encode_single_piece(&possibility),
                };
                let mut covered = 0;
                let cut = encoded
                    .iter()
                    .position(|&id| {
                        covered += self.vocab.token(id).map_or(0, <[u8]>::len);
                        covered >= unstable.len()
                    })
                    .map_or(encoded.len(), |at| at + 1);
                completions.insert(encoded[..cut].to_vec());
            }
        }
        if let Some(space) = trailing_whitespace(unstable) {
            let (before, space) = unstable.split_at(unstable.len() - space);
            if !before.is_empty() {
                let mut apart = self.encode_single_piece(before);
                apart.extend(self.encode_single_piece(space));
                completions.insert(apart);
            }
        }
        Ok(completions)
    }

    /// The ranks of the mergeable tokens whose bytes start with `prefix`.
    fn ranks_starting_with<'a>(&'a self, prefix: &'a [u8]) -> impl Iterator<Item = u32> + 'a {
        let sorted = self.ranks_by_bytes.get_or_init(|| {
            let mut ranks: Vec<u32> = self.mergeable_tokens().map(|(rank, _)| rank).collect();
            ranks.sort_by_key(|&rank| self.vocab.token(rank));
            ranks
        });
        let bytes = |rank: u32| self.vocab.token(rank).unwrap_or_default();
        let first = sorted.partition_point(|&rank| bytes(rank) < prefix);
        sorted[first..]
            .iter()
            .copied()
            .take_while(move |&rank| bytes(rank).starts_with(prefix))
    }
}

/// The length of the whitespace character `bytes` ends with, if it ends
/// with a whole one.
fn trailing_whitespace(bytes: &[u8]) -> Option<usize> {
    let start = (bytes.len().saturating_sub(4)..bytes.len())
        .find(|&at| std::str::from_utf8(&bytes[at..]).is_ok())?;
    let last = std::str::from_utf8(&bytes[start..])
        .ok()?
        .chars()
        .next_back()?;
    last.is_whitespace().then(|| last.len_utf8())
}
