//! Fused operators: kernels that compute an expression without materialising its dense
//! intermediates. Each one streams over the non-zeros of a sparse *driver* matrix X (or a
//! weight W), computes the one dot product `u_i . v_j` of the low-rank product `U %*% t(V)`
//! that the entry needs, and combines it on the spot, so the dense `m x n` product is never
//! formed: `nnz * k` work instead of `m * n * k`.
//!
//! | kernel | expression | result |
//! |---|---|---|
//! | [`sddmm`] | `X * (U %*% t(V))` | sparse like X |
//! | [`wsloss`] | `sum((X - U %*% t(V))^2)` | scalar |
//! | [`wsloss_weighted`] | `sum(W * (X - U %*% t(V))^2)` | scalar |
//! | [`wcemm`] | `sum(X * log(U %*% t(V) + eps))` (logarithms within 1 ulp, [`sumlog`]) | scalar |
//! | [`wdivmm`] | `(X / (U %*% t(V) + eps)) %*% V`, or `t(U) %*% (X / (U %*% t(V) + eps))` | dense |
//! | [`wsubmm`] | `(W * (U %*% t(V) - X)) %*% V` | dense |
//! | [`mmchain`] | `t(X) %*% (w * (X %*% v))` | dense |
//! | [`smmchain`] | `t(X) %*% (P * (X %*% V) - P * rowSums(P * (X %*% V)))` | dense |
//! | [`sprop`] | `P * (1 - P)` | like P |
//! | [`tmatmul`] | `t(A) %*% B` without forming `t(A)` | dense |
//!
//! Entries outside the driver's pattern are structural zeros, as in SystemDS's fused
//! operators: `0 / 0` and `0 * log(0)` at those entries count as 0, where the unfused
//! expression would give NaN. [`wsloss`] is the exception that needs every entry: it adds
//! `sum((U %*% t(V))^2) = sum((t(U) %*% U) * (t(V) %*% V))` (a `k x k` computation) and
//! corrects it at the non-zeros of X.

use super::aggregate::sum0;
use super::matmul::{
    as_rows, as_rows_mut, csr_t_mul_narrow, dense_view, dot8, dot_rows, ieee_zeros_known,
    java_vlen, prefetch_entries, row_block_sums, systemds_row_sums, systemds_threads, thin,
    thin_padded, unpad, wide, Padded, PartialFold, NARROW,
};
use super::sumlog;
use crate::fill::par_rows;
use crate::matrix::{col, Csr, Dense, Idx, Matrix};
use ndarray::Array2;
use rayon::prelude::*;

/// `Some(f::<C>(args))` for a rank `k` of `C` full blocks of eight columns and a tail of
/// fewer than eight, `C` from 2 to 8 (ranks 16 to 71), else `None`.
macro_rules! chunks {
    ($k:expr, $f:ident, $($arg:expr),*) => {
        match $k / 8 {
            2 => Some($f::<2>($($arg),*)),
            3 => Some($f::<3>($($arg),*)),
            4 => Some($f::<4>($($arg),*)),
            5 => Some($f::<5>($($arg),*)),
            6 => Some($f::<6>($($arg),*)),
            7 => Some($f::<7>($($arg),*)),
            8 => Some($f::<8>($($arg),*)),
            _ => None,
        }
    };
}

/// `Some(f::<k>(args))` for `17 <= k <=` [`MID_THIN`] on a CPU without AVX-512, else `None`:
/// the fixed-width sampled kernels past [`SPARSE_THIN`] where the eight-wide registers of
/// the AVX-512 kernels are missing (ALS ranks of 20 to 32), so that a row's products stay
/// in registers with their loops unrolled. Every width gives the general loop's bits.
macro_rules! mid {
    ($k:expr, $f:ident, $($arg:expr),*) => {
        if lanes512() {
            None
        } else {
            match $k {
                17 => Some($f::<17>($($arg),*)),
                18 => Some($f::<18>($($arg),*)),
                19 => Some($f::<19>($($arg),*)),
                20 => Some($f::<20>($($arg),*)),
                21 => Some($f::<21>($($arg),*)),
                22 => Some($f::<22>($($arg),*)),
                23 => Some($f::<23>($($arg),*)),
                24 => Some($f::<24>($($arg),*)),
                25 => Some($f::<25>($($arg),*)),
                26 => Some($f::<26>($($arg),*)),
                27 => Some($f::<27>($($arg),*)),
                28 => Some($f::<28>($($arg),*)),
                29 => Some($f::<29>($($arg),*)),
                30 => Some($f::<30>($($arg),*)),
                31 => Some($f::<31>($($arg),*)),
                32 => Some($f::<32>($($arg),*)),
                _ => None,
            }
        }
    };
}

/// The widest factors of [`mid!`]'s fixed-width kernels.
const MID_THIN: usize = 32;

/// Rows per rayon task (the per-row work is a handful of dot products).
const MIN_ROWS: usize = 64;

/// Row-major slices of the two factors, with the dot product of row `i` of U and row `j` of V.
struct Factors<'a> {
    us: &'a [f64],
    vs: &'a [f64],
    k: usize,
}

impl Factors<'_> {
    #[inline(always)]
    fn u(&self, i: usize) -> &[f64] {
        &self.us[i * self.k..(i + 1) * self.k]
    }
    #[inline(always)]
    fn v(&self, j: usize) -> &[f64] {
        &self.vs[j * self.k..(j + 1) * self.k]
    }
    #[inline(always)]
    fn dot(&self, i: usize, j: usize) -> f64 {
        dot8(self.u(i), self.v(j))
    }
}

/// Checks the shape contract (X `m x n`, U `m x k`, V `n x k`) and runs `f` on row-major
/// views of U and V.
fn with_factors<R>(
    x: (usize, usize),
    u: &Dense,
    v: &Dense,
    what: &str,
    f: impl FnOnce(&Factors) -> R,
) -> R {
    let (m, n) = x;
    let k = u.ncols();
    assert!(
        u.nrows() == m && v.nrows() == n && v.ncols() == k,
        "{what} shape contract"
    );
    let u = u.as_standard_layout();
    let v = v.as_standard_layout();
    f(&Factors {
        us: u.as_slice().expect("standard"),
        vs: v.as_slice().expect("standard"),
        k,
    })
}

/// Calls `f(j, x_ij)` for the non-zeros of row `i` of X, in column order.
#[inline]
fn row_nz(x: &Matrix, i: usize, mut f: impl FnMut(usize, f64)) {
    match x {
        Matrix::Sparse(s) => csr_row_nz(s, i, f),
        Matrix::Dense(d) => {
            for (j, &v) in d.row(i).iter().enumerate() {
                if v != 0.0 {
                    f(j, v);
                }
            }
        }
    }
}

/// Calls `f(j, x_ij)` for the stored entries of row `i` of a CSR matrix.
#[inline]
fn csr_row_nz(s: &Csr, i: usize, mut f: impl FnMut(usize, f64)) {
    let ip = s.indptr();
    let ip = ip.raw_storage();
    let (lo, hi) = (ip[i], ip[i + 1]);
    for (&j, &v) in s.indices()[lo..hi].iter().zip(&s.data()[lo..hi]) {
        f(col(j), v);
    }
}

/// Calls `f(j, w_ij, x_ij)` for the non-zeros of row `i` of W, with X's value at the same
/// entry (0 where X has none). Both are walked in column order, so a sparse X is merged.
#[inline]
fn row_nz_with(w: &Matrix, x: &Matrix, i: usize, mut f: impl FnMut(usize, f64, f64)) {
    match x {
        Matrix::Dense(d) => {
            let xr = d.row(i);
            row_nz(w, i, |j, wv| f(j, wv, xr[j]));
        }
        Matrix::Sparse(s) => {
            let r = s.outer_view(i).expect("row in range");
            let (xi, xv) = (r.indices(), r.data());
            let mut p = 0;
            row_nz(w, i, |j, wv| {
                while p < xi.len() && col(xi[p]) < j {
                    p += 1;
                }
                let xj = if p < xi.len() && col(xi[p]) == j {
                    xv[p]
                } else {
                    0.0
                };
                f(j, wv, xj)
            });
        }
    }
}

/// Sums `row(i)` over the rows of an `m`-row matrix, in parallel.
fn par_row_sum(m: usize, row: impl Fn(usize) -> f64 + Sync + Send) -> f64 {
    // per-row values first, summed in row order: the same bits whatever the thread count
    let rows: Vec<f64> = (0..m)
        .into_par_iter()
        .with_min_len(MIN_ROWS)
        .map(row)
        .collect();
    sum0(rows.into_iter())
}

/// `X * (U %*% t(V))` for X `m x n`, U `m x k`, V `n x k`. With a sparse X only its non-zeros
/// are computed, in parallel over rows; the result is sparse like X.
pub fn sddmm(x: &Matrix, u: &Dense, v: &Dense) -> Matrix {
    let (m, n) = x.shape();
    with_factors((m, n), u, v, "sddmm", |f| match x {
        Matrix::Sparse(s) => {
            let indptr = s.indptr().raw_storage().to_vec();
            let ind = s.indices();
            let mut data = s.data().to_vec();
            let rows = super::csr_rows_mut(&indptr, &mut data);
            sddmm_rows(rows, ind, &indptr, f);
            Matrix::from_csr(Csr::new((m, n), indptr, ind.to_vec(), data))
        }
        Matrix::Dense(d) => {
            let mut out = d.as_standard_layout().into_owned();
            out.as_slice_mut()
                .expect("standard layout")
                .par_chunks_mut(n.max(1))
                .enumerate()
                .for_each(|(i, row)| {
                    for (j, c) in row.iter_mut().enumerate() {
                        if *c != 0.0 {
                            *c *= f.dot(i, j);
                        }
                    }
                });
            Matrix::from_dense(out)
        }
    })
}

/// `sum(X * (U %*% t(V)))` without forming the sparse product: for a CSR X whose product
/// stays sparse, the products are computed into one array (no copy of X's indices), the
/// zeros dropped as [`Matrix::from_csr`] drops them, and summed with the blocks of
/// `aggregate_all`: the same values in the same order as `sum(sddmm(x, u, v))`, so the same
/// bits. Otherwise it is that expression.
pub fn sddmm_sum(x: &Matrix, u: &Dense, v: &Dense) -> f64 {
    let unfused = || super::aggregate::aggregate_all(crate::ops::AggOp::Sum, &sddmm(x, u, v));
    let Matrix::Sparse(s) = x else {
        return unfused();
    };
    let (m, n) = s.shape();
    let mut prod = s.data().to_vec();
    with_factors((m, n), u, v, "sddmm", |f| {
        let ip = s.indptr();
        let ip = ip.raw_storage();
        let ind = s.indices();
        let mut rows: Vec<(usize, &mut [f64])> = Vec::with_capacity(m);
        let mut rest = prod.as_mut_slice();
        for i in 0..m {
            let (h, t) = rest.split_at_mut(ip[i + 1] - ip[i]);
            rows.push((i, h));
            rest = t;
        }
        sddmm_rows(rows, ind, ip, f);
    });
    prod.retain(|p| *p != 0.0);
    if !crate::matrix::prefers_sparse(m, n, prod.len()) {
        // the product would be stored dense, and summed over its cells
        return unfused();
    }
    super::aggregate::par_sum(&prod)
}

