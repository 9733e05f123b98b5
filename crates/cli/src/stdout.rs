//! Standard output for every command, and the one way to standard error. Each write error becomes a
//! [`Failure`]: a closed pipe (`modelbin … | head -1`) a quiet exit 0,
//! anything else (a full disk, `> /dev/full`) exit 1 with one line.
//! SIGPIPE keeps Rust's disposition (ignored), so a closed pipe arrives as
//! an error here instead of killing the process.

use std::io::{self, Write};

use crate::failure::Failure;

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

/// One line on standard output (see [`outln`]).
pub fn line(text: std::fmt::Arguments<'_>) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    out.write_fmt(text)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(write_error)
}

/// Writes formatted text and a newline to standard error, for warnings,
/// notes and progress; the counterpart of `eprintln!` that does not panic
/// when standard error cannot be written to (a closed or full stderr only
/// loses the message: the exit status still tells).
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::stdout::error_line(format_args!($($arg)*))
    };
}
pub(crate) use errln;

/// One line on standard error (see [`errln`]).
pub fn error_line(text: std::fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = err.write_fmt(text).and_then(|()| err.write_all(b"\n"));
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
    if modelbin_format::output::is_standard_output(output) {
        let _ = writeln!(io::stderr(), "{text}");
        Ok(())
    } else {
        line(format_args!("{text}"))
    }
}

/// A serializable value as compact JSON text.
pub fn json_text(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("summaries serialize to JSON")
}
