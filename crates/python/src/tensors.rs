//! Tensor files for `modelbin.numpy` and `modelbin.safe_open`: the
//! validated table of a file (Python maps the file and views the tensors in
//! place), writing, `verify` and `inspect`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use modelbin_format::bintensors::BinTensors;
use modelbin_format::embd::Embd;
use modelbin_format::safetensors::SafeTensors;
use modelbin_format::tllm::Tllm;
use modelbin_format::{DType, Format, TensorFile, TensorStore, TensorView, detect};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::{format_error, format_error_at, new_format_error};

/// One tensor: name, dtype name, shape, absolute data offset, byte length.
type Entry = (String, &'static str, Vec<usize>, u64, u64);

/// A validated file's format, tensors in file order, and metadata.
type Table = (&'static str, Vec<Entry>, Option<BTreeMap<String, String>>);

fn table(format: Format, file: &impl TensorStore) -> Table {
    let entries = file
        .tensors()
        .enumerate()
        .map(|(index, t)| {
            (
                t.name().to_owned(),
                t.dtype().name(),
                t.shape().to_vec(),
                file.data_start(index).unwrap_or_default(),
                t.data().len() as u64,
            )
        })
        .collect();
    (format.name(), entries, file.metadata().cloned())
}

/// Opens and validates the tensor file at `path` (BinTensors, safetensors,
/// EMBD or TLLM, by content) and returns its table.
#[pyfunction]
pub fn tensor_table(py: Python<'_>, path: PathBuf) -> PyResult<Table> {
    py.detach(|| {
        let file = TensorFile::open(&path).map_err(|e| format_error_at(e, &path))?;
        Ok(table(file.format(), &file))
    })
}

/// [`tensor_table`] of a file's bytes; bytes of no tensor format raise
/// `FormatError`.
#[pyfunction]
pub fn tensor_table_of_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Table> {
    py.detach(|| {
        let format = detect::detect_bytes(data).ok_or_else(|| {
            new_format_error(
                "not a BinTensors, safetensors, EMBD or TLLM file".into(),
                None,
                None,
            )
        })?;
        let table = match format {
            Format::BinTensors => BinTensors::from_buffer(data).map(|f| table(format, &f)),
            Format::Safetensors => SafeTensors::from_buffer(data).map(|f| table(format, &f)),
            Format::Embd => Embd::from_buffer(data).map(|f| table(format, &f)),
            Format::Tllm => Tllm::from_buffer(data).map(|f| table(format, &f)),
            other => {
                let message = format!("a {other} file holds no tensors");
                return Err(new_format_error(message, None, None));
            }
        };
        table.map_err(format_error)
    })
}

/// Writes `entries` (name, dtype name, shape, little-endian bytes) as
/// `format` (`bintensors` or `safetensors`): to `path` atomically, or, without
/// a path, returned as bytes.
#[pyfunction]
#[pyo3(signature = (format, entries, metadata=None, path=None))]
pub fn serialize<'py>(
    py: Python<'py>,
    format: &str,
    entries: Vec<(String, String, Vec<usize>, Vec<u8>)>,
    metadata: Option<BTreeMap<String, String>>,
    path: Option<PathBuf>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let format = match Format::from_name(format) {
        Some(f @ (Format::BinTensors | Format::Safetensors)) => f,
        _ => {
            return Err(PyValueError::new_err(format!(
                "cannot write {format:?}: modelbin.numpy writes .bt (BinTensors) and .safetensors"
            )));
        }
    };
    let bytes = py.detach(|| {
        let views = entries
            .iter()
            .map(|(name, dtype, shape, data)| {
                let dtype = DType::from_name(dtype).ok_or_else(|| {
                    PyValueError::new_err(format!("tensor {name:?}: unknown dtype {dtype}"))
                })?;
                TensorView::new(name, dtype, shape, data).map_err(format_error)
            })
            .collect::<PyResult<Vec<_>>>()?;
        let metadata = metadata.as_ref();
        let written = match (format, &path) {
            (Format::BinTensors, Some(path)) => {
                modelbin_format::bintensors::write_file(path, views, metadata, &mut |_, _| {})
                    .map(|_| None)
            }
            (_, Some(path)) => {
                modelbin_format::safetensors::write_file(path, views, metadata, &mut |_, _| {})
                    .map(|_| None)
            }
            (Format::BinTensors, None) => {
                modelbin_format::bintensors::serialize(views, metadata).map(Some)
            }
            (_, None) => modelbin_format::safetensors::serialize(views, metadata).map(Some),
        };
        written.map_err(format_error)
    })?;
    Ok(bytes.map(|b| PyBytes::new(py, &b)))
}

/// Opens `path` (any format, by content) and runs every check; raises
/// `FormatError` on the first problem.
#[pyfunction]
pub fn verify(py: Python<'_>, path: PathBuf) -> PyResult<()> {
    py.detach(|| {
        let file = modelbin_format::open(&path).map_err(|e| format_error_at(e, &path))?;
        file.verify().map_err(|e| format_error_at(e, &path))
    })
}

/// `modelbin inspect --json` of `path`, as JSON text.
#[pyfunction]
pub fn inspect_json(py: Python<'_>, path: PathBuf) -> PyResult<String> {
    py.detach(|| {
        let file = modelbin_format::open(&path).map_err(|e| format_error_at(e, &path))?;
        serde_json::to_string(&modelbin_format::inspect::Summary::of(&file))
            .map_err(|e| PyValueError::new_err(e.to_string()))
    })
}
