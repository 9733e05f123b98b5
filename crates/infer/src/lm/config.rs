//! A decoder language model's configuration, read from a Hugging Face
//! `config.json` with transformers' defaults for the keys it leaves out,
//! per family: the keys each family's configuration class reads, under
//! their own names (GPT-2's `n_embd`, the others' `hidden_size`), and the
//! RoPE parameters in both layouts (the top-level `rope_theta` /
//! `rope_scaling` of hub files, and transformers 5's `rope_parameters`).

use std::path::Path;

use modelbin_format::io::source::{self, JsonCaps};
use serde::Deserialize;
use serde_json::Value;

use crate::hf::config::{Raw, invalid};
use crate::{LmError, Result};

/// The largest vocabulary or context a configuration may give (Llama 3
/// has 128,256 tokens and 131,072 positions).
const MAX_TABLE: u64 = 1 << 22;

/// A family of decoder language models, by `config.json`'s `model_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// OpenAI's GPT-2 (`gpt2`): learned positions, LayerNorm, GELU MLP,
    /// Conv1D weights stored `[in, out]`.
    Gpt2,
    /// EleutherAI's GPT-NeoX (`gpt_neox`, Pythia): partial rotary
    /// embeddings, parallel or sequential residual, fused per-head QKV.
    GptNeox,
    /// Meta's Llama (`llama`; TinyLlama, SmolLM, Llama 3.x): RMSNorm, RoPE
    /// with optional scaling, SwiGLU, grouped-query attention.
    Llama,
    /// Alibaba's Qwen2 (`qwen2`): Llama with biases on the query, key and
    /// value projections.
    Qwen2,
}

impl Family {
    /// Every family.
    pub const ALL: [Family; 4] = [Family::Gpt2, Family::GptNeox, Family::Llama, Family::Qwen2];

    /// The family whose `model_type` is `model_type`.
    pub fn from_model_type(model_type: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == model_type)
    }

    /// The family's `model_type`.
    pub fn name(&self) -> &'static str {
        match self {
            Family::Gpt2 => "gpt2",
            Family::GptNeox => "gpt_neox",
            Family::Llama => "llama",
            Family::Qwen2 => "qwen2",
        }
    }
}

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

/// What a decoder language model's `config.json` says, once validated.
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
    /// LayerNorm (GPT-2, NeoX) or RMSNorm (Llama, Qwen2) epsilon.
    pub(crate) norm_eps: f32,
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

/// The keys of the four families' configuration classes (`GPT2Config`,
/// `GPTNeoXConfig`, `LlamaConfig`, `Qwen2Config`); each family reads its
/// own. Other keys are passed over.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct RawConfig {
    model_type: Raw<String>,
    vocab_size: Raw<u64>,
    // GPT-2's names.
    n_positions: Raw<u64>,
    n_embd: Raw<u64>,
    n_layer: Raw<u64>,
    n_head: Raw<u64>,
    n_inner: Raw<u64>,
    activation_function: Raw<String>,
    layer_norm_epsilon: Raw<f64>,
    scale_attn_weights: Raw<bool>,
    scale_attn_by_inverse_layer_idx: Raw<bool>,
    add_cross_attention: Raw<bool>,
    // The others'.
    hidden_size: Raw<u64>,
    num_hidden_layers: Raw<u64>,
    num_attention_heads: Raw<u64>,
    num_key_value_heads: Raw<u64>,
    head_dim: Raw<u64>,
    intermediate_size: Raw<u64>,
    hidden_act: Raw<String>,
    max_position_embeddings: Raw<u64>,
    layer_norm_eps: Raw<f64>,
    rms_norm_eps: Raw<f64>,
    attention_bias: Raw<bool>,
    mlp_bias: Raw<bool>,
    use_parallel_residual: Raw<bool>,
    rotary_pct: Raw<f64>,
    rotary_emb_base: Raw<f64>,
    rope_theta: Raw<f64>,
    partial_rotary_factor: Raw<f64>,
    rope_scaling: Raw<serde_json::Map<String, Value>>,
    rope_parameters: Raw<serde_json::Map<String, Value>>,
    use_sliding_window: Raw<bool>,
    max_window_layers: Raw<u64>,
    layer_types: Raw<Vec<String>>,
    // All.
    tie_word_embeddings: Raw<bool>,
    bos_token_id: Raw<u64>,
    eos_token_id: Raw<Value>,
}

