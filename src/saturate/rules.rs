//! Loads rewrite rules from text: one rule per line, `name: lhs => rhs`, `<=>` for both
//! directions (the reverse is named `name-rev`), `if cond(?x, ...), cond2(...)` for named side
//! conditions ([`super::conditions`]), and `!applier` as the right-hand side for rules written
//! in Rust ([`super::appliers`]). `#` starts a comment. The rule files under rules/ are
//! compiled into the binary.
//!
//! A line `@commutative OP ...` declares that, in the left-hand sides of the rules after it in
//! that file, those operators match their two operands in either order: a left-hand side
//! with n such operators over operands that differ becomes up to 2^n searchers, the first
//! named as written and the others `NAME-c`, `NAME-c2`, ... This is the commutativity of
//! those operators applied once at load time, so that a fused operator is written once and
//! still found whichever order the program used, without letting a commutativity rewrite
//! grow the e-graph.
//!
//! **Deep patterns are searched from their middle.** egg's e-matching binds a pattern from
//! its root down and cannot stop a search part-way: for a left-hand side four operators deep
//! (the fused operators', `(mmul (m* ?W (m- (mmul ?U (t ?V)) ?X)) ?V)`) it enumerates every
//! combination of the nodes of the classes on the way before the last lookup fails, which
//! took seconds on e-graphs with large classes, because the subpattern below is matched
//! again for every path that reaches its class. Such a pattern is an [`Anchored`] searcher:
//! its upper part, with the subpattern two levels below the root (`(m- (mmul ?U (t ?V)) ?X)`)
//! cut out as a variable, is matched at each class as usual, and the cut-out subpattern once
//! per class it is asked at (memoized for the whole search); the matches are the joins of
//! the two that agree on the variables they share: the same matches as a plain search.

use super::appliers::{ApplierKind, Named};
use super::conditions::{All, Cond, CondKind};
use crate::analysis::{Context, EG};
use crate::ir::Ir;
use egg::{
    ConditionalApplier, ENodeOrVar, Id, Language, Pattern, PatternAst, Rewrite, SearchMatches,
    Searcher, Subst, Var,
};
use std::borrow::Cow;
use std::collections::HashMap;

/// A rewrite rule of the optimizer.
pub type Rule = Rewrite<Ir, Context>;

/// The rule files, in the order the saturation stage runs them.
pub const RULE_FILES: &[(&str, &str)] = &[
    (
        "translate.rules",
        include_str!("../../rules/translate.rules"),
    ),
    (
        "ra-identities.rules",
        include_str!("../../rules/ra-identities.rules"),
    ),
    ("rename.rules", include_str!("../../rules/rename.rules")),
    ("cleanup.rules", include_str!("../../rules/cleanup.rules")),
    ("fused.rules", include_str!("../../rules/fused.rules")),
    ("derived.rules", include_str!("../../rules/derived.rules")),
];

/// A rule file that does not load: which file, which line, what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct RuleError {
    /// the file name
    pub file: String,
    /// 1-based line
    pub line: usize,
    /// the problem
    pub message: String,
}

/// Every rule of every rule file.
pub fn all_rules() -> Result<Vec<Rule>, RuleError> {
    rules_except(&[])
}

/// The rules of every rule file but the named ones.
pub fn rules_except(skip: &[&str]) -> Result<Vec<Rule>, RuleError> {
    let mut out = Vec::new();
    for (file, text) in RULE_FILES.iter().filter(|(f, _)| !skip.contains(f)) {
        out.extend(parse_rules(file, text)?);
    }
    let mut names: Vec<String> = out.iter().map(|r| r.name.to_string()).collect();
    names.sort();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(RuleError {
            file: "rules/".into(),
            line: 0,
            message: format!("duplicate rule name `{}`", w[0]),
        });
    }
    Ok(out)
}