/// Multiplies each row `(i, values)` of a CSR X's values (column indices `ind`, row pointers
/// `ip`) by `u_i . v_j` in place, in parallel over rows; [`sddmm_rows_narrow`] for factors of
/// at most 16 columns, [`dots_by_lanes::sddmm_row_w`] for wider ones with AVX-512F/DQ (the
/// same bits).
fn sddmm_rows(rows: Vec<(usize, &mut [f64])>, ind: &[Idx], ip: &[usize], f: &Factors) {
    if (1..=16).contains(&f.k) {
        thin!(f.k, sddmm_rows_narrow, rows, ind, ip, f);
        return;
    }
    if !lanes512() && (17..=MID_THIN).contains(&f.k) {
        mid!(f.k, sddmm_rows_narrow, rows, ind, ip, f);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if f.k > 16 && lanes512() {
        rows.into_par_iter()
            .with_min_len(MIN_ROWS)
            .for_each(|(i, vals)| {
                let js = &ind[ip[i]..ip[i + 1]];
                // SAFETY: the CPU has AVX-512F and AVX-512DQ (`lanes512`)
                unsafe { dots_by_lanes::sddmm_row_w(f.u(i), f.vs, js, vals) }
            });
        return;
    }
    if (16..72).contains(&f.k) {
        chunks!(f.k, sddmm_rows_chunks, rows, ind, ip, f);
        return;
    }
    rows.into_par_iter()
        .with_min_len(MIN_ROWS)
        .for_each(|(i, vals)| {
            for (val, &j) in vals.iter_mut().zip(&ind[ip[i]..ip[i + 1]]) {
                *val *= f.dot(i, col(j));
            }
        });
}

/// [`sddmm_rows`] for factors of `8 C + t` columns (`t < 8`) on a CPU without AVX-512: the
/// dot products by [`chunk_batch_dots`] (the bits of [`dot8`]).
fn sddmm_rows_chunks<const C: usize>(
    rows: Vec<(usize, &mut [f64])>,
    ind: &[Idx],
    ip: &[usize],
    f: &Factors,
) {
    let lanes = Lanes::of_cpu();
    sddmm_rows_by(rows, ind, ip, |i, js, d| {
        chunk_batch_dots::<C>(f.u(i), f.vs, js, d, lanes)
    });
}

/// Multiplies each row `(i, values)` of a CSR X's values (column indices `ind`, row pointers
/// `ip`) by `u_i . v_j` in place, for factors of exactly `N` columns ([`batch_dots`]: the bits
/// of [`dot8`]).
fn sddmm_rows_narrow<const N: usize>(
    rows: Vec<(usize, &mut [f64])>,
    ind: &[Idx],
    ip: &[usize],
    f: &Factors,
) {
    let (urows, vrows) = (as_rows::<N>(f.us), as_rows::<N>(f.vs));
    let lanes = Lanes::of_cpu();
    sddmm_rows_by(rows, ind, ip, |i, js, d| {
        batch_dots(&urows[i], vrows, js, d, lanes)
    });
}

/// Multiplies each row `(i, values)` of a CSR X's values in place by the dot products
/// `dots(i, js, d)` writes for a batch of the row's column indices `js`, [`BATCH`] at a time,
/// in parallel over rows, the row loop compiled by [`wide`].
#[inline(always)]
fn sddmm_rows_by(
    rows: Vec<(usize, &mut [f64])>,
    ind: &[Idx],
    ip: &[usize],
    dots: impl Fn(usize, &[Idx], &mut [f64]) + Sync,
) {
    rows.into_par_iter()
        .with_min_len(MIN_ROWS)
        .for_each(|(i, vals)| {
            wide(
                #[inline(always)]
                || {
                    let mut d = [0.0f64; BATCH];
                    for (vs, js) in vals
                        .chunks_mut(BATCH)
                        .zip(ind[ip[i]..ip[i + 1]].chunks(BATCH))
                    {
                        dots(i, js, &mut d[..js.len()]);
                        for (val, &dq) in vs.iter_mut().zip(&d) {
                            *val *= dq;
                        }
                    }
                },
            )
        });
}

/// `sum((X - U %*% t(V))^2)`: `sum((t(U) %*% U) * (t(V) %*% V))` for all entries, corrected
/// at the non-zeros of X by `(x - uv)^2 - uv^2`. That expansion can overflow where the loss
/// does not (a factor of `1e200` against a zero factor: the Gram product is `Inf * 0`, NaN,
/// where every `uv` is 0), and it turns an infinite loss into `Inf - Inf`; so a result that
/// is not finite is computed again cell by cell, as the expression is written.
pub fn wsloss(x: &Matrix, u: &Dense, v: &Dense) -> f64 {
    let (m, n) = x.shape();
    with_factors((m, n), u, v, "wsloss", |f| {
        let entry = LossCorrection;
        let corr = narrow_sum(x, f, &entry).unwrap_or_else(|| {
            par_row_sum(m, |i| {
                let mut s = 0.0;
                row_nz(x, i, |j, xv| s += entry.at(xv, f.dot(i, j)));
                s
            })
        });
        let (gu, gv) = (gram(u), gram(v));
        let expanded = corr + sum0(gu.iter().zip(gv.iter()).map(|(a, b)| a * b));
        if expanded.is_finite() {
            return expanded;
        }
        par_row_sum(m, |i| {
            let mut row = vec![0.0; n];
            row_nz(x, i, |j, xv| row[j] = xv);
            let mut s = 0.0;
            for (j, xv) in row.into_iter().enumerate() {
                let d = xv - f.dot(i, j);
                s += d * d;
            }
            s
        })
    })
}

/// `t(A) %*% A` for a tall, thin dense A.
fn gram(a: &Dense) -> Dense {
    a.t().dot(a)
}

/// `sum(W * (X - U %*% t(V))^2)`, streaming over the non-zeros of the weights W; `None`
/// stands for `W = (X != 0)` (ALS-CG's loss), which is never formed.
pub fn wsloss_weighted(w: Option<&Matrix>, x: &Matrix, u: &Dense, v: &Dense) -> f64 {
    if let Some(w) = w {
        assert_eq!(w.shape(), x.shape(), "wsloss shape contract");
    }
    let (m, n) = x.shape();
    with_factors((m, n), u, v, "wsloss", |f| {
        if w.is_none() {
            if let Some(s) = narrow_sum(x, f, &SquaredError) {
                return s;
            }
        }
        par_row_sum(m, |i| {
            let mut s = 0.0;
            let mut add = |j: usize, wv: f64, xv: f64| {
                let d = xv - f.dot(i, j);
                s += wv * d * d;
            };
            match w {
                Some(w) => row_nz_with(w, x, i, add),
                None => row_nz(x, i, |j, xv| add(j, 1.0, xv)),
            }
            s
        })
    })
}

/// `sum(X * log(U %*% t(V) + eps))`, streaming over the non-zeros of X: per row, the
/// entries' values `u_i . v_j + eps` in batches of [`BATCH`], their logarithms by
/// [`sumlog::add_x_ln`] (vectorised, within 1 ulp of `f64::ln`: this is a sum): the terms
/// `x_ij * ln` added in column order from +0.0, and the rows in row order
/// ([`par_row_sum`]). A CSR X with factors of at most 16 columns takes [`wcemm_narrow`], of
/// more with AVX-512F/DQ [`dots_by_lanes::x_ln_w`]; the same values in the same order, so the
/// same bits for a dense and a sparse X.
pub fn wcemm(x: &Matrix, u: &Dense, v: &Dense, eps: f64) -> f64 {
    let (m, n) = x.shape();
    with_factors((m, n), u, v, "wcemm", |f| {
        if let Matrix::Sparse(s) = x {
            if let Some(r) =
                thin!(f.k, wcemm_narrow, s, f, eps).or_else(|| mid!(f.k, wcemm_narrow, s, f, eps))
            {
                return r;
            }
            #[cfg(target_arch = "x86_64")]
            if f.k > 16 && lanes512() {
                let indptr = s.indptr();
                let x = dots_by_lanes::ChunkRows {
                    us: f.us,
                    vs: f.vs,
                    k: f.k,
                    ind: s.indices(),
                    val: s.data(),
                    ip: indptr.raw_storage(),
                };
                let table = sumlog::table();
                // SAFETY: the CPU has AVX-512F and AVX-512DQ (`lanes512`)
                return par_row_sum(m, |i| unsafe { dots_by_lanes::x_ln_w(&x, i, eps, table) });
            }
        }
        par_row_sum(m, |i| {
            let mut acc = XLnSum::default();
            row_nz(x, i, |j, xv| acc.push(xv, f.dot(i, j) + eps));
            acc.finish()
        })
    })
}

/// `sum_p x_p * ln(d_p)` over the pairs pushed, added in order from +0.0, the logarithms
/// taken [`BATCH`] at a time by [`sumlog::add_x_ln`].
struct XLnSum {
    x: [f64; BATCH],
    d: [f64; BATCH],
    len: usize,
    acc: f64,
}

impl Default for XLnSum {
    fn default() -> Self {
        XLnSum {
            x: [0.0; BATCH],
            d: [0.0; BATCH],
            len: 0,
            acc: 0.0,
        }
    }
}

impl XLnSum {
    #[inline(always)]
    fn push(&mut self, x: f64, d: f64) {
        self.x[self.len] = x;
        self.d[self.len] = d;
        self.len += 1;
        if self.len == BATCH {
            self.flush();
        }
    }

    #[inline(always)]
    fn flush(&mut self) {
        let n = self.len;
        self.acc = sumlog::add_x_ln(self.acc, &self.x[..n], &mut self.d[..n]);
        self.len = 0;
    }

    fn finish(mut self) -> f64 {
        self.flush();
        self.acc
    }
}

/// [`wcemm`] for a CSR X and factors of exactly `N` columns: per row, with AVX-512F/DQ
/// ([`lanes512`]) the whole row by [`dots_by_lanes::x_ln_dots512`] (eight entries' dot
/// products, logarithms and products in registers); else a batch of dot products ([`dot_n`]:
/// the bits of [`dot8`]; with AVX2, four entries at a time by [`dots_by_lanes::dots`], the
/// same bits) plus `eps`, then the batch's terms `x * ln` added in column order
/// ([`sumlog::add_x_ln`]). The same values in the same order as [`XLnSum`].
fn wcemm_narrow<const N: usize>(s: &Csr, f: &Factors, eps: f64) -> f64 {
    let (urows, vrows) = (as_rows::<N>(f.us), as_rows::<N>(f.vs));
    let ip = s.indptr();
    let ip = ip.raw_storage();
    let (ind, val) = (s.indices(), s.data());
    #[cfg(target_arch = "x86_64")]
    let lanes =
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma");
    // the AVX-512 row kernel holds at most two blocks of eight columns
    let wide8 = lanes512() && N <= 16;
    #[cfg(target_arch = "x86_64")]
    let table = sumlog::table();
    par_row_sum(s.rows(), |i| {
        let (lo, hi) = (ip[i], ip[i + 1]);
        prefetch_entries(ind, val, lo, hi);
        let ui = &urows[i];
        #[cfg(target_arch = "x86_64")]
        if wide8 {
            // SAFETY: the CPU has AVX-512F and AVX-512DQ (`lanes512`)
            return unsafe {
                dots_by_lanes::x_ln_dots512(ui, vrows, &ind[lo..hi], &val[lo..hi], eps, table)
            };
        }
        let _ = wide8;
        let mut acc = 0.0;
        let mut d = [0.0f64; BATCH];
        for (js, xs) in ind[lo..hi].chunks(BATCH).zip(val[lo..hi].chunks(BATCH)) {
            let d = &mut d[..js.len()];
            #[cfg(target_arch = "x86_64")]
            if lanes {
                // SAFETY: the CPU has AVX2 and FMA (checked above)
                unsafe { dots_by_lanes::dots(ui, vrows, js, Some(eps), d) };
            } else {
                wide(
                    #[inline(always)]
                    || {
                        for (dq, &j) in d.iter_mut().zip(js) {
                            *dq = dot_n(ui, &vrows[col(j)]) + eps;
                        }
                    },
                );
            }
            #[cfg(not(target_arch = "x86_64"))]
            for (dq, &j) in d.iter_mut().zip(js) {
                *dq = dot_n(ui, &vrows[j]) + eps;
            }
            acc = sumlog::add_x_ln(acc, xs, d);
        }
        acc
    })
}

/// Dot products of one row of U with several rows of V, the entries in the lanes of the
/// registers: four at a time with AVX2 ([`dots_by_lanes::dots`]), eight with AVX-512
/// ([`dots_by_lanes::dots8`] and the row loops built on it).
#[cfg(target_arch = "x86_64")]
mod dots_by_lanes {
    use super::sumlog;
    use crate::matrix::{col, Idx};
    use std::arch::x86_64::*;

    /// `d[q] = u . v_{js[q]}` (`+ eps` when given) for each `q`, four entries at a time by
    /// [`dot4`]: [`super::dot_n`]'s bits. The entries after the last multiple of four take
    /// `dot_n` itself.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dots<const N: usize, const R: usize>(
        u: &[f64; N],
        vrows: &[[f64; R]],
        js: &[Idx],
        eps: Option<f64>,
        d: &mut [f64],
    ) {
        assert!(N <= 32, "dots: at most four blocks of eight columns");
        let us = ublocks(u, N / 8);
        let mut qs = js.chunks_exact(4);
        let mut out = d.chunks_exact_mut(4);
        for (q, o) in (&mut qs).zip(&mut out) {
            let r = [
                vrows[col(q[0])].as_ptr(),
                vrows[col(q[1])].as_ptr(),
                vrows[col(q[2])].as_ptr(),
                vrows[col(q[3])].as_ptr(),
            ];
            let sum = dot4(u, &us, N / 8, r);
            let sum = match eps {
                Some(e) => _mm256_add_pd(sum, _mm256_set1_pd(e)),
                None => sum,
            };
            _mm256_storeu_pd(o.as_mut_ptr(), sum);
        }
        for (dq, &j) in out.into_remainder().iter_mut().zip(qs.remainder()) {
            let x = super::dot_n(u, super::first(&vrows[col(j)]));
            *dq = eps.map_or(x, |e| x + e);
        }
    }

    /// [`dots`] for rows of `k = 8 C + t` values (`t < 8`) of a row-major V (`vs`): `d[q] = u
    /// . v_{js[q]}`, four entries at a time, [`super::dot_chunks`]'s bits (the entries after
    /// the last multiple of four take it).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn chunk_dots<const C: usize>(
        u: &[f64],
        vs: &[f64],
        js: &[Idx],
        d: &mut [f64],
    ) {
        let k = u.len();
        assert!(
            C <= 8 && 8 * C <= k && k < 8 * C + 8,
            "chunk_dots: k = 8 C + t"
        );
        let row = |j: Idx| &vs[col(j) * k..(col(j) + 1) * k];
        let us = ublocks(u, C);
        let mut qs = js.chunks_exact(4);
        let mut out = d.chunks_exact_mut(4);
        for (q, o) in (&mut qs).zip(&mut out) {
            let r = [
                row(q[0]).as_ptr(),
                row(q[1]).as_ptr(),
                row(q[2]).as_ptr(),
                row(q[3]).as_ptr(),
            ];
            _mm256_storeu_pd(o.as_mut_ptr(), dot4(u, &us, C, r));
        }
        for (dq, &j) in out.into_remainder().iter_mut().zip(qs.remainder()) {
            *dq = super::dot_chunks::<C>(u, row(j), k - 8 * C);
        }
    }

    /// `u`'s first `blocks` blocks of eight as pairs of registers (columns `0..4` and `4..8`).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn ublocks(u: &[f64], blocks: usize) -> [[__m256d; 2]; 8] {
        assert!(blocks <= 8 && 8 * blocks <= u.len(), "ublocks: blocks of u");
        let mut us = [[_mm256_setzero_pd(); 2]; 8];
        for (b, ub) in us.iter_mut().enumerate().take(blocks) {
            *ub = [
                _mm256_loadu_pd(u.as_ptr().add(8 * b)),
                _mm256_loadu_pd(u.as_ptr().add(8 * b + 4)),
            ];
        }
        us
    }

    /// An empty `asm!` that takes eight accumulators in registers and may touch memory: the
    /// sums before it are formed before it, and no load after it moves above it (a schedule
    /// barrier for [`dot4`]; no instruction is emitted).
    #[inline]
    #[target_feature(enable = "avx")]
    unsafe fn settle(lo: &mut [__m256d; 4], hi: &mut [__m256d; 4]) {
        std::arch::asm!(
            "/* {0} {1} {2} {3} {4} {5} {6} {7} */",
            inout(ymm_reg) lo[0],
            inout(ymm_reg) lo[1],
            inout(ymm_reg) lo[2],
            inout(ymm_reg) lo[3],
            inout(ymm_reg) hi[0],
            inout(ymm_reg) hi[1],
            inout(ymm_reg) hi[2],
            inout(ymm_reg) hi[3],
            options(nostack, preserves_flags),
        );
    }

    /// The dot products of `u` (its blocks in `us`, [`ublocks`]) with the four rows `r` of
    /// `u.len()` values each, in [`super::dot_n`]'s order on each lane (products and sums, no
    /// fused multiply-add), so its bits. The blocks of eight columns stay in the rows' order:
    /// per entry, columns `0..4` and `4..8` of each block are multiplied by `u`'s and added
    /// from +0.0 over the blocks (`dot_n`'s accumulators `0..4` and `4..8`, one register each),
    /// the two registers added (`acc[l] + acc[l + 4]`), and the four entries' pairs summed by
    /// horizontal adds (`(s0 + s1) + (s2 + s3)`). Only the tail columns (`len % 8`) are
    /// transposed, so that a column of the four entries is one register, and added in order
    /// from +0.0, as `dot_n`'s tail. Each row of `r` must hold `u.len()` values.
    #[inline(always)]
    unsafe fn dot4(
        u: &[f64],
        us: &[[__m256d; 2]; 8],
        blocks: usize,
        r: [*const f64; 4],
    ) -> __m256d {
        let len = u.len();
        let full = blocks * 8;
        let zero = _mm256_setzero_pd();
        // the blocks: per entry acc[0..4] + acc[4..8], then (s0 + s1) + (s2 + s3)
        let main = if blocks == 0 {
            zero
        } else {
            // block by block, the four entries side by side: eight accumulators live, each
            // product added as soon as it is formed. Left to itself LLVM formed all the
            // products first and spilled them (twice the time at rank 40); the empty `asm!`
            // after each block, which may touch memory, keeps the next block's loads after
            // this block's sums.
            let (mut lo, mut hi) = ([zero; 4], [zero; 4]);
            for (b, [ul, uh]) in us.iter().enumerate().take(blocks) {
                for e in 0..4 {
                    let l = _mm256_loadu_pd(r[e].add(8 * b));
                    let h = _mm256_loadu_pd(r[e].add(8 * b + 4));
                    lo[e] = _mm256_add_pd(lo[e], _mm256_mul_pd(*ul, l));
                    hi[e] = _mm256_add_pd(hi[e], _mm256_mul_pd(*uh, h));
                }
                settle(&mut lo, &mut hi);
            }
            let s: [__m256d; 4] = std::array::from_fn(|e| _mm256_add_pd(lo[e], hi[e]));
            // [s0 + s1 | s2 + s3] of entries 0 and 1, then of 2 and 3
            let h01 = _mm256_hadd_pd(s[0], s[1]);
            let h23 = _mm256_hadd_pd(s[2], s[3]);
            _mm256_add_pd(
                _mm256_permute2f128_pd::<0x20>(h01, h23),
                _mm256_permute2f128_pd::<0x31>(h01, h23),
            )
        };
        // the tail, a column of the four entries per register, added in order from +0.0
        let mut tail = zero;
        let mut c = full;
        while c + 4 <= len {
            let l = |e: usize| _mm256_loadu_pd(r[e].add(c));
            let (r0, r1, r2, r3) = (l(0), l(1), l(2), l(3));
            let (t0, t1) = (_mm256_unpacklo_pd(r0, r1), _mm256_unpackhi_pd(r0, r1));
            let (t2, t3) = (_mm256_unpacklo_pd(r2, r3), _mm256_unpackhi_pd(r2, r3));
            let cols = [
                _mm256_permute2f128_pd::<0x20>(t0, t2),
                _mm256_permute2f128_pd::<0x20>(t1, t3),
                _mm256_permute2f128_pd::<0x31>(t0, t2),
                _mm256_permute2f128_pd::<0x31>(t1, t3),
            ];
            for (l, col) in cols.iter().enumerate() {
                tail = _mm256_add_pd(tail, _mm256_mul_pd(_mm256_set1_pd(u[c + l]), *col));
            }
            c += 4;
        }
        if c + 2 <= len {
            let l = |e: usize| _mm_loadu_pd(r[e].add(c));
            // [entry 0 | entry 2] and [entry 1 | entry 3], two columns each
            let a = _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(l(0)), l(2));
            let b = _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(l(1)), l(3));
            let c0 = _mm256_unpacklo_pd(a, b);
            let c1 = _mm256_unpackhi_pd(a, b);
            tail = _mm256_add_pd(tail, _mm256_mul_pd(_mm256_set1_pd(u[c]), c0));
            tail = _mm256_add_pd(tail, _mm256_mul_pd(_mm256_set1_pd(u[c + 1]), c1));
            c += 2;
        }
        if c < len {
            let col = _mm256_set_pd(*r[3].add(c), *r[2].add(c), *r[1].add(c), *r[0].add(c));
            tail = _mm256_add_pd(tail, _mm256_mul_pd(_mm256_set1_pd(u[c]), col));
        }
        _mm256_add_pd(main, tail)
    }

    /// `d[q] = u . v_{js[q]}` for each `q`, eight entries at a time ([`dots8`]: [`super::dot_n`]'s
    /// bits); the entries after the last multiple of eight take `dot_n` itself.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) unsafe fn dots512<const N: usize>(
        u: &[f64; N],
        vrows: &[[f64; N]],
        js: &[Idx],
        d: &mut [f64],
    ) {
        in_range(js, vrows.len());
        let us = ulanes(u);
        let mut qs = js.chunks_exact(8);
        let mut out = d.chunks_exact_mut(8);
        for (q, o) in (&mut qs).zip(&mut out) {
            let sum = dots8(u, us, rows8(vrows, q));
            _mm512_storeu_pd(o.as_mut_ptr(), sum);
        }
        for (dq, &j) in out.into_remainder().iter_mut().zip(qs.remainder()) {
            *dq = super::dot_n(u, &vrows[col(j)]);
        }
    }

    use super::CsrRows;

    /// The left side of a sampled product over the CSR rows `rows` (`(U, V, indices, values,
    /// row pointers)`): per row `i`, each entry's `e = entry(x, u_i . v_j)` (the dot products
    /// by [`dots512`], [`super::dot_n`]'s bits) and `acc[j] += e * u_i`, the entries in order.
    /// The update of a row of `acc` is one product and one sum per column (no fused
    /// multiply-add), in AVX-512 registers (eight columns per register, masked past `N`):
    /// the bits of the scalar loop `acc[j][l] += e * u_i[l]`.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) unsafe fn scatter_rows512<const N: usize>(
        (urows, vrows, ind, val, ip): CsrRows<'_, N>,
        rows: std::ops::Range<usize>,
        entry: &impl Fn(f64, f64) -> f64,
        acc: &mut [[f64; N]],
    ) {
        assert_eq!(
            acc.len(),
            vrows.len(),
            "sampled product: one output row per row of V"
        );
        // the first and second eight columns of a row (N <= 16)
        let m0 = if N >= 8 { 0xFF } else { (1u8 << N) - 1 };
        let m1 = if N >= 16 {
            0xFF
        } else if N > 8 {
            (1u8 << (N - 8)) - 1
        } else {
            0
        };
        let mut d = [0.0f64; super::BATCH];
        for i in rows {
            let u = &urows[i];
            let (lo, hi) = (ip[i], ip[i + 1]);
            crate::kernels::matmul::prefetch_entries(ind, val, lo, hi);
            let up = u.as_ptr();
            let u0 = _mm512_maskz_loadu_pd(m0, up);
            let u1 = if N > 8 {
                _mm512_maskz_loadu_pd(m1, up.add(8))
            } else {
                _mm512_setzero_pd()
            };
            for (js, xs) in ind[lo..hi]
                .chunks(super::BATCH)
                .zip(val[lo..hi].chunks(super::BATCH))
            {
                // checks every index against V's rows, which are as many as acc's
                dots512(u, vrows, js, &mut d[..js.len()]);
                for ((&j, &xv), &dq) in js.iter().zip(xs).zip(&d) {
                    let e = _mm512_set1_pd(entry(xv, dq));
                    // SAFETY: j < vrows.len() == acc.len() (checked by `dots512`)
                    let o = acc.as_mut_ptr().add(col(j)).cast::<f64>();
                    let a0 = _mm512_maskz_loadu_pd(m0, o);
                    _mm512_mask_storeu_pd(o, m0, _mm512_add_pd(a0, _mm512_mul_pd(e, u0)));
                    if N > 8 {
                        let a1 = _mm512_maskz_loadu_pd(m1, o.add(8));
                        _mm512_mask_storeu_pd(
                            o.add(8),
                            m1,
                            _mm512_add_pd(a1, _mm512_mul_pd(e, u1)),
                        );
                    }
                }
            }
        }
    }

    /// `acc + sum_q x_q ln(u . v_{js[q]} + eps)` for one row of `wcemm`, the terms added in
    /// order. Per batch of up to 64 entries (more independent groups of eight than
    /// [`super::BATCH`]: 9% less CPU time on pnmf_xlogwh, docs/floor.md): first the dot
    /// products eight entries at a time ([`dots8`]: [`super::dot_n`]'s bits) plus `eps`,
    /// stored (the batch's eight-entry groups are independent, so they overlap) with their
    /// logarithms' table offsets; then per eight their logarithms ([`sumlog::avx512::ln8_at`]:
    /// [`sumlog::ln`]'s bits) and the products `x * ln` in a register, added one by one. The last 1..7 entries of a row take lanes too, the last
    /// entry repeated in the lanes after them (each lane is computed on its own, so the
    /// padding changes no entry's value) and only the entries' lanes added. The same values
    /// in the same order as `acc += x * ln(dot_n(u, v_j) + eps)` entry by entry.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) unsafe fn x_ln_dots512<const N: usize>(
        u: &[f64; N],
        vrows: &[[f64; N]],
        js: &[Idx],
        xs: &[f64],
        eps: f64,
        t: &sumlog::Table,
    ) -> f64 {
        assert_eq!(js.len(), xs.len(), "wcemm: a row's indices and values");
        in_range(js, vrows.len());
        let us = ulanes(u);
        x_ln_lanes(js, xs, eps, t, |q| dots8(u, us, rows8(vrows, q)))
    }

    /// [`x_ln_dots512`] for any rank `8 c + t` with `c >= 1` ([`dots8w`]: [`super::dot8`]'s
    /// bits): row `i` of [`super::wcemm`] for a CSR X.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) unsafe fn x_ln_w(x: &ChunkRows<'_>, i: usize, eps: f64, t: &sumlog::Table) -> f64 {
        let k = x.k;
        let c = k / 8;
        assert!(c >= 1, "wcemm: 8 c + t columns");
        let (u, js, xs) = x.entries(i);
        let base = x.vs.as_ptr();
        // SAFETY: every index is below V's rows (checked by `entries`)
        x_ln_lanes(js, xs, eps, t, |q| {
            dots8w(u, c, std::array::from_fn(|e| base.add(col(q[e]) * k)))
        })
    }

    /// The body of [`x_ln_dots512`]: `dots(q)` is the dot products of the eight entries `q`
    /// (indices checked by the caller), one per lane.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq")]
    unsafe fn x_ln_lanes(
        js: &[Idx],
        xs: &[f64],
        eps: f64,
        t: &sumlog::Table,
        dots: impl Fn(&[Idx]) -> __m512d,
    ) -> f64 {
        const B: usize = 64;
        let e = _mm512_set1_pd(eps);
        let mut acc = 0.0;
        let mut ps = [0.0f64; 8];
        let mut d = [0.0f64; B];
        // the logarithms' table offsets, computed with the values (stored, so that the
        // logarithms load them by general registers)
        let mut offs = [0usize; B];
        for (jb, xb) in js.chunks(B).zip(xs.chunks(B)) {
            let mut qs = jb.chunks_exact(8);
            let mut g = 0;
            for q in &mut qs {
                let dq = _mm512_add_pd(dots(q), e);
                _mm512_storeu_pd(d[g..g + 8].as_mut_ptr(), dq);
                let o = sumlog::avx512::row_offsets(dq);
                _mm512_storeu_si512(offs[g..g + 8].as_mut_ptr().cast(), o);
                g += 8;
            }
            let q = qs.remainder();
            let padded = if let Some(&last) = q.last() {
                let mut p = [last; 8];
                p[..q.len()].copy_from_slice(q);
                p
            } else {
                [0; 8]
            };
            let tail = if q.is_empty() {
                None
            } else {
                Some(_mm512_add_pd(dots(&padded), e))
            };
            let mut xc = xb.chunks_exact(8);
            for ((dq, oq), x) in d[..g]
                .chunks_exact(8)
                .zip(offs.chunks_exact(8))
                .zip(&mut xc)
            {
                let l = sumlog::avx512::ln8_at(_mm512_loadu_pd(dq.as_ptr()), oq, t);
                let p = _mm512_mul_pd(_mm512_loadu_pd(x.as_ptr()), l);
                _mm512_storeu_pd(ps.as_mut_ptr(), p);
                for v in ps {
                    acc += v;
                }
            }
            if let Some(dq) = tail {
                let x = xc.remainder();
                let xv = _mm512_maskz_loadu_pd((1u8 << x.len()) - 1, x.as_ptr());
                let p = _mm512_mul_pd(xv, sumlog::avx512::ln8_lanes(dq, t));
                _mm512_storeu_pd(ps.as_mut_ptr(), p);
                for &v in &ps[..x.len()] {
                    acc += v;
                }
            }
        }
        acc
    }

    /// `sum_q entry(x_q, u . v_{js[q]})` for one row of a sampled sum, added in order from
    /// +0.0: per eight entries their dot products ([`dots8`]: [`super::dot_n`]'s bits) and
    /// terms ([`super::Entry::lanes`]) in registers, then added one by one (the additions of
    /// one group run while the next group's products are computed); the last 1..7 entries in
    /// padded lanes as in [`x_ln_dots512`]. The same values in the same order as
    /// `acc += entry.at(x, dot_n(u, v_j))` entry by entry.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) unsafe fn entry_sum512<const N: usize>(
        u: &[f64; N],
        vrows: &[[f64; N]],
        js: &[Idx],
        xs: &[f64],
        entry: &impl super::Entry,
    ) -> f64 {
        assert_eq!(
            js.len(),
            xs.len(),
            "sampled sum: a row's indices and values"
        );
        in_range(js, vrows.len());
        let us = ulanes(u);
        let mut acc = 0.0;
        let mut ps = [0.0f64; 8];
        let mut qs = js.chunks_exact(8);
        let mut xc = xs.chunks_exact(8);
        for (q, x) in (&mut qs).zip(&mut xc) {
            let p = entry.lanes(_mm512_loadu_pd(x.as_ptr()), dots8(u, us, rows8(vrows, q)));
            _mm512_storeu_pd(ps.as_mut_ptr(), p);
            for v in ps {
                acc += v;
            }
        }
        let (q, x) = (qs.remainder(), xc.remainder());
        if let Some(&last) = q.last() {
            let mut padded = [last; 8];
            padded[..q.len()].copy_from_slice(q);
            let xv = _mm512_maskz_loadu_pd((1u8 << x.len()) - 1, x.as_ptr());
            let p = entry.lanes(xv, dots8(u, us, rows8(vrows, &padded)));
            _mm512_storeu_pd(ps.as_mut_ptr(), p);
            for &v in &ps[..x.len()] {
                acc += v;
            }
        }
        acc
    }

    /// A sampled product's operands for factors of `k = 8 C + t` columns (`C >= 1`, `t < 8`):
    /// the rows of U and V as flat row-major slices (`k` values per row), and a CSR matrix's
    /// column indices, values and row pointers.
    pub(super) struct ChunkRows<'a> {
        pub(super) us: &'a [f64],
        pub(super) vs: &'a [f64],
        pub(super) k: usize,
        pub(super) ind: &'a [Idx],
        pub(super) val: &'a [f64],
        pub(super) ip: &'a [usize],
    }

    impl ChunkRows<'_> {
        /// Row `i` of U, its `C` full blocks of eight columns in registers and its tail
        /// (the last `t` columns, zeros after them), and row `i`'s entries of the CSR matrix,
        /// whose column indices are checked against V's rows here ([`in_range`]).
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq")]
        unsafe fn row<const C: usize>(
            &self,
            i: usize,
        ) -> (&[f64], [__m512d; C], __m512d, &[Idx], &[f64]) {
            let k = self.k;
            let (u, js, xs) = self.entries(i);
            let up = u.as_ptr();
            let ub: [__m512d; C] = std::array::from_fn(|b| _mm512_loadu_pd(up.add(8 * b)));
            let ut = _mm512_maskz_loadu_pd(tail_mask(k - 8 * C), up.add(8 * C));
            (u, ub, ut, js, xs)
        }
    }

    impl ChunkRows<'_> {
        /// Row `i` of U and row `i`'s entries of the CSR matrix, whose column indices are
        /// checked against V's rows here ([`in_range`]), prefetched.
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq")]
        unsafe fn entries(&self, i: usize) -> (&[f64], &[Idx], &[f64]) {
            let k = self.k;
            let u = &self.us[i * k..(i + 1) * k];
            let (lo, hi) = (self.ip[i], self.ip[i + 1]);
            let (js, xs) = (&self.ind[lo..hi], &self.val[lo..hi]);
            assert_eq!(
                js.len(),
                xs.len(),
                "sampled product: a row's indices and values"
            );
            crate::kernels::matmul::prefetch_entries(self.ind, self.val, lo, hi);
            in_range(js, self.vs.len() / k);
            (u, js, xs)
        }
    }

    /// The lanes of the last `t` (< 8) columns of a row.
    #[inline(always)]
    fn tail_mask(t: usize) -> __mmask8 {
        ((1u16 << t) - 1) as __mmask8
    }

    /// `d[q] = u . v_{js[q]}` for a batch of entries of one row (`u`: `8 C + t` values, `ub`
    /// its full blocks; `vs`: V's rows, `u.len()` values each; every index checked by
    /// [`in_range`]), eight entries at a time by [`dots8c`] ([`super::dot8`]'s bits), the last
    /// 1..7 in padded lanes (the last entry repeated; each lane is computed on its own).
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq")]
    unsafe fn dots_chunks<const C: usize>(
        u: &[f64],
        ub: &[__m512d; C],
        vs: &[f64],
        js: &[Idx],
        d: &mut [f64],
    ) {
        let k = u.len();
        let base = vs.as_ptr();
        // SAFETY: every index is below V's rows (the caller's contract)
        let rows =
            |q: &[Idx]| -> [*const f64; 8] { std::array::from_fn(|e| base.add(col(q[e]) * k)) };
        let mut qs = js.chunks_exact(8);
        let mut out = d.chunks_exact_mut(8);
        for (q, o) in (&mut qs).zip(&mut out) {
            _mm512_storeu_pd(o.as_mut_ptr(), dots8c(u, ub, rows(q)));
        }
        let q = qs.remainder();
        if let Some(&last) = q.last() {
            let mut padded = [last; 8];
            padded[..q.len()].copy_from_slice(q);
            let o = out.into_remainder();
            debug_assert_eq!(o.len(), q.len());
            _mm512_mask_storeu_pd(
                o.as_mut_ptr(),
                tail_mask(q.len()),
                dots8c(u, ub, rows(&padded)),
            );
        }
    }

    /// The left side of a sampled product (`t(U) %*% S`, into an `n x k` accumulator) over
    /// the CSR rows `rows`, for factors of `k = 8 C + t` columns: per row `i`, each entry's
    /// `e = entry(x, u_i . v_j)` (the dot products by [`dots_chunks`], [`super::dot8`]'s bits)
    /// and `acc[j] += e * u_i`, the entries in order, one product and one sum per column (no
    /// fused multiply-add) in AVX-512 registers, `C` blocks of eight and the tail masked: the
    /// bits of the general loop's `acc[j][l] += e * u_i[l]`.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) unsafe fn scatter_chunks512<const C: usize>(
        x: &ChunkRows<'_>,
        rows: std::ops::Range<usize>,
        entry: &impl Fn(f64, f64) -> f64,
        acc: &mut [f64],
    ) {
        let k = x.k;
        assert!(
            k >= 8 * C && k < 8 * C + 8,
            "sampled product: 8 C + t columns"
        );
        assert_eq!(
            acc.len(),
            x.vs.len(),
            "sampled product: one output row per row of V"
        );
        let mt = tail_mask(k - 8 * C);
        let tail = k > 8 * C;
        let mut d = [0.0f64; super::BATCH];
        for i in rows {
            let (u, ub, ut, js, xs) = x.row::<C>(i);
            for (jb, xb) in js.chunks(super::BATCH).zip(xs.chunks(super::BATCH)) {
                let d = &mut d[..jb.len()];
                dots_chunks(u, &ub, x.vs, jb, d);
                for ((&j, &xv), &dq) in jb.iter().zip(xb).zip(d.iter()) {
                    let e = _mm512_set1_pd(entry(xv, dq));
                    // SAFETY: j < V's rows (checked by `row`), and acc has k values per row
                    let o = acc.as_mut_ptr().add(col(j) * k);
                    for (b, &ubb) in ub.iter().enumerate() {
                        let p = o.add(8 * b);
                        _mm512_storeu_pd(
                            p,
                            _mm512_add_pd(_mm512_loadu_pd(p), _mm512_mul_pd(e, ubb)),
                        );
                    }
                    if tail {
                        let p = o.add(8 * C);
                        let a = _mm512_maskz_loadu_pd(mt, p);
                        _mm512_mask_storeu_pd(p, mt, _mm512_add_pd(a, _mm512_mul_pd(e, ut)));
                    }
                }
            }
        }
    }

    /// Row `i` of the right side of a sampled product (`S %*% V`) for factors of `k = 8 C + t`
    /// columns, into `o` (`k` values): each entry's `e = entry(x, u_i . v_j)` (by
    /// [`dots_chunks`], [`super::dot8`]'s bits) and the row's sums `o += e * v_j` in
    /// registers from +0.0 (`C` blocks of eight and the tail masked), the entries in order, a
    /// product and a sum per column: the bits of the general loop.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) unsafe fn right_row_chunks512<const C: usize>(
        x: &ChunkRows<'_>,
        i: usize,
        entry: &impl Fn(f64, f64) -> f64,
        o: &mut [f64],
    ) {
        let k = x.k;
        assert!(
            k >= 8 * C && k < 8 * C + 8,
            "sampled product: 8 C + t columns"
        );
        assert_eq!(o.len(), k, "sampled product: an output row");
        let mt = tail_mask(k - 8 * C);
        let (u, ub, _, js, xs) = x.row::<C>(i);
        let zero = _mm512_setzero_pd();
        let mut acc = [zero; C];
        let mut tail = zero;
        let mut d = [0.0f64; super::BATCH];
        for (jb, xb) in js.chunks(super::BATCH).zip(xs.chunks(super::BATCH)) {
            let d = &mut d[..jb.len()];
            dots_chunks(u, &ub, x.vs, jb, d);
            for ((&j, &xv), &dq) in jb.iter().zip(xb).zip(d.iter()) {
                let e = _mm512_set1_pd(entry(xv, dq));
                // SAFETY: j < V's rows (checked by `row`), k values per row
                let v = x.vs.as_ptr().add(col(j) * k);
                for (b, a) in acc.iter_mut().enumerate() {
                    *a = _mm512_add_pd(*a, _mm512_mul_pd(e, _mm512_loadu_pd(v.add(8 * b))));
                }
                let vt = _mm512_maskz_loadu_pd(mt, v.add(8 * C));
                tail = _mm512_add_pd(tail, _mm512_mul_pd(e, vt));
            }
        }
        let op = o.as_mut_ptr();
        for (b, &a) in acc.iter().enumerate() {
            _mm512_storeu_pd(op.add(8 * b), a);
        }
        _mm512_mask_storeu_pd(op.add(8 * C), mt, tail);
    }

    /// [`dots8c`] for rows of `u.len() = 8 c + t` values with a run-time count `c >= 1` of
    /// full blocks (ranks past [`dots8c`]'s registers): u's blocks are read from memory (the
    /// row stays in the first-level cache), the same products and sums in the same order, so
    /// [`super::dot8`]'s bits.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq")]
    unsafe fn dots8w(u: &[f64], c: usize, r: [*const f64; 8]) -> __m512d {
        debug_assert!(c >= 1 && u.len() >= 8 * c && u.len() < 8 * c + 8);
        let up = u.as_ptr();
        let acc = |e: usize| {
            let p = r[e];
            let mut a = _mm512_mul_pd(_mm512_loadu_pd(up), _mm512_loadu_pd(p));
            for b in 1..c {
                let (ub, vb) = (
                    _mm512_loadu_pd(up.add(8 * b)),
                    _mm512_loadu_pd(p.add(8 * b)),
                );
                a = _mm512_add_pd(a, _mm512_mul_pd(ub, vb));
            }
            a
        };
        lanes_in_order(_mm512_add_pd(reduce8(acc), tail8(u, r, 8 * c)))
    }

    /// [`dots_chunks`] with [`dots8w`]: `d[q] = u . v_{js[q]}` for a batch of entries of one
    /// row, `c` full blocks counted at run time (every index checked by [`in_range`]).
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq")]
    unsafe fn dots_w(u: &[f64], c: usize, vs: &[f64], js: &[Idx], d: &mut [f64]) {
        let k = u.len();
        let base = vs.as_ptr();
        // SAFETY: every index is below V's rows (the caller's contract)
        let rows =
            |q: &[Idx]| -> [*const f64; 8] { std::array::from_fn(|e| base.add(col(q[e]) * k)) };
        let mut qs = js.chunks_exact(8);
        let mut out = d.chunks_exact_mut(8);
        for (q, o) in (&mut qs).zip(&mut out) {
            _mm512_storeu_pd(o.as_mut_ptr(), dots8w(u, c, rows(q)));
        }
        let q = qs.remainder();
        if let Some(&last) = q.last() {
            let mut padded = [last; 8];
            padded[..q.len()].copy_from_slice(q);
            let o = out.into_remainder();
            debug_assert_eq!(o.len(), q.len());
            _mm512_mask_storeu_pd(
                o.as_mut_ptr(),
                tail_mask(q.len()),
                dots8w(u, c, rows(&padded)),
            );
        }
    }

    /// One row of [`super::sddmm`] for a CSR X at any rank `k = 8 c + t` with `c >= 1`:
    /// `vals[q] *= u . v_{js[q]}`, eight entries' dot products at a time ([`dots_w`],
    /// [`super::dot8`]'s bits), so the bits of the general loop.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) unsafe fn sddmm_row_w(u: &[f64], vs: &[f64], js: &[Idx], vals: &mut [f64]) {
        let k = u.len();
        let c = k / 8;
        assert!(c >= 1, "sddmm: 8 c + t columns");
        assert_eq!(js.len(), vals.len(), "sddmm: a row's indices and values");
        in_range(js, vs.len() / k);
        let mut d = [0.0f64; super::BATCH];
        for (jb, xb) in js.chunks(super::BATCH).zip(vals.chunks_mut(super::BATCH)) {
            let d = &mut d[..jb.len()];
            dots_w(u, c, vs, jb, d);
            for (x, &dq) in xb.iter_mut().zip(d.iter()) {
                *x *= dq;
            }
        }
    }

    /// The left side of a sampled product (`t(U) %*% S`, into an `n x k` accumulator) over
    /// the CSR rows `rows`, for any rank `k = 8 c + t` with `c >= 1` ([`scatter_chunks512`]
    /// without the row of U in registers): each entry's `e = entry(x, u_i . v_j)` ([`dots_w`],
    /// [`super::dot8`]'s bits) and `acc[j] += e * u_i`, the entries in order, one product and
    /// one sum per column (no fused multiply-add): the bits of the general loop.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) unsafe fn scatter_w(
        x: &ChunkRows<'_>,
        rows: std::ops::Range<usize>,
        entry: &impl Fn(f64, f64) -> f64,
        acc: &mut [f64],
    ) {
        let k = x.k;
        let c = k / 8;
        assert!(c >= 1, "sampled product: 8 c + t columns");
        assert_eq!(
            acc.len(),
            x.vs.len(),
            "sampled product: one output row per row of V"
        );
        let mt = tail_mask(k - 8 * c);
        let tail = k > 8 * c;
        let mut d = [0.0f64; super::BATCH];
        for i in rows {
            let (u, js, xs) = x.entries(i);
            let up = u.as_ptr();
            for (jb, xb) in js.chunks(super::BATCH).zip(xs.chunks(super::BATCH)) {
                let d = &mut d[..jb.len()];
                dots_w(u, c, x.vs, jb, d);
                for ((&j, &xv), &dq) in jb.iter().zip(xb).zip(d.iter()) {
                    let e = _mm512_set1_pd(entry(xv, dq));
                    // SAFETY: j < V's rows (checked by `entries`), and acc has k values per row
                    let o = acc.as_mut_ptr().add(col(j) * k);
                    for b in 0..c {
                        let p = o.add(8 * b);
                        let ub = _mm512_loadu_pd(up.add(8 * b));
                        _mm512_storeu_pd(
                            p,
                            _mm512_add_pd(_mm512_loadu_pd(p), _mm512_mul_pd(e, ub)),
                        );
                    }
                    if tail {
                        let p = o.add(8 * c);
                        let (a, ut) = (
                            _mm512_maskz_loadu_pd(mt, p),
                            _mm512_maskz_loadu_pd(mt, up.add(8 * c)),
                        );
                        _mm512_mask_storeu_pd(p, mt, _mm512_add_pd(a, _mm512_mul_pd(e, ut)));
                    }
                }
            }
        }
    }

    /// Row `i` of the right side of a sampled product (`S %*% V`) for any rank `k = 8 c + t`
    /// with `c >= 1`, into `o` (`k` values, zeros on entry): per batch of entries their
    /// `e = entry(x, u_i . v_j)` ([`dots_w`], [`super::dot8`]'s bits), then the row's sums
    /// `o += e * v_j` over groups of up to eight blocks of eight columns in registers (loaded
    /// from `o` and stored back per batch) and the tail masked, the entries in order, a
    /// product and a sum per column from +0.0: the bits of the general loop.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) unsafe fn right_row_w(
        x: &ChunkRows<'_>,
        i: usize,
        entry: &impl Fn(f64, f64) -> f64,
        o: &mut [f64],
    ) {
        let k = x.k;
        let c = k / 8;
        assert!(c >= 1, "sampled product: 8 c + t columns");
        assert_eq!(o.len(), k, "sampled product: an output row");
        let mt = tail_mask(k - 8 * c);
        let tail = k > 8 * c;
        let (u, js, xs) = x.entries(i);
        let mut d = [0.0f64; super::BATCH];
        let op = o.as_mut_ptr();
        let vs = x.vs.as_ptr();
        for (jb, xb) in js.chunks(super::BATCH).zip(xs.chunks(super::BATCH)) {
            let d = &mut d[..jb.len()];
            dots_w(u, c, x.vs, jb, d);
            for (dq, &xv) in d.iter_mut().zip(xb) {
                *dq = entry(xv, *dq);
            }
            let mut g = 0;
            while g < c {
                let nb = (c - g).min(8);
                // SAFETY: blocks g..g + nb of the row (8 c <= k values), every index below
                // V's rows (checked by `entries`)
                let (og, vg) = (op.add(8 * g), vs.add(8 * g));
                match nb {
                    8 => right_group::<8>(og, vg, k, jb, d),
                    7 => right_group::<7>(og, vg, k, jb, d),
                    6 => right_group::<6>(og, vg, k, jb, d),
                    5 => right_group::<5>(og, vg, k, jb, d),
                    4 => right_group::<4>(og, vg, k, jb, d),
                    3 => right_group::<3>(og, vg, k, jb, d),
                    2 => right_group::<2>(og, vg, k, jb, d),
                    _ => right_group::<1>(og, vg, k, jb, d),
                }
                g += nb;
            }
            if tail {
                let p = op.add(8 * c);
                let mut a = _mm512_maskz_loadu_pd(mt, p);
                for (&j, &e) in jb.iter().zip(d.iter()) {
                    let vt = _mm512_maskz_loadu_pd(mt, vs.add(col(j) * k + 8 * c));
                    a = _mm512_add_pd(a, _mm512_mul_pd(_mm512_set1_pd(e), vt));
                }
                _mm512_mask_storeu_pd(p, mt, a);
            }
        }
    }

    /// `o[b] += e_q * v_{js[q]}[b]` for `G` blocks of eight columns (`o` and `v` pointing at
    /// the group's first column; V's rows `k` values apart), the entries in order, the sums
    /// in registers.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq")]
    unsafe fn right_group<const G: usize>(
        o: *mut f64,
        v: *const f64,
        k: usize,
        js: &[Idx],
        es: &[f64],
    ) {
        let mut acc: [__m512d; G] = std::array::from_fn(|b| _mm512_loadu_pd(o.add(8 * b)));
        for (&j, &e) in js.iter().zip(es) {
            let (e, vj) = (_mm512_set1_pd(e), v.add(col(j) * k));
            for (b, a) in acc.iter_mut().enumerate() {
                *a = _mm512_add_pd(*a, _mm512_mul_pd(e, _mm512_loadu_pd(vj.add(8 * b))));
            }
        }
        for (b, &a) in acc.iter().enumerate() {
            _mm512_storeu_pd(o.add(8 * b), a);
        }
    }

    /// `sum_q entry(x_q, u . v_{js[q]})` for one row of a sampled sum at any rank `8 c + t`
    /// with `c >= 1` ([`entry_sum512`] with [`dots8w`]), added in order from +0.0: the same
    /// values in the same order as `acc += entry.at(x, dot8(u, v_j))` entry by entry.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) unsafe fn entry_sum_w(
        x: &ChunkRows<'_>,
        i: usize,
        entry: &impl super::Entry,
    ) -> f64 {
        let k = x.k;
        let c = k / 8;
        assert!(c >= 1, "sampled sum: 8 c + t columns");
        let (u, js, xs) = x.entries(i);
        let base = x.vs.as_ptr();
        // SAFETY: every index is below V's rows (checked by `entries`)
        let rows =
            |q: &[Idx]| -> [*const f64; 8] { std::array::from_fn(|e| base.add(col(q[e]) * k)) };
        let mut acc = 0.0;
        let mut ps = [0.0f64; 8];
        let mut qs = js.chunks_exact(8);
        let mut xc = xs.chunks_exact(8);
        for (q, xq) in (&mut qs).zip(&mut xc) {
            let p = entry.lanes(_mm512_loadu_pd(xq.as_ptr()), dots8w(u, c, rows(q)));
            _mm512_storeu_pd(ps.as_mut_ptr(), p);
            for v in ps {
                acc += v;
            }
        }
        let (q, xq) = (qs.remainder(), xc.remainder());
        if let Some(&last) = q.last() {
            let mut padded = [last; 8];
            padded[..q.len()].copy_from_slice(q);
            let xv = _mm512_maskz_loadu_pd(tail_mask(xq.len()), xq.as_ptr());
            let p = entry.lanes(xv, dots8w(u, c, rows(&padded)));
            _mm512_storeu_pd(ps.as_mut_ptr(), p);
            for &v in &ps[..xq.len()] {
                acc += v;
            }
        }
        acc
    }

    /// [`dots8`] for rows of `u.len() = 8 C + t` values (`C >= 1` full blocks in `ub`, `t < 8`):
    /// eight entries' dot products, one per lane, with [`super::dot8`]'s operations in its
    /// order (lane accumulators over the blocks, reduced as a tree, the tail apart in column
    /// order and added last), so its bits, as argued at [`dots8`].
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq")]
    unsafe fn dots8c<const C: usize>(u: &[f64], ub: &[__m512d; C], r: [*const f64; 8]) -> __m512d {
        let acc = |e: usize| {
            let p = r[e];
            let mut a = _mm512_mul_pd(ub[0], _mm512_loadu_pd(p));
            for (b, &ubb) in ub.iter().enumerate().skip(1) {
                a = _mm512_add_pd(a, _mm512_mul_pd(ubb, _mm512_loadu_pd(p.add(8 * b))));
            }
            a
        };
        lanes_in_order(_mm512_add_pd(reduce8(acc), tail8(u, r, 8 * C)))
    }

    /// Row `u` of U as [`dots8`] takes it: its first and second eight columns (zeros where
    /// `N` has fewer).
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq")]
    unsafe fn ulanes<const N: usize>(u: &[f64; N]) -> [__m512d; 2] {
        let full = N / 8 * 8;
        let zero = _mm512_setzero_pd();
        let u0 = if full >= 8 {
            _mm512_loadu_pd(u.as_ptr())
        } else {
            zero
        };
        let u1 = if full >= 16 {
            _mm512_loadu_pd(u.as_ptr().add(8))
        } else {
            zero
        };
        [u0, u1]
    }

    /// The rows of V of eight entries (`q.len() >= 8`, the first eight), whose indices the
    /// caller has checked against V's rows ([`in_range`]).
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq")]
    unsafe fn rows8<const N: usize>(vrows: &[[f64; N]], q: &[Idx]) -> [*const f64; 8] {
        let q = &q[..8];
        debug_assert!(q.iter().all(|&j| col(j) < vrows.len()));
        let base = vrows.as_ptr();
        // SAFETY: every index is below `vrows.len()` (the caller's contract)
        let r = |e: usize| base.add(col(q[e])).cast::<f64>();
        [r(0), r(1), r(2), r(3), r(4), r(5), r(6), r(7)]
    }

    /// Panics unless every index of `js` is below `n`: one pass of vector maxima over a row's
    /// indices, before [`rows8`] reads V's rows unchecked.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq")]
    unsafe fn in_range(js: &[Idx], n: usize) {
        if col(js.iter().fold(0, |a, &j| a.max(j))) >= n && !js.is_empty() {
            out_of_range();
        }
    }

    #[cold]
    #[inline(never)]
    fn out_of_range() -> ! {
        panic!("sampled kernel: a column index beyond the rows of V")
    }

    /// The dot products of row `u` of U (`us`: [`ulanes`]) with eight rows of V (`r`, each `N`
    /// values), one entry per lane, with [`super::dot_n`]'s operations in its order on each
    /// entry, so its bits: each entry's products of the first eight (and second eight)
    /// columns are one register, `dot_n`'s lane accumulators (without their start from +0.0,
    /// see below);
    /// the eight entries' registers are then reduced together, `acc[l] + acc[l + 4]`, then
    /// adjacent pairs, then the two halves, as `dot_n`'s `((acc[0] + acc[4]) + (acc[1] +
    /// acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))`, each entry's sum in one lane; the
    /// columns after the last multiple of eight are transposed into lanes (pairs of columns
    /// loaded 128 bits at a time) and added in column order from +0.0 (`dot_n`'s tail), then
    /// added to the sum. The lanes hold the entries in the order 0, 4, 1, 5, 2, 6, 3, 7 until
    /// one permutation at the end. `dot_n`'s accumulators start from +0.0, and `0.0 + p` is `p`
    /// but for a zero's sign: without those additions each node of the sum is the same value
    /// up to a zero's sign, and so is the main sum, to which the tail, never -0.0 (its sum
    /// starts from +0.0, or it is +0.0), is added: `(+-0) + t` is `t` (or +0.0 for `t` = +0.0),
    /// the same bits.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq")]
    unsafe fn dots8<const N: usize>(
        u: &[f64; N],
        [u0, u1]: [__m512d; 2],
        r: [*const f64; 8],
    ) -> __m512d {
        let full = N / 8 * 8;
        let main = if full == 0 {
            _mm512_setzero_pd()
        } else {
            // a[e]: lane l holds dot_n's acc[l] of entry e, but for the sign of a zero (see
            // above: the `0.0 +` of dot_n's accumulators is not done)
            reduce8(|e: usize| {
                let p = r[e];
                let mut a = _mm512_mul_pd(u0, _mm512_loadu_pd(p));
                if full >= 16 {
                    a = _mm512_add_pd(a, _mm512_mul_pd(u1, _mm512_loadu_pd(p.add(8))));
                }
                a
            })
        };
        lanes_in_order(_mm512_add_pd(main, tail8(u, r, full)))
    }

    /// The permutation of a lane-pair index table into a vector of indices.
    #[inline(always)]
    unsafe fn index8(a: [i64; 8]) -> __m512i {
        std::mem::transmute::<[i64; 8], __m512i>(a)
    }

    /// [`dots8`]'s (and [`dots8c`]'s) reduction of eight entries' lane accumulators `acc(e)`
    /// (lane l of `acc(e)` is dot_n's acc[l] of entry e) as dot_n's tree, `((acc[0] + acc[4])
    /// + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))`, each entry's sum in
    /// one lane, the lanes in the order 0, 4, 1, 5, 2, 6, 3, 7 (undone by [`lanes_in_order`]).
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq")]
    unsafe fn reduce8(acc: impl Fn(usize) -> __m512d) -> __m512d {
        // acc[l] + acc[l + 4] for two entries: lanes 0..4 the first, 4..8 the second
        let half = |e: usize| {
            let (a, b) = (acc(e), acc(e + 1));
            _mm512_add_pd(
                _mm512_shuffle_f64x2::<0x44>(a, b),
                _mm512_shuffle_f64x2::<0xEE>(a, b),
            )
        };
        // adjacent pairs of four entries: [c0(e), c0(e+2), c1(e), c1(e+2), c0(e+1),
        // c0(e+3), c1(e+1), c1(e+3)], c0 = b0 + b1 and c1 = b2 + b3
        let quarter = |e: usize| {
            let (x, y) = (half(e), half(e + 2));
            _mm512_add_pd(_mm512_unpacklo_pd(x, y), _mm512_unpackhi_pd(x, y))
        };
        let (y0, y1) = (quarter(0), quarter(4));
        _mm512_add_pd(
            _mm512_permutex2var_pd(y0, index8([0, 8, 4, 12, 1, 9, 5, 13]), y1),
            _mm512_permutex2var_pd(y0, index8([2, 10, 6, 14, 3, 11, 7, 15]), y1),
        )
    }

    /// The tail of eight entries' dot products with `u`: the columns `from..u.len()`, in
    /// column order from +0.0 (dot_n's tail), each entry in the lane [`reduce8`] gives it.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq")]
    unsafe fn tail8(u: &[f64], r: [*const f64; 8], from: usize) -> __m512d {
        let k = u.len();
        let mut tail = _mm512_setzero_pd();
        let mut l = from;
        while l + 2 <= k {
            // entries 0..4 and 4..8, two columns each per 128-bit lane
            let pair = |e: usize| _mm_loadu_pd(r[e].add(l));
            let lo = _mm512_insertf64x2::<3>(
                _mm512_insertf64x2::<2>(
                    _mm512_insertf64x2::<1>(_mm512_castpd128_pd512(pair(0)), pair(1)),
                    pair(2),
                ),
                pair(3),
            );
            let hi = _mm512_insertf64x2::<3>(
                _mm512_insertf64x2::<2>(
                    _mm512_insertf64x2::<1>(_mm512_castpd128_pd512(pair(4)), pair(5)),
                    pair(6),
                ),
                pair(7),
            );
            // u's columns l and l + 1, repeated in each 128-bit lane
            let ul = _mm512_broadcast_f64x2(_mm_loadu_pd(u.as_ptr().add(l)));
            let (pl, ph) = (_mm512_mul_pd(lo, ul), _mm512_mul_pd(hi, ul));
            tail = _mm512_add_pd(tail, _mm512_unpacklo_pd(pl, ph));
            tail = _mm512_add_pd(tail, _mm512_unpackhi_pd(pl, ph));
            l += 2;
        }
        if l < k {
            let c = |e: usize| *r[e].add(l);
            let col = _mm512_set_pd(c(7), c(3), c(6), c(2), c(5), c(1), c(4), c(0));
            tail = _mm512_add_pd(tail, _mm512_mul_pd(_mm512_set1_pd(u[l]), col));
        }
        tail
    }

    /// The lanes of [`reduce8`] + [`tail8`] back in entry order.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq")]
    unsafe fn lanes_in_order(v: __m512d) -> __m512d {
        _mm512_permutexvar_pd(index8([0, 2, 4, 6, 1, 3, 5, 7]), v)
    }
}

