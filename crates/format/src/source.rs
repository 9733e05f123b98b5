//! File sources: memory-mapped regular files, streams read whole, and small
//! files read under a cap.
//!
//! Inputs that must be mapped are regular files: a directory, a FIFO or a
//! device is refused at once ([`Error::NotRegularFile`]); the file is opened
//! non-blocking, so a FIFO without a writer cannot hang the check.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::LayoutError;
use crate::{Error, Result};

/// The bytes behind a [`MappedFile`].
#[derive(Debug)]
enum Storage {
    /// A read-only mapping of a regular file.
    Mapped(Mmap),
    /// Bytes read from a stream (a pipe, a `/proc` file) or an empty file.
    Owned(Vec<u8>),
}

/// A read-only file mapped into memory (or, for streams, read whole);
/// dereferences to its bytes.
#[derive(Debug)]
pub struct MappedFile {
    storage: Storage,
    path: PathBuf,
}

/// What a non-regular file is, for error messages.
fn kind_of(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() || file_type.is_block_device() {
        "a device"
    } else {
        "not a file"
    }
}

/// Opens `path` for reading without blocking (a FIFO with no writer would
/// block a plain open) and returns it with its metadata.
fn open_nonblocking(path: &Path) -> Result<(File, std::fs::Metadata)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let metadata = file.metadata().map_err(|e| Error::io(path, e))?;
    Ok((file, metadata))
}

/// Opens `path`, which must be a regular file, and returns it with its size.
pub fn open_regular(path: &Path) -> Result<(File, u64)> {
    let (file, metadata) = open_nonblocking(path)?;
    if !metadata.is_file() {
        return Err(Error::NotRegularFile {
            path: path.to_path_buf(),
            kind: kind_of(metadata.file_type()),
        });
    }
    Ok((file, metadata.len()))
}

