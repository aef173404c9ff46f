//! Aggregates: `sum`, `mean`, `min`, `max` over all cells, each row or each column.
//!
//! Sparse inputs are reduced over their non-zeros; `min`/`max` also count an implicit zero
//! whenever a row, column or the whole matrix has fewer stored values than cells.
//!
//! Sums and means are SystemDS's (`uak+`, `uark+`, `uack+`, `uamean`, ... of `LibMatrixAgg`):
//! Kahan-compensated ([`Kahan`]), over the stored values in row-major order, so that a
//! program gives SystemDS's bits and not only its values to rounding. A mean is SystemDS's
//! incremental one (`m += (x - m) / count`, compensated), the implicit zeros of a sparse line
//! counted first. Up to [`SEQ_CELLS`] values (below SystemDS's own threshold for parallel
//! aggregation) a sum runs sequentially in exactly SystemDS's order; above, it is cut into
//! fixed blocks (a function of the length only), each summed by eight compensated lanes,
//! and the blocks' results are added, compensated, in order: deterministic whatever the
//! thread count, and no longer SystemDS's bits (SystemDS's own split depends on its thread
//! count there).

use crate::matrix::{col, Matrix};
use crate::ops::{java_max, java_min, AggDir, AggOp};
use ndarray::{Array2, Axis};
use rayon::prelude::*;

/// A Kahan-compensated running sum, as SystemDS's `KahanObject` with `KahanPlus`: adding `v`
/// adds `v + corr` and keeps the rounding error in `corr`. Non-finite values are added
/// plainly (IEEE: `Inf + -Inf` and anything with NaN give NaN, where SystemDS keeps the last
/// infinity); finite sums are bit for bit SystemDS's.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Kahan {
    /// The running sum (starts at +0.0).
    pub sum: f64,
    /// The compensation: the part of the added values the sum lost to rounding.
    pub corr: f64,
}

impl Kahan {
    /// Adds one value.
    #[inline(always)]
    pub fn add(&mut self, v: f64) {
        if !(self.sum.is_finite() && v.is_finite()) {
            self.sum += v;
            self.corr = 0.0;
            return;
        }
        kahan_step(&mut self.sum, &mut self.corr, v);
    }

    /// Adds another compensated sum (SystemDS's `execute(in1, sum, corr)`).
    #[inline]
    pub fn merge(&mut self, o: Kahan) {
        if !(self.sum.is_finite() && o.sum.is_finite()) {
            self.sum += o.sum;
            self.corr = 0.0;
            return;
        }
        let c = o.sum + (self.corr + o.corr);
        let s = self.sum + c;
        self.corr = c - (s - self.sum);
        self.sum = s;
    }

    /// Adds the `count`-th value of an incremental mean (SystemDS's `Mean`: the running mean
    /// in `sum` moves by `(v - mean) / count`, compensated). Once the mean or `v` is not
    /// finite, the mean is added to plainly, so it stays what `sum / count` gives in IEEE
    /// arithmetic (an infinity stays, opposite infinities or a NaN give NaN), where the
    /// increment `Inf - Inf` would make every infinite mean NaN.
    #[inline(always)]
    pub fn add_mean(&mut self, v: f64, count: f64) {
        if !(self.sum.is_finite() && v.is_finite()) {
            self.sum += v;
            self.corr = 0.0;
            return;
        }
        let delta = (v - self.sum) / count;
        self.add(delta);
    }
}

/// One compensated addition of `v` to the running `sum` with its compensation `corr`
/// (SystemDS's `KahanPlus` step), without the non-finite test of [`Kahan::add`]: for loops
/// that sum several lanes side by side and redo a lane that ends non-finite.
#[inline(always)]
fn kahan_step(sum: &mut f64, corr: &mut f64, v: f64) {
    let y = v + *corr;
    let t = *sum + y;
    *corr = y - (t - *sum);
    *sum = t;
}

/// Number of values up to which a sum runs sequentially in SystemDS's order (SystemDS
/// aggregates on one thread below `PAR_NUMCELL_THRESHOLD1`, 256K cells).
pub const SEQ_CELLS: usize = 1 << 18;

