//! Google DeepMind's Gemma Scope autoencoders: JumpReLU on raw
//! activations (`b_dec` is not subtracted from the input), encoding
//! `z = pre · [pre > θ]` with `pre = x · W_enc + b_enc` (a ReLU first, as
//! SAELens's `JumpReLUSAE` computes it: the thresholds are positive).
//!
//! - **Gemma Scope** (Gemma 2): `params.npz` holding `W_enc [d_in, d_sae]`,
//!   `W_dec [d_sae, d_in]`, `b_enc`, `b_dec`, `threshold` (SAELens renames
//!   any `w_*` to `W_*`). No configuration: as SAELens's
//!   `get_gemma_2_config_from_hf` does with the repository and folder
//!   names, the hook comes from the path (`layer_L` in a folder's name;
//!   a `…-res`, `…-mlp` or `…-att` repository folder, as a Hugging Face
//!   cache names it `models--google--gemma-scope-2b-pt-res`), and the
//!   model from the repository's `2b`, `9b`, `27b` (`-it`). The residual
//!   stream is `blocks.L.hook_resid_post`, the MLP's output
//!   `blocks.L.hook_mlp_out`; attention-head SAEs (`hook_z`) and the
//!   embedding SAEs are refused.
//! - **Gemma Scope 2** (Gemma 3): `params.safetensors` with lower-case
//!   `w_enc`, `w_dec` and `b_enc`, `b_dec`, `threshold`, and `config.json`
//!   (`architecture: "jump_relu"`, `model_name`, `hf_hook_point_in` such as
//!   `model.layers.22.output`). The hook comes from `hf_hook_point_in`:
//!   `model.layers.L.output` is `blocks.L.hook_resid_post`,
//!   `model.layers.L.post_feedforward_layernorm.output` is
//!   `blocks.L.hook_mlp_out` (Gemma's `mlp_out`, after its norm); the
//!   attention's `o_proj.input` (`hook_z`), transcoders (a
//!   `hf_hook_point_out` other than the input, or
//!   `pre_feedforward_layernorm`), affine skip connections
//!   (`affine_connection`, an `affine_skip_connection` tensor) are refused
//!   by name. Without `config.json` the hook comes from the folder's name
//!   (`resid_post`, `mlp_out`, and `layer_L`), as SAELens infers it.

use std::path::Path;

use modelbin_format::io::npz;
use serde::Deserialize;
use serde_json::Value;

use super::files::{TensorFile, WHOLE_FILE, bad, check, finite, read_config};
use super::{Layout, layer_in_path, metadata};
use crate::nn::transpose::transpose;
use crate::sae::{Activation, Io, Sae};
use crate::{Result, SaeError};

/// Gemma Scope's weights file.
pub const NPZ_FILE: &str = "params.npz";
/// Gemma Scope 2's weights file.
pub const SAFETENSORS_FILE: &str = "params.safetensors";
/// Gemma Scope 2's configuration file.
pub const CONFIG_FILE: &str = "config.json";

/// The context SAELens records for Gemma Scope.
const CONTEXT: u64 = 1024;

/// The tensors of a Gemma Scope autoencoder, as stored: `W_enc` is
/// `[d_in, d_sae]`.
struct Stored {
    w_enc: Vec<f32>,
    w_dec: Vec<f32>,
    b_enc: Vec<f32>,
    b_dec: Vec<f32>,
    threshold: Vec<f32>,
    d_in: usize,
    d_sae: usize,
}

impl Stored {
    /// The autoencoder.
    fn into_sae(self) -> Sae<f32> {
        Sae {
            d_in: self.d_in,
            d_sae: self.d_sae,
            activation: Activation::JumpRelu(self.threshold),
            w_enc: transpose(&self.w_enc, self.d_in, self.d_sae),
            b_enc: self.b_enc,
            w_dec: self.w_dec,
            b_dec: self.b_dec,
            io: Io {
                subtract_b_dec: false,
                ..Io::default()
            },
        }
    }
}

/// Reads a Gemma Scope `params.npz` autoencoder in `dir`.
pub fn read_npz(dir: &Path) -> Result<(Sae<f32>, Value)> {
    let path = dir.join(NPZ_FILE);
    let mut arrays = npz::read(&path)?;
    for array in &mut arrays {
        if let Some(rest) = array.name.strip_prefix("w_") {
            array.name = format!("W_{rest}");
        }
    }
    let names = ["W_enc", "W_dec", "b_enc", "b_dec", "threshold"];
    if let Some(other) = arrays
        .iter()
        .find(|a| !names.contains(&a.name.as_str()) && !is_unit_scaling(a))
    {
        return Err(SaeError::UnexpectedTensor {
            path,
            name: other.name.clone(),
            architecture: "jumprelu",
        }
        .into());
    }
    let mut take = |name: &str| -> Result<npz::NpzArray> {
        let at = arrays
            .iter()
            .position(|a| a.name == name)
            .ok_or_else(|| bad(&path, name, "missing"))?;
        Ok(arrays.swap_remove(at))
    };
    let w_enc = take("W_enc")?;
    let [d_in, d_sae] = w_enc.shape[..] else {
        return Err(bad(
            &path,
            "W_enc",
            &format!("has shape {:?} where [d_in, d_sae] is needed", w_enc.shape),
        ));
    };
    let mut get = |name: &str, shape: &[usize]| -> Result<Vec<f32>> {
        let array = take(name)?;
        check(&path, name, &array.shape, shape)?;
        finite(&path, name, array.values)
    };
    let stored = Stored {
        w_dec: get("W_dec", &[d_sae, d_in])?,
        b_enc: get("b_enc", &[d_sae])?,
        b_dec: get("b_dec", &[d_in])?,
        threshold: thresholds(&path, get("threshold", &[d_sae])?)?,
        w_enc: finite(&path, "W_enc", w_enc.values)?,
        d_in,
        d_sae,
    };
    let (model, hook) = hook_of_path(dir, &path)?;
    Ok((
        stored.into_sae(),
        metadata(Layout::GemmaScope, model, hook, CONTEXT),
    ))
}

