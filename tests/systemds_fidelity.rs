//! Bit-level fidelity to SystemDS 3.4 on the operations whose rounding SystemDS fixes: its
//! compensated sums and incremental means (`sum`, `rowSums`, `colSums`, `mean`, `rowMeans`,
//! `colMeans`, `sum(X^2)`), its matrix-vector products (`X %*% v`, `t(X) %*% w`), its mmchain (`t(X) %*% (w * (X %*% v))`,
//! which it also runs for `t(X) %*% X %*% v`), its `-(t(X) %*% w)` for `-t(X) %*% w`, its dot products for `sum(v1 * v2)` and `sum(v^2)`
//! of column vectors and its `eigen` (Commons Math's Householder + QL, with its
//! eigenvector signs). The same program runs in SystemDS and in spores (optimized and with
//! `--no-opt`) and every printed number must be the same double. Skipped, with a message,
//! when SystemDS is not installed (scripts/install-systemds.sh, or `SYSTEMDS_HOME`). The
//! kernels' own tests (runtime/tests/kernels.rs) check the same rules against naive
//! references without SystemDS.

#![allow(clippy::needless_range_loop)] // index arithmetic of a symmetric matrix

use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};

mod sysds;
use sysds::{run_spores, run_systemds};

/// A fresh scratch folder for this binary.
fn tmp(name: &str) -> sysds::Scratch {
    sysds::tmp("fid", name)
}

/// A CSV matrix with its `.mtd`: values of mixed magnitudes (so that plain and compensated
/// sums round differently), `zeros` of them zero.
fn csv(dir: &Path, name: &str, rows: usize, cols: usize, zeros: f64, seed: u64) -> PathBuf {
    sysds::csv_with_mtd(dir.join(name), rows, cols, zeros, seed, |rng| {
        let scale = [1e-3, 1.0, 1e3, 1e6][rng.gen_range(0..4)];
        format!("{:.6e}", (rng.gen::<f64>() - 0.4) * scale)
    })
}

const PROGRAM: &str = r#"
X = read($X)
S = read($S)
show = function(matrix[double] M, String what) {
  for (i in 1:nrow(M)) { for (j in 1:ncol(M)) { print(what + " " + i + " " + j + " " + as.scalar(M[i, j])) } }
}
print("sum " + sum(X))
print("mean " + mean(X))
print("sumsq " + sum(X^2))
show(rowSums(X), "rowSums")
show(colSums(X), "colSums")
show(rowMeans(X), "rowMeans")
show(colMeans(X), "colMeans")
v = X[1, ]
w = X[, 1]
show(X %*% t(v), "Xv")
show(t(X) %*% w, "tXw")
show(- t(X) %*% w, "negtXw")
u = t(v)
w2 = X[, 2]
show(t(X) %*% (X %*% u), "XtXv")
show(t(X) %*% X %*% u, "XtX_v")
show(t(X) %*% (w2 * (X %*% u)), "XtwXv")
print("dotsum " + sum(w * w2))
print("sqsum " + sum(w2^2))
# sums of a sum or difference of equal-sized matrices: SystemDS sums each side; a plan may
# sum them otherwise ("written-": SystemDS's bits as written, 1e-12 relative when optimized)
w3 = X[, 3]
print("written-diffsum " + sum(w * w2 - w3))
print("written-addsum " + sum(X + X^2))
# one and ten 1e-16: a plain dot product rounds to 1 + 8e-16 (in any vector length), a
# compensated sum to 1 + 1e-15
a = matrix("1 1e-16 1e-16 1e-16 1e-16 1e-16 1e-16 1e-16 1e-16 1e-16 1e-16", rows=11, cols=1)
ones = matrix("1 1 1 1 1 1 1 1 1 1 1", rows=11, cols=1)
print("dot " + sum(a * ones))
[vals, vecs] = eigen(S)
show(vals, "values")
show(vecs, "vectors")
"#;

