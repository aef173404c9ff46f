//! Property tests (proptest) of the optimizer's two riskiest parts:
//!
//! * **constant folding**: a random constant expression (with `-0.0`, Inf, NaN, huge and tiny
//!   values) assigned and printed, alone and as the value of a `matrix(...)` fill, prints
//!   exactly what plain IEEE evaluation gives, bit for bit (the print is Java's shortest
//!   round-trip form), optimized and unoptimized alike;
//! * **conditional rules**: every rule of rules/fused.rules carries a condition (`factors`,
//!   `factors-t`, `same-shape`, `chain`, `scalar`, `matrix`); for random shapes that satisfy
//!   it and random operands (dense, sparse, all-zero, positive), the program written as the
//!   rule's left side gives the reference evaluator's value when the optimizer rewrites it
//!   (and the test checks that the fused operators are really chosen). The relational rules'
//!   conditions (`not-free`, `zero`, `covers`, `ones`, `not-one`, `scalar`) are exercised by the
//!   differential fuzzer (tests/fuzz.rs) on every program.

use proptest::prelude::*;
use spores::fuzz::gen::{Agg, Bin, Input, InputKind, Program, Stmt, Un, E};
use spores::fuzz::{self, reference};
use spores::runtime::format::java_double;
use std::time::Duration;

/// A constant expression: its DML text and its IEEE value.
fn constant() -> impl Strategy<Value = (String, f64)> {
    let leaf = prop::sample::select(vec![
        ("0.0", 0.0),
        ("(-0.0)", -0.0),
        ("1.0", 1.0),
        ("0.5", 0.5),
        ("2.0", 2.0),
        ("3.0", 3.0),
        ("1e-8", 1e-8),
        ("0.1", 0.1),
        ("1e308", 1e308),
        ("1e200", 1e200),
        ("(1.0/0.0)", f64::INFINITY),
        ("(0.0/0.0)", f64::NAN),
        ("(-2.5)", -2.5),
    ])
    .prop_map(|(s, v)| (s.to_string(), v));
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone(), 0..4usize).prop_map(|((a, x), (b, y), op)| {
                let (sym, v) = match op {
                    0 => ("+", x + y),
                    1 => ("-", x - y),
                    2 => ("*", x * y),
                    _ => ("/", x / y),
                };
                (format!("({a} {sym} {b})"), v)
            }),
            (
                inner.clone(),
                prop::sample::select(vec![2.0, 0.5, 3.0, -1.0, 0.0, 1.0])
            )
                .prop_map(|((a, x), p)| (format!("({a} ^ {p:?})"), x.powf(p))),
            (inner, 0..5usize).prop_map(|((a, x), f)| match f {
                0 => (format!("(-{a})"), -x),
                1 => (format!("abs({a})"), x.abs()),
                2 => (format!("exp({a})"), x.exp()),
                3 => (format!("log({a})"), x.ln()),
                _ => (format!("sqrt({a})"), x.sqrt()),
            }),
        ]
    })
}

fn run(src: &str, optimize: bool) -> String {
    fuzz::run_source(src, optimize, Duration::from_secs(60))
        .unwrap_or_else(|(k, d)| panic!("{k:?}: {d}\n{src}"))
}

/// The printed form of a value (NaN payloads and signs are not printed).
fn printed(v: f64) -> String {
    java_double(v)
}

/// A test runner with an explicit seed (the same cases on every run, as CI needs), from
/// `SPORES_PROPTEST_SEED` when set (to explore other cases), else a fixed one; the seed is
/// part of every failure message.
fn seeded_runner(cases: u32) -> (proptest::test_runner::TestRunner, u64) {
    use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
    let seed = std::env::var("SPORES_PROPTEST_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0x5eed_0042);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    (
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)),
        seed,
    )
}

