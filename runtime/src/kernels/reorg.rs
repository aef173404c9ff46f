//! Reorganisations: transpose and right indexing (row/column ranges).

use crate::matrix::{col, idx, Csr, Matrix, MAX_SPARSE_COLS};
use ndarray::s;

/// `t(X)`; a sparse matrix stays sparse (unless it has more rows than CSR can index as
/// columns, [`MAX_SPARSE_COLS`]: then its transpose is dense).
pub fn transpose(x: &Matrix) -> Matrix {
    match x {
        Matrix::Dense(d) => {
            let (m, n) = d.dim();
            let mut out = crate::matrix::zeros(n, m);
            // Blocked so that both sides are walked in cache-sized tiles.
            const B: usize = 32;
            for i0 in (0..m).step_by(B) {
                for j0 in (0..n).step_by(B) {
                    for i in i0..(i0 + B).min(m) {
                        for j in j0..(j0 + B).min(n) {
                            out[[j, i]] = d[[i, j]];
                        }
                    }
                }
            }
            Matrix::from_dense(out)
        }
        Matrix::Sparse(s) if s.rows() > MAX_SPARSE_COLS => {
            let (m, n) = s.shape();
            let mut out = crate::matrix::zeros(n, m);
            let ip = s.indptr();
            let ip = ip.raw_storage();
            for i in 0..m {
                for q in ip[i]..ip[i + 1] {
                    out[[col(s.indices()[q]), i]] = s.data()[q];
                }
            }
            Matrix::from_dense(out)
        }
        Matrix::Sparse(s) => Matrix::from_csr(csr_transpose(s)),
    }
}

/// CSR transpose by counting sort over the column indices. Panics if `s` has more rows than
/// [`MAX_SPARSE_COLS`] (the transpose's columns; [`transpose`] makes those dense).
pub fn csr_transpose(s: &Csr) -> Csr {
    let (m, n) = s.shape();
    assert!(
        m <= MAX_SPARSE_COLS,
        "csr_transpose: {m} rows beyond CSR's columns"
    );
    let mut counts = vec![0usize; n + 1];
    for &j in s.indices() {
        counts[col(j) + 1] += 1;
    }
    for j in 0..n {
        counts[j + 1] += counts[j];
    }
    let indptr = counts.clone();
    let mut next = counts;
    let mut indices = vec![0; s.nnz()];
    let mut data = crate::matrix::zeroed(s.nnz());
    for (i, row) in s.outer_iterator().enumerate() {
        for (j, &v) in row.iter() {
            let p = next[j];
            indices[p] = idx(i);
            data[p] = v;
            next[j] += 1;
        }
    }
    Csr::new((n, m), indptr, indices, data)
}

/// The cells of a dense slice from which [`slice`] copies its rows in parallel blocks of
/// about this many cells.
const SLICE_PAR: usize = 1 << 16;

/// `X[r0..r1, c0..c1]` with 0-based half-open ranges (the caller checks the bounds).
pub fn slice(x: &Matrix, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>) -> Matrix {
    assert!(
        rows.end <= x.rows() && cols.end <= x.cols(),
        "slice bounds contract"
    );
    match x {
        Matrix::Dense(d) => match d.as_slice() {
            // standard layout: each row's columns are one contiguous copy, rows in parallel
            Some(src) if rows.len() * cols.len() >= SLICE_PAR => {
                use rayon::prelude::*;
                let (w, n) = (cols.len(), d.ncols());
                let len = rows.len() * w;
                // written once, by the copies (not zeroed first: the slice of a tall matrix
                // is as large as the matrix, and a second pass over it costs as much)
                let mut out: Vec<f64> = Vec::with_capacity(len);
                let chunk = (SLICE_PAR / w.max(1)).max(1);
                out.spare_capacity_mut()[..len]
                    .par_chunks_mut(chunk * w)
                    .enumerate()
                    .for_each(|(c, o)| {
                        for (r, orow) in o.chunks_mut(w).enumerate() {
                            let i = rows.start + c * chunk + r;
                            let from = &src[i * n + cols.start..i * n + cols.end];
                            for (o, &x) in orow.iter_mut().zip(from) {
                                o.write(x);
                            }
                        }
                    });
                // SAFETY: the chunks cover `0..len` (every row of every chunk, `w` cells each),
                // and every cell was written above
                unsafe { out.set_len(len) };
                Matrix::from_dense(
                    ndarray::Array2::from_shape_vec((rows.len(), w), out).expect("rows x cols"),
                )
            }
            _ => Matrix::from_dense(d.slice(s![rows.clone(), cols.clone()]).to_owned()),
        },
        Matrix::Sparse(sp) => {
            let mut indptr = vec![0usize];
            let mut indices = Vec::new();
            let mut data = Vec::new();
            for i in rows.clone() {
                let row = sp.outer_view(i).expect("row in range");
                for (j, &v) in row.iter() {
                    if cols.contains(&j) {
                        indices.push(idx(j - cols.start));
                        data.push(v);
                    }
                }
                indptr.push(indices.len());
            }
            Matrix::from_csr(Csr::new((rows.len(), cols.len()), indptr, indices, data))
        }
    }
}
