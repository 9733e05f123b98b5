//! The tiktoken-compatible tokenizer.

use std::path::Path;

use aho_corasick::{AhoCorasick, MatchKind};
use modelbin_format::bpe2::Bpe2;
use modelbin_format::io::checksum::hex;
use modelbin_format::io::source::MappedFile;

use crate::bpe::{Scratch, encode_piece, with_scratch};
use crate::pretokenize::{Pattern, PieceSink};
use crate::vocab::{LaidOut, Source, Vocab};
use crate::{Error, Result};

mod unstable;

/// Empties the calling thread's cache of recent pieces' tokens and frees
/// its memory. Encoding never needs this (a remembered answer is the one
/// merging gives, and entries of one vocabulary are never used by
/// another); it is for benchmarks that time text the cache has already
/// seen, and for a thread done with tokenizing.
pub fn clear_piece_cache() {
    with_scratch(Scratch::forget_pieces);
}

/// A set of special tokens, by name.
#[derive(Debug, Clone, Copy)]
pub enum Specials<'a> {
    /// No special token.
    None,
    /// Every special token of the encoding.
    All,
    /// These special tokens.
    Only(&'a [&'a str]),
}

/// tiktoken's check before encoding: [`Error::DisallowedSpecial`] naming
/// the first of `disallowed` (any strings, as tiktoken takes them) that
/// occurs in `text`, the leftmost.
pub fn check_disallowed(text: &str, disallowed: &[&str]) -> Result<()> {
    match disallowed
        .iter()
        .filter_map(|t| text.find(t).map(|at| (at, *t)))
        .min()
    {
        Some((offset, token)) => Err(Error::DisallowedSpecial {
            token: token.to_owned(),
            offset,
        }),
        None => Ok(()),
    }
}

/// A BPE tokenizer that gives exactly tiktoken's ids for its encoding.
/// Thread-safe: share one across threads.
#[derive(Debug)]
pub struct Tokenizer {
    vocab: Vocab,
    pattern: Pattern,
    /// Special tokens (text, rank).
    specials: Vec<(String, u32)>,
    name: Option<&'static str>,
    /// The mergeable tokens' ranks in the order of their bytes, for
    /// [`Tokenizer::encode_with_unstable`]'s prefix searches (made on first
    /// use).
    ranks_by_bytes: std::sync::OnceLock<Vec<u32>>,
}

impl Tokenizer {
    /// A tokenizer over a BPE2 vocabulary. The pre-tokenizer and special
    /// tokens come from the vocabulary's source hash when it names a known
    /// encoding; otherwise `pattern` must be given (and there are no special
    /// tokens). A given `pattern` overrides the built-in one.
    pub fn from_bpe2(source: Source, pattern: Option<Pattern>) -> Result<Self> {
        Self::from_file(Bpe2::from_buffer(source)?, pattern, None)
    }

    /// A tokenizer over a parsed file; `laid_out`, when given, holds the
    /// tables `build.rs` laid out for this file.
    pub(crate) fn from_file(
        file: Bpe2<Source>,
        pattern: Option<Pattern>,
        laid_out: Option<LaidOut>,
    ) -> Result<Self> {
        let encoding = file.encoding();
        let pattern = match (pattern, encoding) {
            (Some(p), _) => p,
            (None, Some(e)) => {
                Pattern::for_encoding(e.name).expect("known encodings have patterns")
            }
            (None, None) => {
                return Err(Error::UnknownEncoding {
                    hash: hex(&file.header().source_hash),
                });
            }
        };
        let specials: Vec<(String, u32)> = encoding
            .map(|e| {
                e.special_tokens
                    .iter()
                    .map(|&(text, rank)| (text.to_owned(), rank))
                    .collect()
            })
            .unwrap_or_default();
        let vocab = match laid_out {
            Some(tables) => Vocab::laid_out(file, tables),
            None => Vocab::new(file, |rank| specials.iter().any(|&(_, r)| r == rank)),
        };
        if let Some(byte) = (0..=255u8).find(|&b| vocab.byte_rank(b) == u32::MAX) {
            return Err(Error::MissingByte(byte));
        }
        Ok(Tokenizer {
            vocab,
            pattern,
            specials,
            name: encoding.map(|e| e.name),
            ranks_by_bytes: std::sync::OnceLock::new(),
        })
    }