/// Cells from which row aggregates of a dense matrix run their rows in parallel.
pub(crate) const PAR_ROWS: usize = 1 << 16;

/// Reduces over all cells, giving a scalar. `min`/`max` of an empty matrix are +/-Inf, `mean`
/// of an empty matrix is NaN.
pub fn aggregate_all(op: AggOp, x: &Matrix) -> f64 {
    let cells = x.cells();
    let (s, stored) = match x {
        Matrix::Dense(d) => (d.as_slice().expect("standard layout"), cells),
        Matrix::Sparse(sp) => (sp.data(), sp.nnz()),
    };
    let has_zero = stored < cells;
    match op {
        AggOp::Sum => par_sum(s),
        // past SystemDS's parallel threshold: the (parallel) sum over the count
        AggOp::Mean if cells > SEQ_CELLS => par_sum(s) / cells as f64,
        AggOp::Mean => mean_of(s.iter().copied(), cells - stored, cells),
        AggOp::Min => {
            let init = if has_zero { 0.0 } else { f64::INFINITY };
            s.iter().copied().fold(init, java_min)
        }
        AggOp::Max => {
            let init = if has_zero { 0.0 } else { f64::NEG_INFINITY };
            s.iter().copied().fold(init, java_max)
        }
    }
}

/// SystemDS's incremental mean of a line of `len` cells: `zeros` implicit zeros first (no
/// change to a mean of 0), then the stored values. NaN for an empty line.
fn mean_of(vals: impl Iterator<Item = f64>, zeros: usize, len: usize) -> f64 {
    if len == 0 {
        return f64::NAN;
    }
    let mut k = Kahan::default();
    let mut count = zeros as f64;
    for v in vals {
        count += 1.0;
        k.add_mean(v, count);
    }
    k.sum
}

