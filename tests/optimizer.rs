//! The optimizer core: the shared rewrite examples are all proved (each within 1 s), false
//! equalities never are, each relational identity of R_EQ works on a minimal example
//! (including capture avoidance), and every plan extracted from a saturated e-graph computes
//! what the original expression computes, on random expressions, shapes and inputs.

use egg::{Language, RecExpr, Symbol};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spores::analysis::{Context, VarInfo, EG};
use spores::equiv::{prove, read_cases};
use spores::ir::Ir;
use spores::raise::{eval, Val};
use spores::saturate::{all_rules, saturate, Limits};
use spores_runtime::kernels::{rand_matrix, RandSpec};
use std::collections::HashMap;
use std::time::Duration;

fn cases(path: &str) -> Vec<spores::equiv::Case> {
    read_cases(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn shared_rewrite_examples_are_all_proved() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/rewrites/examples.tsv"
    );
    if !std::path::Path::new(path).exists() {
        return;
    }
    let rules = all_rules().unwrap();
    let limits = Limits {
        time: Duration::from_secs(1),
        ..Limits::default()
    };
    let cs = cases(path);
    assert!(cs.len() >= 30);
    for c in &cs {
        let o = prove(c, &rules, &limits);
        assert!(
            o.proved,
            "{} not proved: {:?} {:?}",
            c.id, o.report, o.error
        );
        assert!(o.report.unwrap().time < Duration::from_secs(1), "{}", c.id);
    }
}

#[test]
fn false_equalities_are_never_proved() {
    let rules = all_rules().unwrap();
    let limits = Limits {
        time: Duration::from_secs(2),
        ..Limits::default()
    };
    let cs = cases("tests/rewrites/negative.tsv");
    assert!(cs.len() >= 10);
    for c in &cs {
        let o = prove(c, &rules, &limits);
        assert!(
            !o.proved,
            "{} proved a false equality: {} == {}",
            c.id, c.lhs, c.rhs
        );
    }
}

/// An e-graph over matrices X (4x3), Y (4x3), Z (3x5) with attributes @i (4), @j (3), @k (5).
fn ra_graph() -> EG {
    let mut ctx = Context::default();
    for (v, r, c) in [("X", 4, 3), ("Y", 4, 3), ("W", 4, 3), ("Z", 3, 5)] {
        ctx.vars.insert(
            Symbol::from(v),
            VarInfo::Matrix {
                rows: r,
                cols: c,
                nnz: (r * c) as f64,
                finite: true,
            },
        );
    }
    for (a, n) in [("@i", 4), ("@j", 3), ("@k", 5), ("@r", 4), ("@s", 3)] {
        ctx.attrs.insert(Symbol::from(a), n);
    }
    EG::new(ctx)
}

/// Saturates from `start` and reports whether `goal` is in the same class.
fn reaches(start: &str, goal: &str) -> bool {
    let mut eg = ra_graph();
    let s: RecExpr<Ir> = start.parse().unwrap();
    let g: RecExpr<Ir> = goal.parse().unwrap();
    let root = eg.add_expr(&s);
    eg.rebuild();
    let rules = all_rules().unwrap();
    let limits = Limits {
        time: Duration::from_millis(500),
        ..Limits::default()
    };
    let found = |eg: &EG| {
        eg.lookup_expr(&g)
            .is_some_and(|x| eg.find(x) == eg.find(root))
    };
    let (eg, _) = saturate(eg, &[root], &rules, &limits, Some(&found));
    found(&eg)
}

#[test]
fn each_relational_identity_on_a_minimal_example() {
    let x = "(b @i @j X)";
    let y = "(b @i @j Y)";
    let w = "(b @i @j W)";
    // 1. distributivity
    assert!(reaches(
        &format!("(* {x} (+ {y} {w}))"),
        &format!("(+ (* {x} {y}) (* {x} {w}))")
    ));
    // 2. aggregate over union
    assert!(reaches(
        &format!("(sum @i (+ {x} {y}))"),
        &format!("(+ (sum @i {x}) (sum @i {y}))")
    ));
    // 3. join under aggregate, when the attribute is not free outside
    let z = "(b @j @k Z)";
    assert!(
        reaches(
            &format!("(* (sum @i {x}) {z})"),
            &format!("(sum @i (* (sum @i {x}) {z}))")
        ) || reaches(
            &format!("(* {z} (sum @i {x}))"),
            &format!("(sum @i (* {z} {x}))")
        )
    );
    // 4. aggregates commute
    assert!(reaches(
        &format!("(sum @i (sum @j {x}))"),
        &format!("(sum @j (sum @i {x}))")
    ));
    // 5. aggregating an absent attribute multiplies by its size: sum_k X(i,j) = 5 * X(i,j)
    assert!(reaches(&format!("(sum @k {x})"), &format!("(* {x} 5)")));
    // 6, 7. associativity and commutativity
    assert!(reaches(
        &format!("(+ {x} (+ {y} {w}))"),
        &format!("(+ (+ {w} {y}) {x})")
    ));
    assert!(reaches(
        &format!("(* {x} (* {y} {w}))"),
        &format!("(* (* {w} {x}) {y})")
    ));
}

