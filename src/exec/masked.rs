//! The evaluation of `M * F` (or `F * M`) as written, for a sparse matrix `M` and a cell-wise
//! expression `F` of products of matrices (`(X != 0) * (U %*% t(V) - X)`, `W * (S %*%
//! t(V))`, alsCG's loss and gradient), at `M`'s stored entries only.
//!
//! When every cell of `F` is finite, the kernel `M * F` runs as written walks `M`'s stored
//! entries (sparse-driven, [`spores_runtime::kernels::binary`]): every other cell is an
//! unstored `+0.0`. So `F` is only needed at those entries, and this evaluates it there,
//! cell by cell with the naive definitions (a product's cell is the dot product of a row and
//! a column in SystemDS's `dotProduct` order, [`kernels::matmul::dot`]; the cell-wise
//! operators are [`BinOp::apply`]), instead of forming the dense `m x n` product (8 GB for
//! alsCG's 100000 x 10000 ratings). It is still the program as written, not a plan: no
//! rewrite, no fused kernel. Finiteness is proved before running from the operands: every
//! leaf matrix and scalar finite, and a bound on each node's magnitude (`k * |A| * |B|` for
//! a product of inner size `k`, the sum or product of the bounds for `+ - *`) with room to
//! spare below `f64::MAX`, so no cell, in any order of addition, overflows. Otherwise (an
//! Inf or NaN operand, a possible overflow, a dense or broadcast `M`, another shape of `F`)
//! the expression is evaluated as written, forming `F`, so `0 * Inf` stays NaN.
//!
//! The same values as forming `F`, except (1) the rounding of the products' cells, which
//! add in SystemDS's `dotProduct` order where the formed product adds as BLAS does, and (2)
//! where the formed `F` would be stored sparse (a product with most cells exactly zero): the
//! sparse-sparse kernel then stores `0 * f` as `-0.0` for a negative `f` outside `M`'s
//! entries, where this leaves `+0.0` unstored, as the sparse-driven kernel does. The result
//! is stored as that kernel stores it for a dense `F`.

use super::{var_matrix, Value};
use crate::check::hir::{Expr, ExprKind, Scalar};
use spores_runtime::kernels;
use spores_runtime::matrix::{col, Csr, Matrix};
use spores_runtime::ops::{BinOp, UnaryOp};
use std::collections::HashMap;
use std::sync::Arc;

/// Cells up to which a product's operand stored sparse is made dense for the rows and
/// columns the cells read (larger: evaluated as written).
const DENSE_OPERAND_CELLS: usize = 1 << 27;

/// Largest integer power `F ^ c` evaluated at the mask's entries.
const MAX_POWER: f64 = 4.0;

/// One node of `F`, in post-order (operands first).
#[derive(Debug)]
enum Node {
    /// a matrix (read with DML's broadcasting: a row or column vector, or 1x1)
    Matrix(Arc<Matrix>),
    /// a literal or scalar variable
    Scalar(f64),
    /// the product of the operands at these positions of [`Tree::operands`]: rows of the
    /// left one, rows of the right one's transpose
    Product(usize, usize),
    /// a cell-wise operator on the two values below
    Binary(BinOp),
    /// `-x`
    Neg,
}

/// A product's operand, dense and row-major: `rows x inner`.
#[derive(Debug)]
struct Rows {
    data: Vec<f64>,
    rows: usize,
    inner: usize,
}

impl Rows {
    fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.inner..(i + 1) * self.inner]
    }
}

/// `F`, ready to be evaluated at any cell.
#[derive(Debug)]
pub(super) struct Tree {
    nodes: Vec<Node>,
    operands: Vec<Rows>,
    shape: (usize, usize),
}

/// The shape-level view of `F`'s syntax: which side of `a * b` is `F`. `F` is built from
/// variables, `t(variable)`, numeric literals, `+ - *`, `/` by a scalar, `^` by a small
/// integer literal and unary `-`, with at least one `A %*% B` of variables or their
/// transposes. Returns whether the mask is the left operand.
pub(super) fn candidate(a: &Expr, b: &Expr) -> Option<bool> {
    match (has_product(b) && parses(b), has_product(a) && parses(a)) {
        (true, false) => Some(true),
        (false, true) => Some(false),
        _ => None,
    }
}

fn has_product(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::MatMul(..) => true,
        ExprKind::Binary(_, a, b) => has_product(a) || has_product(b),
        ExprKind::Unary(_, a) => has_product(a),
        _ => false,
    }
}

