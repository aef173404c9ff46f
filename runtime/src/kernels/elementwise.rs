//! Element-wise kernels: binary operators with scalar / row-vector / column-vector / outer
//! broadcasting, unary maps, and `ifelse`.
//!
//! Each operand is first classified as a [`Side`]: a scalar (or 1x1 matrix), a column vector
//! broadcast along the rows, a row vector broadcast along the columns, or a full matrix of the
//! output's shape. Then one of three strategies runs:
//!
//! * **sparse-driven**: a full CSR operand `X` whose zeros stay zero under the operator for
//!   every value the other operand takes (`f(0, y) == 0` for all y, checked on the actual
//!   values, so `X / Y` is sparse-driven exactly when `Y` has no zero or NaN where it matters)
//!   is walked over its non-zeros only; the result is CSR. `X * Y`, `X * s`, `X / s`,
//!   `X ^ 2`, `X * v` all take this path.
//! * **sparse-sparse union**: two full CSR operands with `f(0, 0) == 0` (`+`, `-`, `*`, `min`,
//!   ...) are merged row by row.
//! * **dense**: everything else writes every output cell, one row at a time, rows in parallel.
//!
//! `0 * Inf` and `0 * NaN` in implicit-zero cells count as 0 on the sparse paths, as in
//! SystemDS; all other IEEE results (`0 / 0`, `log(0)`) are exact.

use crate::matrix::{col, count_nnz, drop_zeros, with_pattern, Csr, Dense, Matrix};
use crate::ops::{BinOp, UnaryOp};
use rayon::prelude::*;

/// Cells below which kernels stay on one thread.
pub(crate) const PAR_CELLS: usize = 1 << 15;

/// An operand of an element-wise operator, as seen from an output of known shape.
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    /// A scalar.
    Scalar(f64),
    /// A matrix; its shape decides how it broadcasts.
    Matrix(&'a Matrix),
}

/// How an operand maps onto the output cells.
enum Side<'a> {
    Scalar(f64),
    /// one value per output row
    Col(Vec<f64>),
    /// one value per output column
    Row(Vec<f64>),
    Full(&'a Matrix),
}

/// DML broadcasting in one dimension: equal sizes, or one side 1 (which takes the other
/// side's size, possibly 0). The one definition of broadcasting: the checker
/// (`check::shape`), the optimizer's analysis and the kernels all use it.
pub fn broadcast_dim(x: usize, y: usize) -> Option<usize> {
    match (x, y) {
        _ if x == y => Some(x),
        (1, y) => Some(y),
        (x, 1) => Some(x),
        _ => None,
    }
}

/// The output shape of `a op b` under DML broadcasting ([`broadcast_dim`] per dimension),
/// or `None` if the shapes do not fit. Allowed: equal shapes; either side a scalar or 1x1; a
/// matrix with a column vector of as many rows or a row vector of as many columns (either
/// side); a column vector with a row vector (outer).
pub fn broadcast_shape(a: (usize, usize), b: (usize, usize)) -> Option<(usize, usize)> {
    Some((broadcast_dim(a.0, b.0)?, broadcast_dim(a.1, b.1)?))
}

fn classify<'a>(x: Operand<'a>, shape: (usize, usize)) -> Side<'a> {
    match x {
        Operand::Scalar(v) => Side::Scalar(v),
        Operand::Matrix(m) if m.shape() == shape => Side::Full(m),
        Operand::Matrix(m) if m.shape() == (1, 1) => Side::Scalar(m.get(0, 0)),
        Operand::Matrix(m) if m.cols() == 1 && m.rows() == shape.0 => {
            Side::Col((0..m.rows()).map(|i| m.get(i, 0)).collect())
        }
        Operand::Matrix(m) if m.rows() == 1 && m.cols() == shape.1 => {
            Side::Row(m.to_dense().into_raw_vec_and_offset().0)
        }
        Operand::Matrix(m) => panic!(
            "broadcast contract: {}x{} into {}x{}",
            m.rows(),
            m.cols(),
            shape.0,
            shape.1
        ),
    }
}

fn shape_of(x: &Operand<'_>) -> (usize, usize) {
    match x {
        Operand::Scalar(_) => (1, 1),
        Operand::Matrix(m) => m.shape(),
    }
}

