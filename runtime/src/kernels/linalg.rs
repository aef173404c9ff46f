//! Dense linear algebra through `nalgebra`: `solve`, `inv`, `cholesky`, `det`, `eigen`, `svd`;
//! `lu` by hand.
//!
//! SystemDS computes these with Apache Commons Math; the conventions that a script can see
//! are kept:
//!
//! * `solve(A, b)` needs a square `A` and solves by Commons Math's Householder QR and QR
//!   solver, in their order of operations (SystemDS's bits); a zero on the diagonal of R is
//!   a "singular matrix" error. `inv(A)` likewise (the solver applied to the identity).
//! * `cholesky(A)` returns the lower factor `L` with `A = L t(L)`; it rejects an `A` that is
//!   not symmetric to a relative 1e-6 or not positive definite.
//! * `det(A)` is the product of the LU pivots (0 for a singular matrix).
//! * `lu(A)` of a square `A` returns `[P, L, U]` with `P A = L U`, `L` unit lower triangular,
//!   `U` upper triangular, by Gaussian elimination with partial pivoting (the first row of
//!   largest magnitude in the column is the pivot, as Commons Math picks it); a pivot below
//!   1e-11 in magnitude is a "singular matrix" error, as in SystemDS.
//! * `qr(A)` of an `m x n` `A` returns `[H, R]` as SystemDS (Commons Math's Householder QR):
//!   step `k` reflects column `k` (rows `k..m`) `x` onto `a e1` with `a = -sign(x_k) |x|`
//!   (`+|x|` when `x_k <= 0`) by `v = x - a e1`; `R` (`m x n`) has `a` on its diagonal and
//!   the reflected columns above it; `H` (`m x n`, lower trapezoidal) holds `v / -a` in
//!   column `k` from row `k` on.
//! * `svd(A)` of an `m x n` matrix returns `[U, S, V]` with `p = min(m, n)`: `U` is `m x p`,
//!   `S` the `p x p` diagonal of singular values in decreasing order, `V` is `n x p`, and
//!   `A = U S t(V)`. Signs of singular vector pairs are as nalgebra computes them.
//! * `eigen(A)` of a symmetric `A` returns the eigenvalues as a column in increasing order
//!   and the unit eigenvectors as the columns of the second matrix, in the same order, by
//!   SystemDS's own algorithm ([`symmetric_eigen`]: Commons Math's Householder reduction and
//!   implicit QL), so the vectors have SystemDS's signs and bits. A non-symmetric input is
//!   an error (Commons Math would return the real parts of complex pairs).
//!
//! All inputs are converted to dense; results are dense (normalized by density).

use crate::error::RuntimeError;
use crate::matrix::Matrix;
use nalgebra::DMatrix;
use ndarray::Array2;

fn to_na(x: &Matrix) -> DMatrix<f64> {
    let (m, n) = x.shape();
    match x {
        Matrix::Dense(d) => DMatrix::from_row_slice(m, n, d.as_slice().expect("standard layout")),
        Matrix::Sparse(s) => {
            let mut out = DMatrix::zeros(m, n);
            for (i, row) in s.outer_iterator().enumerate() {
                for (j, &v) in row.iter() {
                    out[(i, j)] = v;
                }
            }
            out
        }
    }
}

fn from_na(x: &DMatrix<f64>) -> Matrix {
    let (m, n) = x.shape();
    let mut out = Array2::zeros((m, n));
    for i in 0..m {
        for j in 0..n {
            out[[i, j]] = x[(i, j)];
        }
    }
    Matrix::from_dense(out)
}

fn square(op: &'static str, x: &Matrix) -> Result<usize, RuntimeError> {
    if x.rows() != x.cols() {
        return Err(RuntimeError::invalid(
            op,
            format!("the matrix must be square, found {}x{}", x.rows(), x.cols()),
        ));
    }
    Ok(x.rows())
}

