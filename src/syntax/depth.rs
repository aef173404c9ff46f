//! The nesting limit: every later stage (checking, lowering, evaluation) walks expressions
//! and blocks recursively, so a program nested deeper than [`MAX_DEPTH`] levels is rejected
//! right after parsing with a diagnostic at the expression, instead of overflowing the stack.
//! The walk here is iterative, so it cannot overflow itself.

use super::ast::{Expr, ExprKind, IndexRange, Program, Span, Stmt, StmtKind};
use super::error::ParseError;

/// The deepest nesting of expressions (and of blocks) a program may have. A 3,000-deep
/// `abs(abs(...))` or a sum of 7,000 terms (a left-deep tree) is well within it; the CLI runs
/// on a thread whose stack holds this depth in every stage.
pub const MAX_DEPTH: usize = 10_000;

fn too_deep(span: Span) -> ParseError {
    ParseError {
        message: format!("expression nested too deeply (more than {MAX_DEPTH} levels)"),
        span,
        expected: vec![],
    }
}

/// Checks every expression and block of a program against [`MAX_DEPTH`].
pub fn check_program(p: &Program) -> Result<(), ParseError> {
    // (statements of a block, block depth)
    let mut work: Vec<(&[Stmt], usize)> = vec![(&p.stmts, 0)];
    while let Some((stmts, depth)) = work.pop() {
        for s in stmts {
            if depth > MAX_DEPTH {
                return Err(too_deep(s.span));
            }
            match &s.kind {
                StmtKind::Assign { value, .. } => check_expr(value)?,
                StmtKind::Call(c) => c.args.iter().try_for_each(|a| check_expr(&a.value))?,
                StmtKind::If { cond, then, els } => {
                    check_expr(cond)?;
                    work.push((then, depth + 1));
                    work.push((els, depth + 1));
                }
                StmtKind::For { from, to, body, .. } => {
                    check_expr(from)?;
                    if let Some(to) = to {
                        check_expr(to)?;
                    }
                    work.push((body, depth + 1));
                }
                StmtKind::IndexAssign {
                    rows, cols, value, ..
                } => {
                    for r in [rows, cols] {
                        match r {
                            IndexRange::All => {}
                            IndexRange::At(x) => check_expr(x)?,
                            IndexRange::Range(a, b) => {
                                check_expr(a)?;
                                check_expr(b)?;
                            }
                        }
                    }
                    check_expr(value)?;
                }
                StmtKind::MultiAssign { call, .. } => {
                    call.args.iter().try_for_each(|a| check_expr(&a.value))?
                }
                StmtKind::Function(f) => {
                    for p in f.params.iter().chain(&f.returns) {
                        if let Some(d) = &p.default {
                            check_expr(d)?;
                        }
                    }
                    work.push((&f.body, depth + 1));
                }
                StmtKind::Unsupported(_) | StmtKind::Source { .. } | StmtKind::SetWd(_) => {}
                StmtKind::While { cond, body } => {
                    check_expr(cond)?;
                    work.push((body, depth + 1));
                }
            }
        }
    }
    Ok(())
}

/// Checks one expression against [`MAX_DEPTH`].
pub fn check_expr(e: &Expr) -> Result<(), ParseError> {
    let mut work: Vec<(&Expr, usize)> = vec![(e, 1)];
    while let Some((e, depth)) = work.pop() {
        if depth > MAX_DEPTH {
            return Err(too_deep(e.span));
        }
        let mut kids = Vec::new();
        children(e, &mut |x| kids.push(x));
        work.extend(kids.into_iter().map(|x| (x, depth + 1)));
    }
    Ok(())
}

/// Calls `push` on each direct subexpression of `e`.
fn children<'a>(e: &'a Expr, push: &mut impl FnMut(&'a Expr)) {
    match &e.kind {
        ExprKind::Int(_)
        | ExprKind::Double(_)
        | ExprKind::Bool(_)
        | ExprKind::Str(_)
        | ExprKind::Var(_)
        | ExprKind::ScriptArg(_)
        | ExprKind::Unsupported(_) => {}
        ExprKind::Unary(_, x) => push(x),
        ExprKind::Binary(_, a, b) => {
            push(a);
            push(b);
        }
        ExprKind::Call(c) => c.args.iter().for_each(|a| push(&a.value)),
        ExprKind::Index { base, rows, cols } => {
            push(base);
            for r in [rows, cols] {
                match r {
                    IndexRange::All => {}
                    IndexRange::At(x) => push(x),
                    IndexRange::Range(a, b) => {
                        push(a);
                        push(b);
                    }
                }
            }
        }
    }
}
