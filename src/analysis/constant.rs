//! The constant facts: `konst` (the value of a scalar class known at compile time, folded
//! with the runtime's IEEE arithmetic as soon as all children are constant; or the value of
//! every cell of a non-empty fill or `+0.0` matrix) and the proofs `zero` (every cell is a
//! zero, of either sign), `pzero` (every cell is `+0.0`) and `finite` (every cell is finite,
//! for finite inputs in exact arithmetic). See the module doc of [`crate::analysis`] for why
//! the proofs are what the rules read.

use super::{is_la_scalar, Data, Kind, VarInfo, EG};
use crate::ir::Ir;
use egg::Id;

/// The proofs of a class: see the fields of [`Data`] of the same names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Proofs {
    /// every cell is a zero (of either sign)
    pub zero: bool,
    /// every cell is `+0.0`
    pub pzero: bool,
    /// every cell is finite
    pub finite: bool,
}

/// The proofs of `enode` from its children's, before its constant is known (a constant
/// scalar's proofs come from its value, see [`crate::analysis`]'s `make`).
pub fn proofs(eg: &EG, enode: &Ir, kind: &Kind) -> Proofs {
    let d = |i: &Id| &eg[*i].data;
    let (r, c) = match kind {
        Kind::Mat(r, c) => (*r, *c),
        _ => (1, 1),
    };
    let p = |zero: bool, pzero: bool, finite: bool| Proofs {
        zero,
        pzero: pzero && zero,
        finite,
    };
    // what a unary operator that keeps zeros and their signs (and finiteness) gives
    let same = |a: &Id| p(d(a).zero, d(a).pzero, d(a).finite);
    match enode {
        Ir::Num(v) => p(
            v.get() == 0.0,
            v.get().is_sign_positive(),
            v.get().is_finite(),
        ),
        // (the planner counts a dense `-0.0` cell as a non-zero)
        Ir::Symbol(s) => match eg.analysis.vars.get(s) {
            Some(VarInfo::Matrix { nnz, finite, .. }) => {
                p(*nnz == 0.0, true, *finite || *nnz == 0.0)
            }
            Some(VarInfo::FiniteScalar) => p(false, false, true),
            _ => p(false, false, false),
        },
        Ir::MMul([a, b]) | Ir::TMMul([a, b]) => {
            let inner = match (enode, &d(a).kind) {
                (Ir::MMul(_), Kind::Mat(_, k)) | (Ir::TMMul(_), Kind::Mat(k, _)) => *k,
                _ => 1,
            };
            let (da, db) = (d(a), d(b));
            let zero = inner == 0 || times_zero(da, db);
            // a dot product starts from +0.0; one of a single term may be read as the term
            p(
                zero,
                inner >= 2 || times_pzero(da, db),
                da.finite && db.finite,
            )
        }
        Ir::Sddmm(_)
        | Ir::WsLoss(_)
        | Ir::WsLossW(_)
        | Ir::WSubMM(_)
        | Ir::Wcemm(_)
        | Ir::WDivMM(_)
        | Ir::WDivMMT(_)
        | Ir::MMChain(_) => p(false, false, false),
        // P * (1 - P): +0.0 * 1
        Ir::Sprop(a) => same(a),
        // a comparison gives +0.0
        Ir::Nz(a) => p(d(a).zero, true, true),
        Ir::Trans(a) | Ir::AsScalar(a) => same(a),
        Ir::Bind([_, _, a]) | Ir::Unbind([_, _, a]) | Ir::Subst([_, _, a]) => same(a),
        Ir::Neg(a) => p(d(a).zero, false, d(a).finite),
        Ir::Abs(a) => p(d(a).zero, true, d(a).finite),
        // exp and sigmoid of finite values are finite (exp may overflow: the documented
        // exception); log and sqrt of negatives are NaN (sqrt(-0.0) is -0.0)
        Ir::Exp(a) | Ir::Sigmoid(a) => p(false, false, d(a).finite),
        Ir::Sqrt(a) => p(d(a).zero, d(a).pzero, d(a).zero),
        Ir::Log(_) => p(false, false, false),
        Ir::EMul([a, b])
        | Ir::EAdd([a, b])
        | Ir::ESub([a, b])
        | Ir::EDiv([a, b])
        | Ir::EPow([a, b]) => {
            let (da, db) = (d(a), d(b));
            let q = match enode {
                Ir::EMul(_) => p(
                    times_zero(da, db),
                    times_pzero(da, db),
                    da.finite && db.finite,
                ),
                Ir::EAdd(_) | Ir::ESub(_) => p(
                    da.zero && db.zero,
                    da.pzero && db.pzero,
                    da.finite && db.finite,
                ),
                Ir::EDiv(_) => p(
                    da.zero && finite_nonzero(db),
                    da.pzero && positive(db),
                    da.finite && finite_nonzero(db),
                ),
                _ => pow_proofs(da, db.konst),
            };
            if kind.is_scalar() || r * c > 0 {
                q
            } else {
                p(true, true, true)
            }
        }
        Ir::MSum(a) => {
            let (n, empty) = match d(a).kind {
                Kind::Mat(r, c) => (r * c, r == 0 || c == 0),
                _ => (1, false),
            };
            let zero = d(a).zero || empty;
            p(zero, sum_pzero(d(a), n), d(a).finite)
        }
        Ir::RowSums(a) | Ir::ColSums(a) => {
            let summed = match (enode, &d(a).kind) {
                (Ir::RowSums(_), Kind::Mat(_, n)) | (Ir::ColSums(_), Kind::Mat(n, _)) => *n,
                _ => 1,
            };
            p(
                d(a).zero || summed == 0,
                sum_pzero(d(a), summed),
                d(a).finite || summed == 0,
            )
        }
        Ir::Fill([v, _, _]) => {
            if r == 0 || c == 0 {
                p(true, true, true)
            } else {
                same(v)
            }
        }
        Ir::Join([a, b]) => p(
            times_zero(d(a), d(b)),
            times_pzero(d(a), d(b)),
            d(a).finite && d(b).finite,
        ),
        Ir::Union([a, b]) => p(
            d(a).zero && d(b).zero,
            d(a).pzero && d(b).pzero,
            d(a).finite && d(b).finite,
        ),
        Ir::Agg([i, a]) => {
            let n = match eg[*i].data.kind {
                Kind::Attr(n) => n,
                _ => 1,
            };
            // a sum over an attribute the body does not have is a product (`sum-absent`)
            let bound = matches!(&d(a).kind, Kind::Rel(s)
                if super::attr_symbol(eg, *i).is_some_and(|x| s.contains_key(&x)));
            let zero = d(a).zero || n == 0;
            let pzero = if bound {
                sum_pzero(d(a), n)
            } else {
                d(a).pzero
            };
            p(zero, pzero, d(a).finite || zero)
        }
        Ir::Dim(_) => p(false, false, true),
        Ir::Pow([a, q]) => pow_proofs(d(a), d(q).konst),
    }
}

