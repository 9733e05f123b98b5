//! The text of recorded token ids (`tokens.bin` beside a dataset's
//! shards): bytes for TLLM recordings, WordPiece strings (with `vocab.txt`)
//! for BERT ones.

use super::{Dataset, TokenIds};
use crate::Result;

/// Tokens shown before and after the token of a context.
const CONTEXT_BEFORE: usize = 24;
const CONTEXT_AFTER: usize = 8;

/// A dataset's recorded token ids with what turns them into text.
pub struct TokenText<'d> {
    ids: &'d TokenIds,
    /// `None`: ids are bytes.
    vocabulary: Option<Vec<String>>,
    /// Tokens per image window.
    window: u64,
    cls: bool,
}

impl<'d> TokenText<'d> {
    /// The dataset's token text, or `None` when it kept no token ids.
    pub fn of(dataset: &'d Dataset) -> Result<Option<TokenText<'d>>> {
        let Some(ids) = dataset.token_ids() else {
            return Ok(None);
        };
        let metadata = dataset.metadata();
        Ok(Some(TokenText {
            ids,
            vocabulary: dataset.vocabulary()?,
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

    /// The ids of image `img`'s window.
    pub fn window(&self, img: u64) -> Option<Vec<u32>> {
        self.ids.window(img)
    }

    /// The text of `ids` (lossy UTF-8 for bytes; word pieces joined,
    /// `##` continuing the word before).
    pub fn render(&self, ids: &[u32]) -> String {
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
        let ids = self.ids.span(start, here + 1 + CONTEXT_AFTER);
        let (before, rest) = ids.split_at(here.min(ids.len()));
        let (token, after) = rest.split_at(rest.len().min(1));
        let mut shown = [self.render(before), self.render(token), self.render(after)];
        // Word pieces are separated by a space unless the later one
        // continues the word (`##`).
        if self.vocabulary.is_some() {
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

/// `text` with line breaks shown as ⏎ and control characters escaped.
pub fn visible(text: &str) -> String {
    text.chars()
        .flat_map(|c| match c {
            '\n' => vec!['⏎'],
            c if c.is_control() => c.escape_default().collect(),
            c => vec![c],
        })
        .collect()
}
