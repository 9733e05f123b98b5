//! The open-addressing hash index from token bytes to rank, shared by the
//! runtime ([`crate::vocab::Vocab`]) and by `build.rs`, which lays out the
//! embedded vocabularies' indexes at build time so that they are used in
//! place instead of built at start-up.
//!
//! A table of `2^n ≥ 2 · tokens` slots of three words each: the token's
//! [`key`], then `length << 32 | rank` (zero for an empty slot: no token is
//! empty). A key's probe sequence starts at `hash & mask` and moves one slot
//! at a time.
//!
//! Beside the table, a filter of [`FILTER_BITS`] bits (128 KiB, which stays
//! in the core's cache where the table cannot) has one bit set per token;
//! a lookup whose bit is clear is no token, and most candidate spans that
//! merging looks up are none.
//!
//! For a token of at most [`INLINE`] bytes, the key and the length
//! identify the bytes, so a lookup compares three words and never reads the
//! token itself: one slot read per probe (one or two cache lines) instead of
//! three places (slot, offset table, token bytes). Longer tokens, rare in the vocabularies, are
//! confirmed against their bytes.

/// One slot: the key's two words, then `length << 32 | rank`.
pub type Slot = [u64; 3];

/// An empty slot's last word.
pub const EMPTY: u64 = 0;

/// Tokens up to this many bytes are identified by their key and length.
pub const INLINE: usize = 16;

/// The bytes folded into two words such that, for up to [`INLINE`] bytes,
/// the words and the length determine the bytes. Loads overlap rather than
/// pad: 8 to 16 bytes are the first eight and the last eight; 4 to 7 the
/// first four and the last four; 1 to 3 the first, middle and last byte.
/// Beyond 16 bytes the words are the first sixteen bytes.
#[inline]
pub fn key(bytes: &[u8]) -> [u64; 2] {
    let n = bytes.len();
    if n >= 8 {
        let end = n.min(INLINE);
        [word(&bytes[..8]), word(&bytes[end - 8..end])]
    } else if n >= 4 {
        [
            u64::from(half(&bytes[..4])) | u64::from(half(&bytes[n - 4..])) << 32,
            0,
        ]
    } else if n > 0 {
        let spread =
            u64::from(bytes[0]) | u64::from(bytes[n / 2]) << 8 | u64::from(bytes[n - 1]) << 16;
        [spread, 0]
    } else {
        [0, 0]
    }
}

/// Eight bytes as a little-endian word.
#[inline]
fn word(eight: &[u8]) -> u64 {
    u64::from_le_bytes(eight.try_into().expect("eight bytes"))
}

/// Four bytes as a little-endian half-word.
#[inline]
fn half(four: &[u8]) -> u32 {
    u32::from_le_bytes(four.try_into().expect("four bytes"))
}

/// The hash of a key and length: one folded 64×64→128-bit multiply, the
/// same on every target (the laid-out tables are used wherever the words
/// read as little-endian).
#[inline]
pub fn hash(key: [u64; 2], len: usize) -> u64 {
    const SEED: [u64; 2] = [0x243F_6A88_85A3_08D3, 0x9E37_79B9_7F4A_7C15];
    let product =
        u128::from(key[0] ^ SEED[0]) * u128::from(key[1] ^ SEED[1] ^ (len as u64).rotate_right(8));
    product as u64 ^ (product >> 64) as u64
}

/// The slot's last word for a token of `len` bytes and rank `rank`.
#[inline]
pub fn meta(len: usize, rank: u32) -> u64 {
    (len as u64) << 32 | u64::from(rank)
}

/// The index of `tokens` (rank, bytes), `count` ranks in all; every bytes
/// must be distinct (empty ones are left out: no piece is empty).
pub fn build<'a>(count: usize, tokens: impl Iterator<Item = (u32, &'a [u8])>) -> Vec<Slot> {
    let size = (count * 2).next_power_of_two().max(16);
    let mask = size - 1;
    let mut slots = vec![[0, 0, EMPTY]; size];
    for (rank, bytes) in tokens.filter(|(_, bytes)| !bytes.is_empty()) {
        let key = key(bytes);
        let mut at = hash(key, bytes.len()) as usize & mask;
        while slots[at][2] != EMPTY {
            at = (at + 1) & mask;
        }
        slots[at] = [key[0], key[1], meta(bytes.len(), rank)];
    }
    slots
}

/// Bits in the filter.
pub const FILTER_BITS: usize = 1 << 20;

/// The filter bit of a hash: from its high bits (the slot is from its low).
#[inline]
pub fn filter_bit(hash: u64) -> usize {
    (hash >> 40) as usize & (FILTER_BITS - 1)
}

/// The filter of an index: the bit of every token's hash set.
pub fn filter(slots: &[Slot]) -> Vec<u64> {
    let mut bits = vec![0u64; FILTER_BITS / 64];
    for &[first, second, meta] in slots.iter().filter(|s| s[2] != EMPTY) {
        let bit = filter_bit(hash([first, second], (meta >> 32) as usize));
        bits[bit / 64] |= 1 << (bit % 64);
    }
    bits
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Distinct byte strings up to 16 bytes never share a key and length:
    /// every string over a two-letter alphabet up to 16 long, and strings
    /// that differ in one byte at each position.
    #[test]
    fn keys_identify_short_bytes() {
        let mut seen = std::collections::HashSet::new();
        for len in 1..=INLINE {
            for bits in 0..1u32 << len {
                let bytes: Vec<u8> = (0..len).map(|i| b'a' + (bits >> i & 1) as u8).collect();
                assert!(seen.insert((key(&bytes), len)), "{bytes:?}");
            }
            for at in 0..len {
                let mut bytes = vec![b'x'; len];
                bytes[at] = b'y';
                let other = vec![b'x'; len];
                assert_ne!(key(&bytes), key(&other), "{len} {at}");
            }
        }
    }
}
