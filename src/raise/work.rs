//! The work of each kernel a plan runs, for the floor of `--stats`: the bytes it moves (its
//! operands read once and its result written once, in the runtime's storage) and the
//! floating-point operations it does. With the machine's read bandwidth and dense product
//! rate (`spores calibrate`, [`crate::extract::cost::Weights::read_byte`] and
//! [`crate::extract::cost::Weights::flop`]), `max(bytes / bandwidth, flops / rate)` is the
//! least time the machine allows for the plan as chosen: its floor.
//!
//! Storage: a dense matrix is `8 * rows * cols` bytes; a CSR matrix `12` bytes per stored entry
//! (an 8-byte value and a 4-byte column index, [`spores_runtime::matrix::CSR_ENTRY_BYTES`]) plus
//! `8` per row (the row pointers); scalars are free.
//!
//! Flops: a multiply-add is two. Products count the multiply-adds of their kernel (dense x
//! dense: `r * k * c`; a sparse side: its stored entries times the other side's width); the
//! fused operators their dot products of length `k` per stored entry of the driver (two for
//! the product forms, `mmchain` and `wdivmm`/`wsubmm`) plus one operation per entry for the
//! element-wise part; `wsloss` adds its two `k x k` Gram matrices. Any other operator does one
//! operation per stored entry of its result, or, for aggregates, of its operand; transposes and
//! fills do none.

use super::Val;
use crate::ir::Ir;
use spores_runtime::Matrix;
use std::ops::AddAssign;

/// Bytes moved and floating-point operations of one or more kernel calls.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Work {
    /// bytes read and written
    pub bytes: f64,
    /// floating-point operations
    pub flops: f64,
}

impl AddAssign for Work {
    fn add_assign(&mut self, o: Work) {
        self.bytes += o.bytes;
        self.flops += o.flops;
    }
}

impl Work {
    /// The least time in nanoseconds the machine allows for this work: reading the bytes at
    /// `read_byte` ns per byte, or doing the flops at `flop` ns per flop, whichever is longer.
    pub fn floor_ns(&self, read_byte: f64, flop: f64) -> f64 {
        (self.bytes * read_byte).max(self.flops * flop)
    }
}

/// The CPU time of the whole process so far (every thread: a kernel's CPU time is the
/// difference around it, which on a shared machine does not count the time other processes
/// had the cores); wall time from a process-wide epoch where the platform has no such clock.
pub fn cpu_now() -> std::time::Duration {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes the timespec it is given and nothing else
        if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } == 0 {
            return std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
        }
    }
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    EPOCH.get_or_init(std::time::Instant::now).elapsed()
}

/// The bytes of a matrix in the runtime's storage (see the module documentation).
pub fn matrix_bytes(m: &Matrix) -> f64 {
    match m {
        Matrix::Dense(d) => 8.0 * d.len() as f64,
        Matrix::Sparse(s) => {
            use spores_runtime::matrix::{CSR_ENTRY_BYTES, CSR_ROW_BYTES};
            (CSR_ENTRY_BYTES * s.nnz() + CSR_ROW_BYTES * (s.rows() + 1)) as f64
        }
    }
}

/// The bytes of a value in the runtime's storage (scalars are free).
pub fn value_bytes(v: &Val) -> f64 {
    match v {
        Val::Scalar(_) => 0.0,
        Val::Matrix(m) => matrix_bytes(m),
    }
}

/// Stored entries: cells of a dense matrix, non-zeros of a sparse one, 1 for a scalar.
pub fn stored(v: &Val) -> f64 {
    match v {
        Val::Scalar(_) => 1.0,
        Val::Matrix(m) => match &**m {
            Matrix::Dense(d) => d.len() as f64,
            Matrix::Sparse(s) => s.nnz() as f64,
        },
    }
}

pub(crate) fn shape(v: &Val) -> (f64, f64) {
    match v {
        Val::Scalar(_) => (1.0, 1.0),
        Val::Matrix(m) => (m.rows() as f64, m.cols() as f64),
    }
}

fn sparse(v: &Val) -> bool {
    matches!(v, Val::Matrix(m) if m.is_sparse())
}

/// The multiply-adds of `op(A) %*% B`, `op(A)` being `t(A)` when `transposed`.
fn product_fmas(a: &Val, b: &Val, transposed: bool) -> f64 {
    let (ar, ac) = shape(a);
    let (r, k) = if transposed { (ac, ar) } else { (ar, ac) };
    let c = shape(b).1;
    match (sparse(a), sparse(b)) {
        (false, false) => r * k * c,
        (true, false) => stored(a) * c,
        (false, true) => r * stored(b),
        (true, true) => stored(a) * stored(b) / k.max(1.0),
    }
}

