//! File sources: memory-mapped regular files, streams read whole, and small
//! files read under a cap.
//!
//! This module is the one place that decides what may be opened as an
//! input:
//!
//! - Inputs that must be mapped or read whole (tensor files, configs,
//!   images, lists) are regular files: a directory, a FIFO, a socket or a
//!   device is refused at once ([`Error::NotRegularFile`]). The file is
//!   opened non-blocking, so a FIFO without a writer cannot hang the check.
//! - A file read whole is read under a cap that is checked before the
//!   bytes are held: its size first, then the bytes actually read (a file
//!   may grow, and a `/proc` file reports no size).
//! - Text inputs may also be streams (pipes, FIFOs, terminals, character
//!   devices): those are read to their end under [`MAX_STREAM_BYTES`], so
//!   an endless stream (a zero device) is an error, not a climb to the
//!   memory limit. A regular file is mapped instead, at any size.

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
pub(crate) fn kind_of(file_type: std::fs::FileType) -> &'static str {
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

/// The most bytes read from a stream input (a pipe, a FIFO, a terminal, a
/// character device) held whole in memory: 1 GiB. A larger text is read
/// from a regular file, which is mapped instead of held.
pub const MAX_STREAM_BYTES: u64 = 1 << 30;

/// Refuses `path` unless `metadata` (its own, links followed) says it is a
/// regular file: [`Error::NotRegularFile`] says what it is instead. For
/// lists of inputs checked before any is opened.
pub fn check_regular(path: &Path, metadata: &std::fs::Metadata) -> Result<()> {
    if metadata.is_file() {
        Ok(())
    } else {
        Err(Error::NotRegularFile {
            path: path.to_path_buf(),
            kind: kind_of(metadata.file_type()),
        })
    }
}

/// Opens `path`, which must be a regular file, and returns it with its size.
pub fn open_regular(path: &Path) -> Result<(File, u64)> {
    let (file, metadata) = open_nonblocking(path)?;
    check_regular(path, &metadata)?;
    Ok((file, metadata.len()))
}

/// Reads the regular file `path` whole if it holds at most `limit` bytes;
/// a larger one is [`Error::FileTooLarge`] naming `what` and the cap. The
/// read stops at `limit + 1` bytes even if the file grows meanwhile.
pub fn read_capped(path: &Path, what: &'static str, limit: u64) -> Result<Vec<u8>> {
    let (file, len) = open_regular(path)?;
    if len > limit {
        return Err(Error::FileTooLarge {
            path: path.to_path_buf(),
            what,
            size: len,
            limit,
        });
    }
    read_into(file, Vec::with_capacity(len as usize), path, what, limit)
}

/// Reads `reader` (named `path` in errors) to its end if it gives at most
/// `limit` bytes; past that it stops at once with [`Error::FileTooLarge`],
/// holding no more than `limit + 1` bytes. Memory is reserved as the bytes
/// come, and a reservation the system refuses is an error, not an abort.
pub fn read_stream_capped(
    reader: impl Read,
    path: &Path,
    what: &'static str,
    limit: u64,
) -> Result<Vec<u8>> {
    read_into(reader, Vec::new(), path, what, limit)
}

/// [`read_stream_capped`] appending to `bytes`, whose capacity may already
/// hold what a regular file's size says is coming.
fn read_into(
    reader: impl Read,
    mut bytes: Vec<u8>,
    path: &Path,
    what: &'static str,
    limit: u64,
) -> Result<Vec<u8>> {
    let mut chunk = vec![0u8; 64 << 10];
    let mut reader = reader.take(limit.saturating_add(1));
    loop {
        let read = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(path, e)),
        };
        let size = (bytes.len() + read) as u64;
        if size > limit {
            return Err(Error::FileTooLarge {
                path: path.to_path_buf(),
                what,
                size,
                limit,
            });
        }
        bytes.try_reserve(read).map_err(|_| {
            let reason = format!("no memory left for {what} past {} bytes", bytes.len());
            Error::io(
                path,
                std::io::Error::new(std::io::ErrorKind::OutOfMemory, reason),
            )
        })?;
        bytes.extend_from_slice(&chunk[..read]);
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
    parse_json(&bytes, &path.display().to_string(), what, caps)
}

/// Parses `bytes` as a JSON document held to `caps`, as [`read_json`] parses
/// a file's: [`Error::FileTooLarge`] past the byte cap (naming `name`),
/// [`Error::TooManyJsonValues`], and a syntax error naming its byte offset.
pub fn parse_json(
    bytes: &[u8],
    name: &str,
    what: &'static str,
    caps: JsonCaps,
) -> Result<serde_json::Value> {
    if bytes.len() as u64 > caps.bytes {
        return Err(Error::FileTooLarge {
            path: name.into(),
            what,
            size: bytes.len() as u64,
            limit: caps.bytes,
        });
    }
    crate::io::json::check(bytes, what, caps.values)?;
    serde_json::from_slice(bytes).map_err(|e| {
        Error::Layout(LayoutError::InvalidHeader {
            format: "JSON",
            offset: crate::io::json::error_offset(bytes, &e),
            reason: format!("{name}: {e}"),
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
    /// end otherwise: pipes, FIFOs, terminals, character devices and files
    /// whose size the system reports as 0 although they have content
    /// (`/proc/version`), up to [`MAX_STREAM_BYTES`] (past that,
    /// [`Error::FileTooLarge`]). For text inputs, which may be streams. A
    /// directory is refused.
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
        let file = if metadata.file_type().is_fifo() {
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
        let bytes = read_stream_capped(file, path, "a stream input", MAX_STREAM_BYTES)?;
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
    fn streams_are_read_under_their_cap() {
        let name = Path::new("endless");
        match read_stream_capped(std::io::repeat(0), name, "a stream input", 100_000) {
            Err(Error::FileTooLarge { size, limit, .. }) => {
                assert_eq!((size, limit), (100_001, 100_000));
            }
            other => panic!("{other:?}"),
        }
        let bytes = read_stream_capped(&[7u8; 300_000][..], name, "a stream input", 300_000);
        assert_eq!(bytes.unwrap(), [7u8; 300_000]);
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        let metadata = std::fs::metadata(&link).unwrap();
        assert!(matches!(
            check_regular(&link, &metadata),
            Err(Error::NotRegularFile {
                kind: "a directory",
                ..
            })
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
