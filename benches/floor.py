#!/usr/bin/env python3
"""The floor table of the peer kernels: per kernel, the plan spores chose for its loop body,
per run: kernel CPU time, the cost model's estimate, bytes moved, flops, the floor
(max(bytes / read bandwidth, flops / dense product rate), in CPU time, with the machine figures
of `spores calibrate`), and the ratios CPU/floor and estimate/CPU (the cost model's agreement).

Input: the logs of `spores run KERNEL.dml --stats` (the "Plans per run" table of --stats). Of a
kernel's plans, those that ran as often as the most frequent one are the loop body (data
generation runs once); their figures are added up. With run-peers.sh's results.tsv next to the
logs, the median wall time of the kernel (KTIME) is shown too.
Standard library only.

Usage: benches/floor.py OUTDIR [ENGINE]   (reads OUTDIR/<kernel>.<ENGINE>.log, ENGINE=spores)
       benches/floor.py FILE.log...        (one row per log)
"""
import csv
import os
import re
import sys

HEADER = re.compile(r"^\s+runs\s+wall\(ms\)")
ROW = re.compile(
    r"^\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.inf]+)\s+(.*)$"
)


def plans(path):
    """The plan rows (not their nodes) of the --stats table of one log, and the machine line."""
    rows, machine, inside = [], "", False
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("Plans per run"):
                m = re.search(r"floor = max\(([^)]*)\)", line)
                machine = m.group(1) if m else ""
                continue
            if HEADER.match(line):
                inside = True
                continue
            if inside:
                m = ROW.match(line)
                if not m:
                    inside = False
                    continue
                where = m.group(10)
                if where.startswith("- #"):
                    continue  # a node of the plan above
                est = m.group(4)
                rows.append({
                    "runs": int(m.group(1)),
                    "wall": float(m.group(2)),
                    "cpu": float(m.group(3)),
                    "est": None if est == "-" else float(est),
                    "mb": float(m.group(6)),
                    "mflop": float(m.group(7)),
                    "floor": float(m.group(8)),
                    "where": where,
                })
    return rows, machine


def summary(path):
    rows, machine = plans(path)
    if not rows:
        return None, machine
    most = max(r["runs"] for r in rows)
    body = [r for r in rows if r["runs"] == most]
    s = {k: sum(r[k] for r in body) for k in ("wall", "cpu", "mb", "mflop", "floor")}
    ests = [r["est"] for r in body]
    s["est"] = None if any(e is None for e in ests) else sum(ests)
    s["where"] = "; ".join(r["where"] for r in body)
    return s, machine


def medians(outdir, engine):
    path = os.path.join(outdir, "results.tsv")
    out = {}
    if os.path.exists(path):
        with open(path, newline="") as f:
            for r in csv.DictReader(f, delimiter="\t"):
                if r.get("engine") == engine:
                    out[r["kernel"]] = r.get("median_seconds", "NA")
    return out


def main(args):
    if not args:
        sys.exit(__doc__)
    if os.path.isdir(args[0]):
        outdir, engine = args[0], (args[1] if len(args) > 1 else "spores")
        suffix = f".{engine}.log"
        logs = sorted(os.path.join(outdir, f) for f in os.listdir(outdir) if f.endswith(suffix))
        names = [os.path.basename(p)[: -len(suffix)] for p in logs]
        med = medians(outdir, engine)
    else:
        logs, names, med = args, [os.path.basename(p) for p in args], {}
    print("kernel\tmedian_wall_s\tcpu_ms\testimated_ms\test/cpu\tMB\tMFLOP\tfloor_ms\tcpu/floor\tplans")
    machine = ""
    for name, log in zip(names, logs):
        s, m = summary(log)
        machine = machine or m
        if s is None:
            print(f"{name}\t{med.get(name, 'NA')}\tNA\tNA\tNA\tNA\tNA\tNA\tNA\t(no plan table: run with --stats)")
            continue
        est = "-" if s["est"] is None else f"{s['est']:.3f}"
        ratio = "-" if s["est"] is None or s["cpu"] <= 0 else f"{s['est'] / s['cpu']:.2f}"
        fl = f"{s['cpu'] / s['floor']:.2f}" if s["floor"] > 0 else "inf"
        print(f"{name}\t{med.get(name, 'NA')}\t{s['cpu']:.3f}\t{est}\t{ratio}\t{s['mb']:.2f}\t"
              f"{s['mflop']:.2f}\t{s['floor']:.3f}\t{fl}\t{s['where']}")
    if machine:
        print(f"# floor = max({machine}), CPU time; cpu/floor and est/cpu are per run of the loop body")


if __name__ == "__main__":
    main(sys.argv[1:])