    /// A tokenizer from the parts tiktoken's `Encoding` constructor takes:
    /// the mergeable tokens and their ranks (unique ranks, unique non-empty
    /// bytes, every single byte among them), the pre-tokenizer, and the
    /// special tokens (text, id). Merging runs on the same tables as a
    /// built-in encoding's, built here instead of at compile time.
    ///
    /// ```
    /// use modelbin_tokenize::{Pattern, Tokenizer};
    /// let mut ranks: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], u32::from(b))).collect();
    /// ranks.push((b"ab".to_vec(), 256));
    /// let specials = vec![("<|end|>".to_owned(), 257)];
    /// let tokenizer = Tokenizer::from_parts(&ranks, Pattern::from_regex(r"\w+|\s+")?, specials)?;
    /// assert_eq!(tokenizer.encode_ordinary("abc ab")?, [256, 99, 32, 256]);
    /// assert_eq!(tokenizer.vocab_size(), 258);
    /// # Ok::<(), modelbin_tokenize::Error>(())
    /// ```
    pub fn from_parts(
        ranks: &[modelbin_format::bpe2::RankedToken],
        pattern: Pattern,
        specials: Vec<(String, u32)>,
    ) -> Result<Self> {
        // No source file: a zero hash, which names no known encoding, so
        // the pattern and special tokens are the given ones.
        let bytes = modelbin_format::bpe2::build(ranks, [0; 32])?;
        let mut tokenizer = Self::from_bpe2(Source::Owned(bytes), Some(pattern))?;
        tokenizer.specials = specials;
        Ok(tokenizer)
    }

    /// This tokenizer as the built-in encoding `name`, with `extra` special
    /// tokens beside its vocabulary's (a text it has already keeps its id).
    pub(crate) fn renamed(mut self, name: &'static str, extra: Vec<(String, u32)>) -> Self {
        for (text, id) in extra {
            if !self.specials.iter().any(|(known, _)| *known == text) {
                self.specials.push((text, id));
            }
        }
        self.name = Some(name);
        self
    }

    /// Opens a BPE2 file (memory-mapped); see [`Tokenizer::from_bpe2`].
    pub fn open(path: impl AsRef<Path>, pattern: Option<Pattern>) -> Result<Self> {
        Self::from_bpe2(Source::Mapped(MappedFile::open(path)?), pattern)
    }

    /// Opens a vocabulary file of either kind, told apart by content: BPE2
    /// (memory-mapped) or tiktoken's `.tiktoken` (converted in memory, with
    /// the special tokens of the encoding it is, when it is a known one).
    pub fn open_vocabulary(path: impl AsRef<Path>, pattern: Option<Pattern>) -> Result<Self> {
        use modelbin_format::{Error as FormatError, Format};
        let path = path.as_ref();
        match modelbin_format::detect::detect(path)? {
            Format::Tiktoken => {
                let text = MappedFile::open(path)?;
                let bytes = modelbin_format::bpe2::build_from_tiktoken(&text, true)?;
                Self::from_bpe2(Source::Owned(bytes), pattern)
            }
            Format::Bpe2 => Self::open(path, pattern),
            format => Err(FormatError::UnsupportedFormat {
                format,
                operation: "a tokenizer, whose vocabulary is a .bpe2 or .tiktoken file",
            }
            .into()),
        }
    }

