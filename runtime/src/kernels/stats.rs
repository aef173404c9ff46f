//! Statistics builtins: `var`, `sd`, `rowVars`, `colVars`, `rowSds`, `colSds`, `moment`,
//! `cov`, `median`, `quantile`, `interQuantileMean`, `prod`.
//!
//! As in SystemDS (`CmCovObject`, `MatrixBlock.pickValue`, `interQuartileMean`):
//!
//! * variances and covariances divide by `n - 1`, and are 0 when `n == 1` (variances NaN when
//!   `n == 0`); `sd` is the square root of `var`. They, and the moments, are SystemDS's
//!   incremental updates ([`Cm`], its `CM` and `COV` function objects) in its order, so they
//!   have its bits (on one thread: SystemDS splits inputs of more than 4096 non-zeros across
//!   its threads, which moves the last bits).
//! * `moment(X, k)` (k in 2, 3, 4) is the central moment `sum((x - mean)^k) / n`, optionally
//!   weighted (`sum(w (x - mean_w)^k) / sum(w)`).
//! * `quantile(X, p)` of a column `X`: SystemDS's sorted (value, weight) table (the zeros
//!   one row, NaN where SystemDS's quicksort leaves it), the value of 1-based rank
//!   `ceil(p * n)` (clamped to `1..n`), averaged with the next value when `n` is even and
//!   there is one (as SystemDS does for a scalar `p`; a column of probabilities takes the
//!   value alone). `median` is the quantile at 0.5.
//! * `interQuantileMean(X)`: the mean of the values between the 25% and 75% quantiles,
//!   counting the boundary values fractionally (SystemDS's IQM correction).
//!
//! Inputs of any representation; implicit zeros are values.

use crate::error::RuntimeError;
use crate::kernels::aggregate::Kahan;
use crate::matrix::Matrix;
use ndarray::Array2;

fn values_of(x: &Matrix) -> Vec<f64> {
    x.to_dense().into_raw_vec_and_offset().0
}

/// What a [`Cm`] accumulates and reads out (SystemDS's `AggregateOperationTypes` of its `CM`
/// function object: each keeps only the sums its result needs, so the kinds round
/// differently).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmKind {
    /// the (rounded) weight
    Count,
    /// the incremental mean
    Mean,
    /// the smallest value times its weight
    Min,
    /// the largest value times its weight
    Max,
    /// `m2 / w`
    Cm2,
    /// `m3 / w`
    Cm3,
    /// `m4 / w`
    Cm4,
    /// `m2 / (w - 1)`, 0 for one value
    Variance,
}

impl CmKind {
    /// The central moment of order 2, 3 or 4.
    pub fn moment(k: i64) -> Option<CmKind> {
        match k {
            2 => Some(CmKind::Cm2),
            3 => Some(CmKind::Cm3),
            4 => Some(CmKind::Cm4),
            _ => None,
        }
    }
}

/// SystemDS's `CmCovObject` updated by its `CM` function object (`functionobjects/CM.java`):
/// a weight, an incremental compensated mean and compensated power sums, moved value by
/// value in SystemDS's order of operations, so a variance or moment has SystemDS's bits (on
/// finite values; the compensated sums are [`Kahan`]'s, IEEE on infinities and NaN).
#[derive(Clone, Copy, Debug, Default)]
pub struct Cm {
    /// the sum of the weights (a count without weights)
    pub w: f64,
    /// the running mean
    pub mean: Kahan,
    /// the sum of squared deviations
    pub m2: Kahan,
    /// the sum of cubed deviations
    pub m3: Kahan,
    /// the sum of deviations to the fourth
    pub m4: Kahan,
    /// the smallest weighted value
    pub min: f64,
    /// the largest weighted value
    pub max: f64,
}

fn kahan_zero(k: &Kahan) -> bool {
    k.sum == 0.0 && k.corr == 0.0
}