#[test]
fn sums_means_and_eigen_give_systemds_bits() {
    let Some(home) = spores::emit::systemds::home() else {
        eprintln!("skipped: SystemDS is not installed (scripts/install-systemds.sh, or set SYSTEMDS_HOME)");
        return;
    };
    let dir = tmp("agg");
    let prog = dir.join("p.dml");
    std::fs::write(&prog, PROGRAM).unwrap();
    for (k, (rows, cols, zeros)) in [(60, 5, 0.0), (23, 9, 0.3), (8, 21, 0.0)]
        .into_iter()
        .enumerate()
    {
        let x = csv(&dir, &format!("X{k}.csv"), rows, cols, zeros, 31 + k as u64);
        // a symmetric matrix (written with both triangles equal) for eigen
        let n = cols;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(77 + k as u64);
        let mut s = vec![vec![0.0; n]; n];
        for i in 0..n {
            for j in i..n {
                let v: f64 = format!("{:.6}", rng.gen::<f64>() * 4.0 - 2.0)
                    .parse()
                    .unwrap();
                s[i][j] = v;
                s[j][i] = v;
            }
        }
        let text: String = s
            .iter()
            .map(|r| {
                r.iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
                    + "\n"
            })
            .collect();
        let sp = dir.join(format!("S{k}.csv"));
        std::fs::write(&sp, text).unwrap();
        std::fs::write(
            dir.join(format!("S{k}.csv.mtd")),
            format!(r#"{{"data_type": "matrix", "value_type": "double", "rows": {n}, "cols": {n}, "format": "csv", "header": false, "sep": ","}}"#),
        )
        .unwrap();
        let args = vec![format!("X={}", x.display()), format!("S={}", sp.display())];
        same_bits(&home, &dir, &prog, &args, &format!("case {k}"));
    }
}

/// Runs `prog` in SystemDS and in spores (optimized and `--no-opt`) and asserts the same words
/// and the same doubles on every line (a line starting with `written-` within 1e-12 relative
/// when optimized).
fn same_bits(home: &Path, dir: &Path, prog: &Path, args: &[String], what: &str) {
    let want = run_systemds(home, dir, prog, args);
    assert!(want.len() > 10, "SystemDS printed {want:?}");
    for opt in [true, false] {
        let got = run_spores(prog, args, opt);
        // the same words and the same doubles (compared as numbers: 1.0E-5 and 1e-05)
        assert_eq!(got.len(), want.len(), "lines (opt={opt})");
        for (g, w) in got.iter().zip(&want) {
            let (gw, ww): (Vec<&str>, Vec<&str>) = (g.split(' ').collect(), w.split(' ').collect());
            assert_eq!(gw.len(), ww.len(), "{g} vs {w}");
            for (a, b) in gw.iter().zip(&ww) {
                match (a.parse::<f64>(), b.parse::<f64>()) {
                    (Ok(x), Ok(y)) if opt && w.starts_with("written-") => assert!(
                        (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
                        "{what} opt={opt}: {g} vs SystemDS {w}"
                    ),
                    (Ok(x), Ok(y)) => assert_eq!(
                        x.to_bits(),
                        y.to_bits(),
                        "{what} opt={opt}: {g} vs SystemDS {w}"
                    ),
                    _ => assert_eq!(a, b, "{g} vs {w}"),
                }
            }
        }
    }
}

/// A tridiagonal system built inside a function (shapes unknown before running) and solved by
/// CG on its normal equations, as CubicSpline does: `A = U + D + L` is dense in SystemDS (an
/// element-wise result of few columns, by its memory estimate), so its products take the
/// dense kernels; `sum(p * q)` of column vectors is SystemDS's dot product, since it
/// recompiles the loop with the shapes it finds at run time.
const CG_PROGRAM: &str = r#"
solve = function(matrix[double] x, matrix[double] y) return (matrix[double] s) {
  n = nrow(x)
  d = 1 / (x[2:n, ] - x[1:(n-1), ])
  Dx = 2 * (rbind(d, matrix(0, 1, 1)) + rbind(matrix(0, 1, 1), d))
  MDx = diag(Dx)
  MBx = diag(d)
  MUx = matrix(0, rows=n, cols=n)
  MUx[1:(n-1), 2:n] = MBx
  MLx = matrix(0, rows=n, cols=n)
  MLx[2:n, 1:(n-1)] = MBx
  A = MUx + MDx + MLx
  b = 3 * y
  r = -t(A) %*% b
  p = -r
  s = matrix(0, rows=n, cols=1)
  nr2 = sum(r^2)
  for (i in 1:8) {
    q = t(A) %*% (A %*% p)
    a = nr2 / sum(p * q)
    s = s + a * p
    r = r + a * q
    old = nr2
    nr2 = sum(r^2)
    p = -r + (nr2 / old) * p
    print("cg " + i + " " + nr2 + " " + a)
  }
  Ap = A %*% p
  for (j in 1:n) { print("Ap " + j + " " + as.scalar(Ap[j, 1])) }
}
x = read($X)
y = read($Y)
s = solve(x, y)
for (j in 1:nrow(s)) { print("s " + j + " " + as.scalar(s[j, 1])) }
"#;

#[test]
fn cg_on_a_small_tridiagonal_system_gives_systemds_bits() {
    let Some(home) = spores::emit::systemds::home() else {
        eprintln!("skipped: SystemDS is not installed (scripts/install-systemds.sh, or set SYSTEMDS_HOME)");
        return;
    };
    let dir = tmp("cg");
    let prog = dir.join("cg.dml");
    std::fs::write(&prog, CG_PROGRAM).unwrap();
    // sorted knots with uneven gaps, and values of mixed signs
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(19);
    let mut xs: Vec<f64> = (0..12)
        .map(|_| format!("{:.6}", rng.gen::<f64>() * 10.0).parse().unwrap())
        .collect();
    xs.sort_by(f64::total_cmp);
    let ys: Vec<f64> = xs
        .iter()
        .map(|v| format!("{:.6}", v.sin()).parse().unwrap())
        .collect();
    let mut args = Vec::new();
    for (name, vals) in [("X", &xs), ("Y", &ys)] {
        let f = dir.join(format!("{name}.csv"));
        let text: String = vals.iter().map(|v| format!("{v}\n")).collect();
        std::fs::write(&f, text).unwrap();
        std::fs::write(
            dir.join(format!("{name}.csv.mtd")),
            format!(r#"{{"data_type": "matrix", "value_type": "double", "rows": {}, "cols": 1, "format": "csv", "header": false, "sep": ","}}"#, vals.len()),
        )
        .unwrap();
        args.push(format!("{name}={}", f.display()));
    }
    same_bits(&home, &dir, &prog, &args, "cg");
}

/// Variances, moments, covariances and grouped aggregates in SystemDS's incremental order
/// (its `CM` and `COV` function objects: `var`, `sd`, `rowVars`, `colVars` with its
/// variance read back between rows, `moment` with a sparse column's zeros last, weighted
/// `aggregate`), `trace` compensated, and the least-squares gradient `t(X) %*% (X %*% v - y)`
/// as SystemDS's `XtXvy` mmchain, in a loop (where SystemDS cannot fold `v`), on a dense and
/// a sparse input (below SystemDS's 4096 non-zeros, where it aggregates on one thread).
const MOMENTS_PROGRAM: &str = r#"
X = read($X)
show = function(matrix[double] M, String what) {
  for (i in 1:nrow(M)) { for (j in 1:ncol(M)) { print(what + " " + i + " " + j + " " + as.scalar(M[i, j])) } }
}
print("var " + var(X) + " sd " + sd(X))
show(rowVars(X), "rowVars")
show(colVars(X), "colVars")
show(colSds(X), "colSds")
x1 = X[, 1]
x2 = X[, 2]
w = abs(X[, 3]) + 0.5
print("moments " + moment(x1, 2) + " " + moment(x1, 3) + " " + moment(x1, 4))
print("weighted " + moment(x1, w, 2) + " " + moment(x1, w, 3) + " " + moment(x1, w, 4))
print("cov " + cov(x1, x2) + " " + cov(x1, x2, w))
A = t(X) %*% X
print("trace " + trace(A) + " " + trace(X[1:ncol(X), ]))
g = (seq(1, nrow(X)) %% 3) + 1
show(aggregate(target=x1, groups=g, fn="mean"), "aggmean")
show(aggregate(target=x1, groups=g, fn="variance"), "aggvar")
show(aggregate(target=x1, groups=g, fn="centralmoment", order=3), "aggcm3")
y = X[, 2]
B = matrix(0, rows=ncol(X), cols=1)
for (it in 1:3) {
  G = t(X) %*% (X %*% B - y)
  B = B - 0.001 * G
  show(G, "grad" + it)
}
"#;

/// Weighted grouped aggregates, on their own (SystemDS 3.4 stops with a
/// NullPointerException when a program has both a weighted aggregate and a central moment's).
const WEIGHTED_PROGRAM: &str = r#"
X = read($X)
show = function(matrix[double] M, String what) {
  for (i in 1:nrow(M)) { for (j in 1:ncol(M)) { print(what + " " + i + " " + j + " " + as.scalar(M[i, j])) } }
}
w = abs(X[, 3]) + 0.5
g = (seq(1, nrow(X)) %% 3) + 1
show(aggregate(target=X[, 2], groups=g, weights=w, fn="mean"), "aggwmean")
show(aggregate(target=X[, 2], groups=g, weights=w, fn="variance"), "aggwvar")
show(aggregate(target=X[, 1], groups=g, weights=w, fn="count"), "aggwcount")
show(aggregate(target=X[, 1], groups=g, weights=w, fn="max"), "aggwmax")
"#;

#[test]
fn moments_variances_and_gradients_give_systemds_bits() {
    let Some(home) = spores::emit::systemds::home() else {
        eprintln!("skipped: SystemDS is not installed (scripts/install-systemds.sh, or set SYSTEMDS_HOME)");
        return;
    };
    let dir = tmp("cm");
    let prog = dir.join("cm.dml");
    std::fs::write(&prog, MOMENTS_PROGRAM).unwrap();
    let weighted = dir.join("weighted.dml");
    std::fs::write(&weighted, WEIGHTED_PROGRAM).unwrap();
    // dense, and 30% dense (sparse in SystemDS and spores)
    for (k, (rows, cols, zeros)) in [(70, 6, 0.0), (90, 8, 0.7)].into_iter().enumerate() {
        let x = csv(&dir, &format!("X{k}.csv"), rows, cols, zeros, 61 + k as u64);
        let args = vec![format!("X={}", x.display())];
        same_bits(&home, &dir, &prog, &args, &format!("moments case {k}"));
        same_bits(&home, &dir, &weighted, &args, &format!("weighted case {k}"));
    }
}

/// Products SystemDS runs on all its threads once they are large enough (over 128K flops),
/// its partial vectors added in a fixed order: its mmchain (`XtwXv`, `XtXv`, `XtXvy`) and
/// `t(X) %*% y` (its `t(t(y) %*% X)`, split over the rows of X), in a GLM-like loop whose
/// iterations carry any last-bit difference forward.
const SPLIT_PROGRAM: &str = r#"
X = read($X)
y = read($Y)
w = 1 + abs(y) / 1000
show = function(matrix[double] M, String what) {
  for (i in 1:nrow(M)) { print(what + " " + i + " " + as.scalar(M[i, 1])) }
}
r = t(X) %*% y
show(r, "tXy")
p = r / 1000000
for (it in 1:2) {
  q = t(X) %*% (w * (X %*% p))
  show(q, "XtwXv" + it)
  p = q / (sqrt(sum(q^2)) + 1)
}
show(t(X) %*% (X %*% p), "XtXv")
show(t(X) %*% ((X %*% p) - y), "XtXvy")
"#;

#[test]
fn products_split_over_systemds_threads_give_its_bits() {
    let Some(home) = spores::emit::systemds::home() else {
        eprintln!("skipped: SystemDS is not installed (scripts/install-systemds.sh, or set SYSTEMDS_HOME)");
        return;
    };
    let dir = tmp("split");
    let prog = dir.join("split.dml");
    std::fs::write(&prog, SPLIT_PROGRAM).unwrap();
    // 701 x 120: past the thresholds of every product here (an odd row count: unequal
    // halves); dense, and 10% dense (sparse in SystemDS and spores)
    for (k, zeros) in [0.0, 0.9].into_iter().enumerate() {
        let x = csv(&dir, &format!("X{k}.csv"), 701, 120, zeros, 91 + k as u64);
        let y = csv(&dir, &format!("y{k}.csv"), 701, 1, 0.0, 95 + k as u64);
        let args = vec![format!("X={}", x.display()), format!("Y={}", y.display())];
        same_bits(&home, &dir, &prog, &args, &format!("split case {k}"));
    }
}

/// Dense matrix products in each of SystemDS's kernels (`LibMatrixMult.matrixMultDenseDense`),
/// whose order of additions spores follows (`kernels::dense_product`): the general kernel on
/// one thread (a short A below the flop threshold) and split over A's rows, the short-left
/// kernel split over B's rows, a skinny B transposed, a wide B split over its columns, and
/// `t(X) %*% M` as SystemDS rewrites it (`t(t(M) %*% X)` when X is the larger). X has zeros,
/// which move the general kernel's groups of four.
const DENSE_PRODUCTS_PROGRAM: &str = r#"
X = read($X)
B = read($B)
show = function(matrix[double] M, String what) {
  for (i in 1:nrow(M)) { for (j in 1:ncol(M)) { print(what + " " + i + " " + j + " " + as.scalar(M[i, j])) } }
}
show(X[1:2, 1:60] %*% B[1:60, 1:5], "general-short")
P = X[1:200, 1:60] %*% B[1:60, 1:10]
show(P[1:30, ], "skinny")
P = X[1:37, 1:61] %*% B[1:61, 1:80]
show(P[1:5, ], "general-rows")
show(X[1:8, ] %*% B[, 1:100], "short-lhs")
P = X[1:40, 1:30] %*% B[1:30, ]
show(P[1:3, 1020:1030], "rhs-cols-a")
show(P[1:3, 1245:1256], "rhs-cols-b")
show(P[1:3, 2490:2500], "rhs-cols-c")
show(t(X[, 1:60]) %*% X[, 61:65], "transposed-rewrite")
show(t(X[, 1:3]) %*% X[, 4:8], "transposed-formed")
show(t(X) %*% X[, 1:3], "transposed-tall")
"#;

#[test]
fn dense_products_give_systemds_bits_in_every_kernel() {
    let Some(home) = spores::emit::systemds::home() else {
        eprintln!("skipped: SystemDS is not installed (scripts/install-systemds.sh, or set SYSTEMDS_HOME)");
        return;
    };
    let dir = tmp("dense");
    let prog = dir.join("dense.dml");
    std::fs::write(&prog, DENSE_PRODUCTS_PROGRAM).unwrap();
    let x = csv(&dir, "X.csv", 300, 120, 0.2, 131);
    let b = csv(&dir, "B.csv", 120, 2500, 0.0, 132);
    let args = vec![format!("X={}", x.display()), format!("B={}", b.display())];
    same_bits(&home, &dir, &prog, &args, "dense products");
}

/// SystemDS's parfor optimizer changes the thread counts of the products it reaches, and the
/// change lasts (spores's `exec::parfor`): the body of a `parfor` of 3 iterations on a machine
/// of 2 cores runs its operations on one thread, and so does `fit`, a function it calls (and
/// `step`, which `fit` calls), wherever `fit` and `step` are called afterwards; `gram`, which
/// SystemDS inlines (one block, two calls, two operations), keeps two threads outside the
/// loop; a `parfor` of one iteration runs as a `for`, and one with `opt=NONE` changes
/// nothing. Products past SystemDS's thresholds for splitting, so the order of their sums
/// depends on the count.
const PARFOR_PROGRAM: &str = r#"
X = read($X)
y = read($Y)
show = function(matrix[double] M, String what) {
  for (i in 1:nrow(M)) { print(what + " " + i + " " + as.scalar(M[i, 1])) }
}
step = function(matrix[double] X, matrix[double] r) return (matrix[double] q) {
  q = t(X) %*% (X %*% (r / 1000000))
  for (i in 1:2) { q = q / 2 }
}
fit = function(matrix[double] X, matrix[double] y) return (matrix[double] r) {
  r = t(X) %*% y
  for (i in 1:2) { r = r + step(X, r) }
}
gram = function(matrix[double] X, matrix[double] y) return (matrix[double] g) {
  g = t(X) %*% y
}
loose = function(matrix[double] X, matrix[double] y) return (matrix[double] r) {
  r = t(X) %*% y
  for (i in 1:2) { r = r - 1 }
}
show(fit(X, y), "before")
show(gram(X, y), "gram-before")
show(loose(X, y), "loose-before")
one = matrix(0, ncol(X), 1)
parfor (i in 1:1) { one[, i] = loose(X, y) }
show(one, "one-iteration")
none = matrix(0, ncol(X), 2)
parfor (i in 1:2, opt=NONE) { none[, i] = loose(X, y * i) }
show(none[, 2], "opt-none")
R = matrix(0, ncol(X), 3)
parfor (i in 1:3) {
  R[, i] = fit(X, y * i) + gram(X, y) + t(X) %*% (y + i)
}
show(R[, 2], "in-parfor")
show(fit(X, y), "after")
show(step(X, y[1:ncol(X), ]), "step-after")
show(gram(X, y), "gram-after")
show(loose(X, y), "loose-after")
"#;

#[test]
fn parfor_sets_systemds_thread_counts_lastingly() {
    let Some(home) = spores::emit::systemds::home() else {
        eprintln!("skipped: SystemDS is not installed (scripts/install-systemds.sh, or set SYSTEMDS_HOME)");
        return;
    };
    let dir = tmp("parfor");
    let prog = dir.join("parfor.dml");
    std::fs::write(&prog, PARFOR_PROGRAM).unwrap();
    let x = csv(&dir, "X.csv", 1201, 120, 0.0, 71);
    let y = csv(&dir, "y.csv", 1201, 1, 0.0, 73);
    let args = vec![format!("X={}", x.display()), format!("Y={}", y.display())];
    same_bits(&home, &dir, &prog, &args, "parfor");
    // the program tells the counts apart: on a machine of several cores, SystemDS's `fit`
    // after the loop gives other bits than before it
    let want = run_systemds(&home, &dir, &prog, &args);
    let lines = |tag: &str| -> Vec<String> {
        want.iter()
            .filter_map(|l| l.strip_prefix(&format!("{tag} ")).map(str::to_string))
            .collect()
    };
    if std::thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
        assert_ne!(
            lines("before"),
            lines("after"),
            "fit: one thread after the parfor"
        );
        assert_eq!(lines("gram-before"), lines("gram-after"), "gram is inlined");
        assert_eq!(
            lines("loose-before"),
            lines("loose-after"),
            "loose is not reached"
        );
    } else {
        eprintln!("one core: SystemDS's counts are all 1, the program cannot tell them apart");
    }
}

/// Sums of products of column vectors as SystemDS runs them: `sum(b * c)` and `sum(c ^ 2)`
/// are dot products (its simplifyDotProductSum), but `sum(a * y * c)`, `sum(e * (y * b))`
/// and `sum(a ^ 2 * e)` are its ternary aggregate `tak+*`, a compensated sum of the cells,
/// which an optimized plan must not turn into a dot product (`t(c) %*% (a * y)`, cheaper to
/// the cost model: L2-SVM's line search `sum(out * Y * Xd)` then drifts from SystemDS's
/// iterates); in a loop, where the vectors are new every iteration. `sum(e * c - b)` and
/// `sum(b + a * e)` are SystemDS's `sum(e * c) - sum(b)` and `sum(b) + sum(a * e)` (its
/// pushdownSumOnAdditiveBinary), the products' sums dot products, in a plan that keeps
/// them as written too. `y` is a vector of
/// signs, as L2-SVM's labels: SystemDS reorders a chain of three or more factors
/// (RewriteElementwiseMultChainOptimization: by kind, non-zeros and operator id), which
/// spores does not follow, and with a sign among them every order gives the same products.
/// No product appears twice, even reordered: SystemDS's common subexpression elimination
/// would give it two consumers, and a product with two consumers is summed compensated, not
/// as a dot product; and a plan that computes a shared product once may sum it as a dot
/// product with another factor, which the cost model cannot tell from the compensated sums.
const SUM_PRODUCTS_PROGRAM: &str = r#"
X = read($X)
a = X[, 1]
y = 2 * (X[, 2] > 0) - 1
b = X[, 2]
c = X[, 3]
e = X[, 4]
for (i in 1:6) {
  t3 = sum(a * y * c)
  t2 = sum(e * (y * b))
  sq = sum(a ^ 2 * e)
  d = sum(b * c)
  v = sum(c ^ 2)
  sd = sum(e * c - b)
  sp = sum(b + a * e)
  print("ayc " + i + " " + t3)
  print("eyb " + i + " " + t2)
  print("aae " + i + " " + sq)
  print("bc " + i + " " + d)
  print("cc " + i + " " + v)
  print("ec-b " + i + " " + sd)
  print("b+ae " + i + " " + sp)
  a = a + 0.5 * b
  c = c - 0.25 * a
}
"#;

#[test]
fn sums_of_products_of_vectors_give_systemds_bits() {
    let Some(home) = spores::emit::systemds::home() else {
        eprintln!("skipped: SystemDS is not installed (scripts/install-systemds.sh, or set SYSTEMDS_HOME)");
        return;
    };
    let dir = tmp("sumprod");
    let prog = dir.join("p.dml");
    std::fs::write(&prog, SUM_PRODUCTS_PROGRAM).unwrap();
    for (k, rows) in [300usize, 5000].into_iter().enumerate() {
        let x = csv(&dir, &format!("X{k}.csv"), rows, 4, 0.0, 91 + k as u64);
        let args = vec![format!("X={}", x.display())];
        same_bits(&home, &dir, &prog, &args, &format!("rows {rows}"));
    }
}
