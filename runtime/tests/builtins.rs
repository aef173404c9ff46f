//! The builtin kernels (structure, scans, tables, statistics, cell-wise math, linear algebra)
//! against naive references written from DML's definitions, on dense and sparse inputs with
//! empty rows and columns, and on 1x1, 1xN, Nx1 and empty shapes.

use spores_runtime::kernels::dnn;
use spores_runtime::kernels::linalg;
use spores_runtime::kernels::math::{self, MathFn};
use spores_runtime::kernels::scan::{self, CumOp};
use spores_runtime::kernels::stats;
use spores_runtime::kernels::structure::{self, Margin};
use spores_runtime::kernels::table::{self, GroupFn, TableArg};
use spores_runtime::kernels::{self, RandSpec};
use spores_runtime::matrix::{dense_to_csr, Dense};
use spores_runtime::ops::BinOp;
use spores_runtime::Matrix;
use std::collections::BTreeMap;

type Naive = Vec<Vec<f64>>;

fn naive(m: &Matrix) -> Naive {
    (0..m.rows())
        .map(|i| (0..m.cols()).map(|j| m.get(i, j)).collect())
        .collect()
}

/// Random values at `density`; with `holes`, row 1 and column 1 are empty.
fn fixture(rows: usize, cols: usize, density: f64, seed: u64, holes: bool) -> Dense {
    let mut d = kernels::rand_matrix(&RandSpec {
        rows,
        cols,
        min: -2.0,
        max: 3.0,
        sparsity: density,
        seed,
    })
    .to_dense();
    if holes && rows > 2 && cols > 2 {
        d.row_mut(1).fill(0.0);
        d.column_mut(1).fill(0.0);
    }
    d
}

/// The same values stored dense and as CSR (bypassing the density rule).
fn both(d: &Dense) -> [Matrix; 2] {
    let nnz = d.iter().filter(|v| **v != 0.0).count();
    [
        Matrix::Dense(d.clone()),
        Matrix::Sparse(dense_to_csr(d, nnz)),
    ]
}

const SHAPES: [(usize, usize); 7] = [(1, 1), (1, 7), (9, 1), (12, 9), (40, 30), (0, 4), (4, 0)];
const DENSITIES: [f64; 4] = [0.0, 0.05, 0.5, 1.0];

/// Every fixture: shape x density x holes, in both representations.
fn fixtures() -> Vec<(String, Matrix)> {
    let mut out = Vec::new();
    let mut seed = 1;
    for &(m, n) in &SHAPES {
        for &s in &DENSITIES {
            for holes in [false, true] {
                seed += 1;
                let d = fixture(m, n, s, seed, holes);
                for (k, x) in both(&d).into_iter().enumerate() {
                    let what = format!(
                        "{m}x{n}@{s}{}{}",
                        if holes { "h" } else { "" },
                        ["d", "s"][k]
                    );
                    out.push((what, x));
                }
            }
        }
    }
    out
}

