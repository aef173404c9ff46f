//! Column scans and row arg-extremes: `cumsum`, `cumprod`, `cummin`, `cummax`,
//! `cumsumprod`, `rowIndexMax`, `rowIndexMin`, and `trace`.
//!
//! * The cumulative aggregates run down each column (`cumsum(X)[i, j] = sum(X[1:i, j])`),
//!   with IEEE propagation of NaN; `cummin`/`cummax` propagate NaN from its row on.
//!   `cumsum` is SystemDS's `ucumk+`: each column a Kahan-compensated running sum
//!   ([`Kahan`]) over the stored values in row order (every cell of a dense matrix; only the
//!   non-zeros of a sparse one, whose zeros leave the compensation unapplied), so the sums
//!   have SystemDS's bits (sequentially: past 256K cells SystemDS splits the rows among its
//!   threads).
//! * `rowIndexMax(X)` is the 1-based column of the largest value of each row; among equal
//!   maxima the **last** wins (SystemDS compares with `>=`), implicit zeros count as values,
//!   NaN cells are skipped, and an all-NaN row gives 1. `rowIndexMin` likewise with `<=`.
//!   A matrix with no columns is an error, as in SystemDS.

use crate::error::RuntimeError;
use crate::kernels::aggregate::Kahan;
use crate::matrix::Matrix;
use crate::ops::BinOp;
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
    if op == CumOp::Sum {
        return cumsum(x);
    }
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

/// `cumsum(X)`: each column's compensated running sum (see the module doc).
fn cumsum(x: &Matrix) -> Matrix {
    let (m, n) = x.shape();
    let mut acc = vec![Kahan::default(); n];
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        match x {
            Matrix::Dense(d) => {
                for (k, &v) in acc.iter_mut().zip(d.row(i).iter()) {
                    k.add(v);
                }
            }
            Matrix::Sparse(s) => {
                let row = s.outer_view(i).expect("row in range");
                for (j, &v) in row.iter() {
                    acc[j].add(v);
                }
            }
        }
        out.extend(acc.iter().map(|k| k.sum));
    }
    Matrix::from_dense(Array2::from_shape_vec((m, n), out).expect("shape"))
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

/// `rowIndexMin(outer(a, b, op))` for a comparison `op`, as SystemDS runs it: one fused
/// operator (SystemDS always uses it for this pattern: `LibMatrixOuterAgg`), whose answer is
/// meant to be the FIRST column where the 0/1 row `op(a[i], b)` is smallest (R's `which.min`)
/// where `rowIndexMin` of any other matrix gives the last. It is computed as SystemDS computes
/// it, from `b` sorted (stably) with a running minimum of the original positions, and a
/// binary search of `a[i]` in it, so it gives SystemDS's answer also where that is not the
/// first column (ties between `a[i]` and values of `b`; for `!=` even 0). Computed from the
/// vectors, without forming the `m x n` comparison. Error: `a` not a column, `b` not a
/// non-empty row, or `op` not a comparison.
pub fn row_index_min_outer(a: &Matrix, b: &Matrix, op: BinOp) -> Result<Matrix, RuntimeError> {
    if a.cols() != 1 || b.rows() != 1 || b.cols() == 0 || !op.is_comparison() {
        return Err(RuntimeError::invalid(
            "outer",
            format!(
                "needs a column vector, a non-empty row vector and a comparison, found {}x{} and {}x{}",
                a.rows(),
                a.cols(),
                b.rows(),
                b.cols()
            ),
        ));
    }
    let (bv, bvi) = outer_min_positions(b, op);
    let n = bv.len();
    let at = |value: f64| -> f64 {
        let pos = |k: usize| bvi[k].wrapping_add(1) as f64;
        match op {
            BinOp::Eq if value == bv[0] => pos(0),
            BinOp::Ne if bv[0] != value => pos(0),
            BinOp::Gt | BinOp::Ge if value <= bv[0] || value > bv[n - 1] => 1.0,
            BinOp::Lt if value < bv[0] || value >= bv[n - 1] => 1.0,
            BinOp::Le if value < bv[0] || value > bv[n - 1] => 1.0,
            BinOp::Gt => pos(java_binary_search(&bv, value).unsigned_abs() - 1),
            BinOp::Ge => {
                let ix = java_binary_search(&bv, value);
                let ix = if ix < 0 {
                    ix.unsigned_abs() - 1
                } else {
                    ix as usize
                };
                pos(ix - 1)
            }
            BinOp::Lt => {
                let ix = java_binary_search(&bv, value);
                pos(if ix < 0 {
                    ix.unsigned_abs() - 2
                } else {
                    ix as usize
                })
            }
            BinOp::Le => {
                let ix = java_binary_search(&bv, value);
                pos(if ix < 0 {
                    ix.unsigned_abs() - 1
                } else {
                    ix as usize
                })
            }
            _ => 1.0,
        }
    };
    // a zero is looked up as 0.0 (SystemDS computes it once for the implicit zeros)
    let out: Vec<f64> = (0..a.rows())
        .map(|i| a.get(i, 0))
        .map(|v| at(if v == 0.0 { 0.0 } else { v }))
        .collect();
    Ok(Matrix::from_dense(
        Array2::from_shape_vec((a.rows(), 1), out).expect("shape"),
    ))
}

