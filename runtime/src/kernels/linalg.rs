//! Dense linear algebra through `nalgebra`: `solve`, `inv`, `cholesky`, `det`, `eigen`, `svd`;
//! `lu` by hand.
//!
//! SystemDS computes these with Apache Commons Math; the conventions that a script can see
//! are kept:
//!
//! * `solve(A, b)` needs a square `A` and solves by Householder QR (as Commons Math's QR
//!   solver); a zero on the diagonal of R is a "singular matrix" error. `inv(A)` likewise.
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
//!   and the unit eigenvectors as the columns of the second matrix, in the same order. The
//!   sign of each eigenvector is not specified by DML (Commons Math's follows its QL
//!   iterations); spores makes the component of largest magnitude positive. A non-symmetric
//!   input is an error (Commons Math would return the real parts of complex pairs).
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

/// `solve(A, b)`: `x` with `A x = b` for a square non-singular `A` (QR). Errors: `A` not
/// square, `b` with another number of rows, `A` singular.
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
    let qr = to_na(a).qr();
    let mut x = to_na(b);
    if !qr.solve_mut(&mut x) {
        return Err(RuntimeError::invalid("solve", "the matrix A is singular"));
    }
    Ok(from_na(&x))
}

/// `inv(A)` for a square non-singular `A` (QR). Errors: not square, singular.
pub fn inv(a: &Matrix) -> Result<Matrix, RuntimeError> {
    let n = square("inv", a)?;
    if n == 0 {
        return Ok(Matrix::filled(0, 0, 0.0));
    }
    let qr = to_na(a).qr();
    let mut x = DMatrix::identity(n, n);
    if !qr.solve_mut(&mut x) {
        return Err(RuntimeError::invalid("inv", "the matrix is singular"));
    }
    Ok(from_na(&x))
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
    let l = nalgebra::Cholesky::new(m).ok_or_else(not_pd)?.l();
    // Commons Math also rejects a pivot (L[i, i]^2) at or below 1e-10
    if (0..n).any(|i| l[(i, i)] * l[(i, i)] <= 1e-10) {
        return Err(not_pd());
    }
    Ok(from_na(&l))
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
/// increasing order and the unit eigenvectors as columns in the same order. A matrix that is
/// symmetric up to rounding (1e-9 relative per pair of cells; Commons Math calls
/// `10 n^2 2^-53` symmetric) is averaged with its transpose first. Errors: not square, not
/// symmetric, non-finite cells.
pub fn eigen(a: &Matrix) -> Result<(Matrix, Matrix), RuntimeError> {
    let n = square("eigen", a)?;
    let m = symmetric("eigen", a)?;
    if n == 0 {
        return Ok((Matrix::filled(0, 1, 0.0), Matrix::filled(0, 0, 0.0)));
    }
    let e = nalgebra::SymmetricEigen::new(m);
    let mut order: Vec<usize> = (0..n).collect();
    // stable: equal eigenvalues keep the decomposition's order
    order.sort_by(|&p, &q| e.eigenvalues[p].total_cmp(&e.eigenvalues[q]));
    let mut values = Array2::zeros((n, 1));
    let mut vectors = Array2::zeros((n, n));
    for (k, &c) in order.iter().enumerate() {
        values[[k, 0]] = e.eigenvalues[c];
        let col = e.eigenvectors.column(c);
        let mut big = 0usize;
        for i in 0..n {
            if col[i].abs() > col[big].abs() {
                big = i;
            }
        }
        let sign = if col[big] < 0.0 { -1.0 } else { 1.0 };
        for i in 0..n {
            vectors[[i, k]] = sign * col[i];
        }
    }
    Ok((Matrix::from_dense(values), Matrix::from_dense(vectors)))
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
    let mut diag = vec![0.0; p];
    for k in 0..p {
        let norm2: f64 = cols[k][k..].iter().map(|v| v * v).sum();
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
        let v = &done[k];
        for c in rest.iter_mut() {
            let dot: f64 = c[k..].iter().zip(&v[k..]).map(|(x, y)| x * y).sum();
            let alpha = -dot / (a * v[k]);
            for (x, y) in c[k..].iter_mut().zip(&v[k..]) {
                *x -= alpha * y;
            }
        }
    }
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