impl Side<'_> {
    /// Every value this side takes (for zero-safety checks); `None` for a full sparse matrix.
    fn all_values(&self, f: impl Fn(f64) -> bool + Sync) -> bool {
        match self {
            Side::Scalar(v) => f(*v),
            Side::Col(v) | Side::Row(v) => v.iter().all(|&x| f(x)),
            Side::Full(Matrix::Dense(d)) => {
                let s = d.as_slice().expect("standard layout");
                if s.len() < PAR_CELLS {
                    s.iter().all(|&x| f(x))
                } else {
                    s.par_iter().all(|&x| f(x))
                }
            }
            Side::Full(Matrix::Sparse(s)) => {
                (s.nnz() == s.rows() * s.cols() || f(0.0)) && s.data().iter().all(|&x| f(x))
            }
        }
    }

    fn is_sparse_full(&self) -> bool {
        matches!(self, Side::Full(Matrix::Sparse(_)))
    }
}

/// One output row's view of a side: a constant or a slice of `n` values.
pub(crate) enum RowView<'a> {
    Const(f64),
    Slice(&'a [f64]),
}

impl RowView<'_> {
    #[inline]
    fn at(&self, j: usize) -> f64 {
        match self {
            RowView::Const(c) => *c,
            RowView::Slice(s) => s[j],
        }
    }
}

fn row_view<'a>(side: &'a Side<'_>, dense: Option<&'a Dense>, i: usize, n: usize) -> RowView<'a> {
    match side {
        Side::Scalar(v) => RowView::Const(*v),
        Side::Col(v) => RowView::Const(v[i]),
        Side::Row(v) => RowView::Slice(v),
        Side::Full(_) => {
            let d = dense.expect("full side densified");
            RowView::Slice(&d.as_slice().expect("standard layout")[i * n..(i + 1) * n])
        }
    }
}

/// `a op b` with broadcasting. Panics if the shapes do not broadcast (checked by the caller).
/// The result is stored as SystemDS stores it: re-examined on its actual non-zeros
/// ([`Matrix::examined`], SystemDS's `examSparsity` after every element-wise instruction), so
/// a result that SystemDS's estimate allocated dense but that turns out sparse is sparse. A
/// sparse result keeps no stored zero of either sign ([`drop_zeros`]), as in SystemDS. (The
/// n-ary form of a chain `A + B + C` is [`nary`].)
pub fn binary(op: BinOp, a: Operand<'_>, b: Operand<'_>) -> Matrix {
    binary_stored(op, a, b).examined()
}

/// [`binary`] stored by [`crate::matrix::prefers_sparse`] (the constructors' rule).
fn binary_stored(op: BinOp, a: Operand<'_>, b: Operand<'_>) -> Matrix {
    let shape = broadcast_shape(shape_of(&a), shape_of(&b)).expect("broadcast contract");
    let (sa, sb) = (classify(a, shape), classify(b, shape));
    if let Side::Full(Matrix::Sparse(x)) = sa {
        if sb.is_sparse_full() {
            if op.apply(0.0, 0.0) == 0.0 {
                let Side::Full(Matrix::Sparse(y)) = sb else {
                    unreachable!()
                };
                if same_structure(x, y) {
                    // `X * X`, `X - X`: the merge of two equal patterns meets every entry on
                    // both sides, so each value is `f(x, y)` at the pattern's place
                    let data =
                        crate::matrix::par_zip_map(x.data(), y.data(), |&a, &b| op.apply(a, b));
                    return Matrix::from_csr(with_pattern(x, data));
                }
                return Matrix::from_csr(drop_zeros(sparse_union(op, x, y)));
            }
        } else if sb.all_values(|y| op.apply(0.0, y) == 0.0) {
            // IEEE: the implicit zeros stay zero only where the other side keeps them so
            // (`0 * Inf` is NaN), so even `*` inspects the other side
            return Matrix::from_csr(sparse_driven(x, &sb, |xv, yv| op.apply(xv, yv)));
        }
    }
    if let Side::Full(Matrix::Sparse(y)) = sb {
        if !sa.is_sparse_full() && sa.all_values(|x| op.apply(x, 0.0) == 0.0) {
            return Matrix::from_csr(sparse_driven(y, &sa, |yv, xv| op.apply(xv, yv)));
        }
    }
    let (d, nnz) = dense_dispatch(op, shape, &sa, &sb);
    Matrix::from_dense_nnz(d, nnz)
}