/// Whether `e` has only the forms [`candidate`] lists.
fn parses(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Var(_) => true,
        ExprKind::Lit(s) => !matches!(s, Scalar::Bool(_)),
        ExprKind::MatMul(a, b) => factor(a).is_some() && factor(b).is_some(),
        ExprKind::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => parses(a) && parses(b),
        ExprKind::Binary(BinOp::Div, a, b) => parses(a) && !b.ty.is_matrix() && parses(b),
        ExprKind::Binary(BinOp::Pow, a, c) => parses(a) && power(c).is_some(),
        ExprKind::Unary(UnaryOp::Neg, a) => parses(a),
        _ => false,
    }
}

/// `X` or `t(X)`: the variable and whether it is transposed.
fn factor(e: &Expr) -> Option<(&str, bool)> {
    match &e.kind {
        ExprKind::Var(x) => Some((x, false)),
        _ => super::transposed_var(e).map(|x| (x, true)),
    }
}

/// The exponent of `^ c` for an integer literal `1 <= c <= MAX_POWER`.
fn power(c: &Expr) -> Option<f64> {
    match &c.kind {
        ExprKind::Lit(s @ (Scalar::Int(_) | Scalar::Double(_))) => {
            let c = s.as_f64();
            (c.fract() == 0.0 && (1.0..=MAX_POWER).contains(&c)).then_some(c)
        }
        _ => None,
    }
}

/// A bound on a node's magnitude, and its shape (`None` for a scalar).
type Bound = (f64, Option<(usize, usize)>);

impl Tree {
    /// `F` with the current variables, when every cell of it is provably finite and its
    /// shape is `shape`; `None` otherwise (including any shape error: evaluated as written,
    /// the expression reports it).
    pub(super) fn build(
        e: &Expr,
        vars: &HashMap<String, Value>,
        shape: (usize, usize),
    ) -> Option<Tree> {
        let mut t = Tree {
            nodes: Vec::new(),
            operands: Vec::new(),
            shape,
        };
        let (bound, s) = t.add(e, vars)?;
        (s == Some(shape) && (bound * 2.0).is_finite()).then_some(t)
    }

    /// Appends `e`'s nodes; its bound and shape.
    fn add(&mut self, e: &Expr, vars: &HashMap<String, Value>) -> Option<Bound> {
        // every bound is checked with room for rounding (each cell's operations round
        // away by at most a factor 1 + 2^-52 per operation)
        let ok = |b: Bound| (b.0 * 2.0).is_finite().then_some(b);
        match &e.kind {
            ExprKind::Lit(s) => {
                let v = s.as_f64();
                self.nodes.push(Node::Scalar(v));
                ok((v.abs(), None))
            }
            ExprKind::Var(x) => match vars.get(x)? {
                Value::Scalar(s) => {
                    let v = s.as_f64();
                    self.nodes.push(Node::Scalar(v));
                    ok((v.abs(), None))
                }
                Value::Matrix(m) => {
                    let b = max_abs(m)?;
                    self.nodes.push(Node::Matrix(m.clone()));
                    ok((b, Some(m.shape())))
                }
                _ => None,
            },
            ExprKind::MatMul(a, b) => {
                let (x, tx) = factor(a)?;
                let (y, ty) = factor(b)?;
                let (mx, my) = (var_matrix(vars, x)?, var_matrix(vars, y)?);
                let (bx, by) = (max_abs(mx)?, max_abs(my)?);
                // rows of A, and rows of t(B) (columns of B)
                let left = rows(mx, tx)?;
                let right = rows(my, !ty)?;
                if left.inner != right.inner {
                    return None;
                }
                let (m, n) = (left.rows, right.rows);
                let k = left.inner as f64;
                self.operands.push(left);
                self.operands.push(right);
                let p = self.operands.len();
                self.nodes.push(Node::Product(p - 2, p - 1));
                ok((k * bx * by, Some((m, n))))
            }
            ExprKind::Binary(op, a, b) => {
                let (ba, sa) = self.add(a, vars)?;
                let bound = match op {
                    BinOp::Pow => {
                        let c = power(b)?;
                        self.nodes.push(Node::Scalar(c));
                        self.nodes.push(Node::Binary(BinOp::Pow));
                        return ok((ba.powf(c), sa));
                    }
                    _ => self.add(b, vars)?,
                };
                let (bb, sb) = bound;
                let shape = match (sa, sb) {
                    (Some(x), Some(y)) => Some(kernels::elementwise::broadcast_shape(x, y)?),
                    (s, None) | (None, s) => s,
                };
                let bound = match op {
                    BinOp::Add | BinOp::Sub => ba + bb,
                    BinOp::Mul => ba * bb,
                    // by a scalar without zero (checked below): at most |a| / |b|
                    BinOp::Div => {
                        let Some(Node::Scalar(d)) = self.nodes.last() else {
                            return None;
                        };
                        if *d == 0.0 || sb.is_some() {
                            return None;
                        }
                        ba / d.abs()
                    }
                    _ => return None,
                };
                self.nodes.push(Node::Binary(*op));
                ok((bound, shape))
            }
            ExprKind::Unary(UnaryOp::Neg, a) => {
                let b = self.add(a, vars)?;
                self.nodes.push(Node::Neg);
                Some(b)
            }
            _ => None,
        }
    }

