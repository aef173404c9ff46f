//! E-class analyses, one combined [`Data`] per class, each fact computed by one function of
//! its own file (`schema.rs`: [`Kind`]; `constant.rs`: `konst`, `zero`, `finite`;
//! `sparsity.rs`: `nnz`), combined by [`Context`]'s `make`:
//!
//! | fact | what it is | merged by |
//! |---|---|---|
//! | [`Kind`] (schema) | an attribute with its size; an LA matrix with its shape; or a relation with its free attributes and their sizes (a scalar is a relation without attributes) | must agree (class invariant) |
//! | `nnz` (sparsity) | estimated non-zeros, paper Fig. 12 (`S[X*Y] = min(S_X, S_Y)`, `S[X+Y] = min(1, S_X + S_Y)`, `S[Σ_i X] = min(1, |i| S_X)`) | the tighter (smaller) estimate |
//! | `konst` (constants) | the value of a scalar class known at compile time, folded as soon as all children are constant when the IEEE result is exact (no overflow, underflow or rounded sum) | either side's; two different values are a conflict |
//! | `value` | the IEEE value of a class computed from known operands, folded or not: it only disproves `finite` (and `zero`) | either side's; the non-finite one |
//! | `zero` | every cell is exactly zero (a proof, unlike `nnz`, which is an estimate) | either side's proof, unless the class's `value` is not zero |
//! | `finite` | every cell is finite (no Inf, no NaN) for finite inputs in exact arithmetic | either side's proof, unless the class's `value` is not finite |
//! | `neg` | the sign bit every cell has, when known (`-0.0` and `+0.0` differ in it), IEEE sign rules | either side's |
//!
//! **IEEE soundness.** `nnz` is only an estimate for the cost model; rules that drop or fold
//! terms read the proofs `zero` and `finite`. `0 * x = 0` holds only when x is finite, so a
//! join (or `*`) is zero only when one side is zero and the other finite; a product of
//! finite values is counted finite (an overflow to Inf that the rewritten plan does not
//! reproduce is the documented exception of reassociation). The identities of sums of
//! products (distributivity, moving a factor through an aggregate, associativity of
//! products) hold in IEEE arithmetic only for finite factors (`Inf * (2 - 1)` is Inf,
//! `Inf * 2 - Inf * 1` NaN), so they carry `finite(...)` conditions. At run time the inputs
//! are scanned for Inf and NaN (one pass over their stored values, part of the plan cache
//! key); `spores equiv` and `spores opt` assume finite inputs, as SystemDS's rewriters do.
//!
//! **Constants are not rewritten.** A scalar class with a known constant needs no plan but
//! the constant itself, so the scheduler does not apply rules to it (see
//! `saturate::runner`). Rewrites are identities of real arithmetic; applied to constants,
//! they would equate terms whose IEEE values differ (`(a*b)^p` and `a^p * b^p` with an
//! overflow), and folding would then merge different numbers. Should two classes with
//! different constants still be merged, the merge is counted in [`Context::conflicts`] and
//! the optimizer discards the e-graph instead of trusting it.
//!
//! Variables (their shapes and non-zeros) and attribute sizes come from the block's context,
//! held in [`Context`], the analysis value of the e-graph. Appliers that create fresh
//! attributes register their sizes there.

mod constant;
mod schema;
mod sparsity;

pub use schema::{chain, factors, full_chain, residual_chain};

use crate::ir::{Const, Ir};
use egg::{Analysis, DidMerge, EGraph, Id, Symbol};
use std::collections::{BTreeMap, HashMap};

/// An e-graph of the optimizer.
pub type EG = EGraph<Ir, Context>;

/// A free-attribute schema: attribute name to size.
pub type Schema = BTreeMap<Symbol, usize>;

/// What a class denotes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// an attribute name, with the size of its dimension
    Attr(usize),
    /// an LA matrix `rows x cols`
    Mat(usize, usize),
    /// a K-relation with these free attributes (a scalar when empty)
    Rel(Schema),
    /// a term that is not well-formed (a bug in a rule or in lowering; never extracted)
    Invalid(String),
}

impl Kind {
    /// The scalar kind.
    pub fn scalar() -> Kind {
        Kind::Rel(Schema::new())
    }

    /// Whether this is a scalar.
    pub fn is_scalar(&self) -> bool {
        matches!(self, Kind::Rel(s) if s.is_empty())
    }

    /// The number of cells (1 for scalars and attributes).
    pub fn cells(&self) -> f64 {
        match self {
            Kind::Mat(r, c) => (*r * *c) as f64,
            Kind::Rel(s) => s.values().map(|&n| n as f64).product(),
            _ => 1.0,
        }
    }
}

