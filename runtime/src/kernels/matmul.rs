//! Matrix products, one kernel per operand format, and the [`matmul`] dispatcher.
//!
//! | left | right | kernel | result |
//! |---|---|---|---|
//! | dense | dense | SystemDS's kernel for the shape, in its order ([`super::dense_product`]); beyond its `ORDER_WORK` (but for a right side of at most `SKINNY_ORDER_COLS` columns), [`dense_mul_dense`] (`cblas_dgemm` with the `blas` feature, else `matrixmultiply`) | dense |
//! | dense | CSR, at most [`NARROW`] columns | [`dense_mul_narrow`] on B made dense: one [`dot`] per output cell, rows in parallel | dense |
//! | CSR | dense | [`csr_mul_dense`]: for each row, `out[i,:] += a_ij * B[j,:]`, rows in parallel | dense |
//! | dense | CSR | [`dense_mul_csr`]: for each row of A, scatter `a_ij * B[j,:]` | dense |
//! | CSR | CSR | [`csr_mul_csr`]: Gustavson's row-by-row product with a dense accumulator | CSR |
//!
//! `t(A) %*% B` for a dense A (`super::fused::tmatmul`) runs as SystemDS does
//! ([`super::dense_product::systemds_t_dense`]); beyond `ORDER_WORK`, without forming `t(A)`:
//! [`dense_t_mul_narrow`] for a narrow B, else `dgemm` with A transposed in place
//! ([`dense_t_mul_dense`]).
//!
//! `A %*% S - X %*% V` for a thin dense A and a CSR X (ALS's gradient) runs in one pass over
//! the rows without forming either product ([`small_minus_csr_narrow`], the bits of the two
//! products and the subtraction), when the plan evaluator finds both products used only there.
//!
//! The narrow kernels are the matrix-vector products of iterative solvers (`X %*% s`,
//! `t(X) %*% r` on a tall dense X): memory-bound, so they read X once, in order, on all cores.
//! They multiply every cell (no zero skipping), so NaN and Inf propagate as in the naive loop
//! without the scan of [`ieee_zeros`]. The one exception is asked for by the caller: a plan
//! whose dense input is known finite (scanned once per value for the plan cache) runs
//! `t(X) %*% r` through [`matmul_with`] or `tmatmul_with`, which do not read the rows of X
//! that r weighs by zero (the same sums, [`vm_rows_lanes`]): L2-SVM's gradient
//! `t(X) %*% (out * Y)` reads only its support vectors' rows. Sums over rows (`t(A) %*% B`) are split into a fixed
//! partition of row blocks that depends only on the shape ([`row_block_sums`]), and the
//! blocks' partial sums are added in block order: the same bits on every run, whatever the
//! thread count or scheduling.
//!
//! Shapes are the caller's contract (the checker and interpreter report user errors first);
//! a mismatch here is a broken invariant and panics.

use crate::matrix::{col, idx, Csr, Dense, Idx, Matrix};
use ndarray::Array2;
use rayon::prelude::*;

/// Work (multiply-adds) below which a kernel runs on one thread.
const PAR_WORK: usize = 1 << 16;

/// `A %*% B` for any pair of representations; the result's representation follows its density.
/// IEEE semantics hold whatever the representation: the kernels skip zeros (the implicit
/// ones of CSR, and the explicit ones of a dense left operand), so [`ieee_zeros`] puts back
/// the NaN of `0 * Inf` and `0 * NaN` (a scan of the operands for non-finite values, linear
/// in their size; nothing else to do in the usual all-finite case).
pub fn matmul(a: &Matrix, b: &Matrix) -> Matrix {
    matmul_with(a, b, false, false)
}

/// [`matmul`] for an A and a B the caller may know to be finite (plan inputs, scanned once for
/// the plan cache): a row vector with zeros times a dense B reads only the rows of B it weighs
/// ([`super::dense_product::systemds_dense_with`]), the same sums; a known-finite operand is
/// not scanned for Inf and NaN again ([`ieee_zeros_known`]).
pub fn matmul_with(a: &Matrix, b: &Matrix, a_finite: bool, b_finite: bool) -> Matrix {
    assert_eq!(a.cols(), b.rows(), "matmul shape contract");
    // a dense A with a narrow B stored sparse (a 0/1 vector, a mostly-zero residual): the
    // narrow kernel on B made dense (small), exact IEEE
    if let (Matrix::Dense(ad), Matrix::Sparse(_)) = (a, b) {
        if b.cols() <= NARROW {
            return Matrix::from_dense(dense_mul_narrow(ad, &b.to_dense()));
        }
    }
    let c = match (a, b) {
        // SystemDS's kernels; no scan for non-finite values where they form every product
        (Matrix::Dense(ad), Matrix::Dense(bd)) => {
            let (c, exact) = super::dense_product::systemds_dense_with(ad, bd, b_finite);
            if exact {
                return Matrix::from_dense(c);
            }
            Matrix::from_dense(c) // zeros of A skipped: ieee_zeros below
        }
        (Matrix::Sparse(a), Matrix::Dense(b)) => Matrix::from_dense(csr_mul_dense(a, b)),
        (Matrix::Dense(a), Matrix::Sparse(b)) => Matrix::from_dense(dense_mul_csr(a, b)),
        // a sparse row vector by a sparse matrix: SystemDS's vector-matrix product (dense,
        // split over B's rows by its threads), unless it takes its ultra-sparse kernel
        (Matrix::Sparse(a), Matrix::Sparse(b))
            if a.rows() == 1 && b.rows() > 1 && b.cols() > 1 && !systemds_ultra_sparse_vm(a, b) =>
        {
            let n = b.cols();
            let c = csr_row_mul_csr(a, b, systemds_threads());
            Matrix::from_dense(Array2::from_shape_vec((1, n), c).expect("1 x n"))
        }
        (Matrix::Sparse(a), Matrix::Sparse(b)) => Matrix::from_csr(csr_mul_csr(a, b)),
    };
    ieee_zeros_known(a, b, false, c, a_finite, b_finite)
}

/// The non-finite entries `(row, col)` of a matrix (stored entries only for CSR).
fn non_finite(m: &Matrix) -> Vec<(usize, usize)> {
    match m {
        Matrix::Dense(d) => {
            let n = d.ncols();
            let s = d.as_standard_layout();
            let s = s.as_slice().expect("standard layout");
            if crate::matrix::all_finite(s) {
                return vec![];
            }
            s.iter()
                .enumerate()
                .filter(|(_, v)| !v.is_finite())
                .map(|(k, _)| (k / n, k % n))
                .collect()
        }
        // the common case first: a vectorised (parallel) scan of the stored values alone
        Matrix::Sparse(c) if crate::matrix::all_finite(c.data()) => vec![],
        Matrix::Sparse(c) => {
            let ip = c.indptr();
            let ip = ip.raw_storage();
            let (ind, val) = (c.indices(), c.data());
            (0..c.rows())
                .flat_map(|i| (ip[i]..ip[i + 1]).map(move |q| (i, q)))
                .filter(|&(_, q)| !val[q].is_finite())
                .map(|(i, q)| (i, col(ind[q])))
                .collect()
        }
    }
}

/// Completes a product `c = op(A) %*% B` (`op` the transpose when `transposed`) computed by
/// kernels that skip zeros: where a zero of one operand meets an Inf or NaN of the other,
/// the exact product has NaN.
pub fn ieee_zeros(a: &Matrix, b: &Matrix, transposed: bool, c: Matrix) -> Matrix {
    ieee_zeros_known(a, b, transposed, c, false, false)
}

/// [`ieee_zeros`] for operands the caller may know to be finite (a plan's inputs, scanned
/// once for the plan cache): a known-finite operand is not scanned again, as it has no Inf or
/// NaN to meet the other's zeros (MultiLogReg's `t(X) %*% M` read its 400 MB X twice, once
/// for the product and once for this scan).
pub fn ieee_zeros_known(
    a: &Matrix,
    b: &Matrix,
    transposed: bool,
    c: Matrix,
    a_finite: bool,
    b_finite: bool,
) -> Matrix {
    let a_at = |i: usize, k: usize| if transposed { a.get(k, i) } else { a.get(i, k) };
    let (m, n) = c.shape();
    let mut nan: Vec<(usize, usize)> = Vec::new();
    for (k, j) in if b_finite { vec![] } else { non_finite(b) } {
        nan.extend((0..m).filter(|&i| a_at(i, k) == 0.0).map(|i| (i, j)));
    }
    // A sparse A's stored values meet every value of a dense B, zeros included (the kernels
    // multiply each stored entry with the whole row of B it meets, never skipping B's
    // zeros), so `Inf * 0` is already NaN in `c`: no scan of A's stored values
    let a_needed = !a_finite && (!a.is_sparse() || b.is_sparse());
    for (r, s) in if a_needed { non_finite(a) } else { vec![] } {
        let (i, k) = if transposed { (s, r) } else { (r, s) };
        nan.extend((0..n).filter(|&j| b.get(k, j) == 0.0).map(|j| (i, j)));
    }
    if nan.is_empty() {
        return c;
    }
    let mut d = c.to_dense();
    for (i, j) in nan {
        d[[i, j]] = f64::NAN;
    }
    Matrix::from_dense(d)
}

/// Dense x dense through BLAS `dgemm` (feature `blas`) or the pure-Rust `matrixmultiply`.
pub fn dense_mul_dense(a: &Dense, b: &Dense) -> Dense {
    let (m, k) = a.dim();
    let (k2, n) = b.dim();
    assert_eq!(k, k2, "matmul shape contract");
    if m == 0 || n == 0 || k == 0 {
        return Array2::zeros((m, n));
    }
    if n <= NARROW {
        return dense_mul_narrow(a, b);
    }
    if k <= SMALL_INNER {
        return dense_mul_dense_small_inner(a, b);
    }
    #[cfg(feature = "blas")]
    {
        blas_dgemm(a, b)
    }
    #[cfg(not(feature = "blas"))]
    {
        a.dot(b)
    }
}

/// Inner dimension up to which [`dense_mul_dense_small_inner`] beats `dgemm` (measured with
/// `cargo bench --bench kernels -- gemm`: 8000x10x3000 in about half of dgemm's time).
const SMALL_INNER: usize = 16;

