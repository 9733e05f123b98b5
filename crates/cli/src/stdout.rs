//! Standard output for every command (standard error is `stderr.rs`'s). Each write error becomes a
//! [`Failure`]: a closed pipe (`modelbin … | head -1`) a quiet exit 0,
//! anything else (a full disk, `> /dev/full`) exit 1 with one line.
//! SIGPIPE keeps Rust's disposition (ignored), so a closed pipe arrives as
//! an error here instead of killing the process.
//!
//! Every line printed here is a report, a listing or a diagnostic, which
//! may quote text from files and file names: its control characters are
//! escaped ([`printable`]), so that no file can send escape sequences to the
//! terminal. JSON holds none (see [`json_text`]). A command's product text
//! (decoded tokens, generated text) is written elsewhere, through
//! [`crate::printable::ProductText`].

use std::io::{self, Write};

use crate::failure::Failure;
use crate::printable::printable;
use crate::stderr::{error_line, formatted};

/// The failure a write to standard output ended in.
pub fn write_error(e: impl Into<io::Error>) -> Failure {
    let e = e.into();
    if e.kind() == io::ErrorKind::BrokenPipe {
        Failure::ClosedPipe
    } else {
        Failure::Invalid(format!("cannot write to standard output: {e}"))
    }
}

/// Writes formatted text and a newline to standard output; the
/// counterpart of `println!` that returns a [`Failure`] instead of
/// panicking.
macro_rules! outln {
    () => {
        $crate::stdout::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::stdout::line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

/// One line on standard output (see [`outln`]), control characters
/// escaped.
pub fn line(text: std::fmt::Arguments<'_>) -> Result<(), Failure> {
    let text = formatted(text);
    let mut out = io::stdout().lock();
    out.write_all(printable(&text).as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .map_err(write_error)
}

/// Prints a serializable value as one line of compact JSON.
pub fn print_json(value: &impl serde::Serialize) -> Result<(), Failure> {
    line(format_args!("{}", json_text(value)))
}

/// Runs `write` on a locked, buffered standard output and flushes it,
/// mapping any write error (see [`write_error`]).
pub fn with_buffered(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<(), Failure> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    write(&mut out)
        .and_then(|()| out.flush())
        .map_err(write_error)
}

/// Prints a command's closing report (`text`, one line): on standard
/// output, or on stderr when the command's `output` file is standard output
/// itself, so that the report never mixes into the data.
pub fn report_beside(output: &std::path::Path, text: &str) -> Result<(), Failure> {
    if modelbin_format::io::output::is_standard_output(output) {
        error_line(format_args!("{text}"));
        Ok(())
    } else {
        line(format_args!("{text}"))
    }
}

/// A serializable value as compact JSON text, holding no control
/// character: serde_json escapes those below U+0020 in strings, and the
/// others (U+007F to U+009F, which some terminals obey as C1 controls) are
/// escaped here as `\u00XX`, the same string to any JSON reader. Compact
/// JSON has no whitespace outside strings, so every such character is in
/// one.
pub fn json_text(value: &impl serde::Serialize) -> String {
    let text = serde_json::to_string(value).expect("summaries serialize to JSON");
    if !text.chars().any(char::is_control) {
        return text;
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c.is_control() {
            escaped.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            escaped.push(c);
        }
    }
    escaped
}