/// Whether the rule `name` runs in the first phase of a sampling saturation
/// ([`super::runner::LOWERING_ITERS`]): the LA -> RA translation, the relational identities,
/// renaming and cleanup do; the raising back to LA (`raise-*`, `unbind-*`, `add-to-sub`), the
/// fused operators (fused.rules) and the derived LA shortcuts (derived.rules) wait for the
/// second phase.
pub fn lowering(name: &str) -> bool {
    static LATER: std::sync::OnceLock<std::collections::HashSet<String>> =
        std::sync::OnceLock::new();
    let later = LATER.get_or_init(|| {
        RULE_FILES
            .iter()
            .filter(|(f, _)| matches!(*f, "fused.rules" | "derived.rules"))
            .flat_map(|(f, text)| parse_rules(f, text).unwrap_or_default())
            .map(|r| r.name.to_string())
            .collect()
    });
    !(name.starts_with("raise-")
        || name.starts_with("unbind-")
        || name == "add-to-sub"
        || later.contains(name))
}

/// Parses one rule file.
pub fn parse_rules(file: &str, text: &str) -> Result<Vec<Rule>, RuleError> {
    let mut rules = Vec::new();
    let mut commutative: Vec<String> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let err = |message: String| RuleError {
            file: file.to_string(),
            line: n + 1,
            message,
        };
        if let Some(ops) = line.strip_prefix("@commutative") {
            commutative = ops.split_whitespace().map(str::to_string).collect();
            if commutative.is_empty() {
                return Err(err("`@commutative` names no operator".into()));
            }
            continue;
        }
        if line.starts_with('@') {
            return Err(err(format!("unknown directive `{line}`")));
        }
        rules.extend(parse_line(line, &commutative).map_err(err)?);
    }
    Ok(rules)
}

/// The left-hand side `lhs` and its variants with the operands of the `commutative`
/// operators swapped, each once (the first is `lhs` itself). Swapping operands that are the
/// same subpattern gives no new variant.
fn commuted(lhs: &Pattern<Ir>, commutative: &[String]) -> Vec<Pattern<Ir>> {
    let ast = &lhs.ast;
    let nodes = ast.as_ref();
    // the nodes a swap applies to: commutative, two operands that print differently
    let swappable: Vec<usize> = (0..nodes.len())
        .filter(|&i| match &nodes[i] {
            ENodeOrVar::ENode(n) => {
                let kids = n.children();
                kids.len() == 2
                    && commutative.iter().any(|op| *op == n.to_string())
                    && subpattern(ast, kids[0]) != subpattern(ast, kids[1])
            }
            ENodeOrVar::Var(_) => false,
        })
        .collect();
    let mut out: Vec<Pattern<Ir>> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for mask in 0u32..(1 << swappable.len()) {
        let mut copy = nodes.to_vec();
        for (bit, &i) in swappable.iter().enumerate() {
            if mask & (1 << bit) != 0 {
                if let ENodeOrVar::ENode(n) = &mut copy[i] {
                    n.children_mut().swap(0, 1);
                }
            }
        }
        let p = Pattern::new(PatternAst::from(copy));
        if seen.insert(p.to_string()) {
            out.push(p);
        }
    }
    out
}

/// The subpattern rooted at `id`, printed.
fn subpattern(ast: &PatternAst<Ir>, id: Id) -> String {
    ast[id].build_recexpr(|c| ast[c].clone()).to_string()
}

fn parse_line(line: &str, commutative: &[String]) -> Result<Vec<Rule>, String> {
    let (name, rest) = line.split_once(':').ok_or("expected `name: lhs => rhs`")?;
    let name = name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(format!("bad rule name `{name}`"));
    }
    let (rest, conds) = match rest.split_once(" if ") {
        Some((r, c)) => (r, parse_conditions(c)?),
        None => (rest, vec![]),
    };
    let (lhs, rhs, both) = if let Some((l, r)) = rest.split_once("<=>") {
        (l.trim(), r.trim(), true)
    } else if let Some((l, r)) = rest.split_once("=>") {
        (l.trim(), r.trim(), false)
    } else {
        return Err("expected `=>` or `<=>`".into());
    };
    let lhs_p: Pattern<Ir> = lhs.parse().map_err(|e| format!("left-hand side: {e}"))?;
    let mut out = Vec::new();
    if both && !commutative.is_empty() {
        return Err("`<=>` cannot be used under `@commutative`".into());
    }
    let variants = commuted(&lhs_p, commutative);
    let names = (0..variants.len()).map(|k| match k {
        0 => name.to_string(),
        1 => format!("{name}-c"),
        _ => format!("{name}-c{k}"),
    });
    if let Some(app) = rhs.strip_prefix('!') {
        if both {
            return Err("a Rust applier cannot be used with `<=>`".into());
        }
        let kind =
            ApplierKind::from_name(app).ok_or_else(|| format!("unknown applier `!{app}`"))?;
        for (lhs, name) in variants.into_iter().zip(names) {
            out.push(build(&name, lhs, Named { kind }, &conds)?);
        }
    } else {
        let rhs_p: Pattern<Ir> = rhs.parse().map_err(|e| format!("right-hand side: {e}"))?;
        if both {
            out.push(build(
                &format!("{name}-rev"),
                rhs_p.clone(),
                lhs_p.clone(),
                &conds,
            )?);
        }
        for (lhs, name) in variants.into_iter().zip(names) {
            out.push(build(&name, lhs, rhs_p.clone(), &conds)?);
        }
    }
    Ok(out)
}

