//! The heavy test venv's Python (torch, transformers, `tokenizers`): the
//! `MODELBIN_HEAVY_PYTHON` environment variable, else the venv that
//! `scripts/heavy-venv.sh` prints (it makes the venv when missing).

use std::path::PathBuf;
use std::process::Command;

/// The heavy venv's `python`.
pub fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("MODELBIN_HEAVY_PYTHON") {
        return PathBuf::from(python);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("bash")
        .arg(root.join("scripts/heavy-venv.sh"))
        .current_dir(&root)
        .output()
        .expect("run scripts/heavy-venv.sh");
    assert!(
        out.status.success(),
        "scripts/heavy-venv.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let venv = String::from_utf8(out.stdout).expect("a UTF-8 path");
    PathBuf::from(venv.trim()).join("bin/python")
}
