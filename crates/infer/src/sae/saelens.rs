//! Saving and loading an autoencoder in SAELens's directory layout:
//! `cfg.json` and `sae_weights.safetensors` with `W_enc [d_in, d_sae]`,
//! `W_dec [d_sae, d_in]`, `b_enc [d_sae]`, `b_dec [d_in]` in float32.
//!
//! `cfg.json` holds what SAELens's `SAE.load_from_disk` reads —
//! `architecture` ("topk" with `k`, "jumprelu" with a `threshold [d_sae]`
//! tensor in the weights, or "standard" for ReLU), `d_in`, `d_sae`, `dtype`
//! ("float32"), `device` ("cpu"), `apply_b_dec_to_input` (true: `b_dec` is
//! subtracted from the input), `normalize_activations` ("none": the weights
//! act on raw activations) — and a `metadata` object of our own (the
//! dataset, layer and model the autoencoder was trained on, and for a
//! BatchTopK autoencoder its `k`). On a dataset recorded from a decoder
//! language model the metadata also holds what SAELens 6 keeps there to
//! hook the model ([`hook_metadata`]): `model_name`, `hook_name`
//! (`blocks.L.hook_resid_post`, ...), `hook_head_index`, `context_size`
//! and `prepend_bos`. Those keys are also written at the top level: a cfg
//! without `sae_lens_version` is read by SAELens 6 as its older layout,
//! whose metadata it takes from the top-level keys.

use std::path::Path;

use modelbin_format::safetensors;
use modelbin_format::{DType, TensorStore, TensorView};

use super::config::{Kind, SaeConfig};
use super::{Activation, Sae};
use crate::{Error, Result, SaeError};

pub use super::config::CONFIG_FILE;
/// The weights file's name.
pub const WEIGHTS_FILE: &str = "sae_weights.safetensors";

/// The keys of [`hook_metadata`].
const HOOK_KEYS: [&str; 5] = [
    "model_name",
    "hook_name",
    "hook_head_index",
    "context_size",
    "prepend_bos",
];

/// SAELens's hook metadata for an autoencoder trained on `layer` (as
/// recorded) of `metadata`'s dataset, when a decoder language model was
/// recorded: `model_name`, `hook_name`, `hook_head_index` (null),
/// `context_size` (the window) and `prepend_bos`; `None` for other
/// recordings.
pub fn hook_metadata(
    metadata: &modelbin_format::saev::Metadata,
    layer: i64,
) -> Option<serde_json::Map<String, serde_json::Value>> {
    let data = &metadata.data;
    let slot = metadata.layers.iter().position(|&l| l == layer)?;
    let hook_name = data.get("hook_names")?.get(slot)?.clone();
    let mut hook = serde_json::Map::new();
    hook.insert(
        "model_name".into(),
        data.get("model_name").cloned().unwrap_or_default(),
    );
    hook.insert("hook_name".into(), hook_name);
    hook.insert("hook_head_index".into(), serde_json::Value::Null);
    hook.insert("context_size".into(), metadata.n_patches_per_img.into());
    hook.insert(
        "prepend_bos".into(),
        data.get("prepend_bos").cloned().unwrap_or_default(),
    );
    Some(hook)
}

/// Writes `sae` (on raw activations) into `dir` (created if missing), with
/// `metadata` as the configuration's `metadata` object. Weights that hold
/// a NaN or an infinity are refused before anything is written
/// ([`crate::SaeError::NonFiniteWeights`]).
pub fn save(dir: &Path, sae: &Sae<f32>, metadata: serde_json::Value) -> Result<()> {
    let threshold: &[f32] = match &sae.activation {
        Activation::JumpRelu(threshold) => threshold,
        _ => &[],
    };
    super::require_finite_weights([
        ("W_enc", sae.w_enc.as_slice()),
        ("W_dec", &sae.w_dec),
        ("b_enc", &sae.b_enc),
        ("b_dec", &sae.b_dec),
        ("threshold", threshold),
    ])?;
    std::fs::create_dir_all(dir).map_err(|e| modelbin_format::Error::io(dir, e))?;
    let (d_in, d_sae) = (sae.d_in, sae.d_sae);
    let mut w_enc = vec![0.0f32; d_in * d_sae];
    for (j, row) in sae.w_enc.chunks_exact(d_in).enumerate() {
        for (i, &w) in row.iter().enumerate() {
            w_enc[i * d_sae + j] = w;
        }
    }
    let bytes = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let (enc, dec, b_enc, b_dec) = (
        bytes(&w_enc),
        bytes(&sae.w_dec),
        bytes(&sae.b_enc),
        bytes(&sae.b_dec),
    );
    let shapes = [[d_in, d_sae], [d_sae, d_in]];
    let mut tensors = vec![
        TensorView::new("W_enc", DType::F32, &shapes[0], &enc)?,
        TensorView::new("W_dec", DType::F32, &shapes[1], &dec)?,
        TensorView::new("b_enc", DType::F32, &shapes[1][..1], &b_enc)?,
        TensorView::new("b_dec", DType::F32, &shapes[0][..1], &b_dec)?,
    ];
    let threshold = match &sae.activation {
        Activation::JumpRelu(threshold) => bytes(threshold),
        _ => Vec::new(),
    };
    if !threshold.is_empty() {
        tensors.push(TensorView::new(
            "threshold",
            DType::F32,
            &shapes[1][..1],
            &threshold,
        )?);
    }
    safetensors::write_file(dir.join(WEIGHTS_FILE), tensors, None, &mut |_, _| {})?;
    let text =
        serde_json::to_string_pretty(&config_json(sae, metadata)).expect("JSON values serialize");
    let mut file = modelbin_format::io::output::OutputFile::create(dir.join(CONFIG_FILE))?;
    std::io::Write::write_all(&mut file, text.as_bytes())
        .map_err(|e| modelbin_format::Error::io(dir.join(CONFIG_FILE), e))?;
    file.commit()?;
    Ok(())
}

