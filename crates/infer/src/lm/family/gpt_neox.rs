//! EleutherAI's GPT-NeoX (`gpt_neox`, Pythia; transformers'
//! `GPTNeoXConfig`): partial rotary embeddings, a parallel or sequential
//! residual, query/key/value rows fused and interleaved per head.
//!
//! Keys read: `vocab_size`, `hidden_size`, `num_hidden_layers`,
//! `num_attention_heads`, `intermediate_size`, `hidden_act`,
//! `max_position_embeddings`, `layer_norm_eps`, `use_parallel_residual`,
//! `attention_bias`, `rotary_pct`, `rotary_emb_base`, `rope_scaling` /
//! `rope_parameters` (their `rope_theta`, `partial_rotary_factor`,
//! `rope_type` and its parameters), and the common keys. The top-level
//! `rope_theta` and `partial_rotary_factor` are not read for this
//! family, as in transformers.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::keys::{
    CommonDefaults, MAX_TABLE, activation, common, divided, epsilon, keys, param, rope,
    rope_parameters,
};
use super::spec::FamilySpec;
use crate::Result;
use crate::hf::config::Raw;
use crate::hf::weights::Weights;
use crate::lm::block::{Block, Linear};
use crate::lm::config::{Family, LmConfig, NormKind};
use crate::lm::weights::{BlockTensors, Layout, linear};

pub(super) static SPEC: FamilySpec = FamilySpec {
    model_type: "gpt_neox",
    config,
    layout,
};

/// The keys `GPTNeoXConfig` reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct Keys {
    vocab_size: Raw<u64>,
    hidden_size: Raw<u64>,
    num_hidden_layers: Raw<u64>,
    num_attention_heads: Raw<u64>,
    intermediate_size: Raw<u64>,
    hidden_act: Raw<String>,
    max_position_embeddings: Raw<u64>,
    layer_norm_eps: Raw<f64>,
    use_parallel_residual: Raw<bool>,
    attention_bias: Raw<bool>,
    rotary_pct: Raw<f64>,
    rotary_emb_base: Raw<f64>,
    rope_scaling: Raw<Map<String, Value>>,
    rope_parameters: Raw<Map<String, Value>>,
}

fn config(json: &Value, family: Family) -> Result<LmConfig> {
    let k: Keys = keys(json)?;
    let hidden = k.hidden_size.count("hidden_size", 6144)?;
    let heads = k.num_attention_heads.count("num_attention_heads", 64)?;
    let head_dim = divided(hidden, heads)?;
    let bias = k.attention_bias.or("attention_bias", true)?;
    // The base from the RoPE parameters, else `rotary_emb_base`, else
    // 10000; the rotating fraction of each head from the parameters'
    // `partial_rotary_factor`, else `rotary_pct`, else 0.25.
    let params = rope_parameters(&k.rope_scaling, &k.rope_parameters)?;
    let theta = match param(&params, "rope_theta")? {
        Some(theta) => theta,
        None => k.rotary_emb_base.or("rotary_emb_base", 10000.0)?,
    };
    let fraction = match param(&params, "partial_rotary_factor")? {
        Some(fraction) => fraction,
        None => k.rotary_pct.or("rotary_pct", 0.25)?,
    };
    let (tie_word_embeddings, bos_token_id, eos_token_ids) = common(
        json,
        CommonDefaults {
            tie: false,
            bos: Some(0),
            eos: Some(2),
        },
    )?;
    Ok(LmConfig {
        family,
        model_type: family.name().to_owned(),
        hidden,
        layers: k.num_hidden_layers.count("num_hidden_layers", 44)?,
        heads,
        kv_heads: heads,
        head_dim,
        intermediate: k.intermediate_size.count("intermediate_size", 24576)?,
        vocab_size: k.vocab_size.count_up_to("vocab_size", 50432, MAX_TABLE)?,
        max_positions: k.max_position_embeddings.count_up_to(
            "max_position_embeddings",
            2048,
            MAX_TABLE,
        )?,
        bos_token_id,
        eos_token_ids,
        tie_word_embeddings,
        activation: activation(&k.hidden_act, "hidden_act", "gelu")?,
        norm: NormKind::Layer,
        norm_eps: epsilon(&k.layer_norm_eps, "layer_norm_eps", 1e-5)?,
        gated_mlp: false,
        rope: Some(rope(&params, theta, fraction, head_dim, None)?),
        parallel_residual: k.use_parallel_residual.or("use_parallel_residual", true)?,
        qkv_bias: bias,
        out_bias: bias,
        mlp_bias: true,
        scale_by_layer: false,
        scale_attention: true,
        features: Default::default(),
    })
}

fn layout(_: &Weights) -> Layout {
    Layout {
        prefix: "gpt_neox.",
        embed: "embed_in.weight",
        positions: None,
        final_norm: "final_layer_norm",
        head: "embed_out.weight",
        block,
    }
}

fn block(t: BlockTensors<'_>) -> Result<Block> {
    let t = t.under("layers.{i}.");
    let c = t.c;
    let (h, inter, hd) = (c.hidden, c.intermediate, c.head_dim);
    let fused = t.get("attention.query_key_value.weight", &[3 * h, h])?;
    let fused_bias = t.bias(c.qkv_bias, "attention.query_key_value.bias", 3 * h)?;
    // Row r belongs to head r / (3 hd): its queries, keys, values.
    let part = |values: &[f32], width: usize, which: usize| -> Vec<f32> {
        values
            .chunks_exact(3 * hd * width)
            .flat_map(|head| head[which * hd * width..(which + 1) * hd * width].to_vec())
            .collect()
    };
    let qkv = (0..3).map(|which| part(&fused, h, which)).collect();
    let qkv_bias = fused_bias.map(|b| (0..3).flat_map(|which| part(&b, 1, which)).collect());
    let plain = |name: &str, n: usize, k: usize, on: bool| -> Result<Linear> {
        let weight = t.get(&format!("{name}.weight"), &[n, k])?;
        Ok(linear(
            vec![weight],
            t.bias(on, &format!("{name}.bias"), n)?,
            k,
        ))
    };
    Ok(Block {
        norm1: t.norm("input_layernorm")?,
        qkv: linear(qkv, qkv_bias, h),
        out: plain("attention.dense", h, h, c.out_bias)?,
        norm2: t.norm("post_attention_layernorm")?,
        up: plain("mlp.dense_h_to_4h", inter, h, c.mlp_bias)?,
        down: plain("mlp.dense_4h_to_h", h, inter, c.mlp_bias)?,
        qk_norm: None,
        post_norms: None,
    })
}