#[test]
fn moving_a_join_under_an_aggregate_never_captures() {
    // X(i, j) * sum_j Y(i, j): j is free in X, so the aggregate's j must be renamed
    let start = "(* (b @i @j X) (sum @j (b @i @j Y)))";
    let captured = "(sum @j (* (b @i @j X) (b @i @j Y)))";
    assert!(
        !reaches(start, captured),
        "the bound attribute captured a free one"
    );
    // while the sound form (with a fresh attribute) is equal to the LA plan X * rowSums(Y)
    assert!(reaches(start, "(b @i @j (m* X (rowSums Y)))"));
}

/// Adds both terms, saturates, and reports whether they end up in one class.
fn merged(a: &str, b: &str) -> bool {
    let mut eg = ra_graph();
    let (ta, tb): (RecExpr<Ir>, RecExpr<Ir>) = (a.parse().unwrap(), b.parse().unwrap());
    let (ra, rb) = (eg.add_expr(&ta), eg.add_expr(&tb));
    eg.rebuild();
    let rules = all_rules().unwrap();
    let limits = Limits {
        time: Duration::from_millis(500),
        ..Limits::default()
    };
    let same = |eg: &EG| eg.find(ra) == eg.find(rb);
    let (eg, _) = saturate(eg, &[ra, rb], &rules, &limits, Some(&same));
    same(&eg)
}

#[test]
fn terms_differing_only_in_bound_names_are_equal() {
    // sum over the rows of X, once with @i and once with @r (same size)
    assert!(merged("(sum @i (b @i @j X))", "(sum @r (b @r @j X))"));
    // a row-wise dot product, bound names and operand order differing
    assert!(merged(
        "(sum @j (* (b @i @j X) (b @i @j Y)))",
        "(sum @s (* (b @i @s Y) (b @i @s X)))"
    ));
    // but a free attribute is not a bound one
    assert!(!merged("(sum @i (b @i @j X))", "(sum @j (b @i @j X))"));
}

// ---- soundness: random expressions, plans extracted from the saturated e-graph ----

struct Gen {
    rng: ChaCha8Rng,
    vars: HashMap<(usize, usize), Vec<String>>,
}

impl Gen {
    fn var(&mut self, r: usize, c: usize) -> String {
        let list = self.vars.entry((r, c)).or_default();
        if list.is_empty() || (list.len() < 2 && self.rng.gen_bool(0.3)) {
            list.push(format!("M{}x{}_{}", r, c, list.len()));
        }
        let k = self.rng.gen_range(0..list.len());
        list[k].clone()
    }

    /// A random LA term of shape r x c, at most `depth` deep.
    fn mat(&mut self, r: usize, c: usize, depth: usize) -> String {
        if depth == 0 || self.rng.gen_bool(0.25) {
            return self.var(r, c);
        }
        let d = depth - 1;
        match self.rng.gen_range(0..9) {
            0 => format!("(t {})", self.mat(c, r, d)),
            1 => format!("(m* {} {})", self.mat(r, c, d), self.mat(r, c, d)),
            2 => format!("(m+ {} {})", self.mat(r, c, d), self.mat(r, c, d)),
            3 => format!("(m- {} {})", self.mat(r, c, d), self.mat(r, c, d)),
            4 | 5 => {
                let k = self.rng.gen_range(1..4);
                format!("(mmul {} {})", self.mat(r, k, d), self.mat(k, c, d))
            }
            6 if c == 1 => {
                let k = self.rng.gen_range(2..4);
                format!("(rowSums {})", self.mat(r, k, d))
            }
            6 if r == 1 => {
                let k = self.rng.gen_range(2..4);
                format!("(colSums {})", self.mat(k, c, d))
            }
            7 => format!("(m* {} {})", self.scalar(d), self.mat(r, c, d)),
            8 => format!("(m^ {} 2)", self.mat(r, c, d)),
            _ => self.var(r, c),
        }
    }

