//! A decoder language model's tensors, found where its family's
//! [`Layout`] says, checked against the shapes the configuration implies,
//! widened to f32 and laid out as the one block of [`super::block`] takes
//! them. The family files say how their own tensors become a [`Block`]
//! (GPT-2's Conv1D weights transposed, GPT-NeoX's fused rows split, Llama's
//! projections stacked), with the helpers here.

use rayon::prelude::*;

use crate::Result;
use crate::hf::weights::Weights;
use crate::lm::block::{Block, Linear, Norm};
use crate::lm::config::{LmConfig, NormKind};
use crate::nn::linear::LinearWeights;

/// Where a family's tensors are in a checkpoint.
pub(crate) struct Layout {
    /// The prefix of every tensor but the output projection (the model
    /// inside its `…ForCausalLM` module: `model.`, `gpt_neox.`, ...).
    pub prefix: &'static str,
    /// The token embedding, `[vocab, hidden]`.
    pub embed: &'static str,
    /// Learned positions, `[max_positions, hidden]` (GPT-2).
    pub positions: Option<&'static str>,
    /// The final norm's name (its `.weight`, and `.bias` for a LayerNorm).
    pub final_norm: &'static str,
    /// The output projection, `[vocab, hidden]`, outside the prefix; the
    /// embedding when tied or missing.
    pub head: &'static str,
    /// Block `i`'s weights.
    pub block: fn(BlockTensors<'_>) -> Result<Block>,
}

/// Everything but the blocks.
pub(crate) struct Outer {
    /// The token embedding, `[vocab, hidden]`.
    pub embed: Vec<f32>,
    /// GPT-2's learned positions, `[max_positions, hidden]`.
    pub positions: Option<Vec<f32>>,
    pub final_norm: Norm,
    /// The output projection, `[vocab, hidden]`: the embedding when tied.
    pub head: LinearWeights,
}

/// The tensors of one block: names are taken under the block's prefix.
#[derive(Clone)]
pub(crate) struct BlockTensors<'a> {
    /// The configuration.
    pub c: &'a LmConfig,
    w: &'a Weights,
    /// The block's index.
    pub index: usize,
    /// Prefixed to every name, after the model's prefix (`h.3.`,
    /// `layers.3.`).
    prefix: String,
}

impl BlockTensors<'_> {
    /// Takes the block's names under `prefix` (which holds `{i}` for the
    /// block's index).
    pub(crate) fn under(mut self, prefix: &str) -> Self {
        self.prefix = prefix.replace("{i}", &self.index.to_string());
        self
    }

    /// The tensor `name`, `shape`-shaped, as f32.
    pub(crate) fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        self.w.get(&format!("{}{name}", self.prefix), shape)
    }

    /// The bias `name` of `n` values when the model has it (`on`).
    pub(crate) fn bias(&self, on: bool, name: &str, n: usize) -> Result<Option<Vec<f32>>> {
        if on {
            self.get(name, &[n]).map(Some)
        } else {
            Ok(None)
        }
    }

    /// The norm `name` (its `.weight`, and `.bias` for a LayerNorm).
    pub(crate) fn norm(&self, name: &str) -> Result<Norm> {
        norm(self.c, self.w, &format!("{}{name}", self.prefix))
    }

    /// The weight of the per-head RMSNorm `name` (`head_dim` values).
    pub(crate) fn head_norm(&self, name: &str) -> Result<Vec<f32>> {
        let weight = self.get(&format!("{name}.weight"), &[self.c.head_dim])?;
        Ok(rms_weight(self.c, weight))
    }
}

/// A linear layer of `parts` stacked, `k` inputs, with its bias (zeros
/// when `bias` is `None`).
pub(crate) fn linear(parts: Vec<Vec<f32>>, bias: Option<Vec<f32>>, k: usize) -> Linear {
    let n: usize = parts.iter().map(|p| p.len() / k).sum();
    Linear {
        weights: LinearWeights::float(parts, k),
        bias: bias.unwrap_or_else(|| vec![0.0; n]),
    }
}

/// Loads the model's tensors from `w`, where `layout` says.
pub(crate) fn load(c: &LmConfig, w: &mut Weights, layout: &Layout) -> Result<(Outer, Vec<Block>)> {
    let (h, v) = (c.hidden, c.vocab_size);
    w.set_prefix(layout.prefix);
    let embed = w.get(layout.embed, &[v, h])?;
    let positions = match layout.positions {
        Some(name) => Some(w.get(name, &[c.max_positions, h])?),
        None => None,
    };
    let final_norm = norm(c, w, layout.final_norm)?;
    let blocks = (0..c.layers)
        .into_par_iter()
        .map(|index| {
            (layout.block)(BlockTensors {
                c,
                w,
                index,
                prefix: String::new(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    // The output projection sits outside the prefix.
    w.set_prefix("");
    let head = if c.tie_word_embeddings {
        None
    } else {
        w.optional(layout.head, &[v, h])?
    };
    w.set_prefix(layout.prefix);
    let head = LinearWeights::float(vec![head.unwrap_or_else(|| embed.clone())], h);
    Ok((
        Outer {
            embed,
            positions,
            final_norm,
            head,
        },
        blocks,
    ))
}

/// The norm `name` (`name.weight`, and `name.bias` for a LayerNorm).
fn norm(c: &LmConfig, w: &Weights, name: &str) -> Result<Norm> {
    let h = c.hidden;
    let weight = w.get(&format!("{name}.weight"), &[h])?;
    Ok(match c.norm {
        NormKind::Layer => Norm::Layer(weight, w.get(&format!("{name}.bias"), &[h])?),
        NormKind::Rms => Norm::Rms(rms_weight(c, weight)),
    })
}

/// An RMSNorm's multiplier from its stored weight: `1 + w` where the
/// family stores offsets from one (Gemma, which computes `1 + w` in f32
/// too), else `w`.
fn rms_weight(c: &LmConfig, mut weight: Vec<f32>) -> Vec<f32> {
    if c.features.norm_weight_offset {
        weight.iter_mut().for_each(|w| *w += 1.0);
    }
    weight
}