fn build<A>(name: &str, lhs: Pattern<Ir>, rhs: A, conds: &[Cond]) -> Result<Rule, String>
where
    A: egg::Applier<Ir, Context> + Send + Sync + 'static,
{
    let bound = lhs.vars();
    for c in conds {
        for v in &c.args {
            if !bound.contains(v) {
                return Err(format!(
                    "condition uses {v}, which the left-hand side does not bind"
                ));
            }
        }
    }
    let lhs = Anchored::new(lhs);
    if conds.is_empty() {
        Rewrite::new(name, lhs, rhs)
    } else {
        let applier = ConditionalApplier {
            condition: All(conds.to_vec()),
            applier: rhs,
        };
        Rewrite::new(name, lhs, applier)
    }
}

/// A left-hand side, searched in two parts when it is at least [`Anchored::DEEP`] operators
/// deep (see the module doc).
pub struct Anchored {
    full: Pattern<Ir>,
    split: Option<Split>,
}

/// A deep pattern cut in two: `upper` is the pattern with the subpattern `anchor` (two levels
/// below the root) replaced by the variable `hole`; `shared` are the variables both bind.
/// Each part is itself [`Anchored`], so a part that is still deep is cut again.
struct Split {
    upper: Box<Anchored>,
    anchor: Box<Anchored>,
    hole: Var,
    shared: Vec<Var>,
}

impl Anchored {
    /// Patterns with this many nested operators or more are searched in two parts.
    pub const DEEP: usize = 4;
    /// How far below the root the anchor is.
    const DOWN: usize = 2;

    /// Wraps a pattern, choosing its anchor: the deepest subpattern [`Self::DOWN`] levels
    /// down.
    pub fn new(full: Pattern<Ir>) -> Anchored {
        let ast = &full.ast;
        let root = ast.root();
        let mut split = None;
        if depth(ast, root) >= Self::DEEP {
            let mut level = vec![root];
            for _ in 0..Self::DOWN {
                level = level
                    .iter()
                    .flat_map(|&i| ast[i].children().to_vec())
                    .collect();
            }
            if let Some(at) = level.into_iter().max_by_key(|&i| depth(ast, i)) {
                // a part cut again gets a hole of its own
                let holes = full
                    .vars()
                    .iter()
                    .filter(|v| v.to_string().starts_with("?anchor-hole"))
                    .count();
                let hole: Var = format!("?anchor-hole{holes}").parse().expect("a variable");
                let mut upper = PatternAst::default();
                copy_except(ast, root, at, hole, &mut upper);
                let anchor = Pattern::new(ast[at].build_recexpr(|c| ast[c].clone()));
                let upper = Pattern::new(upper);
                let low = anchor.vars();
                let shared = upper
                    .vars()
                    .into_iter()
                    .filter(|v| low.contains(v))
                    .collect();
                split = Some(Split {
                    upper: Box::new(Anchored::new(upper)),
                    anchor: Box::new(Anchored::new(anchor)),
                    hole,
                    shared,
                });
            }
        }
        Anchored { full, split }
    }
}

