//! BPE2 (`.bpe2`): a compact tiktoken vocabulary.
//!
//! Layout: a 64-byte header (`"BPE2"`, version 2, token_count, max_token_len,
//! blob_size, SHA-256 of the source `.tiktoken` file, 12 reserved zero bytes),
//! a table of token_count × (offset u32, length u32) indexed by rank, then the
//! token bytes. A rank with no token is the entry (0, 0). All little-endian.
//! See `docs/formats/bpe2.md` for the decisions and every validation rule.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | [`Bpe2`], [`open`], `from_buffer`, `verify`, the header and the known encodings |
//! | `read.rs` | parsing the header and checking the table |
//! | `write.rs` | [`build`], [`write_file`] |
//! | `tiktoken.rs` | the `.tiktoken` text BPE2 is built from and written back to |
//! | `error.rs` | [`Bpe2Error`] |
//! | `summary.rs` | [`Bpe2Summary`] for `inspect` |

mod error;
mod read;
mod summary;
mod tiktoken;
mod write;

use std::path::Path;

pub use error::Bpe2Error;
pub use summary::Bpe2Summary;
pub use tiktoken::{build_from_tiktoken, parse_tiktoken, tokens_from_tiktoken};
pub use write::{build, write_file};

use crate::Result;
use crate::io::checksum::hex;
use crate::io::source::MappedFile;
use read::parse_header;

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
}
