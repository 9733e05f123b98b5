//! Decoder language models and their `tokenizer.json` behind
//! `modelbin.LanguageModel` (`modelbin_infer::lm`, `modelbin_tokenize::HfTokenizer`).

use std::path::PathBuf;

use modelbin_infer::lm::{LanguageModel, LoadOptions, Site, generate_steered};
use modelbin_infer::sae::steer::steering;
use modelbin_tokenize::HfTokenizer;
use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::errors::{infer_error_at, tokenize_error};
use crate::generating::SamplingArgs;
use crate::sae::NativeSae;

/// What `generate` is steered by: an autoencoder and `(latent, alpha)`
/// pairs.
type Steer = (Py<NativeSae>, Vec<(usize, f32)>);

/// A decoder language model (GPT-2, GPT-NeoX, Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3) loaded from a
/// Hugging Face model directory. Thread-safe; the GIL is released while it
/// runs.
#[pyclass(frozen, module = "modelbin._native")]
pub struct NativeLanguageModel {
    model: LanguageModel,
}

#[pymethods]
impl NativeLanguageModel {
    /// Loads the model directory `path`; `int8` runs the linear layers on
    /// int8 weights.
    #[new]
    #[pyo3(signature = (path, int8 = false))]
    fn new(py: Python<'_>, path: PathBuf, int8: bool) -> PyResult<Self> {
        let model = py
            .detach(|| LanguageModel::open_with(&path, LoadOptions::int8(int8)))
            .map_err(|e| infer_error_at(e, &path))?;
        Ok(NativeLanguageModel { model })
    }

    /// Whether the linear layers run on int8 weights.
    #[getter]
    fn int8(&self) -> bool {
        self.model.is_int8()
    }

    /// The configuration's public fields as a dict.
    #[getter]
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.model.config();
        let dict = PyDict::new(py);
        dict.set_item("family", c.family.name())?;
        dict.set_item("model_type", &c.model_type)?;
        dict.set_item("hidden", c.hidden)?;
        dict.set_item("layers", c.layers)?;
        dict.set_item("heads", c.heads)?;
        dict.set_item("kv_heads", c.kv_heads)?;
        dict.set_item("head_dim", c.head_dim)?;
        dict.set_item("intermediate", c.intermediate)?;
        dict.set_item("vocab_size", c.vocab_size)?;
        dict.set_item("max_positions", c.max_positions)?;
        dict.set_item("bos_token_id", c.bos_token_id)?;
        dict.set_item("eos_token_ids", c.eos_token_ids.clone())?;
        dict.set_item("tie_word_embeddings", c.tie_word_embeddings)?;
        Ok(dict)
    }

    /// Logits of every position of one sequence, float32
    /// `[len(ids), vocab_size]`.
    fn logits<'py>(&self, py: Python<'py>, ids: Vec<u32>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let rows = ids.len();
        let vocab = self.model.config().vocab_size;
        let logits = py
            .detach(|| self.model.logits(&ids))
            .map_err(crate::errors::infer_error)?;
        PyArray1::from_vec(py, logits).reshape([rows, vocab])
    }

    /// The residual stream at `site` (`resid_pre`, `resid_post`,
    /// `attn_out`, `mlp_out`) of each of `layers` (negative ones count from
    /// the end) over `ids`, whole windows of `window` tokens: one float32
    /// array `[len(ids), hidden]` per layer, in the order asked.
    fn hidden_states<'py>(
        &self,
        py: Python<'py>,
        ids: Vec<u32>,
        window: usize,
        layers: Vec<i64>,
        site: &str,
    ) -> PyResult<Vec<Bound<'py, PyArray2<f32>>>> {
        let site: Site = site.parse().map_err(crate::errors::infer_error)?;
        let resolved = crate::layers::resolve(&layers, self.model.config().layers)?;
        let rows = ids.len();
        let hidden = self.model.config().hidden;
        let states = py
            .detach(|| self.model.activations(&ids, window, &resolved, site))
            .map_err(crate::errors::infer_error)?;
        states
            .into_iter()
            .map(|values| PyArray1::from_vec(py, values).reshape([rows, hidden]))
            .collect()
    }

    /// Up to `max_tokens` ids after `prompt`, sampled as `Sampling` says
    /// (temperature 0: greedy); stops early after an id of `stop`.
    /// Returns the ids and why it stopped (`max_tokens` or `stop_id`).
    /// `sampling` is `(temperature, top_k, top_p, seed)`. `steer` is an
    /// autoencoder and `(latent, alpha)` pairs: their decoder rows, scaled,
    /// are added at the autoencoder's site at every position.
    #[pyo3(signature = (prompt, max_tokens, sampling, stop, steer = None))]
    fn generate(
        &self,
        py: Python<'_>,
        prompt: Vec<u32>,
        max_tokens: usize,
        sampling: SamplingArgs,
        stop: Vec<u32>,
        steer: Option<Steer>,
    ) -> PyResult<(Vec<u32>, &'static str)> {
        let steering = match &steer {
            Some((sae, latents)) => {
                let sae = sae.get();
                Some(
                    py.detach(|| {
                        let model = &self.model;
                        steering(model, model.dir(), &sae.sae, &sae.dir, &sae.config, latents)
                    })
                    .map_err(crate::errors::infer_error)?,
                )
            }
            None => None,
        };
        crate::generating::run(py, sampling, |sampling| {
            generate_steered(
                &self.model,
                steering.as_ref(),
                &prompt,
                max_tokens,
                sampling,
                &stop,
                |_| {},
            )
        })
    }
}

