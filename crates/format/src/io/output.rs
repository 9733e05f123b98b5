//! Output files: written atomically when they are regular files, streamed
//! into when they are special files.
//!
//! A regular file (or a path that does not exist yet) is written as
//! `NAME.tmp-modelbin-PID-N` beside the target, fsynced and renamed, so a
//! crash or an error never leaves a file at the target path that looks
//! complete: until [`OutputFile::commit`] the bytes live in the temporary
//! file, which is removed if the writer is dropped without committing or if
//! the commit fails. A process killed outright leaves its temporary file
//! behind; the next write to the same target removes such files when the
//! process whose id they carry is gone. A symlink to a regular file stays a
//! symlink: the file it points to is the one replaced.
//!
//! A character device, FIFO or socket (or a symlink to one), and `-`, which
//! is standard output, cannot be replaced without destroying them: they are
//! opened and streamed into, never renamed over. Nothing is ever created or
//! renamed inside `/dev`, and a block device is refused.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Error, Result};

const BUFFER_SIZE: usize = 1 << 20;
/// What follows the target's name in a temporary file's name.
const TEMP_MARKER: &str = ".tmp-modelbin-";
/// The path that names standard output.
pub const STDOUT_PATH: &str = "-";

/// Where the bytes of an [`OutputFile`] go.
#[derive(Debug)]
enum Destination {
    /// A temporary file, renamed onto `path` by [`OutputFile::commit`].
    Replace { temp_path: PathBuf, path: PathBuf },
    /// The target itself: a device, FIFO, socket or standard output.
    Stream,
}

/// A file being written. Implements [`Write`]; see the module's doc for
/// what happens to regular and special files.
#[derive(Debug)]
pub struct OutputFile {
    writer: Option<BufWriter<File>>,
    destination: Destination,
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
    let prefix = format!("{name}{TEMP_MARKER}");
    remove_left_by_dead_processes(dir, |entry| entry.strip_prefix(prefix.as_str()));
}

/// Removes the entries of `dir` whose name `prefix_of` accepts (giving
/// back what follows its prefix) when that is the id of a process that no
/// longer exists, then optionally `-N`, or a temporary file's suffix (a
/// file or a whole directory): what a process killed outright left behind.
/// An entry of a live process, or whose name only starts like one, is
/// kept.
fn remove_left_by_dead_processes(dir: &Path, prefix_of: impl Fn(&str) -> Option<&str>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(rest) = file_name.to_str().and_then(&prefix_of) else {
            continue;
        };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (pid, suffix) = rest.split_at(digits);
        let ours = suffix.is_empty()
            || suffix.starts_with(TEMP_MARKER)
            || suffix
                .strip_prefix('-')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        let Ok(pid) = pid.parse::<libc::pid_t>() else {
            continue;
        };
        if !ours || pid <= 0 || process_exists(pid) {
            continue;
        }
        remove_entry(&entry.path());
    }
}

/// What follows `.NAME.partial-` (or `.NAME.TAG.partial-`) in a staging
/// entry's name, whatever the target.
fn after_staging_prefix(name: &str) -> Option<&str> {
    const MARKER: &str = ".partial-";
    let at = name.strip_prefix('.')?.find(MARKER)? + 1;
    Some(&name[at + MARKER.len()..])
}

/// Removes the file or the whole directory at `path` (best effort). A
/// symlink is not followed: the link is removed, never what it names.
fn remove_entry(path: &Path) {
    let _ = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(_) => Ok(()),
    };
}

/// A path beside `target` to build it under before it is renamed onto
/// `target`: `.NAME.partial-PID` for `tag` "" (`.NAME.TAG.partial-PID`
/// otherwise), in the same directory so that the rename is atomic. What
/// killed processes left under such names in that directory is removed
/// first, whatever target it was for, so an interrupted run leaves no
/// debris past the next run that stages there.
pub fn staging_path(target: &Path, tag: &str) -> PathBuf {
    let name = target
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let tag = if tag.is_empty() {
        String::new()
    } else {
        format!(".{tag}")
    };
    let prefix = format!(".{name}{tag}.partial-");
    remove_left_by_dead_processes(parent_dir(target), after_staging_prefix);
    let path = target.with_file_name(format!("{prefix}{}", std::process::id()));
    // One under this process's own id was left by an earlier process that
    // had the same id (ids are reused), as this process builds one target
    // at a time.
    remove_entry(&path);
    path
}