/// The constant of `enode` given its proof `pzero` (from [`proofs`]): a zero of unknown sign
/// has no constant (`0 * x` is `-0.0` for a negative x, and `1 / (0 * x)` tells).
pub fn konst(eg: &EG, enode: &Ir, kind: &Kind, pzero: bool) -> Option<f64> {
    let k = |i: &Id| eg[*i].data.konst;
    if is_la_scalar(enode, kind) {
        return match enode {
            Ir::Num(v) => Some(v.get()),
            Ir::Symbol(s) => match eg.analysis.vars.get(s) {
                Some(VarInfo::Scalar(v)) => *v,
                _ => None,
            },
            Ir::Sprop(a) => k(a).map(|v| v * (1.0 - v)),
            Ir::Nz(a) => k(a).map(|v| f64::from(u8::from(v != 0.0))),
            Ir::Neg(a) => k(a).map(|v| -v),
            Ir::Exp(a) => k(a).map(f64::exp),
            Ir::Log(a) => k(a).map(f64::ln),
            Ir::Sqrt(a) => k(a).map(f64::sqrt),
            Ir::Abs(a) => k(a).map(f64::abs),
            Ir::Sigmoid(a) => k(a).map(|v| 1.0 / (1.0 + (-v).exp())),
            Ir::EMul([a, b])
            | Ir::EAdd([a, b])
            | Ir::ESub([a, b])
            | Ir::EDiv([a, b])
            | Ir::EPow([a, b]) => match (k(a), k(b)) {
                (Some(x), Some(y)) => Some(match enode {
                    Ir::EMul(_) => x * y,
                    Ir::EAdd(_) => x + y,
                    Ir::ESub(_) => x - y,
                    Ir::EDiv(_) => x / y,
                    _ => x.powf(y),
                }),
                _ => pzero.then_some(0.0),
            },
            Ir::MSum(_) | Ir::AsScalar(_) => pzero.then_some(0.0),
            Ir::Dim(i) => match eg[*i].data.kind {
                Kind::Attr(n) => Some(n as f64),
                _ => None,
            },
            _ => None,
        };
    }
    match (enode, kind) {
        // a non-empty zero matrix is the constant 0 in every cell; every cell of a non-empty
        // fill is its value: two fills of different values in one class are a conflict, as
        // for scalars
        (Ir::Fill([v, _, _]), Kind::Mat(r, c)) => (r * c > 0).then(|| k(v)).flatten(),
        (Ir::Symbol(_) | Ir::Sddmm(_) | Ir::WSubMM(_) | Ir::WDivMM(_), _) => None,
        (Ir::WDivMMT(_) | Ir::MMChain(_), _) => None,
        (_, Kind::Mat(r, c)) => (pzero && r * c > 0).then_some(0.0),
        (Ir::Subst([_, _, a]), _) => k(a),
        (_, k2) if !k2.is_scalar() => None,
        // scalar relations
        (Ir::Bind([_, _, a]), _) => k(a).or(pzero.then_some(0.0)),
        (Ir::Join([a, b]) | Ir::Union([a, b]), _) => match (k(a), k(b)) {
            (Some(x), Some(y)) => Some(if matches!(enode, Ir::Join(_)) {
                x * y
            } else {
                x + y
            }),
            _ => pzero.then_some(0.0),
        },
        (Ir::Agg(_), _) => pzero.then_some(0.0),
        (Ir::Pow([a, p]), _) => {
            let pv = k(p).expect("checked by the schema");
            k(a).map(|v| v.powf(pv)).or(pzero.then_some(0.0))
        }
        _ => None,
    }
}

