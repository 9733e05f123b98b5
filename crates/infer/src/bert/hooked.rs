//! The BERT encoder behind the one model interface ([`crate::model`]):
//! word-piece windows in, each run as `[CLS] window [SEP]`; the layers'
//! outputs out (the CLS row on request, never SEP); its word embeddings,
//! which directions are compared with.

use super::Embedder;
use crate::Result;
use crate::model::{HookedModel, Inputs, ModelKind, Site, TokenModel};

impl HookedModel for Embedder {
    fn kind(&self) -> ModelKind {
        ModelKind::Bert
    }

    fn family(&self) -> &'static str {
        "bert"
    }

    fn name(&self) -> String {
        "a BERT model".into()
    }

    fn has_cls(&self) -> bool {
        true
    }

    fn is_int8(&self) -> bool {
        self.encoder().is_int8()
    }

    fn width(&self) -> usize {
        self.config().hidden_size
    }

    fn blocks(&self) -> usize {
        self.config().num_layers
    }

    fn activations(
        &self,
        inputs: Inputs<'_>,
        blocks: &[usize],
        site: Site,
    ) -> Result<Vec<Vec<f32>>> {
        let windows = crate::model::token_windows(self, inputs, site)?;
        let cls = matches!(inputs, Inputs::Windows { cls: true, .. });
        let specials = self.tokenizer().specials();
        let sequences: Vec<Vec<u32>> = windows
            .iter()
            .map(|w| {
                let mut s = Vec::with_capacity(w.len() + 2);
                s.push(specials.cls);
                s.extend_from_slice(w);
                s.push(specials.sep);
                s
            })
            .collect();
        let refs: Vec<&[u32]> = sequences.iter().map(Vec::as_slice).collect();
        let states = self.encoder().hidden_states(&refs, blocks)?;
        let h = self.width();
        let mut start = 0;
        let mut images = Vec::with_capacity(windows.len());
        for window in windows {
            // Rows of this sequence: [CLS] at `start`, the window after
            // it, [SEP] last (never recorded).
            let first = if cls { start } else { start + 1 };
            let rows = first..start + 1 + window.len();
            let mut image = Vec::with_capacity(blocks.len() * rows.len() * h);
            for state in &states {
                image.extend_from_slice(&state[rows.start * h..rows.end * h]);
            }
            images.push(image);
            start += window.len() + 2;
        }
        Ok(images)
    }

    fn tokens(&self) -> Option<&dyn TokenModel> {
        Some(self)
    }

    fn input_embeddings(&self) -> Option<Vec<f32>> {
        Some(self.encoder().word_embeddings())
    }
}

impl TokenModel for Embedder {
    fn vocab_size(&self) -> usize {
        self.tokenizer().vocab_size()
    }

    fn tokenize(&self, text: &[u8]) -> Result<Option<Vec<u32>>> {
        Ok(std::str::from_utf8(text)
            .ok()
            .map(|text| self.tokenizer().pieces(text)))
    }

    /// A window leaves room for CLS and SEP in the model's context; by
    /// default it is `max_seq_length` less those two.
    fn windows(&self) -> (usize, usize) {
        let c = self.config();
        let longest = c.max_position.saturating_sub(2);
        (
            longest,
            c.max_seq_length.min(c.max_position).saturating_sub(2),
        )
    }

    fn describe(&self, window: usize) -> (String, String) {
        (
            "WordPiece ids of the model's vocabulary, without [CLS]/[SEP]".into(),
            format!(
                "consecutive windows of {window} tokens of the files concatenated in order; a final partial window is dropped"
            ),
        )
    }

    fn vocabulary(&self) -> Option<Vec<String>> {
        let t = self.tokenizer();
        Some(
            (0..t.vocab_size() as u32)
                .map(|id| t.token(id).unwrap_or("").to_owned())
                .collect(),
        )
    }

    fn token_name(&self, id: u32) -> String {
        modelbin_format::saev::alone(self.tokenizer().token(id).unwrap_or("[?]"))
    }
}