/// Java's `Math.pow(x, 2)` (HotSpot computes it as `x * x`).
#[inline]
fn sq(x: f64) -> f64 {
    x * x
}

impl Cm {
    /// SystemDS's `isCMAllZeros`: nothing added yet (or only what leaves every field 0).
    fn all_zeros(&self) -> bool {
        self.w == 0.0
            && kahan_zero(&self.mean)
            && kahan_zero(&self.m2)
            && kahan_zero(&self.m3)
            && kahan_zero(&self.m4)
            && self.min == 0.0
            && self.max == 0.0
    }

    fn start(&mut self, v: f64, w2: f64) {
        self.w = w2;
        self.mean = Kahan { sum: v, corr: 0.0 };
        self.min = v * w2;
        self.max = v * w2;
        self.m2 = Kahan::default();
        self.m3 = Kahan::default();
        self.m4 = Kahan::default();
    }

    /// Adds one value of weight 1 (`CM.execute(in1, in2)`).
    pub fn add(&mut self, kind: CmKind, v: f64) {
        if self.all_zeros() {
            self.start(v, 1.0);
            return;
        }
        match kind {
            CmKind::Count => self.w += 1.0,
            CmKind::Min => self.min = crate::ops::java_min(self.min, v),
            CmKind::Max => self.max = crate::ops::java_max(self.max, v),
            CmKind::Mean => {
                let w = self.w + 1.0;
                let d = v - self.mean.sum;
                self.mean.add(d / w);
                self.w = w;
            }
            CmKind::Cm2 | CmKind::Variance => {
                let w = self.w + 1.0;
                let d = v - self.mean.sum;
                self.mean.add(d / w);
                let t1 = self.w / w * d;
                self.m2.add(t1 * d);
                self.w = w;
            }
            CmKind::Cm3 | CmKind::Cm4 => {
                let w = self.w + 1.0;
                let d = v - self.mean.sum;
                self.mean.add(d / w);
                let t1 = self.w / w * d;
                let t2 = -1.0 / self.w;
                let lt1 = t1 * d;
                let lt2 = t1.powf(3.0) * (1.0 - sq(t2));
                let f2 = 1.0 / w;
                self.moments(kind, lt1, lt2, t1, t2, f2, d, 1.0);
                self.w = w;
            }
        }
    }

    /// Adds one value of weight `w2` (`CM.execute(in1, in2, w2)`).
    pub fn add_weighted(&mut self, kind: CmKind, v: f64, w2: f64) {
        if self.all_zeros() {
            self.start(v, w2);
            return;
        }
        match kind {
            CmKind::Count => self.w = (self.w + w2).java_round(),
            CmKind::Min => self.min = crate::ops::java_min(self.min, v * w2),
            CmKind::Max => self.max = crate::ops::java_max(self.max, v * w2),
            CmKind::Mean => {
                let w = self.w + w2;
                let d = v - self.mean.sum;
                self.mean.add(w2 * d / w);
                self.w = w;
            }
            CmKind::Cm2 | CmKind::Variance => {
                let w = self.w + w2;
                let d = v - self.mean.sum;
                self.mean.add(w2 * d / w);
                let t1 = self.w * w2 / w * d;
                self.m2.add(t1 * d);
                self.w = w;
            }
            CmKind::Cm3 | CmKind::Cm4 => {
                let w = self.w + w2;
                let d = v - self.mean.sum;
                self.mean.add(w2 * d / w);
                let t1 = self.w * w2 / w * d;
                let t2 = -1.0 / self.w;
                let lt1 = t1 * d;
                let lt2 = t1.powf(3.0) * (1.0 / sq(w2) - sq(t2));
                let f2 = w2 / w;
                self.moments(kind, lt1, lt2, t1, t2, f2, d, w2);
                self.w = w;
            }
        }
    }

