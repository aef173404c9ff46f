//! `rand` and `sample` against SystemDS 3.4's own outputs, cell for cell.
//!
//! * `../shared/data/systemds-scripts/data/{U0,V0,W0,H0}.mtx`: the seeded calls that alsCG,
//!   alsDS and pnmf make inside (dense uniform, one block).
//! * `tests/data/systemds/*.mtx`, written by SystemDS from `tests/data/systemds/gen.dml`:
//!   several blocks with the geometric-skip sparse path (S1), the per-cell Bernoulli path
//!   (D1, D2), standard normal dense and sparse (N1, N2), Poisson below and above the mean of
//!   40 where Commons Math switches algorithms (P1, P2), and `sample` with and without
//!   replacement (M1, M2, M3), the counter-based `cb_uniform` over two row blocks whose
//!   counter carries from the first to the second (C1, with min and max that SystemDS
//!   ignores) and `cb_normal` with an odd cell count (C2) and over two blocks (C3).
//!
//! Uniform and sample values must be bitwise equal; normal values may differ in the last bit
//! where the JVM's `log`/`sin`/`cos` round differently from the platform's (see
//! `kernels::generate`), so they are compared to 4 ulps and the cells must coincide.

use spores_runtime::io::read_matrix_market;
use spores_runtime::kernels::{self, Pdf, RandSpec};
use spores_runtime::Matrix;
use std::path::{Path, PathBuf};

fn shared_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/systemds-scripts/data")
        .join(name)
}

fn local_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/systemds")
        .join(name)
}

