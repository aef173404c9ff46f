//! Kernel benchmarks: which kernel, against which reference.
//!
//! * `gemm`: dense x dense through spores's dispatcher (`dense_mul_dense`: its own kernel for
//!   small inner dimensions, else BLAS) and a bare `cblas_dgemm` call (`blas_dgemm`);
//!   throughput in flops (criterion's elements/s = GFLOP/s x 1e9).
//! * `dense_order`: dense products in SystemDS's order of additions (`matmul`) against BLAS's
//!   order (`dense_mul_dense`), per SystemDS kernel (the price of SystemDS's bits).
//! * `csr_x_dense`: spores's CSR x dense row loop against sprs's generic product.
//! * `sparse_elementwise`: sparse-driven element-wise ops and sparse-sparse union.
//! * `matvec`: the iterative solvers' products on a tall X (dense 100000x500 as in L2-SVM,
//!   CSR 200000x1000 at 10% as in MultiLogReg): `X %*% v`, `t(X) %*% y` and the fused
//!   `t(X) %*% (w * (X %*% v))`; throughput in bytes of X read once (criterion's elements/s =
//!   GB/s x 1e9, to hold against `spores calibrate`'s read bandwidth).
//! * `sampled`: the sampled and chained kernels at the peer kernels' shapes.
//! * `sampled_products`: ALS-CG's sampled products at rank 40.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use spores_runtime::kernels::{self, Operand, RandSpec};
use spores_runtime::matrix::{Csr, Dense};
use spores_runtime::ops::{BinOp, UnaryOp};
use spores_runtime::Matrix;
use std::hint::black_box;
// links spores's allocator (jemalloc with huge pages), as the CLI runs with it
use spores as _;

fn rand(rows: usize, cols: usize, sparsity: f64, seed: u64) -> Matrix {
    kernels::rand_matrix(&RandSpec {
        rows,
        cols,
        min: 0.0,
        max: 1.0,
        sparsity,
        seed,
    })
}

fn dense(rows: usize, cols: usize, seed: u64) -> Dense {
    rand(rows, cols, 1.0, seed).into_dense()
}

fn csr(rows: usize, cols: usize, sparsity: f64, seed: u64) -> Csr {
    rand(rows, cols, sparsity, seed).to_csr()
}

fn gemm(c: &mut Criterion) {
    let mut g = c.benchmark_group("gemm");
    g.sample_size(10);
    for &(m, k, n) in &[
        (512, 512, 512),
        (1024, 1024, 1024),
        (8000, 10, 3000),
        (3000, 8000, 10),
    ] {
        let (a, b) = (dense(m, k, 1), dense(k, n, 2));
        let id = format!("{m}x{k}x{n}");
        g.throughput(Throughput::Elements(2 * (m * k * n) as u64));
        g.bench_with_input(BenchmarkId::new("spores", &id), &(), |bch, _| {
            bch.iter(|| black_box(kernels::dense_mul_dense(&a, &b)))
        });
        #[cfg(feature = "blas")]
        g.bench_with_input(BenchmarkId::new("cblas_dgemm", &id), &(), |bch, _| {
            bch.iter(|| black_box(spores_runtime::kernels::matmul::blas_dgemm(&a, &b)))
        });
    }
    g.finish();
}

/// Dense products in SystemDS's order (`kernels::matmul`, `dense_product`: the general,
/// short-left and skinny-right kernels up to `ORDER_WORK` multiply-adds) against the order of
/// BLAS (`dense_mul_dense`), on shapes of each kernel.
fn dense_order(c: &mut Criterion) {
    let mut g = c.benchmark_group("dense_order");
    g.sample_size(10);
    for &(m, k, n) in &[
        (512, 512, 512),
        (2000, 60, 300),
        (20000, 10, 500),
        (8, 600, 1000),
        (200000, 60, 10),
    ] {
        let (a, b) = (dense(m, k, 1), dense(k, n, 2));
        let id = format!("{m}x{k}x{n}");
        g.throughput(Throughput::Elements(2 * (m * k * n) as u64));
        let (am, bm) = (Matrix::Dense(a.clone()), Matrix::Dense(b.clone()));
        g.bench_with_input(BenchmarkId::new("systemds_order", &id), &(), |bch, _| {
            bch.iter(|| black_box(kernels::matmul(&am, &bm)))
        });
        g.bench_with_input(BenchmarkId::new("blas_order", &id), &(), |bch, _| {
            bch.iter(|| black_box(kernels::dense_mul_dense(&a, &b)))
        });
    }
    g.finish();
}

fn csr_x_dense(c: &mut Criterion) {
    let mut g = c.benchmark_group("csr_x_dense");
    g.sample_size(10);
    for &(m, k, n, sp) in &[
        (20000, 5000, 10, 0.01),
        (8000, 3000, 10, 0.01),
        (5000, 5000, 100, 0.001),
    ] {
        let (x, v) = (csr(m, k, sp, 3), dense(k, n, 4));
        let id = format!("{m}x{k}@{sp}x{n}");
        g.throughput(Throughput::Elements(2 * (x.nnz() * n) as u64));
        g.bench_with_input(BenchmarkId::new("spores", &id), &(), |bch, _| {
            bch.iter(|| black_box(kernels::csr_mul_dense(&x, &v)))
        });
        g.bench_with_input(BenchmarkId::new("sprs", &id), &(), |bch, _| {
            bch.iter(|| black_box(&x * &v))
        });
    }
    g.finish();
}

/// A named kernel call.
type Case<'a> = (&'static str, Box<dyn Fn() -> Matrix + 'a>);

