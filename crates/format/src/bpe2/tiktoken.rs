//! The `.tiktoken` text format BPE2 is built from and written back to: one
//! `base64-token rank` per line. Both directions live here because they are
//! one format's reader and writer; BPE2's own bytes are in `read.rs` and
//! `write.rs`.

use std::io::Write;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use super::{Bpe2, KnownEncoding, RankedToken, build};
use crate::io::checksum::sha256;
use crate::{Bpe2Error, Error, Result};

impl<B: AsRef<[u8]>> Bpe2<B> {
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
/// [`write_file`](super::write_file). With `include_special_tokens`, the
/// special tokens of the recognised encoding are added at their ranks (an
/// unknown source has none to add).
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
