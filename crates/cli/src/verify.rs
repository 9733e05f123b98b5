//! `modelbin verify`.

use std::path::Path;

use modelbin_format::Format;
use modelbin_format::inspect::Summary;
use serde::Serialize;

use crate::{Failure, print_json};

#[derive(Serialize)]
struct Verdict<'a> {
    path: &'a Path,
    valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a Summary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

pub fn run(path: &Path, format: Option<Format>, json: bool) -> Result<(), Failure> {
    let outcome = crate::inspect::open(path, format)
        .and_then(|file| file.verify().map(|()| file.summary()))
        .map_err(|e| Failure::Invalid(format!("{}: {e}", path.display())));
    if json {
        let verdict = match &outcome {
            Ok(summary) => Verdict {
                path,
                valid: true,
                summary: Some(summary),
                error: None,
            },
            Err(Failure::Invalid(message) | Failure::Usage(message)) => Verdict {
                path,
                valid: false,
                summary: None,
                error: Some(message.clone()),
            },
        };
        print_json(&verdict);
    } else if let Ok(summary) = &outcome {
        println!("{}: OK ({})", path.display(), summary.one_line());
    }
    outcome.map(|_| ())
}
