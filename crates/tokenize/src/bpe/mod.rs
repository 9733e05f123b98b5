//! Byte-pair merging of one piece, with tiktoken's rule: repeatedly merge the
//! adjacent pair whose concatenation has the lowest rank, leftmost on ties.
//!
//! A piece that is one token is one lookup. A short piece that is not is
//! looked up in the thread's cache of recent pieces (`piece_cache`) before
//! it is merged, and remembered after. Merging a short piece uses
//! tiktoken's own scheme (a vector of parts, linear scan for the minimum),
//! fastest when pieces are a few bytes. Longer pieces use the backtracking encoder
//! (`backtrack`), linear in the piece with memory of one bit per byte
//! beyond the output: from 16 bytes of ASCII, or 8 bytes with other text,
//! where its walk beats the scan's repeated lookups (measured per length on
//! the benchmark corpus). Its tables are laid out at build time for the
//! embedded vocabularies; for a vocabulary file they are built on the first
//! huge piece (about 40 ms for cl100k_base, 100 ms for o200k_base), and
//! until then pieces up to [`HUGE_PIECE`] use the scan or a heap over the
//! pairs with a linked list of parts (O(n log n)). A vocabulary the
//! backtracking encoder cannot serve exactly keeps the scan and the heap.

pub(crate) mod backtrack;
pub(crate) mod piece_cache;
pub(crate) mod prefix_trie;

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::bpe::piece_cache::PieceCache;
use crate::vocab::Vocab;

/// Pieces at least this long use the heap merge when the backtracking
/// encoder's tables are not there.
const LONG_PIECE: usize = 128;
/// Pieces at least this long use the backtracking encoder, building its
/// tables if need be.
pub const HUGE_PIECE: usize = 16 * 1024;
/// ASCII pieces at least this long use the backtracking encoder when its
/// tables are there.
const BACKTRACK_ASCII: usize = 16;
/// Other pieces at least this long use it too.
const BACKTRACK_OTHER: usize = 8;
const NONE: u32 = u32::MAX;
/// Marks a part start that was merged away.
const REMOVED: u32 = u32::MAX - 1;

/// Reusable buffers for merging, and the piece cache: one per thread,
/// through [`with_scratch`].
#[derive(Debug, Default)]
pub struct Scratch {
    parts: Vec<(u32, u32, u32)>,
    next: Vec<u32>,
    prev: Vec<u32>,
    pair_rank: Vec<u32>,
    heap: BinaryHeap<Reverse<(u32, u32)>>,
    tokens: Vec<u32>,
    dead_positions: Vec<u64>,
    /// Recent pieces' tokens.
    pieces: PieceCache,
    /// The tokens of the piece being merged.
    merged: Vec<u32>,
}

thread_local! {
    /// Each thread's merge buffers and piece cache, kept between calls.
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

/// Runs `f` with this thread's scratch (a fresh one if it is in use), then
/// frees any buffer a huge piece grew, so that a thread does not keep it.
pub fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => {
            let result = f(&mut scratch);
            scratch.trim();
            result
        }
        Err(_) => f(&mut Scratch::default()),
    })
}

impl Scratch {
    /// Empties the piece cache and frees its memory.
    pub fn forget_pieces(&mut self) {
        self.pieces = PieceCache::default();
    }

    /// Buffers up to this many bytes are kept between calls.
    const KEPT_BYTES: usize = 64 * 1024;

    /// Frees the buffers larger than [`Scratch::KEPT_BYTES`].
    fn trim(&mut self) {
        fn trim_vec<T>(v: &mut Vec<T>) {
            if v.capacity() * size_of::<T>() > Scratch::KEPT_BYTES {
                *v = Vec::new();
            }
        }
        trim_vec(&mut self.parts);
        trim_vec(&mut self.next);
        trim_vec(&mut self.prev);
        trim_vec(&mut self.pair_rank);
        trim_vec(&mut self.tokens);
        trim_vec(&mut self.dead_positions);
        trim_vec(&mut self.merged);
        if self.heap.capacity() * size_of::<Reverse<(u32, u32)>>() > Scratch::KEPT_BYTES {
            self.heap = BinaryHeap::new();
        }
    }
}

