//! SystemDS's deep-learning builtins on images stored one per row, channels first (NCHW):
//! row `n` of an `N x (C*H*W)` input holds image `n`, cell `c*H*W + h*W + w`.
//!
//! * `conv2d(X, F)`: for a `K x (C*R*S)` filter, the `N x (K*P*Q)` result
//!   `out[n, k*P*Q + p*Q + q] = sum over c, r, s of F[k, c*R*S + r*S + s] *
//!   X[n, c*H*W + (p*sh - ph + r)*W + (q*sw - pw + s)]`, cells outside the image (the
//!   zero padding) contributing nothing.
//! * `max_pool(X)` / `avg_pool(X)`: per channel, the maximum of the window's cells inside the
//!   image (the padding is not a candidate; SystemDS's `LibMatrixDNNPooling` starts from
//!   `-Double.MAX_VALUE`), or their sum divided by `R*S` (the padding counts in the divisor).
//!   An input without non-zeros gives zeros, as SystemDS short-cuts it.
//! * `bias_add(X, b)` / `bias_multiply(X, b)`: for a `C x 1` column `b`, each channel's block
//!   of `ncol(X) / C` columns plus (times) `b[c]`.
//! * `conv2d_backward_filter(X, dout)`: the `K x (C*R*S)` gradient of `conv2d` with respect to
//!   its filter, `dF[k, c*R*S + r*S + s] = sum over n, p, q of dout[n, k*P*Q + p*Q + q] *
//!   X[n, c*H*W + (p*sh - ph + r)*W + (q*sw - pw + s)]` (cells in the padding contribute
//!   nothing).
//! * `conv2d_backward_data(F, dout)`: the `N x (C*H*W)` gradient with respect to the image:
//!   every `dout[n, k*P*Q + p*Q + q]` times the filter `F[k, ..]`, added onto the image cells
//!   its window covers.
//! * `max_pool_backward(X, dout)`: each `dout` cell added onto the image cell that was its
//!   window's maximum: the first (row-major) cell of the window, inside the image, holding
//!   the largest value (the padding is never a candidate, NaN never wins, a window of only
//!   `-Inf`/NaN passes nothing on). Where windows overlap (stride below the pool size), a
//!   cell that is the maximum of several windows gets their gradients added when `X` and
//!   `dout` are both stored sparse, else only one of them, as SystemDS's kernel for a dense
//!   `X` appends them to a sparse row without merging and the last non-zero one appended
//!   stays (see `pool_backward`). With both stored sparse, an image without non-zeros
//!   passes nothing on, as in SystemDS's sparse kernel.
//! * `avg_pool_backward(X, dout)`: each `dout` cell times `1/(R*S)` added onto every image
//!   cell of its window (`X` is not read, as in SystemDS).
//! * `batch_norm2d` / `batch_norm2d_backward` (images `N x (K*P*Q)`, `K` channels) and
//!   `lstm` / `lstm_backward` (sequences `N x (T*D)`): see [`batch_norm2d`],
//!   [`batch_norm2d_backward`], [`lstm`] and [`lstm_backward`].
//!
//! The convolution products are zero when either operand has no non-zeros, the pooling
//! gradients when `dout` has none (or, for the maximum, `X`), as SystemDS short-cuts them
//! (so `NaN` in the other operand does not show). Images are independent: the kernels run
//! in parallel over images (over filters for `conv2d_backward_filter`, over sequences for
//! `lstm`), each output row written by one task, so results do not depend on the number of
//! threads.
//!
//! `P = (H + 2*ph - R) / sh + 1` and `Q = (W + 2*pw - S) / sw + 1` (integer division), as
//! SystemDS's `DnnUtils.getP` / `getQ`.

use crate::error::{Result, RuntimeError};
use crate::matrix::Matrix;
use ndarray::Array2;
use rayon::prelude::*;

/// The geometry of a convolution or pooling: images `n x c x h x w`, filters `k x c x r x s`
/// (for pooling `k` is unused and `r x s` is the pool size), strides and paddings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// number of images (rows of the input)
    pub n: usize,
    /// channels
    pub c: usize,
    /// image height
    pub h: usize,
    /// image width
    pub w: usize,
    /// number of filters (conv2d)
    pub k: usize,
    /// filter (pool) height
    pub r: usize,
    /// filter (pool) width
    pub s: usize,
    /// vertical stride
    pub stride_h: usize,
    /// horizontal stride
    pub stride_w: usize,
    /// vertical padding
    pub pad_h: usize,
    /// horizontal padding
    pub pad_w: usize,
}

impl Geometry {
    /// The output height and width `(P, Q)`, or an error for sizes SystemDS rejects.
    pub fn output(&self, op: &'static str) -> Result<(usize, usize)> {
        let bad = self.h == 0
            || self.w == 0
            || self.r == 0
            || self.s == 0
            || self.stride_h == 0
            || self.stride_w == 0
            || self.h + 2 * self.pad_h < self.r
            || self.w + 2 * self.pad_w < self.s;
        if bad {
            return Err(RuntimeError::invalid(
                op,
                format!(
                    "incorrect parameters: height={} width={} filter {}x{} stride {}x{} padding {}x{}",
                    self.h, self.w, self.r, self.s, self.stride_h, self.stride_w, self.pad_h, self.pad_w
                ),
            ));
        }
        Ok((
            (self.h + 2 * self.pad_h - self.r) / self.stride_h + 1,
            (self.w + 2 * self.pad_w - self.s) / self.stride_w + 1,
        ))
    }

