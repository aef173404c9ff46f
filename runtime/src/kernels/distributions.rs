//! Probability distributions of DML's `cdf`/`icdf` and their shorthands (`pnorm`, `qnorm`,
//! `pexp`, `qexp`, `pchisq`, `qchisq`, `pf`, `qf`, `pt`, `qt`), through `statrs`.
//!
//! As SystemDS (`ParameterizedBuiltin.computeFromDistribution`): the normal distribution
//! takes `mean` (0) and `sd` (1, must be positive), the exponential `rate` (1, mean
//! `1/rate`), chi-squared and t an integer `df`, F integer `df1` and `df2` (degrees of
//! freedom are truncated to integers and must be positive). The upper tail
//! (`lower.tail=FALSE`) is `1 - cdf`, as SystemDS computes it. The inverse takes a
//! probability in `[0, 1]`; SystemDS's inverse solves to 1e-9 absolute accuracy for
//! chi-squared, F and t, so results may differ from it below that.

use crate::error::RuntimeError;
use statrs::distribution::{
    ChiSquared, Continuous, ContinuousCDF, Exp, FisherSnedecor, Normal, StudentsT,
};

/// A distribution with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    /// `dist="normal"`, `mean=`, `sd=`
    Normal {
        /// mean
        mean: f64,
        /// standard deviation (> 0)
        sd: f64,
    },
    /// `dist="exp"`, `rate=`
    Exp {
        /// rate (> 0)
        rate: f64,
    },
    /// `dist="chisq"`, `df=`
    ChiSq {
        /// degrees of freedom (> 0)
        df: f64,
    },
    /// `dist="f"`, `df1=`, `df2=`
    F {
        /// numerator degrees of freedom (> 0)
        df1: f64,
        /// denominator degrees of freedom (> 0)
        df2: f64,
    },
    /// `dist="t"`, `df=`
    T {
        /// degrees of freedom (> 0)
        df: f64,
    },
}

/// Degrees of freedom as SystemDS reads them: truncated to an integer, positive.
fn dof(op: &'static str, what: &str, v: f64) -> Result<f64, RuntimeError> {
    let d = v.trunc();
    if d.is_nan() || d < 1.0 || !d.is_finite() {
        return Err(RuntimeError::invalid(
            op,
            format!("degrees of freedom for the {what} distribution must be positive ({v})"),
        ));
    }
    Ok(d)
}

impl Dist {
    /// The distribution named by DML's `dist=` string with the parameters looked up by name
    /// (`param("mean")`, ... returning `None` when absent). Errors: an unknown name, a missing
    /// or non-positive parameter.
    pub fn parse(
        op: &'static str,
        name: &str,
        param: impl Fn(&str) -> Option<f64>,
    ) -> Result<Dist, RuntimeError> {
        let need = |p: &str, what: &str| {
            param(p).ok_or_else(|| {
                RuntimeError::invalid(
                    op,
                    format!("{p} must be specified for the {what} distribution"),
                )
            })
        };
        let d = match name {
            "normal" => Dist::Normal {
                mean: param("mean").unwrap_or(0.0),
                sd: param("sd").unwrap_or(1.0),
            },
            "exp" => Dist::Exp {
                rate: param("rate").unwrap_or(1.0),
            },
            "chisq" => Dist::ChiSq {
                df: dof(op, "chi-squared", need("df", "chi-squared")?)?,
            },
            "f" => Dist::F {
                df1: dof(op, "F", need("df1", "F")?)?,
                df2: dof(op, "F", need("df2", "F")?)?,
            },
            "t" => Dist::T {
                df: dof(op, "t", need("df", "t")?)?,
            },
            _ => {
                return Err(RuntimeError::invalid(
                    op,
                    format!("unsupported distribution \"{name}\" (normal, exp, chisq, f, t)"),
                ))
            }
        };
        match d {
            Dist::Normal { sd, .. } if sd.is_nan() || sd <= 0.0 => Err(RuntimeError::invalid(
                op,
                format!("standard deviation for the normal distribution must be positive ({sd})"),
            )),
            Dist::Exp { rate } if rate.is_nan() || rate <= 0.0 => Err(RuntimeError::invalid(
                op,
                format!("rate for the exponential distribution must be positive ({rate})"),
            )),
            _ => Ok(d),
        }
    }