/// The error for an output whose directory `dir` does not exist: outputs
/// are written into existing directories only, so that a typing mistake in
/// a path does not create a tree of directories somewhere unexpected.
fn missing_directory(dir: &Path) -> Error {
    Error::io(
        dir,
        io::Error::new(
            io::ErrorKind::NotFound,
            "the output directory does not exist",
        ),
    )
}

/// Checks that a directory can be made at `dir` for a command whose output
/// is a directory (a model export): its parent exists (it is not created),
/// and `dir` is not standard output (`-`, `/dev/stdout`, `/dev/fd/N`), a
/// FIFO, a device, a socket or a file, all of which a directory cannot
/// replace. An existing directory passes; whether it may be filled is the
/// writer's rule.
pub fn check_directory_output(dir: &Path) -> Result<()> {
    let refuse = |kind| {
        Err(Error::NotADirectoryOutput {
            path: dir.to_path_buf(),
            kind,
        })
    };
    if let Some(fd) = named_descriptor(dir) {
        return refuse(if fd == 1 {
            "standard output"
        } else {
            "an open file descriptor"
        });
    }
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(meta) if meta.is_file() => refuse("a file"),
        Ok(meta) => refuse(crate::io::source::kind_of(meta.file_type())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let parent = parent_dir(&follow_symlinks(dir)?).to_path_buf();
            if inside_dev(&parent) || inside_dev(dir) {
                return Err(refuse_in_dev(dir));
            }
            if parent.is_dir() {
                Ok(())
            } else {
                Err(missing_directory(&parent))
            }
        }
        Err(e) => Err(Error::io(dir, e)),
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

/// Writes `bytes` as the file `path`, atomically (see [`OutputFile`]),
/// after refusing a `path` that is one of `inputs`, the files it was made
/// from (see [`refuse_input_as_output`]).
pub fn write_derived(path: &Path, bytes: &[u8], inputs: &[&Path]) -> Result<()> {
    refuse_input_as_output(inputs, path)?;
    let mut file = OutputFile::create(path)?;
    file.write_all(bytes).map_err(|e| Error::io(path, e))?;
    file.commit()
}

/// Whether writing to `path` writes to this process's standard output:
/// `-`, or a path that names the same file as descriptor 1
/// (`/dev/stdout`, or the terminal or FIFO stdout is). A command that
/// prints a report next to its output sends it to stderr then.
pub fn is_standard_output(path: &Path) -> bool {
    if path.as_os_str() == STDOUT_PATH {
        return true;
    }
    let Ok(target) = std::fs::metadata(path) else {
        return false;
    };
    let Some(stdout) = descriptor_metadata(io::stdout().as_fd()) else {
        return false;
    };
    stdout.dev() == target.dev() && stdout.ino() == target.ino()
}

/// The metadata of the file an open descriptor refers to.
fn descriptor_metadata(fd: BorrowedFd<'_>) -> Option<std::fs::Metadata> {
    File::from(fd.try_clone_to_owned().ok()?).metadata().ok()
}

/// The descriptor a path names directly: `-` and `/dev/stdout` are 1,
/// `/dev/stderr` is 2, `/dev/fd/N` and `/proc/self/fd/N` are N. Writing
/// through a copy of the descriptor keeps its offset and flags (a shell's
/// `>>` appends), where reopening the path would not.
fn named_descriptor(path: &Path) -> Option<libc::c_int> {
    let text = path.to_str()?;
    match text {
        STDOUT_PATH | "/dev/stdout" => Some(1),
        "/dev/stderr" => Some(2),
        _ => text
            .strip_prefix("/dev/fd/")
            .or_else(|| text.strip_prefix("/proc/self/fd/"))?
            .parse()
            .ok()
            .filter(|&fd| fd >= 0),
    }
}

/// A copy of descriptor `fd` as a file, or the error that it is not open.
fn duplicate_descriptor(fd: libc::c_int, path: &Path) -> Result<File> {
    // SAFETY: dup(2) on any integer is safe; it fails with EBADF when `fd`
    // is not open, and on success returns a new descriptor that we own.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if copy < 0 {
        return Err(Error::io(path, io::Error::last_os_error()));
    }
    // SAFETY: `copy` is a freshly duplicated descriptor owned by nobody else.
    Ok(unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(copy) })
}

/// Whether `path` lies inside `/dev`, where nothing may be created.
fn inside_dev(path: &Path) -> bool {
    path.starts_with("/dev")
}