    fn check_input(&self, op: &'static str, x: &Matrix) -> Result<()> {
        if x.rows() != self.n || x.cols() != self.c * self.h * self.w {
            return Err(RuntimeError::invalid(
                op,
                format!(
                    "the input is {}x{}, its input_shape [{}, {}, {}, {}] needs {}x{}",
                    x.rows(),
                    x.cols(),
                    self.n,
                    self.c,
                    self.h,
                    self.w,
                    self.n,
                    self.c * self.h * self.w
                ),
            ));
        }
        Ok(())
    }

    /// Checks that the filter is `K x (C*R*S)`.
    fn check_filter(&self, op: &'static str, f: &Matrix) -> Result<()> {
        let crs = self.c * self.r * self.s;
        if f.rows() != self.k || f.cols() != crs {
            return Err(RuntimeError::invalid(
                op,
                format!(
                    "the filter is {}x{}, its filter_shape [{}, {}, {}, {}] needs {}x{}",
                    f.rows(),
                    f.cols(),
                    self.k,
                    self.c,
                    self.r,
                    self.s,
                    self.k,
                    crs
                ),
            ));
        }
        Ok(())
    }

    /// Checks that `dout` is `N x (channels*P*Q)` (channels: `K` after a convolution, `C`
    /// after a pooling).
    fn check_dout(&self, op: &'static str, dout: &Matrix, channels: usize) -> Result<()> {
        let (p, q) = self.output(op)?;
        if dout.rows() != self.n || dout.cols() != channels * p * q {
            return Err(RuntimeError::invalid(
                op,
                format!(
                    "dout is {}x{}, the geometry needs {}x{} ({} channels of {}x{})",
                    dout.rows(),
                    dout.cols(),
                    self.n,
                    channels * p * q,
                    channels,
                    p,
                    q
                ),
            ));
        }
        Ok(())
    }

    /// The taps of the convolution window at output position `(p, q)`, channel by channel,
    /// row by row: `f(i, j)` with `i` the input cell's offset in an image (`c*H*W + h*W + w`)
    /// and `j` the filter cell's offset in a filter (`c*R*S + r*S + s`); padding has no taps.
    #[inline(always)]
    fn taps(&self, p: usize, q: usize, mut f: impl FnMut(usize, usize)) {
        let (hl, hu) = Self::span(p, self.stride_h, self.pad_h, self.r, self.h);
        let (wl, wu) = Self::span(q, self.stride_w, self.pad_w, self.s, self.w);
        let (hw, rs) = (self.h * self.w, self.r * self.s);
        for c in 0..self.c {
            for h in hl..hu {
                let r = h + self.pad_h - p * self.stride_h;
                for w in wl..wu {
                    let s = w + self.pad_w - q * self.stride_w;
                    f(c * hw + h * self.w + w, c * rs + r * self.s + s);
                }
            }
        }
    }

    /// The image rows (columns) a window at output position `p` covers: `[lo, hi)`.
    fn span(p: usize, stride: usize, pad: usize, size: usize, len: usize) -> (usize, usize) {
        let start = (p * stride) as isize - pad as isize;
        let lo = start.max(0) as usize;
        let hi = ((start + size as isize).max(0) as usize).min(len);
        (lo, hi.max(lo))
    }
}

fn dense(x: &Matrix) -> Vec<f64> {
    x.to_dense().iter().copied().collect()
}

/// A `rows x len` row-major buffer whose row `i` is written by `f(i, row)`, the rows in
/// parallel (each by one task, so the result does not depend on the threads).
fn per_row(rows: usize, len: usize, f: impl Fn(usize, &mut [f64]) + Sync + Send) -> Vec<f64> {
    let mut out = vec![0.0; rows * len];
    if len > 0 {
        out.par_chunks_mut(len)
            .enumerate()
            .for_each(|(i, row)| f(i, row));
    }
    out
}

fn result(rows: usize, cols: usize, v: Vec<f64>) -> Matrix {
    Matrix::from_dense(Array2::from_shape_vec((rows, cols), v).expect("shape"))
}

/// `conv2d(X, F, ...)` (see the module documentation).
pub fn conv2d(x: &Matrix, f: &Matrix, g: &Geometry) -> Result<Matrix> {
    let (p_out, q_out) = g.output("conv2d")?;
    g.check_input("conv2d", x)?;
    g.check_filter("conv2d", f)?;
    let kpq = g.k * p_out * q_out;
    if x.nnz() == 0 || f.nnz() == 0 {
        return Ok(Matrix::filled(g.n, kpq, 0.0));
    }
    let xv = dense(x);
    let fv = dense(f);
    let (chw, crs) = (g.c * g.h * g.w, g.c * g.r * g.s);
    // the outputs `q` whose windows lie inside the image's width: [q_lo, q_hi)
    let q_lo = g.pad_w.div_ceil(g.stride_w).min(q_out);
    let q_hi = if g.w + g.pad_w >= g.s {
        ((g.w + g.pad_w - g.s) / g.stride_w + 1).clamp(q_lo, q_out)
    } else {
        q_lo
    };
    let out = per_row(g.n, kpq, |n, out| {
        let img = &xv[n * chw..(n + 1) * chw];
        for k in 0..g.k {
            let filt = &fv[k * crs..(k + 1) * crs];
            for p in 0..p_out {
                let row = &mut out[k * p_out * q_out + p * q_out..][..q_out];
                let mut q = 0;
                while q < q_out {
                    if q >= q_lo && q + CONV_BLOCK <= q_hi {
                        conv_block(g, img, filt, p, q, &mut row[q..q + CONV_BLOCK]);
                        q += CONV_BLOCK;
                    } else {
                        let mut acc = 0.0;
                        g.taps(p, q, |i, j| acc += filt[j] * img[i]);
                        row[q] = acc;
                        q += 1;
                    }
                }
            }
        }
    });
    Ok(result(g.n, kpq, out))
}

