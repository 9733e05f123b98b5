//! The sentence embedder behind `modelbin.SentenceEmbedder`.

use std::path::PathBuf;

use modelbin_infer::Embedder;
use modelbin_infer::search::{LineIndex, Segments};
use numpy::{PyArray2, PyArrayMethods};
use pyo3::prelude::*;

use crate::errors::{infer_error, infer_error_at};

/// A BERT sentence encoder loaded from an EMBD file or a Hugging Face /
/// sentence-transformers model directory. Thread-safe; the GIL is released
/// while it runs.
#[pyclass(frozen, module = "modelbin._native")]
pub struct NativeEmbedder {
    embedder: Embedder,
}

#[pymethods]
impl NativeEmbedder {
    /// Loads `path`: an `.embd` file, or a model directory.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let embedder =
            py.detach(|| Embedder::open_model(&path).map_err(|e| infer_error_at(e, &path)))?;
        Ok(NativeEmbedder { embedder })
    }

    /// Width of the embeddings.
    #[getter]
    fn dim(&self) -> usize {
        self.embedder.dim()
    }

    /// Longest input in tokens (`[CLS]` and `[SEP]` included); longer texts
    /// are truncated.
    #[getter]
    fn max_seq_length(&self) -> usize {
        self.embedder.config().max_seq_length
    }

    /// Whether the model's last step normalises embeddings to unit length.
    #[getter]
    fn normalizes(&self) -> bool {
        self.embedder.config().normalize
    }

    /// One embedding per text, as a float32 array `[len(texts), dim]`
    /// (texts are sorted by length and packed without padding, so results do
    /// not depend on how callers batch them).
    fn embed<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<String>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let dim = self.dim();
        let flat = py.detach(|| {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            self.embedder
                .embed(&refs)
                .map(|vectors| vectors.concat())
                .map_err(infer_error)
        })?;
        let array = numpy::PyArray1::from_vec(py, flat);
        array.reshape([texts.len(), dim])
    }

    /// The final hidden state of each token of each text: one float32
    /// array `[tokens, hidden]` per text.
    fn token_embeddings<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<String>,
    ) -> PyResult<Vec<Bound<'py, PyArray2<f32>>>> {
        let hidden = self.embedder.config().hidden_size;
        let states = py.detach(|| {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            self.embedder.token_embeddings(&refs).map_err(infer_error)
        })?;
        states
            .into_iter()
            .map(|flat| {
                let rows = flat.len() / hidden;
                numpy::PyArray1::from_vec(py, flat).reshape([rows, hidden])
            })
            .collect()
    }

    /// The model input ids of each text (`[CLS]` … `[SEP]`, truncated).
    fn tokenize(&self, py: Python<'_>, texts: Vec<String>) -> Vec<Vec<u32>> {
        py.detach(|| texts.iter().map(|t| self.embedder.tokenize(t)).collect())
    }
}

/// Embedded lines of text files, searched by meaning (see
/// `modelbin_infer::search`).
#[pyclass(frozen, module = "modelbin._native")]
pub struct NativeLineIndex {
    index: modelbin_infer::search::LineIndex,
}

#[pymethods]
impl NativeLineIndex {
    /// Embeds the non-empty lines of `files` (directories walked for text
    /// files) with `embedder`, the model at `model`; JSON Lines files give
    /// their texts.
    #[staticmethod]
    #[pyo3(signature = (embedder, model, files, *, jsonl=false, field=None, chunk_tokens=None, overlap=None))]
    // One argument per Python keyword: the signature is the Python API.
    #[allow(clippy::too_many_arguments)]
    fn build(
        py: Python<'_>,
        embedder: &NativeEmbedder,
        model: PathBuf,
        files: Vec<PathBuf>,
        jsonl: bool,
        field: Option<String>,
        chunk_tokens: Option<usize>,
        overlap: Option<usize>,
    ) -> PyResult<Self> {
        let format = modelbin_format::io::texts::TextFormat { jsonl, field };
        let segments = match chunk_tokens {
            None => Segments::Lines,
            Some(tokens) => Segments::chunks(tokens, overlap),
        };
        let index = py
            .detach(|| {
                let max_line = modelbin_format::io::lines::DEFAULT_MAX_LINE_BYTES;
                let files = format.text_files(&files)?;
                LineIndex::build(
                    &embedder.embedder,
                    &model,
                    &files,
                    &format,
                    max_line,
                    segments,
                )
            })
            .map_err(infer_error)?;
        Ok(NativeLineIndex { index })
    }

    /// Reads an index `save` (or `modelbin embed -o FILE.safetensors`) wrote.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let index = py
            .detach(|| modelbin_infer::search::LineIndex::load(&path))
            .map_err(infer_error)?;
        Ok(NativeLineIndex { index })
    }

    /// Writes the index, atomically.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| self.index.save(&path)).map_err(infer_error)
    }

    /// Lines indexed.
    fn __len__(&self) -> usize {
        self.index.len()
    }

    /// Whether the index was built with the model at `model`.
    fn has_model(&self, py: Python<'_>, model: PathBuf) -> PyResult<bool> {
        py.detach(|| self.index.has_model(&model))
            .map_err(infer_error)
    }

    /// The `top` lines closest to `query`: (score, path, line, text), best
    /// first.
    fn search(
        &self,
        py: Python<'_>,
        embedder: &NativeEmbedder,
        query: &str,
        top: usize,
    ) -> PyResult<Vec<(f32, PathBuf, usize, String)>> {
        let hits = py
            .detach(|| self.index.search(&embedder.embedder, query, top))
            .map_err(infer_error)?;
        Ok(hits
            .into_iter()
            .map(|hit| {
                (
                    hit.score,
                    hit.path.to_path_buf(),
                    hit.line,
                    hit.text.to_owned(),
                )
            })
            .collect())
    }
}
