//! BPE2 (`.bpe2`): a compact tiktoken vocabulary.
//!
//! Layout: a 64-byte header (`"BPE2"`, version 2, token_count, max_token_len,
//! blob_size, SHA-256 of the source `.tiktoken` file, 12 reserved zero bytes),
//! a table of token_count × (offset u32, length u32) indexed by rank, then the
//! token bytes. A rank with no token is the entry (0, 0). All little-endian.
//! See `docs/formats/bpe2.md` for the decisions and every validation rule.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::io::Write;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::bytes::ByteReader;
use crate::checksum::{hex, sha256};
use crate::output::OutputFile;
use crate::source::MappedFile;
use crate::{Bpe2Error, LayoutError};
use crate::{Error, Result};

/// A token's bytes and its rank.
pub type RankedToken = (Vec<u8>, u32);

/// The magic bytes.
pub const MAGIC: &[u8; 4] = b"BPE2";
/// The version this module reads and writes.
pub const VERSION: u32 = 2;
/// Size of the header.
pub const HEADER_LEN: usize = 64;
const RESERVED: std::ops::Range<usize> = 52..64;
const ENTRY_LEN: u64 = 8;
/// Absent ranks allowed beyond twice the token count when building.
const MAX_RANK_SLACK: u64 = 1 << 16;
/// The most ranks a file may declare (16,777,216; real vocabularies have
/// up to a few hundred thousand). The table alone would then be 128 MiB.
pub const MAX_TOKEN_COUNT: u32 = 1 << 24;

/// A tiktoken encoding modelbin knows: its source file's SHA-256 and its
/// special tokens (from tiktoken's `openai_public.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownEncoding {
    /// The encoding's name, e.g. `cl100k_base`.
    pub name: &'static str,
    /// Lowercase hex SHA-256 of the official `.tiktoken` file.
    pub source_sha256: &'static str,
    /// Special tokens and their ranks.
    pub special_tokens: &'static [(&'static str, u32)],
}

const ENDOFTEXT: &str = "<|endoftext|>";

/// The encodings whose vocabularies modelbin recognises by source hash.
pub const KNOWN_ENCODINGS: [KnownEncoding; 4] = [
    KnownEncoding {
        name: "cl100k_base",
        source_sha256: "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        special_tokens: &[
            (ENDOFTEXT, 100257),
            ("<|fim_prefix|>", 100258),
            ("<|fim_middle|>", 100259),
            ("<|fim_suffix|>", 100260),
            ("<|endofprompt|>", 100276),
        ],
    },
    KnownEncoding {
        name: "o200k_base",
        source_sha256: "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        special_tokens: &[(ENDOFTEXT, 199999), ("<|endofprompt|>", 200018)],
    },
    KnownEncoding {
        name: "p50k_base",
        source_sha256: "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
        special_tokens: &[(ENDOFTEXT, 50256)],
    },
    KnownEncoding {
        name: "r50k_base",
        source_sha256: "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
        special_tokens: &[(ENDOFTEXT, 50256)],
    },
];

impl KnownEncoding {
    /// The known encoding whose source file has this SHA-256.
    pub fn by_source_hash(hash: &[u8; 32]) -> Option<&'static KnownEncoding> {
        let hash = hex(hash);
        KNOWN_ENCODINGS.iter().find(|e| e.source_sha256 == hash)
    }

    /// The known encoding called `name`.
    pub fn by_name(name: &str) -> Option<&'static KnownEncoding> {
        KNOWN_ENCODINGS.iter().find(|e| e.name == name)
    }

    /// Whether `rank` is one of this encoding's special tokens.
    pub fn is_special(&self, rank: u32) -> bool {
        self.special_tokens.iter().any(|&(_, r)| r == rank)
    }
}

/// The fixed header of a BPE2 file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Header {
    /// Highest rank + 1 (absent ranks included).
    pub token_count: u32,
    /// Length of the longest token.
    pub max_token_len: u32,
    /// Size of the token-bytes section.
    pub blob_size: u32,
    /// SHA-256 of the source `.tiktoken` file.
    #[serde(serialize_with = "serialize_hex")]
    pub source_hash: [u8; 32],
}

fn serialize_hex<S: serde::Serializer>(bytes: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&hex(bytes))
}

/// A validated BPE2 vocabulary over any byte buffer. Token bytes are
/// borrowed from the buffer.
#[derive(Debug)]
pub struct Bpe2<B> {
    buf: B,
    header: Header,
}

