//! Plan printing, in one place: `spores opt FILE.la --explain` ([`explain`]), the plans
//! chosen at run time for `spores run --explain` ([`log_plan`]), and the tree of a plan
//! ([`plan_trees`]).
//!
//! `spores opt FILE.la --explain`: for each basic block, each statement's LA input, the
//! e-graph statistics of its saturation and the extracted plan with its estimated cost, by
//! the same compilation as run-time optimization ([`crate::optimize::compile`]).
//! Shapes are the checker's; non-zeros are not known before running, so inputs count as
//! dense (the run-time optimizer will use the actual counts).

use crate::check::hir::{self, Block, Expr, ExprKind, Stmt, Ty};
use crate::extract::Options;
use crate::ir::Ir;
use crate::optimize::segment::Segment;
use crate::optimize::{compile_with, Compiled, Input, Plan};
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
                plan_trees(&p).concat()
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

/// The plan of each output as a tree with shape, estimated nnz and cost per node; a node an
/// earlier part of the plan computed is marked shared.
pub fn plan_trees(plan: &Plan) -> Vec<String> {
    let mut seen = vec![false; plan.expr.as_ref().len()];
    plan.roots
        .iter()
        .map(|&root| {
            let mut text = String::new();
            tree(plan, root, 0, &mut seen, &mut text);
            text
        })
        .collect()
}

fn tree(plan: &Plan, id: egg::Id, depth: usize, seen: &mut [bool], out: &mut String) {
    use egg::Language;
    let node = &plan.expr[id];
    let label = node.to_string();
    let i = usize::from(id);
    if seen[i] {
        let _ = writeln!(
            out,
            "    {:indent$}{label} (shared)",
            "",
            indent = 2 * depth
        );
        return;
    }
    seen[i] = true;
    let note = &plan.notes[i];
    let shape = match note.shape {
        Some((r, c)) => format!("{r}x{c}"),
        None => "scalar".into(),
    };
    let _ = writeln!(
        out,
        "    {:indent$}{label}  [{shape}, nnz ~{:.3e}, cost {:.3e}]",
        "",
        note.nnz,
        note.cost,
        indent = 2 * depth
    );
    for &child in node.children() {
        tree(plan, child, depth + 1, seen, out);
    }
}

/// Appends a segment compiled at run time to the `--explain` log.
pub fn log_plan(
    log: &mut String,
    block: usize,
    seg: &Segment,
    inputs: &[(String, Input)],
    c: &Compiled,
    plan: Option<&Plan>,
) {
    let shapes: Vec<String> = inputs
        .iter()
        .map(|(n, i)| match i {
            Input::Matrix {
                rows,
                cols,
                nnz,
                finite,
            } => format!(
                "{n} {rows}x{cols} nnz {nnz}{}",
                if *finite { "" } else { " (not finite)" }
            ),
            Input::Scalar(None) => format!("{n} scalar"),
            Input::FiniteScalar => format!("{n} finite scalar"),
            Input::Scalar(Some(v)) => format!("{n} = {v}"),
        })
        .collect();
    let _ = writeln!(
        log,
        "block {block}, {}   ({})",
        seg.texts.join("; "),
        shapes.join(", ")
    );
    let _ = writeln!(
        log,
        "    e-graph: {} iterations, {} nodes, {}; saturation {:.1} ms, extraction {:.1} ms",
        c.report.iterations,
        c.report.nodes,
        c.report.stop,
        c.saturation.as_secs_f64() * 1e3,
        c.extraction.as_secs_f64() * 1e3
    );
    match plan {
        Some(p) => {
            for (out, tree) in seg.outputs.iter().zip(plan_trees(p)) {
                if seg.outputs.len() > 1 {
                    let _ = writeln!(log, "  {} =", out.var);
                }
                log.push_str(&tree);
            }
            let _ = writeln!(
                log,
                "    cost {:.4e} (as written {:.4e})",
                p.cost, p.written_cost
            );
        }
        None => {
            let _ = writeln!(
                log,
                "    kept as written (cost {:.4e}, no cheaper plan)",
                c.written_cost
            );
        }
    }
}