/// Dense x dense for a small inner dimension (low-rank factors: `U %*% t(V)`): each output row
/// is written once with its first term, then gets `k - 1` axpys of rows of B while it stays in
/// cache, so the (large) output is never zero-filled nor streamed more than once.
pub fn dense_mul_dense_small_inner(a: &Dense, b: &Dense) -> Dense {
    let (m, k) = a.dim();
    let n = b.ncols();
    assert!(k >= 1, "empty inner dimension handled by the caller");
    let a = a.as_standard_layout();
    let b = b.as_standard_layout();
    let (as_, bs) = (
        a.as_slice().expect("standard"),
        b.as_slice().expect("standard"),
    );
    let mut out = Array2::<f64>::uninit((m, n));
    let row = |(i, o): (usize, &mut [std::mem::MaybeUninit<f64>])| {
        let ai = &as_[i * k..(i + 1) * k];
        for (oc, &bc) in o.iter_mut().zip(&bs[..n]) {
            // from +0.0, as every sum: a single -0.0 product reads +0.0 (as in SystemDS)
            oc.write(0.0 + ai[0] * bc);
        }
        // SAFETY: every element of `o` was written just above.
        let o: &mut [f64] = unsafe { &mut *(o as *mut [std::mem::MaybeUninit<f64>] as *mut [f64]) };
        for (p, &aip) in ai.iter().enumerate().skip(1) {
            if aip == 0.0 {
                continue;
            }
            for (oc, &bc) in o.iter_mut().zip(&bs[p * n..(p + 1) * n]) {
                *oc += aip * bc;
            }
        }
    };
    if n > 0 {
        let os = out.as_slice_mut().expect("standard layout");
        if m * n * k < PAR_WORK {
            os.chunks_mut(n).enumerate().for_each(row);
        } else {
            os.par_chunks_mut(n).enumerate().for_each(row);
        }
    }
    // SAFETY: each of the m rows of n elements was initialised by `row` (or n == 0).
    unsafe { out.assume_init() }
}

/// `cblas_dgemm` on row-major contiguous operands.
#[cfg(feature = "blas")]
pub fn blas_dgemm(a: &Dense, b: &Dense) -> Dense {
    blas_dgemm_op(a, false, b)
}

/// `op(A) %*% B` by `cblas_dgemm`, `op` the transpose when `trans_a` (A read in place).
#[cfg(feature = "blas")]
fn blas_dgemm_op(a: &Dense, trans_a: bool, b: &Dense) -> Dense {
    let (ar, ac) = a.dim();
    let (m, k) = if trans_a { (ac, ar) } else { (ar, ac) };
    let n = b.ncols();
    let a = a.as_standard_layout();
    let b = b.as_standard_layout();
    let mut c = crate::matrix::zeros(m, n);
    // SAFETY: all three buffers are contiguous row-major with the leading dimensions given;
    // `cblas_dgemm` reads m*k and k*n values and writes m*n.
    unsafe {
        cblas_sys::cblas_dgemm(
            cblas_sys::CblasRowMajor,
            if trans_a {
                cblas_sys::CblasTrans
            } else {
                cblas_sys::CblasNoTrans
            },
            cblas_sys::CblasNoTrans,
            m as i32,
            n as i32,
            k as i32,
            1.0,
            a.as_ptr(),
            ac as i32,
            b.as_ptr(),
            n as i32,
            0.0,
            c.as_mut_ptr(),
            n as i32,
        );
    }
    c
}

/// The widest dense operand of a product with a CSR operand that gets a kernel of fixed width
/// (`N` sums in registers, no bounds checks in the inner loop): the ranks of low-rank
/// factorizations and the classes of multinomial models. The fixed-width kernels add the same
/// products in the same order as the general ones, so they give the same bits.
pub const SPARSE_THIN: usize = 16;

/// `Some(f::<n>(args))` for `1 <= n <=` [`SPARSE_THIN`], else `None`.
macro_rules! thin {
    ($n:expr, $f:ident, $($arg:expr),*) => {
        match $n {
            1 => Some($f::<1>($($arg),*)),
            2 => Some($f::<2>($($arg),*)),
            3 => Some($f::<3>($($arg),*)),
            4 => Some($f::<4>($($arg),*)),
            5 => Some($f::<5>($($arg),*)),
            6 => Some($f::<6>($($arg),*)),
            7 => Some($f::<7>($($arg),*)),
            8 => Some($f::<8>($($arg),*)),
            9 => Some($f::<9>($($arg),*)),
            10 => Some($f::<10>($($arg),*)),
            11 => Some($f::<11>($($arg),*)),
            12 => Some($f::<12>($($arg),*)),
            13 => Some($f::<13>($($arg),*)),
            14 => Some($f::<14>($($arg),*)),
            15 => Some($f::<15>($($arg),*)),
            16 => Some($f::<16>($($arg),*)),
            _ => None,
        }
    };
}
pub(crate) use thin;

/// `Some(f::<n, W>(args))` for `1 <= n <=` [`SPARSE_THIN`], with `W` =
/// [`padded_width`]`(n)`, else `None`.
macro_rules! thin_padded {
    ($n:expr, $f:ident, $($arg:expr),*) => {
        match $n {
            1 => Some($f::<1, 1>($($arg),*)),
            2 => Some($f::<2, 2>($($arg),*)),
            3 => Some($f::<3, 4>($($arg),*)),
            4 => Some($f::<4, 4>($($arg),*)),
            5 => Some($f::<5, 8>($($arg),*)),
            6 => Some($f::<6, 8>($($arg),*)),
            7 => Some($f::<7, 8>($($arg),*)),
            8 => Some($f::<8, 8>($($arg),*)),
            9 => Some($f::<9, 16>($($arg),*)),
            10 => Some($f::<10, 16>($($arg),*)),
            11 => Some($f::<11, 16>($($arg),*)),
            12 => Some($f::<12, 16>($($arg),*)),
            13 => Some($f::<13, 16>($($arg),*)),
            14 => Some($f::<14, 16>($($arg),*)),
            15 => Some($f::<15, 16>($($arg),*)),
            16 => Some($f::<16, 16>($($arg),*)),
            _ => None,
        }
    };
}
pub(crate) use thin_padded;

/// Runs `f` compiled for AVX-512 or AVX2 when the CPU has it (checked at run time), else as built for
/// the baseline target. `f` must be a loop body of plain multiplies and adds: the build never
/// contracts them into FMAs, so every product and sum rounds as in the baseline build and the
/// wider registers give the same bits. Called inside each parallel task, since a closure that
/// rayon runs is compiled on its own.
#[inline(always)]
pub(crate) fn wide<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F
        return unsafe { wide_avx512(f) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has AVX2 and FMA
        return unsafe { wide_avx2(f) };
    }
    f()
}

/// [`wide`]'s AVX-512 build: `f` is inlined into it (a row of 10 doubles is one 8-wide and one
/// 2-wide operation instead of three). `f64::mul_add` becomes one instruction here (AVX-512F
/// implies FMA), with the same correctly rounded result as the library call.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn wide_avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Entries ahead of the current row of a CSR operand that [`prefetch_entries`] asks for.
const PREFETCH_AHEAD: usize = 512;

/// A hint to the processor: bring the CSR entries `lo..hi` shifted [`PREFETCH_AHEAD`] ahead
/// (clipped to the arrays) of the index and value arrays into the cache. A row of a sparse
/// product reads its entries as the addresses of its gathers, so an entry that is still in
/// memory stalls them; the hardware prefetcher alone runs too few lines ahead. No effect on
/// results.
#[inline(always)]
pub(crate) fn prefetch_entries(ind: &[Idx], val: &[f64], lo: usize, hi: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let end = (hi + PREFETCH_AHEAD).min(ind.len()).min(val.len());
        // one cache line a step: 8 values, 16 indices
        let mut q = lo + PREFETCH_AHEAD;
        while q < end {
            // SAFETY: `q < end <= len`; a prefetch reads nothing
            unsafe { _mm_prefetch::<_MM_HINT_T0>(val.as_ptr().add(q).cast()) };
            q += 8;
        }
        let mut q = lo + PREFETCH_AHEAD;
        while q < end {
            // SAFETY: as above
            unsafe { _mm_prefetch::<_MM_HINT_T0>(ind.as_ptr().add(q).cast()) };
            q += 16;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (ind, val, lo, hi);
}

/// [`wide`]'s AVX2 build: `f` is inlined into it; with FMA, so that `f64::mul_add` is one
/// instruction (plain multiplies and adds are still never contracted).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn wide_avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Columns of the right operand up to which dense products run the matrix-vector kernels
/// ([`dense_mul_narrow`], [`dense_t_mul_narrow`]) instead of `dgemm`.
pub const NARROW: usize = 4;

/// Multiply-adds per parallel task (rows are grouped until a task has this much work).
const TASK_WORK: usize = 1 << 16;

/// Most row blocks of [`row_block_sums`] (enough for a few cores, few partial sums to add).
const MAX_BLOCKS: usize = 16;

/// SystemDS's vector length: the doubles per SIMD register of the JVM's preferred species
/// (8 with AVX-512, 4 with AVX2, else 2), which fixes the order of the sums in its Vector
/// API kernels (`LibMatrixMult.dotProduct`, `vectMultiplyAdd`) and so their rounding.
pub fn java_vlen() -> usize {
    static VLEN: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *VLEN.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return 8;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return 4;
            }
        }
        2
    })
}

/// `a . b` in SystemDS's order (`LibMatrixMult.dotProduct`): the first `len % L` products
/// added one by one, then each block of `L` ([`java_vlen`]) products summed in order and
/// added (the blocks' sums are independent, so the processor overlaps them); from +0.0 as
/// every sum. Slices of different lengths: the shorter one counts.
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    match java_vlen() {
        8 => dot_blocks::<8>(a, b),
        4 => dot_blocks::<4>(a, b),
        _ => dot_blocks::<2>(a, b),
    }
}

#[inline(always)]
fn dot_blocks<const L: usize>(a: &[f64], b: &[f64]) -> f64 {
    let head = a.len() % L;
    let mut val = 0.0;
    for (x, y) in a[..head].iter().zip(&b[..head]) {
        val += x * y;
    }
    for (x, y) in a[head..].chunks_exact(L).zip(b[head..].chunks_exact(L)) {
        let mut r = 0.0;
        for l in 0..L {
            r += x[l] * y[l];
        }
        val += r;
    }
    val
}

/// `out[r * stride] = dot(a[r * lda..r * lda + k], b[..k])` for the rows `r` of `0..rows`:
/// [`dot`] of each row of a row-major `a` (row stride `lda`) with `b`, in SystemDS's
/// `dotProduct` order for [`java_vlen`] lanes, bit for bit the same as [`dot`] row by row.
/// Fast when the CPU has the lanes' registers: rows go eight (four with AVX2) at a time, their
/// products of one block of columns transposed so that each lane holds one row, and each row's
/// block sum is then the in-order sum of the transposed vectors (a row's adds are the ones
/// [`dot`] makes, in its order; only the rows run side by side). Every product is formed, so
/// NaN and Inf propagate as in [`dot`].
pub fn dot_rows(
    a: &[f64],
    lda: usize,
    k: usize,
    b: &[f64],
    rows: usize,
    out: &mut [f64],
    stride: usize,
) {
    dot_rows_lanes(java_vlen(), a, lda, k, b, rows, out, stride)
}

/// [`dot_rows`] in the order of `lanes` (2, 4 or 8) lanes instead of [`java_vlen`]'s (for
/// tests of each width's kernel on one CPU): eight rows at a time with AVX-512 for 8 lanes,
/// four with AVX2 for 4, else row by row.
#[allow(clippy::too_many_arguments)]
pub fn dot_rows_lanes(
    lanes: usize,
    a: &[f64],
    lda: usize,
    k: usize,
    b: &[f64],
    rows: usize,
    out: &mut [f64],
    stride: usize,
) {
    if rows == 0 {
        return;
    }
    assert!(
        (rows == 1 || lda >= k) && (rows - 1) * lda + k <= a.len() && k <= b.len(),
        "dot_rows bounds"
    );
    assert!((rows - 1) * stride < out.len(), "dot_rows output bounds");
    let b = &b[..k];
    #[cfg(target_arch = "x86_64")]
    {
        if lanes == 8 && std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F; the bounds were checked above
            unsafe { dot_rows_avx512(a, lda, k, b, rows, out, stride) };
            return;
        }
        if lanes == 4 && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2; the bounds were checked above
            unsafe { dot_rows_avx2(a, lda, k, b, rows, out, stride) };
            return;
        }
    }
    for r in 0..rows {
        let ar = &a[r * lda..r * lda + k];
        out[r * stride] = match lanes {
            8 => dot_blocks::<8>(ar, b),
            4 => dot_blocks::<4>(ar, b),
            _ => dot_blocks::<2>(ar, b),
        };
    }
}

