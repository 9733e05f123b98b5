//! Atomic file writes: write `NAME.tmp-modelbin-PID-N` beside the target,
//! fsync, rename.
//!
//! A crash or an error never leaves a file at the target path that looks
//! complete: until [`AtomicFile::commit`] the bytes live in the temporary file,
//! which is removed if the writer is dropped without committing or if the
//! commit fails. A process killed outright leaves its temporary file behind;
//! the next write to the same target removes such files when the process
//! whose id they carry is gone.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Error, Result};

const BUFFER_SIZE: usize = 1 << 20;
/// What follows the target's name in a temporary file's name.
const TEMP_MARKER: &str = ".tmp-modelbin-";

/// A file being written atomically. Implements [`Write`].
#[derive(Debug)]
pub struct AtomicFile {
    writer: Option<BufWriter<File>>,
    temp_path: PathBuf,
    target: PathBuf,
}

/// The directory a path lives in (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Removes temporary files of earlier writes to `name` in `dir` whose
/// process no longer exists (killed before it could clean up).
fn remove_stale_temps(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!("{name}{TEMP_MARKER}");
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(rest) = file_name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        let Some(Ok(pid)) = rest.split('-').next().map(str::parse::<libc::pid_t>) else {
            continue;
        };
        if pid > 0 && !process_exists(pid) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn process_exists(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    alive || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Refuses to write `output` when it is one of `inputs` (same device and
/// inode, whatever the spelling of the paths): writing would replace the
/// data being read. A directory input stands for every file directly in it.
pub fn refuse_input_as_output(inputs: &[&Path], output: &Path) -> Result<()> {
    let Ok(out) = std::fs::metadata(output) else {
        return Ok(()); // a new file cannot be an input
    };
    let same = |path: &Path| {
        std::fs::metadata(path).is_ok_and(|m| m.dev() == out.dev() && m.ino() == out.ino())
    };
    for &input in inputs {
        let candidates: Vec<PathBuf> = if input.is_dir() {
            std::fs::read_dir(input)
                .map_err(|e| Error::io(input, e))?
                .flatten()
                .map(|e| e.path())
                .collect()
        } else {
            vec![input.to_path_buf()]
        };
        if let Some(hit) = candidates.into_iter().find(|p| same(p)) {
            return Err(Error::OutputIsInput {
                output: output.to_path_buf(),
                input: hit,
            });
        }
    }
    Ok(())
}

impl AtomicFile {
    /// Creates the temporary file for `target` in the same directory. A
    /// target that is a directory, or whose directory does not exist, is an
    /// error that says so.
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
        if target.is_dir() {
            return Err(Error::NotRegularFile {
                path: target,
                kind: "a directory",
            });
        }
        let dir = parent_dir(&target);
        if !dir.is_dir() {
            return Err(Error::io(
                dir,
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "the output directory does not exist",
                ),
            ));
        }
        remove_stale_temps(dir, &name);
        let temp_path = target.with_file_name(format!(
            "{name}{TEMP_MARKER}{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp_path)
            .map_err(|e| Error::io(&target, e))?;
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

    /// Flushes, fsyncs and renames the file into place, then fsyncs the
    /// directory. On failure the temporary file is removed.
    pub fn commit(mut self) -> Result<()> {
        let result = self.persist();
        if result.is_err() {
            let _ = std::fs::remove_file(&self.temp_path);
        }
        result
    }

    fn persist(&mut self) -> Result<()> {
        let writer = self.writer.take().expect("writer present until commit");
        let file = writer
            .into_inner()
            .map_err(|e| Error::io(&self.target, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(&self.target, e))?;
        drop(file);
        std::fs::rename(&self.temp_path, &self.target).map_err(|e| Error::io(&self.target, e))?;
        sync_directory(parent_dir(&self.target));
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

/// Seeking flushes the buffer first (a writer may go back to fill in a
/// header whose sizes it knows only at the end).
impl io::Seek for AtomicFile {
    fn seek(&mut self, position: io::SeekFrom) -> io::Result<u64> {
        self.writer()?.seek(position)
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.take().is_some() {
            let _ = std::fs::remove_file(&self.temp_path);
        }
    }
}

/// Persists the renames inside `dir` (best effort: directories cannot be
/// fsynced on every platform).
pub fn sync_directory(dir: &Path) {
    if let Ok(handle) = File::open(dir) {
        let _ = handle.sync_all();
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
        assert!(temp[0].starts_with("out.bin.tmp-modelbin-"), "{temp:?}");
        drop(file);
        assert!(entries(dir.path()).is_empty());
    }

    #[test]
    fn missing_output_directory_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing-dir");
        match AtomicFile::create(missing.join("out.bin")) {
            Err(Error::Io { path, source }) => {
                assert_eq!(path, missing);
                assert_eq!(source.kind(), io::ErrorKind::NotFound);
                assert!(source.to_string().contains("output directory"), "{source}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_directory_target_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("sub");
        std::fs::create_dir(&target).unwrap();
        assert!(matches!(
            AtomicFile::create(&target),
            Err(Error::NotRegularFile {
                kind: "a directory",
                ..
            })
        ));
        assert_eq!(entries(dir.path()), vec!["sub"]);
    }

    #[test]
    fn a_failed_commit_removes_the_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        let mut file = AtomicFile::create(&target).unwrap();
        file.write_all(b"data").unwrap();
        // The target turns into a non-empty directory: the rename fails.
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("keep"), b"").unwrap();
        assert!(matches!(file.commit(), Err(Error::Io { .. })));
        assert_eq!(entries(dir.path()), vec!["out.bin"]);
    }

    #[test]
    fn stale_temporary_files_of_dead_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        // A pid above the kernel's maximum never names a live process.
        let stale = dir.path().join("out.bin.tmp-modelbin-2147483646-0");
        let live = dir
            .path()
            .join(format!("out.bin.tmp-modelbin-{}-99", std::process::id()));
        let other = dir.path().join("other.bin.tmp-modelbin-2147483646-0");
        for path in [&stale, &live, &other] {
            std::fs::write(path, b"partial").unwrap();
        }
        let file = AtomicFile::create(dir.path().join("out.bin")).unwrap();
        drop(file);
        assert!(!stale.exists());
        assert!(live.exists() && other.exists());
    }

    #[test]
    fn the_input_cannot_be_the_output() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.bt");
        std::fs::write(&input, b"x").unwrap();
        let link = dir.path().join("link.bt");
        std::fs::hard_link(&input, &link).unwrap();
        for output in [&input, &link] {
            match refuse_input_as_output(&[&input], output) {
                Err(Error::OutputIsInput { input: found, .. }) => assert_eq!(found, input),
                other => panic!("{other:?}"),
            }
        }
        // A file inside a directory input counts too.
        assert!(matches!(
            refuse_input_as_output(&[dir.path()], &input),
            Err(Error::OutputIsInput { .. })
        ));
        let fresh = dir.path().join("new.bt");
        refuse_input_as_output(&[&input], &fresh).unwrap();
        std::fs::write(&fresh, b"y").unwrap();
        refuse_input_as_output(&[&input], &fresh).unwrap();
    }
}
