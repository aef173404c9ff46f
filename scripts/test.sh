#!/usr/bin/env bash
# Sets up the machine if needed and runs the whole test suite (release mode: the numeric
# tests run full-size programs), then the formatting and lint checks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
# optional: Graphviz, so that the DOT test also renders a plan with `dot -Tsvg` (without it
# the test checks the DOT text only and says so); SPORES_NO_GRAPHVIZ=1 skips it
if [ -z "${SPORES_NO_GRAPHVIZ:-}" ] && ! command -v dot >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq graphviz \
    || echo "note: graphviz not installed; the DOT test will not render" >&2
fi
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