/// A `scaling_factor` of ones, which SAELens drops.
fn is_unit_scaling(array: &npz::NpzArray) -> bool {
    array.name == "scaling_factor" && array.values.iter().all(|&v| v == 1.0)
}

/// The thresholds, refused when one is negative (a JumpReLU threshold is
/// positive; SAELens clamps it at zero in training).
fn thresholds(path: &Path, threshold: Vec<f32>) -> Result<Vec<f32>> {
    match threshold.iter().position(|&t| t < 0.0) {
        Some(j) => Err(bad(
            path,
            "threshold",
            &format!("latent {j}'s threshold {} is negative", threshold[j]),
        )),
        None => Ok(threshold),
    }
}

/// The model (SAELens's `model_name`) and hook of a Gemma Scope
/// autoencoder in `dir`, from its path; `None` where the path does not
/// say.
fn hook_of_path(dir: &Path, file: &Path) -> Result<(Option<String>, Option<String>)> {
    let repository = dir.ancestors().find_map(|a| {
        let name = a.file_name()?.to_str()?;
        name.contains("gemma-scope").then(|| name.to_owned())
    });
    let model = repository.as_deref().and_then(|repo| {
        ["2b-it", "9b-it", "27b-it", "2b", "9b", "27b"]
            .into_iter()
            .find(|size| repo.contains(&format!("-{size}")))
            .map(|size| format!("gemma-2-{size}"))
    });
    if dir
        .components()
        .any(|c| c.as_os_str().to_string_lossy().contains("embedding"))
    {
        return Err(SaeError::UnsupportedLayout {
            path: file.to_path_buf(),
            feature: "an embedding autoencoder (hook_embed)".into(),
        }
        .into());
    }
    let layer = layer_in_path(dir, "layer_");
    // `…-pt-res`, and `…-pt-res-canonical` as the canonical releases
    // name theirs.
    let site = repository.as_deref().and_then(|repo| {
        repo.split('-').find_map(|part| match part {
            "res" => Some(Ok("hook_resid_post")),
            "mlp" => Some(Ok("hook_mlp_out")),
            "att" => Some(Err(())),
            _ => None,
        })
    });
    let hook = match (layer, site) {
        (_, Some(Err(()))) => {
            return Err(SaeError::UnsupportedLayout {
                path: file.to_path_buf(),
                feature: "an attention-head autoencoder (blocks.L.attn.hook_z)".into(),
            }
            .into());
        }
        (Some(layer), Some(Ok(site))) => Some(format!("blocks.{layer}.{site}")),
        _ => None,
    };
    Ok((model, hook))
}

/// The keys of Gemma Scope 2's `config.json` read.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Config {
    architecture: Option<Value>,
    model_name: Option<Value>,
    hf_hook_point_in: Option<Value>,
    hf_hook_point_out: Option<Value>,
    affine_connection: Option<Value>,
}

