//! Every console example of the README runs and prints what the README
//! shows (`[..]` stands for text that changes from run to run, `...` for
//! lines left out), so the documentation and the program cannot disagree.
//!
//! The examples run from a scratch directory that sees the repository's
//! `tests/`, `crates/` and `target/` (the fetched test data) and collects
//! the files the examples write.

use std::path::Path;

#[test]
fn readme_examples_run_as_shown() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let repo = repo.canonicalize().unwrap();
    assert!(
        repo.join("target/test-data/all-MiniLM-L6-v2/model.safetensors")
            .is_file(),
        "run scripts/fetch-test-data.sh first"
    );
    let scratch = tempfile::tempdir().unwrap();
    for shared in ["tests", "crates", "target"] {
        std::os::unix::fs::symlink(repo.join(shared), scratch.path().join(shared)).unwrap();
    }
    let readme = scratch.path().join("README.md");
    std::fs::copy(repo.join("README.md"), &readme).unwrap();
    // This test binary runs this one test: the working directory is ours.
    std::env::set_current_dir(scratch.path()).unwrap();
    trycmd::TestCases::new()
        .register_bin("modelbin", Path::new(env!("CARGO_BIN_EXE_modelbin")))
        .case(&readme)
        .run();
}
