//! Statistics builtins: `var`, `sd`, `rowVars`, `colVars`, `rowSds`, `colSds`, `moment`,
//! `cov`, `median`, `quantile`, `interQuantileMean`, `prod`.
//!
//! As in SystemDS (`CmCovObject`, `MatrixBlock.pickValue`, `interQuartileMean`):
//!
//! * variances and covariances divide by `n - 1`, and are 0 when `n == 1` (variances NaN when `n == 0`); `sd` is the
//!   square root of `var`. Sums are two-pass (mean first), so they agree with SystemDS's
//!   incremental Kahan updates to rounding.
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
use crate::matrix::Matrix;
use ndarray::Array2;

fn values_of(x: &Matrix) -> Vec<f64> {
    x.to_dense().into_raw_vec_and_offset().0
}

fn variance(vals: impl Iterator<Item = f64> + Clone) -> f64 {
    let n = vals.clone().count() as f64;
    if n == 0.0 {
        // no cells: NaN, as SystemDS's (a mean of nothing)
        return f64::NAN;
    }
    if n == 1.0 {
        return 0.0;
    }
    let mean = vals.clone().sum::<f64>() / n;
    let m2: f64 = vals.map(|v| (v - mean) * (v - mean)).sum();
    m2 / (n - 1.0)
}

/// `var(X)`: the sample variance of all cells (0 for one cell, NaN for none).
pub fn var(x: &Matrix) -> f64 {
    variance(values_of(x).into_iter())
}

/// `sd(X)`: `sqrt(var(X))`.
pub fn sd(x: &Matrix) -> f64 {
    var(x).sqrt()
}

/// `rowVars(X)` (`rows = true`, an `m x 1` column) or `colVars(X)` (`1 x n`); with `sd`,
/// `rowSds`/`colSds`.
pub fn dir_var(x: &Matrix, rows: bool, sd: bool) -> Matrix {
    let d = x.to_dense();
    let (m, n) = d.dim();
    let f = |v: f64| if sd { v.sqrt() } else { v };
    if rows {
        let out: Vec<f64> = (0..m)
            .map(|i| f(variance(d.row(i).iter().copied())))
            .collect();
        Matrix::from_dense(Array2::from_shape_vec((m, 1), out).expect("shape"))
    } else {
        let out: Vec<f64> = (0..n)
            .map(|j| f(variance(d.column(j).iter().copied())))
            .collect();
        Matrix::from_dense(Array2::from_shape_vec((1, n), out).expect("shape"))
    }
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
    if !(2..=4).contains(&k) {
        return Err(RuntimeError::invalid(
            "moment",
            format!("the order must be 2, 3 or 4, found {k}"),
        ));
    }
    let v = column_values("moment", x)?;
    let w = weights_of("moment", w, v.len())?;
    let sw: f64 = w.iter().sum();
    let mean = v.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() / sw;
    let s: f64 = v
        .iter()
        .zip(&w)
        .map(|(a, b)| b * (a - mean).powi(k as i32))
        .sum();
    Ok(s / sw)
}

/// `cov(X, Y)` or `cov(X, Y, W)` of two columns: `sum(w (x - mx)(y - my)) / (sum(w) - 1)`,
/// 0 when `sum(w) == 1`. Errors: not columns of one length.
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
    let w = weights_of("cov", w, a.len())?;
    let sw: f64 = w.iter().sum();
    if sw == 1.0 {
        return Ok(0.0);
    }
    let ma = a.iter().zip(&w).map(|(p, q)| p * q).sum::<f64>() / sw;
    let mb = b.iter().zip(&w).map(|(p, q)| p * q).sum::<f64>() / sw;
    let c: f64 = a
        .iter()
        .zip(&b)
        .zip(&w)
        .map(|((p, q), r)| r * (p - ma) * (q - mb))
        .sum();
    Ok(c / (sw - 1.0))
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