/// The n-ary form SystemDS gives a chain of one operator over matrices of one shape and
/// scalars, `A + B + C` or `A * 2 * B` (its dynamic rewrite `foldMultipleMinMaxOperations`;
/// the caller decides when the chain is one). SystemDS's `naryOperations` computes it cell by
/// cell from the scalars folded first (`0 + s1 + ...`, `1 * s1 * ...`), then the matrices in
/// order (for `*` with a sparse operand: the sparse ones, then the dense ones), so
/// `A + B + 1` is `(1 + A) + B`. It allocates the result from an estimate and never examines
/// it again: sparse when [`crate::matrix::prefers_sparse_estimated`] holds for the operands'
/// summed non-zeros (`+`; their fewest for `*`, which is also sparse whenever an operand is,
/// and examined by that rule on its actual non-zeros when all are dense), so `U + D + L` of a
/// 12 x 12 tridiagonal is dense where `(U + D) + L` as two instructions is sparse. With fewer
/// than three operands, or another operator, this is [`binary`] applied left to right.
/// Panics if no operand is a matrix or a matrix has another shape than the first.
pub fn nary(op: BinOp, operands: &[Operand<'_>]) -> Matrix {
    let mats: Vec<&Matrix> = operands
        .iter()
        .filter_map(|o| match o {
            Operand::Matrix(m) => Some(*m),
            Operand::Scalar(_) => None,
        })
        .collect();
    let shape = mats
        .first()
        .expect("nary contract: a matrix operand")
        .shape();
    assert!(
        mats.iter().all(|m| m.shape() == shape),
        "nary contract: matrices of one shape"
    );
    if operands.len() < 3 || !matches!(op, BinOp::Add | BinOp::Mul) {
        let mut acc = binary(op, operands[0], operands[1]);
        for o in &operands[2..] {
            acc = binary(op, Operand::Matrix(&acc), *o);
        }
        return acc;
    }
    let (m, n) = shape;
    let nnz: Vec<usize> = mats.iter().map(|x| x.nnz()).collect();
    let any_sparse = mats.iter().any(|x| x.is_sparse());
    let (init, sparse) = match op {
        BinOp::Add => (
            operands.iter().fold(0.0, |acc, o| match o {
                Operand::Scalar(s) => acc + s,
                Operand::Matrix(_) => acc,
            }),
            crate::matrix::prefers_sparse_estimated(m, n, nnz.iter().sum::<usize>().min(m * n)),
        ),
        _ => (
            operands.iter().fold(1.0, |acc, o| match o {
                Operand::Scalar(s) => acc * s,
                Operand::Matrix(_) => acc,
            }),
            any_sparse
                || crate::matrix::prefers_sparse_estimated(
                    m,
                    n,
                    *nnz.iter().min().expect("a matrix"),
                ),
        ),
    };
    // the order of the cell-wise operations: for `*` with a sparse operand, the sparse ones
    // first (SystemDS intersects their patterns, then multiplies by the dense ones)
    let mut order: Vec<&Matrix> = mats.clone();
    if op == BinOp::Mul && any_sparse {
        order.sort_by_key(|x| !x.is_sparse());
    }
    let mut acc = binary_stored(op, Operand::Scalar(init), Operand::Matrix(order[0]));
    for x in &order[1..] {
        acc = binary_stored(op, Operand::Matrix(&acc), Operand::Matrix(x));
    }
    match acc {
        Matrix::Sparse(s) if !sparse => Matrix::Dense(crate::matrix::csr_to_dense(&s)),
        Matrix::Dense(d) if sparse => {
            let nnz = crate::matrix::count_nnz(d.as_slice().expect("standard layout"));
            Matrix::Sparse(crate::matrix::dense_to_csr(&d, nnz))
        }
        // an all-dense `*` is examined again, by the estimate's rule on its non-zeros
        Matrix::Dense(d) if op == BinOp::Mul => {
            let nnz = crate::matrix::count_nnz(d.as_slice().expect("standard layout"));
            if crate::matrix::prefers_sparse_estimated(m, n, nnz) {
                Matrix::Sparse(crate::matrix::dense_to_csr(&d, nnz))
            } else {
                Matrix::Dense(d)
            }
        }
        r => r,
    }
}

/// [`dense_binary`] with the common operators as concrete closures, so the per-cell loop is
/// monomorphised and vectorised instead of matching on the operator in every cell.
fn dense_dispatch(op: BinOp, shape: (usize, usize), a: &Side<'_>, b: &Side<'_>) -> (Dense, usize) {
    match op {
        BinOp::Add => dense_binary(shape, a, b, |x, y| x + y),
        BinOp::Sub => dense_binary(shape, a, b, |x, y| x - y),
        BinOp::Mul => dense_binary(shape, a, b, |x, y| x * y),
        BinOp::Div => dense_binary(shape, a, b, |x, y| x / y),
        other => dense_binary(shape, a, b, move |x, y| other.apply(x, y)),
    }
}

/// Walks the non-zeros of `x`, combining each with the other side's value at that cell; the
/// result has `x`'s pattern without the entries that became a zero of either sign
/// ([`with_pattern`]). Values are computed in parallel blocks (each from its own entry).
fn sparse_driven(x: &Csr, other: &Side<'_>, f: impl Fn(f64, f64) -> f64 + Sync) -> Csr {
    let n = x.cols();
    let indptr = x.indptr();
    let indptr = indptr.raw_storage();
    let (ind, val) = (x.indices(), x.data());
    let data = match other {
        Side::Scalar(c) => crate::matrix::par_map(val, |&v| f(v, *c)),
        Side::Row(s) => crate::matrix::par_zip_map(val, ind, |&v, &j| f(v, s[col(j)])),
        _ => {
            let other_dense = match other {
                Side::Full(mat) => Some(dense_cow(mat)),
                _ => None,
            };
            let other_dense = other_dense.as_deref();
            let mut data = crate::matrix::par_copy(val);
            let chunks = super::csr_rows_mut(indptr, &mut data);
            let work = |(i, vals): (usize, &mut [f64])| {
                let cols = &ind[indptr[i]..indptr[i + 1]];
                match row_view(other, other_dense, i, n) {
                    RowView::Const(c) => vals.iter_mut().for_each(|v| *v = f(*v, c)),
                    RowView::Slice(s) => vals
                        .iter_mut()
                        .zip(cols)
                        .for_each(|(v, &j)| *v = f(*v, s[col(j)])),
                }
            };
            if x.nnz() < PAR_CELLS {
                chunks.into_iter().for_each(work);
            } else {
                chunks.into_par_iter().for_each(work);
            }
            data
        }
    };
    with_pattern(x, data)
}

/// Whether two CSR matrices store the same cells (the same matrix, or equal row pointers and
/// column indices).
fn same_structure(x: &Csr, y: &Csr) -> bool {
    std::ptr::eq(x, y)
        || (x.shape() == y.shape()
            && x.indptr().raw_storage() == y.indptr().raw_storage()
            && x.indices() == y.indices())
}

/// Row-by-row merge of two CSR matrices of the same shape, for `f(0, 0) == 0`.
fn sparse_union(op: BinOp, x: &Csr, y: &Csr) -> Csr {
    let (m, n) = x.shape();
    let mut indptr = Vec::with_capacity(m + 1);
    let mut indices = Vec::with_capacity(x.nnz() + y.nnz());
    let mut data = Vec::with_capacity(x.nnz() + y.nnz());
    indptr.push(0);
    for (rx, ry) in x.outer_iterator().zip(y.outer_iterator()) {
        let (xi, xv, yi, yv) = (rx.indices(), rx.data(), ry.indices(), ry.data());
        let (mut p, mut q) = (0, 0);
        while p < xi.len() || q < yi.len() {
            let (j, v) = if q >= yi.len() || (p < xi.len() && xi[p] < yi[q]) {
                p += 1;
                (xi[p - 1], op.apply(xv[p - 1], 0.0))
            } else if p >= xi.len() || yi[q] < xi[p] {
                q += 1;
                (yi[q - 1], op.apply(0.0, yv[q - 1]))
            } else {
                p += 1;
                q += 1;
                (xi[p - 1], op.apply(xv[p - 1], yv[q - 1]))
            };
            if crate::matrix::is_stored(v) {
                indices.push(j);
                data.push(v);
            }
        }
        indptr.push(indices.len());
    }
    Csr::new((m, n), indptr, indices, data)
}

/// Writes every output cell, rows in parallel. A full CSR operand is not densified: each row
/// is computed with 0 in its place, then its non-zeros are patched in.
fn dense_binary(
    (m, n): (usize, usize),
    a: &Side<'_>,
    b: &Side<'_>,
    f: impl Fn(f64, f64) -> f64 + Sync,
) -> (Dense, usize) {
    // With two CSR operands (an operator with f(0, 0) != 0), densify the left one.
    let both_sparse = a.is_sparse_full() && b.is_sparse_full();
    let da = match a {
        Side::Full(Matrix::Sparse(_)) if !both_sparse => None,
        Side::Full(x) => Some(dense_cow(x)),
        _ => None,
    };
    let db = match b {
        Side::Full(Matrix::Dense(d)) => Some(std::borrow::Cow::Borrowed(d)),
        _ => None,
    };
    let sa = match a {
        Side::Full(Matrix::Sparse(s)) if !both_sparse => Some(s),
        _ => None,
    };
    let sb = match b {
        Side::Full(Matrix::Sparse(s)) => Some(s),
        _ => None,
    };
    let (da, db) = (da.as_deref(), db.as_deref());
    let mut out = crate::matrix::zeros(m, n);
    if n == 0 {
        return (out, 0);
    }
    let work = |(i, o): (usize, &mut [f64])| {
        let va = if sa.is_some() {
            RowView::Const(0.0)
        } else {
            row_view(a, da, i, n)
        };
        let vb = if sb.is_some() {
            RowView::Const(0.0)
        } else {
            row_view(b, db, i, n)
        };
        fill(o, &va, &vb, &f);
        if let Some(s) = sa {
            let r = s.outer_view(i).expect("row in range");
            for (j, &x) in r.iter() {
                o[j] = f(x, vb.at(j));
            }
        }
        if let Some(s) = sb {
            let r = s.outer_view(i).expect("row in range");
            for (j, &y) in r.iter() {
                o[j] = f(va.at(j), y);
            }
        }
    };
    // With only scalars and dense operands of the output's shape, a block of rows is one
    // contiguous run of cells for every side.
    let flat = |side: &Side<'_>| matches!(side, Side::Scalar(_) | Side::Full(Matrix::Dense(_)));
    let flat = sa.is_none() && sb.is_none() && flat(a) && flat(b);
    // rows in blocks of about TASK_CELLS cells (at least one row), so that a thin matrix is a
    // few tasks rather than one per row; each block's non-zeros are counted while it is in
    // cache (the representation rule needs them)
    let rows = (TASK_CELLS / n).max(1);
    let block = |(t, o): (usize, &mut [f64])| {
        if flat {
            let lo = t * rows * n;
            let hi = lo + o.len();
            fill(o, &cells(a, da, lo, hi), &cells(b, db, lo, hi), &f);
        } else {
            for (r, orow) in o.chunks_mut(n).enumerate() {
                work((t * rows + r, orow));
            }
        }
        count_nnz(o)
    };
    let os = out.as_slice_mut().expect("standard layout");
    let nnz = if m * n < PAR_CELLS {
        os.chunks_mut(rows * n).enumerate().map(block).sum()
    } else {
        os.par_chunks_mut(rows * n).enumerate().map(block).sum()
    };
    (out, nnz)
}

/// Cells `lo..hi` of a side that is a scalar or a dense matrix of the output's shape (`d`).
fn cells<'a>(side: &Side<'_>, d: Option<&'a Dense>, lo: usize, hi: usize) -> RowView<'a> {
    match side {
        Side::Scalar(v) => RowView::Const(*v),
        _ => RowView::Slice(&d.expect("dense side").as_slice().expect("standard layout")[lo..hi]),
    }
}

/// `o[j] = x[j] op y[j]` for views of `o`'s length, with [`dense_dispatch`]'s closures (the
/// same operations, so the same bits as the element-wise kernel): the fused cell-wise
/// kernels' (`kernels::cellwise`) binary step.
pub(crate) fn fill_op(op: BinOp, o: &mut [f64], x: &RowView<'_>, y: &RowView<'_>) {
    match op {
        BinOp::Add => fill(o, x, y, &|a, b| a + b),
        BinOp::Sub => fill(o, x, y, &|a, b| a - b),
        BinOp::Mul => fill(o, x, y, &|a, b| a * b),
        BinOp::Div => fill(o, x, y, &|a, b| a / b),
        // `x ^ 2` is `x * x` (`ops::pow`'s first case), without the per-cell dispatch
        BinOp::Pow if matches!(y, RowView::Const(c) if *c == 2.0) => fill(o, x, y, &|a, _| a * a),
        other => fill(o, x, y, &move |a, b| other.apply(a, b)),
    }
}

/// Cells per task of [`dense_binary`].
const TASK_CELLS: usize = 1 << 13;

/// `o[j] = f(x[j], y[j])` for two views of the same length as `o`.
#[inline]
fn fill(o: &mut [f64], x: &RowView<'_>, y: &RowView<'_>, f: &impl Fn(f64, f64) -> f64) {
    match (x, y) {
        (RowView::Const(x), RowView::Const(y)) => o.fill(f(*x, *y)),
        (RowView::Const(x), RowView::Slice(ys)) => {
            o.iter_mut().zip(*ys).for_each(|(o, &y)| *o = f(*x, y))
        }
        (RowView::Slice(xs), RowView::Const(y)) => {
            o.iter_mut().zip(*xs).for_each(|(o, &x)| *o = f(x, *y))
        }
        (RowView::Slice(xs), RowView::Slice(ys)) => o
            .iter_mut()
            .zip(xs.iter().zip(*ys))
            .for_each(|(o, (&x, &y))| *o = f(x, y)),
    }
}

/// A dense view of a matrix, borrowing when it is already dense.
fn dense_cow(x: &Matrix) -> std::borrow::Cow<'_, Dense> {
    match x {
        Matrix::Dense(d) => std::borrow::Cow::Borrowed(d),
        Matrix::Sparse(s) => std::borrow::Cow::Owned(crate::matrix::csr_to_dense(s)),
    }
}

