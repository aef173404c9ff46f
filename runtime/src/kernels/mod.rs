//! Kernels, one file per family. Each takes operands whose shapes the caller has checked.

pub mod aggregate;
pub mod assign;
pub mod elementwise;
pub mod fused;
pub mod generate;
pub mod matmul;
pub mod reorg;

pub use aggregate::{aggregate_all, aggregate_dir};
pub use elementwise::{binary, broadcast_shape, ifelse, unary, Operand};
pub use fused::{
    csr_t_mul_dense, mmchain, sddmm, sprop, tmatmul, wcemm, wdivmm, wsloss, wsloss_weighted,
    wsubmm, Side,
};
pub use generate::{constant, rand_matrix, RandSpec};
pub use matmul::{
    csr_mul_csr, csr_mul_dense, dense_mul_csr, dense_mul_dense, dense_mul_dense_small_inner, matmul,
};
pub use reorg::{csr_transpose, slice, transpose};
