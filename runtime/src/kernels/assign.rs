//! Left indexing: `X[rows, cols] = v` in place.

use crate::matrix::{Dense, Matrix};
use std::ops::Range;

/// What is stored into the selection.
pub enum Source<'a> {
    /// every selected cell gets this value
    Scalar(f64),
    /// a matrix of the selection's shape (checked by the caller)
    Matrix(&'a Matrix),
}

/// Stores `v` into `m[rows, cols]` (0-based half-open ranges within `m`'s shape, checked by
/// the caller). A sparse `m` becomes dense first: assignments in a loop then update the
/// cells in place, without copying the matrix per assignment.
pub fn assign(m: &mut Matrix, rows: Range<usize>, cols: Range<usize>, v: Source<'_>) {
    if let Matrix::Sparse(_) = m {
        *m = Matrix::Dense(m.to_dense());
    }
    let Matrix::Dense(d) = m else {
        unreachable!("made dense above")
    };
    let mut sel = d.slice_mut(ndarray::s![rows, cols]);
    match v {
        Source::Scalar(s) => sel.fill(s),
        Source::Matrix(x) => {
            assert_eq!(
                sel.dim(),
                x.shape(),
                "left indexing: shapes checked by the caller"
            );
            let xd: Dense = x.to_dense();
            sel.assign(&xd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assigns_scalars_and_blocks_like_a_naive_loop() {
        let mut m = Matrix::from_triplets(4, 3, &[(0, 0, 1.0), (3, 2, 5.0)]);
        let mut want = m.to_dense();
        assign(&mut m, 1..3, 0..2, Source::Scalar(7.0));
        for i in 1..3 {
            for j in 0..2 {
                want[[i, j]] = 7.0;
            }
        }
        assert_eq!(m.to_dense(), want);
        let b = Matrix::from_dense(Dense::from_shape_fn((2, 1), |(i, _)| i as f64 + 10.0));
        assign(&mut m, 2..4, 2..3, Source::Matrix(&b));
        want[[2, 2]] = 10.0;
        want[[3, 2]] = 11.0;
        assert_eq!(m.to_dense(), want);
    }
}
