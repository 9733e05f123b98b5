//! The vision tower's tensors in a `model.safetensors`, checked against the
//! shapes its configuration implies and widened to f32.

use std::path::Path;

use modelbin_format::io::source::MappedFile;
use modelbin_format::safetensors::{self, SafeTensors};
use modelbin_format::{DType, ModelError, TensorStore};

use crate::Result;

/// A model directory's `model.safetensors`, with the prefix of the vision
/// tower's names.
pub(crate) struct Weights {
    file: SafeTensors<MappedFile>,
    prefix: &'static str,
}

impl Weights {
    /// Opens `dir/model.safetensors`; tensor names are taken under
    /// `prefix`.
    pub(crate) fn open(dir: &Path, prefix: &'static str) -> Result<Weights> {
        let file = safetensors::open(dir.join("model.safetensors"))?;
        Ok(Weights { file, prefix })
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
