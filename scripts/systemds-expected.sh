#!/usr/bin/env bash
# Regenerates tests/dml/expected/NAME.out: what SystemDS 3.4 prints for each driver
# tests/dml/drivers/NAME.dml and each program tests/dml/accept/NAME.dml (or only the ones
# named as arguments), run from
# ../shared/data/systemds-scripts like the drivers there (inputs from data/, library from
# builtin/). The output is SystemDS's standard output up to its statistics footer; a driver
# SystemDS rejects gets no file (its error is shown). tests/systemds_library.rs compares
# spores's output with these files.
# SystemDS's Vector API kernels (dotProduct, vectMultiplyAdd) sum in blocks of the JVM's
# preferred vector length, so some outputs depend on the CPU: the files of expected/ are
# from an AVX-512 machine (8 doubles a vector); on a CPU of another width W (4 with AVX2, 2
# without) this script writes expected/vlenW/NAME.out instead, and only where the output
# differs from expected/NAME.out. The test reads the file of the width spores follows.
# Needs SystemDS (../shared/bench/peers/install-systemds.sh /opt/systemds, or SYSTEMDS_HOME).
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
data=$(cd "$repo/../shared/data/systemds-scripts" && pwd)
home=${SYSTEMDS_HOME:-/opt/systemds}
cd "$data"
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then width=8
elif grep -qw avx2 /proc/cpuinfo 2>/dev/null; then width=4
else width=2; fi
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in "$repo"/tests/dml/drivers/*.dml "$repo"/tests/dml/accept/*.dml; do
    names+=("$(basename "$f" .dml)")
  done
fi
for n in "${names[@]}"; do
  prog="$repo/tests/dml/drivers/$n.dml"
  [ -f "$prog" ] || prog="$repo/tests/dml/accept/$n.dml"
  out=$(java -Xmx2g --add-modules=jdk.incubator.vector \
    -Dlog4j.configuration=file:"$home/conf/log4j.properties" \
    -cp "$home/SystemDS.jar:$home/lib/*" org.apache.sysds.api.DMLScript \
    -f "$prog" -exec singlenode 2>/tmp/systemds-expected.err)
  if [ $? -ne 0 ] || grep -q 'Exception' <<<"$out"; then
    echo "FAIL $n"; cat - /tmp/systemds-expected.err <<<"$out" | grep -v '^\s*at ' | grep -v WARN | head -8
    if [ "$width" = 8 ]; then rm -f "$repo/tests/dml/expected/$n.out"; fi
  else
    sed '/^SystemDS Statistics/,$d' <<<"$out" > /tmp/systemds-expected.out
    if [ "$width" = 8 ]; then
      mv /tmp/systemds-expected.out "$repo/tests/dml/expected/$n.out"
      echo "ok $n"
    else
      alt="$repo/tests/dml/expected/vlen$width/$n.out"
      if cmp -s /tmp/systemds-expected.out "$repo/tests/dml/expected/$n.out"; then
        rm -f "$alt"
        echo "ok $n (the same at $width doubles a vector)"
      else
        mkdir -p "$(dirname "$alt")"
        mv /tmp/systemds-expected.out "$alt"
        echo "ok $n (written for $width doubles a vector)"
      fi
    fi
  fi
done
