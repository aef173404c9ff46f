//! Stage 7, execute: runs a checked program block by block on the runtime's kernels.
//!
//! Each basic block is handed to [`Executor::run_basic_block`]: with an optimizer, each
//! segment of it (a run of assignments, [`crate::optimize::segment`]) is planned with the
//! actual shapes and non-zeros of its inputs and runs through its plan ([`crate::raise`]); a
//! statement outside a segment, a segment without a cheaper plan's inputs, and a plan that
//! cannot run fall back to the statements as written (`run_as_written`). With `--verify`,
//! the statements also run as written and must agree. Every shape the checker could not
//! prove is checked here with the same rules ([`crate::check::shape`]), so a mismatch is a
//! diagnostic at the offending expression, never a panic in a kernel.

pub(crate) mod files;
mod live;
mod masked;
pub mod parfor;
mod stats;
mod value;

pub use stats::Stats;
pub use value::{scalar_to_string, List, Value};

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
    /// where each chosen plan is written as Graphviz DOT (`--dot`)
    dot: Option<std::path::PathBuf>,
    /// the largest relative difference between optimized and written statements (`--verify`)
    pub max_rel_diff: f64,
    /// while `--verify` runs statements as written: the largest finite magnitude of any
    /// value computed (the scale the rounding of a reordered plan is measured against)
    magnitude: Option<f64>,
    /// statements run through an optimized plan
    pub optimized_runs: u64,
    /// the program's variable reads (set by [`Executor::run`]): segments skip assignments
    /// nothing reads
    reads: Option<live::Reads>,
    /// the statements that never run (set by [`Executor::run`])
    dead: live::Dead,
    /// the last large slices taken ([`SliceMemo`])
    slices: SliceMemo,
    /// the thread counts SystemDS's parfor optimizer set (set up by [`Executor::run`])
    parfor: parfor::Threads,
    /// how many `parfor` bodies are running
    parfor_depth: usize,
    /// while a run of statements runs as written after the planner evaluated its barriers:
    /// each barrier's value, by the address of its expression, so that it is not computed a
    /// second time (twice the work, and an unseeded `rand` would draw again)
    barrier_values: HashMap<usize, Value>,
}

/// The last few large matrix slices `X[rows, cols]` (at least [`SLICE_MEMO_CELLS`] cells): the
/// matrix sliced, held weakly, the bounds and the slice. A slice of the same matrix value by
/// the same bounds is the same value, so it is shared instead of copied again (`P[, 1:K]` in
/// a loop over an unchanged `P`). A matrix is only changed in place through `Arc::make_mut`,
/// which, with a weak reference outstanding, moves it to a new allocation: the entry then no
/// longer upgrades to it, and nothing stale is returned.
#[derive(Default)]
struct SliceMemo(Vec<SliceEntry>);

/// One entry of [`SliceMemo`].
struct SliceEntry {
    of: std::sync::Weak<Matrix>,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    slice: Arc<Matrix>,
}

/// Cells from which a slice is kept in [`SliceMemo`] (smaller ones cost little to copy).
const SLICE_MEMO_CELLS: usize = 1 << 16;

/// Slices [`SliceMemo`] keeps (the oldest is dropped first).
const SLICE_MEMO_LEN: usize = 4;

