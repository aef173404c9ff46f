//! Builtins that rearrange or select cells: `cbind`/`rbind` (`append`), `diag`, `rev`,
//! `lower.tri`/`upper.tri`, `replace`, `removeEmpty`, `order`, `unique`, `countDistinct`.
//!
//! Sparse inputs stay sparse where DML's result is sparse (`cbind`, `rbind`, `diag`, `rev`,
//! the triangles, `removeEmpty`, `replace` of a non-zero pattern); the semantics follow
//! SystemDS's `LibMatrixReorg` and `MatrixBlock`:
//!
//! * `order` sorts the rows by the `by` columns (the first decides, the next ones break
//!   ties), ascending or decreasing; rows that still tie keep their original order (SystemDS's
//!   final stable pass), in both directions; -0.0 and 0.0 tie. Keys are compared as
//!   SystemDS's quicksort compares them (IEEE `<`, `==`), so NaN keys land where that sort
//!   leaves them (see `sort_row_indexes`). The values of a dense column (`index.return=FALSE`)
//!   are sorted as Java's `Arrays.sort` sorts them: -0.0 before 0.0 and NaN last, reversed
//!   when decreasing; an all-zero input gives zeros (+0.0).
//! * `removeEmpty` of a matrix with nothing to keep returns one row (column) of zeros when
//!   `empty.return` is true, else zero rows (columns). With `select`, the rows (columns)
//!   whose select value is non-zero are kept, empty or not; a `select` that keeps every row
//!   (column) returns the matrix as it is, as SystemDS's shortcut does: a matrix of no rows
//!   stays one of no rows, whatever `empty.return` says. Any shape of `select` is read as
//!   SystemDS reads it: its cells row by row, the first `nrow(X)` (`ncol(X)`) of them
//!   deciding (a row vector for rows works as a column); a shortcut when its non-zeros number
//!   `nrow(X)` (`ncol(X)`), wherever they are; for rows, as many result rows as it has
//!   non-zeros, the ones beyond the kept rows zero; fewer cells than needed is an error.
//! * `lower.tri(X, diag, values)`: the lower triangle (with the diagonal if `diag`), the
//!   values when `values`, else 1 in every triangle cell; an all-zero input gives zeros.

use crate::error::RuntimeError;
use crate::matrix::{col, count_nnz, idx, Csr, Matrix, MAX_SPARSE_COLS};
use ndarray::Array2;

fn dense_of(rows: usize, cols: usize, v: Vec<f64>) -> Matrix {
    Matrix::from_dense(Array2::from_shape_vec((rows, cols), v).expect("shape"))
}

/// The cells of row `i` as `(column, value)` pairs, non-zeros only, in column order.
fn row_entries(x: &Matrix, i: usize, out: &mut Vec<(usize, f64)>) {
    out.clear();
    match x {
        Matrix::Dense(d) => {
            for (j, &v) in d.row(i).iter().enumerate() {
                if v != 0.0 {
                    out.push((j, v));
                }
            }
        }
        Matrix::Sparse(s) => {
            let row = s.outer_view(i).expect("row in range");
            out.extend(row.iter().map(|(j, &v)| (j, v)));
        }
    }
}

