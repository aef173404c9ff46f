//! SystemDS 3.4's dense matrix product, kernel by kernel, in its order of operations.
//!
//! A product's cells are sums of `cd` products, and the order of those additions fixes the
//! rounding. SystemDS (`LibMatrixMult.matrixMult`) picks one of nine kernels for a dense
//! `m x cd` by `cd x n` product from the shape and its thread count, and each kernel adds in
//! its own order: a dot product per cell for a skinny right side (which it transposes first),
//! blocks of four rows of B scaled into a row of C for the general case (after dropping the
//! zeros of A's row, 24 columns at a time: the zeros move the groups of four), the rows of B
//! split between the threads with one partial result each for a short left side, and so on.
//! [`plan`] is that choice, [`product`] runs it: spores's dense products then have SystemDS's
//! bits, which iterative algorithms (a logistic regression's Newton steps) amplify when they
//! differ.
//!
//! SystemDS's row kernels (`vectMultiplyAdd` to `vectMultiplyAdd4`, [`madd`] here) add N
//! scaled rows of B into a row of C: the first `len % vlen` columns as `c + (a1 b1 + a2 b2 +
//! ...)` with Java's rounding of each operation, the rest by the Vector API's fused
//! multiply-adds in the order `a1 .. aN`. The lanes of a vector are independent, so only the
//! split point depends on the JVM's vector length ([`java_vlen`]); the kernels here take it as
//! an argument, so tests check each width on any CPU.
//!
//! Where SystemDS skips a zero of A (the general kernel, the short-left kernel's first rows,
//! the outer product), `0 * Inf` is not formed: [`product`] says so, and the caller restores
//! IEEE's NaN ([`super::matmul::ieee_zeros`]). Elsewhere every product is formed.

use super::matmul::{
    dense_mul_dense, dense_t_mul_dense, dot, dot_rows_lanes, java_vlen, systemds_balanced,
    systemds_row_sums, systemds_threads, vm_rows_lanes, wide, PartialFold, SYSTEMDS_PAR_MEM,
    SYSTEMDS_PAR_MINFLOP,
};
use crate::matrix::Dense;
use ndarray::Array2;
use rayon::prelude::*;
use std::ops::Range;

/// SystemDS's assumed L2 cache size (`LibMatrixMult.L2_CACHESIZE`), the bound on a skinny right
/// side it transposes and on the left side of a split over B's columns.
const L2_CACHESIZE: usize = 256 * 1024;

/// Inner dimension up to which SystemDS's matrix-vector product takes one dot product per row
/// (`matrixMultDenseDenseMVShortRHS`); beyond it, dot products of blocks of this many.
const MV_BLOCK: usize = 2 * 1024;

/// The kernels of SystemDS's `matrixMultDenseDense`, in the order it tries them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// `1 x cd` by `cd x 1`: one dot product
    Dot,
    /// `m x 1` by `1 x n`: `c_ij = a_i b_j` (`+0.0` for `a_i = 0`)
    Outer,
    /// `m x 1` by `1 x 1`: `c_i = a_i b`
    VectorScalar,
    /// `m x cd` by `cd x 1`, `cd <= 2048`: one dot product per row
    MvShort,
    /// `m x cd` by `cd x 1`, `cd > 2048`: per row, dot products of blocks of 2048 added in order
    MvTall,
    /// `1 x cd` by `cd x n`: B's rows scaled and added, two at a time ([`vm_rows_lanes`])
    VectorMatrix,
    /// `m x cd` by `cd x n`, `m <= 16`, split over B's rows: blocks of four rows of B
    ShortLhs,
    /// a skinny B (`n < 64`, `8 cd n` within the L2 size), transposed: a dot product per cell
    SkinnyRhs,
    /// the blocked general kernel: per 24 columns of A's row, its non-zeros in groups of four
    General,
}

/// How SystemDS splits the product between its threads, where the split changes the bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Split {
    /// one task, or tasks over A's rows (every cell is computed the same way either way)
    Rows,
    /// tasks over B's rows (`pm2r`): each a partial product from zero, added in task order
    RhsRows(Vec<Range<usize>>),
    /// tasks over B's columns (`pm2c`): each task's blocks of 1024 columns start at its first
    RhsCols(Vec<Range<usize>>),
}