/// The refusal to create or replace a regular file inside `/dev`.
fn refuse_in_dev(target: &Path) -> Error {
    Error::io(
        target,
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            "will not create or replace a file inside /dev",
        ),
    )
}

/// `path` with its symlinks followed, for a path that may not exist yet
/// (a dangling symlink names the file it would create, as a shell's `>`
/// does). Gives up after 40 links, as the kernel does.
fn follow_symlinks(path: &Path) -> Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&current).map_err(|e| Error::io(&current, e))?;
                current = parent_dir(&current).join(link);
            }
            _ => return Ok(current),
        }
    }
    Err(Error::io(
        path,
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "too many levels of symbolic links",
        ),
    ))
}

impl OutputFile {
    /// Opens `target` for writing: a regular or new file gets a temporary
    /// file in the same directory; a character device, FIFO or socket (or a
    /// symlink to one) and `-` (standard output) are streamed into. A
    /// directory or block device target, a missing directory and a new file
    /// inside `/dev` are errors that say so, before anything is written.
    pub fn create(target: impl AsRef<Path>) -> Result<Self> {
        let target = target.as_ref().to_path_buf();
        if let Some(fd) = named_descriptor(&target) {
            let file = duplicate_descriptor(fd, &target)?;
            return Ok(Self::stream(file, target));
        }
        match std::fs::metadata(&target) {
            Ok(meta) => {
                let kind = meta.file_type();
                if kind.is_dir() {
                    return Err(Error::NotRegularFile {
                        path: target,
                        kind: "a directory",
                    });
                }
                if kind.is_block_device() {
                    return Err(Error::NotRegularFile {
                        path: target,
                        kind: "a block device",
                    });
                }
                if kind.is_char_device() || kind.is_fifo() || kind.is_socket() {
                    let file = OpenOptions::new()
                        .write(true)
                        .open(&target)
                        .map_err(|e| Error::io(&target, e))?;
                    return Ok(Self::stream(file, target));
                }
                let resolved = std::fs::canonicalize(&target).map_err(|e| Error::io(&target, e))?;
                Self::replace(target, resolved)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let resolved = follow_symlinks(&target)?;
                Self::replace(target, resolved)
            }
            Err(e) => Err(Error::io(&target, e)),
        }
    }

    fn stream(file: File, target: PathBuf) -> Self {
        OutputFile {
            writer: Some(BufWriter::with_capacity(BUFFER_SIZE, file)),
            destination: Destination::Stream,
            target,
        }
    }

