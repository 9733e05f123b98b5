//! Alibaba's Qwen3 (`qwen3`; transformers' `Qwen3Config`): Qwen2
//! ([`super::qwen2`]) with each query and key head RMS-normalised before
//! rotation (`self_attn.q_norm`, `self_attn.k_norm`), `attention_bias`
//! (off by default) on all four attention projections and a head width
//! of its own (128 by default).
//!
//! Keys read: Llama's but `mlp_bias`, with Qwen3's defaults; and
//! `use_sliding_window`, `sliding_window`, `max_window_layers` and
//! `layer_types`.

use serde_json::Value;

use super::keys::{SlidingRule, sliding_windows};
use super::llama::{Biases, Defaults, decoder, layout};
use super::qwen2::QWEN2;
use super::spec::FamilySpec;
use crate::Result;
use crate::lm::config::{Family, LmConfig};

pub(super) static SPEC: FamilySpec = FamilySpec {
    model_type: "qwen3",
    config,
    layout,
};

/// `Qwen3Config`'s defaults.
const QWEN3: Defaults = Defaults {
    head_dim: Some(128),
    biases: Biases::AttentionOnly,
    ..QWEN2
};

fn config(json: &Value, family: Family) -> Result<LmConfig> {
    let mut config = decoder(json, family, &QWEN3)?;
    config.features.windows =
        sliding_windows(json, config.layers, SlidingRule::FromMaxWindowLayers)?;
    config.features.qk_norm = true;
    Ok(config)
}