fn close(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

fn assert_naive(got: &Matrix, want: &Naive, what: &str) {
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

fn col(v: &[f64]) -> Matrix {
    Matrix::from_dense(Dense::from_shape_vec((v.len(), 1), v.to_vec()).unwrap())
}

fn row(v: &[f64]) -> Matrix {
    Matrix::from_dense(Dense::from_shape_vec((1, v.len()), v.to_vec()).unwrap())
}

#[test]
fn cbind_and_rbind() {
    for (what, x) in fixtures() {
        let (m, n) = x.shape();
        let nx = naive(&x);
        let y = Matrix::from_dense(fixture(m, 3, 0.3, 99, false));
        let ny = naive(&y);
        let got = structure::cbind(&[&x, &y, &x]).unwrap();
        let want: Naive = (0..m)
            .map(|i| [nx[i].clone(), ny[i].clone(), nx[i].clone()].concat())
            .collect();
        assert_naive(&got, &want, &format!("cbind {what}"));
        let z = Matrix::from_dense(fixture(2, n, 0.5, 98, false));
        let got = structure::rbind(&[&x, &z]).unwrap();
        let mut want = nx.clone();
        want.extend(naive(&z));
        if n > 0 {
            assert_naive(&got, &want, &format!("rbind {what}"));
        } else {
            assert_eq!(got.shape(), (m + 2, 0));
        }
    }
    let a = Matrix::filled(2, 2, 1.0);
    let b = Matrix::filled(3, 2, 1.0);
    assert!(structure::cbind(&[&a, &b]).is_err());
    assert!(structure::rbind(&[&a, &Matrix::filled(2, 3, 1.0)]).is_err());
}

/// `cbind` of a large sparse matrix with dense columns (MultiLogReg's intercept column) and
/// another sparse part: the rows' parts side by side (the parallel path), a dense part's
/// `-0.0` left out as before, a sparse part's stored `-0.0`, NaN and Inf kept.
/// `cbind` of tall dense parts (GLM's `cbind(exp(lt), 1 - lt)`): the parallel row groups, a
/// column part, a wider part and a part not in standard layout (a transpose), every value's
/// bits kept (`-0.0`, NaN, Inf).
#[test]
fn cbind_of_tall_dense_parts() {
    let m = 70_001;
    let mut v = fixture(m, 1, 1.0, 51, false);
    v[[3, 0]] = -0.0;
    v[[m - 1, 0]] = f64::NAN;
    let w = fixture(m, 3, 0.6, 52, true);
    let mut t = fixture(2, m, 1.0, 53, false);
    t[[1, m / 2]] = f64::NEG_INFINITY;
    let tt = Matrix::Dense(t.t().to_owned()); // m x 2, column-major
    let parts = [Matrix::Dense(v.clone()), Matrix::Dense(w.clone()), tt];
    let got = structure::cbind(&[&parts[0], &parts[1], &parts[2], &parts[0]]).unwrap();
    assert_eq!(got.shape(), (m, 7));
    for i in 0..m {
        let want = [
            v[[i, 0]],
            w[[i, 0]],
            w[[i, 1]],
            w[[i, 2]],
            t[[0, i]],
            t[[1, i]],
            v[[i, 0]],
        ];
        for (j, &e) in want.iter().enumerate() {
            let g = got.get(i, j);
            assert!(
                g.to_bits() == e.to_bits() || (g.is_nan() && e.is_nan()),
                "cbind ({i},{j}): got {g}, want {e}"
            );
        }
    }
}

#[test]
fn cbind_of_large_sparse_and_dense_parts() {
    let (m, n) = (3000, 80);
    let mut a = fixture(m, n, 0.3, 41, true);
    a[[7, 3]] = -0.0;
    a[[m - 1, n - 1]] = f64::NAN;
    a[[m / 2, 0]] = f64::INFINITY;
    let nnz = a.iter().filter(|v| v.to_bits() != 0).count();
    let x = Matrix::Sparse(dense_to_csr(&a, nnz));
    let mut c = fixture(m, 2, 0.9, 42, false);
    c[[5, 0]] = -0.0;
    c[[9, 1]] = 0.0;
    let ones = Matrix::Dense(c.clone());
    let nx = naive(&x);
    let got = structure::cbind(&[&x, &ones, &x]).unwrap();
    got.check_invariants();
    assert!(got.is_sparse() && got.nnz() > 1 << 16, "the parallel path");
    for i in 0..m {
        let want: Vec<f64> = [nx[i].clone(), vec![c[[i, 0]], c[[i, 1]]], nx[i].clone()].concat();
        for (j, &w) in want.iter().enumerate() {
            let g = got.get(i, j);
            // a dense part's zeros of either sign are not stored: +0.0
            let w = if j == n || j == n + 1 { w + 0.0 } else { w };
            assert!(
                g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                "cbind ({i},{j}): got {g}, want {w}"
            );
        }
    }
}

#[test]
fn diag_rev_trace_and_triangles() {
    for (what, x) in fixtures() {
        let (m, n) = x.shape();
        let nx = naive(&x);
        // rev
        let want: Naive = nx.iter().rev().cloned().collect();
        assert_naive(&structure::rev(&x), &want, &format!("rev {what}"));
        // diag
        if n == 1 {
            let want: Naive = (0..m)
                .map(|i| {
                    (0..m)
                        .map(|j| if i == j { nx[i][0] } else { 0.0 })
                        .collect()
                })
                .collect();
            let got = structure::diag(&x).unwrap();
            assert_naive(&got, &want, &format!("diag vector {what}"));
            if m > 2 {
                assert!(got.is_sparse(), "diag of a vector is sparse");
            }
        } else if m == n {
            let want: Naive = (0..m).map(|i| vec![nx[i][i]]).collect();
            assert_naive(
                &structure::diag(&x).unwrap(),
                &want,
                &format!("diag {what}"),
            );
            let t: f64 = (0..m).map(|i| nx[i][i]).sum();
            assert!(close(scan::trace(&x).unwrap(), t));
        } else {
            assert!(structure::diag(&x).is_err(), "diag {what}");
            assert!(scan::trace(&x).is_err());
        }
        // lower.tri / upper.tri
        let empty = nx.iter().flatten().all(|&v| v == 0.0);
        for lower in [true, false] {
            for dg in [true, false] {
                for values in [true, false] {
                    let inside = |i: usize, j: usize| {
                        if lower {
                            j < i || (dg && j == i)
                        } else {
                            j > i || (dg && j == i)
                        }
                    };
                    let want: Naive = (0..m)
                        .map(|i| {
                            (0..n)
                                .map(|j| match (inside(i, j), values, empty) {
                                    (false, _, _) | (_, _, true) => 0.0,
                                    (true, true, _) => nx[i][j],
                                    (true, false, _) => 1.0,
                                })
                                .collect()
                        })
                        .collect();
                    let got = structure::triangle(&x, lower, dg, values);
                    assert_naive(&got, &want, &format!("tri {lower} {dg} {values} {what}"));
                }
            }
        }
    }
}

#[test]
fn replace_and_contains() {
    for (what, x) in fixtures() {
        let nx = naive(&x);
        let some = nx.iter().flatten().copied().find(|&v| v != 0.0);
        let mut patterns = vec![0.0, 7.5, f64::NAN];
        patterns.extend(some);
        for &p in &patterns {
            let hit = |v: f64| v == p || (p.is_nan() && v.is_nan());
            let want: Naive = nx
                .iter()
                .map(|r| r.iter().map(|&v| if hit(v) { -4.0 } else { v }).collect())
                .collect();
            assert_naive(
                &structure::replace(&x, p, -4.0),
                &want,
                &format!("replace {p} {what}"),
            );
            let any = nx.iter().flatten().any(|&v| hit(v));
            assert_eq!(math::contains(&x, p), any, "contains {p} {what}");
        }
    }
    // NaN cells are replaced by a NaN pattern
    let x = col(&[1.0, f64::NAN, 0.0]);
    assert_naive(
        &structure::replace(&x, f64::NAN, 5.0),
        &vec![vec![1.0], vec![5.0], vec![0.0]],
        "nan",
    );
    assert!(math::contains(&x, f64::NAN));
}

/// The weighted pick against the column with each value repeated as often as its weight:
/// without averaging, the value at rank `ceil(p*N)` of the expanded sorted column.
#[test]
fn weighted_quantile_is_the_quantile_of_the_repeated_values() {
    let v = [5.0, -1.0, 3.0, 8.0, 2.0, 2.5, 7.0, 0.0, 4.0, 9.0, 1.0];
    for (seed, n) in [(1u64, 1usize), (2, 4), (3, 11)] {
        let w: Vec<f64> = (0..n)
            .map(|i| ((i as u64 * 7 + seed * 3) % 4 + 1) as f64)
            .collect();
        let mut rep: Vec<f64> = Vec::new();
        for (x, k) in v[..n].iter().zip(&w) {
            rep.extend(std::iter::repeat_n(*x, *k as usize));
        }
        rep.sort_by(|a, b| a.total_cmp(b));
        for p in [0.0, 0.1, 0.25, 0.5, 0.77, 1.0] {
            let rank = ((p * rep.len() as f64).ceil() as usize).max(1);
            let got = stats::weighted_quantile("quantile", &col(&v[..n]), &col(&w), p, false);
            assert_eq!(got.unwrap(), rep[rank - 1], "p {p} n {n}");
        }
        // all weights 1: the unweighted median
        let ones = vec![1.0; n];
        assert_eq!(
            stats::weighted_quantile("median", &col(&v[..n]), &col(&ones), 0.5, true).unwrap(),
            stats::median(&col(&v[..n])).unwrap()
        );
    }
    // fractional weights and mismatched lengths are errors
    assert!(
        stats::weighted_quantile("median", &col(&v[..2]), &col(&[1.0, 0.5]), 0.5, true).is_err()
    );
    assert!(stats::weighted_quantile("median", &col(&v[..2]), &col(&[1.0]), 0.5, true).is_err());
}

#[test]
fn contains_a_row() {
    let row = |v: &[f64]| {
        Matrix::from_dense(ndarray::Array2::from_shape_vec((1, v.len()), v.to_vec()).unwrap())
    };
    for (what, x) in fixtures() {
        let nx = naive(&x);
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        let mut patterns: Vec<Vec<f64>> = nx.iter().take(3).cloned().collect();
        patterns.extend(nx.first().map(|r| r.iter().map(|v| v + 0.5).collect()));
        patterns.push(vec![0.0; x.cols()]);
        for p in &patterns {
            let want = nx
                .iter()
                .any(|r| r.iter().zip(p).all(|(&a, &b)| same(a, b)));
            assert_eq!(
                math::contains_row(&x, &row(p)).unwrap(),
                want,
                "contains {p:?} {what}"
            );
        }
        // a pattern of another width is an error
        assert!(math::contains_row(&x, &row(&vec![1.0; x.cols() + 1])).is_err());
    }
    let x = Matrix::from_dense(
        ndarray::Array2::from_shape_vec((2, 2), vec![1.0, f64::NAN, 0.0, 2.0]).unwrap(),
    );
    assert!(math::contains_row(&x, &row(&[1.0, f64::NAN])).unwrap());
    assert!(!math::contains_row(&x, &row(&[-0.0, 2.0])).unwrap());
}

/// A `select` of any shape is read as SystemDS reads it: its cells row by row, the first
/// `nrow` (`ncol`) deciding; for rows, one result row per non-zero of select (zero rows after
/// the kept ones); non-zeros numbering `nrow` (`ncol`) return the input; too few cells fail.
#[test]
fn remove_empty_reads_any_select_shape_row_by_row() {
    for (what, x) in fixtures() {
        let (m, n) = x.shape();
        let nx = naive(&x);
        for margin in [Margin::Rows, Margin::Cols] {
            let len = if margin == Margin::Rows { m } else { n };
            for (sr, sc) in [(1, len), (2, len.div_ceil(2) + 1), (len + 1, 3)] {
                let cells: Vec<f64> = (0..sr * sc)
                    .map(|k| ((k * 5 + 1) % 4 == 0) as u8 as f64)
                    .collect();
                let sel =
                    Matrix::from_dense(Dense::from_shape_vec((sr, sc), cells.clone()).unwrap());
                let selected = cells.iter().filter(|&&v| v != 0.0).count();
                let got = structure::remove_empty(&x, margin, Some(&sel), true).unwrap();
                let ctx = format!("{what} {margin:?} select {sr}x{sc}");
                if selected == len {
                    assert_naive(&got, &nx, &ctx);
                    continue;
                }
                let keep: Vec<usize> = (0..len).filter(|&k| cells[k] != 0.0).collect();
                let want: Naive = if margin == Margin::Rows {
                    let mut rows: Naive = keep.iter().map(|&i| nx[i].clone()).collect();
                    rows.resize(selected.max(1), vec![0.0; n]);
                    rows
                } else {
                    let w = keep.len().max(1);
                    (0..m)
                        .map(|i| {
                            let mut r: Vec<f64> = keep.iter().map(|&j| nx[i][j]).collect();
                            r.resize(w, 0.0);
                            r
                        })
                        .collect()
                };
                assert_naive(&got, &want, &ctx);
            }
            if len > 1 {
                let short = Matrix::filled(1, len - 1, 0.0);
                let all_zero = nx.iter().all(|r| r.iter().all(|&v| v == 0.0));
                let got = structure::remove_empty(&x, margin, Some(&short), true);
                // only rows of an all-zero target skip reading select (SystemDS too)
                assert_eq!(
                    got.is_ok(),
                    margin == Margin::Rows && all_zero,
                    "{what} short"
                );
            }
        }
    }
}

#[test]
fn remove_empty_rows_and_columns() {
    for (what, x) in fixtures() {
        let (m, n) = x.shape();
        let nx = naive(&x);
        for margin in [Margin::Rows, Margin::Cols] {
            for empty_return in [true, false] {
                for with_select in [false, true] {
                    let len = if margin == Margin::Rows { m } else { n };
                    let sel: Vec<f64> = (0..len)
                        .map(|k| ((k * 7 + 3) % 3 == 0) as u8 as f64)
                        .collect();
                    let keep: Vec<usize> = (0..len)
                        .filter(|&k| {
                            if with_select {
                                sel[k] != 0.0
                            } else if margin == Margin::Rows {
                                nx[k].iter().any(|&v| v != 0.0)
                            } else {
                                (0..m).any(|i| nx[i][k] != 0.0)
                            }
                        })
                        .collect();
                    // a select that keeps everything returns the input (no rows stay
                    // no rows)
                    let want: Naive = if with_select && keep.len() == len {
                        (0..m).map(|i| nx[i].clone()).collect()
                    } else if margin == Margin::Rows {
                        if keep.is_empty() {
                            vec![vec![0.0; n]; usize::from(empty_return)]
                        } else {
                            keep.iter().map(|&i| nx[i].clone()).collect()
                        }
                    } else if keep.is_empty() {
                        vec![vec![0.0; usize::from(empty_return)]; m]
                    } else {
                        (0..m)
                            .map(|i| keep.iter().map(|&j| nx[i][j]).collect())
                            .collect()
                    };
                    let s = col(&sel);
                    let got = structure::remove_empty(
                        &x,
                        margin,
                        with_select.then_some(&s),
                        empty_return,
                    )
                    .unwrap();
                    let ctx = format!("removeEmpty {margin:?} {empty_return} {with_select} {what}");
                    if want.is_empty() {
                        assert_eq!(got.rows(), 0, "{ctx}");
                    } else {
                        assert_naive(&got, &want, &ctx);
                    }
                }
            }
        }
    }
    let x = Matrix::filled(3, 3, 1.0);
    assert!(structure::remove_empty(&x, Margin::Rows, Some(&col(&[1.0, 0.0])), true).is_err());
    assert!(Margin::parse("diagonal").is_err());
    // a select that keeps every row returns the input: no rows stay no rows (not the one
    // empty row of empty.return), in both margins and representations
    for z in both(&Dense::zeros((0, 3))) {
        let got = structure::remove_empty(&z, Margin::Rows, Some(&col(&[])), true).unwrap();
        assert_eq!(got.shape(), (0, 3));
        let zt = spores_runtime::kernels::transpose(&z);
        let sel = Matrix::filled(1, 0, 1.0);
        let got = structure::remove_empty(&zt, Margin::Cols, Some(&sel), true).unwrap();
        assert_eq!(got.shape(), (3, 0));
        // without select, or selecting nothing of a non-empty matrix: one empty row
        let got = structure::remove_empty(&z, Margin::Rows, None, true).unwrap();
        assert_eq!(got.shape(), (1, 3));
    }
    let got =
        structure::remove_empty(&x, Margin::Rows, Some(&col(&[0.0, 0.0, 0.0])), true).unwrap();
    assert_eq!((got.shape(), got.get(0, 0)), ((1, 3), 0.0));
}

/// SystemDS's three-way quicksort sorts numbers as any sort does (checked against the
/// standard library's on keys with many ties, of lengths on both sides of its insertion-sort
/// and pivot thresholds), keeping each value with its index.
#[test]
fn sort_by_value_sorts_numbers() {
    let mut seed = 12345u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    for len in [0, 1, 2, 6, 7, 8, 40, 41, 100, 1000] {
        for distinct in [1, 3, 50] {
            let vals: Vec<f64> = (0..len).map(|_| (next() % distinct) as f64 - 1.0).collect();
            let mut v = vals.clone();
            let mut ix: Vec<usize> = (0..len).collect();
            structure::sort_by_value(&mut v, &mut ix);
            let mut want = vals.clone();
            want.sort_by(|a, b| a.partial_cmp(b).unwrap());
            assert_eq!(v, want, "len {len} distinct {distinct}");
            for (k, &i) in ix.iter().enumerate() {
                assert_eq!(vals[i], v[k]);
            }
            let mut seen = ix.clone();
            seen.sort_unstable();
            assert_eq!(seen, (0..len).collect::<Vec<_>>());
        }
    }
}

/// The values of a dense column sort as Java's `Arrays.sort`: -0.0 before 0.0, NaN last
/// (first when decreasing); an all-zero matrix gives +0.0 cells.
#[test]
fn order_of_a_dense_column_orders_signed_zeros_and_nan() {
    let x = Matrix::from_dense(
        Dense::from_shape_vec((7, 1), vec![0.0, -0.0, f64::NAN, 1.0, -0.0, 0.0, -1.0]).unwrap(),
    );
    let bits = |m: &Matrix| -> Vec<u64> { (0..7).map(|i| m.get(i, 0).to_bits()).collect() };
    let up = [-1.0, -0.0, -0.0, 0.0, 0.0, 1.0, f64::NAN].map(f64::to_bits);
    assert_eq!(bits(&structure::order(&x, &[1], false, false).unwrap()), up);
    let mut down = up;
    down.reverse();
    assert_eq!(
        bits(&structure::order(&x, &[1], true, false).unwrap()),
        down
    );
    let z = Matrix::from_dense(Dense::from_elem((7, 2), -0.0));
    let got = structure::order(&z, &[1], false, false).unwrap();
    assert!((0..7).all(|i| got.get(i, 1).to_bits() == 0));
    assert!(structure::order(&z, &[1, 2, 1], false, false).is_err());
}

#[test]
fn order_is_stable_in_both_directions() {
    // small integer values so that ties are frequent
    for (what, x) in fixtures() {
        let (m, n) = x.shape();
        if n == 0 {
            assert!(structure::order(&x, &[1], false, false).is_err());
            continue;
        }
        let d = x.to_dense().mapv(|v| v.round());
        for x in both(&d) {
            let nx = naive(&x);
            let by: Vec<usize> = if n > 1 { vec![2, 1] } else { vec![1] };
            for decreasing in [false, true] {
                let mut idx: Vec<usize> = (0..m).collect();
                // insertion sort: stable by construction
                for a in 1..m {
                    let mut b = a;
                    while b > 0 {
                        let (p, q) = (idx[b - 1], idx[b]);
                        let mut cmp = std::cmp::Ordering::Equal;
                        for &c in &by {
                            let o = nx[p][c - 1].partial_cmp(&nx[q][c - 1]).unwrap();
                            let o = if decreasing { o.reverse() } else { o };
                            if o != std::cmp::Ordering::Equal {
                                cmp = o;
                                break;
                            }
                        }
                        if cmp == std::cmp::Ordering::Greater {
                            idx.swap(b - 1, b);
                            b -= 1;
                        } else {
                            break;
                        }
                    }
                }
                let want_ix: Naive = idx.iter().map(|&i| vec![(i + 1) as f64]).collect();
                let got = structure::order(&x, &by, decreasing, true).unwrap();
                assert_naive(&got, &want_ix, &format!("order ix {decreasing} {what}"));
                let want: Naive = idx.iter().map(|&i| nx[i].clone()).collect();
                let got = structure::order(&x, &by, decreasing, false).unwrap();
                assert_naive(&got, &want, &format!("order {decreasing} {what}"));
            }
        }
        assert!(structure::order(&x, &[n + 1], false, false).is_err());
    }
}

/// rowIndexMin(outer(a, b, op)), SystemDS's fused operator: where no value of `a` equals one
/// of `b` and `b`'s values are distinct, the FIRST column of each row's minimum of the 0/1
/// comparison (R's which.min), except for `!=`, where SystemDS's operator gives 0 (its
/// documented quirk; ties are checked against SystemDS's own output in
/// tests/dml/accept/row_index_min_outer.dml)
#[test]
fn row_index_min_of_outer_comparisons() {
    // b: distinct values, none of them 0; a: columns at several densities (zeros included)
    let b = Matrix::Dense(
        Dense::from_shape_vec((1, 7), vec![0.7, -1.3, 2.5, 0.1, -0.4, 1.9, 3.3]).unwrap(),
    );
    for (k, s) in [1.0, 0.5, 0.05].into_iter().enumerate() {
        let d = fixture(25, 1, s, 90 + k as u64, false);
        for a in both(&d) {
            for op in [
                BinOp::Lt,
                BinOp::Le,
                BinOp::Gt,
                BinOp::Ge,
                BinOp::Eq,
                BinOp::Ne,
            ] {
                let got = scan::row_index_min_outer(&a, &b, op).unwrap();
                let want: Naive = (0..a.rows())
                    .map(|i| {
                        let row: Vec<f64> = (0..b.cols())
                            .map(|j| op.apply(a.get(i, 0), b.get(0, j)))
                            .collect();
                        let min = row.iter().copied().fold(f64::INFINITY, f64::min);
                        let first = row.iter().position(|&v| v == min).unwrap();
                        vec![if op == BinOp::Ne {
                            0.0
                        } else {
                            (first + 1) as f64
                        }]
                    })
                    .collect();
                assert_naive(&got, &want, &format!("{} density {s}", op.symbol()));
            }
        }
    }
    // not a column and a row: an error
    assert!(scan::row_index_min_outer(&b, &b, BinOp::Lt).is_err());
}

#[test]
#[allow(clippy::needless_range_loop)] // the reference walks cells by index
fn cumulative_aggregates_and_row_index_extremes() {
    for (what, x) in fixtures() {
        let (m, n) = x.shape();
        let nx = naive(&x);
        for op in [CumOp::Sum, CumOp::Prod, CumOp::Min, CumOp::Max] {
            let mut want = nx.clone();
            for i in 1..m {
                for j in 0..n {
                    let (a, b) = (want[i - 1][j], want[i][j]);
                    want[i][j] = match op {
                        CumOp::Sum => a + b,
                        CumOp::Prod => a * b,
                        CumOp::Min => a.min(b),
                        CumOp::Max => a.max(b),
                    };
                }
            }
            assert_naive(
                &scan::cumulative(op, &x),
                &want,
                &format!("{} {what}", op.name()),
            );
        }
        for max in [true, false] {
            if n == 0 {
                assert!(scan::row_index_extreme(&x, max).is_err());
                continue;
            }
            let want: Naive = nx
                .iter()
                .map(|r| {
                    let best = r.iter().copied().fold(
                        if max {
                            f64::NEG_INFINITY
                        } else {
                            f64::INFINITY
                        },
                        |a, b| {
                            if max {
                                a.max(b)
                            } else {
                                a.min(b)
                            }
                        },
                    );
                    let last = r.iter().rposition(|&v| v == best).unwrap();
                    vec![(last + 1) as f64]
                })
                .collect();
            assert_naive(
                &scan::row_index_extreme(&x, max).unwrap(),
                &want,
                &format!("rowIndex {max} {what}"),
            );
        }
    }
    // ties: the last maximum wins; NaN is skipped
    let x = row(&[3.0, f64::NAN, 3.0, 1.0]);
    assert_eq!(scan::row_index_extreme(&x, true).unwrap().get(0, 0), 3.0);
    assert_eq!(scan::row_index_extreme(&x, false).unwrap().get(0, 0), 4.0);
    let x = Matrix::from_dense(Dense::from_shape_vec((2, 2), vec![1.0, 2.0, 0.5, 3.0]).unwrap());
    let got = scan::cumsumprod(&x).unwrap();
    assert_naive(&got, &vec![vec![1.0], vec![0.5 + 3.0 * 1.0]], "cumsumprod");
    assert!(scan::cumsumprod(&Matrix::filled(2, 3, 1.0)).is_err());
}

#[test]
fn table_counts_weights_and_dims() {
    for (n, k1, k2, seed) in [
        (1usize, 1usize, 1usize, 1u64),
        (50, 4, 6, 2),
        (300, 10, 3, 3),
        (200, 1, 7, 4),
    ] {
        let cat = |k: usize, s: u64| -> Vec<f64> {
            let r = kernels::rand_matrix(&RandSpec {
                rows: n,
                cols: 1,
                min: 1.0,
                max: k as f64 + 0.999,
                sparsity: 1.0,
                seed: s,
            });
            (0..n).map(|i| r.get(i, 0).floor()).collect()
        };
        let a = cat(k1, seed);
        let b = cat(k2, seed + 100);
        let w: Vec<f64> = (0..n).map(|i| (i % 5) as f64 - 1.0).collect();
        for weighted in [false, true] {
            for dims in [None, Some((3usize, 4usize)), Some((k1 + 2, k2 + 1))] {
                let mut cells: BTreeMap<(usize, usize), f64> = BTreeMap::new();
                let (mut mr, mut mc) = (0, 0);
                for i in 0..n {
                    let (r, c) = (a[i] as usize, b[i] as usize);
                    if let Some((d1, d2)) = dims {
                        if r > d1 || c > d2 {
                            continue;
                        }
                    }
                    mr = mr.max(r);
                    mc = mc.max(c);
                    *cells.entry((r, c)).or_default() += if weighted { w[i] } else { 1.0 };
                }
                let (rows, cols) = dims.unwrap_or((mr, mc));
                let want: Naive = (1..=rows)
                    .map(|r| {
                        (1..=cols)
                            .map(|c| cells.get(&(r, c)).copied().unwrap_or(0.0))
                            .collect()
                    })
                    .collect();
                let (ma, mb, mw) = (col(&a), col(&b), col(&w));
                let wt = if weighted {
                    TableArg::Matrix(&mw)
                } else {
                    TableArg::Scalar(1.0)
                };
                let got =
                    table::table(TableArg::Matrix(&ma), TableArg::Matrix(&mb), wt, dims).unwrap();
                assert_naive(
                    &got,
                    &want,
                    &format!("table n={n} weighted={weighted} dims={dims:?}"),
                );
            }
        }
    }
    // one-hot encoding: table(seq(1, n), y) stays sparse
    let y: Vec<f64> = (0..100).map(|i| (i % 10 + 1) as f64).collect();
    let s: Vec<f64> = (1..=100).map(|i| i as f64).collect();
    let got = table::table(
        TableArg::Matrix(&col(&s)),
        TableArg::Matrix(&col(&y)),
        TableArg::Scalar(1.0),
        None,
    )
    .unwrap();
    assert_eq!(got.shape(), (100, 10));
    assert!(got.is_sparse());
    assert_eq!(got.nnz(), 100);
    // a scalar second argument: a histogram column
    let got = table::table(
        TableArg::Matrix(&col(&y)),
        TableArg::Scalar(1.0),
        TableArg::Scalar(1.0),
        None,
    )
    .unwrap();
    assert_naive(&got, &vec![vec![10.0]; 10], "histogram");
    // a row vector and a column vector of one length are paired by index (KM.dml's
    // table(Is, seq(1, k), ...) with Is a row); other shapes that differ are errors
    let row = Matrix::from_triplets(1, 3, &[(0, 0, 3.0), (0, 1, 1.0), (0, 2, 2.0)]);
    let got = table::table(
        TableArg::Matrix(&row),
        TableArg::Matrix(&col(&[1.0, 2.0, 3.0])),
        TableArg::Scalar(1.0),
        Some((3, 3)),
    )
    .unwrap();
    let want = vec![
        vec![0.0, 1.0, 0.0],
        vec![0.0, 0.0, 1.0],
        vec![1.0, 0.0, 0.0],
    ];
    assert_naive(&got, &want, "row and column paired by index");
    assert!(table::table(
        TableArg::Matrix(&row),
        TableArg::Matrix(&col(&[1.0, 2.0])),
        TableArg::Scalar(1.0),
        None
    )
    .is_err());
    // NaN cells are skipped; categories below 1 are errors
    let got = table::table(
        TableArg::Matrix(&col(&[1.0, f64::NAN])),
        TableArg::Scalar(2.0),
        TableArg::Scalar(1.0),
        None,
    )
    .unwrap();
    assert_naive(&got, &vec![vec![0.0, 1.0]], "nan skipped");
    assert!(table::table(
        TableArg::Matrix(&col(&[0.0])),
        TableArg::Scalar(1.0),
        TableArg::Scalar(1.0),
        None
    )
    .is_err());
    // the cells are the first matrix's: a larger operand is read at those cells only
    // (alsPredict's table(seq(1, n), userIDs, n, k) of an n x 2 userIDs), a smaller one is an
    // error
    let ids = Matrix::from_triplets(
        3,
        2,
        &[
            (0, 0, 2.0),
            (0, 1, 9.0),
            (1, 0, 1.0),
            (2, 0, 2.0),
            (2, 1, 7.0),
        ],
    );
    let got = table::table(
        TableArg::Matrix(&col(&[1.0, 2.0, 3.0])),
        TableArg::Matrix(&ids),
        TableArg::Scalar(1.0),
        Some((3, 2)),
    )
    .unwrap();
    let want = vec![vec![0.0, 1.0], vec![1.0, 0.0], vec![0.0, 1.0]];
    assert_naive(&got, &want, "first column of a wider operand");
    let wide = Matrix::from_triplets(2, 3, &[(0, 0, 5.0), (0, 2, 4.0), (1, 0, 2.0), (1, 1, 1.5)]);
    let got = table::table(
        TableArg::Matrix(&col(&[1.0, 2.0])),
        TableArg::Matrix(&col(&[3.0, 1.0, 2.0])),
        TableArg::Matrix(&wide),
        None,
    )
    .unwrap();
    let want = vec![vec![0.0, 0.0, 5.0], vec![2.0, 0.0, 0.0]];
    assert_naive(
        &got,
        &want,
        "weights and categories read at the first operand's cells",
    );
    let got = table::table(
        TableArg::Matrix(&col(&[1.0])),
        TableArg::Matrix(&col(&[1.0, 2.0])),
        TableArg::Scalar(1.0),
        None,
    )
    .unwrap();
    assert_naive(&got, &vec![vec![1.0]], "a longer second column");
    for (a, b) in [
        (&ids, col(&[1.0, 2.0, 1.0])),
        (&col(&[1.0, 2.0]), col(&[1.0])),
    ] {
        assert!(table::table(
            TableArg::Matrix(a),
            TableArg::Matrix(&b),
            TableArg::Scalar(1.0),
            None
        )
        .is_err());
    }
}

/// The naive grouped aggregate of one group's values and weights.
fn naive_group(f: GroupFn, v: &[f64], w: &[f64]) -> f64 {
    let sw: f64 = w.iter().sum();
    let mean = v.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() / sw;
    let central = |k: i32| {
        v.iter()
            .zip(w)
            .map(|(a, b)| b * (a - mean).powi(k))
            .sum::<f64>()
    };
    match f {
        GroupFn::Sum => v.iter().zip(w).map(|(a, b)| a * b).sum(),
        // SystemDS rounds each running count but the first weight
        GroupFn::Count => w
            .iter()
            .skip(1)
            .fold(w.first().copied().unwrap_or(0.0), |a, b| (a + b).round()),
        GroupFn::Mean => mean,
        GroupFn::Variance if sw == 1.0 => 0.0,
        GroupFn::Variance => central(2) / (sw - 1.0),
        GroupFn::Moment(k) => central(i32::from(k)) / sw,
        GroupFn::Min => v
            .iter()
            .zip(w)
            .map(|(a, b)| a * b)
            .fold(f64::INFINITY, f64::min),
        GroupFn::Max => v
            .iter()
            .zip(w)
            .map(|(a, b)| a * b)
            .fold(f64::NEG_INFINITY, f64::max),
    }
}

#[test]
fn grouped_aggregates() {
    let fns = [
        GroupFn::Sum,
        GroupFn::Count,
        GroupFn::Mean,
        GroupFn::Variance,
        GroupFn::Min,
        GroupFn::Max,
        GroupFn::Moment(2),
        GroupFn::Moment(3),
        GroupFn::Moment(4),
    ];
    for (what, x) in fixtures() {
        let (m, n) = x.shape();
        if m == 0 || (m == 1 && n > 1) {
            continue;
        }
        let nx = naive(&x);
        let g: Vec<f64> = (0..m).map(|i| (i % 3 + 1) as f64).collect();
        let k = g.iter().copied().fold(0.0, f64::max) as usize;
        // weights: none, or for a column target fractional weights (rounded counts)
        let ws: Vec<Option<Vec<f64>>> = if n == 1 {
            vec![
                None,
                Some((0..m).map(|i| 0.5 + (i % 4) as f64 * 0.75).collect()),
            ]
        } else {
            vec![None]
        };
        for w in &ws {
            for f in fns {
                let want: Naive = (1..=k)
                    .map(|grp| {
                        (0..n)
                            .map(|j| {
                                let rows: Vec<usize> =
                                    (0..m).filter(|&i| g[i] as usize == grp).collect();
                                let v: Vec<f64> = rows.iter().map(|&i| nx[i][j]).collect();
                                let wv: Vec<f64> = rows
                                    .iter()
                                    .map(|&i| w.as_ref().map_or(1.0, |w| w[i]))
                                    .collect();
                                naive_group(f, &v, &wv)
                            })
                            .collect()
                    })
                    .collect();
                let wm = w.as_ref().map(|w| col(w));
                let got = table::grouped_aggregate(&x, &col(&g), wm.as_ref(), f, None).unwrap();
                let tag = format!("aggregate {f:?} {what} weights {}", w.is_some());
                assert_naive(&got, &want, &tag);
            }
        }
    }
    let x = col(&[1.0, 2.0, 3.0, 4.0]);
    let got =
        table::grouped_aggregate(&x, &col(&[1.0, 2.0, 1.0, 5.0]), None, GroupFn::Sum, Some(2))
            .unwrap();
    assert_naive(
        &got,
        &vec![vec![4.0], vec![2.0]],
        "ngroups drops larger groups",
    );
    let bad = col(&[1.0, 0.0, 1.0, 1.0]);
    assert!(table::grouped_aggregate(&x, &bad, None, GroupFn::Sum, None).is_err());
    // weights must be a column as long as the groups, for a one-column target
    let g4 = col(&[1.0, 1.0, 2.0, 2.0]);
    assert!(table::grouped_aggregate(&x, &g4, Some(&col(&[1.0; 3])), GroupFn::Mean, None).is_err());
    let wide = Matrix::from_dense(Dense::from_elem((4, 2), 1.0));
    let w4 = col(&[1.0; 4]);
    assert!(table::grouped_aggregate(&wide, &g4, Some(&w4), GroupFn::Sum, None).is_err());
    // a group without rows is 0 for every function but a central moment, 0 / 0 there (SystemDS
    // 3.4 prints 0 for groups 2 and 4 of aggregate(target=Y, groups=G, fn=..., ngroups=4) with
    // G = 1 1 3 3, and NaN for fn="centralmoment")
    let y = col(&[3.0, 5.0, 7.0, -2.0]);
    let g = col(&[1.0, 1.0, 3.0, 3.0]);
    for (f, a, b, empty) in [
        (GroupFn::Mean, 4.0, 2.5, 0.0),
        (GroupFn::Variance, 2.0, 40.5, 0.0),
        (GroupFn::Min, 3.0, -2.0, 0.0),
        (GroupFn::Max, 5.0, 7.0, 0.0),
        (GroupFn::Count, 2.0, 2.0, 0.0),
        (GroupFn::Moment(2), 1.0, 20.25, f64::NAN),
    ] {
        let got = table::grouped_aggregate(&y, &g, None, f, Some(4)).unwrap();
        let want = vec![vec![a], vec![empty], vec![b], vec![empty]];
        assert_naive(&got, &want, &format!("empty groups {f:?}"));
    }
    assert!(GroupFn::parse("median", None).is_err());
    assert!(GroupFn::parse("centralmoment", None).is_err());
    assert!(GroupFn::parse("centralmoment", Some(5.0)).is_err());
    assert_eq!(
        GroupFn::parse("centralmoment", Some(3.0)).unwrap(),
        GroupFn::Moment(3)
    );
}

#[test]
fn variances_moments_and_quantiles() {
    for (what, x) in fixtures() {
        let (m, n) = x.shape();
        if m * n == 0 {
            continue;
        }
        let nx = naive(&x);
        let var_of = |v: &[f64]| {
            let c = v.len() as f64;
            if c == 1.0 {
                return 0.0;
            }
            let mean = v.iter().sum::<f64>() / c;
            v.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / (c - 1.0)
        };
        let all: Vec<f64> = nx.iter().flatten().copied().collect();
        assert!(close(stats::var(&x), var_of(&all)), "var {what}");
        assert!(close(stats::sd(&x), var_of(&all).sqrt()), "sd {what}");
        for sd in [false, true] {
            let f = |v: f64| if sd { v.sqrt() } else { v };
            let want: Naive = nx.iter().map(|r| vec![f(var_of(r))]).collect();
            assert_naive(
                &stats::dir_var(&x, true, sd),
                &want,
                &format!("rowVars {sd} {what}"),
            );
            let want: Naive = vec![(0..n)
                .map(|j| f(var_of(&nx.iter().map(|r| r[j]).collect::<Vec<_>>())))
                .collect()];
            assert_naive(
                &stats::dir_var(&x, false, sd),
                &want,
                &format!("colVars {sd} {what}"),
            );
        }
        if n != 1 {
            assert!(stats::median(&x).is_err());
            continue;
        }
        let v: Vec<f64> = nx.iter().map(|r| r[0]).collect();
        let mut s = v.clone();
        s.sort_by(f64::total_cmp);
        let c = s.len();
        for p in [0.0, 0.1, 0.25, 0.5, 0.9, 1.0] {
            let pos = (p * c as f64).ceil() as usize;
            let rank = pos.clamp(1, c);
            // SystemDS averages with the next value when the count is even
            let want = if c.is_multiple_of(2) && pos > 0 && pos < c {
                (s[rank - 1] + s[rank]) / 2.0
            } else {
                s[rank - 1]
            };
            assert_eq!(stats::quantile(&x, p).unwrap(), want, "quantile {p} {what}");
        }
        let med = if c.is_multiple_of(2) {
            (s[c / 2 - 1] + s[c / 2]) / 2.0
        } else {
            s[c / 2]
        };
        assert_eq!(stats::median(&x).unwrap(), med, "median {what}");
        // IQM: the mean of the empirical quantile function over [0.25, 0.75]
        let iqm: f64 = s
            .iter()
            .enumerate()
            .map(|(k, &val)| {
                let (lo, hi) = (k as f64 / c as f64, (k + 1) as f64 / c as f64);
                val * (hi.min(0.75) - lo.max(0.25)).max(0.0)
            })
            .sum::<f64>()
            / 0.5;
        assert!(
            close(stats::inter_quantile_mean(&x, None).unwrap(), iqm),
            "iqm {what}"
        );
        let mean = v.iter().sum::<f64>() / c as f64;
        for k in 2..=4 {
            let want = v.iter().map(|a| (a - mean).powi(k)).sum::<f64>() / c as f64;
            assert!(
                close(stats::moment(&x, None, k as i64).unwrap(), want),
                "moment {k} {what}"
            );
        }
        let y: Vec<f64> = (0..c).map(|i| (i as f64).sin()).collect();
        let my = y.iter().sum::<f64>() / c as f64;
        let want = if c == 1 {
            0.0
        } else {
            v.iter()
                .zip(&y)
                .map(|(a, b)| (a - mean) * (b - my))
                .sum::<f64>()
                / (c as f64 - 1.0)
        };
        assert!(
            close(stats::cov(&x, &col(&y), None).unwrap(), want),
            "cov {what}"
        );
    }
    // weighted moment and cov: integer weights repeat the values
    let x = col(&[1.0, 2.0, 4.0]);
    let w = col(&[1.0, 2.0, 1.0]);
    let rep = col(&[1.0, 2.0, 2.0, 4.0]);
    assert!(close(
        stats::moment(&x, Some(&w), 2).unwrap(),
        stats::moment(&rep, None, 2).unwrap()
    ));
    assert!(close(
        stats::cov(&x, &x, Some(&w)).unwrap(),
        stats::var(&rep)
    ));
    let q = stats::quantiles(&rep, &col(&[0.25, 0.75])).unwrap();
    assert_naive(&q, &vec![vec![1.0], vec![2.0]], "quantiles");
    assert!(stats::moment(&x, None, 5).is_err());
    assert!(stats::quantile(&x, 1.5).is_err());
    assert!(stats::cov(&x, &col(&[1.0]), None).is_err());
}

#[test]
fn cell_functions_and_outer() {
    let special = col(&[
        0.0,
        -0.0,
        0.5,
        -1.5,
        2.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ]);
    let mut xs: Vec<(String, Matrix)> = fixtures();
    xs.push(("special".into(), special));
    for (what, x) in xs {
        let nx = naive(&x);
        for f in MathFn::ALL {
            let want: Naive = nx
                .iter()
                .map(|r| r.iter().map(|&v| f.apply(v)).collect())
                .collect();
            let got = math::map(f, &x);
            assert_naive(&got, &want, &format!("{} {what}", f.name()));
            assert_eq!(MathFn::from_name(f.name()), Some(f));
            if x.is_sparse() && x.cols() > 1 && f.apply(0.0) == 0.0 && x.nnz() * 3 < x.cells() {
                assert!(got.is_sparse(), "{} keeps {what} sparse", f.name());
            }
        }
    }
    assert_eq!(MathFn::from_name("is.nan"), Some(MathFn::IsNaN));
    assert_eq!(MathFn::Sin.apply(0.5), 0.5f64.sin());
    assert!(MathFn::Asin.apply(2.0).is_nan());
    for (m, n) in [(1, 1), (1, 5), (6, 1), (7, 4)] {
        let a: Vec<f64> = (0..m).map(|i| i as f64 - 1.0).collect();
        let b: Vec<f64> = (0..n).map(|j| 2.0 * j as f64).collect();
        for op in [BinOp::Add, BinOp::Mul, BinOp::Lt, BinOp::Pow] {
            let want: Naive = a
                .iter()
                .map(|&p| b.iter().map(|&q| op.apply(p, q)).collect())
                .collect();
            assert_naive(
                &math::outer(&col(&a), &row(&b), op).unwrap(),
                &want,
                &format!("outer {op} {m}x{n}"),
            );
        }
    }
    assert!(math::outer(&row(&[1.0, 2.0]), &row(&[1.0]), BinOp::Add).is_err());
}

/// A symmetric positive definite matrix `B t(B) + n I`.
fn spd(n: usize, seed: u64) -> Matrix {
    let b = fixture(n, n, 1.0, seed, false);
    let mut a = b.dot(&b.t());
    for i in 0..n {
        a[[i, i]] += n as f64;
    }
    Matrix::from_dense(a)
}

fn matmul(a: &Matrix, b: &Matrix) -> Dense {
    a.to_dense().dot(&b.to_dense())
}

/// The determinant by cofactor expansion along the first row.
fn naive_det(a: &Naive) -> f64 {
    let n = a.len();
    if n == 0 {
        return 1.0;
    }
    if n == 1 {
        return a[0][0];
    }
    (0..n)
        .map(|j| {
            let minor: Naive = a[1..]
                .iter()
                .map(|r| {
                    r.iter()
                        .enumerate()
                        .filter(|&(k, _)| k != j)
                        .map(|(_, &v)| v)
                        .collect()
                })
                .collect();
            let sign = if j % 2 == 0 { 1.0 } else { -1.0 };
            sign * a[0][j] * naive_det(&minor)
        })
        .sum()
}

#[test]
// the naive references index like the textbook formulas
#[allow(clippy::needless_range_loop)]
fn linear_algebra() {
    for n in [1usize, 2, 5, 12] {
        for sparse in [false, true] {
            let a = spd(n, n as u64);
            let a = if sparse {
                both(&a.to_dense())[1].clone()
            } else {
                a
            };
            let b = Matrix::from_dense(fixture(n, 3, 1.0, 7, false));
            let x = linalg::solve(&a, &b).unwrap();
            let ax = matmul(&a, &x);
            assert_naive(&Matrix::from_dense(ax), &naive(&b), &format!("solve {n}"));
            let inv = linalg::inv(&a).unwrap();
            let eye: Naive = (0..n)
                .map(|i| (0..n).map(|j| (i == j) as u8 as f64).collect())
                .collect();
            assert_naive(
                &Matrix::from_dense(matmul(&a, &inv)),
                &eye,
                &format!("inv {n}"),
            );
            let l = linalg::cholesky(&a).unwrap();
            let nl = naive(&l);
            assert!(
                (0..n).all(|i| (i + 1..n).all(|j| nl[i][j] == 0.0)),
                "cholesky lower"
            );
            let llt = l.to_dense().dot(&l.to_dense().t());
            assert_naive(
                &Matrix::from_dense(llt),
                &naive(&a),
                &format!("cholesky {n}"),
            );
            if n <= 5 {
                let d = linalg::det(&a).unwrap();
                let want = naive_det(&naive(&a));
                assert!(
                    (d - want).abs() <= 1e-9 * want.abs(),
                    "det {n}: {d} vs {want}"
                );
            }
            let (vals, vecs) = linalg::eigen(&a).unwrap();
            assert_eq!(vals.shape(), (n, 1));
            let nv = naive(&vals);
            assert!(
                nv.windows(2).all(|w| w[0][0] <= w[1][0]),
                "increasing eigenvalues"
            );
            let av = matmul(&a, &vecs);
            let vd = naive(&vecs);
            for k in 0..n {
                let norm: f64 = (0..n).map(|i| vd[i][k] * vd[i][k]).sum();
                assert!((norm - 1.0).abs() < 1e-9, "unit eigenvector");
                for i in 0..n {
                    let want = nv[k][0] * vd[i][k];
                    assert!(
                        (av[[i, k]] - want).abs() < 1e-8 * (1.0 + want.abs()),
                        "A v = lambda v"
                    );
                }
            }
        }
    }
    // lu: P A = L U with L unit lower and U upper, the pivot the first row of largest
    // magnitude (checked against a naive elimination), on dense and sparse non-symmetric inputs
    for n in [1usize, 3, 7] {
        let d = fixture(n, n, 1.0, 40 + n as u64, false);
        for a in both(&d) {
            let (p, l, u) = linalg::lu(&a).unwrap();
            let (np, nl, nu) = (naive(&p), naive(&l), naive(&u));
            for i in 0..n {
                assert_eq!(nl[i][i], 1.0, "unit diagonal");
                assert!(
                    (i + 1..n).all(|j| nl[i][j] == 0.0 && nu[j][i] == 0.0),
                    "triangular"
                );
                assert_eq!(
                    np[i].iter().filter(|&&v| v == 1.0).count(),
                    1,
                    "permutation"
                );
            }
            let pa = Matrix::from_dense(matmul(&p, &a));
            assert_naive(
                &pa,
                &naive(&Matrix::from_dense(matmul(&l, &u))),
                "P A = L U",
            );
            // naive Gaussian elimination with the same pivot rule gives the same row order
            let mut w = naive(&a);
            let mut order: Vec<usize> = (0..n).collect();
            for k in 0..n {
                let mut best = k;
                for r in k + 1..n {
                    if w[r][k].abs() > w[best][k].abs() {
                        best = r;
                    }
                }
                w.swap(k, best);
                order.swap(k, best);
                for r in k + 1..n {
                    let f = w[r][k] / w[k][k];
                    for j in k..n {
                        w[r][j] -= f * w[k][j];
                    }
                }
            }
            for (i, &o) in order.iter().enumerate() {
                assert_eq!(np[i][o], 1.0, "pivot order lu {n}");
            }
        }
    }
    // qr: H's columns are the reflectors v / -a, R upper triangular, and applying the
    // reflections I - 2 w t(w) / (t(w) w) (w a column of H) in turn to A gives R
    for (m, n) in [(1usize, 1usize), (5, 3), (3, 5), (6, 6)] {
        let d = fixture(m, n, 1.0, 60 + (m * n) as u64, false);
        for a in both(&d) {
            let (h, r) = linalg::qr(&a).unwrap();
            assert_eq!((h.shape(), r.shape()), ((m, n), (m, n)));
            let (nh, nr) = (naive(&h), naive(&r));
            let mut x = naive(&a);
            for k in 0..m.min(n) {
                let w: Vec<f64> = (0..m).map(|i| nh[i][k]).collect();
                assert!((0..k).all(|i| w[i] == 0.0), "H lower trapezoidal");
                let ww: f64 = w.iter().map(|v| v * v).sum();
                for j in 0..n {
                    let dot: f64 = (0..m).map(|i| w[i] * x[i][j]).sum();
                    for i in 0..m {
                        x[i][j] -= 2.0 * w[i] * dot / ww;
                    }
                }
            }
            for i in 0..m {
                for j in 0..n {
                    let want = if i <= j { x[i][j] } else { 0.0 };
                    assert!(
                        (nr[i][j] - want).abs() < 1e-9 * (1.0 + want.abs()),
                        "R {m}x{n} at {i},{j}: {} vs {want}",
                        nr[i][j]
                    );
                    assert!(i <= j || nr[i][j] == 0.0, "R upper triangular");
                }
            }
        }
    }
    let (_, r) = linalg::qr(&Matrix::from_dense(
        Dense::from_shape_vec((2, 1), vec![3.0, 4.0]).unwrap(),
    ))
    .unwrap();
    assert_eq!(r.get(0, 0), -5.0, "a = -sign(x1) |x|");
    let sing2 =
        Matrix::from_dense(Dense::from_shape_vec((2, 2), vec![1.0, 2.0, 2.0, 4.0]).unwrap());
    assert!(linalg::lu(&sing2).is_err());
    assert!(linalg::lu(&Matrix::filled(2, 3, 1.0)).is_err());
    // singular, non-square, non-symmetric and indefinite inputs are errors, not panics
    // (solve and inv, as Commons Math's QR, reject an exact zero on R's diagonal only: for
    // [1 2; 2 4] rounding leaves a tiny pivot, and SystemDS returns huge values)
    let sing = Matrix::from_dense(Dense::from_shape_vec((2, 2), vec![1.0, 2.0, 2.0, 4.0]).unwrap());
    assert_eq!(linalg::det(&sing).unwrap(), 0.0);
    let sing = Matrix::from_dense(Dense::from_shape_vec((2, 2), vec![1.0, 2.0, 0.0, 0.0]).unwrap());
    assert!(linalg::solve(&sing, &col(&[1.0, 1.0])).is_err());
    assert!(linalg::inv(&sing).is_err());
    let rect = Matrix::filled(2, 3, 1.0);
    assert!(linalg::solve(&rect, &col(&[1.0, 1.0])).is_err());
    assert!(linalg::inv(&rect).is_err());
    assert!(linalg::det(&rect).is_err());
    assert!(linalg::eigen(&rect).is_err());
    assert!(linalg::solve(&spd(3, 1), &col(&[1.0, 1.0])).is_err());
    let nonsym =
        Matrix::from_dense(Dense::from_shape_vec((2, 2), vec![1.0, 2.0, 0.0, 1.0]).unwrap());
    assert!(linalg::cholesky(&nonsym).is_err());
    assert!(linalg::eigen(&nonsym).is_err());
    let indef =
        Matrix::from_dense(Dense::from_shape_vec((2, 2), vec![1.0, 2.0, 2.0, 1.0]).unwrap());
    assert!(linalg::cholesky(&indef).is_err());
    // square root of a positive definite matrix; rounding-level asymmetry is accepted
    for n in [1usize, 3, 8] {
        let a = spd(n, 3 + n as u64);
        let mut d = a.to_dense();
        if n > 1 {
            d[[0, 1]] *= 1.0 + 1e-14;
        }
        let r = linalg::sqrt_matrix(&Matrix::from_dense(d.clone())).unwrap();
        assert_naive(
            &Matrix::from_dense(matmul(&r, &r)),
            &naive(&a),
            &format!("sqrtMatrix {n}"),
        );
        assert!(linalg::eigen(&Matrix::from_dense(d)).is_ok());
    }
    assert!(linalg::sqrt_matrix(&indef).is_err());
    assert!(linalg::sqrt_matrix(&nonsym).is_err());
    let empty = Matrix::filled(0, 0, 0.0);
    assert_eq!(linalg::det(&empty).unwrap(), 1.0);
    assert_eq!(linalg::inv(&empty).unwrap().shape(), (0, 0));
}

#[test]
fn sequences() {
    for (from, to, incr) in [
        (1.0, 10.0, 1.0),
        (10.0, 1.0, -1.0),
        (0.0, 1.0, 0.1),
        (1.0, 1.0, 1.0),
        (0.5, 3.0, 0.75),
        (-3.0, 3.0, 2.0),
    ] {
        let got = kernels::seq(from, to, incr).unwrap();
        let mut want = Vec::new();
        let mut cur = from;
        while (incr > 0.0 && cur <= to + 1e-12) || (incr < 0.0 && cur >= to - 1e-12) {
            want.push(vec![cur]);
            cur += incr;
        }
        assert_naive(&got, &want, &format!("seq({from}, {to}, {incr})"));
    }
    assert_eq!(kernels::seq_default_incr(5.0, 1.0), -1.0);
    assert!(kernels::seq(1.0, 10.0, -1.0).is_err());
    assert!(kernels::seq(1.0, 10.0, 0.0).is_err());
    assert!(kernels::seq(1.0, f64::INFINITY, 1.0).is_err());
}

/// How many different values, told apart as `java.lang.Double.equals` does (every NaN one
/// value, `0.0` and `-0.0` two): by the bits, NaNs made one.
fn naive_distinct(vals: impl Iterator<Item = f64>) -> f64 {
    let mut keys: Vec<u64> = vals
        .map(|v| if v.is_nan() { u64::MAX } else { v.to_bits() })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.len() as f64
}

#[test]
fn count_distinct_counts_every_cell() {
    use spores_runtime::kernels::structure::{count_distinct, UniqueDir};
    let mut cases = fixtures();
    // NaNs (of two bit patterns), signed zeros and infinities, in both representations
    let special = Dense::from_shape_vec(
        (3, 4),
        vec![
            f64::NAN,
            -0.0,
            0.0,
            1.0,
            -f64::NAN,
            f64::INFINITY,
            -0.0,
            1.0,
            0.0,
            0.0,
            f64::NEG_INFINITY,
            f64::NAN,
        ],
    )
    .unwrap();
    for (k, x) in both(&special).into_iter().enumerate() {
        cases.push((format!("special{}", ["d", "s"][k]), x));
    }
    for (what, x) in cases {
        let (m, n) = x.shape();
        let nx = naive(&x);
        let all = naive_distinct(nx.iter().flatten().copied());
        assert_naive(&count_distinct(&x, UniqueDir::All), &vec![vec![all]], &what);
        let rows: Naive = nx
            .iter()
            .map(|r| vec![naive_distinct(r.iter().copied())])
            .collect();
        assert_naive(&count_distinct(&x, UniqueDir::Row), &rows, &what);
        let cols: Naive = vec![(0..n)
            .map(|j| naive_distinct((0..m).map(|i| nx[i][j])))
            .collect()];
        assert_naive(&count_distinct(&x, UniqueDir::Col), &cols, &what);
    }
}

#[test]
fn unique_prod_and_svd() {
    use spores_runtime::kernels::structure::{unique, UniqueDir};
    for (what, x) in fixtures() {
        let (m, n) = x.shape();
        let nx = naive(&x);
        // unique: the same set of values, each once
        let set = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.dedup_by(|a, b| a.to_bits() == b.to_bits());
        };
        let mut all: Vec<f64> = nx.iter().flatten().copied().collect();
        set(&mut all);
        let got = unique(&x, UniqueDir::All);
        let mut g: Vec<f64> = naive(&got).into_iter().flatten().collect();
        assert_eq!(g.len(), all.len(), "unique count {what}");
        set(&mut g);
        assert_eq!(g, all, "unique values {what}");
        let got = unique(&x, UniqueDir::Row);
        assert_eq!(got.rows(), m, "unique rows {what}");
        let ng = naive(&got);
        for (i, (line, got_line)) in nx.iter().zip(&ng).enumerate() {
            let mut want = line.clone();
            set(&mut want);
            let mut g: Vec<f64> = got_line[..want.len()].to_vec();
            set(&mut g);
            assert_eq!(g, want, "unique row {i} {what}");
        }
        let p: f64 = nx.iter().flatten().product();
        assert!(close(stats::prod(&x), p), "prod {what}");
        // svd: A = U S t(V), orthonormal columns, decreasing singular values
        if m * n > 0 {
            let (u, s, v) = linalg::svd(&x).unwrap();
            let k = m.min(n);
            assert_eq!((u.shape(), s.shape(), v.shape()), ((m, k), (k, k), (n, k)));
            let usv = u.to_dense().dot(&s.to_dense()).dot(&v.to_dense().t());
            assert_naive(&Matrix::from_dense(usv), &nx, &format!("svd {what}"));
            let sv: Vec<f64> = (0..k).map(|i| s.get(i, i)).collect();
            assert!(sv.windows(2).all(|w| w[0] >= w[1]) && sv.iter().all(|&v| v >= 0.0));
            let utu = u.to_dense().t().dot(&u.to_dense());
            for i in 0..k {
                for j in 0..k {
                    let want = if i == j && sv[i] > 1e-12 {
                        1.0
                    } else {
                        utu[[i, j]]
                    };
                    assert!((utu[[i, j]] - want).abs() < 1e-9, "orthonormal U {what}");
                }
            }
        }
    }
    assert_eq!(stats::prod(&Matrix::filled(0, 3, 0.0)), 1.0);
}

#[test]
fn distributions_agree_with_systemds() {
    use spores_runtime::kernels::distributions::Dist;
    let d = |name: &str, ps: &[(&str, f64)]| {
        let ps: Vec<(String, f64)> = ps.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        Dist::parse("cdf", name, |k| ps.iter().find(|p| p.0 == k).map(|p| p.1)).unwrap()
    };
    // values printed by SystemDS 3.4 for the same calls (cdf, pnorm, pchisq, pf, icdf)
    let cdfs = [
        (d("normal", &[]), 1.96, true, 0.9750021048517796),
        (
            d("normal", &[("mean", 1.0), ("sd", 2.0)]),
            0.3,
            true,
            0.363169348824381,
        ),
        (d("normal", &[]), -2.5, false, 0.9937903346742238),
        (d("chisq", &[("df", 1.0)]), 3.84, true, 0.9499564787512956),
        (d("chisq", &[("df", 7.0)]), 10.5, false, 0.16196449307942862),
        (
            d("f", &[("df1", 3.0), ("df2", 20.0)]),
            2.5,
            false,
            0.08884375193768956,
        ),
        (d("t", &[("df", 5.0)]), 1.2, true, 0.8580544716469484),
        (d("exp", &[("rate", 2.0)]), 0.7, true, 0.7534030360583935),
    ];
    for (dist, x, lower, want) in cdfs {
        let got = dist.cdf(x, lower).unwrap();
        assert!(
            (got - want).abs() <= 1e-14,
            "{dist:?} cdf({x}) = {got}, SystemDS {want}"
        );
    }
    let icdfs = [
        (d("normal", &[]), 0.975, 1.959963984540054),
        (
            d("normal", &[("mean", 1.0), ("sd", 2.0)]),
            0.3,
            -0.04880102541608178,
        ),
        (d("chisq", &[("df", 4.0)]), 0.95, 9.487729036781978),
        (
            d("f", &[("df1", 3.0), ("df2", 20.0)]),
            0.9,
            2.3800870510696077,
        ),
        (d("t", &[("df", 5.0)]), 0.8, 0.9195437804463731),
        (d("exp", &[("rate", 2.0)]), 0.5, 0.34657359027997264),
    ];
    for (dist, p, want) in icdfs {
        let got = dist.icdf(p).unwrap();
        // SystemDS solves chi-squared, F and t inverses to 1e-9
        assert!(
            (got - want).abs() <= 1e-8 * (1.0 + want.abs()),
            "{dist:?} icdf({p}) = {got}, SystemDS {want}"
        );
        assert!((dist.cdf(got, true).unwrap() - p).abs() < 1e-10);
    }
    // the cdf is the integral of the density (trapezoids)
    for dist in [
        d("normal", &[]),
        d("chisq", &[("df", 3.0)]),
        d("t", &[("df", 4.0)]),
    ] {
        let (a, b, k) = (0.5, 2.0, 20000);
        let h = (b - a) / k as f64;
        let integral: f64 = (0..k)
            .map(|i| {
                (dist.pdf(a + i as f64 * h).unwrap() + dist.pdf(a + (i + 1) as f64 * h).unwrap())
                    * h
                    / 2.0
            })
            .sum();
        let diff = dist.cdf(b, true).unwrap() - dist.cdf(a, true).unwrap();
        assert!((integral - diff).abs() < 1e-8, "{dist:?}");
    }
    let none = |_: &str| None;
    assert!(Dist::parse("cdf", "chisq", none).is_err());
    assert!(Dist::parse("cdf", "gamma", none).is_err());
    assert!(Dist::parse("cdf", "normal", |k| (k == "sd").then_some(0.0)).is_err());
    assert!(Dist::parse("cdf", "t", |_| Some(0.5)).is_err());
    assert!(d("normal", &[]).icdf(1.5).is_err());
}

/// A NaN target gives NaN for every distribution (statrs's regularized beta, under the F
/// and t cdfs, panics on one).
#[test]
fn cdf_of_nan_is_nan() {
    use spores_runtime::kernels::distributions::Dist;
    for d in [
        Dist::F { df1: 2.0, df2: 3.0 },
        Dist::T { df: 3.0 },
        Dist::ChiSq { df: 2.0 },
    ] {
        assert!(d.cdf(f64::NAN, true).unwrap().is_nan());
        assert!(!d.cdf(1.5, true).unwrap().is_nan());
    }
}

/// Java's `HashMap<(a, b), list of columns>` simulated literally: a table of buckets of
/// linked lists (here vectors) in insertion order, doubled (each bucket split in order) past
/// three quarters full or when a ninth node joins a bucket of a table under 64 buckets, kept
/// (not shrunk) by `clear`; iterated bucket by bucket.
/// A node of [`JavaMap`]: a label pair and its columns.
type Node = ((i32, i32), Vec<usize>);

struct JavaMap {
    table: Vec<Vec<Node>>,
    size: usize,
}

impl JavaMap {
    fn hash((a, b): (i32, i32)) -> u32 {
        let h = 31i32.wrapping_mul(31i32.wrapping_add(a)).wrapping_add(b) as u32;
        h ^ (h >> 16)
    }
    fn resize(&mut self) {
        let cap = self.table.len() * 2;
        let mut t: Vec<Vec<_>> = (0..cap).map(|_| Vec::new()).collect();
        for bucket in std::mem::take(&mut self.table) {
            for e in bucket {
                t[Self::hash(e.0) as usize & (cap - 1)].push(e);
            }
        }
        self.table = t;
    }
    fn add(&mut self, key: (i32, i32), j: usize) {
        let b = Self::hash(key) as usize & (self.table.len() - 1);
        if let Some(e) = self.table[b].iter_mut().find(|e| e.0 == key) {
            e.1.push(j);
            return;
        }
        let held = self.table[b].len();
        self.table[b].push((key, vec![j]));
        if held >= 8 && self.table.len() < 64 {
            self.resize();
        }
        self.size += 1;
        if self.size * 4 > self.table.len() * 3 {
            self.resize();
        }
    }
}

/// `rowClassMeet` against its definition (classes of equal label pairs, sizes in `N`) with
/// SystemDS's numbering from a literal simulation of Java's `HashMap`, dense and sparse, `B`
/// a matrix or one row, few and many (table-growing) label pairs.
#[test]
fn row_class_meet_numbers_classes_as_systemds() {
    let labels = |rows: usize, cols: usize, k: f64, density: f64, seed: u64| {
        fixture(rows, cols, density, seed, true).mapv(|v| (v.abs() * k).floor())
    };
    for (case, (rows, cols, ka, kb, density, one_row)) in [
        (12, 9, 2.0, 2.0, 0.7, false),
        (20, 60, 4.0, 3.0, 0.9, false),
        (7, 300, 15.0, 9.0, 0.3, true),
        (3, 200, 40.0, 30.0, 1.0, false),
        (1, 1, 1.0, 1.0, 1.0, false),
    ]
    .into_iter()
    .enumerate()
    {
        let a = labels(rows, cols, ka, density, 10 + case as u64);
        let b = labels(
            if one_row { 1 } else { rows },
            cols,
            kb,
            1.0,
            20 + case as u64,
        );
        let mut map = JavaMap {
            table: (0..16).map(|_| Vec::new()).collect(),
            size: 0,
        };
        let mut want_c = vec![vec![0.0; cols]; rows];
        let mut want_n = vec![vec![0.0; cols]; rows];
        for i in 0..rows {
            map.table.iter_mut().for_each(Vec::clear);
            map.size = 0;
            for j in 0..cols {
                let (x, y) = (a[(i, j)] as i32, b[(if one_row { 0 } else { i }, j)] as i32);
                if x != 0 && y != 0 {
                    map.add((x, y), j);
                }
            }
            for (class, (_, members)) in map.table.iter().flatten().enumerate() {
                for &j in members {
                    want_c[i][j] = (class + 1) as f64;
                    want_n[i][j] = members.len() as f64;
                }
            }
        }
        for (ka, am) in both(&a).iter().enumerate() {
            for (kb, bm) in both(&b).iter().enumerate() {
                let (c, n) = table::row_class_meet(am, bm).unwrap();
                let what = format!("case {case} ({ka}{kb})");
                assert_naive(&c, &want_c, &what);
                assert_naive(&n, &want_n, &what);
            }
        }
    }
    let e = table::row_class_meet(&Matrix::filled(3, 2, 1.0), &Matrix::filled(2, 2, 1.0));
    assert!(e.is_err());
}

#[test]
fn union_distinct_keeps_first_rows() {
    use spores_runtime::kernels::structure::union_distinct;
    // rows compared as java.lang.Double.equals compares cells: NaNs equal, -0.0 != 0.0
    let same = |a: &[f64], b: &[f64]| {
        let key = |v: f64| if v.is_nan() { u64::MAX } else { v.to_bits() };
        a.iter().map(|&v| key(v)).eq(b.iter().map(|&v| key(v)))
    };
    let special = Dense::from_shape_vec(
        (4, 2),
        vec![f64::NAN, 0.0, -f64::NAN, 0.0, -0.0, 1.0, 0.0, 1.0],
    )
    .unwrap();
    let mut cases = fixtures();
    for (k, x) in both(&special).into_iter().enumerate() {
        cases.push((format!("special{}", ["d", "s"][k]), x));
    }
    for (what, x) in cases {
        // x with itself, and x with its rows reversed plus a repeat of its first row
        let nx = naive(&x);
        let mut rev: Naive = nx.iter().rev().cloned().collect();
        rev.extend(nx.first().cloned());
        for other in [nx.clone(), rev] {
            let mut want: Naive = Vec::new();
            for r in nx.iter().chain(&other) {
                if !want.iter().any(|w| same(w, r)) {
                    want.push(r.clone());
                }
            }
            let n = x.cols();
            let o =
                Dense::from_shape_vec((other.len(), n), other.iter().flatten().copied().collect())
                    .unwrap();
            for y in both(&o) {
                let got = union_distinct(&x, &y);
                assert_eq!(got.shape(), (want.len(), n), "union shape {what}");
                for (g, w) in naive(&got).iter().zip(&want) {
                    assert!(same(g, w), "union rows {what}: {g:?} vs {w:?}");
                }
            }
        }
    }
}

#[test]
fn count_distinct_approx_exact_when_small_kmv_when_large() {
    use spores_runtime::kernels::structure::{count_distinct, count_distinct_approx, UniqueDir};
    let dirs = [UniqueDir::All, UniqueDir::Row, UniqueDir::Col];
    // below 1024 non-zeros per counted line SystemDS counts exactly
    for (what, x) in fixtures() {
        for dir in dirs {
            if dir == UniqueDir::All && x.nnz() >= 1024 {
                continue; // "rc" counts all non-zeros: a sketch from 1024 on
            }
            let want = naive(&count_distinct(&x, dir));
            assert_naive(&count_distinct_approx(&x, dir), &want, &what);
        }
    }
    // large enough for the sketch: rounded uniform values, dense and sparse storage
    let spec = |rows, cols, sparsity, seed| RandSpec {
        rows,
        cols,
        min: 0.0,
        max: 3000.0,
        sparsity,
        seed,
    };
    for (s, what) in [
        (spec(40, 1500, 1.0, 5), "dense"),
        (spec(60, 1200, 0.9, 6), "mostly non-zero"),
    ] {
        let r = kernels::rand_matrix(&s);
        let d = Dense::from_shape_fn(r.shape(), |(i, j)| r.get(i, j).round());
        let nx = naive(&Matrix::Dense(d.clone()));
        let nnz = nx.iter().flatten().filter(|v| **v != 0.0).count();
        for x in both(&d) {
            // "rc": the hashed sketch estimates the exact count within 25 %
            let exact = naive_distinct(nx.iter().flatten().copied());
            let got = count_distinct_approx(&x, UniqueDir::All).get(0, 0);
            assert!(
                (got - exact).abs() <= 0.25 * exact,
                "{what}: {got} for {exact}"
            );
            // "r": SystemDS's sketch of the row's smallest values themselves, naively
            let dd = (nnz / s.rows) as f64 + 1.0;
            let (k, m) = (dd.min(64.0), (dd * dd).min(i32::MAX as f64));
            let rows: Naive = nx
                .iter()
                .map(|row| {
                    let mut v = row.clone();
                    v.sort_by(f64::total_cmp);
                    v.dedup();
                    let e = if (v.len() as f64) < k {
                        v.len() as f64
                    } else {
                        ((k - 1.0) / (v[k as usize - 1] / m)).min(dd)
                    };
                    vec![(e + 0.5).floor()]
                })
                .collect();
            assert_naive(&count_distinct_approx(&x, UniqueDir::Row), &rows, what);
        }
    }
}

/// The image `n` of an NCHW fixture as `[c][h][w]`, padded with `pad` cells of `fill` on
/// every side.
fn padded(x: &Naive, n: usize, g: &dnn::Geometry, fill: f64) -> Vec<Vec<Vec<f64>>> {
    let (hp, wp) = (g.h + 2 * g.pad_h, g.w + 2 * g.pad_w);
    let mut img = vec![vec![vec![fill; wp]; hp]; g.c];
    for (c, plane) in img.iter_mut().enumerate() {
        for h in 0..g.h {
            for w in 0..g.w {
                plane[h + g.pad_h][w + g.pad_w] = x[n][c * g.h * g.w + h * g.w + w];
            }
        }
    }
    img
}

fn geometries() -> Vec<dnn::Geometry> {
    let g = |n, c, h, w, k, r, s, sh, sw, ph, pw| dnn::Geometry {
        n,
        c,
        h,
        w,
        k,
        r,
        s,
        stride_h: sh,
        stride_w: sw,
        pad_h: ph,
        pad_w: pw,
    };
    vec![
        g(2, 1, 4, 4, 1, 2, 2, 1, 1, 0, 0),
        g(3, 2, 5, 4, 3, 3, 2, 2, 1, 1, 1),
        g(1, 3, 6, 6, 2, 3, 3, 2, 2, 1, 0),
        g(2, 2, 3, 5, 2, 1, 1, 1, 3, 0, 2),
    ]
}

/// Geometries whose rows are wide enough for conv2d's blocks of outputs (stride 1 and 2,
/// padded, and outputs on either side of the blocks).
fn wide_geometries() -> Vec<dnn::Geometry> {
    let g = geometries()[0];
    vec![
        dnn::Geometry {
            n: 2,
            c: 2,
            h: 5,
            w: 23,
            k: 2,
            r: 3,
            s: 3,
            stride_h: 1,
            stride_w: 1,
            pad_h: 1,
            pad_w: 1,
        },
        dnn::Geometry {
            n: 1,
            c: 2,
            h: 4,
            w: 40,
            k: 3,
            r: 2,
            s: 3,
            stride_w: 2,
            pad_w: 1,
            ..g
        },
    ]
}

#[test]
fn conv2d_is_the_sum_over_padded_windows() {
    for (i, g) in geometries().iter().chain(&wide_geometries()).enumerate() {
        let (p, q) = g.output("conv2d").unwrap();
        for (j, &density) in [0.1, 1.0].iter().enumerate() {
            let xd = fixture(g.n, g.c * g.h * g.w, density, 40 + i as u64, false);
            let fd = fixture(g.k, g.c * g.r * g.s, 1.0, 50 + j as u64, false);
            let f = naive(&Matrix::Dense(fd.clone()));
            for x in both(&xd) {
                let xn = naive(&x);
                // zero-padded images, every window cell multiplied by its filter weight
                let mut want = vec![vec![0.0; g.k * p * q]; g.n];
                for (n, out) in want.iter_mut().enumerate() {
                    let img = padded(&xn, n, g, 0.0);
                    for k in 0..g.k {
                        for pp in 0..p {
                            for qq in 0..q {
                                let mut acc = 0.0;
                                for (c, plane) in img.iter().enumerate() {
                                    for r in 0..g.r {
                                        for s in 0..g.s {
                                            acc += f[k][c * g.r * g.s + r * g.s + s]
                                                * plane[pp * g.stride_h + r][qq * g.stride_w + s];
                                        }
                                    }
                                }
                                out[k * p * q + pp * q + qq] = acc;
                            }
                        }
                    }
                }
                for filt in both(&fd) {
                    let got = dnn::conv2d(&x, &filt, g).unwrap();
                    assert_naive(&got, &want, &format!("conv2d {g:?} density {density}"));
                    // each output adds its taps in the reference's order (channel, row,
                    // column), whether computed alone or in a block: the same bits
                    for (n, row) in want.iter().enumerate() {
                        for (j, &w) in row.iter().enumerate() {
                            let v = got.get(n, j);
                            assert_eq!(v.to_bits(), w.to_bits(), "conv2d {g:?} at ({n},{j})");
                        }
                    }
                }
            }
        }
    }
    // a filter of the wrong shape and a stride of 0 are errors, not panics
    let g = geometries()[1];
    let x = Matrix::filled(g.n, g.c * g.h * g.w, 1.0);
    assert!(dnn::conv2d(&x, &Matrix::filled(g.k, 5, 1.0), &g).is_err());
    let g0 = dnn::Geometry { stride_h: 0, ..g };
    assert!(dnn::conv2d(&x, &Matrix::filled(g.k, g.c * g.r * g.s, 1.0), &g0).is_err());
}

#[test]
fn pooling_ignores_the_padding_for_max_and_counts_it_for_avg() {
    for (i, g) in geometries().iter().enumerate() {
        let (p, q) = g.output("max_pool").unwrap();
        for &density in &[0.0, 0.2, 1.0] {
            let xd = fixture(g.n, g.c * g.h * g.w, density, 60 + i as u64, false);
            for x in both(&xd) {
                let xn = naive(&x);
                let empty = xn.iter().flatten().all(|v| *v == 0.0);
                for max in [true, false] {
                    // max: padded with -Inf (never chosen); avg: zeros, divided by r*s
                    let fill = if max { f64::NEG_INFINITY } else { 0.0 };
                    let mut want = vec![vec![0.0; g.c * p * q]; g.n];
                    for (n, out) in want.iter_mut().enumerate() {
                        let img = padded(&xn, n, g, fill);
                        for (c, plane) in img.iter().enumerate() {
                            for pp in 0..p {
                                for qq in 0..q {
                                    let cells =
                                        (0..g.r).flat_map(|r| (0..g.s).map(move |s| (r, s)));
                                    let vals: Vec<f64> = cells
                                        .map(|(r, s)| {
                                            plane[pp * g.stride_h + r][qq * g.stride_w + s]
                                        })
                                        .collect();
                                    out[c * p * q + pp * q + qq] = if empty {
                                        0.0
                                    } else if max {
                                        vals.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                                    } else {
                                        vals.iter().sum::<f64>() / (g.r * g.s) as f64
                                    };
                                }
                            }
                        }
                    }
                    let got = dnn::pool(&x, g, max).unwrap();
                    assert_naive(
                        &got,
                        &want,
                        &format!("pool max={max} {g:?} density {density}"),
                    );
                }
            }
        }
    }
}

#[test]
fn bias_add_and_multiply_per_channel_block() {
    let b = col(&[1.5, -2.0, 0.0]);
    for &density in &[0.0, 0.3, 1.0] {
        let xd = fixture(4, 12, density, 70, true);
        for x in both(&xd) {
            let xn = naive(&x);
            for add in [true, false] {
                let want: Naive = xn
                    .iter()
                    .map(|r| {
                        r.iter()
                            .enumerate()
                            .map(|(j, v)| {
                                let bj = [1.5, -2.0, 0.0][j / 4];
                                if add {
                                    v + bj
                                } else {
                                    v * bj
                                }
                            })
                            .collect()
                    })
                    .collect();
                assert_naive(&dnn::bias(&x, &b, add).unwrap(), &want, "bias");
            }
        }
    }
    // a bias whose length does not divide the columns is an error
    assert!(dnn::bias(&Matrix::filled(2, 10, 1.0), &b, true).is_err());
}

/// The geometries of [`geometries`] and one whose pooling windows do not overlap (pool 2x2,
/// stride 2, padding 1).
fn backward_geometries() -> Vec<dnn::Geometry> {
    let mut gs = geometries();
    gs.push(dnn::Geometry {
        n: 2,
        c: 3,
        h: 5,
        w: 4,
        k: 2,
        r: 2,
        s: 2,
        stride_h: 2,
        stride_w: 2,
        pad_h: 1,
        pad_w: 1,
    });
    gs
}

#[test]
fn conv2d_backward_is_the_adjoint_over_padded_windows() {
    for (i, g) in backward_geometries().iter().enumerate() {
        let (p, q) = g.output("conv2d").unwrap();
        let crs = g.c * g.r * g.s;
        for (j, &density) in [0.15, 1.0].iter().enumerate() {
            let xd = fixture(g.n, g.c * g.h * g.w, density, 80 + i as u64, true);
            let fd = fixture(g.k, crs, 1.0, 90 + j as u64, false);
            let dd = fixture(g.n, g.k * p * q, density, 100 + i as u64, false);
            let (xn, f, dn) = (
                naive(&Matrix::Dense(xd.clone())),
                naive(&Matrix::Dense(fd.clone())),
                naive(&Matrix::Dense(dd.clone())),
            );
            // dF: every window cell of the zero-padded image times its dout; dX: every
            // filter weight times dout added onto the padded image, then cropped
            let mut dfilt = vec![vec![0.0; crs]; g.k];
            let mut dimg = vec![vec![0.0; g.c * g.h * g.w]; g.n];
            for n in 0..g.n {
                let img = padded(&xn, n, g, 0.0);
                let mut dpad = vec![vec![vec![0.0; g.w + 2 * g.pad_w]; g.h + 2 * g.pad_h]; g.c];
                for k in 0..g.k {
                    for pp in 0..p {
                        for qq in 0..q {
                            let d = dn[n][k * p * q + pp * q + qq];
                            for c in 0..g.c {
                                for r in 0..g.r {
                                    for s in 0..g.s {
                                        let (h, w) = (pp * g.stride_h + r, qq * g.stride_w + s);
                                        dfilt[k][c * g.r * g.s + r * g.s + s] += d * img[c][h][w];
                                        dpad[c][h][w] += f[k][c * g.r * g.s + r * g.s + s] * d;
                                    }
                                }
                            }
                        }
                    }
                }
                for c in 0..g.c {
                    for h in 0..g.h {
                        for w in 0..g.w {
                            dimg[n][c * g.h * g.w + h * g.w + w] =
                                dpad[c][h + g.pad_h][w + g.pad_w];
                        }
                    }
                }
            }
            let what = format!("{g:?} density {density}");
            for x in both(&xd) {
                for d in both(&dd) {
                    let got = dnn::conv2d_backward_filter(&x, &d, g).unwrap();
                    assert_naive(&got, &dfilt, &format!("backward_filter {what}"));
                    // the adjoint identity: sum(conv2d(X, F) * dout) = sum(F * dF)
                    let fwd = naive(&dnn::conv2d(&x, &Matrix::Dense(fd.clone()), g).unwrap());
                    let lhs: f64 = fwd
                        .iter()
                        .flatten()
                        .zip(dn.iter().flatten())
                        .map(|(a, b)| a * b)
                        .sum();
                    let rhs: f64 = f
                        .iter()
                        .flatten()
                        .zip(dfilt.iter().flatten())
                        .map(|(a, b)| a * b)
                        .sum();
                    assert!(close(lhs, rhs), "adjoint {what}: {lhs} vs {rhs}");
                }
            }
            for filt in both(&fd) {
                for d in both(&dd) {
                    let got = dnn::conv2d_backward_data(&filt, &d, g).unwrap();
                    assert_naive(&got, &dimg, &format!("backward_data {what}"));
                }
            }
        }
    }
    // an empty operand gives zeros (SystemDS's short-cut: NaN in the other one does not show),
    // wrong shapes are errors
    let g = backward_geometries()[1];
    let (p, q) = g.output("conv2d").unwrap();
    let nan = Matrix::filled(g.n, g.c * g.h * g.w, f64::NAN);
    let zero_dout = Matrix::filled(g.n, g.k * p * q, 0.0);
    let got = dnn::conv2d_backward_filter(&nan, &zero_dout, &g).unwrap();
    assert_naive(&got, &vec![vec![0.0; g.c * g.r * g.s]; g.k], "empty dout");
    let fnan = Matrix::filled(g.k, g.c * g.r * g.s, f64::NAN);
    let got = dnn::conv2d_backward_data(&fnan, &zero_dout, &g).unwrap();
    assert_naive(&got, &vec![vec![0.0; g.c * g.h * g.w]; g.n], "empty dout");
    let ones = Matrix::filled(g.n, g.k * p * q + 1, 1.0);
    assert!(dnn::conv2d_backward_filter(&nan, &ones, &g).is_err());
    assert!(dnn::conv2d_backward_data(&fnan, &ones, &g).is_err());
    assert!(dnn::conv2d_backward_data(&Matrix::filled(1, 1, 1.0), &zero_dout, &g).is_err());
}

#[test]
fn pooling_backward_routes_to_the_first_maximum_or_spreads_the_average() {
    for (i, g) in backward_geometries().iter().enumerate() {
        let (p, q) = g.output("max_pool").unwrap();
        let overlap = g.stride_h < g.r || g.stride_w < g.s;
        for &density in &[0.2, 1.0] {
            // rounded values: many ties, which go to the window's first cell
            let mut xd = fixture(g.n, g.c * g.h * g.w, density, 110 + i as u64, true);
            xd.mapv_inplace(|v| v.round());
            let dd = fixture(g.n, g.c * p * q, density, 120 + i as u64, false);
            let (xn, dn) = (
                naive(&Matrix::Dense(xd.clone())),
                naive(&Matrix::Dense(dd.clone())),
            );
            // per image cell: the gradients of the windows whose first maximum it is, and
            // the average's share of every window covering it
            let mut routed = vec![vec![Vec::new(); g.c * g.h * g.w]; g.n];
            let mut avg = vec![vec![0.0; g.c * g.h * g.w]; g.n];
            for n in 0..g.n {
                let img = padded(&xn, n, g, f64::NEG_INFINITY);
                for c in 0..g.c {
                    for pp in 0..p {
                        for qq in 0..q {
                            let d = dn[n][c * p * q + pp * q + qq];
                            let mut best: Option<(f64, usize)> = None;
                            for r in 0..g.r {
                                for s in 0..g.s {
                                    let (h, w) = (pp * g.stride_h + r, qq * g.stride_w + s);
                                    let v = img[c][h][w];
                                    if v == f64::NEG_INFINITY {
                                        continue; // the padding
                                    }
                                    let cell = c * g.h * g.w + (h - g.pad_h) * g.w + (w - g.pad_w);
                                    avg[n][cell] += d / (g.r * g.s) as f64;
                                    // row-major over the window, so strict > keeps the first
                                    if best.is_none_or(|(b, _)| v > b) {
                                        best = Some((v, cell));
                                    }
                                }
                            }
                            if let Some((_, cell)) = best {
                                routed[n][cell].push(d);
                            }
                        }
                    }
                }
            }
            let what = format!("{g:?} density {density}");
            for x in both(&xd) {
                for d in both(&dd) {
                    let got = dnn::pool_backward(&x, &d, g, false).unwrap();
                    assert_naive(&got, &avg, &format!("avg_pool_backward {what}"));
                    let got = naive(&dnn::pool_backward(&x, &d, g, true).unwrap());
                    let both_sparse = x.is_sparse() && d.is_sparse();
                    for n in 0..g.n {
                        let empty_image = xn[n].iter().all(|v| *v == 0.0);
                        for (cell, ds) in routed[n].iter().enumerate() {
                            let g_ = got[n][cell];
                            let sum: f64 = ds.iter().sum();
                            if both_sparse && empty_image {
                                // SystemDS's sparse kernel skips an image without non-zeros
                                assert_eq!(g_, 0.0, "max_pool_backward {what}");
                            } else if both_sparse || !overlap || ds.len() <= 1 {
                                assert!(
                                    close(g_, sum),
                                    "max_pool_backward {what} ({n},{cell}): {g_} vs {sum}"
                                );
                            } else {
                                // overlapping windows, dense kernel: one of the non-zero gradients
                                let nz: Vec<f64> =
                                    ds.iter().copied().filter(|v| *v != 0.0).collect();
                                assert!(
                                    (nz.is_empty() && g_ == 0.0) || nz.contains(&g_),
                                    "max_pool_backward {what} ({n},{cell}): {g_} not one of {ds:?}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    // the padding is never a candidate: an all-negative image passes its gradients on;
    // NaN never wins; an empty dout (or max's empty image) gives zeros; wrong shapes are errors
    let g = backward_geometries()[4];
    let (p, q) = g.output("max_pool").unwrap();
    let neg = Matrix::filled(g.n, g.c * g.h * g.w, -1.0);
    let ones = Matrix::filled(g.n, g.c * p * q, 1.0);
    let got = dnn::pool_backward(&neg, &ones, &g, true).unwrap();
    assert!(close(got.to_dense().sum(), (g.n * g.c * p * q) as f64));
    let nan = Matrix::filled(g.n, g.c * g.h * g.w, f64::NAN);
    assert_eq!(dnn::pool_backward(&nan, &ones, &g, true).unwrap().nnz(), 0);
    let zeros = Matrix::filled(g.n, g.c * p * q, 0.0);
    assert_eq!(dnn::pool_backward(&nan, &zeros, &g, true).unwrap().nnz(), 0);
    assert_eq!(
        dnn::pool_backward(&nan, &zeros, &g, false).unwrap().nnz(),
        0
    );
    let empty = Matrix::filled(g.n, g.c * g.h * g.w, 0.0);
    assert_eq!(
        dnn::pool_backward(&empty, &ones, &g, true).unwrap().nnz(),
        0
    );
    assert!(dnn::pool_backward(&neg, &Matrix::filled(g.n, 3, 1.0), &g, true).is_err());
    assert!(dnn::pool_backward(&Matrix::filled(1, 3, 1.0), &ones, &g, true).is_err());
    // the average does not read X (SystemDS's upsampling passes an empty one of any shape)
    assert!(dnn::pool_backward(&Matrix::filled(1, 1, 0.0), &ones, &g, false).is_ok());
}

/// The values of channel `c` (`pq` cells per image) of a naive NCHW matrix.
fn channel_values(x: &Naive, pq: usize, c: usize) -> Vec<f64> {
    x.iter()
        .flat_map(|row| row[c * pq..(c + 1) * pq].to_vec())
        .collect()
}

#[test]
fn batch_norm2d_normalizes_each_channel_and_its_backward_is_the_chain_rule() {
    let (n, k, pq) = (4, 3, 6);
    let gamma = [1.5, -0.5, 2.0];
    let beta = [0.25, 1.0, -3.0];
    let (em, ev) = ([0.1, -0.2, 0.0], [1.0, 2.0, 0.5]);
    let (eps, mu) = (1e-5, 0.9);
    for &density in &[0.3, 1.0] {
        let xd = fixture(n, k * pq, density, 130, true);
        let dd = fixture(n, k * pq, 1.0, 131, false);
        let (xn, dn) = (
            naive(&Matrix::Dense(xd.clone())),
            naive(&Matrix::Dense(dd.clone())),
        );
        for x in both(&xd) {
            let [out, em2, ev2, mean, inv] = dnn::batch_norm2d(
                &x,
                &col(&gamma),
                &col(&beta),
                &col(&em),
                &col(&ev),
                "train",
                eps,
                mu,
            )
            .unwrap();
            let m = (n * pq) as f64;
            let mut want = vec![vec![0.0; k * pq]; n];
            let (mut wm, mut wi) = (Vec::new(), Vec::new());
            let (mut dx, mut dg, mut db) = (vec![vec![0.0; k * pq]; n], Vec::new(), Vec::new());
            for c in 0..k {
                let vals = channel_values(&xn, pq, c);
                let mean_c = vals.iter().sum::<f64>() / m;
                // the biased variance
                let var_c = vals.iter().map(|v| (v - mean_c).powi(2)).sum::<f64>() / m;
                let inv_c = 1.0 / (var_c + eps).sqrt();
                wm.push(mean_c);
                wi.push(inv_c);
                // the closed form of the gradient through the batch's statistics
                let (mut sd, mut sdx) = (0.0, 0.0);
                for i in 0..n {
                    for j in c * pq..(c + 1) * pq {
                        let xhat = (xn[i][j] - mean_c) * inv_c;
                        want[i][j] = xhat * gamma[c] + beta[c];
                        sd += dn[i][j];
                        sdx += dn[i][j] * xhat;
                    }
                }
                dg.push(vec![sdx]);
                db.push(vec![sd]);
                for i in 0..n {
                    for j in c * pq..(c + 1) * pq {
                        let xhat = (xn[i][j] - mean_c) * inv_c;
                        dx[i][j] = gamma[c] * inv_c / m * (m * dn[i][j] - sd - xhat * sdx);
                    }
                }
            }
            let column = |v: &[f64]| v.iter().map(|a| vec![*a]).collect::<Naive>();
            assert_naive(&out, &want, "batch_norm2d train");
            assert_naive(&mean, &column(&wm), "cache_mean");
            assert_naive(&inv, &column(&wi), "cache_inv_var");
            let upd: Vec<f64> = (0..k).map(|c| mu * em[c] + (1.0 - mu) * wm[c]).collect();
            assert_naive(&em2, &column(&upd), "ema_mean_upd");
            // SystemDS 3.4 averages the mean into the variance's average
            let upd: Vec<f64> = (0..k).map(|c| mu * ev[c] + (1.0 - mu) * wm[c]).collect();
            assert_naive(&ev2, &column(&upd), "ema_var_upd");
            for d in both(&dd) {
                let [gx, ggamma, gbeta] =
                    dnn::batch_norm2d_backward(&x, &d, &col(&gamma), &mean, &inv).unwrap();
                assert_naive(&gx, &dx, "batch_norm2d_backward dX");
                assert_naive(&ggamma, &dg, "dgamma");
                assert_naive(&gbeta, &db, "dbeta");
            }
            // test mode: the averages normalize, unchanged
            let [out, em2, ev2, mean, inv] = dnn::batch_norm2d(
                &x,
                &col(&gamma),
                &col(&beta),
                &col(&em),
                &col(&ev),
                "test",
                eps,
                mu,
            )
            .unwrap();
            let want: Naive = xn
                .iter()
                .map(|row| {
                    row.iter()
                        .enumerate()
                        .map(|(j, v)| {
                            let c = j / pq;
                            (v - em[c]) / (ev[c] + eps).sqrt() * gamma[c] + beta[c]
                        })
                        .collect()
                })
                .collect();
            assert_naive(&out, &want, "batch_norm2d test");
            assert_naive(&em2, &column(&em), "test ema_mean");
            assert_naive(&ev2, &column(&ev), "test ema_var");
            assert_naive(&mean, &column(&em), "test cache_mean");
            let inv_want: Vec<f64> = ev.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
            assert_naive(&inv, &column(&inv_want), "test cache_inv_var");
        }
    }
    // an unknown mode, a column of the wrong length and columns that do not divide are errors
    let x = Matrix::filled(2, 6, 1.0);
    let c3 = col(&[1.0, 2.0, 3.0]);
    assert!(dnn::batch_norm2d(&x, &c3, &c3, &c3, &c3, "infer", 1e-5, 0.9).is_err());
    let c2 = col(&[1.0, 2.0]);
    assert!(dnn::batch_norm2d(&x, &c2, &c3, &c3, &c3, "train", 1e-5, 0.9).is_err());
    let c4 = col(&[1.0, 2.0, 3.0, 4.0]);
    assert!(dnn::batch_norm2d(&x, &c4, &c4, &c4, &c4, "train", 1e-5, 0.9).is_err());
    assert!(dnn::batch_norm2d_backward(&x, &Matrix::filled(2, 5, 1.0), &c3, &c3, &c3).is_err());
}

/// A naive LSTM forward pass from its definition: per sequence and step, the gates of
/// `cbind(x_t, h) %*% W + b`, then `c = f*c + i*g`, `h = o*tanh(c)`. Returns every step's
/// output, the final cell states, and every step's cell states and activated gates.
#[allow(clippy::type_complexity)]
fn naive_lstm(
    x: &Naive,
    w: &Naive,
    b: &[f64],
    h0: &Naive,
    c0: &Naive,
    t: usize,
) -> (Vec<Naive>, Naive, Vec<Naive>, Vec<Naive>) {
    let m = h0[0].len();
    let d = w.len() - m;
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    let (mut outs, mut cells, mut gates) = (Vec::new(), Vec::new(), Vec::new());
    let (mut h, mut c) = (h0.clone(), c0.clone());
    for step in 0..t {
        let mut gate_rows = Vec::new();
        for (i, xi) in x.iter().enumerate() {
            let input: Vec<f64> = xi[step * d..(step + 1) * d]
                .iter()
                .chain(&h[i])
                .copied()
                .collect();
            let z: Vec<f64> = (0..4 * m)
                .map(|k| {
                    b[k] + input
                        .iter()
                        .enumerate()
                        .map(|(j, a)| a * w[j][k])
                        .sum::<f64>()
                })
                .collect();
            let mut gr = vec![0.0; 4 * m];
            for j in 0..m {
                let (ig, fg, og, gg) = (
                    sig(z[j]),
                    sig(z[m + j]),
                    sig(z[2 * m + j]),
                    z[3 * m + j].tanh(),
                );
                c[i][j] = fg * c[i][j] + ig * gg;
                h[i][j] = og * c[i][j].tanh();
                gr[j] = ig;
                gr[m + j] = fg;
                gr[2 * m + j] = og;
                gr[3 * m + j] = gg;
            }
            gate_rows.push(gr);
        }
        outs.push(h.clone());
        cells.push(c.clone());
        gates.push(gate_rows);
    }
    (outs, c, cells, gates)
}

#[test]
fn lstm_forward_matches_its_definition_and_backward_the_finite_differences() {
    let (n, t, d, m) = (3, 4, 2, 3);
    let xd = fixture(n, t * d, 0.4, 140, false).mapv(|v| v / 3.0);
    let w = naive(&Matrix::Dense(
        fixture(d + m, 4 * m, 1.0, 141, false).mapv(|v| v / 3.0),
    ));
    let b: Vec<f64> = naive(&Matrix::Dense(
        fixture(1, 4 * m, 1.0, 142, false).mapv(|v| v / 4.0),
    ))[0]
        .clone();
    let h0 = naive(&Matrix::Dense(
        fixture(n, m, 1.0, 143, false).mapv(|v| v / 3.0),
    ));
    let c0 = naive(&Matrix::Dense(
        fixture(n, m, 1.0, 144, false).mapv(|v| v / 3.0),
    ));
    let mat = |v: &Naive| {
        let (r, c) = (v.len(), v[0].len());
        Matrix::from_dense(
            Dense::from_shape_vec((r, c), v.iter().flatten().copied().collect()).unwrap(),
        )
    };
    let xn = naive(&Matrix::Dense(xd.clone()));
    let (outs, c_last, cells, gates) = naive_lstm(&xn, &w, &b, &h0, &c0, t);
    for rs in [false, true] {
        let dout_cols = if rs { t * m } else { m };
        let dout = naive(&Matrix::Dense(fixture(n, dout_cols, 1.0, 145, false)));
        let dc = naive(&Matrix::Dense(fixture(n, m, 1.0, 146, false)));
        for x in both(&xd) {
            let [out, c, cache_out, cache_c, cache_ifog] = dnn::lstm(
                &x,
                &mat(&w),
                &mat(&vec![b.clone()]),
                &mat(&h0),
                &mat(&c0),
                rs,
            )
            .unwrap();
            let want_out: Naive = (0..n)
                .map(|i| {
                    if rs {
                        (0..t).flat_map(|s| outs[s][i].clone()).collect()
                    } else {
                        outs[t - 1][i].clone()
                    }
                })
                .collect();
            assert_naive(&out, &want_out, "lstm out");
            assert_naive(&c, &c_last, "lstm c");
            let cache = |v: &Vec<Naive>| -> Naive {
                v.iter()
                    .map(|s| s.iter().flatten().copied().collect())
                    .collect()
            };
            assert_naive(&cache_out, &cache(&outs), "cache_out");
            assert_naive(&cache_c, &cache(&cells), "cache_c");
            assert_naive(&cache_ifog, &cache(&gates), "cache_ifog");
            let [dx, dw, db, dh0, dc0] = dnn::lstm_backward(
                &x,
                &mat(&w),
                &mat(&vec![b.clone()]),
                &mat(&h0),
                &mat(&c0),
                rs,
                &mat(&dout),
                &mat(&dc),
                &cache_out,
                &cache_c,
                &cache_ifog,
            )
            .unwrap();
            // the loss whose gradients these are: sum(out * dout) + sum(c * dc)
            let loss = |x: &Naive, w: &Naive, b: &[f64], h0: &Naive, c0: &Naive| {
                let (outs, c_last, _, _) = naive_lstm(x, w, b, h0, c0, t);
                let mut l = 0.0;
                for i in 0..n {
                    for j in 0..dout_cols {
                        let o = if rs {
                            outs[j / m][i][j % m]
                        } else {
                            outs[t - 1][i][j]
                        };
                        l += o * dout[i][j];
                    }
                    for j in 0..m {
                        l += c_last[i][j] * dc[i][j];
                    }
                }
                l
            };
            let eps = 1e-6;
            let fd = |bump: &dyn Fn(f64) -> f64| (bump(eps) - bump(-eps)) / (2.0 * eps);
            let near = |got: f64, want: f64, what: &str| {
                assert!(
                    (got - want).abs() <= 1e-6 * (1.0 + want.abs()),
                    "{what}: {got} vs finite difference {want}"
                );
            };
            let (dxn, dwn, dbn, dh0n, dc0n) =
                (naive(&dx), naive(&dw), naive(&db), naive(&dh0), naive(&dc0));
            for i in 0..n {
                for j in 0..t * d {
                    let want = fd(&|e| {
                        let mut x2 = xn.clone();
                        x2[i][j] += e;
                        loss(&x2, &w, &b, &h0, &c0)
                    });
                    near(dxn[i][j], want, "dX");
                }
                for j in 0..m {
                    let want = fd(&|e| {
                        let mut h2 = h0.clone();
                        h2[i][j] += e;
                        loss(&xn, &w, &b, &h2, &c0)
                    });
                    near(dh0n[i][j], want, "dout0");
                    let want = fd(&|e| {
                        let mut c2 = c0.clone();
                        c2[i][j] += e;
                        loss(&xn, &w, &b, &h0, &c2)
                    });
                    near(dc0n[i][j], want, "dc0");
                }
            }
            for k in 0..4 * m {
                for j in 0..d + m {
                    let want = fd(&|e| {
                        let mut w2 = w.clone();
                        w2[j][k] += e;
                        loss(&xn, &w2, &b, &h0, &c0)
                    });
                    near(dwn[j][k], want, "dW");
                }
                let want = fd(&|e| {
                    let mut b2 = b.clone();
                    b2[k] += e;
                    loss(&xn, &w, &b2, &h0, &c0)
                });
                near(dbn[0][k], want, "db");
            }
        }
    }
    // shapes SystemDS rejects are errors
    let ok = |r, c| Matrix::filled(r, c, 0.5);
    assert!(dnn::lstm(
        &ok(n, t * d),
        &ok(d + m, 4 * m + 1),
        &ok(1, 4 * m),
        &ok(n, m),
        &ok(n, m),
        true
    )
    .is_err());
    assert!(dnn::lstm(
        &ok(n, t * d),
        &ok(d + m, 4 * m),
        &ok(2, 4 * m),
        &ok(n, m),
        &ok(n, m),
        true
    )
    .is_err());
    assert!(dnn::lstm(
        &ok(n, t * d),
        &ok(d + m, 4 * m),
        &ok(1, 4 * m),
        &ok(n, m),
        &ok(n + 1, m),
        true
    )
    .is_err());
    assert!(dnn::lstm(
        &ok(n, t * d + 1),
        &ok(d + m, 4 * m),
        &ok(1, 4 * m),
        &ok(n, m),
        &ok(n, m),
        true
    )
    .is_err());
}
