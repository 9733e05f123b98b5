//! A vision transformer's configuration, read from a Hugging Face
//! `config.json` with transformers' defaults for the keys it leaves out.

use std::path::Path;

use modelbin_format::io::source::{self, JsonCaps};
use serde::Deserialize;
use serde_json::Value;

use crate::Result;
use crate::hf::config::{MAX_COUNT, Raw, invalid};

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

/// The keys of a vision tower's configuration, as transformers names them
/// in `Dinov2Config`, `Dinov2WithRegistersConfig`, `CLIPVisionConfig` and
/// `SiglipVisionConfig` (the same names in all four; a full CLIP or SigLIP
/// model nests them under `vision_config`). Other keys are passed over.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(default)]
struct RawTower {
    hidden_size: Raw<u64>,
    num_attention_heads: Raw<u64>,
    num_channels: Raw<u64>,
    num_hidden_layers: Raw<u64>,
    patch_size: Raw<u64>,
    image_size: Raw<u64>,
    /// CLIP and SigLIP: the MLP's width.
    intermediate_size: Raw<u64>,
    hidden_act: Raw<String>,
    layer_norm_eps: Raw<f64>,
    /// DINOv2: the MLP's width over `hidden_size`.
    mlp_ratio: Raw<f64>,
    /// DINOv2: the SwiGLU MLP of DINOv2-giant.
    use_swiglu_ffn: Raw<bool>,
    /// DINOv2: whether the query, key and value projections have biases.
    qkv_bias: Raw<bool>,
    /// DINOv2 with registers.
    num_register_tokens: Raw<u64>,
}

/// A whole `config.json`: the model type, and the tower's keys at the top
/// (a vision tower's own configuration) or under `vision_config` (a full
/// CLIP or SigLIP model, beside its text tower).
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(default)]
struct RawConfig {
    model_type: Raw<String>,
    vision_config: Raw<serde_json::Map<String, Value>>,
    #[serde(flatten)]
    tower: RawTower,
}

/// The family a `config.json` `model_type` names, and the prefix of its
/// vision tower's tensors (`vision_model.` inside a full CLIP or SigLIP
/// model).
pub(crate) fn vision_family_of(model_type: &str) -> Option<(Family, &'static str)> {
    Some(match model_type {
        "dinov2" | "dinov2_with_registers" => (Family::Dinov2, ""),
        "clip_vision_model" => (Family::Clip, ""),
        "siglip_vision_model" => (Family::Siglip, ""),
        "clip" => (Family::Clip, "vision_model."),
        "siglip" => (Family::Siglip, "vision_model."),
        _ => return None,
    })
}

/// What `model_type` must name.
const MODEL_TYPES: &str = "expected a vision transformer: dinov2, dinov2_with_registers, \
                           clip, clip_vision_model, siglip or siglip_vision_model";

impl VitConfig {
    /// Reads `dir/config.json`.
    pub(crate) fn read(dir: &Path) -> Result<VitConfig> {
        let path = dir.join("config.json");
        let json = source::read_json(&path, "a model configuration file", JsonCaps::CONFIG)?;
        VitConfig::parse(&json)
    }

    /// The vision tower `json` (a whole `config.json`) describes.
    pub(crate) fn parse(json: &Value) -> Result<VitConfig> {
        // Checked first: serde would read an array's items as the fields
        // in order.
        if !json.is_object() {
            return Err(invalid("model_type", &Value::Null, MODEL_TYPES));
        }
        // Every key reads as a `Raw`, which takes any JSON: an error here
        // would be serde's own.
        RawConfig::deserialize(json)
            .map_err(|e| invalid("model_type", &json["model_type"], &e.to_string()))?
            .validate()
    }
}

