//! The open-addressing hash index from token bytes to rank, shared by the
//! runtime ([`crate::vocab::Vocab`]) and by `build.rs`, which lays out the
//! embedded vocabularies' indexes at build time so that they are used in
//! place instead of built at start-up.
//!
//! A table of `2^n ≥ 2 · tokens` slots; each slot is [`EMPTY`] or
//! `(hash >> 32) << 32 | rank`; a key's probe sequence starts at
//! `hash & mask` and moves one slot at a time.

use std::hash::Hasher;

use rustc_hash::FxHasher;

/// An empty slot.
pub const EMPTY: u64 = u64::MAX;

/// Bytes whose hash is stored beside a laid-out index: the index is used
/// only where [`hash`] gives the same value (the hash depends on the
/// target's pointer width, and `build.rs` runs on the host).
pub const PROBE: &[u8] = b"modelbin hash index probe";

/// The hash of a token's bytes.
#[inline]
pub fn hash(bytes: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(bytes);
    h.finish()
}

/// The index of `tokens` (rank, bytes), `count` ranks in all; every bytes
/// must be distinct.
pub fn build<'a>(count: usize, tokens: impl Iterator<Item = (u32, &'a [u8])>) -> Vec<u64> {
    let size = (count * 2).next_power_of_two().max(16);
    let mask = size - 1;
    let mut slots = vec![EMPTY; size];
    for (rank, bytes) in tokens {
        let h = hash(bytes);
        let mut slot = h as usize & mask;
        while slots[slot] != EMPTY {
            slot = (slot + 1) & mask;
        }
        slots[slot] = (h >> 32 << 32) | u64::from(rank);
    }
    slots
}

/// The rank of every two-byte token at `first << 8 | second`, `u32::MAX`
/// elsewhere (65,536 entries), from `tokens` (rank, bytes).
pub fn pairs<'a>(tokens: impl Iterator<Item = (u32, &'a [u8])>) -> Vec<u32> {
    let mut pairs = vec![u32::MAX; 1 << 16];
    for (rank, bytes) in tokens {
        if let &[a, b] = bytes {
            pairs[usize::from(a) << 8 | usize::from(b)] = rank;
        }
    }
    pairs
}