/// Calls `emit` with the ranks `piece` encodes to. Every byte must have a
/// rank (checked when the tokenizer is built). Always inlined into the
/// split loop (through `PieceEncoder`), which calls it for every piece.
#[inline(always)]
pub fn encode_piece(
    vocab: &Vocab,
    piece: &[u8],
    scratch: &mut Scratch,
    emit: &mut impl FnMut(u32),
) {
    if let Some(rank) = vocab.piece_rank(piece) {
        emit(rank);
        return;
    }
    if !PieceCache::keeps(piece) {
        merge(vocab, piece, scratch, emit);
        return;
    }
    if let Some(tokens) = scratch.pieces.get(vocab.id(), piece) {
        tokens.iter().for_each(|&t| emit(t));
        return;
    }
    let mut merged = std::mem::take(&mut scratch.merged);
    merged.clear();
    merge(vocab, piece, scratch, &mut |t| merged.push(t));
    scratch.pieces.put(vocab.id(), piece, &merged);
    merged.iter().for_each(|&t| emit(t));
    scratch.merged = merged;
}

/// Encodes a piece that is not one token.
#[inline]
fn merge(vocab: &Vocab, piece: &[u8], scratch: &mut Scratch, emit: &mut impl FnMut(u32)) {
    let medium =
        piece.len() >= BACKTRACK_ASCII || piece.len() >= BACKTRACK_OTHER && !piece.is_ascii();
    let backtracks = piece.len() >= HUGE_PIECE || medium && vocab.backtracker_is_ready();
    if backtracks && backtrack(vocab, piece, scratch, emit) {
        return;
    }
    if piece.len() < LONG_PIECE {
        merge_small(vocab, piece, scratch, emit);
    } else {
        merge_large(vocab, piece, scratch, emit);
    }
}

/// Encodes `piece` with the backtracking encoder, if the vocabulary has one.
fn backtrack(
    vocab: &Vocab,
    piece: &[u8],
    scratch: &mut Scratch,
    emit: &mut impl FnMut(u32),
) -> bool {
    let Some(backtracker) = vocab.backtracker() else {
        return false;
    };
    scratch.tokens.clear();
    if !backtracker.encode(piece, &mut scratch.tokens, &mut scratch.dead_positions) {
        return false;
    }
    scratch.tokens.iter().for_each(|&t| emit(t));
    true
}

fn rank_of(vocab: &Vocab, bytes: &[u8]) -> u32 {
    vocab.rank(bytes).unwrap_or(NONE)
}

fn merge_small(vocab: &Vocab, piece: &[u8], scratch: &mut Scratch, emit: &mut impl FnMut(u32)) {
    let parts = &mut scratch.parts;
    parts.clear();
    // parts[i] = (start, rank of the pair starting at part i, rank of part
    // i itself): merging a pair makes the token of the pair's rank.
    for i in 0..piece.len() - 1 {
        parts.push((i as u32, vocab.pair_rank(piece[i], piece[i + 1]), NONE));
    }
    parts.push((piece.len() as u32 - 1, NONE, NONE));
    parts.push((piece.len() as u32, NONE, NONE));
    let pair = |parts: &[(u32, u32, u32)], i: usize| -> u32 {
        if i + 2 < parts.len() {
            rank_of(vocab, &piece[parts[i].0 as usize..parts[i + 2].0 as usize])
        } else {
            NONE
        }
    };
    loop {
        let (mut best, mut best_rank) = (0, NONE);
        for (i, &(_, rank, _)) in parts[..parts.len() - 1].iter().enumerate() {
            if rank < best_rank {
                (best, best_rank) = (i, rank);
            }
        }
        if best_rank == NONE {
            break;
        }
        parts.remove(best + 1);
        parts[best].2 = best_rank;
        parts[best].1 = pair(parts, best);
        if best > 0 {
            parts[best - 1].1 = pair(parts, best - 1);
        }
    }
    for w in parts.windows(2) {
        let (start, _, rank) = w[0];
        if rank != NONE {
            emit(rank);
        } else {
            // A part never merged is one byte.
            emit(vocab.byte_rank(piece[start as usize]));
        }
    }
}

