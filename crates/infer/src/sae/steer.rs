//! Steering a decoder language model with an autoencoder's latents: the
//! sum of `α · W_dec[latent]` over the latents asked for, added at the
//! site the autoencoder was trained on (its `cfg.json`'s SAELens
//! `hook_name`), as Neuronpedia's steering does without clamping.

use std::path::Path;

use super::Sae;
use crate::lm::{LanguageModel, Site, Steering};
use crate::{Result, SaeError};

/// The layer and site `config` (an autoencoder's `cfg.json`) hooks: its
/// `metadata.hook_name` (SAELens 6), else a top-level `hook_name` (older
/// SAELens configurations). [`SaeError::NoHookName`] when it names none,
/// [`SaeError::UnknownHook`] when the name is not `blocks.L.hook_<site>`
/// of a [`Site`].
pub fn hooked_site(dir: &Path, config: &serde_json::Value) -> Result<(usize, Site)> {
    let name = config["metadata"]["hook_name"]
        .as_str()
        .or_else(|| config["hook_name"].as_str())
        .ok_or_else(|| SaeError::NoHookName {
            dir: dir.to_path_buf(),
        })?;
    Site::of_hook_name(name).ok_or_else(|| {
        SaeError::UnknownHook {
            dir: dir.to_path_buf(),
            hook_name: name.to_owned(),
        }
        .into()
    })
}

/// The steering of `model` by `sae` (read from `dir`, with its `config`):
/// `Σ α · W_dec[latent]` over `steer`'s `(latent, α)` pairs, at the site
/// the configuration hooks. [`SaeError::NoSuchLatent`] for a latent past
/// the autoencoder's, [`SaeError::ModelWidth`] when its width is not the
/// model's, and the errors of [`hooked_site`].
pub fn steering(
    model: &LanguageModel,
    sae: &Sae<f32>,
    dir: &Path,
    config: &serde_json::Value,
    steer: &[(usize, f32)],
) -> Result<Steering> {
    let (layer, site) = hooked_site(dir, config)?;
    let mut vector = vec![0.0f32; sae.d_in];
    for &(latent, alpha) in steer {
        if latent >= sae.d_sae {
            return Err(SaeError::NoSuchLatent {
                latent,
                d_sae: sae.d_sae,
            }
            .into());
        }
        let row = &sae.w_dec[latent * sae.d_in..(latent + 1) * sae.d_in];
        for (v, &w) in vector.iter_mut().zip(row) {
            *v += alpha * w;
        }
    }
    Steering::new(model, layer, site, vector)
}
