//! Whole programs: the examples/ programs against independent naive computations in Rust
//! (same generator and seeds, plain loops), and the shared ALS and PNMF programs run to
//! completion with the properties their algorithms guarantee.

use spores_runtime::kernels::{rand_matrix, RandSpec};

type M = Vec<Vec<f64>>;

fn run_file(path: &str, nvargs: &[(&str, &str)]) -> Vec<String> {
    let src = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let args = nvargs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut out = Vec::new();
    spores::driver::run(&src, &args, &mut out).unwrap_or_else(|e| {
        panic!(
            "{path}: {}",
            spores::diagnostics::render(&e, path, &src, false)
        )
    });
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

/// The number after `key ` in the first line that starts with it.
fn field(lines: &[String], key: &str) -> f64 {
    lines
        .iter()
        .find_map(|l| l.strip_prefix(key).and_then(|r| r.trim().split(' ').next()))
        .unwrap_or_else(|| panic!("no line starting with {key:?} in {lines:?}"))
        .parse()
        .unwrap()
}

fn rand(rows: usize, cols: usize, min: f64, max: f64, sparsity: f64, seed: u64) -> M {
    let m = rand_matrix(&RandSpec {
        rows,
        cols,
        min,
        max,
        sparsity,
        seed,
    });
    (0..rows)
        .map(|i| (0..cols).map(|j| m.get(i, j)).collect())
        .collect()
}

fn mm(a: &M, b: &M) -> M {
    let n = b[0].len();
    a.iter()
        .map(|r| {
            (0..n)
                .map(|j| r.iter().zip(b).map(|(x, br)| x * br[j]).sum())
                .collect()
        })
        .collect()
}

fn t(a: &M) -> M {
    (0..a[0].len())
        .map(|j| a.iter().map(|r| r[j]).collect())
        .collect()
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-300)
}

#[test]
fn example_loss_matches_naive() {
    let out = run_file("examples/loss.la", &[("m", "120"), ("n", "90"), ("r", "4")]);
    let x = rand(120, 90, 1.0, 5.0, 0.02, 11);
    let u = rand(120, 4, -0.5, 0.5, 1.0, 7);
    let v = rand(90, 4, -0.5, 0.5, 1.0, 8);
    let uv = mm(&u, &t(&v));
    let want: f64 = x
        .iter()
        .flatten()
        .zip(uv.iter().flatten())
        .map(|(a, b)| (a - b).powi(2))
        .sum();
    assert!(rel(field(&out, "loss"), want) < 1e-12, "{out:?} vs {want}");
    assert!(
        rel(field(&out, "expanded"), want) < 1e-9,
        "{out:?} vs {want}"
    );
}

#[test]
fn example_logreg_matches_naive() {
    let out = run_file("examples/logreg.la", &[]);
    let (m, n) = (500, 40);
    let x = rand(m, n, -1.0, 1.0, 0.1, 3);
    let wt = rand(n, 1, -1.0, 1.0, 1.0, 4);
    let y: Vec<f64> = mm(&x, &wt)
        .iter()
        .map(|r| f64::from(u8::from(r[0] > 0.0)))
        .collect();
    let mut w = vec![vec![0.0]; n];
    for it in 1..=20 {
        let p: Vec<f64> = mm(&x, &w)
            .iter()
            .map(|r| 1.0 / (1.0 + (-r[0]).exp()))
            .collect();
        let g: Vec<f64> = (0..n)
            .map(|j| (0..m).map(|i| x[i][j] * (p[i] - y[i])).sum::<f64>() / m as f64)
            .collect();
        for j in 0..n {
            w[j][0] -= 0.5 * g[j];
        }
        if it % 5 == 0 {
            let loss = -(0..m)
                .map(|i| y[i] * p[i].ln() + (1.0 - y[i]) * (1.0 - p[i]).ln())
                .sum::<f64>()
                / m as f64;
            let got = field(&out, &format!("iter {it} loss"));
            assert!(rel(got, loss) < 1e-12, "iter {it}: {got} vs {loss}");
        }
    }
    let xw = mm(&x, &w);
    let acc = (0..m)
        .filter(|&i| f64::from(u8::from(xw[i][0] > 0.0)) == y[i])
        .count() as f64
        / m as f64;
    assert_eq!(field(&out, "accuracy"), acc);
}