/// The work of running `node` on `operands` (its children's values, in order; `None` for a
/// child that is not formed, such as the `X != 0` weights a fused operator reads from X) into
/// `out`. For a product whose left operand is a transpose that is not formed, `operands[0]`
/// is the matrix being transposed and `transposed` is set.
pub fn work(node: &Ir, operands: &[Option<&Val>], out: &Val, transposed: bool) -> Work {
    // each operand is read once, even when it appears twice (`X * X`)
    let mut read = 0.0;
    for (i, o) in operands.iter().enumerate() {
        let Some(o) = o else { continue };
        let seen = operands[..i].iter().flatten().any(|p| same(p, o));
        if !seen {
            read += value_bytes(o);
        }
    }
    let bytes = read + value_bytes(out);
    let arg = |i: usize| operands.get(i).copied().flatten();
    let nnz = |i: usize| arg(i).map_or(0.0, stored);
    let width = |i: usize| arg(i).map_or(0.0, |v| shape(v).1);
    // the driver of a weighted operator: its weights, or X when they are X's own pattern
    let driver = || arg(0).map_or(nnz(1), stored);
    let flops = match node {
        Ir::MMul([..]) | Ir::TMMul([..]) => match (arg(0), arg(1)) {
            (Some(a), Some(b)) => {
                2.0 * product_fmas(a, b, transposed || matches!(node, Ir::TMMul(_)))
            }
            _ => 0.0,
        },
        Ir::Sddmm(_) => nnz(0) * (2.0 * width(1) + 1.0),
        Ir::WsLoss(_) => {
            let (k, rows) = (width(1), shape_rows(arg(1)) + shape_rows(arg(2)));
            2.0 * (nnz(0) * k + rows * k * k + k * k) + 3.0 * nnz(0)
        }
        Ir::WsLossW(_) => driver() * (2.0 * width(2) + 3.0),
        Ir::Wcemm(_) => nnz(0) * (2.0 * width(1) + 2.0),
        Ir::WDivMM(_) | Ir::WDivMMT(_) => nnz(0) * (4.0 * width(1) + 1.0),
        Ir::WSubMM(_) | Ir::WSubMMT(_) => driver() * (4.0 * width(2) + 1.0),
        Ir::MMChain(_) => 4.0 * nnz(0) * width(2) + shape_rows(arg(0)),
        Ir::MMChainR(_) => 4.0 * nnz(0) + shape_rows(arg(0)),
        Ir::SMMChain(_) => 4.0 * nnz(0) * width(2) + 5.0 * shape_rows(arg(0)) * width(2),
        Ir::Trans(_) | Ir::Fill(_) | Ir::Num(_) | Ir::Symbol(_) => 0.0,
        Ir::MSum(_) | Ir::RowSums(_) | Ir::ColSums(_) => nnz(0),
        _ => stored(out),
    };
    Work { bytes, flops }
}

/// The work that products absorbed by another kernel add to it: their operands read once
/// (an operand shared by two products once) and their multiply-adds; their results are never
/// stored.
pub fn products(pairs: &[(&Val, &Val)]) -> Work {
    let mut seen: Vec<&Val> = Vec::new();
    let mut w = Work::default();
    for &(a, b) in pairs {
        for o in [a, b] {
            if !seen.iter().any(|p| same(p, o)) {
                w.bytes += value_bytes(o);
                seen.push(o);
            }
        }
        w.flops += 2.0 * product_fmas(a, b, false);
    }
    w
}

fn shape_rows(v: Option<&Val>) -> f64 {
    v.map_or(0.0, |v| shape(v).0)
}

