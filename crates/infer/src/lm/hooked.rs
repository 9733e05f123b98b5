//! A decoder language model with its tokenizer, behind the one model
//! interface ([`crate::model`]): text in through the directory's
//! `tokenizer.json` (windows cut as SAELens cuts them), the residual
//! stream at any [`Site`], a hookable session, its unembedding.

use std::path::Path;

use modelbin_tokenize::{HfTokenizer, hf_byte_char};

use super::model::{LanguageModel, LoadOptions};
use super::session::Session;
use crate::model::{
    HookedDecoder, HookedModel, HookedSession, Inputs, ModelKind, OpenOptions, Site, TokenModel,
};
use crate::record::windows::saelens_windows;
use crate::{LmError, Result};

/// A language model's window unless told otherwise: SAELens's default
/// `context_size`.
pub const DEFAULT_LM_WINDOW: usize = 128;

/// A decoder language model and the tokenizer of its directory.
#[derive(Debug)]
pub struct TokenizedModel {
    model: LanguageModel,
    /// The directory's tokenizer, when it has a `tokenizer.json`.
    tokenizer: Option<HfTokenizer>,
    /// The BOS token each window starts with, unless turned off or the
    /// tokenizer has none.
    bos: Option<u32>,
}

impl TokenizedModel {
    /// Opens the model directory `dir` and its tokenizer (a
    /// `tokenizer.json` that is there must load); `options.int8` runs the
    /// linear layers on int8 weights, `options.bos` starts each window with
    /// the tokenizer's BOS token.
    pub fn open(dir: &Path, options: OpenOptions) -> Result<TokenizedModel> {
        let model = LanguageModel::open_with(dir, LoadOptions::int8(options.int8))?;
        let tokenizer = if dir.join("tokenizer.json").exists() {
            Some(HfTokenizer::open_dir(dir)?)
        } else {
            None
        };
        let bos = tokenizer
            .as_ref()
            .and_then(HfTokenizer::bos_id)
            .filter(|_| options.bos);
        Ok(TokenizedModel {
            model,
            tokenizer,
            bos,
        })
    }

    /// The model.
    pub fn model(&self) -> &LanguageModel {
        &self.model
    }

    /// The tokenizer, which reading text needs
    /// ([`LmError::NoTokenizer`] without one).
    pub fn tokenizer(&self) -> Result<&HfTokenizer> {
        self.tokenizer.as_ref().ok_or_else(|| {
            LmError::NoTokenizer {
                dir: self.model.dir().to_path_buf(),
            }
            .into()
        })
    }
}

impl HookedModel for LanguageModel {
    fn kind(&self) -> ModelKind {
        ModelKind::LanguageModel
    }

    fn family(&self) -> &'static str {
        self.config().family.name()
    }

    fn name(&self) -> String {
        format!("a {} language model", self.config().family)
    }

    fn is_int8(&self) -> bool {
        LanguageModel::is_int8(self)
    }

    fn width(&self) -> usize {
        self.config().hidden
    }

    fn blocks(&self) -> usize {
        self.config().layers
    }

    fn sites(&self) -> &'static [Site] {
        &Site::ALL
    }

    /// All windows go through each linear layer as one tall matrix
    /// ([`LanguageModel::activations`]).
    fn activations(
        &self,
        inputs: Inputs<'_>,
        blocks: &[usize],
        site: Site,
    ) -> Result<Vec<Vec<f32>>> {
        let windows = crate::model::token_windows(self, inputs, site)?;
        let window = windows.first().map_or(1, |w| w.len());
        let states = LanguageModel::activations(self, &windows.concat(), window, blocks, site)?;
        let h = self.config().hidden;
        Ok((0..windows.len())
            .map(|w| {
                let rows = w * window * h..(w + 1) * window * h;
                states
                    .iter()
                    .flat_map(|s| &s[rows.clone()])
                    .copied()
                    .collect()
            })
            .collect())
    }

    fn decoder(&self) -> Option<&dyn HookedDecoder> {
        Some(self)
    }
}

/// The model's own, with its tokenizer as the token facet.
impl HookedModel for TokenizedModel {
    fn kind(&self) -> ModelKind {
        self.model.kind()
    }

    fn family(&self) -> &'static str {
        HookedModel::family(&self.model)
    }

    fn name(&self) -> String {
        self.model.name()
    }

    fn is_int8(&self) -> bool {
        self.model.is_int8()
    }

    fn width(&self) -> usize {
        HookedModel::width(&self.model)
    }

    fn blocks(&self) -> usize {
        HookedModel::blocks(&self.model)
    }

    fn sites(&self) -> &'static [Site] {
        self.model.sites()
    }

    fn activations(
        &self,
        inputs: Inputs<'_>,
        blocks: &[usize],
        site: Site,
    ) -> Result<Vec<Vec<f32>>> {
        HookedModel::activations(&self.model, inputs, blocks, site)
    }

    fn tokens(&self) -> Option<&dyn TokenModel> {
        Some(self)
    }

    fn decoder(&self) -> Option<&dyn HookedDecoder> {
        Some(&self.model)
    }
}

