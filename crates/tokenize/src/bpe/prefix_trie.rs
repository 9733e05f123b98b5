//! A byte trie over the vocabulary's tokens, for one question: which is the
//! longest token that starts at a given position? (Anchored matching needs
//! no failure links, so a plain trie beats a full Aho-Corasick automaton,
//! whose construction for 200,000 tokens takes half a second.)
//!
//! The trie is built from the tokens in byte order, so that its nodes are
//! made in one sequential pass, and stored compactly: each node is one
//! 64-bit [`Node`] word holding the byte that leads to it, the token that
//! ends there, and where its children's words are. A node's children are
//! a contiguous run of such words in byte order, searched one at a time
//! when there are a few and sixteen at a time when there are more, so a
//! step from a node to its child searches one run of words, and the word
//! found is the next node. The root's children are a 256-entry table, and
//! the nodes two bytes deep a 65,536-entry one (the first two steps are
//! where nodes have the most children).

use std::borrow::Cow;

use crate::layout::{Reader, Writer};

/// "No token".
pub const NONE: u32 = u32::MAX;

/// Token ids the trie holds are below this (its node words keep 23 bits of
/// id, all ones meaning none).
pub const ID_LIMIT: u32 = (1 << 23) - 1;

/// Nodes with at most this many children are searched one child at a time.
const SCANNED_CHILDREN: usize = 8;

/// A node of the trie in one word: from the lowest bit, the byte that
/// leads to it (8 bits), its number of children (9 bits, at most 256),
/// where they start among the trie's nodes (24 bits), and the token that
/// ends at it (23 bits, all ones for none). All ones in every bit is no
/// node (no node has 511 children).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Node(u64);

impl Node {
    /// No node.
    const ABSENT: Node = Node(u64::MAX);
    /// The token field of a node where no token ends.
    const NO_TOKEN: u64 = ID_LIMIT as u64;

    /// A node's word; `None` when a field does not fit (a token of
    /// 2^23 - 1 or more, more than 256 children, a first child at 2^24 or
    /// beyond).
    fn new(byte: u8, children: usize, first_child: usize, token: u32) -> Option<Node> {
        let token = if token == NONE {
            Self::NO_TOKEN
        } else if u64::from(token) < Self::NO_TOKEN {
            u64::from(token)
        } else {
            return None;
        };
        (children <= 256 && first_child < 1 << 24).then(|| {
            Node(
                u64::from(byte) | (children as u64) << 8 | (first_child as u64) << 17 | token << 41,
            )
        })
    }

    /// The byte that leads to the node.
    #[inline]
    fn byte(self) -> u8 {
        self.0 as u8
    }

    /// Where the node's children are among the trie's nodes.
    #[inline]
    fn children(self) -> std::ops::Range<usize> {
        let first = (self.0 >> 17) as usize & ((1 << 24) - 1);
        first..first + ((self.0 >> 8) as usize & ((1 << 9) - 1))
    }

    /// The token that ends at the node, or [`NONE`].
    #[inline]
    fn token(self) -> u32 {
        match self.0 >> 41 {
            Self::NO_TOKEN => NONE,
            token => token as u32,
        }
    }
}

/// Tokens by their bytes, as a trie.
#[derive(Debug, Default, PartialEq)]
pub struct PrefixTrie {
    /// The root's child for each byte, or [`Node::ABSENT`] (as words).
    root: Cow<'static, [u64]>,
    /// The node two bytes down, at `first << 8 | second`, or
    /// [`Node::ABSENT`].
    two: Cow<'static, [u64]>,
    /// Every node but the root, grouped by parent, each parent's children
    /// in byte order (where a node's children are, its word says).
    nodes: Cow<'static, [u64]>,
}

