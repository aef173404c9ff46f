//! `spores calibrate`: measures the weights of the cost model ([`crate::extract::cost::Weights`])
//! on this machine by timing the runtime's kernels on fixed inputs (median CPU time of five
//! runs after a warm-up: the work of every thread, which the load of other processes on a
//! shared machine does not inflate the way it inflates wall time), prints them next to the
//! weights in use, and prints the
//! `SPORES_COST_WEIGHTS=...` line that makes the planner use them.
//!
//! The whole measurement runs [`ROUNDS`] times and each weight is the median of its rounds:
//! on a shared machine one round now and then catches another process's burst (one of four
//! rounds on the development VM measured `sampled_fma` 0.71 ns where the others measured
//! 0.38-0.40, and left `sum_log`, a difference of two timings, at 0), and the weights derived
//! as differences amplify that.

use crate::extract::cost::Weights;
use crate::raise::work::cpu_now;
use spores_runtime::kernels::{self, Operand, RandSpec};
use spores_runtime::ops::{BinOp, UnaryOp};
use spores_runtime::Matrix;
use std::io::Write;

/// Median CPU seconds of `f` (every thread of the process, so that other processes on a
/// shared machine do not count) over five runs, after one warm-up run.
fn median_secs(mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..5)
        .map(|_| {
            let s = cpu_now();
            f();
            (cpu_now() - s).as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[2]
}

fn rand(rows: usize, cols: usize, sparsity: f64, seed: u64) -> Matrix {
    kernels::rand_matrix(&RandSpec {
        rows,
        cols,
        min: 0.1,
        max: 1.0,
        sparsity,
        seed,
    })
}

/// The machine figures of the floor: nanoseconds per byte of a streaming read of a 128 MiB
/// array by every thread of the pool (a sum with eight accumulators, each thread a
/// contiguous part), and per flop of a 1024 x 1024 dense product (the runtime's dgemm).
fn machine() -> (f64, f64) {
    use rayon::prelude::*;
    let xs: Vec<f64> = (0..(16usize << 20)).map(|i| (i % 7) as f64).collect();
    let threads = rayon::current_num_threads().max(1);
    let part = xs.len().div_ceil(threads);
    let mut sink = 0.0;
    let read = median_secs(|| {
        let total: f64 = xs
            .par_chunks(part)
            .map(|c| {
                let mut acc = [0.0f64; 8];
                let chunks = c.chunks_exact(8);
                let rest: f64 = chunks.remainder().iter().sum();
                for ch in chunks {
                    for (a, x) in acc.iter_mut().zip(ch) {
                        *a += x;
                    }
                }
                acc.iter().sum::<f64>() + rest
            })
            .sum();
        sink += total;
    });
    std::hint::black_box(sink);
    let read_byte = read * 1e9 / (8 * xs.len()) as f64;
    drop(xs);
    let n = 1024;
    let a = rand(n, n, 1.0, 9).to_dense();
    let b = rand(n, n, 1.0, 10).to_dense();
    let prod = median_secs(|| {
        std::hint::black_box(kernels::dense_mul_dense(&a, &b));
    });
    let flop = prod * 1e9 / (2.0 * (n * n * n) as f64);
    (read_byte, flop)
}

/// Rounds of the whole measurement; each weight is the median of its rounds.
pub const ROUNDS: usize = 3;

/// Each weight's median over `rounds` (the upper middle one of an even count).
pub fn median_weights(rounds: &[Weights]) -> Weights {
    assert!(!rounds.is_empty(), "median_weights contract: a round");
    let mut w = rounds[0];
    for (f, (_, slot)) in w.fields_mut().into_iter().enumerate() {
        let mut vs: Vec<f64> = rounds.iter().map(|r| r.fields()[f].1).collect();
        vs.sort_by(f64::total_cmp);
        *slot = vs[vs.len() / 2];
    }
    w
}

/// Measures every weight ([`ROUNDS`] rounds, the median of each); prints one line per weight
/// to `out`.
pub fn calibrate(out: &mut dyn Write) -> std::io::Result<Weights> {
    let rounds: Vec<Weights> = (0..ROUNDS).map(|_| measure()).collect();
    let w = median_weights(&rounds);
    let in_use = crate::extract::cost::weights();
    writeln!(out, "weight\tmeasured_ns\tin_use_ns")?;
    for ((name, got), (_, have)) in w.fields().iter().zip(in_use.fields()) {
        writeln!(out, "{name}\t{got:.4}\t{have:.4}")?;
    }
    writeln!(
        out,
        "# machine: read bandwidth {:.2} GB/s, dense product rate {:.2} GFLOP/s (the floor of --stats)",
        1.0 / w.read_byte,
        1.0 / w.flop
    )?;
    writeln!(
        out,
        "# the median of {ROUNDS} rounds; to plan with the measured weights:"
    )?;
    writeln!(out, "export SPORES_COST_WEIGHTS={}", w.to_overrides())?;
    Ok(w)
}

/// One round: every weight measured once.
fn measure() -> Weights {
    let ns = 1e9;
    let (m, n, k) = (20000, 5000, 10);
    let x = rand(m, n, 0.01, 1); // 1M non-zeros, CSR
    let nnz = x.nnz() as f64;
    let u = rand(m, k, 1.0, 2).to_dense();
    let v = rand(n, k, 1.0, 3).to_dense();
    let a = rand(2000, 2000, 1.0, 4);
    let cells = (2000 * 2000) as f64;
    let tiny = rand(4, 4, 1.0, 5);

    let dense_cell = median_secs(|| {
        kernels::binary(BinOp::Add, Operand::Matrix(&a), Operand::Matrix(&a));
    }) * ns
        / cells;
    let sparse_cell = median_secs(|| {
        kernels::binary(BinOp::Mul, Operand::Matrix(&x), Operand::Scalar(2.0));
    }) * ns
        / nnz;
    let transcendental = (median_secs(|| {
        kernels::unary(UnaryOp::Log, &a);
    }) * ns
        / cells
        - dense_cell)
        .max(0.0);
    // a 2000 x 2000 product U %*% t(V) of ranks 32 and 128: the multiply-adds are the
    // difference, as for sparse_fma below (subtracting `dense_cell` per result cell
    // instead undercounts: `A + A` reads two operands where a product only writes its
    // result, and the difference went negative). Both ranks past the small-inner kernel's
    // 16, so both run dgemm: with rank 16 the difference was of two kernels, and came out
    // anywhere from 0.0007 to 0.034 ns on the development VM
    let low_rank = |k: usize, seed: u64| {
        let us = rand(2000, k, 1.0, seed).to_dense();
        let vt = rand(k, 2000, 1.0, seed + 1).to_dense();
        median_secs(|| {
            kernels::dense_mul_dense(&us, &vt);
        }) * ns
    };
    let (k_lo, k_hi) = (32, 128);
    let dense_fma = ((low_rank(k_hi, 6) - low_rank(k_lo, 6))
        / (2000.0 * 2000.0 * (k_hi - k_lo) as f64))
        .max(0.0);
    // a dense matrix-vector product: U (m x k) times a k x 1 column, a dot product per row
    // of U, beyond its multiply-adds and result cells at the weights above
    let um = Matrix::Dense(u.clone());
    let b1 = rand(k, 1, 1.0, 12);
    let vec_op = ((median_secs(|| {
        kernels::matmul(&um, &b1);
    }) * ns
        - m as f64 * (dense_cell + k as f64 * dense_fma))
        / m as f64)
        .max(0.0);
    // a sum of m x k values (below the sequential threshold)
    let mk = rand(m, k, 1.0, 13);
    let serial_sum = median_secs(|| {
        kernels::aggregate_all(spores_runtime::ops::AggOp::Sum, &mk);
    }) * ns
        / (m * k) as f64;
    // X %*% V with k and with one column: per stored entry, a visit plus k multiply-adds
    // (the product as plans run it: with its scan of the operands for non-finite values)
    let v1 = Matrix::Dense(rand(n, 1, 1.0, 8).to_dense());
    let vm = Matrix::Dense(v.clone());
    let t_k = median_secs(|| {
        kernels::matmul(&x, &vm);
    }) * ns
        / nnz;
    let t_1 = median_secs(|| {
        kernels::matmul(&x, &v1);
    }) * ns
        / nnz;
    let sparse_fma = ((t_k - t_1) / (k - 1) as f64).max(0.0);
    let sparse_visit = (t_1 - sparse_fma).max(0.0);
    // the dot products of a sampled kernel without a logarithm (wsloss: plus two k x k Gram
    // products, (m + n) k^2 multiply-adds), then wcemm's logarithm beyond its dot products
    let sampled_fma = median_secs(|| {
        kernels::wsloss(&x, &u, &v);
    }) * ns
        / (nnz * k as f64 + ((m + n) * k * k) as f64);
    let sum_log = (median_secs(|| {
        kernels::wcemm(&x, &u, &v, 0.0);
    }) * ns
        / nnz
        - k as f64 * sampled_fma)
        .max(0.0);
    let call = median_secs(|| {
        kernels::binary(BinOp::Add, Operand::Matrix(&tiny), Operand::Matrix(&tiny));
    }) * ns;
    let (read_byte, flop) = machine();
    Weights {
        dense_fma,
        vec_op,
        sparse_visit,
        sparse_fma,
        sampled_fma: sampled_fma.max(0.0),
        dense_cell,
        sparse_cell,
        transcendental,
        sum_log,
        serial_sum,
        call,
        read_byte,
        flop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::cost::WEIGHTS;

    /// Rounds whose every weight is `base` times a factor: round `r` has factor `fs[r]`.
    fn scaled(fs: &[f64]) -> Vec<Weights> {
        fs.iter()
            .map(|&f| {
                let mut w = WEIGHTS;
                for (_, v) in w.fields_mut() {
                    *v *= f;
                }
                w
            })
            .collect()
    }

    #[test]
    fn each_weight_is_the_median_of_its_rounds() {
        // an outlier round (10x) does not move the median
        let w = median_weights(&scaled(&[1.0, 10.0, 2.0]));
        for ((_, got), (_, base)) in w.fields().iter().zip(WEIGHTS.fields()) {
            assert_eq!(*got, 2.0 * base);
        }
        // per weight, not per round: one round high in one weight, another in another
        let mut rounds = scaled(&[1.0, 1.0, 1.0]);
        rounds[0].call = 5000.0;
        rounds[1].sum_log = 0.0;
        let w = median_weights(&rounds);
        assert_eq!(w, WEIGHTS);
        // an even count takes the upper middle
        let w = median_weights(&scaled(&[3.0, 1.0]));
        assert_eq!(w.call, 3.0 * WEIGHTS.call);
    }
}
