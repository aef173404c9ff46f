#!/usr/bin/env bash
# Sets up the machine if needed and runs the whole test suite (release mode: the numeric
# tests run full-size programs), then the formatting and lint checks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
# the SystemDS tests (tests/emit.rs, tests/systemds_*.rs) run when SystemDS is installed
if [[ "${SPORES_TEST_SYSTEMDS:-0}" == 1 ]]; then
  if [[ "${SPORES_TEST_SPARK:-0}" == 1 ]]; then
    bash scripts/install-systemds.sh --spark
  else
    bash scripts/install-systemds.sh
  fi
fi
cargo test --release --workspace
if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --all -- --check
fi
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --release --workspace --all-targets --quiet -- -D warnings
fi