/// The outputs [`conv2d`] computes together where their windows lie inside the image's
/// width ([`conv_block`]).
const CONV_BLOCK: usize = 8;

/// `CONV_BLOCK` outputs `q0..q0 + CONV_BLOCK` of row `p` of one image and filter, each window
/// inside the image's width: each output adds its taps in the order of [`Geometry::taps`]
/// (so the same bits as one output at a time), the outputs' sums independent of each other
/// (so the processor overlaps them).
#[inline(always)]
fn conv_block(g: &Geometry, img: &[f64], filt: &[f64], p: usize, q0: usize, out: &mut [f64]) {
    let (hl, hu) = Geometry::span(p, g.stride_h, g.pad_h, g.r, g.h);
    let (hw, rs) = (g.h * g.w, g.r * g.s);
    let left = q0 * g.stride_w - g.pad_w;
    let mut acc = [0.0; CONV_BLOCK];
    for c in 0..g.c {
        for h in hl..hu {
            let r = h + g.pad_h - p * g.stride_h;
            let frow = &filt[c * rs + r * g.s..][..g.s];
            let irow = &img[c * hw + h * g.w + left..];
            if g.stride_w == 1 {
                // the block's cells of one tap are consecutive: one vector of them
                for (s, &fv) in frow.iter().enumerate() {
                    let cells = &irow[s..s + CONV_BLOCK];
                    for (a, &x) in acc.iter_mut().zip(cells) {
                        *a += fv * x;
                    }
                }
            } else {
                let span = (CONV_BLOCK - 1) * g.stride_w + g.s;
                let irow = &irow[..span];
                for (s, &fv) in frow.iter().enumerate() {
                    for (t, a) in acc.iter_mut().enumerate() {
                        *a += fv * irow[t * g.stride_w + s];
                    }
                }
            }
        }
    }
    out.copy_from_slice(&acc);
}

/// `conv2d_backward_filter(X, dout, ...)`: the `K x (C*R*S)` gradient of the filter (see the
/// module documentation).
pub fn conv2d_backward_filter(x: &Matrix, dout: &Matrix, g: &Geometry) -> Result<Matrix> {
    const OP: &str = "conv2d_backward_filter";
    let (p_out, q_out) = g.output(OP)?;
    g.check_input(OP, x)?;
    g.check_dout(OP, dout, g.k)?;
    let (chw, crs) = (g.c * g.h * g.w, g.c * g.r * g.s);
    let (pq, kpq) = (p_out * q_out, g.k * p_out * q_out);
    if x.nnz() == 0 || dout.nnz() == 0 {
        return Ok(Matrix::filled(g.k, crs, 0.0));
    }
    let xv = dense(x);
    let dv = dense(dout);
    // one task per filter: its row sums over every image in order
    let out = per_row(g.k, crs, |k, out| {
        for n in 0..g.n {
            let img = &xv[n * chw..(n + 1) * chw];
            let d = &dv[n * kpq + k * pq..n * kpq + (k + 1) * pq];
            for p in 0..p_out {
                for q in 0..q_out {
                    let dpq = d[p * q_out + q];
                    g.taps(p, q, |i, j| out[j] += dpq * img[i]);
                }
            }
        }
    });
    Ok(result(g.k, crs, out))
}

/// `conv2d_backward_data(F, dout, ...)`: the `N x (C*H*W)` gradient of the images (see the
/// module documentation).
pub fn conv2d_backward_data(f: &Matrix, dout: &Matrix, g: &Geometry) -> Result<Matrix> {
    const OP: &str = "conv2d_backward_data";
    let (p_out, q_out) = g.output(OP)?;
    g.check_filter(OP, f)?;
    g.check_dout(OP, dout, g.k)?;
    let (chw, crs) = (g.c * g.h * g.w, g.c * g.r * g.s);
    let (pq, kpq) = (p_out * q_out, g.k * p_out * q_out);
    if f.nnz() == 0 || dout.nnz() == 0 {
        return Ok(Matrix::filled(g.n, chw, 0.0));
    }
    let fv = dense(f);
    let dv = dense(dout);
    let out = per_row(g.n, chw, |n, out| {
        for k in 0..g.k {
            let filt = &fv[k * crs..(k + 1) * crs];
            let d = &dv[n * kpq + k * pq..n * kpq + (k + 1) * pq];
            for p in 0..p_out {
                for q in 0..q_out {
                    let dpq = d[p * q_out + q];
                    g.taps(p, q, |i, j| out[i] += filt[j] * dpq);
                }
            }
        }
    });
    Ok(result(g.n, chw, out))
}

/// `max_pool(X, ...)` (`max` true) or `avg_pool(X, ...)` (see the module documentation).
pub fn pool(x: &Matrix, g: &Geometry, max: bool) -> Result<Matrix> {
    let op = if max { "max_pool" } else { "avg_pool" };
    let (p_out, q_out) = g.output(op)?;
    g.check_input(op, x)?;
    let cpq = g.c * p_out * q_out;
    if x.nnz() == 0 {
        return Ok(Matrix::filled(g.n, cpq, 0.0));
    }
    let xv = dense(x);
    let (hw, chw) = (g.h * g.w, g.c * g.h * g.w);
    let scale = 1.0 / (g.r * g.s) as f64;
    let out = per_row(g.n, cpq, |n, out| {
        for c in 0..g.c {
            let chan = &xv[n * chw + c * hw..n * chw + (c + 1) * hw];
            for p in 0..p_out {
                let (hl, hu) = Geometry::span(p, g.stride_h, g.pad_h, g.r, g.h);
                for q in 0..q_out {
                    let (wl, wu) = Geometry::span(q, g.stride_w, g.pad_w, g.s, g.w);
                    let mut acc = if max { -f64::MAX } else { 0.0 };
                    for h in hl..hu {
                        for &v in &chan[h * g.w + wl..h * g.w + wu] {
                            if max {
                                acc = acc.max(v);
                            } else {
                                acc += v;
                            }
                        }
                    }
                    out[c * p_out * q_out + p * q_out + q] = if max { acc } else { acc * scale };
                }
            }
        }
    });
    Ok(result(g.n, cpq, out))
}

