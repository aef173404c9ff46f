//! Scalar semantics of the element-wise operators, shared by scalar arithmetic and the
//! matrix kernels. Booleans are 1.0/0.0 as in DML.

use std::fmt;

/// A binary element-wise operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `^`
    Pow,
    /// `%/%` (the quotient truncated toward zero, as SystemDS computes it; see `int_div`)
    IntDiv,
    /// `%%` (R's modulus: `a - floor(a / b) * b`)
    Mod,
    /// element-wise `min(a, b)`
    Min,
    /// element-wise `max(a, b)`
    Max,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `&`
    And,
    /// `|`
    Or,
}

impl BinOp {
    /// Every operator, in declaration order.
    pub const ALL: [BinOp; 17] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Pow,
        BinOp::IntDiv,
        BinOp::Mod,
        BinOp::Min,
        BinOp::Max,
        BinOp::Lt,
        BinOp::Le,
        BinOp::Gt,
        BinOp::Ge,
        BinOp::Eq,
        BinOp::Ne,
        BinOp::And,
        BinOp::Or,
    ];

    /// Applies the operator to two doubles.
    #[inline]
    pub fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a * b,
            BinOp::Div => a / b,
            BinOp::Pow => pow(a, b),
            BinOp::IntDiv => int_div(a, b),
            BinOp::Mod if b == 0.0 => f64::NAN,
            BinOp::Mod => a - int_div(a, b) * b,
            BinOp::Min => java_min(a, b),
            BinOp::Max => java_max(a, b),
            BinOp::Lt => bool01(a < b),
            BinOp::Le => bool01(a <= b),
            BinOp::Gt => bool01(a > b),
            BinOp::Ge => bool01(a >= b),
            BinOp::Eq => bool01(a == b),
            BinOp::Ne => bool01(a != b),
            BinOp::And => bool01(a != 0.0 && b != 0.0),
            BinOp::Or => bool01(a != 0.0 || b != 0.0),
        }
    }

    /// Whether the operator yields a boolean.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne
        )
    }

    /// Whether the operator is logical (`&`, `|`).
    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }

    /// The operator as written in DML.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Pow => "^",
            BinOp::IntDiv => "%/%",
            BinOp::Mod => "%%",
            BinOp::Min => "min",
            BinOp::Max => "max",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::And => "&",
            BinOp::Or => "|",
        }
    }
}

impl fmt::Display for BinOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

/// `a ^ b` with the common small exponents done exactly by multiplication.
#[inline]
fn pow(a: f64, b: f64) -> f64 {
    if b == 2.0 {
        a * a
    } else if b == 1.0 {
        a
    } else if b == 0.5 && a != f64::NEG_INFINITY {
        // IEEE pow (and Java's Math.pow): pow(-0, 0.5) is +0 where sqrt(-0) is -0, and
        // pow(-Inf, 0.5) is +Inf where sqrt(-Inf) is NaN
        a.sqrt() + 0.0
    } else {
        a.powf(b)
    }
}

#[inline]
fn bool01(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// A unary element-wise function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UnaryOp {
    /// unary `-`
    Neg,
    /// `!`
    Not,
    /// `exp`
    Exp,
    /// `log` (natural)
    Log,
    /// `sqrt`
    Sqrt,
    /// `abs`
    Abs,
    /// `sigmoid`, `1 / (1 + exp(-x))`
    Sigmoid,
    /// `round` (half away from zero)
    Round,
    /// `floor`
    Floor,
    /// `ceil`
    Ceil,
    /// `sign`
    Sign,
}

impl UnaryOp {
    /// Applies the function to a double.
    #[inline]
    pub fn apply(self, x: f64) -> f64 {
        match self {
            UnaryOp::Neg => -x,
            UnaryOp::Not => bool01(x == 0.0),
            UnaryOp::Exp => crate::kernels::fastmath::exp(x),
            UnaryOp::Log => x.ln(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Abs => x.abs(),
            UnaryOp::Sigmoid => crate::kernels::fastmath::sigmoid(x),
            UnaryOp::Round => java_round(x),
            UnaryOp::Floor => x.floor(),
            UnaryOp::Ceil => x.ceil(),
            UnaryOp::Sign => {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    x
                }
            }
        }
    }

    /// Applies the function to every value of a slice: [`UnaryOp::apply`]'s bits, with
    /// `exp` and `sigmoid` four values at a time where the CPU allows
    /// ([`crate::kernels::fastmath::exp_in_place`]).
    pub fn apply_slice(self, xs: &mut [f64]) {
        match self {
            UnaryOp::Exp => crate::kernels::fastmath::exp_in_place(xs),
            UnaryOp::Sigmoid => crate::kernels::fastmath::sigmoid_in_place(xs),
            _ => xs.iter_mut().for_each(|v| *v = self.apply(*v)),
        }
    }

