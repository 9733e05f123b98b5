//! The vocabulary of a tokenizer: rank → bytes from the BPE2 table, and
//! bytes → rank through an open-addressing hash index built once over the
//! token blob (no per-token allocation; keys are the blob's own bytes).

use std::hash::Hasher;
use std::sync::OnceLock;

use modelbin_format::bpe2::Bpe2;
use modelbin_format::source::MappedFile;
use rustc_hash::FxHasher;

use crate::backtrack::Backtracker;

const EMPTY: u64 = u64::MAX;

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
    /// (offset into the blob, length) per rank; (0, 0) for absent ranks.
    spans: Vec<(u32, u32)>,
    blob_start: usize,
    /// `(hash >> 32) << 32 | rank`, or [`EMPTY`].
    slots: Vec<u64>,
    mask: usize,
    /// The linear-time encoder's tables, built on the first long piece.
    backtracker: OnceLock<Option<Backtracker>>,
}

#[inline]
fn hash(bytes: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(bytes);
    h.finish()
}

impl Vocab {
    /// Indexes every present rank of `file` except those for which
    /// `is_special` holds (special tokens are never produced by merging).
    pub fn new(file: Bpe2<Source>, is_special: impl Fn(u32) -> bool) -> Self {
        let count = file.token_count() as usize;
        let blob_start = file.blob_start();
        let spans: Vec<(u32, u32)> = file.entries().collect();
        let size = (count * 2).next_power_of_two().max(16);
        let mut vocab = Vocab {
            file,
            spans,
            blob_start,
            slots: vec![EMPTY; size],
            mask: size - 1,
            backtracker: OnceLock::new(),
        };
        for rank in 0..count as u32 {
            if vocab.spans[rank as usize].1 == 0 || is_special(rank) {
                continue;
            }
            let h = hash(vocab.token(rank).expect("present"));
            let mut slot = h as usize & vocab.mask;
            while vocab.slots[slot] != EMPTY {
                slot = (slot + 1) & vocab.mask;
            }
            // Ranks are unique and bytes are unique (validated by Bpe2).
            vocab.slots[slot] = (h >> 32 << 32) | u64::from(rank);
        }
        vocab
    }

    /// The BPE2 file.
    pub fn file(&self) -> &Bpe2<Source> {
        &self.file
    }

    /// The bytes of `rank`, if present.
    #[inline]
    pub fn token(&self, rank: u32) -> Option<&[u8]> {
        let &(start, len) = self.spans.get(rank as usize)?;
        if len == 0 {
            return None;
        }
        let start = self.blob_start + start as usize;
        Some(&self.file.file_bytes()[start..start + len as usize])
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

    /// The rank of `bytes` among non-special tokens.
    #[inline]
    pub fn rank(&self, bytes: &[u8]) -> Option<u32> {
        let h = hash(bytes);
        let tag = h >> 32 << 32;
        let mut slot = h as usize & self.mask;
        let file = self.file.file_bytes();
        loop {
            let entry = self.slots[slot];
            if entry == EMPTY {
                return None;
            }
            if entry & 0xFFFF_FFFF_0000_0000 == tag {
                let rank = entry as u32;
                let (start, len) = self.spans[rank as usize];
                let start = self.blob_start + start as usize;
                if &file[start..start + len as usize] == bytes {
                    return Some(rank);
                }
            }
            slot = (slot + 1) & self.mask;
        }
    }
}
