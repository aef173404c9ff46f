//! Turns every [`Error`] into a codespan-reporting diagnostic: `error: message`, then
//! `file:line:col`, the source line with a marker and label, and notes. This is the only
//! place that formats errors for users. (codespan-reporting was chosen over ariadne for its
//! plain-text output without colors, which keeps snapshot tests stable.)

use crate::error::Error;
use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor};

/// Renders an error against its source file, optionally with ANSI colors.
pub fn render(err: &Error, file_name: &str, source: &str, color: bool) -> String {
    // an error in a library file is shown in that file
    if let Some((name, text, base)) = crate::syntax::sources::lookup(err.span().start) {
        return render_at(err, &name, &text, base, color);
    }
    render_at(err, file_name, source, 0, color)
}

/// `file:line:col` of a span, in whichever source file it is.
pub fn describe_span(span: crate::syntax::ast::Span) -> String {
    if let Some((name, text, base)) = crate::syntax::sources::lookup(span.start) {
        let (l, c) = line_col(&text, span.start - base);
        return format!("{name}:{l}:{c}");
    }
    match crate::syntax::sources::main_text() {
        Some(text) => {
            let (l, c) = line_col(&text, span.start);
            format!("line {l}, column {c} of the program")
        }
        None => format!("offset {} of the program", span.start),
    }
}

fn render_at(err: &Error, file_name: &str, source: &str, base: usize, color: bool) -> String {
    let file = SimpleFile::new(file_name, source);
    let span = err.span();
    let span = crate::syntax::ast::Span::new(span.start - base, span.end.saturating_sub(base));
    // clamp to the text so a span at end of file still renders
    let (s, e) = (span.start.min(source.len()), span.end.min(source.len()));
    let (headline, label, notes) = match err {
        Error::Parse(p) => {
            let mut notes = Vec::new();
            if !p.expected.is_empty() {
                let shown: Vec<&str> = p.expected.iter().take(8).map(String::as_str).collect();
                let more = if p.expected.len() > 8 { ", ..." } else { "" };
                notes.push(format!("expected one of {}{more}", shown.join(", ")));
            }
            (format!("syntax error: {}", p.message), None, notes)
        }
        Error::Check(e) => (e.message.clone(), e.label.clone(), e.notes.clone()),
        Error::Runtime(e) => (
            format!("runtime error: {}", e.message),
            e.label.clone(),
            e.notes.clone(),
        ),
    };
    let mut lab = Label::primary((), s..e);
    if let Some(l) = label {
        lab = lab.with_message(l);
    }
    let diag = Diagnostic::error()
        .with_message(headline)
        .with_labels(vec![lab])
        .with_notes(notes);
    let mut buf = if color {
        termcolor::Buffer::ansi()
    } else {
        termcolor::Buffer::no_color()
    };
    let config = term::Config::default();
    term::emit(&mut buf, &config, &file, &diag).expect("writing to a buffer");
    String::from_utf8_lossy(buf.as_slice()).into_owned()
}

/// `line:col` (1-based) of a byte offset, for one-line messages.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}