    fn with<T>(&self, f: impl Fn(&dyn ContinuousCDF<f64, f64>) -> T) -> Result<T, RuntimeError> {
        let bad = |e: statrs::distribution::NormalError| {
            RuntimeError::invalid("cdf", format!("invalid distribution parameters: {e}"))
        };
        Ok(match *self {
            Dist::Normal { mean, sd } => f(&Normal::new(mean, sd).map_err(bad)?),
            Dist::Exp { rate } => f(&Exp::new(rate)
                .map_err(|e| RuntimeError::invalid("cdf", format!("invalid rate: {e}")))?),
            Dist::ChiSq { df } => f(&ChiSquared::new(df)
                .map_err(|e| RuntimeError::invalid("cdf", format!("invalid df: {e}")))?),
            Dist::F { df1, df2 } => f(&FisherSnedecor::new(df1, df2)
                .map_err(|e| RuntimeError::invalid("cdf", format!("invalid df: {e}")))?),
            Dist::T { df } => f(&StudentsT::new(0.0, 1.0, df)
                .map_err(|e| RuntimeError::invalid("cdf", format!("invalid df: {e}")))?),
        })
    }

    /// `cdf(target=x, ..., lower.tail=)`: `P(X <= x)`, or `1 - P(X <= x)` for the upper tail.
    pub fn cdf(&self, x: f64, lower_tail: bool) -> Result<f64, RuntimeError> {
        if x.is_nan() {
            // statrs's regularized beta (F, t) panics on NaN
            return Ok(f64::NAN);
        }
        if matches!(self, Dist::F { .. }) && x == f64::INFINITY {
            // SystemDS (commons-math) evaluates the F cdf at `n x / (m + n x)`, which is
            // Inf/Inf = NaN at +Inf, in both tails
            return Ok(f64::NAN);
        }
        let p = match *self {
            // libm's erfc is accurate to an ulp or two, statrs's only to ~1e-12
            Dist::Normal { mean, sd } => normal_cdf((x - mean) / sd),
            _ => self.with(|d| d.cdf(x))?,
        };
        Ok(if lower_tail { p } else { 1.0 - p })
    }

    /// `icdf(target=p, ...)`: the `x` with `P(X <= x) = p`. Error: `p` outside `[0, 1]`.
    pub fn icdf(&self, p: f64) -> Result<f64, RuntimeError> {
        if !(0.0..=1.0).contains(&p) {
            return Err(RuntimeError::invalid(
                "icdf",
                format!("the probability must be in [0, 1], found {p}"),
            ));
        }
        match *self {
            Dist::Normal { mean, sd } => Ok(mean + sd * normal_icdf(p)),
            _ => self.with(|d| d.inverse_cdf(p)),
        }
    }

    /// The density at `x` (for tests and callers that need it).
    pub fn pdf(&self, x: f64) -> Result<f64, RuntimeError> {
        Ok(match *self {
            Dist::Normal { mean, sd } => Normal::new(mean, sd)
                .map_err(|e| RuntimeError::invalid("pdf", e.to_string()))?
                .pdf(x),
            Dist::Exp { rate } => Exp::new(rate)
                .map_err(|e| RuntimeError::invalid("pdf", e.to_string()))?
                .pdf(x),
            Dist::ChiSq { df } => ChiSquared::new(df)
                .map_err(|e| RuntimeError::invalid("pdf", e.to_string()))?
                .pdf(x),
            Dist::F { df1, df2 } => FisherSnedecor::new(df1, df2)
                .map_err(|e| RuntimeError::invalid("pdf", e.to_string()))?
                .pdf(x),
            Dist::T { df } => StudentsT::new(0.0, 1.0, df)
                .map_err(|e| RuntimeError::invalid("pdf", e.to_string()))?
                .pdf(x),
        })
    }
}

/// The standard normal cdf, `erfc(-z / sqrt(2)) / 2`.
fn normal_cdf(z: f64) -> f64 {
    0.5 * libm::erfc(-z / std::f64::consts::SQRT_2)
}

/// The standard normal quantile: statrs's estimate refined by Newton steps on
/// [`normal_cdf`] (the density never vanishes in the open interval).
fn normal_icdf(p: f64) -> f64 {
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let mut z = Normal::new(0.0, 1.0)
        .expect("standard normal")
        .inverse_cdf(p);
    for _ in 0..3 {
        let dens = (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
        if dens == 0.0 {
            break;
        }
        let step = (normal_cdf(z) - p) / dens;
        if !step.is_finite() {
            break;
        }
        z -= step;
    }
    z
}
