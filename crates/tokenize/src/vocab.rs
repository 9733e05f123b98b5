//! The vocabulary of a tokenizer: rank → bytes read in place from the BPE2
//! table, and bytes → rank through an open-addressing hash index
//! ([`crate::index`]) over the token blob — built once, or for the embedded
//! vocabularies laid out at build time and used in place.

use std::borrow::Cow;
use std::sync::OnceLock;

use modelbin_format::bpe2::Bpe2;
use modelbin_format::source::MappedFile;

use crate::backtrack::Backtracker;
use crate::index::{self, EMPTY, INLINE, Slot};

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

/// Token bytes by rank, and ranks by bytes (special tokens excluded).
#[derive(Debug)]
pub struct Vocab {
    file: Bpe2<Source>,
    /// The hash index (see [`crate::index`]).
    slots: Cow<'static, [Slot]>,
    mask: usize,
    /// The linear-time encoder's tables, built on the first long piece.
    backtracker: OnceLock<Option<Backtracker>>,
    /// The rank of every two-byte string (`first << 8 | second`), or
    /// `u32::MAX`: laid out at build time, or built on the first merge.
    pairs: OnceLock<Cow<'static, [u32]>>,
    /// The rank of every single byte, or `u32::MAX`.
    bytes: [u32; 256],
}

impl Vocab {
    /// Indexes every present rank of `file` except those for which
    /// `is_special` holds (special tokens are never produced by merging).
    pub fn new(file: Bpe2<Source>, is_special: impl Fn(u32) -> bool) -> Self {
        let slots = index::build(
            file.token_count() as usize,
            file.tokens().filter(|(rank, _)| !is_special(*rank)),
        );
        Vocab::with_index(file, Cow::Owned(slots), None)
    }

    /// A vocabulary whose index (a power of two long), and maybe its pair
    /// table, were built before (by `build.rs` for the embedded ones, from
    /// the same file).
    pub fn with_index(
        file: Bpe2<Source>,
        slots: Cow<'static, [Slot]>,
        pairs: Option<&'static [u32]>,
    ) -> Self {
        debug_assert!(slots.len().is_power_of_two());
        let mut vocab = Vocab {
            file,
            mask: slots.len() - 1,
            slots,
            backtracker: OnceLock::new(),
            pairs: pairs.map_or_else(OnceLock::new, |p| OnceLock::from(Cow::Borrowed(p))),
            bytes: [u32::MAX; 256],
        };
        for b in 0..=255u8 {
            vocab.bytes[usize::from(b)] = vocab.rank(&[b]).unwrap_or(u32::MAX);
        }
        vocab
    }

    /// The hash index's slots.
    #[cfg(test)]
    pub fn index(&self) -> &[Slot] {
        &self.slots
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

    /// The rank of byte `b` as a token, or `u32::MAX`.
    #[inline]
    pub fn byte_rank(&self, b: u8) -> u32 {
        self.bytes[usize::from(b)]
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

    /// The rank of `bytes` among non-special tokens.
    #[inline]
    pub fn rank(&self, bytes: &[u8]) -> Option<u32> {
        let key = index::key(bytes);
        let tag = index::meta(bytes.len(), 0);
        let mut at = index::hash(key, bytes.len()) as usize & self.mask;
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
