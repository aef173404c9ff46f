//! Plan printing, in one place: the plans `spores run --explain` logs as it compiles
//! ([`log_plan`]), the plans of `spores opt FILE.la` ([`explain`]), and their pictures
//! ([`dot`], `--dot DIR`).
//!
//! **One unit, one format.** Both commands plan the same unit, a segment of a basic block
//! ([`crate::optimize::segment`]), with the same optimizer ([`Optimizer::compile_segment`]),
//! and print it with [`render`]: the statements as written (from the source text), the
//! planner's inputs, the plan with each shared subexpression named once, the estimated
//! time, and what saturation and extraction did (the limit that stopped saturation, the
//! extractor, whether the plan is proven optimal).
//!
//! **Estimates ahead of time.** `run` plans with the actual shapes and non-zeros of its
//! inputs; `opt` estimates them the way they will be at run time ([`Estimates`]): `rand`
//! with a constant `sparsity` has that density (and is stored, and counted, like the
//! runtime stores it), a `read` has the dimensions and non-zeros of its `.mtd` file or Matrix
//! Market header, other matrices are dense, and an assigned variable has the analysis's
//! estimate of the plan that computed it. Inputs are taken as finite, as SystemDS's
//! rewriters do.

pub mod dot;

use crate::check::hir::{self, Block, Expr, ExprKind, Stmt, Ty};
use crate::ir::Ir;
use crate::optimize::segment::{self, Segment};
use crate::optimize::{Compiled, Input, Optimizer, Plan};
use std::collections::HashMap;
use std::fmt::Write;
use std::path::Path;

/// What `spores opt` prints and writes.
#[derive(Clone, Copy, Debug, Default)]
pub struct OptOptions<'a> {
    /// the full explanation of each segment (`--explain`), not only its plan
    pub explain: bool,
    /// write each segment's saturated e-graph there (`block<B>-<var>.json`)
    pub dump: Option<&'a Path>,
    /// print each plan's derivation from the statements as written
    pub why: bool,
    /// write each plan as Graphviz DOT there (`block<B>-<var>.dot`)
    pub dot: Option<&'a Path>,
}

/// Plans every segment of every basic block of a checked program (the main program's
/// blocks, as `run` does) with estimated inputs, and prints the plans.
pub fn explain(prog: &hir::Program, opt: &Optimizer, opts: &OptOptions) -> String {
    let mut w = Walker {
        opt,
        opts,
        est: Estimates::default(),
        out: String::new(),
    };
    w.blocks(&prog.blocks);
    w.out
}

/// An estimate of a variable's value ahead of time.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Est {
    /// a matrix with its shape and estimated non-zeros as the planner will count them
    Matrix {
        rows: usize,
        cols: usize,
        nnz: usize,
    },
    /// a scalar, with its value when it is a constant
    Scalar(Option<f64>),
}

/// The estimated values of the variables at a point of the program.
#[derive(Clone, Debug, Default)]
pub struct Estimates {
    vars: HashMap<String, Est>,
}

impl Estimates {
    /// The estimate of an expression's value: see the module doc.
    fn of(&self, e: &Expr) -> Option<Est> {
        match &e.kind {
            ExprKind::Lit(s) => return Some(Est::Scalar(Some(s.as_f64()))),
            ExprKind::Var(n) => {
                if let Some(x) = self.vars.get(n) {
                    return Some(*x);
                }
            }
            ExprKind::Builtin(b, args) if b.name == "rand" => {
                if let (Ty::Matrix(Some(rows), Some(cols)), Some(s)) =
                    (e.ty, param(b, args, "sparsity").and_then(literal))
                {
                    let nnz = (s.clamp(0.0, 1.0) * (rows * cols) as f64) as usize;
                    return Some(Est::Matrix {
                        rows,
                        cols,
                        nnz: stored_nnz(rows, cols, nnz),
                    });
                }
            }
            ExprKind::Builtin(b, args) if b.name == "read" => {
                if let Some(ExprKind::Str(path)) = args.first().map(|a| &a.kind) {
                    if let Some((rows, cols, nnz)) = file_size(Path::new(path)) {
                        return Some(Est::Matrix {
                            rows,
                            cols,
                            nnz: stored_nnz(rows, cols, nnz),
                        });
                    }
                }
            }
            _ => {}
        }
        match e.ty {
            Ty::Matrix(Some(rows), Some(cols)) => Some(Est::Matrix {
                rows,
                cols,
                nnz: rows * cols,
            }),
            Ty::Scalar(_) => Some(Est::Scalar(None)),
            _ => None,
        }
    }

