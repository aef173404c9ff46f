//! Rules that need code, registered by name and referenced from rules/*.rules as `!name`.
//!
//! **Bound attributes.** Attributes are plain names (`@...`) with sizes in the analysis
//! context; a relation class's schema is its set of free attributes, a class invariant.
//! Three mechanisms keep this sound and the e-graph small:
//!
//! * LA operators are expanded *at the bind site*: `(b i j (mmul A B))` becomes
//!   `(sum k (* (b i k A) (b k j B)))` with the caller's `i`, `j`, so lowering never needs to
//!   rename; only aggregated dimensions get fresh names.
//! * Moving a join under an aggregate (rule 3) checks the schema; when the aggregated
//!   attribute is free in the other operand it is first renamed with `(subst new old R)`,
//!   which the rename rules push down to the binds, and which the analysis rejects if it
//!   would capture.
//! * Terms that differ only in bound names are recognised as equal through the LA level:
//!   every relation with at most two attributes is unbound to a matrix and raised to LA
//!   operators, which have no bound names, so alpha-equivalent relations raise to the same
//!   LA term and their classes merge by congruence.
//!
//! Fresh attributes are named after the class being rewritten and the rule
//! (`@<tag><class>_<n>`), so re-applying a rule to the same class adds nothing new, and two
//! different classes never share a bound attribute name by accident. Renaming a bound
//! attribute (rule 3's "else rename i") goes through `(subst new old R)`, pushed down by the
//! subst rules; the analysis rejects a `subst` that would capture.

use crate::analysis::{attr_symbol, schema, shape, Kind, EG};
use crate::ir::{is_unit, unit_symbol, Const, Ir};
use egg::{Applier, Id, Language, PatternAst, Subst, Symbol, Var};

/// A named applier: reads the pattern variables it needs by name.
pub struct Named {
    /// which applier
    pub kind: ApplierKind,
}

/// The appliers of the rule files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApplierKind {
    /// `(* ?a (sum ?i ?b))` -> `(sum ?i (* ?a ?b))`, renaming `?i` when it is free in `?a`
    PullSum,
    /// `(b ?i ?j (mmul ?A ?B))` -> `(sum k (* (b ?i k ?A) (b k ?j ?B)))`
    BindMMul,
    /// `(b ?i ?j (op ?A ?B))` for an element-wise LA `op`, binding each operand by its shape
    BindElementwise(Ew),
    /// `(b ?i ?j (rowSums ?A))` -> `(sum k (b ?i k ?A))`
    BindRowSums,
    /// `(b ?i ?j (colSums ?A))` -> `(sum k (b k ?j ?A))`
    BindColSums,
    /// `(msum ?A)` -> `(sum k (sum l (b k l ?A)))`
    LowerSum,
    /// any matrix class `?m` -> `(ub k l (b k l ?m))` (the bind/unbind identity of R_LR)
    LowerMatrix,
    /// any relation class with one or two attributes -> `(b x y (ub x y ?r))`
    RaiseRelation,
    /// `(ub ?i ?j (op ?a ?b))` for RA `*`, `+`, `pow` -> the element-wise LA operator on the
    /// operands' LA forms
    RaiseElementwise(Ew),
    /// `(ub ?i ?j (sum ?k ?a))` -> `mmul`, `rowSums` or `colSums`
    RaiseSum,
    /// scalar `(sum ?k ?a)` -> `msum`, or a dot product
    RaiseScalarSum,
    /// `(subst ?n ?o (sum ?i ?a))`
    SubstSum,
    /// `(subst ?n ?o (b ?i ?j ?A))`
    SubstBind,
    /// a matrix class proved all zeros -> `(fill 0 rows cols)`
    EmptyIsZero,
}

