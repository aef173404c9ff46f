//! The optimizer never changes a result: the reproducers of wrong answers found by
//! differential testing (constant merging, `0 * x` with infinite or NaN x, signed zeros of
//! empty sums), each run optimized and as written and compared with the value IEEE
//! arithmetic gives; and bad input that used to crash (deep nesting, absurd sizes and limits).

use spores::driver::{run_with, RunOptions};
use spores::equiv::{prove, read_cases};
use spores::saturate::{all_rules, Limits};

fn run(src: &str, optimize: bool) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let opts = RunOptions {
        optimize,
        ..RunOptions::default()
    };
    run_with(src, &Default::default(), &mut out, &opts)
        .map_err(|e| spores::diagnostics::render(&e, "t.la", src, false))?;
    Ok(String::from_utf8(out)
        .unwrap()
        .lines()
        .map(String::from)
        .collect())
}

/// Runs `src` optimized and as written; both must print `want`, line for line, exactly.
/// The plans `--explain` prints for an optimized run of `src`.
fn explained_plan(src: &str) -> String {
    let mut out = Vec::new();
    let opts = RunOptions {
        optimize: true,
        explain: true,
        ..RunOptions::default()
    };
    let rep = run_with(src, &Default::default(), &mut out, &opts).unwrap();
    rep.explain.unwrap_or_default()
}

fn agree(src: &str, want: &[&str]) {
    for optimize in [false, true] {
        let got = run(src, optimize).unwrap_or_else(|e| panic!("{src}\n{e}"));
        assert_eq!(got, want, "optimize={optimize}\n{src}");
    }
}

#[test]
fn constants_are_not_merged_with_other_constants() {
    agree(
        "X = matrix(0.5 + 0.5, rows=3, cols=1) * 5\nprint(sum(X))",
        &["15.0"],
    );
    agree(
        "X = rand(rows=1, cols=1, sparsity=0)\nZ = X * X + 7\nprint(sum(Z))",
        &["7.0"],
    );
    agree(
        "X = rand(rows=1, cols=1, sparsity=0)\nB = rand(rows=3, cols=3, seed=2)\n\
         Z = X * X + 7\nT2 = X * X + B * 0.1\nprint(sum(Z))\nprint(sum(B) - 10 * sum(T2))",
        &["7.0", "0.0"],
    );
    // a constant-only statement next to an all-zero input
    agree(
        "Z = rand(rows=2, cols=2, sparsity=0)\nY = Z + 1e-8 * matrix(1, rows=2, cols=2)\n\
         print(sum(Y))",
        &["4.0E-8"],
    );
}

#[test]
fn fills_of_different_values_are_never_merged() {
    // all 1x0 matrices are equal, and zero matrices relate to empty products: that must
    // never make matrix(-0.0, 5, 30) equal to matrix(1, 5, 30) (found by the fuzzer)
    agree(
        "T0 = (matrix(1.0, rows=1, cols=1) + 0.0)\nT1 = matrix(1e200, rows=1, cols=0)\n\
         X3 = matrix((-0.0), rows=5, cols=30)\nprint(sum(T0))\nprint(sum(X3))",
        &["1.0", "0.0"],
    );
}

#[test]
fn equiv_does_not_prove_false_constant_equalities() {
    let cases = "id\tmethod\tlhs\trhs\tshapes\tnote\n\
                 g5\tx\t0.5 + 0.5\t0\t\tfalse\n\
                 g6\tx\t2 * 3\t5\t\tfalse\n\
                 g7\tx\t(2 ^ 600) * (2 ^ 600) * 0\t0\t\tfalse: Inf * 0 is NaN\n\
                 g8\tx\tsum(X * 0)\t0\tX:[3,3]\tfalse unless X is finite (assumed)\n";
    let rules = all_rules().unwrap();
    let limits = Limits::default();
    let got: Vec<bool> = read_cases(cases)
        .unwrap()
        .iter()
        .map(|c| prove(c, &rules, &limits).proved)
        .collect();
    assert_eq!(got, [false, false, false, true]);
}

