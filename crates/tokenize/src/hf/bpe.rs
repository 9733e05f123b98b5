//! Byte-level BPE with Hugging Face's merge order: repeatedly merge the
//! adjacent pair that is a listed merge with the lowest merge index,
//! leftmost on ties (`tokenizers`' `Word::merge_all`), over token ids.
//!
//! This differs from tiktoken's rule (lowest rank of the merged token),
//! which modelbin's `bpe` engine runs: on a file whose merges do not list
//! every split of every token the two can disagree (vocab `a b c ab bc
//! abc`, merges `b c`, `a b`, `ab c`: Hugging Face makes `a bc` of "abc",
//! tiktoken's rule `abc`). So every byte-level file runs this loop, which is
//! exact by construction.
//!
//! `tokenizers` keeps a heap of pair entries and skips stale ones by
//! checking the merged id. With one string per id (duplicate ids are
//! refused at load), an entry whose id still matches is the current pair
//! at its position (boundaries only disappear, so the span is the same),
//! hence the heap's order equals "lowest (merge index, position) among the
//! current pairs". Short pieces find that by a scan, long ones by a heap
//! with a linked list of parts (O(n log n)). Pieces of at most 16 bytes
//! are remembered per thread (`bpe::piece_cache`).

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};

use rustc_hash::FxHashMap;

use crate::bpe::piece_cache::PieceCache;

/// Pieces at least this long use the heap.
const LONG_PIECE: usize = 64;
const NONE: u32 = u32::MAX;

/// Owner ids of the piece cache for these models: the top bit set, so they
/// never equal a `Vocab`'s (which count up from 1).
static NEXT_OWNER: AtomicU64 = AtomicU64::new(1 << 63);

/// A byte-level BPE model, ready to merge.
#[derive(Debug)]
pub(crate) struct ByteLevelBpe {
    /// The id of each byte's token.
    byte_ids: [u32; 256],
    /// `(left id << 32 | right id)` → (merge index, merged id).
    merges: FxHashMap<u64, (u32, u32)>,
    /// With `ignore_merges`, the id of every vocabulary entry by its bytes:
    /// a piece that is one of them is that token.
    whole: Option<FxHashMap<Box<[u8]>, u32>>,
    /// This model's name in the piece cache.
    owner: u64,
}

/// Per-thread buffers and cache.
#[derive(Default)]
struct Scratch {
    ids: Vec<u32>,
    /// Pair ranks (merge index, merged id) by part, for the scan.
    pairs: Vec<(u32, u32)>,
    next: Vec<u32>,
    prev: Vec<u32>,
    heap: BinaryHeap<Reverse<(u32, u32, u32)>>,
    cache: PieceCache,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

impl ByteLevelBpe {
    /// A model from each byte's id, the merges as (left, right, merged)
    /// ids in rank order (a repeated pair keeps its last index, as in
    /// `tokenizers`), and, for `ignore_merges`, every token's bytes.
    pub fn new(
        byte_ids: [u32; 256],
        merges: impl IntoIterator<Item = (u32, u32, u32)>,
        whole: Option<FxHashMap<Box<[u8]>, u32>>,
    ) -> ByteLevelBpe {
        let mut map = FxHashMap::default();
        for (rank, (a, b, merged)) in merges.into_iter().enumerate() {
            map.insert(u64::from(a) << 32 | u64::from(b), (rank as u32, merged));
        }
        ByteLevelBpe {
            byte_ids,
            merges: map,
            whole,
            owner: NEXT_OWNER.fetch_add(1, Ordering::Relaxed),
        }
    }

    #[inline]
    fn pair(&self, a: u32, b: u32) -> (u32, u32) {
        self.merges
            .get(&(u64::from(a) << 32 | u64::from(b)))
            .copied()
            .unwrap_or((NONE, NONE))
    }

    /// Appends the ids of one pre-token's bytes to `out`.
    pub fn encode_piece(&self, piece: &[u8], out: &mut Vec<u32>) {
        if piece.is_empty() {
            return;
        }
        if let Some(whole) = &self.whole
            && let Some(&id) = whole.get(piece)
        {
            out.push(id);
            return;
        }
        if let [b] = *piece {
            out.push(self.byte_ids[usize::from(b)]);
            return;
        }
        SCRATCH.with(|cell| {
            let Ok(mut scratch) = cell.try_borrow_mut() else {
                self.merge(piece, &mut Scratch::default(), out);
                return;
            };
            let scratch = &mut *scratch;
            let cached = PieceCache::keeps(piece);
            if cached && let Some(ids) = scratch.cache.get(self.owner, piece) {
                out.extend_from_slice(ids);
                return;
            }
            let from = out.len();
            self.merge(piece, scratch, out);
            if cached {
                scratch.cache.put(self.owner, piece, &out[from..]);
            }
        });
    }

    fn merge(&self, piece: &[u8], scratch: &mut Scratch, out: &mut Vec<u32>) {
        if piece.len() < LONG_PIECE {
            self.merge_scan(piece, scratch, out);
        } else {
            self.merge_heap(piece, scratch, out);
        }
    }

