//! Contingency tables and grouped aggregates: `table`, `aggregate` and `rowClassMeet`
//! ([`row_class_meet`]).
//!
//! `table(A, B, W, odim1, odim2)` adds, for each cell `k` of the inputs, the weight `W[k]`
//! (1 without weights) to `F[A[k], B[k]]`. `A`, `B` and `W` are matrices or scalars (a
//! scalar stands for every cell). As in SystemDS (`CTable`):
//!
//! * the cells are those of the first matrix operand, and the others are read at the same
//!   row and column, so an operand with at least as many rows and columns as the first
//!   contributes only those cells (SystemDS's generic `ctable` loops over its first input's
//!   cells and reads the others with `get(i, j)`: alsPredict's `table(seq(1, n), userIDs,
//!   n, nrow(L))` of an `n x 2` userIDs reads its first column); an operand with fewer rows
//!   or columns is an error (SystemDS reads past its end there);
//! * a row vector and a column vector of the same length are paired by index (SystemDS's
//!   generic `ctable` reads both inputs' cells in row-major order);
//! * a cell where `A`, `B` or `W` is NaN is skipped;
//! * the categories are rounded towards zero after adding 2^-53 to the magnitude
//!   (`UtilFunctions.toLong`), and a category below 1 is an error;
//! * without output dimensions the result is `max(A) x max(B)` over the counted cells; with
//!   them, cells falling outside are dropped;
//! * the result is sparse when it is (a one-hot `table(seq(1, n), y)` stays CSR).
//!
//! `aggregate(target=X, groups=g, fn=..., ngroups=k)` reduces the rows of each column of `X`
//! by the group of each row (`g` a column of categories 1..k, `k` defaulting to `max(g)`),
//! giving a `k x ncol(X)` result; rows whose group exceeds `k` are dropped. A 1-row `X` is
//! grouped by column instead. With `weights` (a column, for a one-column target) each row
//! counts with its weight. As SystemDS computes them: `sum` adds the non-zero cells times
//! their weights, compensated; `count` (the rounded sum of the weights), `mean`,
//! `variance` (n - 1, 0 for one row), `centralmoment` (`order` 2, 3 or 4), `min` and `max`
//! (of the weighted values) update SystemDS's central-moment object cell by cell, zeros
//! included ([`crate::kernels::stats::Cm`]). An empty group gives 0 for every function but
//! `centralmoment`, which is NaN there (0 / 0), as SystemDS's result for a group without
//! rows.

use crate::error::RuntimeError;
use crate::kernels::aggregate::Kahan;
use crate::kernels::stats::{Cm, CmKind};
use crate::matrix::Matrix;
use std::collections::BTreeMap;

/// A `table` operand: a matrix or a scalar standing for every cell.
#[derive(Clone, Copy, Debug)]
pub enum TableArg<'a> {
    /// one value per cell
    Matrix(&'a Matrix),
    /// the same value for every cell
    Scalar(f64),
}

impl TableArg<'_> {
    fn shape(&self) -> Option<(usize, usize)> {
        match self {
            TableArg::Matrix(m) => Some(m.shape()),
            TableArg::Scalar(_) => None,
        }
    }

    fn at(&self, i: usize, j: usize) -> f64 {
        match self {
            TableArg::Matrix(m) => m.get(i, j),
            TableArg::Scalar(v) => *v,
        }
    }

    /// Cell `k` of a vector (row or column).
    fn at_index(&self, k: usize) -> f64 {
        match self {
            TableArg::Matrix(m) if m.rows() == 1 => m.get(0, k),
            TableArg::Matrix(m) => m.get(k, 0),
            TableArg::Scalar(v) => *v,
        }
    }
}

/// SystemDS's `toLong`: the sign times `floor(|v| + 2^-53)`.
fn to_long(v: f64) -> i64 {
    (v.signum() * (v.abs() + f64::EPSILON / 2.0).floor()) as i64
}

