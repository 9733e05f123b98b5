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

/// The keys `LlamaConfig` reads, and those the families of its shape read
/// in their place (Gemma's `hidden_activation`).
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
    hidden_activation: Raw<String>,
    max_position_embeddings: Raw<u64>,
    rms_norm_eps: Raw<f64>,
    attention_bias: Raw<bool>,
    mlp_bias: Raw<bool>,
    rope_theta: Raw<f64>,
    partial_rotary_factor: Raw<f64>,
    rope_scaling: Raw<Map<String, Value>>,
    rope_parameters: Raw<Map<String, Value>>,
}

/// Where a Llama-shaped family's biases are.
#[derive(Debug, Clone, Copy)]
pub(super) enum Biases {
    /// `attention_bias` on the four attention projections, `mlp_bias` on
    /// the MLP (Llama).
    Read,
    /// `attention_bias` on the four attention projections, none on the
    /// MLP (Qwen3, Gemma).
    AttentionOnly,
    /// Fixed: (query/key/value, output, MLP) (Qwen2, Mistral).
    Fixed(bool, bool, bool),
}

/// What a Llama-shaped family's configuration class defaults to, and
/// which of its keys differ.
pub(super) struct Defaults {
    /// `hidden_size`.
    pub hidden: u64,
    /// `num_hidden_layers`.
    pub layers: u64,
    /// `num_attention_heads`.
    pub heads: u64,
    /// `num_key_value_heads` (`None`: the heads).
    pub kv_heads: Option<u64>,
    /// `head_dim` (`None`: the hidden width over the heads).
    pub head_dim: Option<u64>,
    /// `max_position_embeddings`.
    pub max_positions: u64,
    /// `intermediate_size`.
    pub intermediate: u64,
    /// `vocab_size`.
    pub vocab_size: u64,
    /// `tie_word_embeddings`.
    pub tie: bool,
    /// `bos_token_id` and `eos_token_id`.
    pub special: (Option<u32>, Option<u32>),
    /// The biases.
    pub biases: Biases,
    /// The activation's key (`hidden_act` or `hidden_activation`) and
    /// default.
    pub activation: (&'static str, &'static str),
}

/// `LlamaConfig`'s defaults.
pub(super) const LLAMA: Defaults = Defaults {
    hidden: 4096,
    layers: 32,
    heads: 32,
    kv_heads: None,
    head_dim: None,
    max_positions: 2048,
    intermediate: 11008,
    vocab_size: 32000,
    tie: false,
    special: (Some(1), Some(2)),
    biases: Biases::Read,
    activation: ("hidden_act", "silu"),
};

fn config(json: &Value, family: Family) -> Result<LmConfig> {
    decoder(json, family, &LLAMA)
}

/// The configuration of a Llama-shaped family with `defaults`, its RoPE
/// read from `rope_theta`, `partial_rotary_factor` and `rope_scaling` /
/// `rope_parameters`.
pub(super) fn decoder(json: &Value, family: Family, defaults: &Defaults) -> Result<LmConfig> {
    let mut config = shape(json, family, defaults)?;
    let k: Keys = keys(json)?;
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
    config.rope = Some(rope(
        &params,
        theta,
        1.0,
        config.head_dim,
        Some(config.max_positions),
    )?);
    Ok(config)
}

/// The configuration of a Llama-shaped family with `defaults`, without
/// its rotary embedding (`rope` is `None`).
pub(super) fn shape(json: &Value, family: Family, defaults: &Defaults) -> Result<LmConfig> {
    let k: Keys = keys(json)?;
    let hidden = k.hidden_size.count("hidden_size", defaults.hidden)?;
    let heads = k
        .num_attention_heads
        .count("num_attention_heads", defaults.heads)?;
    let kv_heads = k.num_key_value_heads.count(
        "num_key_value_heads",
        defaults.kv_heads.unwrap_or(heads as u64),
    )?;
    if !heads.is_multiple_of(kv_heads) {
        return Err(LmError::KvHeadsDoNotDivide { heads, kv_heads }.into());
    }
    let head_dim = match (k.head_dim.is_missing(), defaults.head_dim) {
        (true, None) => divided(hidden, heads)?,
        (_, default) => k.head_dim.count("head_dim", default.unwrap_or(0))?,
    };
    let max_positions = k.max_position_embeddings.count_up_to(
        "max_position_embeddings",
        defaults.max_positions,
        MAX_TABLE,
    )?;
    let (qkv_bias, out_bias, mlp_bias) = match defaults.biases {
        Biases::Fixed(qkv, out, mlp) => (qkv, out, mlp),
        Biases::Read | Biases::AttentionOnly => {
            let attention = k.attention_bias.or("attention_bias", false)?;
            let mlp = match defaults.biases {
                Biases::Read => k.mlp_bias.or("mlp_bias", false)?,
                _ => false,
            };
            (attention, attention, mlp)
        }
    };
    let (bos, eos) = defaults.special;
    let (tie_word_embeddings, bos_token_id, eos_token_ids) = common(
        json,
        CommonDefaults {
            tie: defaults.tie,
            bos,
            eos,
        },
    )?;
    let (activation_key, activation_default) = defaults.activation;
    let activation_raw = match activation_key {
        "hidden_activation" => &k.hidden_activation,
        _ => &k.hidden_act,
    };
    Ok(LmConfig {
        family,
        model_type: family.name().to_owned(),
        hidden,
        layers: k
            .num_hidden_layers
            .count("num_hidden_layers", defaults.layers)?,
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
        activation: activation(activation_raw, activation_key, activation_default)?,
        norm: NormKind::Rms,
        norm_eps: epsilon(&k.rms_norm_eps, "rms_norm_eps", 1e-6)?,
        gated_mlp: true,
        rope: None,
        parallel_residual: false,
        qkv_bias,
        out_bias,
        mlp_bias,
        scale_by_layer: false,
        scale_attention: true,
        features: Default::default(),
    })
}

pub(super) fn layout(_: &Weights) -> Layout {
    layout_of_llama()
}

/// Where Llama's tensors are.
pub(super) fn layout_of_llama() -> Layout {
    Layout {
        prefix: "model.",
        embed: "embed_tokens.weight",
        positions: None,
        final_norm: "norm",
        head: "lm_head.weight",
        block,
    }
}

/// Block `i` of a Llama-shaped checkpoint (with the query and key norms
/// when the family has them).
pub(super) fn block(t: BlockTensors<'_>) -> Result<Block> {
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
    let qk_norm = match c.features.qk_norm {
        true => Some((
            t.head_norm("self_attn.q_norm")?,
            t.head_norm("self_attn.k_norm")?,
        )),
        false => None,
    };
    Ok(Block {
        norm1: t.norm("input_layernorm")?,
        qkv: linear(parts, qkv_bias, h),
        out: linear(vec![o], o_bias, qw),
        norm2: t.norm("post_attention_layernorm")?,
        up: linear(vec![gate, up], up_bias, h),
        down: linear(vec![down], down_bias, inter),
        qk_norm,
        post_norms: None,
    })
}