/// The term of a sampled sum at an entry: `at(x_ij, u_i . v_j)`, and the same operations on
/// eight entries' lanes (the same bits per lane).
trait Entry: Sync {
    /// The term of one entry.
    fn at(&self, x: f64, uv: f64) -> f64;
    /// [`Entry::at`] of eight entries in the lanes of AVX-512 registers. Inlined into the
    /// AVX-512F callers (no closures in it).
    #[cfg(target_arch = "x86_64")]
    unsafe fn lanes(
        &self,
        x: std::arch::x86_64::__m512d,
        uv: std::arch::x86_64::__m512d,
    ) -> std::arch::x86_64::__m512d;
}

/// `(x - uv)^2 - uv^2` as `x * (x - 2 uv)`: [`wsloss`]'s correction of its Gram expansion.
struct LossCorrection;

impl Entry for LossCorrection {
    #[inline(always)]
    fn at(&self, x: f64, uv: f64) -> f64 {
        x * (x - 2.0 * uv)
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn lanes(
        &self,
        x: std::arch::x86_64::__m512d,
        uv: std::arch::x86_64::__m512d,
    ) -> std::arch::x86_64::__m512d {
        use std::arch::x86_64::*;
        _mm512_mul_pd(x, _mm512_sub_pd(x, _mm512_mul_pd(_mm512_set1_pd(2.0), uv)))
    }
}

/// `1 * (x - uv)^2`: [`wsloss_weighted`]'s term where the weight is 1 (`W = (X != 0)`).
struct SquaredError;

impl Entry for SquaredError {
    #[inline(always)]
    fn at(&self, x: f64, uv: f64) -> f64 {
        let d = x - uv;
        1.0 * d * d
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn lanes(
        &self,
        x: std::arch::x86_64::__m512d,
        uv: std::arch::x86_64::__m512d,
    ) -> std::arch::x86_64::__m512d {
        use std::arch::x86_64::*;
        let d = _mm512_sub_pd(x, uv);
        _mm512_mul_pd(_mm512_mul_pd(_mm512_set1_pd(1.0), d), d)
    }
}

/// For a CSR X and factors of at most 16 columns, [`sampled_sum_narrow`]; of more,
/// [`sampled_sum_w`] (AVX-512F/DQ), else [`sampled_sum_chunks`] up to 71 columns; `None`
/// otherwise (the general loop).
fn narrow_sum(x: &Matrix, f: &Factors, entry: &impl Entry) -> Option<f64> {
    match x {
        Matrix::Sparse(s) => thin!(f.k, sampled_sum_narrow, s, f, entry)
            .or_else(|| mid!(f.k, sampled_sum_narrow, s, f, entry))
            .or_else(|| sampled_sum_w(s, f, entry))
            .or_else(|| chunks!(f.k, sampled_sum_chunks, s, f, entry)),
        Matrix::Dense(_) => None,
    }
}

/// `sum_i sum_j entry(x_ij, u_i . v_j)` over the stored entries of a CSR X for factors of
/// more than 16 columns, with AVX-512F/DQ: per row [`dots_by_lanes::entry_sum_w`] (eight
/// entries' dot products at a time, [`dot8`]'s bits, added in column order from +0.0), the
/// rows in row order ([`par_row_sum`]), as the general loop adds them: the same bits. `None`
/// for narrower factors or without AVX-512.
fn sampled_sum_w(s: &Csr, f: &Factors, entry: &impl Entry) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    if f.k > 16 && lanes512() {
        let indptr = s.indptr();
        let x = dots_by_lanes::ChunkRows {
            us: f.us,
            vs: f.vs,
            k: f.k,
            ind: s.indices(),
            val: s.data(),
            ip: indptr.raw_storage(),
        };
        // SAFETY: the CPU has AVX-512F and AVX-512DQ (`lanes512`)
        return Some(par_row_sum(s.rows(), |i| unsafe {
            dots_by_lanes::entry_sum_w(&x, i, entry)
        }));
    }
    let _ = (s, f, entry);
    None
}

/// `sum_i sum_j entry(x_ij, u_i . v_j)` over the stored entries of a CSR X for factors of
/// `8 C + t` columns (`t < 8`) on a CPU without AVX-512 (which takes [`sampled_sum_w`]): per
/// row [`sampled_row_sum`] with the dot products of [`chunk_batch_dots`] (the bits of
/// [`dot8`]), the rows in row order ([`par_row_sum`]), the row loop compiled by [`wide`]: the
/// general loop's bits.
fn sampled_sum_chunks<const C: usize>(s: &Csr, f: &Factors, entry: &impl Entry) -> f64 {
    let ip = s.indptr();
    let ip = ip.raw_storage();
    let (ind, val) = (s.indices(), s.data());
    let lanes = Lanes::of_cpu();
    par_row_sum(s.rows(), |i| {
        let (lo, hi) = (ip[i], ip[i + 1]);
        prefetch_entries(ind, val, lo, hi);
        let ui = f.u(i);
        wide(
            #[inline(always)]
            || {
                sampled_row_sum(&ind[lo..hi], &val[lo..hi], entry, |js, d| {
                    chunk_batch_dots::<C>(ui, f.vs, js, d, lanes)
                })
            },
        )
    })
}

/// `sum_i sum_j entry(x_ij, u_i . v_j)` over the stored entries of a CSR X, for factors of
/// exactly `N` columns: row `i` of U as a fixed-size array and each dot product [`dot_n`]
/// (the bits of [`dot8`]); per row the entries are added in column order from +0.0, and the
/// rows in row order ([`par_row_sum`]), as the general loop adds them: the same bits.
fn sampled_sum_narrow<const N: usize>(s: &Csr, f: &Factors, entry: &impl Entry) -> f64 {
    let (urows, vrows) = (as_rows::<N>(f.us), as_rows::<N>(f.vs));
    let ip = s.indptr();
    let ip = ip.raw_storage();
    let (ind, val) = (s.indices(), s.data());
    let lanes = Lanes::of_cpu();
    par_row_sum(s.rows(), |i| {
        let (lo, hi) = (ip[i], ip[i + 1]);
        prefetch_entries(ind, val, lo, hi);
        #[cfg(target_arch = "x86_64")]
        if lanes == Lanes::Avx512 && N <= 16 {
            // SAFETY: the CPU has AVX-512F and AVX-512DQ (`lanes512`)
            return unsafe {
                dots_by_lanes::entry_sum512(&urows[i], vrows, &ind[lo..hi], &val[lo..hi], entry)
            };
        }
        let ui = &urows[i];
        wide(
            #[inline(always)]
            || {
                sampled_row_sum(&ind[lo..hi], &val[lo..hi], entry, |js, d| {
                    batch_dots(ui, vrows, js, d, lanes)
                })
            },
        )
    })
}

/// Entries per batch of [`sampled_row_sum`], [`XLnSum`] and [`wcemm_narrow`].
const BATCH: usize = 32;

/// `sum_j entry(x_ij, u_i . v_j)` over one row's stored entries (column indices `ind`, values
/// `val`), added in column order from +0.0, with `dots(js, d)` writing the row's dot products
/// `u_i . v_j` of a batch of column indices. The dot products of a batch of entries are
/// computed first into a buffer, then the entries: the gathers and products of a batch
/// overlap, and a costly `entry` runs in a tight loop. The same values added in the same order
/// as one loop over the row. (With AVX-512, [`dots_by_lanes::entry_sum512`] instead.)
#[inline(always)]
fn sampled_row_sum(
    ind: &[Idx],
    val: &[f64],
    entry: &impl Entry,
    dots: impl Fn(&[Idx], &mut [f64]),
) -> f64 {
    let mut acc = 0.0;
    let mut d = [0.0f64; BATCH];
    for (js, xs) in ind.chunks(BATCH).zip(val.chunks(BATCH)) {
        dots(js, &mut d[..js.len()]);
        for (&dq, &xv) in d.iter().zip(xs) {
            acc += entry.at(xv, dq);
        }
    }
    acc
}

/// `d[q] = u . v_{js[q]}` for a batch of entries, [`dot_n`]'s bits: eight entries at a time by
/// [`dots_by_lanes::dots512`] with [`Lanes::Avx512`], four by [`dots_by_lanes::dots`] with
/// [`Lanes::Avx2`], else one by one.
#[inline(always)]
fn batch_dots<const N: usize, const R: usize>(
    ui: &[f64; N],
    vrows: &[[f64; R]],
    js: &[Idx],
    d: &mut [f64],
    lanes: Lanes,
) {
    #[cfg(target_arch = "x86_64")]
    match lanes {
        // SAFETY: `Lanes::Avx512` only when the CPU has AVX-512F and AVX-512DQ (`Lanes::of_cpu`)
        Lanes::Avx512 if N <= 16 && R == N => {
            let vrows = as_rows::<N>(vrows.as_flattened());
            return unsafe { dots_by_lanes::dots512(ui, vrows, js, d) };
        }
        // SAFETY: `Lanes::Avx2` only when the CPU has AVX2 and FMA, which AVX-512's CPUs have
        // too (`Lanes::of_cpu`)
        Lanes::Avx512 | Lanes::Avx2 if N <= 32 => {
            return unsafe { dots_by_lanes::dots(ui, vrows, js, None, d) }
        }
        Lanes::Avx512 | Lanes::Avx2 => {}
        Lanes::Scalar => {}
    }
    let _ = lanes;
    for (dq, &j) in d.iter_mut().zip(js) {
        *dq = dot_n(ui, first(&vrows[col(j)]));
    }
}

/// The first `N` values of a row of `R >= N`.
#[inline(always)]
fn first<const N: usize, const R: usize>(r: &[f64; R]) -> &[f64; N] {
    r[..N].try_into().expect("a row of at least N values")
}

/// The vector registers the sampled kernels' dot products use on this CPU; every choice gives
/// [`dot_n`]'s bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lanes {
    /// eight doubles (AVX-512F and AVX-512DQ)
    Avx512,
    /// four doubles (AVX2 and FMA)
    Avx2,
    /// one at a time
    Scalar,
}

