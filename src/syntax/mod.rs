//! Stage 1, parse: `.la` source text to an [`ast::Program`] with spans.

pub mod ast;
pub mod depth;
pub mod error;
pub mod parser;

pub use error::ParseError;
pub use parser::{parse_expr, parse_program};
