//! SAEV datasets for PyTorch-style loops: indexing, the shuffled loader and
//! the writer, behind `modelbin.saev`. A dataset here is a union of one or
//! more ([`Union`]): several recordings, or a union manifest, read as one.

use std::path::PathBuf;
use std::sync::Arc;

use modelbin_format::saev::{
    self, LayerChoice, Loader, LoaderOptions, Metadata, Patches, Union, UnionSummary,
};
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::format_error;

fn patches(name: &str) -> PyResult<Patches> {
    match name {
        "image" => Ok(Patches::Image),
        "cls" => Ok(Patches::Cls),
        "all" => Ok(Patches::All),
        other => Err(PyValueError::new_err(format!(
            "patches must be \"image\", \"cls\" or \"all\", not {other:?}"
        ))),
    }
}

/// An example's (image, layer value, physical token).
type Coordinates = (u64, i64, u64);

fn layers(layer: Option<i64>) -> LayerChoice {
    layer.map_or(LayerChoice::All, LayerChoice::One)
}

/// A validated, memory-mapped SAEV dataset (or a union of several) seen
/// through one view (which tokens of which layers).
#[pyclass(frozen, module = "modelbin._native")]
pub struct NativeDataset {
    dataset: Arc<Union>,
    patches: Patches,
    layer: LayerChoice,
}

#[pymethods]
impl NativeDataset {
    /// Opens and validates the dataset directories `paths` (or union
    /// manifests) as one union; `layer` `None` walks every recorded layer.
    #[new]
    #[pyo3(signature = (paths, layer, patches_name))]
    fn new(
        py: Python<'_>,
        paths: Vec<PathBuf>,
        layer: Option<i64>,
        patches_name: &str,
    ) -> PyResult<Self> {
        let patches = patches(patches_name)?;
        let layer = layers(layer);
        let dataset = py.detach(|| Union::open(&paths).map_err(format_error))?;
        dataset.view(patches, layer).map_err(format_error)?;
        Ok(NativeDataset {
            dataset: Arc::new(dataset),
            patches,
            layer,
        })
    }

    /// Examples in the view.
    fn __len__(&self) -> PyResult<usize> {
        let view = self
            .dataset
            .view(self.patches, self.layer)
            .map_err(format_error)?;
        Ok(view.len() as usize)
    }

    /// Example `i`: its vector (float32 `[d]`) and its (image, layer, token).
    fn example<'py>(
        &self,
        py: Python<'py>,
        i: u64,
    ) -> PyResult<(Bound<'py, PyArray1<f32>>, Coordinates)> {
        let view = self
            .dataset
            .view(self.patches, self.layer)
            .map_err(format_error)?;
        let example = view.get(i).map_err(format_error)?;
        Ok((
            PyArray1::from_slice(py, example.vector),
            (example.img, example.layer, example.token),
        ))
    }

    /// The vector of (image, layer value, physical token).
    fn vector<'py>(
        &self,
        py: Python<'py>,
        img: u64,
        layer: i64,
        token: u64,
    ) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let Some((member, local)) = self.dataset.locate(img) else {
            return Err(format_error(modelbin_format::Error::Saev(
                modelbin_format::SaevError::InvalidCoordinate(format!(
                    "image {img} is out of range (n_imgs {})",
                    self.dataset.n_imgs()
                )),
            )));
        };
        let vector = self.dataset.members()[member]
            .vector(local, layer, token)
            .map_err(format_error)?;
        Ok(PyArray1::from_slice(py, vector))
    }

    /// The first member's `metadata.json` as JSON text.
    fn metadata_json(&self) -> String {
        self.dataset.metadata().to_json()
    }

    /// The union's summary (members, images, hash) as JSON text.
    fn union_json(&self) -> String {
        serde_json::to_string(&UnionSummary::of(&self.dataset)).expect("a summary serializes")
    }

    /// A loader over the view: shuffled (deterministic per seed and epoch)
    /// or in order.
    #[pyo3(signature = (shuffle, batch_size, seed, epoch, num_threads))]
    fn loader(
        &self,
        shuffle: bool,
        batch_size: usize,
        seed: u64,
        epoch: u64,
        num_threads: usize,
    ) -> PyResult<NativeLoader> {
        let options = LoaderOptions {
            batch_size,
            threads: num_threads,
            seed,
            epoch,
            ..LoaderOptions::default()
        };
        let make = if shuffle {
            Loader::shuffled
        } else {
            Loader::ordered
        };
        let loader = make(
            Union::clone(&self.dataset),
            self.patches,
            self.layer,
            options,
        )
        .map_err(format_error)?;
        Ok(NativeLoader {
            loader: std::sync::Mutex::new(loader),
        })
    }
}

/// Writes the manifest `out/union.json` of `members` (datasets or
/// manifests, in order, below `out`), checked by reading it back; returns
/// its path.
#[pyfunction]
pub fn saev_write_union(py: Python<'_>, out: PathBuf, members: Vec<PathBuf>) -> PyResult<PathBuf> {
    py.detach(|| saev::write_union(&out, &members).map_err(format_error))
}

/// Batches of one epoch, float32 `[B, d]`.
#[pyclass(module = "modelbin._native")]
pub struct NativeLoader {
    /// Behind a mutex only so the class is `Sync`, as PyO3 requires; one
    /// Python iterator is driven by one thread at a time anyway.
    loader: std::sync::Mutex<Loader>,
}

#[pymethods]
impl NativeLoader {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray2<f32>>>> {
        let loader = self.loader.get_mut().unwrap_or_else(|e| e.into_inner());
        let Some(batch) = py.detach(|| loader.next()) else {
            return Ok(None);
        };
        let (rows, dim) = (batch.rows, batch.dim);
        PyArray1::from_vec(py, batch.data)
            .reshape([rows, dim])
            .map(Some)
    }
}

/// Writes a dataset: `push` images `[L, T, d]`, then `finish`.
#[pyclass(module = "modelbin._native")]
pub struct NativeWriter {
    writer: Option<saev::Writer>,
}

#[pymethods]
impl NativeWriter {
    /// A writer of the dataset `metadata_json` describes, under `root`.
    #[new]
    fn new(root: PathBuf, metadata_json: &str) -> PyResult<Self> {
        let metadata = Metadata::parse(metadata_json).map_err(format_error)?;
        let writer = saev::Writer::create(&root, metadata).map_err(format_error)?;
        Ok(NativeWriter {
            writer: Some(writer),
        })
    }

    /// Writes the images of `images`, float32 `[n, L, T, d]` (C order).
    fn write(&mut self, py: Python<'_>, images: PyReadonlyArrayDyn<'_, f32>) -> PyResult<()> {
        let writer = self
            .writer
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("the writer is closed"))?;
        let values = images
            .as_slice()
            .map_err(|_| PyValueError::new_err("images must be a C-contiguous float32 array"))?;
        let image_len = images.shape().iter().skip(1).product::<usize>().max(1);
        py.detach(|| {
            values
                .chunks(image_len)
                .try_for_each(|image| writer.push(image))
                .map_err(format_error)
        })
    }

    /// Completes the dataset (shards, metadata.json, the directory renamed
    /// into place) and returns its path.
    fn close(&mut self, py: Python<'_>) -> PyResult<PathBuf> {
        let writer = self
            .writer
            .take()
            .ok_or_else(|| PyValueError::new_err("the writer is closed"))?;
        py.detach(|| writer.finish().map_err(format_error))
    }
}
