//! Stage 7, execute: runs a checked program block by block on the runtime's kernels.
//!
//! Each basic block is handed to [`Executor::run_basic_block`], the seam where the optimizer
//! plugs in: today it evaluates the block's statements as written. Every shape the checker
//! could not prove is checked here with the same rules ([`crate::check::shape`]), so a
//! mismatch is a diagnostic at the offending expression, never a panic in a kernel.

pub(crate) mod files;
mod stats;
mod value;

pub use stats::Stats;
pub use value::{scalar_to_string, Value};

use crate::builtins;
use crate::check::hir::{self, Block, Expr, ExprKind, Range, Scalar, Stmt};
use crate::check::shape;
use crate::error::SpannedError;
use crate::syntax::ast::Span;
use spores_runtime::kernels;
use spores_runtime::ops::BinOp;
use spores_runtime::Matrix;
use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

type Res<T> = Result<T, SpannedError>;

/// Runs programs; owns the variables and the output stream.
pub struct Executor<'o> {
    vars: HashMap<String, Value>,
    out: &'o mut dyn Write,
    stats: Option<Stats>,
    rand_calls: u64,
    epoch: Instant,
    functions: std::rc::Rc<[hir::Function]>,
    depth: usize,
    optimizer: Option<crate::optimize::Optimizer>,
    verify: bool,
    /// the plans chosen at run time (with `--explain`)
    pub explain: Option<String>,
    /// the largest relative difference between optimized and written statements (`--verify`)
    pub max_rel_diff: f64,
    /// statements run through an optimized plan
    pub optimized_runs: u64,
}

