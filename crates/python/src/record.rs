//! `modelbin.acts.record`: the recordings `modelbin acts record` runs, over
//! text files and over image files.

use std::path::PathBuf;

use modelbin_format::io::texts::TextFormat;
use modelbin_infer::record::{ImageRecordSettings, RecordSettings, Recording, TextInputs};
use pyo3::prelude::*;

use crate::errors::infer_error;
use crate::sae::with_progress;

/// Records `model`'s residual stream over `files` as a SAEV dataset under
/// `out`, as `modelbin acts record` does with the same arguments; returns
/// the summary `acts record --json` prints, as JSON text. `progress(done, total)` is called with tokens after each round;
/// Ctrl-C between rounds raises `KeyboardInterrupt` and leaves nothing.
#[pyfunction]
#[pyo3(signature = (model, files, out, *, layers=None, tokens_per_text=None, cls=false, max_patches_per_shard=None, jsonl=false, field=None, site=None, bos=true, int8=false, texts=None, max_tokens=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn acts_record(
    py: Python<'_>,
    model: PathBuf,
    files: Vec<PathBuf>,
    out: PathBuf,
    layers: Option<Vec<i64>>,
    tokens_per_text: Option<usize>,
    cls: bool,
    max_patches_per_shard: Option<u64>,
    jsonl: bool,
    field: Option<String>,
    site: Option<&str>,
    bos: bool,
    int8: bool,
    texts: Option<Vec<String>>,
    max_tokens: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    // A setting left out (None) is the library's default.
    let defaults = RecordSettings::default();
    let settings = RecordSettings {
        layers: layers.unwrap_or(defaults.layers),
        tokens_per_text,
        cls,
        site: match site {
            Some(site) => site.parse().map_err(infer_error)?,
            None => defaults.site,
        },
        bos,
        int8,
        max_patches_per_shard: max_patches_per_shard.unwrap_or(defaults.max_patches_per_shard),
        text_format: TextFormat { jsonl, field },
        max_tokens,
    };
    let recording = py
        .detach(|| {
            let inputs = match &texts {
                Some(texts) => TextInputs::Texts(texts),
                None => TextInputs::Files(&files),
            };
            Recording::start_text(&model, inputs, settings, &out)
        })
        .map_err(infer_error)?;
    run(py, recording, progress)
}

/// Records the vision transformer in `model` over the image files of
/// `images` (files and directories) as a SAEV dataset under `out`, as
/// `modelbin acts record --images` does; returns the summary `acts record
/// --json` prints (with the files skipped, path and reason), as JSON text.
/// `scan_progress(done, total)` is called with files while they are first
/// read, `progress(done, total)` with images after each round; Ctrl-C
/// raises `KeyboardInterrupt` and leaves nothing.
#[pyfunction]
#[pyo3(signature = (model, images, out, *, layers, max_patches_per_shard, strict, int8, scan_progress, progress))]
#[allow(clippy::too_many_arguments)]
pub fn acts_record_images(
    py: Python<'_>,
    model: PathBuf,
    images: Vec<PathBuf>,
    out: PathBuf,
    layers: Option<Vec<i64>>,
    max_patches_per_shard: Option<u64>,
    strict: bool,
    int8: bool,
    scan_progress: Option<Py<PyAny>>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let defaults = ImageRecordSettings::default();
    let settings = ImageRecordSettings {
        layers: layers.unwrap_or(defaults.layers),
        max_patches_per_shard: max_patches_per_shard.unwrap_or(defaults.max_patches_per_shard),
        strict,
        int8,
    };
    let recording = with_progress(py, scan_progress, |scanned| {
        Recording::start_images(&model, &images, settings, &out, scanned)
    })?;
    run(py, recording, progress)
}

/// Records every round of `recording` (Ctrl-C between rounds raises
/// `KeyboardInterrupt`), finishes it and returns its summary as JSON text:
/// what `acts record --json` prints.
fn run(py: Python<'_>, mut recording: Recording, progress: Option<Py<PyAny>>) -> PyResult<String> {
    while py
        .detach(|| recording.record_round())
        .map_err(infer_error)?
    {
        py.check_signals()?;
        if let Some(progress) = &progress {
            progress.call1(py, (recording.done(), recording.total()))?;
        }
    }
    let summary = py.detach(|| recording.finish()).map_err(infer_error)?;
    Ok(serde_json::to_string(&summary).expect("a summary serializes"))
}
