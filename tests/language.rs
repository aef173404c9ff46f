//! The DML language beyond straight-line code: functions (typed parameters, defaults,
//! positional and named arguments, several outputs, recursion, definitions after use),
//! library resolution, left indexing, op-assignment, literals and loops. Each case is a
//! program and a program without the feature that must print the same (the second written
//! with the constructs of the original subset), run both as written and optimized.

use spores::driver::{run_with, RunOptions};

fn output(src: &str, optimize: bool, lib: &[std::path::PathBuf]) -> String {
    let opts = RunOptions {
        optimize,
        lib: lib.to_vec(),
        ..Default::default()
    };
    let mut out = Vec::new();
    if let Err(e) = run_with(src, &Default::default(), &mut out, &opts) {
        panic!(
            "{}\n{src}",
            spores::diagnostics::render(&e, "case.dml", src, false)
        );
    }
    String::from_utf8(out).unwrap()
}

/// Runs `with` and `without`, optimized and not, and compares all four outputs.
fn same(with: &str, without: &str) {
    let want = output(without, false, &[]);
    assert!(!want.is_empty(), "the reference prints nothing");
    for opt in [false, true] {
        assert_eq!(output(with, opt, &[]), want, "optimize={opt}\n{with}");
    }
}

#[test]
fn functions_with_defaults_named_and_positional_arguments() {
    same(
        r#"
X = matrix(3, rows=4, cols=2)
Y = scale2(X, 2)
Z = scale2(X=X, shift=1.5, f=3)
W = scale2(X, shift=-1)
print(sum(Y) + sum(Z) * 10 + sum(W) * 100)
scale2 = function(Matrix[Double] X, Double f = 0.5, Double shift = 0) return (Matrix[Double] Y) {
  Y = X * f + shift
}
"#,
        r#"
X = matrix(3, rows=4, cols=2)
Y = X * 2 + 0
Z = X * 3 + 1.5
W = X * 0.5 - 1
print(sum(Y) + sum(Z) * 10 + sum(W) * 100)
"#,
    );
}

#[test]
fn several_outputs_and_recursion() {
    same(
        r#"
stats = function(Matrix[Double] X) return (Double s, Double m, Integer n) {
  s = sum(X)
  m = mean(X)
  n = nrow(X)
}
fact = function(Integer k) return (Integer r) {
  if (k <= 1) { r = 1 } else { r = k * fact(k - 1) }
}
X = matrix("1 2 3 4 5 6", rows=3, cols=2)
[a, b, c] = stats(X)
print(a + b + c)
print(fact(10))
"#,
        r#"
X = matrix(0, rows=3, cols=2)
print(21 + 3.5 + 3)
print(3628800)
"#,
    );
}

#[test]
fn scalar_parameters_take_their_declared_type() {
    // an integer argument of a Double parameter prints as a double
    same(
        r#"
f = function(Double x, Integer k) return (Double y, Integer j) { y = x; j = k }
[y, j] = f(3, 4)
print(y)
print(j)
"#,
        "print(3.0)\nprint(4)\n",
    );
}

#[test]
fn left_indexing_and_op_assignment() {
    same(
        r#"
X = matrix(0, rows=4, cols=3)
for (i in 1:4) {
  X[i, ] = matrix(i, rows=1, cols=3)
  X[i, 2] += 10
}
X[2:3, 1:2] = matrix(-1, rows=2, cols=2)
s = 0
s -= sum(X)
print(s)
print(sum(X[, 3]))
"#,
        r#"
X = matrix(0, rows=4, cols=3)
print(0.0 - (1 + 11 + 1 + (-1) + (-1) + 2 + (-1) + (-1) + 3 + 4 + 14 + 4))
print(1.0 + 2 + 3 + 4)
"#,
    );
}

/// Large slices are shared when the same matrix value is sliced by the same bounds again: a
/// matrix changed in place after a slice, and a slice changed in place, are still seen as
/// they are (slices of 89700 cells, above the size from which they are shared).
#[test]
fn a_slice_taken_again_sees_changes_in_place() {
    same(
        r#"
P = matrix(1, rows=300, cols=300)
for (i in 1:3) {
  Q = P[, 1:299]
  P[1, 1] = i + 1
  R = P[, 1:299]
  print(sum(R) - sum(Q))
  A = P[, 1:299]
  A[2, 1] = 100
  B = P[, 1:299]
  print(sum(B) - sum(R))
  print(sum(A) - sum(B))
}
"#,
        r#"
for (i in 1:3) {
  print(1.0)
  print(0.0)
  print(99.0)
}
"#,
    );
}