    /// The encoding's name, when the vocabulary is a known one.
    pub fn name(&self) -> Option<&'static str> {
        self.name
    }

    /// Number of ranks (highest id + 1), special tokens included when present.
    pub fn vocab_size(&self) -> u32 {
        let specials = self.specials.iter().map(|&(_, r)| r + 1).max().unwrap_or(0);
        self.vocab.file().token_count().max(specials)
    }

    /// The special tokens (text, id).
    pub fn special_tokens(&self) -> &[(String, u32)] {
        &self.specials
    }

    #[cfg(test)]
    pub(crate) fn vocab(&self) -> &Vocab {
        &self.vocab
    }

    /// The pre-tokenizer.
    pub fn pattern(&self) -> &Pattern {
        &self.pattern
    }

    /// Encodes `text` with every special token treated as ordinary text
    /// (tiktoken's `encode_ordinary`). Only a custom pattern can fail
    /// ([`Error::PatternFailed`]); the built-in encodings never do.
    pub fn encode_ordinary(&self, text: &str) -> Result<Vec<u32>> {
        let mut ids = Vec::with_capacity(text.len() / 3);
        self.encode_ordinary_into(text, &mut ids)?;
        Ok(ids)
    }

    /// Appends the ids of [`Tokenizer::encode_ordinary`]`(text)` to `ids`,
    /// so a caller encoding many texts can reuse one buffer.
    ///
    /// ```
    /// let tokenizer = modelbin_tokenize::Tokenizer::embedded("cl100k_base")?;
    /// let mut ids = Vec::new();
    /// tokenizer.encode_ordinary_into("hello", &mut ids)?;
    /// tokenizer.encode_ordinary_into(" world", &mut ids)?;
    /// assert_eq!(ids, [15339, 1917]);
    /// # Ok::<(), modelbin_tokenize::Error>(())
    /// ```
    pub fn encode_ordinary_into(&self, text: &str, ids: &mut Vec<u32>) -> Result<()> {
        self.for_each_ordinary(text, &mut |id| ids.push(id))
    }

    /// Counts the tokens of `encode_ordinary(text)` without storing them.
    pub fn count(&self, text: &str) -> Result<usize> {
        let mut n = 0;
        self.for_each_ordinary(text, &mut |_| n += 1)?;
        Ok(n)
    }

    /// tiktoken's `encode`: `allowed` special tokens in the text become their
    /// ids; a `disallowed` one is an error; any other is ordinary text.
    /// tiktoken's defaults are `Specials::None` and `Specials::All`.
    pub fn encode(
        &self,
        text: &str,
        allowed: Specials<'_>,
        disallowed: Specials<'_>,
    ) -> Result<Vec<u32>> {
        let allowed = self.select(allowed)?;
        let disallowed = self.select(disallowed)?;
        let disallowed: Vec<&str> = disallowed
            .iter()
            .filter(|d| !allowed.iter().any(|a| a.1 == d.1))
            .map(|(t, _)| t.as_str())
            .collect();
        check_disallowed(text, &disallowed)?;
        let mut ids = Vec::with_capacity(text.len() / 3);
        if allowed.is_empty() {
            self.for_each_ordinary(text, &mut |id| ids.push(id))?;
            return Ok(ids);
        }
        let finder = special_finder(&allowed).expect("some special token is allowed");
        let mut start = 0;
        for m in finder.find_iter(text) {
            self.for_each_ordinary(&text[start..m.start()], &mut |id| ids.push(id))?;
            ids.push(allowed[m.pattern().as_usize()].1);
            start = m.end();
        }
        self.for_each_ordinary(&text[start..], &mut |id| ids.push(id))?;
        Ok(ids)
    }

    /// The bytes the ids stand for.
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            match self.vocab.token(id) {
                Some(bytes) => out.extend_from_slice(bytes),
                None => match self.specials.iter().find(|&&(_, r)| r == id) {
                    Some((text, _)) => out.extend_from_slice(text.as_bytes()),
                    None => return Err(Error::UnknownToken(id)),
                },
            }
        }
        Ok(out)
    }

    /// The id of one token given by its bytes: a mergeable token's rank or
    /// a special token's id (tiktoken's `encode_single_token`).
    pub fn encode_single_token(&self, bytes: &[u8]) -> Option<u32> {
        self.vocab.rank(bytes).or_else(|| {
            self.specials
                .iter()
                .find(|(text, _)| text.as_bytes() == bytes)
                .map(|&(_, id)| id)
        })
    }

    /// The ids of `bytes` merged as one piece, without the pre-tokenizer's
    /// split (tiktoken's `_encode_single_piece`).
    pub fn encode_single_piece(&self, bytes: &[u8]) -> Vec<u32> {
        let mut ids = Vec::new();
        if bytes.is_empty() {
            return ids;
        }
        with_scratch(|scratch| encode_piece(&self.vocab, bytes, scratch, &mut |id| ids.push(id)));
        ids
    }

    /// The mergeable tokens (rank, bytes), in rank order: every token of
    /// the vocabulary but the special ones.
    pub fn mergeable_tokens(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        self.vocab
            .file()
            .tokens()
            .filter(|&(rank, _)| self.vocab.ordinary(rank))
    }

    /// tiktoken's `_encode_bytes`: the ids of any bytes. Valid UTF-8 gives
    /// [`Tokenizer::encode_ordinary`]'s ids. Otherwise the valid prefix is
    /// encoded, and the bytes after it are merged together with the tokens
    /// of the prefix's last piece (and the whitespace tokens just before
    /// it), which those bytes could have joined had they been text.
    pub fn encode_bytes(&self, bytes: &[u8]) -> Result<Vec<u32>> {
        let valid = match std::str::from_utf8(bytes) {
            Ok(text) => return self.encode_ordinary(text),
            Err(e) => e.valid_up_to(),
        };
        let (text, rest) = bytes.split_at(valid);
        let text = std::str::from_utf8(text).expect("the prefix up to the first invalid byte");
        with_scratch(|scratch| {
            let mut ids = Vec::new();
            let mut last_piece = 0;
            self.pattern.split_into(text, |start: usize, end: usize| {
                last_piece = ids.len();
                let piece = &text.as_bytes()[start..end];
                encode_piece(&self.vocab, piece, scratch, &mut |id| ids.push(id));
            })?;
            let unstable_from = self.unstable_start(&ids, last_piece);
            let mut unstable = self.decode_bytes(&ids[unstable_from..])?;
            unstable.extend_from_slice(rest);
            ids.truncate(unstable_from);
            encode_piece(&self.vocab, &unstable, scratch, &mut |id| ids.push(id));
            Ok(ids)
        })
    }

    /// The text the ids stand for; invalid UTF-8 becomes U+FFFD, as
    /// tiktoken's `decode` (errors="replace") does.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        let bytes = self.decode_bytes(ids)?;
        Ok(match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    /// The special tokens a [`Specials`] names, checked against the encoding.
    fn select(&self, specials: Specials<'_>) -> Result<Vec<(String, u32)>> {
        match specials {
            Specials::None => Ok(Vec::new()),
            Specials::All => Ok(self.specials.clone()),
            Specials::Only(names) => names
                .iter()
                .map(|name| {
                    self.specials
                        .iter()
                        .find(|(t, _)| t == name)
                        .cloned()
                        .ok_or_else(|| Error::UnknownSpecial((*name).to_owned()))
                })
                .collect(),
        }
    }

    /// Encodes ordinary text piece by piece, calling `emit` per id, with
    /// this thread's merge buffers and piece cache.
    pub(crate) fn for_each_ordinary(&self, text: &str, emit: &mut impl FnMut(u32)) -> Result<()> {
        with_scratch(|scratch| {
            self.pattern.split_into(
                text,
                PieceEncoder {
                    vocab: &self.vocab,
                    text: text.as_bytes(),
                    scratch,
                    emit,
                },
            )
        })
    }
}

/// A searcher for the texts of `specials` (leftmost-longest, as tiktoken
/// matches them), or `None` when there are none.
fn special_finder(specials: &[(String, u32)]) -> Option<AhoCorasick> {
    if specials.is_empty() {
        return None;
    }
    let finder = AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .build(specials.iter().map(|(t, _)| t.as_str()))
        .expect("literal special tokens always compile");
    Some(finder)
}

/// Encodes each piece the pre-tokenizer finds. A sink whose
/// [`PieceSink::piece`] is always inlined, so that the pre-tokenizer's loop
/// and the lookup of each piece are one function: called through a closure,
/// each piece cost a call that saved and restored registers.
struct PieceEncoder<'a, E> {
    vocab: &'a Vocab,
    text: &'a [u8],
    scratch: &'a mut Scratch,
    emit: &'a mut E,
}

impl<E: FnMut(u32)> PieceSink for PieceEncoder<'_, E> {
    #[inline(always)]
    fn piece(&mut self, start: usize, end: usize) {
        encode_piece(self.vocab, &self.text[start..end], self.scratch, self.emit);
    }
}