/// `solve(A, b)`: `x` with `A x = b` for a square non-singular `A`, by Commons Math's
/// Householder QR and its solver (`QRDecomposition.Solver.solve(RealMatrix)`, which SystemDS
/// calls), in its order of operations, so the result has SystemDS's bits: each column of `b`
/// is reflected by `y += (v . y) / (r_kk v_k) v` for each Householder vector `v`, then
/// `R x = y` is solved backwards multiplying by `1 / r_jj`. Errors: `A` not square, `b` with
/// another number of rows, `A` singular (a zero on the diagonal of R).
pub fn solve(a: &Matrix, b: &Matrix) -> Result<Matrix, RuntimeError> {
    let n = square("solve", a)?;
    if b.rows() != n {
        return Err(RuntimeError::invalid(
            "solve",
            format!(
                "A is {n}x{n} but b has {} rows (it must have {n})",
                b.rows()
            ),
        ));
    }
    if n == 0 {
        return Ok(Matrix::filled(0, b.cols(), 0.0));
    }
    let x = qr_solve(a, &b.to_dense())
        .ok_or_else(|| RuntimeError::invalid("solve", "the matrix A is singular"))?;
    Ok(Matrix::from_dense(x))
}

/// `inv(A)` for a square non-singular `A`: Commons Math's QR solver applied to the identity
/// (`getInverse`, which SystemDS calls), as [`solve`]. Errors: not square, singular.
pub fn inv(a: &Matrix) -> Result<Matrix, RuntimeError> {
    let n = square("inv", a)?;
    if n == 0 {
        return Ok(Matrix::filled(0, 0, 0.0));
    }
    let x = qr_solve(a, &Array2::eye(n))
        .ok_or_else(|| RuntimeError::invalid("inv", "the matrix is singular"))?;
    Ok(Matrix::from_dense(x))
}

/// Columns handled together by [`householder_qr`] and [`qr_solve`]: each column keeps its own
/// chain of adds in Java's order, and the four chains run side by side (a dot product's adds
/// depend on each other; four of them fill the adder's latency). Groups of columns are
/// independent, so they also split across threads: neither changes any column's operations.
const GROUP: usize = 4;

/// Work (multiply-adds) below which a step runs on one thread.
const PAR_WORK: usize = 1 << 16;

/// Commons Math's Householder QR (`QRDecomposition.performHouseholderReflection`) of the
/// matrix whose columns are `cols` (each of length `m`), in place: column `k` becomes the
/// Householder vector `v = x - a e_k` from row `k` on (R's column `k` above it) and the
/// result is R's diagonal (the `a`s). Sums run in row order from +0.0, as Java's loops; the
/// columns right of `k` are reflected [`GROUP`] at a time, in parallel for big steps.
fn householder_qr(cols: &mut [Vec<f64>], m: usize) -> Vec<f64> {
    use rayon::prelude::*;
    let p = m.min(cols.len());
    let mut diag = vec![0.0; p];
    for k in 0..p {
        let mut norm2 = 0.0;
        for &v in &cols[k][k..m] {
            norm2 += v * v;
        }
        let a = if cols[k][k] > 0.0 {
            -norm2.sqrt()
        } else {
            norm2.sqrt()
        };
        diag[k] = a;
        if a == 0.0 {
            continue;
        }
        cols[k][k] -= a;
        let (done, rest) = cols.split_at_mut(k + 1);
        let v = &done[k][k..m];
        let scale = a * v[0];
        let reflect = |group: &mut [Vec<f64>]| reflect_group(group, k, v, scale);
        if (m - k) * rest.len() >= PAR_WORK {
            rest.par_chunks_mut(GROUP).for_each(reflect);
        } else {
            rest.chunks_mut(GROUP).for_each(reflect);
        }
    }
    diag
}