    /// Joins the estimates of two paths: what both know alike, the denser of two matrix
    /// estimates of one shape.
    fn join(&mut self, other: Estimates) {
        let mine = std::mem::take(&mut self.vars);
        for (k, a) in mine {
            let Some(b) = other.vars.get(&k) else {
                continue;
            };
            let joined = match (a, *b) {
                (x, y) if x == y => Some(x),
                (
                    Est::Matrix { rows, cols, nnz },
                    Est::Matrix {
                        rows: r2,
                        cols: c2,
                        nnz: n2,
                    },
                ) if (rows, cols) == (r2, c2) => Some(Est::Matrix {
                    rows,
                    cols,
                    nnz: nnz.max(n2),
                }),
                (Est::Scalar(_), Est::Scalar(_)) => Some(Est::Scalar(None)),
                _ => None,
            };
            if let Some(j) = joined {
                self.vars.insert(k, j);
            }
        }
    }
}

/// The argument of builtin `b` for parameter `name` (arguments are in parameter order).
fn param<'e>(b: &crate::builtins::Builtin, args: &'e [Expr], name: &str) -> Option<&'e Expr> {
    let k = b.params.iter().position(|p| p.name == name)?;
    args.get(k)
}

fn literal(e: &Expr) -> Option<f64> {
    match &e.kind {
        ExprKind::Lit(s) => Some(s.as_f64()),
        _ => None,
    }
}

/// Non-zeros as the run-time planner will count them: a matrix the runtime stores densely
/// with several columns counts as full (see `optimize::segment`).
fn stored_nnz(rows: usize, cols: usize, nnz: usize) -> usize {
    if cols > 1 && !spores_runtime::matrix::prefers_sparse(rows, cols, nnz) {
        rows * cols
    } else {
        nnz
    }
}

/// Dimensions and non-zeros of a matrix file from its `.mtd` (when it gives all three) or its
/// Matrix Market header.
fn file_size(path: &Path) -> Option<(usize, usize, usize)> {
    use std::io::BufRead;
    let dim = |v: Option<i64>| v.and_then(|v| usize::try_from(v).ok());
    if let Ok(Some(m)) = spores_runtime::io::mtd::read_metadata(path) {
        if let (Some(r), Some(c), Some(n)) = (dim(m.rows), dim(m.cols), dim(m.nnz)) {
            return Some((r, c, n));
        }
    }
    let file = std::fs::File::open(path).ok()?;
    let mut lines = std::io::BufReader::new(file).lines();
    let header = lines.next()?.ok()?.to_ascii_lowercase();
    let coordinate = match header.split_whitespace().nth(2) {
        Some("coordinate") => true,
        Some("array") => false,
        _ => return None,
    };
    if !header.starts_with("%%matrixmarket") {
        return None;
    }
    for line in lines {
        let line = line.ok()?;
        if line.starts_with('%') || line.trim().is_empty() {
            continue;
        }
        let v: Vec<usize> = line
            .split_whitespace()
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        return match (coordinate, v.as_slice()) {
            (true, [r, c, n]) => Some((*r, *c, *n)),
            (false, [r, c]) => Some((*r, *c, r * c)),
            _ => None,
        };
    }
    None
}

struct Walker<'a> {
    opt: &'a Optimizer,
    opts: &'a OptOptions<'a>,
    est: Estimates,
    out: String,
}