impl ApplierKind {
    /// Looks an applier up by the name used in rule files.
    pub fn from_name(name: &str) -> Option<ApplierKind> {
        Some(match name {
            "pull-sum" => ApplierKind::PullSum,
            "bind-mmul" => ApplierKind::BindMMul,
            "bind-emul" => ApplierKind::BindElementwise(Ew::Mul),
            "bind-eadd" => ApplierKind::BindElementwise(Ew::Add),
            "bind-esub" => ApplierKind::BindElementwise(Ew::Sub),
            "bind-ediv" => ApplierKind::BindElementwise(Ew::Div),
            "bind-epow" => ApplierKind::BindElementwise(Ew::Pow),
            "bind-rowsums" => ApplierKind::BindRowSums,
            "bind-colsums" => ApplierKind::BindColSums,
            "lower-sum" => ApplierKind::LowerSum,
            "lower-matrix" => ApplierKind::LowerMatrix,
            "raise-relation" => ApplierKind::RaiseRelation,
            "raise-join" => ApplierKind::RaiseElementwise(Ew::Mul),
            "raise-union" => ApplierKind::RaiseElementwise(Ew::Add),
            "raise-pow" => ApplierKind::RaiseElementwise(Ew::Pow),
            "raise-sum" => ApplierKind::RaiseSum,
            "raise-scalar-sum" => ApplierKind::RaiseScalarSum,
            "subst-sum" => ApplierKind::SubstSum,
            "subst-bind" => ApplierKind::SubstBind,
            "empty-is-zero" => ApplierKind::EmptyIsZero,
            _ => return None,
        })
    }

    /// The pattern variables the applier reads.
    pub fn vars(self) -> &'static [&'static str] {
        match self {
            ApplierKind::PullSum => &["?a", "?i", "?b"],
            ApplierKind::BindMMul | ApplierKind::BindElementwise(_) => &["?i", "?j", "?A", "?B"],
            ApplierKind::BindRowSums | ApplierKind::BindColSums => &["?i", "?j", "?A"],
            ApplierKind::LowerSum => &["?A"],
            ApplierKind::LowerMatrix => &["?m"],
            ApplierKind::RaiseRelation => &["?r"],
            ApplierKind::RaiseElementwise(_) => &["?i", "?j", "?a", "?b"],
            ApplierKind::RaiseSum => &["?i", "?j", "?k", "?a"],
            ApplierKind::RaiseScalarSum => &["?k", "?a"],
            ApplierKind::SubstSum => &["?n", "?o", "?i", "?a"],
            ApplierKind::SubstBind => &["?n", "?o", "?i", "?j", "?A"],
            ApplierKind::EmptyIsZero => &["?m"],
        }
    }
}

/// The matched term of a rule as its own (uncanonical) node ids, for explanations.
fn instantiate(eg: &mut EG, ast: &PatternAst<Ir>, subst: &Subst) -> Id {
    let mut ids: Vec<Id> = Vec::with_capacity(ast.as_ref().len());
    for node in ast.as_ref() {
        let id = match node {
            egg::ENodeOrVar::Var(v) => eg.find(subst[*v]),
            egg::ENodeOrVar::ENode(n) => {
                let n = n.clone().map_children(|c| ids[usize::from(c)]);
                eg.add_uncanonical(n)
            }
        };
        ids.push(id);
    }
    *ids.last().expect("a pattern has a root")
}

/// The pattern variables the appliers read, parsed once (parsing interns the name).
const VAR_NAMES: [&str; 11] = [
    "?A", "?B", "?a", "?b", "?i", "?j", "?k", "?m", "?n", "?o", "?r",
];

fn v(s: &str) -> Var {
    static VARS: std::sync::OnceLock<Vec<Var>> = std::sync::OnceLock::new();
    let vars = VARS.get_or_init(|| {
        VAR_NAMES
            .iter()
            .map(|n| n.parse().expect("pattern variable"))
            .collect()
    });
    match VAR_NAMES.iter().position(|n| *n == s) {
        Some(k) => vars[k],
        None => s.parse().expect("pattern variable"),
    }
}

/// A fresh attribute of `size`, named after the class and tag; registered in the context.
fn fresh(eg: &mut EG, tag: &'static str, class: Id, n: usize, size: usize) -> Id {
    if size == 1 {
        return eg.add(Ir::Symbol(unit_symbol()));
    }
    let class = eg.find(class);
    let name = *eg
        .analysis
        .fresh
        .entry((tag, class, n))
        .or_insert_with(|| Symbol::from(format!("@{tag}{}_{n}", usize::from(class))));
    eg.analysis.attrs.insert(name, size);
    eg.add(Ir::Symbol(name))
}