fn read(path: &Path) -> Matrix {
    read_matrix_market(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn ulps(a: f64, b: f64) -> u64 {
    (a.to_bits() as i64).abs_diff(b.to_bits() as i64)
}

/// Same shape, same non-zero cells, values within `max_ulps`.
fn assert_same(got: &Matrix, want: &Matrix, max_ulps: u64, what: &str) {
    got.check_invariants();
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_eq!(got.nnz(), want.nnz(), "{what}: nnz");
    let mut worst = 0;
    for i in 0..want.rows() {
        for j in 0..want.cols() {
            let (g, w) = (got.get(i, j), want.get(i, j));
            assert_eq!(g == 0.0, w == 0.0, "{what}: ({i},{j}) got {g}, want {w}");
            let d = ulps(g, w);
            worst = worst.max(d);
            assert!(d <= max_ulps, "{what}: ({i},{j}) got {g}, want {w}");
        }
    }
    eprintln!("{what}: worst difference {worst} ulps");
}

fn spec(rows: usize, cols: usize, min: f64, max: f64, sparsity: f64, seed: u64) -> RandSpec {
    RandSpec {
        rows,
        cols,
        min,
        max,
        sparsity,
        seed,
    }
}

#[test]
fn uniform_factors_of_the_library_scripts() {
    let cases = [
        ("U0.mtx", spec(200, 5, -0.5, 0.5, 1.0, 42)),
        ("V0.mtx", spec(100, 5, -0.5, 0.5, 1.0, 43)),
        ("W0.mtx", spec(200, 5, 0.0, 0.025, 1.0, 42)),
        ("H0.mtx", spec(5, 100, 0.0, 0.025, 1.0, 42)),
    ];
    for (file, s) in cases {
        let want = read(&shared_data(file));
        assert_same(&kernels::rand_matrix(&s), &want, 0, file);
    }
}

#[test]
fn uniform_sparse_and_bernoulli_blocks() {
    let cases = [
        ("S1.mtx", spec(1200, 1010, -1.0, 2.0, 0.01, 7)),
        ("D1.mtx", spec(1005, 7, 1.0, 3.0, 0.5, 3)),
        ("D2.mtx", spec(90, 60, 0.0, 1.0, 0.3, 13)),
    ];
    for (file, s) in cases {
        let want = read(&local_data(file));
        assert_same(&kernels::rand_matrix(&s), &want, 0, file);
    }
}

#[test]
fn normal_dense_and_sparse() {
    let cases = [
        ("N1.mtx", spec(50, 40, 0.0, 1.0, 1.0, 5)),
        ("N2.mtx", spec(300, 200, 0.0, 1.0, 0.02, 9)),
    ];
    for (file, s) in cases {
        let want = read(&local_data(file));
        let got = kernels::rand_with(&s, Pdf::Normal, kernels::DEFAULT_BLOCK).unwrap();
        assert_same(&got, &want, 4, file);
    }
}

#[test]
fn poisson_small_and_large_means() {
    let cases = [
        ("P1.mtx", spec(40, 30, 0.0, 1.0, 1.0, 11), 3.0),
        ("P2.mtx", spec(20, 10, 0.0, 1.0, 1.0, 12), 55.5),
    ];
    for (file, s, lambda) in cases {
        let want = read(&local_data(file));
        let got = kernels::rand_with(&s, Pdf::Poisson { lambda }, kernels::DEFAULT_BLOCK).unwrap();
        assert_same(&got, &want, 0, file);
    }
}

#[test]
fn counter_based_uniform_and_normal() {
    let cases = [
        (
            "C1.mtx",
            spec(1001, 3, -4.0, 9.0, 1.0, 21),
            Pdf::CbUniform,
            0,
        ),
        ("C2.mtx", spec(7, 5, 0.0, 1.0, 1.0, 22), Pdf::CbNormal, 4),
        ("C3.mtx", spec(1001, 3, 0.0, 1.0, 1.0, 23), Pdf::CbNormal, 4),
    ];
    for (file, s, pdf, max_ulps) in cases {
        let want = read(&local_data(file));
        let got = kernels::rand_with(&s, pdf, kernels::DEFAULT_BLOCK).unwrap();
        assert_same(&got, &want, max_ulps, file);
    }
}

/// SystemDS's loops for a counter-based `rand` run by `k` threads, written out naively: the
/// tasks as `LibMatrixDatagen` cuts them, one counter per task carried through its blocks,
/// every block drawn by one `getDoubles` call (and one single-value call before it, which
/// SystemDS uses to seed its unused non-zero generator and which must not move the counter).
fn naive_cb(s: &RandSpec, pdf: Pdf, blen: usize, k: usize, seeds: &[i64]) -> Vec<Vec<f64>> {
    use spores_runtime::kernels::prng::Philox4x64;
    let (nrb, ncb) = (s.rows.div_ceil(blen), s.cols.div_ceil(blen));
    let mut out = vec![vec![f64::NAN; s.cols]; s.rows];
    let par = k > 1 && s.rows * s.cols >= 512 * 1024;
    let parcol = par && nrb < k && ncb > nrb;
    let parts = if parcol { ncb } else { nrb };
    let per = if par { parts.div_ceil(k) } else { parts };
    let mut lo = 0;
    while lo < parts {
        let hi = (lo + per).min(parts);
        let (rows, cols) = if parcol {
            (0..nrb, lo..hi)
        } else {
            (lo..hi, 0..ncb)
        };
        let mut ctr = [0u64; 4];
        for rb in rows {
            for cb in cols.clone() {
                let g = Philox4x64::new(seeds[rb * ncb + cb]);
                let br = blen.min(s.rows - rb * blen);
                let bc = blen.min(s.cols - cb * blen);
                let mut one = [0.0];
                let mut v = vec![0.0; br * bc];
                if pdf == Pdf::CbNormal {
                    g.normal(&mut ctr, &mut one);
                    g.normal(&mut ctr, &mut v);
                } else {
                    g.uniform(&mut ctr, &mut one);
                    g.uniform(&mut ctr, &mut v);
                }
                for (c, x) in v.iter().enumerate() {
                    out[rb * blen + c / bc][cb * blen + c % bc] = *x;
                }
            }
        }
        lo = hi;
    }
    out
}

#[test]
fn counter_based_blocks_follow_systemds_tasks() {
    // the block seeds are those of every pdf (checked against SystemDS above); a small block
    // size gives several blocks per task at a cheap size
    let blen = 300;
    let cases = [
        // two row blocks by two column blocks: tasks of row blocks
        spec(600, 900, 0.0, 1.0, 1.0, 31),
        // one row block, several column blocks: tasks of column blocks for k > 1
        spec(280, 1900, 0.0, 1.0, 1.0, 32),
        // below 512Ki cells: one task whatever k
        spec(500, 700, 0.0, 1.0, 1.0, 33),
    ];
    for s in cases {
        let seeds = kernels::generate::block_seeds(
            s.seed as i64,
            s.rows.div_ceil(blen) * s.cols.div_ceil(blen),
        );
        for pdf in [Pdf::CbUniform, Pdf::CbNormal] {
            for k in [1, 2, 3, 8] {
                let got = kernels::rand_with_tasks(&s, pdf, blen, k).unwrap();
                let want = naive_cb(&s, pdf, blen, k, &seeds);
                for (i, row) in want.iter().enumerate() {
                    for (j, &w) in row.iter().enumerate() {
                        let g = got.get(i, j);
                        assert!(
                            g.to_bits() == w.to_bits(),
                            "{pdf:?} k={k} {}x{}: ({i},{j}) got {g}, want {w}",
                            s.rows,
                            s.cols
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn counter_based_below_sparsity_one_is_zero() {
    // SystemDS fills counter-based blocks only when fully dense
    for pdf in [Pdf::CbUniform, Pdf::CbNormal] {
        let got = kernels::rand_with(&spec(40, 30, 0.0, 1.0, 0.5, 3), pdf, 16).unwrap();
        assert_eq!(got.shape(), (40, 30));
        assert_eq!(got.nnz(), 0, "{pdf:?}");
    }
}

#[test]
fn sample_with_and_without_replacement() {
    let cases = [
        ("M1.mtx", 100, 10, false, 5),
        ("M2.mtx", 1000, 50, true, 6),
        ("M3.mtx", 20, 20, false, 8),
    ];
    for (file, range, size, replace, seed) in cases {
        let want = read(&local_data(file));
        let got = kernels::sample(range, size, replace, seed).unwrap();
        assert_same(&got, &want, 0, file);
    }
}

#[test]
fn unique_in_systemds_order() {
    use spores_runtime::kernels::structure::{unique, UniqueDir};
    let x = read(&local_data("Q2.mtx"));
    let want = read(&local_data("UQ.mtx"));
    assert_same(&unique(&x, UniqueDir::All), &want, 0, "UQ.mtx");
}