impl<'o> Executor<'o> {
    /// An executor printing to `out`; with `stats`, it records time per operation.
    pub fn new(out: &'o mut dyn Write, stats: bool) -> Executor<'o> {
        Executor {
            vars: HashMap::new(),
            out,
            stats: stats.then(Stats::default),
            rand_calls: 0,
            epoch: Instant::now(),
            functions: std::rc::Rc::from(Vec::new()),
            depth: 0,
            optimizer: None,
            verify: false,
            explain: None,
            max_rel_diff: 0.0,
            optimized_runs: 0,
        }
    }

    /// Optimizes statements at run time; with `verify`, also runs them as written and fails
    /// when they differ by more than 1e-9 (relative); with `explain`, keeps the chosen plans.
    pub fn with_optimizer(
        mut self,
        opt: crate::optimize::Optimizer,
        verify: bool,
        explain: bool,
    ) -> Self {
        self.optimizer = Some(opt);
        self.verify = verify;
        self.explain = explain.then(String::new);
        self
    }

    /// Runs a whole program; returns the statistics if they were requested.
    pub fn run(&mut self, prog: &hir::Program) -> Res<Option<Stats>> {
        let start = Instant::now();
        self.functions = std::rc::Rc::from(prog.functions.clone());
        self.blocks(&prog.blocks)?;
        let _ = self.out.flush();
        Ok(self.stats.take().map(|mut s| {
            s.total = start.elapsed();
            s
        }))
    }

    fn blocks(&mut self, blocks: &[Block]) -> Res<()> {
        for b in blocks {
            match b {
                Block::Basic(bb) => self.run_basic_block(bb)?,
                Block::If { cond, then, els } => {
                    if self.condition(cond)? {
                        self.blocks(then)?;
                    } else {
                        self.blocks(els)?;
                    }
                }
                Block::For {
                    var,
                    from,
                    to,
                    step,
                    body,
                } => {
                    let a = self.scalar(from)?.as_f64();
                    let b = self.scalar(to)?.as_f64();
                    let step_v = match step {
                        Some(e) => Some(self.scalar(e)?.as_f64()),
                        None => None,
                    };
                    if !a.is_finite()
                        || !b.is_finite()
                        || step_v.is_some_and(|s| !s.is_finite() || s == 0.0)
                    {
                        return Err(SpannedError::new(
                            from.span.to(to.span),
                            format!("for range {a}:{b} is not finite"),
                        ));
                    }
                    // counts and loop values stay exact below 2^53
                    const EXACT: f64 = 9_007_199_254_740_992.0;
                    if a.abs() > EXACT || b.abs() > EXACT || (b - a).abs() >= EXACT {
                        return Err(SpannedError::new(
                            from.span.to(to.span),
                            format!("for range {a}:{b} is too large (bounds and iteration count must stay below 2^53)"),
                        ));
                    }
                    let step = step_v.unwrap_or(if b >= a { 1.0 } else { -1.0 });
                    let n = if (b - a) * step < 0.0 {
                        0
                    } else {
                        ((b - a) / step).floor() as u64 + 1
                    };
                    let int = a.fract() == 0.0 && step.fract() == 0.0;
                    for k in 0..n {
                        let v = a + step * k as f64;
                        let v = if int {
                            Scalar::Int(v as i64)
                        } else {
                            Scalar::Double(v)
                        };
                        self.vars.insert(var.clone(), Value::Scalar(v));
                        self.blocks(body)?;
                    }
                }
                Block::While { cond, body } => {
                    while self.condition(cond)? {
                        self.blocks(body)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Runs one basic block (the optimizer's unit of work).
    pub fn run_basic_block(&mut self, bb: &hir::BasicBlock) -> Res<()> {
        let mut i = 0;
        while i < bb.stmts.len() {
            if self.optimizer.is_some() {
                let done = self.run_segment(bb.id, i, &bb.stmts[i..])?;
                if done > 0 {
                    i += done;
                    continue;
                }
            }
            self.stmt(&bb.stmts[i])?;
            i += 1;
        }
        Ok(())
    }

    /// Plans and runs the longest run of assignments at the start of `stmts` as one term: a
    /// variable assigned in the run is inlined into the statements after it, and the run's
    /// assigned variables are the roots of one extraction, so what they share is computed
    /// once. The run stops at any other statement, at an assignment of an integer, boolean or
    /// string, and at a barrier (a subexpression the optimizer does not handle) that reads a
    /// variable the run assigned. Returns how many statements ran (0: none, run the first
    /// as written).
    fn run_segment(&mut self, block: usize, start: usize, stmts: &[Stmt]) -> Res<usize> {
        use crate::ir::Ir;
        use crate::optimize::Input;
        use crate::raise::Val;
        use egg::{Id, Language, RecExpr, Symbol};

        let mut term = RecExpr::<Ir>::default();
        let mut env: HashMap<String, Id> = HashMap::new();
        // (variable, type, root, statement) of each variable's last assignment, in order
        let mut outputs: Vec<(String, hir::Ty, Id, &Expr)> = Vec::new();
        let mut barriers: Vec<(String, &Expr)> = Vec::new();
        let mut texts: Vec<String> = Vec::new();
        let mut any_op = false;
        for s in stmts {
            let Stmt::Assign { var, value, .. } = s else {
                break;
            };
            if !matches!(
                value.ty,
                hir::Ty::Matrix(..) | hir::Ty::Scalar(hir::ScalarTy::Double)
            ) {
                break;
            }
            let mut t = RecExpr::<Ir>::default();
            let (root, local) = crate::lower::lower_with_barriers(value, &mut t);
            let reads_segment = local.iter().any(|(_, e)| {
                let mut hit = false;
                crate::check::visit(e, &mut |x| {
                    hit |= matches!(&x.kind, ExprKind::Var(n) if env.contains_key(n));
                });
                hit
            });
            if reads_segment {
                break;
            }
            // the statement as lowered, with the block-wide barrier names
            let renamed: RecExpr<Ir> = t
                .as_ref()
                .iter()
                .map(|node| match node {
                    Ir::Symbol(sym) => match local.iter().position(|(n, _)| n == sym.as_str()) {
                        Some(k) => Ir::Symbol(Symbol::from(format!(".b{}", barriers.len() + k))),
                        None => node.clone(),
                    },
                    _ => node.clone(),
                })
                .collect::<Vec<_>>()
                .into();
            texts.push(format!("{var} = {renamed}"));
            // splice it into the run's term, variables assigned earlier in the run inlined
            let mut map: Vec<Id> = Vec::with_capacity(renamed.as_ref().len());
            for node in renamed.as_ref() {
                let id = match node {
                    Ir::Symbol(sym) if env.contains_key(sym.as_str()) => env[sym.as_str()],
                    _ => term.add(node.clone().map_children(|c| map[usize::from(c)])),
                };
                map.push(id);
            }
            let base = barriers.len();
            barriers.extend(
                local
                    .iter()
                    .enumerate()
                    .map(|(k, (_, e))| (format!(".b{}", base + k), *e)),
            );
            any_op |= worth_optimizing(value);
            let id = map[usize::from(root)];
            env.insert(var.clone(), id);
            outputs.retain(|(v, ..)| v != var);
            outputs.push((var.clone(), value.ty, id, value));
        }
        let count = texts.len();
        if count == 0 || !any_op || !crate::lower::has_operator(&term) {
            return Ok(0);
        }

        // barriers read only variables from before the run: evaluate them now, as written
        let mut barrier_vals = HashMap::new();
        for (name, e) in &barriers {
            barrier_vals.insert(name.clone(), self.eval(e)?);
        }
        // scalars that size a `matrix(v, rows, cols)` are constants of the plan
        let mut dims: Vec<String> = Vec::new();
        for node in term.as_ref() {
            if let Ir::Fill([_, r, c]) = node {
                for x in [r, c] {
                    if let Ir::Symbol(s) = &term[*x] {
                        dims.push(s.to_string());
                    }
                }
            }
        }
        let mut names: Vec<String> = Vec::new();
        for node in term.as_ref() {
            if let Ir::Symbol(s) = node {
                if !names.iter().any(|n| n == s.as_str()) {
                    names.push(s.to_string());
                }
            }
        }
        let mut inputs = Vec::new();
        let mut vals = HashMap::new();
        for n in names {
            let (input, val) = match barrier_vals.get(&n).or_else(|| self.vars.get(&n)) {
                Some(Value::Matrix(m)) => (
                    Input::Matrix {
                        rows: m.rows(),
                        cols: m.cols(),
                        nnz: plan_nnz(m),
                        finite: all_finite(m),
                    },
                    Val::Matrix(m.clone()),
                ),
                Some(Value::Scalar(s)) => (
                    if dims.contains(&n) {
                        Input::Scalar(Some(s.as_f64()))
                    } else if s.as_f64().is_finite() {
                        Input::FiniteScalar
                    } else {
                        Input::Scalar(None)
                    },
                    Val::Scalar(s.as_f64()),
                ),
                // a string, or a variable the checker knows is undefined here: as written
                _ => return Ok(0),
            };
            vals.insert(Symbol::from(n.as_str()), val);
            inputs.push((n, input));
        }

        let roots: Vec<Id> = outputs.iter().map(|o| o.2).collect();
        let opt = self.optimizer.as_mut().expect("checked by the caller");
        let before = opt.compiled.len();
        let planned = opt.plan(block, start, &term, &roots, &inputs);
        let plan = match &planned {
            crate::optimize::Planned::Plan(p) => Some(p.clone()),
            _ => None,
        };
        if opt.compiled.len() > before {
            let c = opt.compiled.last().expect("just compiled").clone();
            if let Some(s) = &mut self.stats {
                s.record_compile(block, c.saturation, c.extraction);
            }
            if let Some(log) = &mut self.explain {
                log_plan(log, block, &texts, &inputs, &c, plan.as_deref(), &outputs);
            }
        }
        if let crate::optimize::Planned::Unplanned = planned {
            for s in &stmts[..count] {
                self.stmt(s)?;
            }
            return Ok(count);
        }
        // without a cheaper plan, the lowered statements run as written (their barriers are
        // already evaluated; running the statements again would repeat them)
        let (expr, expr_roots) = match &plan {
            Some(p) => (&p.expr, &p.roots),
            None => (&term, &roots),
        };
        let mut stats = self.stats.take();
        let results = crate::raise::eval_roots(expr, expr_roots, &vals, &mut |op, d| {
            if let Some(s) = stats.as_mut() {
                s.record(op, d);
            }
        });
        self.stats = stats;
        let Ok(results) = results else {
            // the plan cannot run (an internal mismatch): run the statements as written
            for s in &stmts[..count] {
                self.stmt(s)?;
            }
            return Ok(count);
        };
        let mut values = Vec::with_capacity(outputs.len());
        for (r, (_, ty, ..)) in results.into_iter().zip(&outputs) {
            let v = match (r, ty) {
                (Val::Matrix(m), hir::Ty::Matrix(..)) => Value::Matrix(m),
                (Val::Scalar(x), hir::Ty::Scalar(_)) => Value::Scalar(Scalar::Double(x)),
                (Val::Matrix(m), hir::Ty::Scalar(_)) if m.shape() == (1, 1) => {
                    Value::Scalar(Scalar::Double(m.get(0, 0)))
                }
                _ => {
                    for s in &stmts[..count] {
                        self.stmt(s)?;
                    }
                    return Ok(count);
                }
            };
            values.push(v);
        }
        if let (true, Some(plan)) = (self.verify, &plan) {
            // run the statements as written, then compare each output
            for s in &stmts[..count] {
                self.stmt(s)?;
            }
            for (v, (var, _, _, value)) in values.iter().zip(&outputs) {
                let written = self.vars.get(var).expect("assigned just above");
                let d = rel_diff(v, written);
                self.max_rel_diff = self.max_rel_diff.max(d);
                if d > 1e-9 {
                    return Err(SpannedError::new(
                        value.span,
                        format!("--verify: the optimized plan differs from the statement as written by {d:.3e} (relative)"),
                    )
                    .with_note(format!("plan: {}", plan.expr)));
                }
            }
        }
        if plan.is_some() {
            self.optimized_runs += count as u64;
        }
        for (v, (var, ..)) in values.into_iter().zip(&outputs) {
            self.vars.insert(var.clone(), v);
        }
        Ok(count)
    }

    fn condition(&mut self, e: &Expr) -> Res<bool> {
        let v = self.scalar(e)?.as_f64();
        Ok(v != 0.0 && !v.is_nan())
    }

    fn stmt(&mut self, s: &Stmt) -> Res<()> {
        match s {
            Stmt::Assign { var, value, .. } => {
                let v = self.eval(value)?;
                self.vars.insert(var.clone(), v);
            }
            Stmt::Print { value } => {
                let v = self.eval(value)?;
                writeln!(self.out, "{v}")
                    .map_err(|e| SpannedError::new(value.span, format!("cannot print: {e}")))?;
            }
            Stmt::Write {
                value,
                path,
                format,
                opts,
            } => {
                let v = self.eval(value)?;
                let p = self.string(path)?;
                let format = format.as_ref().map(|f| self.string(f)).transpose()?;
                let opts = opts
                    .iter()
                    .map(|(k, e)| Ok((k.as_str(), self.eval(e)?)))
                    .collect::<Res<Vec<_>>>()?;
                let t = Instant::now();
                files::write(&v, &p, format, &opts).map_err(|e| SpannedError::new(path.span, e))?;
                self.record("write", t);
            }
            Stmt::Stop { message } => {
                let m = self.eval(message)?;
                return Err(SpannedError::new(message.span, format!("stop: {m}")));
            }
            Stmt::Fail { error } => return Err(error.clone()),
            Stmt::Assert { failed, message } => {
                if self.condition(failed)? {
                    let m = self.eval(message)?;
                    return Err(SpannedError::new(message.span, format!("{m}")));
                }
            }
            Stmt::MultiBuiltin {
                outputs,
                row,
                args,
                span,
            } => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                let spans: Vec<Span> = args.iter().map(|a| a.span).collect();
                let t = Instant::now();
                let mut ctx = builtins::Ctx {
                    name: row.name,
                    span: *span,
                    spans: &spans,
                    rand_calls: &mut self.rand_calls,
                    epoch: self.epoch,
                };
                let multi = row
                    .multi
                    .expect("the checker picks rows with several outputs");
                let outs = multi(&mut ctx, &vals)?;
                self.record(row.name, t);
                if outputs.len() > outs.len() {
                    return Err(SpannedError::new(
                        *span,
                        format!("{} has {} outputs", row.name, outs.len()),
                    ));
                }
                for (o, v) in outputs.iter().zip(outs) {
                    self.vars.insert(o.clone(), v);
                }
            }
            Stmt::Call {
                outputs,
                func,
                args,
                span,
            } => {
                let vals = self.call_function(*func, args, *span)?;
                for (o, v) in outputs.iter().zip(vals) {
                    self.vars.insert(o.clone(), v);
                }
            }
            Stmt::IndexAssign {
                var,
                rows,
                cols,
                value,
                span,
            } => {
                let v = self.eval(value)?;
                // take the matrix out of the variable, so that an unshared one is updated in
                // place instead of copied
                let Some(Value::Matrix(mut m)) = self.vars.remove(var) else {
                    return Err(SpannedError::new(
                        *span,
                        format!("`{var}` is not a matrix here"),
                    ));
                };
                let r = self.range(rows, m.rows(), "row");
                let c = r.and_then(|r| Ok((r, self.range(cols, m.cols(), "column")?)));
                let (r, c) = match c {
                    Ok(rc) => rc,
                    Err(e) => {
                        self.vars.insert(var.clone(), Value::Matrix(m));
                        return Err(e);
                    }
                };
                let t = Instant::now();
                let res = left_index(Arc::make_mut(&mut m), r, c, &v, value.span);
                self.vars.insert(var.clone(), Value::Matrix(m));
                res?;
                self.record("leftIndex", t);
            }
        }
        Ok(())
    }

    fn record(&mut self, op: &'static str, t: Instant) {
        if let Some(s) = &mut self.stats {
            s.record(op, t.elapsed());
        }
    }

    fn scalar(&mut self, e: &Expr) -> Res<Scalar> {
        match self.eval(e)? {
            Value::Scalar(s) => Ok(s),
            Value::Matrix(m) => Err(SpannedError::new(
                e.span,
                format!(
                    "expected a scalar, found a {}x{} matrix",
                    m.rows(),
                    m.cols()
                ),
            )),
            Value::Str(_) => Err(SpannedError::new(
                e.span,
                "expected a number, found a string",
            )),
        }
    }

    fn matrix(&mut self, e: &Expr) -> Res<Arc<Matrix>> {
        match self.eval(e)? {
            Value::Matrix(m) => Ok(m),
            _ => Err(SpannedError::new(e.span, "expected a matrix")),
        }
    }

    fn string(&mut self, e: &Expr) -> Res<String> {
        match self.eval(e)? {
            Value::Str(s) => Ok(s),
            v => Ok(v.to_string()),
        }
    }

    /// Evaluates an expression.
    pub fn eval(&mut self, e: &Expr) -> Res<Value> {
        let span = e.span;
        Ok(match &e.kind {
            ExprKind::Lit(s) => Value::Scalar(*s),
            ExprKind::Str(s) => Value::Str(s.clone()),
            ExprKind::Var(name) => self.vars.get(name).cloned().ok_or_else(|| {
                SpannedError::new(
                    span,
                    format!("variable `{name}` is not defined on this path"),
                )
                .with_note("it is assigned only in a branch or loop that did not run")
            })?,
            ExprKind::Unary(op, x) => {
                let v = self.eval(x)?;
                let t = Instant::now();
                let r = builtins::unary(*op, &v);
                if matches!(v, Value::Matrix(_)) {
                    self.record(op.name(), t);
                }
                r
            }
            ExprKind::Binary(op, a, b) => {
                let (va, vb) = (self.eval(a)?, self.eval(b)?);
                self.binary(span, *op, va, vb)?
            }
            ExprKind::Concat(a, b) => {
                let (va, vb) = (self.eval(a)?, self.eval(b)?);
                Value::Str(format!("{va}{vb}"))
            }
            // t(A) %*% B runs without forming t(A) (a kernel choice, not a rewrite)
            ExprKind::MatMul(a, b) if is_transpose(a) => {
                let ExprKind::Builtin(_, args) = &a.kind else {
                    unreachable!("matched above")
                };
                let inner = &args[0];
                let (ma, mb) = (self.matrix(inner)?, self.matrix(b)?);
                shape::matmul((Some(ma.cols()), Some(ma.rows())), dims(&mb))
                    .map_err(|m| SpannedError::new(span, m).with_label("in this product"))?;
                let t = Instant::now();
                let r = kernels::tmatmul(&ma, &mb);
                self.record("%*%", t);
                Value::matrix(r)
            }
            ExprKind::MatMul(a, b) => {
                let (ma, mb) = (self.matrix(a)?, self.matrix(b)?);
                shape::matmul(dims(&ma), dims(&mb))
                    .map_err(|m| SpannedError::new(span, m).with_label("in this product"))?;
                let t = Instant::now();
                let r = kernels::matmul(&ma, &mb);
                self.record("%*%", t);
                Value::matrix(r)
            }
            ExprKind::Call(func, args) => {
                let mut outs = self.call_function(*func, args, span)?;
                if outs.is_empty() {
                    return Err(SpannedError::new(span, "the function has no output"));
                }
                outs.swap_remove(0)
            }
            ExprKind::Builtin(b, args) => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                let spans: Vec<Span> = args.iter().map(|a| a.span).collect();
                let t = Instant::now();
                let mut ctx = builtins::Ctx {
                    name: b.name,
                    span,
                    spans: &spans,
                    rand_calls: &mut self.rand_calls,
                    epoch: self.epoch,
                };
                let v = builtins::eval(b, &mut ctx, &vals)?;
                self.record(b.name, t);
                v
            }
            ExprKind::Index { base, rows, cols } => {
                let m = self.matrix(base)?;
                let r = self.range(rows, m.rows(), "row")?;
                let c = self.range(cols, m.cols(), "column")?;
                let t = Instant::now();
                let out = kernels::slice(&m, r, c);
                self.record("rightIndex", t);
                Value::matrix(out)
            }
        })
    }

    /// A 1-based inclusive selection as a 0-based half-open range, bounds-checked.
    fn range(&mut self, r: &Range, n: usize, what: &str) -> Res<std::ops::Range<usize>> {
        let mut pos = |e: &Expr| -> Res<usize> {
            let v = self.scalar(e)?.as_f64();
            if v < 1.0 || v > n as f64 || v.fract() != 0.0 {
                return Err(SpannedError::new(
                    e.span,
                    format!("{what} index {v} out of bounds 1..{n}"),
                ));
            }
            Ok(v as usize)
        };
        Ok(match r {
            Range::All => 0..n,
            Range::At(e) => {
                let i = pos(e)?;
                i - 1..i
            }
            Range::Span(a, b) => {
                let (i, j) = (pos(a)?, pos(b)?);
                if j < i {
                    return Err(SpannedError::new(
                        a.span.to(b.span),
                        format!("empty {what} range {i}:{j}"),
                    ));
                }
                i - 1..j
            }
        })
    }

    /// Runs function `func` on the values of `args`; returns its outputs.
    fn call_function(&mut self, func: usize, args: &[Expr], span: Span) -> Res<Vec<Value>> {
        let f = self.functions[func].clone();
        let mut frame = HashMap::with_capacity(f.params.len());
        for (p, a) in f.params.iter().zip(args) {
            frame.insert(p.clone(), self.eval(a)?);
        }
        if self.depth >= MAX_CALL_DEPTH {
            return Err(SpannedError::new(
                span,
                format!("more than {MAX_CALL_DEPTH} nested function calls"),
            ));
        }
        let saved = std::mem::replace(&mut self.vars, frame);
        self.depth += 1;
        let r = self.blocks(&f.body);
        self.depth -= 1;
        let mut frame = std::mem::replace(&mut self.vars, saved);
        r?;
        f.outputs
            .iter()
            .map(|o| {
                frame.remove(o).ok_or_else(|| {
                    SpannedError::new(span, format!("output `{o}` of {} is not assigned", f.name))
                        .with_note(format!(
                            "`{}` is defined at {}",
                            f.name,
                            crate::diagnostics::describe_span(f.span)
                        ))
                })
            })
            .collect()
    }

    fn binary(&mut self, span: Span, op: BinOp, a: Value, b: Value) -> Res<Value> {
        if matches!(
            (&a, &b),
            (Value::Str(_), Value::Str(_) | Value::Scalar(_)) | (Value::Scalar(_), Value::Str(_))
        ) {
            let (x, y) = (a.to_string(), b.to_string());
            return Ok(Value::Scalar(Scalar::Bool(
                op.apply(cmp_code(&x, &y), 0.0) != 0.0,
            )));
        }
        if let (Value::Matrix(x), Value::Matrix(y)) = (&a, &b) {
            shape::elementwise(op.symbol(), dims(x), dims(y))
                .map_err(|m| SpannedError::new(span, m).with_label("in this operation"))?;
        }
        let t = Instant::now();
        let r = builtins::binary(op, &a, &b);
        if matches!(r, Value::Matrix(_)) {
            self.record(op.symbol(), t);
        }
        Ok(r)
    }
}

/// Nested calls allowed before a run stops (deep recursion would overflow the stack).
const MAX_CALL_DEPTH: usize = 2000;

/// The order of two strings as -1, 0 or 1, so a comparison operator applies to it against 0.
fn cmp_code(x: &str, y: &str) -> f64 {
    match x.cmp(y) {
        std::cmp::Ordering::Less => -1.0,
        std::cmp::Ordering::Equal => 0.0,
        std::cmp::Ordering::Greater => 1.0,
    }
}

/// `m[r, c] = v`: a scalar fills the selection, a matrix must have its shape.
fn left_index(
    m: &mut Matrix,
    r: std::ops::Range<usize>,
    c: std::ops::Range<usize>,
    v: &Value,
    span: Span,
) -> Res<()> {
    use spores_runtime::kernels::assign::{assign, Source};
    let src = match v {
        Value::Scalar(s) => Source::Scalar(s.as_f64()),
        Value::Matrix(x) => {
            if x.shape() != (r.len(), c.len()) {
                return Err(SpannedError::new(
                    span,
                    format!(
                        "dimension mismatch in left indexing: a {}x{} selection and a {}x{} matrix",
                        r.len(),
                        c.len(),
                        x.rows(),
                        x.cols()
                    ),
                ));
            }
            Source::Matrix(x)
        }
        Value::Str(_) => {
            return Err(SpannedError::new(
                span,
                "a string cannot be stored in a matrix",
            ))
        }
    };
    assign(m, r, c, src);
    Ok(())
}

fn is_transpose(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Builtin(b, _) if b.name == "t")
}

/// Non-zeros as the planner sees them: exact for CSR (free) and for vectors (cheap); a dense
/// matrix with several columns is at least 40% dense by the storage rule and counts as full,
/// so statements do not rescan their dense inputs every time they run.
fn plan_nnz(m: &Matrix) -> usize {
    plan_nnz_of(m)
}

/// Whether every stored value is finite (the rules of sums of products need finite
/// factors).
fn all_finite(m: &Matrix) -> bool {
    m.all_finite()
}

fn plan_nnz_of(m: &Matrix) -> usize {
    match m {
        Matrix::Dense(d) if d.ncols() > 1 => d.len(),
        _ => m.nnz(),
    }
}

/// Whether a statement is worth compiling: a double or matrix result computed with at least
/// one matrix operation.
fn worth_optimizing(e: &Expr) -> bool {
    let typed = matches!(
        e.ty,
        hir::Ty::Matrix(..) | hir::Ty::Scalar(hir::ScalarTy::Double)
    );
    let mut matrix_op = false;
    crate::check::visit(e, &mut |x| {
        matrix_op |= match &x.kind {
            ExprKind::MatMul(..) => true,
            ExprKind::Builtin(b, _) => b.plan_op,
            ExprKind::Binary(_, a, b) => a.ty.is_matrix() || b.ty.is_matrix(),
            _ => false,
        }
    });
    typed && matrix_op
}

/// Largest difference relative to the largest magnitude (max norms); NaN and infinities must
/// match exactly.
fn rel_diff(a: &Value, b: &Value) -> f64 {
    let cells = |v: &Value| -> Vec<f64> {
        match v {
            Value::Scalar(s) => vec![s.as_f64()],
            Value::Matrix(m) => m.to_dense().into_raw_vec_and_offset().0,
            Value::Str(_) => vec![],
        }
    };
    let (x, y) = (cells(a), cells(b));
    if x.len() != y.len() {
        return f64::INFINITY;
    }
    let mut scale: f64 = 0.0;
    let mut diff: f64 = 0.0;
    for (&p, &q) in x.iter().zip(&y) {
        if p.is_nan() || q.is_nan() || p.is_infinite() || q.is_infinite() {
            if !(p.is_nan() && q.is_nan()) && p != q {
                return f64::INFINITY;
            }
            continue;
        }
        scale = scale.max(p.abs()).max(q.abs());
        diff = diff.max((p - q).abs());
    }
    if diff == 0.0 {
        0.0
    } else {
        diff / scale
    }
}

fn dims(m: &Matrix) -> shape::Shape {
    (Some(m.rows()), Some(m.cols()))
}

/// Appends a compiled run of statements to the `--explain` log.
fn log_plan(
    log: &mut String,
    block: usize,
    texts: &[String],
    inputs: &[(String, crate::optimize::Input)],
    c: &crate::optimize::Compiled,
    plan: Option<&crate::optimize::Plan>,
    outputs: &[(String, hir::Ty, egg::Id, &Expr)],
) {
    use crate::optimize::Input;
    use std::fmt::Write as _;
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
        texts.join("; "),
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
            for ((var, ..), tree) in outputs.iter().zip(&p.explain) {
                if outputs.len() > 1 {
                    let _ = writeln!(log, "  {var} =");
                }
                log.push_str(tree);
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
