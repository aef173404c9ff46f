//! The fuzzers' fixed-seed budgets (src/fuzz/): random programs run optimized and unoptimized
//! against the independent reference evaluator, and mutated inputs that must never crash.
//! `scripts/fuzz.sh N SEED` runs the same fuzzers longer and shrinks what they find.

use spores::fuzz::reference::Verdict;
use spores::fuzz::{self, gen, reference, robust, shrink, FailKind};
use std::path::Path;
use std::time::Duration;

/// Programs in the differential budget.
const BUDGET: u64 = 300;

fn describe(r: &fuzz::Report, seed: u64) -> String {
    let mut s = String::new();
    for f in r.failures.iter().take(5) {
        s += &format!(
            "program {} (`spores fuzz --seed {seed} --first {} --count 1` shrinks it): {:?} in the {} run: {}\n{}\n",
            f.index,
            f.index,
            f.kind,
            f.mode,
            f.detail,
            f.program.render()
        );
    }
    s
}

#[test]
fn differential_fixed_seed_budget() {
    let seed = 20261123;
    let opts = fuzz::Options::default();
    let r = fuzz::run(seed, 0, BUDGET, &opts, &|_, _| {});
    assert_eq!(r.programs, BUDGET);
    assert!(
        r.failures.is_empty(),
        "{} of {BUDGET} programs fail:\n{}",
        r.failures.len(),
        describe(&r, seed)
    );
    // the comparison is not vacuous: almost every printed value agrees, few are excused
    let excused: usize = r.checked.excused.iter().sum();
    assert!(
        r.checked.compared > 20 * excused && r.checked.compared > 10 * BUDGET as usize,
        "agree {}, excused {:?}",
        r.checked.compared,
        r.checked.excused
    );
}

#[test]
fn generated_programs_are_deterministic_and_well_typed() {
    for i in 0..300 {
        let p = fuzz::program(5, i);
        assert_eq!(p, fuzz::program(5, i), "program {i} is not deterministic");
        let src = p.render();
        if let Err(e) = spores::driver::compile(&src, &Default::default()) {
            panic!("program {i} does not check: {e}\n{src}");
        }
        reference::run(&p).unwrap_or_else(|e| panic!("reference rejects program {i}: {e:?}"));
    }
}

fn expected(src_stmts: Vec<gen::Stmt>, inputs: Vec<gen::Input>) -> Vec<reference::Expect> {
    reference::run(&gen::Program {
        inputs,
        stmts: src_stmts,
        iters: 1,
    })
    .expect("well-typed")
}