    /// Starts the temporary file that will replace `path` (`target` with its
    /// symlinks followed).
    fn replace(target: PathBuf, path: PathBuf) -> Result<Self> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        if inside_dev(&path) {
            return Err(refuse_in_dev(&target));
        }
        let name = path
            .file_name()
            .ok_or_else(|| {
                Error::io(
                    &target,
                    io::Error::new(io::ErrorKind::InvalidInput, "not a file path"),
                )
            })?
            .to_string_lossy()
            .into_owned();
        let dir = parent_dir(&path);
        if !dir.is_dir() {
            return Err(missing_directory(dir));
        }
        remove_stale_temps(dir, &name);
        let temp_path = path.with_file_name(format!(
            "{name}{TEMP_MARKER}{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp_path)
            .map_err(|e| Error::io(&target, e))?;
        Ok(OutputFile {
            writer: Some(BufWriter::with_capacity(BUFFER_SIZE, file)),
            destination: Destination::Replace { temp_path, path },
            target,
        })
    }

    /// The path the file was asked for.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Whether the bytes stream into a device, FIFO, socket or standard
    /// output (which cannot seek) rather than a file renamed into place.
    pub fn is_stream(&self) -> bool {
        matches!(self.destination, Destination::Stream)
    }

    /// Finishes the file. A replaced file is flushed, fsynced and renamed
    /// into place, then its directory fsynced; on failure the temporary
    /// file is removed. A stream is flushed.
    pub fn commit(mut self) -> Result<()> {
        let result = self.persist();
        if result.is_err()
            && let Destination::Replace { temp_path, .. } = &self.destination
        {
            let _ = std::fs::remove_file(temp_path);
        }
        result
    }

    fn persist(&mut self) -> Result<()> {
        let writer = self.writer.take().expect("writer present until commit");
        let file = writer
            .into_inner()
            .map_err(|e| Error::io(&self.target, e.into_error()))?;
        let Destination::Replace { temp_path, path } = &self.destination else {
            return Ok(());
        };
        file.sync_all().map_err(|e| Error::io(&self.target, e))?;
        drop(file);
        std::fs::rename(temp_path, path).map_err(|e| Error::io(&self.target, e))?;
        sync_directory(parent_dir(path));
        Ok(())
    }

    fn writer(&mut self) -> io::Result<&mut BufWriter<File>> {
        self.writer
            .as_mut()
            .ok_or_else(|| io::Error::other("output file already committed"))
    }
}

impl Write for OutputFile {
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
/// header whose sizes it knows only at the end). A stream cannot seek:
/// see [`OutputFile::is_stream`].
impl io::Seek for OutputFile {
    fn seek(&mut self, position: io::SeekFrom) -> io::Result<u64> {
        if self.is_stream() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "cannot seek in a stream",
            ));
        }
        self.writer()?.seek(position)
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if self.writer.take().is_some()
            && let Destination::Replace { temp_path, .. } = &self.destination
        {
            let _ = std::fs::remove_file(temp_path);
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
        let mut file = OutputFile::create(&target).unwrap();
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
        let mut file = OutputFile::create(&target).unwrap();
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
        match OutputFile::create(missing.join("out.bin")) {
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
            OutputFile::create(&target),
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
        let mut file = OutputFile::create(&target).unwrap();
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
        let file = OutputFile::create(dir.path().join("out.bin")).unwrap();
        drop(file);
        assert!(!stale.exists());
        assert!(live.exists() && other.exists());
    }

    fn make_fifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    /// A FIFO `pipe` in `dir` and a symlink `link` to it.
    fn fifo_and_link(dir: &Path) -> (PathBuf, PathBuf) {
        let fifo = dir.join("pipe");
        make_fifo(&fifo);
        let link = dir.join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        (fifo, link)
    }

    #[test]
    fn a_fifo_and_a_symlink_to_it_are_streamed_into_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (fifo, link) = fifo_and_link(dir.path());
        for target in [&fifo, &link] {
            let reader = {
                let fifo = fifo.clone();
                std::thread::spawn(move || std::fs::read(fifo).unwrap())
            };
            let mut file = OutputFile::create(target).unwrap();
            assert!(file.is_stream());
            file.write_all(b"streamed").unwrap();
            file.commit().unwrap();
            assert_eq!(reader.join().unwrap(), b"streamed");
        }
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(entries(dir.path()), vec!["link", "pipe"]);
    }

