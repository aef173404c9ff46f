#!/usr/bin/env bash
# Survey: runs DML programs nobody here wrote in SystemDS 3.4 and in spores (optimized and
# with --no-opt), with the same arguments and inputs, and compares every printed number and
# every output file to 1e-8 relative (1e-12 absolute for values near zero).
#
#   scripts/systemds-corpus.sh algorithms        # (a) scripts/algorithms/*.dml of SystemDS, and a
#                                                #     few standalone scripts of staging and utils
#   VARIANT=1|2|3 scripts/systemds-corpus.sh algorithms  # (a) with other data and arguments:
#                                                #     tall 10%-sparse CSV with header / wide
#                                                #     dense Matrix Market / 1%-sparse text
#                                                #     inputs, csv / mm / text outputs, other
#                                                #     options (see VARIANTS below)
#   scripts/systemds-corpus.sh tests [N [NAME..]] # (b) N (default 300) test programs of
#                                                #     src/test/scripts/functions/** (or the
#                                                #     ones named, like misc/Exists1.dml)
#
# Both corpora come from the local mirror of apache/systemds (MIRROR, default
# /work/.mirror/apache+systemds/repo: a git dir, its .dml files read with `git cat-file`):
# (a) at the last commit that still has scripts/algorithms (ALGO_REV), (b) at HEAD. Inputs are
# generated here, seeded: CSV / Matrix Market / text files with their .mtd. For (a) each
# script gets a fixed argument set (table below; a predict script reads the model SystemDS's
# training run wrote). For (b) the arguments come first from the JUnit test that drives the
# program (src/test/java: its `programArgs`, with `input("A")` written as the test writes A
# with getRandomMatrix: shape, range, sparsity; numbers and strings read from constants, the
# locals before the call, or the argument the test method's caller passes; a clock-seeded
# `new Random(..).nextDouble()` is 0.37), then, while SystemDS rejects them, are inferred
# from the program: a `$k` that a `read(` takes is an input matrix (10x10 text with .mtd), or
# a list (a ListWriter folder) when the program takes as.matrix(L[i]) / as.scalar(L[i]) of
# what it read; one a `write(` takes is an output path, a `sparsity=$k` is 0.7, any other is
# the number 10 (then 2, then 10x1 inputs, then 10x10 and 10x1 inputs of integers 1..5; an
# input the program passes to table, seq, outer, quantile, moment and the like is a 10x1
# column in each of these, and 10x10 only after them). An input the program reads with format="csv"
# (or "mm") is written in that format (a text .mtd conflicts in SystemDS). An all-zero text input gets one `1 1 0` line,
# as SystemDS's tests write it (SystemDS rejects an empty text file). Each case runs in a
# folder where `src` and `scripts` link to the extracted sources, so `source("./src/test/...")`
# and `source("nn/layers/...")` find their files as in SystemDS's test runs. Programs without arguments run as they are;
# templates and programs that read frames are skipped. ONLY=REGEX selects programs by path;
# DIRS=a,b/c replaces the folders of functions/ whose programs (b) draws from. INPUTS=sparse|
# dense|empty|nan|csv|mm gives (b)'s inputs other contents or formats. FROM=K skips
# the first K programs of (b)'s sample (the same sample for the same N), to resume a survey
# that stopped after K programs.
# A case SystemDS itself fails on is reported as `skip` and not counted, and so
# is a wrong result when SystemDS, run again, differs from itself (unseeded random numbers),
# and a spores failure that names a frame (frames are out of scope; a library function
# such as gridSearch returns one).
# Cases of (b) run JOBS (3) at a time, of (a) JOBS (1) at a time (the predict cases after the
# training cases whose models they read). Output: one line per case (`match`, `FAIL <cause>`,
# `skip <why>`), then the counts by cause. Binary outputs (SystemDS's SequenceFiles) are
# compared cell by cell. The work dir (WORK, default a fresh temp dir) is kept for inspection, with each engine's stdout and stderr (.stdout, .stderr) beside its
# outputs. Skips with a message when the mirror, SystemDS (SYSTEMDS_HOME, default
# /opt/systemds) or java is missing. Needs python3 (standard library only).
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
mirror=${MIRROR:-/work/.mirror/apache+systemds/repo}
home=${SYSTEMDS_HOME:-/opt/systemds}
if ! git --git-dir="$mirror" rev-parse -q --verify HEAD >/dev/null 2>&1; then
  echo "skip: no mirror of apache/systemds at $mirror (set MIRROR)"; exit 0
fi
if [ ! -f "$home/SystemDS.jar" ] || ! command -v java >/dev/null; then
  echo "skip: SystemDS is not installed at $home (scripts/install-systemds.sh, SYSTEMDS_HOME)"
  exit 0
fi
work=${WORK:-$(mktemp -d /tmp/systemds-corpus.XXXXXX)}
mkdir -p "$work"
spores=${SPORES:-$repo/target/release/spores}
[ -x "$spores" ] || (cd "$repo" && cargo build --release -q) || exit 1
# a copy, so that a rebuild during the survey does not pull the binary away
cp "$spores" "$work/spores" && spores=$work/spores
export MIRROR="$mirror" SYSTEMDS_HOME="$home" SPORES="$spores" WORK="$work"
export ALGO_REV=${ALGO_REV:-29f23a7643^}
export SPORES_LIB=${SPORES_LIB:-$repo/../shared/data/systemds-scripts/builtin}
exec python3 - "$@" <<'PY'
import os, re, subprocess, sys, random, json, math, shutil, collections, glob, zlib, hashlib

MIRROR, HOME, SPORES, WORK = (os.environ[k] for k in ("MIRROR", "SYSTEMDS_HOME", "SPORES", "WORK"))
TIMEOUT = int(os.environ.get("CASE_TIMEOUT", "300"))

def sh(args, cwd=None, timeout=TIMEOUT):
    try:
        p = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return -1, "", "timeout"

def extract(rev, path, dest, suffix=".dml"):
    """Copies the files ending in `suffix` under `path` at `rev` out of the mirror (a git dir
    whose biggest blobs may be absent, so no `git archive`)."""
    git = ["git", "--git-dir", MIRROR]
    ls = subprocess.run(git + ["ls-tree", "-r", rev, path], capture_output=True, text=True, check=True).stdout
    files = [(l.split()[2], l.split("\t", 1)[1]) for l in ls.splitlines() if l.endswith(suffix)]
    batch = subprocess.run(git + ["cat-file", "--batch"], input="".join(h + "\n" for h, _ in files).encode(), capture_output=True, check=True).stdout
    pos = 0
    for _, name in files:
        header_end = batch.index(b"\n", pos)
        header = batch[pos:header_end].split()
        if header[1] == b"missing":
            pos = header_end + 1
            continue
        size = int(header[2])
        body = batch[header_end + 1:header_end + 1 + size]
        pos = header_end + 1 + size + 1
        out = os.path.join(dest, name)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "wb") as f:
            f.write(body)

# ---------------------------------------------------------------- inputs (seeded)
def fmt6(v):
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    return "%.6g" % v

def write_matrix(path, rows, fmt="csv", mtd=True, header=False):
    """Writes a list of rows in `fmt` (csv, text, mm) with the .mtd SystemDS reads (unless
    `mtd` is false); a csv file with a header line `C1,C2,...` when `header`."""
    r, c = len(rows), len(rows[0]) if rows else 0
    nnz = sum(1 for row in rows for v in row if v != 0)
    with open(path, "w") as f:
        if fmt == "csv":
            if header:
                f.write(",".join("C%d" % (j + 1) for j in range(c)) + "\n")
            for row in rows:
                f.write(",".join(fmt6(v) for v in row) + "\n")
        elif fmt == "text":
            for i, row in enumerate(rows):
                for j, v in enumerate(row):
                    if v != 0:
                        f.write("%d %d %s\n" % (i + 1, j + 1, fmt6(v)))
            if nnz == 0 and r and c:
                # SystemDS rejects an empty text file: a zero cell, as its tests write
                f.write("1 1 0\n")
        elif fmt == "mm":
            f.write("%%MatrixMarket matrix coordinate real general\n")
            f.write("%d %d %d\n" % (r, c, nnz))
            for i, row in enumerate(rows):
                for j, v in enumerate(row):
                    if v != 0:
                        f.write("%d %d %s\n" % (i + 1, j + 1, fmt6(v)))
    write_mtd = mtd
    mtd = {"data_type": "matrix", "value_type": "double", "rows": r, "cols": c, "nnz": nnz, "format": fmt}
    if fmt == "csv":
        mtd.update({"header": header, "sep": ","})
    if not write_mtd:
        return
    with open(path + ".mtd", "w") as f:
        json.dump(mtd, f)

def write_list(path, kinds, rng):
    """An unnamed list as SystemDS's ListWriter writes it: a folder of entries `i_null`
    (0-based), each with its .mtd (matrices 10x10 in text format, scalars as the bare
    value), and a .mtd beside the folder with the number of entries."""
    os.makedirs(path, exist_ok=True)
    for i, k in enumerate(kinds):
        f = os.path.join(path, "%d_null" % i)
        if k == "scalar":
            with open(f, "w") as out:
                out.write(fmt6(rng.uniform(1, 5)))
            with open(f + ".mtd", "w") as out:
                json.dump({"data_type": "scalar", "value_type": "double", "format": "text"}, out)
        else:
            write_matrix(f, rnd_rows(rng, 10, 10), "text")
    with open(path + ".mtd", "w") as out:
        json.dump({"data_type": "list", "value_type": "unknown", "rows": len(kinds), "cols": 1, "format": "text"}, out)

def rnd_rows(rng, r, c, lo=-1.0, hi=1.0, density=1.0, ints=False):
    out = []
    for _ in range(r):
        row = []
        for _ in range(c):
            if rng.random() >= density:
                row.append(0.0)
            elif ints:
                row.append(float(rng.randint(int(lo), int(hi))))
            else:
                row.append(float(fmt6(rng.uniform(lo, hi))))
        out.append(row)
    return out

# ---------------------------------------------------------------- reading outputs
NUM = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|-?Infinity|-?Inf\b|NaN")

def tonum(s):
    s = s.replace("Infinity", "inf").replace("Inf", "inf")
    return float(s)

