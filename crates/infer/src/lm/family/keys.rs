//! The readers of `config.json` keys the families share: the common keys
//! (tied output, special ids), epsilons, activation names, the RoPE
//! parameters in both layouts (the top-level `rope_theta` /
//! `rope_scaling` of hub files, and transformers 5's `rope_parameters`),
//! and which layers slide (`sliding_window`, `layer_types`).

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::hf::config::{Nullable, Raw, invalid};
use crate::lm::config::{Activation, Rope, RopeScaling};
use crate::{LmError, Result};

/// The largest vocabulary or context a configuration may give (Llama 3
/// has 128,256 tokens and 131,072 positions).
pub(crate) const MAX_TABLE: u64 = 1 << 22;

/// Reads the keys `K` from a whole `config.json` (an object: checked by
/// `family::parse`). Keys of `K` are [`Raw`] values, so only a
/// value's type can fail, and that when the family reads it.
pub(crate) fn keys<K: serde::de::DeserializeOwned>(json: &Value) -> Result<K> {
    K::deserialize(json).map_err(|e| invalid("", &Value::Null, &e.to_string()))
}

/// The keys every family reads besides its shape: whether the output
/// projection is tied, and the special token ids.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct CommonKeys {
    tie_word_embeddings: Raw<bool>,
    bos_token_id: Raw<u64>,
    eos_token_id: Raw<Value>,
}

/// transformers' defaults for a family's common keys.
pub(crate) struct CommonDefaults {
    /// `tie_word_embeddings`.
    pub tie: bool,
    /// `bos_token_id`.
    pub bos: Option<u32>,
    /// `eos_token_id`.
    pub eos: Option<u32>,
}

/// The common keys' values: (tied, BOS, EOS ids).
pub(crate) fn common(
    json: &Value,
    defaults: CommonDefaults,
) -> Result<(bool, Option<u32>, Vec<u32>)> {
    let keys: CommonKeys = keys(json)?;
    let tie = keys
        .tie_word_embeddings
        .or("tie_word_embeddings", defaults.tie)?;
    let bos = match keys.bos_token_id.get("bos_token_id")? {
        None => defaults.bos,
        Some(_) => Some(token_id("bos_token_id", keys.bos_token_id.json())?),
    };
    let eos = match keys.eos_token_id.json() {
        Value::Null => defaults.eos.into_iter().collect(),
        Value::Array(ids) => ids
            .iter()
            .map(|id| token_id("eos_token_id", id))
            .collect::<Result<_>>()?,
        id => vec![token_id("eos_token_id", id)?],
    };
    Ok((tie, bos, eos))
}

/// A token id from the JSON value (a number below 2^32).
fn token_id(key: &str, json: &Value) -> Result<u32> {
    json.as_u64()
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| invalid(key, json, "expected a token id"))
}

/// `hidden / heads`, when the heads divide it.
pub(crate) fn divided(hidden: usize, heads: usize) -> Result<usize> {
    if !hidden.is_multiple_of(heads) {
        return Err(LmError::HeadsDoNotDivide { hidden, heads }.into());
    }
    Ok(hidden / heads)
}

/// A norm's epsilon: `raw` under `key`, `default` when missing.
pub(crate) fn epsilon(raw: &Raw<f64>, key: &str, default: f64) -> Result<f32> {
    raw.number(
        key,
        default,
        |e| e > 0.0 && e < 1.0,
        "expected a number in (0, 1)",
    )
    .map(|e| e as f32)
}

/// The activation named by `raw` (`default` when missing).
pub(crate) fn activation(
    raw: &Raw<String>,
    key: &'static str,
    default: &str,
) -> Result<Activation> {
    let name = raw.or(key, default.to_owned())?;
    Ok(match name.as_str() {
        "gelu" => Activation::GeluErf,
        "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Activation::GeluTanh,
        "silu" | "swish" => Activation::Silu,
        "relu" => Activation::Relu,
        _ => return Err(LmError::UnsupportedActivation { key, name }.into()),
    })
}

/// The RoPE parameters as transformers gathers them: `rope_scaling`
/// when it is given, else `rope_parameters`, else nothing; each must be an
/// object.
pub(crate) fn rope_parameters(
    rope_scaling: &Raw<Map<String, Value>>,
    rope_parameters: &Raw<Map<String, Value>>,
) -> Result<Map<String, Value>> {
    let scaling = rope_scaling.get("rope_scaling")?;
    let parameters = rope_parameters.get("rope_parameters")?;
    Ok(scaling.or(parameters).unwrap_or_default())
}

/// The number `key` of the RoPE parameters, if present.
pub(crate) fn param(params: &Map<String, Value>, key: &'static str) -> Result<Option<f64>> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_f64()
            .filter(|v| v.is_finite() && *v > 0.0)
            .map(Some)
            .ok_or_else(|| {
                LmError::BadRope {
                    key,
                    reason: format!("{value} is not a positive number"),
                }
                .into()
            }),
    }
}