/// `table(A, B, W, odim1, odim2)`: see the module doc. Errors: an operand smaller than the
/// first matrix operand (other than a row and a column vector of one length), a category
/// below 1.
pub fn table(
    a: TableArg<'_>,
    b: TableArg<'_>,
    w: TableArg<'_>,
    dims: Option<(usize, usize)>,
) -> Result<Matrix, RuntimeError> {
    let shapes: Vec<(usize, usize)> = [a.shape(), b.shape(), w.shape()]
        .into_iter()
        .flatten()
        .collect();
    let vectors = shapes.iter().all(|s| s.0 == 1 || s.1 == 1)
        && shapes
            .windows(2)
            .all(|p| p[0].0 * p[0].1 == p[1].0 * p[1].1);
    let mut shape: Option<(usize, usize)> = None;
    for &s in &shapes {
        match shape {
            None => shape = Some(s),
            Some(t) if t != s && vectors => shape = Some((t.0 * t.1, 1)),
            // a larger operand is read at the first one's cells
            Some(t) if s.0 >= t.0 && s.1 >= t.1 => {}
            Some(t) if t != s => {
                return Err(RuntimeError::invalid(
                    "table",
                    format!(
                        "an input of {}x{} has fewer rows or columns than the first input's {}x{}",
                        s.0, s.1, t.0, t.1
                    ),
                ))
            }
            _ => {}
        }
    }
    let (m, n) = shape.unwrap_or((1, 1));
    let mut cells: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    let (mut max_r, mut max_c) = (0usize, 0usize);
    for i in 0..m {
        for j in 0..n {
            let (va, vb, vw) = if vectors {
                (a.at_index(i + j), b.at_index(i + j), w.at_index(i + j))
            } else {
                (a.at(i, j), b.at(i, j), w.at(i, j))
            };
            if va.is_nan() || vb.is_nan() || vw.is_nan() {
                continue;
            }
            let (r, c) = (to_long(va), to_long(vb));
            if r <= 0 || c <= 0 {
                return Err(RuntimeError::invalid(
                    "table",
                    format!("erroneous input while computing the contingency table (one of the values <= zero): {va} {vb}"),
                ));
            }
            let (r, c) = (r as usize, c as usize);
            if let Some((d1, d2)) = dims {
                if r > d1 || c > d2 {
                    continue;
                }
            }
            max_r = max_r.max(r);
            max_c = max_c.max(c);
            *cells.entry((r - 1, c - 1)).or_insert(0.0) += vw;
        }
    }
    let (rows, cols) = dims.unwrap_or((max_r, max_c));
    let entries: Vec<(usize, usize, f64)> = cells
        .into_iter()
        .filter(|e| e.1 != 0.0)
        .map(|((i, j), v)| (i, j, v))
        .collect();
    Ok(Matrix::from_triplets(rows, cols, &entries))
}

/// The reduction of `aggregate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupFn {
    /// `"sum"`
    Sum,
    /// `"count"`
    Count,
    /// `"mean"`
    Mean,
    /// `"variance"` (n - 1)
    Variance,
    /// `"min"`
    Min,
    /// `"max"`
    Max,
    /// `"centralmoment"` of order 2, 3 or 4 (`order=`)
    Moment(u8),
}

impl GroupFn {
    /// Parses `fn=` (and `order=` for `"centralmoment"`).
    pub fn parse(s: &str, order: Option<f64>) -> Result<GroupFn, RuntimeError> {
        Ok(match s {
            "sum" => GroupFn::Sum,
            "count" => GroupFn::Count,
            "mean" => GroupFn::Mean,
            "variance" => GroupFn::Variance,
            "min" => GroupFn::Min,
            "max" => GroupFn::Max,
            "centralmoment" => match order {
                Some(k) if k == 2.0 || k == 3.0 || k == 4.0 => GroupFn::Moment(k as u8),
                _ => {
                    return Err(RuntimeError::invalid(
                        "aggregate",
                        "for centralmoment, order must be 2, 3 or 4",
                    ))
                }
            },
            _ => {
                return Err(RuntimeError::invalid(
                    "aggregate",
                    format!(
                        "unsupported fn \"{s}\" (sum, count, mean, variance, centralmoment, min, \
                         max)"
                    ),
                ))
            }
        })
    }

    /// The central-moment kind SystemDS's `CM` function object computes it with (not `sum`,
    /// a compensated sum).
    fn cm_kind(self) -> Option<CmKind> {
        Some(match self {
            GroupFn::Sum => return None,
            GroupFn::Count => CmKind::Count,
            GroupFn::Mean => CmKind::Mean,
            GroupFn::Variance => CmKind::Variance,
            GroupFn::Min => CmKind::Min,
            GroupFn::Max => CmKind::Max,
            GroupFn::Moment(k) => CmKind::moment(i64::from(k)).expect("order 2..4"),
        })
    }
}