/// SystemDS's kernel and split for a dense `m x cd` by `cd x n` product with `threads` threads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// the kernel
    pub kernel: Kernel,
    /// the split between threads
    pub split: Split,
}

/// SystemDS 3.4's choice for a dense `m x cd` by `cd x n` product (all dimensions at least 1)
/// with `threads` threads: `checkPrepMatrixMultRightInput` (transpose a skinny B),
/// `satisfiesMultiThreadingConstraints`, `checkParMatrixMultRightInputRows` (split over B's
/// rows; on one thread SystemDS asks it with `Integer.MAX_VALUE` threads, so only a row vector
/// A qualifies), `checkParMatrixMultRightInputCols`, then `matrixMultDenseDense`'s cases.
pub fn plan(m: usize, cd: usize, n: usize, threads: usize) -> Plan {
    let tm2 = m > n && cd > n && n > 1 && n < 64 && 8 * cd * n < L2_CACHESIZE;
    // the thread checks see B as prepared: transposed (n x cd) when skinny
    let (r2, c2) = if tm2 { (n, cd) } else { (cd, n) };
    let par = threads > 1
        && (m != 1 || ((8 * c2 * threads) as f64) < SYSTEMDS_PAR_MEM)
        && 2.0 * m as f64 * cd as f64 * c2 as f64 > SYSTEMDS_PAR_MINFLOP as f64;
    let pm2 =
        m == 1 || (par && m <= 16 && r2 > m && ((8 * threads * m * c2) as f64) < SYSTEMDS_PAR_MEM);
    let pm2c = par && !pm2 && c2 > threads * 1024 && m < threads * 32 && 8 * m * cd < L2_CACHESIZE;
    let kernel = if tm2 {
        Kernel::SkinnyRhs
    } else if m == 1 && n == 1 {
        Kernel::Dot
    } else if n > 1 && cd == 1 {
        Kernel::Outer
    } else if n == 1 && cd == 1 {
        Kernel::VectorScalar
    } else if n == 1 && cd <= MV_BLOCK {
        Kernel::MvShort
    } else if n == 1 {
        Kernel::MvTall
    } else if pm2 && m == 1 {
        Kernel::VectorMatrix
    } else if pm2 && m <= 16 {
        Kernel::ShortLhs
    } else {
        Kernel::General
    };
    let split = if par && pm2 {
        Split::RhsRows(systemds_balanced(r2, threads))
    } else if pm2c {
        Split::RhsCols(systemds_balanced(c2, threads))
    } else {
        Split::Rows
    };
    Plan { kernel, split }
}

/// `A %*% B` for row-major dense A (`m x cd`) and B (`cd x n`) as SystemDS 3.4 computes it with
/// `threads` threads ([`plan`]), at `vlen` lanes ([`java_vlen`] for SystemDS on this CPU):
/// the row-major `m x n` result, and whether every product was formed (else the caller puts
/// back the NaN of a skipped `0 * Inf`).
pub fn product(
    a: &[f64],
    b: &[f64],
    m: usize,
    cd: usize,
    n: usize,
    threads: usize,
    vlen: usize,
) -> (Vec<f64>, bool) {
    product_with(a, b, m, cd, n, threads, vlen, false)
}