/// Opens and validates a BPE2 file, memory-mapped.
pub fn open(path: impl AsRef<Path>) -> Result<Bpe2<MappedFile>> {
    Bpe2::from_buffer(MappedFile::open(path)?)
}

impl<B: AsRef<[u8]>> Bpe2<B> {
    /// Validates `buf` as a whole BPE2 file: magic, version, sizes, every
    /// table entry, unique token bytes, zero reserved bytes.
    pub fn from_buffer(buf: B) -> Result<Self> {
        let header = parse_header(buf.as_ref())?;
        let file = Bpe2 { buf, header };
        file.check_table()?;
        Ok(file)
    }

    /// Reads `buf`'s header (validated) without checking its table: for
    /// bytes checked before, such as a vocabulary compiled into the binary
    /// and validated by its tests. A bad table in such bytes makes lookups
    /// return wrong tokens or panic, so untrusted bytes go through
    /// [`Bpe2::from_buffer`].
    pub fn from_trusted_buffer(buf: B) -> Result<Self> {
        let header = parse_header(buf.as_ref())?;
        Ok(Bpe2 { buf, header })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Number of ranks (highest rank + 1).
    pub fn token_count(&self) -> u32 {
        self.header.token_count
    }

    /// The encoding this vocabulary was built from, when its source hash is known.
    pub fn encoding(&self) -> Option<&'static KnownEncoding> {
        KnownEncoding::by_source_hash(&self.header.source_hash)
    }

    /// The bytes of token `rank`; `None` for an absent or out-of-range rank.
    pub fn token(&self, rank: u32) -> Option<&[u8]> {
        if rank >= self.header.token_count {
            return None;
        }
        let (start, len) = self.entry(rank);
        if len == 0 {
            return None;
        }
        let blob = self.blob_start() + start as usize;
        Some(&self.buf.as_ref()[blob..blob + len as usize])
    }

    /// Every present token with its rank, in rank order.
    pub fn tokens(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        (0..self.header.token_count).filter_map(|rank| self.token(rank).map(|t| (rank, t)))
    }

    /// Opening checks every rule already (the format has no checksum): a
    /// no-op, for the same face as the other formats.
    pub fn verify(&self) -> Result<()> {
        Ok(())
    }

    /// The whole file's bytes.
    pub fn file_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    /// Writes the vocabulary back as a `.tiktoken` file (base64 token, space,
    /// rank per line), leaving out the known encoding's special tokens. For a
    /// file built from an official vocabulary this reproduces it byte for byte.
    pub fn write_tiktoken(&self, out: &mut impl Write) -> std::io::Result<()> {
        let encoding = self.encoding();
        let mut line = String::new();
        for (rank, token) in self.tokens() {
            if encoding.is_some_and(|e| e.is_special(rank)) {
                continue;
            }
            line.clear();
            BASE64.encode_string(token, &mut line);
            line.push(' ');
            line.push_str(itoa(rank, &mut [0; 10]));
            line.push('\n');
            out.write_all(line.as_bytes())?;
        }
        Ok(())
    }

    /// Each rank's (offset within the token bytes, length), in rank
    /// order; (0, 0) for a rank without a token. Validated at opening.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = (u32, u32)> + '_ {
        (0..self.header.token_count).map(|rank| self.entry(rank))
    }

    /// Where the token bytes start in the file.
    pub fn blob_start(&self) -> usize {
        HEADER_LEN + self.header.token_count as usize * ENTRY_LEN as usize
    }

    /// (offset, length) of `rank`'s table entry; `rank` must be in range.
    fn entry(&self, rank: u32) -> (u32, u32) {
        let at = HEADER_LEN + rank as usize * ENTRY_LEN as usize;
        let bytes = &self.buf.as_ref()[at..at + 8];
        let word = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
        (word(0), word(4))
    }

    fn check_table(&self) -> Result<()> {
        let Header {
            token_count,
            max_token_len,
            blob_size,
            ..
        } = self.header;
        // Grows with the tokens present, whose bytes are disjoint: the work
        // and memory are linear in the file.
        let mut seen: HashMap<&[u8], u32> = HashMap::new();
        let mut longest = 0;
        let mut previous_end = 0u64;
        for rank in 0..token_count {
            let offset = (HEADER_LEN as u64) + u64::from(rank) * ENTRY_LEN;
            let (start, len) = self.entry(rank);
            if len == 0 {
                if start != 0 {
                    return Err(Error::Bpe2(Bpe2Error::NonCanonicalEmptyToken {
                        rank,
                        offset,
                        start,
                    }));
                }
                continue;
            }
            let end = u64::from(start) + u64::from(len);
            if end > u64::from(blob_size) {
                return Err(Error::Bpe2(Bpe2Error::TokenOutsideBlob {
                    rank,
                    offset,
                    start: start.into(),
                    end,
                    blob_size: blob_size.into(),
                }));
            }
            if u64::from(start) < previous_end {
                return Err(Error::Bpe2(Bpe2Error::OverlappingToken {
                    rank,
                    offset,
                    start: start.into(),
                    previous_end,
                }));
            }
            previous_end = end;
            if len > max_token_len {
                return Err(Error::Bpe2(Bpe2Error::TokenTooLong {
                    rank,
                    offset,
                    len,
                    max: max_token_len,
                }));
            }
            longest = longest.max(len);
            let token = self.token(rank).expect("a non-empty, in-range entry");
            match seen.entry(token) {
                Entry::Vacant(slot) => {
                    slot.insert(rank);
                }
                Entry::Occupied(slot) => {
                    return Err(Error::Bpe2(Bpe2Error::DuplicateToken {
                        rank,
                        offset,
                        earlier: *slot.get(),
                    }));
                }
            }
        }
        if longest != max_token_len {
            return Err(Error::Bpe2(Bpe2Error::MaxTokenLenMismatch {
                declared: max_token_len,
                actual: longest,
            }));
        }
        Ok(())
    }
}