/// [`dot_rows_lanes`] for 8 lanes: eight rows at a time, each block of 8 columns' 8 x 8
/// products transposed in registers (two rounds of two-source permutes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn dot_rows_avx512(
    a: &[f64],
    lda: usize,
    k: usize,
    b: &[f64],
    rows: usize,
    out: &mut [f64],
    stride: usize,
) {
    use std::arch::x86_64::*;
    let head = k % 8;
    let nb = k / 8;
    // lanes (0, 4) / (2, 6) of two unpacked pairs, then the low / high halves of two vectors
    let pair_lo = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
    let pair_hi = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
    let half_lo = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0);
    let half_hi = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
    let mut i = 0;
    while i + 8 <= rows {
        let mut val = [0.0f64; 8];
        for (r, v) in val.iter_mut().enumerate() {
            let ar = &a[(i + r) * lda..(i + r) * lda + head];
            for (x, y) in ar.iter().zip(&b[..head]) {
                *v += x * y;
            }
        }
        let mut v = _mm512_loadu_pd(val.as_ptr());
        let base = a.as_ptr().add(i * lda + head);
        let bp = b.as_ptr().add(head);
        for blk in 0..nb {
            let bv = _mm512_loadu_pd(bp.add(blk * 8));
            // SAFETY (all loads): row i + r < rows, column head + 8 blk + 7 < k
            let p = |r: usize| _mm512_mul_pd(_mm512_loadu_pd(base.add(r * lda + blk * 8)), bv);
            let (p0, p1, p2, p3) = (p(0), p(1), p(2), p(3));
            let (p4, p5, p6, p7) = (p(4), p(5), p(6), p(7));
            // t0 = [p0_0 p1_0 p0_2 p1_2 p0_4 p1_4 p0_6 p1_6], t1 the odd lanes; the same for
            // the other pairs
            let (t0, t1) = (_mm512_unpacklo_pd(p0, p1), _mm512_unpackhi_pd(p0, p1));
            let (t2, t3) = (_mm512_unpacklo_pd(p2, p3), _mm512_unpackhi_pd(p2, p3));
            let (t4, t5) = (_mm512_unpacklo_pd(p4, p5), _mm512_unpackhi_pd(p4, p5));
            let (t6, t7) = (_mm512_unpacklo_pd(p6, p7), _mm512_unpackhi_pd(p6, p7));
            // u0 = lane 0 of rows 0-3, then lane 4 of rows 0-3; u1 lanes 1 and 5; u2 2 and 6;
            // u3 3 and 7; u4-u7 the same of rows 4-7
            let u0 = _mm512_permutex2var_pd(t0, pair_lo, t2);
            let u1 = _mm512_permutex2var_pd(t1, pair_lo, t3);
            let u2 = _mm512_permutex2var_pd(t0, pair_hi, t2);
            let u3 = _mm512_permutex2var_pd(t1, pair_hi, t3);
            let u4 = _mm512_permutex2var_pd(t4, pair_lo, t6);
            let u5 = _mm512_permutex2var_pd(t5, pair_lo, t7);
            let u6 = _mm512_permutex2var_pd(t4, pair_hi, t6);
            let u7 = _mm512_permutex2var_pd(t5, pair_hi, t7);
            // lane l of the eight rows, l = 0..7, added in lane order from +0.0
            let mut s = _mm512_add_pd(_mm512_setzero_pd(), _mm512_permutex2var_pd(u0, half_lo, u4));
            s = _mm512_add_pd(s, _mm512_permutex2var_pd(u1, half_lo, u5));
            s = _mm512_add_pd(s, _mm512_permutex2var_pd(u2, half_lo, u6));
            s = _mm512_add_pd(s, _mm512_permutex2var_pd(u3, half_lo, u7));
            s = _mm512_add_pd(s, _mm512_permutex2var_pd(u0, half_hi, u4));
            s = _mm512_add_pd(s, _mm512_permutex2var_pd(u1, half_hi, u5));
            s = _mm512_add_pd(s, _mm512_permutex2var_pd(u2, half_hi, u6));
            s = _mm512_add_pd(s, _mm512_permutex2var_pd(u3, half_hi, u7));
            v = _mm512_add_pd(v, s);
        }
        _mm512_storeu_pd(val.as_mut_ptr(), v);
        for (r, &x) in val.iter().enumerate() {
            out[(i + r) * stride] = x;
        }
        i += 8;
    }
    for r in i..rows {
        out[r * stride] = dot_blocks::<8>(&a[r * lda..r * lda + k], b);
    }
}

/// [`dot_rows_lanes`] for 4 lanes: four rows at a time, each block of 4 columns' 4 x 4
/// products transposed in registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_rows_avx2(
    a: &[f64],
    lda: usize,
    k: usize,
    b: &[f64],
    rows: usize,
    out: &mut [f64],
    stride: usize,
) {
    use std::arch::x86_64::*;
    let head = k % 4;
    let nb = k / 4;
    let mut i = 0;
    while i + 4 <= rows {
        let mut val = [0.0f64; 4];
        for (r, v) in val.iter_mut().enumerate() {
            let ar = &a[(i + r) * lda..(i + r) * lda + head];
            for (x, y) in ar.iter().zip(&b[..head]) {
                *v += x * y;
            }
        }
        let mut v = _mm256_loadu_pd(val.as_ptr());
        let base = a.as_ptr().add(i * lda + head);
        let bp = b.as_ptr().add(head);
        for blk in 0..nb {
            let bv = _mm256_loadu_pd(bp.add(blk * 4));
            // SAFETY (all loads): row i + r < rows, column head + 4 blk + 3 < k
            let p = |r: usize| _mm256_mul_pd(_mm256_loadu_pd(base.add(r * lda + blk * 4)), bv);
            let (p0, p1, p2, p3) = (p(0), p(1), p(2), p(3));
            // t0 = [p0_0 p1_0 p0_2 p1_2], t1 = [p0_1 p1_1 p0_3 p1_3], t2, t3 of rows 2 and 3
            let (t0, t1) = (_mm256_unpacklo_pd(p0, p1), _mm256_unpackhi_pd(p0, p1));
            let (t2, t3) = (_mm256_unpacklo_pd(p2, p3), _mm256_unpackhi_pd(p2, p3));
            // lane l of the four rows, l = 0..3, added in lane order from +0.0
            let mut s = _mm256_add_pd(_mm256_setzero_pd(), _mm256_permute2f128_pd::<0x20>(t0, t2));
            s = _mm256_add_pd(s, _mm256_permute2f128_pd::<0x20>(t1, t3));
            s = _mm256_add_pd(s, _mm256_permute2f128_pd::<0x31>(t0, t2));
            s = _mm256_add_pd(s, _mm256_permute2f128_pd::<0x31>(t1, t3));
            v = _mm256_add_pd(v, s);
        }
        _mm256_storeu_pd(val.as_mut_ptr(), v);
        for (r, &x) in val.iter().enumerate() {
            out[(i + r) * stride] = x;
        }
        i += 4;
    }
    for r in i..rows {
        out[r * stride] = dot_blocks::<4>(&a[r * lda..r * lda + k], b);
    }
}

/// `vals . b[idx]` (the stored values of a sparse row against the entries of a dense vector
/// they meet) in the order of [`dot`]: SystemDS's gathering `dotProduct`.
#[inline]
pub fn dot_gather(vals: &[f64], idx: &[Idx], b: &[f64]) -> f64 {
    match java_vlen() {
        8 => dot_gather_blocks::<8>(vals, idx, b),
        4 => dot_gather_blocks::<4>(vals, idx, b),
        _ => dot_gather_blocks::<2>(vals, idx, b),
    }
}

#[inline(always)]
fn dot_gather_blocks<const L: usize>(vals: &[f64], idx: &[Idx], b: &[f64]) -> f64 {
    let head = vals.len() % L;
    let mut val = 0.0;
    for (x, &j) in vals[..head].iter().zip(&idx[..head]) {
        val += x * b[col(j)];
    }
    for (x, js) in vals[head..]
        .chunks_exact(L)
        .zip(idx[head..].chunks_exact(L))
    {
        let mut r = 0.0;
        for l in 0..L {
            r += x[l] * b[col(js[l])];
        }
        val += r;
    }
    val
}

/// `a . b` with eight independent accumulators, from +0.0 as every sum: spores's own order
/// (vectorisable and fixed, so the same bits every time), for the fused kernels whose inner
/// products are short (the rank of a low-rank product), where [`dot`]'s chain of in-order sums
/// would bound the loop by add latency. Slices of different lengths: the shorter one counts.
#[inline]
pub fn dot8(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f64; 8];
    let (ac, bc) = (a.chunks_exact(8), b.chunks_exact(8));
    let mut tail = 0.0;
    for (x, y) in ac.remainder().iter().zip(bc.remainder()) {
        tail += x * y;
    }
    for (x, y) in ac.zip(bc) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// `acc += w_i * A[i, :]` over the rows `i` of `rows` of a row-major A with `n` columns, in
/// SystemDS's order for a vector-matrix product (`matrixMultDenseDenseVM`, which also runs
/// `t(A) %*% w`): an odd first row alone, then rows in pairs; the first `n % L` columns
/// ([`java_vlen`]) add `w_i a_i + w_k a_k` (or `w_i a_i` alone), the others take fused
/// multiply-adds, one row after the other. Every product is formed (no row skipped for a
/// zero weight), so NaN and Inf propagate; finite values give SystemDS's bits.
pub fn vm_rows(a: &[f64], n: usize, w: &[f64], rows: std::ops::Range<usize>, acc: &mut [f64]) {
    vm_rows_lanes(java_vlen(), a, n, w, rows, acc, false)
}

/// [`vm_rows`] in the order of `vlen` lanes instead of [`java_vlen`]'s; with `skip_zero`, for
/// an A the caller knows to be finite, rows of zero weight are not read: a pair with one zero
/// weight adds the other row as a lone row does (the same sums: `0 * x` is `±0`, which leaves
/// a sum unchanged unless the sum is an underflowed `-0.0`, exception 3 of the README), and a
/// pair of zero weights adds nothing. A mostly-zero weight vector (L2-SVM's `out * Y` on its
/// support vectors) then reads only the rows it weighs.
pub fn vm_rows_lanes(
    vlen: usize,
    a: &[f64],
    n: usize,
    w: &[f64],
    rows: std::ops::Range<usize>,
    acc: &mut [f64],
    skip_zero: bool,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has FMA (checked just above).
            unsafe { vm_rows_fma(vlen, a, n, w, rows, acc, skip_zero) };
            return;
        }
    }
    vm_rows_generic(vlen, a, n, w, rows, acc, skip_zero)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn vm_rows_fma(
    vlen: usize,
    a: &[f64],
    n: usize,
    w: &[f64],
    rows: std::ops::Range<usize>,
    acc: &mut [f64],
    skip_zero: bool,
) {
    vm_rows_generic(vlen, a, n, w, rows, acc, skip_zero)
}

