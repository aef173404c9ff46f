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
//!
//! `P = (H + 2*ph - R) / sh + 1` and `Q = (W + 2*pw - S) / sw + 1` (integer division), as
//! SystemDS's `DnnUtils.getP` / `getQ`.

use crate::error::{Result, RuntimeError};
use crate::matrix::Matrix;
use ndarray::Array2;

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

fn result(rows: usize, cols: usize, v: Vec<f64>) -> Matrix {
    Matrix::from_dense(Array2::from_shape_vec((rows, cols), v).expect("shape"))
}

/// `conv2d(X, F, ...)` (see the module documentation).
pub fn conv2d(x: &Matrix, f: &Matrix, g: &Geometry) -> Result<Matrix> {
    let (p_out, q_out) = g.output("conv2d")?;
    g.check_input("conv2d", x)?;
    let crs = g.c * g.r * g.s;
    if f.rows() != g.k || f.cols() != crs {
        return Err(RuntimeError::invalid(
            "conv2d",
            format!(
                "the filter is {}x{}, its filter_shape [{}, {}, {}, {}] needs {}x{}",
                f.rows(),
                f.cols(),
                g.k,
                g.c,
                g.r,
                g.s,
                g.k,
                crs
            ),
        ));
    }
    let xv = dense(x);
    let fv = dense(f);
    let (hw, chw) = (g.h * g.w, g.c * g.h * g.w);
    let kpq = g.k * p_out * q_out;
    let mut out = vec![0.0; g.n * kpq];
    for n in 0..g.n {
        let img = &xv[n * chw..(n + 1) * chw];
        for k in 0..g.k {
            let filt = &fv[k * crs..(k + 1) * crs];
            for p in 0..p_out {
                let (hl, hu) = Geometry::span(p, g.stride_h, g.pad_h, g.r, g.h);
                for q in 0..q_out {
                    let (wl, wu) = Geometry::span(q, g.stride_w, g.pad_w, g.s, g.w);
                    let mut acc = 0.0;
                    for c in 0..g.c {
                        for h in hl..hu {
                            let r = h + g.pad_h - p * g.stride_h;
                            for w in wl..wu {
                                let s = w + g.pad_w - q * g.stride_w;
                                acc +=
                                    filt[c * g.r * g.s + r * g.s + s] * img[c * hw + h * g.w + w];
                            }
                        }
                    }
                    out[n * kpq + k * p_out * q_out + p * q_out + q] = acc;
                }
            }
        }
    }
    Ok(result(g.n, kpq, out))
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
    let mut out = vec![0.0; g.n * cpq];
    for n in 0..g.n {
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
                    out[n * cpq + c * p_out * q_out + p * q_out + q] =
                        if max { acc } else { acc * scale };
                }
            }
        }
    }
    Ok(result(g.n, cpq, out))
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
