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

use super::{Activation, Sae};
use crate::{Error, Result};

/// The configuration file's name.
pub const CONFIG_FILE: &str = "cfg.json";
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
    let mut config = serde_json::json!({
        "architecture": sae.activation.saelens_name(),
        "d_in": d_in,
        "d_sae": d_sae,
        "dtype": "float32",
        "device": "cpu",
        "apply_b_dec_to_input": true,
        "normalize_activations": "none",
        "metadata": metadata,
    });
    if let Activation::TopK(k) = sae.activation {
        config["k"] = k.into();
    }
    for key in HOOK_KEYS {
        if let Some(value) = config["metadata"].get(key).cloned() {
            config[key] = value;
        }
    }
    let text = serde_json::to_string_pretty(&config).expect("JSON values serialize");
    let mut file = modelbin_format::io::output::OutputFile::create(dir.join(CONFIG_FILE))?;
    std::io::Write::write_all(&mut file, text.as_bytes())
        .map_err(|e| modelbin_format::Error::io(dir.join(CONFIG_FILE), e))?;
    file.commit()?;
    Ok(())
}

/// Reads an autoencoder that [`save`] wrote (or SAELens wrote, for the
/// `topk`, `jumprelu` and `standard` architectures), with its configuration.
pub fn load(dir: &Path) -> Result<(Sae<f32>, serde_json::Value)> {
    let config_path = dir.join(CONFIG_FILE);
    let config = modelbin_format::io::source::read_json(
        &config_path,
        "an SAE's cfg.json",
        modelbin_format::io::source::JsonCaps::CONFIG,
    )?;
    let number = |key: &str| {
        config[key]
            .as_u64()
            .map(|v| v as usize)
            .ok_or_else(|| bad(&config_path, &format!("`{key}` is not a whole number")))
    };
    let (d_in, d_sae) = (number("d_in")?, number("d_sae")?);
    if d_in == 0 || d_sae == 0 {
        return Err(bad(&config_path, "`d_in` and `d_sae` must be positive"));
    }
    let architecture = config["architecture"].as_str().unwrap_or_default();
    if !["topk", "jumprelu", "standard"].contains(&architecture) {
        return Err(bad(
            &config_path,
            &format!(
                "architecture {} is not one of topk, jumprelu, standard",
                config["architecture"]
            ),
        ));
    }
    let weights = safetensors::open(dir.join(WEIGHTS_FILE))?;
    let tensor = |name: &str, shape: &[usize]| -> Result<Vec<f32>> {
        let view = weights.tensor(name)?;
        if view.shape() != shape {
            return Err(bad(
                &dir.join(WEIGHTS_FILE),
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
    let w_enc_t = tensor("W_enc", &[d_in, d_sae])?;
    let mut w_enc = vec![0.0f32; d_in * d_sae];
    for i in 0..d_in {
        for j in 0..d_sae {
            w_enc[j * d_in + i] = w_enc_t[i * d_sae + j];
        }
    }
    let activation = match architecture {
        "topk" => match number("k")? {
            k @ 1.. if k <= d_sae => Activation::TopK(k),
            k => {
                return Err(bad(
                    &config_path,
                    &format!("`k` {k} is not in [1, d_sae = {d_sae}]"),
                ));
            }
        },
        "jumprelu" => Activation::JumpRelu(tensor("threshold", &[d_sae])?),
        _ => Activation::Relu,
    };
    let sae = Sae {
        d_in,
        d_sae,
        activation,
        w_enc,
        b_enc: tensor("b_enc", &[d_sae])?,
        w_dec: tensor("W_dec", &[d_sae, d_in])?,
        b_dec: tensor("b_dec", &[d_in])?,
    };
    Ok((sae, config))
}

fn bad(path: &Path, reason: &str) -> Error {
    Error::Format(modelbin_format::Error::InvalidArgument(format!(
        "{}: {reason}",
        path.display()
    )))
}
