//! Linear-time exact BPE for long pieces, by backtracking.
//!
//! tiktoken's merge (lowest-ranked adjacent pair first, leftmost on ties)
//! has one property that makes a left-to-right encoder possible: in the
//! result, every two neighbouring tokens form a *valid pair* — BPE run on
//! their two byte strings alone gives back exactly those two tokens — and
//! the encoding of a text in which every neighbouring pair is valid is
//! unique. So the encoder walks the piece from the left, at each position
//! trying the tokens that match there from the longest down, and keeps the
//! first whose pair with the previous token is valid. When no candidate at a
//! position works, that position can never be a token boundary of the
//! answer: it is marked dead in a bitfield and the last token is taken back.
//! A position is marked at most once and each mark undoes one token, so the
//! work is linear in the piece (with a constant bounded by the longest
//! token), and the memory is the output plus one bit per byte.
//!
//! The validity test needs, for every token, the pair it was last merged
//! from (its *split*), found once when the tables are built: walking the
//! rank order, a token's split is the pair of lower-ranked tokens that
//! spells it and is itself valid. Deciding whether `(left, right)` is valid
//! then replays, backwards, the merges that built the two tokens: at each
//! step the most recently built of the two is undone, and the pair fails if
//! the two boundary tokens at that moment merge into a token that BPE would
//! have made earlier (ranked below the merge being undone; ties go left).
//!
//! This needs a vocabulary whose every multi-byte token is made from two
//! lower-ranked tokens, as BPE-trained vocabularies are (cl100k_base and
//! o200k_base are). [`Backtracker::new`] checks that and returns `None`
//! otherwise; the caller then uses the heap merge. The same idea is the
//! backtracking encoder of GitHub's `bpe` crate; this is our own code,
//! tested against tiktoken's merge (`bpe::tests`).

use std::borrow::Cow;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::bpe::prefix_trie::{ID_LIMIT, NONE, Prefix, PrefixTrie};
use crate::index;
use crate::layout::{Reader, Writer};

/// What building the tables reads of a vocabulary (a trait, so that this
/// module does not depend on the vocabulary that holds its tables).
pub trait Tokens {
    /// Tokens in the vocabulary, ranks `0..count`.
    fn token_count(&self) -> u32;
    /// The bytes of token `rank` when it is an ordinary (not special) one.
    fn ordinary_token(&self, rank: u32) -> Option<&[u8]>;
    /// The rank of the token spelled `bytes`.
    fn rank_of(&self, bytes: &[u8]) -> Option<u32>;
}

/// The tables of the backtracking encoder for one vocabulary.
#[derive(Debug, PartialEq)]
pub struct Backtracker {
    /// Every ordinary token; finds the longest one starting at a position.
    trie: PrefixTrie,
    /// Byte length of each rank (0 for absent and special ranks).
    token_len: Cow<'static, [u32]>,
    /// The longest token that is a strict prefix of each rank, or [`NONE`].
    next_prefix: Cow<'static, [u32]>,
    /// The pair each rank was last merged from; `[r, r]` for single bytes.
    split: Cow<'static, [[u32; 2]]>,
    /// The ranks with a split, by the hash of the split (open addressing,
    /// a power of two long, [`NONE`] for an empty slot): finds the rank
    /// `(left, right)` merge into. Each slot holds a [`MergeWord`].
    merges: Cow<'static, [u32]>,
    /// Answers of [`Backtracker::is_valid_pair`] already computed.
    memo: PairMemo,
}

/// The last two trie searches of [`Backtracker::encode`], newest first:
/// where each started and what it found.
type RecentSearches = [Option<(usize, Prefix)>; 2];

/// Pieces longer than this many bytes remember their recent searches.
pub(crate) const REMEMBER_SEARCHES_FROM: usize = 4096;

/// Remembered answers of [`Backtracker::is_valid_pair`], a cache that never
/// changes an answer: direct-mapped, one 32-bit word per slot, so that
/// threads share it with relaxed atomic loads and stores. A pair's slot
/// comes from the low bits of both ranks (mixed with their high bits), and
/// the word holds the high bits and the answer, so slot and word together
/// name the pair exactly (0 when empty). Allocated after the first
/// [`PairMemo::UNREMEMBERED`] checks, as zeroed pages that cost nothing until
/// touched: a short text (one CLI call on a line) is checked without it, as
/// each slot's first touch is a page fault.
#[derive(Debug, Default)]
struct PairMemo {
    slots: OnceLock<Box<[AtomicU32]>>,
    /// Checks made before the slots were allocated.
    checks_before: AtomicU32,
}