/// Sorts a group of (cell, gradient) pairs by cell as SystemDS's `LibMatrixDNNPooling.sort`
/// does (its sorting networks up to 7 pairs, which move pairs with equal cells; an insertion
/// sort above), so that equal cells end in SystemDS's order.
fn sort_like_systemds(pairs: &mut [(usize, f64)]) {
    const NETWORKS: [&[(usize, usize)]; 8] = [
        &[],
        &[],
        &[(0, 1)],
        &[(0, 2), (0, 1), (1, 2)],
        &[(0, 2), (1, 3), (0, 1), (2, 3), (1, 2)],
        &[
            (0, 1),
            (2, 3),
            (1, 3),
            (2, 4),
            (1, 4),
            (0, 2),
            (1, 2),
            (3, 4),
            (2, 3),
        ],
        &[
            (0, 1),
            (2, 3),
            (4, 5),
            (1, 3),
            (0, 4),
            (1, 3),
            (1, 5),
            (2, 4),
            (1, 2),
            (3, 5),
            (3, 4),
            (2, 3),
        ],
        &[
            (0, 1),
            (2, 3),
            (4, 5),
            (0, 6),
            (2, 4),
            (0, 2),
            (1, 3),
            (5, 6),
            (1, 4),
            (2, 5),
            (1, 2),
            (4, 5),
            (2, 4),
            (3, 6),
            (3, 5),
            (3, 4),
        ],
    ];
    match NETWORKS.get(pairs.len()) {
        Some(net) => {
            for &(a, b) in *net {
                if pairs[a].0 > pairs[b].0 {
                    pairs.swap(a, b);
                }
            }
        }
        // insertion sort, stable
        None => pairs.sort_by_key(|&(i, _)| i),
    }
}

/// The cell (`h*W + w`) of the first largest value of a window of a channel, if any value
/// beats `-Inf` (NaN never does).
fn window_max(
    chan: &[f64],
    width: usize,
    (hl, hu): (usize, usize),
    (wl, wu): (usize, usize),
) -> Option<usize> {
    let mut best = f64::NEG_INFINITY;
    let mut at = None;
    for h in hl..hu {
        for (w, &v) in chan[h * width + wl..h * width + wu].iter().enumerate() {
            if best < v {
                best = v;
                at = Some(h * width + wl + w);
            }
        }
    }
    at
}

/// `max_pool_backward(X, dout, ...)` (`max` true) or `avg_pool_backward(X, dout, ...)`: the
/// `N x (C*H*W)` gradient of the images (see the module documentation).
pub fn pool_backward(x: &Matrix, dout: &Matrix, g: &Geometry, max: bool) -> Result<Matrix> {
    let op = if max {
        "max_pool_backward"
    } else {
        "avg_pool_backward"
    };
    let (p_out, q_out) = g.output(op)?;
    if max {
        g.check_input(op, x)?;
    }
    g.check_dout(op, dout, g.c)?;
    let (hw, chw, pq) = (g.h * g.w, g.c * g.h * g.w, p_out * q_out);
    if dout.nnz() == 0 || (max && x.nnz() == 0) {
        return Ok(Matrix::filled(g.n, chw, 0.0));
    }
    let xv = if max { dense(x) } else { Vec::new() };
    let dv = dense(dout);
    // SystemDS's kernels for max pooling: with both operands sparse, one that adds the
    // gradients and skips an image without non-zeros; else one that sorts each group of
    // (cell, gradient) pairs (a row of windows of a channel; with a sparse dout, a run of
    // its non-zeros in one row of windows) by cell and appends them to a sparse row without
    // merging, so where windows overlap the last non-zero gradient for a cell stays
    let both_sparse = x.is_sparse() && dout.is_sparse();
    let dout_sparse = dout.is_sparse();
    let skip = |n: usize| match x {
        Matrix::Sparse(xs) if max && both_sparse => {
            xs.outer_view(n).is_none_or(|row| row.nnz() == 0)
        }
        _ => false,
    };
    let scale = 1.0 / (g.r * g.s) as f64;
    let out = per_row(g.n, chw, |n, out| {
        if skip(n) {
            return;
        }
        let mut group: Vec<(usize, f64)> = Vec::with_capacity(if max { q_out } else { 0 });
        let mut key = (0, 0);
        let flush = |group: &mut Vec<(usize, f64)>, out: &mut [f64]| {
            sort_like_systemds(group);
            for &(i, v) in group.iter() {
                if v != 0.0 {
                    out[i] = v;
                }
            }
            group.clear();
        };
        for c in 0..g.c {
            let d = &dv[n * g.c * pq + c * pq..n * g.c * pq + (c + 1) * pq];
            for p in 0..p_out {
                let (hl, hu) = Geometry::span(p, g.stride_h, g.pad_h, g.r, g.h);
                for q in 0..q_out {
                    let (wl, wu) = Geometry::span(q, g.stride_w, g.pad_w, g.s, g.w);
                    let dpq = d[p * q_out + q];
                    if !max {
                        let v = scale * dpq;
                        for h in hl..hu {
                            let at = c * hw + h * g.w;
                            for cell in &mut out[at + wl..at + wu] {
                                *cell += v;
                            }
                        }
                        continue;
                    }
                    if dout_sparse && dpq == 0.0 {
                        continue;
                    }
                    let chan = &xv[n * chw + c * hw..n * chw + (c + 1) * hw];
                    let Some(i) = window_max(chan, g.w, (hl, hu), (wl, wu)) else {
                        continue;
                    };
                    if both_sparse {
                        out[c * hw + i] += dpq;
                        continue;
                    }
                    let k = if dout_sparse { (0, p) } else { (c, p) };
                    if k != key {
                        flush(&mut group, out);
                        key = k;
                    }
                    group.push((c * hw + i, dpq));
                }
            }
        }
        flush(&mut group, out);
    });
    Ok(result(g.n, chw, out))
}