def read_binary(files, mtd):
    """The cells of SystemDS's binary blocks (Hadoop SequenceFiles of MatrixIndexes and
    MatrixBlock records, block size from the .mtd), or None if a file is not one."""
    import struct
    br, bc = mtd.get("rows_in_block", 1000), mtd.get("cols_in_block", 1000)
    cells = {}
    for f in files:
        b = open(f, "rb").read()
        if b[:4] != b"SEQ\x06":
            return None
        p = 4
        for _ in range(2):  # class names (short Text: one length byte)
            p += 1 + b[p]
        if b[p] or b[p + 1]:
            return None  # compressed
        p += 2
        (pairs,) = struct.unpack_from(">i", b, p)
        p += 4
        for _ in range(2 * pairs):
            p += 1 + b[p]
        sync = b[p:p + 16]
        p += 16
        while p < len(b):
            (n,) = struct.unpack_from(">i", b, p)
            p += 4
            if n == -1:
                p += 16
                continue
            end = p + 4 + n
            bi, bj, r, c, t = struct.unpack_from(">qqiib", b, p + 4)
            q = p + 4 + 25
            r0, c0 = (bi - 1) * br, (bj - 1) * bc
            def put(i, j, v):
                if v != 0:
                    cells[(r0 + i, c0 + j)] = v
            if t == 1:
                (k,) = struct.unpack_from(">i", b, q); q += 4
                for _ in range(k):
                    if c > 1:
                        i, j, v = struct.unpack_from(">iid", b, q); q += 16
                    else:
                        (i, v), j = struct.unpack_from(">id", b, q), 0; q += 12
                    put(i, j, v)
            elif t == 2:
                q += 8 if r * c > 2**31 - 1 else 4
                for i in range(r):
                    (k,) = struct.unpack_from(">i", b, q); q += 4
                    for _ in range(k):
                        j, v = struct.unpack_from(">id", b, q); q += 12
                        put(i, j, v)
            elif t == 3:
                vals = struct.unpack_from(">%dd" % (r * c), b, q)
                for k, v in enumerate(vals):
                    put(k // c, k % c, v)
            p = end
    return cells

def read_output(path):
    """A written matrix as (rows, cols, {(i, j): v}) or a scalar as a string; None if absent;
    a file that is neither as ("other", text)."""
    try:
        return read_output_as_written(path)
    except (ValueError, IndexError):
        return ("other", open(path, errors="replace").read() if os.path.isfile(path) else "")

def read_output_as_written(path):
    mtd = {}
    if os.path.exists(path + ".mtd"):
        try:
            mtd = json.load(open(path + ".mtd"))
        except Exception:
            mtd = {}
    if mtd.get("format") == "binary" and mtd.get("data_type") == "matrix" and os.path.exists(path):
        files = [os.path.join(path, p) for p in sorted(os.listdir(path)) if not p.startswith(".") and not p.endswith(".crc")] if os.path.isdir(path) else [path]
        cells = read_binary(files, mtd)
        if cells is not None:
            return ("matrix", mtd.get("rows"), mtd.get("cols"), cells)
    if os.path.isdir(path):
        text = "".join(open(os.path.join(path, p), errors="replace").read() for p in sorted(os.listdir(path)) if not p.startswith(".") and not p.endswith(".crc"))
    elif os.path.exists(path):
        text = open(path, errors="replace").read()
    else:
        return None
    if mtd.get("data_type") == "scalar":
        return ("scalar", text.strip())
    fmt = mtd.get("format")
    lines = text.splitlines()
    if fmt is None:
        if lines and lines[0].startswith("%%MatrixMarket"):
            fmt = "mm"
        elif lines and "," in lines[0]:
            fmt = "csv"
        elif lines and len(lines[0].split()) == 3:
            fmt = "text"
        else:
            return ("scalar", text.strip())
    cells = {}
    rows, cols = mtd.get("rows"), mtd.get("cols")
    if fmt in ("text", "mm"):
        body = [l for l in lines if l.strip() and not l.startswith("%")]
        if fmt == "mm" and body:
            h = body[0].split()
            rows, cols = int(h[0]), int(h[1])
            body = body[1:]
            if lines[0].find("array") >= 0:
                vals = [tonum(l.split()[0]) for l in body]
                for k, v in enumerate(vals):
                    if v != 0:
                        cells[(k % rows, k // rows)] = v
                body = []
        for l in body:
            t = l.split()
            if len(t) >= 3:
                v = tonum(t[2])
                if v != 0:
                    cells[(int(t[0]) - 1, int(t[1]) - 1)] = v
    elif fmt == "csv":
        sep = mtd.get("sep", ",")
        body = lines[1:] if mtd.get("header") else lines
        for i, l in enumerate(body):
            for j, t in enumerate(l.split(sep)):
                t = t.strip()
                v = tonum(t) if t else 0.0
                if v != 0:
                    cells[(i, j)] = v
        rows = rows if rows is not None else len(body)
    else:
        return ("other", text)
    return ("matrix", rows, cols, cells)

def close(a, b):
    if a == b or (math.isnan(a) and math.isnan(b)):
        return True
    if math.isinf(a) or math.isinf(b) or math.isnan(a) or math.isnan(b):
        return False
    return abs(a - b) <= 1e-8 * max(abs(a), abs(b)) or abs(a - b) <= 1e-12

def compare_out(ref, got):
    """None when equal, else a short reason."""
    if ref is None:
        return None if got is None else None
    if got is None:
        return "output missing"
    if ref[0] != got[0]:
        return "output kind %s vs %s" % (ref[0], got[0])
    if ref[0] == "scalar":
        a, b = ref[1], got[1]
        if a == b:
            return None
        try:
            return None if close(tonum(a), tonum(b)) else "scalar %s vs %s" % (a, b)
        except ValueError:
            # a text (like the statistics some scripts write): its words and numbers
            words = lambda t: NUM.sub("#", t).lower()
            if words(a) != words(b):
                return "text differs: %r vs %r" % (a[:40], b[:40])
            return compare_printed(a, b)
    if ref[0] == "other":
        return None if ref[1] == got[1] else "file differs"
    if (ref[1], ref[2]) != (got[1], got[2]) and None not in (ref[1], got[1], ref[2], got[2]):
        return "dims %sx%s vs %sx%s" % (ref[1], ref[2], got[1], got[2])
    for k in set(ref[3]) | set(got[3]):
        a, b = ref[3].get(k, 0.0), got[3].get(k, 0.0)
        if not close(a, b):
            return "cell %s: %r vs %r" % ((k[0] + 1, k[1] + 1), a, b)
    return None

def printed(out):
    return [tonum(m) for m in NUM.findall(out)]

def compare_printed(ref, got):
    a, b = printed(ref), printed(got)
    if len(a) != len(b):
        return "printed %d numbers vs %d" % (len(a), len(b))
    for k, (x, y) in enumerate(zip(a, b)):
        if not close(x, y):
            return "printed number %d: %r vs %r" % (k + 1, x, y)
    return None

# ---------------------------------------------------------------- running
def sort_lines(text):
    return "\n".join(sorted(text.splitlines()))

def expand(d, outputs):
    """Output paths; an output folder (not a part-file matrix: no .mtd beside it) as its files,
    and the files written beside an output under its name and a suffix."""
    res = []
    for o in outputs:
        p = os.path.join(d, o)
        if os.path.isdir(p) and not os.path.exists(p + ".mtd"):
            res += [os.path.join(o, f) for f in sorted(os.listdir(p)) if not f.endswith(".mtd") and not f.startswith(".")]
        else:
            res.append(o)
        # files a program writes beside an output, named after it (`$Y + ".ratings"`)
        for f in sorted(os.listdir(os.path.dirname(p) or ".")):
            if f.startswith(os.path.basename(o) + ".") and not f.endswith((".mtd", ".crc")):
                res.append(os.path.join(os.path.dirname(o), f))
    return res

def run_systemds(prog, args, cwd):
    wd = os.path.join(cwd, "sysds-work")
    os.makedirs(wd, exist_ok=True)
    conf = os.path.join(wd, "conf.xml")
    with open(conf, "w") as f:
        f.write("<root><sysds.scratch>%s/scratch</sysds.scratch><sysds.localtmpdir>%s/tmp</sysds.localtmpdir></root>" % (wd, wd))
    cmd = ["java", "-Xmx2g", "--add-modules=jdk.incubator.vector",
           "-Dlog4j.configuration=file:%s/conf/log4j.properties" % HOME,
           "-cp", "%s/SystemDS.jar:%s/lib/*" % (HOME, HOME), "org.apache.sysds.api.DMLScript",
           "-f", prog, "-exec", "singlenode", "-config", conf] + args
    rc, full, err = sh(cmd, cwd=cwd)
    # SystemDS's scratch space and temp files (a lineage test once left 27 GB there): the
    # outputs the comparison reads are elsewhere (the args name them)
    shutil.rmtree(wd, ignore_errors=True)
    for d in glob.glob(os.path.join(cwd, "scratch_space*")) + glob.glob(os.path.join(cwd, "tmp*")):
        shutil.rmtree(d, ignore_errors=True)
    out = full.split("SystemDS Statistics")[0]
    # SystemDS exits with 0 after a run-time error, printed after its statistics
    bad = rc != 0 or "Exception" in full or "An Error Occurred" in full or "Exception" in err
    if bad:
        err = full + "\n" + err
    return (not bad), out, err

def run_spores(prog, args, cwd, opt):
    # optimized: every statement compiled (--compile-budget 0), as the tests' inputs are
    # small and under the default budget most statements would run as written
    cmd = [SPORES, "run", prog] + args + (["--compile-budget", "0"] if opt else ["--no-opt"])
    rc, out, err = sh(cmd, cwd=cwd)
    return rc == 0, out, err

def cause(err):
    """The first diagnostic line, without positions and paths, as a failure cause."""
    lines = [l for l in err.splitlines() if l.strip() and not l.startswith("warning") and "incubator" not in l]
    lines = [l for l in lines if "Exception" in l] or lines
    line = lines[0] if lines else "exit status without a message"
    for l in lines:
        if l.startswith("error"):
            line = l
            break
    line = re.sub(r"\S+\.dml:\d+:\d+:?", "", line)
    line = re.sub(r"/\S+", "PATH", line)
    line = re.sub(r"\b\d+\b", "N", line)
    return line.strip()[:110]

def sysds_cause(err):
    """SystemDS's own reason: the innermost of its chained exception lines (the wrappers
    only say which program block failed)."""
    chain = [l.strip() for l in err.splitlines() if re.match(r"\s+\w+(Exception|Error) -- ", l)]
    chain = [l for l in chain if "Runtime error in" not in l and "error executing function" not in l] or chain
    return cause(chain[-1]) if chain else cause(err)

def differences(outputs, ref_out, ref_dir, out, got_dir):
    """Why a run's printed numbers and output files differ from the reference run, or None."""
    why = compare_printed(ref_out, out)
    if why and not compare_printed(sort_lines(ref_out), sort_lines(out)):
        why = None  # the same lines in another order: parfor bodies print as they run
    if why:
        return why
    for o in expand(ref_dir, outputs):
        why = compare_out(read_output(os.path.join(ref_dir, o)), read_output(os.path.join(got_dir, o)))
        if why:
            return "%s: %s" % (o, why)
    return None

# SystemDS's results are cached (CACHE, default WORK/sysds-cache; CACHE= turns it off), keyed
# by the program, its arguments and the contents of the inputs they name, so that a survey run
# again in the same WORK only runs spores (and SystemDS again only to tell unseeded random
# numbers, which is never cached)
CACHE = os.environ.get("CACHE", os.path.join(WORK, "sysds-cache"))

def cache_key(prog, args, cwd):
    h = hashlib.sha256()
    h.update(open(prog, "rb").read())
    h.update(cwd.encode())
    def content(p):
        if os.path.isdir(p):
            for dp, _, fs in sorted(os.walk(p)):
                for f in sorted(fs):
                    h.update(f.encode())
                    h.update(open(os.path.join(dp, f), "rb").read())
        elif os.path.isfile(p):
            h.update(open(p, "rb").read())
    for a in args:
        h.update(b"\0" + a.encode())
        v = a.split("=", 1)[1] if re.match(r"\w+=/", a) else a
        if v.startswith("/") and "@OUT@" not in v:
            content(v)
            content(v + ".mtd")
    return h.hexdigest()[:32]

def case(name, prog, args_for, outputs, cwd):
    """Runs one case in the three engines; returns (status, detail)."""
    dirs = {e: os.path.join(cwd, e) for e in ("systemds", "opt", "noopt", "systemds2")}
    for d in dirs.values():
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    key = cache_key(prog, args_for("@OUT@"), cwd)
    hit = os.path.join(CACHE, key) if CACHE else None
    if hit and os.path.isfile(os.path.join(hit, "result.json")):
        ok, ref_out, ref_err = json.load(open(os.path.join(hit, "result.json")))
        shutil.rmtree(dirs["systemds"], ignore_errors=True)
        shutil.copytree(os.path.join(hit, "out"), dirs["systemds"], symlinks=True)
    else:
        ok, ref_out, ref_err = run_systemds(prog, args_for(dirs["systemds"]), cwd)
        for f, t in (("stdout", ref_out), ("stderr", ref_err)):
            open(os.path.join(dirs["systemds"], "." + f), "w").write(t)
        if hit and ref_err.strip() != "timeout":
            tmp = hit + ".tmp%d" % os.getpid()
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(dirs["systemds"], os.path.join(tmp, "out"), symlinks=True)
            json.dump([ok, ref_out, ref_err], open(os.path.join(tmp, "result.json"), "w"))
            shutil.rmtree(hit, ignore_errors=True)
            os.rename(tmp, hit)
    if not ok:
        return "skip", "SystemDS: " + sysds_cause(ref_err + "\n" + ref_out)
    for e, opt in (("opt", True), ("noopt", False)):
        ok, out, err = run_spores(prog, args_for(dirs[e]), cwd, opt)
        for f, t in (("stdout", out), ("stderr", err)):
            open(os.path.join(dirs[e], "." + f), "w").write(t)
        tag = "" if opt else " (--no-opt)"
        if not ok:
            if re.search(r"not supported: .*\bframe", cause(err), re.I):
                # frames are out of scope: a program that reaches one (through a library
                # function) is counted with the programs that read or build frames
                return "skip", "frames are out of scope (spores: %s)" % cause(err)
            return "FAIL", "error%s: %s" % (tag, cause(err))
        why = differences(outputs, ref_out, dirs["systemds"], out, dirs[e])
        if why:
            # unseeded random numbers (in the program or a builtin it calls) make SystemDS
            # differ from itself: such a case cannot be compared
            # (twice more: a random pick among few values, like sample(2, 2), can repeat)
            for _ in range(2):
                ok2, out2, _ = run_systemds(prog, args_for(dirs["systemds2"]), cwd)
                if ok2 and differences(outputs, ref_out, dirs["systemds"], out2, dirs["systemds2"]):
                    return "skip", "SystemDS differs from itself (unseeded random numbers)"
            return "FAIL", "wrong%s: %s" % (tag, why)
    return "match", ""

def report(results):
    counts = collections.Counter(s for _, s, _ in results)
    print("\n== %d cases: %d match, %d fail, %d skipped (SystemDS failed or no comparable output)" % (
        len(results), counts["match"], counts["FAIL"], counts["skip"]))
    by = collections.Counter(d for _, s, d in results if s == "FAIL")
    for d, n in by.most_common():
        print("%4d  %s" % (n, d[:150]))
    skips = collections.Counter(skip_cause(d) for _, s, d in results if s == "skip")
    if skips:
        print("skipped, by cause:")
    for d, n in skips.most_common():
        print("%4d  %s" % (n, d[:150]))

def skip_cause(d):
    """A skip's cause, without the details that differ from case to case: for a SystemDS
    failure its exception's own message, not the wrapper's."""
    d = re.sub(r"\b\d+(\.\d+)?\b", "N", d)
    d = re.sub(r"\[line N:N\] -> .*? -- ", "", d)
    return d[:120]

# ---------------------------------------------------------------- (a) other inputs and arguments
# VARIANT=1..3 runs the same scripts with another data set and the scripts' other options (one
# argument set per script and variant), since held-out runs use other data and arguments:
#   1: tall (2000x30) 10%-sparse X in CSV with a header line, 4 classes, outputs in csv;
#   2: wide (50x80) dense X in Matrix Market, 3 classes, outputs in mm;
#   3: 1%-sparse 1500x100 X in text (i j v), 5 classes, outputs in text, labels in csv
#      without a .mtd header setting; and each variant other intercepts, regularizations,
#      tolerances, iteration limits, GLM families and links, K-means runs, tree impurities,
#      KM test types, ...
VARIANTS = {
    1: dict(n=2000, m=30, dens=0.1, xfmt="csv", header=True, ofmt="csv", K=4, vshape=(300, 200, 0.1), g=200, npts=40, seed=91),
    2: dict(n=50, m=80, dens=1.0, xfmt="mm", header=False, ofmt="mm", K=3, vshape=(40, 60, 1.0), g=30, npts=8, seed=92),
    3: dict(n=1500, m=100, dens=0.01, xfmt="text", header=False, ofmt="text", K=5, vshape=(500, 300, 0.01), g=500, npts=15, seed=93),
}

def variant_cases(V, root):
    P = VARIANTS[V]
    o = lambda *vals: vals[V - 1]
    inp = os.path.join(root, "in%d" % V)
    os.makedirs(inp, exist_ok=True)
    models = os.path.join(root, "models%d" % V)
    os.makedirs(models, exist_ok=True)
    I = lambda f: os.path.join(inp, f)
    M = lambda f: os.path.join(models, f)
    rng = random.Random(P["seed"])
    n, m, K, ofmt = P["n"], P["m"], P["K"], P["ofmt"]
    ext = {"csv": "csv", "mm": "mtx", "text": "txt"}[P["xfmt"]]
    X = rnd_rows(rng, n, m, -2, 2, P["dens"])
    # a column that is never zero, so that every row has a non-zero and the responses vary
    for r in X:
        if not any(r):
            r[rng.randrange(m)] = float(fmt6(rng.uniform(0.5, 2)))
    xf = "X." + ext
    write_matrix(I(xf), X, P["xfmt"], header=P["header"])
    beta = [float(fmt6(rng.uniform(-2, 2))) if rng.random() < 0.7 else 0.0 for _ in range(m)]
    y = [float(fmt6(sum(a * b for a, b in zip(r, beta)) + rng.gauss(0, 0.3))) for r in X]
    sd = (sum(v * v for v in y) / n) ** 0.5 or 1.0
    noisy = [v + rng.gauss(0, 0.8 * sd) for v in y]
    cuts = sorted(noisy)
    cuts = [cuts[(k * n) // K] for k in range(1, K)]
    yK = [float(1 + sum(1 for c in cuts if v >= c)) for v in noisy]
    col = lambda vals, f, **kw: write_matrix(I(f), [[v] for v in vals], "csv", header=P["header"])
    col(y, "y.csv")
    col(yK, "yK.csv")
    col([1.0 if v > 0 else -1.0 for v in noisy], "ypm.csv")
    col([1.0 if v > 0 else 0.0 for v in noisy], "y01.csv")
    col([float(min(6, int(abs(v)))) for v in y], "ycount.csv")
    col([float(fmt6(0.5 + abs(v) / sd)) for v in y], "ypos.csv")
    write_matrix(I("yhot.csv"), [[1.0 if k + 1 == v else 0.0 for k in range(K)] for v in yK])
    write_matrix(I("Xnn." + ext), rnd_rows(rng, n, m, 0, 5, max(P["dens"], 0.05), ints=True), P["xfmt"], header=P["header"])
    Xmix = [[r[0], r[1], float(rng.randint(1, 3)), float(rng.randint(1, 4)), r[2], float(rng.randint(1, 5))] for r in X]
    write_matrix(I("Xmix.csv"), Xmix, header=P["header"])
    write_matrix(I("types.csv"), [[1.0, 1.0, 2.0, 3.0, 1.0, 2.0]])
    write_matrix(I("idx1.csv"), [[1.0, 2.0, 5.0]])
    write_matrix(I("idx2.csv"), [[3.0, 4.0, 6.0]])
    write_matrix(I("t1.csv"), [[1.0, 1.0, 1.0]])
    write_matrix(I("t2.csv"), [[2.0, 3.0, 2.0]])
    write_matrix(I("xcid.csv"), [[1.0, 2.0, 5.0]])
    write_matrix(I("ycid.csv"), [[1.0, 5.0]])
    xs = sorted(set(float(fmt6(rng.uniform(0, 10))) for _ in range(P["npts"])))
    write_matrix(I("xs.csv"), [[v] for v in xs])
    write_matrix(I("ys.csv"), [[float(fmt6(math.cos(v) + 0.1 * v))] for v in xs])
    surv = [[float(rng.randint(1, 40)), float(rng.random() < 0.6), float(rng.randint(1, 3)), float(rng.randint(1, 2))] for _ in range(min(n, 400))]
    write_matrix(I("surv.csv"), surv)
    write_matrix(I("te.csv"), [[1.0], [2.0]])
    write_matrix(I("gi.csv"), [[3.0]])
    write_matrix(I("si.csv"), [[4.0]])
    vr, vc, vd = P["vshape"]
    Vm = rnd_rows(rng, vr, vc, 1, 5, vd, ints=True)
    for i, r in enumerate(Vm):  # every user and item rated once at least
        if not any(r):
            r[i % vc] = 3.0
    for j in range(vc):
        if not any(Vm[i][j] for i in range(vr)):
            Vm[j % vr][j] = 4.0
    write_matrix(I("V.mtx"), Vm, "mm")
    write_matrix(I("pairs.csv"), [[float(rng.randint(1, vr)), float(rng.randint(1, vc))] for _ in range(7)])
    write_matrix(I("uids.csv"), [[float(u)] for u in sorted(rng.sample(range(1, vr + 1), 5))])
    g = P["g"]
    links = [[0.0] * g for _ in range(g)]
    for j in range(g):
        for i in rng.sample(range(g), 3):
            links[i][j] = 1.0 / 3
    write_matrix(I("G.mtx"), links, "mm")
    write_matrix(I("p0.csv"), [[1.0 / g] for _ in range(g)])
    write_matrix(I("e.csv"), [[1.0] for _ in range(g)])
    write_matrix(I("u.csv"), [[1.0 / g] * g])
    rank = o(4, 2, 5)
    write_matrix(I("W0.csv"), rnd_rows(rng, vr, rank, 0.1, 1.0))
    write_matrix(I("H0.csv"), rnd_rows(rng, rank, vc, 0.1, 1.0))
    write_matrix(I("P.csv"), [[1.0], [float(m // 2)], [float(m)]])
    Xf, ofm = I(xf), ofmt
    glm = [  # (name, Y, dfam, vpow, link, lpow, icpt, extra)
        o(("GLM gamma inverse", "ypos.csv", 1, 2.0, 1, -1.0, 1, dict(reg=0.001)),
          ("GLM binomial cauchit", "ypm.csv", 2, 0.0, 5, 0.0, 2, dict(yneg=-1.0, reg=0.1)),
          ("GLM poisson log", "ycount.csv", 1, 1.0, 1, 0.0, 2, dict(reg=0.01, tol=1e-9))),
        o(("GLM binomial cloglog", "y01.csv", 2, 0.0, 4, 0.0, 2, dict(moi=10, mii=5)),
          ("GLM invgauss", "ypos.csv", 1, 3.0, 1, -2.0, 1, dict(reg=0.5, moi=30)),
          ("GLM binomial probit", "y01.csv", 2, 0.0, 3, 0.0, 0, dict(disp=1.5, mii=3))),
        o(("GLM poisson sqrt", "ycount.csv", 1, 1.0, 1, 0.5, 0, dict(tol=1e-8)),
          ("GLM gaussian log", "ypos.csv", 1, 0.0, 1, 0.0, 0, dict(reg=1.0, mii=2)),
          ("GLM gaussian id", "y.csv", 1, 0.0, 1, 1.0, 1, dict(reg=1e-4, mii=10, moi=5))),
    ]
    cases = []
    for k, (name, yf, dfam, vpow, link, lpow, icpt, extra) in enumerate(glm):
        args = dict(X=Xf, Y=I(yf), B="OUT:b", O="OUT:o", Log="OUT:log", dfam=dfam, vpow=vpow, link=link, lpow=lpow, icpt=icpt, fmt=ofm)
        args.update(extra)
        cases.append((name, "GLM.dml", args, {"b": "glm_b"} if k == 0 else {}))
    gname, gy, gdfam, gvpow, glink, glpow, _, gextra = glm[0]
    cases.append(("GLM-predict", "GLM-predict.dml", dict(X=Xf, Y=I(gy), B=M("glm_b"), M="OUT:m", O="OUT:o", dfam=gdfam, vpow=gvpow, link=glink, lpow=glpow, fmt=ofm, **({"disp": 1.5} if V == 2 else {})), {}))
    icpt_svm = o(1, 0, 1)
    cases += [
        ("l2-svm", "l2-svm.dml", dict(X=Xf, Y=I("ypm.csv"), model="OUT:w", Log="OUT:log", icpt=icpt_svm, reg=o(0.01, 1, 0.1), tol=o(1e-4, 1e-3, 1e-6), maxiter=o(50, 20, 100), fmt=ofm), {"w": "l2svm_w"}),
        ("l2-svm-predict", "l2-svm-predict.dml", dict(X=Xf, Y=I("ypm.csv"), model=M("l2svm_w"), scores="OUT:s", accuracy="OUT:acc", confusion="OUT:cm", icpt=icpt_svm, fmt=ofm), {}),
        ("m-svm", "m-svm.dml", dict(X=Xf, Y=I("yK.csv"), model="OUT:w", Log="OUT:log", icpt=icpt_svm, reg=o(0.1, 1, 0.01), tol=o(1e-4, 1e-3, 1e-6), maxiter=o(30, 20, 50), fmt=ofm), {"w": "msvm_w"}),
        ("m-svm-predict", "m-svm-predict.dml", dict(X=Xf, Y=I("yK.csv"), model=M("msvm_w"), scores="OUT:s", accuracy="OUT:acc", confusion="OUT:cm", fmt=ofm), {}),
        ("LinearRegCG", "LinearRegCG.dml", dict(X=Xf, Y=I("y.csv"), B="OUT:b", O="OUT:o", Log="OUT:log", icpt=o(2, 1, 0), reg=o(1e-3, 0.1, 1e-6), tol=o(1e-9, 1e-6, 1e-12), maxi=o(20, 0, 50), fmt=ofm), {}),
        ("LinearRegDS", "LinearRegDS.dml", dict(X=Xf, Y=I("y.csv"), B="OUT:b", O="OUT:o", icpt=o(1, 2, 0), reg=o(0.1, 1, 1e-3), fmt=ofm), {}),
        ("MultiLogReg", "MultiLogReg.dml", dict(X=Xf, Y=I("yK.csv"), B="OUT:b", Log="OUT:log", icpt=o(1, 2, 0), reg=o(0.01, 1, 0), tol=o(1e-6, 1e-9, 1e-4), moi=o(10, 5, 20), mii=o(5, 0, 10), fmt=ofm), {}),
        ("naive-bayes", "naive-bayes.dml", dict(X=I("Xnn." + ext), Y=I("yK.csv"), prior="OUT:prior", conditionals="OUT:cond", accuracy="OUT:acc", laplace=o(0.5, 2, 1), fmt=ofm), {"prior": "nb_prior", "cond": "nb_cond"}),
        ("naive-bayes-predict", "naive-bayes-predict.dml", dict(X=I("Xnn." + ext), Y=I("yK.csv"), prior=M("nb_prior"), conditionals=M("nb_cond"), probabilities="OUT:p", accuracy="OUT:acc", confusion="OUT:cm", fmt=ofm), {}),
        ("ALS-CG", "ALS-CG.dml", dict(X=I("V.mtx"), U="OUT:u", V="OUT:v", rank=o(5, 2, 4), reg=o("wL2", "L2", "wL2"), lambda_=o(0.05, 1, 0.001), maxi=o(4, 6, 3), check=o(True, False, True), thr=o(1e-4, 1e-2, 1e-6), fmt=ofm), {"u": "als_u", "v": "als_v"}),
        ("ALS-DS", "ALS-DS.dml", dict(V=I("V.mtx"), L="OUT:l", R="OUT:r", rank=o(3, 2, 4), lambda_=o(0.01, 1, 0.1), maxi=o(3, 6, 4), check=o(True, True, False), thr=o(1e-4, 1e-2, 1e-6), fmt=ofm), {}),
        ("ALS_predict", "ALS_predict.dml", dict(X=I("pairs.csv"), Y="OUT:y", L=M("als_u"), R=M("als_v"), Vrows=vr, Vcols=vc, fmt=ofm), {}),
        ("ALS_topk_predict", "ALS_topk_predict.dml", dict(X=I("uids.csv"), Y="OUT:y", L=M("als_u"), R=M("als_v"), V=I("V.mtx"), K=o(3, 5, 2), fmt=ofm), {}),
        ("Univar-Stats", "Univar-Stats.dml", dict(X=I("Xmix.csv"), TYPES=I("types.csv"), STATS="OUT:stats", CONSOLE_OUTPUT=o(False, True, False)), {}),
        ("bivar-stats", "bivar-stats.dml", dict(X=I("Xmix.csv"), index1=I("idx1.csv"), index2=I("idx2.csv"), types1=I("t1.csv"), types2=I("t2.csv"), OUTDIR="OUT:out"), {}),
        ("stratstats", "stratstats.dml", o(dict(X=I("Xmix.csv"), Scid=4, Xcid=I("xcid.csv"), Ycid=I("ycid.csv"), O="OUT:o", fmt=ofm),
                                              dict(X=I("Xmix.csv"), Y=I("Xmix.csv"), S=I("Xmix.csv"), Scid=6, O="OUT:o", fmt=ofm),
                                              dict(X=I("Xmix.csv"), S=I("Xmix.csv"), Scid=3, Xcid=I("xcid.csv"), O="OUT:o", fmt=ofm)), {}),
        ("Kmeans", "Kmeans.dml", dict(X=Xf, k=o(5, 3, 4), C="OUT:c", Y="OUT:y", isY=True, runs=o(4, 3, 5), maxi=o(20, 50, 10), tol=o(1e-8, 1e-4, 1e-6), samp=o(10, 20, 5), fmt=ofm), {"c": "km_c"}),
        ("Kmeans-predict", "Kmeans-predict.dml", dict(X=Xf, C=M("km_c"), spY=I("yK.csv"), prY="OUT:pry", O="OUT:o", fmt=ofm), {}),
        ("CsplineDS", "CsplineDS.dml", dict(X=I("xs.csv"), Y=I("ys.csv"), K="OUT:k", O="OUT:o", inp_x=o(2.5, 5.0, 7.25), fmt=ofm), {}),
        ("CsplineCG", "CsplineCG.dml", dict(X=I("xs.csv"), Y=I("ys.csv"), K="OUT:k", O="OUT:o", Log="OUT:log", inp_x=o(2.5, 5.0, 7.25), maxi=o(50, 5, 100), tol=o(1e-12, 1e-4, 1e-8), fmt=ofm), {}),
        ("KM", "KM.dml", dict(X=I("surv.csv"), TE=I("te.csv"), GI=I("gi.csv"), SI=I("si.csv"), O="OUT:o", M="OUT:m", T="OUT:t", ttype=o("wilcoxon", "log-rank", "none"), etype=o("peto", "greenwood", "greenwood"), ctype=o("plain", "log-log", "log"), alpha=o(0.1, 0.05, 0.01), fmt=ofm), {}),
        ("decision-tree", "decision-tree.dml", dict(X=Xf, Y=I("yhot.csv"), M="OUT:m", O="OUT:o", bins=o(10, 3, 8), depth=o(5, 3, 6), num_leaf=o(10, 2, 20), num_samples=o(100, 3000, 500), impurity=o("entropy", "Gini", "entropy"), fmt=ofm), {"m": "dt_m"}),
        ("decision-tree-predict", "decision-tree-predict.dml", dict(X=Xf, Y=I("yK.csv"), M=M("dt_m"), P="OUT:p", A="OUT:a", CM="OUT:cm", fmt=ofm), {}),
        ("random-forest", "random-forest.dml", dict(X=Xf, Y=I("yhot.csv"), M="OUT:m", num_trees=o(4, 2, 3), depth=o(4, 3, 5), bins=o(8, 3, 5), subsamp_rate=o(1, 0.8, 1), feature_subset=o(0.5, 1, 0.3), impurity=o("Gini", "entropy", "Gini"), fmt=ofm), {"m": "rf_m"}),
        ("random-forest-predict", "random-forest-predict.dml", dict(X=Xf, Y=I("yK.csv"), M=M("rf_m"), P="OUT:p", A="OUT:a", CM="OUT:cm", fmt=ofm), {}),
        ("StepLinearRegDS", "StepLinearRegDS.dml", dict(X=Xf, Y=I("y.csv"), B="OUT:b", S="OUT:s", icpt=o(2, 0, 1), thr=o(0.001, 0.01, 0.05), fmt=ofm), {}),
        ("StepGLM", "StepGLM.dml", o(dict(X=Xf, Y=I("y01.csv"), B="OUT:b", S="OUT:s", dfam=2, link=3, icpt=2, fmt=ofm),
                                     dict(X=Xf, Y=I("ycount.csv"), B="OUT:b", S="OUT:s", dfam=1, vpow=1, link=1, lpow=0, icpt=1, thr=0.05, fmt=ofm),
                                     dict(X=Xf, Y=I("y01.csv"), B="OUT:b", S="OUT:s", dfam=2, link=2, icpt=0, thr=0.05, fmt=ofm)), {}),
        ("PCA", "PCA.dml", dict(INPUT=Xf, K=o(5, 3, 2), OUTPUT="OUT:out", PROJDATA=1, CENTER=o(0, 1, 1), SCALE=o(0, 0, 1), OFMT=ofm), {}),
        ("PageRank", "../staging/PageRank.dml", [I("G.mtx"), I("p0.csv"), I("e.csv"), I("u.csv"), o(0.9, 0.5, 0.85), o(30, 10, 5), "OUT:p"], {}),
        ("PNMF", "../staging/PNMF.dml", [I("V.mtx"), I("W0.csv"), I("H0.csv"), rank, 1e-8, o(8, 15, 5), "OUT:w", "OUT:h"], {}),
        ("rowIndexMax", "../utils/rowIndexMax.dml", dict(I=Xf, O="OUT:o"), {}),
        ("splitXY", "../utils/splitXY.dml", dict(X=Xf, y=o(1, m // 2, m), OX="OUT:ox", OY="OUT:oy", ofmt=ofm), {}),
        ("project", "../utils/project.dml", dict(X=Xf, P=I("P.csv"), o="OUT:o", ofmt=ofm), {}),
    ]
    return [("v%d %s" % (V, c[0]),) + c[1:] for c in cases], models

# ---------------------------------------------------------------- (a) algorithm scripts
def algorithms():
    root = os.path.join(WORK, "algo")
    extract(os.environ["ALGO_REV"], "scripts/algorithms", root)
    # standalone scripts of the same kind elsewhere in the tree (positional or named arguments)
    for d in ("scripts/staging/PageRank.dml", "scripts/staging/PNMF.dml", "scripts/utils"):
        extract(os.environ["ALGO_REV"], d, root)
    src = os.path.join(root, "scripts/algorithms")
    inp = os.path.join(root, "in")
    os.makedirs(inp, exist_ok=True)
    rng = random.Random(19)
    n, m = 60, 5
    X = rnd_rows(rng, n, m, -2, 2)
    write_matrix(os.path.join(inp, "X.csv"), X)
    beta = [1.5, -2.0, 0.5, 0.0, 3.0]
    y = [[float(fmt6(sum(a * b for a, b in zip(r, beta)) + rng.gauss(0, 0.3)))] for r in X]
    write_matrix(os.path.join(inp, "y.csv"), y)
    # class labels with noise, so that the classes overlap (separable data make logistic
    # regression diverge, and the iterates then depend on rounding)
    noisy = [v[0] + rng.gauss(0, 2.5) for v in y]
    y3 = [[1.0 if v < -1 else (2.0 if v < 1.5 else 3.0)] for v in noisy]
    write_matrix(os.path.join(inp, "y3.csv"), y3)
    write_matrix(os.path.join(inp, "ypm.csv"), [[1.0 if v > 0 else -1.0] for v in noisy])
    write_matrix(os.path.join(inp, "y01.csv"), [[1.0 if v > 0 else 0.0] for v in noisy])
    write_matrix(os.path.join(inp, "y3hot.csv"), [[1.0 if k + 1 == v[0] else 0.0 for k in range(3)] for v in y3])
    write_matrix(os.path.join(inp, "ycount.csv"), [[float(min(6, int(abs(v[0]))))] for v in y])
    write_matrix(os.path.join(inp, "Xnn.csv"), rnd_rows(rng, n, m, 0, 5, 0.8, ints=True))
    write_matrix(os.path.join(inp, "X.mtx"), X, "mm")
    V = rnd_rows(rng, 30, 20, 1, 5, 0.3, ints=True)
    write_matrix(os.path.join(inp, "V.mtx"), V, "mm")
    # mixed: scale columns 1, 2, 5; categorical columns 3 (1..3) and 4 (1..4)
    Xmix = [[r[0], r[1], float(rng.randint(1, 3)), float(rng.randint(1, 4)), r[4]] for r in X]
    write_matrix(os.path.join(inp, "Xmix.csv"), Xmix)
    write_matrix(os.path.join(inp, "types.csv"), [[1.0, 1.0, 2.0, 3.0, 1.0]])
    write_matrix(os.path.join(inp, "idx1.csv"), [[1.0, 3.0]])
    write_matrix(os.path.join(inp, "idx2.csv"), [[2.0, 4.0, 5.0]])
    write_matrix(os.path.join(inp, "t1.csv"), [[1.0, 2.0]])
    write_matrix(os.path.join(inp, "t2.csv"), [[1.0, 2.0, 1.0]])
    xs = sorted(set(float(fmt6(rng.uniform(0, 10))) for _ in range(12)))
    write_matrix(os.path.join(inp, "xs.csv"), [[v] for v in xs])
    write_matrix(os.path.join(inp, "ys.csv"), [[float(fmt6(math.sin(v)))] for v in xs])
    # survival: time, event, group, stratum, three covariates
    surv = [[float(rng.randint(1, 30)), float(rng.random() < 0.7), float(rng.randint(1, 2)), float(rng.randint(1, 2))] + r[:3] for r in X]
    write_matrix(os.path.join(inp, "surv.csv"), surv)
    # the same without group and stratum: Cox-predict takes every column after the first two
    # as a covariate, so its model must be fitted on all of them
    write_matrix(os.path.join(inp, "surv3.csv"), [r[:2] + r[4:] for r in surv])
    write_matrix(os.path.join(inp, "f3.csv"), [[3.0], [4.0], [5.0]])
    write_matrix(os.path.join(inp, "te.csv"), [[1.0], [2.0]])
    write_matrix(os.path.join(inp, "gi.csv"), [[3.0]])
    write_matrix(os.path.join(inp, "si.csv"), [[4.0]])
    write_matrix(os.path.join(inp, "f.csv"), [[5.0], [6.0], [7.0]])
    write_matrix(os.path.join(inp, "uids.csv"), [[1.0], [4.0], [7.0], [30.0]])
    # PageRank: a column-stochastic 30x30 link matrix (about 4 links per page), start vector,
    # ones, and the uniform teleport row
    links = [[0.0] * 30 for _ in range(30)]
    for j in range(30):
        outs = rng.sample(range(30), 4)
        for i in outs:
            links[i][j] = 0.25
    write_matrix(os.path.join(inp, "G.mtx"), links, "mm")
    write_matrix(os.path.join(inp, "p0.csv"), [[1.0 / 30] for _ in range(30)])
    write_matrix(os.path.join(inp, "e.csv"), [[1.0] for _ in range(30)])
    write_matrix(os.path.join(inp, "u.csv"), [[1.0 / 30] * 30])
    # PNMF: positive factors of V (30x20) of rank 3
    write_matrix(os.path.join(inp, "W0.csv"), rnd_rows(rng, 30, 3, 0.1, 1.0))
    write_matrix(os.path.join(inp, "H0.csv"), rnd_rows(rng, 3, 20, 0.1, 1.0))
    # project: the columns 2, 4, 5 of X
    write_matrix(os.path.join(inp, "P.csv"), [[2.0], [4.0], [5.0]])

    I = lambda f: os.path.join(inp, f)
    models = os.path.join(root, "models")
    os.makedirs(models, exist_ok=True)
    M = lambda f: os.path.join(models, f)
    # name, script, named arguments (values "OUT:x" are outputs), model files kept for predict
    cases = [
        ("l2-svm", "l2-svm.dml", dict(X=I("X.csv"), Y=I("ypm.csv"), model="OUT:w", Log="OUT:log", icpt=0), {"w": "l2svm_w"}),
        ("l2-svm icpt=1 csv", "l2-svm.dml", dict(X=I("X.csv"), Y=I("ypm.csv"), model="OUT:w", icpt=1, fmt="csv", reg=0.1), {}),
        ("l2-svm-predict", "l2-svm-predict.dml", dict(X=I("X.csv"), Y=I("ypm.csv"), model=M("l2svm_w"), scores="OUT:s", accuracy="OUT:acc", confusion="OUT:cm", icpt=0), {}),
        ("m-svm", "m-svm.dml", dict(X=I("X.csv"), Y=I("y3.csv"), model="OUT:w", Log="OUT:log", icpt=0, maxiter=20), {"w": "msvm_w"}),
        ("m-svm-predict", "m-svm-predict.dml", dict(X=I("X.csv"), Y=I("y3.csv"), model=M("msvm_w"), scores="OUT:s", accuracy="OUT:acc", confusion="OUT:cm"), {}),
        ("LinearRegCG", "LinearRegCG.dml", dict(X=I("X.csv"), Y=I("y.csv"), B="OUT:b", O="OUT:o", Log="OUT:log", icpt=0), {"b": "lin_b"}),
        ("LinearRegCG icpt=2 mm", "LinearRegCG.dml", dict(X=I("X.mtx"), Y=I("y.csv"), B="OUT:b", icpt=2, reg=0.01, fmt="mm"), {}),
        ("LinearRegDS", "LinearRegDS.dml", dict(X=I("X.csv"), Y=I("y.csv"), B="OUT:b", O="OUT:o", icpt=1), {}),
        ("LinearRegDS csv", "LinearRegDS.dml", dict(X=I("X.csv"), Y=I("y.csv"), B="OUT:b", icpt=2, fmt="csv"), {}),
        ("GLM gaussian", "GLM.dml", dict(X=I("X.csv"), Y=I("y.csv"), B="OUT:b", O="OUT:o", Log="OUT:log", dfam=1, vpow=0, link=1, lpow=1, icpt=0), {"b": "glm_b"}),
        ("GLM poisson", "GLM.dml", dict(X=I("X.csv"), Y=I("ycount.csv"), B="OUT:b", O="OUT:o", dfam=1, vpow=1, link=1, lpow=0, icpt=1), {}),
        ("GLM binomial logit", "GLM.dml", dict(X=I("X.csv"), Y=I("y01.csv"), B="OUT:b", O="OUT:o", dfam=2, link=2, icpt=2, reg=0.1), {}),
        ("GLM-predict", "GLM-predict.dml", dict(X=I("X.csv"), Y=I("y.csv"), B=M("glm_b"), M="OUT:m", O="OUT:o", dfam=1, vpow=0, link=1, lpow=1), {}),
        ("MultiLogReg", "MultiLogReg.dml", dict(X=I("X.csv"), Y=I("y3.csv"), B="OUT:b", Log="OUT:log", icpt=0), {}),
        ("MultiLogReg icpt=2 reg", "MultiLogReg.dml", dict(X=I("X.csv"), Y=I("y3.csv"), B="OUT:b", icpt=2, reg=0.5, fmt="csv"), {}),
        ("naive-bayes", "naive-bayes.dml", dict(X=I("Xnn.csv"), Y=I("y3.csv"), prior="OUT:prior", conditionals="OUT:cond", accuracy="OUT:acc", laplace=1), {"prior": "nb_prior", "cond": "nb_cond"}),
        ("naive-bayes-predict", "naive-bayes-predict.dml", dict(X=I("Xnn.csv"), Y=I("y3.csv"), prior=M("nb_prior"), conditionals=M("nb_cond"), probabilities="OUT:p", accuracy="OUT:acc", confusion="OUT:cm"), {}),
        ("PCA", "PCA.dml", dict(INPUT=I("X.csv"), K=2, OUTPUT="OUT:out", PROJDATA=1, CENTER=1, SCALE=1), {}),
        ("ALS-CG", "ALS-CG.dml", dict(X=I("V.mtx"), U="OUT:u", V="OUT:v", rank=3, reg="L2", lambda_=0.1, maxi=5, check=True, thr=0.0001), {"u": "als_u", "v": "als_v"}),
        ("ALS-DS", "ALS-DS.dml", dict(V=I("V.mtx"), L="OUT:l", R="OUT:r", rank=3, lambda_=0.1, maxi=5, check=True, thr=0.0001), {}),
        ("ALS_predict", "ALS_predict.dml", dict(X=I("idx1.csv"), Y="OUT:y", L=M("als_u"), R=M("als_v"), Vrows=30, Vcols=20), {}),
        ("Univar-Stats", "Univar-Stats.dml", dict(X=I("Xmix.csv"), TYPES=I("types.csv"), STATS="OUT:stats", CONSOLE_OUTPUT=True), {}),
        ("bivar-stats", "bivar-stats.dml", dict(X=I("Xmix.csv"), index1=I("idx1.csv"), index2=I("idx2.csv"), types1=I("t1.csv"), types2=I("t2.csv"), OUTDIR="OUT:out"), {}),
        ("stratstats", "stratstats.dml", dict(X=I("Xmix.csv"), S=I("Xmix.csv"), Scid=3, O="OUT:o"), {}),
        ("Kmeans", "Kmeans.dml", dict(X=I("X.csv"), k=3, C="OUT:c", Y="OUT:y", isY=True, runs=2, maxi=10), {"c": "km_c"}),
        ("Kmeans-predict", "Kmeans-predict.dml", dict(X=I("X.csv"), C=M("km_c"), spY=I("y3.csv"), prY="OUT:pry", O="OUT:o", fmt="csv"), {}),
        ("CsplineDS", "CsplineDS.dml", dict(X=I("xs.csv"), Y=I("ys.csv"), K="OUT:k", O="OUT:o", inp_x=4.5), {}),
        ("CsplineCG", "CsplineCG.dml", dict(X=I("xs.csv"), Y=I("ys.csv"), K="OUT:k", O="OUT:o", inp_x=4.5, maxi=20, tol=1e-9), {}),
        ("KM", "KM.dml", dict(X=I("surv.csv"), TE=I("te.csv"), GI=I("gi.csv"), SI=I("si.csv"), O="OUT:o", M="OUT:m", T="OUT:t", ttype="log-rank"), {}),
        ("Cox", "Cox.dml", dict(X=I("surv.csv"), TE=I("te.csv"), F=I("f.csv"), M="OUT:m", S="OUT:s", T="OUT:t", COV="OUT:cov", RT="OUT:rt", XO="OUT:xo", MF="OUT:mf"), {}),
        ("Cox covariates only", "Cox.dml", dict(X=I("surv3.csv"), TE=I("te.csv"), F=I("f3.csv"), M="OUT:m", S="OUT:s", T="OUT:t", COV="OUT:cov", RT="OUT:rt", XO="OUT:xo", MF="OUT:mf"), {"m": "cox_m", "rt": "cox_rt", "cov": "cox_cov", "mf": "cox_mf"}),
        ("Cox-predict", "Cox-predict.dml", dict(X=I("surv3.csv"), RT=M("cox_rt"), M=M("cox_m"), Y=I("surv3.csv"), COV=M("cox_cov"), MF=M("cox_mf"), P="OUT:p", fmt="mm"), {}),
        ("decision-tree", "decision-tree.dml", dict(X=I("X.csv"), Y=I("y3hot.csv"), M="OUT:m", O="OUT:o", depth=4, num_leaf=5, bins=5), {"m": "dt_m"}),
        ("decision-tree-predict", "decision-tree-predict.dml", dict(X=I("X.csv"), Y=I("y3.csv"), M=M("dt_m"), P="OUT:p", A="OUT:a", CM="OUT:cm"), {}),
        ("random-forest", "random-forest.dml", dict(X=I("X.csv"), Y=I("y3hot.csv"), M="OUT:m", num_trees=3, depth=3, bins=5), {"m": "rf_m"}),
        ("random-forest-predict", "random-forest-predict.dml", dict(X=I("X.csv"), Y=I("y3.csv"), M=M("rf_m"), P="OUT:p", A="OUT:a", CM="OUT:cm", fmt="csv"), {}),
        ("StepLinearRegDS", "StepLinearRegDS.dml", dict(X=I("X.csv"), Y=I("y.csv"), B="OUT:b", S="OUT:s", icpt=1), {}),
        ("StepGLM", "StepGLM.dml", dict(X=I("X.csv"), Y=I("y01.csv"), B="OUT:b", S="OUT:s", dfam=2, link=2, icpt=1), {}),
        ("GLM binomial probit", "GLM.dml", dict(X=I("X.csv"), Y=I("y01.csv"), B="OUT:b", O="OUT:o", Log="OUT:log", dfam=2, link=3, icpt=1), {}),
        ("ALS_topk_predict", "ALS_topk_predict.dml", dict(X=I("uids.csv"), Y="OUT:y", L=M("als_u"), R=M("als_v"), V=I("V.mtx"), K=3, fmt="csv"), {}),
        ("PageRank", "../staging/PageRank.dml", [I("G.mtx"), I("p0.csv"), I("e.csv"), I("u.csv"), 0.85, 20, "OUT:p"], {}),
        ("PNMF", "../staging/PNMF.dml", [I("V.mtx"), I("W0.csv"), I("H0.csv"), 3, 1e-8, 10, "OUT:w", "OUT:h"], {}),
        ("rowIndexMax", "../utils/rowIndexMax.dml", dict(I=I("X.csv"), O="OUT:o"), {}),
        ("splitXY", "../utils/splitXY.dml", dict(X=I("X.csv"), y=5, OX="OUT:ox", OY="OUT:oy", ofmt="csv"), {}),
        ("project", "../utils/project.dml", dict(X=I("X.csv"), P=I("P.csv"), o="OUT:o", ofmt="text"), {}),
        ("naive-bayes-parfor", "obsolete/naive-bayes-parfor.dml", dict(X=I("Xnn.csv"), Y=I("y3.csv"), prior="OUT:prior", conditionals="OUT:cond", accuracy="OUT:acc", laplace=1), {}),
    ]
    variant = int(os.environ.get("VARIANT", "0"))
    if variant:
        cases, models = variant_cases(variant, root)
        M = lambda f: os.path.join(models, f)
    want = set(sys.argv[2:])
    cases = [c for c in cases if not want or c[0] in want or c[0].split(" ", 1)[-1] in want or c[1][:-4] in want]
    def one(c):
        name, script, nv, keep = c
        # named arguments (a dict, -nvargs) or positional ones (a list, -args)
        vals = nv.values() if isinstance(nv, dict) else nv
        outs = sorted({v[4:] for v in vals if isinstance(v, str) and v.startswith("OUT:") and v[4:]})
        def args_for(d, nv=nv):
            def arg(v):
                if isinstance(v, bool):
                    return "TRUE" if v else "FALSE"
                if isinstance(v, str) and v.startswith("OUT:"):
                    return os.path.join(d, v[4:]) if v[4:] else d + "/"
                return str(v)
            if isinstance(nv, list):
                return ["-args"] + [arg(v) for v in nv]
            return ["-nvargs"] + ["%s=%s" % (k.rstrip("_"), arg(v)) for k, v in nv.items()]
        cwd = os.path.join(root, "run", re.sub(r"\W+", "_", name))
        os.makedirs(cwd, exist_ok=True)
        status, detail = case(name, os.path.join(src, script), args_for, outs, cwd)
        for o, dest in keep.items():
            p = os.path.join(cwd, "systemds", o)
            if os.path.isdir(p):
                shutil.rmtree(M(dest), ignore_errors=True)
                shutil.copytree(p, M(dest))
            elif os.path.exists(p):
                shutil.copy(p, M(dest))
            if os.path.exists(p + ".mtd"):
                shutil.copy(p + ".mtd", M(dest) + ".mtd")
        print("%-32s %s %s" % (name, status, detail), flush=True)
        return (name, status, detail)
    # JOBS at a time: first the cases that read no model, then the predict cases that read
    # the models the first ones wrote
    import concurrent.futures
    needs_model = lambda c: any(isinstance(v, str) and v.startswith(models) for v in (c[2].values() if isinstance(c[2], dict) else c[2]))
    results = []
    with concurrent.futures.ThreadPoolExecutor(int(os.environ.get("JOBS", "1"))) as pool:
        for phase in (False, True):
            results += list(pool.map(one, [c for c in cases if needs_model(c) == phase]))
    report(results)

# ---------------------------------------------------------------- (b) arguments from the Java tests
# Each test program is driven by a JUnit class in src/test/java that calls it with
# `programArgs = new String[]{"-args", input("A"), Integer.toString(rows), output("C")}` and writes
# its inputs with `writeInputMatrixWithMTD("A", getRandomMatrix(rows, cols, min, max, sparsity, seed))`.
# What can be read statically (string literals, number constants and the locals assigned
# before the call, first branch of a `?:`) is read here; the rest falls back to the guess from
# the program's own text.
JAVA_NUM = re.compile(r"\b(\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)[lLdDfF]?\b")
JAVA_KNOWN = {"OptimizerUtils.DEFAULT_BLOCKSIZE": 1000, "Integer.MAX_VALUE": 2**31 - 1,
              "System.currentTimeMillis()": 7, "System.nanoTime()": 7, "Math.PI": math.pi, "Math.E": math.e}

def java_split(s, sep=","):
    """`s` split at the `sep`s outside parentheses, brackets, braces and string literals."""
    parts, depth, cur, q = [], 0, "", None
    for ch in s:
        if q:
            cur += ch
            if ch == q and not cur.endswith("\\" + q):
                q = None
            continue
        if ch in "\"'":
            q = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts

def java_call(text, start):
    """The argument text of the call whose `(` is at `start`, or None."""
    depth, q = 0, None
    for k in range(start, len(text)):
        ch = text[k]
        if q:
            if ch == q and text[k - 1] != "\\":
                q = None
        elif ch in "\"'":
            q = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:k]
    return None

class JavaFile:
    def __init__(self, text):
        # comments out, so that commented-out code is not read
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        self.text = re.sub(r"(?m)//.*$", "", text)
        self.assign = []  # (pos, name, expr) of every `name = expr;`
        for m in re.finditer(r"(?:\b(?:int|long|double|float|String|boolean|var)\s+|\]\s+|[;{,(]\s*)([A-Za-z_]\w*)\s*=(?!=)\s*([^;]+?);", self.text):
            self.assign.append((m.start(), m.group(1), m.group(2)))
        # int a = 1, b = 2;
        for m in re.finditer(r"\b(?:int|long|double|float)\s+([^;]+);", self.text):
            for d in java_split(m.group(1)):
                d = re.fullmatch(r"([A-Za-z_]\w*)\s*=(.+)", d, re.S)
                if d:
                    self.assign.append((m.start(), d.group(1), d.group(2)))
        self.assign.sort()
        # (body start, name, parameter names, position of the name) of every method
        self.methods = []
        for m in re.finditer(r"(?:public|private|protected|static)[\w\s<>\[\],]*?\s(\w+)\s*\(([^()]*)\)\s*(?:throws[\w\s.,]+)?\{", self.text):
            ps = [re.sub(r"\[\]", "", q).split()[-1] for q in java_split(m.group(2)) if q.split()]
            self.methods.append((m.end(), m.group(1), ps, m.start(1)))

    def method_at(self, pos):
        """(start, name, parameter names) of the method declared last before `pos`."""
        best = None
        for m in self.methods:
            if m[0] < pos:
                best = m
        return best

    def value(self, name, pos, depth=0):
        """The value of identifier `name` at `pos`: the last assignment before it in its
        method, else the argument a call of the method passes (its first call in the file),
        else any assignment, else one of a constant whose name begins with it (rows -> rows1)."""
        if name in JAVA_KNOWN:
            return JAVA_KNOWN[name]
        if depth > 8:
            return None
        meth = self.method_at(pos)
        start = meth[0] if meth else 0
        local = [(p, e) for p, n, e in self.assign if n == name and start <= p < pos][::-1]
        for p, e in local:
            v = self.eval(e, p, depth + 1)
            if v is not None:
                return v
        if meth and name in meth[2]:
            k = meth[2].index(name)
            for c in re.finditer(r"\b" + re.escape(meth[1]) + r"\s*\(", self.text):
                if c.start() == meth[3]:
                    continue  # the declaration itself
                args = java_split(java_call(self.text, c.end() - 1) or "")
                if len(args) == len(meth[2]):
                    v = self.eval(args[k], c.start(), depth + 1)
                    if v is not None:
                        return v
        cands = [(p, e) for p, n, e in self.assign if n == name and (p < start or p >= pos)]
        cands += [(p, e) for p, n, e in self.assign if n != name and n.lower().startswith(name.lower()) and re.fullmatch(r"\w*\d", n)]
        for p, e in cands:
            v = self.eval(e, p, depth + 1)
            if v is not None:
                return v
        return None

    def eval(self, e, pos, depth=0):
        """A number (int or float) or a string from a Java expression, or None."""
        e = e.strip()
        for f in ("String.valueOf", "Integer.toString", "Long.toString", "Double.toString",
                  "Float.toString", "Integer.valueOf", "Long.valueOf", "Double.valueOf", "Integer.parseInt", "Double.parseDouble"):
            if e.startswith(f + "(") and java_call(e, len(f)) is not None and len(java_call(e, len(f))) == len(e) - len(f) - 2:
                return self.eval(java_call(e, len(f)), pos, depth)
        parts = java_split(e, "+")
        if len(parts) > 1 and any(p.startswith('"') for p in parts):
            vals = [self.eval(p, pos, depth) for p in parts]
            if any(v is None for v in vals):
                return None
            return "".join(jstr(v) for v in vals)
        if re.fullmatch(r'"(?:[^"\\]|\\.)*"', e):
            return e[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        if e in ("true", "false"):
            return e.upper()
        if re.fullmatch(r"[A-Za-z_]\w*", e):
            return self.value(e, pos, depth)
        if e.endswith(".toString()"):
            return self.eval(e[:-len(".toString()")], pos, depth)
        if re.fullmatch(r"\(?\s*new\s+Random\s*\(.*\)\s*\)?\s*\.\s*nextDouble\s*\(\s*\)", e, re.S):
            return 0.37  # a test's random probability (seeded by the clock): a fixed one
        m = re.fullmatch(r"Opcodes\.([A-Z_0-9]+)", e)
        if m:  # SystemDS's instruction opcodes: the string each constant stands for
            return opcodes().get(m.group(1))
        m = re.fullmatch(r"(?:Types\.)?(FileFormat|OpOp\w*|Direction|CorrectionLocationType)\.([A-Z_0-9]+)", e)
        if m:  # an enum constant: its toString (FileFormat's is lower case)
            return m.group(2).lower() if m.group(1) == "FileFormat" else m.group(2)
        # a number: Python syntax from Java
        if "?" in e:
            m = re.match(r"^(.*?)\?(.*?):(.*)$", e, re.S)
            if m:
                return self.eval(m.group(2), pos, depth)
        py = re.sub(r"\((?:int|long|double|float)\)", "", e)
        py = py.replace("Math.", "math.").replace("math.round", "round").replace("math.abs", "abs").replace("math.min", "min").replace("math.max", "max")
        for k, v in JAVA_KNOWN.items():
            py = py.replace(k, repr(v))
        py = JAVA_NUM.sub(lambda m: m.group(1), py)
        ok = True
        def ident(m):
            nonlocal ok
            n = m.group(0)
            if n.startswith("math.") or (n in ("min", "max", "round", "abs") and py[m.end():].lstrip().startswith("(")) or (m.start() > 0 and py[m.start() - 1] == "."):
                return n
            v = self.value(n, pos, depth)
            if not isinstance(v, (int, float)):
                ok = False
                return "0"
            return "(%r)" % v
        py = re.sub(r"math\.\w+|[A-Za-z_]\w*", ident, py)
        if not ok or not re.fullmatch(r"[\w\s.+\-*/%()<>=!,]*", py):
            return None
        try:
            v = eval(py.replace("/", "//") if "." not in py else py, {"math": math, "__builtins__": {}, "min": min, "max": max, "round": round, "abs": abs})
        except Exception:
            return None
        if isinstance(v, bool):
            return None
        return v

OPCODES = None

def opcodes():
    """{constant: opcode} of SystemDS's Opcodes enum (`GREATEREQUAL(">=", ..)`), read from the
    mirror."""
    global OPCODES
    if OPCODES is None:
        src = subprocess.run(["git", "--git-dir", MIRROR, "show", "HEAD:src/main/java/org/apache/sysds/common/Opcodes.java"], capture_output=True, text=True).stdout
        OPCODES = dict(re.findall(r'(?m)^\s*([A-Z_0-9]+)\(\s*"([^"]*)"', src))
    return OPCODES

def jstr(v):
    """Java's toString of a value."""
    if isinstance(v, float):
        if v == int(v) and abs(v) < 1e7:
            return "%.1f" % v
        return repr(v)
    return str(v)

def java_program_args(jf):
    """Every `programArgs = new String[]{...}` of a test file: (pos, [elements])."""
    res = []
    for m in re.finditer(r"programArgs\s*=\s*new\s+String\s*\[\s*\]\s*\{", jf.text):
        k, depth = m.end(), 1
        start = k
        while k < len(jf.text) and depth:
            if jf.text[k] == "{":
                depth += 1
            elif jf.text[k] == "}":
                depth -= 1
            k += 1
        res.append((m.start(), java_split(jf.text[start:k - 1])))
    return res

def java_arg(jf, el, pos):
    """One program argument: ("in", name) | ("out", name) | ("val", text) | None (unknown)."""
    # input("A") and output("R"), or their names as constants (input(INPUT_X))
    for kind in ("in", "out"):
        m = re.fullmatch(kind + r'put\(\s*("[^"]+"|[A-Za-z_]\w*)\s*\)', el)
        if m:
            name = m.group(1)[1:-1] if m.group(1).startswith('"') else jf.eval(m.group(1), pos)
            if isinstance(name, str):
                return (kind, name)
    if re.fullmatch(r"outputDir\(\s*\)", el):
        return ("out", "")
    v = jf.eval(el, pos)
    return None if v is None else ("val", jstr(v))

def java_matrix(jf, name, pos):
    """How the test writes input `name`: dict(rows, cols, min, max, sparsity, ints, mtd) or
    dict(frame=True), or None when it cannot be read."""
    m = None
    # writeInputMatrix("A", ..) and the others; writeBinaryWithMTD(NAME, ..) names its input
    # by a constant too
    writes = re.finditer(r'(writeInput(?:Matrix|MatrixWithMTD|Frame|FrameWithMTD)|writeBinaryWithMTD)\(\s*("\w+"|[A-Z_][A-Z_0-9]*)\s*,', jf.text)
    for mm in writes:
        if mm.group(2).strip('"') != name and jf.eval(mm.group(2), mm.start()) != name:
            continue
        if m is None or (mm.start() > pos and m.start() < pos) or (mm.start() < pos and mm.start() > m.start()):
            m = mm
    if m is None:
        return None
    if "Frame" in m.group(1):
        return {"frame": True}
    args = java_split(java_call(jf.text, m.end() - len(m.group(0)) + m.group(0).index("(")) or "")
    if len(args) < 2:
        return None
    var = args[1].strip()
    conv = re.fullmatch(r"DataConverter\.convertToMatrixBlock\(\s*([A-Za-z_]\w*)\s*\)", var)
    if conv:
        var = conv.group(1)
    # WithMTD, or a .mtd the test writes itself (HDFSTool.writeMetaDataFile(input("A.mtd"), ..))
    mtd = "MTD" in m.group(1) or re.search(r'writeMetaDataFile\(\s*input\(\s*"%s\.mtd"' % re.escape(name), jf.text) is not None
    expr = var
    if re.fullmatch(r"[A-Za-z_]\w*", var):
        defs = [(p, e) for p, n, e in jf.assign if n == var and p < m.start()]
        if not defs:
            return None
        expr = defs[-1][1]
    ints = re.search(r"\b(round|floor|ceil)\(", expr) is not None
    g = re.search(r"get(NonZero)?RandomMatrix\(", expr)
    if g:
        a = java_split(java_call(expr, g.end() - 1) or "")
        at = m.start()
        ev = [jf.eval(x, at) for x in a]
        if g.group(1):  # rows, cols, min, max, seed
            ev = ev[:4] + [1.0] + ev[4:]
        if len(ev) < 5 or any(not isinstance(x, (int, float)) for x in ev[:2]):
            return None
        # a value range or sparsity that is a parameter of the test method: a default
        ev = ev[:2] + [x if isinstance(x, (int, float)) else d for x, d in zip(ev[2:5], (0.0, 1.0, 0.7))]
        r, c, lo, hi, sp = ev[:5]
        return dict(rows=int(r), cols=int(c), min=float(lo), max=float(hi), sparsity=float(sp), ints=ints, mtd=mtd)
    if expr.startswith("new double") and "{" in expr:
        body = expr[expr.index("{"):].replace("{", "[").replace("}", "]")
        try:
            rows = eval(re.sub(r"(\d)[dDfF]\b", r"\1", body), {"__builtins__": {}})
            return dict(data=[[float(v) for v in r] for r in rows], mtd=mtd)
        except Exception:
            return None
    return None

def java_specs():
    """{script path relative to functions/: [(test file text, pos, args)]} for every test
    class that names a script of its TEST_DIR."""
    root = os.path.join(WORK, "tests")
    extract("HEAD", "src/test/java/org/apache/sysds/test/functions", root, ".java")
    scripts = os.path.join(root, "src/test/scripts/functions")
    specs, prefixes = {}, {}
    for dp, _, fs in os.walk(os.path.join(root, "src/test/java")):
        for f in fs:
            text = open(os.path.join(dp, f), errors="replace").read()
            dirs = re.findall(r'"functions/([\w/]+?)/?"', text)
            if not dirs or "programArgs" not in text:
                continue
            jf = None
            for lit in set(re.findall(r'"(\w+)"', text)):
                for d in dirs:
                    rel = "%s/%s.dml" % (d, lit)
                    if os.path.exists(os.path.join(scripts, rel)):
                        jf = jf or JavaFile(text)
                        specs.setdefault(rel, []).append(jf)
                    if len(lit) >= 4:
                        # a script name built as TEST_NAME + suffix: the test of the
                        # longest name it begins with
                        for g in glob.glob(os.path.join(scripts, d, lit + "*.dml")):
                            prefixes.setdefault(os.path.relpath(g, scripts), []).append((len(lit), text))
    for rel, cands in prefixes.items():
        if rel not in specs:
            specs[rel] = [JavaFile(max(cands, key=lambda c: c[0])[1])]
    return specs

def java_args_for(jf, params):
    """The program arguments of the first `programArgs` of `jf` that gives every parameter
    of the program: {param: ("in"|"out"|"val", x)} (None for an element that cannot be read)."""
    positional = all(p.isdigit() for p in params)
    for pos, els in java_program_args(jf):
        flags = [e for e in els if e in ('"-args"', '"-nvargs"')]
        if not flags:
            continue
        k = els.index(flags[0])
        rest = els[k + 1:]
        got = {}
        if flags[0] == '"-args"' and positional:
            for i, el in enumerate(rest):
                got[str(i + 1)] = java_arg(jf, el, pos)
        elif flags[0] == '"-nvargs"' and not positional:
            for el in rest:
                parts = java_split(el, "+")
                m = re.fullmatch(r'"(\w+)=(.*)"', parts[0]) if parts else None
                if not m:
                    continue
                tail = ([('"%s"' % m.group(2))] if m.group(2) else []) + parts[1:]
                got[m.group(1)] = java_arg(jf, " + ".join(tail), pos) if tail else ("val", "")
        else:
            continue
        if all(p in got for p in params):
            return got, pos
    return None, None

# ---------------------------------------------------------------- (b) test programs
DIRS = ["aggregate", "binary/matrix", "binary/scalar", "binary/matrix_full_cellwise",
        "binary/matrix_full_other", "unary/matrix", "unary/scalar", "ternary", "reorg", "misc",
        "nary", "append", "indexing", "data", "io", "builtin", "quaternary", "unique", "countDistinct",
        "rewrite", "recompile", "parfor", "updateinplace", "vect", "codegen", "lineage",
        "async", "blocks", "caching", "codegenalg", "linearization", "piggybacking", "dmlscript",
        "sparkexectype", "ooc"]
# DIRS=a,b/c (folders under functions/, comma-separated) replaces the list
if os.environ.get("DIRS"):
    DIRS = os.environ["DIRS"].split(",")

# INPUTS=sparse|dense|empty|nan|csv|mm (b): the test's inputs with another content or format,
# since held-out runs use other data: 5%-sparse (non-integer inputs), fully dense, all zeros,
# with a NaN, -0.0 and a 1e6 in cells of their own, or written as CSV / Matrix Market (with
# their .mtd) where the program does not name a format
INPUTS = os.environ.get("INPUTS", "")

def variant_rows(rng, spec):
    sp = spec["sparsity"]
    if INPUTS == "sparse" and not spec["ints"]:
        sp = min(sp, 0.05)
    elif INPUTS == "dense":
        sp = 1.0
    elif INPUTS == "empty":
        sp = 0.0
    rows = rnd_rows(rng, spec["rows"], spec["cols"], spec["min"], spec["max"], sp, spec["ints"])
    if INPUTS == "nan" and not spec["ints"] and rows and rows[0]:
        cells = [(i, j) for i in range(len(rows)) for j in range(len(rows[0]))]
        for (i, j), v in zip(rng.sample(cells, min(3, len(cells))), (float("nan"), -0.0, 1e6)):
            rows[i][j] = v
    return rows

def test_programs(limit):
    root = os.path.join(WORK, "tests")
    extract("HEAD", "src/test/scripts/functions", root)
    extract("HEAD", "scripts", root)
    base = os.path.join(root, "src/test/scripts/functions")
    progs = []
    for d in DIRS:
        p = os.path.join(base, d)
        if not os.path.isdir(p):
            continue
        for f in sorted(os.listdir(p)):
            if f.endswith(".dml"):
                progs.append(os.path.join(p, f))
    names = set(sys.argv[3:])
    if names:
        progs = [p for p in progs if os.path.relpath(p, base) in names]
    only = os.environ.get("ONLY")
    if only:
        progs = [p for p in progs if re.search(only, os.path.relpath(p, base))]
    # spread the sample over the directories: round robin
    by = collections.OrderedDict()
    for p in progs:
        by.setdefault(os.path.dirname(p), []).append(p)
    sample = []
    while len(sample) < limit and any(by.values()):
        for k in by:
            if by[k] and len(sample) < limit:
                sample.append(by[k].pop(0))
    # FROM=K resumes a survey that stopped after the first K programs of the same sample
    sample = sample[int(os.environ.get("FROM", "0")):]
    inp = os.path.join(root, "in")
    os.makedirs(inp, exist_ok=True)
    specs = java_specs()
    MAX_CELLS = int(os.environ.get("MAX_CELLS", "1500000"))
    # the guessed value of a `$k` by its role (a number otherwise)
    GUESS = {"fmt": "text", "sparsity": "0.7"}
    def guess_roles(code, params):
        roles = {}
        for p in params:
            q = re.escape("$" + p)
            if re.search(r"read\(\s*" + q + r"(?![\w])", code):
                roles[p] = "in"
            elif re.search(r"write\([^;\n]*?,\s*" + q + r"(?![\w])", code):
                roles[p] = "out"
            elif re.search(r"format\s*=\s*" + q + r"(?![\w])", code):
                roles[p] = "fmt"
            elif re.search(r"sparsity\s*=\s*" + q + r"(?![\w])", code):
                roles[p] = "sparsity"
            else:
                roles[p] = "num"
        return roles
    def list_inputs(code, params):
        """The inputs that are lists (folders SystemDS's ListWriter wrote), with their
        entries as the program takes them, as.matrix(L[i]) or as.scalar(L[i]):
        {param: dict(list=[kind of each entry])}."""
        lists = {}
        for p in params:
            q = re.escape("$" + p)
            for v in re.findall(r"(\w+)\s*=\s*read\(\s*" + q + r"\s*\)", code):
                used = re.findall(r"as\.(matrix|scalar)\(\s*" + re.escape(v) + r"\[\s*(\d+)\s*\]\s*\)", code)
                if used:
                    kinds = dict((int(i), k) for k, i in used)
                    lists[p] = dict(list=[kinds.get(i, "matrix") for i in range(1, max(kinds) + 1)])
        return lists
    def vector_inputs(code, params):
        """The inputs the program uses as vectors: a matrix it reads (`X = read($k)`, or
        `read($k)` itself) that is an argument of a builtin taking column vectors (table, seq,
        outer, the order statistics and moments). Guessed as 10x1 columns first: a 10x10 guess
        passes some of these in SystemDS (table of two matrices pairs their cells) and then
        measures the guess, not the program."""
        vector_fns = r"\b(table|seq|outer|quantile|median|interQuantileMean|moment|centralMoment|cov|cdf|icdf)\s*\("
        res = set()
        for p in params:
            q = re.escape("$" + p)
            names = [re.escape("$" + p) + r"(?![\w])"] + [r"\b" + re.escape(v) + r"\b" for v in re.findall(r"(\w+)\s*=\s*read\(\s*" + q + r"(?![\w])", code)]
            for m in re.finditer(vector_fns, code):
                # the argument list: up to the parenthesis that closes the call
                depth, i = 1, m.end()
                while i < len(code) and depth:
                    depth += {"(": 1, ")": -1}.get(code[i], 0)
                    i += 1
                # its sizes are not a vector use (seq(1, nrow(X)))
                argl = re.sub(r"\b(nrow|ncol|length)\s*\([^()]*\)", "", code[m.end():i])
                if any(re.search(n, argl) for n in names):
                    res.add(p)
        return res
    def attempts(name, code, params):
        """Argument sets to try, best first: each a dict {param: ("in", spec) | ("out", _)
        | ("val", text)} and a label. The Java test's own arguments first, then guesses."""
        roles = guess_roles(code, params)
        lists = list_inputs(code, params)
        res = []
        for jf in specs.get(name, []):
            got, pos = java_args_for(jf, params)
            if got is None:
                continue
            a = {}
            for p in params:
                g = got[p]
                if g is None:  # not readable statically: the guess
                    g = ("in", lists.get(p)) if roles[p] == "in" else ("out", p) if roles[p] == "out" else ("val", GUESS.get(roles[p], "10"))
                elif g[0] == "in":
                    spec = java_matrix(jf, g[1], pos) or lists.get(p)
                    if spec and spec.get("frame"):
                        return [], "a frame input (frames are out of scope)"
                    g = ("in", spec)
                a[p] = g
            res.append((a, "java"))
            break
        # the last two: dense integers 1..5 (category codes, group ids and indices, which
        # table, aggregate and indexing by value need). An input the program uses as a vector
        # (vector_inputs) is a column in every guess; the same guesses with it as a 10x10
        # matrix come after
        vec = vector_inputs(code, params)
        shapes = [(10, "10", False), (10, "2", False), (1, "10", False), (10, "10", True), (1, "10", True)]
        guesses = [(c, n, i, vec) for c, n, i in shapes]
        if vec:
            guesses += [(10, "10", False, set()), (10, "10", True, set())]
        for shape, number, ints, columns in guesses:
            a = {}
            for p in params:
                if roles[p] == "in":
                    cols = 1 if p in columns else shape
                    spec = dict(rows=10, cols=cols, min=1.0, max=5.0, sparsity=1.0, ints=True, mtd=True) if ints else dict(rows=10, cols=cols, min=-1.0, max=1.0, sparsity=0.7, ints=False, mtd=True)
                    a[p] = ("in", lists.get(p) or spec)
                elif roles[p] == "out":
                    a[p] = ("out", p)
                else:
                    a[p] = ("val", GUESS.get(roles[p], number))
            res.append((a, "guess"))
        return res, None
    def workdir(cwd):
        """The case's folder, with `src` and `scripts` pointing at the extracted sources:
        programs `source("./src/test/scripts/...")` relative to the repository's root, where
        SystemDS's tests run, and `source("nn/layers/...")` (SystemDS looks under
        `scripts/` there, then in its jar; spores under `scripts/` too)."""
        os.makedirs(cwd, exist_ok=True)
        for d in ("src", "scripts"):
            link = os.path.join(cwd, d)
            if not os.path.lexists(link):
                os.symlink(os.path.join(root, d), link)
    def one(prog):
        name = os.path.relpath(prog, base)
        text = open(prog, errors="replace").read()
        code = "\n".join(l.split("#")[0] for l in text.splitlines())
        params = sorted(set(re.findall(r"\$([A-Za-z_0-9]+)", code)), key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0, s))
        cwd = os.path.join(root, "run", re.sub(r"\W+", "_", name))
        if "$$" in code:
            status, detail = "skip", "a template ($$name$$), not a program"
        elif re.search(r'data_type\s*=\s*"frame"|\bas\.frame\s*\(|\bFrame\[|\btransform(encode|apply|decode)\s*\(', code):
            status, detail = "skip", "reads or builds a frame (frames are out of scope)"
        elif not params:
            if not re.search(r"\b(print|write)\s*\(", code):
                status, detail = "skip", "no output"
            else:
                workdir(cwd)
                status, detail = case(name, prog, lambda d: [], [], cwd)
        else:
            positional = all(p.isdigit() for p in params)
            tries, why = attempts(name, code, params)
            status, detail = "skip", why or "?"
            first = None
            for k, (a, label) in enumerate(tries):
                rng = random.Random(zlib.crc32(name.encode()) % 1000 + k)  # not hash(): salted per process
                vals, outs = {}, []
                for p in params:
                    kind, x = a[p]
                    if kind == "in":
                        spec = x or dict(rows=10, cols=10, min=-1.0, max=1.0, sparsity=0.7, ints=False, mtd=True)
                        f = os.path.join(inp, "%s_%s_%d" % (re.sub(r"\W", "_", name), p, k))
                        if "list" in spec:
                            write_list(f, spec["list"], rng)
                            vals[p] = f
                            continue
                        if "data" in spec:
                            rows = spec["data"]
                        elif spec["rows"] * spec["cols"] > MAX_CELLS or min(spec["rows"], spec["cols"]) < 0:
                            status, detail = "skip", "input %s: %dx%d is too big" % (p, spec["rows"], spec["cols"])
                            vals = None
                            break
                        else:
                            rows = variant_rows(rng, spec)
                        # the format the program reads it in (format="csv" in its read),
                        # else text (or INPUTS=csv / mm): a .mtd of another format conflicts
                        # in SystemDS
                        fm = re.search(r"read\(\s*" + re.escape("$" + p) + r"\s*,[^)]*format\s*=\s*\"(csv|text|mm)\"", code)
                        write_matrix(f, rows, fm.group(1) if fm else INPUTS if INPUTS in ("csv", "mm") else "text", spec["mtd"])
                        vals[p] = f
                    elif kind == "out":
                        outs.append(p)
                    else:
                        vals[p] = x
                if vals is None:
                    continue
                def args_for(d, vals=vals, a=a):
                    # an output folder (the test's outputDir()) ends in a slash
                    v = lambda p: vals[p] if a[p][0] != "out" else os.path.join(d, "out" + p) + ("/" if a[p][1] == "" else "")
                    if positional:
                        n = max(int(p) for p in params)
                        return ["-args"] + [v(str(i)) if str(i) in a else "0" for i in range(1, n + 1)]
                    return ["-nvargs"] + ["%s=%s" % (p, v(p)) for p in params]
                workdir(cwd)
                status, detail = case(name, prog, args_for, ["out" + p for p in outs], cwd)
                if label == "java" and status == "skip":
                    first = detail
                if status != "skip":
                    if label == "guess" and first is not None:
                        detail = (detail + " " if detail else "") + "(guessed arguments)"
                    break
            if status == "skip" and first is not None:
                detail = first + " (the Java test's arguments)"
        print("%-50s %s %s" % (name, status, detail), flush=True)
        return (name, status, detail)
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(int(os.environ.get("JOBS", "3"))) as pool:
        results = list(pool.map(one, sample))
    report(results)

if len(sys.argv) < 2 or sys.argv[1] not in ("algorithms", "tests"):
    print("usage: scripts/systemds-corpus.sh algorithms [NAME ...] | tests [N [NAME ...]]")
    sys.exit(2)
print("work dir: " + WORK)
if sys.argv[1] == "algorithms":
    algorithms()
else:
    test_programs(int(sys.argv[2]) if len(sys.argv) > 2 else 300)
PY
