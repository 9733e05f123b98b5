//! EleutherAI's sparsify autoencoders: one folder per hook point, each
//! with `cfg.json` (`d_in`, `k`, `num_latents` or `expansion_factor`,
//! `activation`, `normalize_decoder`, `skip_connection`, `transcode`)
//! and `sae.safetensors` (`encoder.weight [d_sae, d_in]`, `encoder.bias`,
//! `W_dec [d_sae, d_in]`, `b_dec`); the run's `config.json` beside the
//! folders may name the `model`.
//!
//! As sparsify's own `SparseCoder` computes: `b_dec` subtracted from the
//! input, `pre = x · encoderᵀ + bias`, the `k` largest of `relu(pre)`,
//! decoded by `W_dec` as stored, plus `b_dec` (a TopK autoencoder). Two
//! readings of SAELens's `sparsify_disk_loader` differ from it and are not
//! followed: it transposes `W_dec` (which sparsify stores `[d_sae, d_in]`
//! already), and it sets `apply_b_dec_to_input` to `not
//! normalize_decoder` (sparsify subtracts `b_dec` whatever
//! `normalize_decoder` says). The folder `layers.L` is
//! `blocks.L.hook_resid_post` (the decoder layer's output); other hook
//! points load without a hook name (it is kept as
//! `metadata.sparsify_hookpoint`). `groupmax` activations, skip
//! connections and transcoders are refused by name.

use std::path::Path;

use serde_json::Value;

use super::files::{TensorFile, bad, read_config};
use super::{Layout, metadata};
use crate::sae::{Activation, Io, Sae};
use crate::{Result, SaeError};

/// The configuration file.
pub const CONFIG_FILE: &str = "cfg.json";
/// The weights file.
pub const WEIGHTS_FILE: &str = "sae.safetensors";

/// Reads the sparsify autoencoder in `dir`.
pub fn read(dir: &Path) -> Result<(Sae<f32>, Value)> {
    let config_path = dir.join(CONFIG_FILE);
    let cfg = read_config(&config_path, "a sparsify cfg.json")?;
    let count = |key: &str| -> Result<Option<usize>> {
        match &cfg[key] {
            Value::Null => Ok(None),
            value => value
                .as_u64()
                .filter(|&n| n <= 1 << 24)
                .map(|n| Some(n as usize))
                .ok_or_else(|| bad(&config_path, key, &format!("{value} is not a count"))),
        }
    };
    let flag = |key: &str, default: bool| -> Result<bool> {
        match &cfg[key] {
            Value::Null => Ok(default),
            Value::Bool(b) => Ok(*b),
            value => Err(bad(&config_path, key, &format!("{value} is not a boolean"))),
        }
    };
    let unsupported = |feature: &str| -> crate::Error {
        SaeError::UnsupportedLayout {
            path: config_path.clone(),
            feature: feature.to_owned(),
        }
        .into()
    };
    match &cfg["activation"] {
        Value::Null => {}
        Value::String(a) if a == "topk" => {}
        other => return Err(unsupported(&format!("the activation {other}"))),
    }
    if flag("skip_connection", false)? {
        return Err(unsupported("a skip connection (skip_connection)"));
    }
    if flag("transcode", false)? {
        return Err(unsupported("a transcoder (transcode)"));
    }
    let d_in = count("d_in")?
        .filter(|&d| d > 0)
        .ok_or_else(|| bad(&config_path, "d_in", "missing or zero"))?;
    let d_sae = match count("num_latents")? {
        Some(n) if n > 0 => n,
        _ => d_in
            .checked_mul(count("expansion_factor")?.unwrap_or(32))
            .filter(|&n| n > 0)
            .ok_or_else(|| bad(&config_path, "expansion_factor", "gives no latents"))?,
    };
    let k = count("k")?.unwrap_or(32);
    if k == 0 || k > d_sae {
        return Err(bad(
            &config_path,
            "k",
            &format!("{k} is not in 1..={d_sae} (the latents)"),
        ));
    }
    let path = dir.join(WEIGHTS_FILE);
    let file = TensorFile::open(&path)?;
    file.only(
        &["encoder.weight", "encoder.bias", "W_dec", "b_dec"],
        "topk",
    )?;
    let sae = Sae {
        d_in,
        d_sae,
        activation: Activation::TopK(k),
        w_enc: file.get("encoder.weight", &[d_sae, d_in])?,
        b_enc: file.get("encoder.bias", &[d_sae])?,
        w_dec: file.get("W_dec", &[d_sae, d_in])?,
        b_dec: file.get("b_dec", &[d_in])?,
        io: Io::default(),
    };
    let hookpoint = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let hook = ["layers.", "layers_"].into_iter().find_map(|prefix| {
        let layer: usize = hookpoint.strip_prefix(prefix)?.parse().ok()?;
        Some(format!("blocks.{layer}.hook_resid_post"))
    });
    let run = dir.parent().map(|p| p.join("config.json"));
    let run_config = run
        .filter(|p| p.is_file())
        .and_then(|p| read_config(&p, "a sparsify run's config.json").ok())
        .unwrap_or_default();
    let model = run_config["model"].as_str().map(str::to_owned).or_else(|| {
        let parent = dir.parent()?.file_name()?;
        Some(parent.to_string_lossy().into_owned())
    });
    let context = run_config["ctx_len"].as_u64().unwrap_or(2048);
    let mut meta = metadata(Layout::Sparsify, model, hook, context);
    meta["sparsify_hookpoint"] = hookpoint.into();
    Ok((sae, meta))
}