/// `bias_add(X, b)` (`add` true) or `bias_multiply(X, b)` (see the module documentation).
pub fn bias(x: &Matrix, b: &Matrix, add: bool) -> Result<Matrix> {
    let op = if add { "bias_add" } else { "bias_multiply" };
    let c = b.rows();
    if b.cols() != 1 || c == 0 || !x.cols().is_multiple_of(c) {
        return Err(RuntimeError::invalid(
            op,
            format!(
                "the bias must be a column whose length divides the input's {} columns, found {}x{}",
                x.cols(),
                b.rows(),
                b.cols()
            ),
        ));
    }
    let block = x.cols() / c;
    let bv = dense(b);
    let mut v = dense(x);
    for row in v.chunks_mut(x.cols().max(1)) {
        for (j, cell) in row.iter_mut().enumerate() {
            let bj = bv[j / block];
            if add {
                *cell += bj;
            } else {
                *cell *= bj;
            }
        }
    }
    Ok(result(x.rows(), x.cols(), v))
}

/// The `K` values of a `K x 1` column argument of batch normalization.
fn channel_column(op: &'static str, what: &str, m: &Matrix, k: usize) -> Result<Vec<f64>> {
    if m.rows() != k || m.cols() != 1 {
        return Err(RuntimeError::invalid(
            op,
            format!(
                "{what} must be a {k}x1 column (one value per channel), found {}x{}",
                m.rows(),
                m.cols()
            ),
        ));
    }
    Ok(dense(m))
}

/// The number of channels `K` (the rows of `per_channel`) and the cells per channel `P*Q` of
/// an `N x (K*P*Q)` input.
fn channels(op: &'static str, x: &Matrix, per_channel: &Matrix) -> Result<(usize, usize)> {
    let k = per_channel.rows();
    if k == 0 || !x.cols().is_multiple_of(k) {
        return Err(RuntimeError::invalid(
            op,
            format!(
                "the input's {} columns are not a multiple of the {k} channels",
                x.cols()
            ),
        ));
    }
    Ok((k, x.cols() / k))
}

/// `[out, ema_mean_upd, ema_var_upd, cache_mean, cache_inv_var] = batch_norm2d(X, gamma,
/// beta, ema_mean, ema_var, mode, epsilon, mu)` as SystemDS's `LibMatrixDNN.batchNorm2D`
/// computes it, for `X` of `N x (K*P*Q)` and `K x 1` columns (`K` the rows of `beta`):
///
/// * `mode = "train"`: per channel, `mean = sum / (N*P*Q)` and `var = sumsq / (N*P*Q) -
///   mean^2` (plain sums in row-major order), `cache_inv_var = 1 / sqrt(var + epsilon)`,
///   `ema_mean_upd = mu*ema_mean + (1-mu)*mean` and `ema_var_upd = mu*ema_var + (1-mu)*mean`
///   (SystemDS 3.4 updates the variance's average with the mean; kept for its results);
/// * `mode = "test"`: `cache_mean = ema_mean`, `cache_inv_var = 1 / sqrt(ema_var + epsilon)`,
///   the averages unchanged;
///
/// then `out = (X - cache_mean) * cache_inv_var * gamma + beta` per channel (zeros times
/// `gamma` when `gamma` has no non-zeros, as SystemDS skips the product). Any other mode is
/// an error.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm2d(
    x: &Matrix,
    gamma: &Matrix,
    beta: &Matrix,
    ema_mean: &Matrix,
    ema_var: &Matrix,
    mode: &str,
    eps: f64,
    mu: f64,
) -> Result<[Matrix; 5]> {
    const OP: &str = "batch_norm2d";
    let (k, pq) = channels(OP, x, beta)?;
    let gamma_zero = gamma.nnz() == 0;
    let gv = channel_column(OP, "gamma", gamma, k)?;
    let bv = channel_column(OP, "beta", beta, k)?;
    let em = channel_column(OP, "ema_mean", ema_mean, k)?;
    let ev = channel_column(OP, "ema_var", ema_var, k)?;
    let xv = dense(x);
    let n = x.rows();
    let (mean, inv_var, em_upd, ev_upd) = if mode.eq_ignore_ascii_case("train") {
        let (mut sum, mut sumsq) = (vec![0.0; k], vec![0.0; k]);
        for row in xv.chunks(k * pq) {
            for (c, chan) in row.chunks(pq).enumerate() {
                for &v in chan {
                    sum[c] += v;
                    sumsq[c] += v * v;
                }
            }
        }
        let npq = (n * pq) as f64;
        let mean: Vec<f64> = sum.iter().map(|s| s / npq).collect();
        let inv: Vec<f64> = (0..k)
            .map(|c| 1.0 / (sumsq[c] / npq - mean[c] * mean[c] + eps).sqrt())
            .collect();
        let em_upd = (0..k).map(|c| mu * em[c] + (1.0 - mu) * mean[c]).collect();
        let ev_upd = (0..k).map(|c| mu * ev[c] + (1.0 - mu) * mean[c]).collect();
        (mean, inv, em_upd, ev_upd)
    } else if mode.eq_ignore_ascii_case("test") {
        let inv = ev.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
        (em.clone(), inv, em.clone(), ev.clone())
    } else {
        return Err(RuntimeError::invalid(
            OP,
            format!("incorrect mode: expected either train or test, but found {mode}"),
        ));
    };
    let mut out = xv;
    for row in out.chunks_mut(k * pq) {
        for (c, chan) in row.chunks_mut(pq).enumerate() {
            for v in chan {
                let scaled = if gamma_zero {
                    0.0
                } else {
                    (*v - mean[c]) * inv_var[c] * gv[c]
                };
                *v = scaled + bv[c];
            }
        }
    }
    let col = |v: Vec<f64>| result(k, 1, v);
    Ok([
        result(n, k * pq, out),
        col(em_upd),
        col(ev_upd),
        col(mean),
        col(inv_var),
    ])
}