    /// The scan: find the lowest (index, position) pair, merge it, update
    /// its two neighbours' pairs.
    fn merge_scan(&self, piece: &[u8], scratch: &mut Scratch, out: &mut Vec<u32>) {
        let Scratch { ids, pairs, .. } = scratch;
        ids.clear();
        ids.extend(piece.iter().map(|&b| self.byte_ids[usize::from(b)]));
        pairs.clear();
        pairs.extend(ids.windows(2).map(|w| self.pair(w[0], w[1])));
        loop {
            let mut best = usize::MAX;
            let mut best_rank = NONE;
            for (i, &(rank, _)) in pairs.iter().enumerate() {
                if rank < best_rank {
                    (best, best_rank) = (i, rank);
                }
            }
            if best_rank == NONE {
                break;
            }
            ids[best] = pairs[best].1;
            ids.remove(best + 1);
            pairs.remove(best);
            if best < pairs.len() {
                pairs[best] = self.pair(ids[best], ids[best + 1]);
            }
            if best > 0 {
                pairs[best - 1] = self.pair(ids[best - 1], ids[best]);
            }
        }
        out.extend_from_slice(ids);
    }

    /// The heap: `tokenizers`' loop, over a linked list of parts.
    fn merge_heap(&self, piece: &[u8], scratch: &mut Scratch, out: &mut Vec<u32>) {
        let n = piece.len();
        let Scratch {
            ids,
            next,
            prev,
            heap,
            ..
        } = scratch;
        ids.clear();
        ids.extend(piece.iter().map(|&b| self.byte_ids[usize::from(b)]));
        next.clear();
        next.extend(1..=n as u32);
        prev.clear();
        prev.extend((0..n as u32).map(|i| i.wrapping_sub(1)));
        heap.clear();
        for i in 0..n - 1 {
            let (rank, merged) = self.pair(ids[i], ids[i + 1]);
            if rank != NONE {
                heap.push(Reverse((rank, i as u32, merged)));
            }
        }
        // A removed part has id NONE.
        while let Some(Reverse((_, s, merged))) = heap.pop() {
            let s = s as usize;
            if ids[s] == NONE {
                continue;
            }
            let right = next[s] as usize;
            if right >= n || self.pair(ids[s], ids[right]).1 != merged {
                continue; // stale
            }
            ids[s] = merged;
            ids[right] = NONE;
            let after = next[right];
            next[s] = after;
            if (after as usize) < n {
                prev[after as usize] = s as u32;
                let (rank, m) = self.pair(merged, ids[after as usize]);
                if rank != NONE {
                    heap.push(Reverse((rank, s as u32, m)));
                }
            }
            let p = prev[s];
            if p != NONE {
                let (rank, m) = self.pair(ids[p as usize], merged);
                if rank != NONE {
                    heap.push(Reverse((rank, p, m)));
                }
            }
        }
        let mut s = 0;
        while s < n {
            out.push(ids[s]);
            s = next[s] as usize;
        }
        if ids.capacity() > 1 << 16 {
            *ids = Vec::new();
            *next = Vec::new();
            *prev = Vec::new();
            *heap = BinaryHeap::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ByteLevelBpe;

    /// Bytes are their own ids here; merges as (left, right, merged).
    fn model(merges: &[(u32, u32, u32)]) -> ByteLevelBpe {
        let mut byte_ids = [0u32; 256];
        for (b, id) in byte_ids.iter_mut().enumerate() {
            *id = b as u32;
        }
        ByteLevelBpe::new(byte_ids, merges.iter().copied(), None)
    }

    /// The memo's counter-example: merges `b c`, `a b`, `ab c` make
    /// `a bc` of "abc" (HF's order), by scan and by heap.
    #[test]
    fn hf_merge_order() {
        let (a, b, c, ab, bc, abc) = (97, 98, 99, 300, 301, 302);
        let m = model(&[(b, c, bc), (a, b, ab), (ab, c, abc)]);
        let mut out = vec![];
        m.encode_piece(b"abc", &mut out);
        assert_eq!(out, [a, bc]);
        let long = "abc".repeat(40);
        let mut scan = vec![];
        let mut heap = vec![];
        let mut scratch = super::Scratch::default();
        m.merge_scan(long.as_bytes(), &mut scratch, &mut scan);
        m.merge_heap(long.as_bytes(), &mut scratch, &mut heap);
        assert_eq!(scan, heap);
        assert_eq!(scan, [a, bc].repeat(40));
    }

    proptest::proptest! {
        /// Scan and heap agree on random pieces over a small alphabet with
        /// random merges.
        #[test]
        fn scan_equals_heap(
            piece in proptest::collection::vec(97u8..101, 2..200),
            raw in proptest::collection::vec((97u32..101, 97u32..101), 1..12),
        ) {
            // Merge i joins two byte ids or earlier merges' ids into 1000+i.
            let merges: Vec<(u32, u32, u32)> = raw
                .iter()
                .enumerate()
                .map(|(i, &(x, y))| {
                    let pick = |v: u32| if i > 0 && v.is_multiple_of(2) { 1000 + (v % i as u32) } else { v };
                    (pick(x), pick(y), 1000 + i as u32)
                })
                .collect();
            let m = model(&merges);
            let mut scratch = super::Scratch::default();
            let (mut scan, mut heap) = (vec![], vec![]);
            m.merge_scan(&piece, &mut scratch, &mut scan);
            m.merge_heap(&piece, &mut scratch, &mut heap);
            proptest::prop_assert_eq!(scan, heap);
        }
    }
}
