//! Alibaba's Qwen2 (`qwen2`; Qwen2, Qwen2.5; transformers' `Qwen2Config`):
//! Llama's shape and tensor names ([`super::llama`]) with biases on the
//! query, key and value projections and none elsewhere.
//!
//! Keys read: Llama's but `attention_bias` and `mlp_bias`, with Qwen2's
//! defaults; and `use_sliding_window`, `max_window_layers` and
//! `layer_types`, since sliding-window attention is refused
//! ([`LmError::SlidingWindow`]): running full attention instead would give
//! other results silently.

use serde::Deserialize;
use serde_json::Value;

use super::keys::keys;
use super::llama::{Defaults, decoder, layout};
use super::spec::FamilySpec;
use crate::hf::config::{Raw, invalid};
use crate::lm::config::{Family, LmConfig};
use crate::{LmError, Result};

pub(super) static SPEC: FamilySpec = FamilySpec {
    model_type: "qwen2",
    config,
    layout,
};

/// The keys `Qwen2Config` reads for its sliding-window layers.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct SlidingKeys {
    use_sliding_window: Raw<bool>,
    max_window_layers: Raw<u64>,
    layer_types: Raw<Vec<String>>,
}

fn config(json: &Value, family: Family) -> Result<LmConfig> {
    let config = decoder(
        json,
        family,
        Defaults {
            max_positions: 32768,
            intermediate: 22016,
            vocab_size: 151936,
            special: (None, None),
            biases: Some((true, false, false)),
        },
    )?;
    check_sliding_window(json, config.layers)?;
    Ok(config)
}

/// Refuses sliding-window layers: transformers gives the layers from
/// `max_window_layers` on sliding-window attention when
/// `use_sliding_window` is set, or the layers `layer_types` says (a list
/// of one type per layer, each `full_attention` or `sliding_attention`).
fn check_sliding_window(json: &Value, layers: usize) -> Result<()> {
    let k: SlidingKeys = keys(json)?;
    if let Some(types) = k.layer_types.get("layer_types")? {
        if types.len() != layers {
            return Err(invalid(
                "layer_types",
                k.layer_types.json(),
                &format!("expected one entry per layer ({layers})"),
            ));
        }
        if let Some(wrong) = types
            .iter()
            .find(|t| !["full_attention", "sliding_attention"].contains(&t.as_str()))
        {
            return Err(invalid(
                "layer_types",
                k.layer_types.json(),
                &format!("{wrong:?} is neither full_attention nor sliding_attention"),
            ));
        }
        if let Some(layer) = types.iter().position(|t| t == "sliding_attention") {
            return Err(LmError::SlidingWindow { layer }.into());
        }
    }
    let max_window_layers = k
        .max_window_layers
        .integer_in("max_window_layers", 28, 0, u64::MAX)?;
    if k.use_sliding_window.or("use_sliding_window", false)? && max_window_layers < layers {
        return Err(LmError::SlidingWindow {
            layer: max_window_layers,
        }
        .into());
    }
    Ok(())
}