    fn scalar(&mut self, depth: usize) -> String {
        if depth == 0 || self.rng.gen_bool(0.4) {
            return format!("{}", self.rng.gen_range(1..4));
        }
        let (r, c) = (self.rng.gen_range(1..4), self.rng.gen_range(1..4));
        format!("(msum {})", self.mat(r, c, depth - 1))
    }
}

fn value_close(a: &Val, b: &Val) -> bool {
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * (1.0 + x.abs().max(y.abs()));
    match (a, b) {
        (Val::Scalar(x), Val::Scalar(y)) => close(*x, *y),
        (Val::Matrix(x), Val::Matrix(y)) => {
            x.shape() == y.shape()
                && (0..x.rows()).all(|i| (0..x.cols()).all(|j| close(x.get(i, j), y.get(i, j))))
        }
        (Val::Scalar(x), Val::Matrix(m)) | (Val::Matrix(m), Val::Scalar(x)) => {
            m.shape() == (1, 1) && close(*x, m.get(0, 0))
        }
    }
}

#[test]
fn extracted_plans_compute_the_same_values() {
    let rules = all_rules().unwrap();
    let mut g = Gen {
        rng: ChaCha8Rng::seed_from_u64(2024),
        vars: HashMap::new(),
    };
    let mut checked = 0;
    for case in 0..40 {
        g.vars.clear();
        let (r, c) = (g.rng.gen_range(1..4), g.rng.gen_range(1..4));
        let text = if case % 4 == 0 {
            g.scalar(3)
        } else {
            g.mat(r, c, 3)
        };
        let expr: RecExpr<Ir> = text.parse().unwrap();
        // random inputs, some sparse
        let mut ctx = Context::default();
        let mut vals = HashMap::new();
        for ((vr, vc), names) in &g.vars {
            for (k, n) in names.iter().enumerate() {
                let sp = if k % 2 == 0 { 1.0 } else { 0.5 };
                let m = rand_matrix(&RandSpec {
                    rows: *vr,
                    cols: *vc,
                    min: -2.0,
                    max: 2.0,
                    sparsity: sp,
                    seed: (case * 31 + k) as u64,
                });
                ctx.vars.insert(
                    Symbol::from(n.as_str()),
                    VarInfo::Matrix {
                        rows: *vr,
                        cols: *vc,
                        nnz: m.nnz() as f64,
                        finite: true,
                    },
                );
                vals.insert(
                    Symbol::from(n.as_str()),
                    Val::Matrix(std::sync::Arc::new(m)),
                );
            }
        }
        let want = eval(&expr, &vals).unwrap();
        let mut eg = EG::new(ctx);
        let root = eg.add_expr(&expr);
        eg.rebuild();
        let limits = Limits {
            time: Duration::from_millis(300),
            nodes: 8000,
            ..Limits::default()
        };
        let (eg, _) = saturate(eg, &[root], &rules, &limits, None);
        // every executable node of the root class, with greedy children: several plans
        let ex = egg::Extractor::new(&eg, spores::extract::NnzCost { egraph: &eg });
        let mut plans = vec![spores::extract::greedy(&eg, root).1];
        for node in &eg[root].nodes {
            if spores::extract::executable(&eg, node)
                && node
                    .children()
                    .iter()
                    .all(|&ch| ex.find_best_cost(ch).is_finite())
            {
                plans.push(node.build_recexpr(|ch| ex.find_best_node(ch).clone()));
            }
        }
        for plan in &plans {
            let got = eval(plan, &vals).unwrap_or_else(|e| panic!("{text} -> {plan}: {e}"));
            assert!(
                value_close(&got, &want),
                "{text}\n plan {plan}\n got {got:?}\n want {want:?}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 60, "only {checked} plans checked");
}

#[test]
fn derived_rules_are_provable_from_the_relational_core() {
    // each line of rules/derived.rules, instantiated at small shapes, proved without it
    let core = spores::saturate::rules_except(&["derived.rules"]).unwrap();
    let limits = Limits {
        time: Duration::from_secs(2),
        nodes: 40_000,
        ..Limits::default()
    };
    let cases = [
        (
            "(A %*% B) %*% C",
            "A %*% (B %*% C)",
            "A:[4,3] B:[3,5] C:[5,2]",
        ),
        (
            "(A + B) %*% C",
            "A %*% C + B %*% C",
            "A:[4,3] B:[4,3] C:[3,2]",
        ),
        (
            "(A - B) %*% C",
            "A %*% C - B %*% C",
            "A:[4,3] B:[4,3] C:[3,2]",
        ),
        (
            "A %*% (B + C)",
            "A %*% B + A %*% C",
            "A:[4,3] B:[3,2] C:[3,2]",
        ),
        (
            "A %*% (B - C)",
            "A %*% B - A %*% C",
            "A:[4,3] B:[3,2] C:[3,2]",
        ),
        ("t(A %*% B)", "t(B) %*% t(A)", "A:[4,3] B:[3,2]"),
        ("t(t(A))", "A", "A:[4,3]"),
        ("t(A - B)", "t(A) - t(B)", "A:[4,3] B:[4,3]"),
    ];
    for (lhs, rhs, shapes) in cases {
        let c = spores::equiv::Case {
            id: lhs.into(),
            lhs: lhs.into(),
            rhs: rhs.into(),
            shapes: shapes.into(),
        };
        let o = prove(&c, &core, &limits);
        assert!(
            o.proved,
            "{lhs} == {rhs} not proved by the core rules: {:?} {:?}",
            o.report, o.error
        );
    }
}

/// Each fused operator against its meaning (the `*-meaning` rules of rules/fused.rules),
/// both evaluated by the plan evaluator, on sparse and dense inputs.
#[test]
fn fused_operators_compute_their_meaning() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/rules/fused.rules")).unwrap();
    let meanings: Vec<(String, String, String)> = text
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let (lhs, rhs) = rest.split_once("=>")?;
            name.ends_with("-meaning").then(|| {
                (
                    name.to_string(),
                    lhs.trim().to_string(),
                    rhs.trim().to_string(),
                )
            })
        })
        .collect();
    assert!(meanings.len() >= 9, "{meanings:?}");
    let (m, n, k) = (120, 90, 5);
    let mat = |rows, cols, sp, seed, min: f64| {
        Val::Matrix(std::sync::Arc::new(rand_matrix(&RandSpec {
            rows,
            cols,
            min,
            max: 0.9,
            sparsity: sp,
            seed,
        })))
    };
    for sp in [0.05, 0.6] {
        let mut vars = HashMap::new();
        for (name, val) in [
            ("X", mat(m, n, sp, 1, 0.1)),
            ("P", mat(m, n, sp, 2, 0.1)),
            ("W", mat(m, n, sp, 3, 0.1)),
            ("U", mat(m, k, 1.0, 4, 0.1)),
            ("V", mat(n, k, 1.0, 5, 0.1)),
            ("v", mat(n, k, 1.0, 6, -0.9)),
            ("w", mat(m, 1, 1.0, 7, -0.9)),
            // a column vector for the operators of vectors only (mmchainr's v)
            ("c", mat(n, 1, 1.0, 11, -0.9)),
            ("e", Val::Scalar(1e-3)),
            ("A", mat(m, n, sp, 9, -0.9)),
            ("B", mat(m, k, 1.0, 10, -0.9)),
        ] {
            vars.insert(Symbol::from(name), val);
        }
        for (name, lhs, rhs) in &meanings {
            let term = |p: &str| -> RecExpr<Ir> { p.replace('?', "").parse().unwrap() };
            let (a, b) = (
                eval(&term(lhs), &vars).unwrap(),
                eval(&term(rhs), &vars).unwrap(),
            );
            let cells = |v: &Val| -> Vec<f64> {
                match v {
                    Val::Scalar(x) => vec![*x],
                    Val::Matrix(mm) => mm.to_dense().iter().copied().collect(),
                }
            };
            let (x, y) = (cells(&a), cells(&b));
            assert_eq!(x.len(), y.len(), "{name}");
            let scale = y.iter().fold(0.0f64, |s, v| s.max(v.abs()));
            let diff = x
                .iter()
                .zip(&y)
                .fold(0.0f64, |s, (p, q)| s.max((p - q).abs()));
            assert!(
                diff <= 1e-9 * scale.max(1e-300),
                "{name} at sparsity {sp}: differs by {diff} (scale {scale})"
            );
        }
    }
}

