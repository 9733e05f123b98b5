//! The tokenizer core behind `modelbin.Encoding` (the tiktoken-style
//! argument handling lives in Python).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use modelbin_tokenize::{Pattern, Specials, Tokenizer};
use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyList};

use crate::errors::tokenize_error;
use crate::id_list::SharedInts;

/// A tokenizer: a built-in encoding or one loaded from a file.
enum Vocabulary {
    BuiltIn(&'static Tokenizer),
    Loaded(Box<Tokenizer>),
}

impl Vocabulary {
    /// The tokenizer, built in or loaded.
    fn tokenizer(&self) -> &Tokenizer {
        match self {
            Vocabulary::BuiltIn(t) => t,
            Vocabulary::Loaded(t) => t,
        }
    }
}

/// The Rust tokenizer of one encoding. Thread-safe; the GIL is released
/// around every encode and decode.
#[pyclass(frozen, module = "modelbin._native")]
pub struct NativeEncoding {
    vocabulary: Vocabulary,
    /// The ints that lists of ids are made of.
    ints: SharedInts,
}

impl NativeEncoding {
    fn new(vocabulary: Vocabulary) -> Self {
        NativeEncoding {
            ints: SharedInts::new(vocabulary.tokenizer().vocab_size()),
            vocabulary,
        }
    }

    fn tokenizer(&self) -> &Tokenizer {
        self.vocabulary.tokenizer()
    }

    /// `ids` as a Python list of ints.
    fn id_list<'py>(&self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        self.ints.list(py, ids)
    }
}

/// `names` as special-token selection for the core encoder.
fn only(names: &[String]) -> Vec<&str> {
    names.iter().map(String::as_str).collect()
}

/// A flat batch: every text's ids one after another, and where each starts.
type FlatIds<'py> = (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<i64>>);

/// A rayon pool of `threads` threads (at most
/// [`modelbin_infer::threads::MAX_THREADS`], checked before any thread
/// starts). The pool of the last call is kept, so a loop of calls with the
/// same `num_threads` does not pay for starting threads; a call with
/// another size replaces it, and the replaced pool's threads end once no
/// call uses it. So the process holds the threads of one kept pool plus
/// those of the calls running, whatever sizes were asked for before.
pub(crate) fn pool(threads: usize) -> PyResult<Arc<rayon::ThreadPool>> {
    static LAST: Mutex<Option<(usize, Arc<rayon::ThreadPool>)>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((size, pool)) = last.as_ref()
        && *size == threads
    {
        return Ok(Arc::clone(pool));
    }
    // A refused size leaves the kept pool as it is.
    modelbin_format::io::threads::check(threads).map_err(crate::errors::format_error)?;
    // Dropped before the new pool starts, so the two never run together
    // when no call holds the old one.
    *last = None;
    let pool =
        Arc::new(modelbin_infer::threads::pool(Some(threads)).map_err(crate::errors::infer_error)?);
    *last = Some((threads, Arc::clone(&pool)));
    Ok(pool)
}

#[pymethods]
impl NativeEncoding {
    /// A built-in encoding (any of tiktoken's seven).
    #[staticmethod]
    fn built_in(name: &str) -> PyResult<Self> {
        let tokenizer = Tokenizer::embedded(name).map_err(tokenize_error)?;
        Ok(NativeEncoding::new(Vocabulary::BuiltIn(tokenizer)))
    }

    /// A `.bpe2` or `.tiktoken` file (detected by content); `pattern` is the
    /// pre-tokenizer regex for a vocabulary that is not a known encoding.
    #[staticmethod]
    #[pyo3(signature = (path, pattern=None))]
    fn load(py: Python<'_>, path: PathBuf, pattern: Option<&str>) -> PyResult<Self> {
        let pattern = pattern
            .map(Pattern::custom)
            .transpose()
            .map_err(tokenize_error)?;
        let tokenizer = py
            .detach(|| Tokenizer::open_vocabulary(&path, pattern))
            .map_err(tokenize_error)?;
        Ok(NativeEncoding::new(Vocabulary::Loaded(Box::new(tokenizer))))
    }

