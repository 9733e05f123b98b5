//! The text of recorded token ids (`tokens.bin` beside a dataset's
//! shards): bytes for TLLM recordings, WordPiece strings (with `vocab.txt`)
//! for BERT ones, and for a decoder language model's recording (its
//! metadata names the `site`) each token's bytes, which its `vocab.txt`
//! spells in GPT-2's byte-to-character alphabet: the text reads as the
//! model's tokenizer decodes it, spaces and line breaks included.
//!
//! The text of a union is its members' texts one after the other, as its
//! images are: a union of a dataset's slices reads as the dataset.

use super::super::Union;
use super::{Dataset, TokenIds};
use crate::Result;

/// Tokens shown before and after the token of a context.
const CONTEXT_BEFORE: usize = 24;
const CONTEXT_AFTER: usize = 8;

/// A dataset's (or a union's) recorded token ids with what turns them
/// into text.
pub struct TokenText<'d> {
    /// Each member's ids, in order (one for a dataset).
    ids: Vec<&'d TokenIds>,
    /// The text position of each member's first id, and the total last.
    starts: Vec<u64>,
    /// `None`: ids are bytes.
    vocabulary: Option<Vec<String>>,
    /// Each token's bytes, for a byte-level vocabulary (a decoder
    /// language model's).
    token_bytes: Option<Vec<Vec<u8>>>,
    /// Tokens per image window.
    window: u64,
    cls: bool,
}

