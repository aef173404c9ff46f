//! The schema fact: what a class denotes ([`Kind`]): an attribute with its size, an LA matrix
//! with its shape, or a relation with its free attributes. A term whose operands do not fit
//! is an error (the class becomes [`Kind::Invalid`] and is never extracted). The shape
//! predicates of the fused operators ([`factors`], [`chain`]) are shared with the rules'
//! side conditions (`saturate::conditions`).

use super::{Kind, Schema, VarInfo, EG};
use crate::ir::{is_attr, is_unit, Ir};
use egg::{Id, Symbol};

/// The kind of the class `enode` would be in, from its children's kinds (and, for `fill` and
/// `pow`, their constants); `Err` names what does not fit.
pub fn kind(eg: &EG, enode: &Ir) -> Result<Kind, String> {
    let k = |i: &Id| &eg[*i].data.kind;
    let konst = |i: &Id| eg[*i].data.konst;
    let err = |m: &str| Err(m.to_string());
    match enode {
        Ir::Num(_) => Ok(Kind::scalar()),
        Ir::Symbol(s) if is_attr(s.as_str()) => match eg.analysis.attr_size(*s) {
            Some(n) => Ok(Kind::Attr(n)),
            None => Err(format!("attribute {s} of unknown size")),
        },
        Ir::Symbol(s) => match eg.analysis.vars.get(s) {
            Some(VarInfo::Matrix { rows, cols, .. }) => Ok(Kind::Mat(*rows, *cols)),
            Some(_) => Ok(Kind::scalar()),
            None => Err(format!("unknown variable {s}")),
        },
        Ir::MMul([a, b]) => match (k(a), k(b)) {
            (Kind::Mat(r, k1), Kind::Mat(k2, c)) if k1 == k2 => Ok(Kind::Mat(*r, *c)),
            _ => err("mmul shapes"),
        },
        Ir::TMMul([a, b]) => match (k(a), k(b)) {
            (Kind::Mat(k1, r), Kind::Mat(k2, c)) if k1 == k2 => Ok(Kind::Mat(*r, *c)),
            _ => err("tmmul shapes"),
        },
        Ir::Sddmm([x, u, v]) => match factors(k(x), k(u), k(v)) {
            Some((m, n, _)) => Ok(Kind::Mat(m, n)),
            None => err("sddmm shapes"),
        },
        Ir::WsLoss([x, u, v]) => match factors(k(x), k(u), k(v)) {
            Some(_) => Ok(Kind::scalar()),
            None => err("wsloss shapes"),
        },
        Ir::WsLossW([w, x, u, v]) | Ir::WSubMM([w, x, u, v]) | Ir::WSubMMT([w, x, u, v]) => {
            match (factors(k(x), k(u), k(v)), k(w)) {
                (Some((m, n, kk)), Kind::Mat(m2, n2)) if (m, n) == (*m2, *n2) => match enode {
                    Ir::WsLossW(_) => Ok(Kind::scalar()),
                    Ir::WSubMMT(_) => Ok(Kind::Mat(kk, n)),
                    _ => Ok(Kind::Mat(m, kk)),
                },
                _ => err("fused operator shapes"),
            }
        }
        Ir::Wcemm([x, u, v, e]) | Ir::WDivMM([x, u, v, e]) | Ir::WDivMMT([x, u, v, e]) => {
            match (factors(k(x), k(u), k(v)), k(e).is_scalar()) {
                (Some((m, n, kk)), true) => Ok(match enode {
                    Ir::Wcemm(_) => Kind::scalar(),
                    Ir::WDivMM(_) => Kind::Mat(m, kk),
                    _ => Kind::Mat(kk, n),
                }),
                _ => err("fused operator shapes"),
            }
        }
        Ir::MMChain([x, w, v]) => match chain(k(x), k(w), k(v)) {
            Some((n, kk)) => Ok(Kind::Mat(n, kk)),
            None => err("mmchain shapes"),
        },
        Ir::MMChainR([x, v, y]) => match residual_chain(k(x), k(v), k(y)) {
            Some(n) => Ok(Kind::Mat(n, 1)),
            None => err("mmchainr shapes"),
        },
        Ir::SMMChain([x, p, v]) => match full_chain(k(x), k(p), k(v)) {
            Some((n, kk)) => Ok(Kind::Mat(n, kk)),
            None => err("smmchain shapes"),
        },
        Ir::Sprop(a)
        | Ir::Nz(a)
        | Ir::Neg(a)
        | Ir::Exp(a)
        | Ir::Log(a)
        | Ir::Sqrt(a)
        | Ir::Abs(a)
        | Ir::Sigmoid(a) => match k(a) {
            Kind::Mat(r, c) => Ok(Kind::Mat(*r, *c)),
            x if x.is_scalar() => Ok(Kind::scalar()),
            _ => err(match enode {
                Ir::Sprop(_) | Ir::Nz(_) => "element-wise operand",
                Ir::Neg(_) => "neg",
                _ => "unary map",
            }),
        },
        Ir::Trans(a) => match k(a) {
            Kind::Mat(r, c) => Ok(Kind::Mat(*c, *r)),
            _ => err("t of a non-matrix"),
        },
        Ir::EMul([a, b])
        | Ir::EAdd([a, b])
        | Ir::ESub([a, b])
        | Ir::EDiv([a, b])
        | Ir::EPow([a, b]) => {
            if k(a).is_scalar() && k(b).is_scalar() {
                return Ok(Kind::scalar());
            }
            let (Some(sa), Some(sb)) = (ew_shape(k(a)), ew_shape(k(b))) else {
                return err("element-wise operand");
            };
            match spores_runtime::kernels::broadcast_shape(sa, sb) {
                Some((r, c)) => Ok(Kind::Mat(r, c)),
                None => err("element-wise shapes"),
            }
        }
        Ir::MSum(a) => match k(a) {
            Kind::Mat(..) => Ok(Kind::scalar()),
            _ => err("sum of a non-matrix"),
        },
        Ir::RowSums(a) => match k(a) {
            Kind::Mat(r, _) => Ok(Kind::Mat(*r, 1)),
            _ => err("rowSums"),
        },
        Ir::ColSums(a) => match k(a) {
            Kind::Mat(_, c) => Ok(Kind::Mat(1, *c)),
            _ => err("colSums"),
        },
        Ir::Fill([_, r, c]) => match (konst(r), konst(c)) {
            (Some(r), Some(c)) if is_size(r) && is_size(c) => Ok(Kind::Mat(r as usize, c as usize)),
            _ => err("fill needs constant whole sizes"),
        },
        Ir::AsScalar(a) => match k(a) {
            Kind::Mat(1, 1) => Ok(Kind::scalar()),
            _ => err("as.scalar of a non-1x1"),
        },
        Ir::Bind([i, j, a]) => {
            let (Some((si, ni)), Some((sj, nj))) = (attr_of(eg, *i), attr_of(eg, *j)) else {
                return err("bind attributes");
            };
            let (r, c) = match k(a) {
                Kind::Mat(r, c) => (*r, *c),
                x if x.is_scalar() => (1, 1),
                _ => return err("bind of a non-matrix"),
            };
            if ni != r || nj != c || (si == sj && !is_unit(si)) {
                return err("bind attribute sizes");
            }
            let mut s = Schema::new();
            for (a, n) in [(si, ni), (sj, nj)] {
                if !is_unit(a) {
                    s.insert(a, n);
                }
            }
            Ok(Kind::Rel(s))
        }
        Ir::Unbind([i, j, a]) => {
            let (Some((si, ni)), Some((sj, nj))) = (attr_of(eg, *i), attr_of(eg, *j)) else {
                return err("unbind attributes");
            };
            let Kind::Rel(s) = k(a) else {
                return err("unbind of a non-relation");
            };
            let want: Schema = [(si, ni), (sj, nj)]
                .into_iter()
                .filter(|(a, _)| !is_unit(*a))
                .collect();
            if *s != want || (si == sj && !is_unit(si)) {
                return err("unbind schema");
            }
            Ok(Kind::Mat(ni, nj))
        }
        Ir::Join([a, b]) | Ir::Union([a, b]) => {
            let (Kind::Rel(sa), Kind::Rel(sb)) = (k(a), k(b)) else {
                return err("join/union of non-relations");
            };
            let mut s = sa.clone();
            for (k2, n) in sb {
                if let Some(m) = s.insert(*k2, *n) {
                    if m != *n {
                        return err("attribute with two sizes");
                    }
                }
            }
            Ok(Kind::Rel(s))
        }
        Ir::Agg([i, a]) => {
            let Some((si, _)) = attr_of(eg, *i) else {
                return err("sum attribute");
            };
            let Kind::Rel(s) = k(a) else {
                return err("sum of a non-relation");
            };
            let mut s = s.clone();
            s.remove(&si);
            Ok(Kind::Rel(s))
        }
        Ir::Subst([n, o, a]) => {
            let (Some((sn, nn)), Some((so, no))) = (attr_of(eg, *n), attr_of(eg, *o)) else {
                return err("subst attributes");
            };
            let Kind::Rel(s) = k(a) else {
                return err("subst of a non-relation");
            };
            let mut s = s.clone();
            if s.remove(&so).is_some() {
                if nn != no || s.contains_key(&sn) {
                    return err("subst capture or size");
                }
                s.insert(sn, nn);
            }
            Ok(Kind::Rel(s))
        }
        Ir::Dim(i) => match attr_of(eg, *i) {
            Some(_) => Ok(Kind::scalar()),
            None => err("dim of a non-attribute"),
        },
        Ir::Pow([a, p]) => match (k(a), konst(p)) {
            (Kind::Rel(s), Some(_)) => Ok(Kind::Rel(s.clone())),
            _ => err("pow needs a relation and a constant exponent"),
        },
    }
}

