//! Which assignments of a segment are dead: a variable whose every read in the program lies
//! in the statements of the segment after its assignment there (so each read sees that
//! assignment, inlined into the segment's term) is never read once the segment has run, and
//! the plan need not compute it. Reads are counted per name over the whole program (every
//! function body included, and every function's outputs count as read), which is
//! conservative: a name read anywhere else keeps its assignment.

use crate::check::hir::{self, Block, Expr, ExprKind, Range, Stmt};
use std::collections::HashMap;

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
                    ..
                } => {
                    self.expr(from);
                    self.expr(to);
                    if let Some(s) = step {
                        self.expr(s);
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