    /// A custom encoding from tiktoken's constructor arguments: the
    /// mergeable ranks, the pre-tokenizer regex and the special tokens.
    #[staticmethod]
    fn from_parts(
        py: Python<'_>,
        mergeable_ranks: HashMap<Vec<u8>, u32>,
        pat_str: &str,
        special_tokens: HashMap<String, u32>,
    ) -> PyResult<Self> {
        let ranks: Vec<(Vec<u8>, u32)> = mergeable_ranks.into_iter().collect();
        let mut specials: Vec<(String, u32)> = special_tokens.into_iter().collect();
        specials.sort_by_key(|&(_, id)| id);
        let tokenizer = py
            .detach(|| {
                let pattern = Pattern::from_regex(pat_str)?;
                Tokenizer::from_parts(&ranks, pattern, specials)
            })
            .map_err(tokenize_error)?;
        Ok(NativeEncoding::new(Vocabulary::Loaded(Box::new(tokenizer))))
    }

    /// The pre-tokenizer's regex.
    #[getter]
    fn pat_str(&self) -> &str {
        self.tokenizer().pattern().regex()
    }

    /// The mergeable tokens as (bytes, rank) pairs, in rank order.
    fn mergeable_ranks<'py>(&self, py: Python<'py>) -> Vec<(Bound<'py, PyBytes>, u32)> {
        self.tokenizer()
            .mergeable_tokens()
            .map(|(rank, bytes)| (PyBytes::new(py, bytes), rank))
            .collect()
    }

    /// The id of one token's bytes (ordinary or special), if it is one.
    fn encode_single_token(&self, token: &[u8]) -> Option<u32> {
        self.tokenizer().encode_single_token(token)
    }

    /// The ids of any bytes (tiktoken's `_encode_bytes`).
    fn encode_bytes<'py>(&self, py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyList>> {
        let ids = py
            .detach(|| self.tokenizer().encode_bytes(bytes))
            .map_err(tokenize_error)?;
        self.id_list(py, &ids)
    }

    /// The ids of `piece` merged as one piece, without the split.
    fn encode_single_piece<'py>(
        &self,
        py: Python<'py>,
        piece: &[u8],
    ) -> PyResult<Bound<'py, PyList>> {
        let ids = py.detach(|| self.tokenizer().encode_single_piece(piece));
        self.id_list(py, &ids)
    }

    /// The stable ids of `text` and the completions of its unstable end.
    fn encode_with_unstable(
        &self,
        py: Python<'_>,
        text: &str,
        allowed: Vec<String>,
    ) -> PyResult<(Vec<u32>, Vec<Vec<u32>>)> {
        py.detach(|| {
            self.tokenizer()
                .encode_with_unstable(text, Specials::Only(&only(&allowed)))
        })
        .map_err(tokenize_error)
    }

    /// Every text's ids, one after another, as a `uint32` array, and where
    /// each text's ids start (`int64`, one more than there are texts).
    /// Encoded in parallel on `num_threads` threads without the GIL.
    fn encode_batch_to_numpy<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        allowed: Vec<String>,
        num_threads: usize,
    ) -> PyResult<FlatIds<'py>> {
        let allowed = only(&allowed);
        let flat = py.detach(|| {
            pool(num_threads)?.install(|| {
                self.tokenizer()
                    .encode_batch_flat(&texts, &allowed)
                    .map_err(tokenize_error)
            })
        })?;
        let offsets: Vec<i64> = flat.offsets.iter().map(|&o| o as i64).collect();
        Ok((flat.ids.into_pyarray(py), offsets.into_pyarray(py)))
    }

    /// How many ids each text's `encode_ordinary` gives (`int64`), counted
    /// in parallel on `num_threads` threads without the GIL.
    fn count_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        num_threads: usize,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let counts = py.detach(|| {
            pool(num_threads)?
                .install(|| self.tokenizer().count_batch(&texts).map_err(tokenize_error))
        })?;
        let counts: Vec<i64> = counts.into_iter().map(|n| n as i64).collect();
        Ok(counts.into_pyarray(py))
    }

    /// The encoding's name, when the vocabulary is a known one.
    #[getter]
    fn name(&self) -> Option<&'static str> {
        self.tokenizer().name()
    }

    /// Highest token id + 1, special tokens included.
    #[getter]
    fn n_vocab(&self) -> u32 {
        self.tokenizer().vocab_size()
    }

    /// The special tokens as (text, id) pairs.
    fn special_tokens(&self) -> Vec<(String, u32)> {
        self.tokenizer().special_tokens().to_vec()
    }

    /// Ids of `text`, special tokens treated as text.
    fn encode_ordinary<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyList>> {
        let ids = py
            .detach(|| self.tokenizer().encode_ordinary(text))
            .map_err(tokenize_error)?;
        self.id_list(py, &ids)
    }

    /// tiktoken's check that no string of `disallowed` occurs in any of
    /// `texts`: `ValueError` naming the first, as tiktoken words it.
    fn check_special(
        &self,
        py: Python<'_>,
        texts: Vec<String>,
        disallowed: Vec<String>,
    ) -> PyResult<()> {
        py.detach(|| {
            let disallowed = only(&disallowed);
            texts
                .iter()
                .try_for_each(|text| modelbin_tokenize::check_disallowed(text, &disallowed))
        })
        .map_err(tokenize_error)
    }

    /// Ids of `text`: `allowed` special tokens become their ids, a
    /// `disallowed` one in the text is a `ValueError`.
    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed: Vec<String>,
        disallowed: Vec<String>,
    ) -> PyResult<Bound<'py, PyList>> {
        let ids = py.detach(|| {
            self.tokenizer()
                .encode(
                    text,
                    Specials::Only(&only(&allowed)),
                    Specials::Only(&only(&disallowed)),
                )
                .map_err(tokenize_error)
        })?;
        self.id_list(py, &ids)
    }

    /// [`NativeEncoding::encode`] of each text, in parallel on
    /// `num_threads` threads.
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<String>,
        allowed: Vec<String>,
        disallowed: Vec<String>,
        num_threads: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let (allowed, disallowed) = (only(&allowed), only(&disallowed));
        let batch: Vec<Vec<u32>> = py.detach(|| {
            pool(num_threads)?.install(|| {
                self.tokenizer()
                    .encode_batch(
                        &texts,
                        Specials::Only(&allowed),
                        Specials::Only(&disallowed),
                    )
                    .map_err(tokenize_error)
            })
        })?;
        let lists = batch
            .iter()
            .map(|ids| self.id_list(py, ids))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, lists)
    }

    /// How many ids `encode_ordinary(text)` gives, without storing them.
    fn count(&self, py: Python<'_>, text: &str) -> PyResult<usize> {
        py.detach(|| self.tokenizer().count_parallel(text))
            .map_err(tokenize_error)
    }

    /// `encode_ordinary(text)` as a `uint32` numpy array.
    fn encode_to_numpy<'py>(
        &self,
        py: Python<'py>,
        text: &str,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let ids = py
            .detach(|| self.tokenizer().encode_ordinary(text))
            .map_err(tokenize_error)?;
        Ok(ids.into_pyarray(py))
    }

    /// The bytes the ids stand for.
    fn decode_bytes<'py>(&self, py: Python<'py>, ids: Vec<u32>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py
            .detach(|| self.tokenizer().decode_bytes(&ids))
            .map_err(tokenize_error)?;
        Ok(PyBytes::new(py, &bytes))
    }
}