    /// `F[i, j]`; with `seen`, also raises each node's entry to the magnitude of its value.
    fn at(&self, i: usize, j: usize, stack: &mut Vec<f64>, mut seen: Option<&mut [f64]>) -> f64 {
        stack.clear();
        for (k, node) in self.nodes.iter().enumerate() {
            let v = match node {
                Node::Scalar(v) => *v,
                Node::Matrix(m) => {
                    let (r, c) = m.shape();
                    m.get(if r == 1 { 0 } else { i }, if c == 1 { 0 } else { j })
                }
                Node::Product(a, b) => {
                    kernels::matmul::dot(self.operands[*a].row(i), self.operands[*b].row(j))
                }
                Node::Binary(op) => {
                    let y = stack.pop().expect("two operands");
                    let x = stack.pop().expect("two operands");
                    op.apply(x, y)
                }
                Node::Neg => {
                    let x = stack.pop().expect("one operand");
                    UnaryOp::Neg.apply(x)
                }
            };
            if let Some(s) = seen.as_deref_mut() {
                s[k] = s[k].max(v.abs());
            }
            stack.push(v);
        }
        stack.pop().expect("the root")
    }

    /// `mask * F` (`F * mask` unless `mask_left`) at the mask's stored entries, stored as
    /// the sparse-driven kernel stores it for a dense `F`; with `magnitude`, also the
    /// largest magnitude of every node's values at those entries.
    pub(super) fn times_mask(&self, mask: &Csr, mask_left: bool, magnitude: bool) -> (Matrix, f64) {
        use rayon::prelude::*;
        let (m, n) = self.shape;
        let indptr = mask.indptr().raw_storage().to_vec();
        let ind = mask.indices();
        let mut data = mask.data().to_vec();
        let rows = kernels::csr_rows_mut(&indptr, &mut data);
        let width = if magnitude { self.nodes.len() } else { 0 };
        let seen = rows
            .into_par_iter()
            .with_min_len(64)
            .fold(
                || (Vec::new(), vec![0.0; width]),
                |(mut stack, mut seen), (i, vals)| {
                    let cols = &ind[indptr[i]..indptr[i + 1]];
                    for (v, &j) in vals.iter_mut().zip(cols) {
                        let s = magnitude.then_some(seen.as_mut_slice());
                        let f = self.at(i, col(j), &mut stack, s);
                        *v = if mask_left {
                            BinOp::Mul.apply(*v, f)
                        } else {
                            BinOp::Mul.apply(f, *v)
                        };
                    }
                    (stack, seen)
                },
            )
            .map(|(_, s)| s.into_iter().fold(0.0, f64::max))
            .reduce(|| 0.0, f64::max);
        let csr = Csr::new((m, n), indptr, ind.to_vec(), data);
        // as `kernels::binary` stores `M * F`: examined on its non-zeros, as SystemDS does
        let r = Matrix::from_csr(csr).examined();
        (r, seen)
    }
}

/// The largest magnitude of a matrix's values, when all are finite.
fn max_abs(m: &Matrix) -> Option<f64> {
    if !m.all_finite() {
        return None;
    }
    let max = |s: &[f64]| s.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    Some(match m {
        Matrix::Dense(d) => match d.as_slice() {
            Some(s) => max(s),
            None => d.iter().fold(0.0f64, |a, v| a.max(v.abs())),
        },
        Matrix::Sparse(s) => max(s.data()),
    })
}

/// The rows of `m` (of `t(m)` when `transposed`), dense and row-major.
fn rows(m: &Matrix, transposed: bool) -> Option<Rows> {
    if m.cells() > DENSE_OPERAND_CELLS {
        return None;
    }
    let d = m.to_dense();
    let d = if transposed {
        d.t().as_standard_layout().into_owned()
    } else {
        d.as_standard_layout().into_owned()
    };
    let (rows, inner) = d.dim();
    Some(Rows {
        data: d.into_raw_vec_and_offset().0,
        rows,
        inner,
    })
}
