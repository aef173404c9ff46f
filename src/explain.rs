//! `spores opt FILE.la --explain`: for each basic block, each statement's LA input, the
//! e-graph statistics of its saturation and the extracted plan with its estimated cost.
//! Shapes are the checker's; non-zeros are not known before running, so inputs count as
//! dense (the run-time optimizer will use the actual counts).

use crate::analysis::{Context, VarInfo, EG};
use crate::check::hir::{self, Block, Expr, ExprKind, Stmt, Ty};
use crate::ir::Ir;
use crate::saturate::{saturate, Limits, Rule};
use egg::{RecExpr, Symbol};
use std::fmt::Write;

fn inputs(e: &Expr) -> Vec<(String, Ty)> {
    let mut out = Vec::new();
    crate::check::visit(e, &mut |x| {
        if let ExprKind::Var(n) = &x.kind {
            out.push((n.clone(), x.ty));
        }
    });
    out
}

/// Explains every basic block of a checked program.
/// With `dump`, each statement's saturated e-graph is written there as egraph-serialize JSON
/// (`block<B>-<var>.json`).
pub fn explain(
    prog: &hir::Program,
    rules: &[Rule],
    limits: &Limits,
    dump: Option<&std::path::Path>,
) -> String {
    let mut out = String::new();
    let mut blocks = Vec::new();
    collect(&prog.blocks, &mut blocks);
    for bb in blocks {
        let _ = writeln!(out, "block {}:", bb.id);
        for s in &bb.stmts {
            let (name, e) = match s {
                Stmt::Assign { value, .. } if matches!(value.kind, ExprKind::Lit(_)) => continue,
                Stmt::Assign { var, value, .. } => (var.as_str(), value),
                Stmt::Print { value } => ("print", value),
                _ => continue,
            };
            let file = dump.map(|d| d.join(format!("block{}-{name}.json", bb.id)));
            let _ = writeln!(
                out,
                "  {name} = {}",
                explain_expr(e, rules, limits, file.as_deref())
            );
        }
    }
    out
}

fn collect<'a>(blocks: &'a [Block], out: &mut Vec<&'a hir::BasicBlock>) {
    for b in blocks {
        match b {
            Block::Basic(bb) => out.push(bb),
            Block::If { then, els, .. } => {
                collect(then, out);
                collect(els, out);
            }
            Block::For { body, .. } | Block::While { body, .. } => collect(body, out),
        }
    }
}

fn explain_expr(
    e: &Expr,
    rules: &[Rule],
    limits: &Limits,
    dump: Option<&std::path::Path>,
) -> String {
    let mut term = RecExpr::<Ir>::default();
    if let Err(u) = crate::lower::lower_expr(e, &mut term) {
        return format!("(not optimized: {u})");
    }
    let mut ctx = Context::default();
    for (n, ty) in inputs(e) {
        let info = match ty {
            Ty::Matrix(Some(r), Some(c)) => VarInfo::Matrix {
                rows: r,
                cols: c,
                nnz: (r * c) as f64,
            },
            Ty::Scalar(_) => VarInfo::Scalar(None),
            _ => {
                return format!(
                    "{term}\n      (not optimized: the shape of `{n}` is not known before running)"
                )
            }
        };
        ctx.vars.insert(Symbol::from(n.as_str()), info);
    }
    let mut eg = EG::new(ctx);
    let root = eg.add_expr(&term);
    eg.rebuild();
    let before = crate::extract::greedy(&eg, root).0;
    let (eg, report) = saturate(eg, &[root], rules, limits, None);
    let (cost, plan) = crate::extract::greedy(&eg, root);
    if let Some(path) = dump {
        let g =
            crate::extract::ExGraph::from_egg(&eg, &[root], |n| crate::extract::node_cost(&eg, n));
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|_| crate::extract::serialized::write(&g, path));
        if let Err(err) = written {
            return format!("{term}\n      (cannot write {}: {err})", path.display());
        }
    }
    format!(
        "{term}\n      e-graph: {} iterations, {} nodes, {} classes, {:.1} ms, {}\n      plan: {plan}\n      cost: {cost:.4e} (as written: {before:.4e})",
        report.iterations,
        report.nodes,
        report.classes,
        report.time.as_secs_f64() * 1e3,
        report.stop
    )
}
