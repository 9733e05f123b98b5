//! TLLM inference behind `modelbin.TLLM`.

use std::path::PathBuf;

use modelbin_infer::tllm::{Model, generate};
use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;

use crate::errors::infer_error;
use crate::generating::SamplingArgs;

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
    /// `sampling` is `(temperature, top_k, top_p, seed)`.
    fn generate(
        &self,
        py: Python<'_>,
        prompt: Vec<u32>,
        max_tokens: usize,
        sampling: SamplingArgs,
        stop: Option<u32>,
    ) -> PyResult<(Vec<u32>, &'static str)> {
        crate::generating::run(py, sampling, |sampling| {
            generate(&self.model, &prompt, max_tokens, sampling, stop, |_| {})
        })
    }
}

/// Trains a byte-level model on `corpus` and saves it at `out`, as
/// `modelbin tllm train` does with the same arguments; returns the summary
/// `tllm train --json` prints, as JSON text. `progress(report)` is called
/// after each step with its report as JSON text (`step`, `loss`, `lr`,
/// `grad_norm`, `tokens_per_second`, and `val_loss` where evaluated);
/// Ctrl-C between steps raises `KeyboardInterrupt`, leaving the last
/// checkpoint.
#[pyfunction]
#[pyo3(signature = (
    corpus, out, *, dim, layers, heads, ffn, seq, dropout, batch_size, steps, lr, warmup,
    weight_decay, clip, seed, val_fraction, eval_every, checkpoint_every, resume, force, threads,
    progress
))]
#[allow(clippy::too_many_arguments)]
pub fn tllm_train(
    py: Python<'_>,
    corpus: Vec<PathBuf>,
    out: PathBuf,
    dim: Option<u32>,
    layers: Option<u32>,
    heads: Option<u32>,
    ffn: Option<u32>,
    seq: Option<u32>,
    dropout: Option<f32>,
    batch_size: Option<usize>,
    steps: Option<u64>,
    lr: Option<f64>,
    warmup: Option<u64>,
    weight_decay: Option<f64>,
    clip: Option<f64>,
    seed: Option<u64>,
    val_fraction: Option<f64>,
    eval_every: Option<u64>,
    checkpoint_every: Option<u64>,
    resume: bool,
    force: bool,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    use modelbin_format::tllm::Config;
    use modelbin_infer::Stepped;
    use modelbin_infer::tllm::train::{TrainingRun, TrainingSettings};
    // A setting left out (None) is the library's default.
    let defaults = TrainingSettings::default();
    let shape = &defaults.config;
    let config = Config {
        model_dim: dim.unwrap_or(shape.model_dim),
        n_layers: layers.unwrap_or(shape.n_layers),
        n_heads: heads.unwrap_or(shape.n_heads),
        ffn_hidden_dim: ffn.unwrap_or(shape.ffn_hidden_dim),
        max_seq_len: seq.unwrap_or(shape.max_seq_len),
        vocab_size: shape.vocab_size,
        dropout: dropout.unwrap_or(shape.dropout),
    };
    let batch_size = batch_size.unwrap_or(defaults.batch_size);
    let steps = steps.unwrap_or(defaults.steps);
    let lr = lr.unwrap_or(defaults.lr);
    let weight_decay = weight_decay.unwrap_or(defaults.weight_decay);
    let clip = clip.unwrap_or(defaults.clip);
    config.validate().map_err(crate::errors::format_error)?;
    let positive = |value: f64| value.is_finite() && value > 0.0;
    let coefficient = |value: f64| value.is_finite() && value >= 0.0;
    if steps == 0
        || batch_size == 0
        || !positive(lr)
        || !coefficient(weight_decay)
        || !coefficient(clip)
    {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "steps and batch_size must be at least 1, lr finite and above 0, weight_decay and clip finite and 0 or more",
        ));
    }
    let settings = TrainingSettings {
        batch_size,
        steps,
        lr,
        warmup,
        weight_decay,
        clip,
        seed: seed.unwrap_or(defaults.seed),
        val_fraction: val_fraction.unwrap_or(defaults.val_fraction),
        eval_every: eval_every.unwrap_or(defaults.eval_every),
        checkpoint_every: checkpoint_every.unwrap_or(defaults.checkpoint_every),
        resume,
        replace: force,
        threads,
        ..TrainingSettings::new(config)
    };
    let mut run = py
        .detach(|| TrainingRun::start(&corpus, &out, settings))
        .map_err(infer_error)?;
    while !run.is_done() {
        let step = py.detach(|| run.step()).map_err(infer_error)?;
        py.check_signals()?;
        if let Some(progress) = &progress {
            let report = step.report;
            let mut entry = serde_json::json!({
                "step": report.step, "loss": report.loss, "lr": report.lr,
                "grad_norm": report.grad_norm, "tokens_per_second": step.tokens_per_second,
            });
            if let Some(val) = step.val_loss {
                entry["val_loss"] = val.into();
            }
            progress.call1(py, (entry.to_string(),))?;
        }
    }
    let summary = py.detach(|| run.finish()).map_err(infer_error)?;
    Ok(serde_json::to_string(&summary).expect("a summary serializes"))
}