/// `[dX, dgamma, dbeta] = batch_norm2d_backward(X, dout, gamma, epsilon, cache_mean,
/// cache_inv_var)` as SystemDS's `LibMatrixDNN.batchNorm2DBackward` computes it (`K` the
/// rows of `gamma`; `epsilon` is not used, the inverse deviations are cached), per channel
/// with `m = N*P*Q`, `xc = X - mean`, `dn = dout * gamma`:
/// `dbeta = sum(dout)`, `dgamma = sum(xc * inv_var * dout)`,
/// `dvar = -sum(0.5 * xc * inv_var^3 * dn)`, `dmean = -sum(dn * inv_var) + dvar * -sum(2/m * xc)`,
/// `dX = dn * inv_var + dmean / m + 2/m * xc * dvar` (sums in row-major order).
pub fn batch_norm2d_backward(
    x: &Matrix,
    dout: &Matrix,
    gamma: &Matrix,
    mean: &Matrix,
    inv_var: &Matrix,
) -> Result<[Matrix; 3]> {
    const OP: &str = "batch_norm2d_backward";
    let (k, pq) = channels(OP, x, gamma)?;
    if dout.rows() != x.rows() || dout.cols() != x.cols() {
        return Err(RuntimeError::invalid(
            OP,
            format!(
                "dout is {}x{}, the input {}x{}",
                dout.rows(),
                dout.cols(),
                x.rows(),
                x.cols()
            ),
        ));
    }
    let gv = channel_column(OP, "gamma", gamma, k)?;
    let mv = channel_column(OP, "cache_mean", mean, k)?;
    let iv = channel_column(OP, "cache_inv_var", inv_var, k)?;
    let xv = dense(x);
    let dv = dense(dout);
    let n = x.rows();
    let kpq = k * pq;
    let c1 = 1.0 / (n * pq) as f64;
    let (mut dx, mut dgamma, mut dbeta) = (vec![0.0; n * kpq], vec![0.0; k], vec![0.0; k]);
    for c in 0..k {
        let (mut dvar, mut dmean_norm, mut dmean_var, mut sum_dout, mut sum) =
            (0.0, 0.0, 0.0, 0.0, 0.0);
        let iv3 = iv[c].powf(3.0);
        for i in 0..n {
            let at = i * kpq + c * pq;
            for (&xi, &d) in xv[at..at + pq].iter().zip(&dv[at..at + pq]) {
                let centered = xi - mv[c];
                let dnorm = d * gv[c];
                dvar -= 0.5 * centered * iv3 * dnorm;
                dmean_norm -= dnorm * iv[c];
                sum += centered * iv[c] * d;
                sum_dout += d;
                dmean_var -= 2.0 * c1 * centered;
            }
        }
        dbeta[c] = sum_dout;
        dgamma[c] = sum;
        let dx_mean = c1 * (dmean_norm + dmean_var * dvar);
        for i in 0..n {
            let at = i * kpq + c * pq;
            for j in at..at + pq {
                let centered = xv[j] - mv[c];
                let dnorm = dv[j] * gv[c];
                dx[j] = dnorm * iv[c] + dx_mean + 2.0 * c1 * centered * dvar;
            }
        }
    }
    Ok([
        result(n, kpq, dx),
        result(k, 1, dgamma),
        result(k, 1, dbeta),
    ])
}

/// The sizes of an LSTM call: batch `N`, time steps `T`, features `D`, hidden units `M`.
#[derive(Clone, Copy)]
struct Lstm {
    n: usize,
    t: usize,
    d: usize,
    m: usize,
}

fn check_shape(op: &'static str, what: &str, a: &Matrix, rows: usize, cols: usize) -> Result<()> {
    if a.rows() != rows || a.cols() != cols {
        return Err(RuntimeError::invalid(
            op,
            format!(
                "{what} must be {rows}x{cols}, found {}x{}",
                a.rows(),
                a.cols()
            ),
        ));
    }
    Ok(())
}

/// The sizes from `X` (`N x (T*D)`), `W` (`(D+M) x 4M`), `b` (`1 x 4M`), `out0` and `c0`
/// (`N x M`), checked as SystemDS checks them.
fn lstm_dims(
    op: &'static str,
    x: &Matrix,
    w: &Matrix,
    b: &Matrix,
    out0: &Matrix,
    c0: &Matrix,
) -> Result<Lstm> {
    let (n, m) = (out0.rows(), out0.cols());
    check_shape(op, "c0", c0, n, m)?;
    if w.rows() <= m || w.cols() != 4 * m {
        return Err(RuntimeError::invalid(
            op,
            format!(
                "W must be (D+M)x(4M) for M = {m} hidden units (the columns of out0), found {}x{}",
                w.rows(),
                w.cols()
            ),
        ));
    }
    check_shape(op, "the bias", b, 1, 4 * m)?;
    let d = w.rows() - m;
    if x.rows() != n || x.cols() == 0 || !x.cols().is_multiple_of(d) {
        return Err(RuntimeError::invalid(
            op,
            format!(
                "X must be {n}x(T*{d}) (N rows of T steps of D = nrow(W) - M features), found {}x{}",
                x.rows(),
                x.cols()
            ),
        ));
    }
    Ok(Lstm {
        n,
        t: x.cols() / d,
        d,
        m,
    })
}

