//! Every console example of the README and of docs/cli.md runs and prints
//! what the page shows (`[..]` stands for text that changes from run to run,
//! `...` for lines left out), so the documentation and the program cannot
//! disagree.
//!
//! Each page runs from its own scratch directory that sees the repository's
//! `tests/`, `crates/` and `target/test-data/` (the fetched test data) and
//! collects the files the examples write, the README's tours in
//! `target/tour/` as the README says (made first, as its `mkdir` does); the
//! examples of a page run in order, later ones using what earlier ones
//! wrote. The scratch `target/` is a directory of its own, so that the
//! tours never write into the repository's.

use std::path::Path;

/// The pages whose console examples run, each in a fresh scratch directory.
const PAGES: [&str; 2] = ["README.md", "docs/cli.md"];

#[test]
fn readme_examples_run_as_shown() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let repo = repo.canonicalize().unwrap();
    assert!(
        repo.join("target/test-data/all-MiniLM-L6-v2/model.safetensors")
            .is_file(),
        "run scripts/fetch-test-data.sh first"
    );
    for page in PAGES {
        let scratch = tempfile::tempdir().unwrap();
        for shared in ["tests", "crates", "target/test-data"] {
            let link = scratch.path().join(shared);
            std::fs::create_dir_all(link.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(repo.join(shared), link).unwrap();
        }
        std::fs::create_dir(scratch.path().join("target/tour")).unwrap();
        let copy = scratch.path().join(page);
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        std::fs::copy(repo.join(page), &copy).unwrap();
        // This test binary runs this one test: the working directory is
        // ours, and the pages run one after the other.
        std::env::set_current_dir(scratch.path()).unwrap();
        trycmd::TestCases::new()
            .register_bin("modelbin", Path::new(env!("CARGO_BIN_EXE_modelbin")))
            // No periodic progress lines on stderr (which the examples'
            // output includes) however slow the machine.
            .env("MODELBIN_PROGRESS_EVERY", "1000000")
            .case(&copy)
            .run();
    }
}