impl LmConfig {
    /// Reads `dir/config.json`.
    pub(crate) fn read(dir: &Path) -> Result<LmConfig> {
        let path = dir.join("config.json");
        let json = source::read_json(&path, "a model configuration file", JsonCaps::CONFIG)?;
        LmConfig::parse(&json)
    }

    /// The model `json` (a whole `config.json`) describes.
    pub(crate) fn parse(json: &Value) -> Result<LmConfig> {
        // Checked first: serde would read an array's items as the fields
        // in order.
        if !json.is_object() {
            return Err(invalid("", json, "expected a JSON object"));
        }
        RawConfig::deserialize(json)
            .map_err(|e| invalid("", &Value::Null, &e.to_string()))?
            .validate()
    }

    /// Width of the query, key and value rows together.
    pub(crate) fn qkv_width(&self) -> usize {
        (self.heads + 2 * self.kv_heads) * self.head_dim
    }
}

/// A token id from the JSON value (a number below 2^32).
fn token_id(key: &str, json: &Value) -> Result<u32> {
    json.as_u64()
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| invalid(key, json, "expected a token id"))
}

impl RawConfig {
    /// The configuration, with transformers' defaults for the keys left
    /// out, once the rules hold.
    fn validate(self) -> Result<LmConfig> {
        let model_type = self.model_type.value.clone().unwrap_or_default();
        let Some(family) = Family::from_model_type(&model_type) else {
            return Err(LmError::UnsupportedModelType { model_type }.into());
        };
        let eps = |raw: &Raw<f64>, key: &str, default: f64| {
            raw.number(
                key,
                default,
                |e| e > 0.0 && e < 1.0,
                "expected a number in (0, 1)",
            )
            .map(|e| e as f32)
        };
        let flag = |raw: &Raw<bool>, default: bool| raw.value.unwrap_or(default);
        let config = match family {
            Family::Gpt2 => {
                if flag(&self.add_cross_attention, false) {
                    return Err(LmError::CrossAttention.into());
                }
                let hidden = self.n_embd.count("n_embd", 768)?;
                let heads = self.n_head.count("n_head", 12)?;
                let head_dim = divided(hidden, heads)?;
                LmConfig {
                    family,
                    model_type,
                    hidden,
                    layers: self.n_layer.count("n_layer", 12)?,
                    heads,
                    kv_heads: heads,
                    head_dim,
                    intermediate: self.n_inner.count("n_inner", 4 * hidden as u64)?,
                    vocab_size: self
                        .vocab_size
                        .count_up_to("vocab_size", 50257, MAX_TABLE)?,
                    max_positions: self
                        .n_positions
                        .count_up_to("n_positions", 1024, MAX_TABLE)?,
                    bos_token_id: None,
                    eos_token_ids: Vec::new(),
                    tie_word_embeddings: flag(&self.tie_word_embeddings, true),
                    activation: activation(
                        &self.activation_function,
                        "activation_function",
                        "gelu_new",
                    )?,
                    norm_eps: eps(&self.layer_norm_epsilon, "layer_norm_epsilon", 1e-5)?,
                    rope: None,
                    parallel_residual: false,
                    qkv_bias: true,
                    out_bias: true,
                    mlp_bias: true,
                    scale_by_layer: flag(&self.scale_attn_by_inverse_layer_idx, false),
                    scale_attention: flag(&self.scale_attn_weights, true),
                }
            }
            Family::GptNeox => {
                let hidden = self.hidden_size.count("hidden_size", 6144)?;
                let heads = self.num_attention_heads.count("num_attention_heads", 64)?;
                let head_dim = divided(hidden, heads)?;
                let bias = flag(&self.attention_bias, true);
                LmConfig {
                    family,
                    model_type,
                    hidden,
                    layers: self.num_hidden_layers.count("num_hidden_layers", 44)?,
                    heads,
                    kv_heads: heads,
                    head_dim,
                    intermediate: self.intermediate_size.count("intermediate_size", 24576)?,
                    vocab_size: self
                        .vocab_size
                        .count_up_to("vocab_size", 50432, MAX_TABLE)?,
                    max_positions: self.max_position_embeddings.count_up_to(
                        "max_position_embeddings",
                        2048,
                        MAX_TABLE,
                    )?,
                    bos_token_id: None,
                    eos_token_ids: Vec::new(),
                    tie_word_embeddings: flag(&self.tie_word_embeddings, false),
                    activation: activation(&self.hidden_act, "hidden_act", "gelu")?,
                    norm_eps: eps(&self.layer_norm_eps, "layer_norm_eps", 1e-5)?,
                    rope: Some(self.neox_rope(head_dim)?),
                    parallel_residual: flag(&self.use_parallel_residual, true),
                    qkv_bias: bias,
                    out_bias: bias,
                    mlp_bias: true,
                    scale_by_layer: false,
                    scale_attention: true,
                }
            }
            Family::Llama | Family::Qwen2 => {
                let qwen = family == Family::Qwen2;
                let hidden = self.hidden_size.count("hidden_size", 4096)?;
                let heads = self.num_attention_heads.count("num_attention_heads", 32)?;
                let kv_heads = self
                    .num_key_value_heads
                    .count("num_key_value_heads", heads as u64)?;
                if !heads.is_multiple_of(kv_heads) {
                    return Err(LmError::KvHeadsDoNotDivide { heads, kv_heads }.into());
                }
                let head_dim = if self.head_dim.json.is_null() {
                    divided(hidden, heads)?
                } else {
                    self.head_dim.count("head_dim", 0)?
                };
                if qwen {
                    self.check_sliding_window()?;
                }
                let max_positions = self.max_position_embeddings.count_up_to(
                    "max_position_embeddings",
                    if qwen { 32768 } else { 2048 },
                    MAX_TABLE,
                )?;
                let attention_bias = !qwen && flag(&self.attention_bias, false);
                LmConfig {
                    family,
                    model_type,
                    hidden,
                    layers: self.num_hidden_layers.count("num_hidden_layers", 32)?,
                    heads,
                    kv_heads,
                    head_dim,
                    intermediate: self
                        .intermediate_size
                        .count("intermediate_size", if qwen { 22016 } else { 11008 })?,
                    vocab_size: self.vocab_size.count_up_to(
                        "vocab_size",
                        if qwen { 151936 } else { 32000 },
                        MAX_TABLE,
                    )?,
                    max_positions,
                    bos_token_id: None,
                    eos_token_ids: Vec::new(),
                    tie_word_embeddings: flag(&self.tie_word_embeddings, false),
                    activation: activation(&self.hidden_act, "hidden_act", "silu")?,
                    norm_eps: eps(&self.rms_norm_eps, "rms_norm_eps", 1e-6)?,
                    rope: Some(self.llama_rope(head_dim, max_positions)?),
                    parallel_residual: false,
                    qkv_bias: qwen || attention_bias,
                    out_bias: attention_bias,
                    mlp_bias: !qwen && flag(&self.mlp_bias, false),
                    scale_by_layer: false,
                    scale_attention: true,
                }
            }
        };
        // transformers' defaults for each family (Qwen2 names none).
        let (default_bos, default_eos) = match family {
            Family::Gpt2 => (Some(50256), Some(50256)),
            Family::GptNeox => (Some(0), Some(2)),
            Family::Llama => (Some(1), Some(2)),
            Family::Qwen2 => (None, None),
        };
        let bos_token_id = if self.bos_token_id.json.is_null() {
            default_bos
        } else {
            Some(token_id("bos_token_id", &self.bos_token_id.json)?)
        };
        let eos_json = &self.eos_token_id.json;
        let eos_token_ids = match eos_json {
            Value::Null => default_eos.into_iter().collect(),
            Value::Array(ids) => ids
                .iter()
                .map(|id| token_id("eos_token_id", id))
                .collect::<Result<_>>()?,
            id => vec![token_id("eos_token_id", id)?],
        };
        Ok(LmConfig {
            bos_token_id,
            eos_token_ids,
            ..config
        })
    }

