//! Atomic file writes: write `NAME.tmp-*` beside the target, fsync, rename.
//!
//! A crash or an error never leaves a file at the target path that looks
//! complete: until [`AtomicFile::commit`] the bytes live in the temporary file,
//! which is removed if the writer is dropped without committing.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Error, Result};

const BUFFER_SIZE: usize = 1 << 20;

/// A file being written atomically. Implements [`Write`].
#[derive(Debug)]
pub struct AtomicFile {
    writer: Option<BufWriter<File>>,
    temp_path: PathBuf,
    target: PathBuf,
}

impl AtomicFile {
    /// Creates the temporary file for `target` in the same directory.
    pub fn create(target: impl AsRef<Path>) -> Result<Self> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let target = target.as_ref().to_path_buf();
        let name = target
            .file_name()
            .ok_or_else(|| {
                Error::io(
                    &target,
                    io::Error::new(io::ErrorKind::InvalidInput, "not a file path"),
                )
            })?
            .to_string_lossy()
            .into_owned();
        let temp_path = target.with_file_name(format!(
            "{name}.tmp-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp_path)
            .map_err(|e| Error::io(&temp_path, e))?;
        Ok(AtomicFile {
            writer: Some(BufWriter::with_capacity(BUFFER_SIZE, file)),
            temp_path,
            target,
        })
    }

    /// The path the file will have once committed.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes, fsyncs and renames the file into place, then fsyncs the directory.
    pub fn commit(mut self) -> Result<()> {
        let writer = self.writer.take().expect("writer present until commit");
        let file = writer
            .into_inner()
            .map_err(|e| Error::io(&self.temp_path, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(&self.temp_path, e))?;
        drop(file);
        std::fs::rename(&self.temp_path, &self.target).map_err(|e| Error::io(&self.target, e))?;
        if let Some(dir) = self.target.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            // Persist the rename; directories cannot be fsynced on every platform.
            if let Ok(handle) = File::open(dir) {
                let _ = handle.sync_all();
            }
        }
        Ok(())
    }

    fn writer(&mut self) -> io::Result<&mut BufWriter<File>> {
        self.writer
            .as_mut()
            .ok_or_else(|| io::Error::other("atomic file already committed"))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer()?.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer()?.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer()?.flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.take().is_some() {
            let _ = std::fs::remove_file(&self.temp_path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn commit_renames_into_place_and_replaces_old_content() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        std::fs::write(&target, b"old").unwrap();
        let mut file = AtomicFile::create(&target).unwrap();
        file.write_all(b"new content").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        assert_eq!(
            entries(dir.path()).len(),
            2,
            "temporary file beside the target"
        );
        file.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new content");
        assert_eq!(entries(dir.path()), vec!["out.bin"]);
    }

    #[test]
    fn dropping_without_commit_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        let mut file = AtomicFile::create(&target).unwrap();
        file.write_all(b"partial").unwrap();
        let temp = entries(dir.path());
        assert!(temp[0].starts_with("out.bin.tmp-"), "{temp:?}");
        drop(file);
        assert!(entries(dir.path()).is_empty());
    }

    #[test]
    fn unwritable_directory_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("missing-dir").join("out.bin");
        assert!(matches!(AtomicFile::create(target), Err(Error::Io { .. })));
    }
}
