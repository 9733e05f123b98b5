//! A decoder language model's configuration once read: the shape and the
//! block description every family's `config.json` becomes (see
//! [`super::family`], one file per family, for the keys each reads and
//! transformers' defaults), and the readers the families share: the RoPE
//! parameters in both layouts (the top-level `rope_theta` / `rope_scaling`
//! of hub files, and transformers 5's `rope_parameters`), the activation
//! names, the special token ids.

use std::path::Path;

use modelbin_format::io::source::{self, JsonCaps};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::hf::config::{Raw, invalid};
use crate::lm::family::Family;
use crate::{LmError, Result};

/// The largest vocabulary or context a configuration may give (Llama 3
/// has 128,256 tokens and 131,072 positions).
pub(crate) const MAX_TABLE: u64 = 1 << 22;

/// The `model_type` `dir/config.json` names, if it names one (nothing
/// else is read or checked: [`LanguageModel::open`] does). For faces
/// that take either a language model or another model's directory.
///
/// [`LanguageModel::open`]: crate::lm::LanguageModel::open
pub fn model_type_of_dir(dir: &Path) -> Option<String> {
    let path = dir.join("config.json");
    let json = source::read_json(&path, "a model configuration file", JsonCaps::CONFIG).ok()?;
    Some(json.get("model_type")?.as_str()?.to_owned())
}

/// The name SAELens and TransformerLens know the model in `dir` by:
/// `config.json`'s `_name_or_path` when it names one, else the Hub repo of
/// a cache snapshot (`models--ORG--NAME/snapshots/REV` gives `ORG/NAME`),
/// else the directory's own name.
pub fn model_name_of_dir(dir: &Path) -> String {
    let path = dir.join("config.json");
    if let Ok(json) = source::read_json(&path, "a model configuration file", JsonCaps::CONFIG)
        && let Some(name) = json.get("_name_or_path").and_then(|n| n.as_str())
        && !name.is_empty()
    {
        return name.to_owned();
    }
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let names: Vec<String> = dir
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let [.., repo, snapshots, _] = names.as_slice()
        && snapshots == "snapshots"
        && let Some(repo) = repo.strip_prefix("models--")
    {
        return repo.replace("--", "/");
    }
    names.last().cloned().unwrap_or_default()
}

/// The activation of the MLP (of the gate, in a gated MLP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activation {
    /// `gelu`: the exact form, with erf.
    GeluErf,
    /// `gelu_new`, `gelu_pytorch_tanh`: the tanh approximation.
    GeluTanh,
    /// `silu` / `swish`: `x · σ(x)`.
    Silu,
    /// `relu`.
    Relu,
}

/// A block's normalisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NormKind {
    /// LayerNorm: weight and bias, the mean subtracted (GPT-2, NeoX).
    Layer,
    /// RMSNorm: weight only (Llama, Qwen2).
    Rms,
}

/// How the inverse frequencies of the rotary embedding are scaled
/// (transformers' `rope_type`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum RopeScaling {
    /// `default`: none.
    None,
    /// `linear`: every frequency divided by `factor`.
    Linear {
        /// The factor.
        factor: f32,
    },
    /// `llama3`: low frequencies divided by `factor`, high ones kept, a
    /// smooth blend between.
    Llama3 {
        /// The factor.
        factor: f32,
        /// `low_freq_factor`.
        low: f32,
        /// `high_freq_factor`.
        high: f32,
        /// `original_max_position_embeddings`.
        original: f32,
    },
}

/// Rotary position embeddings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rope {
    /// The base (`rope_theta`).
    pub theta: f32,
    /// Leading dimensions of each head that rotate (even).
    pub dims: usize,
    /// The scaling of the frequencies.
    pub scaling: RopeScaling,
}