#[inline(always)]
fn vm_rows_generic(
    vlen: usize,
    a: &[f64],
    n: usize,
    w: &[f64],
    rows: std::ops::Range<usize>,
    acc: &mut [f64],
    skip_zero: bool,
) {
    let bn = n % vlen;
    let acc = &mut acc[..n];
    // one row alone: its first `bn` columns added, the others by fused multiply-adds
    let lone = |acc: &mut [f64], wi: f64, ai: &[f64]| {
        for (o, &x) in acc[..bn].iter_mut().zip(&ai[..bn]) {
            *o += wi * x;
        }
        for (o, &x) in acc[bn..].iter_mut().zip(&ai[bn..]) {
            *o = wi.mul_add(x, *o);
        }
    };
    let mut i = rows.start;
    if rows.len() % 2 == 1 {
        if !(skip_zero && w[i] == 0.0) {
            lone(acc, w[i], &a[i * n..(i + 1) * n]);
        }
        i += 1;
    }
    while i < rows.end {
        let (w1, w2) = (w[i], w[i + 1]);
        let (a1, a2) = (&a[i * n..(i + 1) * n], &a[(i + 1) * n..(i + 2) * n]);
        i += 2;
        if skip_zero && (w1 == 0.0 || w2 == 0.0) {
            if w1 != 0.0 {
                lone(acc, w1, a1);
            } else if w2 != 0.0 {
                lone(acc, w2, a2);
            }
            continue;
        }
        for j in 0..bn {
            acc[j] += w1 * a1[j] + w2 * a2[j];
        }
        for j in bn..n {
            acc[j] = w2.mul_add(a2[j], w1.mul_add(a1[j], acc[j]));
        }
    }
}