/// The attribute symbol and size of an attribute class.
pub(super) fn attr_of(eg: &EG, id: Id) -> Option<(Symbol, usize)> {
    match eg[id].data.kind {
        Kind::Attr(n) => eg[id].nodes.iter().find_map(|n2| match n2 {
            Ir::Symbol(s) => Some((*s, n)),
            _ => None,
        }),
        _ => None,
    }
}

/// `(m, n, k)` when X is `m x n`, U `m x k` and V `n x k`: the operands of a fused operator
/// over `U %*% t(V)` (no broadcasting).
pub fn factors(x: &Kind, u: &Kind, v: &Kind) -> Option<(usize, usize, usize)> {
    match (x, u, v) {
        (Kind::Mat(m, n), Kind::Mat(m2, k), Kind::Mat(n2, k2)) if m == m2 && n == n2 && k == k2 => {
            Some((*m, *n, *k))
        }
        _ => None,
    }
}

/// `(n, k)` when X is `m x n`, v `n x k` and w a scalar, `m x 1` or `m x k`: the operands of
/// `t(X) %*% (w * (X %*% v))` (mmchain), whose result is `n x k`.
pub fn chain(x: &Kind, w: &Kind, v: &Kind) -> Option<(usize, usize)> {
    match (x, v) {
        (Kind::Mat(m, n), Kind::Mat(n2, k))
            if n == n2
                && (w.is_scalar()
                    || matches!(w, Kind::Mat(m2, c) if m2 == m && (*c == 1 || c == k))) =>
        {
            Some((*n, *k))
        }
        _ => None,
    }
}

