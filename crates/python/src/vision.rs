//! The vision transformer behind `modelbin.vision.VisionModel`.

use std::path::PathBuf;

use modelbin_infer::vit::VisionModel;
use numpy::{PyArray1, PyArray3, PyArrayMethods, PyReadonlyArray4, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::infer_error;

/// A DINOv2, CLIP or SigLIP vision transformer loaded from a Hugging Face
/// model directory. Thread-safe; the GIL is released while it runs.
#[pyclass(frozen, module = "modelbin._native")]
pub struct NativeVisionModel {
    model: VisionModel,
}

#[pymethods]
impl NativeVisionModel {
    /// Loads the model directory `path`; `int8` quantizes the blocks'
    /// linear layers.
    #[new]
    #[pyo3(signature = (path, int8 = false))]
    fn new(py: Python<'_>, path: PathBuf, int8: bool) -> PyResult<Self> {
        let model = py.detach(|| {
            let mut model = VisionModel::open(&path).map_err(infer_error)?;
            if int8 {
                model.quantize_int8();
            }
            Ok::<_, PyErr>(model)
        })?;
        Ok(NativeVisionModel { model })
    }

    /// Whether the blocks' linear layers run on int8 weights.
    #[getter]
    fn int8(&self) -> bool {
        self.model.is_int8()
    }

    /// `dinov2`, `clip` or `siglip`.
    #[getter]
    fn family(&self) -> &'static str {
        self.model.family().name()
    }

    /// Transformer blocks.
    #[getter]
    fn blocks(&self) -> usize {
        self.model.blocks()
    }

    /// Width of the hidden states.
    #[getter]
    fn width(&self) -> usize {
        self.model.width()
    }

    /// Side of the square patches in pixels.
    #[getter]
    fn patch_size(&self) -> usize {
        self.model.patch_size()
    }

    /// Whether a CLS token leads each image's tokens.
    #[getter]
    fn has_cls(&self) -> bool {
        self.model.has_cls()
    }

    /// Register tokens after the CLS token.
    #[getter]
    fn registers(&self) -> usize {
        self.model.registers()
    }

    /// The configuration's image size, (height, width).
    #[getter]
    fn image_size(&self) -> (usize, usize) {
        self.model.image_size()
    }

    /// The patch grid (rows, columns) of `height × width` images.
    fn patch_grid(&self, height: usize, width: usize) -> PyResult<(usize, usize)> {
        self.model.patch_grid(height, width).map_err(infer_error)
    }

    /// The hidden states after each of `layers` (negative ones count from
    /// the end) for C-contiguous float32 pixel values `[n, 3, h, w]`: one
    /// float32 array `[n, tokens, width]` per layer.
    fn hidden_states<'py>(
        &self,
        py: Python<'py>,
        pixel_values: PyReadonlyArray4<'py, f32>,
        layers: Vec<i64>,
    ) -> PyResult<Vec<Bound<'py, PyArray3<f32>>>> {
        let resolved = crate::layers::resolve(&layers, self.model.blocks())?;
        let &[images, channels, height, width] = pixel_values.shape() else {
            return Err(PyValueError::new_err(
                "pixel_values must be [n, 3, height, width]",
            ));
        };
        if channels != 3 {
            return Err(PyValueError::new_err(format!(
                "pixel_values has {channels} channels; the model takes 3 (RGB)"
            )));
        }
        let pixels = pixel_values.as_slice()?;
        let states = py.detach(|| {
            self.model
                .hidden_states(pixels, images, height, width, &resolved)
                .map_err(infer_error)
        })?;
        let (rows, columns) = self.model.patch_grid(height, width).map_err(infer_error)?;
        let tokens = usize::from(self.model.has_cls()) + self.model.registers() + rows * columns;
        states
            .into_iter()
            .map(|values| {
                PyArray1::from_vec(py, values).reshape([images, tokens, self.model.width()])
            })
            .collect()
    }
}
