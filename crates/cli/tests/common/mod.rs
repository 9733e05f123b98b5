//! Running the `modelbin` binary from the integration tests.
#![allow(dead_code)] // each test binary uses a different subset

pub mod bounded;

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// A path as the `&str` an argument list takes.
pub fn s(p: &std::path::Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

/// Runs `modelbin args`, feeding `stdin`.
pub fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_modelbin"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that fails before reading its input closes the pipe early.
    if let Err(e) = child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    child.wait_with_output().unwrap()
}

/// Runs a command that must succeed; returns its stdout.
pub fn ok(args: &[&str], stdin: &str) -> String {
    let out = run(args, stdin);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs a command that must fail with exit 1 and a one-line error; returns it.
pub fn fails(args: &[&str], stdin: &str) -> String {
    let out = run(args, stdin);
    assert_eq!(out.status.code(), Some(1), "{args:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

/// Runs a command that must be refused as a usage error (exit 2: a bad
/// flag or value); returns its stderr.
#[allow(dead_code)]
pub fn usage(args: &[&str], stdin: &str) -> String {
    let out = run(args, stdin);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    String::from_utf8(out.stderr).unwrap()
}