/// The number of threads SystemDS 3.4 runs its multi-threaded operations with on this machine:
/// its local parallelism, the JVM's `availableProcessors()` (here the available parallelism),
/// or `SPORES_SYSTEMDS_THREADS` when set (to match a SystemDS that runs elsewhere).
pub fn systemds_machine_threads() -> usize {
    use std::sync::OnceLock;
    static K: OnceLock<usize> = OnceLock::new();
    *K.get_or_init(|| {
        std::env::var("SPORES_SYSTEMDS_THREADS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&k| k >= 1)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}

std::thread_local! {
    /// The thread count the operations running on this thread have in SystemDS, when it is
    /// not [`systemds_machine_threads`] (see [`set_systemds_threads`]).
    static OPS_THREADS: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// The number of threads SystemDS 3.4 runs the current operation with: the count set on this
/// thread by [`set_systemds_threads`] (the degree of parallelism SystemDS's parfor optimizer
/// gives the operations of a `parfor` body and of the functions it calls), else
/// [`systemds_machine_threads`]. The kernels that reproduce SystemDS's split of a product
/// over its threads (and so its bits) take their thread count from here.
pub fn systemds_threads() -> usize {
    OPS_THREADS
        .with(|c| c.get())
        .unwrap_or_else(systemds_machine_threads)
}

/// Sets the thread count [`systemds_threads`] returns on this thread (`None`: SystemDS's
/// machine parallelism again); returns the previous setting, to be restored by the caller.
pub fn set_systemds_threads(k: Option<usize>) -> Option<usize> {
    OPS_THREADS.with(|c| c.replace(k.map(|k| k.max(1))))
}

/// SystemDS's minimum floating-point work for a multi-threaded product on its shared thread
/// pool (`LibMatrixMult.PAR_MINFLOP_THRESHOLD2`, 128K; the thread count is its local
/// parallelism, so the pool is the shared one).
pub const SYSTEMDS_PAR_MINFLOP: usize = 128 * 1024;

/// SystemDS's bound on the partial vectors of a multi-threaded vector product, in bytes:
/// `max(MEM_OVERHEAD_THRESHOLD, 0.01 * maximum heap)`, 2 MB or 1% of the JVM's heap, here for
/// an `-Xmx8g` SystemDS (8 GiB: about 86 MB; with a 2 GB heap it is 21 MB: the two differ
/// only for vectors of over a million entries).
pub const SYSTEMDS_PAR_MEM: f64 = 0.01 * (8u64 << 30) as f64;

/// Whether SystemDS 3.4 splits a vector product over `threads` threads
/// (`LibMatrixMult.satisfiesMultiThreadingConstraints`): `threads > 1`, the `threads` partial
/// vectors of `len` doubles under [`SYSTEMDS_PAR_MEM`], and `flops` (its count: of the cells,
/// not of the non-zeros) above [`SYSTEMDS_PAR_MINFLOP`].
pub fn systemds_splits(threads: usize, len: usize, flops: usize) -> bool {
    threads > 1 && ((8 * len * threads) as f64) < SYSTEMDS_PAR_MEM && flops > SYSTEMDS_PAR_MINFLOP
}

/// SystemDS's balanced row partition over `k` tasks (`UtilFunctions.getBalancedBlockSizes`):
/// `m / k` rows each, the first `m % k` tasks one more, empty tasks dropped.
pub fn systemds_balanced(m: usize, k: usize) -> Vec<std::ops::Range<usize>> {
    let k = k.max(1);
    let (base, rest) = (m / k, m % k);
    let mut out = Vec::with_capacity(k);
    let mut lo = 0;
    for i in 0..k {
        let len = base + usize::from(i < rest);
        if len > 0 {
            out.push(lo..lo + len);
            lo += len;
        }
    }
    out
}

/// How SystemDS adds the partial vectors of its threads into the zeroed result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartialFold {
    /// one after another (`vectAdd` per task, in the tasks' order: a vector-matrix product
    /// split over the matrix's rows, `parallelMatrixMult` with `pm2r`)
    InOrder,
    /// `vectAddAll` (mmchain): the first `k % 4` one after another, then groups of four,
    /// `c + (((a1 + a2) + a3) + a4)`
    Fours,
}

/// The sum over the rows `0..m` of per-row contributions to a vector of `len` values as
/// SystemDS 3.4 with `threads` threads adds them (`LibMatrixMult.matrixMultChain`, and
/// `matrixMult` of a row vector by a matrix split over the matrix's rows): when it splits
/// ([`systemds_splits`] of `len` and `flops`) the rows are cut into [`systemds_balanced`]
/// blocks, one per thread, each summed from zero by `block` (in parallel here too), and the
/// partials are added as `fold` says; otherwise `block` sums all rows from zero. A function
/// of the shape, `flops` and `threads` only (callers pass [`systemds_threads`]).
pub fn systemds_row_sums(
    threads: usize,
    m: usize,
    len: usize,
    flops: usize,
    fold: PartialFold,
    block: impl Fn(std::ops::Range<usize>, &mut [f64]) + Sync + Send,
) -> Vec<f64> {
    systemds_row_sums_split(
        systemds_splits(threads, len, flops),
        threads,
        m,
        len,
        fold,
        block,
    )
}

/// [`systemds_row_sums`] with the decision to split taken by the caller (`split`: SystemDS's
/// threads each sum a block of rows; else one block of all rows).
fn systemds_row_sums_split(
    split: bool,
    threads: usize,
    m: usize,
    len: usize,
    fold: PartialFold,
    block: impl Fn(std::ops::Range<usize>, &mut [f64]) + Sync + Send,
) -> Vec<f64> {
    if !split || m < 2 {
        let mut acc = crate::matrix::zeroed(len);
        block(0..m, &mut acc);
        return acc;
    }
    let parts: Vec<Vec<f64>> = systemds_balanced(m, threads)
        .into_par_iter()
        .map(|rows| {
            let mut acc = crate::matrix::zeroed(len);
            block(rows, &mut acc);
            acc
        })
        .collect();
    let mut c = crate::matrix::zeroed(len);
    let single = match fold {
        PartialFold::InOrder => parts.len(),
        PartialFold::Fours => parts.len() % 4,
    };
    for p in &parts[..single] {
        for (o, x) in c.iter_mut().zip(p) {
            *o += x;
        }
    }
    for g in parts[single..].chunks_exact(4) {
        for (j, o) in c.iter_mut().enumerate() {
            *o += ((g[0][j] + g[1][j]) + g[2][j]) + g[3][j];
        }
    }
    c
}

/// The sum over the rows `0..m` of per-row contributions to a vector of `len` values: the rows
/// are cut into a fixed partition of at most [`MAX_BLOCKS`] blocks (a function of `m` and
/// `work_per_row` only), `block(rows, acc)` adds each block's rows into its own zeroed
/// accumulator, and the partial sums are added in block order (each value's: `((p0 + p1) +
/// p2) + ...`), so the bits do not depend on the threads or their timing.
///
/// The blocks run on one worker per thread, each claiming the next block in order; a
/// finished block's partial sum is added into the total as soon as every earlier block's
/// is (the ordered fold, by whichever worker is free to do it, outside the lock), and the
/// same pass zeroes it for the worker's next block. So only about one accumulator per
/// thread is live and the partials are added while they are still in the cache, instead of
/// all blocks' accumulators zeroed, filled and then read back from memory.
pub fn row_block_sums(
    m: usize,
    len: usize,
    work_per_row: usize,
    block: impl Fn(std::ops::Range<usize>, &mut [f64]) + Sync + Send,
) -> Vec<f64> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let min_rows = (TASK_WORK / work_per_row.max(1)).max(1);
    let blocks = (m / min_rows).clamp(1, MAX_BLOCKS);
    let per = m.div_ceil(blocks).max(1);
    let rows = |b: usize| b * per..((b + 1) * per).min(m);
    if blocks == 1 {
        let mut acc = crate::matrix::zeroed(len);
        block(rows(0), &mut acc);
        return acc;
    }
    /// The fold's state: the total of blocks `0..next`, the finished partials waiting for
    /// an earlier block, zeroed accumulators to reuse, whether a worker is folding.
    struct Fold {
        next: usize,
        sum: Option<Vec<f64>>,
        waiting: Vec<Option<Vec<f64>>>,
        spare: Vec<Vec<f64>>,
        folding: bool,
    }
    let state = Mutex::new(Fold {
        next: 0,
        sum: None,
        waiting: (0..blocks).map(|_| None).collect(),
        spare: Vec::new(),
        folding: false,
    });
    let lock = || state.lock().unwrap_or_else(|e| e.into_inner());
    let claim = AtomicUsize::new(0);
    let workers = rayon::current_num_threads().clamp(1, blocks);
    (0..workers).into_par_iter().for_each(|_| {
        let mut acc: Option<Vec<f64>> = None;
        loop {
            let b = claim.fetch_add(1, Ordering::Relaxed);
            if b >= blocks {
                break;
            }
            let mut a = acc.take().unwrap_or_else(|| crate::matrix::zeroed(len));
            block(rows(b), &mut a);
            let mut st = lock();
            st.waiting[b] = Some(a);
            if !st.folding {
                st.folding = true;
                loop {
                    let next = st.next;
                    let Some(mut p) = st.waiting.get_mut(next).and_then(Option::take) else {
                        break;
                    };
                    let Some(mut sum) = st.sum.take() else {
                        // block 0's partial is the total's start
                        st.sum = Some(p);
                        st.next += 1;
                        continue;
                    };
                    drop(st);
                    wide(
                        #[inline(always)]
                        || {
                            for (s, x) in sum.iter_mut().zip(p.iter_mut()) {
                                *s += *x;
                                *x = 0.0;
                            }
                        },
                    );
                    st = lock();
                    st.sum = Some(sum);
                    st.next += 1;
                    st.spare.push(p);
                }
                st.folding = false;
            }
            acc = st.spare.pop();
        }
    });
    let st = state.into_inner().unwrap_or_else(|e| e.into_inner());
    debug_assert_eq!(st.next, blocks, "every block folded");
    st.sum.expect("at least one block")
}

/// Row-major contiguous view of a dense matrix (a copy only if it is not standard layout).
fn standard(a: &Dense) -> std::borrow::Cow<'_, [f64]> {
    match a.as_slice() {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(a.as_standard_layout().iter().copied().collect()),
    }
}

/// `A %*% B` for a dense A (`m x k`) and a narrow dense B (`k x c`, `c` small): each output
/// cell is one [`dot`] of a row of A with a column of B (by [`dot_rows`], several rows side by
/// side); rows in parallel (each row's result
/// is independent of the split). Every product is formed, so IEEE values propagate exactly.
pub fn dense_mul_narrow(a: &Dense, b: &Dense) -> Dense {
    let (m, k) = a.dim();
    let (k2, c) = b.dim();
    assert_eq!(k, k2, "matmul shape contract");
    let mut out = crate::matrix::zeros(m, c);
    if m == 0 || c == 0 {
        return out;
    }
    let as_ = standard(a);
    let bt = b.t().as_standard_layout().into_owned(); // c x k: columns of B contiguous
    let bt = bt.as_slice().expect("standard");
    let rows = (TASK_WORK / (k * c).max(1)).max(1);
    let os = out.as_slice_mut().expect("standard layout");
    let task = |(t, o): (usize, &mut [f64])| {
        let (i, nr) = (t * rows, o.len() / c);
        let ar = &as_[i * k..(i + nr) * k];
        for l in 0..c {
            dot_rows(ar, k, k, &bt[l * k..(l + 1) * k], nr, &mut o[l..], c);
        }
    };
    if m <= rows {
        task((0, os));
    } else {
        os.par_chunks_mut(rows * c).enumerate().for_each(task);
    }
    out
}

/// `A %*% v` for a CSR A (`m x k`) and a dense column `v`, in SystemDS's order: each row's
/// stored values against the entries of `v` they meet by [`dot_gather`]
/// (`matrixMultSparseDenseMVShortRHS`), or, where SystemDS blocks the columns for its cache
/// (`matrixMultSparseDenseMVTallRHS`: `k` beyond both 2048 and `2048 (m k / nnz) / 32`), one
/// plain sum in order. Rows run in parallel when there are many (each row's sum is the same).
fn csr_mul_vector(a: &Csr, v: &[f64]) -> Dense {
    let (m, k) = a.shape();
    let indptr = a.indptr();
    let indptr = indptr.raw_storage();
    let (ind, val) = (a.indices(), a.data());
    let xsp = (m as u64 * k as u64) / (a.nnz() as u64).max(1);
    let blocked = (k as u64) > (2048 * xsp / 32).max(2048);
    let row = |i: usize| {
        let (lo, hi) = (indptr[i], indptr[i + 1]);
        if blocked {
            let mut s = 0.0;
            for (&x, &j) in val[lo..hi].iter().zip(&ind[lo..hi]) {
                s += x * v[col(j)];
            }
            s
        } else {
            dot_gather(&val[lo..hi], &ind[lo..hi], v)
        }
    };
    let out: Vec<f64> = if a.nnz() < PAR_WORK {
        (0..m).map(row).collect()
    } else {
        (0..m).into_par_iter().map(row).collect()
    };
    Array2::from_shape_vec((m, 1), out).expect("m x 1")
}

/// `t(A) %*% B` for a dense A (`m x n`) and a narrow dense B (`m x c`): each row `i` adds
/// `b_il * A[i,:]` into column `l` of the result, over [`row_block_sums`]'s fixed row blocks;
/// A is read once, in order, and never transposed. Every product is formed (IEEE exact).
pub fn dense_t_mul_narrow(a: &Dense, b: &Dense) -> Dense {
    let (m, n) = a.dim();
    let (m2, c) = b.dim();
    assert_eq!(m, m2, "tmatmul shape contract");
    if n == 0 || c == 0 {
        return Array2::zeros((n, c));
    }
    let (as_, bs) = (standard(a), standard(b));
    if c == 1 && n > 1 {
        // t(A) %*% w: SystemDS's vector-matrix product `t(w) %*% A` (its rewrite of
        // `t(A) %*% w`), split over A's rows as its threads split it
        let acc = dense_t_mul_vector(&as_, n, &bs, systemds_threads());
        return Array2::from_shape_vec((n, 1), acc).expect("n x 1");
    }
    let acc = row_block_sums(m, n * c, n * c, |rows, acc| {
        if n == 1 && c == 1 {
            // a scalar t(a) %*% b: one dot product per block
            acc[0] += dot(&as_[rows.clone()], &bs[rows]);
            return;
        }
        for i in rows {
            let ai = &as_[i * n..(i + 1) * n];
            for (l, accl) in acc.chunks_mut(n).enumerate() {
                let bil = bs[i * c + l];
                for (o, &x) in accl.iter_mut().zip(ai) {
                    *o += x * bil;
                }
            }
        }
    });
    // acc is c x n (one column of the result after another)
    let t = Array2::from_shape_vec((c, n), acc).expect("c x n");
    if c == 1 {
        t.into_shape_with_order((n, 1)).expect("n x 1")
    } else {
        t.t().as_standard_layout().into_owned()
    }
}

/// `t(A) %*% w` (equivalently `t(w) %*% A`) for a row-major dense A of `n` columns (its rows
/// `a.len() / n`) and a vector `w`, as SystemDS 3.4 with `threads` threads computes it: its
/// vector-matrix order ([`vm_rows`]) over each of its thread's rows, the partial vectors added
/// in order ([`systemds_row_sums`], 2 flops per cell).
pub fn dense_t_mul_vector(a: &[f64], n: usize, w: &[f64], threads: usize) -> Vec<f64> {
    let m = a.len().checked_div(n).unwrap_or(0);
    systemds_row_sums(
        threads,
        m,
        n,
        2 * m * n,
        PartialFold::InOrder,
        |rows, acc| vm_rows(a, n, w, rows, acc),
    )
}

/// A dense view of a matrix: borrowed when it is dense, else densified.
pub fn dense_view(m: &Matrix) -> std::borrow::Cow<'_, Dense> {
    match m {
        Matrix::Dense(d) => std::borrow::Cow::Borrowed(d),
        Matrix::Sparse(_) => std::borrow::Cow::Owned(m.to_dense()),
    }
}

/// An owned standard-layout transpose.
fn transposed(a: Dense) -> Dense {
    a.t().as_standard_layout().into_owned()
}

/// `t(A) %*% B` for dense A (`m x n`) and B (`m x c`) without forming `t(A)`: the narrow kernel
/// for `c <= NARROW` (or, on the transposed problem `t(t(B) %*% A)`, for `n <= NARROW`), else
/// `dgemm` reading A transposed (then [`ieee_zeros`] by the caller, as after every `dgemm`).
pub fn dense_t_mul_dense(a: &Dense, b: &Dense) -> Dense {
    let (m, n) = a.dim();
    let (m2, c) = b.dim();
    assert_eq!(m, m2, "tmatmul shape contract");
    if c <= NARROW {
        return dense_t_mul_narrow(a, b);
    }
    if n <= NARROW {
        return transposed(dense_t_mul_narrow(b, a));
    }
    if n == 0 || m == 0 {
        return Array2::zeros((n, c));
    }
    #[cfg(feature = "blas")]
    {
        blas_dgemm_op(a, true, b)
    }
    #[cfg(not(feature = "blas"))]
    {
        a.t().dot(b)
    }
}

/// `A %*% t(A)` (SystemDS's right `tsmm`, which it runs whenever a product's right operand is
/// the transpose of its left one): for a dense A [`dense_mul_self_t`], in SystemDS's order;
/// else the general product with `t(A)` formed.
pub fn mul_self_t(a: &Matrix) -> Matrix {
    match a {
        Matrix::Dense(d) => Matrix::from_dense(dense_mul_self_t(d)),
        Matrix::Sparse(_) => matmul(a, &crate::kernels::transpose(a)),
    }
}

/// Columns per block of SystemDS's dense right `tsmm` (`matrixMultTransposeSelfDense`): a cell
/// is the sum of the rows' dot products over these blocks.
const TSMM_BLOCK: usize = 1024;

/// Rows per tile of [`dense_mul_self_t`]'s cache blocking: two tiles of one column block are
/// 2 x 32 x 8 KB, within L2.
const TSMM_TILE: usize = 32;

/// `A %*% t(A)` for a dense `m x n` A as SystemDS computes it
/// (`LibMatrixMult.matrixMultTransposeSelfDense`, right side): each cell `(i, j)`, `j >= i`,
/// starts at 0 and adds the [`dot`] of rows `i` and `j` over each block of 1024 columns, in
/// order (one [`dot`] over the whole row when A is a single row); the lower triangle is the
/// upper one mirrored. Every product is formed, so NaN and Inf propagate. The cells are visited
/// in tiles of [`TSMM_TILE`] x [`TSMM_TILE`] rows per column block, so that both tiles' row
/// slices stay in cache; a cell's own order of additions does not depend on the tiling. Tiles
/// of output rows run in parallel, each cell computed alone (the same bits on any number of
/// threads).
pub fn dense_mul_self_t(a: &Dense) -> Dense {
    let (m, n) = a.dim();
    let a = a.as_standard_layout();
    let s = a.as_slice().expect("standard layout");
    let row = |i: usize| &s[i * n..(i + 1) * n];
    let mut out = vec![0.0f64; m * m];
    let tile = |(t, o): (usize, &mut [f64])| {
        let i0 = t * TSMM_TILE;
        let rows = o.len() / m;
        if m == 1 {
            o[0] = dot(row(0), row(0));
            return;
        }
        for lo in (0..n).step_by(TSMM_BLOCK) {
            let hi = (lo + TSMM_BLOCK).min(n);
            for j0 in (i0..m).step_by(TSMM_TILE) {
                let j1 = (j0 + TSMM_TILE).min(m);
                for di in 0..rows {
                    let i = i0 + di;
                    let ri = &row(i)[lo..hi];
                    for j in j0.max(i)..j1 {
                        o[di * m + j] += dot(ri, &row(j)[lo..hi]);
                    }
                }
            }
        }
    };
    if m > 0 {
        if m * m * n / 2 < PAR_WORK {
            out.chunks_mut(TSMM_TILE * m).enumerate().for_each(tile);
        } else {
            out.par_chunks_mut(TSMM_TILE * m).enumerate().for_each(tile);
        }
    }
    for i in 1..m {
        for j in 0..i {
            out[i * m + j] = out[j * m + i];
        }
    }
    Array2::from_shape_vec((m, m), out).expect("m x m")
}

/// `t(A) %*% A` (SystemDS's left `tsmm`, which it runs whenever a product's left operand is
/// the transpose of its right one): for a dense `m x n` A with `n > 1`, in SystemDS's order
/// ([`dense_t_mul_self_split`]): on one thread up to [`TSMM_SEQUENTIAL`] multiply-adds, and
/// beyond that with SystemDS's split of the output rows among its threads
/// ([`systemds_threads`]) up to [`TSMM_SPLIT`]; else [`tmatmul`](crate::kernels::tmatmul) of
/// A with itself (BLAS for a dense A).
pub fn t_mul_self(a: &Matrix) -> Matrix {
    let (m, n) = a.shape();
    let work = m.saturating_mul(n).saturating_mul(n);
    match a {
        Matrix::Dense(d) if n > 1 && work <= TSMM_SPLIT => {
            let threads = if work <= TSMM_SEQUENTIAL {
                1
            } else {
                systemds_threads()
            };
            ieee_zeros(
                a,
                a,
                true,
                Matrix::from_dense(dense_t_mul_self_split(d, threads)),
            )
        }
        _ => crate::kernels::tmatmul(a, a),
    }
}

/// The multiply-adds (`m n^2`) up to which SystemDS runs its left tsmm on one thread
/// (`PAR_MINFLOP_THRESHOLD2`, its threshold when its threads are the machine's). Above it,
/// its threads split the output rows and each starts its blocks at its first row, so its bits
/// depend on its thread count ([`dense_t_mul_self_split`] follows that split). A column
/// (`n == 1`) is SystemDS's `dotProduct`, which [`tmatmul`](crate::kernels::tmatmul) follows.
pub const TSMM_SEQUENTIAL: usize = 128 * 1024;

/// The multiply-adds (`m n^2`) up to which [`t_mul_self`] computes in SystemDS's order: its
/// kernel reads A once per output row, 18x slower than BLAS at 100000 x 500, so past this
/// size (8M, a few milliseconds) the order buys too little (the normal equations of a few
/// hundred features are within it; a tall data set's Gram matrix is not).
pub const TSMM_SPLIT: usize = 8 << 20;

/// Rows of A (the inner dimension) per block of SystemDS's dense left `tsmm`.
const TSMM_LEFT_K: usize = 24;

/// `t(A) %*% A` for a dense `m x n` A as SystemDS computes it on one thread
/// (`LibMatrixMult.matrixMultTransposeSelfDense`, left side): [`dense_t_mul_self_split`] on
/// one thread.
pub fn dense_t_mul_self(a: &Dense) -> Dense {
    dense_t_mul_self_split(a, 1)
}

/// `t(A) %*% A` for a dense `m x n` A as SystemDS computes it with `threads` threads
/// (`LibMatrixMult.matrixMultTransposeSelfDense`, left side; `matrixMultTransposeSelf` splits
/// the `n` output rows into tasks of `ceil(n / (4 threads))` rows): output row `i` (column `i`
/// of A) belongs to a tile of [`TSMM_TILE`] rows counted from its task's first row, and takes
/// the rows `k` of A in blocks of [`TSMM_LEFT_K`]; in each block the rows with `A[k, i] != 0`
/// (the others skipped) go in groups of up to four, the first group holding the remainder of
/// their count modulo four. A group adds to each cell `(i, j)`, `j >= i`, either
/// `sum_g A[k_g, i] A[k_g, j]` (products added left to right, then added to the cell) for the
/// first `len % L` columns ([`java_vlen`]) of the cell's column block (blocks of
/// [`TSMM_BLOCK`] columns from the start of `i`'s tile), or one fused multiply-add per row of
/// the group for the others. The lower triangle is the upper one mirrored. Zeros of column `i`
/// are skipped as there: [`t_mul_self`] restores IEEE's NaN where they meet an infinity or
/// NaN. Rows of the output run in parallel here, each cell computed alone: the bits depend on
/// `threads` (SystemDS's), not on this process's threads.
pub fn dense_t_mul_self_split(a: &Dense, threads: usize) -> Dense {
    let (m, n) = a.dim();
    let a = a.as_standard_layout();
    let s = a.as_slice().expect("standard layout");
    let vlen = java_vlen();
    // SystemDS's tasks: one for a single thread, else `4 threads` of `ceil(n / (4 threads))`
    let task = if threads <= 1 {
        n.max(1)
    } else {
        n.div_ceil(4 * threads).max(1)
    };
    let mut out = vec![0.0f64; n * n];
    let row = |(i, o): (usize, &mut [f64])| {
        let bi = tile_start(i, task);
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("fma") {
                // SAFETY: the CPU has FMA (checked just above).
                unsafe { tsmm_left_row_fma(s, m, n, vlen, i, bi, o) };
                return;
            }
        }
        tsmm_left_row(s, m, n, vlen, i, bi, o)
    };
    if n > 0 {
        if m * n * n / 2 < PAR_WORK {
            out.chunks_mut(n).enumerate().for_each(row);
        } else {
            out.par_chunks_mut(n).enumerate().for_each(row);
        }
    }
    for i in 1..n {
        for j in 0..i {
            out[i * n + j] = out[j * n + i];
        }
    }
    Array2::from_shape_vec((n, n), out).expect("n x n")
}

