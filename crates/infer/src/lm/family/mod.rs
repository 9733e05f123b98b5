//! The decoder families, one file each: the keys its transformers
//! configuration class reads (typed, with that class's defaults), the
//! block description they give ([`LmConfig`]), and where its tensors are
//! ([`Layout`]). Adding a family is one file here and one line in
//! [`FAMILIES`].

mod gpt2;
mod gpt_neox;
mod llama;
mod qwen2;

use std::fmt;

use serde_json::Value;

use crate::Result;
use crate::hf::weights::Weights;
use crate::lm::config::LmConfig;
use crate::lm::weights::Layout;

/// What a family is: its `model_type`, how its configuration is read,
/// and where its tensors are.
pub(crate) struct FamilySpec {
    /// `config.json`'s `model_type`.
    model_type: &'static str,
    /// The configuration a whole `config.json` (an object) describes.
    config: fn(&Value, Family) -> Result<LmConfig>,
    /// Where the tensors of a checkpoint are.
    layout: fn(&Weights) -> Layout,
}

/// Every family, by `model_type`.
const FAMILIES: [&FamilySpec; 4] = [&gpt2::SPEC, &gpt_neox::SPEC, &llama::SPEC, &qwen2::SPEC];

/// A family of decoder language models, by `config.json`'s `model_type`:
/// `gpt2` (GPT-2), `gpt_neox` (Pythia, GPT-NeoX), `llama` (Llama 1–3.x,
/// TinyLlama, SmolLM) and `qwen2` (Qwen2, Qwen2.5).
#[derive(Clone, Copy)]
pub struct Family(&'static FamilySpec);

impl Family {
    /// Every family.
    pub fn all() -> impl Iterator<Item = Family> {
        FAMILIES.into_iter().map(Family)
    }

    /// The family whose `model_type` is `model_type`.
    pub fn from_model_type(model_type: &str) -> Option<Family> {
        Family::all().find(|f| f.name() == model_type)
    }

    /// The family's `model_type`.
    pub fn name(&self) -> &'static str {
        self.0.model_type
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

    /// The configuration `json` (a whole `config.json`, an object of this
    /// family's `model_type`) describes.
    pub(crate) fn config(self, json: &Value) -> Result<LmConfig> {
        (self.0.config)(json, self)
    }

    /// Where the tensors of `weights` are.
    pub(crate) fn layout(self, weights: &Weights) -> Layout {
        (self.0.layout)(weights)
    }
}

impl PartialEq for Family {
    fn eq(&self, other: &Family) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Family {}

impl std::hash::Hash for Family {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name().hash(state);
    }
}

impl fmt::Debug for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Family({:?})", self.name())
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