/// `cbind(A, B, ...)`: the matrices side by side. Error: different row counts.
pub fn cbind(parts: &[&Matrix]) -> Result<Matrix, RuntimeError> {
    let Some(first) = parts.first() else {
        return Err(RuntimeError::invalid("cbind", "needs at least one matrix"));
    };
    let rows = first.rows();
    if let Some(p) = parts.iter().find(|p| p.rows() != rows) {
        return Err(RuntimeError::invalid(
            "cbind",
            format!(
                "all matrices must have the same number of rows, found {rows} and {}",
                p.rows()
            ),
        ));
    }
    let cols: usize = parts.iter().map(|p| p.cols()).sum();
    // dense parts only, or too wide for CSR (MAX_SPARSE_COLS): a dense result
    if parts.iter().all(|p| !p.is_sparse()) || cols > MAX_SPARSE_COLS {
        // row by row, each part's row copied into its columns (a strided column-slice
        // assignment walked the narrow parts of a tall result cell by cell); groups of rows
        // in parallel
        use rayon::prelude::*;
        let dense: Vec<Option<std::borrow::Cow<'_, [f64]>>> = parts
            .iter()
            .map(|p| match p {
                Matrix::Dense(d) => Some(match d.as_slice() {
                    Some(s) => std::borrow::Cow::Borrowed(s),
                    None => std::borrow::Cow::Owned(d.iter().copied().collect()),
                }),
                Matrix::Sparse(_) => None,
            })
            .collect();
        let mut out = crate::matrix::zeroed(rows * cols);
        let fill = |r0: usize, o: &mut [f64]| {
            for (k, orow) in o.chunks_exact_mut(cols).enumerate() {
                let i = r0 + k;
                let mut c0 = 0;
                for (p, d) in parts.iter().zip(&dense) {
                    let pc = p.cols();
                    match (p, d) {
                        // a column alone (the common tall cbind of vectors): no memmove call
                        (_, Some(d)) if pc == 1 => orow[c0] = d[i],
                        (_, Some(d)) => orow[c0..c0 + pc].copy_from_slice(&d[i * pc..(i + 1) * pc]),
                        (Matrix::Sparse(s), None) => {
                            let r = s.outer_view(i).expect("row in range");
                            for (&j, &v) in r.indices().iter().zip(r.data()) {
                                orow[c0 + col(j)] = v;
                            }
                        }
                        (Matrix::Dense(_), None) => unreachable!("dense parts have their slice"),
                    }
                    c0 += pc;
                }
            }
        };
        // (`zeroed` has already populated a large result's pages, in parallel)
        if let Some(group) = (1usize << 15).checked_div(cols) {
            let group = group.max(1);
            if rows * cols < 1 << 17 {
                fill(0, &mut out);
            } else {
                out.par_chunks_mut(group * cols)
                    .enumerate()
                    .for_each(|(g, o)| fill(g * group, o));
            }
        }
        return Ok(Matrix::from_dense(
            Array2::from_shape_vec((rows, cols), out).expect("rows x cols"),
        ));
    }
    // each output row's entries (a dense part's non-zeros), their running sum the row
    // pointers; then groups of rows fill their ranges of the index and value arrays in
    // parallel, each row's parts side by side (sorted: the parts' columns are disjoint and
    // in order)
    let offsets: Vec<usize> = parts
        .iter()
        .scan(0, |c0, p| {
            let o = *c0;
            *c0 += p.cols();
            Some(o)
        })
        .collect();
    let row_len = |i: usize| -> usize {
        parts
            .iter()
            .map(|p| match p {
                Matrix::Dense(d) => d.row(i).iter().filter(|&&v| v != 0.0).count(),
                Matrix::Sparse(s) => s.indptr().outer_inds_sz(i).len(),
            })
            .sum()
    };
    let lens: Vec<usize> = if rows * cols < 1 << 16 {
        (0..rows).map(row_len).collect()
    } else {
        use rayon::prelude::*;
        (0..rows)
            .into_par_iter()
            .with_min_len(1 << 12)
            .map(row_len)
            .collect()
    };
    let mut indptr = Vec::with_capacity(rows + 1);
    indptr.push(0);
    for l in lens {
        indptr.push(indptr[indptr.len() - 1] + l);
    }
    let nnz = indptr[rows];
    // groups of rows of about 2^14 entries (at least one row)
    let group = ((1usize << 14) * rows / nnz.max(1)).clamp(1, rows.max(1));
    let bounds: Vec<usize> = (0..rows).step_by(group).chain([rows]).collect();
    let starts: Vec<usize> = bounds.iter().map(|&i| indptr[i]).collect();
    let (indices, data) = crate::matrix::par_build2(&starts, |g, sink| {
        for i in bounds[g]..bounds[g + 1] {
            for (p, &c0) in parts.iter().zip(&offsets) {
                match p {
                    Matrix::Dense(d) => {
                        for (j, &v) in d.row(i).iter().enumerate() {
                            if v != 0.0 {
                                sink.push(idx(c0 + j), v);
                            }
                        }
                    }
                    Matrix::Sparse(s) => {
                        let r = s.outer_view(i).expect("row in range");
                        for (&j, &v) in r.indices().iter().zip(r.data()) {
                            sink.push(idx(c0 + col(j)), v);
                        }
                    }
                }
            }
        }
    });
    Ok(Matrix::from_csr(crate::matrix::csr_from_valid(
        (rows, cols),
        indptr,
        indices,
        data,
    )))
}

/// `rbind(A, B, ...)`: the matrices stacked. Error: different column counts.
pub fn rbind(parts: &[&Matrix]) -> Result<Matrix, RuntimeError> {
    let Some(first) = parts.first() else {
        return Err(RuntimeError::invalid("rbind", "needs at least one matrix"));
    };
    let cols = first.cols();
    if let Some(p) = parts.iter().find(|p| p.cols() != cols) {
        return Err(RuntimeError::invalid(
            "rbind",
            format!(
                "all matrices must have the same number of columns, found {cols} and {}",
                p.cols()
            ),
        ));
    }
    let rows: usize = parts.iter().map(|p| p.rows()).sum();
    if parts.iter().all(|p| !p.is_sparse()) {
        let mut v = Vec::with_capacity(rows * cols);
        for p in parts {
            if let Matrix::Dense(d) = p {
                v.extend_from_slice(d.as_slice().expect("standard layout"));
            }
        }
        return Ok(dense_of(rows, cols, v));
    }
    let mut indptr = Vec::with_capacity(rows + 1);
    let mut indices = Vec::new();
    let mut data = Vec::new();
    let mut buf = Vec::new();
    indptr.push(0);
    for p in parts {
        for i in 0..p.rows() {
            row_entries(p, i, &mut buf);
            for &(j, v) in &buf {
                indices.push(idx(j));
                data.push(v);
            }
            indptr.push(indices.len());
        }
    }
    Ok(Matrix::from_csr(Csr::new(
        (rows, cols),
        indptr,
        indices,
        data,
    )))
}

/// `diag(X)`: a column vector becomes the diagonal matrix (sparse), a square matrix gives its
/// diagonal as a column. Error: any other shape.
pub fn diag(x: &Matrix) -> Result<Matrix, RuntimeError> {
    let (m, n) = x.shape();
    if n == 1 {
        let entries: Vec<(usize, usize, f64)> = (0..m)
            .map(|i| (i, i, x.get(i, 0)))
            .filter(|e| e.2 != 0.0)
            .collect();
        return Ok(Matrix::from_triplets(m, m, &entries));
    }
    if m != n {
        return Err(RuntimeError::invalid(
            "diag",
            format!("the input must be a column vector or a square matrix, found {m}x{n}"),
        ));
    }
    Ok(dense_of(n, 1, (0..n).map(|i| x.get(i, i)).collect()))
}