impl Lanes {
    /// The widest this CPU runs.
    fn of_cpu() -> Lanes {
        #[cfg(target_arch = "x86_64")]
        {
            if lanes512() {
                return Lanes::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Lanes::Avx2;
            }
        }
        Lanes::Scalar
    }
}

/// Whether the CPU runs [`dots_by_lanes::dots512`] (AVX-512F and AVX-512DQ).
fn lanes512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Which side of a sampled product the factor multiplies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// `S %*% V`: `m x k`
    Right,
    /// `t(U) %*% S`: `k x n`
    Left,
}

/// `S %*% V` (right) or `t(U) %*% S` (left) for the sampled matrix `S` whose entry at each
/// non-zero `(i, j)` of the driver `D` is `entry(d_ij, y_ij, u_i . v_j)` (`y` is X's value when
/// `X` is given, else 0), never forming S.
fn sampled_mm(
    d: &Matrix,
    y: Option<&Matrix>,
    u: &Dense,
    v: &Dense,
    side: Side,
    entry: impl Fn(f64, f64, f64) -> f64 + Sync + Send,
    what: &str,
) -> Dense {
    if let Some(y) = y {
        assert_eq!(y.shape(), d.shape(), "{what} shape contract");
    }
    if let (Matrix::Dense(dd), None) = (d, y) {
        if let Some(r) = sampled_mm_dense(dd, u, v, side, &entry, what, DRIVER_BLOCK_CELLS) {
            return r;
        }
    }
    sampled_mm_stored(d, y, u, v, side, entry, what)
}