/// Whether `x` is finite and nonzero, so that `0 / x` is 0 and `y / x` finite for finite y.
fn finite_nonzero(d: &Data) -> bool {
    d.konst.is_some_and(|v| v.is_finite() && v != 0.0)
}

/// Whether `x` is a finite positive constant (`+0.0 * x` and `+0.0 / x` are `+0.0`).
fn positive(d: &Data) -> bool {
    d.konst.is_some_and(|v| v > 0.0 && v.is_finite())
}

/// Whether `a * b` (a join, an element-wise or a matrix product) is provably zero: one side
/// is zero and the other finite (`0 * Inf` is NaN).
fn times_zero(a: &Data, b: &Data) -> bool {
    (a.zero && b.finite) || (b.zero && a.finite)
}

/// Whether `a * b` is provably `+0.0`: a `+0.0` times `+0.0` or a positive constant (a
/// negative factor, or a zero of unknown sign, may make it `-0.0`).
fn times_pzero(a: &Data, b: &Data) -> bool {
    (a.pzero && (b.pzero || positive(b))) || (b.pzero && positive(a))
}

/// Whether a sum of `n` cells of `a` (all zero) is `+0.0`: sums start from `+0.0`, so one of
/// two or more zeros is `+0.0`; but a plan may read a one-cell sum as its cell (README,
/// exception 3), so that one is `+0.0` only if the cell is.
fn sum_pzero(a: &Data, n: usize) -> bool {
    a.pzero || (a.zero && n >= 2)
}

/// The proofs of `a ^ p`: zero for a zero base and a positive exponent (`+0.0` for a `+0.0`
/// base); finite for a finite base and a whole non-negative exponent, or for a positive
/// constant base.
fn pow_proofs(a: &Data, p: Option<f64>) -> Proofs {
    let zero = a.zero && p.is_some_and(|p| p > 0.0);
    let whole = p.is_some_and(|p| p >= 0.0 && p.fract() == 0.0);
    let positive =
        a.konst.is_some_and(|v| v > 0.0 && v.is_finite()) && p.is_some_and(f64::is_finite);
    Proofs {
        zero,
        pzero: zero && a.pzero,
        finite: (a.finite && whole) || positive,
    }
}