impl Walker<'_> {
    fn blocks(&mut self, blocks: &[Block]) {
        for b in blocks {
            match b {
                Block::Basic(bb) => self.basic(bb),
                Block::If { then, els, .. } => {
                    let before = self.est.clone();
                    self.blocks(then);
                    let after_then = std::mem::replace(&mut self.est, before);
                    self.blocks(els);
                    self.est.join(after_then);
                }
                Block::For { var, body, .. } => {
                    self.est.vars.insert(var.clone(), Est::Scalar(None));
                    self.blocks(body);
                }
                Block::While { body, .. } => self.blocks(body),
            }
        }
    }

    fn basic(&mut self, bb: &hir::BasicBlock) {
        let mut i = 0;
        while i < bb.stmts.len() {
            match segment::collect(&bb.stmts[i..]) {
                Some(seg) => {
                    self.segment(bb.id, &seg);
                    i += seg.len();
                }
                None => {
                    self.written(&bb.stmts[i]);
                    i += 1;
                }
            }
        }
    }

    /// A statement the optimizer does not plan updates the estimates only.
    fn written(&mut self, s: &Stmt) {
        match s {
            Stmt::Assign { var, value, .. } => match self.est.of(value) {
                Some(e) => {
                    self.est.vars.insert(var.clone(), e);
                }
                None => {
                    self.est.vars.remove(var);
                }
            },
            Stmt::MultiBuiltin { outputs, .. } | Stmt::Call { outputs, .. } => {
                for o in outputs {
                    self.est.vars.remove(o);
                }
            }
            _ => {}
        }
    }

    /// The planner's inputs of a segment from the estimates, or the name of an input whose
    /// shape is not known before running.
    fn inputs(&self, seg: &Segment) -> Result<Vec<(String, Input)>, String> {
        let barrier: HashMap<&str, &Expr> =
            seg.barriers.iter().map(|(n, e)| (n.as_str(), *e)).collect();
        let mut inputs: Vec<(String, Input)> = Vec::new();
        let dims = seg.dims();
        for name in seg.symbols() {
            let est = match barrier.get(name.as_str()) {
                Some(e) => self.est.of(e),
                None => self.est.vars.get(&name).copied(),
            };
            let input = match est {
                Some(Est::Matrix { rows, cols, nnz }) => Input::Matrix {
                    rows,
                    cols,
                    nnz,
                    finite: true,
                },
                Some(Est::Scalar(v)) if dims.contains(&name) => Input::Scalar(v),
                Some(Est::Scalar(Some(v))) if !v.is_finite() => Input::Scalar(None),
                Some(Est::Scalar(_)) => Input::FiniteScalar,
                None => return Err(name),
            };
            inputs.push((name, input));
        }
        Ok(inputs)
    }

    fn segment(&mut self, block: usize, seg: &Segment) {
        let last = &seg.outputs.last().expect("a segment assigns").var;
        let file = |dir: Option<&Path>, ext: &str| {
            dir.map(|d| d.join(format!("block{block}-{last}.{ext}")))
        };
        let inputs = match self.inputs(seg) {
            Ok(i) => i,
            Err(name) => {
                let _ = writeln!(
                    self.out,
                    "{}\n  (not optimized: the shape of `{name}` is not known before running)\n",
                    header(block, seg)
                );
                for o in &seg.outputs {
                    self.est.vars.remove(&o.var);
                }
                return;
            }
        };
        let dump = file(self.opts.dump, "json");
        let (plan, c) = self.opt.compile_segment(
            &seg.term,
            &seg.roots(),
            &inputs,
            dump.as_deref(),
            self.opts.why,
        );
        // the outputs' estimates for the statements after the segment
        for (o, note) in seg.outputs.iter().zip(&c.root_notes) {
            let est = match note.shape {
                Some((rows, cols)) => Est::Matrix {
                    rows,
                    cols,
                    nnz: stored_nnz(rows, cols, note.nnz.round() as usize),
                },
                None => Est::Scalar(None),
            };
            self.est.vars.insert(o.var.clone(), est);
        }
        if !self.opts.explain && !self.opts.why {
            let text = brief(block, seg, plan.as_ref(), &self.out);
            self.out.push_str(&text);
        } else {
            let retry = self.retry(seg, &inputs, &c, plan.as_ref());
            let text = render(
                block,
                seg,
                &inputs,
                &c,
                plan.as_ref(),
                retry.as_deref(),
                &self.out,
            );
            self.out.push_str(&text);
            if let (true, Some(p)) = (self.opts.why, &plan) {
                let _ = writeln!(self.out, "  why:");
                // each output's derivation (outputs computed as written have none)
                for (o, steps) in seg.outputs.iter().zip(&p.why) {
                    if steps.is_empty() {
                        continue;
                    }
                    let _ = writeln!(self.out, "    {}:", o.var);
                    for step in steps {
                        let _ = writeln!(self.out, "        {step}");
                    }
                }
            }
            if let Some(err) = &c.dump_error {
                let _ = writeln!(self.out, "  ({err})");
            }
            self.out.push('\n');
        }
        if let (Some(path), Some(p)) = (file(self.opts.dot, "dot"), &plan) {
            if let Err(e) = std::fs::write(&path, dot::plan(block, seg, p)) {
                let _ = writeln!(self.out, "  (cannot write {}: {e})", path.display());
            }
        }
    }

    /// When saturation stopped at a limit and compiling was cheap: what a run with 4x the
    /// limits makes of the plan.
    fn retry(
        &self,
        seg: &Segment,
        inputs: &[(String, Input)],
        c: &Compiled,
        plan: Option<&Plan>,
    ) -> Option<String> {
        let limited = c.report.stop.ends_with("limit");
        let cheap = (c.saturation + c.extraction).as_millis() < 300;
        if !limited || !cheap {
            return None;
        }
        let mut big = self.opt.clone_settings();
        big.limits.iters *= 4;
        big.limits.nodes *= 4;
        big.limits.time *= 4;
        let (p4, _) = big.compile_segment(&seg.term, &seg.roots(), inputs, None, false);
        let text = |p: Option<&Plan>| p.map(|p| p.expr.to_string());
        Some(if text(p4.as_ref()) == text(plan) {
            "plan unchanged by a run with 4x the limits".into()
        } else {
            let cost = |p: Option<&Plan>| p.map_or(c.written_cost, |p| p.cost);
            format!(
                "a run with 4x the limits finds a different plan (estimated {})",
                time(cost(p4.as_ref()))
            )
        })
    }
}