impl PairMemo {
    /// Bits of each rank that place a pair: `2 · LOW_BITS` bits of slot.
    const LOW_BITS: u32 = 9;
    /// Slots in the memo (1 MiB).
    const SLOTS: usize = 1 << (2 * Self::LOW_BITS);
    /// Pairs of ranks below this are remembered: the high bits of both
    /// (14 each) fit a word with the answer and the mark of a used slot.
    const RANKS: u32 = 1 << (Self::LOW_BITS + 14);

    /// The slot and word (answer bit clear) of `pair`, or `None` when a rank
    /// is too large to be remembered.
    #[inline]
    fn place(pair: [u32; 2]) -> Option<(usize, u32)> {
        let [left, right] = pair;
        if left >= Self::RANKS || right >= Self::RANKS {
            return None;
        }
        let low_mask = (1 << Self::LOW_BITS) - 1;
        let high = (left >> Self::LOW_BITS) << 14 | right >> Self::LOW_BITS;
        let low = (left & low_mask) << Self::LOW_BITS | (right & low_mask);
        // The high bits, mixed, spread pairs that share their low bits; the
        // word holds them, so the low bits are still known from the slot.
        let mix = high.wrapping_mul(0x9E37_79B9) >> (32 - 2 * Self::LOW_BITS);
        Some(((low ^ mix) as usize, 1 << 31 | high << 1))
    }

    /// Checks answered without the memo before it is allocated. A short
    /// text makes tens of checks, each of which would touch a fresh page of
    /// the memo: a page fault, which costs more than the check it saves.
    const UNREMEMBERED: u32 = 4096;

    /// The slots, or `None` for the first [`PairMemo::UNREMEMBERED`] checks.
    fn slots(&self) -> Option<&[AtomicU32]> {
        if let Some(slots) = self.slots.get() {
            return Some(slots);
        }
        if self.checks_before.fetch_add(1, Ordering::Relaxed) < Self::UNREMEMBERED {
            return None;
        }
        // Zeroed by the allocator: pages are touched only as slots are used.
        Some(
            self.slots
                .get_or_init(|| bytemuck::allocation::zeroed_slice_box(Self::SLOTS)),
        )
    }
}

impl PartialEq for PairMemo {
    /// A cache: any two are interchangeable.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Functions on the words in the merges table's slots. A word holds a
/// rank in its low [`MergeWord::RANK_BITS`] bits, and above them a tag
/// from the high bits of the pair's hash. A search passes over the slots
/// of other pairs by their tag (all but one in 512), without reading their
/// splits: each such read is one more cache miss in the split table
/// (0.8–1.6 MB). Ranks in the table are those of the trie, below
/// [`ID_LIMIT`], so no word is [`NONE`].
struct MergeWord;

// Every rank the trie holds (below ID_LIMIT) fits the rank bits without
// being all ones.
const _: () = assert!(ID_LIMIT < 1 << MergeWord::RANK_BITS);

impl MergeWord {
    /// Bits of the rank.
    const RANK_BITS: u32 = 23;

    /// The tag of the pairs with the hash `hash` (rank bits clear): a
    /// pair's word is its tag and its rank, or'd.
    #[inline]
    fn tag_of(hash: u64) -> u32 {
        ((hash >> (u64::BITS - (u32::BITS - Self::RANK_BITS))) as u32) << Self::RANK_BITS
    }

    /// The tag of a word (its rank bits clear).
    #[inline]
    fn tag(word: u32) -> u32 {
        word >> Self::RANK_BITS << Self::RANK_BITS
    }