/// What a decoder language model's `config.json` says, once validated:
/// the shape, and the block as data (norms, biases, MLP, rotary
/// embedding), so the one block of [`super::block`] runs every family.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LmConfig {
    /// The family.
    pub family: Family,
    /// `model_type` as written.
    pub model_type: String,
    /// Width of the residual stream.
    pub hidden: usize,
    /// Transformer blocks.
    pub layers: usize,
    /// Attention (query) heads.
    pub heads: usize,
    /// Key/value heads (fewer than `heads` with grouped-query attention).
    pub kv_heads: usize,
    /// Width of each head.
    pub head_dim: usize,
    /// Width of the MLP's hidden layer.
    pub intermediate: usize,
    /// Tokens in the vocabulary (rows of the embedding).
    pub vocab_size: usize,
    /// The longest sequence the model takes (`n_positions` /
    /// `max_position_embeddings`).
    pub max_positions: usize,
    /// The beginning-of-sequence token, if the configuration names one.
    pub bos_token_id: Option<u32>,
    /// The end-of-sequence tokens (a list in some configurations).
    pub eos_token_ids: Vec<u32>,
    /// Whether the output projection is the token embedding.
    pub tie_word_embeddings: bool,
    pub(crate) activation: Activation,
    /// The norms' kind, before attention, before the MLP and at the end.
    pub(crate) norm: NormKind,
    /// The norms' epsilon.
    pub(crate) norm_eps: f32,
    /// A gated MLP: `act(gate) · up`, the gate and up projections stacked.
    pub(crate) gated_mlp: bool,
    pub(crate) rope: Option<Rope>,
    /// NeoX: attention and MLP read the same input, their outputs added
    /// together to it.
    pub(crate) parallel_residual: bool,
    /// Biases on the query, key and value projections.
    pub(crate) qkv_bias: bool,
    /// A bias on the attention's output projection.
    pub(crate) out_bias: bool,
    /// Biases on the MLP's layers.
    pub(crate) mlp_bias: bool,
    /// GPT-2: the attention scores' scale is divided by the layer's index
    /// plus one.
    pub(crate) scale_by_layer: bool,
    /// GPT-2's `scale_attn_weights`: scores scaled by `1/√head_dim`.
    pub(crate) scale_attention: bool,
}

impl LmConfig {
    /// Reads `dir/config.json`.
    pub(crate) fn read(dir: &Path) -> Result<LmConfig> {
        let path = dir.join("config.json");
        let json = source::read_json(&path, "a model configuration file", JsonCaps::CONFIG)?;
        LmConfig::parse(&json)
    }

    /// The configuration the bytes of a `config.json` describe (JSON held to
    /// the configuration caps, as [`LanguageModel::open`] reads the file).
    ///
    /// ```
    /// use modelbin_infer::lm::LmConfig;
    /// let config = LmConfig::from_json(br#"{"model_type": "gpt2", "n_layer": 2}"#)?;
    /// assert_eq!((config.layers, config.hidden), (2, 768));
    /// assert!(LmConfig::from_json(br#"{"model_type": "gpt2", "n_layer": "2"}"#).is_err());
    /// # Ok::<(), modelbin_infer::Error>(())
    /// ```
    ///
    /// [`LanguageModel::open`]: crate::lm::LanguageModel::open
    pub fn from_json(bytes: &[u8]) -> Result<LmConfig> {
        let json = source::parse_json(
            bytes,
            "config.json",
            "a model configuration file",
            JsonCaps::CONFIG,
        )?;
        LmConfig::parse(&json)
    }

    /// The model `json` (a whole `config.json`) describes: its family's
    /// keys read (each of the right type) with transformers' defaults.
    pub(crate) fn parse(json: &Value) -> Result<LmConfig> {
        // Checked first: serde would read an array's items as the fields
        // in order.
        if !json.is_object() {
            return Err(invalid("", json, "expected a JSON object"));
        }
        let model_type = json
            .get("model_type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(family) = Family::from_model_type(model_type) else {
            return Err(LmError::UnsupportedModelType {
                model_type: model_type.to_owned(),
            }
            .into());
        };
        family.config(json)
    }

    /// Width of the query, key and value rows together.
    pub(crate) fn qkv_width(&self) -> usize {
        (self.heads + 2 * self.kv_heads) * self.head_dim
    }

    /// Width of the MLP's first layer (the gate and up rows together in a
    /// gated MLP).
    pub(crate) fn up_width(&self) -> usize {
        let parts = if self.gated_mlp { 2 } else { 1 };
        parts * self.intermediate
    }
}

/// Reads the keys `K` from a whole `config.json` (an object: checked by
/// [`LmConfig::parse`]). Keys of `K` are [`Raw`] values, so only a
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_come_from_the_config_a_hub_snapshot_or_the_directory() {
        let root = tempfile::tempdir().unwrap();
        let named = root.path().join("mine");
        std::fs::create_dir(&named).unwrap();
        std::fs::write(
            named.join("config.json"),
            r#"{"_name_or_path": "org/model"}"#,
        )
        .unwrap();
        assert_eq!(model_name_of_dir(&named), "org/model");
        std::fs::write(named.join("config.json"), r#"{"_name_or_path": ""}"#).unwrap();
        assert_eq!(model_name_of_dir(&named), "mine");
        let snapshot = root
            .path()
            .join("models--EleutherAI--pythia-70m/snapshots/abc123");
        std::fs::create_dir_all(&snapshot).unwrap();
        assert_eq!(model_name_of_dir(&snapshot), "EleutherAI/pythia-70m");
    }
}