/// [`product`]; with `b_finite` (the caller knows every value of B is finite), the
/// vector-matrix kernel does not read the rows of B its vector weighs by zero (the same
/// sums: [`vm_rows_lanes`]).
#[allow(clippy::too_many_arguments)]
pub fn product_with(
    a: &[f64],
    b: &[f64],
    m: usize,
    cd: usize,
    n: usize,
    threads: usize,
    vlen: usize,
    b_finite: bool,
) -> (Vec<f64>, bool) {
    assert!(
        a.len() == m * cd && b.len() == cd * n,
        "product shape contract"
    );
    if m == 0 || n == 0 {
        return (Vec::new(), true);
    }
    if cd == 0 {
        return (crate::matrix::zeroed(m * n), true);
    }
    let Plan { kernel, split } = plan(m, cd, n, threads);
    let whole = 0..cd;
    let rhs_rows: &[Range<usize>] = match &split {
        Split::RhsRows(r) => r,
        _ => std::slice::from_ref(&whole),
    };
    match kernel {
        Kernel::Dot => {
            let mut c = 0.0;
            for r in rhs_rows {
                c += dot_lanes(&a[r.clone()], &b[r.clone()], vlen);
            }
            (vec![c], true)
        }
        Kernel::Outer => {
            let mut c = crate::matrix::zeroed(m * n);
            for (ci, &ai) in c.chunks_mut(n).zip(a) {
                outer_row(ai, b, ci);
            }
            (c, false)
        }
        // a one-term sum from +0.0, as `outer_row`
        Kernel::VectorScalar => (a.iter().map(|&ai| 0.0 + b[0] * ai).collect(), true),
        Kernel::MvShort => {
            let mut c = crate::matrix::zeroed(m);
            let rows = row_task(cd);
            row_chunks(&mut c, rows, m * cd, |t, o| {
                let ar = &a[t * rows * cd..(t * rows + o.len()) * cd];
                dot_rows_lanes(vlen, ar, cd, cd, b, o.len(), o, 1)
            });
            (c, true)
        }
        Kernel::MvTall => {
            let row = |r: &Range<usize>, i: usize| {
                let ai = &a[i * cd..(i + 1) * cd];
                let mut ci = 0.0;
                for lo in r.clone().step_by(MV_BLOCK) {
                    let hi = (lo + MV_BLOCK).min(r.end);
                    ci += dot_lanes(&ai[lo..hi], &b[lo..hi], vlen);
                }
                ci
            };
            let part = |r: Range<usize>| -> Vec<f64> {
                if m * r.len() < 1 << 16 {
                    (0..m).map(|i| row(&r, i)).collect()
                } else {
                    (0..m).into_par_iter().map(|i| row(&r, i)).collect()
                }
            };
            (partials_in_order(rhs_rows, m, part), true)
        }
        Kernel::VectorMatrix => {
            // the split is systemds_row_sums's own (the same constraints for a row vector)
            let c = systemds_row_sums(
                threads,
                cd,
                n,
                2 * cd * n,
                PartialFold::InOrder,
                |rows, acc| vm_rows_lanes(vlen, b, n, a, rows, acc, b_finite),
            );
            (c, true)
        }
        Kernel::ShortLhs => {
            let part = |r: Range<usize>| {
                let mut c = crate::matrix::zeroed(m * n);
                wide(
                    #[inline(always)]
                    || short_lhs(a, b, m, cd, n, r, vlen, &mut c),
                );
                c
            };
            (partials_in_order(rhs_rows, m * n, part), false)
        }
        Kernel::SkinnyRhs => {
            let mut bt = crate::matrix::zeroed(n * cd);
            for (k, bk) in b.chunks_exact(n).enumerate() {
                for (j, &x) in bk.iter().enumerate() {
                    bt[j * cd + k] = x;
                }
            }
            let mut c = crate::matrix::zeroed(m * n);
            let rows = row_task(cd * n);
            row_chunks(&mut c, rows * n, m * cd * n, |t, o| {
                let (i, nr) = (t * rows, o.len() / n);
                let ar = &a[i * cd..(i + nr) * cd];
                for j in 0..n {
                    dot_rows_lanes(
                        vlen,
                        ar,
                        cd,
                        cd,
                        &bt[j * cd..(j + 1) * cd],
                        nr,
                        &mut o[j..],
                        n,
                    );
                }
            });
            (c, true)
        }
        Kernel::General => {
            let all = 0..n;
            let cols = match &split {
                Split::RhsCols(c) => c.as_slice(),
                _ => std::slice::from_ref(&all),
            };
            let mut c = crate::matrix::zeroed(m * n);
            let rows = row_task(cd * n).next_multiple_of(GENERAL_BI);
            row_chunks(&mut c, rows * n, m * cd * n, |t, o| {
                let i = t * rows;
                let ar = &a[i * cd..(i + o.len() / n) * cd];
                wide(
                    #[inline(always)]
                    || {
                        for cr in cols {
                            general(ar, b, cd, n, cr.clone(), vlen, o);
                        }
                    },
                );
            });
            (c, false)
        }
    }
}

