//! Which assignments of a segment are dead: a variable whose every read in the program lies
//! in the statements of the segment after its assignment there (so each read sees that
//! assignment, inlined into the segment's term) is never read once the segment has run, and
//! the plan need not compute it. Reads are counted per name over the whole program (every
//! function body included, and every function's outputs count as read), which is
//! conservative: a name read anywhere else keeps its assignment.
//!
//! Which statements never run ([`Dead`]): an assignment of a value without effects to a
//! variable no statement that runs reads afterwards, found by a backward liveness analysis
//! over the control flow in which the reads of such dead statements do not count.

use crate::check::hir::{self, Block, Expr, ExprKind, Range, Stmt};
use std::collections::{HashMap, HashSet};

/// The statements of a program that are skipped: assignments (`x = e`) of
/// pure values (no function call, no file read, no clock, no print) whose variable is not
/// live after them, where a variable is live when a later statement that is not itself
/// skipped may read it (through every branch and every further iteration of the loops around
/// it; a function's outputs are live at its end). SystemDS compiles no such statement: the
/// blocks of its plan keep only the assignments of variables live after them, and the
/// blocks and loops left empty are removed, after which the variables they read are no
/// longer live (`Z = b / se_b` read only by a loop whose body assigns a variable nothing
/// reads). So an error such a statement would raise (`inv` of a singular matrix, an index
/// out of bounds) is not raised. A program that names the variable of `exists` by a value
/// computed when it runs may read any variable: nothing of it is skipped.
#[derive(Clone, Debug, Default)]
pub struct Dead(HashSet<usize>);

impl Dead {
    /// The skipped statements of the main blocks `blocks` and of `functions`, by address:
    /// the executor must run these very values (not copies).
    pub fn of_program(blocks: &[Block], functions: &[hir::Function]) -> Dead {
        let mut a = Liveness::default();
        a.blocks(blocks, HashSet::new());
        for f in functions {
            a.blocks(&f.body, f.outputs.iter().cloned().collect());
        }
        if a.dynamic {
            return Dead::default();
        }
        Dead(a.dead.into_iter().collect())
    }

    /// Whether `s` is skipped.
    pub fn contains(&self, s: &Stmt) -> bool {
        self.0.contains(&(s as *const Stmt as usize))
    }
}

/// The backward analysis of [`Dead`]: the statements found dead so far, and whether some
/// `exists` names its variable by a value computed when it runs.
#[derive(Default)]
struct Liveness {
    dead: Vec<usize>,
    dynamic: bool,
}

impl Liveness {
    /// The variables live before `bs`, given those live after; records the dead statements.
    fn blocks(&mut self, bs: &[Block], mut live: HashSet<String>) -> HashSet<String> {
        for b in bs.iter().rev() {
            live = match b {
                Block::Basic(bb) => {
                    for s in bb.stmts.iter().rev() {
                        self.stmt(s, &mut live);
                    }
                    live
                }
                Block::If {
                    cond, then, els, ..
                } => {
                    let mut l = self.blocks(then, live.clone());
                    l.extend(self.blocks(els, live));
                    self.reads(cond, &mut l);
                    l
                }
                Block::For {
                    var,
                    from,
                    to,
                    step,
                    body,
                    parfor,
                } => {
                    // each iteration assigns `var` before the body
                    let mut l = self.fixpoint(body, &live, &[], Some(var));
                    let par = parfor.as_ref().and_then(|p| p.par.as_deref());
                    for e in [Some(from), Some(to), step.as_deref(), par]
                        .into_iter()
                        .flatten()
                    {
                        self.reads(e, &mut l);
                    }
                    l
                }
                Block::While { cond, body } => self.fixpoint(body, &live, &[cond], None),
            }
        }
        live
    }

    /// The variables live at the head of a loop over `body` (before its condition `cond`
    /// is tested, and before its variable `var` is assigned), given those live after the
    /// loop: the least fixed point, the dead statements of the body as found in its last
    /// round.
    fn fixpoint(
        &mut self,
        body: &[Block],
        after: &HashSet<String>,
        cond: &[&Expr],
        var: Option<&String>,
    ) -> HashSet<String> {
        let mark = self.dead.len();
        let mut head = after.clone();
        for c in cond {
            self.reads(c, &mut head);
        }
        loop {
            let mut next = self.blocks(body, head.clone());
            if let Some(v) = var {
                next.remove(v);
            }
            next.extend(head.iter().cloned());
            if next.len() == head.len() {
                return head;
            }
            self.dead.truncate(mark);
            head = next;
        }
    }

    fn stmt(&mut self, s: &Stmt, live: &mut HashSet<String>) {
        let all = |a: &mut Self, es: &[&Expr], live: &mut HashSet<String>| {
            for e in es {
                a.reads(e, live);
            }
        };
        match s {
            Stmt::Assign { var, value, .. } => {
                if !live.contains(var) && pure(value) {
                    self.dead.push(s as *const Stmt as usize);
                } else {
                    live.remove(var);
                    self.reads(value, live);
                }
            }
            Stmt::IndexAssign {
                var,
                rows,
                cols,
                value,
                ..
            } => {
                let mut es = vec![value];
                for r in [rows, cols] {
                    match r {
                        Range::All => {}
                        Range::At(x) => es.push(x),
                        Range::Span(a, b) => es.extend([&**a, &**b]),
                    }
                }
                // always run: SystemDS checks a left indexing's shapes when it compiles,
                // live or not (spores when it runs); the other cells keep the previous
                // value
                live.insert(var.clone());
                all(self, &es, live);
            }
            Stmt::Call { outputs, args, .. } | Stmt::MultiBuiltin { outputs, args, .. } => {
                for o in outputs {
                    live.remove(o);
                }
                all(self, &args.iter().collect::<Vec<_>>(), live);
            }
            Stmt::Print { .. }
            | Stmt::Write { .. }
            | Stmt::Stop { .. }
            | Stmt::Assert { .. }
            | Stmt::Fail { .. } => {
                let mut es = Vec::new();
                s.exprs(&mut |e| es.push(e));
                all(self, &es, live);
            }
        }
    }