    /// The rank of a word.
    #[inline]
    fn rank(word: u32) -> u32 {
        word & ((1 << Self::RANK_BITS) - 1)
    }
}

impl Backtracker {
    /// Builds the tables for `vocab` (a pass over every token, too slow for
    /// start-up: `build.rs` lays out the embedded vocabularies' tables
    /// instead), or `None` when a multi-byte token is
    /// not the merge of two lower-ranked tokens (the encoder would not be
    /// exact for such a vocabulary), or when an ordinary token's rank is
    /// 2^23 - 1 or more (beyond what the trie's node words hold).
    pub fn new(vocab: &impl Tokens) -> Option<Backtracker> {
        let count = vocab.token_count();
        // Each ordinary token's bytes, looked up once.
        let tokens: Vec<Option<&[u8]>> = (0..count).map(|r| vocab.ordinary_token(r)).collect();
        let mut tables = Backtracker {
            trie: PrefixTrie::new(
                tokens
                    .iter()
                    .enumerate()
                    .filter_map(|(r, t)| t.map(|bytes| (bytes, r as u32))),
            )?,
            token_len: tokens
                .iter()
                .map(|t| t.map_or(0, |bytes| bytes.len() as u32))
                .collect(),
            next_prefix: Cow::Owned(Vec::with_capacity(count as usize)),
            split: Cow::Owned(Vec::with_capacity(count as usize)),
            merges: vec![NONE; (count as usize * 2).next_power_of_two().max(16)].into(),
            memo: PairMemo::default(),
        };
        // The prefix chains first: a chain may pass through higher ranks.
        // The longest proper prefix that is a token is found by trying the
        // prefixes from the longest (usually the first or second is one).
        for token in &tokens {
            let prefix = match token {
                Some(bytes) if bytes.len() > 1 => (1..bytes.len())
                    .rev()
                    .find_map(|len| vocab.rank_of(&bytes[..len]))
                    .unwrap_or(NONE),
                _ => NONE,
            };
            tables.next_prefix.to_mut().push(prefix);
        }
        // Then the splits, in rank order: a split's validity is decided by
        // the splits of lower ranks only.
        for (rank, token) in tokens.iter().enumerate() {
            let rank = rank as u32;
            let split = match token {
                Some(bytes) if bytes.len() > 1 => tables.find_split(vocab, rank, bytes)?,
                _ => [rank, rank],
            };
            tables.split.to_mut().push(split);
            if split[0] != rank {
                tables.insert_merge(split, rank);
            }
        }
        Some(tables)
    }

    /// Appends the tables to a laid-out blob.
    #[allow(dead_code, reason = "build.rs lays out the tables with it")]
    pub fn write(&self, w: &mut Writer) {
        self.trie.write(w);
        w.u32s(&self.token_len);
        w.u32s(&self.next_prefix);
        w.u32s(bytemuck::cast_slice(&self.split));
        w.u32s(&self.merges);
    }

    /// The tables [`Backtracker::write`] laid out for `vocab`, read in
    /// place; `None` when the arrays' sizes do not fit the vocabulary. Only
    /// the sizes are checked: the contents are trusted, as they come from
    /// `build.rs` (and a test compares them with a fresh build).
    pub fn read(r: &mut Reader<'static>, vocab: &impl Tokens) -> Option<Self> {
        let tables = Backtracker {
            trie: PrefixTrie::read(r)?,
            token_len: r.u32s()?.into(),
            next_prefix: r.u32s()?.into(),
            split: bytemuck::try_cast_slice(r.u32s()?).ok()?.into(),
            merges: r.u32s()?.into(),
            memo: PairMemo::default(),
        };
        let count = vocab.token_count() as usize;
        let consistent = tables.token_len.len() == count
            && tables.next_prefix.len() == count
            && tables.split.len() == count
            && tables.merges.len().is_power_of_two();
        consistent.then_some(tables)
    }

    /// Where the search for the merge of `pair` starts, and the pair's
    /// tag.
    #[inline]
    fn merge_place(&self, pair: [u32; 2]) -> (usize, u32) {
        let hash = index::hash([u64::from(pair[0]) << 32 | u64::from(pair[1]), 0], 8);
        let at = hash as usize & (self.merges.len() - 1);
        (at, MergeWord::tag_of(hash))
    }

    /// [`Backtracker::is_valid_pair`], through the memo (only once the
    /// tables are complete: while they are built, answers change).
    #[inline]
    fn is_valid_pair_remembered(&self, left: u32, right: u32) -> bool {
        let (Some((at, word)), Some(slots)) = (PairMemo::place([left, right]), self.memo.slots())
        else {
            return self.is_valid_pair(left, right);
        };
        let slot = &slots[at];
        let seen = slot.load(Ordering::Relaxed);
        if seen & !1 == word {
            return seen & 1 == 1;
        }
        let valid = self.is_valid_pair(left, right);
        slot.store(word | u32::from(valid), Ordering::Relaxed);
        valid
    }

