//! What an autoencoder's `cfg.json` says, in SAELens's layout: the 6.x
//! layout (hook and model under `metadata`) and the older one (a cfg
//! without `sae_lens_version`, or of a version before 6, whose keys sit at
//! the top level under older names, as SAELens's `handle_pre_6_0_config`
//! reads them).
//!
//! Every key that changes what SAELens's `encode`/`decode` compute is read
//! here, typed, and either honoured ([`Io`], the architecture, `k`) or
//! refused by name ([`SaeError::BadConfig`]): `architecture`, `d_in`,
//! `d_sae`, `k`, `apply_b_dec_to_input`, `normalize_activations`,
//! `rescale_acts_by_decoder_norm`, `reshape_activations`, `dtype`,
//! `hook_head_index`, and the older `activation_fn` with its
//! `activation_fn_kwargs`. The hook (`hook_name`) and the model (`model`,
//! our checkpoint id, and SAELens's `model_name`) say where the
//! autoencoder belongs. Other keys (`device`, `context_size`, ...) change
//! nothing computed and are passed over.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Io, Normalization};
use crate::{Result, SaeError};

/// The configuration file's name.
pub const CONFIG_FILE: &str = "cfg.json";

/// An autoencoder's architecture, as it encodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `standard`: ReLU.
    Standard,
    /// `topk` with its `k`.
    TopK(usize),
    /// `jumprelu`: a `threshold [d_sae]` tensor in the weights.
    JumpRelu,
}

/// A `cfg.json`, read.
#[derive(Debug, Clone, PartialEq)]
pub struct SaeConfig {
    /// The architecture.
    pub kind: Kind,
    /// Input width.
    pub d_in: usize,
    /// Latents.
    pub d_sae: usize,
    /// What is done around the weights.
    pub io: Io,
    /// The hook point trained at (`blocks.L.hook_resid_post`, ...), if
    /// named.
    pub hook_name: Option<String>,
    /// The checkpoint id of the model trained on (what a recording names
    /// it by), if named.
    pub model_checkpoint: Option<String>,
    /// SAELens's name of the model trained on, if named.
    pub model_name: Option<String>,
    /// The whole file.
    pub json: Value,
}

/// The architectures read.
const ARCHITECTURES: &str = "standard, topk or jumprelu";

/// The `normalize_activations` values SAELens knows.
const NORMALIZATIONS: &str =
    "none, expected_average_only_in, covariance_whitening, layer_norm or constant_norm_rescale";

impl SaeConfig {
    /// Reads `json`, the `cfg.json` of the autoencoder in `dir` (named in
    /// errors).
    ///
    /// # Errors
    /// [`SaeError::BadConfig`] naming the first key that is missing where
    /// it is needed, of the wrong type, or of a value not supported.
    pub fn parse(dir: &Path, json: &Value) -> Result<SaeConfig> {
        let cfg = Cfg { dir, json };
        if !json.is_object() {
            return Err(cfg.bad("", json, "expected a JSON object"));
        }
        let legacy = !cfg.is_6x();
        let d_in = cfg.count("d_in")?;
        let d_sae = cfg.count("d_sae")?;
        if d_in
            .checked_mul(d_sae)
            .is_none_or(|n| n > isize::MAX as usize / 4)
        {
            return Err(cfg.bad("d_sae", &json["d_sae"], "too many weights"));
        }
        let kind = cfg.kind(legacy, d_sae)?;
        let normalization = cfg.normalization(legacy)?;
        let io = Io {
            subtract_b_dec: cfg.flag("apply_b_dec_to_input", true)?,
            normalization,
            // A key of SAELens's TopK configuration only.
            rescale_by_decoder_norm: matches!(kind, Kind::TopK(_))
                && cfg.flag("rescale_acts_by_decoder_norm", false)?,
        };
        match cfg.text("dtype")?.as_deref() {
            None | Some("float32" | "torch.float32") => {}
            Some(_) => {
                return Err(cfg.bad(
                    "dtype",
                    &json["dtype"],
                    "SAELens computes this autoencoder in that dtype; modelbin computes in float32 (set \"dtype\": \"float32\" to accept float32 results)",
                ));
            }
        }
        let hook_name = cfg.hook_text(&["hook_name", "hook_point"])?;
        if let Some(key) = ["hook_head_index", "hook_point_head_index"]
            .into_iter()
            .find(|key| !cfg.hook_value(key).is_null())
        {
            return Err(cfg.bad(
                key,
                cfg.hook_value(key),
                "hooks on one attention head are not supported",
            ));
        }
        let reshape = cfg.text("reshape_activations")?;
        let hook_z = hook_name.as_deref().is_some_and(|h| h.contains("hook_z"));
        if reshape.as_deref().is_some_and(|r| r != "none") || (legacy && hook_z) {
            return Err(cfg.bad(
                "reshape_activations",
                &json["reshape_activations"],
                "attention-head (hook_z) activations are not supported",
            ));
        }
        Ok(SaeConfig {
            kind,
            d_in,
            d_sae,
            io,
            hook_name,
            model_checkpoint: cfg.hook_text(&["model"])?,
            model_name: cfg.hook_text(&["model_name"])?,
            json: json.clone(),
        })
    }
}

/// A `cfg.json` being read: its directory (for errors) and its JSON.
struct Cfg<'a> {
    dir: &'a Path,
    json: &'a Value,
}