/// `rev(X)`: the rows in reverse order.
pub fn rev(x: &Matrix) -> Matrix {
    let m = x.rows();
    permute_rows(x, &(0..m).rev().collect::<Vec<_>>())
}

/// `roll(X, shift)`: the rows moved down by `shift` (up when negative), cyclically: row `i`
/// of the result is row `(i - shift) mod m` of `X`.
pub fn roll(x: &Matrix, shift: i64) -> Matrix {
    let m = x.rows();
    if m == 0 {
        return x.clone();
    }
    let s = shift.rem_euclid(m as i64) as usize;
    permute_rows(x, &(0..m).map(|i| (i + m - s) % m).collect::<Vec<_>>())
}

/// The matrix made of the given rows of `x`, in that order (sparse stays sparse).
fn permute_rows(x: &Matrix, rows: &[usize]) -> Matrix {
    let n = x.cols();
    match x {
        Matrix::Dense(d) => {
            let mut v = Vec::with_capacity(rows.len() * n);
            for &i in rows {
                v.extend(d.row(i).iter());
            }
            dense_of(rows.len(), n, v)
        }
        Matrix::Sparse(s) => Matrix::from_csr(select_rows(s, rows)),
    }
}

/// The CSR matrix made of the given rows of `s`, in that order.
fn select_rows(s: &Csr, rows: &[usize]) -> Csr {
    let mut indptr = Vec::with_capacity(rows.len() + 1);
    let mut indices = Vec::new();
    let mut data = Vec::new();
    indptr.push(0);
    for &i in rows {
        let row = s.outer_view(i).expect("row in range");
        indices.extend_from_slice(row.indices());
        data.extend_from_slice(row.data());
        indptr.push(indices.len());
    }
    Csr::new((rows.len(), s.cols()), indptr, indices, data)
}

/// `lower.tri(target=X, diag=, values=)` (`lower`) or `upper.tri(...)`: see the module doc.
pub fn triangle(x: &Matrix, lower: bool, diag: bool, values: bool) -> Matrix {
    let (m, n) = x.shape();
    if x.nnz() == 0 {
        return Matrix::filled(m, n, 0.0);
    }
    let range = |i: usize| {
        let beg = if lower {
            0
        } else if diag {
            i
        } else {
            i + 1
        };
        let end = if lower {
            if diag {
                i + 1
            } else {
                i
            }
        } else {
            n
        };
        (beg.min(n), end.min(n))
    };
    let mut entries = Vec::new();
    let mut buf = Vec::new();
    for i in 0..m {
        let (b, e) = range(i);
        if values {
            row_entries(x, i, &mut buf);
            entries.extend(
                buf.iter()
                    .filter(|(j, _)| (b..e).contains(j))
                    .map(|&(j, v)| (i, j, v)),
            );
        } else {
            entries.extend((b..e).map(|j| (i, j, 1.0)));
        }
    }
    Matrix::from_triplets(m, n, &entries)
}

/// `replace(target=X, pattern=p, replacement=r)`: every cell equal to `p` (NaN matches NaN)
/// becomes `r`. A zero pattern also replaces the implicit zeros of a sparse input.
pub fn replace(x: &Matrix, pattern: f64, replacement: f64) -> Matrix {
    let hit = |v: f64| v == pattern || (pattern.is_nan() && v.is_nan());
    if !pattern.is_nan() && replacement == pattern {
        return x.clone();
    }
    match x {
        Matrix::Sparse(s) if pattern != 0.0 => {
            let mut s = s.clone();
            for v in s.data_mut() {
                if hit(*v) {
                    *v = replacement;
                }
            }
            Matrix::from_csr(s)
        }
        _ => {
            let mut d = x.to_dense();
            d.mapv_inplace(|v| if hit(v) { replacement } else { v });
            Matrix::from_dense(d)
        }
    }
}

/// Which rows or columns `removeEmpty` works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Margin {
    /// `margin="rows"`
    Rows,
    /// `margin="cols"`
    Cols,
}

impl Margin {
    /// Parses `"rows"` or `"cols"`.
    pub fn parse(s: &str) -> Result<Margin, RuntimeError> {
        match s {
            "rows" => Ok(Margin::Rows),
            "cols" => Ok(Margin::Cols),
            _ => Err(RuntimeError::invalid(
                "removeEmpty",
                format!("margin must be \"rows\" or \"cols\", found \"{s}\""),
            )),
        }
    }
}