/// `n` when X is `m x n`, v `n x 1` and y `m x 1`: the operands of `t(X) %*% (X %*% v - y)`
/// (mmchainr), whose result is `n x 1`.
pub fn residual_chain(x: &Kind, v: &Kind, y: &Kind) -> Option<usize> {
    match (x, v, y) {
        (Kind::Mat(m, n), Kind::Mat(n2, 1), Kind::Mat(m2, 1)) if n == n2 && m == m2 => Some(*n),
        _ => None,
    }
}

/// `t(X) %*% (P * (X %*% V) - P * rowSums(P * (X %*% V)))` (smmchain): X `m x n`, P `m x k`
/// and V `n x k`; the result is `n x k`.
pub fn full_chain(x: &Kind, p: &Kind, v: &Kind) -> Option<(usize, usize)> {
    match (x, p, v) {
        (Kind::Mat(m, n), Kind::Mat(m2, k2), Kind::Mat(n2, k)) if m == m2 && n == n2 && k == k2 => {
            Some((*n, *k))
        }
        _ => None,
    }
}

/// Shape of an operand of an element-wise LA operator: matrices, or scalars as 1x1.
fn ew_shape(k: &Kind) -> Option<(usize, usize)> {
    match k {
        Kind::Mat(r, c) => Some((*r, *c)),
        k if k.is_scalar() => Some((1, 1)),
        _ => None,
    }
}

/// Whether a constant is a valid matrix dimension (whole, non-negative, not absurd).
fn is_size(v: f64) -> bool {
    v >= 0.0 && v.fract() == 0.0 && v < 1e15
}
