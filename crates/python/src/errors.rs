//! Library errors as Python exceptions, as the anchor libraries raise them:
//! `FormatError(ValueError)` with `.offset` and `.path` for a file that
//! breaks its format, `OSError` subclasses for I/O, `ValueError` for bad
//! arguments, `KeyError` for unknown tokens and models (as tiktoken).

use pyo3::exceptions::{PyFileNotFoundError, PyKeyError, PyOSError, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    modelbin,
    FormatError,
    PyValueError,
    "A file that breaks the rules of its format; `offset` is the byte it names (or None), `path` the file (or None)."
);

/// A format error about the file at `path` as the Python exception that
/// fits it: a `FormatError` gets `path` (and its message names the file)
/// even where the library's error does not carry one.
pub fn format_error_at(e: modelbin_format::Error, path: &std::path::Path) -> PyErr {
    let Some(file) = e.path().is_none().then_some(path) else {
        return format_error(e);
    };
    Python::attach(|py| {
        let err = format_error(e);
        if err.is_instance_of::<FormatError>(py) {
            let value = err.value(py);
            let message = format!("{}: {}", file.display(), value);
            let named = FormatError::new_err(message);
            let named_value = named.value(py);
            let _ = named_value.setattr("offset", value.getattr("offset").ok());
            let _ = named_value.setattr("path", file.display().to_string());
            return named;
        }
        err
    })
}

/// A format error as the Python exception that fits it.
pub fn format_error(e: modelbin_format::Error) -> PyErr {
    use modelbin_format::Error;
    match &e {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(e.to_string())
        }
        Error::Io { .. } | Error::NotRegularFile { .. } => PyOSError::new_err(e.to_string()),
        Error::InvalidArgument(_) | Error::TensorNotFound(_) | Error::IndexOutOfRange { .. } => {
            PyValueError::new_err(e.to_string())
        }
        _ => Python::attach(|py| {
            let err = FormatError::new_err(e.to_string());
            let value = err.value(py);
            let path = e.path().map(|p| p.display().to_string());
            // Setting attributes on a fresh exception instance cannot fail.
            let _ = value.setattr("offset", e.offset());
            let _ = value.setattr("path", path);
            err
        }),
    }
}

/// A tokenizer error as tiktoken raises it.
pub fn tokenize_error(e: modelbin_tokenize::Error) -> PyErr {
    use modelbin_tokenize::Error;
    match e {
        Error::Format(e) => format_error(e),
        Error::DisallowedSpecial { token, .. } => PyValueError::new_err(format!(
            "Encountered text corresponding to disallowed special token {token:?}.\n\
             If you want this text to be encoded as a special token, pass it to `allowed_special`, \
             e.g. `allowed_special={{{token:?}, ...}}`.\n\
             If you want this text to be encoded as normal text, disable the check for this token \
             by passing `disallowed_special=(enc.special_tokens_set - {{{token:?}}})`.\n\
             To disable this check for all special tokens, pass `disallowed_special=()`.\n"
        )),
        Error::UnknownToken(id) => PyKeyError::new_err(format!("Invalid token for decoding: {id}")),
        Error::UnknownModel { model, .. } => PyKeyError::new_err(format!(
            "Could not automatically map {model} to a tokeniser. \
             Please use `modelbin.get_encoding` to explicitly get the tokeniser you expect."
        )),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// An engine error: format and tokenizer errors as above, others as
/// `ValueError`.
pub fn infer_error(e: modelbin_infer::Error) -> PyErr {
    match e {
        modelbin_infer::Error::Format(e) => format_error(e),
        modelbin_infer::Error::Tokenize(e) => tokenize_error(e),
        other => PyValueError::new_err(other.to_string()),
    }
}