/// `aggregate(target=X, groups=g, weights=w, fn=f, ngroups=k)`: see the module doc. Errors:
/// `g` not a vector as long as `X`'s rows (columns for a row `X`), a group below 1, weights
/// that are not a column as long as `g` or with a target of several columns.
pub fn grouped_aggregate(
    x: &Matrix,
    groups: &Matrix,
    weights: Option<&Matrix>,
    f: GroupFn,
    ngroups: Option<usize>,
) -> Result<Matrix, RuntimeError> {
    let row_target = x.rows() == 1 && x.cols() > 1;
    let (len, width) = if row_target {
        (x.cols(), 1)
    } else {
        (x.rows(), x.cols())
    };
    if groups.cells() != len || (groups.rows() != 1 && groups.cols() != 1) {
        return Err(RuntimeError::invalid(
            "aggregate",
            format!(
                "groups must be a vector of {len} cells, found {}x{}",
                groups.rows(),
                groups.cols()
            ),
        ));
    }
    if let Some(w) = weights {
        if w.cols() != 1 || w.rows() != len {
            return Err(RuntimeError::invalid(
                "aggregate",
                format!(
                    "weights must be a column of {len} rows, found {}x{}",
                    w.rows(),
                    w.cols()
                ),
            ));
        }
        if width > 1 {
            return Err(RuntimeError::invalid(
                "aggregate",
                "weights need a target of one column",
            ));
        }
    }
    let g: Vec<f64> = (0..len)
        .map(|k| {
            if groups.cols() == 1 {
                groups.get(k, 0)
            } else {
                groups.get(0, k)
            }
        })
        .collect();
    let mut gi = Vec::with_capacity(len);
    for &v in &g {
        let c = v as i64;
        if v.is_nan() || v < 1.0 {
            return Err(RuntimeError::invalid(
                "aggregate",
                format!("group {v} is below 1"),
            ));
        }
        gi.push(c as usize);
    }
    let k = ngroups.unwrap_or_else(|| gi.iter().copied().max().unwrap_or(0));
    let value = |r: usize, c: usize| {
        if row_target {
            x.get(0, r)
        } else {
            x.get(r, c)
        }
    };
    let weight = |r: usize| weights.map(|w| w.get(r, 0));
    let mut out = vec![0.0; k * width];
    match f.cm_kind() {
        // SystemDS's groupedAggregateKahanPlus: the non-zero cells (times their weight) of
        // each group, compensated
        None => {
            let mut sums = vec![Kahan::default(); k * width];
            for (r, &grp) in gi.iter().enumerate() {
                if grp > k {
                    continue;
                }
                for c in 0..width {
                    let v = value(r, c);
                    if v != 0.0 {
                        sums[(grp - 1) * width + c].add(v * weight(r).unwrap_or(1.0));
                    }
                }
            }
            for (o, s) in out.iter_mut().zip(&sums) {
                *o = s.sum;
            }
        }
        // SystemDS's vector count: the rows of each group
        Some(CmKind::Count) if weights.is_none() && width == 1 => {
            for &grp in &gi {
                if grp <= k {
                    out[grp - 1] += 1.0;
                }
            }
        }
        // SystemDS's groupedAggregateCM: every cell, zeros included, value by value with its
        // weight (1 without weights) into the group's CM object
        Some(kind) => {
            let mut cms = vec![Cm::default(); k * width];
            for (r, &grp) in gi.iter().enumerate() {
                if grp > k {
                    continue;
                }
                let w = weight(r).unwrap_or(1.0);
                for c in 0..width {
                    cms[(grp - 1) * width + c].add_weighted(kind, value(r, c), w);
                }
            }
            for (o, cm) in out.iter_mut().zip(&cms) {
                // an empty group reads 0 (a variance -0.0 that SystemDS does not store) or,
                // for a central moment, 0 / 0
                *o = cm.result(kind) + 0.0;
            }
        }
    }
    Ok(Matrix::from_dense(
        ndarray::Array2::from_shape_vec((k, width), out).expect("shape"),
    ))
}

