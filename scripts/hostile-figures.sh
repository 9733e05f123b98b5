#!/usr/bin/env bash
# Runs the hostile-input suites (crates/cli/tests/hostile.rs, hostile_io.rs
# and hostile_values.rs, and the bounded runs of record_images.rs) and
# prints, for
# every run of the binary, its arguments, exit code, peak RSS (VmHWM sampled
# every millisecond: runs shorter than that may show 0), wall time and the
# first line of stderr: the figures of docs/reliability.md.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test -p modelbin --test hostile --test hostile_io --test hostile_values \
    --test record_images -- --nocapture --test-threads 1 2>&1 |
    grep 'hostile-figure' | sed 's/.*hostile-figure\t//' | sed 's#/tmp/[^ :]*/##g' |
    column -t -s $'\t'