/// A row of SystemDS's outer product (`matrixMultDenseDenseMM` with `cd = 1`): `+0.0` for
/// `a_i = 0` (no product formed), else `a_i b_j`, as a sum of one term from `+0.0` like every
/// cell of a product here (SystemDS keeps a `-0.0` product; the same bits otherwise).
fn outer_row(ai: f64, b: &[f64], out: &mut [f64]) {
    if ai == 0.0 {
        out.fill(0.0);
    } else {
        for (o, &bj) in out.iter_mut().zip(b) {
            *o = 0.0 + ai * bj;
        }
    }
}

/// Rows of A per parallel task of a kernel whose cells do not depend on the split: about
/// 64K multiply-adds each (`per_row` per row), at least one row.
fn row_task(per_row: usize) -> usize {
    ((1 << 16) / per_row.max(1)).max(1)
}

/// `f(t, chunk)` for the chunks of `len` values of `c`, numbered, in parallel when the
/// product's `work` (multiply-adds) is worth it.
fn row_chunks(c: &mut [f64], len: usize, work: usize, f: impl Fn(usize, &mut [f64]) + Sync + Send) {
    if work < 1 << 16 || c.len() <= len {
        c.chunks_mut(len).enumerate().for_each(|(t, o)| f(t, o));
    } else {
        c.par_chunks_mut(len).enumerate().for_each(|(t, o)| f(t, o));
    }
}

/// The partial results of `part` over `ranges` (in parallel), added into a zeroed vector of
/// `len` in the ranges' order, as SystemDS adds its threads' results (`vectAdd`).
fn partials_in_order(
    ranges: &[Range<usize>],
    len: usize,
    part: impl Fn(Range<usize>) -> Vec<f64> + Sync,
) -> Vec<f64> {
    if let [r] = ranges {
        return part(r.clone());
    }
    let parts: Vec<Vec<f64>> = ranges.par_iter().map(|r| part(r.clone())).collect();
    let mut c = crate::matrix::zeroed(len);
    for p in &parts {
        for (o, x) in c.iter_mut().zip(p) {
            *o += x;
        }
    }
    c
}

/// [`dot`] in the order of `vlen` lanes (SystemDS's `dotProduct`).
fn dot_lanes(a: &[f64], b: &[f64], vlen: usize) -> f64 {
    if vlen == java_vlen() {
        return dot(a, b);
    }
    let mut out = [0.0];
    dot_rows_lanes(vlen, a, a.len(), a.len(), b, 1, &mut out, 1);
    out[0]
}

/// `c += a_1 b_1 + ... + a_N b_N` over a row segment, in SystemDS's `vectMultiplyAddN` order:
/// the first `c.len() % vlen` columns as `c + (((a_1 b_1 + a_2 b_2) + ...)`, the others by
/// fused multiply-adds, `a_1` first.
#[inline(always)]
pub fn madd<const N: usize>(a: [f64; N], b: [&[f64]; N], c: &mut [f64], vlen: usize) {
    let len = c.len();
    let b: [&[f64]; N] = std::array::from_fn(|l| &b[l][..len]);
    let bn = len % vlen;
    let (head, body) = c.split_at_mut(bn);
    for (j, o) in head.iter_mut().enumerate() {
        let mut s = a[0] * b[0][j];
        for l in 1..N {
            s += a[l] * b[l][j];
        }
        *o += s;
    }
    for (j, o) in body.iter_mut().enumerate() {
        let mut x = *o;
        for l in 0..N {
            x = a[l].mul_add(b[l][bn + j], x);
        }
        *o = x;
    }
}

/// Rows of A per block of SystemDS's general kernel (`blocksizeI`).
const GENERAL_BI: usize = 32;
/// Columns of A (rows of B) per block of the general kernel (`blocksizeK`).
const GENERAL_BK: usize = 24;
/// Columns of B per block of the general and short-left kernels (`blocksizeJ`).
const BJ: usize = 1024;
/// Rows of B per block of the short-left kernel.
const SHORT_BK: usize = 48;

