//! A vision transformer's configuration, read from a Hugging Face
//! `config.json` with transformers' defaults for the keys it leaves out.

use std::path::Path;

use modelbin_format::ModelError;
use modelbin_format::io::source::{self, JsonCaps};
use serde_json::Value;

use crate::Result;

/// The largest count (width, layers, image side...) a configuration may
/// give: far above any real model, low enough that products of a few of
/// them cannot overflow.
const MAX_COUNT: u64 = 1 << 16;

/// A family of vision transformers, by the name saev's `vit_family` gives
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Meta's DINOv2 (`Dinov2Model`, `Dinov2WithRegistersModel`): a CLS
    /// token, optional register tokens, LayerScale, position embeddings
    /// interpolated to the input's patch grid.
    Dinov2,
    /// OpenAI's CLIP vision tower (`CLIPVisionModel`): a CLS token, a
    /// LayerNorm before the first block, quick GELU.
    Clip,
    /// Google's SigLIP vision tower (`SiglipVisionModel`): no CLS token,
    /// tanh-approximated GELU.
    Siglip,
}

impl Family {
    /// The family's name as saev's `vit_family`: `dinov2`, `clip` or
    /// `siglip`.
    pub fn name(&self) -> &'static str {
        match self {
            Family::Dinov2 => "dinov2",
            Family::Clip => "clip",
            Family::Siglip => "siglip",
        }
    }
}

/// The activation of the blocks' MLP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activation {
    /// `gelu`: the exact form, with erf.
    GeluErf,
    /// `gelu_pytorch_tanh` / `gelu_new`: the tanh approximation.
    GeluTanh,
    /// `quick_gelu`: `x · σ(1.702 x)`.
    QuickGelu,
}

/// What the model directory's `config.json` says of the vision tower.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct VitConfig {
    pub family: Family,
    /// Prefix of the vision tower's tensor names: `vision_model.` in a
    /// full CLIP or SigLIP model (beside its text tower), else empty.
    pub prefix: &'static str,
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub patch: usize,
    /// The side of the square images the position embeddings were made
    /// for.
    pub image_size: usize,
    pub eps: f32,
    pub activation: Activation,
    /// Register tokens (DINOv2 with registers), after the CLS token.
    pub registers: usize,
    /// Whether the query, key and value projections have biases.
    pub qkv_bias: bool,
    /// Whether position embeddings are resized with antialiasing
    /// (transformers' DINOv2 with registers), not plain bicubic (DINOv2).
    pub antialiased_positions: bool,
}

/// `config.json {key}` = `value` is not usable, because `reason`.
pub(crate) fn invalid(key: &str, value: &Value, reason: &str) -> crate::Error {
    modelbin_format::Error::Model(ModelError::InvalidMetadata {
        key: format!("config.json {key}"),
        value: value.to_string(),
        reason: reason.into(),
    })
    .into()
}

impl VitConfig {
    /// Reads `dir/config.json`.
    pub(crate) fn read(dir: &Path) -> Result<VitConfig> {
        let path = dir.join("config.json");
        let json = source::read_json(&path, "a model configuration file", JsonCaps::CONFIG)?;
        VitConfig::parse(&json)
    }

