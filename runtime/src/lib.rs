//! The spores runtime: matrices stored densely or as CSR by their density, the kernels that
//! execute linear-algebra operators on them, and Matrix Market I/O.
//!
//! * [`matrix`]: the [`Matrix`] value and the dense/sparse representation rule.
//! * [`ops`]: scalar semantics of every element-wise operator.
//! * [`kernels`]: products (BLAS, CSR x dense, dense x CSR, CSR x CSR), element-wise operators
//!   with broadcasting that keep sparse results sparse, aggregates, transpose and indexing,
//!   `rand` and constant generators.
//! * [`fill`]: large results written once, with non-temporal stores past the cache.
//! * [`io`]: the files SystemDS reads and writes (text, CSV, Matrix Market, `.mtd` metadata).
//! * [`format`]: printing numbers and matrices as SystemDS does.
//!
//! Kernels trust their callers on shapes (the compiler checks them and reports user errors
//! with source positions); a mismatch inside a kernel is a bug and panics.
#![warn(missing_docs)]

pub mod error;
pub mod fill;
pub mod format;
pub mod io;
pub mod kernels;
pub mod matrix;
pub mod ops;

pub use error::RuntimeError;
pub use matrix::Matrix;