/// `removeEmpty(target=X, margin=, select=, empty.return=)`: see the module doc. Error: a
/// `select` with fewer cells than `X` has rows (columns), unless it selects as many cells as
/// that (then `X` is returned as it is).
pub fn remove_empty(
    x: &Matrix,
    margin: Margin,
    select: Option<&Matrix>,
    empty_return: bool,
) -> Result<Matrix, RuntimeError> {
    let (m, n) = x.shape();
    let len = if margin == Margin::Rows { m } else { n };
    // non-zero as SystemDS counts them: -0.0 is zero, NaN is not
    let nonzero = |v: f64| v != 0.0;
    let x_empty = match x {
        Matrix::Dense(d) => !d.iter().any(|&v| nonzero(v)),
        Matrix::Sparse(s) => !s.data().iter().any(|&v| nonzero(v)),
    };
    let mut out_len = None; // the selected count, when select decides it
    let keep: Vec<bool> = match select {
        Some(s) => {
            let selected = match s {
                Matrix::Dense(d) => d.iter().filter(|&&v| nonzero(v)).count(),
                Matrix::Sparse(c) => c.data().iter().filter(|&&v| nonzero(v)).count(),
            };
            if selected == len {
                // SystemDS's select-all shortcut, whatever the shape of select
                return Ok(x.clone());
            }
            // SystemDS reads select's cells row by row, the first `len` of them deciding,
            // and makes as many rows as select has non-zeros (the ones beyond the first `m`
            // cells give zero rows); columns count only the first `n` cells
            if margin == Margin::Rows {
                out_len = Some(selected);
                if x_empty {
                    return Ok(Matrix::filled(
                        selected.max(usize::from(empty_return)),
                        n,
                        0.0,
                    ));
                }
            }
            if s.cells() < len {
                return Err(RuntimeError::invalid(
                    "removeEmpty",
                    format!(
                        "select ({}x{}) has fewer cells than the {len} {} of the target",
                        s.rows(),
                        s.cols(),
                        if margin == Margin::Rows {
                            "rows"
                        } else {
                            "columns"
                        }
                    ),
                ));
            }
            let sc = s.cols();
            (0..len).map(|k| nonzero(s.get(k / sc, k % sc))).collect()
        }
        None => {
            let mut keep = vec![false; len];
            match x {
                Matrix::Dense(d) => {
                    for ((i, j), &v) in d.indexed_iter() {
                        if v != 0.0 {
                            keep[if margin == Margin::Rows { i } else { j }] = true;
                        }
                    }
                }
                Matrix::Sparse(s) => {
                    for (i, r) in s.outer_iterator().enumerate() {
                        for (j, &v) in r.iter() {
                            if v != 0.0 {
                                keep[if margin == Margin::Rows { i } else { j }] = true;
                            }
                        }
                    }
                }
            }
            keep
        }
    };
    let kept: Vec<usize> = (0..len).filter(|&k| keep[k]).collect();
    let out_len = out_len.unwrap_or(kept.len()).max(usize::from(empty_return));
    if kept.is_empty() || (select.is_some() && x_empty) {
        return Ok(if margin == Margin::Rows {
            Matrix::filled(out_len, n, 0.0)
        } else {
            Matrix::filled(m, out_len, 0.0)
        });
    }
    Ok(match (margin, x) {
        (Margin::Rows, _) if out_len > kept.len() => {
            let mut entries = Vec::new();
            let mut buf = Vec::new();
            for (k, &i) in kept.iter().enumerate() {
                row_entries(x, i, &mut buf);
                entries.extend(buf.iter().map(|&(j, v)| (k, j, v)));
            }
            Matrix::from_triplets(out_len, n, &entries)
        }
        (Margin::Rows, Matrix::Sparse(s)) => Matrix::from_csr(select_rows(s, &kept)),
        (Margin::Rows, Matrix::Dense(d)) => {
            let mut v = Vec::with_capacity(kept.len() * n);
            for &i in &kept {
                v.extend(d.row(i).iter());
            }
            dense_of(kept.len(), n, v)
        }
        (Margin::Cols, _) => {
            let mut newcol = vec![usize::MAX; n];
            for (k, &j) in kept.iter().enumerate() {
                newcol[j] = k;
            }
            let mut entries = Vec::new();
            let mut buf = Vec::new();
            for i in 0..m {
                row_entries(x, i, &mut buf);
                entries.extend(
                    buf.iter()
                        .filter(|(j, _)| newcol[*j] != usize::MAX)
                        .map(|&(j, v)| (i, newcol[j], v)),
                );
            }
            Matrix::from_triplets(m, kept.len(), &entries)
        }
    })
}

/// `order(target=X, by=, decreasing=, index.return=)`: the rows of `X` sorted by the columns
/// `by` (1-based; the first decides, the next break ties), or with `index_return` the
/// `m x 1` column of the original 1-based row numbers in sorted order. Sorted as SystemDS's
/// `LibMatrixReorg.sort` sorts (see the module doc). Error: an empty `by`, more `by` columns
/// than `X` has, or one outside `1..=ncol`.
pub fn order(
    x: &Matrix,
    by: &[usize],
    decreasing: bool,
    index_return: bool,
) -> Result<Matrix, RuntimeError> {
    let (m, n) = x.shape();
    if by.is_empty() || by.len() > n || by.iter().any(|&b| b == 0 || b > n) {
        return Err(RuntimeError::invalid(
            "order",
            format!("invalid by column(s) {by:?} for a {m}x{n} matrix"),
        ));
    }
    if !index_return {
        let empty = match x {
            Matrix::Dense(d) => d.iter().all(|&v| v == 0.0),
            Matrix::Sparse(s) => s.data().iter().all(|&v| v == 0.0),
        };
        if empty {
            // SystemDS returns its empty block (no cell != 0, so -0.0 cells too): +0.0 cells
            return Ok(Matrix::filled(m, n, 0.0));
        }
        if let (Matrix::Dense(d), 1) = (x, n) {
            // SystemDS sorts a dense column's values as `Arrays.sort` does (-0.0 before 0.0,
            // NaN last) and reverses them for `decreasing`
            let mut v: Vec<f64> = d.iter().copied().collect();
            v.sort_by(|a, b| java_double_cmp(*a, *b));
            if decreasing {
                v.reverse();
            }
            return Ok(dense_of(m, 1, v));
        }
    }
    let idx = sort_row_indexes(x, by, decreasing);
    if index_return {
        return Ok(dense_of(
            m,
            1,
            idx.iter().map(|&i| (i + 1) as f64).collect(),
        ));
    }
    Ok(match x {
        Matrix::Sparse(s) => Matrix::from_csr(select_rows(s, &idx)),
        Matrix::Dense(d) => {
            let mut v = Vec::with_capacity(m * n);
            for &i in &idx {
                v.extend(d.row(i).iter());
            }
            dense_of(m, n, v)
        }
    })
}