    /// The third (and fourth) moment's update, from the old `m2` and `m3`, then `m2`.
    #[allow(clippy::too_many_arguments)]
    fn moments(
        &mut self,
        kind: CmKind,
        lt1: f64,
        lt2: f64,
        t1: f64,
        t2: f64,
        f2: f64,
        d: f64,
        w2: f64,
    ) {
        let mut m2 = self.m2;
        m2.add(lt1);
        let mut m3 = self.m3;
        m3.add(lt2 - 3.0 * self.m2.sum * f2 * d);
        if kind == CmKind::Cm4 {
            let lt3 = t1.powf(4.0) * (1.0 / w2.powf(3.0) - t2.powf(3.0));
            self.m4
                .add(6.0 * self.m2.sum * sq(-f2 * d) + lt3 - 4.0 * self.m3.sum * f2 * d);
        }
        self.m2 = m2;
        self.m3 = m3;
    }

    /// The result of a kind (`getRequiredResult`).
    pub fn result(&self, kind: CmKind) -> f64 {
        match kind {
            CmKind::Count => self.w,
            CmKind::Mean => self.mean.sum,
            CmKind::Min => self.min,
            CmKind::Max => self.max,
            CmKind::Cm2 => self.m2.sum / self.w,
            CmKind::Cm3 => self.m3.sum / self.w,
            CmKind::Cm4 => self.m4.sum / self.w,
            CmKind::Variance if self.w == 1.0 => 0.0,
            CmKind::Variance => self.m2.sum / (self.w - 1.0),
        }
    }
}

/// Java's `Math.round` on a double (`floor(x + 0.5)`; NaN is 0), as SystemDS rounds
/// a weighted count.
trait JavaRound {
    fn java_round(self) -> f64;
}

impl JavaRound for f64 {
    fn java_round(self) -> f64 {
        let r = self.round();
        if self.is_nan() {
            0.0
        } else if (r - self).abs() == 0.5 {
            // a tie goes up, not away from zero
            (self + 0.5).floor()
        } else {
            r
        }
    }
}

/// The variance of a line of cells as SystemDS's `uavar`/`uarvar` computes it: the `zeros`
/// implicit zeros of a sparse line counted first (a weight with a zero mean), then the
/// stored values one by one. NaN for no cells.
fn variance(vals: impl Iterator<Item = f64>, zeros: usize) -> f64 {
    let mut vals = vals.peekable();
    if zeros == 0 && vals.peek().is_none() {
        // no cells: NaN, as SystemDS's (a mean of nothing)
        return f64::NAN;
    }
    let mut cm = Cm {
        w: zeros as f64,
        ..Cm::default()
    };
    for v in vals {
        cm.add(CmKind::Variance, v);
    }
    cm.result(CmKind::Variance)
}

/// `var(X)`: the sample variance of all cells (0 for one cell, NaN for none), as SystemDS's
/// `uavar`: a dense matrix's cells in row-major order, a sparse one's stored values after its
/// implicit zeros.
pub fn var(x: &Matrix) -> f64 {
    match x {
        Matrix::Dense(d) => variance(d.iter().copied(), 0),
        Matrix::Sparse(s) => variance(s.data().iter().copied(), x.cells() - s.nnz()),
    }
}

/// `sd(X)`: `sqrt(var(X))`.
pub fn sd(x: &Matrix) -> f64 {
    var(x).sqrt()
}

