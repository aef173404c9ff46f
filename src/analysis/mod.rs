//! E-class analyses, one combined [`Data`] per class:
//!
//! | fact | what it is | merged by |
//! |---|---|---|
//! | [`Kind`] (schema) | an attribute with its size; an LA matrix with its shape; or a relation with its free attributes and their sizes (a scalar is a relation without attributes) | must agree (class invariant) |
//! | `nnz` (sparsity) | estimated non-zeros, paper Fig. 12 (`S[X*Y] = min(S_X, S_Y)`, `S[X+Y] = min(1, S_X + S_Y)`, `S[Σ_i X] = min(1, |i| S_X)`) | the tighter (smaller) estimate |
//! | `konst` (constants) | the value of a scalar class known at compile time, folded as soon as all children are constant, with the runtime's IEEE arithmetic | either side's; two different values are a conflict |
//! | `zero` | every cell is exactly zero (a proof, unlike `nnz`, which is an estimate) | either side's proof |
//! | `finite` | every cell is finite (no Inf, no NaN) for finite inputs in exact arithmetic | either side's proof |
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

use crate::ir::{is_attr, Const, Ir, UNIT};
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
}

impl Data {
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

/// The analysis context: the block's variables and the sizes of attributes.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// variables of the block
    pub vars: HashMap<Symbol, VarInfo>,
    /// sizes of attributes created so far
    pub attrs: HashMap<Symbol, usize>,
    /// merges of two classes with different constants (an unsound rewrite: the e-graph must
    /// not be trusted when this is not zero)
    pub conflicts: usize,
}

impl Context {
    /// The size of an attribute, if it is known.
    pub fn attr_size(&self, a: Symbol) -> Option<usize> {
        if a.as_str() == UNIT {
            Some(1)
        } else {
            self.attrs.get(&a).copied()
        }
    }
}

fn attr_of(eg: &EG, id: Id) -> Option<(Symbol, usize)> {
    let d = &eg[id].data;
    match d.kind {
        Kind::Attr(n) => eg[id].nodes.iter().find_map(|n2| match n2 {
            Ir::Symbol(s) => Some((*s, n)),
            _ => None,
        }),
        _ => None,
    }
}

/// The attribute symbol of an attribute class.
pub fn attr_symbol(eg: &EG, id: Id) -> Option<Symbol> {
    attr_of(eg, id).map(|a| a.0)
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
    }
}

/// A scalar; a known value decides `zero` and `finite`.
fn scalar(konst: Option<f64>) -> Data {
    Data {
        kind: Kind::scalar(),
        nnz: konst.map_or(1.0, |v| f64::from(u8::from(v != 0.0))),
        konst,
        zero: konst == Some(0.0),
        finite: konst.is_some_and(f64::is_finite),
    }
}

/// A scalar of unknown value with the given proofs.
fn scalar_with(zero: bool, finite: bool) -> Data {
    let mut d = scalar(None);
    d.zero = zero;
    d.finite = finite || zero;
    if zero {
        d.nnz = 0.0;
    }
    d
}

fn mat(r: usize, c: usize, sparsity: f64) -> Data {
    Data {
        kind: Kind::Mat(r, c),
        nnz: sparsity.clamp(0.0, 1.0) * (r * c) as f64,
        konst: None,
        zero: false,
        finite: false,
    }
}

fn rel(s: Schema, sparsity: f64) -> Data {
    let cells: f64 = s.values().map(|&n| n as f64).product();
    Data {
        kind: Kind::Rel(s),
        nnz: sparsity.clamp(0.0, 1.0) * cells,
        konst: None,
        zero: false,
        finite: false,
    }
}

impl Data {
    /// Sets the proofs; a proved zero has no non-zeros and is finite.
    fn proofs(mut self, zero: bool, finite: bool) -> Data {
        if matches!(self.kind, Kind::Invalid(_)) {
            return self;
        }
        self.zero = zero;
        self.finite = finite || zero;
        if zero {
            self.nnz = 0.0;
            // a non-empty zero matrix is the constant 0 in every cell
            if matches!(self.kind, Kind::Mat(r, c) if r * c > 0) {
                self.konst = Some(0.0);
            }
        }
        self
    }
}

/// Whether `x` is finite and nonzero, so that `0 / x` is 0 and `y / x` finite for finite y.
fn finite_nonzero(d: &Data) -> bool {
    d.konst.is_some_and(|v| v.is_finite() && v != 0.0)
}

