//! The files a list of inputs names, the same way for every command that
//! takes files and directories (image recordings, text commands): each
//! input in the order given (duplicates kept); a file is kept whatever its
//! name; a directory gives the files under it that the caller's filter
//! keeps, walked recursively in sorted order, each directory walked once
//! per input whatever the symbolic links leading to it (so a link loop
//! ends).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::io::source;
use crate::{Error, Result};

/// The files `inputs` name, directories walked for the files `keep`
/// accepts (by path, before anything is opened).
///
/// An input that cannot be read is [`Error::Io`] (its kind is
/// `NotFound` for a missing one). A FIFO, socket or device, named or found
/// under a directory and kept by `keep`, is [`Error::NotRegularFile`] at
/// once: inputs are read whole, which only a regular file can be without
/// blocking or running on. A dangling link under a directory is kept by its
/// name, so reading it reports it.
///
/// ```
/// use modelbin_format::io::walk::{has_extension, input_files};
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir(dir.path().join("b")).unwrap();
/// for name in ["b/2.txt", "a.txt", "notes.pdf"] {
///     std::fs::write(dir.path().join(name), "x").unwrap();
/// }
/// let files = input_files(&[dir.path().to_path_buf()], |p| has_extension(p, &["txt"])).unwrap();
/// let names: Vec<_> = files.iter().map(|p| p.strip_prefix(dir.path()).unwrap()).collect();
/// assert_eq!(names, [std::path::Path::new("a.txt"), std::path::Path::new("b/2.txt")]);
/// ```
pub fn input_files(inputs: &[PathBuf], keep: impl Fn(&Path) -> bool) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        let metadata = std::fs::metadata(input).map_err(|e| Error::io(input, e))?;
        if metadata.is_dir() {
            walk(input, &keep, &mut HashSet::new(), &mut files)?;
        } else {
            source::check_regular(input, &metadata)?;
            files.push(input.clone());
        }
    }
    Ok(files)
}

/// Whether `path`'s extension is one of `extensions` (compared ignoring
/// case).
pub fn has_extension(path: &Path, extensions: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| extensions.iter().any(|x| e.eq_ignore_ascii_case(x)))
}

/// Appends the kept files under `dir` to `files`, skipping a directory
/// whose real path `walked` already holds.
fn walk(
    dir: &Path,
    keep: &impl Fn(&Path) -> bool,
    walked: &mut HashSet<PathBuf>,
    files: &mut Vec<PathBuf>,
) -> Result<()> {
    let real = std::fs::canonicalize(dir).map_err(|e| Error::io(dir, e))?;
    if !walked.insert(real) {
        return Ok(());
    }
    let mut entries = std::fs::read_dir(dir)
        .and_then(|entries| {
            entries
                .map(|entry| entry.map(|e| e.path()))
                .collect::<std::io::Result<Vec<_>>>()
        })
        .map_err(|e| Error::io(dir, e))?;
    entries.sort();
    for path in entries {
        // Following links: a link to a directory is walked, a link to a
        // file is a file.
        match std::fs::metadata(&path) {
            Ok(metadata) if metadata.is_dir() => walk(&path, keep, walked, files)?,
            Ok(metadata) if keep(&path) => {
                source::check_regular(&path, &metadata)?;
                files.push(path);
            }
            _ if keep(&path) => files.push(path),
            _ => {}
        }
    }
    Ok(())
}
