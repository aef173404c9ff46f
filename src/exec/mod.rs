//! Stage 7, execute: runs a checked program block by block on the runtime's kernels.
//!
//! Each basic block is handed to [`Executor::run_basic_block`], the seam where the optimizer
//! plugs in: today it evaluates the block's statements as written. Every shape the checker
//! could not prove is checked here with the same rules ([`crate::check::shape`]), so a
//! mismatch is a diagnostic at the offending expression, never a panic in a kernel.

mod stats;
mod value;

pub use stats::Stats;
pub use value::{scalar_to_string, Value};

use crate::check::hir::{self, Block, Expr, ExprKind, Range, Scalar, Stmt};
use crate::check::{scalar, shape};
use crate::error::SpannedError;
use crate::syntax::ast::Span;
use spores_runtime::kernels::{self, Operand, RandSpec};
use spores_runtime::ops::{AggDir, AggOp, BinOp, UnaryOp};
use spores_runtime::{io, matrix, Matrix};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
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
                    body,
                } => {
                    let a = self.scalar(from)?.as_f64();
                    let b = self.scalar(to)?.as_f64();
                    if !a.is_finite() || !b.is_finite() {
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
                    let step = if b >= a { 1.0 } else { -1.0 };
                    let n = (b - a).abs().floor() as u64 + 1;
                    let int = a.fract() == 0.0;
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
                    },
                    Val::Matrix(m.clone()),
                ),
                Some(Value::Scalar(s)) => (
                    Input::Scalar(dims.contains(&n).then(|| s.as_f64())),
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
            } => {
                let v = self.eval(value)?;
                let p = self.string(path)?;
                let fmt = match format {
                    Some(f) => self.string(f)?,
                    None if p.ends_with(".csv") => "csv".into(),
                    None => "mm".into(),
                };
                let t = Instant::now();
                let r = match (&v, fmt.as_str()) {
                    (Value::Matrix(m), "mm" | "text") => io::write_matrix_market(Path::new(&p), m),
                    (Value::Matrix(m), "csv") => io::write_csv(Path::new(&p), m),
                    (Value::Matrix(_), f) => {
                        return Err(SpannedError::new(
                            format.as_ref().map_or(path.span, |f| f.span),
                            format!("unknown write format \"{f}\""),
                        )
                        .with_note("expected \"mm\", \"text\" or \"csv\""))
                    }
                    (other, _) => {
                        std::fs::write(&p, format!("{other}\n")).map_err(|source| io::IoError::Os {
                            action: "write",
                            path: p.clone(),
                            source,
                        })
                    }
                };
                r.map_err(|e| SpannedError::new(path.span, e.to_string()))?;
                self.record("write", t);
            }
            Stmt::Stop { message } => {
                let m = self.eval(message)?;
                return Err(SpannedError::new(message.span, format!("stop: {m}")));
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

    /// A size argument: a non-negative integer.
    fn size(&mut self, e: &Expr, what: &str) -> Res<usize> {
        let v = self.scalar(e)?.as_f64();
        if v < 0.0 || v.fract() != 0.0 || !v.is_finite() {
            return Err(SpannedError::new(
                e.span,
                format!("{what} must be a non-negative integer, found {v}"),
            ));
        }
        Ok(v as usize)
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
            ExprKind::Unary(op, x) => match self.eval(x)? {
                Value::Scalar(s) => Value::Scalar(scalar::unary(*op, s)),
                Value::Matrix(m) => {
                    let t = Instant::now();
                    let r = kernels::unary(*op, &m);
                    self.record(unary_name(*op), t);
                    Value::matrix(r)
                }
                Value::Str(_) => unreachable!("checker rejects strings in arithmetic"),
            },
            ExprKind::Binary(op, a, b) => {
                let (va, vb) = (self.eval(a)?, self.eval(b)?);
                self.binary(span, *op, va, vb)?
            }
            ExprKind::Concat(a, b) => {
                let (va, vb) = (self.eval(a)?, self.eval(b)?);
                Value::Str(format!("{va}{vb}"))
            }
            // t(A) %*% B runs without forming t(A) (a kernel choice, not a rewrite)
            ExprKind::MatMul(a, b) if matches!(&a.kind, ExprKind::Transpose(_)) => {
                let ExprKind::Transpose(inner) = &a.kind else {
                    unreachable!("matched above")
                };
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
            ExprKind::Transpose(x) => {
                let m = self.matrix(x)?;
                let t = Instant::now();
                let r = kernels::transpose(&m);
                self.record("t", t);
                Value::matrix(r)
            }
            ExprKind::Agg(op, dir, x) => {
                let m = self.matrix(x)?;
                let t = Instant::now();
                let r = match dir {
                    AggDir::All => Value::double(kernels::aggregate_all(*op, &m)),
                    _ => Value::matrix(kernels::aggregate_dir(*op, *dir, &m)),
                };
                self.record(agg_name(*op, *dir), t);
                r
            }
            ExprKind::Nrow(x) => Value::Scalar(Scalar::Int(self.matrix(x)?.rows() as i64)),
            ExprKind::Ncol(x) => Value::Scalar(Scalar::Int(self.matrix(x)?.cols() as i64)),
            ExprKind::Length(x) => Value::Scalar(Scalar::Int(self.matrix(x)?.cells() as i64)),
            ExprKind::AsScalar(x) => {
                let m = self.matrix(x)?;
                shape::as_scalar(dims(&m)).map_err(|msg| SpannedError::new(span, msg))?;
                Value::double(m.get(0, 0))
            }
            ExprKind::AsMatrix(x) => {
                let s = self.scalar(x)?;
                Value::matrix(Matrix::filled(1, 1, s.as_f64()))
            }
            ExprKind::AsDouble(x) => Value::double(self.scalar(x)?.as_f64()),
            ExprKind::AsInteger(x) => Value::Scalar(Scalar::Int(self.scalar(x)?.as_f64() as i64)),
            ExprKind::ToString(x) => {
                let v = self.eval(x)?;
                Value::Str(match v {
                    Value::Matrix(m) => spores_runtime::format::matrix_to_string(&m),
                    v => v.to_string(),
                })
            }
            ExprKind::IfElse(c, a, b) => {
                let (vc, va, vb) = (self.eval(c)?, self.eval(a)?, self.eval(b)?);
                match (&vc, &va, &vb) {
                    (Value::Scalar(c), Value::Scalar(_), Value::Scalar(_)) => {
                        if c.as_f64() != 0.0 {
                            va
                        } else {
                            vb
                        }
                    }
                    _ => {
                        let (oc, oa, ob) = (operand(&vc), operand(&va), operand(&vb));
                        let ab = shape::elementwise("ifelse", op_dims(&oa), op_dims(&ob))
                            .map_err(|m| SpannedError::new(span, m))?;
                        shape::elementwise("ifelse", op_dims(&oc), ab)
                            .map_err(|m| SpannedError::new(span, m))?;
                        let t = Instant::now();
                        let r = kernels::ifelse(oc, oa, ob);
                        self.record("ifelse", t);
                        Value::matrix(r)
                    }
                }
            }
            ExprKind::Fill { value, rows, cols } => {
                let v = self.scalar(value)?.as_f64();
                let r = self.size(rows, "rows of matrix")?;
                let c = self.size(cols, "cols of matrix")?;
                // a matrix of zeros is stored sparse; anything else needs every cell
                check_alloc(span, r, c, if v == 0.0 { 0.0 } else { 1.0 })?;
                let t = Instant::now();
                let m = kernels::constant(r, c, v);
                self.record("matrix", t);
                Value::matrix(m)
            }
            ExprKind::Reshape { value, rows, cols } => {
                let m = self.matrix(value)?;
                let r = self.size(rows, "rows of matrix")?;
                let c = self.size(cols, "cols of matrix")?;
                shape::reshape(dims(&m), Some(r), Some(c))
                    .map_err(|msg| SpannedError::new(span, msg))?;
                let d = m.to_dense().into_raw_vec_and_offset().0;
                let arr = ndarray_from(r, c, d);
                Value::matrix(Matrix::from_dense(arr))
            }
            ExprKind::Rand(a) => {
                let rows = self.size(&a.rows, "rows of rand")?;
                let cols = self.size(&a.cols, "cols of rand")?;
                let min = self.scalar(&a.min)?.as_f64();
                let max = self.scalar(&a.max)?.as_f64();
                let sparsity = self.scalar(&a.sparsity)?.as_f64();
                if !(0.0..=1.0).contains(&sparsity) {
                    return Err(SpannedError::new(
                        a.sparsity.span,
                        format!("sparsity of rand must be between 0 and 1, found {sparsity}"),
                    ));
                }
                if min > max || !min.is_finite() || !max.is_finite() {
                    return Err(SpannedError::new(
                        span,
                        format!("rand needs finite min <= max, found min {min} and max {max}"),
                    ));
                }
                self.rand_calls += 1;
                let seed = match &a.seed {
                    Some(s) => self.scalar(s)?.as_f64() as i64 as u64,
                    // no seed: a fixed, per-call-site sequence, so runs are reproducible
                    None => splitmix(((span.start as u64) << 32) ^ self.rand_calls),
                };
                check_alloc(span, rows, cols, sparsity)?;
                let spec = RandSpec {
                    rows,
                    cols,
                    min,
                    max,
                    sparsity,
                    seed,
                };
                let t = Instant::now();
                let m = kernels::rand_matrix(&spec);
                self.record("rand", t);
                Value::matrix(m)
            }
            ExprKind::Read(p) => {
                let path = self.string(p)?;
                let t = Instant::now();
                let m = io::read_matrix_market(Path::new(&path))
                    .map_err(|e| SpannedError::new(span, format!("cannot read matrix: {e}")))?;
                self.record("read", t);
                Value::matrix(m)
            }
            ExprKind::Time => Value::Scalar(Scalar::Int(self.epoch.elapsed().as_nanos() as i64)),
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

    fn binary(&mut self, span: Span, op: BinOp, a: Value, b: Value) -> Res<Value> {
        if let (Value::Scalar(x), Value::Scalar(y)) = (&a, &b) {
            return Ok(Value::Scalar(scalar::binary(op, *x, *y)));
        }
        let (oa, ob) = (operand(&a), operand(&b));
        if let (Operand::Matrix(x), Operand::Matrix(y)) = (oa, ob) {
            shape::elementwise(op.symbol(), dims(x), dims(y))
                .map_err(|m| SpannedError::new(span, m).with_label("in this operation"))?;
        }
        let t = Instant::now();
        let r = kernels::binary(op, oa, ob);
        self.record(binary_name(op), t);
        Ok(Value::matrix(r))
    }
}

/// The most memory a generated matrix may take (64 GiB): beyond that, a diagnostic instead
/// of an allocation failure that would abort the process.
const MAX_MATRIX_BYTES: f64 = (1u64 << 36) as f64;

/// Rejects a generated matrix whose cells overflow or whose storage would not fit.
fn check_alloc(span: Span, rows: usize, cols: usize, density: f64) -> Res<()> {
    let cells = rows as f64 * cols as f64;
    // dense storage takes 8 bytes a cell; CSR about 16 bytes a non-zero plus the row pointers
    let bytes = if density >= matrix::SPARSE_THRESHOLD || cols <= 1 {
        8.0 * cells
    } else {
        16.0 * density * cells + 8.0 * rows as f64
    };
    if rows.checked_mul(cols).is_none() || bytes > MAX_MATRIX_BYTES {
        return Err(SpannedError::new(
            span,
            format!(
                "a {rows}x{cols} matrix is too large (about {:.1e} bytes)",
                bytes
            ),
        )
        .with_note("the runtime keeps matrices in memory; the limit is 64 GiB"));
    }
    Ok(())
}

/// Non-zeros as the planner sees them: exact for CSR (free) and for vectors (cheap); a dense
/// matrix with several columns is at least 40% dense by the storage rule and counts as full,
/// so statements do not rescan their dense inputs every time they run.
fn plan_nnz(m: &Matrix) -> usize {
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
            ExprKind::MatMul(..) | ExprKind::Transpose(_) | ExprKind::Agg(..) => true,
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

fn operand(v: &Value) -> Operand<'_> {
    match v {
        Value::Scalar(s) => Operand::Scalar(s.as_f64()),
        Value::Matrix(m) => Operand::Matrix(m),
        Value::Str(_) => unreachable!("checker rejects strings in arithmetic"),
    }
}

fn op_dims(o: &Operand<'_>) -> shape::Shape {
    match o {
        Operand::Scalar(_) => (Some(1), Some(1)),
        Operand::Matrix(m) => dims(m),
    }
}

fn dims(m: &Matrix) -> shape::Shape {
    (Some(m.rows()), Some(m.cols()))
}

fn ndarray_from(r: usize, c: usize, d: Vec<f64>) -> spores_runtime::matrix::Dense {
    spores_runtime::matrix::Dense::from_shape_vec((r, c), d).expect("reshape keeps the cell count")
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn binary_name(op: BinOp) -> &'static str {
    op.symbol()
}

fn unary_name(op: UnaryOp) -> &'static str {
    op.name()
}

fn agg_name(op: AggOp, dir: AggDir) -> &'static str {
    match (op, dir) {
        (AggOp::Sum, AggDir::All) => "sum",
        (AggOp::Sum, AggDir::Row) => "rowSums",
        (AggOp::Sum, AggDir::Col) => "colSums",
        (AggOp::Mean, AggDir::All) => "mean",
        (AggOp::Mean, AggDir::Row) => "rowMeans",
        (AggOp::Mean, AggDir::Col) => "colMeans",
        (AggOp::Min, AggDir::All) => "min",
        (AggOp::Min, AggDir::Row) => "rowMins",
        (AggOp::Min, AggDir::Col) => "colMins",
        (AggOp::Max, AggDir::All) => "max",
        (AggOp::Max, AggDir::Row) => "rowMaxs",
        (AggOp::Max, AggDir::Col) => "colMaxs",
    }
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
            Input::Matrix { rows, cols, nnz } => format!("{n} {rows}x{cols} nnz {nnz}"),
            Input::Scalar(None) => format!("{n} scalar"),
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