/// The rotary embedding of the RoPE parameters `params`: base `theta`,
/// the fraction `fraction` of each head rotating; `max_positions` is the
/// default of llama3's `original_max_position_embeddings`.
pub(crate) fn rope(
    params: &Map<String, Value>,
    theta: f64,
    fraction: f64,
    head_dim: usize,
    max_positions: Option<usize>,
) -> Result<Rope> {
    let rope_type = match params.get("rope_type").or_else(|| params.get("type")) {
        None | Some(Value::Null) => "default".to_owned(),
        Some(Value::String(t)) => t.clone(),
        Some(other) => other.to_string(),
    };
    let required = |key: &'static str| {
        param(params, key)?.ok_or_else(|| {
            crate::Error::from(LmError::BadRope {
                key,
                reason: format!("missing; the {rope_type} rope type needs it"),
            })
        })
    };
    let scaling = match rope_type.as_str() {
        "default" => RopeScaling::None,
        "linear" => RopeScaling::Linear {
            factor: required("factor")? as f32,
        },
        "llama3" => {
            let original = match (
                param(params, "original_max_position_embeddings")?,
                max_positions,
            ) {
                (Some(v), _) => v,
                (None, Some(max)) => max as f64,
                (None, None) => required("original_max_position_embeddings")?,
            };
            let (low, high) = (required("low_freq_factor")?, required("high_freq_factor")?);
            if high <= low {
                return Err(LmError::BadRope {
                    key: "high_freq_factor",
                    reason: format!("{high} must be above low_freq_factor {low}"),
                }
                .into());
            }
            RopeScaling::Llama3 {
                factor: required("factor")? as f32,
                low: low as f32,
                high: high as f32,
                original: original as f32,
            }
        }
        _ => return Err(LmError::UnsupportedRope { rope_type }.into()),
    };
    if !(theta.is_finite() && theta > 0.0) {
        return Err(LmError::BadRope {
            key: "rope_theta",
            reason: format!("{theta} is not a positive number"),
        }
        .into());
    }
    if !(fraction > 0.0 && fraction <= 1.0) {
        return Err(LmError::BadRope {
            key: "partial_rotary_factor",
            reason: format!("{fraction} is not in (0, 1]"),
        }
        .into());
    }
    // transformers' int(head_size * partial_rotary_factor).
    let dims = (head_dim as f64 * fraction) as usize;
    if dims < 2 || !dims.is_multiple_of(2) {
        return Err(LmError::BadRope {
            key: "partial_rotary_factor",
            reason: format!(
                "{fraction} of a head of {head_dim} rotates {dims} dimensions, not an even count"
            ),
        }
        .into());
    }
    Ok(Rope {
        theta: theta as f32,
        dims,
        scaling,
    })
}

/// transformers' default `sliding_window` in every family that has one.
const DEFAULT_WINDOW: u64 = 4096;

/// The keys of sliding-window attention.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct SlidingKeys {
    sliding_window: Nullable<u64>,
    use_sliding_window: Raw<bool>,
    max_window_layers: Raw<u64>,
    layer_types: Raw<Vec<String>>,
    sliding_window_pattern: Raw<u64>,
}

/// How a family's configuration class decides which layers slide.
pub(crate) enum SlidingRule {
    /// Mistral: every layer, when `sliding_window` is not `null`.
    Every,
    /// Qwen2, Qwen3: the layers `layer_types` says, else those from
    /// `max_window_layers` on; none has a window unless
    /// `use_sliding_window`.
    FromMaxWindowLayers,
    /// Gemma: the layers `layer_types` says, else all but every
    /// `pattern`-th (`sliding_window_pattern` when `read_pattern`).
    Alternating {
        /// The default pattern.
        pattern: u64,
        /// Whether `sliding_window_pattern` is read (Gemma 3).
        read_pattern: bool,
    },
}

/// Each layer's attention window (`None`: full attention) as the family's
/// configuration class gives it under `rule`.
pub(crate) fn sliding_windows(
    json: &Value,
    layers: usize,
    rule: SlidingRule,
) -> Result<Vec<Option<usize>>> {
    let k: SlidingKeys = keys(json)?;
    let mut window = match k
        .sliding_window
        .or("sliding_window", Some(DEFAULT_WINDOW))?
    {
        Some(0) => {
            return Err(invalid(
                "sliding_window",
                &Value::from(0),
                "expected a positive window or null",
            ));
        }
        w => w.map(|w| w as usize),
    };
    let default_types: Vec<bool> = match rule {
        SlidingRule::Every => return Ok(vec![window; layers]),
        SlidingRule::FromMaxWindowLayers => {
            let from = k
                .max_window_layers
                .integer_in("max_window_layers", 28, 0, u64::MAX)?;
            if !k.use_sliding_window.or("use_sliding_window", false)? {
                // transformers sets `sliding_window` to None: a layer
                // `layer_types` makes sliding is then refused below.
                window = None;
            }
            (0..layers).map(|i| window.is_some() && i >= from).collect()
        }
        SlidingRule::Alternating {
            pattern,
            read_pattern,
        } => {
            let pattern = match read_pattern {
                true => k
                    .sliding_window_pattern
                    .count("sliding_window_pattern", pattern)?,
                false => pattern as usize,
            };
            (0..layers).map(|i| (i + 1) % pattern != 0).collect()
        }
    };
    let sliding = match k.layer_types.get("layer_types")? {
        None => default_types,
        Some(types) => {
            if types.len() != layers {
                return Err(invalid(
                    "layer_types",
                    k.layer_types.json(),
                    &format!("expected one entry per layer ({layers})"),
                ));
            }
            types
                .iter()
                .map(|t| match t.as_str() {
                    "full_attention" => Ok(false),
                    "sliding_attention" => Ok(true),
                    wrong => Err(invalid(
                        "layer_types",
                        k.layer_types.json(),
                        &format!("{wrong:?} is neither full_attention nor sliding_attention"),
                    )),
                })
                .collect::<Result<_>>()?
        }
    };
    sliding
        .into_iter()
        .enumerate()
        .map(|(layer, slides)| match (slides, window) {
            (false, _) => Ok(None),
            (true, Some(w)) => Ok(Some(w)),
            (true, None) => Err(LmError::NoSlidingWindow { layer }.into()),
        })
        .collect()
}
