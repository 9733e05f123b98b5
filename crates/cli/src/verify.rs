//! `modelbin verify`.

use std::path::Path;

use modelbin_format::{Format, TensorStore};
use serde::Serialize;

use crate::{Failure, open_tensor_file, print_json};

#[derive(Serialize)]
struct Verdict<'a> {
    path: &'a Path,
    valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<Format>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tensors: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

pub fn run(path: &Path, format: Option<Format>, json: bool) -> Result<(), Failure> {
    let outcome = open_tensor_file(path, format, "verify");
    if !json {
        let file = outcome?;
        println!(
            "{}: OK ({}, {} tensors, {} bytes)",
            path.display(),
            file.format(),
            file.len(),
            file.file_bytes().len()
        );
        return Ok(());
    }
    let verdict = match &outcome {
        Ok(file) => Verdict {
            path,
            valid: true,
            format: Some(file.format()),
            tensors: Some(file.len()),
            error: None,
        },
        Err(Failure::Invalid(message) | Failure::Usage(message)) => Verdict {
            path,
            valid: false,
            format: None,
            tensors: None,
            error: Some(message.clone()),
        },
    };
    print_json(&verdict);
    outcome.map(|_| ())
}