    /// Qwen2's sliding-window layers: refused (transformers gives layers
    /// from `max_window_layers` on sliding-window attention when
    /// `use_sliding_window` is set, or as `layer_types` says).
    fn check_sliding_window(&self) -> Result<()> {
        if let Some(types) = &self.layer_types.value
            && let Some(layer) = types.iter().position(|t| t == "sliding_attention")
        {
            return Err(LmError::SlidingWindow { layer }.into());
        }
        if self.use_sliding_window.value == Some(true) {
            let layer = self.max_window_layers.value.unwrap_or(28) as usize;
            let layers = self.num_hidden_layers.value.unwrap_or(32) as usize;
            if layer < layers {
                return Err(LmError::SlidingWindow { layer }.into());
            }
        }
        Ok(())
    }

    /// The RoPE parameters as transformers gathers them: `rope_scaling`
    /// when it is an object, else `rope_parameters`, else nothing.
    fn rope_dict(&self) -> serde_json::Map<String, Value> {
        self.rope_scaling
            .value
            .clone()
            .or_else(|| self.rope_parameters.value.clone())
            .unwrap_or_default()
    }

    /// GPT-NeoX's rotary embedding: the base from the parameters, else
    /// `rotary_emb_base`, else 10000; the rotating fraction of each head
    /// from the parameters' `partial_rotary_factor`, else `rotary_pct`,
    /// else 0.25 (top-level `rope_theta` and `partial_rotary_factor` are
    /// not read for this family, as in transformers).
    fn neox_rope(&self, head_dim: usize) -> Result<Rope> {
        let params = self.rope_dict();
        let theta = param(&params, "rope_theta")?
            .or(self.rotary_emb_base.value)
            .unwrap_or(10000.0);
        let fraction = param(&params, "partial_rotary_factor")?
            .or(self.rotary_pct.value)
            .unwrap_or(0.25);
        rope(&params, theta, fraction, head_dim, None)
    }