fn merge_large(vocab: &Vocab, piece: &[u8], scratch: &mut Scratch, emit: &mut impl FnMut(u32)) {
    let n = piece.len();
    let Scratch {
        next,
        prev,
        pair_rank,
        heap,
        ..
    } = scratch;
    next.clear();
    next.extend(1..=n as u32);
    prev.clear();
    prev.extend((0..n as u32).map(|i| i.wrapping_sub(1)));
    pair_rank.clear();
    heap.clear();
    for i in 0..n - 1 {
        let rank = rank_of(vocab, &piece[i..i + 2]);
        pair_rank.push(rank);
        if rank != NONE {
            heap.push(Reverse((rank, i as u32)));
        }
    }
    pair_rank.push(NONE);
    // The rank of the pair starting at part `s`, given the current list.
    let pair = |next: &[u32], s: u32| -> u32 {
        let mid = next[s as usize];
        if mid as usize >= n {
            return NONE;
        }
        let end = next[mid as usize];
        rank_of(vocab, &piece[s as usize..end as usize])
    };
    while let Some(Reverse((rank, s))) = heap.pop() {
        if pair_rank[s as usize] != rank {
            continue; // stale: merged away or re-ranked since
        }
        let right = next[s as usize];
        let after = next[right as usize];
        next[s as usize] = after;
        if (after as usize) < n {
            prev[after as usize] = s;
        }
        pair_rank[right as usize] = REMOVED;
        let new_rank = pair(next, s);
        pair_rank[s as usize] = new_rank;
        if new_rank != NONE {
            heap.push(Reverse((new_rank, s)));
        }
        let p = prev[s as usize];
        if p != NONE {
            let left_rank = pair(next, p);
            pair_rank[p as usize] = left_rank;
            if left_rank != NONE {
                heap.push(Reverse((left_rank, p)));
            }
        }
    }
    let mut s = 0;
    while s < n {
        let end = next[s] as usize;
        emit(vocab.rank(&piece[s..end]).expect("merged parts are tokens"));
        s = end;
    }
}

#[cfg(test)]
pub(crate) fn merge_both_ways(vocab: &Vocab, piece: &[u8]) -> (Vec<u32>, Vec<u32>) {
    let mut scratch = Scratch::default();
    let (mut small, mut large) = (vec![], vec![]);
    merge_small(vocab, piece, &mut scratch, &mut |r| small.push(r));
    merge_large(vocab, piece, &mut scratch, &mut |r| large.push(r));
    (small, large)
}

