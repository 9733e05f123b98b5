//! The heavy test venv's Python (torch, transformers, tokenizers), for the
//! tests whose oracle is the real library: `MODELBIN_HEAVY_PYTHON` when
//! set (a Python executable), else the venv `scripts/heavy-venv.sh`
//! prints (made first when missing).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The heavy venv's Python executable.
pub fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("MODELBIN_HEAVY_PYTHON") {
        return PathBuf::from(python);
    }
    let script = repo().join("scripts/heavy-venv.sh");
    let out = Command::new(&script)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let venv = String::from_utf8(out.stdout).expect("a UTF-8 path");
    Path::new(venv.trim()).join("bin/python")
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the heavy Python on `script` (relative to the repository) with
/// `args`, panicking with its stderr if it fails.
pub fn run(script: &str, args: &[&Path]) {
    let out = Command::new(python())
        .arg(repo().join(script))
        .args(args)
        .output()
        .expect("the heavy venv's python runs");
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
