#!/usr/bin/env bash
# The test command: fetch the real test models (cached under target/), then run
# every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-test-data.sh
cargo test --workspace --locked "$@"