/// Reduces each row (`AggDir::Row`, an `m x 1` result) or column (`AggDir::Col`, `1 x n`).
pub fn aggregate_dir(op: AggOp, dir: AggDir, x: &Matrix) -> Matrix {
    let (m, n) = x.shape();
    let out: Vec<f64> = match (dir, x) {
        (AggDir::All, _) => return Matrix::Dense(Array2::from_elem((1, 1), aggregate_all(op, x))),
        (AggDir::Row, Matrix::Dense(d)) if op == AggOp::Sum => row_sums(d),
        // each row in SystemDS's sequential order; rows in parallel on big inputs (the same
        // bits whatever the split)
        (AggDir::Row, Matrix::Dense(d)) if m * n >= PAR_ROWS => d
            .axis_iter(Axis(0))
            .into_par_iter()
            .map(|r| reduce(op, r.iter().copied(), n, n))
            .collect(),
        (AggDir::Row, Matrix::Dense(d)) => d
            .axis_iter(Axis(0))
            .map(|r| reduce(op, r.iter().copied(), n, n))
            .collect(),
        // rows in parallel on big inputs (each row in SystemDS's order: the same bits)
        (AggDir::Row, Matrix::Sparse(s)) => {
            let (ip, val) = (s.indptr(), s.data());
            let ip = ip.raw_storage();
            let row = |i: usize| {
                let r = &val[ip[i]..ip[i + 1]];
                reduce(op, r.iter().copied(), r.len(), n)
            };
            if s.nnz() >= PAR_ROWS {
                (0..m).into_par_iter().with_min_len(256).map(row).collect()
            } else {
                (0..m).map(row).collect()
            }
        }
        (AggDir::Col, Matrix::Dense(d)) => match op {
            AggOp::Sum => {
                // compensated sums of all columns at once, without the non-finite test (so
                // the loop vectorises across columns); a column whose sum ends non-finite is
                // summed again plainly, IEEE's answer
                let (mut sum, mut corr) = (vec![0.0f64; n], vec![0.0f64; n]);
                for r in d.axis_iter(Axis(0)) {
                    for ((s, c), &v) in sum.iter_mut().zip(corr.iter_mut()).zip(r.iter()) {
                        kahan_step(s, c, v);
                    }
                }
                for (j, s) in sum.iter_mut().enumerate() {
                    if !s.is_finite() {
                        *s = d.column(j).iter().fold(0.0, |a, b| a + b);
                    }
                }
                sum
            }
            AggOp::Mean => {
                let mut acc = vec![Kahan::default(); n];
                for (i, r) in d.axis_iter(Axis(0)).enumerate() {
                    let count = (i + 1) as f64;
                    for (a, &v) in acc.iter_mut().zip(r.iter()) {
                        if op == AggOp::Sum {
                            a.add(v)
                        } else {
                            a.add_mean(v, count)
                        }
                    }
                }
                if m == 0 && op == AggOp::Mean {
                    vec![f64::NAN; n]
                } else {
                    acc.iter().map(|a| a.sum).collect()
                }
            }
            _ => d
                .axis_iter(Axis(1))
                .map(|c| reduce(op, c.iter().copied(), m, m))
                .collect(),
        },
        // a column's values in row order are its entries in CSR order: sums read the
        // column indices and values as stored (no counts needed)
        (AggDir::Col, Matrix::Sparse(s)) if op == AggOp::Sum => {
            let mut acc = vec![Kahan::default(); n];
            for (&v, &j) in s.data().iter().zip(s.indices()) {
                acc[col(j)].add(v);
            }
            acc.iter().map(|a| a.sum).collect()
        }
        (AggDir::Col, Matrix::Sparse(s)) => {
            let mut cnt = vec![0usize; n];
            for &j in s.indices() {
                cnt[col(j)] += 1;
            }
            match op {
                AggOp::Sum | AggOp::Mean => {
                    let mut acc = vec![Kahan::default(); n];
                    // a mean's count starts at the column's implicit zeros
                    let mut count: Vec<f64> = cnt.iter().map(|&c| (m - c) as f64).collect();
                    // the entries in CSR order (rows in order)
                    for (&v, &j) in s.data().iter().zip(s.indices()) {
                        let j = col(j);
                        if op == AggOp::Sum {
                            acc[j].add(v)
                        } else {
                            count[j] += 1.0;
                            acc[j].add_mean(v, count[j]);
                        }
                    }
                    if m == 0 && op == AggOp::Mean {
                        vec![f64::NAN; n]
                    } else {
                        acc.iter().map(|a| a.sum).collect()
                    }
                }
                AggOp::Min | AggOp::Max => {
                    let min = op == AggOp::Min;
                    let f = if min { java_min } else { java_max };
                    let mut ext = vec![
                        if min {
                            f64::INFINITY
                        } else {
                            f64::NEG_INFINITY
                        };
                        n
                    ];
                    for (&v, &j) in s.data().iter().zip(s.indices()) {
                        ext[col(j)] = f(ext[col(j)], v);
                    }
                    ext.iter()
                        .zip(&cnt)
                        .map(|(&e, &c)| if c < m { f(e, 0.0) } else { e })
                        .collect()
                }
            }
        }
    };
    let shape = if dir == AggDir::Row { (m, 1) } else { (1, n) };
    Matrix::from_dense(Array2::from_shape_vec(shape, out).expect("aggregate shape"))
}

/// `rowSums(X op c)` for a CSR X and an element-wise `f(v) = v op c` with `f(0) == 0`, without
/// forming the mapped matrix: each row's mapped values in stored order, those that are not
/// `+0.0` compensated as [`Kahan::add`] adds them (rows in parallel on big inputs, the same bits
/// whatever the split). That is what [`aggregate_dir`] computes on the mapped matrix as the
/// element-wise kernel stores it (CSR, `+0.0` results dropped) when that matrix stays sparse;
/// `None` when it would be stored dense (the caller forms it, so the rowSums' order is the
/// dense one).
pub fn row_sums_mapped(x: &crate::matrix::Csr, f: impl Fn(f64) -> f64 + Sync) -> Option<Matrix> {
    let (m, n) = x.shape();
    let ip = x.indptr();
    let ip = ip.raw_storage();
    let data = x.data();
    let row = |i: usize| -> (f64, usize) {
        let mut k = Kahan::default();
        let mut stored = 0;
        for &v in &data[ip[i]..ip[i + 1]] {
            let y = f(v);
            if crate::matrix::is_stored(y) {
                k.add(y);
                stored += 1;
            }
        }
        (k.sum, stored)
    };
    let rows: Vec<(f64, usize)> = if x.nnz() < PAR_ROWS {
        (0..m).map(row).collect()
    } else {
        (0..m).into_par_iter().with_min_len(256).map(row).collect()
    };
    let nnz = rows.iter().map(|r| r.1).sum();
    if !crate::matrix::prefers_sparse(m, n, nnz) {
        return None;
    }
    let out = rows.into_iter().map(|r| r.0).collect();
    Some(Matrix::from_dense(
        Array2::from_shape_vec((m, 1), out).expect("m x 1"),
    ))
}