/// SystemDS's LSTM gate: `1 / (FastMath.exp(-v) + 1)`.
fn sigmoid(v: f64) -> f64 {
    1.0 / (crate::kernels::fastmath::exp(-v) + 1.0)
}

/// `[out, c, cache_out, cache_c, cache_ifog] = lstm(X, W, b, out0, c0, return_sequences)`
/// as SystemDS's `LibMatrixDNNLSTM` computes it: per time step `t`, the gates
/// `ifog = b + cbind(X_t, out_prev) %*% W` (added in that order), `i, f, o = sigmoid(..)`,
/// `g = tanh(..)`, `c = f*c_prev + i*g`, `out_t = o * tanh(c)`. `out` is `N x (T*M)` (every
/// step) with `return_sequences`, else `N x M` (the last); `c` the last cell state;
/// `cache_out` and `cache_c` are `T x (N*M)` and `cache_ifog` `T x (N*4M)`, row `t` holding
/// step `t` of each sequence in turn (the gates after their activations). The sequences run
/// in parallel.
pub fn lstm(
    x: &Matrix,
    w: &Matrix,
    b: &Matrix,
    out0: &Matrix,
    c0: &Matrix,
    return_sequences: bool,
) -> Result<[Matrix; 5]> {
    let z = lstm_dims("lstm", x, w, b, out0, c0)?;
    let Lstm { n, t, d, m } = z;
    let (xv, wv, bv, hv, cv) = (dense(x), dense(w), dense(b), dense(out0), dense(c0));
    let m4 = 4 * m;
    // per sequence: its outputs, cell states and gates at every step
    let per_seq: Vec<(Vec<f64>, Vec<f64>, Vec<f64>)> = (0..n)
        .into_par_iter()
        .map(|i| {
            let (mut outs, mut cells, mut gates) =
                (vec![0.0; t * m], vec![0.0; t * m], vec![0.0; t * m4]);
            let mut h = hv[i * m..(i + 1) * m].to_vec();
            let mut c = cv[i * m..(i + 1) * m].to_vec();
            let mut ifog = vec![0.0; m4];
            for step in 0..t {
                ifog.copy_from_slice(&bv);
                let xs = &xv[i * t * d + step * d..i * t * d + (step + 1) * d];
                for (j, &a) in xs.iter().chain(h.iter()).enumerate() {
                    for (g, &wjk) in ifog.iter_mut().zip(&wv[j * m4..(j + 1) * m4]) {
                        *g += a * wjk;
                    }
                }
                for j in 0..m {
                    let ig = sigmoid(ifog[j]);
                    let fg = sigmoid(ifog[m + j]);
                    let og = sigmoid(ifog[2 * m + j]);
                    let gg = crate::kernels::fastmath::tanh(ifog[3 * m + j]);
                    c[j] = c[j] * fg + ig * gg;
                    h[j] = crate::kernels::fastmath::tanh(c[j]) * og;
                    outs[step * m + j] = h[j];
                    cells[step * m + j] = c[j];
                    let at = step * m4;
                    gates[at + j] = ig;
                    gates[at + m + j] = fg;
                    gates[at + 2 * m + j] = og;
                    gates[at + 3 * m + j] = gg;
                }
            }
            (outs, cells, gates)
        })
        .collect();
    let out_cols = if return_sequences { t * m } else { m };
    let (mut out, mut c_last) = (vec![0.0; n * out_cols], vec![0.0; n * m]);
    let (mut cache_out, mut cache_c) = (vec![0.0; t * n * m], vec![0.0; t * n * m]);
    let mut cache_ifog = vec![0.0; t * n * m4];
    for (i, (outs, cells, gates)) in per_seq.iter().enumerate() {
        if return_sequences {
            out[i * t * m..(i + 1) * t * m].copy_from_slice(outs);
        } else {
            out[i * m..(i + 1) * m].copy_from_slice(&outs[(t - 1) * m..]);
        }
        c_last[i * m..(i + 1) * m].copy_from_slice(&cells[(t - 1) * m..]);
        for step in 0..t {
            let at = step * n * m + i * m;
            cache_out[at..at + m].copy_from_slice(&outs[step * m..(step + 1) * m]);
            cache_c[at..at + m].copy_from_slice(&cells[step * m..(step + 1) * m]);
            let at = step * n * m4 + i * m4;
            cache_ifog[at..at + m4].copy_from_slice(&gates[step * m4..(step + 1) * m4]);
        }
    }
    Ok([
        result(n, out_cols, out),
        result(n, m, c_last),
        result(t, n * m, cache_out),
        result(t, n * m, cache_c),
        result(t, n * m4, cache_ifog),
    ])
}

