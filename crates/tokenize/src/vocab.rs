//! The vocabulary of a tokenizer: rank → bytes read in place from the BPE2
//! table, and bytes → rank through an open-addressing hash index
//! ([`crate::index`]) that keeps short tokens' bytes in its slots — built
//! once, or for the embedded vocabularies laid out at build time and used
//! in place, with the other tables merging needs.

use std::borrow::Cow;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use modelbin_format::bpe2::Bpe2;
use modelbin_format::io::source::MappedFile;

use crate::bpe::backtrack::{Backtracker, Tokens};
use crate::index::{self, EMPTY, INLINE, Slot};
use crate::layout::Reader;

/// Where the BPE2 bytes live.
#[derive(Debug)]
pub enum Source {
    /// Compiled into the binary.
    Static(&'static [u8]),
    /// A memory-mapped file.
    Mapped(MappedFile),
    /// Owned bytes.
    Owned(Vec<u8>),
}

impl AsRef<[u8]> for Source {
    fn as_ref(&self) -> &[u8] {
        match self {
            Source::Static(b) => b,
            Source::Mapped(m) => m,
            Source::Owned(v) => v,
        }
    }
}

/// The tables `build.rs` lays out for an embedded vocabulary, used in
/// place.
#[derive(Debug, Clone, Copy)]
pub struct LaidOut {
    /// The hash index (see [`crate::index`]).
    pub slots: &'static [Slot],
    /// The index's filter.
    pub filter: &'static [u64],
    /// The two-byte pair table.
    pub pairs: &'static [u32],
    /// The backtracking encoder's tables (see [`crate::layout`]).
    pub backtracker: &'static [u8],
    /// The direct tables (see [`Vocab::direct`]).
    pub direct: &'static [u32],
}

/// Entries in the direct tables: 256 single bytes, then the 1,000
/// three-digit strings.
const DIRECT: usize = 256 + 1000;

/// Token bytes by rank, and ranks by bytes (special tokens excluded).
pub struct Vocab {
    file: Bpe2<Source>,
    /// The hash index (see [`crate::index`]).
    slots: Cow<'static, [Slot]>,
    mask: usize,
    /// The index's filter (see [`crate::index`]).
    filter: Cow<'static, [u64]>,
    /// The linear-time encoder's tables: laid out at build time, or built on
    /// the first piece of [`crate::bpe::HUGE_PIECE`] bytes or more.
    backtracker: OnceLock<Option<Backtracker>>,
    /// The rank of every two-byte string (`first << 8 | second`), or
    /// `u32::MAX`: laid out at build time, or built on the first two-byte
    /// lookup.
    pairs: OnceLock<Cow<'static, [u32]>>,
    /// The rank of every single byte, then of every three-digit ASCII
    /// string `000`–`999` by its value (numbers are split into such
    /// pieces), or `u32::MAX`: laid out at build time, or looked up when
    /// the vocabulary is made.
    direct: Cow<'static, [u32]>,
    /// Distinguishes this vocabulary from every other one made in the
    /// process (entries of the per-thread piece cache name theirs).
    id: u64,
}

/// The next [`Vocab`]'s id; 0 is no vocabulary's.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl std::fmt::Debug for Vocab {
    /// A summary: the tables are megabytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vocab")
            .field("tokens", &self.file.token_count())
            .field("index_slots", &self.slots.len())
            .field("laid_out", &matches!(self.slots, Cow::Borrowed(_)))
            .field("backtracker_ready", &self.backtracker_is_ready())
            .finish_non_exhaustive()
    }
}

impl Vocab {
    /// Indexes every present rank of `file` except those for which
    /// `is_special` holds (special tokens are never produced by merging).
    pub fn new(file: Bpe2<Source>, is_special: impl Fn(u32) -> bool) -> Self {
        let slots = index::build(
            file.token_count() as usize,
            file.tokens().filter(|(rank, _)| !is_special(*rank)),
        );
        let filter = index::filter(&slots);
        let mut vocab = Vocab::assemble(
            file,
            Cow::Owned(slots),
            Cow::Owned(filter),
            OnceLock::new(),
            Cow::Borrowed(&[]),
        );
        vocab.direct = Cow::Owned(vocab.direct_tables());
        vocab
    }