impl RawConfig {
    /// The configuration, with transformers' defaults for the keys left
    /// out, once the rules hold: a known model type, counts from 1 to
    /// [`MAX_COUNT`], heads that divide the width, RGB input, a supported
    /// MLP and activation, a LayerNorm epsilon in (0, 1), images no smaller
    /// than a patch.
    ///
    /// # Errors
    /// [`ModelError::InvalidMetadata`] naming the first key that breaks a
    /// rule, with its value.
    fn validate(self) -> Result<VitConfig> {
        let model_type = self.model_type.get("model_type")?;
        let model_type = model_type.as_deref();
        let Some((family, prefix)) = model_type.and_then(vision_family_of) else {
            return Err(invalid("model_type", self.model_type.json(), MODEL_TYPES));
        };
        let key = |name: &str| {
            if prefix.is_empty() {
                name.to_owned()
            } else {
                format!("vision_config.{name}")
            }
        };
        let tower = if prefix.is_empty() {
            self.tower
        } else {
            // Checked as an object first: an array would have filled the
            // fields in order.
            match self.vision_config.get("vision_config")? {
                Some(nested) => RawTower::deserialize(Value::Object(nested))
                    .map_err(|e| invalid("vision_config", &Value::Null, &e.to_string()))?,
                None => RawTower::default(),
            }
        };
        // transformers' defaults for each family (ViT-B).
        let (patch_default, act_default, eps_default) = match model_type {
            Some("dinov2") => (14, "gelu", 1e-6),
            _ => match family {
                Family::Dinov2 => (16, "gelu", 1e-6),
                Family::Clip => (32, "quick_gelu", 1e-5),
                Family::Siglip => (16, "gelu_pytorch_tanh", 1e-6),
            },
        };
        let hidden = tower.hidden_size.count(&key("hidden_size"), 768)?;
        let heads = tower
            .num_attention_heads
            .count(&key("num_attention_heads"), 12)?;
        if hidden % heads != 0 {
            return Err(invalid(
                &key("num_attention_heads"),
                tower.num_attention_heads.json(),
                &format!("does not divide hidden_size {hidden}"),
            ));
        }
        if tower.num_channels.count(&key("num_channels"), 3)? != 3 {
            return Err(invalid(
                &key("num_channels"),
                tower.num_channels.json(),
                "only RGB (3 channels) is supported",
            ));
        }
        let intermediate = match family {
            Family::Dinov2 => {
                if tower.use_swiglu_ffn.or(&key("use_swiglu_ffn"), false)? {
                    return Err(invalid(
                        &key("use_swiglu_ffn"),
                        tower.use_swiglu_ffn.json(),
                        "the SwiGLU MLP (DINOv2-giant) is not supported",
                    ));
                }
                let ratio = tower.mlp_ratio.number(
                    &key("mlp_ratio"),
                    4.0,
                    |r| r > 0.0 && r <= 64.0,
                    "expected a number above 0",
                )?;
                // transformers' int(hidden_size * mlp_ratio).
                ((hidden as f64 * ratio) as usize).max(1)
            }
            Family::Clip | Family::Siglip => tower
                .intermediate_size
                .count(&key("intermediate_size"), 3072)?,
        };
        let hidden_act = tower
            .hidden_act
            .or(&key("hidden_act"), act_default.to_owned())?;
        let activation = match hidden_act.as_str() {
            "gelu" => Activation::GeluErf,
            "gelu_pytorch_tanh" | "gelu_new" => Activation::GeluTanh,
            "quick_gelu" => Activation::QuickGelu,
            _ => {
                return Err(invalid(
                    &key("hidden_act"),
                    tower.hidden_act.json(),
                    "expected gelu, gelu_pytorch_tanh, gelu_new or quick_gelu",
                ));
            }
        };
        let eps = tower.layer_norm_eps.number(
            &key("layer_norm_eps"),
            eps_default,
            |e| e > 0.0 && e < 1.0,
            "expected a number in (0, 1)",
        )?;
        let with_registers = model_type == Some("dinov2_with_registers");
        let registers = if with_registers {
            tower
                .num_register_tokens
                .integer_in(&key("num_register_tokens"), 4, 0, MAX_COUNT)?
        } else {
            0
        };
        let config = VitConfig {
            family,
            prefix,
            hidden,
            layers: tower
                .num_hidden_layers
                .count(&key("num_hidden_layers"), 12)?,
            heads,
            intermediate,
            patch: tower.patch_size.count(&key("patch_size"), patch_default)?,
            image_size: tower.image_size.count(&key("image_size"), 224)?,
            eps: eps as f32,
            activation,
            registers,
            qkv_bias: family != Family::Dinov2 || tower.qkv_bias.or(&key("qkv_bias"), true)?,
            antialiased_positions: with_registers,
        };
        if config.image_size < config.patch {
            return Err(invalid(
                &key("image_size"),
                tower.image_size.json(),
                &format!("smaller than patch_size {}", config.patch),
            ));
        }
        Ok(config)
    }
}

impl VitConfig {
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
