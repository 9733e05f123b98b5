//! A byte trie over the vocabulary's tokens, for one question: which is the
//! longest token that starts at a given position? (Anchored matching needs
//! no failure links, so a plain trie beats a full Aho-Corasick automaton,
//! whose construction for 200,000 tokens takes half a second.)
//!
//! The trie is built from the tokens in byte order, so that its nodes are
//! made in one sequential pass, and stored compactly: each node's children
//! are a contiguous run of (byte, node) in byte order, searched one at a
//! time when there are a few and sixteen at a time when there are more;
//! the root's are a 256-entry table, and the nodes two
//! bytes deep a 65,536-entry one (the first two steps are where nodes have
//! the most children).

use std::borrow::Cow;

use crate::layout::{Reader, Writer};

/// "No token".
pub const NONE: u32 = u32::MAX;

/// Nodes with at most this many children are searched one child at a time.
const SCANNED: usize = 8;

/// Tokens by their bytes, as a trie.
#[derive(Debug, Default, PartialEq)]
pub struct PrefixTrie {
    /// The root's child for each byte, or [`NONE`].
    root: Cow<'static, [u32]>,
    /// The node two bytes down, at `first << 8 | second`, or [`NONE`].
    two: Cow<'static, [u32]>,
    /// Node `n`'s children are entries `starts[n]..starts[n + 1]`.
    starts: Cow<'static, [u32]>,
    /// Each child entry, `node << 8 | byte`, in byte order within a node
    /// (one load finds both, and a search steps node to node through two
    /// loads).
    edges: Cow<'static, [u32]>,
    /// The token ending at each node, or [`NONE`]; node 0 is the root.
    ends: Cow<'static, [u32]>,
}

impl PrefixTrie {
    /// A trie of `tokens` (bytes, id); the bytes are distinct. `None` when
    /// it would have 2^24 nodes or more (far beyond any vocabulary's).
    pub fn new<'a>(tokens: impl IntoIterator<Item = (&'a [u8], u32)>) -> Option<Self> {
        let mut tokens: Vec<(&[u8], u32)> =
            tokens.into_iter().filter(|(t, _)| !t.is_empty()).collect();
        tokens.sort_unstable_by(|a, b| a.0.cmp(b.0));
        // Nodes in depth-first order, each with its parent and byte; a
        // node's children come in byte order because the tokens do.
        let mut parent = vec![NONE];
        let mut label = vec![0u8];
        let mut ends = vec![NONE];
        let mut path: Vec<u32> = vec![0];
        let mut previous: &[u8] = &[];
        for &(bytes, id) in &tokens {
            let common = bytes
                .iter()
                .zip(previous)
                .take_while(|(a, b)| a == b)
                .count();
            path.truncate(common + 1);
            for &byte in &bytes[common..] {
                let node = ends.len() as u32;
                parent.push(*path.last().expect("the root"));
                label.push(byte);
                ends.push(NONE);
                path.push(node);
            }
            ends[*path.last().expect("a node") as usize] = id;
            previous = bytes;
        }
        // Children grouped by parent (a stable counting sort keeps byte order).
        let nodes = ends.len();
        if nodes >= 1 << 24 {
            return None;
        }
        let mut starts = vec![0u32; nodes + 1];
        for &p in &parent[1..] {
            starts[p as usize + 1] += 1;
        }
        for n in 0..nodes {
            starts[n + 1] += starts[n];
        }
        let mut next = starts.clone();
        let mut edges = vec![0u32; nodes - 1];
        for node in 1..nodes {
            let p = parent[node] as usize;
            edges[next[p] as usize] = (node as u32) << 8 | u32::from(label[node]);
            next[p] += 1;
        }
        let children = |node: usize| &edges[starts[node] as usize..starts[node + 1] as usize];
        let mut root = vec![NONE; 256];
        for &edge in children(0) {
            root[edge as usize & 0xFF] = edge >> 8;
        }
        let mut two = vec![NONE; 1 << 16];
        for (first, &node) in root.iter().enumerate().filter(|(_, n)| **n != NONE) {
            for &edge in children(node as usize) {
                two[first << 8 | edge as usize & 0xFF] = edge >> 8;
            }
        }
        Some(PrefixTrie {
            root: root.into(),
            two: two.into(),
            starts: starts.into(),
            edges: edges.into(),
            ends: ends.into(),
        })
    }

    /// Appends the trie to a laid-out blob.
    #[allow(dead_code, reason = "build.rs lays out the tables with it")]
    pub fn write(&self, w: &mut Writer) {
        w.u32s(&self.root);
        w.u32s(&self.two);
        w.u32s(&self.starts);
        w.u32s(&self.edges);
        w.u32s(&self.ends);
    }

    /// The trie [`PrefixTrie::write`] laid out, read in place; `None` when
    /// the arrays' sizes do not fit together. Only the sizes are checked:
    /// the contents are trusted, as they come from `build.rs`.
    pub fn read(r: &mut Reader<'static>) -> Option<Self> {
        let trie = PrefixTrie {
            root: r.u32s()?.into(),
            two: r.u32s()?.into(),
            starts: r.u32s()?.into(),
            edges: r.u32s()?.into(),
            ends: r.u32s()?.into(),
        };
        let nodes = trie.ends.len();
        let consistent = trie.root.len() == 256
            && trie.two.len() == 1 << 16
            && trie.starts.len() == nodes + 1
            && trie
                .starts
                .last()
                .is_some_and(|&e| e as usize == trie.edges.len());
        consistent.then_some(trie)
    }

    /// The child of `node` along `byte`, if any.
    #[inline]
    fn child(&self, node: u32, byte: u8) -> Option<u32> {
        let edges = &self.edges
            [self.starts[node as usize] as usize..self.starts[node as usize + 1] as usize];
        // Of the nodes two or more bytes down, 57% have one child and 99%
        // at most eight (both encodings): a loop that stops at the match
        // beats comparing a whole chunk.
        if edges.len() <= SCANNED {
            for &e in edges {
                if e as u8 == byte {
                    return Some(e >> 8);
                }
            }
            return None;
        }
        for chunk in edges.chunks(16) {
            // Compares all of a chunk without branching (vectorised).
            let hits = chunk
                .iter()
                .enumerate()
                .fold(0u32, |m, (i, &e)| m | u32::from(e as u8 == byte) << i);
            if hits != 0 {
                return Some(chunk[hits.trailing_zeros() as usize] >> 8);
            }
        }
        None
    }

    /// The id and length of the longest token that is a prefix of `text`,
    /// or ([`NONE`], 0).
    #[inline]
    pub fn longest_prefix(&self, text: &[u8]) -> (u32, usize) {
        let (token, len, _) = self.search::<false>(text);
        (token, len)
    }

    /// [`PrefixTrie::longest_prefix`], with the bytes that decided it.
    pub fn longest_prefix_deciding(&self, text: &[u8]) -> Prefix {
        let (token, len, decided_by) = self.search::<true>(text);
        Prefix {
            token,
            len,
            decided_by,
        }
    }

    /// The search of both: with `DECIDED`, it also counts the bytes read
    /// when it stops before the text's end (without, it compiles to the
    /// search alone).
    #[inline(always)]
    fn search<const DECIDED: bool>(&self, text: &[u8]) -> (u32, usize, Option<usize>) {
        let decided = |read: usize| DECIDED.then_some(read);
        let (&first, rest) = match text.split_first() {
            Some(split) => split,
            None => return (NONE, 0, None),
        };
        let one = self.root[usize::from(first)];
        if one == NONE {
            return (NONE, 0, decided(1));
        }
        let mut best = (self.ends[one as usize], 1);
        let mut read = None;
        if let Some((&second, rest)) = rest.split_first() {
            let mut node = self.two[usize::from(first) << 8 | usize::from(second)];
            if node == NONE {
                read = decided(2);
            } else {
                if self.ends[node as usize] != NONE {
                    best = (self.ends[node as usize], 2);
                }
                for (depth, &byte) in (3..).zip(rest) {
                    match self.child(node, byte) {
                        Some(child) => {
                            node = child;
                            if self.ends[node as usize] != NONE {
                                best = (self.ends[node as usize], depth);
                            }
                        }
                        None => {
                            read = decided(depth);
                            break;
                        }
                    }
                }
            }
        }
        if best.0 == NONE {
            (NONE, 0, read)
        } else {
            (best.0, best.1, read)
        }
    }
}

