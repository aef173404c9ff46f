//! Loads rewrite rules from text: one rule per line, `name: lhs => rhs`, `<=>` for both
//! directions (the reverse is named `name-rev`), `if cond(?x, ...), cond2(...)` for named side
//! conditions ([`super::conditions`]), and `!applier` as the right-hand side for rules written
//! in Rust ([`super::appliers`]). `#` starts a comment. The rule files under rules/ are
//! compiled into the binary.

use super::appliers::{ApplierKind, Named};
use super::conditions::{All, Cond, CondKind};
use crate::analysis::Context;
use crate::ir::Ir;
use egg::{ConditionalApplier, Pattern, Rewrite};

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

/// Parses one rule file.
pub fn parse_rules(file: &str, text: &str) -> Result<Vec<Rule>, RuleError> {
    let mut rules = Vec::new();
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
        rules.extend(parse_line(line).map_err(err)?);
    }
    Ok(rules)
}

fn parse_line(line: &str) -> Result<Vec<Rule>, String> {
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
    if let Some(app) = rhs.strip_prefix('!') {
        if both {
            return Err("a Rust applier cannot be used with `<=>`".into());
        }
        let kind =
            ApplierKind::from_name(app).ok_or_else(|| format!("unknown applier `!{app}`"))?;
        out.push(build(name, lhs_p, Named { kind }, &conds)?);
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
        out.push(build(name, lhs_p, rhs_p, &conds)?);
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