/// Whether `a * b` (a join, an element-wise or a matrix product) is provably zero: one side
/// is zero and the other finite (`0 * Inf` is NaN).
fn times_zero(a: &Data, b: &Data) -> bool {
    (a.zero && b.finite) || (b.zero && a.finite)
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

/// Whether a constant is a valid matrix dimension (whole, non-negative, not absurd).
fn is_size(v: f64) -> bool {
    v >= 0.0 && v.fract() == 0.0 && v < 1e15
}

/// Two constants that may share a class: equal (`0.0 == -0.0`: the e-graph does not tell
/// the signs of zero apart), or both NaN.
fn same_const(x: f64, y: f64) -> bool {
    x == y || (x.is_nan() && y.is_nan())
}

/// `(m, n, k)` when X is `m x n`, U `m x k` and V `n x k`: the operands of a fused operator
/// over `U %*% t(V)` (no broadcasting).
fn factors(x: &Data, u: &Data, v: &Data) -> Option<(usize, usize, usize)> {
    match (&x.kind, &u.kind, &v.kind) {
        (Kind::Mat(m, n), Kind::Mat(m2, k), Kind::Mat(n2, k2)) if m == m2 && n == n2 && k == k2 => {
            Some((*m, *n, *k))
        }
        _ => None,
    }
}

/// Broadcast shape of two element-wise operands given as (rows, cols); scalars are (1, 1).
fn broadcast(a: (usize, usize), b: (usize, usize)) -> Option<(usize, usize)> {
    let one = |x: usize, y: usize| {
        if x == y || y == 1 {
            Some(x)
        } else if x == 1 {
            Some(y)
        } else {
            None
        }
    };
    Some((one(a.0, b.0)?, one(a.1, b.1)?))
}

/// Shape of an operand of an element-wise LA operator: matrices, or scalars as 1x1.
fn ew_shape(d: &Data) -> Option<(usize, usize)> {
    match &d.kind {
        Kind::Mat(r, c) => Some((*r, *c)),
        k if k.is_scalar() => Some((1, 1)),
        _ => None,
    }
}

impl Analysis<Ir> for Context {
    type Data = Data;

    fn make(eg: &mut EG, enode: &Ir, _id: Id) -> Data {
        let d = |i: &Id| eg[*i].data.clone();
        let k = |i: &Id| eg[*i].data.konst;
        match enode {
            Ir::Num(c) => scalar(Some(c.get())),
            Ir::Symbol(s) => {
                if is_attr(s.as_str()) {
                    match eg.analysis.attr_size(*s) {
                        Some(n) => Data {
                            kind: Kind::Attr(n),
                            nnz: 0.0,
                            konst: None,
                            zero: false,
                            finite: false,
                        },
                        None => invalid(format!("attribute {s} of unknown size")),
                    }
                } else {
                    match eg.analysis.vars.get(s) {
                        Some(VarInfo::Matrix {
                            rows,
                            cols,
                            nnz,
                            finite,
                        }) => Data {
                            kind: Kind::Mat(*rows, *cols),
                            nnz: *nnz,
                            konst: None,
                            zero: *nnz == 0.0,
                            finite: *finite || *nnz == 0.0,
                        },
                        Some(VarInfo::Scalar(v)) => scalar(*v),
                        Some(VarInfo::FiniteScalar) => scalar_with(false, true),
                        None => invalid(format!("unknown variable {s}")),
                    }
                }
            }
            Ir::MMul([a, b]) => match (d(a).kind, d(b).kind) {
                (Kind::Mat(r, k1), Kind::Mat(k2, c)) if k1 == k2 => {
                    let s = (k1 as f64 * d(a).sparsity().min(d(b).sparsity())).min(1.0);
                    let (da, db) = (d(a), d(b));
                    mat(r, c, s).proofs(k1 == 0 || times_zero(&da, &db), da.finite && db.finite)
                }
                _ => invalid("mmul shapes"),
            },
            Ir::Sddmm([x, u, v]) => match factors(&d(x), &d(u), &d(v)) {
                Some((m, n, _)) => mat(m, n, d(x).sparsity()),
                None => invalid("sddmm shapes"),
            },
            Ir::WsLoss([x, u, v]) => match factors(&d(x), &d(u), &d(v)) {
                Some(_) => scalar(None),
                None => invalid("wsloss shapes"),
            },
            Ir::WsLossW([w, x, u, v]) | Ir::WSubMM([w, x, u, v]) => {
                match (factors(&d(x), &d(u), &d(v)), d(w).kind) {
                    (Some((m, n, k)), Kind::Mat(m2, n2)) if (m, n) == (m2, n2) => match enode {
                        Ir::WsLossW(_) => scalar(None),
                        _ => mat(m, k, (n as f64 * d(w).sparsity()).min(1.0)),
                    },
                    _ => invalid("fused operator shapes"),
                }
            }
            Ir::Wcemm([x, u, v, e]) | Ir::WDivMM([x, u, v, e]) | Ir::WDivMMT([x, u, v, e]) => {
                match (factors(&d(x), &d(u), &d(v)), d(e).kind.is_scalar()) {
                    (Some((m, n, k)), true) => match enode {
                        Ir::Wcemm(_) => scalar(None),
                        Ir::WDivMM(_) => mat(m, k, (n as f64 * d(x).sparsity()).min(1.0)),
                        _ => mat(k, n, (m as f64 * d(x).sparsity()).min(1.0)),
                    },
                    _ => invalid("fused operator shapes"),
                }
            }
            Ir::MMChain([x, w, v]) => match (d(x).kind, d(w).kind, d(v).kind) {
                (Kind::Mat(m, n), wk, Kind::Mat(n2, k))
                    if n == n2
                        && (wk.is_scalar()
                            || matches!(wk, Kind::Mat(m2, c) if m2 == m && (c == 1 || c == k))) =>
                {
                    mat(n, k, 1.0)
                }
                _ => invalid("mmchain shapes"),
            },
            Ir::Sprop(a) | Ir::Nz(a) => {
                let da = d(a);
                let nz = matches!(enode, Ir::Nz(_));
                let (zero, finite) = (da.zero, nz || da.finite);
                match da.kind {
                    Kind::Mat(r, c) => mat(r, c, da.sparsity()).proofs(zero, finite),
                    ref k if k.is_scalar() => match da.konst {
                        Some(v) => scalar(Some(if nz {
                            f64::from(u8::from(v != 0.0))
                        } else {
                            v * (1.0 - v)
                        })),
                        None => scalar_with(zero, finite),
                    },
                    _ => invalid("element-wise operand"),
                }
            }
            Ir::TMMul([a, b]) => match (d(a).kind, d(b).kind) {
                (Kind::Mat(k1, r), Kind::Mat(k2, c)) if k1 == k2 => {
                    let s = (k1 as f64 * d(a).sparsity().min(d(b).sparsity())).min(1.0);
                    let (da, db) = (d(a), d(b));
                    mat(r, c, s).proofs(k1 == 0 || times_zero(&da, &db), da.finite && db.finite)
                }
                _ => invalid("tmmul shapes"),
            },
            Ir::Trans(a) => match d(a).kind {
                Kind::Mat(r, c) => mat(c, r, d(a).sparsity()).proofs(d(a).zero, d(a).finite),
                _ => invalid("t of a non-matrix"),
            },
            Ir::EMul([a, b])
            | Ir::EAdd([a, b])
            | Ir::ESub([a, b])
            | Ir::EDiv([a, b])
            | Ir::EPow([a, b]) => {
                let (da, db) = (d(a), d(b));
                let (zero, finite) = match enode {
                    Ir::EMul(_) => (times_zero(&da, &db), da.finite && db.finite),
                    Ir::EAdd(_) | Ir::ESub(_) => (da.zero && db.zero, da.finite && db.finite),
                    Ir::EDiv(_) => (
                        da.zero && finite_nonzero(&db),
                        da.finite && finite_nonzero(&db),
                    ),
                    _ => pow_proofs(&da, db.konst),
                };
                if da.kind.is_scalar() && db.kind.is_scalar() {
                    return match (da.konst, db.konst) {
                        (Some(x), Some(y)) => scalar(Some(match enode {
                            Ir::EMul(_) => x * y,
                            Ir::EAdd(_) => x + y,
                            Ir::ESub(_) => x - y,
                            Ir::EDiv(_) => x / y,
                            _ => x.powf(y),
                        })),
                        _ if zero => scalar(Some(0.0)),
                        _ => scalar_with(zero, finite),
                    };
                }
                let (Some(sa), Some(sb)) = (ew_shape(&da), ew_shape(&db)) else {
                    return invalid("element-wise operand");
                };
                let Some((r, c)) = broadcast(sa, sb) else {
                    return invalid("element-wise shapes");
                };
                let s = match enode {
                    Ir::EMul(_) => da.sparsity().min(db.sparsity()),
                    Ir::EAdd(_) | Ir::ESub(_) => (da.sparsity() + db.sparsity()).min(1.0),
                    Ir::EDiv(_) => da.sparsity(),
                    _ => match db.konst {
                        Some(p) if p > 0.0 => da.sparsity(),
                        _ => 1.0,
                    },
                };
                mat(r, c, s).proofs(zero || r == 0 || c == 0, finite || r == 0 || c == 0)
            }
            Ir::Neg(a) => {
                let da = d(a);
                match da.kind {
                    Kind::Mat(r, c) => mat(r, c, da.sparsity()).proofs(da.zero, da.finite),
                    ref k if k.is_scalar() => match da.konst {
                        Some(v) => scalar(Some(-v)),
                        None => scalar_with(da.zero, da.finite),
                    },
                    _ => invalid("neg"),
                }
            }
            Ir::Exp(a) | Ir::Log(a) | Ir::Sqrt(a) | Ir::Abs(a) | Ir::Sigmoid(a) => {
                let da = d(a);
                let keeps = matches!(enode, Ir::Sqrt(_) | Ir::Abs(_));
                // exp and sigmoid of finite values are finite (exp may overflow: the
                // documented exception); log and sqrt of negatives are NaN
                let (zero, finite) = match enode {
                    Ir::Sqrt(_) => (da.zero, da.zero),
                    Ir::Abs(_) => (da.zero, da.finite),
                    Ir::Exp(_) | Ir::Sigmoid(_) => (false, da.finite),
                    _ => (false, false),
                };
                match da.kind {
                    Kind::Mat(r, c) => {
                        mat(r, c, if keeps { da.sparsity() } else { 1.0 }).proofs(zero, finite)
                    }
                    ref k if k.is_scalar() => match da.konst {
                        Some(v) => scalar(Some(match enode {
                            Ir::Exp(_) => v.exp(),
                            Ir::Log(_) => v.ln(),
                            Ir::Sqrt(_) => v.sqrt(),
                            Ir::Abs(_) => v.abs(),
                            _ => 1.0 / (1.0 + (-v).exp()),
                        })),
                        None => scalar_with(zero, finite),
                    },
                    _ => invalid("unary map"),
                }
            }
            Ir::MSum(a) => match d(a).kind {
                Kind::Mat(r, c) => {
                    let da = d(a);
                    let zero = da.zero || r == 0 || c == 0;
                    if zero {
                        scalar(Some(0.0))
                    } else {
                        scalar_with(false, da.finite)
                    }
                }
                _ => invalid("sum of a non-matrix"),
            },
            Ir::RowSums(a) => match d(a).kind {
                Kind::Mat(r, c) => mat(r, 1, (c as f64 * d(a).sparsity()).min(1.0))
                    .proofs(d(a).zero || c == 0, d(a).finite || c == 0),
                _ => invalid("rowSums"),
            },
            Ir::ColSums(a) => match d(a).kind {
                Kind::Mat(r, c) => mat(1, c, (r as f64 * d(a).sparsity()).min(1.0))
                    .proofs(d(a).zero || r == 0, d(a).finite || r == 0),
                _ => invalid("colSums"),
            },
            Ir::Fill([v, r, c]) => match (k(r), k(c)) {
                (Some(r), Some(c)) if is_size(r) && is_size(c) => {
                    let dv = d(v);
                    let (r, c) = (r as usize, c as usize);
                    let mut out = mat(r, c, if dv.zero { 0.0 } else { 1.0 })
                        .proofs(dv.zero || r == 0 || c == 0, dv.finite || r == 0 || c == 0);
                    // every cell of a non-empty fill is its value: two fills of different
                    // values in one class are a conflict, as for scalars
                    if r * c > 0 {
                        out.konst = dv.konst;
                    }
                    out
                }
                _ => invalid("fill needs constant whole sizes"),
            },
            Ir::AsScalar(a) => match d(a).kind {
                Kind::Mat(1, 1) => {
                    let da = d(a);
                    if da.zero {
                        scalar(Some(0.0))
                    } else {
                        scalar_with(false, da.finite)
                    }
                }
                _ => invalid("as.scalar of a non-1x1"),
            },
            Ir::Bind([i, j, a]) => {
                let (Some((si, ni)), Some((sj, nj))) = (attr_of(eg, *i), attr_of(eg, *j)) else {
                    return invalid("bind attributes");
                };
                let da = d(a);
                let (r, c) = match da.kind {
                    Kind::Mat(r, c) => (r, c),
                    ref k if k.is_scalar() => (1, 1),
                    _ => return invalid("bind of a non-matrix"),
                };
                if ni != r || nj != c || (si == sj && si.as_str() != UNIT) {
                    return invalid("bind attribute sizes");
                }
                let mut s = Schema::new();
                for (a, n) in [(si, ni), (sj, nj)] {
                    if a.as_str() != UNIT {
                        s.insert(a, n);
                    }
                }
                let mut out = rel(s, da.sparsity()).proofs(da.zero, da.finite);
                if out.kind.is_scalar() {
                    out.konst = da.konst.or(da.zero.then_some(0.0));
                }
                out
            }
            Ir::Unbind([i, j, a]) => {
                let (Some((si, ni)), Some((sj, nj))) = (attr_of(eg, *i), attr_of(eg, *j)) else {
                    return invalid("unbind attributes");
                };
                let da = d(a);
                let Kind::Rel(s) = &da.kind else {
                    return invalid("unbind of a non-relation");
                };
                let want: Schema = [(si, ni), (sj, nj)]
                    .into_iter()
                    .filter(|(a, _)| a.as_str() != UNIT)
                    .collect();
                if *s != want || (si == sj && si.as_str() != UNIT) {
                    return invalid("unbind schema");
                }
                mat(ni, nj, da.sparsity()).proofs(da.zero, da.finite)
            }
            Ir::Join([a, b]) | Ir::Union([a, b]) => {
                let (da, db) = (d(a), d(b));
                let (Kind::Rel(sa), Kind::Rel(sb)) = (&da.kind, &db.kind) else {
                    return invalid("join/union of non-relations");
                };
                let mut s = sa.clone();
                for (k2, n) in sb {
                    if let Some(m) = s.insert(*k2, *n) {
                        if m != *n {
                            return invalid("attribute with two sizes");
                        }
                    }
                }
                let join = matches!(enode, Ir::Join(_));
                let sp = if join {
                    da.sparsity().min(db.sparsity())
                } else {
                    (da.sparsity() + db.sparsity()).min(1.0)
                };
                let zero = if join {
                    times_zero(&da, &db)
                } else {
                    da.zero && db.zero
                };
                let mut out = rel(s, sp).proofs(zero, da.finite && db.finite);
                if out.kind.is_scalar() {
                    out.konst = match (da.konst, db.konst) {
                        (Some(x), Some(y)) => Some(if join { x * y } else { x + y }),
                        _ if zero => Some(0.0),
                        _ => None,
                    };
                    out.nnz = out.konst.map_or(1.0, |v| f64::from(u8::from(v != 0.0)));
                    out.finite |= out.konst.is_some_and(f64::is_finite);
                }
                out
            }
            Ir::Agg([i, a]) => {
                let Some((si, ni)) = attr_of(eg, *i) else {
                    return invalid("sum attribute");
                };
                let da = d(a);
                let Kind::Rel(s) = &da.kind else {
                    return invalid("sum of a non-relation");
                };
                let mut s = s.clone();
                s.remove(&si);
                let sp = (ni as f64 * da.sparsity()).min(1.0);
                let zero = da.zero || ni == 0;
                let mut out = rel(s, sp).proofs(zero, da.finite || zero);
                if out.kind.is_scalar() {
                    out.nnz = if zero { 0.0 } else { 1.0 };
                    if zero {
                        out.konst = Some(0.0);
                    }
                }
                out
            }
            Ir::Subst([n, o, a]) => {
                let (Some((sn, nn)), Some((so, no))) = (attr_of(eg, *n), attr_of(eg, *o)) else {
                    return invalid("subst attributes");
                };
                let da = d(a);
                let Kind::Rel(s) = &da.kind else {
                    return invalid("subst of a non-relation");
                };
                let mut s = s.clone();
                if s.remove(&so).is_some() {
                    if nn != no || s.contains_key(&sn) {
                        return invalid("subst capture or size");
                    }
                    s.insert(sn, nn);
                }
                let mut out = rel(s, da.sparsity()).proofs(da.zero, da.finite);
                out.konst = da.konst;
                out
            }
            Ir::Dim(i) => match attr_of(eg, *i) {
                Some((_, n)) => scalar(Some(n as f64)),
                None => invalid("dim of a non-attribute"),
            },
            Ir::Pow([a, p]) => {
                let (da, dp) = (d(a), d(p));
                let (Kind::Rel(s), Some(pv)) = (&da.kind, dp.konst) else {
                    return invalid("pow needs a relation and a constant exponent");
                };
                let (zero, finite) = pow_proofs(&da, Some(pv));
                let mut out =
                    rel(s.clone(), if pv > 0.0 { da.sparsity() } else { 1.0 }).proofs(zero, finite);
                if out.kind.is_scalar() {
                    out.konst = da.konst.map(|v| v.powf(pv)).or(zero.then_some(0.0));
                    out.nnz = 1.0;
                    out.finite |= out.konst.is_some_and(f64::is_finite);
                }
                out
            }
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
        for (fa, fb) in [(&mut a.zero, b.zero), (&mut a.finite, b.finite)] {
            if fb && !*fa {
                *fa = true;
                changed_a = true;
            } else if *fa && !fb {
                changed_b = true;
            }
        }
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