/// One Householder step on up to [`GROUP`] columns: for each column `c`,
/// `alpha = -(c[k..] . v) / scale` (adds in row order from +0.0) and `c[k..] -= alpha v`.
#[inline]
fn reflect_group(group: &mut [Vec<f64>], k: usize, v: &[f64], scale: f64) {
    if let [c0, c1, c2, c3] = group {
        let (c0, c1, c2, c3) = (&mut c0[k..], &mut c1[k..], &mut c2[k..], &mut c3[k..]);
        let mut al = [0.0f64; GROUP];
        for (r, &y) in v.iter().enumerate() {
            al[0] -= c0[r] * y;
            al[1] -= c1[r] * y;
            al[2] -= c2[r] * y;
            al[3] -= c3[r] * y;
        }
        for (c, al) in [c0, c1, c2, c3].into_iter().zip(al) {
            let al = al / scale;
            for (x, y) in c.iter_mut().zip(v) {
                *x -= al * y;
            }
        }
    } else {
        for c in group {
            let c = &mut c[k..];
            let mut al = 0.0;
            for (x, y) in c.iter().zip(v) {
                al -= x * y;
            }
            al /= scale;
            for (x, y) in c.iter_mut().zip(v) {
                *x -= al * y;
            }
        }
    }
}

/// `A^-1 B` for a square `A` by [`householder_qr`] and Commons Math's solver, column by
/// column of `B` (its blocks of 52 columns do not change any column's operations; here
/// [`GROUP`] columns run side by side and groups split across threads, which do not either);
/// `None` when R has a zero on its diagonal (Commons Math's `SingularMatrixException`,
/// threshold 0).
fn qr_solve(a: &Matrix, b: &Array2<f64>) -> Option<Array2<f64>> {
    use rayon::prelude::*;
    let n = a.rows();
    let d = a.to_dense();
    let mut qrt: Vec<Vec<f64>> = (0..n)
        .map(|j| (0..n).map(|i| d[[i, j]]).collect())
        .collect();
    let rdiag = householder_qr(&mut qrt, n);
    if rdiag.iter().any(|r| r.abs() <= 0.0) {
        return None;
    }
    let c = b.ncols();
    // the columns of b, each solved into its own column of x (column-major here)
    let mut xt = vec![0.0; n * c];
    for (k, col) in xt.chunks_mut(n.max(1)).enumerate().take(c) {
        for (i, v) in col.iter_mut().enumerate() {
            *v = b[[i, k]];
        }
    }
    let solve = |cols: &mut [f64]| solve_group(&qrt, &rdiag, cols, n);
    if n * n * c >= PAR_WORK && c > GROUP {
        xt.par_chunks_mut(GROUP * n).for_each(solve);
    } else {
        xt.chunks_mut((GROUP * n).max(1)).for_each(solve);
    }
    Some(Array2::from_shape_fn((n, c), |(i, k)| xt[k * n + i]))
}

/// Commons Math's solver on up to [`GROUP`] right-hand sides stored one after another in
/// `ys` (each of length `n`), in place: each is reflected by `y += (v . y) / (r_kk v_k) v` for
/// each Householder vector `v`, then `R x = y` is solved backwards multiplying by `1 / r_jj`.
/// The right-hand sides run side by side, each with its own adds in Java's order.
fn solve_group(qrt: &[Vec<f64>], rdiag: &[f64], ys: &mut [f64], n: usize) {
    match ys.len() / n {
        GROUP => solve_group_of::<GROUP>(qrt, rdiag, ys, n),
        1 => solve_group_of::<1>(qrt, rdiag, ys, n),
        2 => solve_group_of::<2>(qrt, rdiag, ys, n),
        3 => solve_group_of::<3>(qrt, rdiag, ys, n),
        g => unreachable!("a group of {g} right-hand sides"),
    }
}