/// Rows summed together by [`row_sums`]: independent compensated sums side by side, so the
/// processor overlaps their chains of dependent additions.
pub(crate) const ROW_LANES: usize = 4;

/// `rowSums` of a dense matrix: each row compensated in column order, exactly as
/// [`Kahan::add`] sums it, with [`ROW_LANES`] rows at a time and without the non-finite test
/// in the loop; a row whose sum ends non-finite is summed again by [`Kahan::add`] (IEEE's
/// answer). Groups of rows run in parallel on big inputs: the same bits whatever the split.
fn row_sums(d: &ndarray::ArrayBase<impl ndarray::Data<Elem = f64>, ndarray::Ix2>) -> Vec<f64> {
    let (m, n) = d.dim();
    let d = d.as_standard_layout();
    let xs = d.as_slice().expect("standard layout");
    let group = |g: usize, out: &mut [f64]| {
        let r0 = g * ROW_LANES;
        row_group_sums(&xs[r0 * n..(r0 + out.len()) * n], n, out);
    };
    let mut out = vec![0.0; m];
    if m * n >= PAR_ROWS {
        out.par_chunks_mut(ROW_LANES)
            .enumerate()
            .for_each(|(g, o)| group(g, o));
    } else {
        out.chunks_mut(ROW_LANES)
            .enumerate()
            .for_each(|(g, o)| group(g, o));
    }
    out
}

/// The sums of up to [`ROW_LANES`] consecutive rows of `n` cells (`xs`, row-major, one row
/// per cell of `out`), each compensated in column order as [`Kahan::add`] sums it: the rows
/// side by side without the non-finite test, a row whose sum ends non-finite summed again by
/// [`Kahan::add`] (IEEE's answer). [`row_sums`]' unit of work, also the fused cell-wise
/// kernels' (`kernels::cellwise`).
pub(crate) fn row_group_sums(xs: &[f64], n: usize, out: &mut [f64]) {
    let rows = out.len();
    debug_assert!(rows <= ROW_LANES && xs.len() == rows * n);
    let (mut sum, mut corr) = ([0.0f64; ROW_LANES], [0.0f64; ROW_LANES]);
    for j in 0..n {
        for l in 0..rows {
            kahan_step(&mut sum[l], &mut corr[l], xs[l * n + j]);
        }
    }
    for (l, o) in out.iter_mut().enumerate() {
        *o = if sum[l].is_finite() {
            sum[l]
        } else {
            let mut k = Kahan::default();
            xs[l * n..(l + 1) * n].iter().for_each(|&v| k.add(v));
            k.sum
        };
    }
}

/// Reduces `stored` values of a line of `len` cells (the rest are implicit zeros).
fn reduce(op: AggOp, vals: impl Iterator<Item = f64>, stored: usize, len: usize) -> f64 {
    match op {
        AggOp::Sum => sum0(vals),
        AggOp::Mean => mean_of(vals, len - stored, len),
        AggOp::Min => {
            let init = if stored < len { 0.0 } else { f64::INFINITY };
            vals.fold(init, java_min)
        }
        AggOp::Max => {
            let init = if stored < len { 0.0 } else { f64::NEG_INFINITY };
            vals.fold(init, java_max)
        }
    }
}

/// The compensated sum of a slice: sequential in SystemDS's order up to [`SEQ_CELLS`]
/// values, else over fixed blocks ([`lanes_sum`] each, in parallel) added in order, so
/// the result does not depend on the number of threads.
pub(crate) fn par_sum(s: &[f64]) -> f64 {
    if s.len() <= SEQ_CELLS {
        return sum0(s.iter().copied());
    }
    block_sum(s)
}