#[test]
fn zero_times_non_finite_is_nan() {
    agree(
        "X = matrix(0, rows=2, cols=2)\nprint(toString(X / X))",
        &["NaN NaN", "NaN NaN", ""],
    );
    agree(
        "A = rand(rows=5, cols=30, sparsity=0.1, seed=3)\nprint(sum((A / 0) != 0))",
        &["150.0"],
    );
    agree(
        "A = rand(rows=5, cols=30, sparsity=0.1, seed=3)\nB = A * (1 / 0)\nprint(sum(B != 0))",
        &["150.0"],
    );
    agree(
        "Z = rand(rows=4, cols=4, sparsity=0)\nY = Z * log(Z)\nprint(sum(Y))",
        &["NaN"],
    );
}

#[test]
fn sums_of_zeros_are_positive_zero() {
    agree("print(1 / sum(matrix(0, rows=2, cols=2)))", &["Infinity"]);
    agree(
        "X = rand(rows=20, cols=30, sparsity=0)\nprint(1 / sum(X))\nprint(1 / mean(X))\n\
         print(1 / as.scalar(rowSums(X)[1,1]))\nprint(1 / as.scalar(colSums(X)[1,1]))",
        &["Infinity", "Infinity", "Infinity", "Infinity"],
    );
}

#[test]
fn deep_expressions_run_or_get_a_diagnostic() {
    // the stages recurse over expressions: like the CLI, run on a thread with a large stack
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(deep_expressions)
        .unwrap()
        .join()
        .unwrap();
}

fn deep_expressions() {
    let nested = |f: &str, n: usize, x: &str| format!("{}{x}{}", f.repeat(n), ")".repeat(n));
    agree(
        &format!("x = -2.0\nprint({})", nested("abs(", 3000, "x")),
        &["2.0"],
    );
    agree(
        &format!(
            "X = matrix(1, rows=2, cols=3)\nprint(sum({}))",
            nested("t(", 3001, "X")
        ),
        &["6.0"],
    );
    agree(&format!("x = 1\nprint({}x)", "-".repeat(7001)), &["-1"]);
    agree(&format!("print({}1)", "1 + ".repeat(7000)), &["7001"]);
    let too_deep = format!("print({})", nested("abs(", 20_000, "1"));
    let err = run(&too_deep, false).unwrap_err();
    assert!(err.contains("nested too deeply"), "{err}");
}

#[test]
fn absurd_loop_ranges_are_errors() {
    for r in ["0:1e20", "-1e300:1e300"] {
        let err = run(&format!("for (i in {r}) {{ print(i) }}"), false).unwrap_err();
        assert!(err.contains("too large"), "{r}: {err}");
    }
}

