#!/usr/bin/env bash
# Sets up the machine if needed and runs the whole test suite (release mode: the numeric
# tests run full-size programs), then the formatting and lint checks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cargo test --release --workspace
if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --all -- --check
fi
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --release --workspace --all-targets --quiet -- -D warnings
fi
