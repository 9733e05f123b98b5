//! The route to Hugging Face's own `tokenizers` crate, for the files
//! modelbin does not run itself: SentencePiece-style `Metaspace` with byte
//! fallback (Llama 2, TinyLlama, Mistral), Unigram, WordPiece, WordLevel,
//! other normalizers and pre-tokenizers. Those algorithms are not written
//! again here.
//!
//! `truncation` and `padding` in the file are switched off, as
//! transformers does for a call that asks for neither: the ids are the
//! whole text's.

use std::sync::OnceLock;

use crate::hf::error::HfTokenizerError as E;

/// A tokenizer run by the `tokenizers` crate.
#[derive(Debug)]
pub(crate) struct HfRoute {
    tokenizer: tokenizers::Tokenizer,
    /// The same with `encode_special_tokens` on, for `encode_ordinary`
    /// (made on first use).
    ordinary: OnceLock<tokenizers::Tokenizer>,
}

fn engine_error(e: impl std::fmt::Display) -> E {
    E::Engine(e.to_string().chars().take(500).collect())
}

impl HfRoute {
    /// Loads `bytes` (already checked by `raw`) with the `tokenizers` crate.
    pub fn new(bytes: &[u8]) -> Result<HfRoute, E> {
        let mut tokenizer = tokenizers::Tokenizer::from_bytes(bytes).map_err(engine_error)?;
        tokenizer.with_truncation(None).map_err(engine_error)?;
        tokenizer.with_padding(None);
        Ok(HfRoute {
            tokenizer,
            ordinary: OnceLock::new(),
        })
    }

    /// The ids of `text`; `post` says whether the crate's own post-processor
    /// runs; `special` whether special added tokens are extracted.
    pub fn encode(&self, text: &str, post: bool, special: bool) -> Result<Vec<u32>, E> {
        let tokenizer = if special {
            &self.tokenizer
        } else {
            self.ordinary.get_or_init(|| {
                let mut t = self.tokenizer.clone();
                t.set_encode_special_tokens(true);
                t
            })
        };
        let encoding = tokenizer.encode(text, post).map_err(engine_error)?;
        Ok(encoding.get_ids().to_vec())
    }

    /// The text of `ids` by the file's decoder (special tokens kept).
    pub fn decode(&self, ids: &[u32]) -> Result<Vec<u8>, E> {
        self.tokenizer
            .decode(ids, false)
            .map(String::into_bytes)
            .map_err(engine_error)
    }

    /// The token string of `id`.
    pub fn token(&self, id: u32) -> Option<String> {
        self.tokenizer.id_to_token(id)
    }

    /// The id of a token string (added tokens first).
    pub fn id(&self, text: &str) -> Option<u32> {
        self.tokenizer.token_to_id(text)
    }

    /// The highest id, added tokens included, plus one.
    pub fn vocab_size(&self) -> u32 {
        self.tokenizer
            .get_vocab(true)
            .values()
            .max()
            .map_or(0, |&id| id.saturating_add(1))
    }

    /// Whether the model falls back to `<0xHH>` tokens for unknown bytes.
    pub fn byte_fallback(&self) -> bool {
        matches!(
            self.tokenizer.get_model(),
            tokenizers::ModelWrapper::BPE(bpe) if bpe.byte_fallback
        )
    }
}
