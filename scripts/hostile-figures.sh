#!/usr/bin/env bash
# Runs the hostile-input suite (crates/cli/tests/hostile.rs) and prints, for
# every run of the binary, its arguments, exit code, peak RSS, wall time and
# first line of stderr: the figures of docs/reliability.md.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release -p modelbin --test hostile -- --nocapture --test-threads 1 2>&1 |
    grep '^hostile-figure' | cut -f2- | column -t -s $'\t'
