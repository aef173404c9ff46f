//! `spores opt FILE.la --explain`: for each basic block, each statement's LA input, the
//! e-graph statistics of its saturation and the extracted plan with its estimated cost, by
//! the same compilation as run-time optimization ([`crate::optimize::compile`]).
//! Shapes are the checker's; non-zeros are not known before running, so inputs count as
//! dense (the run-time optimizer will use the actual counts).

use crate::check::hir::{self, Block, Expr, ExprKind, Stmt, Ty};
use crate::extract::Options;
use crate::ir::Ir;
use crate::optimize::{compile_with, Input};
use crate::saturate::{Limits, Rule};
use egg::RecExpr;
use std::fmt::Write;

fn inputs_of(e: &Expr) -> Vec<(String, Ty)> {
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
/// With `why`, each plan is followed by its derivation from the statement as written (one
/// rewrite step per line, as `spores equiv --why` prints them).
pub fn explain(
    prog: &hir::Program,
    rules: &[Rule],
    limits: &Limits,
    dump: Option<&std::path::Path>,
    why: bool,
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
                explain_expr(e, rules, limits, file.as_deref(), why)
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
    why: bool,
) -> String {
    let mut term = RecExpr::<Ir>::default();
    // as at run time, what the optimizer does not handle is evaluated first, as written
    let (_, barriers) = crate::lower::lower_with_barriers(e, &mut term);
    if !crate::lower::has_operator(&term) {
        let mut strict = RecExpr::<Ir>::default();
        return match crate::lower::lower_expr(e, &mut strict) {
            Err(u) => format!("(not optimized: {u})"),
            Ok(_) => "(not optimized: no operator)".to_string(),
        };
    }
    let mut typed = inputs_of(e);
    typed.extend(barriers.iter().map(|(n, b)| (n.clone(), b.ty)));
    let mut inputs = Vec::new();
    for (n, ty) in typed {
        if !term
            .as_ref()
            .iter()
            .any(|x| matches!(x, Ir::Symbol(s) if s.as_str() == n))
        {
            continue; // only read inside a barrier
        }
        let input = match ty {
            // ahead of time, inputs are taken as dense and finite
            Ty::Matrix(Some(rows), Some(cols)) => Input::Matrix {
                rows,
                cols,
                nnz: rows * cols,
                finite: true,
            },
            Ty::Scalar(_) => Input::FiniteScalar,
            _ => {
                return format!(
                    "{term}\n      (not optimized: the shape of `{n}` is not known before running)"
                )
            }
        };
        if !inputs.iter().any(|(m, _)| *m == n) {
            inputs.push((n, input));
        }
    }
    let root = egg::Id::from(term.as_ref().len() - 1);
    let (plan, c) = compile_with(
        &term,
        &[root],
        &inputs,
        rules,
        limits,
        &Options::default(),
        dump,
        why,
    );
    let mut out = format!(
        "{term}\n      e-graph: {} iterations, {} nodes, {} classes, {:.1} ms, {}\n      extraction: {:.1} ms, {}\n",
        c.report.iterations,
        c.report.nodes,
        c.report.classes,
        c.report.time.as_secs_f64() * 1e3,
        c.report.stop,
        c.extraction.as_secs_f64() * 1e3,
        c.optimality()
    );
    match plan {
        Some(p) => {
            let _ = write!(
                out,
                "      plan: {}\n      cost: {:.4e} (as written: {:.4e})\n{}",
                p.expr,
                p.cost,
                p.written_cost,
                p.explain.concat()
            );
            if why {
                let _ = writeln!(out, "      why:");
                for step in p.why.iter().flatten() {
                    let _ = writeln!(out, "        {step}");
                }
            }
        }
        None => {
            let _ = write!(
                out,
                "      plan: as written\n      cost: {:.4e}\n",
                c.written_cost
            );
        }
    }
    if let Some(err) = c.dump_error {
        let _ = writeln!(out, "      ({err})");
    }
    out.trim_end().to_string()
}