#[test]
fn example_pagerank_matches_naive() {
    let out = run_file("examples/pagerank.la", &[]);
    let n = 300;
    let g = rand(n, n, 1.0, 1.0, 0.02, 5);
    let outdeg: Vec<f64> = (0..n)
        .map(|j| g.iter().map(|r| r[j]).sum::<f64>())
        .map(|d| if d == 0.0 { 1.0 } else { d })
        .collect();
    let mut p = vec![1.0 / n as f64; n];
    let (mut delta, mut iter) = (1.0, 0);
    while delta > 1e-10 && iter < 100 {
        let new: Vec<f64> = (0..n)
            .map(|i| {
                0.85 * (0..n).map(|j| g[i][j] / outdeg[j] * p[j]).sum::<f64>() + 0.15 / n as f64
            })
            .collect();
        delta = new.iter().zip(&p).map(|(a, b)| (a - b).abs()).sum();
        p = new;
        iter += 1;
    }
    assert_eq!(field(&out, "iterations"), iter as f64);
    let top = p.iter().copied().fold(f64::MIN, f64::max);
    assert!(rel(field(&out, "top rank"), top) < 1e-9);
    assert!(rel(field(&out, "mass"), p.iter().sum()) < 1e-12);
    let printed: Vec<f64> = out
        .iter()
        .rev()
        .find(|l| !l.is_empty())
        .unwrap()
        .split(' ')
        .map(|v| v.parse().unwrap())
        .collect();
    let want: Vec<f64> = p[..5]
        .iter()
        .map(|v| (v * 1000.0).round() / 1000.0)
        .collect();
    assert_eq!(printed, want);
}

/// Lines `... <key> <value> ...` as numbers, in order.
fn series(lines: &[String], key: &str) -> Vec<f64> {
    lines
        .iter()
        .filter_map(|l| {
            let mut w = l.split(' ');
            w.position(|x| x == key)?;
            w.next()?.parse().ok()
        })
        .collect()
}

#[test]
fn shared_als_runs_and_decreases_the_loss() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/programs/als.la"
    );
    if !std::path::Path::new(path).exists() {
        eprintln!("skipping: {path} not present");
        return;
    }
    let out = run_file(path, &[]);
    let init = field(&out, "ALS initial loss:");
    let losses = series(&out, "loss");
    assert_eq!(losses.len(), 4, "{out:?}");
    let mut prev = init;
    for l in &losses {
        assert!(l.is_finite() && *l < prev, "loss must decrease: {out:?}");
        prev = *l;
    }
    let checksum: f64 = out.last().unwrap().parse().unwrap();
    assert!(checksum.is_finite() && checksum > 0.0);
}

#[test]
fn shared_pnmf_runs_and_decreases_the_objective() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/programs/pnmf.la"
    );
    if !std::path::Path::new(path).exists() {
        eprintln!("skipping: {path} not present");
        return;
    }
    let out = run_file(path, &[]);
    let obj = series(&out, "obj");
    assert_eq!(obj.len(), 10, "{out:?}");
    assert!(
        obj.windows(2).all(|w| w[1] < w[0]),
        "KL objective must decrease: {obj:?}"
    );
    let checksum: f64 = out.last().unwrap().parse().unwrap();
    assert!(checksum.is_finite() && checksum > 0.0);
}

/// Writes a program into a fresh temporary folder; returns the folder and the file.
fn temp_program(name: &str, text: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("spores-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{name}.la"));
    std::fs::write(&p, text).unwrap();
    (dir, p)
}

/// Runs a file with run-time optimization and `verify` (each optimized statement is also run
/// as written and must agree to 1e-9 relative).
fn run_optimized(path: &str, nvargs: &[(&str, &str)]) -> (Vec<String>, spores::driver::RunReport) {
    let src = std::fs::read_to_string(path).unwrap();
    let args = nvargs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let opts = spores::driver::RunOptions {
        optimize: true,
        verify: true,
        explain: true,
        ..Default::default()
    };
    let mut out = Vec::new();
    let report = spores::driver::run_with(&src, &args, &mut out, &opts).unwrap_or_else(|e| {
        panic!(
            "{path}: {}",
            spores::diagnostics::render(&e, path, &src, false)
        )
    });
    (
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(String::from)
            .collect(),
        report,
    )
}

