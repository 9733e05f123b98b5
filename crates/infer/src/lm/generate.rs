//! Generation with a decoder language model: the shared sampler and loop
//! of [`crate::generation`] over a [`Session`].

use crate::Result;
use crate::generation::{Decoder, DecoderSession, Generation, Sampling, generate_with};
use crate::lm::model::LanguageModel;
use crate::lm::session::Session;

impl Decoder for LanguageModel {
    type Session<'a> = Session<'a>;

    fn context(&self) -> usize {
        self.config.max_positions
    }

    fn start(&self) -> Session<'_> {
        self.session()
    }
}

impl DecoderSession for Session<'_> {
    fn cached(&self) -> usize {
        self.len()
    }

    fn extend_last(&mut self, ids: &[u32]) -> Result<Vec<f32>> {
        self.extend(ids, false)
    }
}

/// Generates up to `max_tokens` after `prompt` (greedy when
/// `sampling.temperature` is 0, else sampled with its temperature, top-k,
/// top-p and seed), stopping early at any id of `stop` (typically the
/// configuration's [`eos_token_ids`](crate::lm::LmConfig::eos_token_ids)),
/// which is kept as the last id. Greedy generation equals transformers'
/// `model.generate(do_sample=False)`. Past the model's context the window
/// slides (see [`generate_with`]). `on_token` sees each id.
pub fn generate(
    model: &LanguageModel,
    prompt: &[u32],
    max_tokens: usize,
    sampling: Sampling,
    stop: &[u32],
    on_token: impl FnMut(u32),
) -> Result<Generation> {
    generate_with(model, prompt, max_tokens, sampling, stop, on_token)
}