impl SliceMemo {
    /// `m[rows, cols]`: the kept slice when one of the same value and bounds is kept, else a
    /// copy (kept when large).
    fn slice(
        &mut self,
        m: &Arc<Matrix>,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
    ) -> Arc<Matrix> {
        if rows.len() * cols.len() < SLICE_MEMO_CELLS {
            return Arc::new(kernels::slice(m, rows, cols));
        }
        self.0.retain(|e| e.of.strong_count() > 0);
        let same = |e: &SliceEntry| {
            e.rows == rows && e.cols == cols && e.of.upgrade().is_some_and(|o| Arc::ptr_eq(&o, m))
        };
        if let Some(e) = self.0.iter().find(|e| same(e)) {
            return e.slice.clone();
        }
        let slice = Arc::new(kernels::slice(m, rows.clone(), cols.clone()));
        if self.0.len() >= SLICE_MEMO_LEN {
            self.0.remove(0);
        }
        self.0.push(SliceEntry {
            of: Arc::downgrade(m),
            rows,
            cols,
            slice: slice.clone(),
        });
        slice
    }
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
            dot: None,
            max_rel_diff: 0.0,
            magnitude: None,
            optimized_runs: 0,
            reads: None,
            dead: live::Dead::default(),
            slices: SliceMemo::default(),
            parfor: parfor::Threads::default(),
            parfor_depth: 0,
            barrier_values: HashMap::new(),
        }
    }

    /// Optimizes statements at run time; with `verify`, also runs them as written and fails
    /// when they differ by more than 1e-9 relative to the largest magnitude the statements
    /// as written computed (their inputs, intermediates and results); with `explain`, keeps
    /// the chosen plans.
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

    /// Writes each plan chosen at run time into `dir` as Graphviz DOT
    /// (`block<B>-<var>.dot`, see [`crate::explain::dot`]).
    pub fn with_dot(mut self, dir: Option<std::path::PathBuf>) -> Self {
        self.dot = dir;
        self
    }

    /// Runs a whole program; returns the statistics if they were requested.
    pub fn run(&mut self, prog: &hir::Program) -> Res<Option<Stats>> {
        let start = Instant::now();
        self.functions = std::rc::Rc::from(prog.functions.clone());
        self.reads = Some(live::Reads::of_program(prog));
        self.dead = live::Dead::of_program(&prog.blocks, &self.functions);
        self.parfor = parfor::Threads::of_program(&prog.blocks, &self.functions);
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
                Block::If {
                    cond, then, els, ..
                } => {
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
                    parfor,
                } => {
                    let a = self.scalar(from)?.as_f64();
                    let b = self.scalar(to)?.as_f64();
                    let step_v = match step {
                        Some(e) => Some(self.scalar(e)?.as_f64()),
                        None => None,
                    };
                    // a NaN bound fails every loop test: no iteration, as in SystemDS
                    if a.is_nan() || b.is_nan() {
                        continue;
                    }
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
                    // a parfor body's operations run with the thread count SystemDS's
                    // parfor optimizer gives them (see [`parfor`])
                    let threads = match parfor {
                        Some(p) => {
                            let par = match &p.par {
                                Some(e) => Some(self.scalar(e)?.as_f64()),
                                None => None,
                            };
                            let k = if self.parfor_depth == 0 {
                                kernels::systemds_machine_threads()
                            } else {
                                kernels::systemds_threads()
                            };
                            self.parfor.enter(body, p, n, k, par)
                        }
                        None => None,
                    };
                    let saved = threads.map(|k| kernels::set_systemds_threads(Some(k)));
                    self.parfor_depth += usize::from(parfor.is_some());
                    let r = (0..n).try_for_each(|k| {
                        let v = a + step * k as f64;
                        let v = if int {
                            Scalar::Int(v as i64)
                        } else {
                            Scalar::Double(v)
                        };
                        self.vars.insert(var.clone(), Value::Scalar(v));
                        self.blocks(body)
                    });
                    self.parfor_depth -= usize::from(parfor.is_some());
                    if let Some(s) = saved {
                        kernels::set_systemds_threads(s);
                    }
                    r?;
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
            if self.dead.contains(&bb.stmts[i]) {
                // SystemDS never runs it (see [`live::Dead`])
                i += 1;
                continue;
            }
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

    /// A builtin call as written: its arguments, then its row's evaluation.
    fn eval_builtin(
        &mut self,
        b: &'static builtins::Builtin,
        args: &[Expr],
        span: Span,
    ) -> Res<Value> {
        let mut vals = Vec::with_capacity(args.len());
        for a in args {
            vals.push(self.eval(a)?);
        }
        let spans: Vec<Span> = args.iter().map(|a| a.span).collect();
        let t = Instant::now();
        let mut ctx = self.builtin_ctx(b.name, span, &spans);
        let v = builtins::eval(b, &mut ctx, &vals)?;
        self.record(b.name, t);
        Ok(v)
    }

    /// Plans and runs the segment at the start of `stmts` (see [`crate::optimize::segment`]).
    /// Returns how many statements ran (0: none, run the first as written).
    fn run_segment(&mut self, block: usize, start: usize, stmts: &[Stmt]) -> Res<usize> {
        use crate::optimize::Planned;
        use crate::raise::Val;

        // a statement that never runs ends the segment (it reads nothing the plan computes)
        let end = stmts
            .iter()
            .position(|s| self.dead.contains(s))
            .unwrap_or(stmts.len());
        let Some(mut seg) = crate::optimize::segment::collect(&stmts[..end]) else {
            return Ok(0);
        };
        let count = seg.len();
        // outputs nothing reads after the segment are not computed (unless that is all)
        if let Some(reads) = &self.reads {
            let live: Vec<bool> = seg
                .outputs
                .iter()
                .map(|o| !reads.dead_after(&o.var, &seg.statements))
                .collect();
            if live.contains(&true) {
                let mut keep = live.into_iter();
                seg.outputs.retain(|_| keep.next().unwrap_or(true));
            }
        }
        // barriers read only variables from before the run: evaluate them now, as written
        let mut barrier_vals = HashMap::new();
        for (name, e) in &seg.barriers {
            barrier_vals.insert(name.clone(), self.eval(e)?);
        }
        let vars = &self.vars;
        let Some((inputs, vals)) = seg.inputs(|n| barrier_vals.get(n).or_else(|| vars.get(n)))
        else {
            return Ok(0);
        };

        let roots = seg.roots();
        let opt = self.optimizer.as_mut().expect("checked by the caller");
        let before = opt.compiled.len();
        let reused = opt.reused;
        let cold_runs = opt.cold_runs;
        let planned = opt.plan(block, start, &seg.term, &roots, &inputs);
        let cold = opt.cold_runs > cold_runs;
        if cold {
            if let Some(s) = &mut self.stats {
                s.record_cold();
            }
        }
        let plan = match &planned {
            Planned::Plan(p) => Some(p.clone()),
            _ => None,
        };
        if opt.reused > reused {
            if let Some(s) = &mut self.stats {
                s.record_reuse();
            }
            if let Some(log) = &mut self.explain {
                crate::explain::log_reused(log, block, &seg, plan.as_deref());
            }
        }
        if opt.compiled.len() > before {
            let c = opt.compiled.last().expect("just compiled").clone();
            if let Some(s) = &mut self.stats {
                s.record_compile(block, c.saturation, c.extraction);
            }
            match (&mut self.explain, &self.dot) {
                (Some(log), dot) => {
                    let dot = dot.as_deref();
                    crate::explain::log_plan(log, block, &seg, &inputs, &c, plan.as_deref(), dot);
                }
                (None, Some(dir)) => {
                    // the pictures without the log: the log's write errors are dropped too
                    let mut log = String::new();
                    crate::explain::log_plan(
                        &mut log,
                        block,
                        &seg,
                        &inputs,
                        &c,
                        plan.as_deref(),
                        Some(dir),
                    );
                }
                (None, None) => {}
            }
        }
        // unplanned, or cold under the compile budget: the statements as written, as
        // `--no-opt` runs them, with the barriers' values already computed
        if matches!(planned, Planned::Unplanned) || cold {
            let pre = seg
                .barriers
                .iter()
                .filter_map(|(n, e)| {
                    let v = barrier_vals.remove(n)?;
                    Some((*e as *const Expr as usize, v))
                })
                .collect();
            let outer = std::mem::replace(&mut self.barrier_values, pre);
            let r = self.run_as_written(&stmts[..count]);
            self.barrier_values = outer;
            return r;
        }
        // without a cheaper plan, the lowered statements run as written (their barriers are
        // already evaluated; running the statements again would repeat them)
        let (expr, expr_roots, unordered) = match &plan {
            Some(p) => (&p.expr, &p.roots, &p.unordered[..]),
            None => (&seg.term, &roots, &[][..]),
        };
        let mut stats = self.stats.take();
        let slot = stats.as_mut().map(|s| {
            let estimates: Vec<f64> = plan
                .as_ref()
                .map(|p| p.notes.iter().map(|n| n.cost).collect())
                .unwrap_or_default();
            let identity = plan.as_ref().map_or(0, |p| Arc::as_ptr(p) as usize);
            s.plan_slot((block, start, identity), || segment_label(&seg), &estimates)
        });
        let mut trace = |step: &crate::raise::Step| {
            if let (Some(s), Some(slot)) = (stats.as_mut(), slot) {
                s.record(step.op, step.time);
                s.record_step(slot, step);
            }
        };
        let traced: Option<&mut dyn FnMut(&crate::raise::Step)> = match slot {
            Some(_) => Some(&mut trace),
            None => None,
        };
        let results = crate::raise::eval_plan_traced(expr, expr_roots, unordered, &vals, traced);
        if let (Some(s), Some(slot), true) = (stats.as_mut(), slot, results.is_ok()) {
            s.end_run(slot);
        }
        self.stats = stats;
        let Ok(results) = results else {
            // the plan cannot run (an internal mismatch): run the statements as written
            return self.run_as_written(&stmts[..count]);
        };
        let mut values = Vec::with_capacity(seg.outputs.len());
        for (r, out) in results.into_iter().zip(&seg.outputs) {
            let v = match (r, out.ty) {
                (Val::Matrix(m), hir::Ty::Matrix(..)) => Value::Matrix(m),
                (Val::Scalar(x), hir::Ty::Scalar(_)) => Value::Scalar(Scalar::Double(x)),
                (Val::Matrix(m), hir::Ty::Scalar(_)) if m.shape() == (1, 1) => {
                    Value::Scalar(Scalar::Double(m.get(0, 0)))
                }
                _ => return self.run_as_written(&stmts[..count]),
            };
            values.push(v);
        }
        if let (true, Some(plan)) = (self.verify, &plan) {
            // run the statements as written, then compare each output; a plan reorders
            // sums and products, so its rounding is measured against the largest value the
            // statements computed on the way (`g = a + b - c` with a, c ~ 1e2 and g ~ 1e-12
            // differs in every digit of g while both are right to 1e-16 of a and c)
            self.magnitude = Some(0.0);
            let written = self.run_as_written(&stmts[..count]);
            let scale = self.magnitude.take().unwrap_or(0.0);
            written?;
            for (v, out) in values.iter().zip(&seg.outputs) {
                let written = self.vars.get(&out.var).expect("assigned just above");
                let d = rel_diff(v, written, scale);
                self.max_rel_diff = self.max_rel_diff.max(d);
                if d > 1e-9 {
                    return Err(SpannedError::new(
                        out.value.span,
                        format!("--verify: the optimized plan differs from the statement as written by {d:.3e} (relative)"),
                    )
                    .with_note(format!("plan: {}", plan.expr)));
                }
            }
        }
        if plan.is_some() {
            self.optimized_runs += count as u64;
        }
        for (v, out) in values.into_iter().zip(&seg.outputs) {
            self.vars.insert(out.var.clone(), v);
        }
        Ok(count)
    }

    /// The fallback of a segment: runs its statements as written; returns how many ran.
    fn run_as_written(&mut self, stmts: &[Stmt]) -> Res<usize> {
        for s in stmts {
            self.stmt(s)?;
        }
        Ok(stmts.len())
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
                match &v {
                    // SystemDS prints a matrix's toString, which ends in a newline, then a
                    // newline: an empty line follows the matrix
                    Value::Matrix(m) => {
                        writeln!(self.out, "{}", spores_runtime::format::matrix_to_string(m))
                    }
                    _ => writeln!(self.out, "{v}"),
                }
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
                let mut ctx = self.builtin_ctx(row.name, *span, &spans);
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
                if let Some(Value::List(l)) = self.vars.get(var) {
                    let mut l = l.clone();
                    let r = self.list_range(rows, &l)?;
                    let out = Arc::make_mut(&mut l);
                    match v {
                        // SystemDS: a list fills a range of the same length (with its names
                        // when it replaces the whole list)
                        Value::List(src) => {
                            if src.items.len() != r.len() {
                                return Err(SpannedError::new(
                                    *span,
                                    format!(
                                        "list left indexing: {} entries into a range of {}",
                                        src.items.len(),
                                        r.len()
                                    ),
                                ));
                            }
                            let whole = r.len() == out.items.len();
                            for (k, i) in r.enumerate() {
                                out.items[i] = src.items[k].clone();
                                if let (Some(n), Some(sn)) = (&mut out.names, &src.names) {
                                    n[i] = sn[k].clone();
                                }
                            }
                            if whole && src.names.is_some() {
                                out.names = src.names.clone();
                            }
                        }
                        v => {
                            if r.len() != 1 {
                                return Err(SpannedError::new(
                                    *span,
                                    "list left indexing: one value into a range of several",
                                ));
                            }
                            out.items[r.start] = v;
                        }
                    }
                    self.vars.insert(var.clone(), Value::List(l));
                    return Ok(());
                }
                // take the matrix out of the variable, so that an unshared one is updated in
                // place instead of copied
                let Some(Value::Matrix(m)) = self.vars.get(var) else {
                    return Err(SpannedError::new(
                        *span,
                        format!("`{var}` is not a matrix here"),
                    ));
                };
                // the bounds may read the matrix itself (`A[, 1:ncol(A) - 1] = ...`)
                let (nr, nc) = (m.rows(), m.cols());
                let r = self.range(rows, nr, "row")?;
                let c = self.range(cols, nc, "column")?;
                let Some(Value::Matrix(mut m)) = self.vars.remove(var) else {
                    unreachable!("a matrix above")
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

    /// The context a builtin row runs in: its name, the call's span, the arguments' spans, and
    /// this run's `rand` state.
    fn builtin_ctx<'c>(
        &'c mut self,
        name: &'static str,
        span: Span,
        spans: &'c [Span],
    ) -> builtins::Ctx<'c> {
        builtins::Ctx {
            name,
            span,
            spans,
            rand_calls: &mut self.rand_calls,
            epoch: self.epoch,
        }
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
            Value::List(_) => Err(SpannedError::new(e.span, "expected a number, found a list")),
        }
    }

    /// The variables `(X, w, v)` of an mmchain `a %*% b` (see [`Executor::eval`]): `t(X) %*%
    /// (X %*% v)`, `t(X) %*% (w * (X %*% v))`, `t(X) %*% (X %*% v - w)` (SystemDS's
    /// `XtXvy`: the flag is true) or `(t(X) %*% X) %*% v`, with X an `m x n` matrix, v
    /// `n x 1` and w `m x 1`, all defined; else `None`.
    fn mmchain_operands<'e>(
        &self,
        a: &'e Expr,
        b: &'e Expr,
    ) -> Option<(&'e str, Option<&'e str>, &'e str, bool)> {
        let mut minus = false;
        let (x, w, v) = if let Some(x) = transposed_var(a) {
            match &b.kind {
                ExprKind::Binary(BinOp::Mul, w, xv) => match (&w.kind, product_vars(xv)) {
                    (ExprKind::Var(w), Some((x2, v))) if x2 == x => (x, Some(w.as_str()), v),
                    _ => return None,
                },
                ExprKind::Binary(BinOp::Sub, xv, y) => match (product_vars(xv), &y.kind) {
                    (Some((x2, v)), ExprKind::Var(y)) if x2 == x => {
                        minus = true;
                        (x, Some(y.as_str()), v)
                    }
                    _ => return None,
                },
                _ => match product_vars(b) {
                    Some((x2, v)) if x2 == x => (x, None, v),
                    _ => return None,
                },
            }
        } else {
            let ExprKind::MatMul(ta, x2) = &a.kind else {
                return None;
            };
            let (ExprKind::Var(x2), ExprKind::Var(v)) = (&x2.kind, &b.kind) else {
                return None;
            };
            match transposed_var(ta) {
                Some(x) if x == x2 => (x, None, v.as_str()),
                _ => return None,
            }
        };
        let mat = |n: &str| var_matrix(&self.vars, n);
        let (xm, vm) = (mat(x)?, mat(v)?);
        let (m, n) = xm.shape();
        let w_ok = match w {
            Some(w) => mat(w).is_some_and(|wm| wm.shape() == (m, 1)),
            None => true,
        };
        (vm.shape() == (n, 1) && w_ok).then_some((x, w, v, minus))
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
        if !self.barrier_values.is_empty() {
            if let Some(v) = self.barrier_values.get(&(e as *const Expr as usize)) {
                return Ok(v.clone());
            }
        }
        let v = self.eval_node(e)?;
        if let Some(m) = self.magnitude.as_mut() {
            *m = m.max(max_finite_abs(&v));
        }
        Ok(v)
    }

    fn eval_node(&mut self, e: &Expr) -> Res<Value> {
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
            // M * F with F a cell-wise expression of products (`(X != 0) * (U %*% t(V) - X)`):
            // at M's stored entries only when M is sparse and F provably finite
            // (`masked`); F's operands are variables, so evaluating M first changes nothing
            ExprKind::Binary(BinOp::Mul, a, b) if masked::candidate(a, b).is_some() => {
                let mask_left = masked::candidate(a, b).expect("matched above");
                let (me, fe) = if mask_left { (a, b) } else { (b, a) };
                let vm = self.eval(me)?;
                if let Value::Matrix(mm) = &vm {
                    if let Matrix::Sparse(csr) = &**mm {
                        if let Some(tree) = masked::Tree::build(fe, &self.vars, mm.shape()) {
                            let t = Instant::now();
                            let verifying = self.magnitude.is_some();
                            let (r, seen) = tree.times_mask(csr, mask_left, verifying);
                            if let Some(m) = self.magnitude.as_mut() {
                                *m = m.max(seen);
                            }
                            self.record("* masked", t);
                            return Ok(Value::matrix(r));
                        }
                    }
                }
                let vf = self.eval(fe)?;
                let (va, vb) = if mask_left { (vm, vf) } else { (vf, vm) };
                self.binary(span, BinOp::Mul, va, vb)?
            }
            // a chain `A + B + C` (or of `*`) inside one expression: SystemDS folds it into
            // one n-ary operation when the operands are scalars and matrices of one shape,
            // with its own order of additions and its own representation of the result
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Mul), ..)
                if e.ty.is_matrix() && nary_leaves(e, *op).len() >= 3 =>
            {
                let leaves = nary_leaves(e, *op);
                let vals = leaves
                    .iter()
                    .map(|x| self.eval(x))
                    .collect::<Res<Vec<_>>>()?;
                let t = Instant::now();
                match builtins::nary(*op, &vals) {
                    Some(v) => {
                        self.record(op.symbol(), t);
                        v
                    }
                    None => self.binary_tree(e, *op, &mut vals.into_iter())?,
                }
            }
            ExprKind::Binary(op, a, b) => {
                let (va, vb) = (self.eval(a)?, self.eval(b)?);
                match self.binary(span, *op, va, vb)? {
                    // a scalar operation's value type is the one it was checked with (an
                    // operand that is an integer only when the program runs, like SystemDS's
                    // rewritten `sum(table(A, 1))`, still gives a double)
                    Value::Scalar(s @ (Scalar::Int(_) | Scalar::Bool(_)))
                        if e.ty == hir::Ty::Scalar(hir::ScalarTy::Double) =>
                    {
                        Value::double(s.as_f64())
                    }
                    v => v,
                }
            }
            ExprKind::Concat(a, b) => {
                let (va, vb) = (self.eval(a)?, self.eval(b)?);
                Value::Str(format!("{va}{vb}"))
            }
            // t(X) %*% (X %*% v), t(X) %*% (w * (X %*% v)), t(X) %*% (X %*% v - y) and t(X)
            // %*% X %*% v for a vector v run as SystemDS runs them, as one mmchain (SystemDS
            // reorders the last into the first; AggBinaryOp.checkMapMultChain), whose sums it
            // adds in its own order
            ExprKind::MatMul(a, b) if self.mmchain_operands(a, b).is_some() => {
                let (x, w, v, minus) = self.mmchain_operands(a, b).expect("matched above");
                let mat = |n: &str| var_matrix(&self.vars, n).expect("checked").clone();
                let (x, v) = (mat(x), mat(v));
                let w = match w {
                    Some(w) => mat(w),
                    None => Arc::new(Matrix::filled(x.rows(), 1, 1.0)),
                };
                let t = Instant::now();
                let r = if minus {
                    kernels::mmchain_minus(&x, &w, &kernels::dense_view(&v))
                } else {
                    kernels::mmchain(&x, &w, &kernels::dense_view(&v))
                };
                self.record("%*%", t);
                Value::matrix(Matrix::from_dense(r))
            }
            // (-Z) %*% Y and Y %*% (-Z) with a product smaller than Z run as 0 - (Z %*% Y) and
            // 0 - (Y %*% Z), as SystemDS runs them
            // (RewriteAlgebraicSimplificationDynamic.reorderMinusMatrixMult): the same value,
            // but the product's kernel (`t(X) %*% y` is its vector-matrix one) fixes the
            // rounding, and a zero cell is +0.0 (`0 - 0`), not the -0.0 of a negation
            ExprKind::MatMul(a, b) if negated_operand(&self.vars, a, b).is_some() => {
                let (left, z) = negated_operand(&self.vars, a, b).expect("matched above");
                let inner = if left {
                    ExprKind::MatMul(Box::new(z.clone()), b.clone())
                } else {
                    ExprKind::MatMul(a.clone(), Box::new(z.clone()))
                };
                let v = self.eval(&Expr {
                    kind: inner,
                    ty: e.ty,
                    span,
                })?;
                self.binary(span, BinOp::Sub, Value::Scalar(Scalar::Double(0.0)), v)?
            }
            // A %*% t(A) runs as SystemDS's tsmm: its kernel and order of additions (a
            // kernel choice, not a rewrite)
            ExprKind::MatMul(a, b) if self_transpose(a, b) => {
                let ma = self.matrix(a)?;
                let t = Instant::now();
                let r = kernels::mul_self_t(&ma);
                self.record("%*%", t);
                Value::matrix(r)
            }
            // t(A) %*% A runs as SystemDS's left tsmm: its kernel and order of additions
            ExprKind::MatMul(a, b) if self_transpose(b, a) => {
                let mb = self.matrix(b)?;
                let t = Instant::now();
                let r = kernels::t_mul_self(&mb);
                self.record("%*%", t);
                Value::matrix(r)
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
            // unique(rbind(A, B)) is union_distinct(A, B) in SystemDS
            // (RewriteAlgebraicSimplificationStatic.simplifyUnionDistinct, in any direction):
            // the distinct rows of A then B in their first order
            ExprKind::Builtin(b, args) if b.name == "unique" && union_operands(args).is_some() => {
                let (l, r) = union_operands(args).expect("matched above");
                let (vl, vr) = (self.eval(l)?, self.eval(r)?);
                match (&vl, &vr) {
                    (Value::Matrix(ml), Value::Matrix(mr)) if ml.cols() == mr.cols() => {
                        let t = Instant::now();
                        let u = kernels::structure::union_distinct(ml, mr);
                        self.record("unique", t);
                        Value::matrix(u)
                    }
                    // not two matrices of as many columns: rbind's own error
                    _ => self.eval_builtin(b, args, span)?,
                }
            }
            // sum(A + B) and sum(A - B) of matrices known before running to have the same
            // shape are sum(A) + sum(B) and sum(A) - sum(B) in SystemDS
            // (RewriteAlgebraicSimplificationDynamic.pushdownSumOnAdditiveBinary), each sum then
            // run as SystemDS runs it (a dot product below, or this split again)
            ExprKind::Builtin(b, args)
                if b.name == "sum" && additive_sum_operands(&self.vars, args).is_some() =>
            {
                let (op, l, r) = additive_sum_operands(&self.vars, args).expect("matched above");
                let sum_of = |e: &Expr| Expr {
                    kind: ExprKind::Builtin(b, vec![e.clone()]),
                    ty: e.ty,
                    span,
                };
                let (sl, sr) = (self.eval(&sum_of(l))?, self.eval(&sum_of(r))?);
                self.binary(span, op, sl, sr)?
            }
            // sum(v1 * v2) and sum(v^2) of column vectors are a dot product in SystemDS
            // (RewriteAlgebraicSimplificationDynamic.simplifyDotProductSum), which it adds in
            // its order, not compensated
            ExprKind::Builtin(b, args) if b.name == "sum" && dot_sum_operands(args).is_some() => {
                let (x, y) = dot_sum_operands(args).expect("matched above");
                let vx = self.eval(x)?;
                let vy = match y {
                    Some(y) => self.eval(y)?,
                    None => vx.clone(),
                };
                match (&vx, &vy) {
                    (Value::Matrix(mx), Value::Matrix(my))
                        if mx.cols() == 1 && mx.shape() == my.shape() =>
                    {
                        let t = Instant::now();
                        let (dx, dy) = (mx.to_dense(), my.to_dense());
                        let (sx, sy) = (dx.as_slice(), dy.as_slice());
                        let r = kernels::matmul::dot(
                            sx.expect("a column is contiguous"),
                            sy.expect("a column is contiguous"),
                        );
                        self.record("sum", t);
                        Value::double(r)
                    }
                    _ => {
                        // not column vectors after all: the product and the sum as written
                        let (op, vy) = match y {
                            Some(_) => (BinOp::Mul, vy),
                            None => (BinOp::Pow, Value::double(2.0)),
                        };
                        let prod = self.binary(args[0].span, op, vx, vy)?;
                        let spans = [args[0].span];
                        let mut ctx = self.builtin_ctx(b.name, span, &spans);
                        builtins::eval(b, &mut ctx, &[prod])?
                    }
                }
            }
            // colSums(X * y) of a matrix X and a column y, and rowSums(X * y) of a row y, are
            // t(y) %*% X and X %*% t(y) in SystemDS when X has more than one row and column
            // (RewriteAlgebraicSimplificationDynamic.simplifyColSumsMVMult and
            // simplifyRowSumsMVMult): the product's kernel adds them, not compensated
            ExprKind::Builtin(b, args)
                if matches!(b.name, "colSums" | "rowSums") && mv_sum_operands(args).is_some() =>
            {
                let (x, y) = mv_sum_operands(args).expect("matched above");
                let (vx, vy) = (self.eval(x)?, self.eval(y)?);
                let col = b.name == "colSums";
                match (&vx, &vy) {
                    (Value::Matrix(mx), Value::Matrix(my))
                        if mx.rows() > 1
                            && mx.cols() > 1
                            && if col {
                                my.rows() == mx.rows() && my.cols() == 1
                            } else {
                                my.cols() == mx.cols() && my.rows() == 1
                            } =>
                    {
                        let t = Instant::now();
                        let r = if col {
                            kernels::matmul(&kernels::transpose(my), mx)
                        } else {
                            kernels::matmul(mx, &kernels::transpose(my))
                        };
                        self.record(b.name, t);
                        Value::matrix(r)
                    }
                    _ => {
                        // not a matrix and a vector after all: the product and the sum
                        let prod = self.binary(args[0].span, BinOp::Mul, vx, vy)?;
                        let spans = [args[0].span];
                        let mut ctx = self.builtin_ctx(b.name, span, &spans);
                        builtins::eval(b, &mut ctx, &[prod])?
                    }
                }
            }
            // rowIndexMin(outer(a, b, cmp)) runs as SystemDS's fused operator
            // (AggUnaryOp.isUnaryAggregateOuterCPRewriteApplicable: LibMatrixOuterAgg), which
            // gives the first column of a row's minimum where rowIndexMin gives the last
            ExprKind::Builtin(b, args)
                if b.name == "rowIndexMin" && outer_comparison(args).is_some() =>
            {
                let (x, y, op) = outer_comparison(args).expect("matched above");
                let (mx, my) = (self.matrix(x)?, self.matrix(y)?);
                let t = Instant::now();
                let r = if mx.cols() == 1 && my.rows() == 1 && my.cols() > 0 {
                    kernels::scan::row_index_min_outer(&mx, &my, op)
                } else {
                    // not vectors: outer's own error (or rowIndexMin's, of no columns)
                    kernels::math::outer(&mx, &my, op)
                        .and_then(|o| kernels::scan::row_index_extreme(&o, false))
                }
                .map_err(|e| SpannedError::new(args[0].span, e.to_string()))?;
                self.record("rowIndexMin", t);
                Value::matrix(r)
            }
            ExprKind::Outputs(func, args) => {
                let items = self.call_function(*func, args, span)?;
                let names = self.functions[*func].outputs.clone();
                Value::List(Arc::new(List {
                    names: (!names.is_empty()).then_some(names),
                    items,
                }))
            }
            ExprKind::Builtin(b, args) => self.eval_builtin(b, args, span)?,
            ExprKind::List(items) => {
                let mut out = List {
                    items: Vec::with_capacity(items.len()),
                    names: None,
                };
                let mut names = Vec::new();
                for (n, x) in items {
                    out.items.push(self.eval(x)?);
                    names.extend(n.clone());
                }
                if !names.is_empty() {
                    out.names = Some(names);
                }
                Value::List(Arc::new(out))
            }
            ExprKind::Dispatch {
                name,
                cases,
                missing,
            } => {
                let n = self.string(name)?;
                // SystemDS's default namespace is the main program's
                let n = n.strip_prefix(".defaultNS::").unwrap_or(&n);
                if let Some((_, call)) = cases.iter().find(|(c, _)| c == n) {
                    return self.eval(call);
                }
                return Err(match missing.iter().find(|(c, _)| c == n) {
                    Some((_, e)) => e.clone().with_note(format!(
                        "`{n}` is called through eval at {}",
                        crate::diagnostics::describe_span(name.span)
                    )),
                    None => SpannedError::new(
                        name.span,
                        format!(
                            "function '{}' (called through eval) is non-existing",
                            if n.contains("::") {
                                n.to_string()
                            } else {
                                format!(".defaultNS::{n}")
                            }
                        ),
                    ),
                });
            }
            ExprKind::Exists(x) => {
                let name = self.string(x)?;
                Value::Scalar(Scalar::Bool(self.vars.contains_key(&name)))
            }
            ExprKind::Index { base, rows, .. } if base.ty == hir::Ty::List => {
                let Value::List(l) = self.eval(base)? else {
                    return Err(SpannedError::new(base.span, "expected a list"));
                };
                let r = self.list_range(rows, &l)?;
                Value::List(Arc::new(l.slice(r.start, r.end)))
            }
            ExprKind::Index { base, rows, cols } => {
                let m = self.matrix(base)?;
                let r = self.range(rows, m.rows(), "row")?;
                let c = self.range(cols, m.cols(), "column")?;
                let t = Instant::now();
                let out = self.slices.slice(&m, r, c);
                self.record("rightIndex", t);
                Value::Matrix(out)
            }
        })
    }

    /// A selection of list entries (1-based positions or names) as a 0-based half-open
    /// range, bounds-checked.
    fn list_range(&mut self, r: &Range, l: &List) -> Res<std::ops::Range<usize>> {
        let n = l.items.len();
        let mut pos = |e: &Expr| -> Res<usize> {
            match self.eval(e)? {
                Value::Str(name) => l.position(&name).map_err(|m| SpannedError::new(e.span, m)),
                Value::Scalar(s) => {
                    let v = s.as_f64();
                    if v < 1.0 || v > n as f64 || v.fract() != 0.0 {
                        return Err(SpannedError::new(
                            e.span,
                            format!("list index {v} out of bounds 1..{n}"),
                        ));
                    }
                    Ok(v as usize - 1)
                }
                _ => Err(SpannedError::new(
                    e.span,
                    "a list index must be a number or a name",
                )),
            }
        };
        Ok(match r {
            Range::All => 0..n,
            Range::At(e) => {
                let i = pos(e)?;
                i..i + 1
            }
            Range::Span(a, b) => {
                let (i, j) = (pos(a)?, pos(b)?);
                if j < i {
                    return Err(SpannedError::new(
                        a.span.to(b.span),
                        format!("empty list range {}:{}", i + 1, j + 1),
                    ));
                }
                i..j + 1
            }
        })
    }

    /// A 1-based inclusive selection as a 0-based half-open range, bounds-checked.
    fn range(&mut self, r: &Range, n: usize, what: &str) -> Res<std::ops::Range<usize>> {
        let mut pos = |e: &Expr| -> Res<usize> {
            let v = crate::check::scalar::index_value(self.scalar(e)?.as_f64());
            if !(1.0..=n as f64).contains(&v) {
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
        // the functions' statements themselves, not copies: [`live::Dead`] knows them by
        // address
        let functions = self.functions.clone();
        let f = &functions[func];
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
        // a function a parfor reached keeps the thread count it was given (see [`parfor`])
        let threads = self
            .parfor
            .function(&f.name)
            .map(|k| kernels::set_systemds_threads(Some(k)));
        // the caller's precomputed barriers are its own frame's: a recursive call runs the
        // same expressions on other variables
        let barriers = std::mem::take(&mut self.barrier_values);
        self.depth += 1;
        let r = self.blocks(&f.body);
        self.depth -= 1;
        self.barrier_values = barriers;
        if let Some(t) = threads {
            kernels::set_systemds_threads(t);
        }
        let mut frame = std::mem::replace(&mut self.vars, saved);
        r?;
        f.outputs
            .iter()
            .zip(&f.output_types)
            .map(|(o, ty)| {
                let v = frame.remove(o).map(|v| match (v, ty) {
                    (Value::Scalar(s), hir::Ty::Scalar(t)) => {
                        Value::Scalar(crate::check::scalar::cast(s, *t))
                    }
                    (v, _) => v,
                });
                v.ok_or_else(|| {
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

    /// The chain of `op` that `e` is ([`nary_leaves`]) applied as written, two operands at a
    /// time, to its operands' values (taken in order from `vals`).
    fn binary_tree(
        &mut self,
        e: &Expr,
        op: BinOp,
        vals: &mut impl Iterator<Item = Value>,
    ) -> Res<Value> {
        match &e.kind {
            ExprKind::Binary(o, a, b) if *o == op && !literal(e) => {
                let va = self.binary_tree(a, op, vals)?;
                let vb = self.binary_tree(b, op, vals)?;
                self.binary(e.span, op, va, vb)
            }
            _ => Ok(vals.next().expect("a value per operand")),
        }
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

/// The operands of the chain of `op` that `e` is (`(A + B) + C`, `A + (B + C)`: `A`, `B`,
/// `C`, in the order written), following nested `op`s in any position.
fn nary_leaves(e: &Expr, op: BinOp) -> Vec<&Expr> {
    match &e.kind {
        ExprKind::Binary(o, a, b) if *o == op && !literal(e) => {
            let mut v = nary_leaves(a, op);
            v.extend(nary_leaves(b, op));
            v
        }
        _ => vec![e],
    }
}

/// Whether `e` is a scalar computed from literals alone: one operand of a chain, never
/// flattened into it, since SystemDS folds such constants (its static ConstantFolding) before
/// it folds chains: `(0 * (1e308 * 2)) * X` is `NaN * X`, not `0 * 1e308 * 2 * X` with the
/// scalars multiplied first.
fn literal(e: &Expr) -> bool {
    !e.ty.is_matrix()
        && match &e.kind {
            ExprKind::Lit(_) => true,
            ExprKind::Unary(_, a) => literal(a),
            ExprKind::Binary(_, a, b) => literal(a) && literal(b),
            // `log(2.0)`: a builtin of literals (SystemDS folds its unary and binary hops)
            ExprKind::Builtin(_, args) => !args.is_empty() && args.iter().all(literal),
            _ => false,
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
        Value::List(_) => {
            return Err(SpannedError::new(
                span,
                "a list cannot be stored in a matrix",
            ))
        }
    };
    assign(m, r, c, src);
    Ok(())
}

/// The operands of `sum(x * y)` (`Some(y)`) or `sum(x^2)` (`None`) that SystemDS runs as a
/// dot product when they turn out to be column vectors: `x` and `y` matrices not known
/// before running to have other than one column, neither a product itself nor (for `x * y`)
/// a square. SystemDS needs `ncol == 1` known when it compiles the expression, and it does
/// know it at run time: run on one node, it recompiles every statement block that has
/// unknown shapes with the shapes of its inputs (`Hop.setRequiresRecompileIfNecessary`),
/// and its dynamic rewrites run again then. The caller checks the values' shapes.
fn dot_sum_operands(args: &[Expr]) -> Option<(&Expr, Option<&Expr>)> {
    let [arg] = args else {
        return None;
    };
    let column = |e: &Expr| matches!(e.ty, hir::Ty::Matrix(_, None | Some(1)));
    let square = |e: &Expr| {
        matches!(&e.kind, ExprKind::Binary(BinOp::Pow, _, k)
            if matches!(&k.kind, ExprKind::Lit(c) if c.as_f64() == 2.0))
    };
    match &arg.kind {
        ExprKind::Binary(BinOp::Pow, x, _) if square(arg) && column(x) => Some((x, None)),
        ExprKind::Binary(BinOp::Mul, x, y)
            if column(x)
                && column(y)
                && ![x, y]
                    .iter()
                    .any(|e| square(e) || matches!(e.kind, ExprKind::Binary(BinOp::Mul, ..))) =>
        {
            Some((x, Some(y)))
        }
        _ => None,
    }
}

/// For `colSums(X * y)` or `rowSums(X * y)` of two matrices (in this order): X and y.
fn mv_sum_operands(args: &[Expr]) -> Option<(&Expr, &Expr)> {
    match &args.first()?.kind {
        ExprKind::Binary(BinOp::Mul, x, y) if x.ty.is_matrix() && y.ty.is_matrix() => Some((x, y)),
        _ => None,
    }
}

/// For `unique(rbind(A, B))` (two operands): A and B.
fn union_operands(args: &[Expr]) -> Option<(&Expr, &Expr)> {
    match &args.first()?.kind {
        ExprKind::Builtin(r, ra) if r.name == "rbind" && ra.len() == 2 => Some((&ra[0], &ra[1])),
        _ => None,
    }
}

/// For `sum(A + B)` or `sum(A - B)`: the operator and A and B, when both are matrices of the
/// same shape (SystemDS's condition for splitting the sum). The shapes are the ones known
/// before running, else those of the variables the operands read, cell-wise (SystemDS knows
/// them when it compiles, or recompiles, a program that reads its data with `.mtd` files).
fn additive_sum_operands<'e>(
    vars: &HashMap<String, Value>,
    args: &'e [Expr],
) -> Option<(BinOp, &'e Expr, &'e Expr)> {
    let [arg] = args else {
        return None;
    };
    match &arg.kind {
        ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), a, b)
            if a.ty.is_matrix() && b.ty.is_matrix() =>
        {
            let (da, db) = (cellwise_dims(vars, a)?, cellwise_dims(vars, b)?);
            (da == db).then_some((*op, a, b))
        }
        _ => None,
    }
}

/// The shape of a matrix expression known before running, else of a variable, or of a
/// cell-wise operation on such operands and scalars with equal shapes; `None` otherwise.
fn cellwise_dims(vars: &HashMap<String, Value>, e: &Expr) -> Option<(usize, usize)> {
    match (e.ty, &e.kind) {
        (hir::Ty::Matrix(Some(r), Some(c)), _) => Some((r, c)),
        (hir::Ty::Matrix(..), ExprKind::Var(n)) => var_matrix(vars, n).map(|m| m.shape()),
        (hir::Ty::Matrix(..), ExprKind::Binary(_, a, b)) => {
            match (a.ty.is_matrix(), b.ty.is_matrix()) {
                (true, false) => cellwise_dims(vars, a),
                (false, true) => cellwise_dims(vars, b),
                _ => {
                    let da = cellwise_dims(vars, a)?;
                    (cellwise_dims(vars, b)? == da).then_some(da)
                }
            }
        }
        _ => None,
    }
}

/// For `a %*% b` with an operand `-Z`: whether it is the left one, and Z, when SystemDS moves
/// the negation out of the product: the product having fewer cells than Z. The shapes are
/// those of the variables when Z and the other operand are variables or their transposes
/// (SystemDS knows them when it compiles a program that reads its data with `.mtd` files),
/// else the ones known before running.
fn negated_operand<'e>(
    vars: &HashMap<String, Value>,
    a: &'e Expr,
    b: &'e Expr,
) -> Option<(bool, &'e Expr)> {
    let dims = |x: &Expr| -> Option<(usize, usize)> {
        match &x.kind {
            ExprKind::Var(n) => var_matrix(vars, n).map(|m| m.shape()),
            _ if is_transpose(x) => match &x.kind {
                ExprKind::Builtin(_, args) => match &args[0].kind {
                    ExprKind::Var(n) => var_matrix(vars, n).map(|m| (m.cols(), m.rows())),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
        .or(match x.ty {
            hir::Ty::Matrix(Some(r), Some(c)) => Some((r, c)),
            _ => None,
        })
    };
    let neg = |x: &'e Expr| match &x.kind {
        ExprKind::Unary(spores_runtime::ops::UnaryOp::Neg, z) => Some(&**z),
        _ => None,
    };
    let (left, z) = match (neg(a), neg(b)) {
        (Some(z), _) => (true, z),
        (None, Some(z)) => (false, z),
        _ => return None,
    };
    let (zr, zc) = dims(z)?;
    let product = if left {
        zr * dims(b)?.1
    } else {
        dims(a)?.0 * zc
    };
    (product < zr * zc).then_some((left, z))
}

/// The matrix a variable holds, if it is defined and a matrix.
fn var_matrix<'a>(vars: &'a HashMap<String, Value>, name: &str) -> Option<&'a Arc<Matrix>> {
    match vars.get(name) {
        Some(Value::Matrix(m)) => Some(m),
        _ => None,
    }
}

/// The variable `X` of `t(X)`.
fn transposed_var(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Builtin(b, args) if b.name == "t" => match &args[0].kind {
            ExprKind::Var(x) => Some(x),
            _ => None,
        },
        _ => None,
    }
}

/// The variables `(X, v)` of `X %*% v`.
fn product_vars(e: &Expr) -> Option<(&str, &str)> {
    match &e.kind {
        ExprKind::MatMul(a, b) => match (&a.kind, &b.kind) {
            (ExprKind::Var(x), ExprKind::Var(v)) => Some((x, v)),
            _ => None,
        },
        _ => None,
    }
}

/// `outer(a, b, cmp)` with a comparison written as a string literal: `(a, b, cmp)`.
fn outer_comparison(args: &[Expr]) -> Option<(&Expr, &Expr, BinOp)> {
    let ExprKind::Builtin(o, oa) = &args.first()?.kind else {
        return None;
    };
    let ExprKind::Str(name) = &oa.get(2)?.kind else {
        return None;
    };
    let op = BinOp::ALL.into_iter().find(|op| op.symbol() == name)?;
    (o.name == "outer" && op.is_comparison()).then_some((&oa[0], &oa[1], op))
}

fn is_transpose(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Builtin(b, _) if b.name == "t")
}

/// Whether `a %*% b` is `X %*% t(X)` of one variable `X` (`self_transpose(b, a)`: whether
/// `a %*% b` is `t(X) %*% X`).
fn self_transpose(a: &Expr, b: &Expr) -> bool {
    match (&a.kind, &b.kind) {
        (ExprKind::Var(x), ExprKind::Builtin(t, args)) if t.name == "t" => {
            matches!(&args[0].kind, ExprKind::Var(y) if y == x)
        }
        _ => false,
    }
}

/// The largest finite magnitude of a value's cells (0 for strings and lists).
fn max_finite_abs(v: &Value) -> f64 {
    let finite = |x: f64| if x.is_finite() { x.abs() } else { 0.0 };
    match v {
        Value::Scalar(s) => finite(s.as_f64()),
        Value::Matrix(m) => match &**m {
            Matrix::Dense(d) => d.iter().fold(0.0, |acc, &x| acc.max(finite(x))),
            Matrix::Sparse(c) => c.data().iter().fold(0.0, |acc, &x| acc.max(finite(x))),
        },
        Value::Str(_) | Value::List(_) => 0.0,
    }
}

/// Largest difference relative to the largest magnitude (max norms of both values, and
/// `scale`); NaN and infinities must match exactly.
fn rel_diff(a: &Value, b: &Value, scale: f64) -> f64 {
    let cells = |v: &Value| -> Vec<f64> {
        match v {
            Value::Scalar(s) => vec![s.as_f64()],
            Value::Matrix(m) => m.to_dense().into_raw_vec_and_offset().0,
            Value::Str(_) | Value::List(_) => vec![],
        }
    };
    let (x, y) = (cells(a), cells(b));
    if x.len() != y.len() {
        return f64::INFINITY;
    }
    let mut scale = scale;
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

/// `line L: a, b` for a segment whose first statement is on line L of the program and that
/// assigns a and b (the file and line for a statement of a library script).
fn segment_label(seg: &crate::optimize::segment::Segment) -> String {
    let names = seg.names().join(", ");
    let Some((_, first)) = seg.statements.first() else {
        return names;
    };
    let start = first.span.start;
    let at = match crate::syntax::sources::main_text() {
        Some(text) if start < crate::syntax::sources::FILE_STRIDE => {
            format!("line {}", crate::diagnostics::line_col(&text, start).0)
        }
        _ => crate::diagnostics::describe_span(first.span),
    };
    format!("{at}: {names}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(x: f64) -> Value {
        Value::Scalar(Scalar::Double(x))
    }

    #[test]
    fn differences_are_relative_to_the_largest_magnitude_seen() {
        // relative to the values themselves when nothing larger was computed
        assert!(rel_diff(&num(1.0), &num(1.0 + 1e-6), 0.0) > 1e-9);
        assert!(rel_diff(&num(1e-12), &num(2e-12), 0.0) > 1e-9);
        // a cancelled result is compared at the scale of its terms
        assert!(rel_diff(&num(1e-12), &num(2e-12), 100.0) < 1e-9);
        assert!(rel_diff(&num(1.0), &num(2.0), 100.0) > 1e-9);
        // non-finite values must match exactly, whatever the scale
        assert_eq!(rel_diff(&num(f64::NAN), &num(1.0), 1e300), f64::INFINITY);
        assert_eq!(
            rel_diff(&num(f64::INFINITY), &num(f64::NEG_INFINITY), 0.0),
            f64::INFINITY
        );
        assert_eq!(rel_diff(&num(f64::NAN), &num(f64::NAN), 0.0), 0.0);
    }

    #[test]
    fn magnitude_is_the_largest_finite_cell() {
        let m = Value::matrix(Matrix::from_triplets(
            3,
            3,
            &[(0, 0, -5.0), (2, 1, f64::INFINITY)],
        ));
        assert_eq!(max_finite_abs(&m), 5.0);
        assert_eq!(max_finite_abs(&num(f64::NAN)), 0.0);
    }
}
