//! What `modelbin inspect` reports about a BPE2 vocabulary (and a
//! `.tiktoken` file, through the BPE2 it converts to).

use serde::Serialize;

use super::Bpe2;
use crate::Format;

/// What `inspect` reports about a BPE2 vocabulary.
#[derive(Debug, Clone, Serialize)]
pub struct Bpe2Summary {
    /// The format.
    pub format: Format,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// The format version.
    pub version: u32,
    /// The header.
    #[serde(flatten)]
    pub header: super::Header,
    /// Ranks that have a token.
    pub present_tokens: usize,
    /// The encoding the source hash names, if known.
    pub encoding: Option<&'static str>,
    /// The known encoding's special tokens present in the file.
    pub special_tokens: Vec<(String, u32)>,
}

impl Bpe2Summary {
    /// Summarises a `.tiktoken` file of `file_size` bytes through the BPE2
    /// it converts to: `source_hash` is the text file's SHA-256, `version`
    /// the converted BPE2's.
    pub fn of_tiktoken(vocabulary: &Bpe2<Vec<u8>>, file_size: u64) -> Self {
        Bpe2Summary {
            format: Format::Tiktoken,
            file_size,
            ..Bpe2Summary::of(vocabulary)
        }
    }

    /// Summarises a validated BPE2 file.
    pub fn of<B: AsRef<[u8]>>(file: &Bpe2<B>) -> Self {
        let encoding = file.encoding();
        let special_tokens = encoding
            .map(|e| {
                e.special_tokens
                    .iter()
                    .filter(|&&(_, rank)| file.token(rank).is_some())
                    .map(|&(text, rank)| (text.to_owned(), rank))
                    .collect()
            })
            .unwrap_or_default();
        Bpe2Summary {
            format: Format::Bpe2,
            file_size: file.file_bytes().len() as u64,
            version: super::VERSION,
            header: *file.header(),
            present_tokens: file.tokens().count(),
            encoding: encoding.map(|e| e.name),
            special_tokens,
        }
    }
}