impl<'d> TokenText<'d> {
    /// The dataset's token text, or `None` when it kept no token ids.
    pub fn of(dataset: &'d Dataset) -> Result<Option<TokenText<'d>>> {
        TokenText::of_members(&[dataset])
    }

    /// The union's token text, its members' one after the other, or `None`
    /// when a member kept no token ids. The members agree on the model, so
    /// the first member's vocabulary spells every member's ids.
    pub fn of_union(union: &'d Union) -> Result<Option<TokenText<'d>>> {
        let members: Vec<&Dataset> = union.members().iter().map(|m| &**m).collect();
        TokenText::of_members(&members)
    }

    /// The text of `members` (at least one) laid end to end.
    fn of_members(members: &[&'d Dataset]) -> Result<Option<TokenText<'d>>> {
        let Some(ids) = members
            .iter()
            .map(|m| m.token_ids())
            .collect::<Option<Vec<_>>>()
        else {
            return Ok(None);
        };
        let mut starts = vec![0];
        for member in &ids {
            starts.push(starts.last().copied().unwrap_or(0) + member.count());
        }
        let first = members[0];
        let metadata = first.metadata();
        let vocabulary = first.vocabulary()?;
        let token_bytes = vocabulary
            .as_ref()
            .filter(|_| metadata.data.get("site").is_some())
            .map(|v| v.iter().map(|t| byte_level_bytes(t)).collect());
        Ok(Some(TokenText {
            ids,
            starts,
            vocabulary,
            token_bytes,
            window: metadata.n_patches_per_img,
            cls: metadata.cls_token,
        }))
    }

    /// The first of `ids` (its position and value) that names no token:
    /// above 255 for byte-level recordings, past the vocabulary otherwise.
    pub fn first_unknown(&self, ids: &[u32]) -> Option<(usize, u32)> {
        let known = self.vocabulary.as_ref().map_or(256, Vec::len);
        ids.iter()
            .enumerate()
            .find(|&(_, &id)| id as usize >= known)
            .map(|(at, &id)| (at, id))
    }

    /// The ids of image `img`'s window, or `None` past the last image.
    pub fn window(&self, img: u64) -> Option<Vec<u32>> {
        let ids = self.ids(img.checked_mul(self.window)?, self.window as usize);
        (self.window > 0 && ids.len() as u64 == self.window).then_some(ids)
    }

    /// Up to `len` ids from position `start` of the text (windows follow
    /// each other, `[CLS]` excluded; a union's members' texts too).
    pub fn ids(&self, start: u64, len: usize) -> Vec<u32> {
        let end = start.saturating_add(len as u64);
        let mut ids = Vec::new();
        let mut member = self
            .starts
            .partition_point(|&s| s <= start)
            .saturating_sub(1);
        let mut at = start;
        while at < end && member < self.ids.len() {
            let member_end = self.starts[member + 1];
            let take = end.min(member_end).saturating_sub(at) as usize;
            ids.extend(self.ids[member].span(at - self.starts[member], take));
            at = at.max(member_end);
            member += 1;
        }
        ids
    }

    /// Each token's own text, made visible, so that the texts laid end to
    /// end read as [`TokenText::render`] does: for bytes, a character
    /// encoded in several bytes is the text of its first byte and the
    /// bytes after it have none, and a byte that begins no character is
    /// shown as `\xNN`; for word pieces, a piece continuing a word (`##`)
    /// is its rest and any other piece after the first starts with a
    /// space.
    pub fn pieces(&self, ids: &[u32]) -> Vec<String> {
        if let Some(bytes) = &self.token_bytes {
            let tokens: Vec<Option<&[u8]>> = ids
                .iter()
                .map(|&id| bytes.get(id as usize).map(Vec::as_slice))
                .collect();
            return token_pieces(&tokens);
        }
        match &self.vocabulary {
            None => byte_pieces(ids),
            Some(vocabulary) => ids
                .iter()
                .enumerate()
                .map(|(at, &id)| {
                    let token = vocabulary.get(id as usize).map_or("[?]", String::as_str);
                    let text = match token.strip_prefix("##") {
                        Some(rest) => rest.to_owned(),
                        None if at == 0 => token.to_owned(),
                        None => format!(" {token}"),
                    };
                    visible(&text)
                })
                .collect(),
        }
    }

    /// The text of `ids` (lossy UTF-8 for bytes; word pieces joined,
    /// `##` continuing the word before).
    pub fn render(&self, ids: &[u32]) -> String {
        if let Some(bytes) = &self.token_bytes {
            let all: Vec<u8> = ids
                .iter()
                .flat_map(|&id| bytes.get(id as usize).map_or(&b"[?]"[..], Vec::as_slice))
                .copied()
                .collect();
            return String::from_utf8_lossy(&all).into_owned();
        }
        match &self.vocabulary {
            None => {
                let mut text = String::new();
                let mut bytes = Vec::new();
                for &id in ids {
                    match u8::try_from(id) {
                        Ok(byte) => bytes.push(byte),
                        Err(_) => {
                            text.push_str(&String::from_utf8_lossy(&bytes));
                            bytes.clear();
                            text.push_str("[?]");
                        }
                    }
                }
                text.push_str(&String::from_utf8_lossy(&bytes));
                text
            }
            Some(vocabulary) => {
                let mut text = String::new();
                for &id in ids {
                    let token = vocabulary.get(id as usize).map_or("[?]", String::as_str);
                    match token.strip_prefix("##") {
                        Some(rest) => text.push_str(rest),
                        None if text.is_empty() => text.push_str(token),
                        None => {
                            text.push(' ');
                            text.push_str(token);
                        }
                    }
                }
                text
            }
        }
    }

    /// The text around physical token `token` of image `img` (token 0 is
    /// `[CLS]` when the dataset recorded it): before, the token, after,
    /// with line breaks and control characters made visible. Windows are
    /// consecutive in the text, so a context runs into its neighbours.
    pub fn context(&self, img: u64, token: u64) -> [String; 3] {
        if self.cls && token == 0 {
            let first = self.window(img).unwrap_or_default();
            let after = &first[..first.len().min(CONTEXT_AFTER)];
            return [String::new(), "[CLS]".into(), visible(&self.render(after))];
        }
        let at = img * self.window + token - u64::from(self.cls);
        let start = at.saturating_sub(CONTEXT_BEFORE as u64);
        let here = (at - start) as usize;
        let ids = self.ids(start, here + 1 + CONTEXT_AFTER);
        let (before, rest) = ids.split_at(here.min(ids.len()));
        let (token, after) = rest.split_at(rest.len().min(1));
        let mut shown = [self.render(before), self.render(token), self.render(after)];
        // Word pieces are separated by a space unless the later one
        // continues the word (`##`).
        if self.vocabulary.is_some() && self.token_bytes.is_none() {
            if !shown[0].is_empty() && !token.first().is_some_and(|&id| self.continues(id)) {
                shown[0].push(' ');
            }
            if !shown[2].is_empty() && !after.first().is_some_and(|&id| self.continues(id)) {
                shown[2].insert(0, ' ');
            }
        }
        shown.map(|text| visible(&text))
    }

    /// Whether word piece `id` continues the word before it.
    fn continues(&self, id: u32) -> bool {
        self.vocabulary
            .as_ref()
            .and_then(|v| v.get(id as usize))
            .is_some_and(|t| t.starts_with("##"))
    }
}

/// [`TokenText::pieces`] of byte ids.
fn byte_pieces(ids: &[u32]) -> Vec<String> {
    let bytes: Vec<Option<[u8; 1]>> = ids
        .iter()
        .map(|&id| u8::try_from(id).ok().map(|b| [b]))
        .collect();
    let tokens: Vec<Option<&[u8]>> = bytes.iter().map(|b| b.as_ref().map(|b| &b[..])).collect();
    token_pieces(&tokens)
}

/// Each token's piece of the text its bytes spell laid end to end: a
/// character is the piece of the token holding its first byte, a byte that
/// begins no character is `\xNN`, and a token of no known bytes (`None`)
/// is `[?]`.
fn token_pieces(tokens: &[Option<&[u8]>]) -> Vec<String> {
    let mut pieces = vec![String::new(); tokens.len()];
    // The bytes of each run of known tokens, and the token of each byte.
    let mut bytes = Vec::new();
    let mut owner = Vec::new();
    let flush = |bytes: &mut Vec<u8>, owner: &mut Vec<usize>, pieces: &mut [String]| {
        let mut at = 0;
        while at < bytes.len() {
            let width = match bytes[at] {
                0x00..=0x7f => 1,
                0xc2..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf4 => 4,
                _ => 0,
            };
            match bytes.get(at..at + width.max(1)).map(std::str::from_utf8) {
                Some(Ok(text)) if width > 0 => {
                    pieces[owner[at]].push_str(&visible(text));
                    at += width;
                }
                _ => {
                    pieces[owner[at]].push_str(&format!("\\x{:02x}", bytes[at]));
                    at += 1;
                }
            }
        }
        bytes.clear();
        owner.clear();
    };
    for (i, token) in tokens.iter().enumerate() {
        match token {
            Some(token) => {
                bytes.extend_from_slice(token);
                owner.extend(std::iter::repeat_n(i, token.len()));
            }
            None => {
                flush(&mut bytes, &mut owner, &mut pieces);
                pieces[i] = "[?]".into();
            }
        }
    }
    flush(&mut bytes, &mut owner, &mut pieces);
    pieces
}

/// The bytes of `token` spelled in GPT-2's byte-to-character alphabet
/// (the printable bytes `!`..`~`, `¡`..`¬` and `®`..`ÿ` as themselves,
/// the other bytes, in order, as U+0100 onwards); a character outside it
/// is taken as its own UTF-8.
fn byte_level_bytes(token: &str) -> Vec<u8> {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xa1..=0xac | 0xae..=0xff);
    let others: Vec<u8> = (0..=255u8).filter(|&b| !printable(b)).collect();
    let mut bytes = Vec::with_capacity(token.len());
    for c in token.chars() {
        let code = c as u32;
        match u8::try_from(code) {
            Ok(b) if printable(b) => bytes.push(b),
            _ => match code.checked_sub(256).and_then(|n| others.get(n as usize)) {
                Some(&b) => bytes.push(b),
                None => bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            },
        }
    }
    bytes
}

/// `text` as the feature pages and the text output show a token's text,
/// every character that would print as nothing or as blank space, other
/// than the space itself, made visible: a line break as `⏎`, a tab as `⇥`,
/// and any other control character, format character (zero-width spaces
/// and joiners, the byte-order mark, direction marks, the soft hyphen) or
/// space other than U+0020 (the no-break space, the en, em and
/// ideographic spaces, …) as its code point, `\u{a0}`. Spaces stay, so
/// tokens laid end to end read as the text; a token shown by itself goes
/// through [`alone`] as well. Marks that print as glyphs (SentencePiece's
/// `▁`, GPT-2's `Ġ`) are left as they are.
pub fn visible(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => shown.push('⏎'),
            '\t' => shown.push('⇥'),
            c if invisible(c) => shown.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => shown.push(c),
        }
    }
    shown
}

/// A token's text shown by itself (the token an input sits on, a latent's
/// line in the index, the tokens of its decoder effects): [`visible`], each
/// space as `␣`, and a token with no text of its own (a later byte of a
/// character of several bytes, which the character's first byte shows) as
/// `∅`, so that no token shown by itself is blank.
pub fn alone(text: &str) -> String {
    match text {
        "" => "∅".to_owned(),
        text => visible(text).replace(' ', "␣"),
    }
}

/// Whether `c` prints as nothing or as blank space without being the
/// space: control characters (Unicode's Cc), the format characters (Cf)
/// that print nothing, line and paragraph separators (Zl, Zp), spaces
/// other than U+0020 (Zs), and the characters that render blank (the
/// combining grapheme joiner, Hangul fillers, the braille blank). Listed
/// by hand because the standard library has no general categories; the
/// list follows Unicode 16.
fn invisible(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{a0}'
                | '\u{ad}'
                | '\u{34f}'
                | '\u{61c}'
                | '\u{115f}'
                | '\u{1160}'
                | '\u{1680}'
                | '\u{180e}'
                | '\u{2000}'..='\u{200f}'
                | '\u{2028}'..='\u{202f}'
                | '\u{205f}'..='\u{206f}'
                | '\u{2800}'
                | '\u{3000}'
                | '\u{3164}'
                | '\u{feff}'
                | '\u{ffa0}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{110bd}'
                | '\u{110cd}'
                | '\u{13430}'..='\u{1343f}'
                | '\u{1bca0}'..='\u{1bca3}'
                | '\u{1d173}'..='\u{1d17a}'
                | '\u{e0000}'..='\u{e007f}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_pieces_read_as_the_text_with_one_piece_per_byte() {
        let text = "é a\n€!";
        let ids: Vec<u32> = text.bytes().map(u32::from).collect();
        let pieces = byte_pieces(&ids);
        assert_eq!(pieces, ["é", "", " ", "a", "⏎", "€", "", "", "!"]);
        // A continuation byte first, a cut character last, an id past 255.
        assert_eq!(
            byte_pieces(&[0xa9, b'x'.into(), 0xe2, 0x82, 300]),
            ["\\xa9", "x", "\\xe2", "\\x82", "[?]"]
        );
        // Byte-level tokens: spaces (Ġ) and line breaks (Ċ) read as text,
        // a character split over two tokens is the first one's.
        let tokens: Vec<Vec<u8>> = ["Hello", "Ġwor", "ldĊ", "Ã", "©"]
            .iter()
            .map(|t| byte_level_bytes(t))
            .collect();
        let tokens: Vec<Option<&[u8]>> = tokens.iter().map(|t| Some(t.as_slice())).collect();
        assert_eq!(token_pieces(&tokens), ["Hello", " wor", "ld⏎", "é", ""]);
    }

    #[test]
    fn blank_and_invisible_characters_are_shown() {
        assert_eq!(visible("a b\n\tc\r"), "a b⏎⇥c\\u{d}");
        assert_eq!(
            visible("\u{a0}\u{200b}\u{200d}\u{feff}\u{1b}\u{3000}\u{ad}"),
            "\\u{a0}\\u{200b}\\u{200d}\\u{feff}\\u{1b}\\u{3000}\\u{ad}"
        );
        // Marks that print are left as they are.
        assert_eq!(visible("▁the Ġx _ é"), "▁the Ġx _ é");
        // Alone, a token of spaces is never blank.
        assert_eq!(alone(" "), "␣");
        assert_eq!(alone(" the"), "␣the");
        assert_eq!(alone("\t"), "⇥");
        assert_eq!(alone("_"), "_");
        assert_eq!(alone(""), "∅");
        // Bytes recorded one per token: a tab, a no-break space (two
        // bytes) and a zero-width space (three), each on its first byte.
        let ids: Vec<u32> = "\t\u{a0}\u{200b}".bytes().map(u32::from).collect();
        assert_eq!(byte_pieces(&ids), ["⇥", "\\u{a0}", "", "\\u{200b}", "", ""]);
    }
}