/// Reads a Gemma Scope 2 `params.safetensors` autoencoder in `dir`.
pub fn read_safetensors(dir: &Path) -> Result<(Sae<f32>, Value)> {
    let config_path = dir.join(CONFIG_FILE);
    let config = if config_path.is_file() {
        let json = read_config(&config_path, "a Gemma Scope 2 config.json")?;
        Some(
            Config::deserialize(&json)
                .map_err(|e| bad(&config_path, WHOLE_FILE, &e.to_string()))?,
        )
    } else {
        None
    };
    let text = |value: &Option<Value>, key: &str| -> Result<Option<String>> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(bad(&config_path, key, &format!("{other} is not a string"))),
        }
    };
    let (model, hook) = match &config {
        Some(c) => {
            match text(&c.architecture, "architecture")?.as_deref() {
                Some("jump_relu") => {}
                other => {
                    return Err(bad(
                        &config_path,
                        "architecture",
                        &format!("{other:?}: expected \"jump_relu\""),
                    ));
                }
            }
            match &c.affine_connection {
                None | Some(Value::Null | Value::Bool(false)) => {}
                Some(Value::Bool(true)) => {
                    return Err(SaeError::UnsupportedLayout {
                        path: config_path,
                        feature: "an affine skip connection (affine_connection)".into(),
                    }
                    .into());
                }
                Some(other) => {
                    return Err(bad(
                        &config_path,
                        "affine_connection",
                        &format!("{other} is not a boolean"),
                    ));
                }
            }
            let point_in = text(&c.hf_hook_point_in, "hf_hook_point_in")?
                .ok_or_else(|| bad(&config_path, "hf_hook_point_in", "missing"))?;
            if let Some(out) = text(&c.hf_hook_point_out, "hf_hook_point_out")?
                && out != point_in
            {
                return Err(SaeError::UnsupportedLayout {
                    path: config_path,
                    feature: format!("a transcoder ({point_in} to {out})"),
                }
                .into());
            }
            let model = text(&c.model_name, "model_name")?.map(|m| hub_model_name(&m));
            (model, Some(hook_of_point(&config_path, &point_in)?))
        }
        None => (None, hook_of_folder(dir)?),
    };
    let path = dir.join(SAFETENSORS_FILE);
    let file = TensorFile::open(&path)?;
    if file.has("affine_skip_connection") {
        return Err(SaeError::UnsupportedLayout {
            path,
            feature: "an affine skip connection (affine_skip_connection)".into(),
        }
        .into());
    }
    file.only(
        &["w_enc", "w_dec", "b_enc", "b_dec", "threshold"],
        "jumprelu",
    )?;
    let [d_in, d_sae] = file.shape("w_enc")?[..] else {
        return Err(bad(&path, "w_enc", "is not [d_in, d_sae]"));
    };
    let stored = Stored {
        w_enc: file.get("w_enc", &[d_in, d_sae])?,
        w_dec: file.get("w_dec", &[d_sae, d_in])?,
        b_enc: file.get("b_enc", &[d_sae])?,
        b_dec: file.get("b_dec", &[d_in])?,
        threshold: thresholds(file.path(), file.get("threshold", &[d_sae])?)?,
        d_in,
        d_sae,
    };
    Ok((
        stored.into_sae(),
        metadata(Layout::GemmaScope2, model, hook, CONTEXT),
    ))
}

/// SAELens's model name for Gemma Scope 2's `model_name`: `google/`
/// prefixed, `-v3` as `-3`, and the 270M model without `-pt`.
fn hub_model_name(name: &str) -> String {
    let mut name = match name.contains("google") {
        true => name.to_owned(),
        false => format!("google/{name}"),
    };
    name = name.replace("-v3", "-3");
    if name.contains("270m") {
        name = name.replace("-pt", "");
    }
    name
}

/// The SAELens hook of a Hugging Face hook point.
fn hook_of_point(path: &Path, point: &str) -> Result<String> {
    let unsupported = |feature: &str| -> crate::Error {
        SaeError::UnsupportedLayout {
            path: path.to_path_buf(),
            feature: format!("{feature} ({point})"),
        }
        .into()
    };
    let Some(rest) = point.strip_prefix("model.layers.") else {
        return Err(bad(
            path,
            "hf_hook_point_in",
            &format!("{point:?} is not model.layers.L.…"),
        ));
    };
    let (layer, module) = rest.split_once('.').unwrap_or((rest, ""));
    let layer: usize = layer.parse().map_err(|_| {
        bad(
            path,
            "hf_hook_point_in",
            &format!("{point:?} has no layer number"),
        )
    })?;
    match module {
        "output" => Ok(format!("blocks.{layer}.hook_resid_post")),
        "post_feedforward_layernorm.output" => Ok(format!("blocks.{layer}.hook_mlp_out")),
        "self_attn.o_proj.input" => Err(unsupported("an attention-head autoencoder")),
        "pre_feedforward_layernorm.output" => Err(unsupported("a transcoder")),
        _ => Err(bad(
            path,
            "hf_hook_point_in",
            &format!("{point:?} is not a hook point modelbin maps to a site"),
        )),
    }
}

/// The hook of a Gemma Scope 2 folder without `config.json`, from its name
/// (`resid_post` or `mlp_out`, and `layer_L`), as SAELens infers it.
fn hook_of_folder(dir: &Path) -> Result<Option<String>> {
    let name = dir.to_string_lossy();
    for (part, feature) in [
        ("attn_out", "an attention-head autoencoder"),
        ("transcoder", "a transcoder"),
        ("clt", "a cross-layer transcoder"),
    ] {
        if name.contains(part) {
            return Err(SaeError::UnsupportedLayout {
                path: dir.join(SAFETENSORS_FILE),
                feature: format!("{feature} (the folder says {part})"),
            }
            .into());
        }
    }
    let Some(layer) = layer_in_path(dir, "layer_") else {
        return Ok(None);
    };
    Ok(if name.contains("resid_post") {
        Some(format!("blocks.{layer}.hook_resid_post"))
    } else if name.contains("mlp_out") {
        Some(format!("blocks.{layer}.hook_mlp_out"))
    } else {
        None
    })
}