/// The row order of `order` (0-based), computed in SystemDS's steps: an (unstable)
/// three-way quicksort of the first `by` column's values with the row numbers alongside
/// ([`sort_by_value`]), each run of equal values (by `==`) sorted the same way by the next
/// column, the whole reversed for `decreasing`, then every run that ties on all `by` columns
/// put back into increasing row order. Without NaN keys this is the stable sort; NaN compares
/// false with everything, so where NaNs land is what the quicksort's comparisons make of them,
/// as in SystemDS run on one thread (on several, which SystemDS uses from 1024 rows, it
/// sorts blocks and merges them, and NaNs can land elsewhere).
fn sort_row_indexes(x: &Matrix, by: &[usize], decreasing: bool) -> Vec<usize> {
    let m = x.shape().0;
    let mut vix: Vec<usize> = (0..m).collect();
    let mut values: Vec<f64> = (0..m).map(|i| x.get(i, by[0] - 1)).collect();
    sort_by_value(&mut values, &mut vix);
    if by.len() > 1 {
        sort_by_secondary(0, m, &mut values, &mut vix, x, by, 1);
    }
    if decreasing {
        vix.reverse();
        values.reverse();
    }
    sort_indexes_stable(0, m, &mut values, &mut vix, x, by, 1);
    vix
}

/// The end of the run of values equal (`==`) to `values[i]` that starts at `i`, within `..ru`.
fn run_end(values: &[f64], i: usize, ru: usize) -> usize {
    let mut e = i + 1;
    while e < ru && values[e] == values[i] {
        e += 1;
    }
    e
}

/// Sorts each run of equal values in `rl..ru` by the column `by[off]`, recursively.
fn sort_by_secondary(
    rl: usize,
    ru: usize,
    values: &mut [f64],
    vix: &mut [usize],
    x: &Matrix,
    by: &[usize],
    off: usize,
) {
    for_each_tie(rl, ru, values, |i, e, values| {
        let old = values[i];
        for j in i..e {
            values[j] = x.get(vix[j], by[off] - 1);
        }
        sort_by_value(&mut values[i..e], &mut vix[i..e]);
        if off + 1 < by.len() {
            sort_by_secondary(i, e, values, vix, x, by, off + 1);
        }
        values[i..e].fill(old);
    });
}

/// Calls `f(i, e, values)` for each run `i..e` of at least two equal (`==`) values in
/// `rl..ru`, left to right; a run's end is found before `f` runs, so `f` may rewrite it.
fn for_each_tie(
    rl: usize,
    ru: usize,
    values: &mut [f64],
    mut f: impl FnMut(usize, usize, &mut [f64]),
) {
    let mut i = rl;
    while i + 1 < ru {
        let e = run_end(values, i, ru);
        if e - i > 1 {
            f(i, e, values);
        }
        i = e;
    }
}

/// Puts every run that ties on all `by` columns into increasing row order.
fn sort_indexes_stable(
    rl: usize,
    ru: usize,
    values: &mut [f64],
    vix: &mut [usize],
    x: &Matrix,
    by: &[usize],
    off: usize,
) {
    for_each_tie(rl, ru, values, |i, e, values| {
        if off < by.len() {
            for j in i..e {
                values[j] = x.get(vix[j], by[off] - 1);
            }
            sort_indexes_stable(i, e, values, vix, x, by, off + 1);
        } else {
            vix[i..e].sort_unstable();
        }
    });
}

/// Sorts `values` increasingly, permuting `ix` alongside: Bentley and McIlroy's three-way
/// quicksort ("Engineering a Sort Function", 1993; insertion sort below 7 elements, the
/// median of three, or of three medians of three above 40, as pivot), with IEEE comparisons,
/// the sort SystemDS's `SortUtils.sortByValue` runs, so that keys its comparisons cannot
/// order (NaN) end where they end there.
pub fn sort_by_value(values: &mut [f64], ix: &mut [usize]) {
    debug_assert_eq!(values.len(), ix.len());
    let len = values.len();
    let swap = |values: &mut [f64], ix: &mut [usize], p: usize, q: usize| {
        values.swap(p, q);
        ix.swap(p, q);
    };
    if len < 7 {
        for i in 1..len {
            let mut j = i;
            while j > 0 && values[j - 1] > values[j] {
                swap(values, ix, j, j - 1);
                j -= 1;
            }
        }
        return;
    }
    let med3 = |v: &[f64], a: usize, b: usize, c: usize| {
        let (x, y, z) = (v[a], v[b], v[c]);
        if x < y {
            if y < z {
                b
            } else if x < z {
                c
            } else {
                a
            }
        } else if y > z {
            b
        } else if x > z {
            c
        } else {
            a
        }
    };
    let mut middle = len / 2;
    if len > 7 {
        let (mut bottom, mut top) = (0, len - 1);
        if len > 40 {
            let s = len / 8;
            bottom = med3(values, bottom, bottom + s, bottom + 2 * s);
            middle = med3(values, middle - s, middle, middle + s);
            top = med3(values, top - 2 * s, top - s, top);
        }
        middle = med3(values, bottom, middle, top);
    }
    let pivot = values[middle];
    // a..b: equal to the pivot moved to the front, then less; c..d the mirror image
    let (mut a, mut b) = (0usize, 0usize);
    let (mut c, mut d) = (len as isize - 1, len as isize - 1);
    loop {
        while b as isize <= c && values[b] <= pivot {
            if values[b] == pivot {
                swap(values, ix, a, b);
                a += 1;
            }
            b += 1;
        }
        while c >= b as isize && values[c as usize] >= pivot {
            if values[c as usize] == pivot {
                swap(values, ix, c as usize, d as usize);
                d -= 1;
            }
            c -= 1;
        }
        if b as isize > c {
            break;
        }
        swap(values, ix, b, c as usize);
        b += 1;
        c -= 1;
    }
    // move the equal runs from both ends into the middle
    let s = a.min(b - a);
    for k in 0..s {
        swap(values, ix, k, b - s + k);
    }
    // c >= -1 and c <= d <= len - 1
    let greater = (d - c) as usize;
    let s = greater.min((len as isize - 1 - d) as usize);
    for k in 0..s {
        swap(values, ix, b + k, len - s + k);
    }
    let less = b - a;
    if less > 0 {
        sort_by_value(&mut values[..less], &mut ix[..less]);
    }
    if greater > 0 {
        sort_by_value(&mut values[len - greater..], &mut ix[len - greater..]);
    }
}

