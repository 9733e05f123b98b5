//! The token ids a recording was made from, kept beside the shards by
//! `modelbin acts record` (an addition of ours; the saev project does not
//! read these files and ignores them).
//!
//! - `tokens.bin`: little-endian `u32`, `[n_imgs, n_patches_per_img]`: the
//!   ids of each image's window, without `[CLS]`/`[SEP]`.
//! - `vocab.txt` (optional): one token string per line, line `i` being id
//!   `i`, for tokenizers whose ids are not bytes.
//!
//! The metadata's `data.vocab_size`, when present, bounds every id.

use std::path::Path;

use crate::io::source::{self, MappedFile};
use crate::saev::Metadata;
use crate::{Error, Result, SaevError};

/// The token ids file's name.
pub const TOKENS_FILE: &str = "tokens.bin";
/// The vocabulary file's name.
pub const VOCAB_FILE: &str = "vocab.txt";
/// The largest `vocab.txt` read.
const MAX_VOCAB_BYTES: u64 = 64 << 20;

/// The mapped `tokens.bin` of a dataset, its size checked against the
/// metadata.
#[derive(Debug)]
pub struct TokenIds {
    file: MappedFile,
    per_img: u64,
    n_imgs: u64,
}

impl TokenIds {
    /// Opens `dir/tokens.bin` if it exists; its size must be
    /// `n_imgs × n_patches_per_img × 4` bytes.
    pub(crate) fn open(dir: &Path, metadata: &Metadata) -> Result<Option<TokenIds>> {
        let path = dir.join(TOKENS_FILE);
        if !path.exists() {
            return Ok(None);
        }
        let file = MappedFile::open(&path)?;
        let expected = metadata
            .n_imgs
            .saturating_mul(metadata.n_patches_per_img)
            .saturating_mul(4);
        if file.len() as u64 != expected {
            return Err(Error::Saev(SaevError::TokensSize {
                path,
                expected,
                found: file.len() as u64,
            }));
        }
        Ok(Some(TokenIds {
            file,
            per_img: metadata.n_patches_per_img,
            n_imgs: metadata.n_imgs,
        }))
    }

    /// The ids of image `img`'s window, or `None` past the last image.
    pub fn window(&self, img: u64) -> Option<Vec<u32>> {
        if img >= self.n_imgs {
            return None;
        }
        let start = img.checked_mul(self.per_img)?;
        let ids = self.span(start, self.per_img as usize);
        (ids.len() as u64 == self.per_img).then_some(ids)
    }

    /// Up to `len` ids from position `start` of the whole stream (windows
    /// are stored image after image).
    pub fn span(&self, start: u64, len: usize) -> Vec<u32> {
        let total = self.file.len() / 4;
        let start = usize::try_from(start).unwrap_or(usize::MAX).min(total);
        let end = start.saturating_add(len).min(total);
        self.file[start * 4..end * 4]
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    }

    /// How many ids the file holds (`n_imgs × n_patches_per_img`).
    pub(crate) fn count(&self) -> u64 {
        (self.file.len() / 4) as u64
    }

    /// Every id in order, as stored.
    pub fn all(&self) -> impl Iterator<Item = u32> + '_ {
        self.file
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Checks every id against `vocab_size`; names the first one outside.
    pub(crate) fn check_range(&self, dir: &Path, vocab_size: u64) -> Result<()> {
        match self
            .all()
            .enumerate()
            .find(|&(_, id)| u64::from(id) >= vocab_size)
        {
            None => Ok(()),
            Some((at, id)) => {
                let at = at as u64;
                Err(Error::Saev(SaevError::TokenOutOfRange {
                    path: dir.join(TOKENS_FILE),
                    img: at / self.per_img,
                    token: at % self.per_img,
                    id,
                    vocab_size,
                }))
            }
        }
    }
}

/// Reads `dir/vocab.txt`, one token per line, if it exists.
pub(crate) fn read_vocabulary(dir: &Path) -> Result<Option<Vec<String>>> {
    let path = dir.join(VOCAB_FILE);
    if !path.exists() {
        return Ok(None);
    }
    let text = source::read_capped_text(&path, "SAEV vocab.txt", MAX_VOCAB_BYTES)?;
    Ok(Some(text.lines().map(str::to_owned).collect()))
}