/// Copies the subpattern at `id` into `out`, with the subpattern at `cut` replaced by `hole`.
fn copy_except(ast: &PatternAst<Ir>, id: Id, cut: Id, hole: Var, out: &mut PatternAst<Ir>) -> Id {
    if id == cut {
        return out.add(ENodeOrVar::Var(hole));
    }
    let node = ast[id]
        .clone()
        .map_children(|c| copy_except(ast, c, cut, hole, out));
    out.add(node)
}

/// The number of nested operators of the subpattern at `id`.
fn depth(ast: &PatternAst<Ir>, id: Id) -> usize {
    match &ast[id] {
        ENodeOrVar::Var(_) => 0,
        ENodeOrVar::ENode(n) => {
            1 + n
                .children()
                .iter()
                .map(|&c| depth(ast, c))
                .max()
                .unwrap_or(0)
        }
    }
}

/// The anchor's matches at each class asked so far, by the values of the shared variables.
type Lows = HashMap<Id, HashMap<Vec<Id>, Vec<Subst>>>;

impl Anchored {
    /// The matches of the whole pattern at `eclass`, joining the upper part's matches there
    /// with the anchor's at their hole (memoized in `low` across classes).
    fn search_split(
        &self,
        sp: &Split,
        egraph: &EG,
        eclass: Id,
        limit: usize,
        low: &mut Lows,
    ) -> Option<SearchMatches<'_, Ir>> {
        // both searches are bounded by the limit: on classes that hold many equal forms (a
        // zero that absorbed half the block) an unbounded search ran out of memory
        let up = sp.upper.search_eclass_with_limit(egraph, eclass, limit)?;
        let key = |s: &Subst| -> Vec<Id> { sp.shared.iter().map(|&v| egraph.find(s[v])).collect() };
        let vars = self.full.vars();
        let mut substs = Vec::new();
        'outer: for u in &up.substs {
            let d = egraph.find(u[sp.hole]);
            // the anchor's matches at d, by the values of the shared variables
            let lows = low.entry(d).or_insert_with(|| {
                let mut by: HashMap<Vec<Id>, Vec<Subst>> = HashMap::new();
                for a in sp
                    .anchor
                    .search_eclass_with_limit(egraph, d, limit)
                    .map_or_else(Vec::new, |m| m.substs)
                {
                    by.entry(key(&a)).or_default().push(a);
                }
                by
            });
            for a in lows.get(&key(u)).into_iter().flatten() {
                let mut s = Subst::with_capacity(vars.len());
                for &v in &vars {
                    s.insert(v, u.get(v).or_else(|| a.get(v)).copied()?);
                }
                substs.push(s);
                if substs.len() == limit {
                    break 'outer;
                }
            }
        }
        (!substs.is_empty()).then(|| SearchMatches {
            eclass,
            substs,
            ast: Some(Cow::Borrowed(&self.full.ast)),
        })
    }
}

impl Searcher<Ir, Context> for Anchored {
    fn search_eclass_with_limit(
        &self,
        egraph: &EG,
        eclass: Id,
        limit: usize,
    ) -> Option<SearchMatches<'_, Ir>> {
        match &self.split {
            Some(sp) => self.search_split(sp, egraph, eclass, limit, &mut HashMap::new()),
            None => self.full.search_eclass_with_limit(egraph, eclass, limit),
        }
    }

    fn search_with_limit(&self, egraph: &EG, limit: usize) -> Vec<SearchMatches<'_, Ir>> {
        if let [ENodeOrVar::Var(v)] = self.full.ast.as_ref() {
            // a bare variable (`?m => ...`) matches every class once, in the order of the
            // classes: egg's search gives exactly this, running its matching machine per class
            return egraph
                .classes()
                .take(limit)
                .map(|c| {
                    let mut subst = Subst::with_capacity(1);
                    subst.insert(*v, c.id);
                    SearchMatches {
                        eclass: c.id,
                        substs: vec![subst],
                        ast: Some(Cow::Borrowed(&self.full.ast)),
                    }
                })
                .collect();
        }
        let (Some(sp), Some(ENodeOrVar::ENode(root))) =
            (&self.split, self.full.ast.as_ref().last())
        else {
            return self.full.search_with_limit(egraph, limit);
        };
        let mut low = HashMap::new();
        let mut out = Vec::new();
        let mut left = limit;
        for id in egraph
            .classes_for_op(&root.discriminant())
            .into_iter()
            .flatten()
        {
            if left == 0 {
                break;
            }
            if let Some(m) = self.search_split(sp, egraph, id, left, &mut low) {
                left -= m.substs.len();
                out.push(m);
            }
        }
        out
    }

    fn get_pattern_ast(&self) -> Option<&PatternAst<Ir>> {
        Some(&self.full.ast)
    }

    fn vars(&self) -> Vec<Var> {
        self.full.vars()
    }
}

