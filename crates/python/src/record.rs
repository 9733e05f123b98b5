//! `modelbin.acts.record`: the recording `modelbin acts record` runs.

use std::path::PathBuf;

use modelbin_infer::record::{RecordSettings, Recording};
use pyo3::prelude::*;

use crate::errors::infer_error;

/// Records `model`'s residual stream over `files` as a SAEV dataset under
/// `out`, as `modelbin acts record` does with the same arguments; returns
/// the report `acts record --json` prints (path, images, vectors), as JSON
/// text. `progress(done, total)` is called with tokens after each round;
/// Ctrl-C between rounds raises `KeyboardInterrupt` and leaves nothing.
#[pyfunction]
#[pyo3(signature = (model, files, out, *, layers, tokens_per_text, cls, max_patches_per_shard, progress))]
#[allow(clippy::too_many_arguments)]
pub fn acts_record(
    py: Python<'_>,
    model: PathBuf,
    files: Vec<PathBuf>,
    out: PathBuf,
    layers: Vec<i64>,
    tokens_per_text: Option<usize>,
    cls: bool,
    max_patches_per_shard: u64,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let settings = RecordSettings {
        layers,
        tokens_per_text,
        cls,
        max_patches_per_shard,
    };
    let mut recording = py
        .detach(|| Recording::start(&model, &files, settings, &out))
        .map_err(infer_error)?;
    while py
        .detach(|| recording.record_round())
        .map_err(infer_error)?
    {
        py.check_signals()?;
        if let Some(progress) = &progress {
            progress.call1(py, (recording.done(), recording.total()))?;
        }
    }
    let recorded = py.detach(|| recording.finish()).map_err(infer_error)?;
    Ok(serde_json::json!({
        "path": recorded.dir, "images": recorded.images, "vectors": recorded.vectors,
    })
    .to_string())
}
