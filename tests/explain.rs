//! Snapshots of the plans the run-time optimizer chooses for the blocks of the peer kernels
//! and the shared programs, at their benchmark shapes (only shapes and non-zero counts matter
//! to the planner, so no data is generated). The saturation limits are the run-time ones
//! without the wall-clock limit, so the plans do not depend on the machine's speed.

use egg::RecExpr;
use spores::check::hir::{ScalarTy, Ty};
use spores::ir::Ir;
use spores::optimize::{compile, Input, Optimizer};
use std::fmt::Write;
use std::time::Duration;

/// Plans `src` with the named inputs (`(name, rows, cols, nnz)`; rows 0 for a scalar).
fn plan(src: &str, inputs: &[(&str, usize, usize, usize)]) -> String {
    let ast = spores::syntax::parse_expr(src).unwrap();
    let types: Vec<(String, Ty)> = inputs
        .iter()
        .map(|&(n, r, c, _)| {
            let ty = if r == 0 {
                Ty::Scalar(ScalarTy::Double)
            } else {
                Ty::Matrix(Some(r), Some(c))
            };
            (n.to_string(), ty)
        })
        .collect();
    let hir = spores::check::check_expr(&ast, &types).unwrap();
    let mut term = RecExpr::<Ir>::default();
    spores::lower::lower_expr(&hir, &mut term).unwrap();
    let ins: Vec<(String, Input)> = inputs
        .iter()
        .map(|&(n, rows, cols, nnz)| {
            let i = if rows == 0 {
                Input::FiniteScalar
            } else {
                Input::Matrix {
                    rows,
                    cols,
                    nnz,
                    finite: true,
                }
            };
            (n.to_string(), i)
        })
        .collect();
    let opt = Optimizer::new().unwrap();
    let limits = spores::saturate::Limits {
        time: Duration::from_secs(60),
        ..opt.limits.clone()
    };
    let rules = spores::saturate::all_rules().unwrap();
    let root = egg::Id::from(term.as_ref().len() - 1);
    let (p, c) = compile(&term, &[root], &ins, &rules, &limits, &opt.extract, None);
    let mut out = format!("{src}\n{term}\n");
    match p {
        Some(p) => {
            let _ = write!(
                out,
                "plan: {}\ncost {:.4e} (as written {:.4e})\n{}",
                p.expr,
                p.cost,
                p.written_cost,
                spores::explain::plan_trees(&p).concat()
            );
        }
        None => {
            let _ = writeln!(out, "kept as written (cost {:.4e})", c.written_cost);
        }
    }
    out
}

const X: (&str, usize, usize, usize) = ("X", 20000, 5000, 1_000_000);
const U: (&str, usize, usize, usize) = ("U", 20000, 10, 200_000);
const V: (&str, usize, usize, usize) = ("V", 5000, 10, 50_000);
const W: (&str, usize, usize, usize) = ("W", 20000, 10, 200_000);
const H: (&str, usize, usize, usize) = ("H", 10, 5000, 50_000);

#[test]
fn als_gradient() {
    insta::assert_snapshot!(plan("(U %*% t(V) - X) %*% V", &[U, V, X]));
}

#[test]
fn squared_loss() {
    insta::assert_snapshot!(plan("sum((X - U %*% t(V))^2)", &[X, U, V]));
}

#[test]
fn pnmf_objective() {
    insta::assert_snapshot!(plan(
        "sum(W %*% H) - sum(X * log(W %*% H + eps))",
        &[W, H, X, ("eps", 0, 0, 0)]
    ));
}

#[test]
fn pnmf_update() {
    insta::assert_snapshot!(plan(
        "(H * (t(W) %*% (X / (W %*% H + eps)))) / t(colSums(W))",
        &[H, W, X, ("eps", 0, 0, 0)]
    ));
}

#[test]
fn alscg_gradient() {
    insta::assert_snapshot!(plan(
        "((X != 0) * (U %*% t(V) - X)) %*% V + lambda * U * r",
        &[X, U, V, ("lambda", 0, 0, 0), ("r", 20000, 1, 20000)]
    ));
}