fn parse_header(file: &[u8]) -> Result<Header> {
    let mut r = ByteReader::new(file, 0);
    let magic = r.array::<4>("magic")?;
    if &magic != MAGIC {
        return Err(Error::Layout(LayoutError::BadMagic {
            expected: "\"BPE2\"",
            found: format!("\"{}\"", magic.escape_ascii()),
        }));
    }
    let version = r.u32_le("version")?;
    if version != VERSION {
        return Err(Error::Layout(LayoutError::UnsupportedVersion {
            format: "BPE2",
            offset: 4,
            found: version,
            expected: VERSION,
        }));
    }
    let token_count = r.u32_le("token_count")?;
    let max_token_len = r.u32_le("max_token_len")?;
    let blob_size = r.u32_le("blob_size")?;
    let source_hash = r.array::<32>("source_hash")?;
    let reserved = r.array::<12>("reserved")?;
    if let Some(i) = reserved.iter().position(|&b| b != 0) {
        return Err(Error::Layout(LayoutError::NonZeroReserved {
            offset: (RESERVED.start + i) as u64,
            byte: reserved[i],
        }));
    }
    if token_count == 0 {
        return Err(Error::Bpe2(Bpe2Error::EmptyVocabulary { offset: 8 }));
    }
    if token_count > MAX_TOKEN_COUNT {
        return Err(Error::Layout(LayoutError::CountTooLarge {
            what: "token_count",
            offset: 8,
            count: token_count.into(),
            limit: MAX_TOKEN_COUNT.into(),
        }));
    }
    // u32 × 8 + u32 + 64 cannot overflow u64.
    let expected = HEADER_LEN as u64 + u64::from(token_count) * ENTRY_LEN + u64::from(blob_size);
    if expected != file.len() as u64 {
        return Err(Error::Layout(LayoutError::FileSizeMismatch {
            expected,
            found: file.len() as u64,
        }));
    }
    Ok(Header {
        token_count,
        max_token_len,
        blob_size,
        source_hash,
    })
}

/// Formats `n` in decimal into `buf`.
fn itoa(mut n: u32, buf: &mut [u8; 10]) -> &str {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[i..]).expect("ASCII digits")
}

/// Parses a `.tiktoken` file: one `base64-token rank` per line.
pub fn parse_tiktoken(source: &[u8]) -> Result<Vec<RankedToken>> {
    let mut tokens = Vec::new();
    let mut offset = 0u64;
    for (index, line) in source.split_inclusive(|&b| b == b'\n').enumerate() {
        let invalid = |reason: String| {
            Error::Bpe2(Bpe2Error::InvalidTiktokenLine {
                line: index + 1,
                offset,
                reason,
            })
        };
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let (token, rank) = match text.iter().position(|&b| b == b' ') {
            Some(space) => (&text[..space], &text[space + 1..]),
            None => return Err(invalid("expected `base64-token rank`".into())),
        };
        let token = BASE64
            .decode(token)
            .map_err(|e| invalid(format!("bad base64 token: {e}")))?;
        let rank = std::str::from_utf8(rank)
            .ok()
            .filter(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|r| r.parse::<u32>().ok())
            .ok_or_else(|| invalid(format!("bad rank `{}`", rank.escape_ascii())))?;
        if token.is_empty() {
            return Err(invalid("empty token".into()));
        }
        tokens.push((token, rank));
        offset += line.len() as u64;
    }
    Ok(tokens)
}