/// [`sampled_mm`] over the driver as stored: the CSR kernels for a CSR driver without X,
/// else the generic loop over each row's non-zeros.
fn sampled_mm_stored(
    d: &Matrix,
    y: Option<&Matrix>,
    u: &Dense,
    v: &Dense,
    side: Side,
    entry: impl Fn(f64, f64, f64) -> f64 + Sync + Send,
    what: &str,
) -> Dense {
    let (m, n) = d.shape();
    if let (Matrix::Sparse(s), None) = (d, y) {
        let fast = with_factors((m, n), u, v, what, |f| {
            let entry = |dv, uv| entry(dv, 0.0, uv);
            thin_padded!(f.k, sampled_mm_narrow, s, f, side, &entry)
                .or_else(|| mid!(f.k, sampled_mm_mid, s, f, side, &entry))
                .or_else(|| chunks!(f.k, sampled_mm_chunks, s, f, side, &entry))
                .or_else(|| sampled_mm_w(s, f, side, &entry))
        });
        if let Some(r) = fast {
            return r;
        }
    }
    with_factors((m, n), u, v, what, |f| {
        let k = f.k;
        // generic in the entry's consumer, so that the whole row loop is one inlined body
        #[inline(always)]
        fn each<G: FnMut(usize, f64)>(
            d: &Matrix,
            y: Option<&Matrix>,
            f: &Factors,
            entry: &impl Fn(f64, f64, f64) -> f64,
            i: usize,
            mut g: G,
        ) {
            match y {
                Some(y) => row_nz_with(d, y, i, |j, dv, yv| g(j, entry(dv, yv, f.dot(i, j)))),
                None => row_nz(d, i, |j, dv| g(j, entry(dv, 0.0, f.dot(i, j)))),
            }
        }
        match side {
            Side::Right => par_rows(m, k, MIN_ROWS, |i, o| {
                each(d, y, f, &entry, i, |j, s| {
                    for (oc, vc) in o.iter_mut().zip(f.v(j)) {
                        *oc += s * vc;
                    }
                })
            }),
            Side::Left => {
                // each task accumulates t(S) %*% U (n x k) for its rows; the partial sums are
                // added, then transposed into k x n
                let per_row = (d.nnz() / m.max(1)).max(1) * k;
                par_scatter(m, n, k, per_row, |acc, i| {
                    let ui = f.u(i);
                    each(d, y, f, &entry, i, |j, s| {
                        for (a, uc) in acc[j * k..(j + 1) * k].iter_mut().zip(ui) {
                            *a += s * uc;
                        }
                    });
                })
                .t()
                .as_standard_layout()
                .into_owned()
            }
        }
    })
}

/// Cells of a dense driver that [`sampled_mm_dense`] turns into CSR at a time (16 MB).
const DRIVER_BLOCK_CELLS: usize = 1 << 21;

/// [`sampled_mm`] for a dense driver (the mask `X != 0` of dense data, dense weights): its
/// rows in blocks of about `block_cells` cells ([`DRIVER_BLOCK_CELLS`] in a plan), each
/// block's non-zeros gathered into CSR ([`dense_rows_csr`]; not [`crate::matrix::dense_to_csr`],
/// which runs on one thread and stores `-0.0`, which the generic loop skips) and run through
/// the CSR kernels, which are several times faster
/// than the generic loop over the dense rows (a dot product and an axpy per non-zero in
/// registers of the rank's width), so that the sampled product of dense data skips its zeros
/// as it does for sparse data and never forms the `m x n` product. The right side's rows are
/// those of the blocks (the same bits as the generic loop: each row's entries in order); the
/// left side adds the blocks' `k x n` partial products in block order (a fixed split, so the
/// same bits on every run). `None` (the generic loop) when the columns exceed CSR's index
/// range.
fn sampled_mm_dense(
    d: &Dense,
    u: &Dense,
    v: &Dense,
    side: Side,
    entry: &(impl Fn(f64, f64, f64) -> f64 + Sync + Send),
    what: &str,
    block_cells: usize,
) -> Option<Dense> {
    let (m, n) = d.dim();
    let k = u.ncols();
    if n > crate::matrix::MAX_SPARSE_COLS || m == 0 || n == 0 {
        return None;
    }
    assert!(
        u.nrows() == m && v.nrows() == n && v.ncols() == k,
        "{what} shape contract"
    );
    let d = d.as_standard_layout();
    let ds = d.as_slice().expect("standard layout");
    let block = (block_cells / n).max(1);
    let blocks = (0..m).step_by(block).map(|lo| lo..(lo + block).min(m));
    let mut spare = (Vec::new(), Vec::new());
    let mut run = |rows: std::ops::Range<usize>| {
        let x = Matrix::Sparse(dense_rows_csr(
            ds,
            n,
            rows.clone(),
            std::mem::take(&mut spare),
        ));
        let ub = u.slice(ndarray::s![rows, ..]).to_owned();
        let part = sampled_mm_stored(&x, None, &ub, v, side, entry, what);
        if let Matrix::Sparse(x) = x {
            let (_, ind, val) = x.into_raw_storage();
            spare = (ind, val);
        }
        part
    };
    Some(match side {
        Side::Right => {
            let mut out = crate::matrix::zeroed(m * k);
            for (rows, o) in blocks.zip(out.chunks_mut(block * k.max(1))) {
                let part = run(rows);
                o.copy_from_slice(part.as_slice().expect("standard layout"));
            }
            Array2::from_shape_vec((m, k), out).expect("m x k")
        }
        Side::Left => {
            let mut acc: Option<Dense> = None;
            for rows in blocks {
                let part = run(rows);
                match acc.as_mut() {
                    None => acc = Some(part),
                    Some(a) => *a += &part,
                }
            }
            acc.expect("at least one block")
        }
    })
}

