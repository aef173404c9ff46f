#!/usr/bin/env bash
# The `spores emit` table: SystemDS's time for each program as written and as emitted by
# spores, on one node and on Spark in local mode, with the checksums of both.
#
# Usage: scripts/emit-bench.sh [-k "als_grad loss ..."] [-p "als pnmf"] [-d "lmCG l2svm ..."]
#                              [-b "mlr svm glm als_cg"] [-e "systemds spark"] [-r REPS]
#                              [-w WARMUP] [-o OUTDIR] [-t TIMEOUT_S]
#   -k  peer kernels (../shared/bench/peers/kernels/NAME.dml; default: all), default shapes
#       ("" for none, as for -p and -d)
#       (m=20000 n=5000 k=10 sp=0.01 seed=42; mlr_hv m=200000)
#   -p  programs (../shared/data/programs/NAME.la; default: "als pnmf")
#   -d  held-out drivers of SystemDS's algorithm library
#       (../shared/data/systemds-scripts/drivers/NAME.dml, run with --lib builtin from that
#       folder; default: "lmCG l2svm multiLogReg alsCG pnmf")
#   -b  held-out-like programs of benches/programs (NAME.dml: MultiLogReg, L2-SVM, GLM and
#       masked ALS-CG at larger sizes, calling SystemDS's builtins; emitted with --lib
#       ../shared/data/systemds-scripts/builtin; default: none, "all" for all of them)
#   -e  engines (default: "systemds spark"): `spores run --engine E`, the program emitted
#       for it (`spores emit --engine systemds|spark`)
#   -r  timed kernel iterations per process (default 3), -w warm-up iterations (default 1)
#   -o  output folder (default /tmp/emit-bench/<timestamp>): emitted files, --explain, logs
#   -t  per-process timeout in seconds (default 900)
# Env: SPORES (default target/release/spores), SPORES_JAVA_XMX (the JVM heap, default 8g).
#
# Time: for a kernel on one node, the median over its timed iterations of what it prints as
# KTIME (the kernel alone, measured inside SystemDS with time()); otherwise SystemDS's "Total
# execution time" (-stats: the whole program after compilation, without the JVM start; on
# Spark, KTIME would only time building the lazy RDD lineage, not computing it).
# When no run was replaced, the emitted file is the original with a comment line, and is not
# run again ("same").
# Checksum: a kernel's result= of its last timed iteration, a program's last printed line.
# "agree" is |a - b| <= 1e-8 * max(|a|, |b|). load1 is the load average before the pair of
# runs (the machine may be shared: check it before trusting a number).
# Output: a Markdown table on standard output and in OUTDIR/table.md; a TSV in
# OUTDIR/results.tsv.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHARED="$ROOT/../shared"
[[ -d "$SHARED/bench" ]] || SHARED=/work/shared
SPORES="${SPORES:-$ROOT/target/release/spores}"
export SPORES_JAVA_XMX="${SPORES_JAVA_XMX:-8g}"
KERNELS="all"; PROGRAMS="als pnmf"; DRIVERS="lmCG l2svm multiLogReg alsCG pnmf"; BENCHES=""; ENGINES="systemds spark"; REPS=3; WARMUP=1; OUT=""; TMO=900
while getopts "k:p:d:b:e:r:w:o:t:h" opt; do
  case $opt in
    k) KERNELS="$OPTARG";; p) PROGRAMS="$OPTARG";; d) DRIVERS="$OPTARG";; b) BENCHES="$OPTARG";;
    e) ENGINES="$OPTARG";; r) REPS="$OPTARG";;
    w) WARMUP="$OPTARG";; o) OUT="$OPTARG";; t) TMO="$OPTARG";;
    h|*) sed -n '2,35p' "$0"; exit 1;;
  esac
done
[[ -x "$SPORES" ]] || { echo "no $SPORES: cargo build --release" >&2; exit 1; }
if [[ "$KERNELS" == all ]]; then
  KERNELS="$(cd "$SHARED/bench/peers/kernels" && ls ./*.dml | sed 's|^\./||; s/\.dml$//' | tr '\n' ' ')"
fi
if [[ "$BENCHES" == all ]]; then
  BENCHES="$(cd "$ROOT/benches/programs" && ls ./*.dml | sed 's|^\./||; s/\.dml$//' | tr '\n' ' ')"
fi
OUT="${OUT:-/tmp/emit-bench/$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"

# kernel -> its -nvargs (the peers' default shapes)
kernel_args() {
  local m=20000
  [[ $1 == mlr_hv ]] && m=200000
  echo "m=$m n=5000 k=10 sp=0.01 reps=$REPS warmup=$WARMUP seed=42"
}

# log kind engine -> seconds (kernel on one node: median KTIME of iterations >= 1; else Total
# execution time)
time_of() {
  if [[ $2 == kernel && $3 == systemds ]]; then
    awk '$1=="KTIME" && $3>=1 {print $4}' "$1" | sort -g |
      awk '{t[++c]=$1} END{ if(c==0){print "NA"; exit}
           printf "%.4f\n", (c%2)?t[(c+1)/2]:(t[c/2]+t[c/2+1])/2 }'
  else
    awk '/^Total execution time:/ {printf "%.4f\n", $4; f=1} END{if(!f) print "NA"}' "$1"
  fi
}

