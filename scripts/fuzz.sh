#!/usr/bin/env bash
# Runs the fuzzers longer than `cargo test` does (src/fuzz/):
#   scripts/fuzz.sh [N] [SEED] [THREADS]
# runs N random programs (default 2000) of the differential fuzzer with SEED (default 1), each
# optimized, unoptimized and through the reference evaluator, shrinks every failure to a
# minimal program and prints it; then N/10 robustness cases (mutated programs, Matrix Market
# files, e-graph JSON and command lines run as subprocesses, plus ten times as many mutated
# programs through the front end in-process). Exits 1 if anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000}
SEED=${2:-1}
THREADS=${3:-2}
cargo build --release --quiet
status=0
target/release/spores fuzz --seed "$SEED" --count "$N" --threads "$THREADS" || status=1
target/release/spores fuzz --robust . --seed "$SEED" --count $(( (N + 9) / 10 )) || status=1
exit $status
