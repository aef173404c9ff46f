//! Stage 3, lower: a checked LA expression to a term of the optimizer's language ([`Ir`]).
//! The term stays at the LA level; the translation rules of rules/translate.rules lower it
//! to RA inside saturation and raise it back.

use crate::check::hir::{Expr, ExprKind};
use crate::ir::{Const, Ir};
use egg::{Id, RecExpr, Symbol};
use spores_runtime::ops::{AggDir, AggOp, BinOp, UnaryOp};

/// An operation the optimizer does not reason about (it stays a barrier in the plan).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the optimizer does not handle {0}")]
pub struct Unsupported(pub String);

/// Lowers an expression into `out`, returning its root.
pub fn lower_expr(e: &Expr, out: &mut RecExpr<Ir>) -> Result<Id, Unsupported> {
    let go = |x: &Expr, out: &mut RecExpr<Ir>| lower_expr(x, out);
    Ok(match &e.kind {
        ExprKind::Lit(s) => out.add(Ir::Num(Const::new(s.as_f64()))),
        ExprKind::Var(v) => out.add(Ir::Symbol(Symbol::from(v.as_str()))),
        ExprKind::Unary(op, x) => {
            let x = go(x, out)?;
            out.add(match op {
                UnaryOp::Neg => Ir::Neg(x),
                UnaryOp::Exp => Ir::Exp(x),
                UnaryOp::Log => Ir::Log(x),
                UnaryOp::Sqrt => Ir::Sqrt(x),
                UnaryOp::Abs => Ir::Abs(x),
                UnaryOp::Sigmoid => Ir::Sigmoid(x),
                other => return Err(Unsupported(format!("`{}`", other.name()))),
            })
        }
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (go(a, out)?, go(b, out)?);
            out.add(match op {
                BinOp::Mul => Ir::EMul([a, b]),
                BinOp::Add => Ir::EAdd([a, b]),
                BinOp::Sub => Ir::ESub([a, b]),
                BinOp::Div => Ir::EDiv([a, b]),
                BinOp::Pow => Ir::EPow([a, b]),
                other => return Err(Unsupported(format!("`{}`", other.symbol()))),
            })
        }
        ExprKind::MatMul(a, b) => {
            let (a, b) = (go(a, out)?, go(b, out)?);
            out.add(Ir::MMul([a, b]))
        }
        ExprKind::Transpose(x) => {
            let x = go(x, out)?;
            out.add(Ir::Trans(x))
        }
        ExprKind::Agg(AggOp::Sum, dir, x) => {
            let x = go(x, out)?;
            out.add(match dir {
                AggDir::All => Ir::MSum(x),
                AggDir::Row => Ir::RowSums(x),
                AggDir::Col => Ir::ColSums(x),
            })
        }
        ExprKind::AsScalar(x) => {
            let x = go(x, out)?;
            out.add(Ir::AsScalar(x))
        }
        ExprKind::Fill { value, rows, cols } => {
            let (v, r, c) = (go(value, out)?, go(rows, out)?, go(cols, out)?);
            out.add(Ir::Fill([v, r, c]))
        }
        other => {
            let name = format!("{other:?}");
            let name = name.split(['(', ' ', '{']).next().unwrap_or("").to_string();
            return Err(Unsupported(name));
        }
    })
}
