//! Side conditions of rules, referenced by name in rules/*.rules (`if not-free(?i, ?a)`).

use crate::analysis::{attr_symbol, chain, factors, full_chain, residual_chain, schema, Kind, EG};
use crate::ir::Ir;
use egg::{Condition, Id, Subst, Var};

/// A named condition with its pattern variables.
#[derive(Clone, Debug)]
pub struct Cond {
    /// which condition
    pub kind: CondKind,
    /// its arguments
    pub args: Vec<Var>,
}

/// The conditions rule files may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CondKind {
    /// `not-free(?i, ?a)`: attribute `?i` is not a free attribute of relation `?a`
    NotFree,
    /// `scalar(?a, ...)`: every argument is a scalar
    Scalar,
    /// `matrix(?a)`: the argument is an LA matrix
    Matrix,
    /// `not-one(?c)`: the argument is not the constant 1
    NotOne,
    /// `zero(?z)`: the argument is a relation proved to be all zeros
    Zero,
    /// `integer(?p, ...)`: every argument is a constant whole number
    Integer,
    /// `positive(?p, ...)`: every argument is a constant greater than zero
    Positive,
    /// `scales(?i, ?a)`: `sum_i ?a` may be written `?a * dim(i)` (and a join moved under a sum
    /// over `i`): attribute `?i` is not empty, or `?a` is finite (`Inf * 0` is NaN where the
    /// sum over an empty attribute is 0)
    Scales,
    /// `finite(?a, ...)`: every argument is proved finite (no Inf, no NaN), as sum-product
    /// identities need: `Inf * (2 - 1)` is Inf where `Inf * 2 - Inf * 1` is NaN
    Finite,
    /// `covers(?a, ?b)`: the free attributes of `?b` are among those of `?a`
    Covers,
    /// `ones(?o)`: the argument binds a matrix of ones (`(b i j (fill 1 r c))`)
    Ones,
    /// `factors-t(?X, ?U, ?V)`: X is `m x n`, U `m x k`, V `n x k` (X matches `U %*% t(V)`
    /// without broadcasting)
    FactorsT,
    /// `factors(?X, ?U, ?H)`: X is `m x n`, U `m x k`, H `k x n` (X matches `U %*% H`)
    Factors,
    /// `same-shape(?A, ?B)`: both are matrices of the same shape
    SameShape,
    /// `chain(?X, ?w, ?v)`: X is `m x n`, v `n x k`, and w a scalar, `m x 1` or `m x k`
    Chain,
    /// `residual-chain(?X, ?v, ?y)`: X is `m x n`, v `n x 1` and y `m x 1`
    ResidualChain,
    /// `full-chain(?X, ?P, ?V)`: X is `m x n`, P `m x k` and V `n x k`
    FullChain,
    /// `pattern(?X)`: the driver of a fused operator that skips its zeros is not proved all
    /// zero. The skipped zeros are the README's exception 4 for a sparse input's zeros; a
    /// driver the optimizer made zero (`0 * X`) would skip every cell, where the expression
    /// as written has NaN for `0 * log(0)`
    Pattern,
}

impl CondKind {
    /// Looks a condition up by its name in rule files, with its arity.
    pub fn from_name(name: &str) -> Option<(CondKind, std::ops::RangeInclusive<usize>)> {
        Some(match name {
            "not-free" => (CondKind::NotFree, 2..=2),
            "scalar" => (CondKind::Scalar, 1..=4),
            "matrix" => (CondKind::Matrix, 1..=1),
            "not-one" => (CondKind::NotOne, 1..=1),
            "zero" => (CondKind::Zero, 1..=1),
            "integer" => (CondKind::Integer, 1..=4),
            "positive" => (CondKind::Positive, 1..=4),
            "scales" => (CondKind::Scales, 2..=2),
            "finite" => (CondKind::Finite, 1..=4),
            "covers" => (CondKind::Covers, 2..=2),
            "ones" => (CondKind::Ones, 1..=1),
            "factors-t" => (CondKind::FactorsT, 3..=3),
            "factors" => (CondKind::Factors, 3..=3),
            "same-shape" => (CondKind::SameShape, 2..=2),
            "chain" => (CondKind::Chain, 3..=3),
            "residual-chain" => (CondKind::ResidualChain, 3..=3),
            "full-chain" => (CondKind::FullChain, 3..=3),
            "pattern" => (CondKind::Pattern, 1..=1),
            _ => return None,
        })
    }
}