    #[test]
    fn a_character_device_is_streamed_into_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let null = dir.path().join("null");
        let c = std::ffi::CString::new(null.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid path; 1:3 is the null device. Needs root, as the
        // test suite runs; elsewhere the test has nothing to check.
        if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } != 0 {
            eprintln!("mknod needs root; skipped");
            return;
        }
        let mut file = OutputFile::create(&null).unwrap();
        assert!(file.is_stream());
        file.write_all(&[7; 4096]).unwrap();
        file.commit().unwrap();
        assert!(
            std::fs::metadata(&null)
                .unwrap()
                .file_type()
                .is_char_device()
        );
        assert_eq!(entries(dir.path()), vec!["null"]);
    }

    #[test]
    fn a_symlink_to_a_regular_file_stays_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.bin");
        std::fs::write(&real, b"old").unwrap();
        let link = dir.path().join("link.bin");
        std::os::unix::fs::symlink("real.bin", &link).unwrap();
        let dangling = dir.path().join("dangling.bin");
        std::os::unix::fs::symlink("created.bin", &dangling).unwrap();
        for (target, written) in [(&link, &real), (&dangling, &dir.path().join("created.bin"))] {
            let mut file = OutputFile::create(target).unwrap();
            assert!(!file.is_stream());
            file.write_all(b"new").unwrap();
            file.commit().unwrap();
            assert_eq!(std::fs::read(written).unwrap(), b"new");
            assert!(
                std::fs::symlink_metadata(target)
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
        }
    }

    #[test]
    fn a_named_descriptor_is_written_through_a_copy() {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just created and are owned here.
        let (mut read_end, write_end) = unsafe {
            use std::os::fd::FromRawFd;
            (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1]))
        };
        let target = PathBuf::from(format!("/dev/fd/{}", fds[1]));
        let mut file = OutputFile::create(&target).unwrap();
        assert!(file.is_stream());
        assert!(io::Seek::seek(&mut file, io::SeekFrom::Start(0)).is_err());
        file.write_all(b"via fd").unwrap();
        file.commit().unwrap();
        drop(write_end);
        let mut got = Vec::new();
        io::Read::read_to_end(&mut read_end, &mut got).unwrap();
        assert_eq!(got, b"via fd");
        assert_eq!(named_descriptor(Path::new("-")), Some(1));
        assert_eq!(named_descriptor(Path::new("/dev/stdout")), Some(1));
        assert_eq!(named_descriptor(Path::new("/dev/stderr")), Some(2));
        assert_eq!(named_descriptor(Path::new("/proc/self/fd/7")), Some(7));
        assert_eq!(named_descriptor(Path::new("/dev/fd/x")), None);
        assert_eq!(named_descriptor(Path::new("out.bin")), None);
    }

    #[test]
    fn nothing_is_created_inside_dev() {
        assert!(inside_dev(Path::new("/dev/stdout")));
        assert!(inside_dev(Path::new("/dev/shm/x")));
        assert!(!inside_dev(Path::new("/devices/x")));
        assert!(!inside_dev(Path::new("dev/x")));
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
        // A whole derived file checks the same way before writing.
        assert!(matches!(
            write_derived(&link, b"page", &[&input]),
            Err(Error::OutputIsInput { .. })
        ));
        assert_eq!(std::fs::read(&input).unwrap(), b"x");
        write_derived(&fresh, b"page", &[&input]).unwrap();
        assert_eq!(std::fs::read(&fresh).unwrap(), b"page");
    }

    /// The id of a process that has exited (a child, waited for).
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn staging_left_by_dead_processes_is_removed_and_a_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("st");
        let dead = dead_pid();
        // Debris of killed runs: for this target, another tag, and other
        // targets in the same directory.
        let stale = [
            format!(".st.partial-{dead}"),
            format!(".st1.partial-{dead}"),
            format!(".st4.partial-{dead}-2"),
            format!(".other.partial-{dead}"),
        ];
        for name in &stale {
            let stale_dir = dir.path().join(name);
            std::fs::create_dir_all(stale_dir.join("1_Pooling")).unwrap();
            std::fs::write(stale_dir.join("model.safetensors"), b"partial").unwrap();
        }
        let stale_temp = dir
            .path()
            .join(format!(".st.embd.partial-{dead}.tmp-modelbin-{dead}-0"));
        std::fs::write(&stale_temp, b"partial").unwrap();
        // Pid 1 is always alive; the other names only look alike.
        let kept = [
            ".st.partial-1".to_owned(),
            format!(".st.partial-{dead}x"),
            format!(".st.partial-{dead}-notes"),
            format!("st.partial-{dead}"),
            format!(".partial-{dead}"),
        ];
        for name in &kept {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        let staging = staging_path(&target, "");
        assert_eq!(
            staging,
            dir.path()
                .join(format!(".st.partial-{}", std::process::id()))
        );
        assert!(!stale_temp.exists());
        let mut expected = kept.to_vec();
        expected.sort();
        assert_eq!(entries(dir.path()), expected);
    }

    #[test]
    fn a_directory_output_is_never_a_stream_nor_in_a_missing_directory() {
        let dir = tempfile::tempdir().unwrap();
        let (fifo, link) = fifo_and_link(dir.path());
        let file = dir.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        for (path, expected) in [
            (Path::new("-"), "standard output"),
            (Path::new("/dev/stdout"), "standard output"),
            (Path::new("/dev/fd/3"), "an open file descriptor"),
            (&fifo, "a FIFO"),
            (&link, "a FIFO"),
            (&file, "a file"),
        ] {
            match check_directory_output(path) {
                Err(Error::NotADirectoryOutput { path: p, kind }) => {
                    assert_eq!((p.as_path(), kind), (path, expected));
                }
                other => panic!("{path:?}: {other:?}"),
            }
        }
        let missing = dir.path().join("nope");
        match check_directory_output(&missing.join("st")) {
            Err(Error::Io { path, source }) => {
                assert_eq!(path, missing);
                assert_eq!(source.kind(), io::ErrorKind::NotFound);
            }
            other => panic!("{other:?}"),
        }
        assert!(!missing.exists());
        check_directory_output(&dir.path().join("new")).unwrap();
        check_directory_output(dir.path()).unwrap();
    }
}
