//! The errors a user can cause, one type per stage, joined into [`Error`]. Each becomes a
//! diagnostic with file:line:col in [`crate::diagnostics`].

use crate::syntax::ast::Span;
pub use crate::syntax::ParseError;

/// An error at a source position, found by the checker or during execution.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct SpannedError {
    /// the headline
    pub message: String,
    /// the offending source text
    pub span: Span,
    /// a label under the marker (what was found there)
    pub label: Option<String>,
    /// further notes (what was expected, hints)
    pub notes: Vec<String>,
}

impl SpannedError {
    /// An error with a message and position.
    pub fn new(span: Span, message: impl Into<String>) -> SpannedError {
        SpannedError {
            message: message.into(),
            span,
            label: None,
            notes: vec![],
        }
    }

    /// Adds the label shown under the marker.
    pub fn with_label(mut self, label: impl Into<String>) -> SpannedError {
        self.label = Some(label.into());
        self
    }

    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> SpannedError {
        self.notes.push(note.into());
        self
    }
}

/// Any error of a spores run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// the program does not parse
    #[error("syntax error: {0}")]
    Parse(#[from] ParseError),
    /// the program parses but is ill-typed or ill-shaped
    #[error("{0}")]
    Check(SpannedError),
    /// the program failed while running
    #[error("{0}")]
    Runtime(SpannedError),
}

impl Error {
    /// The source span the error points at.
    pub fn span(&self) -> Span {
        match self {
            Error::Parse(e) => e.span,
            Error::Check(e) | Error::Runtime(e) => e.span,
        }
    }
}

/// Result of a stage.
pub type Result<T, E = Error> = std::result::Result<T, E>;
