//! OpenAI's GPT-2 (`gpt2`, transformers' `GPT2Config`): learned
//! positions, LayerNorm, a GELU MLP, Conv1D weights stored `[in, out]`.
//!
//! Keys read: `vocab_size`, `n_positions`, `n_embd`, `n_layer`, `n_head`,
//! `n_inner`, `activation_function`, `layer_norm_epsilon`,
//! `scale_attn_weights`, `scale_attn_by_inverse_layer_idx`,
//! `add_cross_attention` (refused when true), and the common keys.

use serde::Deserialize;
use serde_json::Value;

use super::keys::{CommonDefaults, MAX_TABLE, activation, common, divided, epsilon, keys};
use super::spec::FamilySpec;
use crate::hf::config::Raw;
use crate::hf::weights::Weights;
use crate::lm::block::{Block, Linear};
use crate::lm::config::{Family, LmConfig, NormKind};
use crate::lm::weights::{BlockTensors, Layout, linear};
use crate::nn::transpose::transpose;
use crate::{LmError, Result};

pub(super) static SPEC: FamilySpec = FamilySpec {
    model_type: "gpt2",
    config,
    layout,
};

/// The keys `GPT2Config` reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct Keys {
    vocab_size: Raw<u64>,
    n_positions: Raw<u64>,
    n_embd: Raw<u64>,
    n_layer: Raw<u64>,
    n_head: Raw<u64>,
    n_inner: Raw<u64>,
    activation_function: Raw<String>,
    layer_norm_epsilon: Raw<f64>,
    scale_attn_weights: Raw<bool>,
    scale_attn_by_inverse_layer_idx: Raw<bool>,
    add_cross_attention: Raw<bool>,
}

fn config(json: &Value, family: Family) -> Result<LmConfig> {
    let k: Keys = keys(json)?;
    if k.add_cross_attention.or("add_cross_attention", false)? {
        return Err(LmError::CrossAttention.into());
    }
    let hidden = k.n_embd.count("n_embd", 768)?;
    let heads = k.n_head.count("n_head", 12)?;
    let (tie_word_embeddings, bos_token_id, eos_token_ids) = common(
        json,
        CommonDefaults {
            tie: true,
            bos: Some(50256),
            eos: Some(50256),
        },
    )?;
    Ok(LmConfig {
        family,
        model_type: family.name().to_owned(),
        hidden,
        layers: k.n_layer.count("n_layer", 12)?,
        heads,
        kv_heads: heads,
        head_dim: divided(hidden, heads)?,
        intermediate: k.n_inner.count("n_inner", 4 * hidden as u64)?,
        vocab_size: k.vocab_size.count_up_to("vocab_size", 50257, MAX_TABLE)?,
        max_positions: k.n_positions.count_up_to("n_positions", 1024, MAX_TABLE)?,
        bos_token_id,
        eos_token_ids,
        tie_word_embeddings,
        activation: activation(&k.activation_function, "activation_function", "gelu_new")?,
        norm: NormKind::Layer,
        norm_eps: epsilon(&k.layer_norm_epsilon, "layer_norm_epsilon", 1e-5)?,
        gated_mlp: false,
        rope: None,
        parallel_residual: false,
        qkv_bias: true,
        out_bias: true,
        mlp_bias: true,
        scale_by_layer: k
            .scale_attn_by_inverse_layer_idx
            .or("scale_attn_by_inverse_layer_idx", false)?,
        scale_attention: k.scale_attn_weights.or("scale_attn_weights", true)?,
        features: Default::default(),
    })
}

fn layout(w: &Weights) -> Layout {
    Layout {
        // Hub GPT-2 files name the tensors without `transformer.`.
        prefix: if w.has("transformer.wte.weight") {
            "transformer."
        } else {
            ""
        },
        embed: "wte.weight",
        positions: Some("wpe.weight"),
        final_norm: "ln_f",
        head: "lm_head.weight",
        block,
    }
}

fn block(t: BlockTensors<'_>) -> Result<Block> {
    let t = t.under("h.{i}.");
    let (h, inter) = (t.c.hidden, t.c.intermediate);
    // Conv1D: weights `[in, out]`, transposed to `[out, in]`.
    let conv = |name: &str, k: usize, n: usize| -> Result<Linear> {
        let weight = t.get(&format!("{name}.weight"), &[k, n])?;
        let bias = t.get(&format!("{name}.bias"), &[n])?;
        Ok(linear(vec![transpose(&weight, k, n)], Some(bias), k))
    };
    Ok(Block {
        norm1: t.norm("ln_1")?,
        qkv: conv("attn.c_attn", h, 3 * h)?,
        out: conv("attn.c_proj", h, h)?,
        norm2: t.norm("ln_2")?,
        up: conv("mlp.c_fc", h, inter)?,
        down: conv("mlp.c_proj", inter, h)?,
        qk_norm: None,
        post_norms: None,
    })
}
