//! TLLM inference behind `modelbin.TLLM`.

use std::path::PathBuf;

use modelbin_infer::tllm::{Model, Sampling, generate};
use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;

use crate::errors::infer_error;

/// A loaded TLLM model. Thread-safe; the GIL is released while it runs.
#[pyclass(frozen, module = "modelbin._native")]
pub struct NativeTllm {
    model: Model,
}

#[pymethods]
impl NativeTllm {
    /// Opens and loads a TLLM file.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let model = py.detach(|| Model::open(&path)).map_err(infer_error)?;
        Ok(NativeTllm { model })
    }

    /// The vocabulary size.
    #[getter]
    fn vocab_size(&self) -> u32 {
        self.model.config().vocab_size
    }

    /// The longest sequence the model takes.
    #[getter]
    fn max_seq_len(&self) -> u32 {
        self.model.config().max_seq_len
    }

    /// Logits of every position, float32 `[len(ids), vocab_size]`.
    fn logits<'py>(&self, py: Python<'py>, ids: Vec<u32>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let rows = ids.len();
        let vocab = self.vocab_size() as usize;
        let logits = py
            .detach(|| self.model.forward(&ids))
            .map_err(infer_error)?;
        PyArray1::from_vec(py, logits).reshape([rows, vocab])
    }

    /// Up to `max_tokens` ids after `prompt`, sampled as `Sampling` says
    /// (temperature 0: greedy); stops early at `stop` or a full context.
    #[pyo3(signature = (prompt, max_tokens, temperature, top_k, top_p, seed, stop))]
    #[allow(clippy::too_many_arguments)]
    fn generate(
        &self,
        py: Python<'_>,
        prompt: Vec<u32>,
        max_tokens: usize,
        temperature: f32,
        top_k: Option<usize>,
        top_p: Option<f32>,
        seed: u64,
        stop: Option<u32>,
    ) -> PyResult<(Vec<u32>, &'static str)> {
        let sampling = Sampling {
            temperature,
            top_k,
            top_p,
            seed,
        };
        let generation = py
            .detach(|| generate(&self.model, &prompt, max_tokens, sampling, stop, |_| {}))
            .map_err(infer_error)?;
        Ok((generation.ids, generation.stopped))
    }
}