/// [`solve_group`] for exactly `G` right-hand sides.
#[inline(always)]
fn solve_group_of<const G: usize>(qrt: &[Vec<f64>], rdiag: &[f64], ys: &mut [f64], n: usize) {
    let g = G;
    // row-interleaved copy: ys_i[r * g + t] is row r of right-hand side t
    let mut y = vec![0.0; n * g];
    for t in 0..g {
        for r in 0..n {
            y[r * g + t] = ys[t * n + r];
        }
    }
    for (minor, q) in qrt.iter().enumerate() {
        let factor = 1.0 / (rdiag[minor] * q[minor]);
        let mut alpha = [0.0f64; G];
        for (d, yr) in q[minor..].iter().zip(y[minor * g..].chunks_exact(g)) {
            for t in 0..g {
                alpha[t] += d * yr[t];
            }
        }
        for al in &mut alpha {
            *al *= factor;
        }
        for (d, yr) in q[minor..].iter().zip(y[minor * g..].chunks_exact_mut(g)) {
            for t in 0..g {
                yr[t] += alpha[t] * d;
            }
        }
    }
    for j in (0..n).rev() {
        let inv = 1.0 / rdiag[j];
        let mut yj = [0.0f64; G];
        for t in 0..g {
            y[j * g + t] *= inv;
            yj[t] = y[j * g + t];
            ys[t * n + j] = yj[t];
        }
        for (yr, r) in y[..j * g].chunks_exact_mut(g).zip(&qrt[j][..j]) {
            for t in 0..g {
                yr[t] -= yj[t] * r;
            }
        }
    }
}

/// `cholesky(A)`: the lower-triangular `L` with `A = L t(L)`. Errors: not square, not
/// symmetric (relative 1e-6), not positive definite.
pub fn cholesky(a: &Matrix) -> Result<Matrix, RuntimeError> {
    let n = square("cholesky", a)?;
    let m = to_na(a);
    for i in 0..n {
        for j in i + 1..n {
            let (x, y) = (m[(i, j)], m[(j, i)]);
            if (x - y).abs() > 1e-6 * x.abs().max(y.abs()) {
                return Err(RuntimeError::invalid(
                    "cholesky",
                    format!(
                        "the matrix is not symmetric (cells ({}, {}) and ({}, {}))",
                        i + 1,
                        j + 1,
                        j + 1,
                        i + 1
                    ),
                ));
            }
        }
    }
    let not_pd = || RuntimeError::invalid("cholesky", "the matrix is not positive definite");
    // Commons Math's CholeskyDecomposition, as SystemDS runs it, in its order of operations
    // (so its bits): t(L) in the upper triangle, row i scaled by 1 / L[i, i] from the last
    // column down, each scaled entry's row updated right away; a pivot at or below 1e-10
    // is not positive definite
    let mut lt = vec![0.0; n * n];
    for i in 0..n {
        for j in i..n {
            lt[i * n + j] = m[(i, j)];
        }
    }
    for i in 0..n {
        let (done, rest) = lt.split_at_mut((i + 1) * n);
        let row = &mut done[i * n..];
        if row[i] <= 1e-10 {
            return Err(not_pd());
        }
        row[i] = row[i].sqrt();
        let inverse = 1.0 / row[i];
        for q in (i + 1..n).rev() {
            row[q] *= inverse;
            let (lq, below) = (row[q], &mut rest[(q - i - 1) * n..][..n]);
            for p in q..n {
                below[p] -= lq * row[p];
            }
        }
    }
    let mut out = Array2::zeros((n, n));
    for i in 0..n {
        for j in i..n {
            out[[j, i]] = lt[i * n + j];
        }
    }
    Ok(Matrix::from_dense(out))
}

/// `det(A)`: the determinant by LU (0 for a singular matrix, 1 for a 0x0 one). Error: not
/// square.
pub fn det(a: &Matrix) -> Result<f64, RuntimeError> {
    let n = square("det", a)?;
    if n == 0 {
        return Ok(1.0);
    }
    Ok(to_na(a).lu().determinant())
}

