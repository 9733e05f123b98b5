//! Steering a decoder language model with an autoencoder's latents: the
//! sum of `α · W_dec[latent]` over the latents asked for, added at the
//! hook point the autoencoder was trained at (its `cfg.json`'s SAELens
//! `hook_name`), as Neuronpedia's steering does without clamping. The
//! autoencoder must belong to the model: when its configuration names the
//! checkpoint it was trained on (as modelbin's training writes it), that
//! must be this model ([`crate::identity`]).

use std::path::Path;

use super::Sae;
use super::config::SaeConfig;
use crate::model::{HookedModel, Site, Steering};
use crate::{Result, SaeError};

/// The layer and site of the hook `config` (an autoencoder's `cfg.json`,
/// read from `dir`) names. [`SaeError::NoHookName`] when it names none,
/// [`SaeError::UnknownHook`] when the name is not `blocks.L.hook_<site>`
/// of a [`Site`].
pub fn hooked_site(dir: &Path, config: &SaeConfig) -> Result<(usize, Site)> {
    let name = config
        .hook_name
        .as_deref()
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

/// The steering of `model` (opened from `model_path`) by `sae` (read from
/// `dir`, with its `config`):
/// `Σ α · W_dec[latent]` over `steer`'s `(latent, α)` pairs, at the site
/// the configuration hooks. [`SaeError::TrainedOnOtherModel`] when the
/// configuration names another checkpoint than the model's,
/// [`SaeError::NoSuchLatent`] for a latent past the autoencoder's,
/// [`SaeError::ModelWidth`] when its width is not the model's, the errors
/// of [`hooked_site`], and [`crate::LmError::SteeringOverflow`] when the
/// sum is not finite in f32.
pub fn steering(
    model: &dyn HookedModel,
    model_path: &Path,
    sae: &Sae<f32>,
    dir: &Path,
    config: &SaeConfig,
    steer: &[(usize, f32)],
) -> Result<Steering> {
    let (layer, site) = hooked_site(dir, config)?;
    if let Some(&(latent, _)) = steer.iter().find(|(latent, _)| *latent >= sae.d_sae) {
        return Err(SaeError::NoSuchLatent {
            latent,
            d_sae: sae.d_sae,
        }
        .into());
    }
    if let Some(trained) = &config.model_checkpoint {
        let (same, hash) = crate::identity::matches(model_path, trained)?;
        if !same {
            return Err(SaeError::TrainedOnOtherModel {
                sae: dir.to_path_buf(),
                model: model_path.to_path_buf(),
                hash,
                trained: trained.clone(),
            }
            .into());
        }
    }
    let mut vector = vec![0.0f32; sae.d_in];
    for &(latent, alpha) in steer {
        let row = &sae.w_dec[latent * sae.d_in..(latent + 1) * sae.d_in];
        for (v, &w) in vector.iter_mut().zip(row) {
            *v += alpha * w;
        }
    }
    let what = steer
        .iter()
        .map(|(latent, alpha)| format!("latent {latent} × {alpha:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    Steering::new(model, layer, site, vector, what)
}