/// A Hugging Face `tokenizer.json` (with `tokenizer_config.json` when
/// present), as `modelbin_tokenize::HfTokenizer` runs it.
#[pyclass(frozen, module = "modelbin._native")]
pub struct NativeHfTokenizer {
    tokenizer: HfTokenizer,
}

#[pymethods]
impl NativeHfTokenizer {
    /// Opens the tokenizer of the model directory `path`.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let tokenizer = py
            .detach(|| HfTokenizer::open_dir(&path))
            .map_err(tokenize_error)?;
        Ok(NativeHfTokenizer { tokenizer })
    }

    /// The ids of `text`, as `tokenizers`' `encode(text, add_special_tokens).ids`.
    fn encode(&self, py: Python<'_>, text: &str, add_special_tokens: bool) -> PyResult<Vec<u32>> {
        py.detach(|| self.tokenizer.encode(text, add_special_tokens))
            .map_err(tokenize_error)
    }

    /// The ids of `text` with special tokens' texts read as plain text.
    fn encode_ordinary(&self, py: Python<'_>, text: &str) -> PyResult<Vec<u32>> {
        py.detach(|| self.tokenizer.encode_ordinary(text))
            .map_err(tokenize_error)
    }

    /// The bytes `ids` stand for, special tokens included.
    fn decode_bytes<'py>(&self, py: Python<'py>, ids: Vec<u32>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py
            .detach(|| self.tokenizer.decode_bytes(&ids))
            .map_err(tokenize_error)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// One token's bytes, or `None` for an id of no token.
    fn token_bytes<'py>(&self, py: Python<'py>, id: u32) -> Option<Bound<'py, PyBytes>> {
        self.tokenizer
            .token_bytes(id)
            .map(|bytes| PyBytes::new(py, &bytes))
    }

    /// The BOS id, if any.
    #[getter]
    fn bos_token_id(&self) -> Option<u32> {
        self.tokenizer.bos_id()
    }

    /// The EOS id, if any.
    #[getter]
    fn eos_token_id(&self) -> Option<u32> {
        self.tokenizer.eos_id()
    }

    /// Whether `encode(text, True)` puts the BOS id first.
    #[getter]
    fn adds_bos(&self) -> bool {
        self.tokenizer.adds_bos()
    }

    /// The highest id plus one.
    #[getter]
    fn n_vocab(&self) -> u32 {
        self.tokenizer.vocab_size()
    }

    /// `modelbin` (byte-level BPE) or `tokenizers` (Hugging Face's crate).
    #[getter]
    fn engine(&self) -> &'static str {
        self.tokenizer.engine()
    }
}