/// The values of the row `b` and the positions `rowIndexMin(outer(a, b, op))` looks up, as
/// SystemDS prepares them (`LibMatrixOuterAgg.prepareRowIndicesMin`): for `<`, `<=`, `>`, `>=`
/// the values sorted (equal values in their original order) and the running minimum of the
/// original positions (from the right for `>` and `>=`), shifted by one run of equal values
/// (left for `>=`, right for `<=`) or set to the first of its run (`>`); for `==` and `!=`
/// the values as they are, and only the first position set, from the run of values equal to
/// the first.
fn outer_min_positions(b: &Matrix, op: BinOp) -> (Vec<f64>, Vec<usize>) {
    let n = b.cols();
    let mut pairs: Vec<(f64, usize)> = (0..n).map(|j| (b.get(0, j), j)).collect();
    if matches!(op, BinOp::Eq | BinOp::Ne) {
        let bv: Vec<f64> = pairs.iter().map(|p| p.0).collect();
        let mut i = 0;
        while i < n - 1 && bv[0] == bv[i + 1] {
            i += 1;
        }
        let mut vix = vec![0usize; n];
        vix[0] = match op {
            BinOp::Eq if i < n - 1 => i + 1,
            // SystemDS's i - 1: -1 for a first value unlike the second, so the answer is 0
            BinOp::Ne if i < n - 1 => i.wrapping_sub(1),
            _ => 0,
        };
        return (bv, vix);
    }
    pairs.sort_by(|x, y| {
        x.0.partial_cmp(&y.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(x.1.cmp(&y.1))
    });
    let bv: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let sorted: Vec<usize> = pairs.iter().map(|p| p.1).collect();
    // the running minimum of the positions: from the left, or from the right for > and >=
    let mut vix = sorted.clone();
    if matches!(op, BinOp::Gt | BinOp::Ge) {
        for k in (0..n.saturating_sub(1)).rev() {
            vix[k] = vix[k].min(vix[k + 1]);
        }
    } else {
        for k in 1..n {
            vix[k] = vix[k].min(vix[k - 1]);
        }
    }
    match op {
        BinOp::Gt => {
            // every position of a run of equal values set to the run's first: SystemDS
            // compares the values with the first POSITION (not value) to start
            let mut last = 0usize;
            let mut last_val = vix[0] as f64;
            let mut i = 0usize;
            while i + 1 < n {
                while i + 1 < n && last_val == bv[i + 1] {
                    i += 1;
                }
                for j in last + 1..=i {
                    vix[j] = vix[last];
                }
                if i + 1 < n {
                    last = i + 1;
                    last_val = bv[i + 1];
                }
                i += 1;
            }
        }
        BinOp::Ge => {
            // shift left by one run of equal values (the last run keeps its own)
            let mut cur = 0usize;
            let mut i = 0usize;
            while i < n {
                let prev = bv[cur];
                while i < n && prev == bv[i] {
                    i += 1;
                }
                if i < n {
                    for j in cur..i {
                        vix[j] = vix[i];
                    }
                    cur = i;
                }
                i += 1;
            }
        }
        BinOp::Le => {
            // shift right by one run of equal values (the first run keeps its own)
            let mut i = n as isize - 1;
            while i > 0 {
                let prev_at = i as usize;
                let prev = bv[prev_at];
                while i >= 0 && prev == bv[i as usize] {
                    i -= 1;
                }
                if i >= 0 {
                    for j in i as usize + 1..=prev_at {
                        vix[j] = vix[i as usize];
                    }
                }
            }
        }
        _ => {}
    }
    (bv, vix)
}

/// Java's `Arrays.binarySearch(double[], key)`: the index of an equal value (the one its
/// bisection meets first), else `-(insertion point) - 1`; -0.0 sorts before 0.0.
fn java_binary_search(a: &[f64], key: f64) -> isize {
    let bits = |v: f64| -> i64 {
        if v.is_nan() {
            0x7ff8_0000_0000_0000
        } else {
            v.to_bits() as i64
        }
    };
    let (mut low, mut high) = (0isize, a.len() as isize - 1);
    while low <= high {
        let mid = (low + high) / 2;
        let v = a[mid as usize];
        if v < key {
            low = mid + 1;
        } else if v > key {
            high = mid - 1;
        } else {
            let (mb, kb) = (bits(v), bits(key));
            if mb == kb {
                return mid;
            } else if mb < kb {
                low = mid + 1;
            } else {
                high = mid - 1;
            }
        }
    }
    -(low + 1)
}

/// `trace(X)`: the sum of the diagonal of a square matrix, compensated in SystemDS's order.
/// Error: not square.
pub fn trace(x: &Matrix) -> Result<f64, RuntimeError> {
    if x.rows() != x.cols() {
        return Err(RuntimeError::invalid(
            "trace",
            format!("the matrix must be square, found {}x{}", x.rows(), x.cols()),
        ));
    }
    // SystemDS's uaktrace: the diagonal compensated, row by row; a sparse matrix's empty
    // rows are skipped (its other rows add their diagonal cell, 0 if not stored)
    let mut k = Kahan::default();
    for i in 0..x.rows() {
        match x {
            Matrix::Sparse(s) if s.outer_view(i).is_none_or(|r| r.nnz() == 0) => {}
            _ => k.add(x.get(i, i)),
        }
    }
    Ok(k.sum)
}
