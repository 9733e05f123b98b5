//! The autoencoder layouts people download, read from a local directory
//! (nothing is fetched) into the one [`Sae`] every face runs, each as its
//! publisher's own code computes it and as SAELens's loaders
//! (`sae_lens/loading/pretrained_sae_loaders.py`) read it:
//!
//! | layout | files | module |
//! |---|---|---|
//! | SAELens (and modelbin's own) | `cfg.json`, `sae_weights.safetensors` | [`super::saelens`] |
//! | Gemma Scope | `params.npz` | [`gemma_scope`] |
//! | Gemma Scope 2 | `params.safetensors`, `config.json` | [`gemma_scope`] |
//! | Llama Scope | `hyperparams.json`, `checkpoints/final.safetensors` | [`llama_scope`] |
//! | EleutherAI sparsify | `cfg.json`, `sae.safetensors` | [`sparsify`] |
//!
//! [`load`] detects the layout; [`import`] writes any of them in the
//! SAELens layout. A layout's autoencoder becomes a SAELens configuration
//! ([`super::saelens::config_json`]) read back by [`SaeConfig::parse`], so
//! every face sees one kind of configuration whatever the layout.

mod files;
pub mod gemma_scope;
pub mod llama_scope;
pub mod sparsify;

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::config::SaeConfig;
use super::{Sae, saelens};
use crate::{Result, SaeError};

/// A layout of an autoencoder's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// SAELens's `save_model` / `save_inference_model` (modelbin's own).
    SaeLens,
    /// Gemma Scope (Gemma 2): `params.npz`.
    GemmaScope,
    /// Gemma Scope 2 (Gemma 3): `params.safetensors` and `config.json`.
    GemmaScope2,
    /// Llama Scope: `hyperparams.json` and `checkpoints/final.safetensors`.
    LlamaScope,
    /// EleutherAI's sparsify: `cfg.json` and `sae.safetensors`.
    Sparsify,
}

impl Layout {
    /// Every layout, in the order [`Layout::detect`] tries them.
    pub const ALL: [Layout; 5] = [
        Layout::SaeLens,
        Layout::Sparsify,
        Layout::GemmaScope,
        Layout::GemmaScope2,
        Layout::LlamaScope,
    ];

    /// Its name, as `--json` and the docs give it.
    pub fn name(self) -> &'static str {
        match self {
            Layout::SaeLens => "saelens",
            Layout::GemmaScope => "gemma_scope",
            Layout::GemmaScope2 => "gemma_scope_2",
            Layout::LlamaScope => "llama_scope",
            Layout::Sparsify => "sparsify",
        }
    }

    /// The files that make `dir` an autoencoder of this layout.
    fn files(self) -> &'static [&'static str] {
        match self {
            Layout::SaeLens => &[saelens::CONFIG_FILE, saelens::WEIGHTS_FILE],
            Layout::Sparsify => &[sparsify::CONFIG_FILE, sparsify::WEIGHTS_FILE],
            Layout::GemmaScope => &[gemma_scope::NPZ_FILE],
            Layout::GemmaScope2 => &[gemma_scope::SAFETENSORS_FILE],
            Layout::LlamaScope => &[llama_scope::CONFIG_FILE, llama_scope::WEIGHTS_FILE],
        }
    }

    /// The layout of the autoencoder in `dir`, if it holds one: the first
    /// whose files are all there (whatever kind of file: a FIFO is
    /// refused by the reader, without waiting on it).
    pub fn of(dir: &Path) -> Option<Layout> {
        Layout::ALL
            .into_iter()
            .find(|layout| layout.files().iter().all(|f| dir.join(f).exists()))
    }

    /// The layout of the autoencoder in `dir`: one whose files are all
    /// there, else SAELens's when `cfg.json` is (its reader names the file
    /// missing).
    ///
    /// # Errors
    /// [`modelbin_format::Error::Io`] when `dir` cannot be read;
    /// [`SaeError::UnknownLayout`], naming the subdirectories that hold
    /// one when `dir` holds several (sparsify's run of hook points).
    pub fn detect(dir: &Path) -> Result<Layout> {
        if let Some(layout) = Layout::of(dir) {
            return Ok(layout);
        }
        std::fs::read_dir(dir).map_err(|e| modelbin_format::Error::io(dir, e))?;
        if dir.join(saelens::CONFIG_FILE).exists() {
            return Ok(Layout::SaeLens);
        }
        let mut inside: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .take(MAX_LISTED)
            .filter(|e| Layout::of(&e.path()).is_some())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        inside.sort();
        Err(SaeError::UnknownLayout {
            dir: dir.to_path_buf(),
            inside,
        }
        .into())
    }
}

/// Entries of a directory looked at for autoencoders inside it, at most.
const MAX_LISTED: usize = 4096;