fn sym(eg: &mut EG, s: Symbol) -> Id {
    eg.add(Ir::Symbol(s))
}

fn unit(eg: &mut EG) -> Id {
    eg.add(Ir::Symbol(unit_symbol()))
}

fn num(eg: &mut EG, x: f64) -> Id {
    eg.add(Ir::Num(Const::new(x)))
}

/// An element-wise operator, as the appliers for LA and RA operators see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ew {
    /// `m*` / join
    Mul,
    /// `m+` / union
    Add,
    /// `m-`
    Sub,
    /// `m/`
    Div,
    /// `m^` / pow
    Pow,
}

/// Binds an operand of an element-wise operator whose output is bound to (i, j): a scalar is
/// used as it is, a vector or 1x1 matrix is bound along the dimensions it has.
fn bind_operand(eg: &mut EG, x: Id, i: Id, j: Id, out: (usize, usize)) -> Option<Id> {
    match eg[x].data.kind.clone() {
        k if k.is_scalar() => Some(x),
        Kind::Mat(r, c) => {
            let u = unit(eg);
            let bi = if r == out.0 {
                i
            } else if r == 1 {
                u
            } else {
                return None;
            };
            let bj = if c == out.1 {
                j
            } else if c == 1 {
                u
            } else {
                return None;
            };
            Some(eg.add(Ir::Bind([bi, bj, x])))
        }
        _ => None,
    }
}

/// The LA form of a relation with schema within {i, j}, as an operand of an element-wise
/// operator whose result is unbound to (i, j).
fn unbind_operand(eg: &mut EG, x: Id, i: Symbol, j: Symbol) -> Option<Id> {
    let s = schema(eg, x)?.clone();
    if s.keys().any(|a| *a != i && *a != j) {
        return None;
    }
    if s.is_empty() {
        return Some(x);
    }
    let r = if s.contains_key(&i) { i } else { unit_symbol() };
    let c = if s.contains_key(&j) { j } else { unit_symbol() };
    let (r, c) = (sym(eg, r), sym(eg, c));
    Some(eg.add(Ir::Unbind([r, c, x])))
}

/// The operands of the join nodes of a class.
fn joins_of(eg: &EG, a: Id) -> Vec<(Id, Id)> {
    eg[a]
        .nodes
        .iter()
        .filter_map(|n| match n {
            Ir::Join([p, q]) => Some((*p, *q)),
            _ => None,
        })
        .collect()
}

/// LA form of relation `x` as a matrix with rows `r` and columns `c` (attributes or `_`),
/// if its schema is exactly the non-unit ones of them.
fn as_matrix(eg: &mut EG, x: Id, r: Symbol, c: Symbol) -> Option<Id> {
    let s = schema(eg, x)?;
    let want: Vec<Symbol> = [r, c].into_iter().filter(|a| !is_unit(*a)).collect();
    if s.len() != want.len() || want.iter().any(|a| !s.contains_key(a)) {
        return None;
    }
    let (ri, ci) = (sym(eg, r), sym(eg, c));
    Some(eg.add(Ir::Unbind([ri, ci, x])))
}

impl Applier<Ir, crate::analysis::Context> for Named {
    fn vars(&self) -> Vec<Var> {
        self.kind.vars().iter().map(|s| v(s)).collect()
    }