    /// A vocabulary whose tables `build.rs` laid out from the same file.
    /// The backtracking encoder's tables are read in place too, unless
    /// their blob does not fit the file; they are then built on first use.
    pub fn laid_out(file: Bpe2<Source>, tables: LaidOut) -> Self {
        debug_assert!(tables.slots.len().is_power_of_two());
        debug_assert_eq!(tables.filter.len(), index::FILTER_BITS / 64);
        debug_assert_eq!(tables.direct.len(), DIRECT);
        let vocab = Vocab::assemble(
            file,
            Cow::Borrowed(tables.slots),
            Cow::Borrowed(tables.filter),
            OnceLock::from(Cow::Borrowed(tables.pairs)),
            Cow::Borrowed(tables.direct),
        );
        if let Some(backtracker) =
            Reader::new(tables.backtracker).and_then(|mut r| Backtracker::read(&mut r, &vocab))
        {
            let _ = vocab.backtracker.set(Some(backtracker));
        }
        vocab
    }

    /// A vocabulary from its parts; the backtracker is left to be set or
    /// built.
    fn assemble(
        file: Bpe2<Source>,
        slots: Cow<'static, [Slot]>,
        filter: Cow<'static, [u64]>,
        pairs: OnceLock<Cow<'static, [u32]>>,
        direct: Cow<'static, [u32]>,
    ) -> Self {
        Vocab {
            file,
            mask: slots.len() - 1,
            slots,
            filter,
            backtracker: OnceLock::new(),
            pairs,
            direct,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The direct tables, looked up in the hash index.
    pub fn direct_tables(&self) -> Vec<u32> {
        let bytes = (0..=255u8).map(|b| [b].to_vec());
        let digits = (0..1000).map(|v: u32| format!("{v:03}").into_bytes());
        bytes
            .chain(digits)
            .map(|key| self.rank(&key).unwrap_or(u32::MAX))
            .collect()
    }

    /// The hash index's slots and filter.
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "build.rs lays out the index with it")
    )]
    pub fn index(&self) -> (&[Slot], &[u64]) {
        (&self.slots, &self.filter)
    }

    /// This vocabulary's id, distinct from every other vocabulary's in the
    /// process (and never 0).
    #[inline]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The BPE2 file.
    pub fn file(&self) -> &Bpe2<Source> {
        &self.file
    }

    /// The bytes of `rank`, if present.
    #[inline]
    pub fn token(&self, rank: u32) -> Option<&[u8]> {
        self.file.token(rank)
    }

    /// Whether `rank` is an ordinary token: present and not special.
    pub fn ordinary(&self, rank: u32) -> bool {
        self.token(rank)
            .is_some_and(|bytes| self.rank(bytes) == Some(rank))
    }

    /// The backtracking encoder's tables (built once, on first use), or
    /// `None` for a vocabulary it cannot encode exactly.
    pub fn backtracker(&self) -> Option<&Backtracker> {
        self.backtracker
            .get_or_init(|| Backtracker::new(self))
            .as_ref()
    }

    /// Whether the backtracking encoder's tables were settled already (laid
    /// out, or built for an earlier piece; also when the vocabulary turned
    /// out not to suit the encoder, which [`Vocab::backtracker`] then says).
    #[inline]
    pub fn backtracker_is_ready(&self) -> bool {
        self.backtracker.get().is_some()
    }

    /// The rank of byte `b` as a token, or `u32::MAX`.
    #[inline]
    pub fn byte_rank(&self, b: u8) -> u32 {
        self.direct[usize::from(b)]
    }

    /// The rank of the two bytes `a`, `b` as one token, or `u32::MAX`, from
    /// a 65,536-entry table.
    #[inline]
    pub fn pair_rank(&self, a: u8, b: u8) -> u32 {
        let pairs = self.pairs.get_or_init(|| {
            Cow::Owned(index::pairs(self.file.tokens().filter(|&(rank, bytes)| {
                bytes.len() == 2 && self.rank(bytes) == Some(rank)
            })))
        });
        pairs[usize::from(a) << 8 | usize::from(b)]
    }

    /// The pair table: [`Vocab::pair_rank`] of every two bytes, in
    /// `first << 8 | second` order.
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "build.rs lays out the pair table with it")
    )]
    pub fn pair_table(&self) -> Vec<u32> {
        (0..=u16::MAX)
            .map(|ab| {
                let [a, b] = ab.to_be_bytes();
                self.pair_rank(a, b)
            })
            .collect()
    }

    /// The rank of `bytes` among non-special tokens, from the byte, pair
    /// and three-digit tables where they answer (short pieces are the most
    /// common) and from the hash index otherwise.
    ///
    /// Always inlined: it runs once per piece, and thin LTO would leave it
    /// out of line in some binaries (the CLI and the Python module) and
    /// inline it in others.
    #[inline(always)]
    pub fn piece_rank(&self, bytes: &[u8]) -> Option<u32> {
        let rank = match *bytes {
            [b] => self.byte_rank(b),
            [a, b] => self.pair_rank(a, b),
            [a, b, c] if [a, b, c].iter().all(u8::is_ascii_digit) => {
                let value = [a, b, c]
                    .iter()
                    .fold(0, |v, &d| v * 10 + usize::from(d - b'0'));
                self.direct[256 + value]
            }
            _ => return self.rank(bytes),
        };
        (rank != u32::MAX).then_some(rank)
    }

    /// The rank of `bytes` among non-special tokens. Always inlined: as a
    /// call, it would save and restore registers for every lookup.
    #[inline(always)]
    pub fn rank(&self, bytes: &[u8]) -> Option<u32> {
        let key = index::key(bytes);
        let hash = index::hash(key, bytes.len());
        let bit = index::filter_bit(hash);
        if self.filter[bit / 64] >> (bit % 64) & 1 == 0 {
            return None;
        }
        let tag = index::meta(bytes.len(), 0);
        let mut at = hash as usize & self.mask;
        loop {
            let [first, second, meta] = self.slots[at];
            if meta == EMPTY {
                return None;
            }
            if first == key[0] && second == key[1] && meta >> 32 << 32 == tag {
                let rank = meta as u32;
                if bytes.len() <= INLINE || self.file.token(rank) == Some(bytes) {
                    return Some(rank);
                }
            }
            at = (at + 1) & self.mask;
        }
    }
}

