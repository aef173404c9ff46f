//! Kernels, one file per family. Each takes operands whose shapes the caller has checked.

pub mod aggregate;
pub mod assign;
pub mod elementwise;
pub mod fused;
pub mod generate;
pub mod linalg;
pub mod math;
pub mod matmul;
pub mod prng;
pub mod reorg;
pub mod scan;
pub mod stats;
pub mod structure;
pub mod table;

pub use aggregate::{aggregate_all, aggregate_dir};
pub use elementwise::{binary, broadcast_shape, ifelse, unary, Operand};
pub use fused::{
    csr_t_mul_dense, mmchain, sddmm, sprop, tmatmul, wcemm, wdivmm, wsloss, wsloss_weighted,
    wsubmm, Side,
};
pub use generate::{
    constant, rand_matrix, rand_with, sample, seq, seq_default_incr, seq_length, Pdf, RandSpec,
    DEFAULT_BLOCK,
};
pub use matmul::{
    csr_mul_csr, csr_mul_dense, dense_mul_csr, dense_mul_dense, dense_mul_dense_small_inner, matmul,
};
pub use reorg::{csr_transpose, slice, transpose};
