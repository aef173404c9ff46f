//! The nesting limit: every later stage (checking, lowering, evaluation) walks expressions
//! and blocks recursively, so a program nested deeper than [`MAX_DEPTH`] levels is rejected
//! right after parsing with a diagnostic at the expression, instead of overflowing the stack.
//! The walk here is iterative, so it cannot overflow itself; [`for_each_expr`] is the same
//! walk for the stages that need every expression of a program's syntax tree.

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
            let mut exprs = Vec::new();
            parts(s, &mut |e| exprs.push(e), &mut |b| {
                work.push((b, depth + 1))
            });
            exprs.into_iter().try_for_each(check_expr)?;
        }
    }
    Ok(())
}

/// Calls `f` on every expression of `stmts` and each of its subexpressions, in the blocks
/// nested in them too (branches, loop and function bodies, parameter defaults); iterative,
/// so any nesting [`check_program`] accepts is walked without recursion.
pub fn for_each_expr<'a>(stmts: &'a [Stmt], f: &mut impl FnMut(&'a Expr)) {
    let mut blocks: Vec<&'a [Stmt]> = vec![stmts];
    let mut exprs: Vec<&'a Expr> = Vec::new();
    while let Some(b) = blocks.pop() {
        for s in b {
            parts(s, &mut |e| exprs.push(e), &mut |b| blocks.push(b));
            while let Some(e) = exprs.pop() {
                f(e);
                children(e, &mut |x| exprs.push(x));
            }
        }
    }
}

/// Calls `expr` on each expression a statement holds directly and `block` on each block of
/// statements nested in it.
fn parts<'a>(s: &'a Stmt, expr: &mut impl FnMut(&'a Expr), block: &mut impl FnMut(&'a [Stmt])) {
    let range = |r: &'a IndexRange, expr: &mut dyn FnMut(&'a Expr)| match r {
        IndexRange::All => {}
        IndexRange::At(x) => expr(x),
        IndexRange::Range(a, b) => {
            expr(a);
            expr(b);
        }
    };
    match &s.kind {
        StmtKind::Assign { value, .. } => expr(value),
        StmtKind::Call(c) | StmtKind::MultiAssign { call: c, .. } => {
            c.args.iter().for_each(|a| expr(&a.value))
        }
        StmtKind::If { cond, then, els } => {
            expr(cond);
            block(then);
            block(els);
        }
        StmtKind::For { from, to, body, .. } => {
            expr(from);
            if let Some(to) = to {
                expr(to);
            }
            block(body);
        }
        StmtKind::IndexAssign {
            rows, cols, value, ..
        } => {
            range(rows, expr);
            range(cols, expr);
            expr(value);
        }
        StmtKind::Function(f) => {
            for p in f.params.iter().chain(&f.returns) {
                if let Some(d) = &p.default {
                    expr(d);
                }
            }
            block(&f.body);
        }
        StmtKind::Unsupported(_) | StmtKind::Source { .. } | StmtKind::SetWd(_) => {}
        StmtKind::While { cond, body } => {
            expr(cond);
            block(body);
        }
    }
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
