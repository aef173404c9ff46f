//! Syntax errors: every LALRPOP error mapped once into our own spanned [`ParseError`].

use super::ast::Span;
use lalrpop_util::lexer::Token;

/// A syntax error at a position in the source.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// what went wrong
    pub message: String,
    /// where
    pub span: Span,
    /// what the parser would have accepted there
    pub expected: Vec<String>,
}

impl ParseError {
    /// Converts LALRPOP's error, naming tokens as a user would.
    pub fn from_lalrpop(
        e: lalrpop_util::ParseError<usize, Token<'_>, &'static str>,
        src: &str,
    ) -> ParseError {
        use lalrpop_util::ParseError as E;
        match e {
            E::InvalidToken { location } => {
                let c = src[location..].chars().next().unwrap_or(' ');
                ParseError {
                    message: format!("unexpected character '{c}'"),
                    span: Span::new(location, location + c.len_utf8()),
                    expected: vec![],
                }
            }
            E::UnrecognizedEof { location, expected } => ParseError {
                message: "unexpected end of file".into(),
                span: Span::new(location, location),
                expected: friendly(&expected),
            },
            E::UnrecognizedToken {
                token: (l, t, r),
                expected,
            } => ParseError {
                message: format!("unexpected {}", describe(t.1)),
                span: Span::new(l, r),
                expected: friendly(&expected),
            },
            E::ExtraToken { token: (l, t, r) } => ParseError {
                message: format!("unexpected {}", describe(t.1)),
                span: Span::new(l, r),
                expected: vec![],
            },
            E::User { error } => ParseError {
                message: error.to_string(),
                span: Span::new(0, 0),
                expected: vec![],
            },
        }
    }
}

fn describe(tok: &str) -> String {
    if tok.starts_with('"') || tok.starts_with('\'') {
        "string".into()
    } else if tok.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        format!("number `{tok}`")
    } else if ["if", "else", "for", "in", "while", "TRUE", "FALSE"].contains(&tok) {
        format!("keyword `{tok}`")
    } else if tok.starts_with(|c: char| c.is_ascii_alphabetic()) {
        format!("name `{tok}`")
    } else {
        format!("`{tok}`")
    }
}

/// Renames LALRPOP's terminal names (quoted literals, raw regexes) to words.
fn friendly(expected: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in expected {
        let name = if e.starts_with("r#") {
            if e.contains("A-Za-z][A-Za-z0-9_]*(") {
                "a name".to_string()
            } else if e.contains("\\$") {
                "a script argument".to_string()
            } else if e.contains("0-9") {
                "a number".to_string()
            } else {
                "a string".to_string()
            }
        } else {
            format!("`{}`", e.trim_matches('"'))
        };
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}