/// The encoding tiktoken uses for `model` (by longest known prefix);
/// `KeyError` for a model no prefix matches.
#[pyfunction]
pub fn encoding_for_model(model: &str) -> PyResult<&'static str> {
    modelbin_tokenize::cost::encoding_for_model(model).map_err(tokenize_error)
}

/// The built-in encodings' names, in tiktoken's order.
#[pyfunction]
pub fn encoding_names() -> Vec<&'static str> {
    Tokenizer::built_in_names().to_vec()
}

/// Empties the calling thread's cache of recent pieces' tokens and frees
/// its memory (for benchmarks that time text the cache has seen).
#[pyfunction]
pub fn clear_piece_cache() {
    modelbin_tokenize::clear_piece_cache();
}

/// What `input_tokens` input tokens (an int, or a text counted with the
/// model's encoding), `output_tokens` and `cached_tokens` of `model` cost:
/// JSON text of `{"estimate": …, "stale": …}`, the estimate as `modelbin
/// tokens cost --json` reports it and the library's stale-price warning
/// (null when the prices are recent). `prices` is a
/// price table file and `prices_json` a table's text; their entries are
/// added to the bundled table's (a table in another currency replaces it).
/// `KeyError` for a model no table prices, `ValueError` for what the
/// model's prices cannot cover.
#[pyfunction]
#[pyo3(signature = (model, input_tokens, output_tokens=0, cached_tokens=0, prices=None, prices_json=None))]
pub fn cost(
    py: Python<'_>,
    model: &str,
    input_tokens: CostInput,
    output_tokens: u64,
    cached_tokens: u64,
    prices: Option<std::path::PathBuf>,
    prices_json: Option<String>,
) -> PyResult<String> {
    use modelbin_tokenize::Error;
    use modelbin_tokenize::cost::PriceTable;
    let cost_error = |e: Error| match e {
        Error::UnknownModel { .. } => {
            pyo3::exceptions::PyKeyError::new_err(format!("{e}; add its prices with prices=FILE"))
        }
        Error::Format(e) => crate::errors::format_error(e),
        e => pyo3::exceptions::PyValueError::new_err(e.to_string()),
    };
    py.detach(|| {
        let table = PriceTable::with_overlays(prices.as_deref(), prices_json.as_deref())
            .map_err(cost_error)?;
        let input_tokens = match input_tokens {
            CostInput::Tokens(tokens) => tokens,
            CostInput::Text(text) => {
                let encoding = table.pricing(model).map_err(cost_error)?.encoding;
                let tokenizer =
                    modelbin_tokenize::Tokenizer::embedded(encoding).map_err(tokenize_error)?;
                tokenizer.count(&text).map_err(tokenize_error)? as u64
            }
        };
        let estimate = table
            .estimate(model, input_tokens, cached_tokens, output_tokens)
            .map_err(cost_error)?;
        let stale = table.staleness().map(|stale| stale.to_string());
        Ok(serde_json::json!({"estimate": estimate, "stale": stale}).to_string())
    })
}

/// The tokens of a chat (`messages_json`: a JSON array of OpenAI messages,
/// or a request body with its tools), counted with `encoding` by `model`'s
/// rules: the parts and the warnings of `ChatCount`, and `total` (JSON text).
#[pyfunction]
pub fn count_chat(
    py: Python<'_>,
    messages_json: &str,
    model: &str,
    encoding: &str,
) -> PyResult<String> {
    use modelbin_tokenize::cost::chat::{Chat, ChatRules};
    py.detach(|| {
        let tokenizer = modelbin_tokenize::Tokenizer::embedded(encoding).map_err(tokenize_error)?;
        let chat = Chat::parse(messages_json).map_err(tokenize_error)?;
        let count = chat
            .count(tokenizer, &ChatRules::for_model(model))
            .map_err(tokenize_error)?;
        let mut json = serde_json::to_value(&count).expect("a count serializes");
        json["total"] = count.total().into();
        Ok(json.to_string())
    })
}

/// The input of [`cost`]: a token count or a text to count.
#[derive(FromPyObject)]
pub enum CostInput {
    /// Tokens, counted already.
    Tokens(u64),
    /// A text, counted with the model's encoding.
    Text(String),
}
