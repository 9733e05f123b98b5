//! Google's Gemma 3 text models (`gemma3_text`: Gemma 3 270M and 1B, and
//! the text model of the larger ones; transformers' `Gemma3TextConfig`):
//! Gemma 2 ([`super::gemma2`]) with each query and key head
//! RMS-normalised before rotation, no caps on scores or logits by default,
//! five sliding-window layers to each full one
//! (`sliding_window_pattern`), and a rotary base of their own for the
//! sliding-window layers (`rope_local_base_freq`, 10,000) beside the full
//! layers' (`rope_theta`, 1,000,000, with `rope_scaling`).
//!
//! Keys read: Gemma 2's, with Gemma 3's defaults, and
//! `sliding_window_pattern` and `rope_local_base_freq`; the RoPE
//! parameters either per layer type (`rope_parameters` with
//! `full_attention` and `sliding_attention` entries, as transformers 5
//! writes them) or as `rope_theta`, `rope_scaling` and
//! `rope_local_base_freq` (hub files).

use serde::Deserialize;
use serde_json::{Map, Value};

use super::gemma2::{GEMMA2, GemmaDefaults, gemma, layout};
use super::keys::{SlidingRule, keys, param, rope};
use super::llama::{Defaults, shape};
use super::spec::FamilySpec;
use crate::Result;
use crate::hf::config::Raw;
use crate::lm::config::{Family, LmConfig, Rope};

pub(super) static SPEC: FamilySpec = FamilySpec {
    model_type: "gemma3_text",
    config,
    layout,
};

/// `Gemma3TextConfig`'s defaults.
const GEMMA3: Defaults = Defaults {
    max_positions: 131_072,
    vocab_size: 262_208,
    ..GEMMA2
};

/// The keys of Gemma 3's two rotary embeddings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct RopeKeys {
    rope_theta: Raw<f64>,
    rope_local_base_freq: Raw<f64>,
    rope_scaling: Raw<Map<String, Value>>,
    rope_parameters: Raw<Map<String, Value>>,
}

fn config(json: &Value, family: Family) -> Result<LmConfig> {
    let mut config = shape(json, family, &GEMMA3)?;
    let (full, sliding) = ropes(json, &config)?;
    config.rope = Some(full);
    config.features.sliding_rope = Some(sliding);
    config.features.qk_norm = true;
    gemma(
        json,
        config,
        GemmaDefaults {
            attention_softcap: None,
            final_softcap: None,
            sliding: SlidingRule::Alternating {
                pattern: 6,
                read_pattern: true,
            },
        },
    )
}

/// The full layers' and the sliding-window layers' rotary embeddings, as
/// `Gemma3TextConfig.convert_rope_params_to_dict` gathers them: each
/// layer type's entry of `rope_parameters` (`rope_scaling` merged into
/// the full layers'), its `rope_theta` defaulting to the top-level
/// `rope_theta` (1e6) for the full layers and `rope_local_base_freq`
/// (1e4) for the sliding ones.
fn ropes(json: &Value, config: &LmConfig) -> Result<(Rope, Rope)> {
    let k: RopeKeys = keys(json)?;
    let parameters = k
        .rope_parameters
        .get("rope_parameters")?
        .unwrap_or_default();
    let entry = |layer_type: &str| -> Result<Map<String, Value>> {
        match parameters.get(layer_type) {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(entry)) => Ok(entry.clone()),
            Some(other) => Err(crate::hf::config::invalid(
                &format!("rope_parameters.{layer_type}"),
                other,
                "expected an object",
            )),
        }
    };
    let mut full = entry("full_attention")?;
    if let Some(scaling) = k.rope_scaling.get("rope_scaling")? {
        full.extend(scaling);
    }
    let sliding = entry("sliding_attention")?;
    let full_theta = match param(&full, "rope_theta")? {
        Some(theta) => theta,
        None => k.rope_theta.or("rope_theta", 1_000_000.0)?,
    };
    let sliding_theta = match param(&sliding, "rope_theta")? {
        Some(theta) => theta,
        None => k
            .rope_local_base_freq
            .or("rope_local_base_freq", 10_000.0)?,
    };
    let max = Some(config.max_positions);
    Ok((
        rope(&full, full_theta, 1.0, config.head_dim, max)?,
        rope(&sliding, sliding_theta, 1.0, config.head_dim, max)?,
    ))
}