/// Broadcasting lives in the relational core: row and column vectors, ones outer products,
/// aggregates through a broadcast, constant matrices and 1x1 matrices versus scalars (the
/// negative counterparts are in negative.tsv). Every derivation (`--why`) names only rules
/// of rules/*.rules or the constant folding of the analysis.
#[test]
fn broadcasting_rewrites_are_proved_with_derivations() {
    let rules = all_rules().unwrap();
    let names: std::collections::HashSet<String> = std::fs::read_dir("rules")
        .unwrap()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
            text.lines()
                .filter_map(|l| l.split_once(':').map(|(n, _)| n.trim().to_string()))
                .filter(|n| !n.starts_with('#') && !n.contains(' '))
                .collect::<Vec<_>>()
        })
        .collect();
    let limits = Limits::default();
    let shared = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/rewrites/examples.tsv"
    );
    let mut all = cases("tests/rewrites/broadcast.tsv");
    assert!(all.len() >= 16);
    if std::path::Path::new(shared).exists() {
        all.extend(cases(shared));
    }
    for c in &all {
        let o = spores::equiv::prove_with(c, &rules, &limits, true);
        assert!(
            o.proved,
            "{} not proved: {:?} {:?}",
            c.id, o.report, o.error
        );
        assert!(!o.derivation.is_empty(), "{}: no derivation", c.id);
        for step in &o.derivation {
            let rule = step.split([':', ' ']).next().unwrap();
            assert!(
                rule == "constant-fold" || names.contains(rule),
                "{}: step names no rule: {step}",
                c.id
            );
        }
    }
}

