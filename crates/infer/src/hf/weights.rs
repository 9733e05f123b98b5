//! A model directory's tensors (`model.safetensors`, or the shards of
//! `model.safetensors.index.json`), checked against the shapes the
//! configuration implies and widened to f32.

use std::path::Path;

use modelbin_format::safetensors::sharded::Sharded;
use modelbin_format::{DType, ModelError};

use crate::Result;

/// A model directory's checkpoint, with a prefix of the names taken (the
/// vision tower's inside a CLIP model, GPT-2's `transformer.`).
pub(crate) struct Weights {
    file: Sharded,
    prefix: String,
}

impl Weights {
    /// Opens `dir/model.safetensors`, or the shards of
    /// `dir/model.safetensors.index.json`; tensor names are taken under
    /// `prefix`.
    pub(crate) fn open(dir: &Path, prefix: &str) -> Result<Weights> {
        let file = Sharded::open_dir(dir)?;
        Ok(Weights {
            file,
            prefix: prefix.to_owned(),
        })
    }

    /// Takes the names under `prefix` from now on.
    pub(crate) fn set_prefix(&mut self, prefix: &str) {
        self.prefix = prefix.to_owned();
    }

    /// Whether the checkpoint has a tensor of the full name `name` (the
    /// prefix not applied).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.file.get(name).is_some()
    }

    /// The float tensor `name` (under the prefix) as f32, if the file has
    /// it; an error if it has it in another shape than `shape`, in a
    /// dtype other than F32, F16 or BF16, or with a NaN or infinite value
    /// ([`ModelError::NonFinite`]).
    pub(crate) fn optional(&self, name: &str, shape: &[usize]) -> Result<Option<Vec<f32>>> {
        let full = format!("{}{name}", self.prefix);
        let Some(tensor) = self.file.get(&full) else {
            return Ok(None);
        };
        if !matches!(tensor.dtype(), DType::F32 | DType::F16 | DType::BF16) {
            return Err(modelbin_format::Error::Model(ModelError::WrongDtype {
                name: full,
                dtype: tensor.dtype(),
                expected: "expected F32, F16 or BF16",
            })
            .into());
        }
        if tensor.shape() != shape {
            return Err(modelbin_format::Error::Model(ModelError::WrongShape {
                name: full,
                expected: shape.to_vec(),
                found: tensor.shape().to_vec(),
            })
            .into());
        }
        let values = tensor.to_f32()?.into_owned();
        // A NaN or infinite weight would make every recorded vector NaN:
        // refused here, naming the tensor, before any image is run.
        modelbin_format::tensor::floats::require_finite_values(&full, &values)?;
        Ok(Some(values))
    }

    /// The float tensor `name` (under the prefix), `shape`-shaped, as f32.
    pub(crate) fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        self.optional(name, shape)?.ok_or_else(|| {
            modelbin_format::Error::Model(ModelError::MissingTensor {
                name: format!("{}{name}", self.prefix),
            })
            .into()
        })
    }
}