/// The `cfg.json` [`save`] writes for `sae` with `metadata`.
pub fn config_json(sae: &Sae<f32>, metadata: serde_json::Value) -> serde_json::Value {
    let mut config = serde_json::json!({
        "architecture": sae.activation.saelens_name(),
        "d_in": sae.d_in,
        "d_sae": sae.d_sae,
        "dtype": "float32",
        "device": "cpu",
        "apply_b_dec_to_input": sae.io.subtract_b_dec,
        "normalize_activations": sae.io.normalization.saelens_name(),
        "metadata": metadata,
    });
    if let Activation::TopK(k) = sae.activation {
        config["k"] = k.into();
        config["rescale_acts_by_decoder_norm"] = sae.io.rescale_by_decoder_norm.into();
    }
    for key in HOOK_KEYS {
        if let Some(value) = config["metadata"].get(key).cloned() {
            config[key] = value;
        }
    }
    config
}

/// Reads an autoencoder that [`save`] wrote, or SAELens saved (the
/// `standard`, `topk` and `jumprelu` architectures, its 6.x layout and the
/// older one), with its configuration read ([`SaeConfig`]): every key that
/// changes what SAELens computes is honoured or refused by name. The
/// weights must be the architecture's tensors in the configuration's
/// shapes (F32, F16 or BF16, widened to f32), finite; any other tensor is
/// refused ([`SaeError::UnexpectedTensor`]), as SAELens refuses it, but
/// for a `scaling_factor` of ones, which SAELens drops.
pub fn load(dir: &Path) -> Result<(Sae<f32>, SaeConfig)> {
    let config_path = dir.join(CONFIG_FILE);
    let json = modelbin_format::io::source::read_json(
        &config_path,
        "an SAE's cfg.json",
        modelbin_format::io::source::JsonCaps::CONFIG,
    )?;
    let config = SaeConfig::parse(dir, &json)?;
    let (d_in, d_sae) = (config.d_in, config.d_sae);
    let weights_path = dir.join(WEIGHTS_FILE);
    let weights = safetensors::open(&weights_path)?;
    let architecture = match config.kind {
        Kind::Standard => "standard",
        Kind::TopK(_) => "topk",
        Kind::JumpRelu => "jumprelu",
    };
    let expected: &[&str] = match config.kind {
        Kind::JumpRelu => &["W_enc", "W_dec", "b_enc", "b_dec", "threshold"],
        _ => &["W_enc", "W_dec", "b_enc", "b_dec"],
    };
    let tensor = |name: &str, shape: &[usize]| -> Result<Vec<f32>> {
        let view = weights.tensor(name)?;
        if view.shape() != shape {
            return Err(bad(
                &weights_path,
                &format!(
                    "`{name}` has shape {:?}; cfg.json says {shape:?}",
                    view.shape()
                ),
            ));
        }
        let values = view.to_f32()?.into_owned();
        // Non-finite weights would make every code and reconstruction NaN.
        if let Some(index) = values.iter().position(|v| !v.is_finite()) {
            return Err(
                modelbin_format::Error::Model(modelbin_format::ModelError::NonFinite {
                    name: name.to_owned(),
                    index,
                    value: values[index],
                })
                .into(),
            );
        }
        Ok(values)
    };
    for name in weights.names() {
        if expected.contains(&name) {
            continue;
        }
        let ones = name == "scaling_factor"
            && weights
                .tensor(name)?
                .to_f32()
                .is_ok_and(|v| v.iter().all(|&x| x == 1.0));
        if !ones {
            return Err(SaeError::UnexpectedTensor {
                path: weights_path.clone(),
                name: name.to_owned(),
                architecture,
            }
            .into());
        }
    }
    let w_enc_t = tensor("W_enc", &[d_in, d_sae])?;
    let mut w_enc = vec![0.0f32; d_in * d_sae];
    for i in 0..d_in {
        for j in 0..d_sae {
            w_enc[j * d_in + i] = w_enc_t[i * d_sae + j];
        }
    }
    let activation = match config.kind {
        Kind::TopK(k) => Activation::TopK(k),
        Kind::JumpRelu => Activation::JumpRelu(tensor("threshold", &[d_sae])?),
        Kind::Standard => Activation::Relu,
    };
    let sae = Sae {
        d_in,
        d_sae,
        activation,
        w_enc,
        b_enc: tensor("b_enc", &[d_sae])?,
        w_dec: tensor("W_dec", &[d_sae, d_in])?,
        b_dec: tensor("b_dec", &[d_in])?,
        io: config.io,
    };
    Ok((sae, config))
}

fn bad(path: &Path, reason: &str) -> Error {
    Error::Format(modelbin_format::Error::InvalidArgument(format!(
        "{}: {reason}",
        path.display()
    )))
}
