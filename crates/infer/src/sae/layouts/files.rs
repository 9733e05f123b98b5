//! Reading a downloaded autoencoder's files: its configuration under the
//! configuration caps, and its tensors by name, of a stated shape,
//! finite, widened to f32, each problem a [`SaeError::BadLayout`] naming
//! the tensor.

use std::path::{Path, PathBuf};

use modelbin_format::TensorStore;
use modelbin_format::io::source::MappedFile;
use modelbin_format::safetensors::{self, SafeTensors};

use crate::{Result, SaeError};

/// A safetensors file of an autoencoder's tensors.
pub(super) struct TensorFile {
    path: PathBuf,
    file: SafeTensors<MappedFile>,
}

impl TensorFile {
    /// Opens `path`.
    pub(super) fn open(path: &Path) -> Result<TensorFile> {
        Ok(TensorFile {
            path: path.to_path_buf(),
            file: safetensors::open(path)?,
        })
    }

    /// Whether the file holds `name`.
    pub(super) fn has(&self, name: &str) -> bool {
        self.file.names().any(|n| n == name)
    }

    /// Refuses a tensor not among `names`
    /// ([`SaeError::UnexpectedTensor`], naming the `architecture`).
    pub(super) fn only(&self, names: &[&str], architecture: &'static str) -> Result<()> {
        match self.file.names().find(|n| !names.contains(n)) {
            Some(other) => Err(SaeError::UnexpectedTensor {
                path: self.path.clone(),
                name: other.to_owned(),
                architecture,
            }
            .into()),
            None => Ok(()),
        }
    }

    /// The shape of `name`.
    pub(super) fn shape(&self, name: &str) -> Result<Vec<usize>> {
        match self.file.tensor(name) {
            Ok(view) => Ok(view.shape().to_vec()),
            Err(_) => Err(bad(&self.path, name, "missing")),
        }
    }

    /// The tensor `name` of `shape`, as finite f32 values.
    pub(super) fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let view = self
            .file
            .tensor(name)
            .map_err(|_| bad(&self.path, name, "missing"))?;
        check(&self.path, name, view.shape(), shape)?;
        let values = view.to_f32()?.into_owned();
        finite(&self.path, name, values)
    }

    /// The file's path.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

/// The JSON configuration file `path` (`what` names it in errors), read
/// under the configuration caps; an object.
pub(super) fn read_config(path: &Path, what: &'static str) -> Result<serde_json::Value> {
    let json = modelbin_format::io::source::read_json(
        path,
        what,
        modelbin_format::io::source::JsonCaps::CONFIG,
    )?;
    // Refused here: serde would read an array's items as a struct's fields
    // in order.
    if !json.is_object() {
        return Err(bad(path, WHOLE_FILE, "expected a JSON object"));
    }
    Ok(json)
}

/// What a [`SaeError::BadLayout`] names when the configuration file as a
/// whole is wrong (not a JSON object).
pub(super) const WHOLE_FILE: &str = "the file";

/// A [`SaeError::BadLayout`] for `what` in `path`.
pub(super) fn bad(path: &Path, what: &str, reason: &str) -> crate::Error {
    SaeError::BadLayout {
        path: path.to_path_buf(),
        what: what.to_owned(),
        reason: reason.to_owned(),
    }
    .into()
}

/// Refuses a tensor `name` of `shape` where `expected` is needed.
pub(super) fn check(path: &Path, name: &str, shape: &[usize], expected: &[usize]) -> Result<()> {
    if shape != expected {
        return Err(bad(
            path,
            name,
            &format!("has shape {shape:?} where {expected:?} is needed"),
        ));
    }
    Ok(())
}

/// `values` of tensor `name`, refused when one is NaN or infinite.
pub(super) fn finite(path: &Path, name: &str, values: Vec<f32>) -> Result<Vec<f32>> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(bad(
            path,
            name,
            &format!("holds {} at index {index}", values[index]),
        )),
        None => Ok(values),
    }
}
