//! Kernels, one file per family. The operator kernels (`elementwise`, `matmul`, `aggregate`,
//! `fused`, `reorg`) take operands whose shapes the caller has checked; the builtin kernels
//! check their arguments themselves and return a [`crate::RuntimeError`] for bad user data
//! (never a panic).
//!
//! # Builtins by DML name
//!
//! | DML | kernel |
//! |---|---|
//! | `rand(rows, cols, min, max, sparsity, pdf, lambda, seed)` (pdf `uniform`, `normal`, `poisson`, `cb_uniform`, `cb_normal`) | [`generate::rand_with`] ([`generate::rand_matrix`] for uniform), [`generate::Pdf::parse`] |
//! | `sample(range, size, replace, seed)` | [`generate::sample`] |
//! | `seq(from, to, incr)` | [`generate::seq`], [`generate::seq_default_incr`], [`generate::seq_length`] |
//! | `matrix(v, rows, cols)` | [`generate::constant`] |
//! | `cbind`, `rbind`, `append` (= `cbind`) | [`structure::cbind`], [`structure::rbind`] |
//! | `diag` | [`structure::diag`] |
//! | `rev` | [`structure::rev`] |
//! | `lower.tri`, `upper.tri` (`diag=`, `values=`) | [`structure::triangle`] |
//! | `replace(target, pattern, replacement)` | [`structure::replace`] |
//! | `removeEmpty(target, margin, select, empty.return)` | [`structure::remove_empty`], [`structure::Margin::parse`] |
//! | `order(target, by, decreasing, index.return)` | [`structure::order`] |
//! | `cumsum`, `cumprod`, `cummin`, `cummax` | [`scan::cumulative`] with [`scan::CumOp`] |
//! | `cumsumprod` | [`scan::cumsumprod`] |
//! | `rowIndexMax`, `rowIndexMin` | [`scan::row_index_extreme`] |
//! | `trace` | [`scan::trace`] |
//! | `table(A, B, W, odim1, odim2)` | [`table::table`] with [`table::TableArg`] |
//! | `aggregate(target, groups, fn, ngroups)` | [`table::grouped_aggregate`], [`table::GroupFn::parse`] |
//! | `countDistinctApprox`, `rowCountDistinctApprox`, `colCountDistinctApprox` | [`structure::count_distinct_approx`] |
//! | `var`, `sd` | [`stats::var`], [`stats::sd`] |
//! | `rowVars`, `colVars`, `rowSds`, `colSds` | [`stats::dir_var`] |
//! | `moment` / `centralMoment` | [`stats::moment`] |
//! | `cov` | [`stats::cov`] |
//! | `quantile(X, p)`, `quantile(X, P)` | [`stats::quantile`], [`stats::quantiles`] |
//! | `median` | [`stats::median`] |
//! | `interQuantileMean` | [`stats::inter_quantile_mean`] |
//! | `sin cos tan asin acos atan sinh cosh tanh`, `isNaN`/`is.nan`, `isNA`/`is.na`, `isInf`/`is.infinite` | [`math::map`] with [`math::MathFn::from_name`] |
//! | `contains(target, pattern)` | [`math::contains`] |
//! | `outer(a, b, op)` | [`math::outer`] (op via [`crate::ops::BinOp`]) |
//! | `solve`, `inv`, `cholesky`, `det`, `eigen`, `svd` | [`linalg::solve`], [`linalg::inv`], [`linalg::cholesky`], [`linalg::det`], [`linalg::eigen`], [`linalg::svd`] |
//! | `cdf`, `icdf`, `pnorm`, `qnorm`, `pexp`, `qexp`, `pchisq`, `qchisq`, `pf`, `qf`, `pt`, `qt` | [`distributions::Dist::parse`] (dist name and parameters), [`distributions::Dist::cdf`], [`distributions::Dist::icdf`] |
//! | `sqrtMatrix` (SystemDS's `sqrtMatrixJava`) | [`linalg::sqrt_matrix`] |
//! | `unique(X, dir)` | [`structure::unique`] with [`structure::UniqueDir`] |
//! | `prod` | [`stats::prod`] |
//! | `conv2d`, `max_pool`, `avg_pool`, `bias_add`, `bias_multiply` | [`dnn::conv2d`], [`dnn::pool`], [`dnn::bias`] with [`dnn::Geometry`] |
//! | `conv2d_backward_filter`, `conv2d_backward_data`, `max_pool_backward`, `avg_pool_backward` | [`dnn::conv2d_backward_filter`], [`dnn::conv2d_backward_data`], [`dnn::pool_backward`] |
//! | `batch_norm2d`, `batch_norm2d_backward`, `lstm`, `lstm_backward` | [`dnn::batch_norm2d`], [`dnn::batch_norm2d_backward`], [`dnn::lstm`], [`dnn::lstm_backward`] |
//!
//! Already served by operator kernels: `t` ([`reorg::transpose`]), `sum`/`mean`/`min`/`max`
//! and their row/col forms ([`aggregate`]), `exp`, `log`, `abs`, `sqrt`, `round`, `floor`,
//! `ceil`, `sign`, `sigmoid` ([`elementwise::unary`]), `pmin`/`pmax` and `ifelse`
//! ([`elementwise`]).

