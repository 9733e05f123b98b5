//! The one way to standard error: warnings, notes, progress and the
//! final error line, control characters escaped ([`printable`]) like every
//! line the command line prints, and never a panic when standard error
//! cannot be written to.

use std::io::{self, Write};

use crate::printable::printable;

/// `text` formatted (without a copy when it is a literal).
pub(crate) fn formatted(text: std::fmt::Arguments<'_>) -> std::borrow::Cow<'static, str> {
    match text.as_str() {
        Some(literal) => literal.into(),
        None => text.to_string().into(),
    }
}

/// Writes formatted text and a newline to standard error, for warnings,
/// notes and progress; the counterpart of `eprintln!` that does not panic
/// when standard error cannot be written to (a closed or full stderr only
/// loses the message: the exit status still tells).
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::stderr::error_line(format_args!($($arg)*))
    };
}
pub(crate) use errln;

/// One line on standard error (see [`errln`]), control characters
/// escaped.
pub fn error_line(text: std::fmt::Arguments<'_>) {
    let text = formatted(text);
    let mut err = io::stderr().lock();
    let _ = err
        .write_all(printable(&text).as_bytes())
        .and_then(|()| err.write_all(b"\n"));
}
