#!/usr/bin/env bash
# Sets up the machine if needed, builds spores in release mode and runs an example end to end
# with statistics. Usage: scripts/example.sh [FILE.la [--nvargs k=v ...]]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cargo build --release --quiet
file="${1:-examples/loss.la}"
shift || true
exec target/release/spores run "$file" --stats "$@"