    fn apply_one(
        &self,
        eg: &mut EG,
        class: Id,
        subst: &Subst,
        ast: Option<&PatternAst<Ir>>,
        rule: Symbol,
    ) -> Vec<Id> {
        // with explanations on, the union starts from the matched term itself, so that a
        // derivation shows what the rule rewrote rather than its class's first term
        let from = match ast {
            Some(ast) if eg.are_explanations_enabled() => instantiate(eg, ast, subst),
            _ => class,
        };
        let out: Vec<Id> = match self.kind {
            ApplierKind::PullSum => pull_sum(eg, class, subst),
            ApplierKind::BindMMul => bind_mmul(eg, class, subst),
            ApplierKind::BindElementwise(op) => bind_elementwise(eg, subst, op),
            ApplierKind::BindRowSums => bind_sums(eg, class, subst, true),
            ApplierKind::BindColSums => bind_sums(eg, class, subst, false),
            ApplierKind::LowerSum => lower_sum(eg, class, subst),
            ApplierKind::LowerMatrix => lower_matrix(eg, class, subst),
            ApplierKind::RaiseRelation => raise_relation(eg, subst),
            ApplierKind::RaiseElementwise(op) => raise_elementwise(eg, subst, op),
            ApplierKind::RaiseSum => raise_sum(eg, subst),
            ApplierKind::RaiseScalarSum => raise_scalar_sum(eg, class, subst),
            ApplierKind::SubstSum => subst_sum(eg, subst),
            ApplierKind::SubstBind => subst_bind(eg, subst),
            ApplierKind::EmptyIsZero => empty_is_zero(eg, subst),
        };
        let mut changed = vec![];
        for id in out {
            if matches!(eg[id].data.kind, Kind::Invalid(_)) {
                continue;
            }
            if eg[id].data.kind != eg[class].data.kind {
                continue; // never merge classes of different kinds
            }
            // named, so that explanations (`--why`) show the rule, not this line
            if eg.union_trusted(from, id, rule) {
                changed.push(id);
            }
        }
        changed
    }
}

/// pull-sum: `(* ?a (sum ?i ?b))` -> `(sum ?i (* ?a ?b))`, renaming `?i` when it is free in `?a`
fn pull_sum(eg: &mut EG, class: Id, subst: &Subst) -> Vec<Id> {
    let get = |s: &str| subst[v(s)];
    let (a, i, b) = (get("?a"), get("?i"), get("?b"));
    let (Some(si), Some(sa)) = (attr_symbol(eg, i), schema(eg, a)) else {
        return vec![];
    };
    // a * (sum over an empty i) is a * 0, NaN for an infinite a; the sum of a * b
    // over an empty i is 0
    // ... and a * sum(b) is sum(a * b) only for a finite a (Inf * (2 - 1) is Inf,
    // Inf * 2 - Inf * 1 is NaN)
    if !eg[a].data.is_finite() {
        return vec![];
    }
    if !sa.contains_key(&si) {
        let j = eg.add(Ir::Join([a, b]));
        vec![eg.add(Ir::Agg([i, j]))]
    } else {
        // rename the bound attribute: sum_i b = sum_k b[i -> k], k fresh
        let Some(&n) = eg.analysis.attrs.get(&si) else {
            return vec![];
        };
        let k = fresh(eg, "r", class, 0, n);
        let b2 = eg.add(Ir::Subst([k, i, b]));
        let j = eg.add(Ir::Join([a, b2]));
        vec![eg.add(Ir::Agg([k, j]))]
    }
}

/// bind-mmul: `(b ?i ?j (mmul ?A ?B))` -> `(sum k (* (b ?i k ?A) (b k ?j ?B)))`
fn bind_mmul(eg: &mut EG, class: Id, subst: &Subst) -> Vec<Id> {
    let get = |s: &str| subst[v(s)];
    let (i, j, a, b) = (get("?i"), get("?j"), get("?A"), get("?B"));
    let Some((_, inner)) = shape(eg, a) else {
        return vec![];
    };
    let k = fresh(eg, "m", class, 0, inner);
    let ba = eg.add(Ir::Bind([i, k, a]));
    let bb = eg.add(Ir::Bind([k, j, b]));
    let join = eg.add(Ir::Join([ba, bb]));
    if inner == 1 {
        vec![join]
    } else {
        vec![eg.add(Ir::Agg([k, join]))]
    }
}