/// The number of cases of a property test: `SPORES_PROPTEST_CASES` when set, else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("SPORES_PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[test]
fn constant_expressions_fold_to_their_ieee_value() {
    let (mut runner, seed) = seeded_runner(cases(120));
    runner
        .run(&(constant(), constant()), |((a, x), (b, y))| {
            let src = format!(
                "s = {a}\nprint(s)\nt = s * {b} + {b}\nprint(t)\nX = matrix({a}, rows=2, cols=3) * {b}\nprint(as.scalar(X[2, 3]))\n\
                 Y = X * X + {a}\nprint(as.scalar(Y[1, 2]))\nprint(1 / as.scalar(X[1, 1]))\n"
            );
            // README exception (2): an intermediate that overflows or underflows in one order of
            // evaluation and not in the other may give another Inf/NaN/0; tiny and huge
            // magnitudes are where that happens, so they are left to the differential fuzzer
            let tame = |v: f64| v == 0.0 || !v.is_finite() || (1e-100..=1e100).contains(&v.abs());
            prop_assume!(tame(x) && tame(y) && tame(x * y));
            let xy = x * y;
            let want = [
                printed(x),
                printed(x * y + y),
                printed(xy),
                printed(xy * xy + x),
                printed(1.0 / xy),
            ]
            .join("\n")
                + "\n";
            // a -0.0 cell of a matrix stored sparse reads +0.0 (README: implicit zeros are exact
            // zeros), so the matrix lines compare zero signs only when the cell is not zero
            let norm = |out: &str| -> String {
                out.lines()
                    .enumerate()
                    .map(|(i, l)| {
                        if i >= 2 && xy == 0.0 {
                            l.trim_start_matches('-').to_string()
                        } else {
                            l.to_string()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            let unopt = run(&src, false);
            prop_assert_eq!(norm(&unopt), norm(&want), "unoptimized\n{}", src);
            let opt = run(&src, true);
            prop_assert_eq!(norm(&opt), norm(&want), "optimized\n{}", src);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
}

/// The operand kinds of the rule tests.
fn input(name: &str, rows: usize, cols: usize, kind: u8, seed: u64) -> Input {
    let kind = match kind {
        0 => InputKind::Rand {
            min: -1.0,
            max: 1.0,
            sparsity: 1.0,
            seed,
        },
        1 => InputKind::Rand {
            min: 0.0,
            max: 1.0,
            sparsity: 0.1,
            seed,
        },
        2 => InputKind::Fill(0.0),
        _ => InputKind::Rand {
            min: 0.1,
            max: 2.0,
            sparsity: 1.0,
            seed,
        },
    };
    Input {
        name: name.to_string(),
        rows,
        cols,
        kind,
    }
}

fn v(n: &str) -> Box<E> {
    Box::new(E::Var(n.to_string()))
}

fn b(e: E) -> Box<E> {
    Box::new(e)
}

/// The left side of a conditional fused rule, over inputs whose shapes satisfy its condition:
/// X, W are `m x n`, U `m x k`, V `n x k`, H `k x n`, v `n x c`, w per `wk`.
#[allow(clippy::too_many_arguments)]
fn rule_program(
    rule: usize,
    m: usize,
    n: usize,
    k: usize,
    xk: u8,
    fk: u8,
    wk: u8,
    seed: u64,
) -> Program {
    let mut inputs = vec![
        input("X", m, n, xk, seed),
        input("W", m, n, (xk + 1) % 4, seed + 1),
        input("U", m, k, fk, seed + 2),
        input("V", n, k, fk, seed + 3),
        input("H", k, n, fk, seed + 4),
        input("v", n, 2, 0, seed + 5),
    ];
    let uvt = || E::MatMul(v("U"), b(E::T(v("V"))));
    let uh = || E::MatMul(v("U"), v("H"));
    let eps = E::Num(1e-8);
    let expr = match rule {
        // fuse-sddmm, fuse-sddmm-c
        0 => E::Bin(Bin::Mul, v("X"), b(uvt())),
        1 => E::Bin(Bin::Mul, b(uh()), v("X")),
        // fuse-wsloss(-neg), fuse-wslossw(-c)
        2 => E::Agg(
            Agg::Sum,
            b(E::Bin(
                Bin::Pow,
                b(E::Bin(Bin::Sub, v("X"), b(uvt()))),
                b(E::Num(2.0)),
            )),
        ),
        3 => E::Agg(
            Agg::Sum,
            b(E::Bin(
                Bin::Pow,
                b(E::Bin(Bin::Sub, b(uh()), v("X"))),
                b(E::Num(2.0)),
            )),
        ),
        4 => E::Agg(
            Agg::Sum,
            b(E::Bin(
                Bin::Mul,
                v("W"),
                b(E::Bin(
                    Bin::Pow,
                    b(E::Bin(Bin::Sub, v("X"), b(uvt()))),
                    b(E::Num(2.0)),
                )),
            )),
        ),
        5 => E::Agg(
            Agg::Sum,
            b(E::Bin(
                Bin::Mul,
                b(E::Bin(
                    Bin::Pow,
                    b(E::Bin(Bin::Sub, b(uh()), v("X"))),
                    b(E::Num(2.0)),
                )),
                v("W"),
            )),
        ),
        // fuse-wcemm(-eps)(-c)
        6 => E::Agg(
            Agg::Sum,
            b(E::Bin(Bin::Mul, v("X"), b(E::Un(Un::Log, b(uvt()))))),
        ),
        7 => E::Agg(
            Agg::Sum,
            b(E::Bin(
                Bin::Mul,
                b(E::Un(Un::Log, b(E::Bin(Bin::Add, b(uh()), b(eps))))),
                v("X"),
            )),
        ),
        // fuse-wdivmm(-eps)(-h)
        8 => E::MatMul(b(E::Bin(Bin::Div, v("X"), b(uvt()))), v("V")),
        9 => E::MatMul(
            b(E::Bin(
                Bin::Div,
                v("X"),
                b(E::Bin(Bin::Add, b(uh()), b(eps))),
            )),
            b(E::T(v("H"))),
        ),
        // fuse-wdivmmt(-eps)
        10 => E::MatMul(
            b(E::T(v("U"))),
            b(E::Bin(
                Bin::Div,
                v("X"),
                b(E::Bin(Bin::Add, b(uvt()), b(eps))),
            )),
        ),
        // fuse-wsubmm(-c)(-h)
        11 => E::MatMul(
            b(E::Bin(
                Bin::Mul,
                b(E::Bin(Bin::Ne, v("X"), b(E::Num(0.0)))),
                b(E::Bin(Bin::Sub, b(uvt()), v("X"))),
            )),
            v("V"),
        ),
        12 => E::MatMul(
            b(E::Bin(
                Bin::Mul,
                b(E::Bin(Bin::Sub, b(uh()), v("X"))),
                v("W"),
            )),
            b(E::T(v("H"))),
        ),
        // fuse-mmchain(-c)(-1), w a scalar, m x 1 or m x c
        13 | 14 => {
            let w = match wk % 3 {
                0 => E::Num(0.5),
                1 => E::Var("w".into()),
                _ => E::Var("w2".into()),
            };
            inputs.push(input("w", m, 1, 0, seed + 6));
            inputs.push(input("w2", m, 2, 1, seed + 7));
            let xv = E::MatMul(v("X"), v("v"));
            let inner = if rule == 13 {
                E::Bin(Bin::Mul, b(w), b(xv))
            } else {
                E::Bin(Bin::Mul, b(xv), b(w))
            };
            E::MatMul(b(E::T(v("X"))), b(inner))
        }
        15 => E::MatMul(b(E::T(v("X"))), b(E::MatMul(v("X"), v("v")))),
        // fuse-sprop(-c)
        16 => E::Bin(
            Bin::Mul,
            v("X"),
            b(E::Bin(Bin::Sub, b(E::Num(1.0)), v("X"))),
        ),
        17 => E::Bin(
            Bin::Mul,
            b(E::Bin(Bin::Sub, b(E::Num(1.0)), v("X"))),
            v("X"),
        ),
        // fuse-wsubmmt(-c)
        18 => E::MatMul(
            b(E::T(v("U"))),
            b(E::Bin(
                Bin::Mul,
                v("W"),
                b(E::Bin(Bin::Sub, b(uh()), v("X"))),
            )),
        ),
        // fuse-tmmul
        _ => E::MatMul(b(E::T(v("X"))), v("W")),
    };
    Program {
        inputs,
        stmts: vec![Stmt {
            name: "R".into(),
            expr,
        }],
        iters: 1,
    }
}

const RULE_CASES: usize = 20;
const FUSED: &[&str] = &[
    "sddmm", "wsloss", "wcemm", "wdivmm", "wsubmm", "mmchain", "sprop", "tmmul",
];

#[test]
fn conditional_rules_preserve_values() {
    let (mut runner, seed) = seeded_runner(cases(3 * RULE_CASES as u32));
    let fused_seen = std::sync::Mutex::new(vec![false; RULE_CASES]);
    let dims = prop::sample::select(vec![1usize, 2, 3, 5, 20, 40]);
    let strategy = (
        0..RULE_CASES,
        dims.clone(),
        dims,
        1..4usize,
        0..4u8,
        0..4u8,
        0..3u8,
        1..1000u64,
    );
    runner
        .run(&strategy, |(rule, m, n, k, xk, fk, wk, seed)| {
            let p = rule_program(rule, m, n, k, xk, fk, wk, seed);
            let opts = fuzz::Options::default();
            if let Err((kind, mode, detail)) = fuzz::check(&p, &opts) {
                return Err(TestCaseError::fail(format!(
                    "rule case {rule}: {kind:?} in the {mode} run: {detail}\n{}",
                    p.render()
                )));
            }
            // which operators the optimizer chose
            let mut out = Vec::new();
            let r = spores::driver::run_with(
                &p.render(),
                &Default::default(),
                &mut out,
                &spores::driver::RunOptions {
                    optimize: true,
                    explain: true,
                    ..Default::default()
                },
            )
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let plans = r.explain.unwrap_or_default();
            if FUSED.iter().any(|f| plans.contains(f)) {
                fused_seen.lock().expect("not poisoned")[rule] = true;
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    // the rules really fire: most cases end in a fused operator for some shapes
    let seen = fused_seen.into_inner().expect("not poisoned");
    let fired = seen.iter().filter(|&&s| s).count();
    assert!(
        fired * 2 > RULE_CASES,
        "fused operators chosen in only {fired} of {RULE_CASES} rule cases: {seen:?}"
    );
}

#[test]
fn reference_sanity_for_rule_programs() {
    // every rule program is well-typed for the checker and the reference
    for rule in 0..RULE_CASES {
        let p = rule_program(rule, 3, 4, 2, 0, 3, 2, 9);
        spores::driver::compile(&p.render(), &Default::default())
            .unwrap_or_else(|e| panic!("rule case {rule}: {e}\n{}", p.render()));
        reference::run(&p).unwrap_or_else(|e| panic!("rule case {rule}: {e:?}"));
    }
}