#[test]
fn matrix_market_headers_are_not_trusted() {
    let dir = std::env::temp_dir().join(format!("spores-soundness-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text, want) in [
        (
            "count.mtx",
            "%%MatrixMarket matrix coordinate real general\n3 3 99999999999999\n1 1 1\n",
            "99999999999999",
        ),
        (
            "huge.mtx",
            "%%MatrixMarket matrix coordinate real general\n100000000000 100000000000 1\n1 1 1\n",
            "out of range",
        ),
        (
            "sym.mtx",
            "%%MatrixMarket matrix coordinate real symmetric\n3 2 1\n1 1 1\n",
            "cannot be symmetric",
        ),
        (
            "short.mtx",
            "%%MatrixMarket matrix coordinate real general\n3 3 5\n1 1 1\n",
            "declares 5 entries",
        ),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let src = format!("X = read(\"{}\")\nprint(sum(X))", path.display());
        let err = run(&src, false).unwrap_err();
        assert!(err.contains(want), "{name}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn products_propagate_nan_through_zeros() {
    // X has 2 non-zeros in 30 cells, so every row of X and of t(X) %*% X has a zero, and Y is
    // all Inf: every cell of the products is 0 * Inf + ... = NaN, in every kernel, optimized
    // or not
    let src = "X = rand(rows=6, cols=5, sparsity=0.07, seed=4)\n\
               Y = rand(rows=5, cols=4, min=1, max=2, seed=5) / 0\n\
               print(sum(X %*% Y))\nprint(sum(t(X) %*% X %*% (Y %*% t(Y))))\n\
               print(sum(t(X) %*% (X %*% Y)))\nprint(sum(t(Y) %*% t(X)))";
    agree(src, &["NaN", "NaN", "NaN", "NaN"]);
}

/// A weight vector with zeros times a dense input (L2-SVM's `t(X) %*% (out * Y)`): the plan
/// skips the rows weighed by zero only where the input is finite. An Inf or a NaN in a row of
/// zero weight makes its column NaN, optimized or not, in both forms of the product.
#[test]
fn vector_products_skip_zero_weights_only_for_finite_inputs() {
    for bad in ["1/0", "0/0", "-1/0"] {
        let src = format!(
            "X = rand(rows=3000, cols=30, min=-1, max=1, seed=4)\n\
             X[7, 3] = {bad}\n\
             X[2000, 29] = {bad}\n\
             w = rand(rows=3000, cols=1, seed=5)\n\
             v = (w > 0.9) * w\n\
             v[7, 1] = 0\n\
             v[2000, 1] = 0\n\
             g = t(X) %*% v\n\
             h = t(t(v) %*% X)\n\
             print(sum(is.nan(g)) + 10 * sum(is.nan(h)))\n\
             print(as.scalar(is.nan(g[3, 1])) + as.scalar(is.nan(h[29, 1])))\n\
             print(sum(abs(g[1:2, 1]) + abs(h[1:2, 1])) > 0)"
        );
        agree(&src, &["22.0", "2.0", "TRUE"]);
    }
}

#[test]
fn products_that_skip_zeros_repair_nan_unless_the_input_is_known_finite() {
    // SystemDS's short-left kernel skips the zeros of t(E): where such a zero meets an Inf or
    // NaN of X the product is NaN. The plan scans X once and remembers that it is finite;
    // an X that is not must still be scanned, and a finite one gives the same sums.
    for (bad, nan) in [
        ("1/0", "55.0"),
        ("0/0", "88.0"),
        ("-1/0", "55.0"),
        ("1", "0.0"),
    ] {
        let src = format!(
            "X = rand(rows=3000, cols=30, min=-1, max=1, seed=4)\n\
             X[7, 3] = {bad}\n\
             X[2000, 29] = {bad}\n\
             E = rand(rows=3000, cols=4, min=-1, max=1, seed=5)\n\
             E[7, ] = matrix(0, rows=1, cols=4)\n\
             E[2000, 2] = 0\n\
             G = t(X) %*% E\n\
             H = t(t(E) %*% X)\n\
             print(sum(is.nan(G)) + 10 * sum(is.nan(H)))\n\
             print(sum(replace(target=G, pattern=NaN, replacement=0) != \
             replace(target=H, pattern=NaN, replacement=0)))"
        );
        agree(&src, &[nan, "0.0"]);
    }
}

#[test]
fn a_fused_result_is_known_finite_only_when_it_is() {
    // X is made by a fused cell-wise region, which counts its non-finite cells as it writes
    // them (`Fused::finite`); the next block's plan takes that count instead of scanning X.
    // Where X holds an Inf or NaN, the products that skip zeros must still give NaN.
    for (den, nan) in [("0", "55.0"), ("0 / 0", "88.0"), ("0.75", "0.0")] {
        let src = format!(
            "X0 = rand(rows=3000, cols=30, min=-1, max=1, seed=4)\n\
             D = rand(rows=3000, cols=30, min=0.5, max=1, seed=6)\n\
             D[7, 3] = {den}\n\
             D[2000, 29] = {den}\n\
             X = X0 / D + 0.5 * X0\n\
             E = rand(rows=3000, cols=4, min=-1, max=1, seed=5)\n\
             E[7, ] = matrix(0, rows=1, cols=4)\n\
             E[2000, 2] = 0\n\
             for (i in 1:2) {{\n\
               G = t(X) %*% E\n\
               H = t(t(E) %*% X)\n\
             }}\n\
             print(sum(is.nan(G)) + 10 * sum(is.nan(H)))\n\
             print(sum(replace(target=G, pattern=NaN, replacement=0) != \
             replace(target=H, pattern=NaN, replacement=0)))"
        );
        agree(&src, &[nan, "0.0"]);
        // what the plan was told of X
        let plan = explained_plan(&src);
        let flagged = plan.contains("X 3000x30 nnz 90000 (not finite)");
        assert_eq!(flagged, nan != "0.0", "{plan}");
    }
}

#[test]
fn the_hessian_vector_product_of_a_dense_x_reads_x_once_with_the_same_bits() {
    // MultiLogReg's `t(X) %*% (Q - P * rowSums(Q))`, `Q = P * (X %*% V)`, on a dense X: the
    // plan's smmchain makes each row of R next to the rows of X that SystemDS's short-left
    // kernel adds next; the bits of the three steps as written. 3003 rows: ranges whose
    // first rows go one at a time; zeros in P (skipped there).
    for (rows, cols, k) in [(3003, 40, 4), (4001, 64, 7), (2000, 30, 1)] {
        let src = format!(
            "X = rand(rows={rows}, cols={cols}, min=-1, max=1, seed=3)\n\
             V = rand(rows={cols}, cols={k}, min=-1, max=1, seed=4)\n\
             P = rand(rows={rows}, cols={k}, sparsity=0.7, seed=5)\n\
             Q = P * (X %*% V)\n\
             HV = t(X) %*% (Q - P * rowSums(Q))\n\
             print(sum(HV))\n\
             print(as.scalar(HV[1, 1]))\n\
             print(as.scalar(HV[{cols}, {k}]))\n\
             print(sum(HV * HV))"
        );
        let plain = run(&src, false).unwrap();
        assert_eq!(run(&src, true).unwrap(), plain, "{src}");
        let plan = explained_plan(&src);
        assert!(plan.contains("smmchain"), "{plan}");
    }
}

#[test]
fn squared_loss_is_fused_only_for_finite_factors() {
    // the fused squared loss sums x (x - 2 uv) over X's non-zeros plus sum(uv^2) through the
    // factors' Gram matrices: with an infinite factor that is -Inf + Inf = NaN where the
    // statement as written gives Inf (found by the fuzzer)
    let loss = "X = rand(rows=30, cols=30, sparsity=0.1, seed=1)\n\
                V = rand(rows=30, cols=2, min=1, max=2, seed=3)\n\
                L = sum((X - U %*% t(V))^2)\n\
                print(L)";
    agree(
        &format!("U = rand(rows=30, cols=2, min=1, max=2, seed=2) / 0\n{loss}"),
        &["Infinity"],
    );
    agree(
        "s0 = 1e-8\nT0 = sum(((matrix(s0, rows=3, cols=8) - t(((matrix(1e200, rows=8, cols=2) \
         / matrix(0.0, rows=8, cols=2)) %*% matrix(0.5, rows=2, cols=3)))) ^ 2.0))\nprint(T0)",
        &["Infinity"],
    );
    // with finite factors the loss is still fused
    let src = format!("U = rand(rows=30, cols=2, min=1, max=2, seed=2)\n{loss}");
    let plan = explained_plan(&src);
    assert!(plan.contains("wsloss"), "{plan}");
}

/// Distributing a product over a sum (or factoring it out) needs a finite common factor:
/// with `f = Inf`, `f * x + f * y` is NaN where `x` is 0, while `f * (x + y)` is Inf.
/// Each form, with the factor a matrix, a scalar and a computed value.
#[test]
fn a_non_finite_factor_is_not_distributed() {
    for f in [
        "matrix(1 / 0, rows=4, cols=3)",
        "(1 / 0)",
        "(-log(matrix(0, rows=4, cols=3)))",
    ] {
        let src = format!(
            "F = {f}\nX = rand(rows=4, cols=3, sparsity=0.5, seed=4)\n\
             Y = rand(rows=4, cols=3, min=1, max=2, seed=5)\n\
             A = F * X + F * Y\nB = F * (X + Y)\n\
             print(sum(is.nan(A)))\nprint(sum(is.nan(B)))\nprint(sum(A == 1/0))"
        );
        let want = run(&src, false).unwrap_or_else(|e| panic!("{src}\n{e}"));
        // the program as written has NaN cells in A (0 * Inf), none in B
        assert_ne!(want[0], "0.0", "{src}\n{want:?}");
        assert_eq!(want[1], "0.0", "{src}\n{want:?}");
        let got = run(&src, true).unwrap_or_else(|e| panic!("{src}\n{e}"));
        assert_eq!(got, want, "{src}");
    }
}

/// A sum of a quotient of small fills, next to an unrelated zero matrix, is not merged with
/// the zero (found by the fuzzer on a zero-sign analysis that was reverted for it).
#[test]
fn small_fills_are_not_zero() {
    agree(
        "X0 = matrix(0.0, rows=30, cols=1)\nT0 = t(matrix(1e-8, rows=8, cols=1))\n\
         T1 = sum((t(T0) / t(T0)))\nprint(T1)\nprint(sum(X0))",
        &["8.0", "0.0"],
    );
}

#[test]
fn signed_zero_constants_stay_apart() {
    // a -0.0 fill in one statement made the literal 0.0 of another -0.0, so 0 ^ -1 printed
    // -Infinity (fuzz seed 77): +0.0 and -0.0 are different constants
    agree(
        "s0 = 0.0\nT0 = matrix(-2.5, rows=4, cols=1) + matrix(-0.0, rows=1, cols=1)\n\
         print(as.scalar(matrix(s0, rows=1, cols=1)) ^ (-1.0))\nprint(sum(T0))",
        &["Infinity", "-10.0"],
    );
    // -0.0 / -0.0 is NaN, not the zero it was merged with (fuzz seed 1003, program 465)
    agree(
        "T0 = matrix(-0.0, rows=12, cols=1)\n\
         T1 = (T0 / T0) %*% (matrix(-1.0, rows=1, cols=1) * 1e200)\nprint(sum(T1))",
        &["NaN"],
    );
}

#[test]
fn overflowed_constants_carry_no_proofs() {
    // 1e200 * 1e200 folded to Inf with a 'finite' proof, so zero * Inf became zero (fuzz
    // seed 1003, program 4666)
    agree(
        "X1 = matrix(0.0, rows=1, cols=8)\nT1 = log(matrix(1.0, rows=1, cols=1))\n\
         T2 = sum(t(X1) %*% T1)\nT4 = (T2 / 0.0) * 1e200\nprint(T2)\nprint(T4)",
        &["0.0", "NaN"],
    );
    // 1e-200 * 1e-200 folded to 0 with a 'zero' proof, so X / 1e200 * 1e200 became zero
    // (fuzz seed 1003, program 4351)
    let src = "X0 = rand(rows=1, cols=12, min=-1.0, max=1.0, seed=368)\n\
               T0 = (t(X0) / matrix(1e200, rows=12, cols=1)) * 1e200\n\
               print(abs(sum(T0) - sum(X0)) < 1e-12)\nprint(sum(T0) != 0)";
    agree(src, &["TRUE", "TRUE"]);
    // folding that does not overflow still happens, and overflow at run time is IEEE's
    agree(
        "x = 1e200\ny = x * x\nprint(y)\nprint(1 / y)\nprint(exp(-1000) * 0)",
        &["Infinity", "0.0", "0.0"],
    );
}

/// A constant is computed as written, whatever surrounds it (property test
/// constant_expressions_fold_to_their_ieee_value, CI of stop 42 and seeds 3, 8, 14 and 16):
/// * `(0 * (1e308 * 2)) * X` flattened into the chain `0 * 1e308 * 2 * X` multiplied its
///   scalars first (SystemDS's n-ary order for scalars computed at run time), giving `0 * X`
///   where SystemDS folds the constant to NaN first;
/// * `X * c ^ -1` was raised as the division `X / c`, which differs where `c ^ -1` alone
///   overflows (`c` subnormal), though `c ^ -1` is a constant of the program.
#[test]
fn constants_are_computed_as_written_inside_chains_and_divisions() {
    agree(
        "X = (0 * (1e308 * 2)) * matrix(1, rows=2, cols=3)\nprint(as.scalar(X[2, 3]))\n\
         Y = matrix(0.0 * ((1e308 + 0.0) * 2.0), rows=2, cols=3) * (0.0 * 1.0)\n\
         print(as.scalar(Y[1, 2]))",
        &["NaN", "NaN"],
    );
    // a builtin of literals is a constant too (seed 8): the chain's scalars first would
    // round `-1 + log(2) + 1` to ...453
    agree(
        "X = matrix(0, rows=2, cols=3)\nY = X * X + ((1.0 - 2.0) + (log(2.0) + 1.0))\n\
         print(as.scalar(Y[1, 2]))",
        &["0.6931471805599454"],
    );
    agree(
        "X = matrix(((-(0.5 / 1e308)) ^ -1.0), rows=2, cols=3) * ((1.0/0.0) ^ -1.0)\n\
         print(as.scalar(X[2, 3]))\nprint(1 / as.scalar(X[1, 1]))",
        &["NaN", "NaN"],
    );
    // an overflowing constant under a negation or `abs` (seeds 14 and 16): its LA form had
    // no IEEE value, so its `finite` proof from exact arithmetic stood and `matrix(Inf) * 0`
    // was proved zero
    agree(
        "X = matrix(((-(1e308 + 1.0)) ^ 2.0), rows=2, cols=3) * ((1.0 * (0.0 ^ 2.0)) + (0.0 ^ 2.0))\n\
         print(as.scalar(X[2, 3]))\n\
         Y = matrix(log(abs((1.0 ^ 2.0))), rows=2, cols=3) * exp(abs((1e308 + (1e-8 + 1.0))))\n\
         print(as.scalar(Y[2, 3]))",
        &["NaN", "NaN"],
    );
    // a scalar computed at run time is one operand of SystemDS's n-ary chain, the scalars
    // multiplied first (checked against SystemDS 3.4: `0.000` in every cell)
    agree(
        "a = sum(matrix(0, rows=1, cols=1))\nb = 1e308 + a\n\
         Y = (a * (b * 2)) * matrix(1, rows=2, cols=3)\nprint(as.scalar(Y[1, 1]))",
        &["0.0"],
    );
}

/// A sum of constants is folded only when it is exact: rules reassociate sums, and a
/// rounded fold of one order (`-1.5e200 + 1e-8` is -1.5e200) met the other order's
/// cancellation, so `1.5e200 - 1.5e200 + 1e-8` became the constant 0 with a `zero` proof
/// and `0 / (..)` became `0 / 0` (fuzz seed 9402, program 1914).
#[test]
fn rounded_sums_of_constants_are_not_folded() {
    agree(
        "T0 = matrix(0.0, rows=2, cols=1) / ((matrix(1.5, rows=2, cols=1) %*% \
         (matrix(1e200, rows=1, cols=1) - 1e200)) + 1e-8)\nprint(sum(T0))",
        &["0.0"],
    );
    // exact sums still fold, and a sum as written keeps its IEEE rounding
    agree(
        "X = matrix(0.25 + 0.5, rows=2, cols=2) * 4\nprint(sum(X))\nprint(0.1 + 0.2)",
        &["12.0", "0.30000000000000004"],
    );
}

/// A zero that saturation builds from a `+0.0` input (`-0.5 * matrix(0, ...)`, `-1 * 0` in
/// a power) has IEEE's sign, not `+0.0`: the analysis tracks the sign of every cell, so such
/// a zero is not merged with the input and a quotient by the input keeps its sign (fuzz seeds
/// 1004 program 4551, 2002 program 1741); and `x^-1 * z^-1` is not gathered into
/// `(x * z)^-1`, whose new zero has no known sign.
#[test]
fn zeros_built_by_rewrites_keep_their_sign() {
    agree(
        "s1 = 0.0\nT0 = matrix(1.0, rows=1, cols=30) - matrix(s1, rows=1, cols=30)\n\
         T2 = matrix(0.0, rows=30, cols=4) - (matrix(2.0, rows=30, cols=1) / matrix(0.0, rows=30, cols=1))\n\
         print(sum(T2))",
        &["-Infinity"],
    );
    agree(
        "T1 = (matrix(3.0, rows=12, cols=1) / matrix(0.0, rows=12, cols=1)) %*% \
         (matrix(-1.0, rows=1, cols=12) * log(matrix(0.0, rows=1, cols=12) + 0.0))\n\
         print(sum(T1))",
        &["Infinity"],
    );
    agree(
        "X = rand(rows=3, cols=1, min=-1, max=-0.5, seed=3)\nZ = matrix(0.0, rows=3, cols=1)\n\
         T = (X ^ -1) * (Z ^ -1)\nprint(sum(T))",
        &["-Infinity"],
    );
}

/// The fused squared loss expands the square through Gram matrices, which overflow where the
/// loss does not (`1e200` against a zero factor: `Inf * 0`); such a result is computed as
/// written. The factor came from an unrelated statement whose zero was shared (fuzz seed 2002,
/// program 216).
#[test]
fn fused_squared_loss_does_not_overflow_where_the_loss_does_not() {
    agree(
        "X1 = matrix(0.0, rows=1, cols=3)\nX3 = matrix(1.0, rows=30, cols=30)\n\
         T1 = t(X1) %*% t(matrix(1e200, rows=30, cols=1))\n\
         T3 = sum(((matrix(0.0, rows=30, cols=3) %*% matrix(1.0, rows=3, cols=30)) - X3) ^ 2.0)\n\
         print(sum(T1))\nprint(T3)",
        &["0.0", "900.0"],
    );
}

/// `-0.0` survives sparse storage (a transpose, a fill), and `min`/`max` order `-0.0` below
/// `+0.0` as Java's do, so quotients by them are `-Inf` (fuzz seed 2003, program 1415: the
/// unoptimized run printed `Infinity`).
#[test]
fn negative_zeros_survive_storage_and_min() {
    agree(
        "print(sum(1 / t(matrix(-0.0, rows=1, cols=3))))\n\
         print(sum(1 / min(matrix(0.0, rows=3, cols=1), t(matrix(-0.0, rows=1, cols=3)))))\n\
         print(sum(1 / max(matrix(-0.0, rows=3, cols=1), matrix(0.0, rows=3, cols=1))))\n\
         print(1 / min(0.0, -0.0))",
        &["-Infinity", "-Infinity", "Infinity", "-Infinity"],
    );
    agree(
        "X0 = rand(rows=3, cols=1, min=-1.0, max=1.0, sparsity=1.0, seed=48)\n\
         T2 = X0 * matrix(0.0, rows=3, cols=1)\n\
         T3 = X0 / min(T2, t(matrix(-0.0, rows=1, cols=3)))\nprint(sum(T3))",
        &["NaN"],
    );
}

/// Element-wise operators on a sparse matrix with a scalar that makes its zeros non-zero
/// (Inf, NaN, a zero divisor, a negative power, `ifelse` with a NaN branch) compute every
/// cell as a dense evaluation would: NaN or Inf at the zeros, in the sparse kernels as
/// written and in the optimized plan. X has 13 non-zeros in 150 cells; `B != B` counts NaNs.
#[test]
fn sparse_elementwise_with_special_scalars_fills_the_zeros() {
    let x = "X = rand(rows=5, cols=30, min=-1, max=1, sparsity=0.1, seed=3)\n\
             inf = 1e200 * 1e200\nnan = inf - inf\n";
    for (expr, nans) in [
        ("X * nan", 150),
        ("nan * X", 150),
        ("X * inf", 137),
        ("X * (-inf)", 137),
        ("X / 0", 137),
        ("X %/% 0", 137),
        ("X %% 0", 150),
        ("X %% nan", 150),
        ("min(X, nan)", 150),
        ("max(nan, X)", 150),
        ("ifelse(X, 1, nan)", 137),
        ("(-X) * inf", 137),
    ] {
        agree(
            &format!("{x}B = {expr}\nprint(sum(B != B))"),
            &[&format!("{nans}.0")],
        );
    }
    // zeros to a negative power are Inf, and `0 ^ -0.5` too; nothing is NaN
    for expr in ["X ^ -1", "X ^ -2", "abs(X) ^ -0.5"] {
        agree(
            &format!("{x}B = {expr}\nprint(sum(abs(B) > 1e300))\nprint(sum(B != B))"),
            &["137.0", "0.0"],
        );
    }
}

/// A fused operator that skips its driver's zeros is not given a driver the optimizer made
/// zero: `0 * sum(X * log(W %*% H))` with `W %*% H` zero is `0 * -Inf`, NaN, and pushing the
/// `0` into the sum made `0 * X` the driver of `wcemm`, which skipped every cell and printed
/// 0 (fuzz seed 7303, program 1991). The same for `wdivmm` (`0 / 0`) and `sddmm`.
#[test]
fn fused_operators_do_not_drive_over_a_zero_the_optimizer_made() {
    // one statement, so that the fills are constants of the plan
    let (x, wh) = (
        "matrix(1.0, rows=4, cols=30)",
        "(matrix(0.0, rows=4, cols=12) %*% matrix(1.0, rows=12, cols=30))",
    );
    for expr in [
        format!("0.0 * sum({x} * log({wh}))"),
        format!("sum((0.0 * {x}) * log({wh}))"),
        format!("sum(((0.0 * {x}) / {wh}) %*% matrix(1.0, rows=30, cols=2))"),
    ] {
        agree(&format!("T = {expr}\nprint(T)"), &["NaN"]);
    }
}

/// A matrix wider than CSR's 32-bit column indices (2^32 - 1 columns) is stored densely
/// whatever its density, so its size is checked as dense storage: a sparse-looking 2 x (2^32
/// + 1) `rand` needs more than 64 GiB and is a diagnostic, not an allocation.
#[test]
fn matrices_wider_than_csr_indices_are_sized_dense() {
    let err = run(
        "X = rand(rows=2, cols=4294967297, sparsity=0.000000001)\nprint(sum(X))",
        false,
    )
    .unwrap_err();
    assert!(
        err.contains("too large") && err.contains("stored densely"),
        "{err}"
    );
}

#[test]
fn only_sums_a_plan_makes_run_in_any_order() {
    use spores::ir::Ir;
    use spores::optimize::{compile, Input};
    let rules = all_rules().unwrap();
    let mat = |rows, cols, nnz| Input::Matrix {
        rows,
        cols,
        nnz,
        finite: true,
    };
    let compiled = |src: &str, inputs: &[(String, Input)]| {
        let term: egg::RecExpr<Ir> = src.parse().unwrap();
        let root = egg::Id::from(term.as_ref().len() - 1);
        let (plan, _) = compile(
            &term,
            &[root],
            inputs,
            &rules,
            &Limits::default(),
            &Default::default(),
            None,
        );
        plan.expect("a cheaper plan")
    };
    // sum(X * (U %*% t(V))) over X's 1M non-zeros becomes sum(U * (X %*% V)), a sum over
    // 200000 cells the program never sums: any order
    let inputs = [
        ("X".to_string(), mat(20000, 5000, 1_000_000)),
        ("U".to_string(), mat(20000, 10, 200_000)),
        ("V".to_string(), mat(5000, 10, 50_000)),
    ];
    let plan = compiled("(msum (m* X (mmul U (t V))))", &inputs);
    let nodes = plan.expr.as_ref();
    assert_eq!(plan.unordered.len(), nodes.len());
    let free: Vec<&Ir> = (0..nodes.len())
        .filter(|&i| plan.unordered[i])
        .map(|i| &nodes[i])
        .collect();
    assert!(
        !free.is_empty() && free.iter().all(|n| matches!(n, Ir::MSum(_))),
        "{} {free:?}",
        plan.expr
    );
    // a sum over one of the statements' own matrices keeps SystemDS's order, in every plan
    let mut input_sums = 0;
    for src in [
        "(m+ (msum (m* A B)) (msum (m* (m* A B) 2)))",
        "(msum (m+ A B))",
        "(msum (m* A 3))",
        "(msum (t A))",
    ] {
        let inputs = [
            ("A".to_string(), mat(300, 100, 30000)),
            ("B".to_string(), mat(300, 100, 3000)),
        ];
        let term: egg::RecExpr<Ir> = src.parse().unwrap();
        let root = egg::Id::from(term.as_ref().len() - 1);
        let opts = Default::default();
        let (Some(plan), _) = compile(
            &term,
            &[root],
            &inputs,
            &rules,
            &Limits::default(),
            &opts,
            None,
        ) else {
            continue;
        };
        let nodes = plan.expr.as_ref();
        for (i, n) in nodes.iter().enumerate() {
            if let Ir::MSum(a) = n {
                if matches!(nodes[usize::from(*a)], Ir::Symbol(_)) {
                    assert!(!plan.unordered[i], "{src}: {}", plan.expr);
                    input_sums += 1;
                }
            }
        }
    }
    // the rewrites happen: sum(A + B) as sum(A) + sum(B), sum(A * 3) as 3 * sum(A), ...
    assert!(
        input_sums >= 3,
        "{input_sums} sums over an input in the plans"
    );
    // a sum the statement writes keeps SystemDS's order, even in a plan that rewrites around
    // it: sum(A * B) + sum(A * B * 2) shares the written sum
    let inputs = [
        ("A".to_string(), mat(300, 100, 30000)),
        ("B".to_string(), mat(300, 100, 30000)),
    ];
    let plan = compiled("(m+ (msum (m* A B)) (msum (m* (m* A B) 2)))", &inputs);
    let nodes = plan.expr.as_ref();
    for (i, n) in nodes.iter().enumerate() {
        if let Ir::MSum(a) = n {
            let written = matches!(&nodes[usize::from(*a)], Ir::EMul([x, y])
                if matches!((&nodes[usize::from(*x)], &nodes[usize::from(*y)]),
                    (Ir::Symbol(_), Ir::Symbol(_))));
            if written {
                assert!(!plan.unordered[i], "the written sum(A * B): {}", plan.expr);
            }
        }
    }
}
