//! Stage 3, lower: a checked LA expression to a term of the optimizer's language ([`Ir`]).
//! The term stays at the LA level; the translation rules of rules/translate.rules lower it
//! to RA inside saturation and raise it back.

use crate::check::hir::{Expr, ExprKind, Ty};
use crate::ir::{Const, Ir};
use egg::{FromOp, Id, RecExpr, Symbol};
use spores_runtime::ops::{BinOp, UnaryOp};

/// An operation the optimizer does not reason about (it stays a barrier in the plan).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the optimizer does not handle {0}")]
pub struct Unsupported(pub String);

/// Lowers an expression into `out`, returning its root; fails on the first operation the
/// optimizer does not handle.
pub fn lower_expr(e: &Expr, out: &mut RecExpr<Ir>) -> Result<Id, Unsupported> {
    lower(e, out, &mut |_, u| Err(u))
}

/// Lowers an expression, replacing each subexpression the optimizer does not handle (indexing,
/// comparisons other than `!= 0`, builtins without an operator) by an input symbol `.b0`,
/// `.b1`, ... (not DML identifiers). Returns the root and those barrier subexpressions in
/// order: the caller evaluates them as written and passes their values as inputs.
pub fn lower_with_barriers<'e>(
    e: &'e Expr,
    out: &mut RecExpr<Ir>,
) -> (Id, Vec<(String, &'e Expr)>) {
    let mut barriers: Vec<(String, &'e Expr)> = Vec::new();
    let mut cut = |x: &'e Expr, _: Unsupported| -> Result<Ir, Unsupported> {
        let name = format!(".b{}", barriers.len());
        barriers.push((name.clone(), x));
        Ok(Ir::Symbol(Symbol::from(name.as_str())))
    };
    let root = lower(e, out, &mut cut).expect("barriers absorb every unsupported operation");
    (root, barriers)
}

/// Whether a lowered term has any operator (not just a leaf).
pub fn has_operator(term: &RecExpr<Ir>) -> bool {
    term.as_ref().len() > 1
}

fn lower<'e>(
    e: &'e Expr,
    out: &mut RecExpr<Ir>,
    cut: &mut dyn FnMut(&'e Expr, Unsupported) -> Result<Ir, Unsupported>,
) -> Result<Id, Unsupported> {
    let is_zero = |x: &Expr| matches!(&x.kind, ExprKind::Lit(s) if s.as_f64() == 0.0);
    Ok(match &e.kind {
        ExprKind::Lit(s) => out.add(Ir::Num(Const::new(s.as_f64()))),
        ExprKind::Var(v) => out.add(Ir::Symbol(Symbol::from(v.as_str()))),
        ExprKind::Unary(op, x) => {
            let node = match op {
                UnaryOp::Neg => Ir::Neg,
                UnaryOp::Exp => Ir::Exp,
                UnaryOp::Log => Ir::Log,
                UnaryOp::Sqrt => Ir::Sqrt,
                UnaryOp::Abs => Ir::Abs,
                UnaryOp::Sigmoid => Ir::Sigmoid,
                other => {
                    let leaf = cut(e, Unsupported(format!("`{}`", other.name())))?;
                    return Ok(out.add(leaf));
                }
            };
            let x = lower(x, out, cut)?;
            out.add(node(x))
        }
        // `X != 0`: the pattern of X, an operator the fused rules use
        ExprKind::Binary(BinOp::Ne, a, b) if is_zero(b) || is_zero(a) => {
            let x = lower(if is_zero(b) { a } else { b }, out, cut)?;
            out.add(Ir::Nz(x))
        }
        ExprKind::Binary(op, a, b) => {
            let node = match op {
                BinOp::Mul => Ir::EMul,
                BinOp::Add => Ir::EAdd,
                BinOp::Sub => Ir::ESub,
                BinOp::Div => Ir::EDiv,
                BinOp::Pow => Ir::EPow,
                other => {
                    let leaf = cut(e, Unsupported(format!("`{}`", other.symbol())))?;
                    return Ok(out.add(leaf));
                }
            };
            let (a, b) = (lower(a, out, cut)?, lower(b, out, cut)?);
            out.add(node([a, b]))
        }
        ExprKind::MatMul(a, b) => {
            let (a, b) = (lower(a, out, cut)?, lower(b, out, cut)?);
            out.add(Ir::MMul([a, b]))
        }
        // sizes known at compile time are constants (what the plan cache keys on)
        ExprKind::Builtin(f, args)
            if matches!(f.name, "nrow" | "ncol" | "length")
                && matches!(args[0].ty, Ty::Matrix(Some(_), Some(_))) =>
        {
            let Ty::Matrix(Some(r), Some(c)) = args[0].ty else {
                unreachable!("matched above")
            };
            let v = match f.name {
                "nrow" => r,
                "ncol" => c,
                _ => r * c,
            };
            out.add(Ir::Num(Const::new(v as f64)))
        }
        ExprKind::Builtin(f, args) => match f.lower.and_then(|l| l(args)) {
            Some((op, n)) => {
                let mut kids = Vec::with_capacity(n);
                for a in &args[..n] {
                    kids.push(lower(a, out, cut)?);
                }
                let node = Ir::from_op(op, kids).expect("a builtin lowers to an operator of Ir");
                out.add(node)
            }
            None => {
                let leaf = cut(e, Unsupported(format!("`{}`", f.name)))?;
                out.add(leaf)
            }
        },
        other => {
            let what = match other {
                ExprKind::Str(_) => "a string",
                ExprKind::Concat(..) => "string concatenation",
                ExprKind::Call(..) | ExprKind::Outputs(..) | ExprKind::Dispatch { .. } => {
                    "a function call"
                }
                ExprKind::Index { .. } => "indexing",
                ExprKind::Unary(..) => "this unary operator",
                ExprKind::Binary(..) => "this binary operator",
                _ => "this expression",
            };
            let leaf = cut(e, Unsupported(what.to_string()))?;
            out.add(leaf)
        }
    })
}