/// bind-e*: an element-wise LA operator under a bind, each operand bound by its shape
fn bind_elementwise(eg: &mut EG, subst: &Subst, op: Ew) -> Vec<Id> {
    let get = |s: &str| subst[v(s)];
    let (i, j, a, b) = (get("?i"), get("?j"), get("?A"), get("?B"));
    let (Some(si), Some(sj)) = (attr_symbol(eg, i), attr_symbol(eg, j)) else {
        return vec![];
    };
    let size = |s: Symbol| eg.analysis.attr_size(s).unwrap_or(1);
    let out_shape = (size(si), size(sj));
    let (Some(ba), Some(bb)) = (
        bind_operand(eg, a, i, j, out_shape),
        bind_operand(eg, b, i, j, out_shape),
    ) else {
        return vec![];
    };
    vec![match op {
        Ew::Mul => eg.add(Ir::Join([ba, bb])),
        Ew::Add => eg.add(Ir::Union([ba, bb])),
        Ew::Sub => {
            let m1 = num(eg, -1.0);
            let nb = eg.add(Ir::Join([m1, bb]));
            eg.add(Ir::Union([ba, nb]))
        }
        Ew::Div => {
            let m1 = num(eg, -1.0);
            let inv = eg.add(Ir::Pow([bb, m1]));
            eg.add(Ir::Join([ba, inv]))
        }
        Ew::Pow => {
            if eg[b].data.konst.is_none() {
                return vec![];
            }
            eg.add(Ir::Pow([ba, b]))
        }
    }]
}

/// bind-rowsums / bind-colsums (`row`): `(b ?i ?j (rowSums ?A))` -> `(sum k (b ?i k ?A))`, and the column version
fn bind_sums(eg: &mut EG, class: Id, subst: &Subst, row: bool) -> Vec<Id> {
    let get = |s: &str| subst[v(s)];
    let (i, j, a) = (get("?i"), get("?j"), get("?A"));
    let Some((r, c)) = shape(eg, a) else {
        return vec![];
    };
    let k = fresh(
        eg,
        if row { "rs" } else { "cs" },
        class,
        0,
        if row { c } else { r },
    );
    let bound = if row {
        eg.add(Ir::Bind([i, k, a]))
    } else {
        eg.add(Ir::Bind([k, j, a]))
    };
    if (row && c == 1) || (!row && r == 1) {
        vec![bound]
    } else {
        vec![eg.add(Ir::Agg([k, bound]))]
    }
}

/// lower-sum: `(msum ?A)` -> `(sum k (sum l (b k l ?A)))`
fn lower_sum(eg: &mut EG, class: Id, subst: &Subst) -> Vec<Id> {
    let get = |s: &str| subst[v(s)];
    let a = get("?A");
    let Some((r, c)) = shape(eg, a) else {
        return vec![];
    };
    let k = fresh(eg, "s", class, 0, r);
    let l = fresh(eg, "s", class, 1, c);
    let mut x = eg.add(Ir::Bind([k, l, a]));
    if c > 1 {
        x = eg.add(Ir::Agg([l, x]));
    }
    if r > 1 {
        x = eg.add(Ir::Agg([k, x]));
    }
    vec![x]
}

/// lower-matrix: `?m` -> `(ub k l (b k l ?m))`
fn lower_matrix(eg: &mut EG, class: Id, subst: &Subst) -> Vec<Id> {
    let get = |s: &str| subst[v(s)];
    let m = get("?m");
    let Some((r, c)) = shape(eg, m) else {
        return vec![];
    };
    let k = fresh(eg, "l", class, 0, r);
    let l = fresh(eg, "l", class, 1, c);
    let b = eg.add(Ir::Bind([k, l, m]));
    vec![eg.add(Ir::Unbind([k, l, b]))]
}

/// raise-relation: a relation with one or two attributes -> `(b x y (ub x y ?r))`
fn raise_relation(eg: &mut EG, subst: &Subst) -> Vec<Id> {
    let get = |s: &str| subst[v(s)];
    let r = get("?r");
    let Some(s) = schema(eg, r) else {
        return vec![];
    };
    if s.is_empty() || s.len() > 2 {
        return vec![];
    }
    let names: Vec<Symbol> = s.keys().copied().collect();
    let (x, y) = if names.len() == 2 {
        (names[0], names[1])
    } else {
        (names[0], unit_symbol())
    };
    let (xi, yi) = (sym(eg, x), sym(eg, y));
    let u = eg.add(Ir::Unbind([xi, yi, r]));
    vec![eg.add(Ir::Bind([xi, yi, u]))]
}