/// `eigen(A)` of a symmetric `A`: `(values, vectors)`, the values an `n x 1` column in
/// increasing order and the unit eigenvectors as columns in the same order, computed as
/// SystemDS does (see [`symmetric_eigen`]). A matrix that is symmetric to Commons Math's
/// tolerance (`10 n^2 2^-53` relative per pair of cells) is read from its upper triangle as
/// Commons Math reads it; one that is only symmetric to 1e-9 relative is averaged with its
/// transpose first. If the QL iterations do not converge, SystemDS's fallback runs: the
/// decomposition of `A + sign(A) 1e-8`. Errors: not square, not symmetric, non-finite cells.
pub fn eigen(a: &Matrix) -> Result<(Matrix, Matrix), RuntimeError> {
    let n = square("eigen", a)?;
    let sym = symmetric("eigen", a)?;
    if n == 0 {
        return Ok((Matrix::filled(0, 1, 0.0), Matrix::filled(0, 0, 0.0)));
    }
    let orig = to_na(a);
    let eps = 10.0 * (n * n) as f64 * f64::EPSILON / 2.0;
    let exact = (0..n).all(|i| {
        (i + 1..n).all(|j| {
            let (x, y) = (orig[(i, j)], orig[(j, i)]);
            (x - y).abs() <= x.abs().max(y.abs()) * eps
        })
    });
    let m = if exact { orig } else { sym };
    // row-major, as Commons Math's arrays
    let rows: Vec<f64> = (0..n * n).map(|k| m[(k / n, k % n)]).collect();
    let (vals, vecs) = match symmetric_eigen(rows.clone(), n) {
        Some(r) => r,
        None => {
            let reg: Vec<f64> = rows.iter().map(|&v| v + signum0(v) * 1e-8).collect();
            symmetric_eigen(reg, n).ok_or_else(|| {
                RuntimeError::invalid("eigen", "the QL iterations did not converge")
            })?
        }
    };
    let values = Array2::from_shape_vec((n, 1), vals).expect("n x 1");
    let vectors = Array2::from_shape_vec((n, n), vecs).expect("n x n");
    Ok((Matrix::from_dense(values), Matrix::from_dense(vectors)))
}

/// Java's `Math.signum`: 0 for a zero.
fn signum0(v: f64) -> f64 {
    if v > 0.0 {
        1.0
    } else if v < 0.0 {
        -1.0
    } else {
        v
    }
}

