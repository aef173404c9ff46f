#!/usr/bin/env bash
# Before/after in CPU time on a shared machine: per peer kernel (default shapes), two spores
# builds run alternately, three rounds, `spores run KERNEL.dml --stats` (reps=10, warmup=1),
# benches/floor.py per round, then per kernel the median kernel CPU time of each build and the
# second build's floor, estimate and ratios.
# Usage: benches/floor-ab.sh OUTDIR SPORES_BEFORE SPORES_AFTER
out=$1; A=$2; B=$3
here="$(cd "$(dirname "$0")/.." && pwd)"
K="$here/../shared/bench/peers/kernels"
for round in 1 2 3; do
 for k in loss als_grad alscg_grad pnmf_sumwh pnmf_xlogwh pnmf_obj pnmf_update sum_xuv mlr_hv; do
  m=20000; [[ $k == mlr_hv ]] && m=200000
  for side in A B; do
    bin=$A; [[ $side == B ]] && bin=$B
    mkdir -p $out/$side$round
    $bin run $K/$k.dml --stats --nvargs m=$m n=5000 k=10 sp=0.01 reps=10 warmup=1 seed=42 > $out/$side$round/$k.spores.log 2>&1
  done
 done
done
for d in $out/A1 $out/A2 $out/A3 $out/B1 $out/B2 $out/B3; do python3 "$here/benches/floor.py" $d > $d/floor.tsv; done
# median over the rounds of cpu_ms per kernel
python3 - "$out" <<'PY'
import sys, csv, statistics, os
out = sys.argv[1]
def load(side):
    r = {}
    for i in (1, 2, 3):
        with open(os.path.join(out, f"{side}{i}", "floor.tsv")) as f:
            for row in csv.DictReader((l for l in f if not l.startswith("#")), delimiter="\t"):
                r.setdefault(row["kernel"], []).append(row)
    return r
a, b = load("A"), load("B")
print("kernel\tA_cpu_ms\tB_cpu_ms\tA/B\tB_floor_ms\tB_cpu/floor\tB_est_ms\tB_est/cpu")
for k in a:
    ca = statistics.median(float(x["cpu_ms"]) for x in a[k])
    cb = statistics.median(float(x["cpu_ms"]) for x in b[k])
    fl = float(b[k][0]["floor_ms"])
    est = b[k][0]["estimated_ms"]
    ratio = "-" if est == "-" else f"{float(est)/cb:.2f}"
    print(f"{k}\t{ca:.3f}\t{cb:.3f}\t{ca/cb:.2f}\t{fl:.3f}\t{cb/fl:.2f}\t{est}\t{ratio}")
PY
