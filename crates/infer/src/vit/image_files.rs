//! The image files of a list of inputs (files and directories).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use modelbin_format::io::source;

use crate::error::{ImageError, Result};

/// The extensions a directory's files are kept by (compared ignoring case).
const IMAGE_EXTENSIONS: &[&str] = &["jpg", "jpeg", "png"];

/// The image files `inputs` name, in a deterministic order: each input in
/// the order given (duplicates kept); a file is kept whatever its
/// extension; a directory gives its `.jpg`, `.jpeg` and `.png` files,
/// walked recursively in sorted order, each directory walked once per
/// input whatever the symbolic links leading to it (so a link loop ends).
///
/// An input that does not exist is [`ImageError::NotFound`]; a directory
/// that cannot be read is [`ImageError::Io`]. A FIFO, socket or device,
/// named or found under a directory with an image's extension, is
/// [`modelbin_format::Error::NotRegularFile`] at once: the files are read
/// whole ([`read_image_file`](modelbin_format::saev::read_image_file)),
/// which only a regular file can be without blocking or running on.
pub fn image_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        let metadata = std::fs::metadata(input).map_err(|e| io_error(input, e))?;
        if metadata.is_dir() {
            walk(input, &mut HashSet::new(), &mut files)?;
        } else {
            source::check_regular(input, &metadata)?;
            files.push(input.clone());
        }
    }
    Ok(files)
}

fn io_error(path: &Path, e: std::io::Error) -> ImageError {
    if e.kind() == std::io::ErrorKind::NotFound {
        ImageError::NotFound {
            path: path.to_path_buf(),
        }
    } else {
        ImageError::Io {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }
    }
}

fn has_image_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| IMAGE_EXTENSIONS.iter().any(|x| e.eq_ignore_ascii_case(x)))
}

/// Appends the image files under `dir` to `files`, skipping a directory
/// whose real path `walked` already holds.
fn walk(dir: &Path, walked: &mut HashSet<PathBuf>, files: &mut Vec<PathBuf>) -> Result<()> {
    let real = std::fs::canonicalize(dir).map_err(|e| io_error(dir, e))?;
    if !walked.insert(real) {
        return Ok(());
    }
    let mut entries = std::fs::read_dir(dir)
        .and_then(|entries| {
            entries
                .map(|entry| entry.map(|e| e.path()))
                .collect::<std::io::Result<Vec<_>>>()
        })
        .map_err(|e| io_error(dir, e))?;
    entries.sort();
    for path in entries {
        // Following links: a link to a directory is walked, a link to a
        // file is a file; a dangling link is kept by its name, so reading
        // it reports it.
        match std::fs::metadata(&path) {
            Ok(metadata) if metadata.is_dir() => walk(&path, walked, files)?,
            Ok(metadata) if has_image_extension(&path) => {
                source::check_regular(&path, &metadata)?;
                files.push(path);
            }
            _ if has_image_extension(&path) => files.push(path),
            _ => {}
        }
    }
    Ok(())
}
