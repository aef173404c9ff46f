//! Parser tests: every row of the precedence table of the DML subset, associativity, the
//! `for (i in 1:n+1)` rule, statement separators, and error positions.

use spores::diagnostics::line_col;
use spores::syntax::{parse_expr, parse_program};

fn p(src: &str) -> String {
    parse_expr(src)
        .unwrap_or_else(|e| panic!("{src}: {e:?}"))
        .to_string()
}

/// Runs a program and returns its printed lines.
fn run(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    spores::driver::run(src, &Default::default(), &mut out)
        .unwrap_or_else(|e| panic!("{src}: {e}"));
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

fn value(expr: &str) -> String {
    run(&format!("print({expr})")).remove(0)
}

#[test]
fn precedence_table_rows() {
    // level 1: ^ right-associative, binds tighter than unary minus
    assert_eq!(p("2^3^2"), "(2 ^ (3 ^ 2))");
    assert_eq!(value("2^3^2"), "512.0");
    assert_eq!(p("-2^2"), "(-(2 ^ 2))");
    assert_eq!(value("-2^2"), "-4.0");
    assert_eq!(p("2^-1"), "(2 ^ (-1))");
    assert_eq!(value("2^-1"), "0.5");
    // level 2: unary minus binds tighter than %*%
    assert_eq!(p("-A %*% B"), "((-A) %*% B)");
    // level 3 over 4: %*% tighter than %/% and %%
    assert_eq!(p("A %*% B %% C"), "((A %*% B) %% C)");
    // level 4 over 5: %% tighter than *
    assert_eq!(p("2 * 3 %% 2"), "(2 * (3 %% 2))");
    assert_eq!(value("2 * 3 %% 2"), "2");
    assert_eq!(p("7 %/% 2 * 2"), "((7 %/% 2) * 2)");
    // level 5 over 6
    assert_eq!(p("1 + 2 * 3"), "(1 + (2 * 3))");
    assert_eq!(p("1 - 6 / 3"), "(1 - (6 / 3))");
    // level 6 over 7
    assert_eq!(p("a + 1 > b - 1"), "((a + 1) > (b - 1))");
    // level 7 over 8: `!a > b` is `!(a > b)`
    assert_eq!(p("!a > b"), "(!(a > b))");
    assert_eq!(value("!1 > 2"), "TRUE");
    // level 8 over 9 over 10
    assert_eq!(p("!a & b"), "((!a) & b)");
    assert_eq!(p("a | b & c"), "(a | (b & c))");
    assert_eq!(p("a || b && c"), "(a | (b & c))");
    assert_eq!(value("TRUE | FALSE & FALSE"), "TRUE");
}

/// `!` after a binary operator, as SystemDS's ANTLR grammar reads it: a prefix operator may stand
/// wherever an operand may, and its operand runs on through every operator at least as tight as
/// `!` (everything but `&` and `|`). The trees below are SystemDS's, checked by value against
/// SystemDS 3.4 (tests/dml/accept/not_operand.dml runs the matrix forms against its output).
#[test]
fn not_as_an_operand_of_every_tighter_operator() {
    // after each tighter binary operator, `!` takes the rest up to `&`/`|`
    assert_eq!(p("x ^ !m + 1"), "(x ^ (!(m + 1)))");
    assert_eq!(p("x %*% !m - 1"), "(x %*% (!(m - 1)))");
    assert_eq!(p("x %% !m * 2"), "(x %% (!(m * 2)))");
    assert_eq!(p("x %/% !m"), "(x %/% (!m))");
    assert_eq!(p("x * !m + 1"), "(x * (!(m + 1)))");
    assert_eq!(p("x / !m"), "(x / (!m))");
    assert_eq!(p("1 - !x"), "(1 - (!x))");
    assert_eq!(p("x + !m * 0"), "(x + (!(m * 0)))");
    assert_eq!(p("x < !m < 2"), "(x < (!(m < 2)))");
    assert_eq!(p("x == !m"), "(x == (!m))");
    // a tighter chain before the `!` stays on the left
    assert_eq!(p("a * b + c * !m"), "((a * b) + (c * (!m)))");
    assert_eq!(p("a + b < !m + 1"), "((a + b) < (!(m + 1)))");
    // `&` and `|` end the operand of `!`, on either side
    assert_eq!(p("a & !b"), "(a & (!b))");
    assert_eq!(p("a & !b & c"), "((a & (!b)) & c)");
    assert_eq!(p("a - !b & c"), "((a - (!b)) & c)");
    assert_eq!(p("!a - 1 & b"), "((!(a - 1)) & b)");
    assert_eq!(p("a | !b & c"), "(a | ((!b) & c))");
    // with unary minus and a second `!`
    assert_eq!(p("-!a + 1"), "(-(!(a + 1)))");
    assert_eq!(p("!-a + 1"), "(!((-a) + 1))");
    assert_eq!(p("!!a + 1"), "(!(!(a + 1)))");
    assert_eq!(p("2 ^ -!a"), "(2 ^ (-(!a)))");
    assert_eq!(p("x * -!m + 1"), "(x * (-(!(m + 1))))");
    // inside brackets, calls and indexes the `!` ends at the delimiter
    assert_eq!(p("f(x * !m, 1)"), "f((x * (!m)), 1)");
    assert_eq!(p("(x * !m) + 1"), "((x * (!m)) + 1)");
    // the values, which differ with the reading; SystemDS prints the same for the last three and
    // rejects a number times a boolean scalar (its matrix forms are in the accept program)
    assert_eq!(value("2 * !0 + 1"), "0");
    assert_eq!(value("3 + !0 * 0"), "4");
    assert_eq!(value("2 ^ !0 + 1"), "1.0");
    assert_eq!(value("1 < !0 < 2"), "FALSE");
    assert_eq!(value("TRUE & !FALSE | FALSE"), "TRUE");
    assert_eq!(value("FALSE | !TRUE & TRUE"), "FALSE");
}

#[test]
fn left_associativity() {
    assert_eq!(p("a - b - c"), "((a - b) - c)");
    assert_eq!(value("10 - 4 - 3"), "3");
    assert_eq!(p("a / b / c"), "((a / b) / c)");
    assert_eq!(value("16 / 4 / 2"), "2.0");
    assert_eq!(p("A %*% B %*% C"), "((A %*% B) %*% C)");
    assert_eq!(p("a < b < c"), "((a < b) < c)");
    assert_eq!(p("7 %% 4 %% 2"), "((7 %% 4) %% 2)");
}

#[test]
fn literals_and_atoms() {
    assert_eq!(p(".5"), "0.5");
    assert_eq!(p("1e-8"), "1e-8");
    assert_eq!(p("2.5E3"), "2500.0");
    assert_eq!(p("12"), "12");
    assert_eq!(p("TRUE & FALSE"), "(TRUE & FALSE)");
    assert_eq!(p("\"a\\\"b\""), "\"a\\\"b\"");
    assert_eq!(p("$m"), "$m");
    assert_eq!(p("as.scalar(X[1, 2])"), "as.scalar(X[1, 2])");
    assert_eq!(p("X[a:b, ]"), "X[a:b, ]");
    assert_eq!(p("X[, c:d]"), "X[, c:d]");
    assert_eq!(p("P [, 1:K]"), "P[, 1:K]");
    assert_eq!(
        p("rand(rows=m, cols=n, sparsity=0.01, seed=7)"),
        "rand(rows=m, cols=n, sparsity=0.01, seed=7)"
    );
    assert_eq!(p("rowSums (Q)"), "rowSums(Q)");
}

#[test]
fn for_range_takes_the_whole_expression() {
    // DML: the `:` belongs to the for syntax, so 1:n+1 is 1:(n+1)
    let out = run("n = 2\ns = 0\nfor (i in 1:n+1) { s = s + i }\nprint(s)");
    assert_eq!(out, ["6"]);
    // counting down, and 1:0 runs twice
    assert_eq!(run("for (i in 3:1) { print(i) }"), ["3", "2", "1"]);
    assert_eq!(run("for (i in 1:0) { print(i) }"), ["1", "0"]);
}

#[test]
fn statements_end_with_semicolon_or_newline() {
    let out =
        run("a = 1; b = 2\nc = a +\n b\nprint(c);;\n# comment\nprint(\"x\" + c) # trailing\n");
    assert_eq!(out, ["3", "x3"]);
    let out = run("x = 5\nif (x > 3) print(\"big\") else print(\"small\")\nif (x > 9) { print(1) } else if (x > 4) { print(2) } else { print(3) }");
    assert_eq!(out, ["big", "2"]);
    let out = run("i = 0\nwhile (i < 3) i = i + 1\nprint(i)");
    assert_eq!(out, ["3"]);
    // `;` after a block, as SystemDS accepts (StepGLM.dml ends its if blocks so)
    let out = run("x = 1;\nif (x == 1) { z = 3; } else { z = 4; };\nfor (i in 1:2) { z = z + i; };;\nf = function(double a) return (double b) { b = a + 1; };\nwhile (z < 7) { z = z + 1 }; print(f(z));");
    assert_eq!(out, ["8.0"]);
}

/// The body of if/for/while is any one statement, as in SystemDS (Java's grammar), and an
/// `else` belongs to the nearest `if` that has none.
#[test]
fn unbraced_compound_bodies_and_the_dangling_else() {
    // `x = 1;` before `else`
    assert_eq!(run("a = 3\nif (a > 2) x = 1; else x = 2;\nprint(x)"), ["1"]);
    assert_eq!(run("a = 1\nif (a > 2) x = 1; else x = 2;\nprint(x)"), ["2"]);
    // the else is the inner if's: the outer condition is false, so nothing runs
    assert_eq!(
        run("a = 3\ny = 0\nif (a > 5) if (a > 1) y = 10 else y = 20\nprint(y)"),
        ["0"]
    );
    // ... and with the outer condition true, the inner else runs
    assert_eq!(
        run("a = 3\ny = 0\nif (a > 1) if (a > 5) y = 10 else y = 20\nprint(y)"),
        ["20"]
    );
    // a loop as the body of an if, an if as the body of a loop
    assert_eq!(
        run("s = 0\nif (TRUE) for (j in 1:4) s = s + j\nprint(s)"),
        ["10"]
    );
    assert_eq!(
        run("for (i in 1:3) if (i == 2) print(\"two\") else print(i)"),
        ["1", "two", "3"]
    );
    assert_eq!(
        run("s = 0\nwhile (s < 20) if (s %% 2 == 0) s = s + 3; else s = s + 1\nprint(s)"),
        ["20"]
    );
    // an if/else whose then-part is itself an if/else, across lines
    assert_eq!(
        run("a = 2\nif (a > 1)\n  if (a > 5) z = 1\n  else z = 2\nelse\n  z = 3\nprint(z)"),
        ["2"]
    );
    assert_eq!(
        run("a = 3\nif (a == 4) { z = 1 } else if (a == 3) z = 2 else z = 3\nprint(z)"),
        ["2"]
    );
}

#[test]
fn errors_point_at_the_offending_token() {
    let cases = [
        ("x = 1 +\n", (1, 8), "unexpected end of file"),
        ("x = (1 + 2\ny = 3", (2, 1), "unexpected name `y`"),
        ("x = 1 ** 2", (1, 8), "unexpected `*`"),
        ("x = 3 @ 4", (1, 7), "unexpected character '@'"),
        ("if x > 1 { y = 2 }", (1, 4), "unexpected name `x`"),
        ("x = [1, 2]", (1, 5), "unexpected `[`"),
    ];
    for (src, (line, col), msg) in cases {
        let e = parse_program(src).expect_err(src);
        assert_eq!(line_col(src, e.span.start), (line, col), "{src}: {e:?}");
        assert!(e.message.starts_with(msg), "{src}: got {}", e.message);
    }
}

#[test]
fn peer_kernels_parse_unchanged() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/bench/peers/kernels");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return; // shared/ is beside the checkout in CI and development
    };
    let mut n = 0;
    for e in entries {
        let path = e.unwrap().path();
        let src = std::fs::read_to_string(&path).unwrap();
        parse_program(&src).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        n += 1;
    }
    assert!(n >= 10, "expected the peer kernels, found {n}");
}