/// `rowVars(X)` (`rows = true`, an `m x 1` column) or `colVars(X)` (`1 x n`); with `sd`,
/// `rowSds`/`colSds`. In SystemDS's order (`uarvar`, `uacvar`): a row's cells like
/// [`var`]'s; a column's values added row by row with the running variance read back as
/// `m2 = var * (count - 1)` before each update (SystemDS keeps only the variance between
/// rows), a sparse column's implicit zeros counted first.
pub fn dir_var(x: &Matrix, rows: bool, sd: bool) -> Matrix {
    let (m, n) = x.shape();
    let f = |v: f64| if sd { v.sqrt() } else { v };
    if rows {
        let out: Vec<f64> = match x {
            Matrix::Dense(d) => d
                .rows()
                .into_iter()
                .map(|r| f(variance(r.iter().copied(), 0)))
                .collect(),
            Matrix::Sparse(s) => s
                .outer_iterator()
                .map(|r| f(variance(r.data().iter().copied(), n - r.nnz())))
                .collect(),
        };
        return Matrix::from_dense(Array2::from_shape_vec((m, 1), out).expect("shape"));
    }
    // per column: { var, mean, count, m2 correction, mean correction }
    let mut var = vec![0.0; n];
    let mut state = vec![(Kahan::default(), 0.0, 0.0); n]; // (mean, count, m2 correction)
    if let Matrix::Sparse(s) = x {
        // the implicit zeros of each column first
        for st in state.iter_mut() {
            st.1 = m as f64;
        }
        for &j in s.indices() {
            state[crate::matrix::col(j)].1 -= 1.0;
        }
    }
    let mut step = |j: usize, v: f64| {
        let (mean, count, m2c) = &mut state[j];
        let mut cm = Cm {
            w: *count,
            m2: Kahan {
                sum: var[j] * (*count - 1.0),
                corr: *m2c,
            },
            mean: *mean,
            ..Cm::default()
        };
        cm.add(CmKind::Variance, v);
        var[j] = cm.result(CmKind::Variance);
        *mean = cm.mean;
        *count = cm.w;
        *m2c = cm.m2.corr;
    };
    match x {
        Matrix::Dense(d) => {
            for r in d.rows() {
                for (j, &v) in r.iter().enumerate() {
                    step(j, v);
                }
            }
        }
        Matrix::Sparse(s) => {
            for r in s.outer_iterator() {
                for (j, &v) in r.iter() {
                    step(j, v);
                }
            }
        }
    }
    if m == 0 {
        // no rows: NaN, as a variance of nothing
        var.iter_mut().for_each(|v| *v = f64::NAN);
    }
    let out: Vec<f64> = var.into_iter().map(f).collect();
    Matrix::from_dense(Array2::from_shape_vec((1, n), out).expect("shape"))
}

fn column_values(op: &'static str, x: &Matrix) -> Result<Vec<f64>, RuntimeError> {
    if x.cols() != 1 {
        return Err(RuntimeError::invalid(
            op,
            format!(
                "the input must be a column vector, found {}x{}",
                x.rows(),
                x.cols()
            ),
        ));
    }
    Ok(values_of(x))
}

fn weights_of(op: &'static str, w: Option<&Matrix>, n: usize) -> Result<Vec<f64>, RuntimeError> {
    match w {
        None => Ok(vec![1.0; n]),
        Some(w) => {
            let v = column_values(op, w)?;
            if v.len() != n {
                return Err(RuntimeError::invalid(
                    op,
                    format!("weights must have {n} rows, found {}", v.len()),
                ));
            }
            Ok(v)
        }
    }
}

