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

use modelbin_format::saev::Dataset;

use crate::model::{HookedModel, ModelKind, OpenOptions, Recorded, open_model};
use crate::nn::kernels::matmul_bt;
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

/// What decoder rows are read against.
pub struct DecoderEffects {
    basis: Basis,
    width: usize,
    /// Each token's text, shown by itself ([`alone`](modelbin_format::saev::alone)).
    names: Vec<String>,
}

impl std::fmt::Debug for DecoderEffects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecoderEffects")
            .field("width", &self.width)
            .field("tokens", &self.names.len())
            .finish()
    }
}

/// How a row becomes effects on tokens.
enum Basis {
    /// Through the unembedding of a model that predicts tokens: the
    /// logits it adds.
    Unembedding(Box<dyn HookedModel>),
    /// Against input embeddings `[vocab, width]`: the nearest tokens by
    /// cosine, their norms, and which tokens are special (left out).
    Nearest {
        embeddings: Vec<f32>,
        norms: Vec<f32>,
        special: Vec<bool>,
    },
}

impl DecoderEffects {
    /// Reads the unembedding (a model that predicts tokens: TLLM, a
    /// decoder language model) or the input embeddings (BERT) of `model`,
    /// which must be the model `dataset` was recorded from.
    pub fn open(model: &Path, dataset: &Dataset) -> Result<DecoderEffects> {
        let metadata = dataset.metadata();
        let recorded = Recorded::of(metadata).filter(|r| r.kind != ModelKind::Vision);
        if recorded.is_none() {
            return Err(SaeError::NoDecoderEffects {
                family: metadata.vit_family.clone(),
            }
            .into());
        }
        check_recorded_from(model, dataset)?;
        let model = open_model(model, OpenOptions::default())?;
        let width = model.width();
        let Some(tokens) = model.tokens() else {
            return Err(SaeError::NoDecoderEffects {
                family: metadata.vit_family.clone(),
            }
            .into());
        };
        let names: Vec<String> = (0..tokens.vocab_size() as u32)
            .map(|id| tokens.token_name(id))
            .collect();
        let basis = if model.decoder().is_some() {
            Basis::Unembedding(model)
        } else if let Some(embeddings) = model.input_embeddings() {
            Basis::Nearest {
                norms: embeddings.chunks_exact(width).map(norm).collect(),
                special: names
                    .iter()
                    .map(|n| n.starts_with('[') && n.ends_with(']'))
                    .collect(),
                embeddings,
            }
        } else {
            return Err(SaeError::NoDecoderEffects {
                family: metadata.vit_family.clone(),
            }
            .into());
        };
        Ok(DecoderEffects {
            basis,
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
            match &self.basis {
                Basis::Unembedding(model) => {
                    let decoder = model.decoder().expect("an unembedding's model decodes");
                    out.copy_from_slice(&decoder.unembed(&rows));
                }
                Basis::Nearest { embeddings, .. } => {
                    matmul_bt(&rows, embeddings, out, shape, false)
                }
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
        match &self.basis {
            Basis::Unembedding(_) => Effects::Logits {
                raised: listed(extremes(values, |a, b| b.total_cmp(&a)), values),
                lowered: listed(extremes(values, |a, b| a.total_cmp(&b)), values),
            },
            Basis::Nearest { norms, special, .. } => {
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
    }
}
