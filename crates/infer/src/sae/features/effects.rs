//! What a latent's decoder row does to tokens, read from the model the
//! dataset was recorded from:
//!
//! - TLLM: its direct effect on the next token, `W_dec[j] · output` — what
//!   adding the row to the residual stream adds to each token's logit
//!   along the direct path (TLLM has no final LayerNorm, so nothing
//!   rescales it on the way); the tokens it raises and lowers most.
//! - A decoder language model: `W_dec[j] · W_U`, the row through the
//!   unembedding alone (the embedding, for a tied model), as Neuronpedia
//!   lists a latent's top positive and negative logits; the tokens it
//!   raises and lowers most, each shown as the model's tokenizer decodes
//!   it.
//! - BERT: the word pieces whose input embeddings lie closest to the row
//!   (cosine), `[…]` special pieces left out.

use std::path::Path;

use modelbin_format::saev::{Dataset, alone};
use modelbin_format::tllm::{self, ModelTensor};
use modelbin_tokenize::HfTokenizer;

use crate::bert::Embedder;
use crate::lm::LanguageModel;
use crate::nn::kernels::{matmul, matmul_bt};
use crate::sae::Sae;
use crate::sae::splice::check_recorded_from;
use crate::{Error, Result, SaeError};

/// Tokens listed per latent (raised, lowered, or nearest).
pub const EFFECT_TOKENS: usize = 8;
/// Latents whose rows are multiplied together.
const CHUNK: usize = 256;

/// One token and what a decoder row does to it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TokenEffect {
    /// The token's id.
    pub id: u32,
    /// Its text as a token shown by itself
    /// ([`modelbin_format::saev::alone`]: spaces as `␣`, line breaks as
    /// `⏎`): a byte of a TLLM vocabulary past ASCII as `\xNN`, a word
    /// piece as in the vocabulary, a language model's token as its
    /// tokenizer decodes it.
    pub token: String,
    /// The logit added (TLLM, language model) or the cosine (BERT).
    pub value: f32,
}

/// What one latent's decoder row does to tokens.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Effects {
    /// The next-token logits it raises and lowers most, most first.
    Logits {
        /// The largest effects.
        raised: Vec<TokenEffect>,
        /// The most negative effects.
        lowered: Vec<TokenEffect>,
    },
    /// The word pieces nearest to it, nearest first.
    Nearest {
        /// The pieces.
        pieces: Vec<TokenEffect>,
    },
}

/// The matrix decoder rows are read against.
#[derive(Debug, Clone)]
pub struct DecoderEffects {
    kind: Kind,
    width: usize,
    /// Each token's text, shown by itself ([`alone`]).
    names: Vec<String>,
}

#[derive(Debug, Clone)]
enum Kind {
    /// The TLLM unembedding, `[width, vocab]`.
    Logits(Vec<f32>),
    /// A decoder language model, whose unembedding is read.
    Lm(Box<LanguageModel>),
    /// BERT's word embeddings `[vocab, width]`, their norms, and which
    /// pieces are special.
    Nearest {
        embeddings: Vec<f32>,
        norms: Vec<f32>,
        special: Vec<bool>,
    },
}

impl DecoderEffects {
    /// Reads the unembedding (TLLM, a decoder language model) or word
    /// embeddings (BERT) of `model`, which must be the model `dataset` was
    /// recorded from.
    pub fn open(model: &Path, dataset: &Dataset) -> Result<DecoderEffects> {
        let family = dataset.metadata().vit_family.as_str();
        if dataset.metadata().data.get("site").is_some() {
            check_recorded_from(model, dataset)?;
            let lm = LanguageModel::open(model)?;
            let tokenizer = HfTokenizer::open_dir(model)?;
            let names = (0..lm.config().vocab_size as u32)
                .map(|id| {
                    let bytes = tokenizer.decode_bytes(&[id]).unwrap_or_default();
                    alone(&String::from_utf8_lossy(&bytes))
                })
                .collect();
            return Ok(DecoderEffects {
                width: lm.config().hidden,
                kind: Kind::Lm(Box::new(lm)),
                names,
            });
        }
        if family != "tllm" && family != "bert" {
            return Err(SaeError::NoDecoderEffects {
                family: family.to_owned(),
            }
            .into());
        }
        check_recorded_from(model, dataset)?;
        if family == "tllm" {
            let file = tllm::open(model)?;
            let config = file.config();
            let names = (0..config.vocab_size).map(byte_name).collect();
            return Ok(DecoderEffects {
                kind: Kind::Logits(file.model_values(ModelTensor::Output).into_owned()),
                width: config.model_dim as usize,
                names,
            });
        }
        let embedder = Embedder::open_model(model)?;
        let width = embedder.config().hidden_size;
        let embeddings = embedder.encoder().word_embeddings();
        let names: Vec<String> = (0..embeddings.len() / width.max(1))
            .map(|id| alone(embedder.tokenizer().token(id as u32).unwrap_or("[?]")))
            .collect();
        Ok(DecoderEffects {
            kind: Kind::Nearest {
                norms: embeddings.chunks_exact(width).map(norm).collect(),
                special: names
                    .iter()
                    .map(|n| n.starts_with('[') && n.ends_with(']'))
                    .collect(),
                embeddings,
            },
            width,
            names,
        })
    }

