//! What a family is, as each family's file states it.

use serde_json::Value;

use crate::Result;
use crate::hf::weights::Weights;
use crate::lm::config::{Family, LmConfig};
use crate::lm::weights::Layout;

/// A family: its `model_type`, how its configuration is read, and where
/// its tensors are.
pub(crate) struct FamilySpec {
    /// `config.json`'s `model_type`.
    pub model_type: &'static str,
    /// The configuration a whole `config.json` (an object) describes.
    pub config: fn(&Value, Family) -> Result<LmConfig>,
    /// Where the tensors of a checkpoint are.
    pub layout: fn(&Weights) -> Layout,
}
