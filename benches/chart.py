#!/usr/bin/env python3
"""Writes an SVG chart of a run-peers.sh table: one group of horizontal bars per kernel, one
bar per engine, length = median seconds on a log scale (so 10x apart is always the same
distance). Standard library only.

Usage: benches/chart.py OUTDIR/results.tsv > OUTDIR/results.svg
"""
import csv
import math
import sys
from xml.sax.saxutils import escape

PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac"]


def main(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            try:
                t = float(r["median_seconds"])
            except (KeyError, ValueError):
                continue  # failed or timed-out runs have no time
            if t > 0 and math.isfinite(t):
                rows.append((r["kernel"], r["engine"], t))
    if not rows:
        sys.exit(f"{path}: no timed rows")
    kernels = list(dict.fromkeys(k for k, _, _ in rows))
    engines = list(dict.fromkeys(e for _, e, _ in rows))
    times = {(k, e): t for k, e, t in rows}
    lo = 10 ** math.floor(math.log10(min(times.values())))
    hi = 10 ** math.ceil(math.log10(max(times.values())))
    if hi <= lo:
        hi = lo * 10
    bar, gap, left, width, top = 12, 10, 120, 560, 40
    plot_h = len(kernels) * (len(engines) * bar + gap)
    legend_h = 18 * len(engines)
    height = top + plot_h + 30 + legend_h
    x = lambda t: left + width * (math.log10(t) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 40}" '
           f'height="{height}" font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="16" font-size="13">median seconds per kernel and engine '
           f'(log scale; {escape(path)})</text>']
    d = lo
    while d <= hi * 1.0001:
        xv = x(d)
        out.append(f'<line x1="{xv:.1f}" y1="{top - 6}" x2="{xv:.1f}" y2="{top + plot_h}" '
                   f'stroke="#ddd"/>')
        out.append(f'<text x="{xv:.1f}" y="{top - 9}" text-anchor="middle">{d:g}</text>')
        d *= 10
    y = top
    for k in kernels:
        out.append(f'<text x="{left - 6}" y="{y + len(engines) * bar / 2 + 4:.1f}" '
                   f'text-anchor="end">{escape(k)}</text>')
        for i, e in enumerate(engines):
            t = times.get((k, e))
            if t is not None:
                out.append(f'<rect x="{left}" y="{y}" width="{max(x(t) - left, 1):.1f}" '
                           f'height="{bar - 2}" fill="{PALETTE[i % len(PALETTE)]}">'
                           f'<title>{escape(k)} {escape(e)}: {t:.6g} s</title></rect>')
            y += bar
        y += gap
    y += 20
    for i, e in enumerate(engines):
        out.append(f'<rect x="{left}" y="{y - 9}" width="10" height="10" '
                   f'fill="{PALETTE[i % len(PALETTE)]}"/>')
        out.append(f'<text x="{left + 16}" y="{y}">{escape(e)}</text>')
        y += 18
    out.append("</svg>")
    print("\n".join(out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
