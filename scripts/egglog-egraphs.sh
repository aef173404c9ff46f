#!/usr/bin/env bash
# Regenerates the egglog test fixtures (tests/egraphs/egglog/*.json) with the real egglog
# library: PyPI egglog 13.2 on Python 3.11, in a virtual environment (default
# target/egglog-venv, or $EGGLOG_VENV). cargo test reads the committed files and needs no Python.
#
#   scripts/egglog-egraphs.sh [OUT_DIR]     (default tests/egraphs/egglog)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-tests/egraphs/egglog}"
venv="${EGGLOG_VENV:-target/egglog-venv}"
python="${PYTHON:-python3.11}"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/pip" install --quiet 'egglog==13.2'
"$venv/bin/python" scripts/egglog_attention.py "$out"