impl TokenModel for TokenizedModel {
    fn vocab_size(&self) -> usize {
        self.model.config().vocab_size
    }

    /// As TransformerLens's `to_tokens(prepend_bos=False)`, which SAELens
    /// tokenizes with: the tokenizer's special tokens, less a leading BOS
    /// (the windows place their own).
    fn tokenize(&self, text: &[u8]) -> Result<Option<Vec<u32>>> {
        let Ok(text) = std::str::from_utf8(text) else {
            return Ok(None);
        };
        let tokenizer = self.tokenizer()?;
        let mut ids = tokenizer.encode(text, true)?;
        if tokenizer.adds_bos() && ids.first() == tokenizer.bos_id().as_ref() {
            ids.remove(0);
        }
        Ok(Some(ids))
    }

    fn bos(&self) -> Option<u32> {
        self.bos
    }

    fn windows(&self) -> (usize, usize) {
        let n = self.model.config().max_positions;
        (n, DEFAULT_LM_WINDOW.min(n))
    }

    fn windows_of(&self, texts: &[Vec<u32>], window: usize) -> Vec<u32> {
        saelens_windows(texts, window, self.bos)
    }

    fn describe(&self, window: usize) -> (String, String) {
        let tokens = "ids of the model's tokenizer.json, the BOS included where it was run (vocab.txt: each token's bytes in GPT-2's byte-to-character alphabet)";
        let windowing = match self.bos {
            Some(bos) => format!(
                "windows of {window} tokens cut as SAELens's concat_and_batch_sequences (prepend_bos, BOS as separator): each text tokenized with its special tokens (a leading BOS dropped), the texts concatenated with BOS {bos} between them, each window starting with BOS; a final partial window is dropped"
            ),
            None => format!(
                "consecutive windows of {window} tokens of the files concatenated in order; a final partial window is dropped"
            ),
        };
        (tokens.into(), windowing)
    }

    /// Each token's bytes in GPT-2's byte-to-character alphabet (so no
    /// token holds a line break), empty for an id the tokenizer lacks.
    fn vocabulary(&self) -> Option<Vec<String>> {
        let tokenizer = self.tokenizer.as_ref();
        Some(
            (0..self.vocab_size() as u32)
                .map(|id| {
                    let bytes = tokenizer
                        .and_then(|t| t.token_bytes(id))
                        .unwrap_or_default();
                    bytes.into_iter().map(hf_byte_char).collect()
                })
                .collect(),
        )
    }

    /// As the tokenizer decodes the token alone, shown by itself.
    fn token_name(&self, id: u32) -> String {
        let bytes = self
            .tokenizer
            .as_ref()
            .and_then(|t| t.decode_bytes(&[id]).ok())
            .unwrap_or_default();
        modelbin_format::saev::alone(&String::from_utf8_lossy(&bytes))
    }

    /// SAELens's evals leave out the tokenizer's BOS and EOS
    /// (`tokenizer.json` and `tokenizer_config.json`), else
    /// `config.json`'s `bos_token_id` and `eos_token_id`. (SAELens also
    /// names the tokenizer's PAD, SEP and decoder-start tokens; the
    /// decoders here define none apart from BOS and EOS.)
    fn special_tokens(&self) -> Vec<u32> {
        let config = self.model.config();
        let mut ids: Vec<u32> = match &self.tokenizer {
            Some(tokenizer) => tokenizer
                .bos_id()
                .into_iter()
                .chain(tokenizer.eos_id())
                .collect(),
            None => config
                .bos_token_id
                .into_iter()
                .chain(config.eos_token_ids.iter().copied())
                .collect(),
        };
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    fn saelens_data(&self, dir: &Path) -> Option<serde_json::Map<String, serde_json::Value>> {
        let mut data = serde_json::Map::new();
        data.insert("prepend_bos".into(), self.bos.is_some().into());
        data.insert("model_name".into(), crate::model::model_name(dir).into());
        data.insert(
            "tokenizer_engine".into(),
            self.tokenizer.as_ref().map(HfTokenizer::engine).into(),
        );
        Some(data)
    }
}

impl HookedDecoder for LanguageModel {
    fn context(&self) -> usize {
        self.config().max_positions
    }

    fn vocab(&self) -> usize {
        self.config().vocab_size
    }

    fn session(&self) -> Box<dyn HookedSession + '_> {
        Box::new(LanguageModel::session(self))
    }

    fn unembed(&self, rows: &[f32]) -> Vec<f32> {
        LanguageModel::unembed(self, rows)
    }
}

impl HookedSession for Session<'_> {
    fn len(&self) -> usize {
        Session::len(self)
    }

    fn extend_with_hook(
        &mut self,
        ids: &[u32],
        all: bool,
        hook: &mut dyn FnMut(usize, Site, &mut [f32]),
    ) -> Result<Vec<f32>> {
        Session::extend_with_hook(self, ids, all, hook)
    }
}
