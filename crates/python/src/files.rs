//! Input files opened from Python the way the library opens them
//! (`modelbin_format::io::source`): regular files only, so that a FIFO or a
//! device named as an input is refused at once instead of blocking the
//! interpreter or filling its memory, and small documents under a cap.

use std::os::fd::IntoRawFd;
use std::path::PathBuf;

use modelbin_format::io::source::{self, JsonCaps};
use pyo3::prelude::*;

use crate::errors::format_error;

/// Opens the regular file `path` for reading and returns its descriptor,
/// which the caller owns (`os.fdopen`). Anything else (a directory, a
/// FIFO, a socket, a device) raises `OSError` at once.
#[pyfunction]
pub fn open_input(path: PathBuf) -> PyResult<i32> {
    let (file, _) = source::open_regular(&path).map_err(format_error)?;
    Ok(file.into_raw_fd())
}

/// The text of the configuration file `path`: a regular file of at most
/// 1 MiB, as every model-directory JSON file is read.
#[pyfunction]
pub fn read_config_text(path: PathBuf) -> PyResult<String> {
    source::read_capped_text(&path, "a configuration file", JsonCaps::CONFIG.bytes)
        .map_err(format_error)
}

/// The checkpoint id of the model at `path` (a model directory or file):
/// what a recording names its model by, and what `sae eval --model`,
/// `sae features --model` and steering compare (`modelbin_infer::identity`).
#[pyfunction]
pub fn checkpoint_id(py: Python<'_>, path: PathBuf) -> PyResult<String> {
    py.detach(|| modelbin_infer::identity::checkpoint_id(&path))
        .map_err(|e| crate::errors::infer_error_at(e, &path))
}