    /// The vision tower `json` (a whole `config.json`) describes.
    pub(crate) fn parse(json: &Value) -> Result<VitConfig> {
        let model_type = &json["model_type"];
        let (family, prefix, tower) = match model_type.as_str() {
            Some("dinov2" | "dinov2_with_registers") => (Family::Dinov2, "", json),
            Some("clip_vision_model") => (Family::Clip, "", json),
            Some("siglip_vision_model") => (Family::Siglip, "", json),
            Some("clip") => (Family::Clip, "vision_model.", &json["vision_config"]),
            Some("siglip") => (Family::Siglip, "vision_model.", &json["vision_config"]),
            _ => {
                return Err(invalid(
                    "model_type",
                    model_type,
                    "expected a vision transformer: dinov2, dinov2_with_registers, \
                     clip, clip_vision_model, siglip or siglip_vision_model",
                ));
            }
        };
        let key = |name: &str| {
            if prefix.is_empty() {
                name.to_owned()
            } else {
                format!("vision_config.{name}")
            }
        };
        if !(tower.is_object() || tower.is_null()) {
            return Err(invalid(&key(""), tower, "expected an object"));
        }
        let count = |name: &str, default: u64| -> Result<usize> {
            match &tower[name] {
                Value::Null => Ok(default as usize),
                value => value
                    .as_u64()
                    .filter(|n| (1..=MAX_COUNT).contains(n))
                    .map(|n| n as usize)
                    .ok_or_else(|| {
                        invalid(
                            &key(name),
                            value,
                            &format!("expected an integer from 1 to {MAX_COUNT}"),
                        )
                    }),
            }
        };
        // transformers' defaults for each family (ViT-B).
        let (patch_default, act_default, eps_default) = match family {
            Family::Dinov2 if model_type == "dinov2" => (14, "gelu", 1e-6),
            Family::Dinov2 => (16, "gelu", 1e-6),
            Family::Clip => (32, "quick_gelu", 1e-5),
            Family::Siglip => (16, "gelu_pytorch_tanh", 1e-6),
        };
        let hidden = count("hidden_size", 768)?;
        let heads = count("num_attention_heads", 12)?;
        if hidden % heads != 0 {
            return Err(invalid(
                &key("num_attention_heads"),
                &tower["num_attention_heads"],
                &format!("does not divide hidden_size {hidden}"),
            ));
        }
        let channels = count("num_channels", 3)?;
        if channels != 3 {
            return Err(invalid(
                &key("num_channels"),
                &tower["num_channels"],
                "only RGB (3 channels) is supported",
            ));
        }
        let intermediate = match family {
            Family::Dinov2 => {
                if tower["use_swiglu_ffn"].as_bool() == Some(true) {
                    return Err(invalid(
                        &key("use_swiglu_ffn"),
                        &tower["use_swiglu_ffn"],
                        "the SwiGLU MLP (DINOv2-giant) is not supported",
                    ));
                }
                let ratio = &tower["mlp_ratio"];
                let ratio = if ratio.is_null() {
                    4.0
                } else {
                    ratio
                        .as_f64()
                        .filter(|r| *r > 0.0 && *r <= 64.0)
                        .ok_or_else(|| {
                            invalid(&key("mlp_ratio"), ratio, "expected a number above 0")
                        })?
                };
                // transformers' int(hidden_size * mlp_ratio).
                ((hidden as f64 * ratio) as usize).max(1)
            }
            Family::Clip | Family::Siglip => count("intermediate_size", 3072)?,
        };
        let act = &tower["hidden_act"];
        let activation = match act.as_str().unwrap_or(act_default) {
            "gelu" => Activation::GeluErf,
            "gelu_pytorch_tanh" | "gelu_new" => Activation::GeluTanh,
            "quick_gelu" => Activation::QuickGelu,
            _ => {
                return Err(invalid(
                    &key("hidden_act"),
                    act,
                    "expected gelu, gelu_pytorch_tanh, gelu_new or quick_gelu",
                ));
            }
        };
        let eps_value = &tower["layer_norm_eps"];
        let eps = if eps_value.is_null() {
            eps_default
        } else {
            eps_value
                .as_f64()
                .filter(|e| *e > 0.0 && *e < 1.0)
                .ok_or_else(|| {
                    invalid(
                        &key("layer_norm_eps"),
                        eps_value,
                        "expected a number in (0, 1)",
                    )
                })?
        };
        let registers = match model_type.as_str() {
            Some("dinov2_with_registers") => match &tower["num_register_tokens"] {
                Value::Null => 4,
                value => value.as_u64().filter(|n| *n <= MAX_COUNT).ok_or_else(|| {
                    invalid(&key("num_register_tokens"), value, "expected an integer")
                })? as usize,
            },
            _ => 0,
        };
        let config = VitConfig {
            family,
            prefix,
            hidden,
            layers: count("num_hidden_layers", 12)?,
            heads,
            intermediate,
            patch: count("patch_size", patch_default)?,
            image_size: count("image_size", 224)?,
            eps: eps as f32,
            activation,
            registers,
            qkv_bias: family != Family::Dinov2 || tower["qkv_bias"].as_bool() != Some(false),
            antialiased_positions: model_type == "dinov2_with_registers",
        };
        if config.image_size < config.patch {
            return Err(invalid(
                &key("image_size"),
                &tower["image_size"],
                &format!("smaller than patch_size {}", config.patch),
            ));
        }
        Ok(config)
    }

    /// The patch grid (rows, columns) of the images the position
    /// embeddings were made for.
    pub(crate) fn base_grid(&self) -> (usize, usize) {
        let side = self.image_size / self.patch;
        (side, side)
    }

    /// Whether a CLS token leads each sequence.
    pub(crate) fn has_cls(&self) -> bool {
        self.family != Family::Siglip
    }
}