    /// Records that `pair` (the split of `rank`) merges into `rank`.
    fn insert_merge(&mut self, pair: [u32; 2], rank: u32) {
        let mask = self.merges.len() - 1;
        let (mut at, tag) = self.merge_place(pair);
        let merges = self.merges.to_mut();
        while merges[at] != NONE {
            at = (at + 1) & mask;
        }
        merges[at] = tag | rank;
    }

    /// The rank whose split is `pair`, if any.
    #[inline]
    fn merged(&self, pair: [u32; 2]) -> Option<u32> {
        let mask = self.merges.len() - 1;
        let (mut at, tag) = self.merge_place(pair);
        loop {
            let word = self.merges[at];
            if word == NONE {
                return None;
            }
            // Only a slot with the pair's tag can be the pair's.
            if MergeWord::tag(word) == tag {
                let rank = MergeWord::rank(word);
                if self.split[rank as usize] == pair {
                    return Some(rank);
                }
            }
            at = (at + 1) & mask;
        }
    }

    /// The pair of lower-ranked tokens, valid as a pair, that spells
    /// `bytes` (the token `rank`), trying left parts from the longest.
    fn find_split(&self, vocab: &impl Tokens, rank: u32, bytes: &[u8]) -> Option<[u32; 2]> {
        let mut left = self.next_prefix[rank as usize];
        while left != NONE {
            let rest = &bytes[self.token_len[left as usize] as usize..];
            if let Some(right) = vocab.rank_of(rest)
                && left < rank
                && right < rank
                && self.is_valid_pair(left, right)
            {
                return Some([left, right]);
            }
            left = self.next_prefix[left as usize];
        }
        None
    }

    /// The longest ordinary token starting at `at` and its length, or
    /// ([`NONE`], 0). With `REMEMBER`, `recent` holds the last two searches
    /// (position and result): where the bytes that decided one of them are
    /// repeated at `at`, its answer is the answer. In a long repetition (a
    /// run of one byte, or of a pattern as long as a token, where
    /// backtracking can alternate between two phases) searches after the
    /// first ones are then a comparison of those bytes instead of a walk
    /// over as many trie nodes. Always inlined into the encoder's loop,
    /// which calls it at every position it reaches.
    #[inline(always)]
    fn longest_at<const REMEMBER: bool>(
        &self,
        text: &[u8],
        at: usize,
        recent: &mut RecentSearches,
    ) -> (u32, usize) {
        if !REMEMBER {
            return self.trie.longest_prefix(&text[at..]);
        }
        for &(before, found) in recent.iter().flatten() {
            if let Some(read) = found.decided_by
                && let Some(here) = text.get(at..at + read)
                // The first byte first, where most texts differ: no call.
                && here[0] == text[before]
                && *here == text[before..before + read]
            {
                return (found.token, found.len);
            }
        }
        let found = self.trie.longest_prefix_deciding(&text[at..]);
        *recent = [Some((at, found)), recent[0]];
        (found.token, found.len)
    }

    /// Whether BPE on the bytes of `left` followed by those of `right` gives
    /// exactly `[left, right]`.
    fn is_valid_pair(&self, mut left: u32, mut right: u32) -> bool {
        // `limit`: the rank of the merge being undone (exclusive bound for a
        // crossing merge; a tie with the right token's merge goes left).
        let mut limit = u32::MAX;
        loop {
            if let Some(merged) = self.merged([left, right])
                && merged < limit
            {
                return false;
            }
            // Undo the more recently built token; if it is a single byte,
            // undo the other one; when both are bytes, nothing can cross.
            if left > right {
                limit = left;
                left = self.split[left as usize][1];
                if left == limit {
                    limit = right + 1;
                    right = self.split[right as usize][0];
                    if right + 1 == limit {
                        return true;
                    }
                }
            } else {
                limit = right + 1;
                right = self.split[right as usize][0];
                if right + 1 == limit {
                    limit = left;
                    left = self.split[left as usize][1];
                    if left == limit {
                        return true;
                    }
                }
            }
        }
    }