/// `moment(X, k)` or `moment(X, W, k)` of a column `X`: see the module doc. Errors: `k` not
/// 2, 3 or 4, `X` or `W` not a column, `W` of another length.
pub fn moment(x: &Matrix, w: Option<&Matrix>, k: i64) -> Result<f64, RuntimeError> {
    let Some(kind) = CmKind::moment(k) else {
        return Err(RuntimeError::invalid(
            "moment",
            format!("the order must be 2, 3 or 4, found {k}"),
        ));
    };
    let v = column_values("moment", x)?;
    let mut cm = Cm::default();
    match w {
        // SystemDS's aggregateCmCov: a weighted column value by value; an unweighted one
        // dense in row order, sparse its stored values and then its zeros as one value of
        // their count's weight (all of them for an all-zero column)
        Some(_) => {
            let w = weights_of("moment", w, v.len())?;
            for (a, b) in v.iter().zip(&w) {
                cm.add_weighted(kind, *a, *b);
            }
        }
        None => match x {
            Matrix::Sparse(s) if s.nnz() > 0 => {
                for &a in s.data() {
                    cm.add(kind, a);
                }
                // (SystemDS adds the zeros even when there are none: a weight of 0, whose
                // 1 / 0 makes a third or fourth moment NaN; a matrix without zeros is dense
                // there)
                let zeros = x.rows() - s.nnz();
                if zeros > 0 {
                    cm.add_weighted(kind, 0.0, zeros as f64);
                }
            }
            _ if x.nnz() == 0 => cm.add_weighted(kind, 0.0, x.rows() as f64),
            _ => {
                for &a in &v {
                    cm.add(kind, a);
                }
            }
        },
    }
    Ok(cm.result(kind))
}

/// SystemDS's `CmCovObject` for a covariance, updated by its `COV` function object: weight,
/// the two incremental means and the compensated co-moment.
#[derive(Clone, Copy, Debug, Default)]
struct Cov {
    w: f64,
    mean_u: Kahan,
    mean_v: Kahan,
    c2: Kahan,
}

impl Cov {
    fn add(&mut self, u: f64, v: f64, w2: Option<f64>) {
        if self.w == 0.0
            && kahan_zero(&self.mean_u)
            && kahan_zero(&self.mean_v)
            && kahan_zero(&self.c2)
        {
            self.w = w2.unwrap_or(1.0);
            self.mean_u = Kahan { sum: u, corr: 0.0 };
            self.mean_v = Kahan { sum: v, corr: 0.0 };
            self.c2 = Kahan::default();
            return;
        }
        let (du, dv) = (u - self.mean_u.sum, v - self.mean_v.sum);
        match w2 {
            Some(w2) => {
                let w = self.w + w2;
                self.mean_u.add(w2 * du / w);
                self.mean_v.add(w2 * dv / w);
                self.c2.add(self.w * w2 / w * du * dv);
                self.w = w;
            }
            None => {
                let w = self.w + 1.0;
                self.mean_u.add(du / w);
                self.mean_v.add(dv / w);
                self.c2.add(self.w / w * du * dv);
                self.w = w;
            }
        }
    }
}

/// `cov(X, Y)` or `cov(X, Y, W)` of two columns: `sum(w (x - mx)(y - my)) / (sum(w) - 1)`,
/// 0 when `sum(w) == 1`, computed as SystemDS's `COV` (incremental, row by row). Errors: not
/// columns of one length.
pub fn cov(x: &Matrix, y: &Matrix, w: Option<&Matrix>) -> Result<f64, RuntimeError> {
    let a = column_values("cov", x)?;
    let b = column_values("cov", y)?;
    if a.len() != b.len() {
        return Err(RuntimeError::invalid(
            "cov",
            format!(
                "the inputs must have the same length, found {} and {}",
                a.len(),
                b.len()
            ),
        ));
    }
    let mut c = Cov::default();
    match w {
        Some(_) => {
            let w = weights_of("cov", w, a.len())?;
            for ((p, q), r) in a.iter().zip(&b).zip(&w) {
                c.add(*p, *q, Some(*r));
            }
        }
        None => {
            for (p, q) in a.iter().zip(&b) {
                c.add(*p, *q, None);
            }
        }
    }
    Ok(if c.w == 1.0 {
        0.0
    } else {
        c.c2.sum / (c.w - 1.0)
    })
}