#[test]
fn reference_follows_ieee_and_the_sparse_reading() {
    use gen::{Agg, Bin, Input, InputKind, Stmt, E};
    let b = Box::new;
    let zeros = Input {
        name: "Z".into(),
        rows: 2,
        cols: 3,
        kind: InputKind::Fill(0.0),
    };
    let stmts = vec![
        // Z / Z: 0/0 is NaN in every cell
        Stmt {
            name: "A".into(),
            expr: E::Bin(Bin::Div, b(E::Var("Z".into())), b(E::Var("Z".into()))),
        },
        // 1 / sum(Z) is +Infinity (sum of +0.0 is +0.0)
        Stmt {
            name: "B".into(),
            expr: E::Bin(
                Bin::Div,
                b(E::Num(1.0)),
                b(E::Agg(Agg::Sum, b(E::Var("Z".into())))),
            ),
        },
        // Z * (1/0): NaN as written, 0 in the sparse reading
        Stmt {
            name: "C".into(),
            expr: E::Bin(
                Bin::Mul,
                b(E::Var("Z".into())),
                b(E::Bin(Bin::Div, b(E::Num(1.0)), b(E::Num(0.0)))),
            ),
        },
        // 1 / sum(-1 * Z): +Infinity as written; a plan may factor the -1 out of the sum,
        // `-1 * sum(Z)` is -0.0 (README exception 3), so -Infinity is excused when optimized
        Stmt {
            name: "D".into(),
            expr: E::Bin(
                Bin::Div,
                b(E::Num(1.0)),
                b(E::Agg(
                    Agg::Sum,
                    b(E::Bin(Bin::Mul, b(E::Num(-1.0)), b(E::Var("Z".into())))),
                )),
            ),
        },
    ];
    let e = expected(stmts, vec![zeros]);
    // A: sum + 6 cells, B: 1 value, C: sum + 6 cells, D: 1 value
    assert_eq!(e.len(), 16);
    assert_eq!(e[15].cell.v, f64::INFINITY);
    assert_eq!(reference::agrees("-Infinity", &e[15]), Verdict::Differ);
    assert!(matches!(
        reference::agrees_optimized("-Infinity", &e[15]),
        Verdict::Excused(_)
    ));
    // a sum of +0.0 cells that keep their sign stays +0.0 in every plan
    assert_eq!(
        reference::agrees_optimized("-Infinity", &e[7]),
        Verdict::Differ
    );
    assert!(e[0].cell.v.is_nan() && e[1].cell.v.is_nan());
    assert_eq!(reference::agrees("NaN", &e[1]), Verdict::Agree);
    assert_eq!(reference::agrees("0.000", &e[1]), Verdict::Differ);
    assert_eq!(e[7].cell.v, f64::INFINITY);
    assert_eq!(reference::agrees("Infinity", &e[7]), Verdict::Agree);
    assert_eq!(reference::agrees("-Infinity", &e[7]), Verdict::Differ);
    assert!(e[8].cell.v.is_nan());
    assert_eq!(e[8].cell.z, 0.0);
    assert_eq!(reference::agrees("0.0", &e[8]), Verdict::Agree);
    assert_eq!(reference::agrees("NaN", &e[8]), Verdict::Agree);
    assert_eq!(reference::agrees("-0.0", &e[8]), Verdict::Agree); // the sum of the sparse reading
}

#[test]
fn reference_tolerance_follows_the_magnitude_bound() {
    use gen::{Agg, Bin, Input, InputKind, Stmt, E};
    let b = Box::new;
    // `f(sum(X) - sum(X))` of a 2 x 2 fill of 1e4, its one printed value's expectation
    let of_cancellation = |f: &dyn Fn(E) -> E| {
        let x = Input {
            name: "X".into(),
            rows: 2,
            cols: 2,
            kind: InputKind::Fill(1e4),
        };
        let sum_x = || b(E::Agg(Agg::Sum, b(E::Var("X".into()))));
        let stmts = vec![Stmt {
            name: "S".into(),
            expr: f(E::Bin(Bin::Sub, sum_x(), sum_x())),
        }];
        expected(stmts, vec![x])
    };
    // sum(X) - sum(X) + 1: exactly 1, but another order may differ by a few ulps of 4e4: the
    // tolerance is 1e-10 of the magnitude bound 4e4 + 4e4 + 1
    let e = of_cancellation(&|d| E::Bin(Bin::Add, b(d), b(E::Num(1.0))));
    assert_eq!(e.len(), 1);
    assert_eq!(reference::agrees("1.0", &e[0]), Verdict::Agree);
    assert_eq!(reference::agrees("1.000000000001", &e[0]), Verdict::Agree);
    assert_eq!(reference::agrees("1.000001", &e[0]), Verdict::Agree);
    assert_eq!(reference::agrees("1.0001", &e[0]), Verdict::Differ);
    assert_eq!(reference::agrees("0.99999", &e[0]), Verdict::Differ);
    assert_eq!(reference::agrees("NaN", &e[0]), Verdict::Differ);
    // (sum(X) - sum(X)) ^ 2: exactly 0, but the base is rounding noise of 8e4 in another
    // order (SystemDS's mean of `X - t(X)` is -6.7e-18), so its square may be ~1e-35; the
    // bound is 8e4 ^ 2, not the first-order bound at a zero base (0)
    let e = of_cancellation(&|d| E::Bin(Bin::Pow, b(d), b(E::Num(2.0))));
    assert_eq!(reference::agrees("0.0", &e[0]), Verdict::Agree);
    assert_eq!(reference::agrees("4.4e-35", &e[0]), Verdict::Agree);
    assert_eq!(reference::agrees("1.0", &e[0]), Verdict::Differ);
}