/// The first row of output row `i`'s tile of [`TSMM_TILE`] rows in SystemDS's left tsmm, whose
/// tasks are `task` rows long and start their tiles at their first row.
fn tile_start(i: usize, task: usize) -> usize {
    let rl = i / task * task;
    rl + (i - rl) / TSMM_TILE * TSMM_TILE
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn tsmm_left_row_fma(
    s: &[f64],
    m: usize,
    n: usize,
    vlen: usize,
    i: usize,
    bi: usize,
    o: &mut [f64],
) {
    tsmm_left_row(s, m, n, vlen, i, bi, o)
}

/// Row `i` (cells `i..n`) of [`dense_t_mul_self_split`] into `o` (zeroed, `n` long), whose
/// tile starts at row `bi`.
#[inline(always)]
fn tsmm_left_row(s: &[f64], m: usize, n: usize, vlen: usize, i: usize, bi: usize, o: &mut [f64]) {
    let mut ks = [0usize; TSMM_LEFT_K];
    for bk in (0..m).step_by(TSMM_LEFT_K) {
        let mut nz = 0;
        for k in bk..(bk + TSMM_LEFT_K).min(m) {
            if s[k * n + i] != 0.0 {
                ks[nz] = k;
                nz += 1;
            }
        }
        let mut g0 = 0;
        while g0 < nz {
            let g1 = if g0 == 0 && nz % 4 != 0 {
                nz % 4
            } else {
                g0 + 4
            };
            let group = &ks[g0..g1];
            for bj in (bi..n).step_by(TSMM_BLOCK) {
                let hi = (bj + TSMM_BLOCK).min(n);
                let scalar_end = bj + (hi - bj) % vlen;
                for j in bj.max(i)..hi {
                    let c = &mut o[j];
                    if j < scalar_end {
                        let mut sum = s[group[0] * n + i] * s[group[0] * n + j];
                        for &k in &group[1..] {
                            sum += s[k * n + i] * s[k * n + j];
                        }
                        *c += sum;
                    } else {
                        for &k in group {
                            *c = s[k * n + i].mul_add(s[k * n + j], *c);
                        }
                    }
                }
            }
            g0 = g1;
        }
    }
}

/// CSR x dense: a plain row loop, rows split across threads; a narrow B (at most [`NARROW`]
/// columns) runs [`csr_mul_narrow`], with the same order of operations per output cell.
pub fn csr_mul_dense(a: &Csr, b: &Dense) -> Dense {
    assert!(a.is_csr());
    let (m, k) = a.shape();
    let (k2, n) = b.dim();
    assert_eq!(k, k2, "matmul shape contract");
    if n == 1 {
        return csr_mul_vector(a, &b.column(0).to_vec());
    }
    if let Some(d) = thin_padded!(n, csr_mul_narrow, a, b) {
        return d;
    }
    let b = b.as_standard_layout();
    let bs = b.as_slice().expect("standard layout");
    let mut out = crate::matrix::zeros(m, n);
    if n == 0 {
        return out;
    }
    let indptr = a.indptr();
    let indptr = indptr.raw_storage();
    let (ind, val) = (a.indices(), a.data());
    let row = |i: usize, o: &mut [f64]| {
        for p in indptr[i]..indptr[i + 1] {
            let (j, v) = (col(ind[p]), val[p]);
            let br = &bs[j * n..(j + 1) * n];
            for (oc, &bc) in o.iter_mut().zip(br) {
                *oc += v * bc;
            }
        }
    };
    let os = out.as_slice_mut().expect("standard layout");
    if a.nnz() * n < PAR_WORK {
        os.chunks_mut(n).enumerate().for_each(|(i, o)| row(i, o));
    } else {
        os.par_chunks_mut(n)
            .enumerate()
            .for_each(|(i, o)| row(i, o));
    }
    out
}

/// One 64-byte cache line of doubles, aligned to a line (the storage of [`Padded`]).
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([f64; 8]);

/// A narrow row-major `rows x N` matrix with its rows padded to `W` doubles, `W` the power of
/// two [`padded_width`]`(N)` (or `N` itself, when [`Padded::rows_of`] returns the rows
/// unpadded), in storage aligned to a cache line: no row straddles more lines
/// than it needs, and a row of 9 to 16 doubles is one aligned pair of lines. Stored
/// contiguously, a row of 10 doubles (80 bytes) crosses a line boundary at every row. The
/// sparse narrow kernels gather or scatter a random row per stored entry; with rows padded,
/// such an access is one or two whole lines, the pair that the processor's adjacent-line
/// prefetch brings in together (measured: a 10-wide gather and scatter per entry 11% faster
/// with 16-wide rows than with 80-byte rows, and slower with the row split into an 8-wide
/// and a 2-wide array of the same bytes).
pub(crate) struct Padded<const W: usize> {
    lines: Vec<Line>,
    rows: usize,
}

/// The row width of [`Padded`] for `n` columns: the next power of two.
pub(crate) const fn padded_width(n: usize) -> usize {
    n.next_power_of_two()
}

impl<const W: usize> Padded<W> {
    /// The rows of a row-major slice of `N`-wide rows, padded with zeros.
    fn from_rows<const N: usize>(s: &[f64]) -> Self {
        const { assert!(padded_width(N) == W || N == W) };
        let src = as_rows::<N>(s);
        let rows = src.len();
        let mut lines = vec![Line([0.0; 8]); (rows * W).div_ceil(8)];
        // SAFETY: the lines hold at least `rows * W` doubles, and a `Line` is 8 of them
        let flat = unsafe {
            std::slice::from_raw_parts_mut(lines.as_mut_ptr().cast::<f64>(), lines.len() * 8)
        };
        for (o, r) in as_rows_mut::<W>(flat).iter_mut().zip(src) {
            o[..N].copy_from_slice(r);
        }
        Padded { lines, rows }
    }

    /// The rows of a row-major slice of `N`-wide rows as `W`-wide rows: the slice itself when
    /// `N == W` (no copy; its alignment is the allocator's, a page for large matrices), else
    /// a padded copy kept in `slot`.
    pub(crate) fn rows_of<'a, const N: usize>(
        s: &'a [f64],
        slot: &'a mut Option<Self>,
    ) -> &'a [[f64; W]] {
        if N == W {
            return as_rows::<W>(s);
        }
        slot.insert(Self::from_rows::<N>(s)).rows()
    }

    /// The padded rows.
    fn rows(&self) -> &[[f64; W]] {
        // SAFETY: the lines hold at least `rows * W` doubles; `[f64; W]` has the alignment of
        // f64
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast(), self.rows) }
    }
}

