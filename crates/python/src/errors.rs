//! Library errors as Python exceptions, as the anchor libraries raise them:
//! `SafetensorError` (an `Exception`, as safetensors has it) for any error
//! reading a tensor file, and its subclass `FormatError`, also a
//! `ValueError`, with `.offset` and `.path` for a file that breaks its
//! format; `OSError` subclasses for I/O, `ValueError` for bad arguments,
//! `KeyError` for unknown tokens and models (as tiktoken).

use pyo3::exceptions::{PyException, PyFileNotFoundError, PyKeyError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};

pyo3::create_exception!(
    modelbin,
    SafetensorError,
    PyException,
    "An error reading or writing a tensor file, as safetensors raises it (its `FormatError` subclass is a file that breaks its format)."
);

/// `modelbin.FormatError`, made once per interpreter.
static FORMAT_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The class `modelbin.FormatError`: a subclass of both `SafetensorError`
/// (so safetensors' users catch it) and `ValueError` (what it has always
/// been). `create_exception!` takes a single base, so the class is made
/// with `type()`.
pub fn format_error_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    let class = FORMAT_ERROR.get_or_try_init(py, || -> PyResult<Py<PyType>> {
        let bases = (
            py.get_type::<SafetensorError>(),
            py.get_type::<PyValueError>(),
        );
        let namespace = PyDict::new(py);
        namespace.set_item("__module__", "modelbin")?;
        namespace.set_item(
            "__doc__",
            "A file that breaks the rules of its format; `offset` is the byte it names \
             (or None), `path` the file (or None).",
        )?;
        namespace.set_item("offset", py.None())?;
        namespace.set_item("path", py.None())?;
        let class = py
            .get_type::<PyType>()
            .call1(("FormatError", bases, namespace))?;
        Ok(class.cast_into::<PyType>()?.unbind())
    })?;
    Ok(class.bind(py))
}

/// A `FormatError` with `message`, `offset` and `path`.
pub fn new_format_error(message: String, offset: Option<u64>, path: Option<String>) -> PyErr {
    Python::attach(|py| {
        let class = match format_error_type(py) {
            Ok(class) => class,
            Err(e) => return e,
        };
        let err = PyErr::from_type(class.clone(), message);
        let value = err.value(py);
        // Setting attributes on a fresh exception instance cannot fail.
        let _ = value.setattr("offset", offset);
        let _ = value.setattr("path", path);
        err
    })
}

/// A format error about the file at `path` as the Python exception that
/// fits it: a `FormatError` gets `path` (and its message names the file)
/// even where the library's error does not carry one.
pub fn format_error_at(e: modelbin_format::Error, path: &std::path::Path) -> PyErr {
    python_error(e, Some(path))
}

/// A format error as the Python exception that fits it.
pub fn format_error(e: modelbin_format::Error) -> PyErr {
    python_error(e, None)
}

/// The Python exception of `e`; `file`, when `e` names no file, is the file
/// a `FormatError` is about.
fn python_error(e: modelbin_format::Error, file: Option<&std::path::Path>) -> PyErr {
    use modelbin_format::Error;
    match &e {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(e.to_string())
        }
        Error::Io { .. } | Error::NotRegularFile { .. } | Error::NotADirectoryOutput { .. } => {
            PyOSError::new_err(e.to_string())
        }
        Error::InvalidArgument(_)
        | Error::TensorNotFound(_)
        | Error::IndexOutOfRange { .. }
        | Error::TooManyThreads { .. } => PyValueError::new_err(e.to_string()),
        _ => match (e.path(), file) {
            (None, Some(file)) => new_format_error(
                format!("{}: {e}", file.display()),
                e.offset(),
                Some(file.display().to_string()),
            ),
            (path, _) => new_format_error(
                e.to_string(),
                e.offset(),
                path.map(|p| p.display().to_string()),
            ),
        },
    }
}

/// `text` as Python's `repr` shows a `str`: in single quotes (double
/// quotes when it holds a single quote and no double quote), with the
/// backslash, the quote, line breaks, tabs and other control characters
/// escaped (tiktoken's messages quote tokens so).
fn python_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// A tokenizer error as tiktoken raises it.
pub fn tokenize_error(e: modelbin_tokenize::Error) -> PyErr {
    use modelbin_tokenize::Error;
    match e {
        Error::Format(e) => format_error(e),
        Error::DisallowedSpecial { token, .. } => {
            let token = python_repr(&token);
            PyValueError::new_err(format!(
                "Encountered text corresponding to disallowed special token {token}.\n\
                 If you want this text to be encoded as a special token, pass it to `allowed_special`, \
                 e.g. `allowed_special={{{token}, ...}}`.\n\
                 If you want this text to be encoded as normal text, disable the check for this token \
                 by passing `disallowed_special=(enc.special_tokens_set - {{{token}}})`.\n\
                 To disable this check for all special tokens, pass `disallowed_special=()`.\n"
            ))
        }
        Error::UnknownToken(id) => PyKeyError::new_err(format!("Invalid token for decoding: {id}")),
        Error::UnknownModel { model, .. } => PyKeyError::new_err(format!(
            "Could not automatically map {model} to a tokeniser. \
             Please use `modelbin.get_encoding` to explicitly get the tokeniser you expect."
        )),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// An engine error about the file at `path`: as [`infer_error`], with a
/// format error's message naming the file when the library's error does
/// not (a model that is not one: "notes.txt: bad magic …").
pub fn infer_error_at(e: modelbin_infer::Error, path: &std::path::Path) -> PyErr {
    match e {
        modelbin_infer::Error::Format(e) => format_error_at(e, path),
        e => infer_error(e),
    }
}

/// An engine error: format and tokenizer errors as above, a missing file
/// as `FileNotFoundError`, an unreadable one as `OSError`, others as
/// `ValueError`.
pub fn infer_error(e: modelbin_infer::Error) -> PyErr {
    use modelbin_infer::ImageError;
    match e {
        modelbin_infer::Error::Format(e) => format_error(e),
        modelbin_infer::Error::Tokenize(e) => tokenize_error(e),
        modelbin_infer::Error::Image(
            ImageError::MissingConfig { .. } | ImageError::NotFound { .. },
        ) => PyFileNotFoundError::new_err(e.to_string()),
        modelbin_infer::Error::Image(ImageError::Io { .. }) => PyOSError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}
