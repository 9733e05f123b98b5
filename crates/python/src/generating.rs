//! The sampling arguments `NativeTllm.generate` and
//! `NativeLanguageModel.generate` share, turned into one library call with
//! the GIL released.

use modelbin_infer::generation::{Generation, Sampling};
use pyo3::prelude::*;

use crate::errors::infer_error;

/// `(temperature, top_k, top_p, seed)`, as the Python halves pass them.
pub type SamplingArgs = (f32, Option<usize>, Option<f32>, u64);

/// Runs `generate` with the sampling `temperature`, `top_k`, `top_p` and
/// `seed` ask for (the library validates them), the GIL released; returns
/// the generated ids and why generation stopped.
pub fn run(
    py: Python<'_>,
    (temperature, top_k, top_p, seed): SamplingArgs,
    generate: impl FnOnce(Sampling) -> modelbin_infer::Result<Generation> + Send,
) -> PyResult<(Vec<u32>, &'static str)> {
    let sampling = Sampling {
        temperature,
        top_k,
        top_p,
        seed,
    };
    let generation = py.detach(|| generate(sampling)).map_err(infer_error)?;
    Ok((generation.ids, generation.stopped))
}