/// The rows `rows` of a row-major dense matrix with `n` columns (`s`) as a CSR matrix of
/// their non-zeros (`v != 0.0`, the cells [`row_nz`] visits: a `-0.0` is skipped as a `+0.0`
/// is), in parallel: the rows' counts, then each group of rows writes its own piece. The
/// index and value arrays reuse the allocations given.
fn dense_rows_csr(
    s: &[f64],
    n: usize,
    rows: std::ops::Range<usize>,
    (mut ind, mut val): (Vec<Idx>, Vec<f64>),
) -> Csr {
    let row = |i: usize| &s[i * n..(i + 1) * n];
    let count = |i: usize| row(i).iter().filter(|&&v| v != 0.0).count();
    let counts: Vec<usize> = rows
        .clone()
        .into_par_iter()
        .with_min_len(((1 << 16) / n).max(1))
        .map(count)
        .collect();
    let mut indptr = Vec::with_capacity(counts.len() + 1);
    indptr.push(0usize);
    for c in &counts {
        indptr.push(indptr.last().copied().unwrap_or(0) + c);
    }
    // pieces of rows of about 64K cells, each writing its own slots without a branch per
    // cell (the mask of dense data has its zeros at random: a branch would mispredict)
    let (len, group) = (counts.len(), ((1usize << 16) / n).max(1));
    let nnz = indptr[len];
    // the previous block's arrays, so that their pages are not faulted in again
    ind.resize(nnz, 0);
    val.resize(nnz, 0.0);
    let mut pieces = Vec::with_capacity(len.div_ceil(group));
    let (mut ri, mut rv) = (ind.as_mut_slice(), val.as_mut_slice());
    for p in 0..len.div_ceil(group) {
        let hi = indptr[((p + 1) * group).min(len)];
        let (hi_i, ti) = std::mem::take(&mut ri).split_at_mut(hi - indptr[p * group]);
        let (hi_v, tv) = std::mem::take(&mut rv).split_at_mut(hi - indptr[p * group]);
        pieces.push((p, hi_i, hi_v));
        (ri, rv) = (ti, tv);
    }
    #[cfg(target_arch = "x86_64")]
    let avx512 = std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl");
    let fill = |(p, pi, pv): &mut (usize, &mut [Idx], &mut [f64])| {
        let lo = rows.start + *p * group;
        let mut q = 0;
        for i in lo..(lo + group).min(rows.end) {
            #[cfg(target_arch = "x86_64")]
            if avx512 {
                // SAFETY: the CPU has AVX-512F and AVX-512VL (checked above)
                q = unsafe { compress_row512(row(i), pi, pv, q) };
                continue;
            }
            q = compress_row(row(i), 0, pi, pv, q);
        }
        debug_assert_eq!(q, pi.len());
    };
    if nnz < 1 << 16 {
        pieces.iter_mut().for_each(fill);
    } else {
        pieces.par_iter_mut().for_each(fill);
    }
    crate::matrix::csr_from_valid((rows.len(), n), indptr, ind, val)
}

/// Appends the non-zeros (`v != 0.0`) of `row[from..]` to the piece `pi`/`pv` from slot `q`
/// (column indices counted from the row's start) and returns the next free slot. Branch-free
/// per cell: every cell is written at `q` while there is room and `q` moves on past a
/// non-zero only, so a zero's write is overwritten by the next non-zero's.
#[inline(always)]
fn compress_row(row: &[f64], from: usize, pi: &mut [Idx], pv: &mut [f64], mut q: usize) -> usize {
    let cap = pi.len().min(pv.len());
    for (j, &v) in row.iter().enumerate().skip(from) {
        if q < cap {
            pi[q] = crate::matrix::idx(j);
            pv[q] = v;
        }
        q += usize::from(v != 0.0);
    }
    q
}

/// [`compress_row`] eight cells at a time: each block's non-zeros and their column indices
/// compressed in registers and stored whole (the slots past the non-zeros are overwritten by
/// the next block's), while eight slots remain; the rest as [`compress_row`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn compress_row512(row: &[f64], pi: &mut [Idx], pv: &mut [f64], mut q: usize) -> usize {
    use std::arch::x86_64::*;
    let (n, cap) = (row.len(), pi.len().min(pv.len()));
    let zero = _mm512_setzero_pd();
    let mut js = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let eight = _mm256_set1_epi32(8);
    let mut j = 0;
    while j + 8 <= n && q + 8 <= cap {
        // SAFETY: `j + 8 <= n` and `q + 8 <= cap`: the loads and stores stay in the slices
        let v = _mm512_loadu_pd(row.as_ptr().add(j));
        // not equal or unordered: `v != 0.0`, NaN included, both zeros left out
        let m = _mm512_cmp_pd_mask::<_CMP_NEQ_UQ>(v, zero);
        _mm512_storeu_pd(pv.as_mut_ptr().add(q), _mm512_maskz_compress_pd(m, v));
        _mm256_storeu_si256(
            pi.as_mut_ptr().add(q).cast(),
            _mm256_maskz_compress_epi32(m, js),
        );
        q += m.count_ones() as usize;
        js = _mm256_add_epi32(js, eight);
        j += 8;
    }
    compress_row(row, j, pi, pv, q)
}

/// [`dot8`] of two rows of exactly `N` values: the same products added in the same order (eight
/// accumulators from +0.0, the tail apart), so the same bits, with the loops unrolled.
#[inline(always)]
fn dot_n<const N: usize>(a: &[f64; N], b: &[f64; N]) -> f64 {
    dot_blocks(a, b, N / 8 * 8)
}