/// raise-join / raise-union / raise-pow: `(ub ?i ?j (op ?a ?b))` -> the element-wise LA operator (and an outer product for a column joined with a row)
fn raise_elementwise(eg: &mut EG, subst: &Subst, op: Ew) -> Vec<Id> {
    let get = |s: &str| subst[v(s)];
    let (i, j, a, b) = (get("?i"), get("?j"), get("?a"), get("?b"));
    let (Some(si), Some(sj)) = (attr_symbol(eg, i), attr_symbol(eg, j)) else {
        return vec![];
    };
    let (Some(la), Some(lb)) = (unbind_operand(eg, a, si, sj), unbind_operand(eg, b, si, sj))
    else {
        return vec![];
    };
    let mut res = vec![match op {
        Ew::Mul => eg.add(Ir::EMul([la, lb])),
        Ew::Add => eg.add(Ir::EAdd([la, lb])),
        _ => eg.add(Ir::EPow([la, lb])),
    }];
    // a column joined with a row is an outer product
    if op == Ew::Mul && !is_unit(si) && !is_unit(sj) {
        fn only(eg: &EG, x: Id, k: Symbol) -> bool {
            schema(eg, x).is_some_and(|s| s.len() == 1 && s.contains_key(&k))
        }
        for (c, r) in [(a, b), (b, a)] {
            if only(eg, c, si) && only(eg, r, sj) {
                let u = unit_symbol();
                if let (Some(mc), Some(mr)) = (as_matrix(eg, c, si, u), as_matrix(eg, r, u, sj)) {
                    res.push(eg.add(Ir::MMul([mc, mr])));
                }
            }
        }
    }
    res
}

/// raise-sum: `(ub ?i ?j (sum ?k ?a))` -> `mmul`, `rowSums` or `colSums`
fn raise_sum(eg: &mut EG, subst: &Subst) -> Vec<Id> {
    let get = |s: &str| subst[v(s)];
    let (i, j, k, a) = (get("?i"), get("?j"), get("?k"), get("?a"));
    let (Some(si), Some(sj), Some(sk)) =
        (attr_symbol(eg, i), attr_symbol(eg, j), attr_symbol(eg, k))
    else {
        return vec![];
    };
    let u = unit_symbol();
    let mut res = vec![];
    // aggregation of a relation over {i or j, k}
    if is_unit(si) || is_unit(sj) {
        let keep = if is_unit(si) { sj } else { si };
        if !is_unit(keep) {
            if !is_unit(si) {
                if let Some(m) = as_matrix(eg, a, si, sk) {
                    res.push(eg.add(Ir::RowSums(m)));
                }
            } else if let Some(m) = as_matrix(eg, a, sk, sj) {
                res.push(eg.add(Ir::ColSums(m)));
            }
        }
    }
    // a product: sum_k P(i, k) * Q(k, j)
    let joins = joins_of(eg, a);
    for (p, q) in joins {
        for (l, r) in [(p, q), (q, p)] {
            let (Some(sl), Some(sr)) = (schema(eg, l), schema(eg, r)) else {
                continue;
            };
            if !sl.contains_key(&sk) || !sr.contains_key(&sk) {
                continue;
            }
            let lrow = if sl.contains_key(&si) { si } else { u };
            let rcol = if sr.contains_key(&sj) { sj } else { u };
            let (Some(ml), Some(mr)) = (as_matrix(eg, l, lrow, sk), as_matrix(eg, r, sk, rcol))
            else {
                continue;
            };
            // the product's shape must be the unbound target's
            if (is_unit(lrow)) != (is_unit(si)) || (is_unit(rcol)) != (is_unit(sj)) {
                continue;
            }
            res.push(eg.add(Ir::MMul([ml, mr])));
        }
    }
    res
}

