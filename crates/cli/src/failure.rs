//! How a command fails: the failure kinds and their exit statuses, and the
//! helpers that turn library errors into one line naming the file.

use std::fmt::Display;
use std::path::Path;
use std::process::ExitCode;

/// How a command failed.
#[derive(Debug)]
pub enum Failure {
    /// Bad input or a failed operation: exit 1.
    Invalid(String),
    /// A usage problem clap could not catch: exit 2.
    Usage(String),
    /// Failures already printed (one line each): exit 1.
    Reported,
    /// Standard output was closed by its reader (`| head -1`): stop at
    /// once and exit 0 without a message, as Unix tools do.
    ClosedPipe,
}

impl Failure {
    /// Prints the failure's message (if it has one) on stderr, control
    /// characters escaped (it may quote a file name or a file's text), and gives
    /// the exit status: 0 for a closed pipe, 1 for a failure, 2 for a usage
    /// error. A stderr that cannot be written to is not an error of its
    /// own: the status still tells.
    pub fn report(self) -> ExitCode {
        let (message, status) = match self {
            Failure::Invalid(message) => (Some(message), 1),
            Failure::Usage(message) => (Some(message), 2),
            Failure::Reported => (None, 1),
            Failure::ClosedPipe => (None, 0),
        };
        if let Some(message) = message {
            crate::stderr::errln!("error: {message}");
        }
        ExitCode::from(status)
    }
}

/// Runs `each` on every path (`first` is true for the first), printing the
/// error of a path that fails and going on with the next; exit 1 at the end
/// when any failed.
pub fn for_each_path(
    paths: &[std::path::PathBuf],
    mut each: impl FnMut(&Path, bool) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let mut failed = false;
    for (index, path) in paths.iter().enumerate() {
        match each(path, index == 0) {
            Ok(()) => {}
            Err(Failure::Invalid(message)) => {
                crate::stderr::errln!("error: {message}");
                failed = true;
            }
            Err(Failure::Reported) => failed = true,
            Err(stop @ (Failure::Usage(_) | Failure::ClosedPipe)) => return Err(stop),
        }
    }
    if failed {
        Err(Failure::Reported)
    } else {
        Ok(())
    }
}

/// Any error as an exit-1 failure, with its own message.
pub fn invalid(e: impl std::fmt::Display) -> Failure {
    Failure::Invalid(e.to_string())
}

impl From<modelbin_format::Error> for Failure {
    fn from(e: modelbin_format::Error) -> Self {
        Failure::Invalid(with_hint(e.to_string(), flag_hint(&e)))
    }
}

/// The flag that mends a library error, where one does: the library names
/// no flag, so the command line adds it.
fn flag_hint(e: &modelbin_format::Error) -> Option<&'static str> {
    match e {
        modelbin_format::Error::Parquet(
            modelbin_format::io::texts::parquet::ParquetError::NoColumn { .. },
        ) => Some("name the column with --field"),
        _ => None,
    }
}

/// `message`, and `hint` after it.
fn with_hint(message: String, hint: Option<&str>) -> String {
    match hint {
        Some(hint) => format!("{message}; {hint}"),
        None => message,
    }
}

/// An error that may already name the file it concerns.
pub trait NamesPath: Display {
    /// The path the message begins with, when it names one.
    fn named_path(&self) -> Option<&Path>;

    /// The file-format error inside, if any (what a flag hint is read from).
    fn format_error(&self) -> Option<&modelbin_format::Error>;
}

impl NamesPath for modelbin_format::Error {
    fn named_path(&self) -> Option<&Path> {
        self.path()
    }

    fn format_error(&self) -> Option<&modelbin_format::Error> {
        Some(self)
    }
}

impl NamesPath for modelbin_infer::Error {
    fn named_path(&self) -> Option<&Path> {
        self.format_error().and_then(modelbin_format::Error::path)
    }

    fn format_error(&self) -> Option<&modelbin_format::Error> {
        match self {
            modelbin_infer::Error::Format(e) => Some(e),
            _ => None,
        }
    }
}

impl NamesPath for modelbin_tokenize::Error {
    fn named_path(&self) -> Option<&Path> {
        self.format_error().and_then(modelbin_format::Error::path)
    }

    fn format_error(&self) -> Option<&modelbin_format::Error> {
        match self {
            modelbin_tokenize::Error::Format(e) => Some(e),
            _ => None,
        }
    }
}

/// An exit-1 failure about `path`: the error's message, prefixed with the
/// path unless the message already names a path (so no path shows twice),
/// and the flag that mends it where one does.
pub fn at(path: &Path, e: impl NamesPath) -> Failure {
    let message = with_hint(e.to_string(), e.format_error().and_then(flag_hint));
    let named = e.named_path().is_some() || message.starts_with(&path.display().to_string());
    if named {
        Failure::Invalid(message)
    } else {
        Failure::Invalid(format!("{}: {message}", path.display()))
    }
}