/// [`dot8`]'s order for rows of equal length whose first `full` values (a multiple of eight)
/// are the blocks: eight accumulators from +0.0 over the blocks, the tail apart from +0.0,
/// `((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) +
/// tail`. Inlined, so constant lengths unroll ([`dot_n`], [`dot_chunks`]).
#[inline(always)]
fn dot_blocks(a: &[f64], b: &[f64], full: usize) -> f64 {
    let mut acc = [0.0f64; 8];
    for (x, y) in a[..full].chunks_exact(8).zip(b[..full].chunks_exact(8)) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    let mut tail = 0.0;
    for (x, y) in a[full..].iter().zip(&b[full..]) {
        tail += x * y;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// [`sampled_mm`] for a CSR driver without X values and factors of exactly `N` columns: the
/// rows of U and V as fixed-size arrays and each output row's sums in registers; the same
/// products added in the same order as the general loop, so the same bits.
///
/// Without AVX-512, the rows of V and of the left side's accumulator are padded to `W`
/// doubles ([`Padded`]) when that adds at most a third to them (`4 N >= 3 W`): each gathered
/// or scattered row is then whole lines. Measured on a Zen 3 (AVX2, 512 KB of L2), 3.6M
/// entries, V 8000 rows, one thread: the left side at rank 15 11.3 -> 9.5 ns per entry, at
/// ranks 7 and 12 5% faster, the right side the same; at rank 10 (80-byte rows padded to
/// 128, not done) both sides were 5% slower with V of 5000 rows, which then no longer fits
/// in L2.
fn sampled_mm_narrow<const N: usize, const W: usize>(
    s: &Csr,
    f: &Factors,
    side: Side,
    entry: &(impl Fn(f64, f64) -> f64 + Sync),
) -> Dense {
    let lanes = Lanes::of_cpu();
    let urows = as_rows::<N>(f.us);
    if W == N || lanes == Lanes::Avx512 || 4 * N < 3 * W {
        return sampled_mm_rows::<N, N>(s, urows, as_rows::<N>(f.vs), side, entry, lanes);
    }
    let mut slot = None;
    let vrows = Padded::<W>::rows_of::<N>(f.vs, &mut slot);
    sampled_mm_rows::<N, W>(s, urows, vrows, side, entry, lanes)
}

/// [`sampled_mm_narrow`] for the widths of [`mid!`], rows unpadded.
fn sampled_mm_mid<const N: usize>(
    s: &Csr,
    f: &Factors,
    side: Side,
    entry: &(impl Fn(f64, f64) -> f64 + Sync),
) -> Dense {
    sampled_mm_narrow::<N, N>(s, f, side, entry)
}

/// [`sampled_mm_narrow`] with the rows of V (and of the left side's accumulator) `R` doubles
/// apart, `R >= N`: `N` unpadded, else padded ([`Padded`]).
fn sampled_mm_rows<const N: usize, const R: usize>(
    s: &Csr,
    urows: &[[f64; N]],
    vrows: &[[f64; R]],
    side: Side,
    entry: &(impl Fn(f64, f64) -> f64 + Sync),
    lanes: Lanes,
) -> Dense {
    let (m, n) = s.shape();
    let indptr = s.indptr();
    let indptr = indptr.raw_storage();
    let (ind, val) = (s.indices(), s.data());
    match side {
        Side::Right => par_rows(m, N, MIN_ROWS, |i, o| {
            wide(
                #[inline(always)]
                || {
                    let ui = &urows[i];
                    let (lo, hi) = (indptr[i], indptr[i + 1]);
                    prefetch_entries(ind, val, lo, hi);
                    let mut acc = [0.0f64; N];
                    let mut d = [0.0f64; BATCH];
                    for (js, xs) in ind[lo..hi].chunks(BATCH).zip(val[lo..hi].chunks(BATCH)) {
                        batch_dots(ui, vrows, js, &mut d[..js.len()], lanes);
                        for ((&j, &xv), &dq) in js.iter().zip(xs).zip(&d) {
                            let vj = &vrows[col(j)];
                            let e = entry(xv, dq);
                            for l in 0..N {
                                acc[l] += e * vj[l];
                            }
                        }
                    }
                    o.copy_from_slice(&acc);
                },
            )
        }),
        Side::Left => {
            let per_row = (s.nnz() / m.max(1)).max(1) * N;
            let acc = row_block_sums(m, n * R, per_row, |rows, acc| {
                #[cfg(target_arch = "x86_64")]
                if lanes == Lanes::Avx512 && N <= 16 && R == N {
                    let vrows = as_rows::<N>(vrows.as_flattened());
                    // SAFETY: the CPU has AVX-512F and AVX-512DQ (`Lanes::of_cpu`)
                    unsafe {
                        dots_by_lanes::scatter_rows512(
                            (urows, vrows, ind, val, indptr),
                            rows,
                            entry,
                            as_rows_mut::<N>(acc),
                        )
                    };
                    return;
                }
                let acc = as_rows_mut::<R>(acc);
                let csr = (urows, vrows, ind, val, indptr);
                // the AVX2 build only where AVX-512 is missing: on a CPU with AVX-512 (which
                // takes `scatter_rows512` above) it measured slower (pnmf_update's left
                // `wdivmm`, 6.0 -> 7.9 ms)
                if lanes == Lanes::Avx2 {
                    wide(
                        #[inline(always)]
                        || scatter_rows(csr, rows, entry, acc, lanes),
                    )
                } else {
                    scatter_rows(csr, rows, entry, acc, lanes)
                }
            });
            unpad::<N, R>(acc, n).t().as_standard_layout().into_owned()
        }
    }
}

/// The rows of U and V (`R` doubles apart, `R >= N`) and a CSR matrix's column indices, values
/// and row pointers.
type CsrRows<'a, const N: usize, const R: usize = N> = (
    &'a [[f64; N]],
    &'a [[f64; R]],
    &'a [Idx],
    &'a [f64],
    &'a [usize],
);

/// The left side of a sampled product over the CSR rows `rows` (`(U, V, indices, values,
/// row pointers)`), one entry at a time: per row `i`, each entry's `e = entry(x, u_i . v_j)`
/// (the dot products by [`batch_dots`]) and `acc[j] += e * u_i`, the entries in order (the
/// loop [`dots_by_lanes::scatter_rows512`] runs in AVX-512 registers, with the same bits).
#[inline(always)]
fn scatter_rows<const N: usize, const R: usize>(
    (urows, vrows, ind, val, ip): CsrRows<'_, N, R>,
    rows: std::ops::Range<usize>,
    entry: &impl Fn(f64, f64) -> f64,
    acc: &mut [[f64; R]],
    lanes: Lanes,
) {
    let mut d = [0.0f64; BATCH];
    for i in rows {
        let ui = &urows[i];
        let (lo, hi) = (ip[i], ip[i + 1]);
        prefetch_entries(ind, val, lo, hi);
        for (js, xs) in ind[lo..hi].chunks(BATCH).zip(val[lo..hi].chunks(BATCH)) {
            batch_dots(ui, vrows, js, &mut d[..js.len()], lanes);
            for ((&j, &xv), &dq) in js.iter().zip(xs).zip(&d) {
                let e = entry(xv, dq);
                let o = &mut acc[col(j)];
                for l in 0..N {
                    o[l] += e * ui[l];
                }
            }
        }
    }
}

/// [`dot8`] of two rows of `8 C + t` values (`t < 8`): the same products added in the same
/// order (eight accumulators over the `C` full blocks, the tail apart), so the same bits,
/// with the blocks unrolled.
#[inline(always)]
fn dot_chunks<const C: usize>(a: &[f64], b: &[f64], t: usize) -> f64 {
    dot_blocks(&a[..8 * C + t], &b[..8 * C + t], 8 * C)
}

/// `d[q] = u . v_{js[q]}` for a batch of entries and factors of `k = 8 C + t` columns (`t <
/// 8`, V row-major in `vs`), [`dot_chunks`]'s bits: four entries at a time by
/// [`dots_by_lanes::chunk_dots`] where the CPU has AVX2 ([`Lanes`]), else one by one.
#[inline(always)]
fn chunk_batch_dots<const C: usize>(
    u: &[f64],
    vs: &[f64],
    js: &[Idx],
    d: &mut [f64],
    lanes: Lanes,
) {
    let k = u.len();
    #[cfg(target_arch = "x86_64")]
    if lanes != Lanes::Scalar {
        // SAFETY: `Lanes::Avx2` (and `Lanes::Avx512`, whose CPUs have AVX2 and FMA too) only
        // when the CPU has AVX2 and FMA (`Lanes::of_cpu`)
        return unsafe { dots_by_lanes::chunk_dots::<C>(u, vs, js, d) };
    }
    let _ = lanes;
    for (dq, &j) in d.iter_mut().zip(js) {
        *dq = dot_chunks::<C>(u, &vs[col(j) * k..(col(j) + 1) * k], k - 8 * C);
    }
}

/// [`sampled_mm`] for a CSR driver without X values and factors of `8 C + t` columns (`t < 8`;
/// ranks past [`sampled_mm_narrow`]'s 16): with AVX-512F/DQ both sides in registers, eight
/// entries' dot products at a time ([`dots_by_lanes::scatter_chunks512`] for the left side
/// over [`row_block_sums`]' fixed row blocks, [`dots_by_lanes::right_row_chunks512`] per row
/// for the right); without, [`sampled_mm_chunks_wide`] (right) and
/// [`sampled_mm_chunks_left_wide`] (left). The same products and sums in the same order as the
/// general loop, so the same bits.
fn sampled_mm_chunks<const C: usize>(
    s: &Csr,
    f: &Factors,
    side: Side,
    entry: &(impl Fn(f64, f64) -> f64 + Sync),
) -> Dense {
    #[cfg(target_arch = "x86_64")]
    if lanes512() {
        let (m, n) = s.shape();
        let k = f.k;
        let indptr = s.indptr();
        let x = dots_by_lanes::ChunkRows {
            us: f.us,
            vs: f.vs,
            k,
            ind: s.indices(),
            val: s.data(),
            ip: indptr.raw_storage(),
        };
        return match side {
            Side::Right => {
                // SAFETY: the CPU has AVX-512F and AVX-512DQ (`lanes512`)
                par_rows(m, k, MIN_ROWS, |i, o| unsafe {
                    dots_by_lanes::right_row_chunks512::<C>(&x, i, entry, o)
                })
            }
            Side::Left => {
                let per_row = (s.nnz() / m.max(1)).max(1) * k;
                let acc = row_block_sums(m, n * k, per_row, |rows, acc| {
                    // SAFETY: the CPU has AVX-512F and AVX-512DQ (`lanes512`)
                    unsafe { dots_by_lanes::scatter_chunks512::<C>(&x, rows, entry, acc) }
                });
                Array2::from_shape_vec((n, k), acc)
                    .expect("n x k")
                    .t()
                    .as_standard_layout()
                    .into_owned()
            }
        };
    }
    match side {
        Side::Right => sampled_mm_chunks_wide::<C>(s, f, entry),
        Side::Left => sampled_mm_chunks_left_wide::<C>(s, f, entry),
    }
}

/// The left side of [`sampled_mm`] (`t(U) %*% S`) for a CSR driver without X values and
/// factors of `8 C + t` columns (`t < 8`) on a CPU without AVX-512: per row, each entry's
/// dot product by [`dot_chunks`] and `acc[j] += e * u_i`, over the general loop's fixed row
/// blocks ([`row_block_sums`] with its work per row), the row loop compiled by [`wide`]. The
/// same products and sums in the same order as the general loop, so the same bits.
fn sampled_mm_chunks_left_wide<const C: usize>(
    s: &Csr,
    f: &Factors,
    entry: &(impl Fn(f64, f64) -> f64 + Sync),
) -> Dense {
    let (m, n) = s.shape();
    let k = f.k;
    let indptr = s.indptr();
    let indptr = indptr.raw_storage();
    let (ind, val) = (s.indices(), s.data());
    let per_row = (s.nnz() / m.max(1)).max(1) * k;
    let lanes = Lanes::of_cpu();
    let acc = row_block_sums(m, n * k, per_row, |rows, acc| {
        wide(
            #[inline(always)]
            || {
                let mut d = [0.0f64; BATCH];
                for i in rows {
                    let ui = f.u(i);
                    let (lo, hi) = (indptr[i], indptr[i + 1]);
                    prefetch_entries(ind, val, lo, hi);
                    for (js, xs) in ind[lo..hi].chunks(BATCH).zip(val[lo..hi].chunks(BATCH)) {
                        chunk_batch_dots::<C>(ui, f.vs, js, &mut d[..js.len()], lanes);
                        for ((&j, &xv), &dq) in js.iter().zip(xs).zip(&d) {
                            let j = col(j);
                            let e = entry(xv, dq);
                            for (a, uc) in acc[j * k..(j + 1) * k].iter_mut().zip(ui) {
                                *a += e * uc;
                            }
                        }
                    }
                }
            },
        )
    });
    Array2::from_shape_vec((n, k), acc)
        .expect("n x k")
        .t()
        .as_standard_layout()
        .into_owned()
}

/// [`sampled_mm`] for a CSR driver without X values and factors of 72 or more columns (past
/// [`sampled_mm_chunks`]' registers), with AVX-512F/DQ: eight entries' dot products at a time
/// with the blocks counted at run time, the left side by [`dots_by_lanes::scatter_w`] over
/// [`row_block_sums`]' fixed row blocks, the right side per row by
/// [`dots_by_lanes::right_row_w`]. The same products and sums in the same order as the
/// general loop, so the same bits. `None` for narrower factors or without AVX-512 (the
/// general loop).
fn sampled_mm_w(
    s: &Csr,
    f: &Factors,
    side: Side,
    entry: &(impl Fn(f64, f64) -> f64 + Sync),
) -> Option<Dense> {
    #[cfg(target_arch = "x86_64")]
    if f.k >= 72 && lanes512() {
        let (m, n) = s.shape();
        let k = f.k;
        let indptr = s.indptr();
        let x = dots_by_lanes::ChunkRows {
            us: f.us,
            vs: f.vs,
            k,
            ind: s.indices(),
            val: s.data(),
            ip: indptr.raw_storage(),
        };
        return Some(match side {
            Side::Right => {
                // SAFETY: the CPU has AVX-512F and AVX-512DQ (`lanes512`)
                par_rows(m, k, MIN_ROWS, |i, o| unsafe {
                    dots_by_lanes::right_row_w(&x, i, entry, o)
                })
            }
            Side::Left => {
                let per_row = (s.nnz() / m.max(1)).max(1) * k;
                let acc = row_block_sums(m, n * k, per_row, |rows, acc| {
                    // SAFETY: the CPU has AVX-512F and AVX-512DQ (`lanes512`)
                    unsafe { dots_by_lanes::scatter_w(&x, rows, entry, acc) }
                });
                Array2::from_shape_vec((n, k), acc)
                    .expect("n x k")
                    .t()
                    .as_standard_layout()
                    .into_owned()
            }
        });
    }
    let _ = (s, f, side, entry);
    None
}

/// The right side of [`sampled_mm`] (`S %*% V`) for a CSR driver without X values and
/// factors of `8 C + t` columns (`t < 8`) on a CPU without AVX-512: each dot product by
/// [`dot_chunks`] and the output row's sums in registers (`C` blocks of eight and the tail),
/// the row loop compiled by [`wide`]. The same products and sums in the same order as the
/// general loop, so the same bits.
fn sampled_mm_chunks_wide<const C: usize>(
    s: &Csr,
    f: &Factors,
    entry: &(impl Fn(f64, f64) -> f64 + Sync),
) -> Dense {
    let m = s.rows();
    let k = f.k;
    let t = k - 8 * C;
    debug_assert!(t < 8);
    let indptr = s.indptr();
    let indptr = indptr.raw_storage();
    let (ind, val) = (s.indices(), s.data());
    let lanes = Lanes::of_cpu();
    par_rows(m, k, MIN_ROWS, |i, o| {
        wide(
            #[inline(always)]
            || {
                let ui = f.u(i);
                let (lo, hi) = (indptr[i], indptr[i + 1]);
                prefetch_entries(ind, val, lo, hi);
                let mut acc = [[0.0f64; 8]; C];
                let mut tail = [0.0f64; 8];
                let mut d = [0.0f64; BATCH];
                for (js, xs) in ind[lo..hi].chunks(BATCH).zip(val[lo..hi].chunks(BATCH)) {
                    chunk_batch_dots::<C>(ui, f.vs, js, &mut d[..js.len()], lanes);
                    for ((&j, &xv), &dq) in js.iter().zip(xs).zip(&d) {
                        let vj = f.v(col(j));
                        let e = entry(xv, dq);
                        for (a, vc) in acc.iter_mut().zip(vj[..8 * C].chunks_exact(8)) {
                            for l in 0..8 {
                                a[l] += e * vc[l];
                            }
                        }
                        for (a, vc) in tail[..t].iter_mut().zip(&vj[8 * C..]) {
                            *a += e * vc;
                        }
                    }
                }
                for (oc, a) in o[..8 * C].chunks_exact_mut(8).zip(&acc) {
                    oc.copy_from_slice(a);
                }
                o[8 * C..].copy_from_slice(&tail[..t]);
            },
        )
    })
}

/// `n x k` row-major sums over the rows `0..m`: `row(acc, i)` scatters row `i` into rows of
/// `acc`, over the fixed row blocks of [`row_block_sums`] (deterministic). Used where rows of
/// the input scatter into rows of the output (`t(X) %*% ...`).
fn par_scatter(
    m: usize,
    n: usize,
    k: usize,
    work_per_row: usize,
    row: impl Fn(&mut [f64], usize) + Sync + Send,
) -> Dense {
    let acc = row_block_sums(m, n * k, work_per_row, |rows, acc| {
        for i in rows {
            row(acc, i);
        }
    });
    Array2::from_shape_vec((n, k), acc).expect("n x k")
}

/// `(X / (U %*% t(V) + eps)) %*% V` (right, `m x k`) or `t(U) %*% (X / (U %*% t(V) + eps))`
/// (left, `k x n`), streaming over the non-zeros of X.
pub fn wdivmm(x: &Matrix, u: &Dense, v: &Dense, eps: f64, side: Side) -> Dense {
    sampled_mm(x, None, u, v, side, |xv, _, uv| xv / (uv + eps), "wdivmm")
}

/// `(X * (U %*% t(V))) %*% V` (right, `m x k`) or `t(X * (U %*% t(V))) %*% U` (left,
/// `n x k`), streaming over the non-zeros of X without forming the sampled product: each
/// entry is the value [`sddmm`] stores, added in the order a sparse product adds it.
pub fn sddmm_mm(x: &Matrix, u: &Dense, v: &Dense, side: Side) -> Dense {
    let r = sampled_mm(x, None, u, v, side, |xv, _, uv| xv * uv, "sddmm");
    match side {
        Side::Right => r,
        Side::Left => r.t().as_standard_layout().into_owned(),
    }
}

/// `(W * (U %*% t(V) - X)) %*% V` (right, `m x k`) or `t(U) %*% (W * (U %*% t(V) - X))`
/// (left, `k x n`), streaming over the non-zeros of the weights W; `None` stands for
/// `W = (X != 0)` (ALS-CG's gradient), which is never formed.
pub fn wsubmm(w: Option<&Matrix>, x: &Matrix, u: &Dense, v: &Dense, side: Side) -> Dense {
    match w {
        Some(w) => sampled_mm(
            w,
            Some(x),
            u,
            v,
            side,
            |wv, xv, uv| wv * (uv - xv),
            "wsubmm",
        ),
        None => sampled_mm(x, None, u, v, side, |xv, _, uv| uv - xv, "wsubmm"),
    }
}

/// `t(X) %*% (w * (X %*% v))` for X `m x n`, v `n x k`, and weights w `m x k`, `m x 1` or a
/// scalar: one pass over the rows of X, each read once for both products. A dense X is
/// multiplied at every cell (IEEE exact, as the unfused products); a sparse X at its stored
/// entries. For a vector v (`k == 1`) the sums run in SystemDS's order
/// (`LibMatrixMult.matrixMultChainDense` and `matrixMultChainSparseXtXv`:
/// [`mmchain_dense_rows`], [`sparse_dot`]) over SystemDS's own split of the rows among its
/// threads ([`systemds_row_sums`] with [`systemds_threads`]), so the result has SystemDS's
/// bits; a wider v runs over the fixed row blocks of [`row_block_sums`]. Deterministic either
/// way.
pub fn mmchain(x: &Matrix, w: &Matrix, v: &Dense) -> Dense {
    chain(x, w, v, false, systemds_threads())
}

/// [`mmchain`] (or [`mmchain_minus`] with `minus`) with the thread count of SystemDS's split
/// given instead of [`systemds_threads`].
pub fn mmchain_threads(x: &Matrix, w: &Matrix, v: &Dense, minus: bool, threads: usize) -> Dense {
    chain(x, w, v, minus, threads)
}

/// `t(X) %*% (X %*% v - y)` for X `m x n`, v `n x 1` and y `m x 1` (a least-squares
/// gradient): [`mmchain`]'s pass, each row's product less its `y` before the second product,
/// as SystemDS's `XtXvy` chain (`LibMatrixMult.matrixMultChainDense` with `weights2`,
/// `matrixMultChainSparseXtXvy`), in its order of additions.
pub fn mmchain_minus(x: &Matrix, y: &Matrix, v: &Dense) -> Dense {
    assert!(
        v.ncols() == 1 && y.cols() == 1,
        "mmchain_minus shape contract"
    );
    chain(x, y, v, true, systemds_threads())
}

/// The mmchain pass: each row's product `X[i, :] %*% v` times `w[i]` (or less `w[i]` with
/// `minus`), then added as that multiple of the row.
fn chain(x: &Matrix, w: &Matrix, v: &Dense, minus: bool, threads: usize) -> Dense {
    let (m, n) = x.shape();
    let k = v.ncols();
    assert!(
        v.nrows() == n && w.rows() == m && (w.cols() == k || w.cols() == 1),
        "mmchain shape contract"
    );
    let apply = |q: f64, wv: f64| if minus { q - wv } else { q * wv };
    let vt = v.t().as_standard_layout().into_owned(); // k x n: columns of v contiguous
    let vt = vt.as_slice().expect("standard");
    let wd = w.to_dense();
    let wd = wd.as_standard_layout();
    let ws = wd.as_slice().expect("standard");
    let wcols = w.cols();
    let weight = |i: usize, c: usize| ws[i * wcols + if wcols == 1 { 0 } else { c }];
    // the accumulator is k x n (one column of the result after another)
    let acc = match x {
        Matrix::Dense(d) if k == 1 => {
            let d = d.as_standard_layout();
            let xs = d.as_slice().expect("standard");
            // SystemDS's split: 4 flops per cell of a dense X
            systemds_row_sums(threads, m, n, 4 * m * n, PartialFold::Fours, |rows, acc| {
                // the first `len % 24` rows, then blocks of 24 rows, as SystemDS's loop; a
                // block's rows are read for both products while they are in the cache. The
                // rows after the first `len % 24` sum their product over blocks of 1024
                // columns, as SystemDS's blocked loop
                let bn = rows.len() % CHAIN_ROWS;
                let (mut q, mut part) = ([0.0; CHAIN_ROWS], [0.0; CHAIN_ROWS]);
                let mut lo = rows.start;
                while lo < rows.end {
                    let len = if lo == rows.start && bn > 0 {
                        bn
                    } else {
                        CHAIN_ROWS
                    };
                    let xr = &xs[lo * n..(lo + len) * n];
                    if lo == rows.start && bn > 0 {
                        dot_rows(xr, n, n, vt, len, &mut q, 1);
                    } else {
                        q = [0.0; CHAIN_ROWS];
                        for bj in (0..n).step_by(CHAIN_COLS) {
                            let w = CHAIN_COLS.min(n - bj);
                            dot_rows(&xr[bj..], n, w, &vt[bj..], len, &mut part, 1);
                            for (t, p) in q.iter_mut().zip(&part) {
                                *t += p;
                            }
                        }
                    }
                    for (r, t) in q[..len].iter_mut().enumerate() {
                        *t = apply(*t, weight(lo + r, 0));
                    }
                    mmchain_dense_rows(xs, n, &q[..len], lo..lo + len, acc);
                    lo += len;
                }
            })
        }
        Matrix::Dense(d) => {
            let d = d.as_standard_layout();
            let xs = d.as_slice().expect("standard");
            row_block_sums(m, n * k, 2 * n * k, |rows, acc| {
                for i in rows {
                    let xi = &xs[i * n..(i + 1) * n];
                    for (c, accc) in acc.chunks_mut(n.max(1)).enumerate().take(k) {
                        let q = apply(dot8(xi, &vt[c * n..(c + 1) * n]), weight(i, c));
                        for (o, &xv) in accc.iter_mut().zip(xi) {
                            *o += xv * q;
                        }
                    }
                }
            })
        }
        Matrix::Sparse(s) if k == 1 => {
            // a vector v (GLM's and lmCG's Hessian-vector products): the general loop below
            // with its loops over the columns of v gone, the same operations in its order
            let ip = s.indptr();
            let ip = ip.raw_storage();
            let (ind, val) = (s.indices(), s.data());
            // SystemDS's split: 2 flops per cell (not per non-zero) of a sparse X
            systemds_row_sums(threads, m, n, 2 * m * n, PartialFold::Fours, |rows, acc| {
                for i in rows {
                    let (lo, hi) = (ip[i], ip[i + 1]);
                    prefetch_entries(ind, val, lo, hi);
                    let (idx, xv) = (&ind[lo..hi], &val[lo..hi]);
                    let q = apply(sparse_dot(xv, idx, vt), ws[i * wcols]);
                    for (&j, &x) in idx.iter().zip(xv) {
                        acc[col(j)] += q * x;
                    }
                }
            })
        }
        Matrix::Sparse(s) => {
            let per_row = 2 * (s.nnz() / m.max(1)).max(1) * k;
            let ip = s.indptr();
            let ip = ip.raw_storage();
            let (ind, val) = (s.indices(), s.data());
            row_block_sums(m, n * k, per_row, |rows, acc| {
                let mut q = vec![0.0; k];
                for i in rows {
                    let (idx, xv) = (&ind[ip[i]..ip[i + 1]], &val[ip[i]..ip[i + 1]]);
                    for (c, qc) in q.iter_mut().enumerate() {
                        *qc = apply(sparse_dot(xv, idx, &vt[c * n..(c + 1) * n]), weight(i, c));
                    }
                    for (&j, &x) in idx.iter().zip(xv) {
                        for (c, qc) in q.iter().enumerate() {
                            acc[c * n + col(j)] += qc * x;
                        }
                    }
                }
            })
        }
    };
    let t = Array2::from_shape_vec((k, n), acc).expect("k x n");
    t.t().as_standard_layout().into_owned()
}

/// Rows per block of SystemDS's dense `mmchain` (`blocksizeI`), and columns per block
/// (`blocksizeJ`).
const CHAIN_ROWS: usize = 24;
const CHAIN_COLS: usize = 1024;

/// `acc += sum_i q_i X[i, :]` over the rows `i` of `rows` (`q[i - rows.start]` their weights)
/// of a row-major X with `n` columns, in the order of SystemDS's dense `mmchain`: the first
/// `len % 24` rows one by one (the first `n % L` columns, [`java_vlen`], add `q_i x_ij`, the
/// others take a fused multiply-add), then blocks of 24 rows in groups of four, over column
/// blocks of 1024: the first `len % L` columns of a column block add
/// `((q_1 x_1j + q_2 x_2j) + q_3 x_3j) + q_4 x_4j`, the others take four fused multiply-adds.
/// Every product is formed, so NaN and Inf propagate.
pub fn mmchain_dense_rows(
    xs: &[f64],
    n: usize,
    q: &[f64],
    rows: std::ops::Range<usize>,
    acc: &mut [f64],
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has FMA (checked just above).
            unsafe { mmchain_dense_rows_fma(xs, n, q, rows, acc) };
            return;
        }
    }
    mmchain_dense_rows_generic(xs, n, q, rows, acc)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn mmchain_dense_rows_fma(
    xs: &[f64],
    n: usize,
    q: &[f64],
    rows: std::ops::Range<usize>,
    acc: &mut [f64],
) {
    mmchain_dense_rows_generic(xs, n, q, rows, acc)
}

#[inline(always)]
fn mmchain_dense_rows_generic(
    xs: &[f64],
    n: usize,
    q: &[f64],
    rows: std::ops::Range<usize>,
    acc: &mut [f64],
) {
    let l = java_vlen();
    let acc = &mut acc[..n];
    let r0 = rows.start;
    let bn = rows.len() % CHAIN_ROWS;
    let head = n % l;
    for i in r0..r0 + bn {
        let (qi, xi) = (q[i - r0], &xs[i * n..(i + 1) * n]);
        for (o, &x) in acc[..head].iter_mut().zip(&xi[..head]) {
            *o += qi * x;
        }
        for (o, &x) in acc[head..].iter_mut().zip(&xi[head..]) {
            *o = qi.mul_add(x, *o);
        }
    }
    let mut bi = r0 + bn;
    while bi < rows.end {
        for bj in (0..n).step_by(CHAIN_COLS) {
            let len = CHAIN_COLS.min(n - bj);
            let h = len % l;
            for g in (bi..bi + CHAIN_ROWS).step_by(4) {
                let t = [q[g - r0], q[g + 1 - r0], q[g + 2 - r0], q[g + 3 - r0]];
                let x = |r: usize| &xs[(g + r) * n + bj..(g + r) * n + bj + len];
                let (x1, x2, x3, x4) = (x(0), x(1), x(2), x(3));
                let o = &mut acc[bj..bj + len];
                for j in 0..h {
                    o[j] += t[0] * x1[j] + t[1] * x2[j] + t[2] * x3[j] + t[3] * x4[j];
                }
                for j in h..len {
                    o[j] = t[3].mul_add(
                        x4[j],
                        t[2].mul_add(x3[j], t[1].mul_add(x2[j], t[0].mul_add(x1[j], o[j]))),
                    );
                }
            }
        }
        bi += CHAIN_ROWS;
    }
}

