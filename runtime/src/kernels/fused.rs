//! Fused operators: kernels that compute an expression without materialising its dense
//! intermediates.
//!
//! * [`sddmm`]: `X * (U %*% t(V))`, the sampled dense-dense product: one dot product of a row
//!   of U and a row of V per non-zero of X, never the dense `m x n` product.

use crate::matrix::{Dense, Matrix};
use rayon::prelude::*;
use sprs::CsMat;

/// `X * (U %*% t(V))` for X `m x n`, U `m x k`, V `n x k`. With a sparse X only its non-zeros
/// are computed, in parallel over rows; the result is sparse like X.
pub fn sddmm(x: &Matrix, u: &Dense, v: &Dense) -> Matrix {
    let (m, n) = x.shape();
    let k = u.ncols();
    assert!(
        u.nrows() == m && v.nrows() == n && v.ncols() == k,
        "sddmm shape contract"
    );
    let u = u.as_standard_layout();
    let v = v.as_standard_layout();
    let (us, vs) = (
        u.as_slice().expect("standard"),
        v.as_slice().expect("standard"),
    );
    let dot = |i: usize, j: usize| -> f64 {
        us[i * k..(i + 1) * k]
            .iter()
            .zip(&vs[j * k..(j + 1) * k])
            .map(|(a, b)| a * b)
            .sum()
    };
    match x {
        Matrix::Sparse(s) => {
            let indptr = s.indptr().raw_storage().to_vec();
            let ind = s.indices();
            let mut data = s.data().to_vec();
            let mut rows: Vec<(usize, &mut [f64])> = Vec::with_capacity(m);
            let mut rest = data.as_mut_slice();
            for i in 0..m {
                let (h, t) = rest.split_at_mut(indptr[i + 1] - indptr[i]);
                rows.push((i, h));
                rest = t;
            }
            rows.into_par_iter().for_each(|(i, vals)| {
                for (p, val) in vals.iter_mut().enumerate() {
                    *val *= dot(i, ind[indptr[i] + p]);
                }
            });
            Matrix::from_csr(CsMat::new((m, n), indptr, ind.to_vec(), data))
        }
        Matrix::Dense(d) => {
            let mut out = d.to_owned();
            out.as_slice_mut()
                .expect("standard layout")
                .par_chunks_mut(n.max(1))
                .enumerate()
                .for_each(|(i, row)| {
                    for (j, c) in row.iter_mut().enumerate() {
                        if *c != 0.0 {
                            *c *= dot(i, j);
                        }
                    }
                });
            Matrix::from_dense(out)
        }
    }
}
