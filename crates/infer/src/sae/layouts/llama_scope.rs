//! OpenMOSS's Llama Scope autoencoders (Llama 3.1 8B): `hyperparams.json`
//! and `checkpoints/final.safetensors` with `encoder.weight [d_sae, d_in]`,
//! `encoder.bias`, `decoder.weight [d_in, d_sae]`, `decoder.bias`.
//!
//! They were trained on activations scaled to a norm of `√d_in` on
//! average, with one JumpReLU threshold for every latent
//! (`jump_relu_threshold`). As SAELens's `llama_scope` loader and
//! `from_pretrained` give them, the scale `s = √d_model /
//! dataset_average_activation_norm.in` is folded into the weights, so the
//! autoencoder runs on raw activations: `W_enc · s`, `W_dec / s`,
//! `b_dec / s`, the threshold `jump_relu_threshold · s`; `b_dec` is not
//! subtracted from the input. The hook is `hook_point_in` (already a
//! TransformerLens name); a transcoder (`hook_point_out` another point)
//! is refused.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::files::{TensorFile, WHOLE_FILE, bad, read_config};
use super::{Layout, metadata};
use crate::nn::transpose::transpose;
use crate::sae::{Activation, Io, Sae};
use crate::{Result, SaeError};

/// The configuration file.
pub const CONFIG_FILE: &str = "hyperparams.json";
/// The weights file.
pub const WEIGHTS_FILE: &str = "checkpoints/final.safetensors";

/// SAELens's model name for Llama Scope.
const MODEL_NAME: &str = "meta-llama/Llama-3.1-8B";

/// The keys of `hyperparams.json` read (`null` when missing: each is then
/// refused by name).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Hyperparams {
    d_model: Value,
    d_sae: Value,
    hook_point_in: Value,
    hook_point_out: Value,
    jump_relu_threshold: Value,
    dataset_average_activation_norm: Value,
}

/// Reads the Llama Scope autoencoder in `dir`.
pub fn read(dir: &Path) -> Result<(Sae<f32>, Value)> {
    let config_path = dir.join(CONFIG_FILE);
    let json = read_config(&config_path, "a Llama Scope hyperparams.json")?;
    let hp = Hyperparams::deserialize(&json)
        .map_err(|e| bad(&config_path, WHOLE_FILE, &e.to_string()))?;
    let count = |value: &Value, key: &str| -> Result<usize> {
        value
            .as_u64()
            .filter(|&n| n > 0 && n <= 1 << 24)
            .map(|n| n as usize)
            .ok_or_else(|| bad(&config_path, key, &format!("{value} is not a count")))
    };
    let positive = |value: &Value, key: &str| -> Result<f64> {
        value
            .as_f64()
            .filter(|v| v.is_finite() && *v > 0.0)
            .ok_or_else(|| {
                bad(
                    &config_path,
                    key,
                    &format!("{value} is not a positive number"),
                )
            })
    };
    let (d_in, d_sae) = (count(&hp.d_model, "d_model")?, count(&hp.d_sae, "d_sae")?);
    let hook = hp
        .hook_point_in
        .as_str()
        .ok_or_else(|| bad(&config_path, "hook_point_in", "missing or not a string"))?
        .to_owned();
    if let Some(out) = hp.hook_point_out.as_str()
        && out != hook
    {
        return Err(SaeError::UnsupportedLayout {
            path: config_path,
            feature: format!("a transcoder ({hook} to {out})"),
        }
        .into());
    }
    let threshold = hp
        .jump_relu_threshold
        .as_f64()
        .filter(|t| t.is_finite() && *t >= 0.0)
        .ok_or_else(|| {
            bad(
                &config_path,
                "jump_relu_threshold",
                &format!(
                    "{} is not a number ≥ 0 (null: missing)",
                    hp.jump_relu_threshold
                ),
            )
        })?;
    let norm = positive(
        &hp.dataset_average_activation_norm["in"],
        "dataset_average_activation_norm.in",
    )?;
    let scale = (d_in as f64).sqrt() / norm;
    let path = dir.join(WEIGHTS_FILE);
    let file = TensorFile::open(&path)?;
    file.only(
        &[
            "encoder.weight",
            "encoder.bias",
            "decoder.weight",
            "decoder.bias",
        ],
        "jumprelu",
    )?;
    // Folded as SAELens's `fold_activation_norm_scaling_factor`: in f32,
    // each weight multiplied by the factor rounded to f32.
    let s = scale as f32;
    let mut w_enc = file.get("encoder.weight", &[d_sae, d_in])?;
    w_enc.iter_mut().for_each(|w| *w *= s);
    let mut w_dec = transpose(&file.get("decoder.weight", &[d_in, d_sae])?, d_in, d_sae);
    w_dec.iter_mut().for_each(|w| *w /= s);
    let mut b_dec = file.get("decoder.bias", &[d_in])?;
    b_dec.iter_mut().for_each(|b| *b /= s);
    let sae = Sae {
        d_in,
        d_sae,
        activation: Activation::JumpRelu(vec![(threshold * scale) as f32; d_sae]),
        w_enc,
        b_enc: file.get("encoder.bias", &[d_sae])?,
        w_dec,
        b_dec,
        io: Io {
            subtract_b_dec: false,
            ..Io::default()
        },
    };
    Ok((
        sae,
        metadata(
            Layout::LlamaScope,
            Some(MODEL_NAME.to_owned()),
            Some(hook),
            1024,
        ),
    ))
}
