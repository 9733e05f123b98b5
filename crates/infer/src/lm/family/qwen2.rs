//! Alibaba's Qwen2 (`qwen2`; Qwen2, Qwen2.5; transformers' `Qwen2Config`):
//! Llama's shape and tensor names ([`super::llama`]) with biases on the
//! query, key and value projections and none elsewhere, and
//! sliding-window attention on some layers when `use_sliding_window` is
//! set.
//!
//! Keys read: Llama's but `attention_bias` and `mlp_bias`, with Qwen2's
//! defaults; and `use_sliding_window`, `sliding_window`,
//! `max_window_layers` and `layer_types`.

use serde_json::Value;

use super::keys::{SlidingRule, sliding_windows};
use super::llama::{Biases, Defaults, LLAMA, decoder, layout};
use super::spec::FamilySpec;
use crate::Result;
use crate::lm::config::{Family, LmConfig};

pub(super) static SPEC: FamilySpec = FamilySpec {
    model_type: "qwen2",
    config,
    layout,
};

/// `Qwen2Config`'s defaults.
pub(super) const QWEN2: Defaults = Defaults {
    max_positions: 32768,
    intermediate: 22016,
    vocab_size: 151936,
    special: (None, None),
    biases: Biases::Fixed(true, false, false),
    ..LLAMA
};

fn config(json: &Value, family: Family) -> Result<LmConfig> {
    let mut config = decoder(json, family, &QWEN2)?;
    config.features.windows =
        sliding_windows(json, config.layers, SlidingRule::FromMaxWindowLayers)?;
    Ok(config)
}
