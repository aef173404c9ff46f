#!/usr/bin/env bash
# Prints the table of SystemDS's 199 library scripts (../shared/data/systemds-scripts/builtin)
# as markdown: whether spores parses each, checks it (every function against its declared
# types, no statement deferred to run time), and which drivers run it against SystemDS's
# output (tests/dml/drivers and the shared drivers; "known failure" when the driver is in a
# KNOWN_FAILURES list). Parse and check come from the library sweep of
# tests/systemds_scripts.rs.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
data="$repo/../shared/data/systemds-scripts"
cd "$repo"
sweep=$(mktemp)
trap 'rm -f "$sweep"' EXIT
cargo test --release --test systemds_scripts library_scripts_parse_and_check \
  -- --nocapture 2>/dev/null | grep -P '\.dml\t' > "$sweep"
# the names listed in the tests' KNOWN_FAILURES (one `("name", "why")` per entry)
known=$(awk '/^const KNOWN_FAILURES/{on=1} on{print} on&&/\];/{on=0}' tests/systemds_library.rs tests/systemds_scripts.rs \
  | tr -d '\n' | grep -o '( *"[A-Za-z]*"' | tr -d '( "' | sort -u)
python3 - "$data" "$repo" "$known" "$sweep" <<'PY'
import os, re, sys
data, repo, known = sys.argv[1], sys.argv[2], set(sys.argv[3].split())
sweep = open(sys.argv[4])
drivers = {}
for d in [os.path.join(repo, "tests/dml/drivers"), os.path.join(data, "drivers")]:
    for f in sorted(os.listdir(d)):
        if f.endswith(".dml"):
            drivers[f[:-4]] = open(os.path.join(d, f)).read()
print("| script | parses | checks | run by drivers (SystemDS's output) |")
print("|---|---|---|---|")
counts = [0, 0, 0]
for line in sweep:
    name, status, *why = line.rstrip("\n").split("\t")
    fn = name[:-4]
    parses = status != "parse"
    checks = status == "ok"
    runs = [d + (" (known failure)" if d in known else "")
            for d, src in drivers.items() if re.search(r"\b%s\s*\(" % re.escape(fn), src)]
    counts[0] += parses; counts[1] += checks; counts[2] += bool(runs)
    note = "" if checks else " (" + (why[0] if why else status) + ")"
    print(f"| {fn} | {'yes' if parses else 'no'} | {'yes' if checks else 'no' + note} | {', '.join(runs)} |")
print(f"\n{counts[0]} parse, {counts[1]} check, {counts[2]} run by a driver")
PY
