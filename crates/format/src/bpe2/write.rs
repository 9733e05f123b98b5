//! Writing BPE2 files: the header, the rank-indexed table and the token
//! bytes, built in memory and committed atomically.

use std::io::Write;
use std::path::Path;

use super::{Bpe2, HEADER_LEN, MAGIC, MAX_RANK_SLACK, RankedToken, VERSION};
use crate::io::output::OutputFile;
use crate::{Bpe2Error, Error, LayoutError, Result};

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
