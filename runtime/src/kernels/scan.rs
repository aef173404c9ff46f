//! Column scans and row arg-extremes: `cumsum`, `cumprod`, `cummin`, `cummax`,
//! `cumsumprod`, `rowIndexMax`, `rowIndexMin`, and `trace`.
//!
//! * The cumulative aggregates run down each column (`cumsum(X)[i, j] = sum(X[1:i, j])`),
//!   with IEEE propagation of NaN; `cummin`/`cummax` propagate NaN from its row on.
//! * `rowIndexMax(X)` is the 1-based column of the largest value of each row; among equal
//!   maxima the **last** wins (SystemDS compares with `>=`), implicit zeros count as values,
//!   NaN cells are skipped, and an all-NaN row gives 1. `rowIndexMin` likewise with `<=`.
//!   A matrix with no columns is an error, as in SystemDS.

use crate::error::RuntimeError;
use crate::matrix::Matrix;
use ndarray::Array2;

/// A cumulative aggregate down the columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CumOp {
    /// `cumsum`
    Sum,
    /// `cumprod`
    Prod,
    /// `cummin`
    Min,
    /// `cummax`
    Max,
}

impl CumOp {
    /// The builtin's DML name.
    pub fn name(self) -> &'static str {
        match self {
            CumOp::Sum => "cumsum",
            CumOp::Prod => "cumprod",
            CumOp::Min => "cummin",
            CumOp::Max => "cummax",
        }
    }

    fn step(self, acc: f64, v: f64) -> f64 {
        match self {
            CumOp::Sum => acc + v,
            CumOp::Prod => acc * v,
            CumOp::Min => crate::ops::java_min(acc, v),
            CumOp::Max => crate::ops::java_max(acc, v),
        }
    }
}

/// `cumsum(X)`, `cumprod(X)`, `cummin(X)`, `cummax(X)`: see the module doc.
pub fn cumulative(op: CumOp, x: &Matrix) -> Matrix {
    let mut d = x.to_dense();
    let (m, n) = d.dim();
    if m > 0 {
        let s = d.as_slice_mut().expect("standard layout");
        for i in 1..m {
            let (prev, cur) = s.split_at_mut(i * n);
            let prev = &prev[(i - 1) * n..];
            for (c, &p) in cur[..n].iter_mut().zip(prev) {
                *c = op.step(p, *c);
            }
        }
    }
    Matrix::from_dense(d)
}

/// `cumsumprod(X)` of an `m x 2` matrix: `y[i] = X[i, 1] + X[i, 2] * y[i - 1]`, `y[0] = 0`
/// before the first row. Error: not two columns.
pub fn cumsumprod(x: &Matrix) -> Result<Matrix, RuntimeError> {
    if x.cols() != 2 {
        return Err(RuntimeError::invalid(
            "cumsumprod",
            format!("the input must have two columns, found {}", x.cols()),
        ));
    }
    let mut y = 0.0;
    let v: Vec<f64> = (0..x.rows())
        .map(|i| {
            y = x.get(i, 0) + x.get(i, 1) * y;
            y
        })
        .collect();
    Ok(Matrix::from_dense(
        Array2::from_shape_vec((x.rows(), 1), v).expect("shape"),
    ))
}

/// `rowIndexMax(X)` (`max = true`) or `rowIndexMin(X)`: an `m x 1` column of 1-based column
/// indices. Error: `X` has no columns.
pub fn row_index_extreme(x: &Matrix, max: bool) -> Result<Matrix, RuntimeError> {
    let (m, n) = x.shape();
    if n == 0 {
        let op = if max { "rowIndexMax" } else { "rowIndexMin" };
        return Err(RuntimeError::invalid(
            op,
            "undefined for a matrix with no columns",
        ));
    }
    let better = |v: f64, best: f64| if max { v >= best } else { v <= best };
    let init = if max {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    };
    let mut out = Vec::with_capacity(m);
    for i in 0..m {
        let mut best = init;
        let mut at: Option<usize> = None;
        match x {
            Matrix::Dense(d) => {
                for (j, &v) in d.row(i).iter().enumerate() {
                    if better(v, best) {
                        best = v;
                        at = Some(j);
                    }
                }
            }
            Matrix::Sparse(s) => {
                // walk all cells in order, implicit zeros included
                let row = s.outer_view(i).expect("row in range");
                let mut it = row.iter().peekable();
                for j in 0..n {
                    let v = match it.peek() {
                        Some(&(c, &v)) if c == j => {
                            it.next();
                            v
                        }
                        _ => 0.0,
                    };
                    if better(v, best) {
                        best = v;
                        at = Some(j);
                    }
                }
            }
        }
        out.push((at.unwrap_or(0) + 1) as f64);
    }
    Ok(Matrix::from_dense(
        Array2::from_shape_vec((m, 1), out).expect("shape"),
    ))
}

/// `trace(X)`: the sum of the diagonal of a square matrix. Error: not square.
pub fn trace(x: &Matrix) -> Result<f64, RuntimeError> {
    if x.rows() != x.cols() {
        return Err(RuntimeError::invalid(
            "trace",
            format!("the matrix must be square, found {}x{}", x.rows(), x.cols()),
        ));
    }
    Ok((0..x.rows()).map(|i| x.get(i, i)).sum())
}
