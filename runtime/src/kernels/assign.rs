//! Left indexing: `X[rows, cols] = v` in place.

use crate::matrix::{count_nnz, dense_to_csr, is_stored, prefers_sparse_estimated, Dense, Matrix};
use std::ops::Range;

/// What is stored into the selection.
pub enum Source<'a> {
    /// every selected cell gets this value
    Scalar(f64),
    /// a matrix of the selection's shape (checked by the caller)
    Matrix(&'a Matrix),
}

/// Stores `v` into `m[rows, cols]` (0-based half-open ranges within `m`'s shape, checked by
/// the caller), and stores the result dense or sparse as SystemDS does
/// (`MatrixBlock.leftIndexingOperations`): sparse when its size estimate for
/// `min(cells, nnz(m) + nnz(v))` non-zeros says so
/// ([`crate::matrix::prefers_sparse_estimated`], `estimateSparsityOnLeftIndexing`), else dense,
/// whatever the count after the assignment. Products and sums add in another order on each
/// representation, so this decides their rounding (CsplineCG's tridiagonal system, built by
/// left indexing diagonals into zero matrices, is sparse in SystemDS).
///
/// The rule costs a pass over `m`, so it is applied when that is cheap next to the
/// assignment itself: `m` has at most [`SMALL_TARGET`] cells, or `v` covers at least an
/// eighth of it. Otherwise (a loop that updates a few cells of a big matrix) a sparse `m`
/// becomes dense and a dense one stays dense: assignments in a loop then update the cells in
/// place, without copying the matrix per assignment.
pub fn assign(m: &mut Matrix, rows: Range<usize>, cols: Range<usize>, v: Source<'_>) {
    let cells = m.cells();
    let selected = rows.len() * cols.len();
    let faithful = cells <= SMALL_TARGET || selected.saturating_mul(8) >= cells;
    let before = if faithful { m.nnz() } else { 0 };
    if let Matrix::Sparse(_) = m {
        *m = Matrix::Dense(m.to_dense());
    }
    let Matrix::Dense(d) = m else {
        unreachable!("made dense above")
    };
    let mut sel = d.slice_mut(ndarray::s![rows, cols]);
    let added = match v {
        Source::Scalar(s) => {
            sel.fill(s);
            if is_stored(s) {
                selected
            } else {
                0
            }
        }
        Source::Matrix(x) => {
            assert_eq!(
                sel.dim(),
                x.shape(),
                "left indexing: shapes checked by the caller"
            );
            let xd: Dense = x.to_dense();
            sel.assign(&xd);
            if faithful {
                x.nnz()
            } else {
                0
            }
        }
    };
    if faithful {
        let (r, c) = d.dim();
        if prefers_sparse_estimated(r, c, cells.min(before + added)) {
            let nnz = count_nnz(d.as_slice().expect("standard layout"));
            *m = Matrix::Sparse(dense_to_csr(d, nnz));
        }
    }
}

/// Targets of at most this many cells always get SystemDS's representation after a left
/// indexing (see [`assign`]).
pub const SMALL_TARGET: usize = 1 << 14;

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

    /// The representation after an assignment is SystemDS's (`estimateSparsityOnLeftIndexing`:
    /// its size rule for the target's non-zeros before plus the source's), and the values are
    /// a naive loop's, for dense and sparse targets and sources.
    #[test]
    fn left_indexing_picks_systemds_representation() {
        use crate::matrix::prefers_sparse_estimated;
        // (target rows, cols, diagonal source size, offset): CsplineCG's bands of a
        // tridiagonal system, a 12x12 one (dense in SystemDS: the size rule), and a
        // mostly full target
        for &(n, k, off, fill) in &[(40, 39, 1, 0.0), (12, 11, 1, 0.0), (40, 39, 1, 2.0)] {
            for sparse_target in [false, true] {
                for sparse_source in [false, true] {
                    let mut d = Dense::from_elem((n, n), fill);
                    if fill == 0.0 {
                        d[[0, 0]] = 1.0;
                    }
                    let mut m = if sparse_target {
                        Matrix::Sparse(crate::matrix::dense_to_csr(
                            &d,
                            count_nnz(d.as_slice().unwrap()),
                        ))
                    } else {
                        Matrix::Dense(d.clone())
                    };
                    let entries: Vec<_> = (0..k).map(|i| (i, i, 1.5 + i as f64)).collect();
                    let src = Matrix::from_triplets(k, k, &entries);
                    let src = if sparse_source {
                        src
                    } else {
                        Matrix::Dense(src.to_dense())
                    };
                    let before = count_nnz(d.as_slice().unwrap());
                    assign(&mut m, off..off + k, 0..k, Source::Matrix(&src));
                    let mut want = d.clone();
                    for i in 0..k {
                        for j in 0..k {
                            want[[off + i, j]] = src.get(i, j);
                        }
                    }
                    assert_eq!(m.to_dense(), want);
                    let expect = prefers_sparse_estimated(n, n, (n * n).min(before + k));
                    assert_eq!(m.is_sparse(), expect, "{n}x{n} fill {fill}");
                }
            }
        }
        // the 40x40 band is sparse, the 12x12 one and the full target dense
        let mut m = Matrix::Dense(Dense::zeros((40, 40)));
        assign(&mut m, 0..40, 0..1, Source::Scalar(1.0));
        assert!(m.is_sparse());
        let mut m2 = Matrix::Dense(Dense::zeros((12, 12)));
        assign(
            &mut m2,
            0..12,
            0..12,
            Source::Matrix(&Matrix::from_triplets(
                12,
                12,
                &(0..12)
                    .map(|i| (i, i, 1.0))
                    .chain((0..11).map(|i| (i, i + 1, 1.0)))
                    .chain((0..11).map(|i| (i + 1, i, 1.0)))
                    .collect::<Vec<_>>(),
            )),
        );
        assert!(!m2.is_sparse(), "a 12x12 tridiagonal is dense in SystemDS");
        // a big target updated one cell at a time stays dense (no pass over it per update)
        let mut big = Matrix::Dense(Dense::zeros((1000, 100)));
        assign(&mut big, 5..6, 0..1, Source::Scalar(3.0));
        assert!(!big.is_sparse());
        assert_eq!(big.get(5, 0), 3.0);
    }
}
