//! `modelbin verify`.

use std::path::{Path, PathBuf};

use modelbin_format::Format;
use modelbin_format::inspect::Summary;
use serde::Serialize;

use crate::args::parse_format;
use crate::failure::Failure;
use crate::stdout::{outln, print_json};

/// Arguments of `modelbin verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Files, SAEV dataset directories, Hugging Face model directories.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Print one JSON verdict per path (one line each).
    #[arg(long)]
    json: bool,
    /// Read as this format instead of detecting it.
    #[arg(long, value_parser = parse_format)]
    format: Option<Format>,
}

#[derive(Serialize)]
struct Verdict<'a> {
    path: &'a Path,
    valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a Summary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Runs `modelbin verify`: one line per path (`PATH: OK (...)` or the
/// error); exit 1 when any path fails.
pub fn run(args: &VerifyArgs) -> Result<(), Failure> {
    crate::failure::for_each_path(&args.paths, |path, _| {
        let outcome = crate::inspect::open(path, args.format).and_then(|file| {
            file.verify()
                .map(|()| Summary::of(&file))
                .map_err(|e| crate::failure::at(path, e))
        });
        report(path, outcome, args.json)
    })
}

/// Prints the verdict on `path`: `PATH: OK (...)`, or with `json` one JSON
/// line `{"path", "valid", "summary" | "error"}` (then a failure is
/// [`Failure::Reported`]: the line says it, the exit status still does).
pub fn report(path: &Path, outcome: Result<Summary, Failure>, json: bool) -> Result<(), Failure> {
    if !json {
        let summary = outcome?;
        outln!("{}: OK ({})", path.display(), summary.one_line())?;
        return Ok(());
    }
    let error = match &outcome {
        Err(Failure::Invalid(message) | Failure::Usage(message)) => Some(message.clone()),
        _ => None,
    };
    print_json(&Verdict {
        path,
        valid: outcome.is_ok(),
        summary: outcome.as_ref().ok(),
        error,
    })?;
    outcome.map(|_| ()).map_err(|_| Failure::Reported)
}