/// Java's `Double.compare` order as `Arrays.sort(double[])` applies it: -0.0 before 0.0, NaN
/// after every number.
fn java_double_cmp(a: f64, b: f64) -> std::cmp::Ordering {
    match (a.is_nan(), b.is_nan()) {
        (false, false) => a.total_cmp(&b),
        (a, b) => a.cmp(&b),
    }
}

/// Whether every cell of `x` is zero (used by callers choosing a sparse result).
pub fn is_all_zero(x: &Matrix) -> bool {
    match x {
        Matrix::Dense(d) => count_nnz(d.as_slice().expect("standard layout")) == 0,
        Matrix::Sparse(s) => s.nnz() == 0,
    }
}

/// Which cells `unique` takes its distinct values from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UniqueDir {
    /// all cells: an `k x 1` column (`dir="rc"`, the default)
    All,
    /// each row separately: `m x kmax`, shorter rows padded with zeros (`dir="r"`)
    Row,
    /// each column separately: `kmax x n`, padded with zeros (`dir="c"`)
    Col,
}

/// `unique(X, dir)`: the distinct values (0.0 and -0.0 are distinct, NaN is one value), in
/// the iteration order of the `java.util.HashSet<Double>` SystemDS collects them in, so that
/// the result matches SystemDS's cell for cell.
pub fn unique(x: &Matrix, dir: UniqueDir) -> Matrix {
    let (m, n) = x.shape();
    match dir {
        UniqueDir::All => {
            let mut vals = Vec::with_capacity(m * n);
            for i in 0..m {
                for j in 0..n {
                    vals.push(x.get(i, j));
                }
            }
            let u = java_hash_set_order(&vals);
            Matrix::from_dense(Array2::from_shape_vec((u.len(), 1), u).expect("shape"))
        }
        UniqueDir::Row | UniqueDir::Col => {
            let (outer, inner) = if dir == UniqueDir::Row {
                (m, n)
            } else {
                (n, m)
            };
            let lines: Vec<Vec<f64>> = (0..outer)
                .map(|a| {
                    let v: Vec<f64> = (0..inner)
                        .map(|b| {
                            if dir == UniqueDir::Row {
                                x.get(a, b)
                            } else {
                                x.get(b, a)
                            }
                        })
                        .collect();
                    java_hash_set_order(&v)
                })
                .collect();
            let width = lines.iter().map(|l| l.len()).max().unwrap_or(0);
            let shape = if dir == UniqueDir::Row {
                (outer, width)
            } else {
                (width, outer)
            };
            let mut out = Array2::zeros(shape);
            for (a, l) in lines.iter().enumerate() {
                for (b, &v) in l.iter().enumerate() {
                    if dir == UniqueDir::Row {
                        out[[a, b]] = v;
                    } else {
                        out[[b, a]] = v;
                    }
                }
            }
            Matrix::from_dense(out)
        }
    }
}

/// SystemDS's `union_distinct(A, B)` (what it runs for `unique(rbind(A, B))`): the rows of
/// `A` then `B` that are not equal to an earlier row, in that order, as a dense matrix. Rows
/// are equal when every cell is, cells told apart as `java.lang.Double.equals` does (every
/// NaN one value, `0.0` and `-0.0` two). `A` and `B` have as many columns (the caller checks).
pub fn union_distinct(a: &Matrix, b: &Matrix) -> Matrix {
    let n = a.cols();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut rows = 0;
    for m in [a, b] {
        let d = m.to_dense();
        for row in d.rows() {
            let key: Vec<u64> = row.iter().map(|&v| java_double_key(v)).collect();
            if seen.insert(key) {
                out.extend(row.iter().copied());
                rows += 1;
            }
        }
    }
    Matrix::from_dense(Array2::from_shape_vec((rows, n), out).expect("shape"))
}

/// The key under which `java.lang.Double.equals` (SystemDS's `HashSet<Double>`) tells values
/// apart: every NaN is one value, `0.0` and `-0.0` are two.
fn java_double_key(v: f64) -> u64 {
    if v.is_nan() {
        f64::NAN.to_bits()
    } else {
        v.to_bits()
    }
}