    /// Whether `f(0) == 0`, so the function keeps a sparse matrix sparse.
    pub fn is_sparse_safe(self) -> bool {
        self.apply(0.0) == 0.0
    }

    /// The function's DML name.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::Not => "!",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Abs => "abs",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Round => "round",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Sign => "sign",
        }
    }
}

/// A full, row-wise or column-wise aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AggOp {
    /// sum of the cells
    Sum,
    /// arithmetic mean
    Mean,
    /// smallest cell
    Min,
    /// largest cell
    Max,
}

/// Which cells an aggregate reduces over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AggDir {
    /// all cells, giving a scalar
    All,
    /// each row, giving an `m x 1` column
    Row,
    /// each column, giving a `1 x n` row
    Col,
}

/// `min(a, b)` as SystemDS computes it (Java's `Math.min`): NaN if either is NaN, and `-0.0`
/// is smaller than `+0.0` (Rust's `f64::min` may return either zero, and the other operand
/// for a NaN), so `x / min(0.0, -0.0)` is `-Inf` for a positive x.
#[inline]
pub fn java_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a < b || (a == b && a.is_sign_negative()) {
        a
    } else {
        b
    }
}

/// `max(a, b)` as SystemDS computes it (Java's `Math.max`): NaN if either is NaN, and `+0.0`
/// is larger than `-0.0`.
#[inline]
pub fn java_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a > b || (a == b && a.is_sign_positive()) {
        a
    } else {
        b
    }
}

/// DML's `round`, which is Java's `Math.round` as SystemDS computes it: the nearest integer,
/// halves towards +Inf (`round(-2.5)` is -2), as a 64-bit integer, so NaN gives 0, infinities
/// saturate to +-9.223372036854776E18 and no result is -0.0.
#[inline]
pub fn java_round(x: f64) -> f64 {
    let f = x.floor();
    // x - floor(x) is exact below 2^52 and 0 above (every such double is an integer)
    let r = if x - f >= 0.5 { f + 1.0 } else { f };
    (r as i64) as f64
}

/// SystemDS's `a %/% b`: the double quotient cast to a long, rounding toward zero after
/// adding 2^-53 to its magnitude (`UtilFunctions.toLong`), except that a NaN or infinite
/// quotient stays as it is. So `-7 %/% 2` is -3 (R says -4), and `a %% b` is
/// `a - (a %/% b) * b`, with the sign of `a` (NaN when `b` is zero).
pub fn int_div(a: f64, b: f64) -> f64 {
    let q = a / b;
    if !q.is_finite() {
        return q;
    }
    let t = q.signum() * (q.abs() + f64::EPSILON / 2.0).floor();
    // Java's cast to long saturates, and has no negative zero
    t.clamp(i64::MIN as f64, i64::MAX as f64) + 0.0
}

#[cfg(test)]
mod tests {
    use super::BinOp;

    /// `min` and `max` are Java's: `-0.0 < +0.0` in either order, NaN wins (found by the
    /// fuzzer: `x / min(x * 0, -0.0)` was `+Inf` for a positive x, SystemDS gives `-Inf`).
    #[test]
    fn min_max_order_signed_zeros_and_propagate_nan() {
        for (a, b) in [(0.0, -0.0), (-0.0, 0.0)] {
            assert!(BinOp::Min.apply(a, b).is_sign_negative(), "min({a}, {b})");
            assert!(BinOp::Max.apply(a, b).is_sign_positive(), "max({a}, {b})");
        }
        for op in [BinOp::Min, BinOp::Max] {
            assert!(op.apply(f64::NAN, 1.0).is_nan() && op.apply(1.0, f64::NAN).is_nan());
        }
        assert_eq!(BinOp::Min.apply(2.0, -1.0), -1.0);
        assert_eq!(BinOp::Max.apply(2.0, -1.0), 2.0);
    }

    /// `^` follows IEEE pow for every exponent, including the ones done by a shortcut (found
    /// by the fuzzer: `(-0.0)^0.5` was -0.0 and `(-Inf)^0.5` NaN).
    #[test]
    fn pow_shortcuts_agree_with_ieee_pow() {
        let xs = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            2.5,
            -3.0,
            1e-300,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        for x in xs {
            for p in [2.0, 1.0, 0.5, 3.0, -1.0, 0.0] {
                let (got, want) = (BinOp::Pow.apply(x, p), x.powf(p));
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "{x} ^ {p}: {got} (IEEE pow: {want})"
                );
            }
        }
    }
}