/// `[C, N] = rowClassMeet(A, B)`: per row, the classes of the cells where the labels of `A`
/// and of `B` (cast to int, as Java's `(int)` cast) are both non-zero, grouped by the pair of
/// labels. `C[i, j]` is the class of cell `(i, j)`, numbered `1..k` within row `i`; `N[i, j]`
/// is the size of that class; both are 0 where `A` or `B` is. `B` may be one row applied to
/// every row of `A`; the result is `max(rows) x max(cols)`, and only the first
/// `min(cols)` columns of the first `rows(A)` rows can be non-zero.
///
/// The class numbers follow SystemDS (`LibCommonsMath.computeRCM`): the order in which Java's
/// `HashMap` (default capacity 16, load factor 0.75, a table that keeps its size across the
/// rows, as `clear` does) iterates the label pairs, keyed by the hash `31 * (31 + a) + b`:
/// by bucket, then by insertion (column) order. The rare case of a bucket of more than eight
/// pairs in a table of at least 64 buckets (Java then keeps a tree, in another order) is not
/// reproduced. A sparse `A` contributes a stored cell whose label casts to 0 as SystemDS's
/// sparse path does (its dense path skips it).
pub fn row_class_meet(a: &Matrix, b: &Matrix) -> Result<(Matrix, Matrix), RuntimeError> {
    let (ar, ac) = a.shape();
    let (br, bc) = b.shape();
    if br != 1 && br < ar {
        return Err(RuntimeError::invalid(
            "rowClassMeet",
            format!("B has {br} rows, expected 1 or at least the {ar} rows of A"),
        ));
    }
    let (nr, nc) = (ar.max(br), ac.max(bc));
    let cols = ac.min(bc);
    let mut c = crate::matrix::zeros(nr, nc);
    let mut n = crate::matrix::zeros(nr, nc);
    let label = |v: f64| v as i32; // Java's (int): toward zero, NaN to 0, saturating
    let sparse_a = a.is_sparse();
    let mut capacity: usize = 16;
    // per row: the distinct pairs in insertion order, with their columns
    let mut pairs: Vec<((i32, i32), Vec<usize>)> = Vec::new();
    let mut index: std::collections::HashMap<(i32, i32), usize> = Default::default();
    let mut bucket_sizes: std::collections::HashMap<usize, usize> = Default::default();
    let spread = |(x, y): (i32, i32)| {
        let h = 31i32.wrapping_mul(31i32.wrapping_add(x)).wrapping_add(y);
        (h ^ ((h as u32) >> 16) as i32) as u32 as usize
    };
    for i in 0..ar {
        pairs.clear();
        index.clear();
        bucket_sizes.clear();
        let bi = if br == 1 { 0 } else { i };
        let mut visit = |j: usize, av: f64| {
            let (x, y) = (label(av), label(b.get(bi, j)));
            if y == 0 || (x == 0 && !sparse_a) {
                return;
            }
            if let Some(&k) = index.get(&(x, y)) {
                pairs[k].1.push(j);
                return;
            }
            let bucket = spread((x, y)) & (capacity - 1);
            let held = bucket_sizes.get(&bucket).copied().unwrap_or(0);
            index.insert((x, y), pairs.len());
            pairs.push(((x, y), vec![j]));
            // a ninth node in a bucket of a small table makes Java grow the table; more
            // nodes than three quarters of the buckets do too
            let mut grow = held >= 8 && capacity < 64;
            grow |= pairs.len() * 4 > capacity * 3;
            if grow {
                capacity *= 2;
                bucket_sizes.clear();
                for (p, _) in &pairs {
                    *bucket_sizes.entry(spread(*p) & (capacity - 1)).or_default() += 1;
                }
            } else {
                *bucket_sizes.entry(bucket).or_default() += 1;
            }
        };
        match a {
            Matrix::Dense(d) => {
                for j in 0..cols {
                    visit(j, d[(i, j)]);
                }
            }
            Matrix::Sparse(s) => {
                let row = s.outer_view(i).expect("row in range");
                for (j, &v) in row.iter() {
                    if j >= cols {
                        break;
                    }
                    visit(j, v);
                }
            }
        }
        let mut order: Vec<usize> = (0..pairs.len()).collect();
        order.sort_by_key(|&k| (spread(pairs[k].0) & (capacity - 1), k));
        for (class, &k) in order.iter().enumerate() {
            let members = &pairs[k].1;
            for &j in members {
                c[(i, j)] = (class + 1) as f64;
                n[(i, j)] = members.len() as f64;
            }
        }
    }
    Ok((Matrix::from_dense(c), Matrix::from_dense(n)))
}
