//! Every kernel against a naive dense reference, on fixtures at densities 0, 0.01, 0.5 and 1,
//! in both representations, with empty rows and columns and 1xN, Nx1, 1x1 shapes, plus sizes
//! large enough to take the parallel paths.

use spores_runtime::kernels::{self, Operand, RandSpec};
use spores_runtime::matrix::{csr_to_dense, dense_to_csr, Dense};
use spores_runtime::ops::{AggDir, AggOp, BinOp, UnaryOp};
use spores_runtime::Matrix;

type Naive = Vec<Vec<f64>>;

const DENSITIES: [f64; 4] = [0.0, 0.01, 0.5, 1.0];

fn naive(m: &Matrix) -> Naive {
    (0..m.rows())
        .map(|i| (0..m.cols()).map(|j| m.get(i, j)).collect())
        .collect()
}

/// A fixture: random values at the given density; with `holes`, row 1 and column 1 empty.
fn fixture(rows: usize, cols: usize, density: f64, seed: u64, holes: bool) -> Dense {
    let m = kernels::rand_matrix(&RandSpec {
        rows,
        cols,
        min: -2.0,
        max: 3.0,
        sparsity: density,
        seed,
    });
    let mut d = m.to_dense();
    if holes && rows > 2 && cols > 2 {
        d.row_mut(1).fill(0.0);
        d.column_mut(1).fill(0.0);
    }
    d
}

/// The same values in both representations (bypassing the density rule).
fn both(d: &Dense) -> [Matrix; 2] {
    let nnz = d.iter().filter(|v| **v != 0.0).count();
    [
        Matrix::Dense(d.clone()),
        Matrix::Sparse(dense_to_csr(d, nnz)),
    ]
}

fn close(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-10 * (1.0 + a.abs().max(b.abs()))
}

fn assert_matrix(got: &Matrix, want: &Naive, what: &str) {
    got.check_invariants();
    assert_eq!(got.rows(), want.len(), "{what}: rows");
    for (i, row) in want.iter().enumerate() {
        assert_eq!(got.cols(), row.len(), "{what}: cols");
        for (j, &w) in row.iter().enumerate() {
            let g = got.get(i, j);
            assert!(close(g, w), "{what}: at ({i},{j}) got {g}, want {w}");
        }
    }
}

fn shapes() -> Vec<(usize, usize)> {
    vec![(1, 1), (1, 7), (7, 1), (6, 5), (13, 9)]
}

fn naive_matmul(a: &Naive, b: &Naive, n: usize) -> Naive {
    a.iter()
        .map(|r| {
            (0..n)
                .map(|j| r.iter().enumerate().map(|(k, &x)| x * b[k][j]).sum())
                .collect()
        })
        .collect()
}

#[test]
fn matmul_all_formats() {
    let dims = [
        (1, 1, 1),
        (1, 7, 1),
        (7, 1, 6),
        (6, 5, 4),
        (13, 9, 11),
        (120, 90, 70),
    ];
    let mut seed = 1;
    for &(m, k, n) in &dims {
        for &da in &DENSITIES {
            for &db in &DENSITIES {
                for holes in [false, true] {
                    seed += 2;
                    let a = fixture(m, k, da, seed, holes);
                    let b = fixture(k, n, db, seed + 1, holes);
                    let want = naive_matmul(
                        &naive(&Matrix::Dense(a.clone())),
                        &naive(&Matrix::Dense(b.clone())),
                        n,
                    );
                    for x in both(&a) {
                        for y in both(&b) {
                            let what = format!(
                                "{m}x{k}({da},{}) %*% {k}x{n}({db},{})",
                                x.is_sparse(),
                                y.is_sparse()
                            );
                            assert_matrix(&kernels::matmul(&x, &y), &want, &what);
                        }
                    }
                    // the format-specific kernels directly
                    let (sa, sb) = (dense_to_csr(&a, 0), dense_to_csr(&b, 0));
                    let w = Matrix::Dense;
                    assert_matrix(
                        &w(kernels::dense_mul_dense(&a, &b)),
                        &want,
                        "dense_mul_dense",
                    );
                    assert_matrix(&w(kernels::csr_mul_dense(&sa, &b)), &want, "csr_mul_dense");
                    assert_matrix(&w(kernels::dense_mul_csr(&a, &sb)), &want, "dense_mul_csr");
                    assert_matrix(
                        &w(csr_to_dense(&kernels::csr_mul_csr(&sa, &sb))),
                        &want,
                        "csr_mul_csr",
                    );
                }
            }
        }
    }
}

const BINOPS: [BinOp; 17] = BinOp::ALL;

/// Value of a broadcast operand at output cell (i, j).
fn at(x: &Naive, i: usize, j: usize) -> f64 {
    let r = if x.len() == 1 { 0 } else { i };
    let c = if x[0].len() == 1 { 0 } else { j };
    x[r][c]
}

#[test]
fn binary_with_broadcasting() {
    let mut seed = 100;
    for (m, n) in shapes().into_iter().chain([(150, 240), (4000, 9)]) {
        for &d in &DENSITIES {
            seed += 3;
            let a = fixture(m, n, d, seed, true);
            // right operands: same shape, column vector, row vector, 1x1
            let others = [
                fixture(m, n, 0.5, seed + 1, false),
                fixture(m, n, d, seed + 1, true),
                fixture(m, 1, 0.7, seed + 2, false),
                fixture(1, n, 0.7, seed + 3, false),
                fixture(1, 1, 1.0, seed + 4, false),
            ];
            for op in BINOPS {
                for x in both(&a) {
                    let na = naive(&x);
                    for o in &others {
                        for y in both(o) {
                            let ny = naive(&y);
                            let want: Naive = (0..m)
                                .map(|i| {
                                    (0..n).map(|j| op.apply(na[i][j], at(&ny, i, j))).collect()
                                })
                                .collect();
                            let what = format!("{m}x{n}@{d} {op} {}x{}", y.rows(), y.cols());
                            let got = kernels::binary(op, Operand::Matrix(&x), Operand::Matrix(&y));
                            assert_matrix(&got, &want, &what);
                            // the vector on the left
                            let want_l: Naive = (0..m)
                                .map(|i| {
                                    (0..n).map(|j| op.apply(at(&ny, i, j), na[i][j])).collect()
                                })
                                .collect();
                            let got = kernels::binary(op, Operand::Matrix(&y), Operand::Matrix(&x));
                            assert_matrix(&got, &want_l, &format!("{what} (swapped)"));
                        }
                    }
                    for s in [0.0, 1.0, -2.5, 2.0, 0.5] {
                        let want: Naive = na
                            .iter()
                            .map(|r| r.iter().map(|&v| op.apply(v, s)).collect())
                            .collect();
                        let got = kernels::binary(op, Operand::Matrix(&x), Operand::Scalar(s));
                        assert_matrix(&got, &want, &format!("{m}x{n}@{d} {op} {s}"));
                        let want: Naive = na
                            .iter()
                            .map(|r| r.iter().map(|&v| op.apply(s, v)).collect())
                            .collect();
                        let got = kernels::binary(op, Operand::Scalar(s), Operand::Matrix(&x));
                        assert_matrix(&got, &want, &format!("{s} {op} {m}x{n}@{d}"));
                    }
                }
            }
        }
    }
}

/// A 1-sized side broadcasts to the other side's size even when that is 0 (found by the
/// fuzzer: `matrix(1, rows=0, cols=5) - matrix(2, rows=1, cols=5)` panicked).
#[test]
fn broadcasting_onto_empty_dimensions() {
    for (a, b, want) in [
        ((0, 5), (1, 5), (0, 5)),
        ((1, 5), (0, 5), (0, 5)),
        ((3, 0), (3, 1), (3, 0)),
        ((0, 1), (1, 4), (0, 4)),
        ((1, 1), (0, 0), (0, 0)),
    ] {
        assert_eq!(kernels::broadcast_shape(a, b), Some(want), "{a:?} {b:?}");
        let x = Matrix::filled(a.0, a.1, 1.0);
        let y = Matrix::filled(b.0, b.1, 2.0);
        let z = kernels::binary(BinOp::Sub, Operand::Matrix(&x), Operand::Matrix(&y));
        assert_eq!(z.shape(), want, "{a:?} - {b:?}");
    }
    assert_eq!(kernels::broadcast_shape((0, 5), (2, 5)), None);
}

#[test]
fn outer_vector_operations() {
    let u = fixture(6, 1, 0.5, 7, false);
    let v = fixture(1, 4, 0.5, 8, false);
    for op in BINOPS {
        for x in both(&u) {
            for y in both(&v) {
                let (nu, nv) = (naive(&x), naive(&y));
                let want: Naive = (0..6)
                    .map(|i| (0..4).map(|j| op.apply(nu[i][0], nv[0][j])).collect())
                    .collect();
                assert_matrix(
                    &kernels::binary(op, Operand::Matrix(&x), Operand::Matrix(&y)),
                    &want,
                    "outer",
                );
            }
        }
    }
}

#[test]
fn sparse_results_stay_sparse() {
    let x = Matrix::from_dense(fixture(200, 100, 0.01, 5, false));
    let y = Matrix::from_dense(fixture(200, 100, 1.0, 6, false));
    assert!(x.is_sparse() && !y.is_sparse());
    let bin = |op, a: Operand, b: Operand| kernels::binary(op, a, b);
    assert!(
        bin(BinOp::Mul, Operand::Matrix(&x), Operand::Matrix(&y)).is_sparse(),
        "X * Y"
    );
    assert!(
        bin(BinOp::Mul, Operand::Matrix(&y), Operand::Matrix(&x)).is_sparse(),
        "Y * X"
    );
    assert!(
        bin(BinOp::Div, Operand::Matrix(&x), Operand::Scalar(2.0)).is_sparse(),
        "X / s"
    );
    assert!(
        bin(BinOp::Mul, Operand::Scalar(3.0), Operand::Matrix(&x)).is_sparse(),
        "s * X"
    );
    assert!(
        bin(BinOp::Add, Operand::Matrix(&x), Operand::Scalar(0.0)).is_sparse(),
        "X + 0"
    );
    assert!(
        bin(BinOp::Pow, Operand::Matrix(&x), Operand::Scalar(2.0)).is_sparse(),
        "X ^ 2"
    );
    assert!(
        bin(BinOp::Div, Operand::Matrix(&x), Operand::Matrix(&y)).is_sparse(),
        "X / Y, Y without zeros"
    );
    assert!(
        !bin(BinOp::Add, Operand::Matrix(&x), Operand::Scalar(1.0)).is_sparse(),
        "X + 1"
    );
    assert!(
        !bin(BinOp::Div, Operand::Matrix(&x), Operand::Scalar(0.0)).is_sparse(),
        "X / 0 has NaN"
    );
    assert!(kernels::unary(UnaryOp::Sqrt, &x).is_sparse(), "sqrt");
    assert!(kernels::unary(UnaryOp::Abs, &x).is_sparse(), "abs");
    assert!(!kernels::unary(UnaryOp::Exp, &x).is_sparse(), "exp");
    assert!(kernels::transpose(&x).is_sparse(), "t");
}

#[test]
fn unary_maps() {
    let ops = [
        UnaryOp::Neg,
        UnaryOp::Not,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Abs,
        UnaryOp::Sigmoid,
        UnaryOp::Round,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Sign,
    ];
    for (m, n) in shapes().into_iter().chain([(200, 300)]) {
        for &d in &DENSITIES {
            let a = fixture(m, n, d, 31, true);
            for x in both(&a) {
                let na = naive(&x);
                for op in ops {
                    let want: Naive = na
                        .iter()
                        .map(|r| r.iter().map(|&v| op.apply(v)).collect())
                        .collect();
                    assert_matrix(
                        &kernels::unary(op, &x),
                        &want,
                        &format!("{} {m}x{n}@{d}", op.name()),
                    );
                }
            }
        }
    }
}

#[test]
fn sums_of_zeros_are_positive_zero() {
    // DML adds from +0.0: the sum of an all-zero matrix (no stored values when sparse) and of
    // negative zeros is 0.0, never -0.0
    let z = Matrix::from_dense(ndarray::Array2::zeros((4, 5)));
    let nz = Matrix::from_dense(ndarray::Array2::from_elem((2, 2), -0.0));
    for x in [z.clone(), Matrix::from_csr(z.to_csr()), nz] {
        for op in [AggOp::Sum, AggOp::Mean] {
            let v = kernels::aggregate_all(op, &x);
            assert!(v == 0.0 && v.is_sign_positive(), "{op:?}: {v}");
        }
        for dir in [AggDir::Row, AggDir::Col] {
            let r = kernels::aggregate_dir(AggOp::Sum, dir, &x).to_dense();
            assert!(r.iter().all(|v| v.is_sign_positive()), "{dir:?}: {r}");
        }
    }
}

