//! The image processor behind `modelbin.vision.ImageProcessor`.

use std::path::PathBuf;

use modelbin_infer::vit::ImageProcessor;
use numpy::{PyArray1, PyArray3, PyArray4, PyArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;

use crate::errors::{format_error, infer_error};

/// An image given to the processor: a file's path or its bytes.
enum Source {
    /// A file to read.
    Path(PathBuf),
    /// The bytes of a JPEG or PNG image.
    Bytes(Vec<u8>),
}

impl Source {
    /// `object` as a source: `bytes`, or anything that extracts as a path.
    fn extract(object: &Bound<'_, PyAny>) -> PyResult<Source> {
        match object.cast::<PyBytes>() {
            Ok(bytes) => Ok(Source::Bytes(bytes.as_bytes().to_vec())),
            Err(_) => Ok(Source::Path(object.extract()?)),
        }
    }

    /// How an error about the image names it.
    fn name(&self, index: usize) -> String {
        match self {
            Source::Path(path) => path.display().to_string(),
            Source::Bytes(_) => format!("image {index} (bytes)"),
        }
    }

    /// The model's view of the image, errors naming it.
    fn model_view(&self, processor: &ImageProcessor, index: usize) -> PyResult<image::RgbImage> {
        let read;
        let bytes = match self {
            Source::Bytes(bytes) => bytes,
            Source::Path(path) => {
                read = modelbin_format::saev::read_image_file(path).map_err(format_error)?;
                &read
            }
        };
        processor
            .model_view(bytes)
            .map_err(|e| PyValueError::new_err(format!("{}: {e}", self.name(index))))
    }
}

/// A vision model's image processor read from its
/// `preprocessor_config.json`. Thread-safe; the GIL is released while it
/// works.
#[pyclass(frozen, module = "modelbin._native")]
pub struct NativeImageProcessor {
    processor: ImageProcessor,
}

#[pymethods]
impl NativeImageProcessor {
    /// The processor of the model directory `model_dir`.
    #[new]
    fn new(py: Python<'_>, model_dir: PathBuf) -> PyResult<Self> {
        let processor = py
            .detach(|| ImageProcessor::open(&model_dir))
            .map_err(infer_error)?;
        Ok(NativeImageProcessor { processor })
    }

    /// `(height, width)` of the processed images.
    #[getter]
    fn size(&self) -> (usize, usize) {
        self.processor.output_size()
    }

    /// Float32 `[len(images), 3, height, width]`: rescaled, and normalized
    /// when `normalize`; the images decoded in parallel.
    #[pyo3(signature = (images, normalize = true))]
    fn pixel_values<'py>(
        &self,
        py: Python<'py>,
        images: Vec<Bound<'py, PyAny>>,
        normalize: bool,
    ) -> PyResult<Bound<'py, PyArray4<f32>>> {
        let sources = images
            .iter()
            .map(Source::extract)
            .collect::<PyResult<Vec<_>>>()?;
        let (height, width) = self.processor.output_size();
        let flat = py.detach(|| -> PyResult<Vec<f32>> {
            let mut flat = vec![0.0f32; sources.len() * 3 * height * width];
            let outcomes: Vec<PyResult<()>> = flat
                .par_chunks_mut(3 * height * width)
                .zip(sources.par_iter())
                .enumerate()
                .map(|(index, (out, source))| {
                    let view = source.model_view(&self.processor, index)?;
                    out.copy_from_slice(&self.processor.to_pixel_values(&view, normalize));
                    Ok(())
                })
                .collect();
            // The first failing image in the order given, whatever finished first.
            outcomes.into_iter().collect::<PyResult<()>>()?;
            Ok(flat)
        })?;
        PyArray1::from_vec(py, flat).reshape([sources.len(), 3, height, width])
    }

    /// The image the model sees, as uint8 `[height, width, 3]`.
    fn model_view<'py>(
        &self,
        py: Python<'py>,
        image: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray3<u8>>> {
        let source = Source::extract(&image)?;
        let view = py.detach(|| source.model_view(&self.processor, 0))?;
        let (width, height) = view.dimensions();
        PyArray1::from_vec(py, view.into_raw()).reshape([height as usize, width as usize, 3])
    }
}