/// `f(X)` cell by cell; sparse inputs stay sparse when `f(0) == 0`.
pub fn unary(op: UnaryOp, x: &Matrix) -> Matrix {
    match x {
        Matrix::Sparse(s) if op.is_sparse_safe() => {
            Matrix::from_csr(s.map(|&v| op.apply(v))).examined()
        }
        _ => {
            let mut d = x.to_dense();
            if let Some(s) = d.as_slice_mut() {
                if s.len() < PAR_CELLS {
                    op.apply_slice(s);
                } else {
                    s.par_chunks_mut(TASK_CELLS).for_each(|c| op.apply_slice(c));
                }
            }
            Matrix::from_dense(d).examined()
        }
    }
}

/// `ifelse(c, a, b)`: `a` where `c` is non-zero, else `b`, with broadcasting of all three.
pub fn ifelse(c: Operand<'_>, a: Operand<'_>, b: Operand<'_>) -> Matrix {
    let ab = broadcast_shape(shape_of(&a), shape_of(&b)).expect("broadcast contract");
    let shape = broadcast_shape(shape_of(&c), ab).expect("broadcast contract");
    let (sc, sa, sb) = (classify(c, shape), classify(a, shape), classify(b, shape));
    let dc = match &sc {
        Side::Full(x) => Some(dense_cow(x)),
        _ => None,
    };
    let da = match &sa {
        Side::Full(x) => Some(dense_cow(x)),
        _ => None,
    };
    let db = match &sb {
        Side::Full(x) => Some(dense_cow(x)),
        _ => None,
    };
    let (m, n) = shape;
    let mut out = crate::matrix::zeros(m, n);
    if n > 0 {
        out.as_slice_mut()
            .expect("standard layout")
            .chunks_mut(n)
            .enumerate()
            .for_each(|(i, o)| {
                let (vc, va, vb) = (
                    row_view(&sc, dc.as_deref(), i, n),
                    row_view(&sa, da.as_deref(), i, n),
                    row_view(&sb, db.as_deref(), i, n),
                );
                for (j, o) in o.iter_mut().enumerate() {
                    *o = if vc.at(j) != 0.0 { va.at(j) } else { vb.at(j) };
                }
            });
    }
    Matrix::from_dense(out)
}