/// The first line of a segment's explanation.
fn header(block: usize, seg: &Segment) -> String {
    let vars: Vec<&str> = seg.outputs.iter().map(|o| o.var.as_str()).collect();
    format!("block {block}: {}", vars.join(", "))
}

/// The `--explain` entry of a run of statements that took the plan compiled earlier for
/// exactly the same statements and inputs (in another block, or at another statement).
pub fn log_reused(log: &mut String, block: usize, seg: &Segment, plan: Option<&Plan>) {
    let _ = writeln!(log, "{}", header(block, seg));
    let what = if plan.is_some() {
        "its plan"
    } else {
        "kept as written"
    };
    let _ = writeln!(
        log,
        "  {what}: compiled before for the same statements and inputs (not compiled again)"
    );
}

/// A plan in one line per output, for `spores opt` without `--explain`.
fn brief(block: usize, seg: &Segment, plan: Option<&Plan>, already: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", header(block, seg));
    match plan {
        Some(p) => {
            out.push_str(&render_plan(p, &seg.names(), &seg.barriers, "    "));
            out.push_str(&meanings(p, already, "    "));
        }
        None => {
            let _ = writeln!(out, "    (as written)");
        }
    }
    out
}

/// An estimated time in nanoseconds (the cost model's unit) in readable units.
pub fn time(ns: f64) -> String {
    if !ns.is_finite() {
        return format!("{ns}");
    }
    let (v, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "us")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let digits = if v < 10.0 {
        2
    } else if v < 100.0 {
        1
    } else {
        0
    };
    format!("{v:.digits$} {unit}")
}

