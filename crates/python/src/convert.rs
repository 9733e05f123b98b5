//! `modelbin.convert`: the conversion `modelbin convert` runs.

use std::path::PathBuf;

use modelbin_format::Format;
use modelbin_format::convert::sentence_transformers::TARGET;
use modelbin_format::convert::{
    ConvertOptions, convert as convert_file, to_sentence_transformers, weight_dtype,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::format_error;

/// Converts `src` into `dst` (written atomically), as `modelbin convert`
/// does with the same arguments; returns the report `convert --json`
/// prints, as JSON text. `to` is a format name (default: from `dst`'s
/// extension; `sentence-transformers` for a model directory), `dtype` a
/// weight dtype for EMBD (`f32`, `f16`, `bf16`, `int8`). `progress(done, total)` is called with bytes as it writes.
#[pyfunction]
#[pyo3(signature = (src, dst, *, to, dtype, no_special_tokens, progress))]
pub fn convert(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    to: Option<&str>,
    dtype: Option<&str>,
    no_special_tokens: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let on_progress = |done, total| {
        if let Some(progress) = &progress {
            // A failing callback only loses the progress display.
            Python::attach(|py| {
                let _ = progress.call1(py, (done, total));
            });
        }
    };
    if to == Some(TARGET) {
        if dtype.is_some() || no_special_tokens {
            return Err(PyValueError::new_err(format!(
                "to={TARGET:?} writes float32 weights and takes no dtype or no_special_tokens"
            )));
        }
        let report = py
            .detach(|| to_sentence_transformers(&src, &dst, &mut { on_progress }))
            .map_err(format_error)?;
        return Ok(serde_json::to_string(&report).expect("a report serializes"));
    }
    let to = match to {
        Some(name) => Format::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
            PyValueError::new_err(format!(
                "to={name:?}: unknown format (known: {}, {TARGET})",
                known.join(", ")
            ))
        })?,
        None => Format::from_extension(&dst).ok_or_else(|| {
            PyValueError::new_err(format!(
                "cannot tell the output format from {:?}; pass to=FORMAT",
                dst.display().to_string()
            ))
        })?,
    };
    let dtype = dtype
        .map(|name| {
            weight_dtype(name).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "dtype={name:?}: unknown weight dtype (known: f32, f16, bf16, int8)"
                ))
            })
        })
        .transpose()?;
    let options = ConvertOptions {
        include_special_tokens: !no_special_tokens,
        dtype,
        quantizer: Some(modelbin_infer::quantize_weight_blocks),
    };
    let report = py
        .detach(|| convert_file(&src, &dst, to, options, &mut { on_progress }))
        .map_err(format_error)?;
    Ok(serde_json::to_string(&report).expect("a report serializes"))
}