/// The eigen decomposition of a symmetric `n x n` matrix (row-major; only its upper triangle
/// is read) by the algorithm of SystemDS's `eigen` (Commons Math 3's `EigenDecomposition`,
/// then SystemDS's sort), step for step so that the vectors have the same signs and the same
/// bits: Householder reduction to tridiagonal form (each step reflects the part of row `k`
/// right of the diagonal onto `-sign(x_1) |x| e_1`), the orthogonal factor accumulated from
/// the last reflection to the first, implicit QL iterations with Wilkinson's shift (at most
/// 30 per eigenvalue; `None` past that), values below `2^-53` of the largest (and secondary
/// diagonal values likewise, before the iterations) set to 0, the pairs sorted by decreasing
/// value and then by increasing value (both by selection with swaps, which fixes the order
/// of equal values). Returns the values and the vectors as the columns of a row-major
/// `n x n` matrix.
pub fn symmetric_eigen(mut h: Vec<f64>, n: usize) -> Option<(Vec<f64>, Vec<f64>)> {
    let eps = f64::EPSILON / 2.0;
    // --- tridiagonal form: diagonal d, off-diagonal e; h keeps the reflection vectors
    let mut d = vec![0.0; n];
    let mut e = vec![0.0; n];
    let mut z = vec![0.0; n];
    for k in 0..n.saturating_sub(1) {
        d[k] = h[k * n + k];
        let mut norm2 = 0.0;
        for j in k + 1..n {
            norm2 += h[k * n + j] * h[k * n + j];
        }
        let a = if h[k * n + k + 1] > 0.0 {
            -norm2.sqrt()
        } else {
            norm2.sqrt()
        };
        e[k] = a;
        if a == 0.0 {
            continue;
        }
        h[k * n + k + 1] -= a;
        let beta = -1.0 / (a * h[k * n + k + 1]);
        // z = beta A v over the trailing block (upper triangle only)
        z[k + 1..].iter_mut().for_each(|x| *x = 0.0);
        for i in k + 1..n {
            let vi = h[k * n + i];
            let mut zi = h[i * n + i] * vi;
            for j in i + 1..n {
                let aij = h[i * n + j];
                zi += aij * h[k * n + j];
                z[j] += aij * vi;
            }
            z[i] = beta * (z[i] + zi);
        }
        let mut gamma = 0.0;
        for i in k + 1..n {
            gamma += z[i] * h[k * n + i];
        }
        gamma *= beta / 2.0;
        for i in k + 1..n {
            z[i] -= gamma * h[k * n + i];
        }
        // A -= v z' + z v' (upper triangle)
        for i in k + 1..n {
            for j in i..n {
                h[i * n + j] -= h[k * n + i] * z[j] + z[i] * h[k * n + j];
            }
        }
    }
    d[n - 1] = h[(n - 1) * n + n - 1];
    // --- the orthogonal factor: qt (row-major) built from the last reflection back, then q
    let mut qt = vec![0.0; n * n];
    for k in (1..n).rev() {
        let v = &h[(k - 1) * n..k * n];
        qt[k * n + k] = 1.0;
        if v[k] == 0.0 {
            continue;
        }
        let inv = 1.0 / (e[k - 1] * v[k]);
        let b0 = 1.0 / e[k - 1];
        qt[k * n + k] = 1.0 + b0 * v[k];
        for i in k + 1..n {
            qt[k * n + i] = b0 * v[i];
        }
        for j in k + 1..n {
            let mut b = 0.0;
            for i in k + 1..n {
                b += qt[j * n + i] * v[i];
            }
            b *= inv;
            qt[j * n + k] = b * v[k];
            for i in k + 1..n {
                qt[j * n + i] += b * v[i];
            }
        }
    }
    qt[0] = 1.0;
    let mut q = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            q[i * n + j] = qt[j * n + i];
        }
    }
    // --- implicit QL on (d, e), rotations applied to the columns of q
    e[n - 1] = 0.0;
    let big = d
        .iter()
        .chain(&e)
        .fold(0.0f64, |m, v| if v.abs() > m { v.abs() } else { m });
    if big != 0.0 {
        for i in 0..n {
            if d[i].abs() <= eps * big {
                d[i] = 0.0;
            }
            if e[i].abs() <= eps * big {
                e[i] = 0.0;
            }
        }
    }
    for j in 0..n {
        let mut its = 0;
        loop {
            let mut m = j;
            while m < n - 1 {
                let delta = d[m].abs() + d[m + 1].abs();
                if e[m].abs() + delta == delta {
                    break;
                }
                m += 1;
            }
            if m == j {
                break;
            }
            if its == 30 {
                return None;
            }
            its += 1;
            let mut g = (d[j + 1] - d[j]) / (2.0 * e[j]);
            let mut t = (1.0 + g * g).sqrt();
            g = if g < 0.0 {
                d[m] - d[j] + e[j] / (g - t)
            } else {
                d[m] - d[j] + e[j] / (g + t)
            };
            let (mut u, mut s, mut c) = (0.0, 1.0, 1.0);
            let mut i = m as isize - 1;
            let mut early = false;
            while i >= j as isize {
                let iu = i as usize;
                let p = s * e[iu];
                let hh = c * e[iu];
                if p.abs() >= g.abs() {
                    c = g / p;
                    t = (c * c + 1.0).sqrt();
                    e[iu + 1] = p * t;
                    s = 1.0 / t;
                    c *= s;
                } else {
                    s = p / g;
                    t = (s * s + 1.0).sqrt();
                    e[iu + 1] = g * t;
                    c = 1.0 / t;
                    s *= c;
                }
                if e[iu + 1] == 0.0 {
                    d[iu + 1] -= u;
                    e[m] = 0.0;
                    early = true;
                    break;
                }
                g = d[iu + 1] - u;
                t = (d[iu] - g) * s + 2.0 * c * hh;
                u = s * t;
                d[iu + 1] = g + u;
                g = c * t - hh;
                for r in 0..n {
                    let pr = q[r * n + iu + 1];
                    q[r * n + iu + 1] = s * q[r * n + iu] + c * pr;
                    q[r * n + iu] = c * q[r * n + iu] - s * pr;
                }
                i -= 1;
            }
            if t == 0.0 && early {
                continue;
            }
            d[j] -= u;
            e[j] = g;
            e[m] = 0.0;
        }
    }
    // --- decreasing (Commons Math), small values to 0, then increasing (SystemDS)
    let swap_cols = |q: &mut Vec<f64>, a: usize, b: usize| {
        for r in 0..n {
            q.swap(r * n + a, r * n + b);
        }
    };
    for i in 0..n {
        let mut k = i;
        for j in i + 1..n {
            if d[j] > d[k] {
                k = j;
            }
        }
        if k != i {
            d.swap(i, k);
            swap_cols(&mut q, i, k);
        }
    }
    let top = d
        .iter()
        .fold(0.0f64, |m, v| if v.abs() > m { v.abs() } else { m });
    if top != 0.0 {
        for v in d.iter_mut() {
            if v.abs() < eps * top {
                *v = 0.0;
            }
        }
    }
    for i in 0..n {
        let mut k = i;
        for j in i + 1..n {
            if d[j] < d[k] {
                k = j;
            }
        }
        if k != i {
            d.swap(i, k);
            swap_cols(&mut q, i, k);
        }
    }
    Some((d, q))
}