    /// The effects of the decoder rows of `latents`, in their order.
    pub fn of(&self, sae: &Sae<f32>, latents: &[usize]) -> Result<Vec<Effects>> {
        let (width, vocab) = (self.width, self.names.len());
        if sae.d_in != width || latents.iter().any(|&j| j >= sae.d_sae) {
            return Err(Error::Format(modelbin_format::Error::InvalidArgument(
                format!(
                    "decoder effects of a model of width {width} for an autoencoder of width {}",
                    sae.d_in
                ),
            )));
        }
        let mut effects = Vec::with_capacity(latents.len());
        let mut products = vec![0.0f32; CHUNK.min(latents.len()) * vocab];
        for chunk in latents.chunks(CHUNK) {
            let rows: Vec<f32> = chunk
                .iter()
                .flat_map(|&j| &sae.w_dec[j * width..(j + 1) * width])
                .copied()
                .collect();
            let out = &mut products[..chunk.len() * vocab];
            let shape = (chunk.len(), width, vocab);
            match &self.kind {
                Kind::Logits(output) => matmul(&rows, output, out, shape, false),
                Kind::Lm(model) => out.copy_from_slice(&model.unembed(&rows)),
                Kind::Nearest { embeddings, .. } => matmul_bt(&rows, embeddings, out, shape, false),
            }
            for (row, values) in rows.chunks_exact(width).zip(out.chunks_exact_mut(vocab)) {
                effects.push(self.read(row, values));
            }
        }
        Ok(effects)
    }

    /// The effects of decoder row `row`, given its products with every
    /// token.
    fn read(&self, row: &[f32], values: &mut [f32]) -> Effects {
        let listed = |ids: Vec<u32>, values: &[f32]| {
            ids.into_iter()
                .map(|id| TokenEffect {
                    id,
                    token: self.names[id as usize].clone(),
                    value: values[id as usize],
                })
                .collect()
        };
        match &self.kind {
            Kind::Logits(_) | Kind::Lm(_) => Effects::Logits {
                raised: listed(extremes(values, |a, b| b.total_cmp(&a)), values),
                lowered: listed(extremes(values, |a, b| a.total_cmp(&b)), values),
            },
            Kind::Nearest { norms, special, .. } => {
                let row_norm = norm(row);
                for ((v, &n), &special) in values.iter_mut().zip(norms).zip(special) {
                    *v = if special {
                        f32::NEG_INFINITY
                    } else {
                        *v / (row_norm * n).max(f32::MIN_POSITIVE)
                    };
                }
                let mut ids = extremes(values, |a, b| b.total_cmp(&a));
                ids.retain(|&id| !special[id as usize]);
                Effects::Nearest {
                    pieces: listed(ids, values),
                }
            }
        }
    }
}

/// The ids of the first [`EFFECT_TOKENS`] of `values` in the order `by`
/// (ties: the lower id first).
fn extremes(values: &[f32], by: impl Fn(f32, f32) -> std::cmp::Ordering) -> Vec<u32> {
    let order = |a: &u32, b: &u32| by(values[*a as usize], values[*b as usize]).then(a.cmp(b));
    let mut ids: Vec<u32> = (0..values.len() as u32).collect();
    let count = EFFECT_TOKENS.min(ids.len());
    if count < ids.len() && count > 0 {
        ids.select_nth_unstable_by(count - 1, order);
    }
    ids.truncate(count);
    ids.sort_unstable_by(order);
    ids
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// The text of byte token `id`: the character for ASCII, shown by itself
/// ([`alone`]), `\xNN` for the other bytes (a byte alone is not a
/// character), `[id]` past 255.
fn byte_name(id: u32) -> String {
    match u8::try_from(id) {
        Ok(byte) if byte.is_ascii() => alone(&char::from(byte).to_string()),
        Ok(byte) => format!("\\x{byte:02x}"),
        Err(_) => format!("[{id}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extremes_are_ordered_with_ties_to_the_lower_id() {
        let values = [0.5, 3.0, -1.0, 3.0, 2.0, -4.0, 0.0, 1.0, 1.5, -2.0];
        assert_eq!(
            extremes(&values, |a, b| b.total_cmp(&a)),
            [1, 3, 4, 8, 7, 0, 6, 2]
        );
        assert_eq!(extremes(&values[..3], |a, b| a.total_cmp(&b)), [2, 0, 1]);
        assert_eq!(byte_name(b'a'.into()), "a");
        assert_eq!(byte_name(b'\n'.into()), "⏎");
        assert_eq!(byte_name(b' '.into()), "␣");
        assert_eq!(byte_name(b'\t'.into()), "⇥");
        assert_eq!(byte_name(0xe9), "\\xe9");
        assert_eq!(byte_name(300), "[300]");
    }
}