/// The 32 words of SystemDS's linear hash (`org.apache.sysds.utils.Hash`).
const LINEAR_HASH_WORDS: [u32; 32] = [
    0xFFFFFFFF, 0xB7825CBC, 0x10FA23F2, 0xD54E1532, 0x7590E53C, 0xECE6F631, 0x8954BF60, 0x5BE38B88,
    0xCA1D3AC0, 0xB2726F8E, 0xBADE7E7A, 0xCACD1184, 0xFB32BDAD, 0x2936C9D7, 0xB5B88D37, 0xD272D353,
    0xE139A063, 0xDACF6B87, 0x3568D521, 0x75C619EA, 0x7C2B8CBD, 0x012C3C7F, 0x0A621C37, 0x77274A12,
    0x731D379A, 0xE45E0D3B, 0xEAB4AE13, 0x10C440C7, 0x50CF2899, 0xD865BD46, 0xAABDF34F, 0x218FA0C3,
];

/// SystemDS's `Hash.hash(double, LinearHash)`: the long bits folded to an int (`v ^ v >>> 32`),
/// then bit `i` (from the top) is the parity of the int and the i-th word.
fn linear_hash(v: f64) -> i32 {
    let b = v.to_bits();
    let x = (b ^ (b >> 32)) as u32;
    LINEAR_HASH_WORDS
        .iter()
        .fold(0u32, |res, &w| (res << 1) | ((w & x).count_ones() & 1)) as i32
}

/// SystemDS's `SmallestPriorityQueue`: the `k` smallest distinct values added (distinct as
/// `Double.equals`; once full, a value enters only if `<` the largest kept, so NaN never does).
struct Smallest {
    k: usize,
    /// kept values by Java's `Double.compare` order (NaN, canonical, above everything)
    kept: std::collections::BTreeSet<(bool, JavaOrd)>,
}

/// An f64 ordered as `Double.compare` orders non-NaN values (`-0.0 < 0.0`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct JavaOrd(i64);

impl JavaOrd {
    fn of(v: f64) -> (bool, JavaOrd) {
        if v.is_nan() {
            return (true, JavaOrd(0));
        }
        // the IEEE bits as a signed key whose integer order is the float order
        let b = v.to_bits() as i64;
        (false, JavaOrd(if b < 0 { b ^ i64::MAX } else { b }))
    }

    fn value(key: (bool, JavaOrd)) -> f64 {
        if key.0 {
            return f64::NAN;
        }
        let b = key.1 .0;
        f64::from_bits((if b < 0 { b ^ i64::MAX } else { b }) as u64)
    }
}

impl Smallest {
    fn new(k: usize) -> Smallest {
        Smallest {
            k,
            kept: std::collections::BTreeSet::new(),
        }
    }

    fn add(&mut self, v: f64) {
        let key = JavaOrd::of(v);
        if self.kept.contains(&key) {
            return;
        }
        if self.kept.len() < self.k {
            self.kept.insert(key);
        } else if let Some(&max) = self.kept.last() {
            if v < JavaOrd::value(max) {
                self.kept.insert(key);
                self.kept.pop_last();
            }
        }
    }

    /// SystemDS's KMV estimate: the number kept when fewer than `k`, else
    /// `round(min((k - 1) / (kth / m), d))` with `kth` the largest kept.
    fn estimate(&self, m: i32, d: i64) -> f64 {
        if self.kept.len() < self.k {
            return self.kept.len() as f64;
        }
        let kth = JavaOrd::value(*self.kept.last().expect("k > 0 values kept"));
        let u_k = kth / m as f64;
        let est = (self.k as f64 - 1.0) / u_k;
        // Math.round: floor(x + 1/2), as a long
        (est.min(d as f64) + 0.5).floor() as i64 as f64
    }
}

/// `countDistinctApprox(X, dir, type="KMV")`, `rowCountDistinctApprox`,
/// `colCountDistinctApprox`, as SystemDS 3.4 computes them on one machine (deterministic):
///
/// * an all-zero or single-cell input, or fewer than 1024 non-zeros on average per counted
///   line (all cells for `"rc"`, a row for `"r"`, a column for `"c"`): the exact
///   [`count_distinct`];
/// * otherwise SystemDS's K-minimum-values sketch, with `d` = that average + 1 (for `"rc"`,
///   the non-zeros + 1), `k = min(d, 64)`, `m = min(d^2, 2^31 - 1)`. For `"rc"` each stored
///   value is hashed (SystemDS's linear hash, `|h| mod (m - 1) + 1`): every cell of an input
///   SystemDS stores dense, only the non-zeros of one it stores sparse (decided by
///   [`crate::matrix::prefers_sparse`] from the shape and non-zeros, as SystemDS decides
///   after an operation). For `"r"` and `"c"` SystemDS keeps the line's smallest *values*
///   themselves, unhashed, every cell counted: so does spores. The estimate is the number
///   kept when fewer than `k`, else `round(min((k - 1) m / kth, d))` with `kth` the k-th
///   smallest kept (negative values make it negative, as in SystemDS).
pub fn count_distinct_approx(x: &Matrix, dir: UniqueDir) -> Matrix {
    let (rows, cols) = x.shape();
    let nnz = x.nnz() as i64;
    let avg = match dir {
        UniqueDir::All => nnz,
        UniqueDir::Row => nnz / rows.max(1) as i64,
        UniqueDir::Col => nnz / cols.max(1) as i64,
    };
    if rows * cols <= 1 || nnz == 0 || avg < 1024 {
        return count_distinct(x, dir);
    }
    let d = avg + 1;
    let m = (d * d).min(i32::MAX as i64) as i32;
    let k = d.min(64) as usize;
    match dir {
        UniqueDir::All => {
            let mut spq = Smallest::new(k);
            let mut add = |v: f64| {
                let h = linear_hash(v);
                spq.add((h.wrapping_abs() % (m - 1) + 1) as f64);
            };
            // SystemDS hashes the values its block stores: every cell of a dense block, the
            // non-zeros of a sparse one (whatever spores's storage of the same values)
            let sparse = crate::matrix::prefers_sparse(rows, cols, nnz as usize);
            match x {
                Matrix::Dense(a) => a
                    .iter()
                    .filter(|&&v| !sparse || v != 0.0)
                    .for_each(|&v| add(v)),
                Matrix::Sparse(s) => {
                    s.data().iter().filter(|&&v| v != 0.0).for_each(|&v| add(v));
                    if !sparse && (nnz as usize) < rows * cols {
                        add(0.0);
                    }
                }
            }
            Matrix::from_dense(Array2::from_elem((1, 1), spq.estimate(m, d)))
        }
        UniqueDir::Row | UniqueDir::Col => {
            let lines = if dir == UniqueDir::Row { rows } else { cols };
            let len = if dir == UniqueDir::Row { cols } else { rows };
            let est: Vec<f64> = (0..lines)
                .map(|l| {
                    let mut spq = Smallest::new(k);
                    for t in 0..len {
                        let (i, j) = if dir == UniqueDir::Row {
                            (l, t)
                        } else {
                            (t, l)
                        };
                        spq.add(x.get(i, j));
                    }
                    spq.estimate(m, d)
                })
                .collect();
            let shape = if dir == UniqueDir::Row {
                (lines, 1)
            } else {
                (1, lines)
            };
            Matrix::from_dense(Array2::from_shape_vec(shape, est).expect("one per line"))
        }
    }
}

