"""Builds attention e-graphs with the egglog library and writes egglog's own JSON serialization.

Run by scripts/egglog-egraphs.sh (which makes the virtual environment); writes into the
directory given as the first argument:

* attention.json: one attention head in its 3-pass form (scores, row max, exp, row sum,
  normalize, product with V), saturated with rewrites to the 2-pass tiled / online-softmax form
  (scores computed tile by tile, max and sum in one online pass, exp(S - m) V fused per tile,
  normalization deferred after the product);
* attention_subsumed.json: the same, where the online-softmax rewrite subsumes its left side
  (egglog then forbids extracting the 3-pass row sum);
* attention_two_layers.json: two heads, the second reading the first's output, so that
  sub-terms are shared and the e-graph has two roots-to-be (no node points to them).

egglog names no root e-classes; spores extract finds them (classes no node points to) or takes
--root.
"""

from __future__ import annotations

import sys
from pathlib import Path

from egglog import EGraph, Expr, StringLike, function, rewrite, vars_


class Mat(Expr):
    """A matrix-valued expression."""

    def __init__(self, name: StringLike) -> None: ...


class Stats(Expr):
    """Per-row running max and sum of exp(S - max), as online softmax keeps them."""


# --- 3-pass (global) operators
@function
def matmul(a: Mat, b: Mat) -> Mat: ...
@function
def transpose(a: Mat) -> Mat: ...
@function
def row_max(s: Mat) -> Mat: ...
@function
def exp_sub(s: Mat, m: Mat) -> Mat: ...
@function
def row_sum(e: Mat) -> Mat: ...
@function
def div_rows(a: Mat, l: Mat) -> Mat: ...


# --- 2-pass (tiled, online softmax) operators
@function
def tiled_qk(q: Mat, k: Mat) -> Mat: ...
@function
def online_stats(s: Mat) -> Stats: ...
@function
def stats_max(st: Stats) -> Mat: ...
@function
def stats_sum(st: Stats) -> Mat: ...
@function
def tiled_exp_matmul(s: Mat, m: Mat, v: Mat) -> Mat: ...


def attention(q: Mat, k: Mat, v: Mat) -> Mat:
    """The 3-pass form: S = Q K^T, m = rowmax(S), E = exp(S - m), l = rowsum(E), (E / l) V."""
    s = matmul(q, transpose(k))
    e = exp_sub(s, row_max(s))
    return matmul(div_rows(e, row_sum(e)), v)


def rules(subsume_sum: bool) -> list:
    q, k, v, s, m, e, l = vars_("q k v s m e l", Mat)
    return [
        rewrite(matmul(q, transpose(k))).to(tiled_qk(q, k)),
        rewrite(row_max(s)).to(stats_max(online_stats(s))),
        rewrite(row_sum(exp_sub(s, row_max(s))), subsume=subsume_sum).to(
            stats_sum(online_stats(s))
        ),
        rewrite(matmul(div_rows(e, l), v)).to(div_rows(matmul(e, v), l)),
        rewrite(matmul(exp_sub(s, m), v)).to(tiled_exp_matmul(s, m, v)),
    ]


def build(layers: int, subsume_sum: bool) -> str:
    eg = EGraph()
    x = Mat("X")
    out = x
    for i in range(layers):
        out = attention(matmul(out, Mat(f"Wq{i}")), matmul(out, Mat(f"Wk{i}")), Mat(f"V{i}"))
        eg.let(f"out{i}", out)
    eg.register(*rules(subsume_sum))
    eg.run(20)
    return eg._serialize().to_json()


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, layers, subsume_sum in [
        ("attention.json", 1, False),
        ("attention_subsumed.json", 1, True),
        ("attention_two_layers.json", 2, False),
    ]:
        (out / name).write_text(build(layers, subsume_sum) + "\n")
        print(f"wrote {out / name}")


if __name__ == "__main__":
    main()