/// SystemDS's general kernel (`matrixMultDenseDenseMM`) on the rows of `a` (row-major, `cd`
/// columns) into `c` (their rows of the result, `n` columns), for B's columns `cols`: per block
/// of 24 columns of a row of A, its non-zeros, the first `count % 4` by one [`madd`], the rest
/// four at a time, over blocks of 1024 columns of B from `cols.start`.
#[inline(always)]
fn general(
    a: &[f64],
    b: &[f64],
    cd: usize,
    n: usize,
    cols: Range<usize>,
    vlen: usize,
    c: &mut [f64],
) {
    let m = c.len() / n;
    let mut ta = [0.0; GENERAL_BK];
    let mut tk = [0usize; GENERAL_BK];
    for bi in (0..m).step_by(GENERAL_BI) {
        let bimin = (bi + GENERAL_BI).min(m);
        for bk in (0..cd).step_by(GENERAL_BK) {
            let bkmin = (bk + GENERAL_BK).min(cd);
            for bj in cols.clone().step_by(BJ) {
                let bjmax = (bj + BJ).min(cols.end);
                for i in bi..bimin {
                    let ai = &a[i * cd + bk..i * cd + bkmin];
                    let mut knnz = 0;
                    for (k, &x) in ai.iter().enumerate() {
                        if x != 0.0 {
                            ta[knnz] = x;
                            tk[knnz] = bk + k;
                            knnz += 1;
                        }
                    }
                    let ci = &mut c[i * n + bj..i * n + bjmax];
                    let row = |q: usize| &b[tk[q] * n + bj..tk[q] * n + bjmax];
                    let h = knnz % 4;
                    match h {
                        1 => madd([ta[0]], [row(0)], ci, vlen),
                        2 => madd([ta[0], ta[1]], [row(0), row(1)], ci, vlen),
                        3 => madd([ta[0], ta[1], ta[2]], [row(0), row(1), row(2)], ci, vlen),
                        _ => {}
                    }
                    for q in (h..knnz).step_by(4) {
                        madd(
                            [ta[q], ta[q + 1], ta[q + 2], ta[q + 3]],
                            [row(q), row(q + 1), row(q + 2), row(q + 3)],
                            ci,
                            vlen,
                        );
                    }
                }
            }
        }
    }
}

/// SystemDS's short-left kernel (`matrixMultDenseDenseMMShortLHS`) for B's rows `r` into the
/// zeroed `m x n` partial `c`: the first `len(r) % 4` rows one at a time (skipping a zero of
/// A), then blocks of 48 rows of B, four at a time, over blocks of 1024 columns.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn short_lhs(
    a: &[f64],
    b: &[f64],
    m: usize,
    cd: usize,
    n: usize,
    r: Range<usize>,
    vlen: usize,
    c: &mut [f64],
) {
    let kn = r.len() % 4;
    for i in 0..m {
        let ci = &mut c[i * n..(i + 1) * n];
        for k in r.start..r.start + kn {
            let x = a[i * cd + k];
            if x != 0.0 {
                madd([x], [&b[k * n..(k + 1) * n]], ci, vlen);
            }
        }
    }
    for bk in (r.start + kn..r.end).step_by(SHORT_BK) {
        let bkmin = (bk + SHORT_BK).min(r.end);
        for bj in (0..n).step_by(BJ) {
            let bjmax = (bj + BJ).min(n);
            for i in 0..m {
                let ci = &mut c[i * n + bj..i * n + bjmax];
                for k in (bk..bkmin).step_by(4) {
                    let x = &a[i * cd + k..i * cd + k + 4];
                    let row = |q: usize| &b[(k + q) * n + bj..(k + q) * n + bjmax];
                    madd(
                        [x[0], x[1], x[2], x[3]],
                        [row(0), row(1), row(2), row(3)],
                        ci,
                        vlen,
                    );
                }
            }
        }
    }
}