/// The `rows x N` matrix of an accumulator whose rows are padded to `W` doubles (the layout of
/// [`Padded`]): the vector itself when `W == N`, else its rows' first `N` values.
pub(crate) fn unpad<const N: usize, const W: usize>(acc: Vec<f64>, rows: usize) -> Dense {
    if W == N {
        return Array2::from_shape_vec((rows, N), acc).expect("rows x N");
    }
    let mut out = crate::matrix::zeros(rows, N);
    let os = out.as_slice_mut().expect("standard layout");
    for (o, r) in os.chunks_exact_mut(N).zip(as_rows::<W>(&acc)) {
        o.copy_from_slice(&r[..N]);
    }
    out
}

/// The rows of a row-major `rows x N` slice as fixed-size arrays (a trailing partial row is
/// left out).
pub(crate) fn as_rows<const N: usize>(s: &[f64]) -> &[[f64; N]] {
    // SAFETY: `[f64; N]` has the size of N f64s and the alignment of f64, and the first
    // `len / N` arrays lie within `s`.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<[f64; N]>(), s.len() / N) }
}

/// [`as_rows`] for a mutable slice.
pub(crate) fn as_rows_mut<const N: usize>(s: &mut [f64]) -> &mut [[f64; N]] {
    // SAFETY: as in `as_rows`; the borrow of `s` is moved into the result.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<[f64; N]>(), s.len() / N) }
}

/// CSR `A` times a dense `B` of exactly `N` columns: each row's sums in `N` registers (a
/// fixed-size array), the stored entries in order; row groups of about [`TASK_WORK`] entries
/// in parallel (rows are independent: the same bits whatever the split).
fn csr_mul_narrow<const N: usize, const W: usize>(a: &Csr, b: &Dense) -> Dense {
    let m = a.rows();
    let bs = standard(b);
    let mut bp = None;
    let brows = Padded::<W>::rows_of::<N>(&bs, &mut bp);
    assert_eq!(brows.len(), a.cols(), "matmul shape contract");
    let indptr = a.indptr();
    let indptr = indptr.raw_storage();
    let (ind, val) = (a.indices(), a.data());
    let mut flat = crate::matrix::zeroed(m * N);
    let out = as_rows_mut::<N>(&mut flat);
    let per_row = (a.nnz() / m.max(1)).max(1);
    let rows = (TASK_WORK / per_row).max(1);
    let task = |(t, o): (usize, &mut [[f64; N]])| {
        wide(
            #[inline(always)]
            || {
                for (r, orow) in o.iter_mut().enumerate() {
                    let i = t * rows + r;
                    let (lo, hi) = (indptr[i], indptr[i + 1]);
                    prefetch_entries(ind, val, lo, hi);
                    let mut acc = [0.0f64; N];
                    for (&j, &v) in ind[lo..hi].iter().zip(&val[lo..hi]) {
                        // SAFETY: a CSR matrix's column indices are below its column count
                        // (sprs's structure invariant), the rows of B (asserted above)
                        let br = unsafe { brows.get_unchecked(col(j)) };
                        for l in 0..N {
                            acc[l] += v * br[l];
                        }
                    }
                    *orow = acc;
                }
            },
        )
    };
    if m <= rows {
        task((0, out));
    } else {
        out.par_chunks_mut(rows).enumerate().for_each(task);
    }
    Array2::from_shape_vec((m, N), flat).expect("m x N")
}

/// `t(A) %*% B` for a CSR A (`m x n`) and a dense B of exactly `N` columns (at most 16), as
/// SystemDS 3.4 computes it: each row of A in order scatters `a_ij * B[i,:]` into row `j` of an
/// `n x N` accumulator (the accumulator's rows padded to `W`, [`Padded`]), the rows of A split
/// as [`systemds_t_sparse_splits`] says, one block per thread, the partials added in order
/// ([`systemds_row_sums`]'s split): the bits of SystemDS with [`systemds_threads`] threads.
pub(crate) fn csr_t_mul_narrow<const N: usize, const W: usize>(a: &Csr, b: &Dense) -> Dense {
    csr_t_mul_narrow_with::<N, W>(a, b, systemds_threads())
}

/// Whether SystemDS 3.4 with `threads` threads splits `t(A) %*% B`, A sparse `m x n` and B
/// dense `m x c` with `c <= 16`, over A's rows. Its left-transpose rewrite
/// (`AggBinaryOp.isLeftTransposeRewriteApplicable`: `n m > m c + n c`) makes it
/// `t(t(B) %*% A)`, and a left side of at most 16 rows by a taller right side is split over the
/// right side's rows (`checkParMatrixMultRightInputRows`) when the product may run on several
/// threads ([`systemds_splits`]: the partial results' memory, 2 flops per cell of
/// `t(B) %*% A`'s operands). Otherwise each cell is summed over all rows in order: SystemDS runs
/// `t(B) %*% A` on one thread, or splits it over `t(B)`'s rows, or (without the rewrite) runs
/// the transposed A's rows one by one.
pub fn systemds_t_sparse_splits(threads: usize, m: usize, n: usize, c: usize) -> bool {
    let rewrite = (n as u128) * (m as u128) > (m as u128 + n as u128) * c as u128;
    rewrite && systemds_short_left_splits(threads, c, m, n)
}

/// Whether SystemDS 3.4 with `threads` threads splits a dense `rows x cd` by `cd x n` product
/// with a sparse right side over the right side's rows: at most 16 rows by a taller right
/// side (`checkParMatrixMultRightInputRows`), on several threads ([`systemds_splits`]: the
/// partial results' memory, 2 flops per cell of the operands). Each thread then sums its rows
/// of the right side from zero, and the partials are added in order.
fn systemds_short_left_splits(threads: usize, rows: usize, cd: usize, n: usize) -> bool {
    rows <= 16 && cd > rows && systemds_splits(threads, rows * n, 2 * rows * cd * n)
}

/// [`csr_t_mul_narrow`] with SystemDS's thread count given.
fn csr_t_mul_narrow_with<const N: usize, const W: usize>(
    a: &Csr,
    b: &Dense,
    threads: usize,
) -> Dense {
    let (m, n) = a.shape();
    let bs = standard(b);
    let brows = as_rows::<N>(&bs);
    let indptr = a.indptr();
    let indptr = indptr.raw_storage();
    let (ind, val) = (a.indices(), a.data());
    let body = |rows: std::ops::Range<usize>, acc: &mut [f64]| {
        let acc = as_rows_mut::<W>(acc);
        assert_eq!(acc.len(), n, "one accumulator row per column of A");
        wide(
            #[inline(always)]
            || {
                for i in rows {
                    let bi = brows[i];
                    let (lo, hi) = (indptr[i], indptr[i + 1]);
                    prefetch_entries(ind, val, lo, hi);
                    for (&j, &v) in ind[lo..hi].iter().zip(&val[lo..hi]) {
                        // SAFETY: a CSR matrix's column indices are below its column count
                        // (sprs's structure invariant), the accumulator's rows (asserted)
                        let o = unsafe { acc.get_unchecked_mut(col(j)) };
                        for l in 0..N {
                            o[l] += v * bi[l];
                        }
                    }
                }
            },
        )
    };
    // split over A's rows as SystemDS's threads split its `t(B) %*% A`
    let split = systemds_t_sparse_splits(threads, m, n, N);
    let acc = systemds_row_sums_split(split, threads, m, n * W, PartialFold::InOrder, body);
    unpad::<N, W>(acc, n)
}

/// `t(A) %*% w` for a CSR A and a dense vector `w` (`m x 1`), as SystemDS 3.4 with `threads`
/// threads computes it: each row `i` in order scatters `w_i * A[i, :]`, over each of its
/// thread's rows when it splits the product ([`systemds_t_sparse_splits`]), the partials added
/// in order. [`csr_t_mul_dense`] of one column, with the thread count given.
pub fn csr_t_mul_vector(a: &Csr, w: &Dense, threads: usize) -> Dense {
    assert!(w.dim() == (a.rows(), 1), "tmatmul shape contract");
    csr_t_mul_narrow_with::<1, 1>(a, w, threads)
}

/// Dense x CSR: each row of A scatters `a_ij * B[j,:]` into its output row, B's rows in order;
/// where SystemDS splits the product over B's rows (a row vector A, or A of at most 16 rows:
/// [`systemds_short_left_splits`]), over its threads' blocks of B's rows, the partials added
/// in order.
pub fn dense_mul_csr(a: &Dense, b: &Csr) -> Dense {
    assert!(b.is_csr());
    let (m, k) = a.dim();
    let (k2, n) = b.shape();
    assert_eq!(k, k2, "matmul shape contract");
    let a = a.as_standard_layout();
    let as_ = a.as_slice().expect("standard layout");
    if n == 0 || k == 0 {
        return crate::matrix::zeros(m, n);
    }
    let indptr = b.indptr();
    let indptr = indptr.raw_storage();
    let (ind, val) = (b.indices(), b.data());
    // output row `i` += a_ij * B[j, :] for B's rows `js` in order (a zero a_ij skipped)
    let scatter = |i: usize, js: std::ops::Range<usize>, o: &mut [f64]| {
        for j in js {
            let aij = as_[i * k + j];
            if aij == 0.0 {
                continue;
            }
            for p in indptr[j]..indptr[j + 1] {
                o[col(ind[p])] += aij * val[p];
            }
        }
    };
    if m == 1 {
        // a row vector: SystemDS's vector-matrix product, split over B's rows as its threads
        // split it
        let acc = dense_row_mul_csr(as_, b, systemds_threads());
        return Array2::from_shape_vec((1, n), acc).expect("1 x n");
    }
    let threads = systemds_threads();
    if systemds_short_left_splits(threads, m, k, n) {
        // each thread's partial product from zero over its rows of B, added in order
        let split = |js: std::ops::Range<usize>, o: &mut [f64]| {
            for (i, oi) in o.chunks_mut(n).enumerate() {
                scatter(i, js.clone(), oi);
            }
        };
        let acc = systemds_row_sums_split(true, threads, k, m * n, PartialFold::InOrder, split);
        return Array2::from_shape_vec((m, n), acc).expect("m x n");
    }
    let mut out = crate::matrix::zeros(m, n);
    let os = out.as_slice_mut().expect("standard layout");
    if m * b.nnz() < PAR_WORK * 4 {
        os.chunks_mut(n)
            .enumerate()
            .for_each(|(i, o)| scatter(i, 0..k, o));
    } else {
        os.par_chunks_mut(n)
            .enumerate()
            .for_each(|(i, o)| scatter(i, 0..k, o));
    }
    out
}