    /// Appends the tokens of `piece` to `out`, using `dead` (one bit per
    /// position) as scratch. Returns `false`, with `out` as it was, only if
    /// the tables are inconsistent with the piece (never for a vocabulary
    /// [`Backtracker::new`] accepted); the caller then merges another way.
    pub fn encode(&self, piece: &[u8], out: &mut Vec<u32>, dead: &mut Vec<u64>) -> bool {
        // Remembering searches pays in long repetitions only; in short
        // pieces its checks cost more than the searches they save.
        if piece.len() > REMEMBER_SEARCHES_FROM {
            self.encode_remembering::<true>(piece, out, dead)
        } else {
            self.encode_remembering::<false>(piece, out, dead)
        }
    }

    /// [`Backtracker::encode`], with or without remembering searches (see
    /// [`Backtracker::longest_at`]).
    fn encode_remembering<const REMEMBER: bool>(
        &self,
        piece: &[u8],
        out: &mut Vec<u32>,
        dead: &mut Vec<u64>,
    ) -> bool {
        let base = out.len();
        dead.clear();
        dead.resize(piece.len() / 64 + 1, 0);
        let is_dead = |dead: &[u64], at: usize| dead[at / 64] >> (at % 64) & 1 == 1;
        let mut pos = 0;
        let mut recent = [None; 2];
        // The candidate to try first at `pos`, with its length.
        let mut next = self.longest_at::<REMEMBER>(piece, 0, &mut recent);
        while next.0 != NONE {
            let previous = if out.len() > base {
                out.last().copied()
            } else {
                None
            };
            let (mut token, mut len) = next;
            loop {
                let end = pos + len;
                if !is_dead(dead, end)
                    && previous.is_none_or(|p| self.is_valid_pair_remembered(p, token))
                {
                    out.push(token);
                    pos = end;
                    next = if pos == piece.len() {
                        (NONE, 0)
                    } else {
                        self.longest_at::<REMEMBER>(piece, pos, &mut recent)
                    };
                    break;
                }
                token = self.next_prefix[token as usize];
                if token == NONE {
                    // Nothing works from `pos`: it is no boundary of the answer.
                    dead[pos / 64] |= 1 << (pos % 64);
                    if out.len() == base {
                        return false;
                    }
                    let undone = out.pop().expect("checked above");
                    let undone_len = self.token_len[undone as usize] as usize;
                    pos -= undone_len;
                    next = (undone, undone_len);
                    break;
                }
                len = self.token_len[token as usize] as usize;
            }
        }
        if pos != piece.len() {
            out.truncate(base);
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::{ID_LIMIT, MergeWord, NONE, PairMemo};

    /// A merge word gives back its rank and its hash's tag, and is never
    /// the empty slot's, for every rank the trie allows.
    #[test]
    fn merge_words_hold_rank_and_tag() {
        for hash in [0, u64::MAX, 0x8000_0000_0000_0000, 0x1234_5678_9ABC_DEF0] {
            for rank in [0, 1, 199_997, ID_LIMIT - 1] {
                let word = MergeWord::tag_of(hash) | rank;
                assert_ne!(word, NONE);
                assert_eq!(MergeWord::rank(word), rank);
                assert_eq!(MergeWord::tag(word), MergeWord::tag_of(hash));
                assert_eq!(
                    MergeWord::tag(word) >> MergeWord::RANK_BITS,
                    (hash >> 55) as u32
                );
            }
        }
    }

    /// A slot and word name one pair only, also among pairs that share
    /// their low bits or their high bits; ranks too large have no place.
    #[test]
    fn memo_places_name_pairs_exactly() {
        let low = 1u32 << PairMemo::LOW_BITS;
        let ranks: Vec<u32> = (0..40)
            .flat_map(|k| [k, k * low, k * low + 7, k * 9973 % PairMemo::RANKS])
            .chain([PairMemo::RANKS - 1, PairMemo::RANKS - low])
            .collect();
        let mut seen = HashMap::new();
        for &left in &ranks {
            for &right in &ranks {
                let (at, word) = PairMemo::place([left, right]).expect("small ranks");
                assert!(at < PairMemo::SLOTS);
                assert_eq!(word & 1, 0, "the answer bit starts clear");
                assert_ne!(word, 0, "a used slot is never all zeros");
                let other = seen.insert((at, word), [left, right]);
                assert!(
                    other.is_none_or(|p| p == [left, right]),
                    "{other:?} {left} {right}"
                );
            }
        }
        assert_eq!(PairMemo::place([PairMemo::RANKS, 0]), None);
        assert_eq!(PairMemo::place([0, PairMemo::RANKS]), None);
    }
}