/// SystemDS's sorted table of a column for its quantiles (`MatrixBlock.sortOperations`): a
/// (value, weight) row for `+0.0` carrying the weight of every zero of either sign (so
/// `-0.0` reads as `0.0`), then a row per other value in row order, NaN included (a NaN is
/// not `== 0`), sorted by value with the quicksort SystemDS's sort runs
/// ([`crate::kernels::structure::sort_by_value`]: NaN compares false with everything, so it
/// lands where that sort's comparisons leave it, as in SystemDS on one thread: a column of
/// fewer than 1024 values; with more, SystemDS sorts blocks on several threads and merges
/// them). `w`: the values' weights (each 1 when `None`). Errors: `x` (and `w`) not a
/// non-empty column, weights of another length or not integers.
fn sorted_table(
    op: &'static str,
    x: &Matrix,
    w: Option<&Matrix>,
) -> Result<Vec<(f64, f64)>, RuntimeError> {
    let v = column_values(op, x)?;
    if v.is_empty() {
        return Err(RuntimeError::invalid(op, "the input is empty"));
    }
    let wt = match w {
        None => None,
        Some(w) => {
            let wt = column_values(op, w)?;
            if wt.len() != v.len() {
                return Err(RuntimeError::invalid(
                    op,
                    format!("{} values but {} weights", v.len(), wt.len()),
                ));
            }
            if let Some(bad) = wt.iter().find(|w| w.floor() < **w || w.is_nan()) {
                return Err(RuntimeError::invalid(
                    op,
                    format!("the weights must be integers, found {bad}"),
                ));
            }
            Some(wt)
        }
    };
    let weight = |i: usize| wt.as_ref().map_or(1.0, |w| w[i]);
    let mut values = vec![0.0];
    let mut weights = vec![0.0];
    for (i, &d) in v.iter().enumerate() {
        if d != 0.0 {
            values.push(d);
            weights.push(weight(i));
        } else {
            weights[0] += weight(i);
        }
    }
    let mut ix: Vec<usize> = (0..values.len()).collect();
    crate::kernels::structure::sort_by_value(&mut values, &mut ix);
    Ok(values
        .into_iter()
        .zip(ix.into_iter().map(|i| weights[i]))
        .collect())
}

/// SystemDS's `pickWeightedValue` on a [`sorted_table`]: the first value at which the
/// weights' running sum (truncated to an integer at each step, as Java's `int +=`) reaches
/// `ceil(p * sum(W))`; with `average` and an even weight sum, the mean with the next value
/// when the rank falls on a value's last copy (SystemDS compares the rank with the table's
/// length there); a rank on the zero row that no zero occupies takes the next value.
fn pick(s: &[(f64, f64)], p: f64, average: bool) -> f64 {
    let n = s.len();
    let sum_wt: f64 = s.iter().map(|q| q.1).sum();
    let average = average && sum_wt % 2.0 == 0.0;
    let pos = (p * sum_wt).ceil() as i64;
    let (mut t, mut i) = (0i64, 0usize);
    loop {
        t = (t as f64 + s[i].1) as i64;
        if t >= pos || i + 1 >= n {
            break;
        }
        i += 1;
    }
    let at = |k: usize| s[k.min(n - 1)].0;
    if s[i].1 != 0.0 {
        if average && pos < n as i64 - 1 {
            if pos < t {
                s[i].0
            } else if s[(i + 1).min(n - 1)].1 != 0.0 {
                (s[i].0 + at(i + 1)) / 2.0
            } else {
                (s[i].0 + at(i + 2)) / 2.0
            }
        } else {
            s[i].0
        }
    } else if i + 1 < n {
        s[i + 1].0
    } else {
        at(i.saturating_sub(1))
    }
}

fn check_probability(op: &'static str, p: f64) -> Result<(), RuntimeError> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(RuntimeError::invalid(
            op,
            format!("the probability must be in [0, 1], found {p}"),
        ))
    }
}

