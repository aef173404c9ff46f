//! Cell-wise builtins beyond the operators of [`crate::ops::UnaryOp`]: the trigonometric and
//! hyperbolic functions, `isNaN`/`is.nan`, `isNA`, `isInf`, plus `contains` and `outer`.
//!
//! A function with `f(0) == 0` (`sin`, `tan`, `asin`, `atan`, `sinh`, `tanh`, the tests)
//! keeps a sparse matrix sparse; the others (`cos`, `acos`, `cosh`) give a dense result.
//! IEEE semantics throughout (`asin(2)` is NaN). As in SystemDS, all but `atan` are Commons
//! Math's `FastMath` functions ([`crate::kernels::fastmath`]), bit for bit; `atan` is the
//! platform's (SystemDS's is `java.lang.Math.atan`, fdlibm's, which differs in the last bit
//! on about 1.6% of arguments).

use crate::error::RuntimeError;
use crate::kernels::elementwise::{binary, Operand};
use crate::kernels::fastmath;
use crate::matrix::Matrix;
use crate::ops::BinOp;

/// A cell-wise function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    /// `sin`
    Sin,
    /// `cos`
    Cos,
    /// `tan`
    Tan,
    /// `asin`
    Asin,
    /// `acos`
    Acos,
    /// `atan`
    Atan,
    /// `sinh`
    Sinh,
    /// `cosh`
    Cosh,
    /// `tanh`
    Tanh,
    /// `isNaN` / `is.nan`: 1 where NaN
    IsNaN,
    /// `isNA` / `is.na`: 1 where NaN (DML's missing value)
    IsNA,
    /// `isInf` / `is.infinite`: 1 where +/-Inf
    IsInf,
}

impl MathFn {
    /// Every function, for tables and tests.
    pub const ALL: [MathFn; 12] = [
        MathFn::Sin,
        MathFn::Cos,
        MathFn::Tan,
        MathFn::Asin,
        MathFn::Acos,
        MathFn::Atan,
        MathFn::Sinh,
        MathFn::Cosh,
        MathFn::Tanh,
        MathFn::IsNaN,
        MathFn::IsNA,
        MathFn::IsInf,
    ];

    /// The function of one double.
    #[inline]
    pub fn apply(self, x: f64) -> f64 {
        let b = |c: bool| if c { 1.0 } else { 0.0 };
        match self {
            MathFn::Sin => fastmath::sin(x),
            MathFn::Cos => fastmath::cos(x),
            MathFn::Tan => fastmath::tan(x),
            MathFn::Asin => fastmath::asin(x),
            MathFn::Acos => fastmath::acos(x),
            MathFn::Atan => x.atan(),
            MathFn::Sinh => fastmath::sinh(x),
            MathFn::Cosh => fastmath::cosh(x),
            MathFn::Tanh => fastmath::tanh(x),
            MathFn::IsNaN | MathFn::IsNA => b(x.is_nan()),
            MathFn::IsInf => b(x.is_infinite()),
        }
    }

    /// The DML name (the first spelling where there are two).
    pub fn name(self) -> &'static str {
        match self {
            MathFn::Sin => "sin",
            MathFn::Cos => "cos",
            MathFn::Tan => "tan",
            MathFn::Asin => "asin",
            MathFn::Acos => "acos",
            MathFn::Atan => "atan",
            MathFn::Sinh => "sinh",
            MathFn::Cosh => "cosh",
            MathFn::Tanh => "tanh",
            MathFn::IsNaN => "isNaN",
            MathFn::IsNA => "isNA",
            MathFn::IsInf => "isInf",
        }
    }

    /// The function named `name` in DML (`is.nan`, `is.na` and `is.infinite` included).
    pub fn from_name(name: &str) -> Option<MathFn> {
        Some(match name {
            "sin" => MathFn::Sin,
            "cos" => MathFn::Cos,
            "tan" => MathFn::Tan,
            "asin" => MathFn::Asin,
            "acos" => MathFn::Acos,
            "atan" => MathFn::Atan,
            "sinh" => MathFn::Sinh,
            "cosh" => MathFn::Cosh,
            "tanh" => MathFn::Tanh,
            "isNaN" | "is.nan" => MathFn::IsNaN,
            "isNA" | "is.na" => MathFn::IsNA,
            "isInf" | "is.infinite" => MathFn::IsInf,
            _ => return None,
        })
    }
}

/// Applies `f` to every cell; sparse stays sparse when `f(0) == 0`.
pub fn map(f: MathFn, x: &Matrix) -> Matrix {
    match x {
        Matrix::Sparse(s) if f.apply(0.0) == 0.0 => Matrix::from_csr(s.map(|&v| f.apply(v))),
        _ => {
            let mut d = x.to_dense();
            d.mapv_inplace(|v| f.apply(v));
            Matrix::from_dense(d)
        }
    }
}

/// `contains(target=X, pattern=p)`: whether some cell equals `p` (NaN matches NaN; a zero
/// pattern matches the implicit zeros of a sparse matrix).
pub fn contains(x: &Matrix, pattern: f64) -> bool {
    let hit = |v: f64| v == pattern || (pattern.is_nan() && v.is_nan());
    match x {
        Matrix::Dense(d) => d.iter().any(|&v| hit(v)),
        Matrix::Sparse(s) => {
            (pattern == 0.0 && s.nnz() < x.cells()) || s.data().iter().any(|&v| hit(v))
        }
    }
}

/// `contains(target=X, pattern=p)` with a row vector `p`: whether some row of `X` equals `p`
/// cell by cell, as SystemDS compares them (Java's `Arrays.equals`: NaN equals NaN, `-0` is
/// not `0`; a sparse matrix's implicit cells are `0`). Errors: `p` is not a row of `X`'s width.
pub fn contains_row(x: &Matrix, pattern: &Matrix) -> Result<bool, RuntimeError> {
    if pattern.rows() != 1 || pattern.cols() != x.cols() {
        return Err(RuntimeError::invalid(
            "contains",
            format!(
                "a matrix pattern must be a row vector of the target's {} columns, found {}x{}",
                x.cols(),
                pattern.rows(),
                pattern.cols()
            ),
        ));
    }
    let p: Vec<f64> = (0..pattern.cols()).map(|j| pattern.get(0, j)).collect();
    let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    Ok((0..x.rows()).any(|i| p.iter().enumerate().all(|(j, &v)| same(x.get(i, j), v))))
}

/// `outer(a, b, op)`: `op` between each cell of the column `a` (`m x 1`) and each cell of
/// the row `b` (`1 x n`), an `m x n` matrix. Errors: `a` not a column or `b` not a row.
pub fn outer(a: &Matrix, b: &Matrix, op: BinOp) -> Result<Matrix, RuntimeError> {
    if a.cols() != 1 || b.rows() != 1 {
        return Err(RuntimeError::invalid(
            "outer",
            format!(
                "needs a column vector and a row vector, found {}x{} and {}x{}",
                a.rows(),
                a.cols(),
                b.rows(),
                b.cols()
            ),
        ));
    }
    let (m, n) = (a.rows(), b.cols());
    if m == 1 || n == 1 {
        // broadcasting a 1x1 side would not give m x n; expand explicitly
        let out: Vec<f64> = (0..m)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| op.apply(a.get(i, 0), b.get(0, j)))
            .collect();
        return Ok(Matrix::from_dense(
            ndarray::Array2::from_shape_vec((m, n), out).expect("shape"),
        ));
    }
    Ok(binary(op, Operand::Matrix(a), Operand::Matrix(b)))
}
