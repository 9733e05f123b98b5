//! Memory-mapped file sources.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::{Error, Result};

/// A read-only file mapped into memory; dereferences to its bytes.
///
/// Empty files, which cannot be mapped, are represented without a mapping.
#[derive(Debug)]
pub struct MappedFile {
    map: Option<Mmap>,
    path: PathBuf,
}

impl MappedFile {
    /// Maps `path` read-only.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let map = if len == 0 {
            None
        } else {
            // SAFETY: the mapping is read-only. Like every mmap-based reader, we
            // rely on the file not being truncated or modified while mapped;
            // all parsing is bounds-checked against the mapped length.
            Some(unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?)
        };
        Ok(MappedFile {
            map,
            path: path.to_path_buf(),
        })
    }

    /// The path the file was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::ops::Deref for MappedFile {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}

impl AsRef<[u8]> for MappedFile {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_files_including_empty_ones() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert_eq!(MappedFile::open(&empty).unwrap().len(), 0);
        let full = dir.path().join("full");
        std::fs::write(&full, b"hello").unwrap();
        let mapped = MappedFile::open(&full).unwrap();
        assert_eq!(&*mapped, b"hello");
        assert_eq!(mapped.path(), full);
        assert!(matches!(
            MappedFile::open(dir.path().join("missing")),
            Err(Error::Io { .. })
        ));
    }
}