/// `rowSums(X ^ c)` with the power absorbed by the plan evaluator (on a sparse X, each row's
/// powers summed without forming `X ^ c`) has the bits and the representation of the power
/// formed and then summed: squares that underflow to zero (dropped from the formed matrix),
/// signed zeros, NaN and Inf among the values, exponents that keep zeros zero and ones that
/// do not, on a sparse and a dense X.
#[test]
fn a_power_summed_by_rows_is_the_power_formed() {
    use spores_runtime::kernels::{aggregate_dir, binary, Operand};
    use spores_runtime::ops::{AggDir, AggOp, BinOp};
    use spores_runtime::Matrix;
    let (m, n) = (400, 60);
    for sp in [0.1, 0.9] {
        let mut d = rand_matrix(&RandSpec {
            rows: m,
            cols: n,
            min: -2.0,
            max: 2.0,
            sparsity: sp,
            seed: 21,
        })
        .to_dense();
        for (i, j, v) in [
            (0, 1, 1e-200),
            (0, 3, -1e-170),
            (1, 2, f64::NAN),
            (2, 5, f64::INFINITY),
            (3, 0, -0.0),
            (4, 7, f64::NEG_INFINITY),
        ] {
            d[[i, j]] = v;
        }
        let x = std::sync::Arc::new(Matrix::from_dense(d));
        assert_eq!(x.is_sparse(), sp < 0.5, "the fixture's representation");
        for c in [2.0, 3.0, 0.5, 1.0, 0.0, -1.0] {
            let vars = HashMap::from([
                (Symbol::from("X"), Val::Matrix(x.clone())),
                (Symbol::from("c"), Val::Scalar(c)),
            ]);
            let term: RecExpr<Ir> = "(rowSums (m^ X c))".parse().unwrap();
            let Val::Matrix(got) = eval(&term, &vars).unwrap() else {
                panic!("a column")
            };
            let formed = binary(BinOp::Pow, Operand::Matrix(&x), Operand::Scalar(c));
            let want = aggregate_dir(AggOp::Sum, AggDir::Row, &formed);
            assert_eq!(got.is_sparse(), want.is_sparse(), "X ^ {c} at {sp}");
            let bits =
                |a: &Matrix| -> Vec<u64> { a.to_dense().iter().map(|v| v.to_bits()).collect() };
            assert_eq!(bits(&got), bits(&want), "rowSums(X ^ {c}) at {sp}");
        }
    }
}

