//! The constant facts: `konst` (the value of a scalar class known at compile time, folded
//! with the runtime's IEEE arithmetic as soon as all children are constant; or the value of
//! every cell of a non-empty fill or zero matrix) and the proofs `zero` (every cell is exactly
//! zero) and `finite` (every cell is finite, for finite inputs in exact arithmetic). See the
//! module doc of [`crate::analysis`] for why the proofs are what the rules read.

use super::{is_la_scalar, Data, Kind, VarInfo, EG};
use crate::ir::Ir;
use egg::Id;
use spores_runtime::kernels::fastmath;

/// The proofs `(zero, finite)` of `enode` from its children's, before its constant is known
/// (a constant scalar's proofs come from its value, see [`crate::analysis`]'s `make`).
pub fn proofs(eg: &EG, enode: &Ir, kind: &Kind) -> (bool, bool) {
    let d = |i: &Id| &eg[*i].data;
    let (r, c) = match kind {
        Kind::Mat(r, c) => (*r, *c),
        _ => (1, 1),
    };
    match enode {
        Ir::Num(v) => (v.get() == 0.0, v.get().is_finite()),
        Ir::Symbol(s) => match eg.analysis.vars.get(s) {
            Some(VarInfo::Matrix { nnz, finite, .. }) => (*nnz == 0.0, *finite || *nnz == 0.0),
            Some(VarInfo::FiniteScalar) => (false, true),
            _ => (false, false),
        },
        Ir::MMul([a, b]) | Ir::TMMul([a, b]) => {
            let inner = match (enode, &d(a).kind) {
                (Ir::MMul(_), Kind::Mat(_, k)) | (Ir::TMMul(_), Kind::Mat(k, _)) => *k,
                _ => 1,
            };
            let (da, db) = (d(a), d(b));
            (inner == 0 || times_zero(da, db), da.finite && db.finite)
        }
        Ir::Sddmm(_)
        | Ir::WsLoss(_)
        | Ir::WsLossW(_)
        | Ir::WSubMM(_)
        | Ir::WSubMMT(_)
        | Ir::Wcemm(_)
        | Ir::WDivMM(_)
        | Ir::WDivMMT(_)
        | Ir::MMChain(_)
        | Ir::MMChainR(_)
        | Ir::SMMChain(_) => (false, false),
        Ir::Sprop(a) => (d(a).zero, d(a).finite),
        Ir::Nz(a) => (d(a).zero, true),
        Ir::Trans(a) | Ir::Neg(a) | Ir::Abs(a) | Ir::AsScalar(a) => (d(a).zero, d(a).finite),
        Ir::Bind([_, _, a]) | Ir::Unbind([_, _, a]) | Ir::Subst([_, _, a]) => {
            (d(a).zero, d(a).finite)
        }
        // exp and sigmoid of finite values are finite (exp may overflow: the documented
        // exception); log and sqrt of negatives are NaN
        Ir::Exp(a) | Ir::Sigmoid(a) => (false, d(a).finite),
        Ir::Sqrt(a) => (d(a).zero, d(a).zero),
        Ir::Log(_) => (false, false),
        Ir::EMul([a, b])
        | Ir::EAdd([a, b])
        | Ir::ESub([a, b])
        | Ir::EDiv([a, b])
        | Ir::EPow([a, b]) => {
            let (da, db) = (d(a), d(b));
            let (zero, finite) = match enode {
                Ir::EMul(_) => (times_zero(da, db), da.finite && db.finite),
                Ir::EAdd(_) | Ir::ESub(_) => (da.zero && db.zero, da.finite && db.finite),
                Ir::EDiv(_) => (
                    da.zero && finite_nonzero(db),
                    da.finite && finite_nonzero(db),
                ),
                _ => pow_proofs(da, db.konst),
            };
            if kind.is_scalar() {
                (zero, finite)
            } else {
                let empty = r == 0 || c == 0;
                (zero || empty, finite || empty)
            }
        }
        Ir::MSum(a) => {
            let empty = matches!(d(a).kind, Kind::Mat(r, c) if r == 0 || c == 0);
            (d(a).zero || empty, d(a).finite)
        }
        Ir::RowSums(a) | Ir::ColSums(a) => {
            let summed = match (enode, &d(a).kind) {
                (Ir::RowSums(_), Kind::Mat(_, n)) | (Ir::ColSums(_), Kind::Mat(n, _)) => *n,
                _ => 1,
            };
            (d(a).zero || summed == 0, d(a).finite || summed == 0)
        }
        Ir::Fill([v, _, _]) => {
            let empty = r == 0 || c == 0;
            (d(v).zero || empty, d(v).finite || empty)
        }
        Ir::Join([a, b]) => (times_zero(d(a), d(b)), d(a).finite && d(b).finite),
        Ir::Union([a, b]) => (d(a).zero && d(b).zero, d(a).finite && d(b).finite),
        Ir::Agg([i, a]) => {
            let empty = matches!(eg[*i].data.kind, Kind::Attr(0));
            let zero = d(a).zero || empty;
            (zero, d(a).finite || zero)
        }
        Ir::Dim(_) => (false, true),
        Ir::Pow([a, p]) => pow_proofs(d(a), d(p).konst),
    }
}