fn parse_conditions(text: &str) -> Result<Vec<Cond>, String> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let open = rest
            .find('(')
            .ok_or_else(|| format!("bad condition `{rest}`"))?;
        let close = rest
            .find(')')
            .ok_or_else(|| format!("unclosed condition `{rest}`"))?;
        let name = rest[..open].trim().trim_start_matches(',').trim();
        let (kind, arity) =
            CondKind::from_name(name).ok_or_else(|| format!("unknown condition `{name}`"))?;
        let args = rest[open + 1..close]
            .split(',')
            .map(|a| {
                a.trim()
                    .parse()
                    .map_err(|e| format!("condition argument `{a}`: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if !arity.contains(&args.len()) {
            return Err(format!("condition `{name}` takes {arity:?} arguments"));
        }
        out.push(Cond { kind, args });
        rest = rest[close + 1..].trim();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_file_loads() {
        let rules = all_rules().unwrap_or_else(|e| panic!("{e}"));
        assert!(rules.len() > 30, "{} rules", rules.len());
    }

    fn names_and_sides(text: &str) -> Vec<(String, String)> {
        parse_rules("t.rules", text)
            .unwrap_or_else(|e| panic!("{e}"))
            .iter()
            .map(|r| {
                (
                    r.name.to_string(),
                    r.searcher.get_pattern_ast().unwrap().to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn commutative_operators_match_both_operand_orders() {
        let got = names_and_sides(
            "@commutative m* m+\n\
             f: (msum (m* ?X (log (m+ (mmul ?U ?H) ?e)))) => ?X\n\
             g: (m* ?P ?P) => ?P\n\
             h: (m- ?a (mmul ?a ?b)) => ?a",
        );
        let want = [
            ("f", "(msum (m* ?X (log (m+ (mmul ?U ?H) ?e))))"),
            ("f-c", "(msum (m* ?X (log (m+ ?e (mmul ?U ?H)))))"),
            ("f-c2", "(msum (m* (log (m+ (mmul ?U ?H) ?e)) ?X))"),
            ("f-c3", "(msum (m* (log (m+ ?e (mmul ?U ?H))) ?X))"),
            // the same operand twice: no second order
            ("g", "(m* ?P ?P)"),
            // m- is not declared commutative
            ("h", "(m- ?a (mmul ?a ?b))"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(n, p)| (n.to_string(), p.to_string()))
            .collect();
        assert_eq!(got, want);
        // without the directive, a rule is loaded as written
        let plain = names_and_sides("f: (m* ?X (mmul ?U ?H)) => ?X");
        assert_eq!(plain.len(), 1);
    }

    #[test]
    fn broken_rules_name_file_and_line() {
        let cases = [
            (
                "ok: (* ?a ?b) => (* ?b ?a)\nbad (* ?a ?b)",
                2,
                "expected `name",
            ),
            ("x: (* ?a ?b) => (* ?c ?a)", 1, "?c"),
            ("x: (* ?a ?b) => !nope", 1, "unknown applier"),
            ("x: (* ?a ?b) => ?a if what(?a)", 1, "unknown condition"),
            ("x: (* ?a ?b) => ?a if not-free(?z, ?a)", 1, "does not bind"),
            ("x: (* ?a ?b) <=> !pull-sum", 1, "cannot be used"),
            ("x: (* ?a => ?a", 1, "left-hand side"),
            ("@commutative\nx: (* ?a ?b) => ?a", 1, "names no operator"),
            ("@commute m*", 1, "unknown directive"),
            ("@commutative m*\nx: (m* ?a 1) <=> ?a", 2, "cannot be used"),
        ];
        for (text, line, msg) in cases {
            let e = match std::panic::catch_unwind(|| parse_rules("t.rules", text)) {
                Ok(r) => r.err().unwrap_or_else(|| panic!("{text} should fail")),
                Err(_) => panic!("{text} panicked"),
            };
            assert_eq!(e.line, line, "{text}: {e}");
            assert!(e.to_string().contains(msg), "{text}: {e}");
            assert!(e.to_string().starts_with("t.rules:"), "{e}");
        }
    }
}

#[cfg(test)]
mod anchored_tests {
    use super::*;
    use crate::optimize::{context, Input};
    use std::collections::BTreeSet;

    /// Every left-hand side of the rule files, searched as an [`Anchored`] pattern (cut in
    /// parts, and cut again where a part is still deep), finds exactly the matches of the plain
    /// pattern, on an e-graph saturated from the fused operators' meanings.
    #[test]
    fn anchored_search_finds_the_plain_matches() {
        let (m, n, k) = (30, 20, 4);
        let mat = |rows, cols, nnz| Input::Matrix {
            rows,
            cols,
            nnz,
            finite: true,
        };
        let inputs: Vec<(String, Input)> = [
            ("X", mat(m, n, 60)),
            ("W", mat(m, n, 60)),
            ("A", mat(m, n, 60)),
            ("U", mat(m, k, m * k)),
            ("B", mat(m, k, m * k)),
            ("P", mat(m, k, m * k)),
            ("V", mat(n, k, n * k)),
            ("v", mat(n, k, n * k)),
            ("w", mat(m, 1, m)),
            ("H", mat(k, n, k * n)),
            ("e", Input::FiniteScalar),
        ]
        .into_iter()
        .map(|(s, i)| (s.to_string(), i))
        .collect();
        let mut eg = EG::new(context(&inputs));
        let mut lhss = Vec::new();
        let mut roots = Vec::new();
        for (_, text) in RULE_FILES {
            for line in text.lines() {
                let line = line.split('#').next().unwrap_or("").trim();
                let Some((name, rest)) = line.split_once(':') else {
                    continue;
                };
                let Some((lhs, rhs)) = rest.split_once("=>") else {
                    continue;
                };
                let lhs = lhs.trim().trim_end_matches('<').trim();
                lhss.push(lhs.to_string());
                // the fused operators' meanings seed the e-graph with deep forms
                if name.ends_with("-meaning") {
                    let term: egg::RecExpr<Ir> =
                        rhs.trim().replace('?', "").parse().expect("a term");
                    roots.push(eg.add_expr(&term));
                }
            }
        }
        assert!(roots.len() >= 9, "{} meanings", roots.len());
        let limits = crate::saturate::Limits {
            iters: 6,
            nodes: 4000,
            ..crate::saturate::Limits::default()
        };
        let (eg, _) = crate::saturate::saturate(eg, &roots, &all_rules().unwrap(), &limits, None);
        let eg = &eg;
        let norm = |ms: Vec<SearchMatches<'_, Ir>>, vars: &[Var]| -> BTreeSet<(Id, Vec<Id>)> {
            let mut out = BTreeSet::new();
            for m in &ms {
                for s in &m.substs {
                    let b = vars.iter().map(|v| eg.find(s[*v])).collect();
                    out.insert((eg.find(m.eclass), b));
                }
            }
            out
        };
        let (mut deep, mut matched) = (0, 0);
        for lhs in &lhss {
            let Ok(p) = lhs.parse::<Pattern<Ir>>() else {
                continue;
            };
            let a = Anchored::new(p.clone());
            deep += usize::from(a.split.is_some());
            let vars = p.vars();
            let (want, got) = (norm(p.search(eg), &vars), norm(a.search(eg), &vars));
            assert_eq!(got, want, "{lhs}");
            matched += usize::from(a.split.is_some() && !want.is_empty());
        }
        println!(
            "{} nodes, {deep} deep patterns, {matched} of them match",
            eg.total_number_of_nodes()
        );
        assert!(
            deep >= 10 && matched >= 5,
            "{deep} deep patterns, {matched} match"
        );
    }
}
