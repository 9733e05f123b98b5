//! The vocabulary section: WordPiece tokens by id and BERT's special ids.

use crate::io::bytes::{ByteReader, bounded_capacity};
use crate::{Bpe2Error, EmbdError, Error, LayoutError, Result};

use super::header::{Header, flags};
use crate::embd::SPECIAL_BLOCK_LEN;

/// The ids of BERT's five special tokens, as the vocabulary stores them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SpecialTokens {
    /// `[PAD]`.
    pub pad: u32,
    /// `[UNK]`: words the vocabulary cannot spell.
    pub unk: u32,
    /// `[CLS]`: first token of every sequence.
    pub cls: u32,
    /// `[SEP]`: last token of every sequence.
    pub sep: u32,
    /// `[MASK]`.
    pub mask: u32,
}

impl SpecialTokens {
    /// The ids in stored order: pad, unk, cls, sep, mask.
    pub fn all(&self) -> [u32; 5] {
        [self.pad, self.unk, self.cls, self.sep, self.mask]
    }

    /// The field names in stored order.
    pub const NAMES: [&'static str; 5] = ["pad_id", "unk_id", "cls_id", "sep_id", "mask_id"];

    /// The ids of `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]` and `[MASK]` in a
    /// token list (a `vocab.txt`); a token listed twice has its later id, as
    /// when Hugging Face loads the file.
    pub fn find(tokens: &[impl AsRef<str>]) -> Result<SpecialTokens> {
        let find = |name: &str| {
            tokens
                .iter()
                .rposition(|t| t.as_ref() == name)
                .map(|i| i as u32)
                .ok_or_else(|| {
                    Error::Bpe2(Bpe2Error::InvalidVocabulary(format!("no {name} token")))
                })
        };
        Ok(SpecialTokens {
            pad: find("[PAD]")?,
            unk: find("[UNK]")?,
            cls: find("[CLS]")?,
            sep: find("[SEP]")?,
            mask: find("[MASK]")?,
        })
    }
}

/// Where the vocabulary's tokens are.
#[derive(Debug, Clone)]
pub(in crate::embd) struct TokenTable {
    /// Absolute offset and length of each token's UTF-8 bytes, by id.
    pub(in crate::embd) tokens: Vec<(u32, u16)>,
    pub(in crate::embd) specials: SpecialTokens,
}

pub(in crate::embd) fn read_vocabulary(file: &[u8], h: &Header) -> Result<Option<TokenTable>> {
    if !h.has(flags::VOCAB_EMBEDDED) {
        return Ok(None);
    }
    let base = u64::from(h.vocab_offset);
    let section = &file[h.vocab_offset as usize..h.tensor_index_offset as usize];
    let mut r = ByteReader::new(section, base);
    let token_count = r.u32_le("vocabulary token_count")?;
    let total_size = r.u32_le("vocabulary total_size")?;
    let special_at = r.u32_le("vocabulary special_tokens offset")?;
    let expected = 12 + u64::from(total_size);
    if u64::from(special_at) != expected {
        return Err(Error::Embd(EmbdError::SectionMisplaced {
            section: "special token ids",
            offset: base + 8,
            expected: base + expected,
            found: base + u64::from(special_at),
        }));
    }
    if section.len() as u64 != expected + SPECIAL_BLOCK_LEN {
        return Err(Error::Layout(LayoutError::InvalidHeader {
            format: "EMBD",
            offset: 24,
            reason: format!(
                "vocab_size is {}, the vocabulary's own sizes add up to {}",
                section.len(),
                expected + SPECIAL_BLOCK_LEN
            ),
        }));
    }
    let mut entries = ByteReader::new(&section[12..expected as usize], base + 12);
    let mut tokens = Vec::with_capacity(bounded_capacity(
        u64::from(token_count),
        entries.remaining(),
        2,
    ));
    for _ in 0..token_count {
        let len = entries.u16_le("token_length")?;
        let start = entries.offset();
        entries.str(u64::from(len), "token")?;
        // The section lies below 4 GiB: its offsets are u32 in the header.
        tokens.push((start as u32, len));
    }
    if entries.remaining() != 0 {
        return Err(Error::Layout(LayoutError::InvalidHeader {
            format: "EMBD",
            offset: entries.offset(),
            reason: format!(
                "{} bytes after the {token_count} tokens, before the special ids",
                entries.remaining()
            ),
        }));
    }
    let mut specials = ByteReader::new(&section[expected as usize..], base + expected);
    let mut ids = [0u32; 5];
    for (id, name) in ids.iter_mut().zip(SpecialTokens::NAMES) {
        let at = specials.offset();
        *id = specials.u32_le(name)?;
        if *id >= token_count {
            return Err(Error::Layout(LayoutError::InvalidHeader {
                format: "EMBD",
                offset: at,
                reason: format!("{name} {id} is outside the {token_count}-token vocabulary"),
            }));
        }
    }
    let [pad, unk, cls, sep, mask] = ids;
    Ok(Some(TokenTable {
        tokens,
        specials: SpecialTokens {
            pad,
            unk,
            cls,
            sep,
            mask,
        },
    }))
}