#[test]
fn left_indexing_reads_its_target_in_the_indices_and_strings_stand_for_numbers() {
    // Cox.dml: `A[, 1:(ncol(A) - 1)] = ...` reads A while A is being assigned; KM.dml:
    // `replace(..., replacement = "Infinity")` takes the string as Java's parseDouble reads it
    same(
        r#"
A = matrix("1 2 3 4 5 6", rows=2, cols=3)
if (ncol(A) > 1) {
  A[, 1:(ncol(A) - 1)] = A[, 1:(ncol(A) - 1)] - A[, 2:ncol(A)]
}
print(toString(A))
B = replace(target=A, pattern=-1, replacement="Infinity")
print(sum(B == 1/0))
print(as.scalar(B[1, 3]))
"#,
        r#"
A = matrix("-1 -1 3 -1 -1 6", rows=2, cols=3)
print(toString(A))
print(4.0)
print(3.0)
"#,
    );
}

#[test]
fn a_number_passed_to_a_string_parameter_is_its_text() {
    // SystemDS runs na_locf(X, $option) with a number for the String `option`
    same(
        r#"
f = function(String option, Double d) return (String s) {
  if (option == "10") s = "ten: " + option
  else s = "other: " + option
  s = s + " " + d
}
print(f(10, 2))
print(f(2.5, 1))
"#,
        r#"
print("ten: 10 2.0")
print("other: 2.5 1.0")
"#,
    );
}

#[test]
fn literals_strings_and_loops() {
    same(
        r#"
a = Inf
b = -Inf
c = NaN
print(a > 1e308 & b < -1e308 & !(c == c))
s = "abc"
if (s == "abc" & s != "abd") { print(ifelse(s == "x", "no", "yes")) }
t = "two
lines"
print(t)
n = 0
for (i in seq(1, 10, 3)) { n = n + i }
parfor (j in 1:4, check=0) { n = n + j }
print(n)
M = matrix("1 2 3 4 5 6", rows=2, cols=3, byrow=FALSE)
print(as.scalar(M[1, 2]))
"#,
        r#"
print(TRUE)
print("yes")
print("two
lines")
print(1 + 4 + 7 + 10 + 10)
print(3.0)
"#,
    );
}

#[test]
fn library_functions_resolve_from_lib_dirs() {
    let dir = std::env::temp_dir().join(format!("spores-lib-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("twice.dml"),
        "m_twice = function(Matrix[Double] X) return (Matrix[Double] Y) { Y = helper(X) + inc(X) }\n\
         helper = function(Matrix[Double] X) return (Matrix[Double] Y) { Y = X }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("inc.dml"),
        "m_inc = function(Matrix[Double] X, Double by = 0) return (Matrix[Double] Y) { Y = X + by }\n",
    )
    .unwrap();
    let src = "X = matrix(2, rows=3, cols=3)\nprint(sum(twice(X)))\n";
    for opt in [false, true] {
        assert_eq!(output(src, opt, std::slice::from_ref(&dir)), "36.0\n");
    }
    // not found anywhere: the diagnostic lists the directories searched
    let opts = RunOptions {
        lib: vec![dir.clone()],
        ..Default::default()
    };
    let err = run_with(
        "y = nothere(1)\n",
        &Default::default(),
        &mut Vec::new(),
        &opts,
    )
    .expect_err("unknown function");
    let text = spores::diagnostics::render(&err, "case.dml", "y = nothere(1)\n", false);
    assert!(text.contains(&dir.display().to_string()), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_mismatch_in_a_branch_not_taken_does_not_stop_the_program() {
    same(
        r#"
f = function(Matrix[Double] X, Boolean wide) return (Matrix[Double] Y) {
  Y = X
  if (wide) { Y = X + matrix(1, rows=nrow(X), cols=ncol(X) + 1) }
}
print(sum(f(matrix(1, rows=2, cols=2), FALSE)))
"#,
        "print(4.0)\n",
    );
}

#[test]
fn a_mismatch_in_a_top_level_branch_not_taken_does_not_stop_the_program() {
    same(
        r#"
A = matrix(1, rows=100, cols=1)
B = matrix(0, rows=0, cols=0)
if (nrow(B) > 0) {
  A = A + B
}
while (nrow(B) > 0) { A = A %*% B }
print(sum(A))
"#,
        "print(100.0)\n",
    );
}

#[test]
fn builtin_spellings_of_systemds_scripts() {
    same(
        r#"
A = matrix("1 -2 3 -4", rows=2, cols=2)
print(sum(pmax(A, 0)) + sum(pmin(A, 0)) * 10 + ceiling(2.5))
T = table(matrix("1 2", rows=2, cols=1), matrix("2 1", rows=2, cols=1), 1, 2, 2, FALSE)
print(sum(T * matrix("1 2 3 4", rows=2, cols=2)))
"#,
        r#"
A = matrix("1 -2 3 -4", rows=2, cols=2)
print(sum(max(A, 0)) + sum(min(A, 0)) * 10 + ceil(2.5))
print(2.0 + 3)
"#,
    );
}
