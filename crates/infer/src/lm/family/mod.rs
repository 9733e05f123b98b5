//! The decoder families, one file each: the keys its transformers
//! configuration class reads (typed, with that class's defaults), the
//! block description they give ([`LmConfig`]), and where its tensors are
//! ([`Layout`]), as a [`FamilySpec`]. Adding a family is one file here and
//! one line in [`FAMILIES`]; `keys.rs` holds the key readers the families
//! share.

mod gemma2;
mod gemma3;
mod gpt2;
mod gpt_neox;
mod keys;
mod llama;
mod mistral;
mod qwen2;
mod qwen3;
mod spec;

use std::path::Path;

use modelbin_format::io::source::{self, JsonCaps};
use serde_json::Value;

use crate::hf::config::invalid;
use crate::hf::weights::Weights;
use crate::lm::config::{Family, LmConfig};
use crate::lm::weights::Layout;
use crate::{LmError, Result};
use spec::FamilySpec;

/// Every family, by `model_type`: the one line a new family adds here.
const FAMILIES: [&FamilySpec; 8] = [
    &gpt2::SPEC,
    &gpt_neox::SPEC,
    &llama::SPEC,
    &mistral::SPEC,
    &qwen2::SPEC,
    &qwen3::SPEC,
    &gemma2::SPEC,
    &gemma3::SPEC,
];

impl Family {
    /// Every family.
    pub fn all() -> impl Iterator<Item = Family> {
        FAMILIES.into_iter().map(|spec| Family(spec.model_type))
    }

    /// The family whose `model_type` is `model_type`.
    pub fn from_model_type(model_type: &str) -> Option<Family> {
        Family::all().find(|f| f.name() == model_type)
    }

    /// The `model_type`s there are, for an error: `a, b or c`.
    pub(crate) fn names() -> String {
        let names: Vec<&str> = Family::all().map(|f| f.name()).collect();
        match names.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// What the family is.
    fn spec(self) -> &'static FamilySpec {
        FAMILIES
            .into_iter()
            .find(|spec| spec.model_type == self.0)
            .expect("a family is one of FAMILIES")
    }

    /// Where the tensors of `weights` are.
    pub(crate) fn layout(self, weights: &Weights) -> Layout {
        (self.spec().layout)(weights)
    }
}

impl LmConfig {
    /// Reads `dir/config.json`.
    pub(crate) fn read(dir: &Path) -> Result<LmConfig> {
        let path = dir.join("config.json");
        let json = source::read_json(&path, "a model configuration file", JsonCaps::CONFIG)?;
        LmConfig::parse(&json)
    }

    /// The configuration the bytes of a `config.json` describe (JSON held to
    /// the configuration caps, as [`LanguageModel::open`] reads the file).
    ///
    /// ```
    /// use modelbin_infer::lm::LmConfig;
    /// let config = LmConfig::from_json(br#"{"model_type": "gpt2", "n_layer": 2}"#)?;
    /// assert_eq!((config.layers, config.hidden), (2, 768));
    /// assert!(LmConfig::from_json(br#"{"model_type": "gpt2", "n_layer": "2"}"#).is_err());
    /// # Ok::<(), modelbin_infer::Error>(())
    /// ```
    ///
    /// [`LanguageModel::open`]: crate::lm::LanguageModel::open
    pub fn from_json(bytes: &[u8]) -> Result<LmConfig> {
        let json = source::parse_json(
            bytes,
            "config.json",
            "a model configuration file",
            JsonCaps::CONFIG,
        )?;
        LmConfig::parse(&json)
    }

    /// The model `json` (a whole `config.json`) describes: its family's
    /// keys read (each of the right type) with transformers' defaults.
    pub(crate) fn parse(json: &Value) -> Result<LmConfig> {
        // Checked first: serde would read an array's items as the fields
        // in order.
        if !json.is_object() {
            return Err(invalid("", json, "expected a JSON object"));
        }
        let model_type = json
            .get("model_type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(family) = Family::from_model_type(model_type) else {
            return Err(LmError::UnsupportedModelType {
                model_type: model_type.to_owned(),
                supported: Family::names(),
            }
            .into());
        };
        (family.spec().config)(json, family)
    }
}
