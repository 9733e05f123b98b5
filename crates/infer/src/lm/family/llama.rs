//! Meta's Llama (`llama`; TinyLlama, SmolLM, Llama 3.x; transformers'
//! `LlamaConfig`): RMSNorm, RoPE with optional scaling, a SwiGLU MLP,
//! grouped-query attention. Qwen2 ([`super::qwen2`]) shares its shape
//! and tensor names.
//!
//! Keys read: `vocab_size`, `hidden_size`, `num_hidden_layers`,
//! `num_attention_heads`, `num_key_value_heads`, `head_dim`,
//! `intermediate_size`, `hidden_act`, `max_position_embeddings`,
//! `rms_norm_eps`, `attention_bias`, `mlp_bias`, `rope_theta`,
//! `partial_rotary_factor`, `rope_scaling` / `rope_parameters` (the
//! parameters inside win over the top-level keys), and the common keys.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::keys::{
    CommonDefaults, MAX_TABLE, activation, common, divided, epsilon, keys, param, rope,
    rope_parameters,
};
use super::spec::FamilySpec;
use crate::hf::config::Raw;
use crate::hf::weights::Weights;
use crate::lm::block::Block;
use crate::lm::config::{Family, LmConfig, NormKind};
use crate::lm::weights::{BlockTensors, Layout, linear};
use crate::{LmError, Result};

pub(super) static SPEC: FamilySpec = FamilySpec {
    model_type: "llama",
    config,
    layout,
};

/// The keys `LlamaConfig` reads (and `Qwen2Config`, but for the biases).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct Keys {
    vocab_size: Raw<u64>,
    hidden_size: Raw<u64>,
    num_hidden_layers: Raw<u64>,
    num_attention_heads: Raw<u64>,
    num_key_value_heads: Raw<u64>,
    head_dim: Raw<u64>,
    intermediate_size: Raw<u64>,
    hidden_act: Raw<String>,
    max_position_embeddings: Raw<u64>,
    rms_norm_eps: Raw<f64>,
    attention_bias: Raw<bool>,
    mlp_bias: Raw<bool>,
    rope_theta: Raw<f64>,
    partial_rotary_factor: Raw<f64>,
    rope_scaling: Raw<Map<String, Value>>,
    rope_parameters: Raw<Map<String, Value>>,
}

/// What a Llama-shaped family's configuration class defaults to, and
/// where its biases are.
pub(super) struct Defaults {
    /// `max_position_embeddings`.
    pub max_positions: u64,
    /// `intermediate_size`.
    pub intermediate: u64,
    /// `vocab_size`.
    pub vocab_size: u64,
    /// `bos_token_id` and `eos_token_id`.
    pub special: (Option<u32>, Option<u32>),
    /// The biases: read from `attention_bias` and `mlp_bias` (`None`), or
    /// fixed as (query/key/value, output, MLP).
    pub biases: Option<(bool, bool, bool)>,
}

fn config(json: &Value, family: Family) -> Result<LmConfig> {
    decoder(
        json,
        family,
        Defaults {
            max_positions: 2048,
            intermediate: 11008,
            vocab_size: 32000,
            special: (Some(1), Some(2)),
            biases: None,
        },
    )
}