/// `t(X) %*% R` for a dense row-major X (`m x n`) and an `m x k` matrix R given row by row
/// (`row(i, x_i, r_i)` writes row `i` of R, reading row `i` of X), as [`systemds_t_dense`]
/// runs it with R formed, but reading X once. SystemDS rewrites the product to
/// `t(t(R) %*% X)` and, `t(R)` being short, runs its short-left kernel: each thread's range of
/// X's rows in blocks of [`SHORT_BK`], four rows at a time ([`short_lhs`]). Here each block's
/// rows of R are computed just before the block is added in, from the rows of X it is about
/// to read (in the cache then), so neither R nor a second pass over X is needed; the sums are
/// [`short_lhs`]'s, in its order. The `n x k` result and whether every product was formed
/// (the first rows of a range skip R's zeros); `None` when SystemDS would run this product
/// another way (the caller forms R).
pub fn t_product_of_rows(
    x: &[f64],
    m: usize,
    n: usize,
    k: usize,
    row: impl Fn(usize, &[f64], &mut [f64]) + Sync,
) -> Option<(Dense, bool)> {
    assert_eq!(x.len(), m * n, "t_product_of_rows shape contract");
    let threads = systemds_threads();
    let (mf, nf, kf) = (m as f64, n as f64, k as f64);
    // systemds_t_dense's rewrite, then the short-left kernel for `t(R) %*% X`
    if m == 0 || n == 0 || k == 0 || nf * mf <= mf * kf + nf * kf {
        return None;
    }
    let Plan { kernel, split } = plan(k, m, n, threads);
    if kernel != Kernel::ShortLhs || !in_systemds_order(k, m, n, threads) {
        return None;
    }
    let whole = 0..m;
    let ranges: &[Range<usize>] = match &split {
        Split::RhsRows(r) => r,
        Split::Rows => std::slice::from_ref(&whole),
        Split::RhsCols(_) => return None,
    };
    let vlen = java_vlen();
    let part = |r: Range<usize>| {
        let mut c = crate::matrix::zeroed(k * n);
        wide(
            #[inline(always)]
            || short_lhs_rows(x, n, k, r, vlen, &row, &mut c),
        );
        c
    };
    let c = partials_in_order(ranges, k * n, part);
    let c = Array2::from_shape_vec((k, n), c).expect("k x n");
    Some((c.t().as_standard_layout().into_owned(), false))
}

/// [`short_lhs`] for `t(R) %*% X` over X's rows `r`, R's rows made by `row` block by block
/// ([`t_product_of_rows`]): the same multiply-adds into the same rows of `c` (`k x n`), in the
/// same order.
#[inline(always)]
fn short_lhs_rows(
    x: &[f64],
    n: usize,
    k: usize,
    r: Range<usize>,
    vlen: usize,
    row: &impl Fn(usize, &[f64], &mut [f64]),
    c: &mut [f64],
) {
    let xrow = |q: usize| &x[q * n..(q + 1) * n];
    let mut buf = vec![0.0; SHORT_BK * k];
    // the first `len % 4` rows one at a time, skipping R's zeros (each row of c sees the
    // rows of X in the same order as short_lhs's loop over c's rows outside)
    let kn = r.len() % 4;
    for q in r.start..r.start + kn {
        row(q, xrow(q), &mut buf[..k]);
        for i in 0..k {
            let t = buf[i];
            if t != 0.0 {
                madd([t], [xrow(q)], &mut c[i * n..(i + 1) * n], vlen);
            }
        }
    }
    for bk in (r.start + kn..r.end).step_by(SHORT_BK) {
        let bkmin = (bk + SHORT_BK).min(r.end);
        for q in bk..bkmin {
            row(q, xrow(q), &mut buf[(q - bk) * k..(q - bk + 1) * k]);
        }
        for bj in (0..n).step_by(BJ) {
            let bjmax = (bj + BJ).min(n);
            for i in 0..k {
                let ci = &mut c[i * n + bj..i * n + bjmax];
                for q in (bk..bkmin).step_by(4) {
                    let t = |d: usize| buf[(q + d - bk) * k + i];
                    let xs = |d: usize| &x[(q + d) * n + bj..(q + d) * n + bjmax];
                    madd(
                        [t(0), t(1), t(2), t(3)],
                        [xs(0), xs(1), xs(2), xs(3)],
                        ci,
                        vlen,
                    );
                }
            }
        }
    }
}