/// The sign bit of every cell of `enode` when it is known, by IEEE's rules (a product's sign
/// is the exclusive or of its factors'; a sum of two values of one sign has that sign; sums
/// over cells start from `+0.0`). Not meaningful for a NaN cell. It decides the sign of a
/// proved zero matrix ([`konst`]): `-0.5 * matrix(0, ...)` is `-0.0` in every cell, and
/// `x / -0.0` is `-Inf`.
pub fn negative(eg: &EG, enode: &Ir) -> Option<bool> {
    let n = |i: &Id| eg[*i].data.neg;
    let xor = |a: &Id, b: &Id| Some(n(a)? ^ n(b)?);
    let same = |x: Option<bool>, y: Option<bool>| if x == y { x } else { None };
    match enode {
        Ir::Num(v) => (!v.get().is_nan()).then(|| v.get().is_sign_negative()),
        Ir::Symbol(s) => match eg.analysis.vars.get(s) {
            Some(VarInfo::Scalar(Some(v))) if !v.is_nan() => Some(v.is_sign_negative()),
            _ => None,
        },
        Ir::Fill([v, _, _]) => n(v),
        Ir::Trans(a)
        | Ir::AsScalar(a)
        | Ir::Sqrt(a)
        | Ir::Bind([_, _, a])
        | Ir::Unbind([_, _, a])
        | Ir::Subst([_, _, a]) => n(a),
        Ir::Neg(a) => n(a).map(|x| !x),
        Ir::Abs(_) | Ir::Exp(_) | Ir::Sigmoid(_) | Ir::Nz(_) | Ir::Dim(_) => Some(false),
        Ir::EMul([a, b]) | Ir::EDiv([a, b]) | Ir::Join([a, b]) => xor(a, b),
        Ir::EAdd([a, b]) | Ir::Union([a, b]) => same(n(a), n(b)),
        Ir::ESub([a, b]) => same(n(a), n(b).map(|x| !x)),
        Ir::EPow([a, p]) | Ir::Pow([a, p]) => {
            let p = eg[*p].data.konst?;
            if p.fract() == 0.0 && p.abs() < 1e15 && (p as i64) % 2 != 0 {
                n(a)
            } else if p.is_nan() {
                None
            } else {
                // an even or zero power; a fractional power of a negative base is NaN
                Some(false)
            }
        }
        // a sum of non-negative cells from +0.0 is non-negative; of negative cells it may
        // be +0.0 (the sum of -0.0s) or the one cell read as itself (README, exception 3)
        Ir::MSum(a) | Ir::RowSums(a) | Ir::ColSums(a) | Ir::Agg([_, a]) => {
            (n(a) == Some(false)).then_some(false)
        }
        Ir::MMul([a, b]) | Ir::TMMul([a, b]) => {
            let empty = match (enode, &eg[*a].data.kind) {
                (Ir::MMul(_), Kind::Mat(_, k)) | (Ir::TMMul(_), Kind::Mat(k, _)) => *k == 0,
                _ => false,
            };
            (empty || xor(a, b) == Some(false)).then_some(false)
        }
        _ => None,
    }
}