/// The facts of one class.
#[derive(Clone, Debug)]
pub struct Data {
    /// schema / shape
    pub kind: Kind,
    /// estimated number of non-zeros
    pub nnz: f64,
    /// the constant value of a scalar class, or of every cell of a non-empty matrix class
    /// (a fill, a zero matrix)
    pub konst: Option<f64>,
    /// proved: every cell is exactly zero
    pub zero: bool,
    /// proved: every cell is finite (for finite inputs, up to overflow)
    pub finite: bool,
    /// a scalar computed from constants that was not folded (an overflow, an underflow, a
    /// rounded sum): rules are not applied to it, as to a constant
    pub unfolded: bool,
    /// the IEEE value of every cell as the runtime computes it from known operands (the
    /// constant when there is one; else the value of one node of the class, the non-finite
    /// one when nodes disagree): not a constant for rewrites, only a disproof of `finite`
    /// and `zero`
    /// (`(1 + 1e308) ^ 2` is Inf though no constant was folded on the way)
    pub value: Option<f64>,
    /// the sign bit of every cell, when it is known (`Some(true)`: every cell is negative or
    /// `-0.0`); it gives a zero matrix its zero's sign, so that a zero the optimizer builds
    /// (`-0.5 * matrix(0, ...)`) is not taken for `+0.0` (README, exception 3 concerns only
    /// zeros of unknown sign)
    pub neg: Option<bool>,
}

impl Data {
    /// Whether every cell is proved finite and no known constant says otherwise.
    pub fn is_finite(&self) -> bool {
        self.finite && self.konst.is_none_or(f64::is_finite)
    }

    /// Estimated density in [0, 1].
    pub fn sparsity(&self) -> f64 {
        let c = self.kind.cells();
        if c == 0.0 {
            0.0
        } else {
            (self.nnz / c).clamp(0.0, 1.0)
        }
    }
}

/// What a variable of the block is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum VarInfo {
    /// a matrix with its shape and (estimated) non-zeros
    Matrix {
        /// rows
        rows: usize,
        /// columns
        cols: usize,
        /// non-zeros (exact when 0: a zero count makes the matrix provably zero)
        nnz: f64,
        /// whether every value is known to be finite
        finite: bool,
    },
    /// a scalar, with its value if known
    Scalar(Option<f64>),
    /// a finite scalar of unknown value
    FiniteScalar,
}

/// A hash map with a fast (not collision-resistant) hash, for the maps saturation looks up
/// at every rewrite; never iterated where the order could matter.
pub type FastMap<K, V> = HashMap<K, V, rustc_hash::FxBuildHasher>;

/// The analysis context: the block's variables and the sizes of attributes.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// variables of the block
    pub vars: FastMap<Symbol, VarInfo>,
    /// sizes of attributes created so far
    pub attrs: FastMap<Symbol, usize>,
    /// the fresh attributes made so far, by (tag, class, n) (see `saturate::appliers`):
    /// making one again only looks it up
    pub fresh: FastMap<(&'static str, Id, usize), Symbol>,
    /// merges of two classes with different constants (an unsound rewrite: the e-graph must
    /// not be trusted when this is not zero)
    pub conflicts: usize,
}

impl Context {
    /// The size of an attribute, if it is known.
    pub fn attr_size(&self, a: Symbol) -> Option<usize> {
        if crate::ir::is_unit(a) {
            Some(1)
        } else {
            self.attrs.get(&a).copied()
        }
    }
}

/// The attribute symbol of an attribute class.
pub fn attr_symbol(eg: &EG, id: Id) -> Option<Symbol> {
    schema::attr_of(eg, id).map(|a| a.0)
}

/// The schema of a relation class (`None` for matrices, attributes, invalid terms).
pub fn schema(eg: &EG, id: Id) -> Option<&Schema> {
    match &eg[id].data.kind {
        Kind::Rel(s) => Some(s),
        _ => None,
    }
}

/// The shape of a matrix class.
pub fn shape(eg: &EG, id: Id) -> Option<(usize, usize)> {
    match eg[id].data.kind {
        Kind::Mat(r, c) => Some((r, c)),
        _ => None,
    }
}

fn invalid(msg: impl Into<String>) -> Data {
    Data {
        kind: Kind::Invalid(msg.into()),
        nnz: f64::INFINITY,
        konst: None,
        zero: false,
        finite: false,
        unfolded: false,
        value: None,
        neg: None,
    }
}

/// Whether `enode` is a scalar of the LA level (anything but a relation operator without
/// attributes): its proofs and non-zeros follow from its constant when it has one.
fn is_la_scalar(enode: &Ir, kind: &Kind) -> bool {
    kind.is_scalar()
        && !matches!(
            enode,
            Ir::Bind(_) | Ir::Join(_) | Ir::Union(_) | Ir::Agg(_) | Ir::Subst(_) | Ir::Pow(_)
        )
}

/// Two constants that may share a class: the same bits, or both NaN (every NaN behaves
/// alike and prints alike). `+0.0` and `-0.0` are different constants (`1 / x` tells them
/// apart): merging them would let a plan change a zero the program never computed, so such
/// a merge is a conflict like any other.
pub(crate) fn same_const(x: f64, y: f64) -> bool {
    x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
}