#[test]
fn shrinker_reaches_a_minimal_program() {
    // a stand-in failure: any program with a matrix product "fails"
    fn has_mmul(e: &gen::E) -> bool {
        use gen::E;
        match e {
            E::MatMul(..) => true,
            E::Num(_) | E::Var(_) => false,
            E::Bin(_, a, b) => has_mmul(a) || has_mmul(b),
            E::Un(_, a) | E::T(a) | E::Agg(_, a) | E::AsScalar(a) | E::Fill(a, ..) => has_mmul(a),
            E::IfElse(c, a, b) => has_mmul(c) || has_mmul(a) || has_mmul(b),
        }
    }
    let fails = |p: &gen::Program| {
        p.stmts
            .iter()
            .any(|s| has_mmul(&s.expr))
            .then_some(FailKind::Mismatch)
    };
    let mut shrunk = 0;
    for i in 0..40 {
        let p = fuzz::program(11, i);
        if fails(&p).is_none() {
            continue;
        }
        let s = shrink::shrink(&p, FailKind::Mismatch, 5000, &fails);
        assert_eq!(fails(&s), Some(FailKind::Mismatch));
        assert_eq!(s.stmts.len(), 1, "{}", s.render());
        // the product of two leaves is all that is left
        match &s.stmts[0].expr {
            gen::E::MatMul(a, b) => {
                assert!(!has_mmul(a) && !has_mmul(b), "{}", s.render());
            }
            other => panic!("not minimal: {other:?}"),
        }
        shrunk += 1;
    }
    assert!(shrunk > 5);
}

#[test]
fn robustness_bounded_budget() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = robust::Corpus::from_tree(root);
    assert!(corpus.programs.len() > 20 && !corpus.mtx.is_empty() && !corpus.json.is_empty());
    let dir = std::env::temp_dir().join(format!("spores-robust-test-{}", std::process::id()));
    let rep = robust::run(
        Path::new(env!("CARGO_BIN_EXE_spores")),
        &corpus,
        3,
        60,
        3000,
        &dir,
        Duration::from_secs(30),
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        rep.failures.is_empty(),
        "{} failures:\n{}",
        rep.failures.len(),
        rep.failures
            .iter()
            .take(3)
            .map(|f| f.chars().take(2000).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n\n")
    );
    // the mutations reach every exit code
    assert_eq!(rep.cases, 60);
    assert!(rep.exits.iter().all(|&n| n > 0), "{:?}", rep.exits);
}

/// A `run` that does not end because its program loops for ever as written is the program's
/// doing; a `check` that does not end (or a program that ends as written) is spores's.
#[test]
fn robustness_tells_endless_programs_from_hangs() {
    let dir = std::env::temp_dir().join(format!("spores-endless-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_spores"));
    let limit = Duration::from_millis(1500);
    std::fs::write(
        dir.join("loop.la"),
        "i = 0\nwhile (i < 1) {\n  i = i - 2\n}\nprint(i)\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("ends.la"),
        "i = 0\nwhile (i < 1) {\n  i = i + 2\n}\nprint(i)\n",
    )
    .unwrap();
    let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(matches!(
        robust::run_case(bin, &args(&["run", "loop.la"]), &dir, limit),
        robust::Ending::Hang
    ));
    assert!(robust::endless(
        bin,
        &args(&["run", "loop.la"]),
        &dir,
        limit
    ));
    assert!(!robust::endless(
        bin,
        &args(&["run", "ends.la"]),
        &dir,
        limit
    ));
    assert!(!robust::endless(
        bin,
        &args(&["check", "loop.la"]),
        &dir,
        limit
    ));
    let _ = std::fs::remove_dir_all(&dir);
}