/// A sum over the cells a fused region forms runs in that region's pass (`R = R - alpha *
/// HS; sum(R ^ 2)`, `sum(S * HS)`), with the bits of the two regions run apart: the term
/// with both roots against each root alone, on dense data with infinities and NaN, on data
/// whose update is mostly zeros (stored sparse, so the sum runs on its own), and below the
/// sum's sequential limit (never paired).
#[test]
fn a_sum_over_an_update_runs_in_its_pass_with_the_same_bits() {
    use spores::raise::{eval_roots, eval_roots_traced, Step};
    let terms = [
        "(msum (m^ (m- R (m* alpha HS)) 2))",
        "(msum (m* S (m- R (m* alpha HS))))",
        "(msum (m* (m+ (m* S 0.5) (m- R (m* alpha HS))) S))",
    ];
    let mat = |rows, cols, sp, seed| {
        rand_matrix(&RandSpec {
            rows,
            cols,
            min: -2.0,
            max: 2.0,
            sparsity: sp,
            seed,
        })
    };
    let bits = |v: &Val| -> Vec<u64> {
        match v {
            Val::Scalar(x) => vec![x.to_bits()],
            Val::Matrix(m) => m.to_dense().iter().map(|v| v.to_bits()).collect(),
        }
    };
    let mut paired = 0;
    for (case, &(m, k, sp, special)) in [
        (20000, 20, 1.0, false),
        (20000, 20, 1.0, true),
        (30000, 10, 0.02, false),
        (5000, 20, 1.0, false),
    ]
    .iter()
    .enumerate()
    {
        let seed = 40 + 3 * case as u64;
        let mut hs = mat(m, k, 1.0, seed).to_dense();
        if special {
            hs[[7, 3]] = f64::INFINITY;
            hs[[9000, 0]] = f64::NAN;
            hs[[15000, 19]] = -0.0;
        }
        // at sparsity sp < 1, R is alpha * HS but for a fraction sp of its cells: the
        // update's cells are then mostly zeros, and the operators one at a time store it
        // sparse (its operands and alpha * HS dense)
        let mut r = mat(m, k, 1.0, seed + 1).to_dense();
        if sp < 1.0 {
            let noise = mat(m, k, sp, seed + 3).to_dense();
            r.zip_mut_with(&hs, |x, h| *x = 0.37 * h);
            r.zip_mut_with(&noise, |x, z| *x += z);
        }
        let dense = |d| Val::Matrix(std::sync::Arc::new(spores_runtime::Matrix::Dense(d)));
        let vars = HashMap::from([
            (Symbol::from("R"), dense(r)),
            (Symbol::from("HS"), dense(hs)),
            (
                Symbol::from("S"),
                Val::Matrix(std::sync::Arc::new(mat(m, k, 1.0, seed + 2))),
            ),
            (Symbol::from("alpha"), Val::Scalar(0.37)),
        ]);
        for text in terms {
            let e: RecExpr<Ir> = text.parse().unwrap();
            let update = e
                .as_ref()
                .iter()
                .position(|n| matches!(n, Ir::ESub(_)))
                .map(egg::Id::from)
                .unwrap();
            let sum = egg::Id::from(e.as_ref().len() - 1);
            let mut steps: Vec<Step> = Vec::new();
            let both = eval_roots_traced(
                &e,
                &[update, sum],
                &vars,
                Some(&mut |s: &Step| steps.push(s.clone())),
            )
            .unwrap();
            let alone_u = eval_roots(&e, &[update], &vars, &mut |_, _| {}).unwrap();
            let alone_s = eval_roots(&e, &[sum], &vars, &mut |_, _| {}).unwrap();
            let what = format!("{text} at {m}x{k}, sparsity {sp}");
            assert_eq!(bits(&both[0]), bits(&alone_u[0]), "{what}: the update");
            assert_eq!(bits(&both[1]), bits(&alone_s[0]), "{what}: the sum");
            let one_pass = steps.iter().any(|s| s.absorbed.contains(&usize::from(sum)));
            // dense and past the sequential limit: the sum runs in the update's pass; a
            // sparse update is the sum's sparse leaf, which its own kernels read
            if m * k > 1 << 18 {
                let sparse = matches!(&both[0], Val::Matrix(u) if u.is_sparse());
                assert_eq!(sparse, sp < 1.0, "{what}: the update's storage");
                assert_eq!(one_pass, !sparse, "{what}: one pass: {steps:?}");
            }
            if m * k <= 1 << 18 {
                assert!(!one_pass, "{what}: a sequential sum paired");
            }
            paired += one_pass as usize;
        }
    }
    assert!(paired >= 6, "paired {paired}");
}