/// The heap merge's and the backtracking encoder's tokens for `piece`.
#[cfg(test)]
pub(crate) fn heap_and_backtrack(vocab: &Vocab, piece: &[u8]) -> (Vec<u32>, Vec<u32>) {
    let mut scratch = Scratch::default();
    let mut heap = vec![];
    merge_large(vocab, piece, &mut scratch, &mut |r| heap.push(r));
    let mut tokens = vec![];
    let backtracker = vocab
        .backtracker()
        .expect("the embedded vocabularies are merge-ordered");
    assert!(backtracker.encode(piece, &mut tokens, &mut scratch.dead_positions));
    (heap, tokens)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{heap_and_backtrack, merge_both_ways};
    use crate::Tokenizer;

    const ENCODINGS: [&str; 2] = ["cl100k_base", "o200k_base"];

    /// After a huge piece, the thread keeps no buffer larger than
    /// `Scratch::KEPT_BYTES`.
    #[test]
    fn a_huge_piece_leaves_no_large_buffer() {
        let tokenizer = Tokenizer::embedded("cl100k_base").unwrap();
        let huge = "ab".repeat(200_000);
        assert!(tokenizer.count(&huge).unwrap() > 1000);
        let kept = super::Scratch::KEPT_BYTES;
        super::with_scratch(|s| {
            assert!(s.tokens.capacity() * 4 <= kept);
            assert!(s.dead_positions.capacity() * 8 <= kept);
            assert!(s.merged.capacity() * 4 <= kept);
        });
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The heap merge and tiktoken's scan merge make the same tokens.
        #[test]
        fn heap_merge_equals_scan_merge(piece in prop_oneof![
            prop::collection::vec(any::<u8>(), 2..300),
            "[a-z ]{2,300}".prop_map(String::into_bytes),
            "(ab|ba|aa|_|  ){1,150}".prop_map(String::into_bytes),
        ]) {
            for name in ENCODINGS {
                let vocab = Tokenizer::embedded(name).unwrap().vocab();
                let (small, large) = merge_both_ways(vocab, &piece);
                prop_assert_eq!(small, large);
            }
        }

        /// The backtracking encoder makes the merge's tokens on random
        /// bytes, letters and repetitive text.
        #[test]
        fn backtracking_equals_merge(piece in prop_oneof![
            prop::collection::vec(any::<u8>(), 1..600),
            "[a-zA-Z]{1,600}".prop_map(String::into_bytes),
            "(ab|ba|aa|_|  |0|00|\\.){1,300}".prop_map(String::into_bytes),
        ]) {
            for name in ENCODINGS {
                let vocab = Tokenizer::embedded(name).unwrap().vocab();
                let (heap, backtracked) = heap_and_backtrack(vocab, &piece);
                prop_assert_eq!(heap, backtracked);
            }
        }

        /// ... and on concatenations of vocabulary tokens, where many
        /// neighbouring pairs are candidates.
        #[test]
        fn backtracking_equals_merge_on_token_concatenations(
            ranks in prop::collection::vec(0u32..100_000, 1..120)
        ) {
            for name in ENCODINGS {
                let vocab = Tokenizer::embedded(name).unwrap().vocab();
                let piece: Vec<u8> = ranks
                    .iter()
                    .filter_map(|&r| vocab.token(r))
                    .flatten()
                    .copied()
                    .collect();
                if piece.is_empty() {
                    continue;
                }
                let (heap, backtracked) = heap_and_backtrack(vocab, &piece);
                prop_assert_eq!(heap, backtracked);
            }
        }
    }

    /// Repetitions of every 1- and 2-byte pattern of printable ASCII and of
    /// sampled 3-byte patterns, compared between the heap merge and the
    /// backtracking encoder directly, at lengths around each threshold where
    /// `encode_piece` changes method, and well past them. (The thresholds'
    /// dispatch itself is checked end to end against tiktoken-rs by
    /// `tests/tiktoken_exact.rs`.)
    #[test]
    fn backtracking_equals_merge_on_repetitions() {
        let printable: Vec<u8> = (b' '..=b'~').collect();
        let mut patterns: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        for &a in &printable {
            for &b in &printable {
                patterns.push(vec![a, b]);
            }
        }
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..3000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            patterns.push(state.to_le_bytes()[..3].to_vec());
        }
        for name in ENCODINGS {
            let vocab = Tokenizer::embedded(name).unwrap().vocab();
            for pattern in &patterns {
                let huge = (pattern.len() == 1).then_some(super::HUGE_PIECE + 1);
                // Past where the backtracker remembers its searches.
                let remembering = crate::bpe::backtrack::REMEMBER_SEARCHES_FROM + 7;
                for len in [7, 8, 9, 15, 16, 17, 127, 128, 129, 200, 1000, remembering]
                    .into_iter()
                    .chain(huge)
                {
                    let piece: Vec<u8> = pattern.iter().copied().cycle().take(len).collect();
                    let (heap, backtracked) = heap_and_backtrack(vocab, &piece);
                    assert_eq!(heap, backtracked, "{name}: {pattern:?} × {len}");
                }
            }
        }
    }
}