/// `quantile(X, p)` of a column `X` for one probability: SystemDS's pick on its sorted table
/// ([`sorted_table`], [`pick`]): the value of rank `ceil(p*n)`, averaged with the next one
/// when `n` is even (`pickValue(p, true)`; a column of probabilities, [`quantiles`], never
/// averages). Errors: `X` not a non-empty column, `p` outside `[0, 1]`.
pub fn quantile(x: &Matrix, p: f64) -> Result<f64, RuntimeError> {
    check_probability("quantile", p)?;
    Ok(pick(&sorted_table("quantile", x, None)?, p, true))
}

/// `quantile(X, P)` for a column `P` of probabilities: a column of the quantiles.
pub fn quantiles(x: &Matrix, p: &Matrix) -> Result<Matrix, RuntimeError> {
    let s = sorted_table("quantile", x, None)?;
    let ps = column_values("quantile", p)?;
    let mut out = Vec::with_capacity(ps.len());
    for q in ps {
        check_probability("quantile", q)?;
        out.push(pick(&s, q, false));
    }
    Ok(Matrix::from_dense(
        Array2::from_shape_vec((out.len(), 1), out).expect("shape"),
    ))
}

/// `quantile(X, W, p)` and `median(X, W)` (`p = 0.5`, `average`): the quantile of a column
/// `X` whose values count as often as their integer weights `W` say, picked as SystemDS's
/// `pickWeightedValue` does on its sorted table ([`sorted_table`], [`pick`]). Errors: not
/// non-empty columns of the same length, weights that are not integers, `p` outside `[0, 1]`.
pub fn weighted_quantile(
    op: &'static str,
    x: &Matrix,
    w: &Matrix,
    p: f64,
    average: bool,
) -> Result<f64, RuntimeError> {
    check_probability(op, p)?;
    Ok(pick(&sorted_table(op, x, Some(w))?, p, average))
}

/// `median(X)` of a column `X`. Error: not a non-empty column.
pub fn median(x: &Matrix) -> Result<f64, RuntimeError> {
    Ok(pick(&sorted_table("median", x, None)?, 0.5, true))
}

/// `interQuantileMean(X)` of a column `X`, or `interQuantileMean(X, W)` with a column of
/// weights (how often each value counts), as SystemDS computes it on its sorted table
/// ([`sorted_table`]): the mean of the values between the 25% and 75% points of the
/// weights' cumulative sum, the boundary values counted with the fraction of their weight
/// inside. Errors: not non-empty columns of the same length, weights that are not integers.
pub fn inter_quantile_mean(x: &Matrix, w: Option<&Matrix>) -> Result<f64, RuntimeError> {
    let s = sorted_table("interQuantileMean", x, w)?;
    let n = s.len();
    let sum_wt: f64 = s.iter().map(|p| p.1).sum();
    let q25d = 0.25 * sum_wt;
    let q75d = 0.75 * sum_wt;
    let q25i = q25d.ceil();
    let q75i = q75d.ceil();
    let mut psum = 0.0;
    let mut i: isize = -1;
    while psum < q25i && i < n as isize - 1 {
        i += 1;
        psum += s[i as usize].1;
    }
    let at = |k: isize| s[k.clamp(0, n as isize - 1) as usize].0;
    let q25_part = psum - q25d;
    let q25_val = at(i);
    let mut sum = 0.0;
    while psum < q75i && i < n as isize - 1 {
        i += 1;
        let (v, w) = s[i as usize];
        psum += w;
        sum += v * w;
    }
    let q75_part = psum - q75d;
    let q75_val = at(i);
    Ok((sum + q25_part * q25_val - q75_part * q75_val) / (sum_wt * 0.5))
}

/// `prod(X)`: the product of all cells (1 for an empty matrix).
pub fn prod(x: &Matrix) -> f64 {
    match x {
        Matrix::Sparse(s) if s.nnz() < x.cells() => {
            // an implicit zero, unless a NaN or infinity makes the product NaN
            if s.data().iter().any(|v| v.is_nan() || v.is_infinite()) {
                f64::NAN
            } else {
                0.0
            }
        }
        _ => values_of(x).iter().product(),
    }
}
