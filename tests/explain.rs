//! Snapshots of the plans the run-time optimizer chooses for the blocks of the peer kernels
//! and the shared programs, at their benchmark shapes (only shapes and non-zero counts matter
//! to the planner, so no data is generated). The saturation limits are the run-time ones
//! without the wall-clock limit, so the plans do not depend on the machine's speed.

use egg::RecExpr;
use spores::check::hir::{ScalarTy, Ty};
use spores::ir::Ir;
use spores::optimize::{compile, Input, Optimizer};
use std::fmt::Write;
use std::time::Duration;

/// Plans `src` with the named inputs (`(name, rows, cols, nnz)`; rows 0 for a scalar).
fn plan(src: &str, inputs: &[(&str, usize, usize, usize)]) -> String {
    let ast = spores::syntax::parse_expr(src).unwrap();
    let types: Vec<(String, Ty)> = inputs
        .iter()
        .map(|&(n, r, c, _)| {
            let ty = if r == 0 {
                Ty::Scalar(ScalarTy::Double)
            } else {
                Ty::Matrix(Some(r), Some(c))
            };
            (n.to_string(), ty)
        })
        .collect();
    let hir = spores::check::check_expr(&ast, &types).unwrap();
    let mut term = RecExpr::<Ir>::default();
    spores::lower::lower_expr(&hir, &mut term).unwrap();
    let ins: Vec<(String, Input)> = inputs
        .iter()
        .map(|&(n, rows, cols, nnz)| {
            let i = if rows == 0 {
                Input::FiniteScalar
            } else {
                Input::Matrix {
                    rows,
                    cols,
                    nnz,
                    finite: true,
                }
            };
            (n.to_string(), i)
        })
        .collect();
    let opt = Optimizer::new().unwrap();
    let limits = spores::saturate::Limits {
        time: Duration::from_secs(60),
        ..opt.limits.clone()
    };
    let rules = spores::saturate::all_rules().unwrap();
    let root = egg::Id::from(term.as_ref().len() - 1);
    let (p, c) = compile(&term, &[root], &ins, &rules, &limits, &opt.extract, None);
    let mut out = format!("{src}\n{term}\n");
    match p {
        Some(p) => {
            // the plan as `--explain` prints it, then the exact term
            let _ = writeln!(
                out,
                "plan, estimated {} (as written {}):",
                spores::explain::time(p.cost),
                spores::explain::time(p.written_cost)
            );
            out.push_str(&spores::explain::render_plan(
                &p,
                &["out".into()],
                &[],
                "    ",
            ));
            out.push_str(&spores::explain::meanings(&p, "", "    "));
            let _ = writeln!(
                out,
                "plan: {}\ncost {:.4e} (as written {:.4e})",
                p.expr, p.cost, p.written_cost
            );
        }
        None => {
            let _ = writeln!(out, "kept as written (cost {:.4e})", c.written_cost);
        }
    }
    out
}

const X: (&str, usize, usize, usize) = ("X", 20000, 5000, 1_000_000);
const U: (&str, usize, usize, usize) = ("U", 20000, 10, 200_000);
const V: (&str, usize, usize, usize) = ("V", 5000, 10, 50_000);
const W: (&str, usize, usize, usize) = ("W", 20000, 10, 200_000);
const H: (&str, usize, usize, usize) = ("H", 10, 5000, 50_000);

#[test]
fn als_gradient() {
    insta::assert_snapshot!(plan("(U %*% t(V) - X) %*% V", &[U, V, X]));
}

#[test]
fn squared_loss() {
    insta::assert_snapshot!(plan("sum((X - U %*% t(V))^2)", &[X, U, V]));
}

#[test]
fn pnmf_objective() {
    insta::assert_snapshot!(plan(
        "sum(W %*% H) - sum(X * log(W %*% H + eps))",
        &[W, H, X, ("eps", 0, 0, 0)]
    ));
}

#[test]
fn pnmf_update() {
    insta::assert_snapshot!(plan(
        "(H * (t(W) %*% (X / (W %*% H + eps)))) / t(colSums(W))",
        &[H, W, X, ("eps", 0, 0, 0)]
    ));
}

