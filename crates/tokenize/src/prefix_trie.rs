//! A byte trie over the vocabulary's tokens, for one question: which is the
//! longest token that starts at a given position? (Anchored matching needs
//! no failure links, so a plain trie beats a full Aho-Corasick automaton,
//! whose construction for 200,000 tokens takes half a second.)

use rustc_hash::FxHashMap;

/// "No token".
pub const NONE: u32 = u32::MAX;

/// Tokens by their bytes, as a trie: edges in one hash map keyed by
/// (node, byte), and the token that ends at each node.
#[derive(Debug, Default)]
pub struct PrefixTrie {
    /// `node << 8 | byte` → child node.
    edges: FxHashMap<u64, u32>,
    /// The token ending at each node, or [`NONE`]; node 0 is the root.
    ends: Vec<u32>,
}

impl PrefixTrie {
    /// A trie of `tokens` (bytes, id).
    pub fn new<'a>(tokens: impl IntoIterator<Item = (&'a [u8], u32)>) -> Self {
        let mut trie = PrefixTrie {
            edges: FxHashMap::default(),
            ends: vec![NONE],
        };
        for (bytes, id) in tokens {
            let mut node = 0u32;
            for &byte in bytes {
                let next = trie.ends.len() as u32;
                node = *trie
                    .edges
                    .entry(u64::from(node) << 8 | u64::from(byte))
                    .or_insert(next);
                if node == next {
                    trie.ends.push(NONE);
                }
            }
            trie.ends[node as usize] = id;
        }
        trie
    }

    /// The id of the longest token that is a prefix of `text`, or [`NONE`].
    #[inline]
    pub fn longest_prefix(&self, text: &[u8]) -> u32 {
        let (mut node, mut best) = (0u32, NONE);
        for &byte in text {
            match self.edges.get(&(u64::from(node) << 8 | u64::from(byte))) {
                Some(&child) => {
                    node = child;
                    if self.ends[node as usize] != NONE {
                        best = self.ends[node as usize];
                    }
                }
                None => break,
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_longest_token_at_the_start() {
        let tokens: [(&[u8], u32); 4] = [(b"a", 0), (b"ab", 1), (b"abcd", 2), (b"b", 3)];
        let trie = PrefixTrie::new(tokens);
        assert_eq!(trie.longest_prefix(b"abcde"), 2);
        assert_eq!(trie.longest_prefix(b"abc"), 1);
        assert_eq!(trie.longest_prefix(b"ba"), 3);
        assert_eq!(trie.longest_prefix(b"c"), NONE);
        assert_eq!(trie.longest_prefix(b""), NONE);
    }
}