/// The sum of a matrix's stored values in [`par_sum`]'s fixed blocks at any size, for a sum
/// whose order of addition the program does not fix (one a plan makes, over a matrix the
/// program never forms: `sum(U * (X %*% V))` for the written `sum(X * (U %*% t(V)))`). Up to
/// [`SEQ_CELLS`] values SystemDS's sequential order is a chain of dependent additions, about
/// four cycles a value; here eight lanes of one block, or blocks in parallel.
pub fn sum_any_order(x: &Matrix) -> f64 {
    match x {
        Matrix::Dense(d) => block_sum(d.as_slice().expect("standard layout")),
        Matrix::Sparse(sp) => block_sum(sp.data()),
    }
}

/// [`par_sum`] past [`SEQ_CELLS`], at any length: fixed blocks of [`SUM_BLOCK`] values, each
/// by [`lanes_sum`], merged in order.
fn block_sum(s: &[f64]) -> f64 {
    let partial: Vec<Kahan> = if s.len() <= SUM_BLOCK {
        vec![lanes_sum(s)]
    } else {
        s.par_chunks(SUM_BLOCK).map(lanes_sum).collect()
    };
    let mut k = Kahan::default();
    for p in partial {
        k.merge(p);
    }
    k.sum
}

/// The fixed blocks a sum past [`SEQ_CELLS`] values is cut into ([`par_sum`]).
pub(crate) const SUM_BLOCK: usize = 1 << 14;

/// A compensated sum over eight interleaved lanes (vectorisable), the lanes merged in order.
pub(crate) fn lanes_sum(s: &[f64]) -> Kahan {
    let (full, rest) = s.split_at(s.len() - s.len() % 8);
    let mut lanes = Lanes::default();
    lanes.feed(full);
    if !lanes.finite() {
        // an infinity or NaN in the block: the plain sum gives IEEE's answer
        return Kahan {
            sum: plain_sum(s),
            corr: 0.0,
        };
    }
    lanes.finish(rest)
}

/// The plain sum of a block whose compensated lanes ended non-finite ([`lanes_sum`]).
pub(crate) fn plain_sum(s: &[f64]) -> f64 {
    s.iter().fold(0.0, |a, b| a + b)
}

/// [`lanes_sum`]'s eight compensated lanes, fed in pieces: value `8 q + l` of the block goes
/// to lane `l`, so feeding a block in pieces of multiples of eight values (and the last
/// `len % 8` to [`Lanes::finish`]) adds exactly as one call does.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Lanes {
    sum: [f64; 8],
    corr: [f64; 8],
}

impl Lanes {
    /// Adds the next values of the block, a multiple of eight of them.
    #[inline]
    pub(crate) fn feed(&mut self, s: &[f64]) {
        debug_assert!(s.len().is_multiple_of(8));
        for c in s.chunks_exact(8) {
            for (l, &v) in c.iter().enumerate() {
                kahan_step(&mut self.sum[l], &mut self.corr[l], v);
            }
        }
    }

    /// Whether every lane is still finite (else the block is summed plainly).
    pub(crate) fn finite(&self) -> bool {
        self.sum.iter().all(|v| v.is_finite())
    }

    /// The lanes merged in order, then the block's last values (fewer than eight).
    pub(crate) fn finish(self, rest: &[f64]) -> Kahan {
        let mut k = Kahan::default();
        for (&sum, &corr) in self.sum.iter().zip(&self.corr) {
            k.merge(Kahan { sum, corr });
        }
        for &v in rest {
            k.add(v);
        }
        k
    }
}

/// SystemDS's sum of a sequence of values: Kahan-compensated ([`Kahan`]), from +0.0 (the sum
/// of no values, an all-zero sparse matrix, is +0.0, never the -0.0 that `Iterator::sum`
/// gives for floats).
pub fn sum0(vals: impl Iterator<Item = f64>) -> f64 {
    let mut k = Kahan::default();
    for v in vals {
        k.add(v);
    }
    k.sum
}