impl Analysis<Ir> for Context {
    type Data = Data;

    /// One function per fact: the schema first, then the proofs and the constant, then the
    /// non-zeros estimate, each from the children's facts.
    fn make(eg: &mut EG, enode: &Ir, _id: Id) -> Data {
        let kind = match schema::kind(eg, enode) {
            Ok(k) => k,
            Err(m) => return invalid(m),
        };
        let (zero, finite) = constant::proofs(eg, enode, &kind);
        let neg = constant::negative(eg, enode);
        let konst = constant::konst(eg, enode, &kind, zero, neg);
        let nnz = sparsity::nnz(eg, enode, &kind, zero, konst);
        let (zero, finite) = match konst {
            // a constant scalar's proofs are its value's
            Some(v) if is_la_scalar(enode, &kind) => (v == 0.0, v.is_finite()),
            Some(v)
                if kind.is_scalar() && matches!(enode, Ir::Join(_) | Ir::Union(_) | Ir::Pow(_)) =>
            {
                // folding is exact (no overflowed constant, see constant.rs), so the value
                // and the proofs agree
                (zero || v == 0.0, v.is_finite())
            }
            _ => (zero, finite || zero),
        };
        // an operation on known cells whose IEEE value is not finite (an overflow the
        // folding declined, `1e200 * 1e200`, or a pole of fills) is not finite, whatever exact
        // arithmetic says: `0 * Inf` is NaN
        let value = konst.or_else(|| constant::ieee(eg, enode, &kind));
        let finite = finite && value.is_none_or(f64::is_finite);
        // a scalar of known operands that was not folded (an overflow, an underflow, a
        // rounded sum) is not rewritten either, as a constant is not: its IEEE value is what
        // the program computes
        let unfolded = konst.is_none() && value.is_some() && kind.is_scalar();
        Data {
            kind,
            nnz,
            konst,
            zero,
            finite,
            unfolded,
            value,
            neg: neg.or(konst.filter(|v| !v.is_nan()).map(f64::is_sign_negative)),
        }
    }

    fn merge(&mut self, a: &mut Data, b: Data) -> DidMerge {
        let mut changed_a = false;
        let mut changed_b = false;
        if a.kind != b.kind {
            // Kinds are a class invariant; an invalid side means a rule built a bad term.
            if matches!(a.kind, Kind::Invalid(_)) && !matches!(b.kind, Kind::Invalid(_)) {
                a.kind = b.kind.clone();
                changed_a = true;
            } else {
                changed_b = true;
            }
        }
        if b.nnz < a.nnz {
            a.nnz = b.nnz;
            changed_a = true;
        } else if a.nnz < b.nnz {
            changed_b = true;
        }
        match (a.konst, b.konst) {
            (None, Some(v)) => {
                a.konst = Some(v);
                changed_a = true;
            }
            (Some(_), None) => changed_b = true,
            (Some(x), Some(y)) if !same_const(x, y) => self.conflicts += 1,
            _ => {}
        }
        match (a.value, b.value) {
            (None, Some(v)) => {
                a.value = Some(v);
                changed_a = true;
            }
            (Some(_), None) => changed_b = true,
            // the non-finite value is kept: it is the one that disproves `finite`
            (Some(x), Some(y)) if x.is_finite() && !y.is_finite() => {
                a.value = Some(y);
                changed_a = true;
            }
            (Some(x), Some(y)) if !x.is_finite() && y.is_finite() => changed_b = true,
            _ => {}
        }
        match (a.neg, b.neg) {
            (None, Some(n)) => {
                a.neg = Some(n);
                changed_a = true;
            }
            (Some(_), None) => changed_b = true,
            // two signs in one class: a zero of each sign (README, exception 3); a zero
            // matrix's constant carries its sign, so the conflict is counted there
            _ => {}
        }
        // the proofs: either side's, except that a proof from exact arithmetic on one side
        // does not outlive the merged IEEE value (a class whose value is not finite is not
        // finite, and not zero unless the value is 0)
        let before_a = (a.zero, a.finite, a.unfolded);
        let before_b = (b.zero, b.finite, b.unfolded);
        a.zero |= b.zero;
        a.finite |= b.finite;
        a.unfolded |= b.unfolded;
        if let Some(v) = a.value {
            a.finite &= v.is_finite();
            a.zero &= v == 0.0;
        }
        let after = (a.zero, a.finite, a.unfolded);
        changed_a |= after != before_a;
        changed_b |= after != before_b;
        DidMerge(changed_a, changed_b)
    }

    fn modify(eg: &mut EG, id: Id) {
        // a conflict already poisons the e-graph; adding more constants would only spread it
        if eg.analysis.conflicts > 0 {
            return;
        }
        if let (Some(v), true) = (eg[id].data.konst, eg[id].data.kind.is_scalar()) {
            let c = eg.add(Ir::Num(Const::new(v)));
            eg.union_trusted(id, c, "constant-fold");
        }
    }
}
