//! `spores equiv CASES.tsv`: proves rewrite rules by equality saturation.
//!
//! Each row (`id method lhs rhs shapes note`, the format of ../shared/data/rewrites) is
//! parsed and checked under its declared shapes (upper-case names are matrices, lower-case
//! names scalars; `nnz=` gives a matrix's non-zeros), lowered to the optimizer's language,
//! and saturated from the lhs alone. The row is proved when the rhs term is found in the
//! lhs's e-class, or when both sides are constants of the same value (constant classes are
//! folded, never rewritten). A 1x1 matrix and a scalar count as equal (`as.scalar` is
//! inserted).

use crate::analysis::{Context, Kind, VarInfo, EG};
use crate::check::hir::{ScalarTy, Ty};
use crate::ir::Ir;
use crate::saturate::{saturate, Limits, Report, Rule};
use egg::{Id, RecExpr, Symbol};
use std::time::Duration;

/// One row of a cases file.
#[derive(Clone, Debug)]
pub struct Case {
    /// row id
    pub id: String,
    /// left-hand side, as written
    pub lhs: String,
    /// right-hand side, as written
    pub rhs: String,
    /// the shapes column
    pub shapes: String,
}

/// The outcome of one row.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// row id
    pub id: String,
    /// whether lhs == rhs was proved
    pub proved: bool,
    /// the saturation report
    pub report: Option<Report>,
    /// why the row could not be run
    pub error: Option<String>,
    /// with `--why`, the rewrite steps from lhs to rhs (`rule: before => after`)
    pub derivation: Vec<String>,
}

/// Reads a TSV cases file (header row first).
pub fn read_cases(text: &str) -> Result<Vec<Case>, String> {
    let mut out = Vec::new();
    let header = text.lines().next().unwrap_or("");
    if header.split('\t').count() < 4 {
        return Err(
            "line 1: expected a header of at least 4 tab-separated columns \
             (id, method, lhs, rhs, shapes, note)"
                .into(),
        );
    }
    for (n, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 4 {
            return Err(format!(
                "line {}: expected at least 4 tab-separated columns",
                n + 1
            ));
        }
        out.push(Case {
            id: cols[0].to_string(),
            lhs: cols[2].to_string(),
            rhs: cols[3].to_string(),
            shapes: cols.get(4).unwrap_or(&"").to_string(),
        });
    }
    if out.is_empty() {
        return Err("no cases after the header line".into());
    }
    Ok(out)
}

/// Parses `X:[100,50] Y:[100,1,nnz=0] s:[1,1]` into the variables' types and infos.
pub fn parse_shapes(s: &str) -> Result<Vec<(String, Ty, VarInfo)>, String> {
    let mut out = Vec::new();
    for item in s.split_whitespace() {
        let (name, spec) = item
            .split_once(':')
            .ok_or_else(|| format!("bad shape `{item}`"))?;
        let inner = spec
            .strip_prefix('[')
            .and_then(|x| x.strip_suffix(']'))
            .ok_or_else(|| format!("bad shape `{item}`"))?;
        let parts: Vec<&str> = inner.split(',').collect();
        let num = |p: &str| {
            p.trim()
                .parse::<usize>()
                .map_err(|_| format!("bad size in `{item}`"))
        };
        if parts.len() < 2 {
            return Err(format!("bad shape `{item}`"));
        }
        let (r, c) = (num(parts[0])?, num(parts[1])?);
        let nnz = match parts.get(2) {
            Some(p) => num(p
                .trim()
                .strip_prefix("nnz=")
                .ok_or_else(|| format!("bad `{item}`"))?)? as f64,
            None => (r * c) as f64,
        };
        if name.starts_with(|ch: char| ch.is_lowercase()) {
            out.push((
                name.to_string(),
                Ty::Scalar(ScalarTy::Double),
                // proved for finite values, as SystemDS's rewriters assume
                VarInfo::FiniteScalar,
            ));
        } else {
            out.push((
                name.to_string(),
                Ty::Matrix(Some(r), Some(c)),
                VarInfo::Matrix {
                    rows: r,
                    cols: c,
                    nnz,
                    // rewrites are proved for finite inputs, as SystemDS's rewriters assume
                    finite: true,
                },
            ));
        }
    }
    Ok(out)
}

fn build(src: &str, vars: &[(String, Ty, VarInfo)]) -> Result<RecExpr<Ir>, String> {
    let ast = crate::syntax::parse_expr(src).map_err(|e| format!("`{src}`: {e}"))?;
    let types: Vec<(String, Ty)> = vars.iter().map(|(n, t, _)| (n.clone(), *t)).collect();
    let hir = crate::check::check_expr(&ast, &types).map_err(|e| format!("`{src}`: {e}"))?;
    let mut out = RecExpr::default();
    crate::lower::lower_expr(&hir, &mut out).map_err(|e| format!("`{src}`: {e}"))?;
    Ok(out)
}

/// Wraps a 1x1 matrix term in `as.scalar`.
fn as_scalar(mut e: RecExpr<Ir>) -> RecExpr<Ir> {
    let root = Id::from(e.as_ref().len() - 1);
    e.add(Ir::AsScalar(root));
    e
}

/// Proves one case.
pub fn prove(case: &Case, rules: &[Rule], limits: &Limits) -> Outcome {
    prove_with(case, rules, limits, false)
}