/// An autoencoder read from a layout, with the SAELens metadata its
/// layout gives (`model_name`, `hook_name`, `context_size`,
/// `prepend_bos`, and `layout`; `hook_name` is left out when the layout
/// does not say).
#[derive(Debug, Clone)]
pub struct Imported {
    /// The layout read.
    pub layout: Layout,
    /// The autoencoder, on raw activations.
    pub sae: Sae<f32>,
    /// The SAELens `metadata` object.
    pub metadata: Value,
}

/// Reads the autoencoder in `dir`, whatever its layout.
///
/// # Errors
/// [`SaeError::UnknownLayout`] when `dir` holds none; each layout's errors
/// ([`SaeError::BadLayout`], [`SaeError::UnsupportedLayout`], and
/// [`super::saelens::load`]'s).
pub fn read(dir: &Path) -> Result<Imported> {
    read_as(dir, Layout::detect(dir)?)
}

/// Reads the autoencoder in `dir`, of `layout`.
fn read_as(dir: &Path, layout: Layout) -> Result<Imported> {
    let (sae, metadata) = match layout {
        Layout::SaeLens => {
            let (sae, config) = saelens::load(dir)?;
            let metadata = config.json.get("metadata").cloned();
            (
                sae,
                metadata.unwrap_or_else(|| Value::Object(Default::default())),
            )
        }
        Layout::GemmaScope => gemma_scope::read_npz(dir)?,
        Layout::GemmaScope2 => gemma_scope::read_safetensors(dir)?,
        Layout::LlamaScope => llama_scope::read(dir)?,
        Layout::Sparsify => sparsify::read(dir)?,
    };
    Ok(Imported {
        layout,
        sae,
        metadata,
    })
}

/// Reads the autoencoder in `dir`, whatever its layout, with its
/// configuration as SAELens would hold it. This is what every face that
/// takes an autoencoder's directory calls.
///
/// # Errors
/// As [`read`].
pub fn load(dir: &Path) -> Result<(Sae<f32>, SaeConfig)> {
    let layout = Layout::detect(dir)?;
    if layout == Layout::SaeLens {
        return saelens::load(dir);
    }
    let imported = read_as(dir, layout)?;
    let json = saelens::config_json(&imported.sae, imported.metadata);
    let config = SaeConfig::parse(dir, &json)?;
    Ok((imported.sae, config))
}

/// What [`import`] did.
#[derive(Debug, Clone)]
pub struct ImportSummary {
    /// The layout read.
    pub layout: Layout,
    /// The directory written.
    pub out: PathBuf,
    /// Input width and latents.
    pub d_in: usize,
    /// Latents.
    pub d_sae: usize,
    /// The architecture (`standard`, `topk`, `jumprelu`).
    pub architecture: &'static str,
    /// The hook point, when the layout names one.
    pub hook_name: Option<String>,
}

/// Writes the autoencoder in `src` (any layout) to `out` in the SAELens
/// layout, with `overrides` (`hook_name`, `model_name`, ...) set in its
/// metadata over what the layout says.
///
/// # Errors
/// As [`read`], and as [`saelens::save`].
pub fn import(
    src: &Path,
    out: &Path,
    overrides: serde_json::Map<String, Value>,
) -> Result<ImportSummary> {
    let mut imported = read(src)?;
    if let Value::Object(metadata) = &mut imported.metadata {
        metadata.extend(overrides);
    }
    let json = saelens::config_json(&imported.sae, imported.metadata.clone());
    let config = SaeConfig::parse(src, &json)?;
    saelens::save(out, &imported.sae, imported.metadata)?;
    Ok(ImportSummary {
        layout: imported.layout,
        out: out.to_path_buf(),
        d_in: config.d_in,
        d_sae: config.d_sae,
        architecture: imported.sae.activation.saelens_name(),
        hook_name: config.hook_name,
    })
}

/// The SAELens metadata of a downloaded autoencoder: `layout`,
/// `model_name`, `hook_name` (when known), `hook_head_index` (null),
/// `context_size`, `prepend_bos`.
fn metadata(
    layout: Layout,
    model_name: Option<String>,
    hook_name: Option<String>,
    context_size: u64,
) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("layout".into(), layout.name().into());
    if let Some(name) = model_name {
        m.insert("model_name".into(), name.into());
    }
    if let Some(hook) = hook_name {
        m.insert("hook_name".into(), hook.into());
    }
    m.insert("hook_head_index".into(), Value::Null);
    m.insert("context_size".into(), context_size.into());
    m.insert("prepend_bos".into(), true.into());
    Value::Object(m)
}

/// The layer `N` of the last component of `dir`'s path that starts with
/// `prefix` and digits (`layer_20`, `layer_9_width_16k`).
fn layer_in_path(dir: &Path, prefix: &str) -> Option<usize> {
    dir.components().rev().find_map(|c| {
        let rest = c.as_os_str().to_str()?.strip_prefix(prefix)?;
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        rest[..digits].parse().ok()
    })
}