/// `[dX, dW, db, dout0, dc0] = lstm_backward(X, W, b, out0, c0, return_sequences, dout, dc,
/// cache_out, cache_c, cache_ifog)` as SystemDS's `LibMatrixDNNLSTM.lstmBackwardGeneric`
/// computes it, from the last step to the first: with `dh` the gradient of the step's
/// output (`dout`'s step plus the previous `dh` with `return_sequences`, else `dout` at the
/// last step) and `dc` the cell's, `dc += o * (1 - tanh(c)^2) * dh`, the gates' raw
/// gradients `i*(1-i) * g*dc`, `f*(1-f) * c_prev*dc`, `o*(1-o) * tanh(c)*dh`,
/// `(1-g^2) * i*dc`, then `dW += t(cbind(X_t, out_prev)) %*% difog`, `db += colSums(difog)`
/// (the step's product and sums formed first), `cbind(dX_t, dh) = difog %*% t(W)` and
/// `dc = f * dc`; `dout0` and `dc0` are `dh` and `dc` after the first step.
#[allow(clippy::too_many_arguments)]
pub fn lstm_backward(
    x: &Matrix,
    w: &Matrix,
    b: &Matrix,
    out0: &Matrix,
    c0: &Matrix,
    return_sequences: bool,
    dout: &Matrix,
    dc: &Matrix,
    cache_out: &Matrix,
    cache_c: &Matrix,
    cache_ifog: &Matrix,
) -> Result<[Matrix; 5]> {
    const OP: &str = "lstm_backward";
    let z = lstm_dims(OP, x, w, b, out0, c0)?;
    let Lstm { n, t, d, m } = z;
    let (m4, dm, nm) = (4 * m, d + m, n * m);
    let dout_cols = if return_sequences { t * m } else { m };
    check_shape(OP, "dout", dout, n, dout_cols)?;
    check_shape(OP, "dc", dc, n, m)?;
    check_shape(OP, "cache_out", cache_out, t, nm)?;
    check_shape(OP, "cache_c", cache_c, t, nm)?;
    check_shape(OP, "cache_ifog", cache_ifog, t, n * m4)?;
    let (xv, wv, hv, c0v) = (dense(x), dense(w), dense(out0), dense(c0));
    let (dv, co, cc, ci) = (
        dense(dout),
        dense(cache_out),
        dense(cache_c),
        dense(cache_ifog),
    );
    let mut dcur = dense(dc);
    let mut dh = if return_sequences {
        vec![0.0; nm]
    } else {
        dv.clone()
    };
    let (mut dx, mut dw, mut db) = (vec![0.0; n * t * d], vec![0.0; dm * m4], vec![0.0; m4]);
    let (mut difog, mut step_w, mut step_b) =
        (vec![0.0; n * m4], vec![0.0; dm * m4], vec![0.0; m4]);
    let mut comp = vec![0.0; m4];
    for step in (0..t).rev() {
        if return_sequences {
            for i in 0..n {
                for j in 0..m {
                    let g = dv[i * t * m + step * m + j];
                    dh[i * m + j] = if step == t - 1 { g } else { g + dh[i * m + j] };
                }
            }
        }
        for i in 0..n {
            for j in 0..m {
                let ct = cc[step * nm + i * m + j];
                let c_prev = if step == 0 {
                    c0v[i * m + j]
                } else {
                    cc[(step - 1) * nm + i * m + j]
                };
                let at = step * n * m4 + i * m4;
                let (ig, fg, og, gg) = (
                    ci[at + j],
                    ci[at + m + j],
                    ci[at + 2 * m + j],
                    ci[at + 3 * m + j],
                );
                let tf = crate::kernels::fastmath::tanh(ct);
                let dhij = dh[i * m + j];
                let dct = dcur[i * m + j] + og * ((1.0 - tf * tf) * dhij);
                dcur[i * m + j] = dct;
                let row = &mut difog[i * m4..(i + 1) * m4];
                row[j] = ig * (1.0 - ig) * (gg * dct);
                row[m + j] = fg * (1.0 - fg) * (c_prev * dct);
                row[2 * m + j] = og * (1.0 - og) * (tf * dhij);
                row[3 * m + j] = (1.0 - gg * gg) * (ig * dct);
            }
        }
        // the step's t(input) %*% difog and colSums(difog) (compensated), then added
        step_w.fill(0.0);
        step_b.fill(0.0);
        comp.fill(0.0);
        for i in 0..n {
            let grow = &difog[i * m4..(i + 1) * m4];
            let xs = &xv[i * t * d + step * d..i * t * d + (step + 1) * d];
            let hs = if step == 0 {
                &hv[i * m..(i + 1) * m]
            } else {
                &co[(step - 1) * nm + i * m..(step - 1) * nm + (i + 1) * m]
            };
            for (j, &a) in xs.iter().chain(hs).enumerate() {
                for (s, &g) in step_w[j * m4..(j + 1) * m4].iter_mut().zip(grow) {
                    *s += a * g;
                }
            }
            for k in 0..m4 {
                // Kahan, as SystemDS's colSums
                let y = grow[k] - comp[k];
                let s = step_b[k] + y;
                comp[k] = (s - step_b[k]) - y;
                step_b[k] = s;
            }
        }
        let last = step == t - 1;
        for (a, s) in dw.iter_mut().zip(&step_w) {
            *a = if last { *s } else { *a + s };
        }
        for (a, s) in db.iter_mut().zip(&step_b) {
            *a = if last { *s } else { *a + s };
        }
        // difog %*% t(W): the step's dX and the previous step's dh; then dc = f * dc
        for i in 0..n {
            let grow = &difog[i * m4..(i + 1) * m4];
            for j in 0..dm {
                let v: f64 = grow
                    .iter()
                    .zip(&wv[j * m4..(j + 1) * m4])
                    .fold(0.0, |acc, (g, wjk)| acc + g * wjk);
                if j < d {
                    dx[i * t * d + step * d + j] = v;
                } else {
                    dh[i * m + j - d] = v;
                }
            }
            for j in 0..m {
                dcur[i * m + j] *= ci[step * n * m4 + i * m4 + m + j];
            }
        }
    }
    Ok([
        result(n, t * d, dx),
        result(dm, m4, dw),
        result(1, m4, db),
        result(n, m, dh),
        result(n, m, dcur),
    ])
}
