//! Recent pieces' tokens, per thread. Text repeats its words, and a piece
//! that is not one token costs a merge (tens of lookups in tables of
//! megabytes, out of the core's cache), where a remembered answer costs one
//! read of a table small enough to stay near the core.
//!
//! Direct-mapped by the index hash of the piece. Only pieces of at most
//! [`INLINE`] bytes are kept, whose key and length identify their bytes
//! (`crate::index`), so a hit compares words and never the bytes. Each
//! entry names the vocabulary it belongs to (`Vocab::id`), so threads that
//! switch between tokenizers never mix their answers.

use crate::index::{self, INLINE};

/// Tokens kept per piece; a piece with more is not remembered.
const MOST_TOKENS: usize = 5;

/// One remembered piece (48 bytes). All zeros is an empty entry: no
/// vocabulary has id 0.
#[derive(Debug, Clone, Copy)]
struct Entry {
    key: [u64; 2],
    /// The vocabulary's id (`Vocab::id`).
    owner: u64,
    /// The piece's length in bytes.
    len: u16,
    /// How many of `tokens` are the piece's.
    count: u16,
    tokens: [u32; MOST_TOKENS],
}

// SAFETY: every field is an integer or an array of them, for which all
// zeros is a valid value.
unsafe impl bytemuck::Zeroable for Entry {}

/// The cache of one thread.
#[derive(Debug, Default)]
pub struct PieceCache {
    /// Empty until the first piece is remembered, then
    /// [`PieceCache::ENTRIES`] long.
    entries: Box<[Entry]>,
}

impl PieceCache {
    /// Entries: 384 KiB, allocated zeroed (pages cost nothing until used).
    /// Measured on the benchmark corpus, 2^12 to 2^16 entries all gain
    /// on prose, code and Latin or Cyrillic text; larger ones cost more to
    /// fill on text that repeats little (base64).
    const ENTRIES: usize = 1 << 13;

    /// Whether a piece this long can be kept.
    #[inline]
    pub fn keeps(piece: &[u8]) -> bool {
        piece.len() <= INLINE
    }

    /// The key and entry of `piece`, one that [`PieceCache::keeps`].
    #[inline]
    fn slot(piece: &[u8]) -> ([u64; 2], usize) {
        let key = index::key(piece);
        let hash = index::hash(key, piece.len());
        // Above the bits that place a piece in the index.
        (key, (hash >> 40) as usize & (Self::ENTRIES - 1))
    }

    /// The remembered tokens of `piece` in vocabulary `owner`.
    #[inline]
    pub fn get(&self, owner: u64, piece: &[u8]) -> Option<&[u32]> {
        let (key, at) = Self::slot(piece);
        let entry = self.entries.get(at)?;
        (entry.key == key && entry.owner == owner && usize::from(entry.len) == piece.len())
            .then(|| &entry.tokens[..usize::from(entry.count)])
    }

    /// Remembers that, in vocabulary `owner`, `piece` encodes to `tokens`.
    #[inline]
    pub fn put(&mut self, owner: u64, piece: &[u8], tokens: &[u32]) {
        if tokens.len() > MOST_TOKENS || !Self::keeps(piece) {
            return;
        }
        if self.entries.is_empty() {
            self.entries = bytemuck::allocation::zeroed_slice_box(Self::ENTRIES);
        }
        let (key, at) = Self::slot(piece);
        let mut entry = Entry {
            key,
            owner,
            len: piece.len() as u16,
            count: tokens.len() as u16,
            tokens: [0; MOST_TOKENS],
        };
        entry.tokens[..tokens.len()].copy_from_slice(tokens);
        self.entries[at] = entry;
    }
}

#[cfg(test)]
mod tests {
    use super::{MOST_TOKENS, PieceCache};
    use crate::index::INLINE;

    /// A remembered piece comes back for its vocabulary only; pieces too
    /// long, or with too many tokens, are not kept; a piece that lands in
    /// a taken entry replaces it.
    #[test]
    fn remembers_per_vocabulary_within_limits() {
        let mut cache = PieceCache::default();
        assert_eq!(cache.get(1, b"hello"), None);
        cache.put(1, b"hello", &[10, 11]);
        assert_eq!(cache.get(1, b"hello"), Some(&[10, 11][..]));
        assert_eq!(cache.get(2, b"hello"), None);
        assert_eq!(cache.get(1, b"hellp"), None);
        assert_eq!(cache.get(1, b"hell"), None);

        let long = [b'a'; INLINE + 1];
        assert!(!PieceCache::keeps(&long));
        cache.put(1, &long, &[1, 2]);
        assert_eq!(cache.get(1, &long), None);

        let many: Vec<u32> = (0..=MOST_TOKENS as u32).collect();
        cache.put(1, b"abcdefgh", &many);
        assert_eq!(cache.get(1, b"abcdefgh"), None);
        cache.put(1, b"abcdefgh", &many[..MOST_TOKENS]);
        assert_eq!(cache.get(1, b"abcdefgh"), Some(&many[..MOST_TOKENS]));

        // Fill every entry with other pieces: "hello" is overwritten or
        // still right, never wrong.
        for i in 0..PieceCache::ENTRIES as u32 * 4 {
            cache.put(1, format!("p{i}").as_bytes(), &[i]);
        }
        assert!(matches!(cache.get(1, b"hello"), None | Some(&[10, 11])));
        for i in 0..PieceCache::ENTRIES as u32 * 4 {
            let piece = format!("p{i}");
            let got = cache.get(1, piece.as_bytes());
            assert!(got.is_none() || got == Some(&[i][..]), "{piece}");
        }
    }
}