/// `countDistinct(X, dir)`, `rowCountDistinct(X)`, `colCountDistinct(X)`: the number of
/// distinct values of all cells (a `1 x 1` matrix, `dir="rc"`), of each row (`m x 1`,
/// `dir="r"`) or of each column (`1 x n`, `dir="c"`), values told apart as
/// `java.lang.Double.equals` does (every NaN one value, `0.0` and `-0.0` two). Every cell
/// counts, zeros included, whatever the storage: the count SystemDS gives for a dense input
/// (for a sparse one SystemDS counts only the stored values of a row or column, and for an
/// all-zero input it returns a `1 x 1` matrix of 1 in every direction). A line without cells
/// (a `0`-column row) counts 0.
pub fn count_distinct(x: &Matrix, dir: UniqueDir) -> Matrix {
    use std::collections::HashSet;
    let (m, n) = x.shape();
    // the distinct stored values of each line and how many cells it stores: the implicit
    // zeros add `+0.0` when a line stores fewer cells than it has
    let lines = match dir {
        UniqueDir::All => 1,
        UniqueDir::Row => m,
        UniqueDir::Col => n,
    };
    let len = match dir {
        UniqueDir::All => m * n,
        UniqueDir::Row => n,
        UniqueDir::Col => m,
    };
    let mut sets: Vec<HashSet<u64>> = vec![HashSet::new(); lines];
    let mut stored = vec![0usize; lines];
    let line = |i: usize, j: usize| match dir {
        UniqueDir::All => 0,
        UniqueDir::Row => i,
        UniqueDir::Col => j,
    };
    match x {
        Matrix::Dense(d) => {
            for ((i, j), &v) in d.indexed_iter() {
                let l = line(i, j);
                sets[l].insert(java_double_key(v));
                stored[l] += 1;
            }
        }
        Matrix::Sparse(s) => {
            for (i, r) in s.outer_iterator().enumerate() {
                for (j, &v) in r.iter() {
                    let l = line(i, j);
                    sets[l].insert(java_double_key(v));
                    stored[l] += 1;
                }
            }
        }
    }
    let counts: Vec<f64> = sets
        .iter()
        .zip(&stored)
        .map(|(set, &k)| {
            let zero = k < len && !set.contains(&0);
            (set.len() + usize::from(zero)) as f64
        })
        .collect();
    match dir {
        UniqueDir::All => dense_of(1, 1, counts),
        UniqueDir::Row => dense_of(m, 1, counts),
        UniqueDir::Col => dense_of(1, n, counts),
    }
}

/// The distinct values of `vals` in the order a `java.util.HashSet<Double>` iterates them
/// after inserting `vals` in order: a power-of-two table (16 buckets, doubled whenever the
/// size exceeds 3/4 of it), bucket `(h ^ (h >>> 16)) & (cap - 1)` of `Double.hashCode`
/// `h = bits ^ (bits >>> 32)`, buckets in index order, each in insertion order (resizing
/// keeps the relative order within a bucket). Buckets of 8 or more colliding values, which
/// Java turns into trees, are not modelled.
fn java_hash_set_order(vals: &[f64]) -> Vec<f64> {
    let key = |v: f64| {
        if v.is_nan() {
            f64::NAN.to_bits()
        } else {
            v.to_bits()
        }
    };
    let mut seen = std::collections::HashSet::new();
    let mut distinct = Vec::new();
    for &v in vals {
        if seen.insert(key(v)) {
            distinct.push(v);
        }
    }
    let mut cap = 16usize;
    while distinct.len() > cap * 3 / 4 {
        cap *= 2;
    }
    let bucket = |v: f64| {
        let bits = key(v);
        let h = (bits ^ (bits >> 32)) as u32;
        ((h ^ (h >> 16)) as usize) & (cap - 1)
    };
    let mut order: Vec<usize> = (0..distinct.len()).collect();
    order.sort_by_key(|&k| (bucket(distinct[k]), k));
    order.into_iter().map(|k| distinct[k]).collect()
}