/// All conditions of a rule must hold.
#[derive(Clone, Debug)]
pub struct All(pub Vec<Cond>);

impl Cond {
    fn holds(&self, eg: &EG, subst: &Subst) -> bool {
        let a = |k: usize| -> Id { subst[self.args[k]] };
        match self.kind {
            CondKind::NotFree => match (attr_symbol(eg, a(0)), schema(eg, a(1))) {
                (Some(i), Some(s)) => !s.contains_key(&i),
                _ => false,
            },
            CondKind::Scalar => (0..self.args.len()).all(|k| eg[a(k)].data.kind.is_scalar()),
            CondKind::Matrix => matches!(eg[a(0)].data.kind, Kind::Mat(..)),
            CondKind::NotOne => eg[a(0)].data.konst != Some(1.0),
            CondKind::Zero => matches!(eg[a(0)].data.kind, Kind::Rel(_)) && eg[a(0)].data.zero,
            CondKind::Pattern => !eg[a(0)].data.zero && eg[a(0)].data.konst != Some(0.0),
            CondKind::Integer => (0..self.args.len()).all(|k| {
                eg[a(k)]
                    .data
                    .konst
                    .is_some_and(|v| v.fract() == 0.0 && v.abs() < 1e15)
            }),
            CondKind::Positive => {
                (0..self.args.len()).all(|k| eg[a(k)].data.konst.is_some_and(|v| v > 0.0))
            }
            CondKind::Finite => (0..self.args.len()).all(|k| eg[a(k)].data.is_finite()),
            CondKind::Scales => {
                eg[a(1)].data.is_finite() || matches!(eg[a(0)].data.kind, Kind::Attr(n) if n > 0)
            }
            CondKind::FactorsT | CondKind::Factors => {
                let (x, u, v) = (
                    &eg[a(0)].data.kind,
                    &eg[a(1)].data.kind,
                    &eg[a(2)].data.kind,
                );
                match (self.kind, v) {
                    // H is `k x n`: V = t(H)
                    (CondKind::Factors, Kind::Mat(k, n)) => {
                        factors(x, u, &Kind::Mat(*n, *k)).is_some()
                    }
                    _ => factors(x, u, v).is_some(),
                }
            }
            CondKind::SameShape => match (&eg[a(0)].data.kind, &eg[a(1)].data.kind) {
                (Kind::Mat(r, c), Kind::Mat(r2, c2)) => (r, c) == (r2, c2),
                _ => false,
            },
            CondKind::Chain => chain(
                &eg[a(0)].data.kind,
                &eg[a(1)].data.kind,
                &eg[a(2)].data.kind,
            )
            .is_some(),
            CondKind::ResidualChain => residual_chain(
                &eg[a(0)].data.kind,
                &eg[a(1)].data.kind,
                &eg[a(2)].data.kind,
            )
            .is_some(),
            CondKind::FullChain => full_chain(
                &eg[a(0)].data.kind,
                &eg[a(1)].data.kind,
                &eg[a(2)].data.kind,
            )
            .is_some(),
            CondKind::Ones => eg[a(0)].nodes.iter().any(|n| match n {
                Ir::Bind([_, _, m]) => eg[*m].nodes.iter().any(|f| match f {
                    Ir::Fill([v, _, _]) => eg[*v].data.konst == Some(1.0),
                    _ => false,
                }),
                _ => false,
            }),
            CondKind::Covers => match (schema(eg, a(0)), schema(eg, a(1))) {
                (Some(sa), Some(sb)) => sb.keys().all(|k| sa.contains_key(k)),
                _ => false,
            },
        }
    }
}

impl Condition<Ir, crate::analysis::Context> for All {
    fn check(&self, eg: &mut EG, _eclass: Id, subst: &Subst) -> bool {
        self.0.iter().all(|c| c.holds(eg, subst))
    }

    fn vars(&self) -> Vec<Var> {
        self.0.iter().flat_map(|c| c.args.clone()).collect()
    }
}
