//! # spores: an optimizing compiler and runtime for linear-algebra programs
//!
//! spores runs ML programs written in a subset of Apache SystemDS's DML (`.la` files). The
//! lifecycle of a program follows the folders of this crate:
//!
//! 1. **parse** ([`syntax`]): the LALRPOP grammar in `grammar/la.lalrpop` turns source text
//!    into an [`syntax::ast::Program`] where every node has a byte span. Statements end with
//!    `;` or a newline; operators have DML's precedence.
//! 2. **check** ([`check`]): builtins are resolved to operators, every expression gets a type
//!    (integer, double, boolean, string, or a matrix with the dimensions known at compile
//!    time), shapes are checked, and statements are grouped into basic blocks
//!    ([`check::hir`]). Constants are propagated so `rand(rows=m, ...)` has a known shape.
//! 3. **optimize** (to come): each basic block is lowered to relational algebra, saturated
//!    in an e-graph and the cheapest plan extracted, right before it runs.
//! 4. **execute** ([`exec`]): the blocks run on the sparse/dense kernels of the
//!    `spores-runtime` crate; shapes not known statically are checked here with the same rules.
//!
//! Every error a user can cause is an [`error::Error`] with a source span, rendered by
//! [`diagnostics::render`] as `file:line:col` with the source line and a marker.
//!
//! ```
//! let src = "X = matrix(2, rows=3, cols=4)\nprint(sum(X %*% t(X)))\n";
//! let mut out = Vec::new();
//! spores::driver::run(src, &Default::default(), &mut out).unwrap();
//! assert_eq!(String::from_utf8(out).unwrap(), "144.0\n");
//! ```
#![warn(missing_docs)]

#[cfg(all(unix, not(target_env = "musl")))]
mod alloc;
pub mod analysis;
pub mod builtins;
pub mod calibrate;
pub mod check;
pub mod cli;
pub mod diagnostics;
pub mod driver;
pub mod emit;
pub mod equiv;
pub mod error;
pub mod exec;
pub mod explain;
pub mod extract;
pub mod fuzz;
#[allow(missing_docs)] // operators are documented in the table of the module doc
pub mod ir;
pub mod lower;
pub mod optimize;
pub mod raise;
pub mod saturate;
pub mod syntax;

pub use spores_runtime as runtime;
