//! Aggregates: `sum`, `mean`, `min`, `max` over all cells, each row or each column.
//!
//! Sparse inputs are reduced over their non-zeros; `min`/`max` also count an implicit zero
//! whenever a row, column or the whole matrix has fewer stored values than cells.

use crate::matrix::Matrix;
use crate::ops::{java_max, java_min, AggDir, AggOp};
use ndarray::{Array2, Axis};
use rayon::prelude::*;

/// Reduces over all cells, giving a scalar. `min`/`max` of an empty matrix are +/-Inf, `mean`
/// of an empty matrix is NaN.
pub fn aggregate_all(op: AggOp, x: &Matrix) -> f64 {
    let cells = x.cells();
    match x {
        Matrix::Dense(d) => {
            let s = d.as_slice().expect("standard layout");
            match op {
                AggOp::Sum => par_sum(s),
                AggOp::Mean => par_sum(s) / cells as f64,
                AggOp::Min => s.iter().copied().fold(f64::INFINITY, java_min),
                AggOp::Max => s.iter().copied().fold(f64::NEG_INFINITY, java_max),
            }
        }
        Matrix::Sparse(sp) => {
            let s = sp.data();
            let has_zero = sp.nnz() < cells;
            match op {
                AggOp::Sum => par_sum(s),
                AggOp::Mean => par_sum(s) / cells as f64,
                AggOp::Min => {
                    let init = if has_zero { 0.0 } else { f64::INFINITY };
                    s.iter().copied().fold(init, java_min)
                }
                AggOp::Max => {
                    let init = if has_zero { 0.0 } else { f64::NEG_INFINITY };
                    s.iter().copied().fold(init, java_max)
                }
            }
        }
    }
}

/// Reduces each row (`AggDir::Row`, an `m x 1` result) or column (`AggDir::Col`, `1 x n`).
pub fn aggregate_dir(op: AggOp, dir: AggDir, x: &Matrix) -> Matrix {
    let (m, n) = x.shape();
    let out: Vec<f64> = match (dir, x) {
        (AggDir::All, _) => return Matrix::Dense(Array2::from_elem((1, 1), aggregate_all(op, x))),
        (AggDir::Row, Matrix::Dense(d)) => d
            .axis_iter(Axis(0))
            .map(|r| reduce(op, r.iter().copied(), n, n))
            .collect(),
        (AggDir::Row, Matrix::Sparse(s)) => s
            .outer_iterator()
            .map(|r| reduce(op, r.data().iter().copied(), r.nnz(), n))
            .collect(),
        (AggDir::Col, Matrix::Dense(d)) => {
            if op == AggOp::Sum || op == AggOp::Mean {
                let mut acc = vec![0.0; n];
                for r in d.axis_iter(Axis(0)) {
                    for (a, &v) in acc.iter_mut().zip(r.iter()) {
                        *a += v;
                    }
                }
                if op == AggOp::Mean {
                    acc.iter_mut().for_each(|a| *a /= m as f64);
                }
                acc
            } else {
                d.axis_iter(Axis(1))
                    .map(|c| reduce(op, c.iter().copied(), m, m))
                    .collect()
            }
        }
        (AggDir::Col, Matrix::Sparse(s)) => {
            let mut acc = vec![0.0; n];
            let mut cnt = vec![0usize; n];
            let mut ext = match op {
                AggOp::Min => vec![f64::INFINITY; n],
                AggOp::Max => vec![f64::NEG_INFINITY; n],
                _ => Vec::new(),
            };
            for (&v, (_, j)) in s.iter() {
                cnt[j] += 1;
                match op {
                    AggOp::Sum | AggOp::Mean => acc[j] += v,
                    AggOp::Min => ext[j] = java_min(ext[j], v),
                    AggOp::Max => ext[j] = java_max(ext[j], v),
                }
            }
            match op {
                AggOp::Sum => acc,
                AggOp::Mean => acc.iter().map(|a| a / m as f64).collect(),
                AggOp::Min => ext
                    .iter()
                    .zip(&cnt)
                    .map(|(&e, &c)| if c < m { java_min(e, 0.0) } else { e })
                    .collect(),
                AggOp::Max => ext
                    .iter()
                    .zip(&cnt)
                    .map(|(&e, &c)| if c < m { java_max(e, 0.0) } else { e })
                    .collect(),
            }
        }
    };
    let shape = if dir == AggDir::Row { (m, 1) } else { (1, n) };
    Matrix::from_dense(Array2::from_shape_vec(shape, out).expect("aggregate shape"))
}

/// Reduces `stored` values of a line of `len` cells (the rest are implicit zeros).
fn reduce(op: AggOp, vals: impl Iterator<Item = f64>, stored: usize, len: usize) -> f64 {
    match op {
        AggOp::Sum => sum0(vals),
        AggOp::Mean => sum0(vals) / len as f64,
        AggOp::Min => {
            let init = if stored < len { 0.0 } else { f64::INFINITY };
            vals.fold(init, java_min)
        }
        AggOp::Max => {
            let init = if stored < len { 0.0 } else { f64::NEG_INFINITY };
            vals.fold(init, java_max)
        }
    }
}

/// Sum of a slice: pairwise by fixed-size blocks so the result does not depend on the
/// number of threads.
pub(crate) fn par_sum(s: &[f64]) -> f64 {
    const BLOCK: usize = 1 << 14;
    if s.len() <= BLOCK {
        return sum0(s.iter().copied());
    }
    let partial: Vec<f64> = s
        .par_chunks(BLOCK)
        .map(|c| sum0(c.iter().copied()))
        .collect();
    sum0(partial.into_iter())
}

/// A sum that starts from +0.0, as SystemDS's does: the sum of no values (an all-zero
/// sparse matrix) is +0.0, never the -0.0 that `Iterator::sum` gives for floats.
pub fn sum0(vals: impl Iterator<Item = f64>) -> f64 {
    vals.fold(0.0, |a, b| a + b)
}