/// Reads the regular file `path` whole if it holds at most `limit` bytes;
/// a larger one is [`Error::FileTooLarge`] naming `what` and the cap. The
/// read stops at `limit + 1` bytes even if the file grows meanwhile.
pub fn read_capped(path: &Path, what: &'static str, limit: u64) -> Result<Vec<u8>> {
    let (file, len) = open_regular(path)?;
    let too_large = |size| Error::FileTooLarge {
        path: path.to_path_buf(),
        what,
        size,
        limit,
    };
    if len > limit {
        return Err(too_large(len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_capped`] for UTF-8 text.
pub fn read_capped_text(path: &Path, what: &'static str, limit: u64) -> Result<String> {
    String::from_utf8(read_capped(path, what, limit)?).map_err(|e| {
        Error::Layout(LayoutError::InvalidUtf8 {
            what,
            offset: e.utf8_error().valid_up_to() as u64,
        })
    })
}

/// Caps on a JSON document read whole: bytes and values (see
/// [`read_json`]).
#[derive(Debug, Clone, Copy)]
pub struct JsonCaps {
    /// The largest file accepted, in bytes.
    pub bytes: u64,
    /// The most JSON values it may hold.
    pub values: u64,
}

impl JsonCaps {
    /// The caps of configuration and metadata files: 1 MiB, 65,536 values.
    pub const CONFIG: JsonCaps = JsonCaps {
        bytes: 1 << 20,
        values: 1 << 16,
    };
}

/// Reads and parses the JSON file `path` (`what` names it in errors): a
/// regular file only (a FIFO or device is refused at once, never waited
/// on), within `caps` ([`Error::FileTooLarge`], [`Error::TooManyJsonValues`]);
/// a syntax error names its byte offset.
pub fn read_json(path: &Path, what: &'static str, caps: JsonCaps) -> Result<serde_json::Value> {
    let bytes = read_capped(path, what, caps.bytes)?;
    crate::json::check(&bytes, what, caps.values)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        Error::Layout(LayoutError::InvalidHeader {
            format: "JSON",
            offset: crate::json::error_offset(&bytes, &e),
            reason: format!("{}: {e}", path.display()),
        })
    })
}

impl MappedFile {
    /// Maps the regular file `path` read-only. Anything else (a directory,
    /// a FIFO, a device) is [`Error::NotRegularFile`], reported at once.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let (file, len) = open_regular(path)?;
        Self::map(path, &file, len)
    }

    /// Maps `path` when it is a regular file with a size; reads it to its
    /// end otherwise: pipes, FIFOs, terminals and files whose size the
    /// system reports as 0 although they have content (`/proc/version`).
    /// For text inputs, which may be streams. A directory is refused.
    pub fn open_or_read(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let (file, metadata) = open_nonblocking(path)?;
        if metadata.is_dir() {
            return Err(Error::NotRegularFile {
                path: path.to_path_buf(),
                kind: "a directory",
            });
        }
        if metadata.is_file() && metadata.len() > 0 {
            return Self::map(path, &file, metadata.len());
        }
        let mut file = if metadata.file_type().is_fifo() {
            // Opened without blocking, a FIFO with no writer yet reads as
            // empty at once; a blocking open waits for the writer, as
            // `cat` does.
            drop(file);
            File::open(path).map_err(|e| Error::io(path, e))?
        } else {
            file
        };
        // Streams block until data comes.
        set_blocking(&file, path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| Error::io(path, e))?;
        Ok(MappedFile {
            storage: Storage::Owned(bytes),
            path: path.to_path_buf(),
        })
    }

    fn map(path: &Path, file: &File, len: u64) -> Result<Self> {
        let storage = if len == 0 {
            Storage::Owned(Vec::new())
        } else {
            // SAFETY: the mapping is read-only and every parser bounds-checks
            // against the mapped length. A file truncated by another process
            // while mapped makes later reads fault (SIGBUS): the CLI turns
            // that signal into an error message (docs/reliability.md).
            Storage::Mapped(unsafe { Mmap::map(file) }.map_err(|e| Error::io(path, e))?)
        };
        Ok(MappedFile {
            storage,
            path: path.to_path_buf(),
        })
    }

    /// The path the file was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Clears `O_NONBLOCK` so that reading a stream waits for its writer.
fn set_blocking(file: &File, path: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own, with valid commands and flags.
    let ok = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) >= 0
    };
    if ok {
        Ok(())
    } else {
        Err(Error::io(path, std::io::Error::last_os_error()))
    }
}

impl std::ops::Deref for MappedFile {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.storage {
            Storage::Mapped(map) => map,
            Storage::Owned(bytes) => bytes,
        }
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

    #[test]
    fn refuses_directories_fifos_and_devices_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path and mode.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        for (path, kind) in [
            (dir.path(), "a directory"),
            (fifo.as_path(), "a FIFO"),
            (Path::new("/dev/zero"), "a device"),
        ] {
            match MappedFile::open(path) {
                Err(Error::NotRegularFile { kind: found, .. }) => assert_eq!(found, kind),
                other => panic!("{}: {other:?}", path.display()),
            }
        }
        assert!(matches!(
            MappedFile::open_or_read(dir.path()),
            Err(Error::NotRegularFile {
                kind: "a directory",
                ..
            })
        ));
        assert!(matches!(
            read_capped(&fifo, "a list", 10),
            Err(Error::NotRegularFile { kind: "a FIFO", .. })
        ));
    }

    #[test]
    fn reads_files_whose_size_is_not_known() {
        let proc_version = MappedFile::open_or_read("/proc/version").unwrap();
        assert!(proc_version.starts_with(b"Linux"));
    }

    #[test]
    fn caps_whole_file_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("doc.json");
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_capped(&path, "a document", 10).unwrap(), b"0123456789");
        match read_capped(&path, "a document", 9) {
            Err(Error::FileTooLarge { size, limit, .. }) => assert_eq!((size, limit), (10, 9)),
            other => panic!("{other:?}"),
        }
        std::fs::write(&path, b"\xff").unwrap();
        assert!(matches!(
            read_capped_text(&path, "a document", 9),
            Err(Error::Layout(LayoutError::InvalidUtf8 { offset: 0, .. }))
        ));
    }
}