/// Multiply-adds above which a product whose SystemDS kernel is compute-bound (the general and
/// skinny-right kernels; the general one takes 1.1 to 2.4 times `dgemm`'s time here, `cargo
/// bench --bench kernels -- dense_order`) runs in BLAS's order instead: its last bits then
/// differ from SystemDS's.
pub const ORDER_WORK: usize = 1 << 27;

/// Columns of a skinny right side up to which SystemDS's skinny kernel (a dot product per
/// cell, over blocks of A's rows that stay in the cache) runs at any size: it reads A once and
/// does at most `n / 8` multiply-adds per byte of it, so it is bound by reading A, where
/// `dgemm` packs A for a right side narrower than its register block. 100000 rows, `cd = 500`
/// (`X %*% B` of MultiLogReg's iterations), 4 runs each: `n = 5` 33-46 ms against BLAS's 84-106,
/// `n = 8` 52 against 99, `n = 16` 86 against 120, `n = 30` 138 against 149, `n = 60` 564
/// against 161 (compute-bound, `cd = 1000` and `n = 20` too: 439 against 233).
pub const SKINNY_ORDER_COLS: usize = 16;

/// Whether [`systemds_dense`] runs SystemDS's kernel for an `m x cd` by `cd x n` product:
/// up to [`ORDER_WORK`] multiply-adds, for every kernel but the general one and the skinny
/// one past [`SKINNY_ORDER_COLS`] columns.
pub fn in_systemds_order(m: usize, cd: usize, n: usize, threads: usize) -> bool {
    let work = m as f64 * cd as f64 * n as f64;
    work <= ORDER_WORK as f64
        || match plan(m, cd, n, threads).kernel {
            Kernel::General => false,
            Kernel::SkinnyRhs => n <= SKINNY_ORDER_COLS,
            _ => true,
        }
}

/// `A %*% B` for dense A and B in SystemDS's order ([`product`] with [`systemds_threads`] and
/// [`java_vlen`]) where [`in_systemds_order`], else by [`dense_mul_dense`]; and whether every
/// product was formed (else [`super::matmul::ieee_zeros`] must follow).
pub fn systemds_dense(a: &Dense, b: &Dense) -> (Dense, bool) {
    systemds_dense_with(a, b, false)
}

/// [`systemds_dense`] for a B the caller knows to be finite ([`product_with`]).
pub fn systemds_dense_with(a: &Dense, b: &Dense, b_finite: bool) -> (Dense, bool) {
    let (m, cd) = a.dim();
    let n = b.ncols();
    assert_eq!(cd, b.nrows(), "matmul shape contract");
    let threads = systemds_threads();
    if m == 0 || n == 0 || !in_systemds_order(m, cd, n, threads) {
        return (dense_mul_dense(a, b), false);
    }
    let (a, b) = (a.as_standard_layout(), b.as_standard_layout());
    let (c, exact) = product_with(
        a.as_slice().expect("standard"),
        b.as_slice().expect("standard"),
        m,
        cd,
        n,
        threads,
        java_vlen(),
        b_finite,
    );
    (Array2::from_shape_vec((m, n), c).expect("m x n"), exact)
}

/// `t(A) %*% B` for dense A (`cd x m`) and B (`cd x n`) as SystemDS 3.4 runs it: where its
/// left-transpose rewrite applies (`m cd > cd n + m n`: A is bigger than B and the result
/// together) as `t(t(B) %*% A)`, else with `t(A)` formed, each product by [`systemds_dense`].
/// Products beyond [`in_systemds_order`] read A transposed in place ([`dense_t_mul_dense`]).
pub fn systemds_t_dense(a: &Dense, b: &Dense) -> (Dense, bool) {
    systemds_t_dense_with(a, b, false, false)
}