/// `lu(A)`: `(P, L, U)` with `P A = L U` (see the module doc). Errors: not square, singular,
/// non-finite cells.
pub fn lu(a: &Matrix) -> Result<(Matrix, Matrix, Matrix), RuntimeError> {
    let n = square("lu", a)?;
    let mut w = a.to_dense();
    if w.iter().any(|v| !v.is_finite()) {
        return Err(RuntimeError::invalid(
            "lu",
            "the matrix has NaN or infinite cells",
        ));
    }
    let mut perm: Vec<usize> = (0..n).collect();
    for k in 0..n {
        // column k of U above the diagonal, then the candidates for the pivot
        for r in 0..n {
            let upto = r.min(k);
            let mut v = w[[r, k]];
            for i in 0..upto {
                v -= w[[r, i]] * w[[i, k]];
            }
            w[[r, k]] = v;
        }
        let mut best = k;
        for r in k + 1..n {
            if w[[r, k]].abs() > w[[best, k]].abs() {
                best = r;
            }
        }
        if w[[best, k]].abs() < 1e-11 {
            return Err(RuntimeError::invalid(
                "lu",
                "LU decomposition needs a non-singular matrix",
            ));
        }
        if best != k {
            for j in 0..n {
                w.swap([best, j], [k, j]);
            }
            perm.swap(best, k);
        }
        let d = w[[k, k]];
        for r in k + 1..n {
            w[[r, k]] /= d;
        }
    }
    let mut p = Array2::zeros((n, n));
    let mut l = Array2::zeros((n, n));
    let mut u = Array2::zeros((n, n));
    for i in 0..n {
        p[[i, perm[i]]] = 1.0;
        l[[i, i]] = 1.0;
        for j in 0..n {
            if j < i {
                l[[i, j]] = w[[i, j]];
            } else {
                u[[i, j]] = w[[i, j]];
            }
        }
    }
    Ok((
        Matrix::from_dense(p),
        Matrix::from_dense(l),
        Matrix::from_dense(u),
    ))
}

/// `qr(A)`: `(H, R)`, Householder vectors and the triangular factor (see the module doc).
/// Error: non-finite cells.
pub fn qr(a: &Matrix) -> Result<(Matrix, Matrix), RuntimeError> {
    let (m, n) = a.shape();
    let d = a.to_dense();
    if d.iter().any(|v| !v.is_finite()) {
        return Err(RuntimeError::invalid(
            "qr",
            "the matrix has NaN or infinite cells",
        ));
    }
    // columns of A, each a contiguous vector
    let mut cols: Vec<Vec<f64>> = (0..n)
        .map(|j| (0..m).map(|i| d[[i, j]]).collect())
        .collect();
    let p = m.min(n);
    let diag = householder_qr(&mut cols, m);
    let mut h = Array2::zeros((m, n));
    let mut r = Array2::zeros((m, n));
    for k in 0..p {
        r[[k, k]] = diag[k];
        for j in k + 1..n {
            r[[k, j]] = cols[j][k];
        }
    }
    for i in 0..m {
        for j in 0..(i + 1).min(n) {
            h[[i, j]] = cols[j][i] / -diag[j];
        }
    }
    Ok((Matrix::from_dense(h), Matrix::from_dense(r)))
}