pub mod aggregate;
pub mod assign;
pub mod cellwise;
pub mod dense_product;
pub mod distributions;
pub mod dnn;
pub mod elementwise;
pub mod fastmath;
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
pub mod sumlog;
pub mod table;

pub use aggregate::{aggregate_all, aggregate_dir, row_sums_mapped};
pub use elementwise::{binary, broadcast_dim, broadcast_shape, ifelse, unary, Operand};
pub use fused::{
    csr_t_mul_dense, mmchain, mmchain_minus, mmchain_threads, sddmm, sddmm_mm, sddmm_sum, smmchain,
    sprop, tmatmul, tmatmul_with, wcemm, wdivmm, wsloss, wsloss_weighted, wsubmm, Side,
};
pub use generate::{
    constant, rand_matrix, rand_with, rand_with_tasks, sample, seq, seq_default_incr, seq_length,
    Pdf, RandSpec, DEFAULT_BLOCK,
};
pub use matmul::{
    csr_mul_csr, csr_mul_dense, dense_mul_csr, dense_mul_dense, dense_mul_dense_small_inner,
    dense_mul_narrow, dense_mul_self_t, dense_t_mul_dense, dense_t_mul_narrow, dense_t_mul_self,
    dense_t_mul_self_split, dense_view, dot, matmul, matmul_with, mul_self_t, row_block_sums,
    small_minus_csr_narrow, t_mul_self, NARROW,
};
/// SystemDS's split of its multi-threaded vector products, and the products that follow it
/// with the thread count given (for tests on any machine).
pub use matmul::{
    csr_row_mul_csr, csr_t_mul_vector, dense_row_mul_csr, dense_t_mul_vector, set_systemds_threads,
    systemds_balanced, systemds_machine_threads, systemds_row_sums, systemds_splits,
    systemds_t_sparse_splits, systemds_threads, PartialFold, SYSTEMDS_PAR_MEM,
    SYSTEMDS_PAR_MINFLOP,
};
pub use reorg::{csr_transpose, slice, transpose};

/// The stored values of a CSR matrix split into one mutable slice per row, numbered: `data`
/// cut at the row boundaries of `indptr` (for kernels that write each row's values in
/// parallel).
pub fn csr_rows_mut<'a>(indptr: &[usize], data: &'a mut [f64]) -> Vec<(usize, &'a mut [f64])> {
    let m = indptr.len().saturating_sub(1);
    let mut rows = Vec::with_capacity(m);
    let mut rest = data;
    for i in 0..m {
        let (h, t) = rest.split_at_mut(indptr[i + 1] - indptr[i]);
        rows.push((i, h));
        rest = t;
    }
    rows
}