# log kind -> checksum
sum_of() {
  if [[ $2 == kernel ]]; then
    awk '$1=="KTIME" && $3>=1 {r=$5} END{sub(/^result=/,"",r); print (r==""?"NA":r)}' "$1"
  else
    awk '/^SystemDS Statistics/ {exit} /^-?[0-9.]+([eE][-+]?[0-9]+)?$/ {r=$1} END{print (r==""?"NA":r)}' "$1"
  fi
}

agree() {
  awk -v a="$1" -v b="$2" 'BEGIN{
    if (a=="NA" || b=="NA") {print "NA"; exit}
    d=a-b; if (d<0) d=-d; m=(a<0?-a:a); n=(b<0?-b:b); if (n>m) m=n;
    print ((d<=1e-8*m) ? "yes" : sprintf("NO (%.1e)", (m>0?d/m:d))) }'
}

speedup() {
  awk -v a="$1" -v b="$2" 'BEGIN{ if (b=="same") print "-"; else if (a=="NA" || b=="NA" || b<=0) print "NA"; else printf "%.1fx\n", a/b }'
}

printf 'case\tengine\toriginal_s\temitted_s\tspeedup\toriginal_sum\temitted_sum\tagree\truns_replaced\tload1\n' >"$OUT/results.tsv"
{
  echo "| case | engine | original (s) | emitted (s) | speedup | checksum original | checksum emitted | agree (1e-8) | runs replaced | load1 |"
  echo "|---|---|---:|---:|---:|---:|---:|---|---:|---:|"
} | tee "$OUT/table.md"

bench() { # name file kind dir args...
  local name=$1 file=$2 kind=$3 dir=$4; shift 4
  local -a nv=() lib=()
  [[ $# -gt 0 ]] && nv=(-nvargs "$@")
  [[ $kind == driver ]] && lib=(--lib builtin)
  [[ $kind == heldout ]] && lib=(--lib "$SHARED/data/systemds-scripts/builtin")
  for eng in $ENGINES; do
    # emitted for the engine it runs on (`spores emit --engine`: Spark's per-instruction cost)
    local emitted="$OUT/$name.$eng.emitted.dml" target=systemds
    [[ $eng == spark ]] && target=spark
    if ! (cd "$dir" && "$SPORES" emit "$file" --engine "$target" "${lib[@]}" "${nv[@]}" -o "$emitted" \
          --explain 2>"$OUT/$name.$eng.explain"); then
      echo "| $name | $eng | emit failed: see $OUT/$name.$eng.explain |||||||" | tee -a "$OUT/table.md"
      continue
    fi
    local replaced
    replaced=$(sed -n '1s/^# emitted by spores [^:]*: \([0-9]*\) run.*/\1/p' "$emitted")
    local load1 lo le
    load1=$(cut -d' ' -f1 /proc/loadavg)
    lo="$OUT/$name.$eng.original.log"; le="$OUT/$name.$eng.emitted.log"
    (cd "$dir" && timeout "$TMO" "$SPORES" run --engine "$eng" --no-opt "$file" --stats "${nv[@]}" >"$lo" 2>&1)
    [[ $? == 124 ]] && echo "TIMEOUT after $TMO s" >>"$lo"
    local to te so se same=0
    if [[ $replaced == 0 ]] && cmp -s <(tail -n +2 "$emitted") "$file"; then same=1; fi
    if [[ $same == 0 ]]; then
      (cd "$dir" && timeout "$TMO" "$SPORES" run --engine "$eng" --no-opt "$emitted" --stats "${nv[@]}" >"$le" 2>&1)
      [[ $? == 124 ]] && echo "TIMEOUT after $TMO s" >>"$le"
    else
      cp "$lo" "$le"
    fi
    to=$(time_of "$lo" "$kind" "$eng"); te=$(time_of "$le" "$kind" "$eng")
    grep -q '^TIMEOUT after' "$lo" && to=">$TMO"
    grep -q '^TIMEOUT after' "$le" && te=">$TMO"
    so=$(sum_of "$lo" "$kind"); se=$(sum_of "$le" "$kind")
    [[ $same == 1 ]] && te="same"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$eng" "$to" "$te" "$(speedup "$to" "$te")" \
      "$so" "$se" "$(agree "$so" "$se")" "$replaced" "$load1" >>"$OUT/results.tsv"
    echo "| $name | $eng | $to | $te | $(speedup "$to" "$te") | $so | $se | $(agree "$so" "$se") | $replaced | $load1 |" |
      tee -a "$OUT/table.md"
  done
}

SCRIPTS="$SHARED/data/systemds-scripts"
for d in $DRIVERS; do
  bench "driver-$d" "$SCRIPTS/drivers/$d.dml" driver "$SCRIPTS"
done
for k in $KERNELS; do
  # shellcheck disable=SC2046
  bench "$k" "$SHARED/bench/peers/kernels/$k.dml" kernel "$OUT" $(kernel_args "$k")
done
for p in $PROGRAMS; do
  bench "$p" "$SHARED/data/programs/$p.la" program "$OUT"
done
for b in $BENCHES; do
  bench "heldout-$b" "$ROOT/benches/programs/$b.dml" heldout "$OUT"
done
echo "# logs, emitted files and explanations: $OUT" >&2