/// The source text of an expression (what the user wrote), if it is known.
fn source(e: &Expr) -> Option<String> {
    crate::syntax::sources::snippet(e.span.start, e.span.end)
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Appends `items` separated by ", " to `out`, wrapping lines at about 90 characters with
/// `indent` on each continuation line.
fn wrapped(out: &mut String, first: &str, items: &[String], indent: &str) {
    let mut line = first.to_string();
    for (k, item) in items.iter().enumerate() {
        let piece = if k + 1 < items.len() {
            format!("{item},")
        } else {
            item.clone()
        };
        if line.len() + 1 + piece.len() > 90 && line.len() > indent.len() + first.len() {
            let _ = writeln!(out, "{line}");
            line = format!("{indent}{piece}");
        } else {
            if !line.ends_with(' ') && !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&piece);
        }
    }
    let _ = writeln!(out, "{line}");
}

/// A segment's full explanation (see the module doc); the meaning of a fused operator is
/// given unless `already` (the explanation so far) holds it.
pub fn render(
    block: usize,
    seg: &Segment,
    inputs: &[(String, Input)],
    c: &Compiled,
    plan: Option<&Plan>,
    retry: Option<&str>,
    already: &str,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", header(block, seg));
    let _ = writeln!(out, "  as written:");
    for o in &seg.statements {
        let text = source(o.1).unwrap_or_else(|| "?".into());
        let _ = writeln!(out, "    {} = {text}", o.0);
    }
    let shown: Vec<String> = inputs
        .iter()
        .map(|(n, i)| {
            let n = match seg.barriers.iter().find(|(b, _)| b == n) {
                Some((_, e)) => source(e).unwrap_or_else(|| n.clone()),
                None => n.clone(),
            };
            match i {
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
            }
        })
        .collect();
    wrapped(&mut out, "  inputs:", &shown, "    ");
    match plan {
        Some(p) => {
            let _ = writeln!(
                out,
                "  plan, estimated {} (as written {}):",
                time(p.cost),
                time(p.written_cost)
            );
            out.push_str(&render_plan(p, &seg.names(), &seg.barriers, "    "));
            out.push_str(&meanings(p, already, "    "));
        }
        None => {
            let _ = writeln!(
                out,
                "  kept as written, estimated {} (no cheaper plan found)",
                time(c.written_cost)
            );
        }
    }
    let stop = match c.report.stop.as_str() {
        // egg checks the limit after each rule application, before rebuilding merges the
        // duplicates, so the count after the last rebuild can be well below the limit
        "node limit" => format!(
            "stopped at the node limit ({}, counted before duplicates merge)",
            c.limits.nodes
        ),
        "iteration limit" => format!("stopped at the iteration limit ({})", c.limits.iters),
        "work limit" => format!("stopped at the work limit ({})", c.limits.work),
        "time limit" => format!(
            "stopped at the time limit ({}), a safety net: this plan depends on the machine's load",
            time(c.limits.time.as_nanos() as f64)
        ),
        other => other.to_string(),
    };
    let _ = writeln!(
        out,
        "  saturation: {} iterations, {} nodes; {}\n    {}",
        c.report.iterations,
        c.report.nodes,
        time(c.saturation.as_nanos() as f64),
        stop
    );
    if let Some(r) = retry {
        let _ = writeln!(out, "    ({r})");
    }
    if !c.extractor.is_empty() {
        let _ = writeln!(
            out,
            "  extraction: {}, {}; {}",
            c.extractor,
            c.optimality(),
            time(c.extraction.as_nanos() as f64)
        );
    }
    out
}

