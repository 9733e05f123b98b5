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
        Failure::Invalid(e.to_string())
    }
}

/// An error that may already name the file it concerns.
pub trait NamesPath: Display {
    /// The path the message begins with, when it names one.
    fn named_path(&self) -> Option<&Path>;
}

impl NamesPath for modelbin_format::Error {
    fn named_path(&self) -> Option<&Path> {
        self.path()
    }
}

impl NamesPath for modelbin_infer::Error {
    fn named_path(&self) -> Option<&Path> {
        match self {
            modelbin_infer::Error::Format(e) => e.path(),
            _ => None,
        }
    }
}

impl NamesPath for modelbin_tokenize::Error {
    fn named_path(&self) -> Option<&Path> {
        match self {
            modelbin_tokenize::Error::Format(e) => e.path(),
            _ => None,
        }
    }
}

/// An exit-1 failure about `path`: the error's message, prefixed with the
/// path unless the message already names a path (so no path shows twice).
pub fn at(path: &Path, e: impl NamesPath) -> Failure {
    let message = e.to_string();
    let named = e.named_path().is_some() || message.starts_with(&path.display().to_string());
    if named {
        Failure::Invalid(message)
    } else {
        Failure::Invalid(format!("{}: {message}", path.display()))
    }
}