impl Tokens for Vocab {
    fn token_count(&self) -> u32 {
        self.file().token_count()
    }

    fn ordinary_token(&self, rank: u32) -> Option<&[u8]> {
        self.token(rank).filter(|_| self.ordinary(rank))
    }

    fn rank_of(&self, bytes: &[u8]) -> Option<u32> {
        self.rank(bytes)
    }
}

#[cfg(test)]
mod tests {
    use crate::Tokenizer;

    /// The byte, pair and three-digit tables answer as the hash index does.
    #[test]
    fn piece_rank_equals_the_index() {
        for name in ["cl100k_base", "o200k_base"] {
            let vocab = Tokenizer::embedded(name).unwrap().vocab();
            for a in 0..=255u8 {
                assert_eq!(vocab.piece_rank(&[a]), vocab.rank(&[a]));
                for b in 0..=255u8 {
                    assert_eq!(vocab.piece_rank(&[a, b]), vocab.rank(&[a, b]));
                }
            }
            for value in 0..1000 {
                let digits = format!("{value:03}");
                assert_eq!(
                    vocab.piece_rank(digits.as_bytes()),
                    vocab.rank(digits.as_bytes())
                );
            }
            for other in [&b"0a1"[..], b"1 2", b" 12", b"abc", b"", b"hello world"] {
                assert_eq!(vocab.piece_rank(other), vocab.rank(other));
            }
        }
    }
}
