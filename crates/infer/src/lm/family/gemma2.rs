//! Google's Gemma 2 (`gemma2`; transformers' `Gemma2Config`): Llama's
//! tensor names ([`super::llama`]) with the embeddings scaled by
//! `√hidden`, RMSNorm weights stored as offsets from one, a norm on the
//! attention's and the MLP's outputs (`post_attention_layernorm`,
//! `post_feedforward_layernorm`) and one before the MLP
//! (`pre_feedforward_layernorm`), scores scaled by
//! `query_pre_attn_scalar^-½` and capped by `attn_logit_softcapping`,
//! logits capped by `final_logit_softcapping`, a GeGLU MLP (tanh GELU),
//! and sliding-window attention on every other layer (the first, third,
//! ...). Gemma 3's text model ([`super::gemma3`]) builds on it.
//!
//! Keys read: `vocab_size`, `hidden_size`, `num_hidden_layers`,
//! `num_attention_heads`, `num_key_value_heads`, `head_dim`,
//! `intermediate_size`, `hidden_activation`, `max_position_embeddings`,
//! `rms_norm_eps`, `attention_bias`, `rope_theta`, `rope_scaling` /
//! `rope_parameters`, `query_pre_attn_scalar`, `sliding_window`,
//! `layer_types`, `attn_logit_softcapping`, `final_logit_softcapping`,
//! `use_bidirectional_attention` (refused when true), and the common
//! keys.

use serde::Deserialize;
use serde_json::Value;

use super::keys::{SlidingRule, keys, sliding_windows};
use super::llama::{self, Biases, Defaults};
use super::spec::FamilySpec;
use crate::hf::config::{Nullable, Raw, invalid};
use crate::hf::weights::Weights;
use crate::lm::block::Block;
use crate::lm::config::{Family, LmConfig};
use crate::lm::weights::{BlockTensors, Layout};
use crate::{LmError, Result};

pub(super) static SPEC: FamilySpec = FamilySpec {
    model_type: "gemma2",
    config,
    layout,
};

/// `Gemma2Config`'s defaults.
pub(super) const GEMMA2: Defaults = Defaults {
    hidden: 2304,
    layers: 26,
    heads: 8,
    kv_heads: Some(4),
    head_dim: Some(256),
    max_positions: 8192,
    intermediate: 9216,
    vocab_size: 256000,
    tie: true,
    special: (Some(2), Some(1)),
    biases: Biases::AttentionOnly,
    activation: ("hidden_activation", "gelu_pytorch_tanh"),
};

/// The keys of Gemma's own features.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct GemmaKeys {
    query_pre_attn_scalar: Raw<f64>,
    attn_logit_softcapping: Nullable<f64>,
    final_logit_softcapping: Nullable<f64>,
    use_bidirectional_attention: Raw<bool>,
}

/// What a Gemma generation's configuration class defaults to besides its
/// shape.
pub(super) struct GemmaDefaults {
    /// `attn_logit_softcapping`.
    pub attention_softcap: Option<f64>,
    /// `final_logit_softcapping`.
    pub final_softcap: Option<f64>,
    /// Which layers slide.
    pub sliding: SlidingRule,
}

fn config(json: &Value, family: Family) -> Result<LmConfig> {
    let config = llama::decoder(json, family, &GEMMA2)?;
    gemma(
        json,
        config,
        GemmaDefaults {
            attention_softcap: Some(50.0),
            final_softcap: Some(30.0),
            sliding: SlidingRule::Alternating {
                pattern: 2,
                read_pattern: false,
            },
        },
    )
}

/// `config` (a Llama-shaped reading of `json`) with Gemma's features.
pub(super) fn gemma(
    json: &Value,
    mut config: LmConfig,
    defaults: GemmaDefaults,
) -> Result<LmConfig> {
    let k: GemmaKeys = keys(json)?;
    if k.use_bidirectional_attention
        .or("use_bidirectional_attention", false)?
    {
        return Err(LmError::BidirectionalAttention.into());
    }
    let positive = |v: f64| v.is_finite() && v > 0.0;
    let cap = |raw: &Nullable<f64>, key: &str, default| -> Result<Option<f32>> {
        match raw.or(key, default)? {
            Some(c) if !positive(c) => Err(invalid(
                key,
                &Value::from(c),
                "expected a positive number or null",
            )),
            c => Ok(c.map(|c| c as f32)),
        }
    };
    let scalar = k.query_pre_attn_scalar.number(
        "query_pre_attn_scalar",
        256.0,
        positive,
        "expected a positive number",
    )?;
    let features = &mut config.features;
    features.windows = sliding_windows(json, config.layers, defaults.sliding)?;
    features.sandwich_norms = true;
    features.norm_weight_offset = true;
    // Python's `query_pre_attn_scalar**-0.5` and `hidden_size**0.5`, in
    // f64, multiplied into f32 tensors.
    features.query_scale = Some(scalar.powf(-0.5) as f32);
    features.embed_scale = Some((config.hidden as f64).sqrt() as f32);
    features.attention_softcap = cap(
        &k.attn_logit_softcapping,
        "attn_logit_softcapping",
        defaults.attention_softcap,
    )?;
    features.final_softcap = cap(
        &k.final_logit_softcapping,
        "final_logit_softcapping",
        defaults.final_softcap,
    )?;
    Ok(config)
}

pub(super) fn layout(_: &Weights) -> Layout {
    Layout {
        block,
        ..llama::layout_of_llama()
    }
}

/// Block `i`: Llama's tensors, but that Gemma's `post_attention_layernorm`
/// normalises the attention's output, and `pre_feedforward_layernorm` is
/// the norm before the MLP.
fn block(t: BlockTensors<'_>) -> Result<Block> {
    let names = t.clone().under("layers.{i}.");
    let mut block = llama::block(t)?;
    let after_attention =
        std::mem::replace(&mut block.norm2, names.norm("pre_feedforward_layernorm")?);
    block.post_norms = Some((after_attention, names.norm("post_feedforward_layernorm")?));
    Ok(block)
}