fn same(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Matrix(x), Val::Matrix(y)) => std::sync::Arc::ptr_eq(x, y),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use egg::Id;
    use std::sync::Arc;

    fn m(x: Matrix) -> Val {
        Val::Matrix(Arc::new(x))
    }

    fn dense(r: usize, c: usize) -> Val {
        m(Matrix::filled(r, c, 1.5))
    }

    /// The bytes of [`sparse3`]: 3 entries of 12 bytes, 7 row pointers of 8.
    const S3: f64 = 3.0 * 12.0 + 7.0 * 8.0;

    /// a 6 x 5 CSR matrix with 3 entries
    fn sparse3() -> Val {
        m(Matrix::from_triplets(
            6,
            5,
            &[(0, 1, 1.0), (2, 4, 2.0), (5, 0, 3.0)],
        ))
    }

    fn i0() -> Id {
        Id::from(0)
    }

    #[test]
    fn storage_bytes_by_hand() {
        assert_eq!(value_bytes(&dense(6, 5)), 240.0);
        let s = sparse3();
        assert!(sparse(&s));
        // 3 entries x (8 value + 4 index) + 7 row pointers x 8
        assert_eq!(value_bytes(&s), S3);
        assert_eq!(S3, 36.0 + 56.0);
        assert_eq!(value_bytes(&Val::Scalar(2.0)), 0.0);
    }

    #[test]
    fn products_by_hand() {
        let (a, b) = (dense(6, 5), dense(5, 2));
        let out = dense(6, 2);
        let w = work(&Ir::MMul([i0(), i0()]), &[Some(&a), Some(&b)], &out, false);
        assert_eq!(w.flops, 2.0 * 6.0 * 5.0 * 2.0);
        assert_eq!(w.bytes, 240.0 + 80.0 + 96.0);
        // sparse left: 3 entries, each a row of b (2 wide)
        let x = sparse3();
        let w = work(&Ir::MMul([i0(), i0()]), &[Some(&x), Some(&b)], &out, false);
        assert_eq!(w.flops, 2.0 * 3.0 * 2.0);
        assert_eq!(w.bytes, S3 + 80.0 + 96.0);
        // t(x) %*% c with x 6 x 5 sparse and c 6 x 2: 3 entries scatter a row of c each
        let c = dense(6, 2);
        let out = dense(5, 2);
        let w = work(&Ir::MMul([i0(), i0()]), &[Some(&x), Some(&c)], &out, true);
        assert_eq!(w.flops, 12.0);
        let w2 = work(&Ir::TMMul([i0(), i0()]), &[Some(&x), Some(&c)], &out, false);
        assert_eq!(w, w2);
        // dense t(a) %*% c: 5 x 6 times 6 x 2
        let w = work(&Ir::TMMul([i0(), i0()]), &[Some(&a), Some(&c)], &out, false);
        assert_eq!(w.flops, 2.0 * 5.0 * 6.0 * 2.0);
    }

    #[test]
    fn fused_operators_by_hand() {
        let x = sparse3();
        let (u, v) = (dense(6, 4), dense(5, 4));
        // sddmm: per entry a dot of length 4 (8 flops) and a multiply
        let w = work(
            &Ir::Sddmm([i0(), i0(), i0()]),
            &[Some(&x), Some(&u), Some(&v)],
            &x,
            false,
        );
        assert_eq!(w.flops, 3.0 * 9.0);
        // x read once (it is also the output here: written once more)
        assert_eq!(w.bytes, S3 + 192.0 + 160.0 + S3);
        let s = Val::Scalar(0.0);
        let w = work(
            &Ir::Wcemm([i0(), i0(), i0(), i0()]),
            &[Some(&x), Some(&u), Some(&v), Some(&s)],
            &s,
            false,
        );
        assert_eq!(w.flops, 3.0 * 10.0);
        assert_eq!(w.bytes, S3 + 192.0 + 160.0);
        // wsloss: 3 dots of 4, Gram matrices of u (6 rows) and v (5 rows) and their product
        let w = work(
            &Ir::WsLoss([i0(), i0(), i0()]),
            &[Some(&x), Some(&u), Some(&v)],
            &s,
            false,
        );
        assert_eq!(w.flops, 2.0 * (12.0 + 11.0 * 16.0 + 16.0) + 9.0);
        // weights absorbed: x drives
        let out = dense(6, 4);
        let w = work(
            &Ir::WSubMM([i0(), i0(), i0(), i0()]),
            &[None, Some(&x), Some(&u), Some(&v)],
            &out,
            false,
        );
        assert_eq!(w.flops, 3.0 * 17.0);
        assert_eq!(w.bytes, S3 + 192.0 + 160.0 + 192.0);
        // mmchain t(x) %*% (w * (x %*% v)): v 5 x 1, w 6 x 1
        let (wt, v1, out) = (dense(6, 1), dense(5, 1), dense(5, 1));
        let w = work(
            &Ir::MMChain([i0(), i0(), i0()]),
            &[Some(&x), Some(&wt), Some(&v1)],
            &out,
            false,
        );
        assert_eq!(w.flops, 4.0 * 3.0 + 6.0);
    }

    #[test]
    fn element_wise_and_aggregates_by_hand() {
        let (a, x) = (dense(6, 5), sparse3());
        let w = work(&Ir::EMul([i0(), i0()]), &[Some(&x), Some(&a)], &x, false);
        assert_eq!(w.flops, 3.0);
        assert_eq!(w.bytes, S3 + 240.0 + S3);
        // the same operand twice is read once
        let w = work(&Ir::EMul([i0(), i0()]), &[Some(&a), Some(&a)], &a, false);
        assert_eq!(w.bytes, 480.0);
        assert_eq!(w.flops, 30.0);
        let s = Val::Scalar(1.0);
        let w = work(&Ir::MSum(i0()), &[Some(&a)], &s, false);
        assert_eq!((w.bytes, w.flops), (240.0, 30.0));
        let w = work(&Ir::Trans(i0()), &[Some(&a)], &dense(5, 6), false);
        assert_eq!((w.bytes, w.flops), (480.0, 0.0));
    }

    /// The steps of evaluating `expr` (last node the root) with X, U, V bound.
    fn steps(expr: &egg::RecExpr<Ir>, vars: &[(&str, Val)]) -> Vec<crate::raise::Step> {
        let vars = vars
            .iter()
            .map(|(n, v)| (egg::Symbol::from(*n), v.clone()))
            .collect();
        let root = Id::from(expr.as_ref().len() - 1);
        let mut out = Vec::new();
        crate::raise::eval_roots_traced(
            expr,
            &[root],
            &vars,
            Some(&mut |s: &crate::raise::Step| out.push(s.clone())),
        )
        .expect("evaluates");
        out
    }

    #[test]
    fn a_traced_term_adds_up_by_hand() {
        // sum(X * (U %*% t(V))) as written, X 6 x 5 with 3 entries, U 6 x 4, V 5 x 4
        let mut e = egg::RecExpr::default();
        let x = e.add(Ir::Symbol("X".into()));
        let u = e.add(Ir::Symbol("U".into()));
        let v = e.add(Ir::Symbol("V".into()));
        let tv = e.add(Ir::Trans(v));
        let p = e.add(Ir::MMul([u, tv]));
        let xp = e.add(Ir::EMul([x, p]));
        e.add(Ir::MSum(xp));
        let vars = [("X", sparse3()), ("U", dense(6, 4)), ("V", dense(5, 4))];
        let s = steps(&e, &vars);
        let got: Vec<(&str, f64, f64)> = s
            .iter()
            .map(|s| (s.op, s.work.bytes, s.work.flops))
            .collect();
        assert_eq!(
            got,
            [
                // the transpose is formed: V read, t(V) written
                ("t", 320.0, 0.0),
                // 6 x 4 times 4 x 5, dense
                ("%*%", 192.0 + 160.0 + 240.0, 240.0),
                // the product has X's 3 entries and is stored sparse, as SystemDS examines
                // an element-wise result (exam_sparse): X and the dense product read, X's
                // pattern written, a multiply per entry
                ("*", S3 + 240.0 + S3, 3.0),
                ("sum", S3, 3.0),
            ]
        );
        // t(X) %*% U: the transpose is not formed, X's 3 entries each scatter a row of U
        let mut e = egg::RecExpr::default();
        let x = e.add(Ir::Symbol("X".into()));
        let u = e.add(Ir::Symbol("U".into()));
        let tx = e.add(Ir::Trans(x));
        e.add(Ir::MMul([tx, u]));
        let s = steps(&e, &vars);
        assert_eq!(s.len(), 1);
        assert_eq!(
            (s[0].work.bytes, s[0].work.flops),
            (S3 + 192.0 + 160.0, 24.0)
        );
    }

    #[test]
    fn a_sum_of_a_sampled_product_forms_no_product() {
        // sum(sddmm(X, U, V)): one kernel call, X, U and V read, nothing written
        let mut e = egg::RecExpr::default();
        let x = e.add(Ir::Symbol("X".into()));
        let u = e.add(Ir::Symbol("U".into()));
        let v = e.add(Ir::Symbol("V".into()));
        let p = e.add(Ir::Sddmm([x, u, v]));
        e.add(Ir::MSum(p));
        let vars = [("X", sparse3()), ("U", dense(6, 4)), ("V", dense(5, 4))];
        let s = steps(&e, &vars);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].op, "sum(sddmm)");
        assert_eq!(s[0].work.bytes, S3 + 192.0 + 160.0);
        assert_eq!(s[0].work.flops, 3.0 * 9.0 + 3.0);
        // the value: 3 entries of X times a dot product of 4 cells of 1.5 * 1.5
        let vars_map = vars
            .iter()
            .map(|(n, v)| (egg::Symbol::from(*n), v.clone()))
            .collect();
        let Ok(Val::Scalar(got)) = crate::raise::eval(&e, &vars_map) else {
            panic!("a scalar")
        };
        assert_eq!(got, (1.0 + 2.0 + 3.0) * 4.0 * 2.25);
    }

    #[test]
    fn a_subtraction_of_products_forms_neither() {
        // U %*% S - X %*% V (ALS's gradient): one kernel call, the formed computation's bits
        use spores_runtime::kernels::{self, Operand, RandSpec};
        use spores_runtime::ops::BinOp;
        let r = |rows, cols, sparsity, seed| {
            kernels::rand_matrix(&RandSpec {
                rows,
                cols,
                min: -2.0,
                max: 3.0,
                sparsity,
                seed,
            })
        };
        let mut e = egg::RecExpr::default();
        let x = e.add(Ir::Symbol("X".into()));
        let u = e.add(Ir::Symbol("U".into()));
        let sy = e.add(Ir::Symbol("S".into()));
        let v = e.add(Ir::Symbol("V".into()));
        let us = e.add(Ir::MMul([u, sy]));
        let xv = e.add(Ir::MMul([x, v]));
        e.add(Ir::ESub([us, xv]));
        let (xm, sm, vm) = (r(40, 30, 0.2, 1), r(6, 6, 1.0, 3), r(30, 6, 1.0, 4));
        assert!(xm.is_sparse());
        for poison in [None, Some(f64::INFINITY), Some(f64::NAN)] {
            let mut ud = r(40, 6, 1.0, 2).to_dense();
            if let Some(p) = poison {
                ud[[7, 3]] = p;
            }
            let um = Matrix::Dense(ud);
            let vars = [
                ("X", Val::Matrix(Arc::new(xm.clone()))),
                ("U", Val::Matrix(Arc::new(um.clone()))),
                ("S", Val::Matrix(Arc::new(sm.clone()))),
                ("V", Val::Matrix(Arc::new(vm.clone()))),
            ];
            let s = steps(&e, &vars);
            assert_eq!(s.len(), 1, "{poison:?}: neither product is a step");
            assert_eq!(s[0].op, "%*% - %*%");
            let nnz = xm.nnz() as f64;
            let xb = 12.0 * nnz + 8.0 * 41.0;
            assert_eq!(
                s[0].work.bytes,
                8.0 * (240.0 + 36.0 + 180.0) + xb + 8.0 * 240.0
            );
            assert_eq!(s[0].work.flops, 2.0 * 40.0 * 36.0 + 2.0 * nnz * 6.0 + 240.0);
            let vars_map = vars
                .iter()
                .map(|(n, v)| (egg::Symbol::from(*n), v.clone()))
                .collect();
            let Ok(Val::Matrix(got)) = crate::raise::eval(&e, &vars_map) else {
                panic!("a matrix")
            };
            let (p, q) = (kernels::matmul(&um, &sm), kernels::matmul(&xm, &vm));
            let want = kernels::binary(BinOp::Sub, Operand::Matrix(&p), Operand::Matrix(&q));
            assert_eq!(got.is_sparse(), want.is_sparse());
            let bits = |m: &Matrix| -> Vec<u64> {
                // every NaN alike (IEEE leaves a NaN result's payload and sign open)
                m.to_dense()
                    .iter()
                    .map(|z| if z.is_nan() { 1 } else { z.to_bits() })
                    .collect()
            };
            assert_eq!(bits(&got), bits(&want), "{poison:?}: the formed bits");
            assert_eq!(
                got.to_dense().iter().any(|z| !z.is_finite()),
                poison.is_some()
            );
        }
    }

    #[test]
    fn floor_is_the_slower_of_memory_and_arithmetic() {
        let w = Work {
            bytes: 1000.0,
            flops: 10.0,
        };
        assert_eq!(w.floor_ns(0.1, 1.0), 100.0);
        assert_eq!(w.floor_ns(0.001, 1.0), 10.0);
    }
}
