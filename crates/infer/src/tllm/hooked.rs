//! The TLLM transformer behind the one model interface
//! ([`crate::model`]): byte windows in, the residual stream after each
//! block out, a hookable session, its output matrix as the unembedding.

use rayon::prelude::*;

use super::{Model, Session};
use crate::model::{
    HookedDecoder, HookedModel, HookedSession, Inputs, ModelKind, Site, TokenModel,
};
use crate::nn::kernels::matmul;
use crate::{RecordError, Result};

impl HookedModel for Model {
    fn kind(&self) -> ModelKind {
        ModelKind::Tllm
    }

    fn family(&self) -> &'static str {
        "tllm"
    }

    fn name(&self) -> String {
        "a TLLM model".into()
    }

    fn width(&self) -> usize {
        self.config.model_dim as usize
    }

    fn blocks(&self) -> usize {
        self.config.n_layers as usize
    }

    fn activations(
        &self,
        inputs: Inputs<'_>,
        blocks: &[usize],
        site: Site,
    ) -> Result<Vec<Vec<f32>>> {
        let windows = crate::model::token_windows(self, inputs, site)?;
        windows
            .par_iter()
            .map(|ids| self.residual_stream(ids, blocks).map(|s| s.concat()))
            .collect()
    }

    fn tokens(&self) -> Option<&dyn TokenModel> {
        Some(self)
    }

    fn decoder(&self) -> Option<&dyn HookedDecoder> {
        Some(self)
    }
}

impl TokenModel for Model {
    fn vocab_size(&self) -> usize {
        self.config.vocab_size as usize
    }

    /// A byte per token: any bytes are text to a byte-level model, which
    /// one with fewer than 256 tokens is not.
    fn tokenize(&self, text: &[u8]) -> Result<Option<Vec<u32>>> {
        if self.config.vocab_size < 256 {
            return Err(RecordError::NotByteLevel {
                vocab_size: self.config.vocab_size,
            }
            .into());
        }
        Ok(Some(text.iter().map(|&b| u32::from(b)).collect()))
    }

    fn separator(&self) -> Option<u32> {
        Some(u32::from(b'\n'))
    }

    fn windows(&self) -> (usize, usize) {
        let n = self.config.max_seq_len as usize;
        (n, n)
    }

    fn describe(&self, window: usize) -> (String, String) {
        (
            "bytes (token id = byte value)".into(),
            format!(
                "consecutive windows of {window} tokens of the files concatenated in order; a final partial window is dropped"
            ),
        )
    }

    /// The character for ASCII, shown by itself ([`alone`]), `\xNN` for
    /// the other bytes (a byte alone is not a character), `[id]` past 255.
    ///
    /// [`alone`]: modelbin_format::saev::alone
    fn token_name(&self, id: u32) -> String {
        match u8::try_from(id) {
            Ok(byte) if byte.is_ascii() => {
                modelbin_format::saev::alone(&char::from(byte).to_string())
            }
            Ok(byte) => format!("\\x{byte:02x}"),
            Err(_) => format!("[{id}]"),
        }
    }
}

impl HookedDecoder for Model {
    fn context(&self) -> usize {
        self.config.max_seq_len as usize
    }

    fn vocab(&self) -> usize {
        self.config.vocab_size as usize
    }

    fn session(&self) -> Box<dyn HookedSession + '_> {
        Box::new(Model::session(self))
    }

    /// `rows · output`: TLLM has no final norm, so this is also what the
    /// rows add to the logits along the direct path.
    fn unembed(&self, rows: &[f32]) -> Vec<f32> {
        let (d, v) = (self.width(), self.vocab());
        let n = rows.len() / d.max(1);
        let mut out = vec![0.0f32; n * v];
        matmul(rows, &self.output, &mut out, (n, d, v), false);
        out
    }
}

impl HookedSession for Session<'_> {
    fn len(&self) -> usize {
        Session::len(self)
    }

    /// The hook sees each block's output (`resid_post`), the one site a
    /// TLLM block has.
    fn extend_with_hook(
        &mut self,
        ids: &[u32],
        all: bool,
        hook: &mut dyn FnMut(usize, Site, &mut [f32]),
    ) -> Result<Vec<f32>> {
        Session::extend_with_hook(self, ids, all, &mut |block, rows| {
            hook(block, Site::ResidPost, rows)
        })
    }
}