    /// Llama's and Qwen2's rotary embedding: the base from the
    /// parameters, else the top-level `rope_theta`, else 10000; every
    /// dimension of each head rotates.
    fn llama_rope(&self, head_dim: usize, max_positions: usize) -> Result<Rope> {
        let params = self.rope_dict();
        let theta = param(&params, "rope_theta")?
            .or(self.rope_theta.value)
            .unwrap_or(10000.0);
        let fraction = param(&params, "partial_rotary_factor")?
            .or(self.partial_rotary_factor.value)
            .unwrap_or(1.0);
        if fraction != 1.0 {
            return Err(LmError::BadRope {
                key: "partial_rotary_factor",
                reason: format!(
                    "{fraction}: only 1 (every dimension rotates) is supported for this family"
                ),
            }
            .into());
        }
        rope(&params, theta, 1.0, head_dim, Some(max_positions))
    }
}

/// `hidden / heads`, when the heads divide it.
fn divided(hidden: usize, heads: usize) -> Result<usize> {
    if !hidden.is_multiple_of(heads) {
        return Err(LmError::HeadsDoNotDivide { hidden, heads }.into());
    }
    Ok(hidden / heads)
}

/// The activation named by `raw` (`default` when missing).
fn activation(raw: &Raw<String>, key: &'static str, default: &str) -> Result<Activation> {
    let name = match &raw.json {
        Value::Null => default.to_owned(),
        Value::String(name) => name.clone(),
        other => other.to_string(),
    };
    Ok(match name.as_str() {
        "gelu" => Activation::GeluErf,
        "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Activation::GeluTanh,
        "silu" | "swish" => Activation::Silu,
        "relu" => Activation::Relu,
        _ => return Err(LmError::UnsupportedActivation { key, name }.into()),
    })
}

/// The number `key` of the RoPE parameters, if present.
fn param(params: &serde_json::Map<String, Value>, key: &'static str) -> Result<Option<f64>> {
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
fn rope(
    params: &serde_json::Map<String, Value>,
    theta: f64,
    fraction: f64,
    head_dim: usize,
    max_positions: Option<usize>,
) -> Result<Rope> {
    let rope_type = params
        .get("rope_type")
        .or_else(|| params.get("type"))
        .map_or_else(
            || "default".to_owned(),
            |t| t.as_str().map_or_else(|| t.to_string(), str::to_owned),
        );
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