fn sparse_elementwise(c: &mut Criterion) {
    let mut g = c.benchmark_group("sparse_elementwise");
    g.sample_size(10);
    let (m, n) = (20000, 5000);
    let x = rand(m, n, 0.01, 5);
    let y = rand(m, n, 0.01, 6);
    let d = rand(m, n, 1.0, 7);
    let col = rand(m, 1, 1.0, 8);
    let cases: Vec<Case> = vec![
        (
            "X*s",
            Box::new(|| kernels::binary(BinOp::Mul, Operand::Matrix(&x), Operand::Scalar(2.0))),
        ),
        (
            "X^2",
            Box::new(|| kernels::binary(BinOp::Pow, Operand::Matrix(&x), Operand::Scalar(2.0))),
        ),
        (
            "X*D",
            Box::new(|| kernels::binary(BinOp::Mul, Operand::Matrix(&x), Operand::Matrix(&d))),
        ),
        (
            "X/D",
            Box::new(|| kernels::binary(BinOp::Div, Operand::Matrix(&x), Operand::Matrix(&d))),
        ),
        (
            "X*col",
            Box::new(|| kernels::binary(BinOp::Mul, Operand::Matrix(&x), Operand::Matrix(&col))),
        ),
        (
            "X+Y",
            Box::new(|| kernels::binary(BinOp::Add, Operand::Matrix(&x), Operand::Matrix(&y))),
        ),
        (
            "X-D",
            Box::new(|| kernels::binary(BinOp::Sub, Operand::Matrix(&x), Operand::Matrix(&d))),
        ),
        ("sqrt(X)", Box::new(|| kernels::unary(UnaryOp::Sqrt, &x))),
        ("t(X)", Box::new(|| kernels::transpose(&x))),
    ];
    for (name, f) in &cases {
        g.bench_function(*name, |bch| bch.iter(|| black_box(f())));
    }
    g.finish();
}

fn matvec(c: &mut Criterion) {
    let mut g = c.benchmark_group("matvec");
    g.sample_size(10);
    let xs = [
        ("dense100000x500", rand(100000, 500, 1.0, 5)),
        ("csr200000x1000@0.1", rand(200000, 1000, 0.1, 6)),
    ];
    for (name, x) in &xs {
        let bytes = match x {
            Matrix::Dense(d) => 8 * d.len(),
            Matrix::Sparse(s) => 12 * s.nnz() + 8 * s.rows(),
        };
        g.throughput(Throughput::Bytes(bytes as u64));
        for cols in [1, 4] {
            let v = Matrix::Dense(dense(x.cols(), cols, 7));
            let y = Matrix::Dense(dense(x.rows(), cols, 8));
            let w = Matrix::Dense(dense(x.rows(), 1, 9));
            let id = format!("{name}x{cols}");
            g.bench_with_input(BenchmarkId::new("X %*% v", &id), &(), |bch, _| {
                bch.iter(|| black_box(kernels::matmul(x, &v)))
            });
            g.bench_with_input(BenchmarkId::new("t(X) %*% y", &id), &(), |bch, _| {
                bch.iter(|| black_box(kernels::tmatmul(x, &y)))
            });
            let vd = v.to_dense();
            g.bench_with_input(BenchmarkId::new("mmchain", &id), &(), |bch, _| {
                bch.iter(|| black_box(kernels::mmchain(x, &w, &vd)))
            });
        }
    }
    g.finish();
}

/// The sampled and chained kernels at the peer kernels' shapes: X 20000 x 5000 at 1% (mlr_hv's
/// 200000 rows for smmchain), rank 10.
fn sampled(c: &mut Criterion) {
    let mut g = c.benchmark_group("sampled");
    g.sample_size(10);
    let k = 10;
    let x = rand(20000, 5000, 0.01, 11);
    let (u, v) = (
        dense(20000, k, 12).mapv(f64::abs),
        dense(5000, k, 13).mapv(f64::abs),
    );
    g.bench_function("wcemm", |bch| {
        bch.iter(|| black_box(kernels::wcemm(&x, &u, &v, 1e-6)))
    });
    g.bench_function("wsloss", |bch| {
        bch.iter(|| black_box(kernels::wsloss(&x, &u, &v)))
    });
    g.bench_function("sddmm_sum", |bch| {
        bch.iter(|| black_box(kernels::sddmm_sum(&x, &u, &v)))
    });
    let xm = rand(200000, 5000, 0.01, 14);
    let p = dense(200000, k, 15).mapv(f64::abs);
    g.bench_function("smmchain", |bch| {
        bch.iter(|| black_box(kernels::smmchain(&xm, &p, &v)))
    });
    g.finish();
}

/// The sampled products of ALS-CG's inner loop at a rank past the narrow kernels: X 100000 x
/// 5000 at 0.5%, rank 40, `(X * (S %*% t(V))) %*% V` (right, `m x k`) and
/// `t(U) %*% (X * (U %*% t(S)))` (left); throughput in non-zeros of X (elements/s).
fn sampled_products(c: &mut Criterion) {
    let mut g = c.benchmark_group("sampled_products");
    g.sample_size(10);
    let k = 40;
    let x = rand(100000, 5000, 0.005, 21);
    let (u, v) = (dense(100000, k, 22), dense(5000, k, 23));
    g.throughput(Throughput::Elements(x.nnz() as u64));
    for (name, side) in [
        ("right", kernels::fused::Side::Right),
        ("left", kernels::fused::Side::Left),
    ] {
        g.bench_function(name, |bch| {
            bch.iter(|| black_box(kernels::sddmm_mm(&x, &u, &v, side)))
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    gemm,
    dense_order,
    csr_x_dense,
    sparse_elementwise,
    matvec,
    sampled,
    sampled_products
);
criterion_main!(benches);