#[test]
fn alscg_gradient() {
    insta::assert_snapshot!(plan(
        "((X != 0) * (U %*% t(V) - X)) %*% V + lambda * U * r",
        &[X, U, V, ("lambda", 0, 0, 0), ("r", 20000, 1, 20000)]
    ));
}

/// Runs the `spores` binary with `args` (and an environment variable); returns exit code,
/// standard output and standard error.
fn spores(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_spores"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The plan lines of an explanation (between a "plan, estimated" line and the next line
/// that is not indented by four).
fn plan_lines(explain: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for l in explain.lines() {
        if l.starts_with("  plan, ") || l.starts_with("  kept as written") {
            inside = true;
            out.push(l.split(',').next().unwrap().to_string());
        } else if !l.starts_with("    ") {
            inside = false;
        } else if inside {
            out.push(l.to_string());
        }
    }
    out
}

/// Saturation without the wall-clock limit, so both commands plan alike under load.
const NO_CLOCK: (&str, &str) = ("SPORES_TIME_LIMIT", "600");

#[test]
fn opt_plans_what_run_plans() {
    // X is sparse (rand's sparsity): both commands must see it, and fuse the loss
    let args = ["examples/loss.la", "--nvargs", "m=60", "n=50", "r=4"];
    let (code, opt, err) = spores(&[&["opt", "--explain"][..], &args].concat(), &[NO_CLOCK]);
    assert_eq!(code, 0, "{err}");
    let (code, out, run) = spores(&[&["run", "--explain"][..], &args].concat(), &[NO_CLOCK]);
    assert_eq!(code, 0, "{run}");
    assert!(out.contains("loss "), "{out}");
    let (p_opt, p_run) = (plan_lines(&opt), plan_lines(&run));
    assert!(!p_opt.is_empty(), "{opt}");
    assert_eq!(p_opt, p_run, "opt:\n{opt}\nrun:\n{run}");
    assert!(p_opt.iter().any(|l| l.contains("sddmm(")), "{opt}");
    assert!(p_opt.iter().any(|l| l.contains("wsloss(")), "{opt}");
}

#[test]
fn opt_without_explain_prints_the_plans() {
    let (code, out, err) = spores(&["opt", "examples/loss.la"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("    loss = wsloss(X, U, V)\n"), "{out}");
    // each fused operator's meaning, once
    assert_eq!(
        out.matches("where wsloss(X, U, V) = sum((X - U %*% t(V)) ^ 2)")
            .count(),
        1,
        "{out}"
    );
}

#[test]
fn explain_names_barriers_shared_terms_and_units() {
    let dir = std::env::temp_dir().join(format!("spores-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("shared.la");
    std::fs::write(
        &p,
        "U = rand(rows=200, cols=10, seed=1)\nV = rand(rows=300, cols=10, seed=2)\n\
         W = rand(rows=10, cols=7, seed=3)\nx = sum(U[1:10, ])\nP = U %*% (t(V) %*% V)\n\
         Q = (t(V) %*% V) %*% W\nprint(sum(P) + sum(Q) + x)\n",
    )
    .unwrap();
    let (code, out, err) = spores(&["opt", p.to_str().unwrap(), "--explain"], &[NO_CLOCK]);
    assert_eq!(code, 0, "{err}");
    // a barrier is shown by the source text it stands for, never by its internal name
    assert!(!out.contains(".b0"), "{out}");
    assert!(out.contains("    x = sum(U[1:10, ])\n"), "{out}");
    // a subexpression the plan reads twice is computed once, by name
    assert!(out.contains("    %1 = tmmul(V, V)\n"), "{out}");
    assert!(out.contains("    Q = %1 %*% W\n"), "{out}");
    // times in units, the limit, the extractor and optimality
    assert!(
        out.lines()
            .filter(|l| l.starts_with("  plan, estimated "))
            .all(|l| [" ns ", " us ", " ms ", " s "]
                .iter()
                .any(|u| l.contains(u))),
        "{out}"
    );
    assert!(out.contains("  saturation: "), "{out}");
    assert!(out.contains("  extraction: "), "{out}");
    assert!(
        out.contains("proven optimal") || out.contains("of optimal"),
        "{out}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Checks that a DOT file is a well-formed digraph: one graph, every edge between declared
/// nodes, quotes balanced.
fn check_dot(text: &str) {
    assert!(text.starts_with("digraph "), "{text}");
    assert!(text.trim_end().ends_with('}'), "{text}");
    let mut nodes = std::collections::HashSet::new();
    for l in text.lines().skip(1) {
        let l = l.trim();
        if l == "}" || l.starts_with("rankdir") || l.starts_with("node ") {
            continue;
        }
        assert!(l.ends_with(';'), "{l}");
        let quotes = l.matches('"').count() - l.matches("\\\"").count();
        assert_eq!(quotes % 2, 0, "unbalanced quotes: {l}");
        if let Some((a, b)) = l.trim_end_matches(';').split_once(" -> ") {
            assert!(nodes.contains(a), "edge from undeclared {a}: {text}");
            assert!(
                nodes.contains(b) || b.starts_with("out"),
                "edge to undeclared {b}: {text}"
            );
        } else {
            let name = l.split_whitespace().next().unwrap();
            nodes.insert(name.to_string());
        }
    }
}

#[test]
fn dot_files_are_well_formed_and_render() {
    let dir = std::env::temp_dir().join(format!("spores-dot-{}", std::process::id()));
    let d = dir.to_str().unwrap();
    let (code, _, err) = spores(&["opt", "examples/loss.la", "--dot", d], &[]);
    assert_eq!(code, 0, "{err}");
    let loss = std::fs::read_to_string(dir.join("block0-loss.dot")).unwrap();
    check_dot(&loss);
    // the fused operator is marked, with its shape, non-zeros and time; X is drawn once
    assert!(loss.contains("wsloss\\nscalar, nnz ~"), "{loss}");
    assert!(loss.contains("(fused)"), "{loss}");
    assert_eq!(loss.matches("sparsity=0.02").count(), 1, "{loss}");
    // run --explain --dot writes the same kind of file
    let run_dir = dir.join("run");
    let (code, _, err) = spores(
        &[
            "run",
            "examples/loss.la",
            "--explain",
            "--dot",
            run_dir.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    check_dot(&std::fs::read_to_string(run_dir.join("block0-loss.dot")).unwrap());
    match std::process::Command::new("dot")
        .arg("-Tsvg")
        .arg(dir.join("block0-loss.dot"))
        .output()
    {
        Ok(o) => {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            assert!(String::from_utf8_lossy(&o.stdout).contains("<svg"));
        }
        Err(_) => eprintln!("skipped rendering: Graphviz `dot` is not installed"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn messages_name_no_rust_types() {
    // an equivalence between terms of different shapes says the shapes in words
    let dir = std::env::temp_dir().join(format!("spores-msg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = dir.join("cases.tsv");
    std::fs::write(
        &cases,
        "id\tmethod\tlhs\trhs\tshapes\tnote\nt1\tT\tt(A)\tA\tA:[10,5]\tnot equal\n",
    )
    .unwrap();
    let (_, out, err) = spores(&["equiv", cases.to_str().unwrap()], &[]);
    let all = format!("{out}{err}");
    assert!(all.contains("a 5x10 matrix"), "{all}");
    assert!(!all.contains("Mat("), "{all}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_same_program_gets_the_same_plan_in_every_run() {
    // plans of equal cost are common (the expanded loss has several); the tie must be broken
    // the same way in every process (greedy extraction once summed costs in hash order)
    let args = [
        "opt",
        "--explain",
        "examples/loss.la",
        "--nvargs",
        "m=60",
        "n=50",
        "r=4",
    ];
    let runs: Vec<Vec<String>> = (0..6)
        .map(|_| {
            let (code, out, err) = spores(&args, &[NO_CLOCK]);
            assert_eq!(code, 0, "{err}");
            plan_lines(&out)
        })
        .collect();
    assert!(!runs[0].is_empty());
    for r in &runs[1..] {
        assert_eq!(r, &runs[0]);
    }
}