/// The tokens of a `.tiktoken` file and its SHA-256, for [`build`] or
/// [`write_file`]. With `include_special_tokens`, the special tokens of the
/// recognised encoding are added at their ranks (an unknown source has none
/// to add).
pub fn tokens_from_tiktoken(
    source: &[u8],
    include_special_tokens: bool,
) -> Result<(Vec<RankedToken>, [u8; 32])> {
    let source_hash = sha256(source);
    let mut tokens = parse_tiktoken(source)?;
    if include_special_tokens && let Some(encoding) = KnownEncoding::by_source_hash(&source_hash) {
        tokens.extend(
            encoding
                .special_tokens
                .iter()
                .map(|&(text, rank)| (text.as_bytes().to_vec(), rank)),
        );
    }
    Ok((tokens, source_hash))
}

/// Builds a BPE2 file from the bytes of a `.tiktoken` file (see
/// [`tokens_from_tiktoken`]).
pub fn build_from_tiktoken(source: &[u8], include_special_tokens: bool) -> Result<Vec<u8>> {
    let (tokens, source_hash) = tokens_from_tiktoken(source, include_special_tokens)?;
    build(&tokens, source_hash)
}

/// Writes a BPE2 file of (bytes, rank) pairs atomically (see [`build`]).
/// `progress` gets (bytes written, total). Returns the file size.
pub fn write_file(
    path: impl AsRef<Path>,
    tokens: &[RankedToken],
    source_hash: [u8; 32],
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64> {
    let path = path.as_ref();
    let bytes = build(tokens, source_hash)?;
    let total = bytes.len() as u64;
    let mut file = OutputFile::create(path)?;
    file.write_all(&bytes).map_err(|e| Error::io(path, e))?;
    progress(total, total);
    file.commit()?;
    Ok(total)
}

/// Builds a BPE2 file from (bytes, rank) pairs; ranks must be unique, bytes
/// non-empty and unique.
pub fn build(tokens: &[RankedToken], source_hash: [u8; 32]) -> Result<Vec<u8>> {
    let token_count = tokens
        .iter()
        .map(|&(_, rank)| u64::from(rank) + 1)
        .max()
        .unwrap_or(0);
    // Absent ranks cost 8 bytes each: refuse sparse ranks that would make a
    // huge file (and allocation) out of a few tokens.
    let allowed = 2 * tokens.len() as u64 + MAX_RANK_SLACK;
    if token_count > allowed {
        return Err(Error::Bpe2(Bpe2Error::InvalidVocabulary(format!(
            "highest rank {} is too sparse for {} tokens (at most {allowed} ranks)",
            token_count - 1,
            tokens.len()
        ))));
    }
    let token_count = token_count as u32;
    let mut by_rank: Vec<Option<&[u8]>> = vec![None; token_count as usize];
    for (token, rank) in tokens {
        let slot = &mut by_rank[*rank as usize];
        if slot.is_some() {
            return Err(Error::Bpe2(Bpe2Error::InvalidVocabulary(format!(
                "rank {rank} appears twice"
            ))));
        }
        *slot = Some(token);
    }
    let blob_size: usize = tokens.iter().map(|(t, _)| t.len()).sum();
    let blob_size = u32::try_from(blob_size).map_err(|_| {
        Error::Layout(LayoutError::Overflow {
            what: "token blob size".into(),
            at: crate::At(None),
        })
    })?;
    let max_token_len = tokens.iter().map(|(t, _)| t.len()).max().unwrap_or(0) as u32;

    let mut out = Vec::with_capacity(HEADER_LEN + by_rank.len() * 8 + blob_size as usize);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&token_count.to_le_bytes());
    out.extend_from_slice(&max_token_len.to_le_bytes());
    out.extend_from_slice(&blob_size.to_le_bytes());
    out.extend_from_slice(&source_hash);
    out.extend_from_slice(&[0; 12]);
    let mut offset = 0u32;
    for token in &by_rank {
        let (start, len) = match token {
            Some(t) => (offset, t.len() as u32),
            None => (0, 0),
        };
        out.extend_from_slice(&start.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        offset += len;
    }
    for token in by_rank.iter().flatten() {
        out.extend_from_slice(token);
    }
    // Validate what we made: duplicate bytes are caught here.
    Bpe2::from_buffer(out.as_slice())?;
    Ok(out)
}
