#!/usr/bin/env bash
# The project's test command: formatting, lints, then every test in the workspace.
# README.md and .ci/run both call this script.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

echo "== cargo test"
cargo test --workspace
