//! Mistral AI's Mistral (`mistral`; transformers' `MistralConfig`):
//! Llama's shape and tensor names ([`super::llama`]) without biases, with
//! sliding-window attention on every layer unless `sliding_window` is
//! `null` (Mistral 7B v0.1 slides over 4,096 tokens; later versions set
//! `null`).
//!
//! Keys read: Llama's but `attention_bias` and `mlp_bias`, with Mistral's
//! defaults; and `sliding_window`. `layer_types` is not read, as in
//! transformers.

use serde_json::Value;

use super::keys::{SlidingRule, sliding_windows};
use super::llama::{Biases, Defaults, LLAMA, decoder, layout};
use super::spec::FamilySpec;
use crate::Result;
use crate::lm::config::{Family, LmConfig};

pub(super) static SPEC: FamilySpec = FamilySpec {
    model_type: "mistral",
    config,
    layout,
};

/// `MistralConfig`'s defaults.
const MISTRAL: Defaults = Defaults {
    kv_heads: Some(8),
    max_positions: 4096 * 32,
    intermediate: 14336,
    biases: Biases::Fixed(false, false, false),
    ..LLAMA
};

fn config(json: &Value, family: Family) -> Result<LmConfig> {
    let mut config = decoder(json, family, &MISTRAL)?;
    config.features.windows = sliding_windows(json, config.layers, SlidingRule::Every)?;
    Ok(config)
}