#[test]
fn aggregates() {
    let fold = |op: AggOp, vals: &[f64]| -> f64 {
        match op {
            AggOp::Sum => vals.iter().sum(),
            AggOp::Mean => vals.iter().sum::<f64>() / vals.len() as f64,
            AggOp::Min => vals.iter().copied().fold(f64::INFINITY, f64::min),
            AggOp::Max => vals.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    };
    for (m, n) in shapes().into_iter().chain([(300, 200)]) {
        for &d in &DENSITIES {
            // all-positive and all-negative values check the implicit zeros of min/max
            for (lo, hi) in [(-2.0, 3.0), (1.0, 2.0), (-2.0, -1.0)] {
                let a = kernels::rand_matrix(&RandSpec {
                    rows: m,
                    cols: n,
                    min: lo,
                    max: hi,
                    sparsity: d,
                    seed: 9,
                })
                .to_dense();
                for x in both(&a) {
                    let na = naive(&x);
                    for op in [AggOp::Sum, AggOp::Mean, AggOp::Min, AggOp::Max] {
                        let all: Vec<f64> = na.iter().flatten().copied().collect();
                        let g = kernels::aggregate_all(op, &x);
                        assert!(
                            close(g, fold(op, &all)),
                            "{op:?} {m}x{n}@{d}: {g} vs {}",
                            fold(op, &all)
                        );
                        let rows: Naive = na.iter().map(|r| vec![fold(op, r)]).collect();
                        assert_matrix(
                            &kernels::aggregate_dir(op, AggDir::Row, &x),
                            &rows,
                            &format!("row {op:?}"),
                        );
                        let cols: Naive = vec![(0..n)
                            .map(|j| fold(op, &na.iter().map(|r| r[j]).collect::<Vec<_>>()))
                            .collect()];
                        assert_matrix(
                            &kernels::aggregate_dir(op, AggDir::Col, &x),
                            &cols,
                            &format!("col {op:?}"),
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn transpose_and_slice() {
    for (m, n) in shapes().into_iter().chain([(70, 45)]) {
        for &d in &DENSITIES {
            let a = fixture(m, n, d, 77, true);
            for x in both(&a) {
                let na = naive(&x);
                let want: Naive = (0..n).map(|j| (0..m).map(|i| na[i][j]).collect()).collect();
                assert_matrix(&kernels::transpose(&x), &want, "t");
                let (r, c) = (m / 3..m, n / 2..n);
                let want: Naive = na[r.clone()]
                    .iter()
                    .map(|row| row[c.clone()].to_vec())
                    .collect();
                assert_matrix(&kernels::slice(&x, r, c), &want, "slice");
            }
        }
    }
    // a dense slice large enough to be copied in parallel row blocks
    let a = fixture(700, 120, 1.0, 78, true);
    let na = naive(&Matrix::Dense(a.clone()));
    let (r, c) = (3..700, 1..111);
    let want: Naive = na[r.clone()]
        .iter()
        .map(|row| row[c.clone()].to_vec())
        .collect();
    assert_matrix(
        &kernels::slice(&Matrix::Dense(a), r, c),
        &want,
        "large slice",
    );
}

#[test]
fn ifelse_broadcasts() {
    let c = fixture(6, 5, 0.5, 1, false);
    let a = fixture(6, 5, 1.0, 2, false);
    let col = fixture(6, 1, 1.0, 3, false);
    for cx in both(&c) {
        for ax in both(&a) {
            let (nc, na, nb) = (naive(&cx), naive(&ax), naive(&Matrix::Dense(col.clone())));
            let want: Naive = (0..6)
                .map(|i| {
                    (0..5)
                        .map(|j| if nc[i][j] != 0.0 { na[i][j] } else { nb[i][0] })
                        .collect()
                })
                .collect();
            let colm = Matrix::Dense(col.clone());
            let got = kernels::ifelse(
                Operand::Matrix(&cx),
                Operand::Matrix(&ax),
                Operand::Matrix(&colm),
            );
            assert_matrix(&got, &want, "ifelse");
            let got = kernels::ifelse(
                Operand::Matrix(&cx),
                Operand::Scalar(7.0),
                Operand::Scalar(-1.0),
            );
            let want: Naive = nc
                .iter()
                .map(|r| {
                    r.iter()
                        .map(|&v| if v != 0.0 { 7.0 } else { -1.0 })
                        .collect()
                })
                .collect();
            assert_matrix(&got, &want, "ifelse scalars");
        }
    }
}

#[test]
fn rand_has_expected_nnz_range_and_determinism() {
    for (m, n) in [
        (1, 1),
        (1, 50),
        (50, 1),
        (100, 80),
        (300, 1000),
        (1100, 1300),
    ] {
        for &s in &[0.0, 0.01, 0.3, 0.5, 0.9, 1.0] {
            let spec = RandSpec {
                rows: m,
                cols: n,
                min: -1.0,
                max: 4.0,
                sparsity: s,
                seed: 42,
            };
            let x = kernels::rand_matrix(&spec);
            x.check_invariants();
            assert_eq!(x.shape(), (m, n));
            // each cell is non-zero with probability s (Bernoulli or geometric skips): the
            // count stays within 6 standard deviations of its mean
            let cells = (m * n) as f64;
            let sd = (cells * s * (1.0 - s)).sqrt();
            let nnz = x.nnz() as f64;
            assert!(
                (nnz - s * cells).abs() <= 6.0 * sd + 1.0,
                "{m}x{n}@{s}: {nnz} non-zeros"
            );
            if s == 1.0 {
                assert_eq!(x.nnz(), m * n);
            }
            let na = naive(&x);
            assert!(na
                .iter()
                .flatten()
                .all(|&v| v == 0.0 || (-1.0..=4.0).contains(&v)));
            let y = kernels::rand_matrix(&spec);
            assert_eq!(naive(&y), na, "same seed, same matrix");
            // the same matrix on one thread (blocks are generated in parallel otherwise)
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap();
            let z = pool.install(|| kernels::rand_matrix(&spec));
            assert_eq!(naive(&z), na, "one thread, same matrix");
            if s > 0.0 && m * n > 1 {
                let z = kernels::rand_matrix(&RandSpec { seed: 43, ..spec });
                assert_ne!(naive(&z), na, "another seed, another matrix");
            }
        }
    }
    // a low-density matrix spreads its non-zeros: every row of a 2000x50 at 0.2 is hit
    let x = kernels::rand_matrix(&RandSpec {
        rows: 2000,
        cols: 50,
        min: 1.0,
        max: 2.0,
        sparsity: 0.2,
        seed: 1,
    });
    let rows = kernels::aggregate_dir(AggOp::Sum, AggDir::Row, &x);
    assert!((0..2000).all(|i| rows.get(i, 0) > 0.0));
}

#[test]
fn matrix_market_round_trip_and_errors() {
    let dir = std::env::temp_dir().join(format!("spores-mtx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for &d in &DENSITIES {
        let a = Matrix::from_dense(fixture(9, 7, d, 5, true));
        let p = dir.join(format!("a{d}.mtx"));
        spores_runtime::io::write_matrix_market(&p, &a).unwrap();
        let b = spores_runtime::io::read_matrix_market(&p).unwrap();
        assert_matrix(&b, &naive(&a), "mtx round trip");
    }
    let sym = dir.join("sym.mtx");
    std::fs::write(
        &sym,
        "%%MatrixMarket matrix coordinate real symmetric\n% c\n3 3 2\n2 1 5\n3 3 1.5\n",
    )
    .unwrap();
    let s = spores_runtime::io::read_matrix_market(&sym).unwrap();
    assert_matrix(
        &s,
        &vec![
            vec![0.0, 5.0, 0.0],
            vec![5.0, 0.0, 0.0],
            vec![0.0, 0.0, 1.5],
        ],
        "symmetric",
    );
    let arr = dir.join("arr.mtx");
    std::fs::write(
        &arr,
        "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
    )
    .unwrap();
    let s = spores_runtime::io::read_matrix_market(&arr).unwrap();
    assert_matrix(
        &s,
        &vec![vec![1.0, 3.0], vec![2.0, 4.0]],
        "array is column-major",
    );
    let bad = [
        (
            "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n",
            ":3: row index 3 out of range",
        ),
        (
            "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n",
            "declares 2 entries, file has 1",
        ),
        (
            "%%MatrixMarket matrix coordinate real general\n2 x 1\n",
            ":2: malformed size line",
        ),
        ("hello\n", ":1: expected a header"),
        (
            "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 abc\n",
            "'abc' is not a number",
        ),
    ];
    for (i, (text, msg)) in bad.iter().enumerate() {
        let p = dir.join(format!("bad{i}.mtx"));
        std::fs::write(&p, text).unwrap();
        let e = spores_runtime::io::read_matrix_market(&p)
            .unwrap_err()
            .to_string();
        assert!(e.contains(msg), "{e} should contain {msg}");
    }
    let e = spores_runtime::io::read_matrix_market(&dir.join("missing.mtx")).unwrap_err();
    assert!(e.to_string().starts_with("cannot open"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fused_sddmm_against_naive() {
    for (m, n, k) in [
        (1, 1, 1),
        (7, 1, 3),
        (1, 6, 2),
        (13, 9, 4),
        (150, 120, 10),
        (600, 80, 10),
        // past rank 16: eight entries' dot products at a time with AVX-512; without it the
        // fixed-width kernels up to rank 32, then the general loop compiled for the CPU's
        // vectors up to rank 71
        (33, 21, 17),
        (40, 30, 20),
        (150, 40, 24),
        (25, 70, 31),
        (60, 45, 40),
        (19, 33, 64),
        (20, 15, 80),
    ] {
        for &d in &DENSITIES {
            let x = fixture(m, n, d, 5, true);
            let u = fixture(m, k, 1.0, 6, false);
            let v = fixture(n, k, 1.0, 7, false);
            let uvt = naive_matmul(
                &naive(&Matrix::Dense(u.clone())),
                &naive(&Matrix::Dense(v.t().to_owned())),
                n,
            );
            let nx = naive(&Matrix::Dense(x.clone()));
            let want: Naive = (0..m)
                .map(|i| (0..n).map(|j| nx[i][j] * uvt[i][j]).collect())
                .collect();
            for xm in both(&x) {
                let got = kernels::sddmm(&xm, &u, &v);
                assert_matrix(&got, &want, &format!("sddmm {m}x{n}x{k}@{d}"));
                // never more non-zeros than X
                assert!(got.nnz() <= xm.nnz());
                // the fused sum: the bits of the sum of the product
                let sum: f64 = want.iter().flatten().sum();
                let fused = kernels::sddmm_sum(&xm, &u, &v);
                assert!(
                    close(fused, sum),
                    "sum(sddmm) {m}x{n}x{k}@{d}: {fused} vs {sum}"
                );
                let unfused = kernels::aggregate_all(AggOp::Sum, &got);
                assert_eq!(
                    fused.to_bits(),
                    unfused.to_bits(),
                    "sum(sddmm) {m}x{n}x{k}@{d}"
                );
            }
        }
    }
}

/// `sum(X * (U %*% t(V)))` fused over a CSR X of several summation blocks (40k entries at
/// 20%): the bits of the unfused sum, close to the naive sum.
#[test]
fn fused_sddmm_sum_over_blocks() {
    let (m, n, k) = (2000, 100, 10);
    let x = fixture(m, n, 0.2, 8, true);
    let (u, v) = (fixture(m, k, 1.0, 9, false), fixture(n, k, 1.0, 10, false));
    let xm = both(&x)[1].clone();
    assert!(xm.is_sparse() && xm.nnz() > 2 * (1 << 14));
    let fused = kernels::sddmm_sum(&xm, &u, &v);
    let unfused = kernels::aggregate_all(AggOp::Sum, &kernels::sddmm(&xm, &u, &v));
    assert_eq!(fused.to_bits(), unfused.to_bits());
    let (nx, nu, nv) = (
        naive(&xm),
        naive(&Matrix::Dense(u)),
        naive(&Matrix::Dense(v)),
    );
    let want: f64 = (0..m)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .map(|(i, j)| nx[i][j] * (0..k).map(|l| nu[i][l] * nv[j][l]).sum::<f64>())
        .sum();
    assert!(close(fused, want), "{fused} vs {want}");
}

/// Fused-kernel fixtures: X (with holes) at each density, factors U `m x k` and V `n x k`
/// with positive values (so `U %*% t(V) + eps` is positive, as the log and division need),
/// and the naive `U %*% t(V)`.
fn fused_cases() -> Vec<(Dense, Dense, Dense, Naive)> {
    let mut cases = Vec::new();
    // ranks up to SPARSE_THIN take the fixed-width kernels on a sparse X; past 16, with
    // AVX-512, eight entries' dot products at a time (the sampled products' blocks in
    // registers up to 71, counted at run time from 72), else the fixed-width kernels up to 32
    // and the general loops (compiled for the CPU's vectors, blocks of eight unrolled) to 71
    for (m, n, k) in [
        (1, 1, 1),
        (7, 1, 3),
        (1, 6, 2),
        (13, 9, 4),
        (700, 90, 10),
        (33, 21, 17),
        (40, 30, 20),
        (150, 40, 24),
        (25, 70, 31),
        (90, 50, 37),
        (60, 45, 40),
        (30, 25, 50),
        (19, 33, 64),
        (20, 15, 80),
    ] {
        for &d in &DENSITIES {
            let x = fixture(m, n, d, 5, true);
            let u = fixture(m, k, 1.0, 6, false).mapv(f64::abs);
            let v = fixture(n, k, 1.0, 7, false).mapv(f64::abs);
            let uvt = naive_matmul(
                &naive(&Matrix::Dense(u.clone())),
                &naive(&Matrix::Dense(v.t().to_owned())),
                n,
            );
            cases.push((x, u, v, uvt));
        }
    }
    cases
}

fn close_rel(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-10 * (1.0 + scale)
}

#[test]
fn fused_scalar_kernels_against_naive() {
    for (x, u, v, uvt) in fused_cases() {
        let nx = naive(&Matrix::Dense(x.clone()));
        let (m, n) = x.dim();
        let eps = 1e-3;
        let cells = || (0..m).flat_map(|i| (0..n).map(move |j| (i, j)));
        let loss: f64 = cells().map(|(i, j)| (nx[i][j] - uvt[i][j]).powi(2)).sum();
        let scale: f64 = cells().map(|(i, j)| uvt[i][j].powi(2)).sum();
        // weights: the pattern of X, scaled
        let w = x.mapv(|e| if e != 0.0 { 0.5 + e.abs() } else { 0.0 });
        let nw = naive(&Matrix::Dense(w.clone()));
        let wloss: f64 = cells()
            .map(|(i, j)| nw[i][j] * (nx[i][j] - uvt[i][j]).powi(2))
            .sum();
        let ce: f64 = cells()
            .filter(|&(i, j)| nx[i][j] != 0.0)
            .map(|(i, j)| nx[i][j] * (uvt[i][j] + eps).ln())
            .sum();
        let what = format!(
            "{m}x{n}x{} nnz {}",
            u.ncols(),
            x.iter().filter(|e| **e != 0.0).count()
        );
        // per storage of X: the bits of wsloss, wsloss (X != 0) and wcemm
        let mut bits = Vec::new();
        for xm in both(&x) {
            bits.push([
                kernels::wsloss(&xm, &u, &v).to_bits(),
                kernels::wsloss_weighted(None, &xm, &u, &v).to_bits(),
                kernels::wcemm(&xm, &u, &v, eps).to_bits(),
            ]);
            let got = kernels::wsloss(&xm, &u, &v);
            assert!(
                close_rel(got, loss, scale + loss),
                "wsloss {what}: {got} vs {loss}"
            );
            for wm in both(&w) {
                let got = kernels::wsloss_weighted(Some(&wm), &xm, &u, &v);
                assert!(
                    close_rel(got, wloss, wloss),
                    "wsloss weighted {what}: {got} vs {wloss}"
                );
            }
            // W = (X != 0), never formed
            let nzloss: f64 = cells()
                .filter(|&(i, j)| nx[i][j] != 0.0)
                .map(|(i, j)| (nx[i][j] - uvt[i][j]).powi(2))
                .sum();
            let got = kernels::wsloss_weighted(None, &xm, &u, &v);
            assert!(
                close_rel(got, nzloss, nzloss),
                "wsloss (X != 0) {what}: {got} vs {nzloss}"
            );
            // wcemm's logarithms are `sumlog::ln`, within 1 ulp of `f64::ln`: each term moves
            // by at most |x| 2^-52 |ln|, so the sum by at most 2^-52 sum |x ln|, far inside
            // this tolerance (unchanged by the vectorised logarithm)
            let got = kernels::wcemm(&xm, &u, &v, eps);
            assert!(close_rel(got, ce, ce.abs()), "wcemm {what}: {got} vs {ce}");
        }
        // a sparse X of rank up to 16 takes the fixed-width loops, a dense one the general
        // loop: the same values added in the same order
        assert_eq!(bits[0], bits[1], "dense vs sparse X {what}");
    }
}

/// The squared loss of factors whose Gram expansion overflows (`1e200` against zeros: the
/// expansion is `Inf * 0`, NaN) is the loss as written, cell by cell; so is an infinite one.
#[test]
fn wsloss_is_the_loss_as_written_where_its_expansion_overflows() {
    let (m, n) = (30, 4);
    let x = fixture(m, n, 0.3, 5, true);
    let nx = naive(&Matrix::Dense(x.clone()));
    for (uv, vv) in [(1e200, 0.0), (0.0, 1e200), (1e200, 1e200), (1e-200, 1e200)] {
        let u = Dense::from_elem((m, 1), uv);
        let v = Dense::from_elem((n, 1), vv);
        let want: f64 = (0..m)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| (nx[i][j] - uv * vv).powi(2))
            .sum();
        for xm in both(&x) {
            let got = kernels::wsloss(&xm, &u, &v);
            assert!(
                got == want || close_rel(got, want, want.abs()),
                "wsloss u={uv} v={vv}: {got} vs {want}"
            );
        }
    }
}

#[test]
fn fused_product_kernels_against_naive() {
    use kernels::Side;
    for (x, u, v, uvt) in fused_cases() {
        let nx = naive(&Matrix::Dense(x.clone()));
        let (m, n) = x.dim();
        let k = u.ncols();
        let nu = naive(&Matrix::Dense(u.clone()));
        let nv = naive(&Matrix::Dense(v.clone()));
        let eps = 1e-3;
        // S = X / (UV' + eps) at X's non-zeros; T = (X != 0) * (UV' - X)
        let s: Naive = (0..m)
            .map(|i| (0..n).map(|j| nx[i][j] / (uvt[i][j] + eps)).collect())
            .collect();
        let t: Naive = (0..m)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        if nx[i][j] != 0.0 {
                            uvt[i][j] - nx[i][j]
                        } else {
                            0.0
                        }
                    })
                    .collect()
            })
            .collect();
        let right = |a: &Naive| naive_matmul(a, &nv, k);
        let left = |a: &Naive| -> Naive {
            (0..k)
                .map(|c| {
                    (0..n)
                        .map(|j| (0..m).map(|i| nu[i][c] * a[i][j]).sum())
                        .collect()
                })
                .collect()
        };
        let what = format!("{m}x{n}x{k}");
        let w = x.mapv(|e| f64::from(u8::from(e != 0.0)));
        // S = X * (UV'), never formed
        let p: Naive = (0..m)
            .map(|i| (0..n).map(|j| nx[i][j] * uvt[i][j]).collect())
            .collect();
        let pt: Naive = (0..n).map(|j| (0..m).map(|i| p[i][j]).collect()).collect();
        let mut bits: Vec<Vec<u64>> = Vec::new();
        for xm in both(&x) {
            let got = kernels::sddmm_mm(&xm, &u, &v, Side::Right);
            assert_matrix(
                &Matrix::Dense(got.clone()),
                &right(&p),
                &format!("sddmm_mm right {what}"),
            );
            let got_t = kernels::sddmm_mm(&xm, &u, &v, Side::Left);
            assert_matrix(
                &Matrix::Dense(got_t.clone()),
                &naive_matmul(&pt, &nu, k),
                &format!("sddmm_mm left {what}"),
            );
            // the fixed-width (sparse X) and general (dense X) loops add in the same order
            let b: Vec<u64> = got
                .iter()
                .chain(got_t.iter())
                .map(|x| x.to_bits())
                .collect();
            if let Some(first) = bits.first() {
                assert_eq!(first, &b, "sddmm_mm sparse vs dense bits {what}");
            }
            bits.push(b);
        }
        for xm in both(&x) {
            let got = Matrix::Dense(kernels::wdivmm(&xm, &u, &v, eps, Side::Right));
            assert_matrix(&got, &right(&s), &format!("wdivmm right {what}"));
            let got = Matrix::Dense(kernels::wdivmm(&xm, &u, &v, eps, Side::Left));
            assert_matrix(&got, &left(&s), &format!("wdivmm left {what}"));
            for (side, want, name) in [
                (Side::Right, right(&t), "right"),
                (Side::Left, left(&t), "left"),
            ] {
                for wm in both(&w) {
                    let got = Matrix::Dense(kernels::wsubmm(Some(&wm), &xm, &u, &v, side));
                    assert_matrix(&got, &want, &format!("wsubmm {name} {what}"));
                }
                let got = Matrix::Dense(kernels::wsubmm(None, &xm, &u, &v, side));
                assert_matrix(&got, &want, &format!("wsubmm {name} (X != 0) {what}"));
            }
            // t(X) %*% (w * (X %*% V)) with a column and a full weight matrix
            let xv = naive_matmul(&nx, &nv, k);
            let xt: Naive = (0..n).map(|j| (0..m).map(|i| nx[i][j]).collect()).collect();
            for wcols in [1, k] {
                let wt = fixture(m, wcols, 1.0, 9, false);
                let nwt = naive(&Matrix::Dense(wt.clone()));
                let inner: Naive = (0..m)
                    .map(|i| {
                        (0..k)
                            .map(|c| nwt[i][c.min(wcols - 1)] * xv[i][c])
                            .collect()
                    })
                    .collect();
                let got = Matrix::Dense(kernels::mmchain(&xm, &Matrix::Dense(wt), &v));
                assert_matrix(
                    &got,
                    &naive_matmul(&xt, &inner, k),
                    &format!("mmchain {what}"),
                );
            }
            // t(X) %*% (P * (X %*% V) - P * rowSums(P * (X %*% V))), P m x k
            let p = fixture(m, k, 1.0, 11, false);
            let np = naive(&Matrix::Dense(p.clone()));
            let r: Naive = (0..m)
                .map(|i| {
                    let q: Vec<f64> = (0..k).map(|c| np[i][c] * xv[i][c]).collect();
                    let s: f64 = q.iter().sum();
                    (0..k).map(|c| q[c] - np[i][c] * s).collect()
                })
                .collect();
            let got = kernels::smmchain(&xm, &p, &v);
            assert_matrix(
                &Matrix::Dense(got.clone()),
                &naive_matmul(&xt, &r, k),
                &format!("smmchain {what}"),
            );
            let again = kernels::smmchain(&xm, &p, &v);
            assert!(
                got.iter()
                    .zip(&again)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "smmchain deterministic {what}"
            );
            // t(X) %*% U
            let got = kernels::tmatmul(&xm, &Matrix::Dense(u.clone()));
            assert_matrix(&got, &naive_matmul(&xt, &nu, k), &format!("tmatmul {what}"));
            // P * (1 - P), sparse stays sparse
            let got = kernels::sprop(&xm);
            let want: Naive = nx
                .iter()
                .map(|r| r.iter().map(|p| p * (1.0 - p)).collect())
                .collect();
            assert_matrix(&got, &want, &format!("sprop {what}"));
            assert!(got.nnz() <= xm.nnz());
        }
    }
}

/// Products follow IEEE whatever the representation: a zero (implicit in CSR, explicit in a
/// dense operand) times Inf or NaN is NaN, as in the naive triple loop.
#[test]
fn matmul_propagates_non_finite_through_zeros() {
    for (m, k, n) in [(4, 3, 5), (6, 1, 2), (3, 7, 1)] {
        for d in [0.3, 0.8] {
            let a = fixture(m, k, d, 11, false);
            let mut b = fixture(k, n, 0.9, 12, false);
            b[[0, 0]] = f64::INFINITY;
            b[[k - 1, n - 1]] = f64::NAN;
            for (x, y) in [(&a, &b), (&b.t().to_owned(), &a.t().to_owned())] {
                let want = naive_matmul(
                    &naive(&Matrix::Dense(x.clone())),
                    &naive(&Matrix::Dense(y.clone())),
                    y.ncols(),
                );
                for xm in both(x) {
                    for ym in both(y) {
                        let got = kernels::matmul(&xm, &ym);
                        assert_matrix(&got, &want, &format!("{m}x{k}x{n} d={d}"));
                        let xt = kernels::transpose(&xm);
                        let got = kernels::tmatmul(&xt, &ym);
                        assert_matrix(&got, &want, &format!("t {m}x{k}x{n} d={d}"));
                    }
                }
            }
        }
    }
}

/// A CSR operand with more stored values than the sequential scan takes (the parallel
/// finiteness scan of its values), an Inf and a NaN stored in its later rows: its products
/// with a dense operand that has zeros still give NaN where the naive loop does.
#[test]
fn csr_products_find_non_finite_values_past_the_sequential_scan() {
    let (m, k, n) = (400, 600, 3);
    let mut a = fixture(m, k, 0.35, 31, false);
    a[[m - 3, 5]] = f64::INFINITY;
    a[[m - 1, k - 2]] = f64::NAN;
    let mut b = fixture(k, n, 0.9, 32, false);
    b[[5, 1]] = 0.0;
    b[[k - 2, 0]] = 0.0;
    let [_, sa] = both(&a);
    assert!(
        sa.is_sparse() && sa.nnz() > 1 << 16,
        "the scan's parallel path"
    );
    let want = naive_matmul(&naive(&sa), &naive(&Matrix::Dense(b.clone())), n);
    let got = kernels::matmul(&sa, &Matrix::Dense(b.clone()));
    assert!(got.get(m - 3, 1).is_nan() && got.get(m - 1, 0).is_nan());
    assert_matrix(&got, &want, "csr A %*% B");
}

/// A product's sums start from +0.0, as SystemDS's: one `-0.0` term reads `+0.0`.
#[test]
fn matmul_sums_start_from_positive_zero() {
    let a = Matrix::Dense(Dense::from_elem((2, 1), 1e200));
    let b = Matrix::Dense(Dense::from_elem((1, 3), -0.0));
    let c = kernels::matmul(&a, &b);
    for i in 0..2 {
        for j in 0..3 {
            assert!(c.get(i, j) == 0.0 && c.get(i, j).is_sign_positive());
        }
    }
}

/// The matrix-vector kernels (a dense left operand, a right operand of at most `NARROW`
/// columns): `A %*% B`, `t(A) %*% B` and the fused `t(A) %*% (w * (A %*% v))` against the
/// naive products, at sizes that take the parallel paths and several row blocks, with an Inf
/// and a NaN in A that meet zeros of the other operand; a second run gives the same bits.
#[test]
fn narrow_products_against_naive() {
    for (m, k) in [(3000, 37), (1, 700), (20000, 1)] {
        for c in 1..=kernels::NARROW {
            let mut a = fixture(m, k, 0.7, 21, true);
            a[[0, 0]] = f64::INFINITY;
            a[[m - 1, k - 1]] = f64::NAN;
            let b = fixture(k, c, 0.7, 22, false);
            let y = fixture(m, c, 0.7, 23, false);
            let w = fixture(m, 1, 1.0, 24, false);
            let na = naive(&Matrix::Dense(a.clone()));
            let nat = naive(&Matrix::Dense(a.t().to_owned()));
            let what = format!("{m}x{k} by {c} columns");
            let (am, bm, ym) = (
                Matrix::Dense(a.clone()),
                Matrix::Dense(b.clone()),
                Matrix::Dense(y.clone()),
            );
            let ab = naive_matmul(&na, &naive(&bm), c);
            let got = kernels::matmul(&am, &bm);
            assert_matrix(&got, &ab, &format!("A %*% B {what}"));
            let aty = naive_matmul(&nat, &naive(&ym), c);
            let got_t = kernels::tmatmul(&am, &ym);
            assert_matrix(&got_t, &aty, &format!("t(A) %*% B {what}"));
            // the CSR forms of the same products (A at 70%, with holes)
            let sa = both(&a)[1].clone();
            assert_matrix(
                &kernels::matmul(&sa, &bm),
                &ab,
                &format!("csr A %*% B {what}"),
            );
            let got_st = kernels::tmatmul(&sa, &ym);
            assert_matrix(&got_st, &aty, &format!("t(csr A) %*% B {what}"));
            // a dense A with the narrow operand stored sparse
            let (sb, sy) = (both(&b)[1].clone(), both(&y)[1].clone());
            assert_matrix(
                &kernels::matmul(&am, &sb),
                &ab,
                &format!("A %*% csr B {what}"),
            );
            assert_matrix(
                &kernels::tmatmul(&am, &sy),
                &aty,
                &format!("t(A) %*% csr B {what}"),
            );
            let nw = naive(&Matrix::Dense(w.clone()));
            let inner: Naive = ab
                .iter()
                .zip(&nw)
                .map(|(r, wr)| r.iter().map(|q| wr[0] * q).collect())
                .collect();
            let got_c = Matrix::Dense(kernels::mmchain(&am, &Matrix::Dense(w.clone()), &b));
            assert_matrix(
                &got_c,
                &naive_matmul(&nat, &inner, c),
                &format!("mmchain {what}"),
            );
            // deterministic: the same bits on a second run
            let bits = |x: &Matrix| {
                naive(x)
                    .concat()
                    .iter()
                    .map(|v| v.to_bits())
                    .collect::<Vec<_>>()
            };
            assert_eq!(bits(&got_t), bits(&kernels::tmatmul(&am, &ym)), "{what}");
            assert_eq!(bits(&got_st), bits(&kernels::tmatmul(&sa, &ym)), "{what}");
            let again = Matrix::Dense(kernels::mmchain(&am, &Matrix::Dense(w.clone()), &b));
            assert_eq!(bits(&got_c), bits(&again), "{what}");
            // the row-vector forms: t(Y) %*% A and t(t(A) %*% Y)'s factors swapped
            let (ytm, atm) = (
                Matrix::Dense(y.t().to_owned()),
                Matrix::Dense(a.t().to_owned()),
            );
            let yta = naive_matmul(&naive(&ytm), &na, k);
            assert_matrix(
                &kernels::matmul(&ytm, &am),
                &yta,
                &format!("t(Y) %*% A {what}"),
            );
            assert_matrix(
                &kernels::tmatmul(&ym, &am),
                &yta,
                &format!("tmm(Y, A) {what}"),
            );
            let bta = naive_matmul(&naive(&Matrix::Dense(b.t().to_owned())), &nat, m);
            let got = kernels::matmul(&Matrix::Dense(b.t().to_owned()), &atm);
            assert_matrix(&got, &bta, &format!("t(B) %*% t(A) {what}"));
        }
    }
}

/// CSR times a thin dense operand and its transposed form, at every width with a fixed-width
/// kernel (`1..=SPARSE_THIN`) and one beyond, at the kernel tests' densities, against the
/// naive products; rows enough for several parallel tasks and row blocks; a second run gives
/// the same bits.
#[test]
fn sparse_thin_products_against_naive() {
    let mut seed = 500;
    for (m, n) in [(7, 5), (2500, 40)] {
        for c in 1..=kernels::matmul::SPARSE_THIN + 1 {
            for &da in &DENSITIES {
                seed += 3;
                let a = fixture(m, n, da, seed, true);
                let b = fixture(n, c, 1.0, seed + 1, false);
                let y = fixture(m, c, 0.5, seed + 2, false);
                let sa = dense_to_csr(&a, 0);
                let na = naive(&Matrix::Dense(a.clone()));
                let nat = naive(&Matrix::Dense(a.t().to_owned()));
                let what = format!("{m}x{n} at {da} by {c} columns");
                let ab = naive_matmul(&na, &naive(&Matrix::Dense(b.clone())), c);
                let got = kernels::csr_mul_dense(&sa, &b);
                assert_matrix(
                    &Matrix::Dense(got.clone()),
                    &ab,
                    &format!("csr A %*% B {what}"),
                );
                let again = kernels::csr_mul_dense(&sa, &b);
                assert!(
                    got.iter()
                        .zip(&again)
                        .all(|(p, q)| p.to_bits() == q.to_bits()),
                    "{what}: csr_mul_dense is deterministic"
                );
                let aty = naive_matmul(&nat, &naive(&Matrix::Dense(y.clone())), c);
                let got_t = kernels::fused::csr_t_mul_dense(&sa, &y);
                assert_matrix(
                    &Matrix::Dense(got_t.clone()),
                    &aty,
                    &format!("t(csr A) %*% B {what}"),
                );
                let again = kernels::fused::csr_t_mul_dense(&sa, &y);
                assert!(
                    got_t
                        .iter()
                        .zip(&again)
                        .all(|(p, q)| p.to_bits() == q.to_bits()),
                    "{what}: csr_t_mul_dense is deterministic"
                );
            }
        }
    }
}

/// SystemDS's `KahanPlus` as its Java source states it (a naive reference for the finite case).
fn kahan_ref(vals: impl IntoIterator<Item = f64>) -> f64 {
    let (mut sum, mut corr) = (0.0f64, 0.0f64);
    for v in vals {
        let c = v + corr;
        let s = sum + c;
        corr = c - (s - sum);
        sum = s;
    }
    sum
}

/// SystemDS's incremental `Mean` (a running mean moved by `(v - mean) / count`, compensated),
/// the `zeros` implicit zeros of a sparse line counted first.
fn mean_ref(vals: &[f64], zeros: usize) -> f64 {
    let (mut mean, mut corr) = (0.0f64, 0.0f64);
    let mut count = zeros as f64;
    for &v in vals {
        count += 1.0;
        let d = (v - mean) / count;
        let c = d + corr;
        let s = mean + c;
        corr = c - (s - mean);
        mean = s;
    }
    mean
}

#[test]
fn sums_and_means_are_systemds_compensated_ones_bit_for_bit() {
    // values of mixed magnitudes, so that plain and compensated sums differ in the last bits
    let mut rng = spores_runtime::kernels::prng::JavaRandom::new(5);
    for (m, n, d) in [
        (60, 5, 1.0),
        (7, 13, 0.6),
        (40, 1, 1.0),
        (1, 33, 0.5),
        (200, 30, 0.1),
        // big enough for the row aggregates' parallel path
        (703, 100, 0.3),
    ] {
        let mut a = Dense::zeros((m, n));
        for v in a.iter_mut() {
            if rng.next_double() < d {
                let e = (rng.next_double() * 12.0 - 6.0).exp2();
                *v = (rng.next_double() - 0.4) * e * 1e3;
            }
        }
        let na: Naive = (0..m).map(|i| a.row(i).to_vec()).collect();
        for x in both(&a) {
            let sparse = x.is_sparse();
            // stored values in row-major order (a sparse line skips its zeros)
            let stored = |vals: &[f64]| -> Vec<f64> {
                vals.iter()
                    .copied()
                    .filter(|v| !sparse || *v != 0.0)
                    .collect()
            };
            let all: Vec<f64> = na.iter().flatten().copied().collect();
            let s = stored(&all);
            let what = format!("{m}x{n}@{d} sparse={sparse}");
            assert_eq!(
                kernels::aggregate_all(AggOp::Sum, &x).to_bits(),
                kahan_ref(s.clone()).to_bits(),
                "sum {what}"
            );
            assert_eq!(
                kernels::aggregate_all(AggOp::Mean, &x).to_bits(),
                mean_ref(&s, all.len() - s.len()).to_bits(),
                "mean {what}"
            );
            let rs = kernels::aggregate_dir(AggOp::Sum, AggDir::Row, &x);
            let rm = kernels::aggregate_dir(AggOp::Mean, AggDir::Row, &x);
            for (i, r) in na.iter().enumerate() {
                let s = stored(r);
                assert_eq!(
                    rs.get(i, 0).to_bits(),
                    kahan_ref(s.clone()).to_bits(),
                    "rowSums {what}"
                );
                assert_eq!(
                    rm.get(i, 0).to_bits(),
                    mean_ref(&s, n - s.len()).to_bits(),
                    "rowMeans {what}"
                );
            }
            let cs = kernels::aggregate_dir(AggOp::Sum, AggDir::Col, &x);
            let cm = kernels::aggregate_dir(AggOp::Mean, AggDir::Col, &x);
            for j in 0..n {
                let col: Vec<f64> = na.iter().map(|r| r[j]).collect();
                let s = stored(&col);
                assert_eq!(
                    cs.get(0, j).to_bits(),
                    kahan_ref(s.clone()).to_bits(),
                    "colSums {what}"
                );
                assert_eq!(
                    cm.get(0, j).to_bits(),
                    mean_ref(&s, m - s.len()).to_bits(),
                    "colMeans {what}"
                );
            }
        }
    }
    // compensation recovers what a plain left-to-right sum loses
    let x = Matrix::from_dense(Dense::from_shape_vec((1, 4), vec![1e16, 1.0, 1.0, -1e16]).unwrap());
    assert_eq!(kernels::aggregate_all(AggOp::Sum, &x), 2.0);
    // IEEE for non-finite values (SystemDS would keep the last infinity)
    let inf = Matrix::from_dense(
        Dense::from_shape_vec((1, 3), vec![f64::INFINITY, 1.0, f64::NEG_INFINITY]).unwrap(),
    );
    assert!(kernels::aggregate_all(AggOp::Sum, &inf).is_nan());
    let one_inf =
        Matrix::from_dense(Dense::from_shape_vec((1, 3), vec![1.0, f64::INFINITY, 1.0]).unwrap());
    assert_eq!(kernels::aggregate_all(AggOp::Sum, &one_inf), f64::INFINITY);
    // means of infinities are IEEE's sum / count (Inf - Inf in the increment would give NaN),
    // over all cells, rows and columns, dense and sparse
    let (i, ni) = (f64::INFINITY, f64::NEG_INFINITY);
    let a = Dense::from_shape_vec((3, 3), vec![i, i, 1.0, i, ni, 0.0, f64::NAN, 0.0, ni]).unwrap();
    for x in both(&a) {
        let what = format!("sparse={}", x.is_sparse());
        let same = |got: f64, want: f64| got == want || (got.is_nan() && want.is_nan());
        let rows = kernels::aggregate_dir(AggOp::Mean, AggDir::Row, &x);
        let cols = kernels::aggregate_dir(AggOp::Mean, AggDir::Col, &x);
        for (k, want) in [i, f64::NAN, f64::NAN].into_iter().enumerate() {
            assert!(same(rows.get(k, 0), want), "rowMeans {k} {what}");
        }
        for (k, want) in [f64::NAN, f64::NAN, ni].into_iter().enumerate() {
            assert!(same(cols.get(0, k), want), "colMeans {k} {what}");
        }
        assert!(
            kernels::aggregate_all(AggOp::Mean, &x).is_nan(),
            "mean {what}"
        );
    }
    let infs = Dense::from_shape_vec((2, 3), vec![i, i, 0.0, i, 2.0, ni]).unwrap();
    for x in both(&infs) {
        let what = format!("sparse={}", x.is_sparse());
        let rows = kernels::aggregate_dir(AggOp::Mean, AggDir::Row, &x);
        assert_eq!(rows.get(0, 0), i, "rowMeans {what}");
        assert!(rows.get(1, 0).is_nan(), "rowMeans {what}");
        let cols = kernels::aggregate_dir(AggOp::Mean, AggDir::Col, &x);
        assert_eq!(cols.get(0, 0), i, "colMeans {what}");
        assert_eq!(cols.get(0, 1), i, "colMeans {what}");
        assert_eq!(cols.get(0, 2), ni, "colMeans {what}");
        let all = Matrix::from_dense(Dense::from_elem((4, 4), ni));
        assert_eq!(kernels::aggregate_all(AggOp::Mean, &all), ni);
    }
    // a sum past the sequential threshold: blocked, still compensated, and deterministic
    let big: Vec<f64> = (0..(1usize << 19) + 5)
        .map(|k| if k % 2 == 0 { 1e8 } else { 1e-8 })
        .collect();
    let bm = Matrix::from_dense(Dense::from_shape_vec((1, big.len()), big.clone()).unwrap());
    let got = kernels::aggregate_all(AggOp::Sum, &bm);
    assert!(
        (got - kahan_ref(big)).abs() <= 1e-15 * got.abs(),
        "blocked sum {got}"
    );
    assert_eq!(
        got.to_bits(),
        kernels::aggregate_all(AggOp::Sum, &bm).to_bits()
    );
}

#[test]
fn eigen_of_a_diagonal_matrix_is_the_sorted_unit_vectors() {
    // no rotation runs: the vectors are exactly the unit vectors, sorted by value, as
    // Commons Math's QL returns them (and SystemDS then sorts increasingly)
    let diag = [3.0, -1.0, 2.0, 0.5];
    let mut a = vec![0.0; 16];
    for (i, v) in diag.iter().enumerate() {
        a[i * 4 + i] = *v;
    }
    let (vals, vecs) = kernels::linalg::symmetric_eigen(a, 4).unwrap();
    assert_eq!(vals, vec![-1.0, 0.5, 2.0, 3.0]);
    let want_rows = [1usize, 3, 2, 0]; // the unit vector of each sorted value
    for (k, &r) in want_rows.iter().enumerate() {
        for i in 0..4 {
            assert_eq!(
                vecs[i * 4 + k],
                if i == r { 1.0 } else { 0.0 },
                "column {k}"
            );
        }
    }
}

#[test]
fn matrix_vector_products_add_in_systemds_order() {
    use spores_runtime::kernels::matmul::{dense_t_mul_narrow, java_vlen};
    let l = java_vlen();
    let mut rng = spores_runtime::kernels::prng::JavaRandom::new(11);
    for (m, n) in [(6, 21), (7, 12), (5, 3), (1, 9), (40, 8), (3, 1)] {
        let mut a = Dense::zeros((m, n));
        for v in a.iter_mut() {
            *v = (rng.next_double() - 0.5) * (rng.next_double() * 8.0).exp2();
        }
        let v: Vec<f64> = (0..n).map(|_| rng.next_double() - 0.3).collect();
        let w: Vec<f64> = (0..m).map(|_| rng.next_double() - 0.6).collect();
        // X %*% v: LibMatrixMult.dotProduct, the first n % L products one by one, then
        // blocks of L summed in order
        let xv = kernels::matmul(
            &Matrix::from_dense(a.clone()),
            &Matrix::from_dense(Dense::from_shape_vec((n, 1), v.clone()).unwrap()),
        );
        for i in 0..m {
            let p: Vec<f64> = (0..n).map(|k| a[[i, k]] * v[k]).collect();
            let mut val = 0.0;
            for x in &p[..n % l] {
                val += x;
            }
            for c in p[n % l..].chunks(l) {
                let mut r = 0.0;
                for x in c {
                    r += x;
                }
                val += r;
            }
            assert_eq!(
                xv.get(i, 0).to_bits(),
                val.to_bits(),
                "X %*% v {m}x{n} row {i}"
            );
        }
        // t(X) %*% w: the vector-matrix kernel, rows in pairs, fused multiply-adds past the
        // first n % L columns
        let tw = dense_t_mul_narrow(&a, &Dense::from_shape_vec((m, 1), w.clone()).unwrap());
        let mut c = vec![0.0f64; n];
        let mut i = 0;
        let add1 = |c: &mut [f64], i: usize| {
            for j in 0..n {
                c[j] = if j < n % l {
                    c[j] + w[i] * a[[i, j]]
                } else {
                    w[i].mul_add(a[[i, j]], c[j])
                };
            }
        };
        if m % 2 == 1 {
            add1(&mut c, 0);
            i = 1;
        }
        while i < m {
            for j in 0..n {
                c[j] = if j < n % l {
                    c[j] + (w[i] * a[[i, j]] + w[i + 1] * a[[i + 1, j]])
                } else {
                    w[i + 1].mul_add(a[[i + 1, j]], w[i].mul_add(a[[i, j]], c[j]))
                };
            }
            i += 2;
        }
        for j in 0..n {
            assert_eq!(
                tw[[j, 0]].to_bits(),
                c[j].to_bits(),
                "t(X) %*% w {m}x{n} col {j}"
            );
        }
    }
}

/// `dot_rows` (the rows side by side, eight or four at a time in registers) gives each row's
/// `dotProduct` in SystemDS's order for 2, 4 and 8 lanes, bit for bit: row counts below, at and
/// past the groups, columns with and without a head of `k % L`, a row stride past `k`, an
/// output stride, and NaN, Inf and signed zeros in the products; and `X %*% B` of a dense X and
/// a narrow B (which runs it per column of B) gives the same bits.
#[test]
fn dot_rows_add_each_row_in_systemds_order() {
    use spores_runtime::kernels::matmul::{dot_rows_lanes, java_vlen};
    let mut rng = spores_runtime::kernels::prng::JavaRandom::new(31);
    let same = |x: f64, y: f64| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
    for lanes in [2usize, 4, 8] {
        for rows in [1usize, 3, 4, 7, 8, 9, 17, 33] {
            for k in [0usize, 1, 3, 4, 7, 8, 9, 16, 21, 67] {
                for (extra, stride) in [(0usize, 1usize), (5, 3)] {
                    let lda = k + extra;
                    let mut a: Vec<f64> = (0..rows * lda)
                        .map(|_| (rng.next_double() - 0.5) * (rng.next_double() * 8.0).exp2())
                        .collect();
                    let mut b: Vec<f64> = (0..k).map(|_| rng.next_double() - 0.4).collect();
                    if k > 2 && rows > 2 {
                        // a NaN in one row, an Inf in another, signed zeros in a third
                        a[lda + k / 2] = f64::NAN;
                        a[2 * lda] = f64::INFINITY;
                        if rows > 3 {
                            for x in &mut a[3 * lda..3 * lda + k] {
                                *x = -0.0;
                            }
                        }
                        b[k - 1] = 0.0;
                    }
                    let mut out = vec![7.0; rows * stride];
                    dot_rows_lanes(lanes, &a, lda, k, &b, rows, &mut out, stride);
                    for r in 0..rows {
                        let p: Vec<f64> = (0..k).map(|j| a[r * lda + j] * b[j]).collect();
                        let want = java_dot(&p, lanes);
                        assert!(
                            same(out[r * stride], want),
                            "lanes {lanes} rows {rows} k {k} lda {lda} row {r}: {} against {want}",
                            out[r * stride]
                        );
                        for s in 1..stride {
                            assert_eq!(out[r * stride + s], 7.0, "stride gap written");
                        }
                    }
                }
            }
        }
    }
    let l = java_vlen();
    for (m, k, c) in [(29, 13, 1), (40, 500, 1), (19, 9, 3), (8, 16, 4)] {
        let a = Dense::from_shape_fn((m, k), |_| rng.next_double() - 0.5);
        let b = Dense::from_shape_fn((k, c), |_| rng.next_double() - 0.5);
        let got = kernels::matmul(
            &Matrix::from_dense(a.clone()),
            &Matrix::from_dense(b.clone()),
        );
        for i in 0..m {
            for j in 0..c {
                let p: Vec<f64> = (0..k).map(|t| a[[i, t]] * b[[t, j]]).collect();
                assert_eq!(
                    got.get(i, j).to_bits(),
                    java_dot(&p, l).to_bits(),
                    "X %*% B {m}x{k}x{c} cell ({i}, {j})"
                );
            }
        }
    }
}

/// `LibMatrixMult.dotProduct` (dense, or sparse with gathered indices): the first `len % L`
/// products one by one, then blocks of `L` summed in order and added.
fn java_dot(p: &[f64], l: usize) -> f64 {
    let mut val = 0.0;
    for x in &p[..p.len() % l] {
        val += x;
    }
    for c in p[p.len() % l..].chunks(l) {
        let mut r = 0.0;
        for x in c {
            r += x;
        }
        val += r;
    }
    val
}

/// `X %*% t(X)` of a dense X adds as SystemDS's right tsmm does (each cell the sum over column
/// blocks of 1024 of `dotProduct`s, one `dotProduct` for a single row), bit for bit, with
/// NaN and Inf propagating through zeros; a sparse X gives the general product's values.
#[test]
fn self_transpose_product_adds_in_systemds_order() {
    use spores_runtime::kernels::matmul::java_vlen;
    let l = java_vlen();
    let mut rng = spores_runtime::kernels::prng::JavaRandom::new(29);
    for (m, n) in [
        (1, 13),
        (1, 1030),
        (5, 10),
        (7, 1),
        (40, 9),
        (12, 1030),
        (90, 33),
    ] {
        let mut a = Dense::zeros((m, n));
        for v in a.iter_mut() {
            if rng.next_double() < 0.8 {
                *v = (rng.next_double() - 0.5) * (rng.next_double() * 8.0).exp2();
            }
        }
        let got = kernels::mul_self_t(&Matrix::Dense(a.clone()));
        assert_eq!(got.shape(), (m, m));
        for i in 0..m {
            for j in 0..m {
                let (r, c) = (i.min(j), i.max(j));
                let prods = |lo: usize, hi: usize| -> Vec<f64> {
                    (lo..hi).map(|k| a[[r, k]] * a[[c, k]]).collect()
                };
                let want = if m == 1 {
                    java_dot(&prods(0, n), l)
                } else {
                    let mut v = 0.0;
                    for lo in (0..n).step_by(1024) {
                        v += java_dot(&prods(lo, (lo + 1024).min(n)), l);
                    }
                    v
                };
                assert_eq!(
                    got.get(i, j).to_bits(),
                    want.to_bits(),
                    "{m}x{n} ({i}, {j})"
                );
            }
        }
        let nnz = a.iter().filter(|x| **x != 0.0).count();
        let sparse = kernels::mul_self_t(&Matrix::Sparse(dense_to_csr(&a, nnz)));
        let naive_t = naive_matmul(
            &naive(&Matrix::Dense(a.clone())),
            &naive(&kernels::transpose(&Matrix::Dense(a.clone()))),
            m,
        );
        assert_matrix(&sparse, &naive_t, &format!("sparse {m}x{n} %*% t"));
    }
    // 0 * NaN and 0 * Inf are NaN in every cell they reach
    let mut a = Dense::zeros((3, 4));
    a[[0, 1]] = f64::NAN;
    a[[2, 3]] = f64::INFINITY;
    let got = kernels::mul_self_t(&Matrix::Dense(a));
    assert!(got.get(0, 2).is_nan() && got.get(2, 0).is_nan() && got.get(0, 0).is_nan());
    assert_eq!(got.get(2, 2), f64::INFINITY);
    assert_eq!(got.get(1, 1).to_bits(), 0.0f64.to_bits());
}

/// SystemDS's dense left tsmm (`matrixMultTransposeSelfDense`, `t(X) %*% X`) as its loops are
/// written: blocks of 32 output rows, 24 rows of X and 1024 columns from the row block's
/// start; per output row the non-zeros of its column of X in the row block, the remainder
/// modulo 4 first, then fours (`vectMultiplyAdd`, `...2`, `...3`, `...4`: the first `len % l`
/// columns add the products' sum, the others fused multiply-adds), upper triangle mirrored.
/// With `k > 1` threads, `matrixMultTransposeSelf`'s split: tasks of `ceil(n / 4k)` output
/// rows, each running those loops over its rows (its blocks of 32 from its first row).
fn java_tsmm_left(a: &Dense, l: usize, k: usize) -> Vec<f64> {
    let (m, n) = a.dim();
    let mut c = vec![0.0; n * n];
    let blklen = if k > 1 {
        n.div_ceil(4 * k).max(1)
    } else {
        n.max(1)
    };
    for (rl, ru) in (0..n).step_by(blklen).map(|r| (r, (r + blklen).min(n))) {
        for bi in (rl..ru).step_by(32) {
            for bk in (0..m).step_by(24) {
                for bj in (bi..n).step_by(1024) {
                    let len = (bj + 1024).min(n) - bj;
                    for i in bi..(bi + 32).min(ru) {
                        let ks: Vec<usize> = (bk..(bk + 24).min(m))
                            .filter(|&k| a[[k, i]] != 0.0)
                            .collect();
                        let bn = ks.len() % 4;
                        let mut groups: Vec<&[usize]> = Vec::new();
                        if bn > 0 {
                            groups.push(&ks[..bn]);
                        }
                        groups.extend(ks[bn..].chunks(4));
                        for g in groups {
                            for t in 0..len {
                                let j = bj + t;
                                let cell = &mut c[i * n + j];
                                if t < len % l {
                                    let mut p = a[[g[0], i]] * a[[g[0], j]];
                                    for &k in &g[1..] {
                                        p += a[[k, i]] * a[[k, j]];
                                    }
                                    *cell += p;
                                } else {
                                    for &k in g {
                                        *cell = a[[k, i]].mul_add(a[[k, j]], *cell);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    for i in 0..n {
        for j in 0..i {
            c[i * n + j] = c[j * n + i];
        }
    }
    c
}

/// `t(X) %*% X` of a dense X adds as SystemDS's left tsmm does, bit for bit (against its loops
/// transliterated), and within rounding of the naive product; NaN and Inf propagate through
/// the zeros its kernel skips; a sparse X gives the general product's values.
#[test]
fn transpose_self_product_adds_in_systemds_order() {
    use spores_runtime::kernels::matmul::java_vlen;
    let l = java_vlen();
    let mut rng = spores_runtime::kernels::prng::JavaRandom::new(31);
    for (m, n, density) in [
        (1, 13, 1.0),
        (10, 49, 0.3),
        (5, 1, 1.0),
        (50, 40, 0.8),
        (30, 70, 0.5),
        (3, 1030, 0.9),
        (100, 9, 1.0),
        // above SystemDS's sequential threshold: its threads split the output rows
        (50, 54, 1.0),
        (40, 150, 0.7),
        (300, 70, 0.9),
    ] {
        let mut a = Dense::zeros((m, n));
        for v in a.iter_mut() {
            if rng.next_double() < density {
                *v = (rng.next_double() - 0.5) * (rng.next_double() * 8.0).exp2();
            }
        }
        // the kernel, at any size; t_mul_self takes it up to SystemDS's sequential threshold
        let kernel = kernels::dense_t_mul_self(&a);
        assert_eq!(kernel.dim(), (n, n));
        // on one thread, and split among SystemDS's threads as it splits them
        for k in [1, 2, 3, 4] {
            let split = kernels::dense_t_mul_self_split(&a, k);
            let want = java_tsmm_left(&a, l, k);
            for i in 0..n {
                for j in 0..n {
                    assert_eq!(
                        split[[i, j]].to_bits(),
                        want[i * n + j].to_bits(),
                        "{m}x{n} on {k} threads ({i}, {j})"
                    );
                }
            }
            if k == 1 {
                assert_eq!(
                    split, kernel,
                    "{m}x{n}: one thread is the sequential kernel"
                );
            }
        }
        let got = kernels::t_mul_self(&Matrix::Dense(a.clone()));
        let work = m * n * n;
        if n > 1 && work <= kernels::matmul::TSMM_SPLIT {
            let k = if work <= kernels::matmul::TSMM_SEQUENTIAL {
                1
            } else {
                kernels::matmul::systemds_threads()
            };
            let want = java_tsmm_left(&a, l, k);
            let same = (0..n)
                .all(|i| (0..n).all(|j| got.get(i, j).to_bits() == want[i * n + j].to_bits()));
            assert!(
                same,
                "{m}x{n}: t_mul_self is SystemDS's tsmm on its {k} threads"
            );
        }
        let t = kernels::transpose(&Matrix::Dense(a.clone()));
        let naive_p = naive_matmul(&naive(&t), &naive(&Matrix::Dense(a.clone())), n);
        assert_matrix(&got, &naive_p, &format!("dense t {m}x{n} %*% itself"));
        let nnz = a.iter().filter(|x| **x != 0.0).count();
        let sparse = kernels::t_mul_self(&Matrix::Sparse(dense_to_csr(&a, nnz)));
        assert_matrix(&sparse, &naive_p, &format!("sparse t {m}x{n} %*% itself"));
    }
    // 0 * NaN and 0 * Inf are NaN in every cell they reach
    let mut a = Dense::zeros((4, 3));
    a[[1, 0]] = f64::NAN;
    a[[3, 2]] = f64::INFINITY;
    let got = kernels::t_mul_self(&Matrix::Dense(a));
    assert!(got.get(0, 2).is_nan() && got.get(2, 0).is_nan() && got.get(0, 0).is_nan());
    assert_eq!(got.get(2, 2), f64::INFINITY);
    assert_eq!(got.get(1, 1).to_bits(), 0.0f64.to_bits());
}

#[test]
fn mmchain_adds_in_systemds_order() {
    use spores_runtime::kernels::matmul::java_vlen;
    let l = java_vlen();
    let mut rng = spores_runtime::kernels::prng::JavaRandom::new(23);
    // rows below, at and past SystemDS's row blocks of 24; columns with and without a head
    // of n % L columns, and past its column blocks of 1024
    for (m, n) in [
        (5, 12),
        (24, 5),
        (60, 5),
        (53, 13),
        (30, 1030),
        (7, 1),
        (49, 9),
    ] {
        let mut a = Dense::zeros((m, n));
        for v in a.iter_mut() {
            if rng.next_double() < 0.8 {
                *v = (rng.next_double() - 0.5) * (rng.next_double() * 8.0).exp2();
            }
        }
        let v: Vec<f64> = (0..n).map(|_| rng.next_double() - 0.3).collect();
        let w: Vec<f64> = (0..m).map(|_| rng.next_double() - 0.6).collect();
        let vd = Dense::from_shape_vec((n, 1), v.clone()).unwrap();
        // weights: none, w, or `- w` (the XtXvy chain t(X) %*% (X %*% v - w))
        for (weighted, minus) in [(false, false), (true, false), (true, true)] {
            let wt = |q: f64, i: usize| match (weighted, minus) {
                (true, true) => q - w[i],
                (true, false) => q * w[i],
                _ => q,
            };
            let chain = |x: &Matrix, wm: &Matrix| {
                if minus {
                    kernels::mmchain_minus(x, wm, &vd)
                } else {
                    kernels::mmchain(x, wm, &vd)
                }
            };
            let wm = if weighted {
                Matrix::Dense(Dense::from_shape_vec((m, 1), w.clone()).unwrap())
            } else {
                Matrix::Dense(Dense::from_elem((m, 1), 1.0))
            };
            // matrixMultChainDense: the first m % 24 rows one by one (dot over all columns,
            // then vectMultiplyAdd), then blocks of 24 rows: dots summed over column blocks
            // of 1024, then vectMultiplyAdd4 over groups of four rows per column block
            let mut c = vec![0.0f64; n];
            let row_dot = |i: usize, lo: usize, hi: usize| {
                let p: Vec<f64> = (lo..hi).map(|j| a[[i, j]] * v[j]).collect();
                java_dot(&p, l)
            };
            let bn = m % 24;
            for i in 0..bn {
                let q = wt(row_dot(i, 0, n), i);
                for j in 0..n {
                    c[j] = if j < n % l {
                        c[j] + q * a[[i, j]]
                    } else {
                        q.mul_add(a[[i, j]], c[j])
                    };
                }
            }
            for bi in (bn..m).step_by(24) {
                let mut tmp = [0.0f64; 24];
                for bj in (0..n).step_by(1024) {
                    for (i, t) in tmp.iter_mut().enumerate() {
                        *t += row_dot(bi + i, bj, (bj + 1024).min(n));
                    }
                }
                for (i, t) in tmp.iter_mut().enumerate() {
                    *t = wt(*t, bi + i);
                }
                for bj in (0..n).step_by(1024) {
                    let len = 1024.min(n - bj);
                    for g in (0..24).step_by(4) {
                        let r = bi + g;
                        for j in bj..bj + len {
                            c[j] = if j - bj < len % l {
                                c[j] + (tmp[g] * a[[r, j]]
                                    + tmp[g + 1] * a[[r + 1, j]]
                                    + tmp[g + 2] * a[[r + 2, j]]
                                    + tmp[g + 3] * a[[r + 3, j]])
                            } else {
                                let mut o = c[j];
                                for k in 0..4 {
                                    o = tmp[g + k].mul_add(a[[r + k, j]], o);
                                }
                                o
                            };
                        }
                    }
                }
            }
            let got = chain(&Matrix::Dense(a.clone()), &wm);
            for j in 0..n {
                assert_eq!(
                    got[[j, 0]].to_bits(),
                    c[j].to_bits(),
                    "dense mmchain {m}x{n} weighted {weighted} minus {minus} col {j}"
                );
            }
            // matrixMultChainSparseXtXv / XtwXv / XtXvy: per row, the sparse dot product,
            // then c[j] += q * x_ij over the row's non-zeros
            let mut c = vec![0.0f64; n];
            for i in 0..m {
                let nz: Vec<usize> = (0..n).filter(|&j| a[[i, j]] != 0.0).collect();
                let p: Vec<f64> = nz.iter().map(|&j| a[[i, j]] * v[j]).collect();
                let q = wt(java_dot(&p, l), i);
                for &j in &nz {
                    c[j] += q * a[[i, j]];
                }
            }
            let nnz = a.iter().filter(|x| **x != 0.0).count();
            let sa = Matrix::Sparse(dense_to_csr(&a, nnz));
            let got = chain(&sa, &wm);
            for j in 0..n {
                assert_eq!(
                    got[[j, 0]].to_bits(),
                    c[j].to_bits(),
                    "sparse mmchain {m}x{n} weighted {weighted} minus {minus} col {j}"
                );
            }
        }
    }
}

/// SplitMix64: a fixed-seed stream of 64-bit values for the logarithm tests.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The distance in ulps of two doubles of the same sign (`u64::MAX` across signs).
fn ulps(a: f64, b: f64) -> u64 {
    if a.is_sign_negative() != b.is_sign_negative() {
        return if a == b { 0 } else { u64::MAX };
    }
    (a.to_bits() as i64).abs_diff(b.to_bits() as i64)
}

/// Inputs for the logarithm: every exponent of the positive normals, values near 1 on both
/// sides (down to 1 ulp away), around each interval edge of the table and each power of 2,
/// subnormals, and the special values.
fn ln_inputs(seed: u64, count: usize) -> Vec<f64> {
    let mut s = seed;
    let mut xs = Vec::with_capacity(count + 64);
    while xs.len() < count {
        let b = splitmix(&mut s);
        let x = match b % 8 {
            // any positive normal: uniform exponent and mantissa
            0 | 1 => f64::from_bits((1 + (b >> 8) % 2046) << 52 | (splitmix(&mut s) >> 12)),
            // near 1: 1 +- u 2^-e, e in 1..=53
            2 | 3 => {
                let e = 1 + (b >> 8) % 53;
                let u = (splitmix(&mut s) >> 11) as f64 / (1u64 << 53) as f64;
                let d = u * 2f64.powi(-(e as i32));
                if b & 0x10 == 0 {
                    1.0 + d
                } else {
                    1.0 - d
                }
            }
            // near 1 by a few ulps
            4 => f64::from_bits((1.0f64.to_bits() as i64 + ((b >> 8) % 4096) as i64 - 2048) as u64),
            // a table interval edge (7 mantissa bits) or a power of 2, +- a few ulps, at a
            // random exponent
            5 => {
                let e = 1 + (b >> 8) % 2046;
                let top = (b >> 24) % 128;
                // the table's offset (0.6875) is a multiple of 2^45 in the mantissa, so its
                // interval edges are the multiples of 2^45
                let edge = (e << 52) | (top << 45);
                let off = ((b >> 40) % 64) as i64 - 32;
                f64::from_bits((edge as i64 + off) as u64)
            }
            // subnormals
            6 => f64::from_bits(1 + (b >> 12) % ((1u64 << 52) - 1)),
            // moderate values, as products of factors in [0, 1] give
            _ => (splitmix(&mut s) >> 11) as f64 / (1u64 << 53) as f64 * 10.0,
        };
        xs.push(x);
    }
    xs.extend([
        0.0,
        -0.0,
        -1.0,
        -1e-300,
        -f64::MIN_POSITIVE,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff0_0000_0000_0001),
        f64::from_bits(0xfff8_dead_beef_0001),
        1.0,
        2.0,
        0.5,
        f64::MIN_POSITIVE,
        f64::from_bits(1),
        f64::from_bits((1 << 52) - 1),
        f64::MAX,
        f64::EPSILON,
        1.0 - f64::EPSILON / 2.0,
        1.0 + f64::EPSILON,
        std::f64::consts::E,
    ]);
    xs
}

/// The logarithm for sums of logarithms: within 1 ulp of `f64::ln` on 4 million fixed-seed
/// inputs of every kind, bit for bit `f64::ln` off the positive normals (zeros, negatives,
/// infinities, NaN of any payload, subnormals) and at 1, and the same bits one by one as in
/// slices of every length (the AVX2 lanes and the scalar tail).
#[test]
fn sumlog_ln_within_one_ulp_of_ln() {
    use kernels::sumlog;
    let xs = ln_inputs(0x5eed_1061, 4_000_000);
    let mut batch = xs.clone();
    // slices of lengths 1..=37 so every value lands in lanes and in tails
    let mut rest = batch.as_mut_slice();
    let mut len = 1;
    while !rest.is_empty() {
        let (h, t) = rest.split_at_mut(len.min(rest.len()));
        sumlog::ln_in_place(h);
        rest = t;
        len = len % 37 + 1;
    }
    let (mut differ, mut worst) = (0usize, 0u64);
    for (&x, &b) in xs.iter().zip(&batch) {
        let (want, got) = (x.ln(), sumlog::ln(x));
        assert_eq!(
            got.to_bits(),
            b.to_bits(),
            "ln({x:e}) one by one vs in a slice"
        );
        let exact = !(x > 0.0 && x.is_finite()) || x < f64::MIN_POSITIVE || x == 1.0;
        if exact || want.is_nan() {
            assert!(
                got.to_bits() == want.to_bits() || (want.is_nan() && got.is_nan()),
                "ln({x:e}) special: {got:e} vs {want:e}"
            );
            if want.is_nan() {
                continue;
            }
        }
        let d = ulps(got, want);
        assert!(
            d <= 1,
            "ln({x:e} = {:#x}): {got:e} vs {want:e}",
            x.to_bits()
        );
        differ += (d != 0) as usize;
        worst = worst.max(d);
    }
    // how often the two disagree in the last bit: both are within ~0.5 ulp of the true value,
    // so rarely (about 1 in 10000 here)
    assert!(
        differ < xs.len() / 1000,
        "{differ} of {} differ by {worst} ulp",
        xs.len()
    );
}

/// Each instruction set of the logarithm for sums gives `sumlog::ln`'s bits one by one, in
/// slices of every length (lanes and tails), and `add_x_ln` adds the products `x * ln(d)` in
/// order, as a scalar loop does. An instruction set the CPU lacks is skipped, saying so (the
/// AVX-512 lanes run only where the CPU has avx512f).
#[test]
fn sumlog_each_isa_gives_the_scalar_bits() {
    use kernels::sumlog::{self, Isa};
    let xs = ln_inputs(0x5eed_2061, 300_000);
    let mut s = 11;
    let ws: Vec<f64> = xs
        .iter()
        .map(|_| (splitmix(&mut s) >> 11) as f64 / (1u64 << 53) as f64 - 0.25)
        .collect();
    for isa in [Isa::Scalar, Isa::Avx2, Isa::Avx512] {
        if !isa.available() {
            eprintln!("sumlog_each_isa_gives_the_scalar_bits: skipped {isa:?}, the CPU lacks it");
            continue;
        }
        let mut batch = xs.clone();
        let (mut rest, mut wrest) = (batch.as_mut_slice(), ws.as_slice());
        let (mut xrest, mut len) = (xs.as_slice(), 1);
        while !rest.is_empty() {
            let n = len.min(rest.len());
            let (h, t) = rest.split_at_mut(n);
            // add_x_ln on a copy, from a nonzero start, against the scalar loop
            let mut d = h.to_vec();
            let got = sumlog::add_x_ln_on(isa, 0.5, &wrest[..n], &mut d);
            let mut want = 0.5;
            for (&w, &x) in wrest[..n].iter().zip(&xrest[..n]) {
                want += w * sumlog::ln(x);
            }
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{isa:?}: add_x_ln over {n} values: {got:e} vs {want:e}"
            );
            sumlog::ln_in_place_on(isa, h);
            rest = t;
            wrest = &wrest[n..];
            xrest = &xrest[n..];
            len = len % 37 + 1;
        }
        for (&x, &b) in xs.iter().zip(&batch) {
            let want = sumlog::ln(x);
            assert!(
                want.to_bits() == b.to_bits() || (want.is_nan() && b.is_nan()),
                "{isa:?}: ln({x:e} = {:#x}) in a slice {b:e} vs one by one {want:e}",
                x.to_bits()
            );
        }
    }
}

/// Against the true logarithm (the double-double `ln_dd`, about 100 bits) on `[0.5, 2]`, the
/// logarithm for sums is within 0.52 ulp; and `ln_dd(2)` is `ln 2` to double-double precision.
#[test]
fn sumlog_ln_against_double_double() {
    use kernels::sumlog;
    let (h, l) = sumlog::ln_dd(2.0);
    assert_eq!(h, std::f64::consts::LN_2);
    // the table's split of ln 2: its last 11 bits clear
    assert_eq!(sumlog::LN2_HI.to_bits(), 0x3fe6_2e42_fefa_3800);
    let tail = f64::from_bits(0x3c7a_bc9e_3b39_803f); // ln 2 - LN_2
    assert!(
        (l - tail).abs() <= 4.0 * f64::EPSILON * tail,
        "{l:e} vs {tail:e}"
    );
    let mut s = 7;
    let mut worst = 0.0f64;
    for q in 0..50_000 {
        let b = splitmix(&mut s);
        let x = if q % 2 == 0 {
            0.5 + 1.5 * ((b >> 11) as f64 / (1u64 << 53) as f64)
        } else {
            1.0 + (((b >> 11) as f64 / (1u64 << 53) as f64) - 0.5) * 2f64.powi(-((b % 50) as i32))
        };
        let (th, tl) = sumlog::ln_dd(x);
        let got = sumlog::ln(x);
        if th == 0.0 {
            assert_eq!(got.to_bits(), 0.0f64.to_bits());
            continue;
        }
        let ulp = f64::from_bits(th.abs().to_bits() + 1) - th.abs();
        let err = ((got - th) - tl).abs() / ulp;
        worst = worst.max(err);
    }
    assert!(worst <= 0.52, "worst error {worst} ulp");
}

/// `wcemm` over a CSR X takes the fixed-width loops for every rank up to 16 (eight entries at
/// a time with AVX-512, four with AVX2, `dot_n`'s bits); over the same values stored dense, the general loop
/// (`dot8`): the same bits, and close to the naive sum.
#[test]
fn wcemm_fixed_width_ranks_match_the_general_loop() {
    let (m, n, eps) = (37, 23, 1e-3);
    let x = fixture(m, n, 0.5, 11, true);
    let nx = naive(&Matrix::Dense(x.clone()));
    for k in 1..=16 {
        let u = fixture(m, k, 1.0, 12, false).mapv(f64::abs);
        let v = fixture(n, k, 1.0, 13, false).mapv(f64::abs);
        let [dense, sparse] = both(&x);
        assert!(sparse.is_sparse() && !dense.is_sparse());
        let got = kernels::wcemm(&sparse, &u, &v, eps);
        assert_eq!(
            got.to_bits(),
            kernels::wcemm(&dense, &u, &v, eps).to_bits(),
            "k = {k}"
        );
        let want: f64 = (0..m)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .filter(|&(i, j)| nx[i][j] != 0.0)
            .map(|(i, j)| {
                nx[i][j] * ((0..k).map(|l| u[[i, l]] * v[[j, l]]).sum::<f64>() + eps).ln()
            })
            .sum();
        assert!(close_rel(got, want, want.abs()), "k = {k}: {got} vs {want}");
    }
}

/// `row_block_sums` against its definition: each block's rows added into a zeroed vector, the
/// blocks' vectors added in block order from the first, bit for bit; a vector long enough to
/// be summed in several parallel chunks (and a partial last one), with values of mixed
/// magnitudes so that any other order of adds would round differently; on pools of 1, 2, 3
/// and 8 threads (the partials are folded in block order as they finish, whichever thread
/// finishes them, and slow blocks make later ones wait to be folded).
#[test]
fn row_block_sums_adds_blocks_in_order() {
    let (m, len) = (64usize, 40_000usize);
    let cell = |i: usize, v: usize| {
        let h = (i as u64 * 2654435761 + v as u64 * 40503) % 1000;
        (h as f64 - 500.0) * 10f64.powi((h % 17) as i32 - 8)
    };
    let block = |rows: std::ops::Range<usize>, acc: &mut [f64]| {
        for i in rows {
            for (v, a) in acc.iter_mut().enumerate() {
                *a += cell(i, v);
            }
        }
    };
    let seen = std::sync::Mutex::new(Vec::new());
    let got = kernels::row_block_sums(m, len, 1 << 20, |rows, acc| {
        seen.lock().unwrap().push(rows.clone());
        block(rows, acc)
    });
    let mut blocks = seen.into_inner().unwrap();
    blocks.sort_by_key(|r| r.start);
    assert!(blocks.len() > 1, "several blocks");
    let mut want = vec![0.0; len];
    for (b, rows) in blocks.into_iter().enumerate() {
        let mut part = vec![0.0; len];
        block(rows, &mut part);
        if b == 0 {
            want = part;
        } else {
            for (w, p) in want.iter_mut().zip(&part) {
                *w += p;
            }
        }
    }
    assert!(
        got.iter()
            .zip(&want)
            .all(|(g, w)| g.to_bits() == w.to_bits()),
        "row_block_sums: each value's partial sums in block order"
    );
    for threads in [1, 2, 3, 8] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let got = pool.install(|| {
            kernels::row_block_sums(m, len, 1 << 20, |rows, acc| {
                // uneven block times: some blocks finish after later ones
                if rows.start % 3 == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                block(rows, acc)
            })
        });
        assert!(
            got.iter()
                .zip(&want)
                .all(|(g, w)| g.to_bits() == w.to_bits()),
            "row_block_sums on {threads} threads: the partial sums in block order"
        );
    }
}

/// SystemDS examines the representation of every element-wise result once computed
/// (`examSparsity`: sparse below 0.4 density when the CSR estimate is smaller than the dense
/// one), but allocates the n-ary `+` of a chain from an estimate (the summed densities, the
/// MCSR rule) and keeps it so, which keeps a matrix with few columns dense at any density:
/// CubicSpline's tridiagonal `A = U + D + L` (12x12, 34 non-zeros) is dense there, so `t(A)
/// %*% b` takes the vector-matrix kernel with its fused multiply-adds, whose bits a sparse
/// product (one rounding per product) does not give; `(U + D) + L` as two instructions is
/// sparse.
#[test]
fn elementwise_results_take_systemds_representation() {
    use spores_runtime::matrix::{exam_sparse, prefers_sparse, prefers_sparse_estimated};
    let n = 12;
    let mut rng = spores_runtime::kernels::prng::JavaRandom::new(5);
    let mut val = || (rng.next_double() - 0.3) * 7.0;
    let band = |k: isize, val: &mut dyn FnMut() -> f64| {
        let mut d = Dense::zeros((n, n));
        for i in 0..n as isize {
            let j = i + k;
            if (0..n as isize).contains(&j) {
                d[[i as usize, j as usize]] = val();
            }
        }
        Matrix::from_dense(d)
    };
    let (u, d, l) = (band(1, &mut val), band(0, &mut val), band(-1, &mut val));
    // each band alone is a sparse-enough matrix by the density rule; the sum of two
    // instructions is examined (sparse), the n-ary sum is dense by its estimate
    assert!(u.is_sparse() && d.is_sparse() && l.is_sparse());
    let add = |a: &Matrix, b: &Matrix| {
        kernels::binary(BinOp::Add, Operand::Matrix(a), Operand::Matrix(b))
    };
    let two = add(&add(&u, &d), &l);
    assert!(two.is_sparse(), "(U + D) + L is sparse, as in SystemDS");
    let a = kernels::elementwise::nary(
        BinOp::Add,
        &[
            Operand::Matrix(&u),
            Operand::Matrix(&d),
            Operand::Matrix(&l),
        ],
    );
    assert_eq!(a.nnz(), 34);
    assert_eq!(a.to_dense(), two.to_dense());
    assert!(prefers_sparse(n, n, 34) && !prefers_sparse_estimated(n, n, 34));
    assert!(exam_sparse(n, n, 34));
    assert!(!a.is_sparse(), "U + D + L is dense, as in SystemDS");
    let b: Vec<f64> = (0..n).map(|_| val()).collect();
    let got = kernels::tmatmul(
        &a,
        &Matrix::from_dense(Dense::from_shape_vec((n, 1), b.clone()).unwrap()),
    );
    // naive: SystemDS's vector-matrix order (rows in pairs, fused multiply-adds past the
    // first n % L columns) over the dense A
    let ad = a.to_dense();
    let lv = kernels::matmul::java_vlen();
    let mut want = vec![0.0f64; n];
    for i in (0..n).step_by(2) {
        for j in 0..n {
            want[j] = if j < n % lv {
                want[j] + (b[i] * ad[[i, j]] + b[i + 1] * ad[[i + 1, j]])
            } else {
                b[i + 1].mul_add(ad[[i + 1, j]], b[i].mul_add(ad[[i, j]], want[j]))
            };
        }
    }
    for (j, w) in want.iter().enumerate() {
        assert_eq!(got.get(j, 0).to_bits(), w.to_bits(), "t(A) %*% b row {j}");
    }
    // every operator's result is examined on its non-zeros: a comparison SystemDS
    // allocates dense is sparse once it finds few non-zeros, as is `-` of two sparse
    // matrices whose densities add up past 0.4 but whose patterns are the same
    let x = Matrix::from_dense(fixture(200, 100, 0.01, 5, false));
    let y = Matrix::from_dense(fixture(200, 100, 1.0, 6, false));
    let bin =
        |op, a: &Matrix, b: &Matrix| kernels::binary(op, Operand::Matrix(a), Operand::Matrix(b));
    assert!(bin(BinOp::Mul, &x, &y).is_sparse());
    assert!(bin(BinOp::Gt, &x, &x).is_sparse());
    assert!(bin(BinOp::Div, &x, &y).is_sparse());
    assert!(!bin(BinOp::Gt, &y, &x).is_sparse());
    let s = Matrix::from_dense(fixture(50, 40, 0.25, 8, false));
    let s2 = kernels::binary(BinOp::Mul, Operand::Matrix(&s), Operand::Scalar(0.5));
    assert!(s.is_sparse() && s2.is_sparse());
    assert!(
        bin(BinOp::Sub, &s, &s2).is_sparse(),
        "same pattern: 0.25 dense"
    );
    // tiny matrices: SystemDS's CSR estimate (at least 4 entries, a pointer per row) is not
    // below the dense size, so they stay dense (seen through SystemDS 3.4's JMLC API:
    // `isInSparseFormat()` of `R * 2`)
    assert!(!exam_sparse(1, 10, 3) && exam_sparse(1, 11, 4) && exam_sparse(1, 11, 3));
    assert!(!exam_sparse(3, 3, 1) && exam_sparse(5, 5, 4) && exam_sparse(10, 10, 0));
    let r = Matrix::from_dense(
        Dense::from_shape_vec((1, 10), vec![0., 1., 0., 0., 2., 0., 0., 3., 0., 0.]).unwrap(),
    );
    assert!(r.is_sparse(), "stored by the density rule");
    assert!(!kernels::binary(BinOp::Mul, Operand::Matrix(&r), Operand::Scalar(2.0)).is_sparse());
    assert!(!kernels::unary(UnaryOp::Abs, &r).is_sparse());
    // wide enough, the density rule and the estimate agree; up to 17 columns with a value
    // in every row, never sparse; a few values in many rows, sparse
    for (r, c, nnz) in [
        (1000, 1000, 1000),
        (100, 100, 3999),
        (3, 1000, 10),
        (1000, 5, 3),
    ] {
        assert!(prefers_sparse_estimated(r, c, nnz), "{r}x{c} nnz {nnz}");
    }
    for c in 3..=17 {
        assert!(!prefers_sparse_estimated(1000, c, 1000), "1000x{c}");
    }
}

/// The fixed-width kernels of a sparse X at every rank they take (1..=16), and the kernels of
/// wider ranks (blocks of eight columns and a tail, 16..=71, and the row loop past it): the dot
/// products of a row's entries, eight at a time in SIMD lanes where the CPU has AVX-512, give
/// the bits of the general loop that a dense X runs (`dot8`): signed zeros (a row of U that is all
/// -0.0 against positive rows of V: each product is -0.0, the dot product +0.0, seen through
/// `wdivmm` without eps as the sign of `x / 0`), infinities,
/// a NaN (compared as NaN, its payload aside), values far apart in magnitude, and rows of up
/// to 60 entries (several groups of eight and a remainder). The sampled sums (`wsloss`,
/// `wsloss(X != 0)`, `wcemm`) too, on those factors and on positive ones.
#[test]
fn fused_narrow_ranks_give_the_general_bits() {
    let (m, n) = (12, 60);
    for k in (1..=16).chain([17, 20, 23, 24, 31, 37, 40, 50, 64, 71, 72, 75, 80]) {
        let x = fixture(m, n, 0.7, 11, true);
        let mut u = fixture(m, k, 1.0, 12 + k as u64, false);
        let mut v = fixture(n, k, 1.0, 40 + k as u64, false);
        u.row_mut(0).fill(-0.0);
        v.row_mut(2).mapv_inplace(f64::abs);
        v.row_mut(3).mapv_inplace(f64::abs);
        u[[2, k - 1]] = f64::INFINITY;
        u[[3, 0]] = f64::NAN;
        u[[4, k / 2]] = 1e300;
        v[[5, k - 1]] = 1e-300;
        v[[6, 0]] = -1e200;
        let up = fixture(m, k, 1.0, 70 + k as u64, false).mapv(f64::abs);
        let vp = fixture(n, k, 1.0, 90 + k as u64, false).mapv(f64::abs);
        let bits = |d: &Dense| -> Vec<u64> {
            d.iter()
                .map(|x| if x.is_nan() { 1 } else { x.to_bits() })
                .collect()
        };
        let mut seen: Vec<Vec<u64>> = Vec::new();
        for xm in both(&x) {
            let mut b = bits(&kernels::sddmm(&xm, &u, &v).to_dense());
            for side in [kernels::Side::Right, kernels::Side::Left] {
                b.extend(bits(&kernels::sddmm_mm(&xm, &u, &v, side)));
            }
            let loss = kernels::wsloss_weighted(None, &xm, &u, &v);
            b.push(if loss.is_nan() { 1 } else { loss.to_bits() });
            // without eps, x / (u . v) shows the sign of a zero dot product (+-Inf)
            for side in [kernels::Side::Right, kernels::Side::Left] {
                b.extend(bits(&kernels::wdivmm(&xm, &u, &v, 0.0, side)));
                b.extend(bits(&kernels::wsubmm(None, &xm, &u, &v, side)));
            }
            // the sampled sums on positive factors (a finite loss, logarithms of positive
            // values) and on the factors with zeros, Inf and NaN
            for (uu, vv) in [(&up, &vp), (&u, &v)] {
                for s in [
                    kernels::wsloss(&xm, uu, vv),
                    kernels::wsloss_weighted(None, &xm, uu, vv),
                    kernels::wcemm(&xm, uu, vv, 1e-3),
                ] {
                    b.push(if s.is_nan() { 1 } else { s.to_bits() });
                }
            }
            seen.push(b);
        }
        assert_eq!(seen[0], seen[1], "dense vs sparse bits at rank {k}");
    }
}

/// `A %*% S - X %*% V` in one pass ([`kernels::small_minus_csr_narrow`]): where it answers, the
/// bits of the two products formed by `matmul` and subtracted by `binary`, and close to the
/// naive product; it declines (`None`) the shapes it does not cover and every case with an
/// Inf or NaN in an operand, which the products as written handle.
#[test]
fn subtraction_of_thin_products_gives_the_formed_bits() {
    use spores_runtime::kernels::dense_product::RowProduct;
    let mut seed = 900;
    let mut answered = 0;
    let bits = |m: &Matrix| -> Vec<u64> { m.to_dense().iter().map(|x| x.to_bits()).collect() };
    for (m, n) in [(13, 9), (300, 40)] {
        for k in [1, 3, 10, 16] {
            for c in [4, 5, 10, 16, 17] {
                for &dx in &DENSITIES {
                    seed += 4;
                    let x = fixture(m, n, dx, seed, true);
                    let mut a = fixture(m, k, 1.0, seed + 1, false);
                    let s = fixture(k, c, 1.0, seed + 2, false);
                    let v = fixture(n, c, 1.0, seed + 3, false);
                    // a row of -0.0 and a row of zeros past its first column (the skipped terms)
                    a.row_mut(0).fill(-0.0);
                    a.row_mut(2).iter_mut().skip(1).for_each(|z| *z = 0.0);
                    let sx = dense_to_csr(&x, 0);
                    let (am, sm, xm, vm) = (
                        Matrix::Dense(a.clone()),
                        Matrix::Dense(s.clone()),
                        Matrix::Sparse(sx.clone()),
                        Matrix::Dense(v.clone()),
                    );
                    let (p, q) = (kernels::matmul(&am, &sm), kernels::matmul(&xm, &vm));
                    let what = format!("{m}x{n} at {dx}, k={k}, c={c}");
                    for flip in [false, true] {
                        let got = kernels::small_minus_csr_narrow(&a, &s, &sx, &v, flip);
                        let (l, r) = if flip { (&q, &p) } else { (&p, &q) };
                        let want =
                            kernels::binary(BinOp::Sub, Operand::Matrix(l), Operand::Matrix(r));
                        // the shapes, both products dense, and A %*% S computed row by row
                        let ss = s.as_standard_layout();
                        let by_rows = RowProduct::new(ss.as_slice().unwrap(), m, k, c).is_some();
                        let covered =
                            (5..=16).contains(&c) && !p.is_sparse() && !q.is_sparse() && by_rows;
                        assert_eq!(got.is_some(), covered, "{what}: answers exactly its shapes");
                        let Some(g) = got else { continue };
                        answered += 1;
                        let g = Matrix::Dense(g);
                        assert_eq!(bits(&g), bits(&want), "{what} flip={flip}: the formed bits");
                        assert!(!want.is_sparse(), "{what}: the formed result is dense too");
                        let (na, nx) = (naive(&am), naive(&xm));
                        let (np, nq) = (
                            naive_matmul(&na, &naive(&sm), c),
                            naive_matmul(&nx, &naive(&vm), c),
                        );
                        let diff: Naive = np
                            .iter()
                            .zip(&nq)
                            .map(|(rp, rq)| {
                                rp.iter()
                                    .zip(rq)
                                    .map(|(x, y)| if flip { y - x } else { x - y })
                                    .collect()
                            })
                            .collect();
                        assert_matrix(&g, &diff, &format!("{what} flip={flip}: against naive"));
                    }
                    // an Inf or NaN in any operand: declined (the formed products repair it)
                    if (5..=16).contains(&c) && !p.is_sparse() && !q.is_sparse() {
                        for (which, val) in [
                            (0, f64::INFINITY),
                            (1, f64::NAN),
                            (2, -f64::INFINITY),
                            (3, f64::NAN),
                        ] {
                            let (mut a2, mut s2, mut v2) = (a.clone(), s.clone(), v.clone());
                            let mut x2 = x.clone();
                            match which {
                                0 => a2[[m - 1, k - 1]] = val,
                                1 => s2[[k - 1, 0]] = val,
                                2 => x2[[m - 1, n - 1]] = val,
                                _ => v2[[n - 1, c - 1]] = val,
                            }
                            let sx2 = dense_to_csr(&x2, 0);
                            assert!(
                                kernels::small_minus_csr_narrow(&a2, &s2, &sx2, &v2, false)
                                    .is_none(),
                                "{what}: declines a non-finite operand {which}"
                            );
                        }
                    }
                }
            }
        }
    }
    assert!(
        answered >= 90,
        "the one-pass kernel answered {answered} cases"
    );
}

/// `wcemm` and `wsloss` of a sparse X at every rank of the fixed-width loops (1..=16), row by
/// row: the lanes (eight entries' dot products, logarithms and products at a time, the last
/// 1..7 entries of a row in padded lanes) give the bits of the general loop that a dense X
/// runs, with and without `eps`: a row of U that is all -0.0 (each dot product +0.0, its
/// logarithm -Inf), an infinite and a NaN factor (the logarithm's special lanes), dot
/// products far below and above 1 (rows of U at 1e-200 and 1e300), rows of up to 60 entries
/// (batches of 32, groups of eight and remainders).
#[test]
fn wcemm_lanes_give_the_general_bits() {
    let (m, n) = (12, 60);
    let nan_as_one = |x: f64| if x.is_nan() { 1 } else { x.to_bits() };
    for k in 1..=16 {
        let x = fixture(m, n, 0.7, 21, true);
        let mut u = fixture(m, k, 1.0, 22 + k as u64, false).mapv(f64::abs);
        let mut v = fixture(n, k, 1.0, 50 + k as u64, false).mapv(f64::abs);
        u.row_mut(0).fill(-0.0);
        u[[2, k - 1]] = f64::INFINITY;
        u[[3, 0]] = f64::NAN;
        u.row_mut(4).fill(1e-200);
        u.row_mut(5).fill(1e300);
        v[[5, k - 1]] = 1e-300;
        v[[7, 0]] = -1e200;
        let mut seen: Vec<Vec<u64>> = Vec::new();
        for xm in both(&x) {
            let mut b = Vec::new();
            for eps in [0.0, 1e-3] {
                b.push(nan_as_one(kernels::wcemm(&xm, &u, &v, eps)));
            }
            b.push(nan_as_one(kernels::wsloss(&xm, &u, &v)));
            seen.push(b);
        }
        // row by row (a NaN row would hide the others in the sums above)
        for i in 0..m {
            let xi = x.slice(ndarray::s![i..i + 1, ..]).to_owned();
            let ui = u.slice(ndarray::s![i..i + 1, ..]).to_owned();
            for (s, xm) in seen.iter_mut().zip(both(&xi)) {
                for eps in [0.0, 1e-3] {
                    s.push(nan_as_one(kernels::wcemm(&xm, &ui, &v, eps)));
                }
                s.push(nan_as_one(kernels::wsloss(&xm, &ui, &v)));
            }
        }
        assert_eq!(seen[0], seen[1], "dense vs sparse bits at rank {k}");
        // not all NaN: the rows exercise the logarithm's ordinary lanes
        let ordinary = seen[0].iter().filter(|&&b| b != 1).count();
        assert!(ordinary > m, "rank {k}: {ordinary} results not NaN");
    }
}

#[test]
fn sparse_matrix_vector_adds_in_systemds_order() {
    use spores_runtime::kernels::matmul::java_vlen;
    let l = java_vlen();
    let mut rng = spores_runtime::kernels::prng::JavaRandom::new(31);
    // short right-hand sides (each row a gathering dot product) with rows shorter than,
    // equal to and longer than L stored values; a tall one SystemDS blocks for its cache
    // (k > max(2048, 2048 (m k / nnz) / 32): one plain sum in order per row)
    for (m, k, density) in [
        (40, 50, 0.3),
        (25, 300, 0.35),
        (10, 3000, 0.05),
        (6, 2500, 0.3),
    ] {
        let mut a = Dense::zeros((m, k));
        for x in a.iter_mut() {
            if rng.next_double() < density {
                *x = (rng.next_double() - 0.5) * (rng.next_double() * 30.0).exp2();
            }
        }
        let v: Vec<f64> = (0..k).map(|_| rng.next_double() - 0.4).collect();
        let nnz = a.iter().filter(|x| **x != 0.0).count();
        let sparse = Matrix::from_dense(a.clone());
        assert!(sparse.is_sparse(), "{m}x{k} at {density} is stored sparse");
        let vm = Matrix::Dense(Dense::from_shape_vec((k, 1), v.clone()).unwrap());
        let got = kernels::matmul(&sparse, &vm).to_dense();
        let blocked = k as u64 > (2048 * ((m * k / nnz) as u64) / 32).max(2048);
        for i in 0..m {
            let p: Vec<f64> = (0..k)
                .filter(|&j| a[[i, j]] != 0.0)
                .map(|j| a[[i, j]] * v[j])
                .collect();
            let want = if blocked {
                p.iter().fold(0.0, |s, x| s + x)
            } else {
                java_dot(&p, l)
            };
            assert_eq!(
                got[[i, 0]].to_bits(),
                want.to_bits(),
                "{m}x{k} row {i}: {} vs {want}",
                got[[i, 0]]
            );
        }
    }
}

/// `X op X` and `X op Y` for a Y storing the same cells as X (the same-pattern path: values
/// side by side, the structure copied), and `X op s` for scalars that keep zeros (the
/// sparse-driven path), against the cell-wise reference bit for bit: NaN, Inf, a stored
/// `-0.0`, values whose square underflows to zero; cells that become a zero of either sign
/// are `+0.0` and unstored, and the representation is SystemDS's `examSparsity` on the
/// remaining non-zeros. Sizes past the parallel threshold included.
#[test]
fn same_pattern_elementwise_results_against_naive() {
    use spores_runtime::matrix::exam_sparse;
    let mut seed = 900;
    for (m, n) in shapes().into_iter().chain([(150, 240), (600, 400)]) {
        for &d in &DENSITIES {
            seed += 1;
            let mut a = fixture(m, n, d, seed, true);
            // special values at stored cells (kept stored: none is +0.0)
            let specials = [
                f64::NAN,
                f64::INFINITY,
                -0.0,
                1e-200,
                -1e-170,
                f64::NEG_INFINITY,
            ];
            let stored: Vec<(usize, usize)> = (0..m)
                .flat_map(|i| (0..n).map(move |j| (i, j)))
                .filter(|&(i, j)| a[[i, j]] != 0.0)
                .collect();
            for (k, &(i, j)) in stored.iter().step_by(7).enumerate() {
                a[[i, j]] = specials[k % specials.len()];
            }
            let nnz = a.iter().filter(|v| v.to_bits() != 0).count();
            let x = Matrix::Sparse(dense_to_csr(&a, nnz));
            let x2 = Matrix::Sparse(dense_to_csr(&a, nnz));
            let na = naive(&x);
            let check = |got: &Matrix, f: &dyn Fn(f64, f64) -> f64, what: &str| {
                got.check_invariants();
                let mut nz = 0;
                for (i, row) in na.iter().enumerate() {
                    for (j, &v) in row.iter().enumerate() {
                        let w = f(v, v);
                        let g = got.get(i, j);
                        if w == 0.0 {
                            assert_eq!(g.to_bits(), 0, "{what}: ({i},{j}) got {g}, want +0");
                        } else if w.is_nan() {
                            assert!(g.is_nan(), "{what}: ({i},{j}) got {g}, want NaN");
                            nz += 1;
                        } else {
                            assert_eq!(g.to_bits(), w.to_bits(), "{what}: ({i},{j}) {g} {w}");
                            nz += 1;
                        }
                    }
                }
                assert_eq!(
                    got.is_sparse(),
                    exam_sparse(m, n, nz),
                    "{what}: representation"
                );
            };
            for op in BINOPS {
                if op.apply(0.0, 0.0) != 0.0 {
                    continue;
                }
                for (y, which) in [(&x, "itself"), (&x2, "a copy")] {
                    let got = kernels::binary(op, Operand::Matrix(&x), Operand::Matrix(y));
                    check(
                        &got,
                        &|u, v| op.apply(u, v),
                        &format!("{m}x{n}@{d} X {op} {which}"),
                    );
                }
            }
            for (op, s) in [
                (BinOp::Pow, 2.0),
                (BinOp::Mul, -0.5),
                (BinOp::Mul, 1e-300),
                (BinOp::Div, 3.0),
            ] {
                let got = kernels::binary(op, Operand::Matrix(&x), Operand::Scalar(s));
                check(
                    &got,
                    &|u, _| op.apply(u, s),
                    &format!("{m}x{n}@{d} X {op} {s}"),
                );
            }
        }
    }
}

/// `Matrix::from_triplets` (the Matrix Market, binary and `table` readers, `diag`,
/// `removeEmpty`) against a naive reference: triplets in any order give sorted CSR rows
/// (`check_invariants`), a cell given several times is the sum of its values in the order they
/// come (the first value, then `+` each later one: `1e16 + 1 - 1e16` is 0 in that order, 1 in
/// another), zeros of either sign summing to a stored `-0.0` stay stored, and a `+0.0` sum is
/// dropped. Shapes 1x1 to 40x300, both representations the density rule picks.
#[test]
fn triplets_sum_duplicates_in_input_order() {
    let mut rng = spores_runtime::kernels::prng::JavaRandom::new(17);
    for (m, n, count) in [
        (1, 1, 3),
        (1, 9, 12),
        (9, 1, 12),
        (13, 7, 40),
        (40, 300, 900),
    ] {
        let mut entries = Vec::new();
        for _ in 0..count {
            let i = (rng.next_double() * m as f64) as usize;
            let j = (rng.next_double() * n as f64) as usize;
            let v = match (rng.next_double() * 6.0) as usize {
                0 => 1e16,
                1 => -1e16,
                2 => -0.0,
                3 => 0.0,
                _ => rng.next_double() * 4.0 - 2.0,
            };
            entries.push((i, j, v));
        }
        // the naive sum per cell in input order
        let mut want: Vec<Vec<Option<f64>>> = vec![vec![None; n]; m];
        for &(i, j, v) in &entries {
            let c = &mut want[i][j];
            *c = Some(c.map_or(v, |s| s + v));
        }
        let got = Matrix::from_triplets(m, n, &entries);
        got.check_invariants();
        for (i, row) in want.iter().enumerate() {
            for (j, w) in row.iter().enumerate() {
                let w = w.unwrap_or(0.0);
                let g = got.get(i, j);
                assert_eq!(g.to_bits(), w.to_bits(), "{m}x{n} ({i},{j}): {g} vs {w}");
            }
        }
    }
    // the order of a cell's values decides its sum
    let order = |vals: [f64; 3]| {
        let e: Vec<_> = vals.iter().map(|&v| (1, 2, v)).collect();
        Matrix::from_triplets(3, 4, &e).get(1, 2)
    };
    assert_eq!(order([1e16, 1.0, -1e16]), 0.0);
    assert_eq!(order([1e16, -1e16, 1.0]), 1.0);
    assert_eq!(order([-0.0, -0.0, -0.0]).to_bits(), (-0.0f64).to_bits());
}

/// CSR's 32-bit column indices: a stored entry takes 12 bytes; a matrix of up to
/// `MAX_SPARSE_COLS` (2^32 - 1) columns is stored sparse by the density rules, a wider one
/// dense whatever its density; and a CSR matrix exactly that wide works at its last column
/// (the largest index, 2^32 - 2): reading cells, element-wise operations driven by its
/// entries, row sums, sums and column slices.
#[test]
fn csr_column_indices_are_32_bits() {
    use spores_runtime::matrix::{
        exam_sparse, prefers_sparse, prefers_sparse_estimated, CSR_ENTRY_BYTES, MAX_SPARSE_COLS,
    };
    assert_eq!(CSR_ENTRY_BYTES, 12);
    assert_eq!(MAX_SPARSE_COLS, u32::MAX as usize);
    let w = MAX_SPARSE_COLS;
    assert!(prefers_sparse(2, w, 2) && exam_sparse(2, w, 2) && prefers_sparse_estimated(2, w, 2));
    assert!(!prefers_sparse(2, w + 1, 2));
    assert!(!exam_sparse(2, w + 1, 2));
    assert!(!prefers_sparse_estimated(2, w + 1, 2));
    let last = w - 1;
    let x = Matrix::from_triplets(
        2,
        w,
        &[(0, last, 2.5), (1, 0, -1.0), (1, 7, 4.0), (1, last, 0.5)],
    );
    assert!(x.is_sparse());
    x.check_invariants();
    assert_eq!(
        (x.get(0, last), x.get(1, last), x.get(1, 7), x.get(0, 7)),
        (2.5, 0.5, 4.0, 0.0)
    );
    let y = kernels::binary(BinOp::Mul, Operand::Matrix(&x), Operand::Scalar(-2.0));
    assert!(y.is_sparse());
    assert_eq!((y.get(0, last), y.get(1, last), y.nnz()), (-5.0, -1.0, 4));
    let r = kernels::aggregate_dir(AggOp::Sum, AggDir::Row, &x);
    assert_eq!((r.get(0, 0), r.get(1, 0)), (2.5, 3.5));
    assert_eq!(kernels::aggregate_all(AggOp::Sum, &x), 6.0);
    let s = kernels::slice(&x, 0..2, last - 2..w);
    assert_eq!(s.shape(), (2, 3));
    assert_eq!((s.get(0, 2), s.get(1, 2), s.get(1, 0)), (2.5, 0.5, 0.0));
}

/// SystemDS's split of its multi-threaded vector products, modelled naively: with `threads`
/// threads and enough work ([`kernels::systemds_splits`]) the rows `0..m` are cut into
/// `m / threads` (the first `m % threads` one more), each block's partial summed from zero on
/// its own, the partials added into zeros in order, or for mmchain (`vectAddAll`) the first
/// `threads % 4` in order and then groups of four as `c + (((a1 + a2) + a3) + a4)`.
fn split_model(
    threads: usize,
    m: usize,
    len: usize,
    flops: usize,
    fours: bool,
    part: impl Fn(usize, usize) -> Vec<f64>,
) -> Vec<f64> {
    let splits = threads > 1 && (8 * len * threads) < 85_899_345 && flops > 128 * 1024;
    if !splits {
        return part(0, m);
    }
    let (base, rest) = (m / threads, m % threads);
    let mut parts = Vec::new();
    let mut lo = 0;
    for t in 0..threads {
        let n = base + usize::from(t < rest);
        if n > 0 {
            parts.push(part(lo, lo + n));
            lo += n;
        }
    }
    let mut c = vec![0.0f64; len];
    let single = if fours { parts.len() % 4 } else { parts.len() };
    for p in &parts[..single] {
        for j in 0..len {
            c[j] += p[j];
        }
    }
    for g in parts[single..].chunks(4) {
        for j in 0..len {
            c[j] += ((g[0][j] + g[1][j]) + g[2][j]) + g[3][j];
        }
    }
    c
}

fn rows_of(d: &Dense, lo: usize, hi: usize) -> Dense {
    Dense::from_shape_fn((hi - lo, d.ncols()), |(i, j)| d[[lo + i, j]])
}

fn bits_eq(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (j, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "{what}: at {j} got {g}, want {w}");
    }
}

#[test]
fn systemds_split_decision_and_partition() {
    // SystemDS's thresholds: more than 128K flops, partials under 1% of an 8 GiB heap
    assert!(!kernels::systemds_splits(2, 10, 128 * 1024));
    assert!(kernels::systemds_splits(2, 10, 128 * 1024 + 1));
    assert!(!kernels::systemds_splits(1, 10, 1 << 30));
    let big = (kernels::SYSTEMDS_PAR_MEM / 16.0) as usize;
    assert!(kernels::systemds_splits(2, big - 1, 1 << 30));
    assert!(!kernels::systemds_splits(2, big + 1, 1 << 30));
    assert_eq!(kernels::systemds_balanced(7, 3), vec![0..3, 3..5, 5..7]);
    assert_eq!(kernels::systemds_balanced(2, 4), vec![0..1, 1..2]);
    assert_eq!(
        kernels::systemds_balanced(0, 2),
        Vec::<std::ops::Range<usize>>::new()
    );
}

#[test]
fn a_sum_in_any_order_is_the_compensated_sum_in_blocks() {
    use kernels::aggregate::{sum_any_order, SEQ_CELLS};
    let seq = |xs: &[f64]| {
        let mut k = kernels::aggregate::Kahan::default();
        xs.iter().for_each(|&v| k.add(v));
        k.sum
    };
    for len in [
        0,
        1,
        7,
        8,
        9,
        1000,
        (1 << 14) + 3,
        SEQ_CELLS - 5,
        SEQ_CELLS + 77,
    ] {
        let d = fixture(len.max(1), 1, 1.0, len as u64, false);
        let xs = &d.as_slice().unwrap()[..len];
        let m = Matrix::Dense(Dense::from_shape_vec((len, 1), xs.to_vec()).unwrap());
        let (got, want) = (sum_any_order(&m), seq(xs));
        assert!(close(got, want), "{len} values: {got} vs {want}");
        // past SEQ_CELLS the program's own sums take the same blocks: the same bits
        if len > SEQ_CELLS {
            let own = kernels::aggregate_all(AggOp::Sum, &m);
            assert_eq!(got.to_bits(), own.to_bits(), "{len} values");
        }
        // a sparse matrix sums its stored values
        let [_, sparse] = both(&Dense::from_shape_vec((len, 1), xs.to_vec()).unwrap());
        assert_eq!(
            sum_any_order(&sparse).to_bits(),
            got.to_bits(),
            "{len} values, CSR"
        );
    }
    // IEEE: from +0.0, infinities and NaN as a plain sum gives them
    let col =
        |xs: &[f64]| Matrix::Dense(Dense::from_shape_vec((xs.len(), 1), xs.to_vec()).unwrap());
    assert_eq!(
        sum_any_order(&col(&[-0.0, -0.0])).to_bits(),
        0.0f64.to_bits()
    );
    assert_eq!(
        sum_any_order(&col(&[1.0, f64::INFINITY, 2.0])),
        f64::INFINITY
    );
    assert!(sum_any_order(&col(&[f64::INFINITY, 1.0, f64::NEG_INFINITY])).is_nan());
    assert!(sum_any_order(&col(&[1.0, f64::NAN])).is_nan());
}

#[test]
fn narrow_transposed_products_of_a_sparse_x_follow_systemds_thread_split() {
    // t(X) %*% M, X sparse, M of 2..16 columns: SystemDS runs t(t(M) %*% X), split over X's
    // rows into one block per thread, each block's partial product from zero (rows in order),
    // the partials added in order; 40x20 is under its thresholds (one block)
    for (m, n) in [(701, 200), (40, 20)] {
        let x = fixture(m, n, 0.1, (m * 3 + n) as u64, true);
        for c in [2, 3, 5, 8, 16] {
            let b = fixture(m, c, 1.0, c as u64, false);
            let run = |lo: usize, hi: usize, threads: usize| {
                let [_, Matrix::Sparse(s)] = both(&rows_of(&x, lo, hi)) else {
                    unreachable!()
                };
                let before = kernels::set_systemds_threads(Some(threads));
                let got = kernels::fused::csr_t_mul_dense(&s, &rows_of(&b, lo, hi));
                kernels::set_systemds_threads(before);
                // column-major, as the split model adds whole partials
                got.t().iter().copied().collect::<Vec<f64>>()
            };
            // one block: each cell summed over the rows in order from +0.0
            let seq: Vec<f64> = (0..c)
                .flat_map(|l| {
                    let (x, b) = (&x, &b);
                    (0..n).map(move |j| (0..m).fold(0.0, |a, i| a + x[[i, j]] * b[[i, l]]))
                })
                .collect();
            bits_eq(&run(0, m, 1), &seq, &format!("{m}x{n} by {c}: one thread"));
            let mut split_seen = false;
            for threads in [2, 3] {
                let what = format!("{m}x{n} by {c}, {threads} threads");
                let got = run(0, m, threads);
                let model = split_model(threads, m, n * c, 2 * m * n * c, false, |lo, hi| {
                    run(lo, hi, 1)
                });
                bits_eq(&got, &model, &what);
                split_seen |= got != seq;
                // t(M) %*% X written as such: the same product in the same order
                let [_, Matrix::Sparse(s)] = both(&x) else {
                    unreachable!()
                };
                let before = kernels::set_systemds_threads(Some(threads));
                let tm = b.t().as_standard_layout().into_owned();
                let direct = kernels::dense_mul_csr(&tm, &s);
                kernels::set_systemds_threads(before);
                let direct: Vec<f64> = direct.iter().copied().collect();
                bits_eq(&direct, &got, &format!("t(M) %*% X, {what}"));
            }
            assert_eq!(
                split_seen,
                m > 100,
                "{m}x{n} by {c}: the split changes some bits"
            );
        }
    }
}

#[test]
fn vector_products_follow_systemds_thread_split() {
    // shapes past and below the thresholds: 701x200 (every product splits), 200x300 (dense
    // mmchain's 4 flops per cell split, the 2 of the others do not), 40x20 (nothing splits);
    // thread counts 1, 2, 3 (in order), 5 (one, then a group of four)
    for (m, n) in [(701, 200), (200, 300), (40, 20)] {
        for density in [1.0, 0.1] {
            let x = fixture(m, n, density, (m * 7 + n) as u64, true);
            let xs = both(&x);
            let w: Vec<f64> = fixture(m, 1, 1.0, 5, false).iter().copied().collect();
            let v = fixture(n, 1, 1.0, 6, false);
            let wd = Dense::from_shape_vec((m, 1), w.clone()).unwrap();
            let want_tw: Vec<f64> = (0..n)
                .map(|j| (0..m).map(|i| x[[i, j]] * w[i]).sum())
                .collect();
            let mut split_seen = false;
            for threads in [1, 2, 3, 5] {
                let what = format!("{m}x{n} density {density} threads {threads}");
                // t(X) %*% w, dense and CSR, and t(w) %*% X with X as the right operand
                let tw_dense = |lo: usize, hi: usize, t: usize| {
                    let xb = rows_of(&x, lo, hi);
                    let xb = xb.as_standard_layout();
                    kernels::dense_t_mul_vector(xb.as_slice().unwrap(), n, &w[lo..hi], t)
                };
                let got = tw_dense(0, m, threads);
                let model = split_model(threads, m, n, 2 * m * n, false, |lo, hi| {
                    tw_dense(lo, hi, 1)
                });
                bits_eq(&got, &model, &format!("dense t(X) %*% w {what}"));
                for (g, want) in got.iter().zip(&want_tw) {
                    assert!(close(*g, *want), "dense t(X) %*% w {what}: {g} vs {want}");
                }
                if threads > 1 && got != tw_dense(0, m, 1) {
                    split_seen = true;
                }
                let tw_csr = |lo: usize, hi: usize, t: usize| {
                    let [_, Matrix::Sparse(s)] = both(&rows_of(&x, lo, hi)) else {
                        unreachable!()
                    };
                    let wb = Dense::from_shape_vec((hi - lo, 1), w[lo..hi].to_vec()).unwrap();
                    kernels::csr_t_mul_vector(&s, &wb, t)
                        .iter()
                        .copied()
                        .collect::<Vec<_>>()
                };
                let got = tw_csr(0, m, threads);
                let model =
                    split_model(threads, m, n, 2 * m * n, false, |lo, hi| tw_csr(lo, hi, 1));
                bits_eq(&got, &model, &format!("csr t(X) %*% w {what}"));
                for (g, want) in got.iter().zip(&want_tw) {
                    assert!(close(*g, *want), "csr t(X) %*% w {what}: {g} vs {want}");
                }
                let row_csr = |lo: usize, hi: usize, t: usize| {
                    let [_, Matrix::Sparse(s)] = both(&rows_of(&x, lo, hi)) else {
                        unreachable!()
                    };
                    kernels::dense_row_mul_csr(&w[lo..hi], &s, t)
                };
                let got = row_csr(0, m, threads);
                let model =
                    split_model(threads, m, n, 2 * m * n, false, |lo, hi| row_csr(lo, hi, 1));
                bits_eq(&got, &model, &format!("t(w) %*% X (CSR) {what}"));
                for (g, want) in got.iter().zip(&want_tw) {
                    assert!(close(*g, *want), "t(w) %*% X (CSR) {what}: {g} vs {want}");
                }
                // a sparse row vector (half its entries zero) by a CSR matrix
                let wz: Vec<f64> = w
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| if i % 2 == 0 { 0.0 } else { x })
                    .collect();
                let rowcsr = |lo: usize, hi: usize, t: usize| {
                    let [_, Matrix::Sparse(s)] = both(&rows_of(&x, lo, hi)) else {
                        unreachable!()
                    };
                    let a = Dense::from_shape_vec((1, hi - lo), wz[lo..hi].to_vec()).unwrap();
                    let [_, Matrix::Sparse(a)] = both(&a) else {
                        unreachable!()
                    };
                    kernels::csr_row_mul_csr(&a, &s, t)
                };
                let got = rowcsr(0, m, threads);
                let model =
                    split_model(threads, m, n, 2 * m * n, false, |lo, hi| rowcsr(lo, hi, 1));
                bits_eq(&got, &model, &format!("sparse t(w) %*% X (CSR) {what}"));
                for j in 0..n {
                    let want: f64 = (0..m).map(|i| x[[i, j]] * wz[i]).sum();
                    assert!(close(got[j], want), "sparse t(w) %*% X {what}: {}", got[j]);
                }
                // mmchain, both representations, weighted and minus (XtXvy)
                for (xm, flops) in [(&xs[0], 4 * m * n), (&xs[1], 2 * m * n)] {
                    for minus in [false, true] {
                        let chain = |lo: usize, hi: usize, t: usize| {
                            let xb = match xm {
                                Matrix::Dense(_) => Matrix::Dense(rows_of(&x, lo, hi)),
                                Matrix::Sparse(_) => both(&rows_of(&x, lo, hi))[1].clone(),
                            };
                            let wb = Matrix::Dense(rows_of(&wd, lo, hi));
                            kernels::mmchain_threads(&xb, &wb, &v, minus, t)
                                .iter()
                                .copied()
                                .collect::<Vec<_>>()
                        };
                        let got = chain(0, m, threads);
                        let model =
                            split_model(threads, m, n, flops, true, |lo, hi| chain(lo, hi, 1));
                        let what = format!("mmchain {} minus {minus} {what}", xm.is_sparse());
                        bits_eq(&got, &model, &what);
                        for j in 0..n {
                            let want: f64 = (0..m)
                                .map(|i| {
                                    let q: f64 = (0..n).map(|c| x[[i, c]] * v[[c, 0]]).sum();
                                    x[[i, j]] * if minus { q - w[i] } else { q * w[i] }
                                })
                                .sum();
                            assert!(close(got[j], want), "{what}: {} vs {want}", got[j]);
                        }
                        if threads > 1 && got != chain(0, m, 1) {
                            split_seen = true;
                        }
                    }
                }
            }
            // the split changes bits on this data when it is taken (so the model is checked)
            assert_eq!(split_seen, m * n >= 60_000, "{m}x{n} density {density}");
        }
    }
}

/// `smmchain` on a CSR X at every fixed width (1 to 16, whose rows of V and of the
/// accumulator are padded to a power of two): the bits of the rows one after another (few
/// rows: one block), each product's adds in the order of the stored entries, from +0.0, the
/// row sum compensated as `rowSums`, each accumulator cell's updates in row order; Inf, NaN
/// and -0.0 in V and P.
#[test]
fn smmchain_padded_widths_give_the_row_order_bits() {
    let (m, n) = (40, 30);
    for k in 1..=16 {
        let x = fixture(m, n, 0.4, 300 + k as u64, true);
        let mut v = fixture(n, k, 1.0, 330 + k as u64, false);
        let mut p = fixture(m, k, 1.0, 360 + k as u64, false);
        v[[0, k - 1]] = f64::INFINITY;
        v[[3, 0]] = -0.0;
        p[[5, k / 2]] = f64::NAN;
        p[[6, 0]] = 1e300;
        let xm = both(&x)[1].clone();
        let Matrix::Sparse(s) = &xm else {
            unreachable!("both() gives a CSR second")
        };
        let mut want = vec![vec![0.0f64; k]; n];
        for i in 0..m {
            let (lo, hi) = (s.indptr().raw_storage()[i], s.indptr().raw_storage()[i + 1]);
            let mut y = vec![0.0f64; k];
            for e in lo..hi {
                let (j, xv) = (s.indices()[e] as usize, s.data()[e]);
                for l in 0..k {
                    y[l] += xv * v[[j, l]];
                }
            }
            let q: Vec<f64> = (0..k).map(|l| p[[i, l]] * y[l]).collect();
            // rowSums' compensated sum (SystemDS's KahanPlus; a non-finite term or sum is
            // added plainly and drops the correction)
            let (mut sum, mut corr) = (0.0f64, 0.0f64);
            for &t in &q {
                if !(sum.is_finite() && t.is_finite()) {
                    sum += t;
                    corr = 0.0;
                } else {
                    let c = t + corr;
                    let s2 = sum + c;
                    corr = c - (s2 - sum);
                    sum = s2;
                }
            }
            let r: Vec<f64> = (0..k).map(|l| q[l] - p[[i, l]] * sum).collect();
            for e in lo..hi {
                let (j, xv) = (s.indices()[e] as usize, s.data()[e]);
                for l in 0..k {
                    want[j][l] += xv * r[l];
                }
            }
        }
        let got = kernels::smmchain(&xm, &p, &v);
        let b = |x: f64| if x.is_nan() { 1 } else { x.to_bits() };
        for j in 0..n {
            for l in 0..k {
                assert_eq!(
                    b(got[[j, l]]),
                    b(want[j][l]),
                    "rank {k}, cell ({j}, {l}): {} vs {}",
                    got[[j, l]],
                    want[j][l]
                );
            }
        }
    }
}

/// SystemDS's order for one cell of a dense product with `plan` at `vlen` lanes, written cell
/// by cell from `LibMatrixMult`'s loops (the kernels run them row segment by row segment):
/// the general kernel's groups (per 24 columns of A's row, its non-zeros, `count % 4` first,
/// then fours), the short-left kernel's (per range of B's rows, the first `len % 4` non-zero
/// terms one by one, then fours with zeros), each group added as `c + (a1 b1 + ...)` in the
/// first `len % vlen` columns of its block of 1024 and by fused multiply-adds after.
fn systemds_cell(
    a: &[f64],
    b: &[f64],
    (cd, n): (usize, usize),
    (i, j): (usize, usize),
    plan: &spores_runtime::kernels::dense_product::Plan,
    vlen: usize,
) -> f64 {
    use spores_runtime::kernels::dense_product::{Kernel, Split};
    // one task over every column, as a list of column ranges
    let whole = std::iter::once(0..n).collect::<Vec<_>>();
    // the block of 1024 columns holding j, counted from the start of its task's columns
    let cols = match &plan.split {
        Split::RhsCols(c) => c,
        _ => &whole,
    };
    let r = cols.iter().find(|r| r.contains(&j)).unwrap();
    let bj = r.start + (j - r.start) / 1024 * 1024;
    let in_head = j - bj < ((bj + 1024).min(r.end) - bj) % vlen;
    let add = |c: f64, group: &[usize]| -> f64 {
        if in_head {
            let mut s = a[i * cd + group[0]] * b[group[0] * n + j];
            for &k in &group[1..] {
                s += a[i * cd + k] * b[k * n + j];
            }
            c + s
        } else {
            group
                .iter()
                .fold(c, |c, &k| a[i * cd + k].mul_add(b[k * n + j], c))
        }
    };
    let nz = |ks: std::ops::Range<usize>| -> Vec<usize> {
        ks.filter(|&k| a[i * cd + k] != 0.0).collect()
    };
    match plan.kernel {
        Kernel::General => {
            let mut c = 0.0;
            for bk in (0..cd).step_by(24) {
                let ks = nz(bk..(bk + 24).min(cd));
                let h = ks.len() % 4;
                if h > 0 {
                    c = add(c, &ks[..h]);
                }
                for g in ks[h..].chunks(4) {
                    c = add(c, g);
                }
            }
            c
        }
        Kernel::ShortLhs => {
            let ranges = match &plan.split {
                Split::RhsRows(r) => r.clone(),
                _ => std::iter::once(0..cd).collect(),
            };
            let part = |r: &std::ops::Range<usize>| {
                let kn = r.len() % 4;
                let mut p = 0.0;
                for k in nz(r.start..r.start + kn) {
                    p = add(p, &[k]);
                }
                for k in (r.start + kn..r.end).step_by(4) {
                    p = add(p, &[k, k + 1, k + 2, k + 3]);
                }
                p
            };
            if ranges.len() == 1 {
                part(&ranges[0])
            } else {
                ranges.iter().fold(0.0, |c, r| c + part(r))
            }
        }
        k => panic!("no cell model for {k:?}"),
    }
}

/// SystemDS's dense products kernel by kernel (`dense_product::product`): the general and
/// short-left kernels give the bits of [`systemds_cell`] at 2, 4 and 8 lanes on 1, 2 and 4
/// threads (splits over B's rows and columns), with zeros in A (the groups move) and signed
/// zeros; every kernel is close to the naive product, and where a kernel says it formed every
/// product the NaN of `0 * Inf` is there without repair; `matmul` repairs the others.
#[test]
fn dense_products_follow_systemds_kernels() {
    use spores_runtime::kernels::dense_product::{plan, product, Kernel, Split};
    let mut seen = std::collections::BTreeSet::new();
    let mut seed = 5000;
    let shapes = [
        (2, 60, 5),
        (1, 70, 9),
        (1, 3000, 1),
        (40, 3000, 1),
        (7, 1, 9),
        (9, 1, 1),
        (1, 1, 1),
        (200, 60, 10),
        (37, 61, 80),
        (8, 603, 100),
        (12, 97, 70),
        (40, 30, 2500),
        (33, 50, 1100),
        (70, 25, 3),
        (50, 100, 1),
        (9, 8000, 1),
        (1, 700, 100),
        (1, 70000, 1),
    ];
    for (m, cd, n) in shapes {
        for threads in [1, 2, 4] {
            for vlen in [2, 4, 8] {
                seed += 3;
                let mut a = fixture(m, cd, 0.7, seed, false);
                let b = fixture(cd, n, 1.0, seed + 1, false);
                a.row_mut(0)
                    .mapv_inplace(|x| if x == 0.0 { -0.0 } else { x });
                let (av, bv) = (a.as_slice().unwrap(), b.as_slice().unwrap());
                let p = plan(m, cd, n, threads);
                seen.insert(format!(
                    "{:?}/{}",
                    p.kernel,
                    match p.split {
                        Split::Rows => "rows",
                        Split::RhsRows(_) => "rhs-rows",
                        Split::RhsCols(_) => "rhs-cols",
                    }
                ));
                let (c, _) = product(av, bv, m, cd, n, threads, vlen);
                let what = format!("{m}x{cd} by {cd}x{n}, {threads} threads, {vlen} lanes: {p:?}");
                let want = naive_matmul(
                    &naive(&Matrix::Dense(a.clone())),
                    &naive(&Matrix::Dense(b.clone())),
                    n,
                );
                for i in 0..m {
                    for j in 0..n {
                        let (g, w) = (c[i * n + j], want[i][j]);
                        assert!(
                            (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
                            "{what}: ({i},{j}) {g} vs {w}"
                        );
                        if matches!(p.kernel, Kernel::General | Kernel::ShortLhs) {
                            let s = systemds_cell(av, bv, (cd, n), (i, j), &p, vlen);
                            assert_eq!(
                                g.to_bits(),
                                s.to_bits(),
                                "{what}: ({i},{j}) in SystemDS's order"
                            );
                        }
                    }
                }
                // an Inf in B meets the zeros of A: NaN where the naive product has it
                let mut b2 = b.clone();
                b2[[cd - 1, n - 1]] = f64::INFINITY;
                let (c2, exact) = product(av, b2.as_slice().unwrap(), m, cd, n, threads, vlen);
                let want2 = naive_matmul(
                    &naive(&Matrix::Dense(a.clone())),
                    &naive(&Matrix::Dense(b2.clone())),
                    n,
                );
                let nan = |x: f64| x.is_nan();
                if exact {
                    for (i, w) in want2.iter().enumerate().take(m) {
                        assert_eq!(nan(c2[i * n + n - 1]), nan(w[n - 1]), "{what}: exact NaN");
                    }
                }
                let got = kernels::matmul(&Matrix::Dense(a.clone()), &Matrix::Dense(b2));
                for (i, w) in want2.iter().enumerate().take(m) {
                    assert_eq!(
                        nan(got.get(i, n - 1)),
                        nan(w[n - 1]),
                        "{what}: matmul's NaN, row {i}"
                    );
                }
            }
        }
    }
    // every kernel and split of the dispatch is exercised
    for k in [
        "Dot/rows",
        "Outer/rows",
        "VectorScalar/rows",
        "MvShort/rows",
        "MvTall/rows",
        "MvTall/rhs-rows",
        "VectorMatrix/rhs-rows",
        "ShortLhs/rhs-rows",
        "SkinnyRhs/rows",
        "General/rows",
        "General/rhs-cols",
    ] {
        assert!(seen.contains(k), "{k} not exercised: {seen:?}");
    }
}

/// SystemDS 3.4's kernel choices for shapes checked against its `LibMatrixMult` (2 threads):
/// a short A takes the general kernel on one thread and below the flop threshold (where
/// SystemDS asks `checkParMatrixMultRightInputRows` with every thread), the short-left one
/// when split; a skinny B is transposed; a wide B with a short A splits over its columns.
#[test]
fn dense_product_plans_are_systemds_choices() {
    use spores_runtime::kernels::dense_product::{plan, Kernel, Split};
    let k = |m, cd, n, t| plan(m, cd, n, t).kernel;
    assert_eq!(k(2, 60, 5, 2), Kernel::General);
    assert_eq!(k(8, 603, 100, 1), Kernel::General);
    assert_eq!(k(8, 603, 100, 2), Kernel::ShortLhs);
    assert_eq!(k(17, 603, 100, 2), Kernel::General);
    assert_eq!(k(200, 60, 10, 2), Kernel::SkinnyRhs);
    assert_eq!(k(200, 60, 64, 2), Kernel::General);
    assert_eq!(k(1, 60, 10, 1), Kernel::VectorMatrix);
    assert_eq!(k(100, 2048, 1, 2), Kernel::MvShort);
    assert_eq!(k(100, 2049, 1, 2), Kernel::MvTall);
    assert_eq!(plan(8, 603, 100, 1).split, Split::Rows);
    assert_eq!(
        plan(8, 603, 100, 2).split,
        Split::RhsRows(vec![0..302, 302..603])
    );
    assert_eq!(
        plan(40, 30, 2500, 2).split,
        Split::RhsCols(vec![0..1250, 1250..2500])
    );
    assert_eq!(plan(40, 30, 2500, 1).split, Split::Rows);
}

/// The vector-matrix products that skip the rows a vector weighs by zero, for a finite B
/// (`matmul_with`, `tmatmul_with`): the bits of the products that read every row, for weight
/// vectors with zeros alone, in pairs, at odd and even positions, and none; on 1, 2 and 4
/// SystemDS threads (different row splits, so different pairings of rows).
#[test]
fn vector_products_skipping_zero_weights_keep_the_bits() {
    let shapes = [(1, 9), (2, 5), (7, 3), (300, 17), (3001, 8), (20001, 33)];
    let mut seed = 7100;
    for (cd, n) in shapes {
        for keep in [0.0, 0.1, 0.5, 0.93, 1.0] {
            for threads in [1, 2, 4] {
                seed += 2;
                let prev = kernels::set_systemds_threads(Some(threads));
                let x = Matrix::Dense(fixture(cd, n, 1.0, seed, false));
                let mut w = fixture(cd, 1, keep, seed + 1, false);
                if cd > 3 {
                    w[[cd - 1, 0]] = -0.0; // a signed zero weight is a zero weight
                }
                let col = Matrix::Dense(w.clone());
                let row = Matrix::Dense(w.t().as_standard_layout().into_owned());
                let what = format!("{cd}x{n}, {keep} of the weights, {threads} threads");
                let (all, skip) = (
                    kernels::matmul(&row, &x),
                    kernels::matmul_with(&row, &x, false, true),
                );
                let (tall, tskip) = (
                    kernels::tmatmul(&x, &col),
                    kernels::tmatmul_with(&x, &col, true, false),
                );
                let (tw, twskip) = (
                    kernels::tmatmul(&col, &x),
                    kernels::tmatmul_with(&col, &x, false, true),
                );
                kernels::set_systemds_threads(prev);
                let bits =
                    |m: &Matrix| m.to_dense().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&all), bits(&skip), "{what}: t(w) %*% X");
                assert_eq!(bits(&tall), bits(&tskip), "{what}: t(X) %*% w");
                assert_eq!(
                    bits(&tw),
                    bits(&twskip),
                    "{what}: t(w) %*% X, transposed lazily"
                );
                // and both are the product
                let want = naive_matmul(&naive(&row), &naive(&x), n);
                for (j, &e) in want[0].iter().enumerate() {
                    let g = skip.get(0, j);
                    assert!(
                        (g - e).abs() <= 1e-12 * (1.0 + e.abs()),
                        "{what}: {g} vs {e}"
                    );
                }
            }
        }
    }
}
