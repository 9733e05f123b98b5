//! `modelbin verify`.

use std::path::{Path, PathBuf};

use modelbin_format::inspect::Summary;
use modelbin_format::{AnyFile, Format, saev};
use serde::Serialize;

use crate::args::parse_format;
use crate::failure::Failure;
use crate::stderr::errln;
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
    image_files: Option<&'a ImageFiles>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// What a dataset is found to be.
pub struct Checked {
    /// Its summary.
    pub summary: Summary,
    /// For an image dataset, what became of the image files it lists.
    pub image_files: Option<ImageFiles>,
}

/// Listed image indices shown in a verdict, of each kind.
const SHOWN_IMAGES: usize = 10;

/// What became of the image files an image dataset lists: missing or
/// changed files are warnings, not failures, since the activations are
/// intact and the images may live elsewhere.
#[derive(Debug, Serialize)]
pub struct ImageFiles {
    /// Images listed.
    listed: u64,
    /// How many are missing.
    missing: u64,
    /// How many have other bytes than those recorded.
    changed: u64,
    /// The first missing images (index and path).
    first_missing: Vec<(u64, String)>,
    /// The first changed images.
    first_changed: Vec<(u64, String)>,
}

impl ImageFiles {
    /// Reads every image file `dataset` lists, if it lists any, and
    /// compares its hash.
    pub fn of(dataset: &saev::Dataset) -> modelbin_format::Result<Option<ImageFiles>> {
        let Some(images) = dataset.images()? else {
            return Ok(None);
        };
        let check = images.check_files(&mut |_, _| {});
        let first = |list: &[u64]| -> Vec<(u64, String)> {
            list.iter()
                .take(SHOWN_IMAGES)
                .map(|&img| (img, images.entries[img as usize].path.clone()))
                .collect()
        };
        Ok(Some(ImageFiles {
            listed: check.images,
            missing: check.missing.len() as u64,
            changed: check.changed.len() as u64,
            first_missing: first(&check.missing),
            first_changed: first(&check.changed),
        }))
    }

    /// The warning to print, when images are missing or changed.
    fn warning(&self) -> Option<String> {
        if self.missing + self.changed == 0 {
            return None;
        }
        let named = |list: &[(u64, String)]| {
            list.first()
                .map(|(img, path)| format!(" (first: image {img}, {path})"))
                .unwrap_or_default()
        };
        Some(format!(
            "{} of {} listed images are missing{}, {} changed since the recording{}; the activations are intact (images may live elsewhere)",
            self.missing,
            self.listed,
            named(&self.first_missing),
            self.changed,
            named(&self.first_changed)
        ))
    }
}

/// Runs `modelbin verify`: one line per path (`PATH: OK (...)` or the
/// error); exit 1 when any path fails.
pub fn run(args: &VerifyArgs) -> Result<(), Failure> {
    crate::failure::for_each_path(&args.paths, |path, _| {
        let outcome = crate::inspect::open(path, args.format).and_then(|file| {
            file.verify()
                .and_then(|()| {
                    let image_files = match &file {
                        AnyFile::Saev(dataset) => ImageFiles::of(dataset)?,
                        _ => None,
                    };
                    Ok(Checked {
                        summary: Summary::of(&file),
                        image_files,
                    })
                })
                .map_err(|e| crate::failure::at(path, e))
        });
        report(path, outcome, args.json)
    })
}

/// Prints the verdict on `path`: `PATH: OK (...)` (and a warning on
/// standard error when listed images are missing or changed), or with
/// `json` one JSON line `{"path", "valid", "summary", "image_files",
/// "warnings" | "error"}` (then a failure is [`Failure::Reported`]: the
/// line says it, the exit status still does).
pub fn report(path: &Path, outcome: Result<Checked, Failure>, json: bool) -> Result<(), Failure> {
    let warnings: Vec<String> = outcome
        .as_ref()
        .ok()
        .and_then(|c| c.image_files.as_ref()?.warning())
        .into_iter()
        .collect();
    if !json {
        let checked = outcome?;
        outln!("{}: OK ({})", path.display(), checked.summary.one_line())?;
        for warning in warnings {
            errln!("warning: {}: {warning}", path.display());
        }
        return Ok(());
    }
    let error = match &outcome {
        Err(Failure::Invalid(message) | Failure::Usage(message)) => Some(message.clone()),
        _ => None,
    };
    print_json(&Verdict {
        path,
        valid: outcome.is_ok(),
        summary: outcome.as_ref().ok().map(|c| &c.summary),
        image_files: outcome.as_ref().ok().and_then(|c| c.image_files.as_ref()),
        warnings,
        error,
    })?;
    outcome.map(|_| ()).map_err(|_| Failure::Reported)
}