/// raise-scalar-sum: scalar `(sum ?k ?a)` -> `msum`, or a dot product
fn raise_scalar_sum(eg: &mut EG, class: Id, subst: &Subst) -> Vec<Id> {
    let get = |s: &str| subst[v(s)];
    let (k, a) = (get("?k"), get("?a"));
    if !eg[class].data.kind.is_scalar() {
        return vec![];
    }
    let Some(sk) = attr_symbol(eg, k) else {
        return vec![];
    };
    let u = unit_symbol();
    let mut res = vec![];
    if let Some(m) = as_matrix(eg, a, sk, u) {
        res.push(eg.add(Ir::MSum(m)));
    }
    // a full aggregate: sum_k sum_l P(k, l) is sum(P)
    let inner: Vec<(Id, Id)> = eg[a]
        .nodes
        .iter()
        .filter_map(|n| match n {
            Ir::Agg([l, p]) => Some((*l, *p)),
            _ => None,
        })
        .collect();
    for (l, p) in inner {
        let Some(sl) = attr_symbol(eg, l) else {
            continue;
        };
        if let Some(m) = as_matrix(eg, p, sk, sl) {
            res.push(eg.add(Ir::MSum(m)));
        }
    }
    let joins = joins_of(eg, a);
    for (p, q) in joins {
        let (Some(mp), Some(mq)) = (as_matrix(eg, p, sk, u), as_matrix(eg, q, sk, u)) else {
            continue;
        };
        let tp = eg.add(Ir::Trans(mp));
        let dot = eg.add(Ir::MMul([tp, mq]));
        res.push(eg.add(Ir::AsScalar(dot)));
    }
    res
}

/// subst-sum: `(subst ?n ?o (sum ?i ?a))`
fn subst_sum(eg: &mut EG, subst: &Subst) -> Vec<Id> {
    let get = |s: &str| subst[v(s)];
    let (n, o, i, a) = (get("?n"), get("?o"), get("?i"), get("?a"));
    if eg.find(i) == eg.find(o) {
        vec![eg.add(Ir::Agg([i, a]))]
    } else if eg.find(i) == eg.find(n) {
        vec![] // would capture; the analysis marks such terms invalid anyway
    } else {
        let s = eg.add(Ir::Subst([n, o, a]));
        vec![eg.add(Ir::Agg([i, s]))]
    }
}

/// subst-bind: `(subst ?n ?o (b ?i ?j ?A))`
fn subst_bind(eg: &mut EG, subst: &Subst) -> Vec<Id> {
    let get = |s: &str| subst[v(s)];
    let (n, o, i, j, a) = (get("?n"), get("?o"), get("?i"), get("?j"), get("?A"));
    let ren = |x: Id| if eg.find(x) == eg.find(o) { n } else { x };
    let (i2, j2) = (ren(i), ren(j));
    vec![eg.add(Ir::Bind([i2, j2, a]))]
}

/// empty-is-zero: a matrix class proved all zeros -> `(fill 0 rows cols)`
fn empty_is_zero(eg: &mut EG, subst: &Subst) -> Vec<Id> {
    let get = |s: &str| subst[v(s)];
    let m = get("?m");
    let d = &eg[m].data;
    let (Kind::Mat(r, c), true) = (d.kind.clone(), d.zero) else {
        return vec![];
    };
    // a zero of known sign keeps it (`matrix(-0.0, ...)` and `-0.5 * matrix(0.0, ...)` are
    // not `matrix(0.0, ...)`: the analysis's `neg`); one of unknown sign is read as +0.0
    // (README, exception 3)
    let zero = d
        .konst
        .filter(|v| *v == 0.0)
        .or_else(|| d.neg.map(|n| if n { -0.0 } else { 0.0 }))
        .unwrap_or(0.0);
    let (z, rr, cc) = (num(eg, zero), num(eg, r as f64), num(eg, c as f64));
    vec![eg.add(Ir::Fill([z, rr, cc]))]
}
