//! Running the `modelbin` binary under an address-space limit
//! (`RLIMIT_AS`) and a timeout, sampling its peak RSS: the harness of the
//! hostile-input suites.

use std::ffi::CString;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const MIB: u64 = 1 << 20;
/// The default address-space limit: 512 MiB.
pub const ADDRESS_SPACE: u64 = 512 * MIB;
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// How a bounded run ended.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub peak_rss: u64,
    pub elapsed: Duration,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Exit 0 or 1, no signal, no timeout, peak RSS below `max_rss`.
    pub fn assert_bounded(&self, max_rss: u64) -> &Self {
        assert!(!self.timed_out, "timed out: {self:?}");
        assert_eq!(self.signal, None, "killed by a signal: {self:?}");
        assert!(matches!(self.code, Some(0 | 1)), "exit code: {self:?}");
        assert!(
            self.peak_rss < max_rss,
            "peak RSS {} MiB over {} MiB: {self:?}",
            self.peak_rss / MIB,
            max_rss / MIB
        );
        self
    }

    pub fn assert_fails_with(&self, max_rss: u64, message: &str) {
        self.assert_bounded(max_rss);
        assert_eq!(self.code, Some(1), "{self:?}");
        assert!(self.stderr.contains(message), "{message:?} not in {self:?}");
    }
}

/// Runs the binary with `args` under an address-space limit of `limit`
/// bytes and [`TIMEOUT`], feeding `stdin`; reports the peak RSS.
pub fn run_bounded(args: &[&str], limit: u64, stdin: Stdio) -> Run {
    run_bounded_to(args, limit, stdin, None)
}

/// [`run_bounded`] with standard output sent to `stdout` (then
/// [`Run::stdout`] is empty) instead of a file the run reads back.
pub fn run_bounded_to(args: &[&str], limit: u64, stdin: Stdio, stdout: Option<Stdio>) -> Run {
    run_bounded_in(None, args, limit, stdin, stdout)
}

/// [`run_bounded_to`] in the working directory `cwd` (the test's own
/// when `None`), where relative paths in `args` land.
pub fn run_bounded_in(
    cwd: Option<&Path>,
    args: &[&str],
    limit: u64,
    stdin: Stdio,
    stdout: Option<Stdio>,
) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (dir.path().join("out"), dir.path().join("err"));
    let mut command = Command::new(env!("CARGO_BIN_EXE_modelbin"));
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    command
        .args(args)
        .stdin(stdin)
        .stdout(stdout.unwrap_or_else(|| File::create(&out_path).unwrap().into()))
        .stderr(File::create(&err_path).unwrap());
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        command.pre_exec(move || {
            let rlim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &rlim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let start = Instant::now();
    // Reaped by `wait_bounded` (waitpid), which also samples its memory.
    #[allow(clippy::zombie_processes)]
    let child = command.spawn().expect("the binary starts");
    let (status, peak_rss, timed_out) = wait_bounded(child.id() as libc::pid_t, TIMEOUT);
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    let run = Run {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        timed_out,
        peak_rss,
        elapsed: start.elapsed(),
        stdout: if out_path.exists() {
            read(&out_path)
        } else {
            String::new()
        },
        stderr: read(&err_path),
    };
    // One line per run for scripts/hostile-figures.sh (docs/reliability.md).
    let words: Vec<&str> = args
        .iter()
        .map(|a| {
            Path::new(a)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or(a)
        })
        .collect();
    eprintln!(
        "hostile-figure\t{}\t{:?}\t{:.1} MiB\t{:.2} s\t{}",
        words.join(" "),
        run.code,
        run.peak_rss as f64 / MIB as f64,
        run.elapsed.as_secs_f64(),
        run.stderr
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(110)
            .collect::<String>()
    );
    run
}

/// The high-water mark of `pid`'s resident memory (`VmHWM`), in bytes.
/// (`wait4`'s `ru_maxrss` is no use here: Linux carries the forking test
/// process's own size over `exec` into it.)
pub fn high_water_mark(pid: libc::pid_t) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Waits for `pid`, killing it after `timeout`; returns its wait status,
/// peak RSS in bytes (sampled every millisecond until it exits) and
/// whether it was killed for time.
pub fn wait_bounded(pid: libc::pid_t, timeout: Duration) -> (i32, u64, bool) {
    let start = Instant::now();
    let (mut timed_out, mut peak) = (false, 0);
    loop {
        if let Some(hwm) = high_water_mark(pid) {
            peak = peak.max(hwm);
        }
        let mut status = 0;
        // SAFETY: a valid pointer to a local; `pid` is our child.
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if done == pid {
            return (status, peak, timed_out);
        }
        if !timed_out && start.elapsed() > timeout {
            timed_out = true;
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

pub fn modelbin(args: &[&str]) -> Run {
    run_bounded(args, ADDRESS_SPACE, Stdio::null())
}

pub fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

pub fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

pub fn mkfifo(path: &Path) {
    let c_path = std::ffi::CString::new(arg(path)).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
}

/// A device node `name` in `dir` with the kernel's (major, minor) numbers
/// (1, 3) null, (1, 5) zero, (1, 7) full; `None` where mknod is not
/// allowed (not root, or a `nodev` mount).
pub fn device(dir: &Path, name: &str, minor: u32) -> Option<PathBuf> {
    let path = dir.join(name);
    let c_path = CString::new(arg(&path)).unwrap();
    // SAFETY: a valid NUL-terminated path and a character-device mode.
    let made = unsafe {
        libc::mknod(
            c_path.as_ptr(),
            libc::S_IFCHR | 0o666,
            libc::makedev(1, minor),
        )
    };
    (made == 0 && File::open(&path).is_ok()).then_some(path)
}