    /// Adds the variables `e` reads to `live`.
    fn reads(&mut self, e: &Expr, live: &mut HashSet<String>) {
        crate::check::visit(e, &mut |x| match &x.kind {
            ExprKind::Var(n) => {
                live.insert(n.clone());
            }
            ExprKind::Exists(name) => match &name.kind {
                ExprKind::Str(n) => {
                    live.insert(n.clone());
                }
                _ => self.dynamic = true,
            },
            _ => {}
        });
    }
}

/// Whether evaluating `e` does nothing but compute its value: no function call, no file
/// read, no clock, no print.
pub fn pure(e: &Expr) -> bool {
    let mut pure = true;
    crate::check::visit(e, &mut |x| match &x.kind {
        ExprKind::Call(..) | ExprKind::Outputs(..) | ExprKind::Dispatch { .. } => pure = false,
        ExprKind::Builtin(b, _) if matches!(b.name, "read" | "time" | "print") => pure = false,
        _ => {}
    });
    pure
}

/// How many times each variable name is read in a program.
#[derive(Clone, Debug, Default)]
pub struct Reads(HashMap<String, usize>, bool);

impl Reads {
    /// The reads of `prog`: every expression of every statement and control-flow header,
    /// the previous value read by `X[i, j] = v`, and the outputs of every function.
    pub fn of_program(prog: &hir::Program) -> Reads {
        let mut r = Reads::default();
        r.blocks(&prog.blocks);
        for f in &prog.functions {
            r.blocks(&f.body);
            for o in &f.outputs {
                *r.0.entry(o.clone()).or_default() += 1;
            }
        }
        r
    }

    /// The reads of `name` in the program.
    pub fn total(&self, name: &str) -> usize {
        // `exists(name)` of a name computed when it runs may read any variable
        self.0.get(name).copied().unwrap_or(0) + usize::from(self.1)
    }

    /// Whether `var`, assigned by the statements of a segment (each statement's variable and
    /// expression, in order), is read only by statements of the segment after its first
    /// assignment there.
    pub fn dead_after(&self, var: &str, statements: &[(String, &Expr)]) -> bool {
        let Some(first) = statements.iter().position(|(v, _)| v == var) else {
            return false;
        };
        let mut early = 0;
        let mut later = 0;
        for (k, (_, e)) in statements.iter().enumerate() {
            let n = count_in(e, var);
            if k <= first {
                early += n;
            } else {
                later += n;
            }
        }
        early == 0 && later == self.total(var)
    }

    fn blocks(&mut self, bs: &[Block]) {
        for b in bs {
            match b {
                Block::Basic(bb) => {
                    for s in &bb.stmts {
                        self.stmt(s);
                    }
                }
                Block::If {
                    cond, then, els, ..
                } => {
                    self.expr(cond);
                    self.blocks(then);
                    self.blocks(els);
                }
                Block::For {
                    from,
                    to,
                    step,
                    body,
                    parfor,
                    ..
                } => {
                    self.expr(from);
                    self.expr(to);
                    if let Some(s) = step {
                        self.expr(s);
                    }
                    if let Some(p) = parfor.as_ref().and_then(|p| p.par.as_deref()) {
                        self.expr(p);
                    }
                    self.blocks(body);
                }
                Block::While { cond, body } => {
                    self.expr(cond);
                    self.blocks(body);
                }
            }
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Assign { value, .. } | Stmt::Print { value } => self.expr(value),
            Stmt::Write {
                value,
                path,
                format,
                opts,
            } => {
                self.expr(value);
                self.expr(path);
                if let Some(f) = format {
                    self.expr(f);
                }
                for (_, e) in opts {
                    self.expr(e);
                }
            }
            Stmt::Stop { message } => self.expr(message),
            Stmt::Assert { failed, message } => {
                self.expr(failed);
                self.expr(message);
            }
            Stmt::Call { args, .. } | Stmt::MultiBuiltin { args, .. } => {
                for a in args {
                    self.expr(a);
                }
            }
            Stmt::IndexAssign {
                var,
                rows,
                cols,
                value,
                ..
            } => {
                *self.0.entry(var.clone()).or_default() += 1;
                for r in [rows, cols] {
                    match r {
                        Range::All => {}
                        Range::At(x) => self.expr(x),
                        Range::Span(a, b) => {
                            self.expr(a);
                            self.expr(b);
                        }
                    }
                }
                self.expr(value);
            }
            Stmt::Fail { .. } => {}
        }
    }

    fn expr(&mut self, e: &Expr) {
        let mut dynamic = false;
        crate::check::visit(e, &mut |x| match &x.kind {
            // `exists("X")` (or exists(X) of a matrix or list) reads X by its name
            ExprKind::Var(n) => *self.0.entry(n.clone()).or_default() += 1,
            ExprKind::Exists(name) => match &name.kind {
                ExprKind::Str(n) => *self.0.entry(n.clone()).or_default() += 1,
                _ => dynamic = true,
            },
            _ => {}
        });
        self.1 |= dynamic;
    }
}

/// The reads of `var` in `e`.
fn count_in(e: &Expr, var: &str) -> usize {
    let mut n = 0;
    crate::check::visit(e, &mut |x| {
        if matches!(&x.kind, ExprKind::Var(v) if v == var) {
            n += 1;
        }
    });
    n
}