/// A plan as DML text, each line starting with `indent`: one assignment per output and per
/// shared subexpression (`%1 = t(V) %*% V`, computed once), fused operators by their
/// SystemDS names ([`crate::raise::dml`] in its `Named` mode), barrier inputs (`.b0`) by
/// their source text. The one renderer of plans for people.
pub fn render_plan(
    plan: &Plan,
    names: &[String],
    barriers: &[(String, &Expr)],
    indent: &str,
) -> String {
    use crate::raise::dml::{self, Fused, Leaves, Piece, Target};
    struct Barriers<'a>(&'a [(String, &'a Expr)]);
    impl Leaves for Barriers<'_> {
        fn leaf(&self, s: egg::Symbol) -> Option<(Piece, Vec<egg::Symbol>)> {
            let (_, e) = self.0.iter().find(|(b, _)| b == s.as_str())?;
            Some((Piece::loose(source(e)?), vec![]))
        }
    }
    let mut count = 0;
    let mut temp = || {
        count += 1;
        format!("%{count}")
    };
    let mut out = String::new();
    match dml::print_roots(
        &plan.expr,
        &plan.roots,
        names,
        Fused::Named,
        &Barriers(barriers),
        &mut temp,
    ) {
        Ok(lines) => {
            for l in lines {
                let target = match &l.target {
                    Target::Temp(t) => t.as_str(),
                    Target::Output(k) => names[*k].as_str(),
                };
                let _ = writeln!(out, "{indent}{target} = {}", l.value.text);
            }
        }
        // not expected of an extracted plan (relational operators have no DML form)
        Err(e) => {
            for (name, root) in names.iter().zip(&plan.roots) {
                let term = crate::optimize::root_term(&plan.expr, *root);
                let _ = writeln!(out, "{indent}{name} = {term}   ({e})");
            }
        }
    }
    out
}

/// The meaning of each fused operator of `plan` (`wsloss(X, U, V) = sum((X - U %*% t(V))^2)`)
/// that `already` does not hold yet, one line each, each starting with `indent`: so an
/// explanation says what each fused operator computes once.
pub fn meanings(plan: &Plan, already: &str, indent: &str) -> String {
    use crate::raise::dml::{to_dml, Fused};
    use egg::{Language, RecExpr, Symbol};
    let mut out = String::new();
    for node in plan.expr.as_ref() {
        if !dot::is_fused(node) {
            continue;
        }
        let operands: &[&str] = match node {
            Ir::WsLossW(_) | Ir::WSubMM(_) | Ir::WSubMMT(_) => &["W", "X", "U", "V"],
            Ir::Wcemm(_) | Ir::WDivMM(_) | Ir::WDivMMT(_) => &["X", "U", "V", "eps"],
            Ir::MMChain(_) => &["X", "w", "v"],
            Ir::MMChainR(_) => &["X", "v", "y"],
            Ir::SMMChain(_) => &["X", "P", "V"],
            Ir::Sprop(_) => &["P"],
            Ir::TMMul(_) => &["A", "B"],
            _ => &["X", "U", "V"],
        };
        let mut e = RecExpr::<Ir>::default();
        let ids: Vec<egg::Id> = operands
            .iter()
            .map(|n| e.add(Ir::Symbol(Symbol::from(*n))))
            .collect();
        let mut k = 0;
        e.add(node.clone().map_children(|_| {
            k += 1;
            ids[k - 1]
        }));
        let (Ok(named), Ok(meaning)) = (to_dml(&e, Fused::Named), to_dml(&e, Fused::Expanded))
        else {
            continue;
        };
        let line = format!("{indent}where {named} = {meaning}\n");
        if !already.contains(&line) && !out.contains(&line) {
            out.push_str(&line);
        }
    }
    out
}

/// Appends a segment compiled at run time to the `--explain` log; with `dot`, writes its
/// plan there as Graphviz DOT (`block<B>-<var>.dot`).
pub fn log_plan(
    log: &mut String,
    block: usize,
    seg: &Segment,
    inputs: &[(String, Input)],
    c: &Compiled,
    plan: Option<&Plan>,
    dot_dir: Option<&Path>,
) {
    let text = render(block, seg, inputs, c, plan, None, log);
    log.push_str(&text);
    if let (Some(dir), Some(p)) = (dot_dir, plan) {
        let last = &seg.outputs.last().expect("a segment assigns").var;
        let path = dir.join(format!("block{block}-{last}.dot"));
        if let Err(e) = std::fs::write(&path, dot::plan(block, seg, p)) {
            let _ = writeln!(log, "  (cannot write {}: {e})", path.display());
        }
    }
}