/// The configuration of a Llama-shaped family with `defaults`.
pub(super) fn decoder(json: &Value, family: Family, defaults: Defaults) -> Result<LmConfig> {
    let k: Keys = keys(json)?;
    let hidden = k.hidden_size.count("hidden_size", 4096)?;
    let heads = k.num_attention_heads.count("num_attention_heads", 32)?;
    let kv_heads = k
        .num_key_value_heads
        .count("num_key_value_heads", heads as u64)?;
    if !heads.is_multiple_of(kv_heads) {
        return Err(LmError::KvHeadsDoNotDivide { heads, kv_heads }.into());
    }
    let head_dim = if k.head_dim.is_missing() {
        divided(hidden, heads)?
    } else {
        k.head_dim.count("head_dim", 0)?
    };
    let max_positions = k.max_position_embeddings.count_up_to(
        "max_position_embeddings",
        defaults.max_positions,
        MAX_TABLE,
    )?;
    let (qkv_bias, out_bias, mlp_bias) = match defaults.biases {
        Some(fixed) => fixed,
        None => {
            let attention = k.attention_bias.or("attention_bias", false)?;
            (attention, attention, k.mlp_bias.or("mlp_bias", false)?)
        }
    };
    // The base from the RoPE parameters, else the top-level `rope_theta`,
    // else 10000; every dimension of each head rotates.
    let params = rope_parameters(&k.rope_scaling, &k.rope_parameters)?;
    let theta = match param(&params, "rope_theta")? {
        Some(theta) => theta,
        None => k.rope_theta.or("rope_theta", 10000.0)?,
    };
    let fraction = match param(&params, "partial_rotary_factor")? {
        Some(fraction) => fraction,
        None => k.partial_rotary_factor.or("partial_rotary_factor", 1.0)?,
    };
    if fraction != 1.0 {
        return Err(LmError::BadRope {
            key: "partial_rotary_factor",
            reason: format!(
                "{fraction}: only 1 (every dimension rotates) is supported for this family"
            ),
        }
        .into());
    }
    let (bos, eos) = defaults.special;
    let (tie_word_embeddings, bos_token_id, eos_token_ids) = common(
        json,
        CommonDefaults {
            tie: false,
            bos,
            eos,
        },
    )?;
    Ok(LmConfig {
        family,
        model_type: family.name().to_owned(),
        hidden,
        layers: k.num_hidden_layers.count("num_hidden_layers", 32)?,
        heads,
        kv_heads,
        head_dim,
        intermediate: k
            .intermediate_size
            .count("intermediate_size", defaults.intermediate)?,
        vocab_size: k
            .vocab_size
            .count_up_to("vocab_size", defaults.vocab_size, MAX_TABLE)?,
        max_positions,
        bos_token_id,
        eos_token_ids,
        tie_word_embeddings,
        activation: activation(&k.hidden_act, "hidden_act", "silu")?,
        norm: NormKind::Rms,
        norm_eps: epsilon(&k.rms_norm_eps, "rms_norm_eps", 1e-6)?,
        gated_mlp: true,
        rope: Some(rope(&params, theta, 1.0, head_dim, Some(max_positions))?),
        parallel_residual: false,
        qkv_bias,
        out_bias,
        mlp_bias,
        scale_by_layer: false,
        scale_attention: true,
    })
}

pub(super) fn layout(_: &Weights) -> Layout {
    Layout {
        prefix: "model.",
        embed: "embed_tokens.weight",
        positions: None,
        final_norm: "norm",
        head: "lm_head.weight",
        block,
    }
}

fn block(t: BlockTensors<'_>) -> Result<Block> {
    let t = t.under("layers.{i}.");
    let c = t.c;
    let (h, inter, hd) = (c.hidden, c.intermediate, c.head_dim);
    let (qw, kvw) = (c.heads * hd, c.kv_heads * hd);
    let mut parts = Vec::with_capacity(3);
    let mut biases = Vec::with_capacity(3);
    for (name, n) in [("q_proj", qw), ("k_proj", kvw), ("v_proj", kvw)] {
        parts.push(t.get(&format!("self_attn.{name}.weight"), &[n, h])?);
        if let Some(b) = t.bias(c.qkv_bias, &format!("self_attn.{name}.bias"), n)? {
            biases.extend(b);
        }
    }
    let qkv_bias = c.qkv_bias.then_some(biases);
    let o = t.get("self_attn.o_proj.weight", &[h, qw])?;
    let o_bias = t.bias(c.out_bias, "self_attn.o_proj.bias", h)?;
    let mlp = |name: &str, n: usize, k: usize| -> Result<(Vec<f32>, Option<Vec<f32>>)> {
        Ok((
            t.get(&format!("mlp.{name}.weight"), &[n, k])?,
            t.bias(c.mlp_bias, &format!("mlp.{name}.bias"), n)?,
        ))
    };
    let (gate, gate_bias) = mlp("gate_proj", inter, h)?;
    let (up, up_bias) = mlp("up_proj", inter, h)?;
    let (down, down_bias) = mlp("down_proj", h, inter)?;
    let up_bias = gate_bias.zip(up_bias).map(|(g, u)| [g, u].concat());
    Ok(Block {
        norm1: t.norm("input_layernorm")?,
        qkv: linear(parts, qkv_bias, h),
        out: linear(vec![o], o_bias, qw),
        norm2: t.norm("post_attention_layernorm")?,
        up: linear(vec![gate, up], up_bias, h),
        down: linear(vec![down], down_bias, inter),
    })
}
