//! Reading a BPE2 file: the header, then every table entry checked against
//! the token bytes (inside them, in order without overlap, unique, and as
//! long at most as the header's longest length, which one token must reach).

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use super::{Bpe2, ENTRY_LEN, HEADER_LEN, Header, MAGIC, MAX_TOKEN_COUNT, RESERVED, VERSION};
use crate::io::bytes::ByteReader;
use crate::{Bpe2Error, Error, LayoutError, Result};

impl<B: AsRef<[u8]>> Bpe2<B> {
    /// Checks every rank's table entry against the token bytes.
    pub(super) fn check_table(&self) -> Result<()> {
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

/// Parses and validates the 64-byte header.
pub(super) fn parse_header(file: &[u8]) -> Result<Header> {
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