impl PrefixTrie {
    /// A trie of `tokens` (bytes, id); the bytes are distinct. `None` when
    /// it would have 2^24 nodes or more, or an id of 2^23 - 1 or more (far
    /// beyond any vocabulary's).
    pub fn new<'a>(tokens: impl IntoIterator<Item = (&'a [u8], u32)>) -> Option<Self> {
        let mut tokens: Vec<(&[u8], u32)> =
            tokens.into_iter().filter(|(t, _)| !t.is_empty()).collect();
        tokens.sort_unstable_by(|a, b| a.0.cmp(b.0));
        // Nodes in depth-first order, each with its parent, byte and token;
        // a node's children come in byte order because the tokens do.
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
        let count = ends.len();
        if count >= 1 << 24 {
            return None;
        }
        // Nodes grouped by parent (a stable counting sort keeps byte order):
        // each node's word goes to the next place among its parent's.
        let mut first_child = vec![0usize; count + 1];
        for &p in &parent[1..] {
            first_child[p as usize + 1] += 1;
        }
        for n in 0..count {
            first_child[n + 1] += first_child[n];
        }
        let mut next = first_child.clone();
        let mut nodes = vec![Node::ABSENT.0; count - 1];
        for node in 1..count {
            let children = first_child[node + 1] - first_child[node];
            let word = Node::new(label[node], children, first_child[node], ends[node])?;
            let p = parent[node] as usize;
            nodes[next[p]] = word.0;
            next[p] += 1;
        }
        let children_of = |node: Node| &nodes[node.children()];
        let mut root = vec![Node::ABSENT.0; 256];
        for &word in &nodes[..first_child[1]] {
            root[usize::from(Node(word).byte())] = word;
        }
        let mut two = vec![Node::ABSENT.0; 1 << 16];
        for &first in &nodes[..first_child[1]] {
            let first = Node(first);
            for &word in children_of(first) {
                two[usize::from(first.byte()) << 8 | usize::from(Node(word).byte())] = word;
            }
        }
        Some(PrefixTrie {
            root: root.into(),
            two: two.into(),
            nodes: nodes.into(),
        })
    }

    /// Appends the trie to a laid-out blob.
    #[allow(dead_code, reason = "build.rs lays out the tables with it")]
    pub fn write(&self, w: &mut Writer) {
        w.u64s(&self.root);
        w.u64s(&self.two);
        w.u64s(&self.nodes);
    }

    /// The trie [`PrefixTrie::write`] laid out, read in place; `None` when
    /// the tables' sizes are not a trie's. Only the sizes are checked: the
    /// node words are trusted, as they come from `build.rs` (a test
    /// compares them with a fresh build).
    pub fn read(r: &mut Reader<'static>) -> Option<Self> {
        let trie = PrefixTrie {
            root: r.u64s()?.into(),
            two: r.u64s()?.into(),
            nodes: r.u64s()?.into(),
        };
        let consistent =
            trie.root.len() == 256 && trie.two.len() == 1 << 16 && trie.nodes.len() < 1 << 24;
        consistent.then_some(trie)
    }

    /// The child of `node` along `byte`, if any.
    #[inline]
    fn child(&self, node: Node, byte: u8) -> Option<Node> {
        let children = &self.nodes[node.children()];
        // Of the nodes two or more bytes down, 57% have one child and 99%
        // at most eight (both encodings): a loop that stops at the match
        // beats comparing a whole chunk.
        if children.len() <= SCANNED_CHILDREN {
            return children
                .iter()
                .find(|&&word| Node(word).byte() == byte)
                .map(|&word| Node(word));
        }
        for chunk in children.chunks(16) {
            // Compares all of a chunk without branching (vectorised).
            let hits = chunk.iter().enumerate().fold(0u32, |m, (i, &word)| {
                m | u32::from(Node(word).byte() == byte) << i
            });
            if hits != 0 {
                return Some(Node(chunk[hits.trailing_zeros() as usize]));
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
        let one = Node(self.root[usize::from(first)]);
        if one == Node::ABSENT {
            return (NONE, 0, decided(1));
        }
        let mut best = (one.token(), 1);
        let mut read = None;
        if let Some((&second, rest)) = rest.split_first() {
            let mut node = Node(self.two[usize::from(first) << 8 | usize::from(second)]);
            if node == Node::ABSENT {
                read = decided(2);
            } else {
                if node.token() != NONE {
                    best = (node.token(), 2);
                }
                for (depth, &byte) in (3..).zip(rest) {
                    match self.child(node, byte) {
                        Some(child) => {
                            node = child;
                            if node.token() != NONE {
                                best = (node.token(), depth);
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

    /// A node's word gives back its fields; fields too wide give no word.
    #[test]
    fn node_words_hold_their_fields() {
        for (byte, children, first, token) in [
            (0u8, 0usize, 0usize, 0u32),
            (b'a', 1, 12_345, 199_997),
            (0xFF, 256, (1 << 24) - 1, (1 << 23) - 2),
            (7, 3, 9, NONE),
        ] {
            let node = Node::new(byte, children, first, token).unwrap();
            assert_eq!(node.byte(), byte);
            assert_eq!(node.children(), first..first + children);
            assert_eq!(node.token(), token);
            assert_ne!(node, Node::ABSENT);
        }
        assert_eq!(Node::new(0, 257, 0, 0), None);
        assert_eq!(Node::new(0xFF, 511, (1 << 24) - 1, NONE), None);
        assert_eq!(Node::new(0, 0, 1 << 24, 0), None);
        assert_eq!(Node::new(0, 0, 0, (1 << 23) - 1), None);
    }

    /// Nodes with a few children (searched one at a time) and with more
    /// than a chunk of them (searched sixteen at a time) find each child,
    /// and no byte that is not one.
    #[test]
    fn finds_children_of_small_and_wide_nodes() {
        let mut tokens: Vec<(Vec<u8>, u32)> = Vec::new();
        for (prefix, children) in [(&b"ab"[..], SCANNED_CHILDREN as u8), (b"cd", 40)] {
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
