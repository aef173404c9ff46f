//! Scalar arithmetic with DML's types: integers stay integers under `+ - * %/% %% min max`
//! (falling back to doubles on overflow or a zero divisor), `/` and `^` give doubles,
//! comparisons and `& | !` give booleans. Used for constant folding and by the executor.

use super::hir::Scalar;
use spores_runtime::ops::{BinOp, UnaryOp};

/// `a op b` on scalars.
pub fn binary(op: BinOp, a: Scalar, b: Scalar) -> Scalar {
    if op.is_comparison() || op.is_logical() {
        return Scalar::Bool(op.apply(a.as_f64(), b.as_f64()) != 0.0);
    }
    let as_int = |s: Scalar| match s {
        Scalar::Int(i) => Some(i),
        Scalar::Bool(b) => Some(i64::from(b)),
        Scalar::Double(_) => None,
    };
    if let (Some(x), Some(y)) = (as_int(a), as_int(b)) {
        let r = match op {
            BinOp::Add => x.checked_add(y),
            BinOp::Sub => x.checked_sub(y),
            BinOp::Mul => x.checked_mul(y),
            // truncated toward zero, as SystemDS (spores_runtime::ops::int_div)
            BinOp::IntDiv => x.checked_div(y),
            BinOp::Mod => x.checked_rem(y),
            BinOp::Min => Some(x.min(y)),
            BinOp::Max => Some(x.max(y)),
            _ => None,
        };
        if let Some(r) = r {
            return Scalar::Int(r);
        }
    }
    Scalar::Double(op.apply(a.as_f64(), b.as_f64()))
}

/// `op a` on a scalar.
pub fn unary(op: UnaryOp, a: Scalar) -> Scalar {
    match (op, a) {
        (UnaryOp::Not, _) => Scalar::Bool(a.as_f64() == 0.0),
        (UnaryOp::Neg, Scalar::Int(i)) if i != i64::MIN => Scalar::Int(-i),
        (UnaryOp::Neg, Scalar::Bool(b)) => Scalar::Int(-i64::from(b)),
        _ => Scalar::Double(op.apply(a.as_f64())),
    }
}

/// A matrix index as SystemDS reads a number in an index (`UtilFunctions.toLong`): truncated
/// toward zero after adding 2^-53 to its magnitude, so `16.33` selects row 16.
pub fn index_value(v: f64) -> f64 {
    v.signum() * (v.abs() + f64::EPSILON / 2.0).floor()
}

/// A scalar returned as a function's output of a declared type: an integer declared a double
/// becomes one (SystemDS prints it as such); other values are returned as they are (SystemDS
/// does not truncate a double declared an integer).
pub fn cast(a: Scalar, t: super::hir::ScalarTy) -> Scalar {
    match (a, t) {
        (Scalar::Int(i), super::hir::ScalarTy::Double) => Scalar::Double(i as f64),
        _ => a,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_division_and_modulus_follow_systemds() {
        for (a, b) in [(7, 2), (-7, 2), (7, -2), (-7, -2), (6, 3), (0, 5)] {
            let q = binary(BinOp::IntDiv, Scalar::Int(a), Scalar::Int(b));
            let m = binary(BinOp::Mod, Scalar::Int(a), Scalar::Int(b));
            // toward zero, and the same as on doubles
            let fq = (a as f64 / b as f64).trunc();
            assert_eq!(q.as_f64(), BinOp::IntDiv.apply(a as f64, b as f64));
            assert_eq!(m.as_f64(), BinOp::Mod.apply(a as f64, b as f64));
            assert_eq!(q, Scalar::Int(fq as i64), "{a} %/% {b}");
            assert_eq!(m, Scalar::Int(a - fq as i64 * b), "{a} %% {b}");
        }
        assert!(binary(BinOp::Mod, Scalar::Int(1), Scalar::Int(0))
            .as_f64()
            .is_nan());
    }

    #[test]
    fn types_follow_dml() {
        assert_eq!(
            binary(BinOp::Add, Scalar::Int(1), Scalar::Int(2)),
            Scalar::Int(3)
        );
        assert_eq!(
            binary(BinOp::Div, Scalar::Int(1), Scalar::Int(2)),
            Scalar::Double(0.5)
        );
        assert_eq!(
            binary(BinOp::Pow, Scalar::Int(2), Scalar::Int(3)),
            Scalar::Double(8.0)
        );
        assert_eq!(
            binary(BinOp::Lt, Scalar::Int(1), Scalar::Double(2.0)),
            Scalar::Bool(true)
        );
        assert_eq!(
            binary(BinOp::Mul, Scalar::Int(i64::MAX), Scalar::Int(2)),
            Scalar::Double(i64::MAX as f64 * 2.0)
        );
    }
}