/// Proves one case; with `why`, a proved case carries its derivation (egg's explanations,
/// which cost time and memory, so they are on only when asked for).
pub fn prove_with(case: &Case, rules: &[Rule], limits: &Limits, why: bool) -> Outcome {
    let fail = |e: String| Outcome {
        id: case.id.clone(),
        proved: false,
        report: None,
        error: Some(e),
        derivation: vec![],
    };
    let vars = match parse_shapes(&case.shapes) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let (mut lhs, mut rhs) = match (build(&case.lhs, &vars), build(&case.rhs, &vars)) {
        (Ok(l), Ok(r)) => (l, r),
        (Err(e), _) | (_, Err(e)) => return fail(e),
    };
    let mut ctx = Context::default();
    for (n, _, info) in &vars {
        ctx.vars.insert(Symbol::from(n.as_str()), *info);
    }
    // the kinds of both sides, to line up 1x1 matrices and scalars
    let kind = |e: &RecExpr<Ir>| {
        let (eg, root) = crate::saturate::runner::egraph_with(ctx.clone(), e);
        eg[root].data.kind.clone()
    };
    let (kl, kr) = (kind(&lhs), kind(&rhs));
    if kl == Kind::Mat(1, 1) && kr.is_scalar() {
        lhs = as_scalar(lhs);
    } else if kr == Kind::Mat(1, 1) && kl.is_scalar() {
        rhs = as_scalar(rhs);
    } else if kl != kr {
        return fail(format!(
            "the sides have different shapes: {} and {}",
            describe(&kl),
            describe(&kr)
        ));
    }
    let p = prove_terms(ctx, &lhs, &rhs, rules, limits, why);
    Outcome {
        id: case.id.clone(),
        proved: p.proved,
        report: Some(p.report),
        error: p.conflict.then(|| {
            "saturation merged two different constants (an unsound rewrite): not proved".into()
        }),
        derivation: p.derivation,
    }
}

/// What [`prove_terms`] found.
#[derive(Clone, Debug)]
pub struct Proof {
    /// whether the two terms were proved equal
    pub proved: bool,
    /// the saturation report
    pub report: Report,
    /// whether saturation merged two different constants (then nothing is proved)
    pub conflict: bool,
    /// with `why`, the rewrite steps from the first term to the second
    pub derivation: Vec<String>,
}

/// Proves two terms equal in a context. Both go into one e-graph: they are proved equal when
/// their classes merge (rules may need to simplify the second as well, e.g. a vector of ones
/// in an outer product), or when both are constants of the same value (constant classes are
/// folded, never rewritten). With `why`, explanations are on and the proof carries its
/// derivation (used by `spores equiv --why` and `spores opt --why`).
pub fn prove_terms(
    ctx: Context,
    lhs: &RecExpr<Ir>,
    rhs: &RecExpr<Ir>,
    rules: &[Rule],
    limits: &Limits,
    why: bool,
) -> Proof {
    let mut eg = EG::new(ctx);
    if why {
        eg = eg.with_explanations_enabled();
    }
    let root = eg.add_expr(lhs);
    let rroot = eg.add_expr(rhs);
    eg.rebuild();
    let found = |eg: &EG| {
        let same_value = match (eg[root].data.konst, eg[rroot].data.konst) {
            (Some(x), Some(y)) => x == y || (x.is_nan() && y.is_nan()),
            _ => false,
        };
        same_value || eg.find(root) == eg.find(rroot)
    };
    let (mut eg, report) = if found(&eg) {
        let report = Report {
            iterations: 0,
            nodes: eg.total_number_of_nodes(),
            classes: eg.number_of_classes(),
            time: Duration::ZERO,
            work: 0,
            stop: "goal reached".into(),
        };
        (eg, report)
    } else {
        saturate(eg, &[root, rroot], rules, limits, Some(&found))
    };
    let conflict = eg.analysis.conflicts > 0;
    let proved = found(&eg) && !conflict;
    let derivation = if proved && why && eg.find(root) == eg.find(rroot) {
        derivation(&mut eg, lhs, rhs)
    } else if proved && why {
        vec![format!(
            "constant-fold: both sides evaluate to {}",
            eg[root].data.konst.unwrap_or(f64::NAN)
        )]
    } else {
        vec![]
    };
    Proof {
        proved,
        report,
        conflict,
        derivation,
    }
}

/// The rewrite steps from `lhs` to `rhs` (in one class of an e-graph with explanations on),
/// one line each (`rule: before => after`).
pub fn derivation(eg: &mut EG, lhs: &RecExpr<Ir>, rhs: &RecExpr<Ir>) -> Vec<String> {
    let mut ex = eg.explain_equivalence(lhs, rhs);
    let flat = ex.make_flat_explanation();
    // egg's explanations may wander through a term and come back to it: a step that returns
    // to a term seen before drops the detour
    let mut terms: Vec<String> = vec![crate::ir::print::flat(&flat[0])];
    let mut steps: Vec<String> = Vec::new();
    for w in flat.windows(2) {
        let Some(step) = crate::ir::print::step(&w[0], &w[1]) else {
            continue;
        };
        let after = crate::ir::print::flat(&w[1]);
        if let Some(k) = terms.iter().position(|t| *t == after) {
            terms.truncate(k + 1);
            steps.truncate(k);
        } else {
            terms.push(after);
            steps.push(step);
        }
    }
    steps
}

/// A kind in words: `100x50 matrix`, `scalar`.
fn describe(k: &Kind) -> String {
    match k {
        Kind::Mat(r, c) => format!("a {r}x{c} matrix"),
        k if k.is_scalar() => "a scalar".into(),
        Kind::Invalid(why) => format!("an ill-formed term ({why})"),
        Kind::Attr(n) => format!("an attribute of size {n}"),
        Kind::Rel(s) => format!("a relation over {} attributes", s.len()),
    }
}