impl Cfg<'_> {
    /// `key` = `value` is not usable, because `reason`.
    fn bad(&self, key: &str, value: &Value, reason: &str) -> crate::Error {
        SaeError::BadConfig {
            path: self.path(),
            key: key.to_owned(),
            value: value.to_string(),
            reason: reason.to_owned(),
        }
        .into()
    }

    fn path(&self) -> PathBuf {
        self.dir.join(CONFIG_FILE)
    }

    /// Whether the file is SAELens 6's layout: a `sae_lens_version` (at
    /// the top or in `metadata`) of 6 or later.
    fn is_6x(&self) -> bool {
        let version = self.json["sae_lens_version"]
            .as_str()
            .or_else(|| self.json["metadata"]["sae_lens_version"].as_str());
        version
            .and_then(|v| v.split('.').next()?.parse::<u64>().ok())
            .is_some_and(|major| major >= 6)
    }

    /// The positive integer `key`.
    fn count(&self, key: &str) -> Result<usize> {
        match &self.json[key] {
            Value::Null => Err(self.bad(key, &Value::Null, "missing; it is required")),
            value => value
                .as_u64()
                .filter(|&n| n >= 1)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| self.bad(key, value, "expected a positive integer")),
        }
    }

    /// The boolean `key`, `default` when missing.
    fn flag(&self, key: &str, default: bool) -> Result<bool> {
        match &self.json[key] {
            Value::Null => Ok(default),
            value => value
                .as_bool()
                .ok_or_else(|| self.bad(key, value, "expected true or false")),
        }
    }

    /// The string `key`, if present.
    fn text(&self, key: &str) -> Result<Option<String>> {
        match &self.json[key] {
            Value::Null => Ok(None),
            value => value
                .as_str()
                .map(|s| Some(s.to_owned()))
                .ok_or_else(|| self.bad(key, value, "expected a string")),
        }
    }

    /// A hook or model key: in `metadata` (SAELens 6), else at the top
    /// level (the older layout, and our own files, which write both).
    fn hook_value(&self, key: &str) -> &Value {
        match &self.json["metadata"][key] {
            Value::Null => &self.json[key],
            value => value,
        }
    }

    /// The first of `keys` present as a hook or model key, as a string.
    fn hook_text(&self, keys: &[&str]) -> Result<Option<String>> {
        for key in keys {
            match self.hook_value(key) {
                Value::Null => continue,
                Value::String(s) => return Ok(Some(s.clone())),
                value => return Err(self.bad(key, value, "expected a string")),
            }
        }
        Ok(None)
    }

    /// The architecture: `architecture` (SAELens 6 requires it), or in the
    /// older layout `activation_fn` (`relu`, or `topk` with
    /// `activation_fn_kwargs.k`) over a default of `standard`.
    fn kind(&self, legacy: bool, d_sae: usize) -> Result<Kind> {
        let json = self.json;
        let architecture = self.text("architecture")?;
        if legacy {
            match self.text("activation_fn")?.as_deref() {
                None | Some("relu") => {}
                Some("topk") => {
                    let k = &json["activation_fn_kwargs"]["k"];
                    if !k.is_null() {
                        return self
                            .k_of(k, "activation_fn_kwargs.k", d_sae)
                            .map(Kind::TopK);
                    }
                }
                Some(_) => {
                    return Err(self.bad(
                        "activation_fn",
                        &json["activation_fn"],
                        "expected relu or topk",
                    ));
                }
            }
        }
        let architecture = match architecture {
            Some(name) => name,
            None if legacy => "standard".into(),
            None => {
                return Err(self.bad(
                    "architecture",
                    &Value::Null,
                    &format!("missing; expected {ARCHITECTURES}"),
                ));
            }
        };
        match architecture.as_str() {
            "standard" => Ok(Kind::Standard),
            "jumprelu" => Ok(Kind::JumpRelu),
            // SAELens's TopK configuration defaults k to 100.
            "topk" => match &json["k"] {
                Value::Null => self.k_of(&Value::from(100), "k", d_sae).map(Kind::TopK),
                k => self.k_of(k, "k", d_sae).map(Kind::TopK),
            },
            _ => Err(self.bad(
                "architecture",
                &json["architecture"],
                &format!("not supported; expected {ARCHITECTURES}"),
            )),
        }
    }

    /// `k` (named `key`) checked: an integer from 1 to `d_sae`.
    fn k_of(&self, k: &Value, key: &str, d_sae: usize) -> Result<usize> {
        k.as_u64()
            .and_then(|k| usize::try_from(k).ok())
            .filter(|k| (1..=d_sae).contains(k))
            .ok_or_else(|| {
                self.bad(
                    key,
                    k,
                    &format!("expected an integer from 1 to d_sae ({d_sae})"),
                )
            })
    }

    /// `normalize_activations`: one of SAELens's names (the older layout
    /// also takes a boolean: true is `expected_average_only_in`).
    fn normalization(&self, legacy: bool) -> Result<Normalization> {
        let value = &self.json["normalize_activations"];
        let name = match value {
            Value::Null => "none",
            Value::Bool(true) if legacy => "expected_average_only_in",
            Value::Bool(false) if legacy => "none",
            Value::String(name) => name.as_str(),
            _ => {
                return Err(self.bad(
                    "normalize_activations",
                    value,
                    &format!("expected {NORMALIZATIONS}"),
                ));
            }
        };
        Ok(match name {
            // Folded into the weights by SAELens's training; its
            // autoencoder then leaves the input as it is.
            "none" | "expected_average_only_in" | "covariance_whitening" => Normalization::None,
            "layer_norm" => Normalization::LayerNorm,
            "constant_norm_rescale" => Normalization::ConstantNormRescale,
            _ => {
                return Err(self.bad(
                    "normalize_activations",
                    value,
                    &format!("expected {NORMALIZATIONS}"),
                ));
            }
        })
    }
}