/// `verify` measures a plan's rounding against the largest value the statements computed:
/// a Newton step whose gradient cancels to ~1e-12 (L2-SVM's line search) differs in every
/// digit of the gradient between plan and program while both are right to 1e-16 of its
/// terms, and must not be reported.
#[test]
fn verify_accepts_cancellation_in_reordered_sums() {
    let (dir, p) = temp_program(
        "cancel",
        r#"# Newton line search of L2-SVM (SystemDS's l2svm): g cancels to ~0 as the search converges
X = rand(rows=2000, cols=60, min=-1, max=1, seed=7)
w0 = rand(rows=60, cols=1, min=-1, max=1, seed=8)
Y = 2 * (X %*% w0 > 0) - 1
w = matrix(0, rows=60, cols=1)
s = t(X) %*% Y
Xw = matrix(0, rows=2000, cols=1)
reg = 1
step_sz = 0
Xd = X %*% s
wd = reg * sum(w * s)
dd = reg * sum(s * s)
i = 0
while (i < 8) {
  tmp_Xw = Xw + step_sz * Xd
  out = 1 - Y * tmp_Xw
  sv = out > 0
  out = out * sv
  g = wd + step_sz * dd - sum(out * Y * Xd)
  h = dd + sum(Xd * sv * Xd)
  step_sz = step_sz - g / h
  i = i + 1
}
print(step_sz)
print(g)
"#,
    );
    let (out, report) = run_optimized(p.to_str().unwrap(), &[]);
    assert!(report.optimized_runs > 0, "nothing was optimized");
    assert!(report.max_rel_diff <= 1e-9, "{}", report.max_rel_diff);
    let g: f64 = out[1].parse().unwrap();
    assert!(g.abs() < 1e-6, "the line search did not converge: g = {g}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// E-matching stays bounded on a class that absorbed many equal forms: with a 1x1 zero
/// input, `t(X4 %*% X2) %*% (X2 - 2)` grew one anchored rule's unbounded search to 24 GB
/// and 56 s before the node limit could act (fuzz seed 5001, program 192).
#[test]
fn matching_stays_bounded_on_a_block_that_saturates_to_zero() {
    let (dir, p) = temp_program(
        "zero_class",
        "X2 = rand(rows=1, cols=1, min=-1, max=1, sparsity=0.3, seed=999)\n\
         X4 = rand(rows=1, cols=1, min=0, max=1, sparsity=0.0, seed=345)\n\
         T0 = t(X4 %*% X2) %*% (X2 - 2.0)\nprint(sum(T0))\n",
    );
    let (out, report) = run_optimized(p.to_str().unwrap(), &[]);
    assert_eq!(out, ["0.0"]);
    let explain = report.explain.unwrap();
    assert!(!explain.contains("time limit"), "{explain}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn examples_agree_with_and_without_optimization() {
    for (path, args) in [
        (
            "examples/loss.la",
            vec![("m", "120"), ("n", "90"), ("r", "4")],
        ),
        ("examples/logreg.la", vec![]),
        ("examples/pagerank.la", vec![]),
        ("examples/long_chain.la", vec![]),
        ("../shared/data/programs/als.la", vec![]),
        ("../shared/data/programs/pnmf.la", vec![]),
    ] {
        if !std::path::Path::new(path).exists() {
            eprintln!("skipping: {path} not present");
            continue;
        }
        let plain = run_file(path, &args);
        let (opt, report) = run_optimized(path, &args);
        assert!(
            report.max_rel_diff <= 1e-9,
            "{path}: {}",
            report.max_rel_diff
        );
        assert_eq!(plain.len(), opt.len(), "{path}");
        for (a, b) in plain.iter().zip(&opt) {
            let nums =
                |l: &str| -> Vec<f64> { l.split(' ').filter_map(|w| w.parse().ok()).collect() };
            let (x, y) = (nums(a), nums(b));
            assert_eq!(x.len(), y.len(), "{path}: {a} vs {b}");
            for (p, q) in x.iter().zip(&y) {
                assert!(
                    rel(*p, *q) <= 1e-9 || (p - q).abs() < 1e-12,
                    "{path}: {a} vs {b}"
                );
            }
        }
    }
}

#[test]
fn run_time_optimizer_finds_the_pnmf_rewrite() {
    // sum(W %*% H) = colSums(W) %*% rowSums(H): the rewrite the SPORES paper reports for PNMF
    // (W and H are read after the block, so the plan assigns them and names them)
    let (dir, p) = temp_program("sumwh", "W = rand(rows=300, cols=5, seed=1)\nH = rand(rows=5, cols=200, seed=2)\nr = sum(W %*% H)\nprint(r)\nprint(sum(W) + sum(H))\n");
    let (out, report) = run_optimized(p.to_str().unwrap(), &[]);
    let explain = report.explain.unwrap();
    // the plan aggregates H first and never forms the 300 x 200 product
    let plans = plan_lines(&explain);
    assert!(plans.contains("rowSums(H)"), "{explain}");
    assert!(!plans.contains("W %*% H"), "{explain}");
    // the block's three assignments ran as one plan (the two rand calls are its barriers)
    assert_eq!(report.optimized_runs, 3);
    let plain = run_file(p.to_str().unwrap(), &[]);
    assert!(rel(out[0].parse().unwrap(), plain[0].parse().unwrap()) < 1e-12);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_time_optimizer_avoids_the_dense_product() {
    // sum(X * (U %*% t(V))) with X sparse: the dense U %*% t(V) is never needed (the plan is
    // the fused sddmm, or sum((t(X) %*% U) * V), whichever the cost model prefers)
    let (dir, p) = temp_program(
        "sumxuv",
        "X = rand(rows=400, cols=300, sparsity=0.01, seed=1)\nU = rand(rows=400, cols=6, seed=2)\nV = rand(rows=300, cols=6, seed=3)\nr = sum(X * (U %*% t(V)))\nprint(r)\n",
    );
    let (out, report) = run_optimized(p.to_str().unwrap(), &[]);
    let explain = report.explain.unwrap();
    let plans = plan_lines(&explain);
    assert!(!plans.contains("U %*% t(V)"), "{explain}");
    assert!(
        plans.contains("sddmm(") || plans.contains("tmmul("),
        "{explain}"
    );
    let plain = run_file(p.to_str().unwrap(), &[]);
    assert!(rel(out[0].parse().unwrap(), plain[0].parse().unwrap()) < 1e-12);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn checker_reaches_its_fixpoint_on_long_chains() {
    // b0 changes every iteration and each b(i) = b(i-1) copies it one iteration later: after
    // three iterations b89 still holds its initial 1 and b1 holds b0's value after two, 3.
    // The checker needs 90 passes over the loop body to see that none of them is constant.
    assert_eq!(run_file("examples/long_chain.la", &[]), ["4"]);
}

#[test]
fn fused_operators_agree_with_their_unfused_expressions() {
    // each statement must be planned with its fused operator, and (through `verify`) agree
    // with the statement run as written, on a sparse and on a dense X
    let cases = [
        ("sddmm", "r = X * (U %*% t(V))"),
        // a sampled product used only by a product with its own factor is never formed
        ("sddmm", "r = (X * (U %*% t(V))) %*% V"),
        ("sddmm", "r = t(X * (W %*% H)) %*% W"),
        // ... or by t(U) %*% with its left factor (the transpose of the left side)
        ("sddmm", "r = t(U) %*% (X * (U %*% t(V)))"),
        ("wsloss", "r = sum((X - U %*% t(V))^2)"),
        ("wsloss", "r = sum((W %*% H - X)^2)"),
        ("wslossw", "r = sum((X != 0) * (U %*% t(V) - X)^2)"),
        ("wcemm", "r = sum(X * log(W %*% H + eps))"),
        ("wcemm", "r = sum(X * log(U %*% t(V)))"),
        ("wdivmm", "r = (X / (W %*% H + eps)) %*% t(H)"),
        ("wdivmm", "r = (X / (U %*% t(V))) %*% V"),
        ("wdivmmt", "r = t(W) %*% (X / (W %*% H + eps))"),
        ("wsubmm", "r = ((X != 0) * (U %*% t(V) - X)) %*% V"),
        ("wsubmmt", "r = t(U) %*% ((X != 0) * (U %*% t(V) - X))"),
        ("wsubmmt", "r = t(t(W) %*% ((X != 0) * (W %*% H - X)))"),
        ("mmchain", "r = t(X) %*% (w * (X %*% v))"),
        ("mmchain", "r = t(X) %*% (X %*% V)"),
        ("mmchainr", "r = t(X) %*% (X %*% v - w)"),
        (
            "smmchain",
            "r = t(X) %*% (U * (X %*% V) - U * rowSums(U * (X %*% V)))",
        ),
        // as MultiLogReg writes it: Q dead after the block, the slice read twice, the row
        // sums spread by a product with a row of ones
        (
            "smmchain",
            "Q = W[, 1:6] * (X %*% V)\nr = t(X) %*% (Q - W[, 1:6] * (rowSums(Q) %*% matrix(1, rows=1, cols=6)))",
        ),
        ("sprop", "r = X * (1 - X)"),
    ];
    for sp in ["0.02", "0.6"] {
        for (i, (op, stmt)) in cases.iter().enumerate() {
            let text = format!(
                "X = rand(rows=300, cols=200, min=0.1, max=0.9, sparsity={sp}, seed=1)\n\
                 U = rand(rows=300, cols=6, min=0.1, max=1, seed=2)\n\
                 V = rand(rows=200, cols=6, min=0.1, max=1, seed=3)\n\
                 W = rand(rows=300, cols=6, min=0.1, max=1, seed=4)\n\
                 H = rand(rows=6, cols=200, min=0.1, max=1, seed=5)\n\
                 v = rand(rows=200, cols=1, min=-1, max=1, seed=6)\n\
                 w = rand(rows=300, cols=1, min=-1, max=1, seed=7)\n\
                 eps = 1e-6\n{stmt}\nprint({})\n",
                if stmt.starts_with("r = sum(") {
                    "r"
                } else {
                    "sum(r)"
                }
            );
            let (dir, p) = temp_program(&format!("fused{i}-{sp}"), &text);
            let (out, report) = run_optimized(p.to_str().unwrap(), &[]);
            let explain = report.explain.unwrap();
            // on a sparse X the fused operator must be chosen; on a dense X the dense
            // product may be cheaper (BLAS), and the plan only has to agree
            let planned = plan_lines(&explain).contains(&format!("{op}("));
            assert!(
                planned || sp != "0.02",
                "{stmt} at sparsity {sp}: no {op} in\n{explain}"
            );
            assert!(
                report.max_rel_diff <= 1e-9,
                "{stmt}: {}",
                report.max_rel_diff
            );
            let plain = run_file(p.to_str().unwrap(), &[]);
            let (a, b): (f64, f64) = (out[0].parse().unwrap(), plain[0].parse().unwrap());
            assert!(rel(a, b) < 1e-9, "{stmt} at sparsity {sp}: {a} vs {b}");
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}

/// The plan lines of a `--explain` log (each segment's plan, not its statements as written
/// nor the meanings of fused operators).
fn plan_lines(explain: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for l in explain.lines() {
        if l.starts_with("  plan, ") {
            inside = true;
        } else if !l.starts_with("    ") {
            inside = false;
        } else if inside && !l.trim_start().starts_with("where ") {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

#[test]
fn segments_skip_only_assignments_nothing_reads() {
    // Q is read after the loop (live); T only by the statement after it in the same block
    // (dead: not computed); S by the block's first statement in the next iteration, before
    // its assignment (live); D = X[1:10, ] twice is one input
    let text = "X = rand(rows=60, cols=40, sparsity=0.3, seed=1)\n\
                V = rand(rows=40, cols=3, seed=2)\n\
                S = matrix(0, rows=40, cols=3)\n\
                Q = matrix(0, rows=60, cols=3)\n\
                acc = 0\n\
                for (i in 1:3) {\n\
                  acc = acc + sum(S)\n\
                  T = X %*% V\n\
                  Q = T * 2\n\
                  S = t(X) %*% T + V\n\
                  D = X[1:10, ] %*% V - X[1:10, ] %*% S\n\
                }\n\
                print(acc + sum(Q) + sum(D))\n";
    let (dir, p) = temp_program("liveness", text);
    let (out, report) = run_optimized(p.to_str().unwrap(), &[]);
    let plain = run_file(p.to_str().unwrap(), &[]);
    let (a, b): (f64, f64) = (out[0].parse().unwrap(), plain[0].parse().unwrap());
    assert!(rel(a, b) < 1e-9, "{a} vs {b}");
    let explain = report.explain.unwrap();
    let headers: Vec<&str> = explain
        .lines()
        .filter(|l| l.starts_with("block "))
        .collect();
    assert!(
        headers.iter().any(|h| h.ends_with(": acc, Q, S, D")),
        "{explain}"
    );
    // each plan's inputs list the slice once
    for section in explain.split("  inputs:").skip(1) {
        let inputs = section.split("  plan").next().unwrap_or("");
        assert_eq!(inputs.matches("X[1:10, ] 10x40").count(), 1, "{explain}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs a program's text with the given options; returns the printed lines and the report.
fn run_text(
    name: &str,
    text: &str,
    opts: spores::driver::RunOptions,
) -> (Vec<String>, spores::driver::RunReport) {
    let mut out = Vec::new();
    let report = spores::driver::run_with(text, &Default::default(), &mut out, &opts)
        .unwrap_or_else(|e| panic!("{}", spores::diagnostics::render(&e, name, text, false)));
    let lines = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    (lines, report)
}

/// How many times a run evaluated `M * F` at the mask's entries (`--stats`).
fn masked_runs(report: &spores::driver::RunReport) -> u64 {
    let stats = report.stats.as_ref().expect("stats asked for");
    stats.ops.get("* masked").map_or(0, |(n, _)| *n)
}

/// As written (`--no-opt`), `M * F` with a sparse M and F a cell-wise expression of
/// products is evaluated at M's entries only, and gives the values of the formed product
/// (up to the products' rounding): with M on either side, `-`, `+`, `*`, `/` by a scalar,
/// `^ 2` and unary minus in F, a negative and a NaN entry in M. With an Inf in an operand, or
/// operands whose product overflows, F is formed as written, so the cells outside M's
/// entries are NaN (`0 * Inf`) exactly where the formed product has them.
#[test]
fn masked_products_as_written_agree_with_the_formed_product() {
    let text = "X = rand(rows=300, cols=200, min=-1, max=1, sparsity=0.03, seed=1)\n\
        Xn = X ^ 0.5\n\
        U = rand(rows=300, cols=6, min=-1, max=1, seed=2)\n\
        V = rand(rows=200, cols=6, min=-1, max=1, seed=3)\n\
        s = 3\nP = U %*% t(V)\n\
        A1 = (X != 0) * (P - X)\n\
        B1 = (X != 0) * (U %*% t(V) - X)\n\
        A2 = (-P / s + X * 2) * X\n\
        B2 = (-(U %*% t(V)) / s + X * 2) * X\n\
        A3 = Xn * (P + 1)^2\n\
        B3 = Xn * (U %*% t(V) + 1)^2\n\
        U = U + (U > 0.99) * 1e308 * 10\nP = U %*% t(V)\n\
        A4 = (X != 0) * (P - X)\n\
        B4 = (X != 0) * (U %*% t(V) - X)\n\
        U = U * 0 + 1e160\nV = V * 0 + 1e160\nP = U %*% t(V)\n\
        A5 = X * P\nB5 = X * (U %*% t(V))\n\
        for (k in 1:5) {\n\
          A = as.matrix(0)\nB = as.matrix(0)\n\
          if (k == 1) { A = A1; B = B1 }\n\
          if (k == 2) { A = A2; B = B2 }\n\
          if (k == 3) { A = A3; B = B3 }\n\
          if (k == 4) { A = A4; B = B4 }\n\
          if (k == 5) { A = A5; B = B5 }\n\
          same = (A == B) | (abs(A - B) <= 1e-12 * abs(A))\n\
          print(sum(A != A) + \" \" + sum(B != B) + \" \" + sum(!same & (A == A)) + \" \" + sum(A != 0))\n\
        }\n";
    let opts = spores::driver::RunOptions {
        stats: true,
        ..Default::default()
    };
    let (out, report) = run_text("masked", text, opts);
    // B1..B3 at the mask; B4 (an Inf in U) and B5 (an overflowing product) formed
    assert_eq!(masked_runs(&report), 3, "{out:?}");
    assert_eq!(out.len(), 5, "{out:?}");
    for (k, line) in out.iter().enumerate() {
        let n: Vec<f64> = line.split(' ').map(|w| w.parse().unwrap()).collect();
        assert_eq!(n[0], n[1], "case {}: NaN counts differ: {line}", k + 1);
        assert_eq!(n[2], 0.0, "case {}: cells differ: {line}", k + 1);
        assert!(n[3] > 0.0, "case {}: {line}", k + 1);
    }
    let nans = |k: usize| out[k].split(' ').next().unwrap().parse::<f64>().unwrap();
    // Xn's negative entries are NaN (sqrt); the Inf in U gives NaN in whole rows of the
    // formed product, and 0 * Inf outside X's entries; the overflow too
    assert_eq!(nans(0), 0.0, "{out:?}");
    assert!(nans(2) > 0.0, "{out:?}");
    assert!(nans(3) > 150.0, "{out:?}");
    assert!(nans(4) > 0.0, "{out:?}");
}

/// `--verify` on a small masked ALS-CG (SystemDS's alsCG, the shape of
/// benches/programs/als_cg.dml): the statements run as written evaluate `(X != 0) * (U %*%
/// t(V) - X)` and `W * (S %*% t(V))` at X's entries, and the optimized plans agree with them.
#[test]
fn verify_runs_masked_als_cg_at_the_mask() {
    let lib = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/systemds-scripts/builtin");
    if !lib.is_dir() {
        eprintln!("skipping: {} not present", lib.display());
        return;
    }
    let text = "X = rand(rows=3000, cols=400, min=1, max=5, sparsity=0.02, seed=7)\n\
        [U, V] = alsCG(X=X, rank=6, regType=\"L2\", reg=0.000001, maxi=3, check=TRUE, verbose=FALSE, seed=42)\n\
        print(sum(U) + sum(V))\n";
    let verified = spores::driver::RunOptions {
        optimize: true,
        verify: true,
        stats: true,
        lib: vec![lib.clone()],
        ..Default::default()
    };
    let (out, report) = run_text("alscg_verify", text, verified);
    assert!(report.optimized_runs > 0, "nothing was optimized");
    assert!(report.max_rel_diff <= 1e-9, "{}", report.max_rel_diff);
    assert!(masked_runs(&report) > 0, "the mask was not used");
    let plain = spores::driver::RunOptions {
        stats: true,
        lib: vec![lib],
        ..Default::default()
    };
    let (written, report) = run_text("alscg_plain", text, plain);
    assert!(masked_runs(&report) > 0, "the mask was not used");
    let (a, b): (f64, f64) = (out[0].parse().unwrap(), written[0].parse().unwrap());
    assert!(rel(a, b) <= 1e-9, "{a} vs {b}");
}

/// A division the optimizer reads as a product with a negative power (`a / (b * b)` is
/// `a * b ^ -2` in the relational form) is computed as written when the plan does not improve
/// on it, and a product with a negative power that a plan does make is computed as the
/// division `a / b ^ k`: optimized and `--no-opt` print the same bits for `(Yu - Yd) / (Bx *
/// Bx)` (CsplineCG's line), `/ Bx`, `/ Bx ^ 2`, `/ (Bx * Bx * Bx)` and their scalar forms, in a
/// block the optimizer does plan (the product chain), on random cells and on 0, -0, Inf, -Inf,
/// NaN, subnormals and values whose square underflows or overflows.
#[test]
fn written_divisions_keep_their_bits_in_plans() {
    let mut text = String::from(
        "X = rand(rows=16, cols=16, min=1, max=2, seed=5)\n\
         v = rand(rows=16, cols=1, min=-1, max=1, seed=6)\n\
         Yu = rand(rows=16, cols=1, min=-3, max=3, seed=7)\n\
         Yd = rand(rows=16, cols=1, min=-3, max=3, seed=8)\n\
         Bx = rand(rows=16, cols=1, min=0.1, max=2, seed=9)\n",
    );
    let special = [
        "0", "-1 * 0", "1 / 0", "-1 / 0", "0 / 0", "1e-310", "1e-160", "1e200", "-1e-170",
    ];
    for (i, s) in special.iter().enumerate() {
        text += &format!("Bx[{}, 1] = {s}\n", i + 1);
    }
    text += "Yu[10, 1] = 0\nYd[10, 1] = 0\nYu[11, 1] = 1 / 0\nYu[12, 1] = 1e-300\nYd[12, 1] = 0\n\
             Yu[13, 1] = 1e300\nYd[13, 1] = -1e300\n\
             for (r in 1:2) {\n\
               G = t(X) %*% X %*% v\n\
               By = (Yu - Yd) / (Bx * Bx)\n\
               Bq = (Yu - Yd) / Bx\n\
               Bp = Yu / Bx ^ 2\n\
               Bc = Yd / (Bx * Bx * Bx)\n\
               Yu = Yu + 0 * sum(G)\n\
               for (i in 1:16) {\n\
                 p = as.scalar(Yu[i, 1])\n\
                 q = as.scalar(Bx[i, 1])\n\
                 c1 = p / (q * q)\n\
                 c2 = (p - 1) / q\n\
                 c3 = p / q ^ 2\n\
                 print(r + \" \" + i + \" \" + as.scalar(By[i, 1]) + \" \" + as.scalar(Bq[i, 1]) + \" \" \
                   + as.scalar(Bp[i, 1]) + \" \" + as.scalar(Bc[i, 1]) + \" \" + c1 + \" \" + c2 + \" \" + c3)\n\
               }\n\
             }\n";
    let optimized = spores::driver::RunOptions {
        optimize: true,
        explain: true,
        ..Default::default()
    };
    let written = spores::driver::RunOptions {
        optimize: false,
        ..Default::default()
    };
    let (opt, report) = run_text("divisions", &text, optimized);
    let (noopt, _) = run_text("divisions", &text, written);
    assert_eq!(opt.len(), 32);
    assert_eq!(opt, noopt);
    let plans = plan_lines(report.explain.as_deref().expect("explain asked for"));
    // the block is planned (the product chain), and no plan computes a negative power
    assert!(plans.contains("By = "), "{plans}");
    assert!(!plans.contains("^ (-"), "{plans}");
}

/// Where a plan does move a division (cox's `H_2 = (A * v) / (d ^ 2)` computed on the
/// vector as `A * (v / d ^ 2)`: one 8x100 operation instead of two), the division stays a
/// division: no plan computes `d ^ -2`, and the values agree with the program as written to
/// the rounding of the reassociated product, with the same NaN and infinite cells (d = 0,
/// -0, Inf, NaN).
#[test]
fn moved_divisions_stay_divisions() {
    let text = "A = rand(rows=8, cols=100, min=-1, max=1, sparsity=0.3, seed=3)\n\
        v = rand(rows=8, cols=1, min=-2, max=2, seed=4)\n\
        d = rand(rows=8, cols=1, min=0.5, max=2, seed=5)\n\
        d[1, 1] = 0\nd[2, 1] = -1 * 0\nd[3, 1] = 1 / 0\nd[4, 1] = 0 / 0\n\
        for (r in 1:2) {\n\
          H = (A * v) / (d ^ 2)\n\
          K = (A * v) / d\n\
          for (i in 1:8) {\n\
            for (j in seq(1, 100, 11)) {\n\
              print(as.scalar(H[i, j]) + \" \" + as.scalar(K[i, j]))\n\
            }\n\
          }\n\
          d = abs(d) + 1\n\
        }\n";
    let optimized = spores::driver::RunOptions {
        optimize: true,
        explain: true,
        ..Default::default()
    };
    let (opt, report) = run_text("moved", text, optimized);
    let (noopt, _) = run_text("moved", text, Default::default());
    let plans = plan_lines(report.explain.as_deref().expect("explain asked for"));
    assert!(plans.contains("H = "), "{plans}");
    assert!(!plans.contains("^ (-"), "{plans}");
    assert_eq!(opt.len(), noopt.len());
    assert_eq!(opt.len(), 2 * 8 * 10);
    for (a, b) in opt.iter().zip(&noopt) {
        for (x, y) in a.split(' ').zip(b.split(' ')) {
            let (x, y): (f64, f64) = (x.parse().unwrap(), y.parse().unwrap());
            let same = (x.is_nan() && y.is_nan())
                || x == y
                || (x - y).abs() <= 4.0 * f64::EPSILON * y.abs().max(f64::MIN_POSITIVE);
            assert!(same, "{a} vs {b}");
        }
    }
}

/// A sum of the product of two formed dense matrices (`sum(S * HS)`, `sum(R ^ 2)`: ALS-CG's
/// step lengths) runs fused past `SEQ_CELLS` cells (one parallel pass, the product never
/// formed) and as the product and the sum's own kernel at most that size (where the fused
/// sum would be one sequential pass); both with the bits of the program as written.
#[test]
fn sums_of_products_of_formed_matrices_fuse_past_the_sequential_size() {
    let cells = spores_runtime::kernels::aggregate::SEQ_CELLS;
    for (rows, fused) in [(cells / 500 - 1, false), (cells / 500 + 200, true)] {
        let text = format!(
            "A = rand(rows={rows}, cols=500, min=-1, max=1, seed=1)\n\
             B = rand(rows={rows}, cols=500, min=-1, max=1, seed=2)\n\
             for (i in 1:2) {{\n\
               s = sum(A * B)\n\
               q = sum(A ^ 2)\n\
               print(toString(s) + \" \" + toString(q))\n\
               A = A + 0.5 * B\n\
             }}\n"
        );
        let optimized = spores::driver::RunOptions {
            stats: true,
            optimize: true,
            ..Default::default()
        };
        let (opt, report) = run_text("sums", &text, optimized);
        let (written, _) = run_text("sums", &text, Default::default());
        assert_eq!(opt, written, "{rows} rows");
        let ops = &report.stats.as_ref().expect("stats asked for").ops;
        let products = ops.get("*").map_or(0, |(n, _)| *n) + ops.get("^").map_or(0, |(n, _)| *n);
        if fused {
            assert_eq!(products, 0, "{rows} rows: {:?}", ops.keys());
        } else {
            assert!(products >= 4, "{rows} rows: {:?}", ops.keys());
        }
    }
}

/// The compile budget (`--compile-budget`): a statement that costs more than the budget as
/// written compiles on its first run; a cheap one in a loop runs as written until its runs
/// have cost the budget, then compiles once; the results are those of the program as
/// written and of every statement compiled; and the decisions read estimates and run counts
/// only, so two runs make the same ones.
#[test]
fn the_compile_budget_compiles_what_has_earned_it() {
    // block 0: a product of a 300x300 matrix by itself (tens of milliseconds as written,
    // estimated); the loop body: scalar and small-vector statements, microseconds each
    let src = "X = rand(rows=300, cols=300, min=-1, max=1, seed=3)\n\
               G = X %*% X\n\
               v = rand(rows=50, cols=1, seed=4)\n\
               s = 0\n\
               for (i in 1:400) {\n\
               \x20 w = v * i + 1\n\
               \x20 s = s + sum(w * w) / 1000\n\
               }\n\
               print(sum(G))\n\
               print(s)\n";
    let run = |budget_ms: f64, optimize: bool| {
        let opts = spores::driver::RunOptions {
            optimize,
            stats: true,
            compile_budget_ms: budget_ms,
            ..Default::default()
        };
        let mut out = Vec::new();
        let report = spores::driver::run_with(src, &Default::default(), &mut out, &opts).unwrap();
        (String::from_utf8(out).unwrap(), report.stats.unwrap())
    };
    let (written, _) = run(0.0, false);
    let (eager, eager_stats) = run(0.0, true);
    let (tiered, stats) = run(0.05, true);
    assert_eq!(eager_stats.cold, 0, "budget 0 compiles every run");
    for (a, b) in [(&eager, &written), (&tiered, &written)] {
        for (x, y) in a.lines().zip(b.lines()) {
            let (x, y): (f64, f64) = (x.parse().unwrap(), y.parse().unwrap());
            assert!((x - y).abs() <= 1e-12 * y.abs().max(1.0), "{x} vs {y}");
        }
    }
    // the product (block 0, a few ms as written) compiled on its first run
    assert!(stats.compile.contains_key(&0), "{:?}", stats.compile);
    // the loop body ran as written for a while, then compiled, once per key
    assert!(stats.cold > 0, "nothing ran cold");
    assert!(
        stats.cold < 2 * 400,
        "the loop body never compiled: {}",
        stats.cold
    );
    let body: u64 = stats
        .compile
        .iter()
        .filter(|(&b, _)| b != 0)
        .map(|(_, c)| c.0)
        .sum();
    let eager_body: u64 = eager_stats
        .compile
        .iter()
        .filter(|(&b, _)| b != 0)
        .map(|(_, c)| c.0)
        .sum();
    assert!(body >= 1 && body <= eager_body, "{body} vs {eager_body}");
    // the same decisions on a second run
    let (again, again_stats) = run(0.05, true);
    assert_eq!(again, tiered);
    assert_eq!(again_stats.cold, stats.cold);
    assert_eq!(
        again_stats
            .compile
            .values()
            .map(|c| c.0)
            .collect::<Vec<_>>(),
        stats.compile.values().map(|c| c.0).collect::<Vec<_>>()
    );
}

/// Statements that run as written under the compile budget take the values of their barriers
/// (indexing, `cumsum`, calls) from the planner, which computed them first, each frame of a
/// recursive function its own. Cold, compiled and `--no-opt`: the same bits.
#[test]
fn cold_statements_reuse_their_barriers_but_not_across_calls() {
    let src = "f = function(double n, matrix[double] X) return (matrix[double] Y) {\n\
               \x20 Y = X\n\
               \x20 if (n > 0) {\n\
               \x20   Z = f(n - 1, X[1:nrow(X), ] * 2)\n\
               \x20   Y = Z + cumsum(X) * n + X[1:nrow(X), ]\n\
               \x20   Y = Y + cumsum(Y) / 1000\n\
               \x20 }\n\
               }\n\
               s = 0\n\
               for (i in 1:30) {\n\
               \x20 A = rand(rows=5, cols=3, seed=i)\n\
               \x20 B = f(4, A + i)\n\
               \x20 s = s + sum(B) + sum(cumsum(t(B)) * i)\n\
               }\n\
               print(s)\n";
    let run = |optimize: bool, budget_ms: f64| {
        let opts = spores::driver::RunOptions {
            optimize,
            stats: true,
            compile_budget_ms: budget_ms,
            ..Default::default()
        };
        let mut out = Vec::new();
        let report = spores::driver::run_with(src, &Default::default(), &mut out, &opts).unwrap();
        (String::from_utf8(out).unwrap(), report.stats.unwrap())
    };
    let (written, _) = run(false, 0.0);
    let (compiled, _) = run(true, 0.0);
    let (cold, stats) = run(true, 1000.0);
    assert!(stats.cold > 0 && stats.compile.is_empty(), "{stats:?}");
    assert_eq!(cold, written);
    assert_eq!(compiled, written);
}
