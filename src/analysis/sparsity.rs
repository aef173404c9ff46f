//! The sparsity fact: the estimated number of non-zeros of a class, paper Fig. 12
//! (`S[X*Y] = min(S_X, S_Y)`, `S[X+Y] = min(1, S_X + S_Y)`, `S[Σ_i X] = min(1, |i| S_X)`).
//! An estimate for the cost model only: rules that drop or fold terms read the proofs
//! (`zero`, `finite`), never this.

use super::{is_la_scalar, Kind, VarInfo, EG};
use crate::ir::Ir;
use egg::Id;

/// The estimated non-zeros of `enode`, given its kind and its constant facts (a proved zero
/// has none; a constant scalar has one unless it is 0).
pub fn nnz(eg: &EG, enode: &Ir, kind: &Kind, zero: bool, konst: Option<f64>) -> f64 {
    if is_la_scalar(enode, kind) {
        return match konst {
            Some(v) => f64::from(u8::from(v != 0.0)),
            None if zero => 0.0,
            None => 1.0,
        };
    }
    match (enode, kind) {
        (_, Kind::Attr(_)) => 0.0,
        (Ir::Symbol(s), _) => match eg.analysis.vars.get(s) {
            Some(VarInfo::Matrix { nnz, .. }) => *nnz,
            _ => unreachable!("the schema makes other symbols scalars or attributes"),
        },
        (Ir::Join(_) | Ir::Union(_), k) if k.is_scalar() => {
            konst.map_or(1.0, |v| f64::from(u8::from(v != 0.0)))
        }
        (Ir::Agg(_), k) if k.is_scalar() => f64::from(u8::from(!zero)),
        (Ir::Pow(_), k) if k.is_scalar() => 1.0,
        _ if zero => 0.0,
        _ => density(eg, enode, kind).clamp(0.0, 1.0) * kind.cells(),
    }
}

/// The estimated density of a matrix or relation `enode` from its children's.
fn density(eg: &EG, enode: &Ir, kind: &Kind) -> f64 {
    let s = |i: &Id| eg[*i].data.sparsity();
    let cols = |i: &Id| match eg[*i].data.kind {
        Kind::Mat(_, c) => c as f64,
        _ => 1.0,
    };
    let rows = |i: &Id| match eg[*i].data.kind {
        Kind::Mat(r, _) => r as f64,
        _ => 1.0,
    };
    match enode {
        Ir::MMul([a, b]) => (cols(a) * s(a).min(s(b))).min(1.0),
        Ir::TMMul([a, b]) => (rows(a) * s(a).min(s(b))).min(1.0),
        Ir::Sddmm([x, ..]) => s(x),
        Ir::WSubMM([w, x, ..]) => (cols(x) * s(w)).min(1.0),
        Ir::WSubMMT([w, x, ..]) => (rows(x) * s(w)).min(1.0),
        Ir::WDivMM([x, ..]) => (cols(x) * s(x)).min(1.0),
        Ir::WDivMMT([x, ..]) => (rows(x) * s(x)).min(1.0),
        Ir::MMChain(_) | Ir::MMChainR(_) | Ir::SMMChain(_) => 1.0,
        Ir::Sprop(a)
        | Ir::Nz(a)
        | Ir::Trans(a)
        | Ir::Neg(a)
        | Ir::Sqrt(a)
        | Ir::Abs(a)
        | Ir::Unbind([_, _, a])
        | Ir::Bind([_, _, a])
        | Ir::Subst([_, _, a]) => s(a),
        Ir::Exp(_) | Ir::Log(_) | Ir::Sigmoid(_) => 1.0,
        Ir::EMul([a, b]) | Ir::Join([a, b]) => s(a).min(s(b)),
        Ir::EAdd([a, b]) | Ir::ESub([a, b]) | Ir::Union([a, b]) => (s(a) + s(b)).min(1.0),
        Ir::EDiv([a, _]) => s(a),
        Ir::EPow([a, b]) | Ir::Pow([a, b]) => match eg[*b].data.konst {
            Some(p) if p > 0.0 => s(a),
            _ => 1.0,
        },
        Ir::RowSums(a) => (cols(a) * s(a)).min(1.0),
        Ir::ColSums(a) => (rows(a) * s(a)).min(1.0),
        Ir::Fill([v, ..]) => {
            if eg[*v].data.zero {
                0.0
            } else {
                1.0
            }
        }
        Ir::Agg([i, a]) => {
            let n = match eg[*i].data.kind {
                Kind::Attr(n) => n as f64,
                _ => 1.0,
            };
            (n * s(a)).min(1.0)
        }
        _ => unreachable!("{enode} is not a matrix or relation operator (kind {kind:?})"),
    }
}