/// A dense row vector `a` (`1 x k`) by a CSR matrix B (`k x n`) as SystemDS 3.4 with `threads`
/// threads computes it (`matrixMultDenseSparseOutDense`, vector-matrix): each row `j` of B
/// with `a_j != 0`, in order, scatters `a_j * B[j, :]`, over each of its thread's rows of B,
/// the partials added in order ([`systemds_row_sums`], 2 flops per cell of B).
pub fn dense_row_mul_csr(a: &[f64], b: &Csr, threads: usize) -> Vec<f64> {
    let (k, n) = b.shape();
    assert_eq!(a.len(), k, "matmul shape contract");
    let ip = b.indptr();
    let ip = ip.raw_storage();
    let (ind, val) = (b.indices(), b.data());
    systemds_row_sums(threads, k, n, 2 * k * n, PartialFold::InOrder, |rows, o| {
        for j in rows {
            let aj = a[j];
            if aj == 0.0 {
                continue;
            }
            for p in ip[j]..ip[j + 1] {
                o[col(ind[p])] += aj * val[p];
            }
        }
    })
}

/// SystemDS's `isUltraSparseMatrixMult` for a sparse row vector `a` by a sparse matrix `b`
/// (more than one column): either operand ultra-sparse (`MatrixBlock.isUltraSparse`,
/// sparsity under `ULTRA_SPARSITY_TURN_POINT` 0.00004, with under 40 non-zeros unless
/// `nnz_too` is off), or one ultra-sparse by sparsity alone with a worst-case output sparsity
/// under `ULTRA_SPARSITY_TURN_POINT2` (0.0004). SystemDS then takes its ultra-sparse kernel,
/// one thread over the row: not split.
fn systemds_ultra_sparse_vm(a: &Csr, b: &Csr) -> bool {
    let sp = |x: &Csr| x.nnz() as f64 / x.rows().max(1) as f64 / x.cols().max(1) as f64;
    let ultra = |x: &Csr, nnz_too: bool| sp(x) < 0.00004 && (!nnz_too || x.nnz() < 40);
    let out_sp = (a.nnz() as f64).min(1.0) * (b.nnz() as f64 / b.cols().max(1) as f64).min(1.0);
    ultra(a, true) || ultra(b, true) || ((ultra(a, false) || ultra(b, false)) && out_sp < 0.0004)
}

/// A CSR row vector `a` (`1 x k`) by a CSR matrix B (`k x n`), dense, as SystemDS 3.4 with
/// `threads` threads computes it (`matrixMultSparseSparseVM`): `c += a_j * B[j, :]` over the
/// row's non-zeros in order, over each of its thread's rows of B, the partials added in order
/// ([`systemds_row_sums`], 2 flops per cell of B).
pub fn csr_row_mul_csr(a: &Csr, b: &Csr, threads: usize) -> Vec<f64> {
    let (k, n) = b.shape();
    assert!(a.rows() == 1 && a.cols() == k, "matmul shape contract");
    let bp = b.indptr();
    let bp = bp.raw_storage();
    let (bi, bv) = (b.indices(), b.data());
    let ap = a.indptr();
    let ap = ap.raw_storage();
    let (aj, av) = (&a.indices()[ap[0]..ap[1]], &a.data()[ap[0]..ap[1]]);
    systemds_row_sums(threads, k, n, 2 * k * n, PartialFold::InOrder, |rows, o| {
        let lo = aj.partition_point(|&j| col(j) < rows.start);
        let hi = aj.partition_point(|&j| col(j) < rows.end);
        for (&j, &x) in aj[lo..hi].iter().zip(&av[lo..hi]) {
            for p in bp[col(j)]..bp[col(j) + 1] {
                o[col(bi[p])] += x * bv[p];
            }
        }
    })
}

/// CSR x CSR by Gustavson's algorithm: each output row accumulates scaled rows of B in a dense
/// buffer with a marker list of touched columns. Row blocks run in parallel.
pub fn csr_mul_csr(a: &Csr, b: &Csr) -> Csr {
    assert!(a.is_csr() && b.is_csr());
    let (m, k) = a.shape();
    let (k2, n) = b.shape();
    assert_eq!(k, k2, "matmul shape contract");
    let (ap, ai, av) = (a.indptr(), a.indices(), a.data());
    let ap = ap.raw_storage();
    let (bp, bi, bv) = (b.indptr(), b.indices(), b.data());
    let bp = bp.raw_storage();
    let nthreads = rayon::current_num_threads().max(1);
    let chunk = m.div_ceil(nthreads * 4).max(1);
    let blocks: Vec<(Vec<usize>, Vec<Idx>, Vec<f64>)> = (0..m.div_ceil(chunk))
        .into_par_iter()
        .map(|blk| {
            let (lo, hi) = (blk * chunk, ((blk + 1) * chunk).min(m));
            let mut acc = vec![0.0; n];
            let mut seen = vec![false; n];
            let mut touched: Vec<usize> = Vec::new();
            let (mut lens, mut ids, mut vals) = (Vec::new(), Vec::new(), Vec::new());
            for i in lo..hi {
                for p in ap[i]..ap[i + 1] {
                    let (j, v) = (col(ai[p]), av[p]);
                    for q in bp[j]..bp[j + 1] {
                        let c = col(bi[q]);
                        if !seen[c] {
                            seen[c] = true;
                            touched.push(c);
                        }
                        acc[c] += v * bv[q];
                    }
                }
                touched.sort_unstable();
                let before = ids.len();
                for &c in &touched {
                    if acc[c] != 0.0 {
                        ids.push(idx(c));
                        vals.push(acc[c]);
                    }
                    acc[c] = 0.0;
                    seen[c] = false;
                }
                touched.clear();
                lens.push(ids.len() - before);
            }
            (lens, ids, vals)
        })
        .collect();
    let nnz: usize = blocks.iter().map(|b| b.1.len()).sum();
    let mut indptr = Vec::with_capacity(m + 1);
    let mut indices = Vec::with_capacity(nnz);
    let mut data = Vec::with_capacity(nnz);
    indptr.push(0);
    for (lens, ids, vals) in blocks {
        for l in lens {
            indptr.push(indptr.last().copied().unwrap_or(0) + l);
        }
        indices.extend(ids);
        data.extend(vals);
    }
    Csr::new((m, n), indptr, indices, data)
}

/// `A %*% S - X %*% V` (or `X %*% V - A %*% S` when `flip`) in one pass over the rows, never
/// forming either product: A dense `m x k` (`1 <= k <=` [`SMALL_INNER`]), S dense `k x c`,
/// X CSR `m x n`, V dense `n x c` with [`NARROW`] `< c <=` [`SPARSE_THIN`] (ALS's gradient
/// `U %*% (t(V) %*% V) - X %*% V`). Each row's `A %*% S` is [`matmul`]'s (SystemDS's kernel
/// for the shape, [`super::dense_product::RowProduct`]; `None` when that kernel does not
/// compute the rows one by one) and its
/// `X %*% V` [`csr_mul_narrow`]'s (the stored entries in order from `0.0`), so the result has
/// the bits of the two products formed and subtracted cell by cell, whenever those products
/// would be stored dense and need no [`ieee_zeros`] repair. `None` when the shapes are not
/// these, when S or V holds a non-finite value, or when a result cell is not finite (then an
/// operand held Inf or NaN, or a sum overflowed: the caller forms the products as written), or
/// when either product would be stored sparse.
pub fn small_minus_csr_narrow(
    a: &Dense,
    s: &Dense,
    x: &Csr,
    v: &Dense,
    flip: bool,
) -> Option<Dense> {
    let (m, k) = a.dim();
    let c = s.ncols();
    if !x.is_csr()
        || s.nrows() != k
        || x.rows() != m
        || v.dim() != (x.cols(), c)
        || !(1..=SMALL_INNER).contains(&k)
        || c <= NARROW
        || m == 0
    {
        return None;
    }
    let (ss, vs) = (standard(s), standard(v));
    if !crate::matrix::all_finite(&ss) || !crate::matrix::all_finite(&vs) {
        return None;
    }
    thin!(c, small_minus_csr, &standard(a), k, &ss, x, &vs, flip).flatten()
}

/// [`small_minus_csr_narrow`] for exactly `N` columns: rows in parallel groups of about
/// [`TASK_WORK`] entries of X; each group reports whether its cells are all finite and how
/// many non-zeros each product has.
#[allow(clippy::too_many_arguments)]
fn small_minus_csr<const N: usize>(
    as_: &[f64],
    k: usize,
    ss: &[f64],
    x: &Csr,
    vs: &[f64],
    flip: bool,
) -> Option<Dense> {
    let m = x.rows();
    let sp = super::dense_product::RowProduct::new(ss, m, k, N)?;
    let vrows = as_rows::<N>(vs);
    let indptr = x.indptr();
    let indptr = indptr.raw_storage();
    let (ind, val) = (x.indices(), x.data());
    let mut flat = crate::matrix::zeroed(m * N);
    let out = as_rows_mut::<N>(&mut flat);
    let per_row = (x.nnz() / m).max(1) + k;
    let rows = (TASK_WORK / per_row).max(1);
    // per group: (all cells finite, non-zeros of A %*% S, non-zeros of X %*% V)
    let task = |(t, o): (usize, &mut [[f64; N]])| -> (bool, usize, usize) {
        wide(
            #[inline(always)]
            || {
                let (mut finite, mut nz_p, mut nz_q) = (true, 0usize, 0usize);
                for (r, orow) in o.iter_mut().enumerate() {
                    let i = t * rows + r;
                    let mut p = [0.0f64; N];
                    sp.row(&as_[i * k..(i + 1) * k], &mut p);
                    let (lo, hi) = (indptr[i], indptr[i + 1]);
                    prefetch_entries(ind, val, lo, hi);
                    let mut q = [0.0f64; N];
                    for (&j, &xv) in ind[lo..hi].iter().zip(&val[lo..hi]) {
                        let vj = &vrows[col(j)];
                        for l in 0..N {
                            q[l] += xv * vj[l];
                        }
                    }
                    for l in 0..N {
                        orow[l] = if flip { q[l] - p[l] } else { p[l] - q[l] };
                        finite &= orow[l].is_finite();
                        nz_p += usize::from(p[l] != 0.0);
                        nz_q += usize::from(q[l] != 0.0);
                    }
                }
                (finite, nz_p, nz_q)
            },
        )
    };
    let (finite, nz_p, nz_q) = if m <= rows {
        task((0, out))
    } else {
        out.par_chunks_mut(rows)
            .enumerate()
            .map(task)
            .reduce(|| (true, 0, 0), |a, b| (a.0 && b.0, a.1 + b.1, a.2 + b.2))
    };
    let sparse = |nz| crate::matrix::prefers_sparse(m, N, nz);
    if !finite || sparse(nz_p) || sparse(nz_q) {
        return None;
    }
    Some(Array2::from_shape_vec((m, N), flat).expect("m x N"))
}