/// `sum_p a_p b[idx_p]` (a sparse row times a dense vector) in SystemDS's order
/// (`LibMatrixMult.dotProduct` with gathered indices): the first `len % L` products added one
/// by one, then each block of `L` ([`java_vlen`]) products summed in order and added; from
/// +0.0: [`super::matmul::dot_gather`] (the block length a constant of each build).
#[inline]
pub fn sparse_dot(a: &[f64], idx: &[Idx], b: &[f64]) -> f64 {
    super::matmul::dot_gather(a, idx, b)
}

/// `t(X) %*% (P * (X %*% V) - P * rowSums(P * (X %*% V)))` for X `m x n`, P `m x k` and V
/// `n x k` (the softmax Jacobian applied to `X %*% V` and carried back through X:
/// MultiLogReg's Hessian-vector product), `n x k`. For a CSR X and `k <= 16`, one pass over the
/// rows of X ([`smmchain_narrow`]): each row is read once for both products, nothing of size
/// `m x k` is formed. Otherwise the operations as written, one after another.
pub fn smmchain(x: &Matrix, p: &Dense, v: &Dense) -> Dense {
    let (m, n) = x.shape();
    let k = v.ncols();
    assert!(
        v.nrows() == n && p.dim() == (m, k),
        "smmchain shape contract"
    );
    if let Matrix::Sparse(s) = x {
        if let Some(r) = thin_padded!(k, smmchain_narrow, s, p, v) {
            return r;
        }
    }
    if let Some(r) = smmchain_dense(x, p, v) {
        return r;
    }
    let y = crate::kernels::matmul(x, &Matrix::Dense(v.clone())).to_dense();
    let mut r = crate::matrix::zeros(m, k);
    if k > 0 {
        let ys = y.as_standard_layout();
        let ys = ys.as_slice().expect("standard");
        let ps = p.as_standard_layout();
        let ps = ps.as_slice().expect("standard");
        let rs = r.as_slice_mut().expect("standard layout");
        for ((ro, yi), pi) in rs.chunks_mut(k).zip(ys.chunks(k)).zip(ps.chunks(k)) {
            softmax_jacobian_row(pi, yi, ro);
        }
    }
    tmatmul(x, &Matrix::from_dense(r)).to_dense()
}

/// [`smmchain`] of a dense X in one pass over X: each row of `X %*% V` by SystemDS's row kernel
/// for the product ([`super::dense_product::RowProduct`]), its row of the Jacobian product,
/// and `t(X) %*% R` by SystemDS's short-left kernel block by block
/// ([`super::dense_product::t_product_of_rows`]): the bits of the three steps one after the
/// other. `None` where SystemDS runs either product another way, or where a row of R is not
/// finite and the short-left kernel skipped one of R's zeros (the unfused path repairs the
/// `0 * Inf` of X's zeros).
fn smmchain_dense(x: &Matrix, p: &Dense, v: &Dense) -> Option<Dense> {
    // the short-left kernel takes at most 16 rows of t(R)
    const MAX_K: usize = 16;
    let Matrix::Dense(xd) = x else { return None };
    let (m, n) = xd.dim();
    let k = v.ncols();
    if k > MAX_K {
        return None;
    }
    let xs = xd.as_slice()?;
    let vs = v.as_standard_layout();
    let rp = super::dense_product::RowProduct::new(vs.as_slice()?, m, n, k)?;
    let ps = p.as_standard_layout();
    let ps = ps.as_slice()?;
    let finite = std::sync::atomic::AtomicBool::new(true);
    let (c, exact) = super::dense_product::t_product_of_rows(xs, m, n, k, |i, xi, out| {
        let mut y = [0.0f64; MAX_K];
        rp.row(xi, &mut y[..k]);
        softmax_jacobian_row(&ps[i * k..(i + 1) * k], &y[..k], out);
        if !out.iter().all(|o| o.is_finite()) {
            finite.store(false, std::sync::atomic::Ordering::Relaxed);
        }
    })?;
    (exact || finite.into_inner()).then_some(c)
}

/// One row of `P * Y - P * rowSums(P * Y)` into `out`: `q = p * y`, its sum from +0.0 in
/// column order (as `rowSums`), then `q - p * sum`.
#[inline(always)]
fn softmax_jacobian_row(p: &[f64], y: &[f64], out: &mut [f64]) {
    for ((o, &pc), &yc) in out.iter_mut().zip(p).zip(y) {
        *o = pc * yc;
    }
    let sum = sum0(out.iter().copied());
    for (o, &pc) in out.iter_mut().zip(p) {
        *o -= pc * sum;
    }
}

/// [`smmchain`] for a CSR X and exactly `N` columns: per row of X, `y = X[i,:] %*% V` in `N`
/// registers (the order of the CSR product), the row of `P * y - P * rowSums(P * y)`, then
/// `X[i,:]^T` times it scattered into an `n x N` accumulator, over the fixed row blocks of
/// [`row_block_sums`] (deterministic). The scatter of a row runs in the same loop as the
/// product of the next row: the product is a chain of dependent adds per column, and the
/// scatter's independent updates fill its latency. Each row's adds, and the updates of
/// each accumulator cell, keep their order (a row's scatter is done before the next row's
/// begins), so the result is the same as one row after the other. The rows of V and of the
/// accumulator are padded to `W` ([`Padded`]).
fn smmchain_narrow<const N: usize, const W: usize>(s: &Csr, p: &Dense, v: &Dense) -> Dense {
    let (m, n) = s.shape();
    let (ps, vs) = (p.as_standard_layout(), v.as_standard_layout());
    let prows = as_rows::<N>(ps.as_slice().expect("standard"));
    let mut vp = None;
    let vrows = Padded::<W>::rows_of::<N>(vs.as_slice().expect("standard"), &mut vp);
    let ip = s.indptr();
    let ip = ip.raw_storage();
    let (ind, val) = (s.indices(), s.data());
    let per_row = 2 * (s.nnz() / m.max(1)).max(1) * N;
    assert!(
        vrows.len() == n && prows.len() == m,
        "smmchain shape contract"
    );
    let acc = row_block_sums(m, n * W, per_row, |rows, acc| {
        let acc = as_rows_mut::<W>(acc);
        assert_eq!(acc.len(), n, "one accumulator row per column of X");
        wide(
            #[inline(always)]
            || {
                // the previous row, whose scatter is pending: its entries and its row of r
                let (mut pjs, mut pxs): (&[Idx], &[f64]) = (&[], &[]);
                let mut pr = [0.0f64; N];
                for i in rows {
                    let (lo, hi) = (ip[i], ip[i + 1]);
                    prefetch_entries(ind, val, lo, hi);
                    let (js, xs) = (&ind[lo..hi], &val[lo..hi]);
                    let mut y = [0.0f64; N];
                    let both = js.len().min(pjs.len());
                    for t in 0..both {
                        let (j, xv) = (js[t], xs[t]);
                        // SAFETY (here and below): a CSR matrix's column indices are below its
                        // column count (sprs's structure invariant), n, the rows of V and of
                        // the accumulator (asserted above)
                        let vj = unsafe { vrows.get_unchecked(col(j)) };
                        for l in 0..N {
                            y[l] += xv * vj[l];
                        }
                        let (pj, pxv) = (pjs[t], pxs[t]);
                        let o = unsafe { acc.get_unchecked_mut(col(pj)) };
                        for l in 0..N {
                            o[l] += pxv * pr[l];
                        }
                    }
                    for (&j, &xv) in js[both..].iter().zip(&xs[both..]) {
                        let vj = unsafe { vrows.get_unchecked(col(j)) };
                        for l in 0..N {
                            y[l] += xv * vj[l];
                        }
                    }
                    for (&pj, &pxv) in pjs[both..].iter().zip(&pxs[both..]) {
                        let o = unsafe { acc.get_unchecked_mut(col(pj)) };
                        for l in 0..N {
                            o[l] += pxv * pr[l];
                        }
                    }
                    softmax_jacobian_row(&prows[i], &y, &mut pr);
                    (pjs, pxs) = (js, xs);
                }
                for (&pj, &pxv) in pjs.iter().zip(pxs) {
                    let o = unsafe { acc.get_unchecked_mut(col(pj)) };
                    for l in 0..N {
                        o[l] += pxv * pr[l];
                    }
                }
            },
        )
    });
    unpad::<N, W>(acc, n)
}

/// `P * (1 - P)`, computed at the non-zeros of P only (sparse stays sparse).
pub fn sprop(p: &Matrix) -> Matrix {
    match p {
        Matrix::Sparse(s) => Matrix::from_csr(s.map(|&v| v * (1.0 - v))),
        Matrix::Dense(d) => Matrix::from_dense(d.mapv(|v| v * (1.0 - v))),
    }
}

/// `t(A) %*% B` for A `m x n` and B `m x k`, without forming `t(A)` when A is sparse (each
/// row block scatters its rows of A into an `n x k` accumulator); dense (or a narrow side made
/// dense) as SystemDS runs it (`dense_product::systemds_t_dense`: its left-transpose rewrite
/// and kernels, `dgemm` reading A transposed beyond `ORDER_WORK`).
pub fn tmatmul(a: &Matrix, b: &Matrix) -> Matrix {
    tmatmul_with(a, b, false, false)
}

/// [`tmatmul`] for operands the caller may know to be finite (a plan's inputs, scanned once
/// for the plan cache): a dense finite operand times a vector with zeros is read only in the
/// rows the vector weighs ([`crate::kernels::dense_product::systemds_t_dense_with`]), the
/// same sums.
pub fn tmatmul_with(a: &Matrix, b: &Matrix, a_finite: bool, b_finite: bool) -> Matrix {
    assert_eq!(a.rows(), b.rows(), "tmatmul shape contract");
    // one side narrow and the other dense: the dense products, with the narrow side made
    // dense if it is stored sparse (small)
    let narrow = |x: &Matrix| x.cols() <= NARROW;
    let dense = |x: &Dense, y: &Dense| {
        let (c, exact) = crate::kernels::dense_product::systemds_t_dense_with(
            x,
            y,
            a_finite && !a.is_sparse(),
            b_finite && !b.is_sparse(),
        );
        let c = Matrix::from_dense(c);
        if exact {
            c
        } else {
            ieee_zeros_known(a, b, true, c, a_finite, b_finite)
        }
    };
    if (narrow(a) || narrow(b)) && (!a.is_sparse() || narrow(a)) && (!b.is_sparse() || narrow(b)) {
        return dense(&dense_view(a), &dense_view(b));
    }
    match (a, b) {
        (Matrix::Sparse(s), Matrix::Dense(d)) => ieee_zeros_known(
            a,
            b,
            true,
            Matrix::from_dense(csr_t_mul_dense(s, d)),
            false,
            b_finite,
        ),
        (Matrix::Dense(x), Matrix::Dense(d)) => dense(x, d),
        _ => crate::kernels::matmul(&crate::kernels::transpose(a), b),
    }
}

/// `t(A) %*% B` for a CSR A and a dense B.
pub fn csr_t_mul_dense(a: &Csr, b: &Dense) -> Dense {
    let (m, n) = a.shape();
    let k = b.ncols();
    assert_eq!(b.nrows(), m, "tmatmul shape contract");
    if let Some(d) = thin_padded!(k, csr_t_mul_narrow, a, b) {
        return d;
    }
    let b = b.as_standard_layout();
    let bs = b.as_slice().expect("standard");
    let per_row = (a.nnz() / m.max(1)).max(1) * k;
    par_scatter(m, n, k, per_row, |acc, i| {
        let bi = &bs[i * k..(i + 1) * k];
        csr_row_nz(a, i, |j, xv| {
            for (o, bc) in acc[j * k..(j + 1) * k].iter_mut().zip(bi) {
                *o += xv * bc;
            }
        });
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dense driver run in CSR blocks: the right side has the generic loop's bits (each
    /// row's entries in order; any NaN for a NaN), the left side its values up to the order of the blocks'
    /// partial sums, for blocks of one row, of several rows and of the whole matrix, with
    /// zeros of both signs, infinities and NaN in the driver and factors of every kind of
    /// kernel width (fixed, eight-column chunks, wide).
    #[test]
    fn dense_drivers_in_csr_blocks_match_the_generic_loop() {
        let mut state = 7u64;
        for (m, n, k) in [(37, 23, 3), (41, 19, 10), (29, 17, 20), (13, 11, 80)] {
            let mut mat = |r: usize, c: usize, zeros: bool| -> Dense {
                Array2::from_shape_fn((r, c), |_| {
                    let x = value(&mut state);
                    // half the driver's cells zero, as the mask of half-dense data
                    if zeros && (state >> 40) & 1 == 0 {
                        0.0
                    } else if x.is_finite() || zeros {
                        x
                    } else {
                        1.5
                    }
                })
            };
            let (d, u, v) = (mat(m, n, true), mat(m, k, false), mat(n, k, false));
            let entry = |dv: f64, _: f64, uv: f64| dv * uv;
            for side in [Side::Right, Side::Left] {
                let generic =
                    sampled_mm_stored(&Matrix::Dense(d.clone()), None, &u, &v, side, entry, "t");
                for cells in [1, 3 * n, m * n] {
                    let got = sampled_mm_dense(&d, &u, &v, side, &entry, "t", cells)
                        .expect("a dense driver");
                    assert_eq!(got.dim(), generic.dim());
                    for (g, w) in got.iter().zip(generic.iter()) {
                        if side == Side::Right {
                            // a NaN's sign depends on which operand's NaN an instruction
                            // passes on, which the vector width changes
                            let same = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
                            assert!(same, "{m}x{n}x{k} right: {g} vs {w}");
                        } else {
                            let close = (g.is_nan() && w.is_nan())
                                || g == w
                                || (g - w).abs() <= 1e-12 * g.abs().max(w.abs());
                            assert!(close, "{m}x{n}x{k} left, {cells} cells: {g} vs {w}");
                        }
                    }
                }
            }
        }
    }

    /// A value from a fixed sequence: mostly ordinary numbers of both signs, with zeros of
    /// both signs, infinities and NaN among them.
    fn value(state: &mut u64) -> f64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = (*state >> 11) as f64 / (1u64 << 53) as f64;
        match *state >> 58 {
            0 => -0.0,
            1 => 0.0,
            2 => f64::INFINITY,
            3 => f64::NAN,
            4 => 1e300,
            _ => 8.0 * r - 4.0,
        }
    }

    /// Every vector width this CPU runs gives the one-at-a-time dot products' bits, for
    /// batches of every length up to [`BATCH`] (the four- and eight-entry groups and their
    /// remainders) and for every factor width of the fixed-width kernels (up to [`MID_THIN`]).
    fn lanes_give_the_scalar_bits<const N: usize>() {
        let mut state = N as u64;
        let rows = 37;
        let vrows: Vec<[f64; N]> = (0..rows)
            .map(|_| std::array::from_fn(|_| value(&mut state)))
            .collect();
        let u: [f64; N] = std::array::from_fn(|_| value(&mut state));
        let mut all = vec![Lanes::Scalar];
        let cpu = Lanes::of_cpu();
        if cpu != Lanes::Scalar {
            all.push(cpu);
        }
        if cpu == Lanes::Avx512 {
            all.push(Lanes::Avx2);
        }
        for len in 0..=BATCH {
            let js: Vec<Idx> = (0..len).map(|q| ((q * 7 + len) % rows) as Idx).collect();
            let mut want = vec![0.0; len];
            batch_dots(&u, &vrows, &js, &mut want, Lanes::Scalar);
            for &lanes in &all {
                let mut got = vec![1.0; len];
                batch_dots(&u, &vrows, &js, &mut got, lanes);
                for (q, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                        "N={N}, {lanes:?}, batch of {len}, entry {q}: {g} vs {w}"
                    );
                }
            }
        }
    }

    /// [`lanes_give_the_scalar_bits`] for the factors of `8 C + t` columns, every `t < 8`.
    fn chunk_lanes_give_the_scalar_bits<const C: usize>() {
        for t in 0..8 {
            let k = 8 * C + t;
            let mut state = k as u64;
            let rows = 29;
            let vs: Vec<f64> = (0..rows * k).map(|_| value(&mut state)).collect();
            let u: Vec<f64> = (0..k).map(|_| value(&mut state)).collect();
            let lanes = Lanes::of_cpu();
            for len in 0..=BATCH {
                let js: Vec<Idx> = (0..len).map(|q| ((q * 5 + len) % rows) as Idx).collect();
                let mut want = vec![0.0; len];
                chunk_batch_dots::<C>(&u, &vs, &js, &mut want, Lanes::Scalar);
                let mut got = vec![1.0; len];
                chunk_batch_dots::<C>(&u, &vs, &js, &mut got, lanes);
                for (q, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                        "k={k}, {lanes:?}, batch of {len}, entry {q}: {g} vs {w}"
                    );
                }
            }
        }
    }

    #[test]
    fn chunk_dots_give_the_same_bits_at_every_width() {
        for k in (16..72).step_by(8) {
            chunks!(k, chunk_lanes_give_the_scalar_bits,).expect("16 <= k < 72");
        }
    }

    #[test]
    fn batch_dots_give_the_same_bits_at_every_width() {
        for k in 1..=16 {
            thin!(k, lanes_give_the_scalar_bits,).expect("a width of at most 16");
        }
        // the widths of `mid!` (AVX-512's CPUs take the four-wide dot products there too)
        macro_rules! each {
            ($($n:literal)*) => { $(lanes_give_the_scalar_bits::<$n>();)* };
        }
        each!(17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
    }
}