/// What [`PrefixTrie::longest_prefix_deciding`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    /// The longest token that is a prefix of the text, or [`NONE`].
    pub token: u32,
    /// Its length in bytes (0 for [`NONE`]).
    pub len: usize,
    /// How many leading bytes of the text decided the answer (the search
    /// read them and stopped before the text's end): every text that starts
    /// with those bytes has the same answer. `None` when the text ran out
    /// first (a longer text could hold a longer token).
    pub decided_by: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_longest_token_at_the_start() {
        let tokens: [(&[u8], u32); 5] =
            [(b"a", 0), (b"ab", 1), (b"abcd", 2), (b"b", 3), (b"ax", 4)];
        let trie = PrefixTrie::new(tokens).unwrap();
        let found = |text: &[u8]| {
            let p = trie.longest_prefix_deciding(text);
            assert_eq!(trie.longest_prefix(text), (p.token, p.len));
            (p.token, p.len, p.decided_by)
        };
        assert_eq!(found(b"abcde"), (2, 4, Some(5)));
        assert_eq!(found(b"abcd"), (2, 4, None));
        assert_eq!(found(b"abc"), (1, 2, None));
        assert_eq!(found(b"abce"), (1, 2, Some(4)));
        assert_eq!(found(b"axe"), (4, 2, Some(3)));
        assert_eq!(found(b"ba"), (3, 1, Some(2)));
        assert_eq!(found(b"b"), (3, 1, None));
        assert_eq!(found(b"c"), (NONE, 0, Some(1)));
        assert_eq!(found(b""), (NONE, 0, None));
        assert_eq!(found(b"\xff"), (NONE, 0, Some(1)));
    }

    /// Nodes with a few children (searched one at a time) and with more
    /// than a chunk of them (searched sixteen at a time) find each child,
    /// and no byte that is not one.
    #[test]
    fn finds_children_of_small_and_wide_nodes() {
        let mut tokens: Vec<(Vec<u8>, u32)> = Vec::new();
        for (prefix, children) in [(&b"ab"[..], SCANNED as u8), (b"cd", 40)] {
            for i in 0..children {
                let id = tokens.len() as u32;
                tokens.push(([prefix, &[b'A' + 2 * i]].concat(), id));
            }
        }
        let trie = PrefixTrie::new(tokens.iter().map(|(t, id)| (t.as_slice(), *id))).unwrap();
        for (token, id) in &tokens {
            assert_eq!(
                trie.longest_prefix(&[token.as_slice(), b"!"].concat()),
                (*id, 3)
            );
            let mut other = token.clone();
            other[2] += 1;
            assert_eq!(trie.longest_prefix(&other), (NONE, 0));
        }
    }
}