/// [`systemds_t_dense`] for an A and a B the caller may know to be finite: the right operand
/// of the product [`systemds_dense_with`] runs (A when rewritten to `t(t(B) %*% A)`, else B)
/// is read only where the vector on its left is not zero, when it is known finite.
pub fn systemds_t_dense_with(
    a: &Dense,
    b: &Dense,
    a_finite: bool,
    b_finite: bool,
) -> (Dense, bool) {
    let (cd, m) = a.dim();
    let n = b.ncols();
    assert_eq!(cd, b.nrows(), "tmatmul shape contract");
    let threads = systemds_threads();
    let (mf, cdf, nf) = (m as f64, cd as f64, n as f64);
    if m == 0 || n == 0 {
        return (Array2::zeros((m, n)), true);
    }
    if mf * cdf > cdf * nf + mf * nf {
        if !in_systemds_order(n, cd, m, threads) {
            return (dense_t_mul_dense(a, b), false);
        }
        let bt = b.t().as_standard_layout().into_owned();
        let (c, exact) = systemds_dense_with(&bt, a, a_finite);
        (c.t().as_standard_layout().into_owned(), exact)
    } else {
        if !in_systemds_order(m, cd, n, threads) {
            return (dense_t_mul_dense(a, b), false);
        }
        systemds_dense_with(&a.t().as_standard_layout().into_owned(), b, b_finite)
    }
}

/// One row of a dense product at a time, in [`systemds_dense`]'s order, for fused kernels that
/// use a row of `A %*% B` next to other work without forming the product: available where
/// SystemDS computes each row from that row of A alone (its general and skinny-right kernels
/// split over A's rows, its outer product) and [`in_systemds_order`].
pub struct RowProduct {
    /// B (`cd x n`) for the general kernel, `t(B)` (`n x cd`) for the skinny-right one
    b: Vec<f64>,
    kernel: Kernel,
    cd: usize,
    n: usize,
    vlen: usize,
}

impl RowProduct {
    /// The row kernel of an `m x cd` by `cd x n` product with B row-major in `b`, or `None`
    /// when [`systemds_dense`] runs it another way.
    pub fn new(b: &[f64], m: usize, cd: usize, n: usize) -> Option<RowProduct> {
        assert_eq!(b.len(), cd * n, "row product shape contract");
        let threads = systemds_threads();
        if m == 0 || cd == 0 || n == 0 || !in_systemds_order(m, cd, n, threads) {
            return None;
        }
        let plan = plan(m, cd, n, threads);
        // the outer product's cells are independent of any split
        let kernel = match (plan.kernel, plan.split) {
            (k @ (Kernel::General | Kernel::SkinnyRhs), Split::Rows) | (k @ Kernel::Outer, _) => k,
            _ => return None,
        };
        let b = if kernel == Kernel::SkinnyRhs {
            let mut bt = crate::matrix::zeroed(n * cd);
            for (k, bk) in b.chunks_exact(n).enumerate() {
                for (j, &x) in bk.iter().enumerate() {
                    bt[j * cd + k] = x;
                }
            }
            bt
        } else {
            b.to_vec()
        };
        let vlen = java_vlen();
        Some(RowProduct {
            b,
            kernel,
            cd,
            n,
            vlen,
        })
    }

    /// `out = a_i %*% B` for a row `a_i` of A: the bits of that row of [`systemds_dense`]'s
    /// result. The general kernel skips the zeros of `a_i` (no `0 * Inf`), as in the product.
    #[inline(always)]
    pub fn row(&self, ai: &[f64], out: &mut [f64]) {
        let (cd, n) = (self.cd, self.n);
        assert!(
            ai.len() == cd && out.len() == n,
            "row product shape contract"
        );
        match self.kernel {
            Kernel::SkinnyRhs => {
                for (j, o) in out.iter_mut().enumerate() {
                    *o = dot_lanes(ai, &self.b[j * cd..(j + 1) * cd], self.vlen);
                }
            }
            Kernel::Outer => outer_row(ai[0], &self.b, out),
            _ => {
                out.fill(0.0);
                general(ai, &self.b, cd, n, 0..n, self.vlen, out);
            }
        }
    }
}