/// The constant of `enode` given its proof `zero` (from [`proofs`]) and the sign of its
/// cells (from [`negative`]).
pub fn konst(eg: &EG, enode: &Ir, kind: &Kind, zero: bool, neg: Option<bool>) -> Option<f64> {
    let k = |i: &Id| eg[*i].data.konst;
    if is_la_scalar(enode, kind) {
        return match enode {
            Ir::Num(v) => Some(v.get()),
            Ir::Symbol(s) => match eg.analysis.vars.get(s) {
                Some(VarInfo::Scalar(v)) => *v,
                _ => None,
            },
            Ir::Sprop(a) => k(a).and_then(|v| times(v, 1.0 - v)),
            Ir::Nz(a) => k(a).map(|v| f64::from(u8::from(v != 0.0))),
            Ir::Neg(a) => k(a).map(|v| -v),
            Ir::Exp(a) => k(a).and_then(|v| exact(&[v], fastmath::exp(v), false)),
            Ir::Log(a) => k(a).map(f64::ln),
            Ir::Sqrt(a) => k(a).map(f64::sqrt),
            Ir::Abs(a) => k(a).map(f64::abs),
            Ir::Sigmoid(a) => k(a).and_then(|v| exact(&[v], fastmath::sigmoid(v), false)),
            Ir::EMul([a, b])
            | Ir::EAdd([a, b])
            | Ir::ESub([a, b])
            | Ir::EDiv([a, b])
            | Ir::EPow([a, b]) => match (k(a), k(b)) {
                (Some(x), Some(y)) => match enode {
                    Ir::EMul(_) => times(x, y),
                    Ir::EAdd(_) => plus(x, y),
                    Ir::ESub(_) => plus(x, -y),
                    Ir::EDiv(_) => exact(&[x, y], x / y, y == 0.0 || y.is_infinite()),
                    _ => power(x, y),
                },
                _ => zero.then_some(0.0),
            },
            Ir::MSum(_) | Ir::AsScalar(_) => zero.then_some(0.0),
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
        (
            Ir::WDivMMT(_) | Ir::WSubMMT(_) | Ir::MMChain(_) | Ir::MMChainR(_) | Ir::SMMChain(_),
            _,
        ) => None,
        // a zero of unknown sign has no constant (cleanup's empty-is-zero reads it as +0.0,
        // README exception 3); one of known sign has that zero
        (_, Kind::Mat(r, c)) => (zero && r * c > 0)
            .then(|| neg.map(|n| if n { -0.0 } else { 0.0 }))
            .flatten(),
        (Ir::Subst([_, _, a]), _) => k(a),
        (_, k2) if !k2.is_scalar() => None,
        // scalar relations
        (Ir::Bind([_, _, a]), _) => k(a).or(zero.then_some(0.0)),
        (Ir::Join([a, b]) | Ir::Union([a, b]), _) => match (k(a), k(b)) {
            (Some(x), Some(y)) => {
                if matches!(enode, Ir::Join(_)) {
                    times(x, y)
                } else {
                    plus(x, y)
                }
            }
            _ => zero.then_some(0.0),
        },
        (Ir::Agg(_), _) => zero.then_some(0.0),
        (Ir::Pow([a, p]), _) => {
            let pv = k(p).expect("checked by the schema");
            match k(a) {
                Some(v) => power(v, pv),
                None => zero.then_some(0.0),
            }
        }
        _ => None,
    }
}

/// `v`, the IEEE value of an operation on the constants `inputs`, unless it overflowed or
/// underflowed: finite inputs with an infinite result, or non-zero finite inputs with a zero
/// result, where the exact result is neither (`pole`: the operation is exactly infinite or
/// zero there, as `x / 0`, `0 ^ -1`, `x / Inf`). Such a result is not folded: the analysis
/// reasons in exact arithmetic (its `finite` proofs count a product of finite values
/// finite), so an overflowed constant would carry a false proof (`1e200 * 1e200` finite, or
/// `1e-200 * 1e-200` zero) into every class the rules equate with it. The expression stays
/// in the plan and the runtime computes the same IEEE value.
fn exact(inputs: &[f64], v: f64, pole: bool) -> Option<f64> {
    let finite = inputs.iter().all(|x| x.is_finite());
    let nonzero = inputs.iter().all(|x| *x != 0.0);
    if pole || !finite || v.is_nan() {
        Some(v)
    } else if v.is_infinite() || (v == 0.0 && nonzero) {
        None
    } else {
        Some(v)
    }
}

/// `x * y` folded, unless it overflows or underflows (see [`exact`]).
fn times(x: f64, y: f64) -> Option<f64> {
    exact(&[x, y], x * y, false)
}

/// `x + y` folded when it is exact: the rounded sum is the real sum (its TwoSum error is
/// zero), or an operand is not finite (IEEE's value, see [`exact`]). A rounded sum is not
/// folded: rules reassociate sums, and the folded constants of two orders of the same sum
/// can differ, even in sign or in being zero (`1.5e200 + (-1.5e200 + 1e-8)` rounds to 0,
/// the sum is 1e-8), and a wrong zero would become a `zero` proof. The expression stays in
/// the plan and the runtime computes it.
fn plus(x: f64, y: f64) -> Option<f64> {
    let v = x + y;
    if !x.is_finite() || !y.is_finite() {
        return Some(v);
    }
    if v.is_infinite() {
        return None;
    }
    // Knuth's TwoSum: the rounding error of `x + y`, exactly
    let yv = v - x;
    let err = (x - (v - yv)) + (y - yv);
    (err == 0.0).then_some(v)
}

/// `x ^ p` folded, unless it overflows or underflows (`0 ^ p` is exact, a pole for p < 0).
fn power(x: f64, p: f64) -> Option<f64> {
    if x == 0.0 {
        Some(x.powf(p))
    } else if p == 0.0 {
        Some(1.0)
    } else {
        exact(&[x, p], x.powf(p), false)
    }
}

/// The IEEE value of each cell of an arithmetic `enode` whose operands' cells all have a
/// known value (scalars or fills, folded or not: [`Data::value`]), as the runtime computes
/// it, overflow and rounding included; `None` for other nodes.
pub fn ieee(eg: &EG, enode: &Ir, kind: &Kind) -> Option<f64> {
    let k = |i: &Id| eg[*i].data.value;
    match enode {
        Ir::Fill([v, _, _]) => match kind {
            Kind::Mat(r, c) if r * c > 0 => k(v),
            _ => None,
        },
        // cell-wise functions and moves keep the value of a fill (`-(1e308 + 1) ^ 2`,
        // `exp(abs(1e308 + 1))`: without them the LA form of an overflowing constant had no
        // value while its relational twin had one, and a `zero` proof built on the LA form's
        // `finite` made `matrix(Inf) * 0` zero)
        Ir::Neg(a) => k(a).map(|v| -v),
        Ir::Abs(a) => k(a).map(f64::abs),
        Ir::Sqrt(a) => k(a).map(f64::sqrt),
        Ir::Log(a) => k(a).map(f64::ln),
        Ir::Trans(a) | Ir::AsScalar(a) => k(a),
        Ir::Bind([_, _, a]) | Ir::Unbind([_, _, a]) | Ir::Subst([_, _, a]) => k(a),
        Ir::Exp(a) => k(a).map(fastmath::exp),
        Ir::Sigmoid(a) => k(a).map(fastmath::sigmoid),
        Ir::Sprop(a) => k(a).map(|v| v * (1.0 - v)),
        Ir::EMul([a, b]) | Ir::Join([a, b]) => Some(k(a)? * k(b)?),
        Ir::EAdd([a, b]) | Ir::Union([a, b]) => Some(k(a)? + k(b)?),
        Ir::ESub([a, b]) => Some(k(a)? - k(b)?),
        Ir::EDiv([a, b]) => Some(k(a)? / k(b)?),
        Ir::EPow([a, b]) | Ir::Pow([a, b]) => Some(k(a)?.powf(k(b)?)),
        _ => None,
    }
}

/// Whether `x` is finite and nonzero, so that `0 / x` is 0 and `y / x` finite for finite y.
fn finite_nonzero(d: &Data) -> bool {
    d.konst.is_some_and(|v| v.is_finite() && v != 0.0)
}

/// Whether `a * b` (a join, an element-wise or a matrix product) is provably zero: one side
/// is zero and the other finite (`0 * Inf` is NaN).
fn times_zero(a: &Data, b: &Data) -> bool {
    (a.zero && b.is_finite()) || (b.zero && a.is_finite())
}

/// `zero` and `finite` of `a ^ p`: zero for a zero base and a positive exponent; finite for
/// a finite base and a whole non-negative exponent, or for a positive constant base.
fn pow_proofs(a: &Data, p: Option<f64>) -> (bool, bool) {
    let zero = a.zero && p.is_some_and(|p| p > 0.0);
    let whole = p.is_some_and(|p| p >= 0.0 && p.fract() == 0.0);
    let positive =
        a.konst.is_some_and(|v| v > 0.0 && v.is_finite()) && p.is_some_and(f64::is_finite);
    (zero, (a.finite && whole) || positive)
}
