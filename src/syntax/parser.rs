//! The LALRPOP parser (generated from grammar/la.lalrpop) and the helpers its actions call.

use super::ast::{Expr, ExprKind, Program, Span};
use super::error::ParseError;

lalrpop_util::lalrpop_mod!(
    #[allow(clippy::all, clippy::pedantic, missing_docs, unused)]
    grammar,
    "/la.rs"
);

/// Parses a whole program.
pub fn parse_program(src: &str) -> Result<Program, ParseError> {
    let p = grammar::ProgramParser::new()
        .parse(src)
        .map_err(|e| ParseError::from_lalrpop(e, src))?;
    super::depth::check_program(&p)?;
    Ok(p)
}

/// Parses one expression (used by tests and the rewrite-case reader).
pub fn parse_expr(src: &str) -> Result<Expr, ParseError> {
    let e = grammar::ExprParser::new()
        .parse(src)
        .map_err(|e| ParseError::from_lalrpop(e, src))?;
    super::depth::check_expr(&e)?;
    Ok(e)
}

pub(crate) fn mk(l: usize, r: usize, kind: ExprKind) -> Expr {
    Expr {
        kind,
        span: Span::new(l, r),
    }
}

/// An integer literal, or a double when it does not fit in 64 bits.
pub(crate) fn number(s: &str) -> ExprKind {
    match s.parse::<i64>() {
        Ok(i) => ExprKind::Int(i),
        Err(_) => ExprKind::Double(s.parse().expect("digits")),
    }
}

/// Resolves backslash escapes in a string literal.
pub(crate) fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(c) => out.push(c),
            None => out.push('\\'),
        }
    }
    out
}