/// `svd(A)`: `(U, S, V)` with `A = U S t(V)`, singular values decreasing (see the module doc).
/// Error: non-finite cells.
pub fn svd(a: &Matrix) -> Result<(Matrix, Matrix, Matrix), RuntimeError> {
    let (m, n) = a.shape();
    let p = m.min(n);
    if p == 0 {
        return Ok((
            Matrix::filled(m, 0, 0.0),
            Matrix::filled(0, 0, 0.0),
            Matrix::filled(n, 0, 0.0),
        ));
    }
    let x = to_na(a);
    if x.iter().any(|v| !v.is_finite()) {
        return Err(RuntimeError::invalid(
            "svd",
            "the matrix has NaN or infinite cells",
        ));
    }
    let svd = nalgebra::SVD::new(x, true, true);
    let (u, vt) = match (svd.u, svd.v_t) {
        (Some(u), Some(vt)) => (u, vt),
        _ => {
            return Err(RuntimeError::invalid(
                "svd",
                "the decomposition did not converge",
            ))
        }
    };
    let mut order: Vec<usize> = (0..p).collect();
    order.sort_by(|&i, &j| svd.singular_values[j].total_cmp(&svd.singular_values[i]));
    let mut uu = Array2::zeros((m, p));
    let mut ss = Array2::zeros((p, p));
    let mut vv = Array2::zeros((n, p));
    for (k, &c) in order.iter().enumerate() {
        ss[[k, k]] = svd.singular_values[c];
        for i in 0..m {
            uu[[i, k]] = u[(i, c)];
        }
        for j in 0..n {
            vv[[j, k]] = vt[(c, j)];
        }
    }
    Ok((
        Matrix::from_dense(uu),
        Matrix::from_dense(ss),
        Matrix::from_dense(vv),
    ))
}

/// The matrix as nalgebra's, checked finite and symmetric up to rounding and symmetrized.
fn symmetric(op: &'static str, a: &Matrix) -> Result<DMatrix<f64>, RuntimeError> {
    let n = a.rows();
    let mut m = to_na(a);
    if m.iter().any(|v| !v.is_finite()) {
        return Err(RuntimeError::invalid(
            op,
            "the matrix has NaN or infinite cells",
        ));
    }
    for i in 0..n {
        for j in i + 1..n {
            let (x, y) = (m[(i, j)], m[(j, i)]);
            if (x - y).abs() > 1e-9 * x.abs().max(y.abs()) {
                return Err(RuntimeError::invalid(
                    op,
                    format!("not supported: {op} of a non-symmetric matrix"),
                ));
            }
            let avg = 0.5 * (x + y);
            m[(i, j)] = avg;
            m[(j, i)] = avg;
        }
    }
    Ok(m)
}

/// `sqrtMatrix` (SystemDS's `sqrtMatrixJava`): the symmetric square root `V sqrt(D) t(V)` of
/// a symmetric positive definite `A`. Errors: not square, not symmetric, an eigenvalue at or
/// below 0 (as Commons Math's `getSquareRoot`).
pub fn sqrt_matrix(a: &Matrix) -> Result<Matrix, RuntimeError> {
    let n = square("sqrtMatrix", a)?;
    let m = symmetric("sqrtMatrix", a)?;
    if n == 0 {
        return Ok(Matrix::filled(0, 0, 0.0));
    }
    let e = nalgebra::SymmetricEigen::new(m);
    if e.eigenvalues.iter().any(|&v| v.is_nan() || v <= 0.0) {
        return Err(RuntimeError::invalid(
            "sqrtMatrix",
            "the matrix is not positive definite",
        ));
    }
    let d = DMatrix::from_diagonal(&e.eigenvalues.map(f64::sqrt));
    let v = &e.eigenvectors;
    Ok(from_na(&(v * d * v.transpose())))
}
