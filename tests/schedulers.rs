//! The saturation schedulers (src/saturate/runner.rs, src/saturate/mcts.rs): mcts is
//! deterministic for a seed, never plans worse than the program as written, never builds an
//! e-graph whose greedy plan is dearer than the sampling run's, keeps the node limit, ends at
//! the time limit with a valid plan (checked by evaluation against the term as written), and
//! is selected by `SPORES_SCHEDULER` and `--scheduler` (a bad name is a usage error).

use egg::RecExpr;
use spores::analysis::EG;
use spores::check::hir::{ScalarTy, Ty};
use spores::ir::Ir;
use spores::optimize::{compile, context, Input, Plan};
use spores::raise::{eval_roots, Val};
use spores::runtime::kernels::{rand_matrix, RandSpec};
use spores::saturate::{mcts, runner, Limits, Scheduler};
use std::collections::HashMap;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// An input: name, rows (0 for a scalar), cols, non-zeros.
type In = (&'static str, usize, usize, usize);

const X: In = ("X", 2000, 500, 10_000);
const U: In = ("U", 2000, 10, 20_000);
const V: In = ("V", 500, 10, 5_000);
const W: In = ("W", 2000, 10, 20_000);
const H: In = ("H", 10, 500, 5_000);

/// Blocks that stop at the node limits used here.
const BLOCKS: &[(&str, &[In])] = &[
    ("sum(X * (U %*% t(V)))", &[X, U, V]),
    ("(U %*% t(V) - X) %*% V", &[X, U, V]),
    ("sum(W %*% H) - sum(X * log(W %*% H))", &[X, W, H]),
    ("sum((X - U %*% t(V))^2)", &[X, U, V]),
];

/// The lowered term of `src` and its inputs.
fn term(src: &str, inputs: &[In]) -> (RecExpr<Ir>, Vec<(String, Input)>) {
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
    let ins = inputs
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
    (term, ins)
}

fn root(t: &RecExpr<Ir>) -> egg::Id {
    egg::Id::from(t.as_ref().len() - 1)
}

fn limits(nodes: usize, time: Duration, scheduler: Scheduler) -> Limits {
    Limits {
        nodes,
        work: 0,
        time,
        iters: 30,
        matches_per_rule: 200,
        seed: 7,
        scheduler,
    }
}

fn plan(src: &str, inputs: &[In], l: &Limits) -> (Option<Plan>, f64, String) {
    let (t, ins) = term(src, inputs);
    let rules = spores::saturate::all_rules().unwrap();
    let opts = spores::extract::Options {
        time_limit: Duration::from_millis(500),
        ..Default::default()
    };
    let (p, c) = compile(&t, &[root(&t)], &ins, &rules, l, &opts, None);
    (p, c.written_cost, c.report.stop)
}

/// The e-graph of `src` saturated under `l`, and its report.
fn saturated(src: &str, inputs: &[In], l: &Limits) -> (EG, egg::Id, runner::Report) {
    let (t, ins) = term(src, inputs);
    let (eg, r) = runner::egraph_with(context(&ins), &t);
    let rules = spores::saturate::all_rules().unwrap();
    let (eg, rep) = spores::saturate::saturate(eg, &[r], &rules, l, None);
    (eg, r, rep)
}

#[test]
fn mcts_is_deterministic_for_a_seed() {
    let l = limits(3000, Duration::from_secs(120), Scheduler::Mcts);
    for (src, ins) in &BLOCKS[..2] {
        let (a, _, stop_a) = plan(src, ins, &l);
        let (b, _, stop_b) = plan(src, ins, &l);
        assert!(stop_a.contains("mcts"), "{src}: {stop_a}");
        assert_eq!(stop_a, stop_b, "{src}");
        let show = |p: &Option<Plan>| p.as_ref().map(|p| (p.expr.to_string(), p.cost));
        assert_eq!(show(&a), show(&b), "{src}");
    }
}

/// Evaluates `expr` at `roots` on random inputs of the given shapes.
fn eval(expr: &RecExpr<Ir>, roots: &[egg::Id], inputs: &[In]) -> Vec<f64> {
    let vals: HashMap<egg::Symbol, Val> = inputs
        .iter()
        .enumerate()
        .map(|(k, &(n, rows, cols, nnz))| {
            let m = rand_matrix(&RandSpec {
                rows,
                cols,
                min: 0.5,
                max: 1.5,
                sparsity: nnz as f64 / (rows * cols) as f64,
                seed: 3 + k as u64,
            });
            (egg::Symbol::from(n), Val::Matrix(Arc::new(m)))
        })
        .collect();
    let out = eval_roots(expr, roots, &vals, &mut |_, _| {}).unwrap();
    out.into_iter()
        .flat_map(|v| match v {
            Val::Scalar(s) => vec![s],
            Val::Matrix(m) => m.to_dense().iter().copied().collect(),
        })
        .collect()
}

/// The plan (or, without one, the term as written) computes what the term computes.
fn assert_valid(src: &str, inputs: &[In], p: &Option<Plan>) {
    let Some(p) = p else { return };
    let (t, _) = term(src, inputs);
    let want = eval(&t, &[root(&t)], inputs);
    let got = eval(&p.expr, &p.roots, inputs);
    assert_eq!(want.len(), got.len(), "{src}");
    for (w, g) in want.iter().zip(&got) {
        assert!(
            (w - g).abs() <= 1e-9 * w.abs().max(g.abs()).max(1.0),
            "{src}: {w} vs {g} (plan {})",
            p.expr
        );
    }
}

#[test]
fn mcts_never_plans_worse_than_written_or_than_sampling_builds() {
    let mut plans = 0;
    for (src, ins) in BLOCKS {
        let mcts_limits = limits(2000, Duration::from_secs(120), Scheduler::Mcts);
        let (p, written, _) = plan(src, ins, &mcts_limits);
        plans += usize::from(p.is_some());
        if let Some(p) = &p {
            assert!(p.cost < written, "{src}: {} vs written {written}", p.cost);
        }
        assert_valid(src, ins, &p);
        // the greedy plan of the mcts e-graph is never dearer than the sampling run's
        let (eg_m, r, _) = saturated(src, ins, &mcts_limits);
        let (eg_s, _, _) = saturated(
            src,
            ins,
            &limits(2000, Duration::from_secs(120), Scheduler::Sampling),
        );
        let (cm, cs) = (
            mcts::greedy_cost(&eg_m, &[r], &Default::default()),
            mcts::greedy_cost(&eg_s, &[r], &Default::default()),
        );
        assert!(cm <= cs, "{src}: mcts {cm} vs sampling {cs}");
    }
    assert!(
        plans >= 2,
        "only {plans} blocks got a plan: the checks above were vacuous"
    );
}

#[test]
fn mcts_keeps_the_node_limit_and_ends_at_the_time_limit_with_a_valid_plan() {
    for nodes in [1000, 3000] {
        for (src, ins) in BLOCKS {
            let (eg, _, rep) = saturated(
                src,
                ins,
                &limits(nodes, Duration::from_secs(120), Scheduler::Mcts),
            );
            assert!(
                rep.nodes <= nodes && eg.total_number_of_nodes() <= nodes,
                "{src}: {} nodes over the limit {nodes}",
                rep.nodes
            );
        }
    }
    // a time limit of about three sampling runs: the search ends there (within an iteration
    // and a greedy extraction) and the plan is still valid
    let (src, ins) = BLOCKS[0];
    let (_, _, s) = saturated(
        src,
        ins,
        &limits(3000, Duration::from_secs(120), Scheduler::Sampling),
    );
    let l = limits(3000, s.time * 3, Scheduler::Mcts);
    let (_, _, rep) = saturated(src, ins, &l);
    assert!(rep.time < l.time + Duration::from_secs(2), "{:?}", rep.time);
    assert!(rep.stop.ends_with("time limit"), "reported: {}", rep.stop);
    let (p, _, _) = plan(src, ins, &l);
    assert_valid(src, ins, &p);
}

fn spores(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_spores"));
    c.args(args).env_remove("SPORES_SCHEDULER");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const PROGRAM: &str = "X = rand(rows=2000, cols=500, sparsity=0.01, seed=1)
U = rand(rows=2000, cols=10, seed=2)
V = rand(rows=500, cols=10, seed=3)
r = sum(X * (U %*% t(V)))
print(r)
";

#[test]
fn the_scheduler_is_chosen_by_env_and_flag() {
    let dir = std::env::temp_dir().join(format!("spores-sched-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("xuv.dml");
    std::fs::write(&file, PROGRAM).unwrap();
    let f = file.to_str().unwrap();
    let small = ("SPORES_NODE_LIMIT", "3000");
    // the saturation line with the stop reason on the line after it
    let egraph_line = |out: &str| {
        let lines: Vec<&str> = out.lines().collect();
        lines
            .windows(2)
            .map(|w| format!("{} {}", w[0], w[1]))
            .find(|l| l.contains("saturation:") && l.contains("node limit"))
            .unwrap_or_else(|| panic!("no block at the node limit:\n{out}"))
    };
    let opt = |flags: &[&str], env: &[(&str, &str)]| {
        let mut args = vec!["opt", f, "--explain"];
        args.extend(flags);
        let (code, out, err) = spores(&args, env);
        assert_eq!(code, 0, "{err}");
        egraph_line(&out)
    };
    assert!(!opt(&[], &[small]).contains("mcts"));
    assert!(opt(&[], &[small, ("SPORES_SCHEDULER", "mcts")]).contains("mcts"));
    assert!(opt(&["--scheduler", "mcts"], &[small]).contains("mcts"));
    assert!(opt(&["--scheduler=mcts"], &[small]).contains("mcts"));
    // the flag wins over the environment
    let l = opt(
        &["--scheduler", "sampling"],
        &[small, ("SPORES_SCHEDULER", "mcts")],
    );
    assert!(!l.contains("mcts"), "{l}");
    // run: the optimized program prints what the program as written prints
    let (code, want, err) = spores(&["run", f, "--no-opt"], &[]);
    assert_eq!(code, 0, "{err}");
    let (code, got, err) = spores(&["run", "--scheduler", "mcts", f, "--explain"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("mcts"), "{err}");
    let (w, g): (f64, f64) = (want.trim().parse().unwrap(), got.trim().parse().unwrap());
    assert!((w - g).abs() <= 1e-9 * w.abs(), "{w} vs {g}");
    // equiv: mcts starts from the sampling run, so it proves at least as many cases
    let proved = |out: &str| out.lines().last().unwrap_or_default().to_string();
    let (code, s, err) = spores(&["equiv", "tests/rewrites/broadcast.tsv"], &[]);
    assert_eq!(code, 0, "{err}");
    let (code, m, err) = spores(
        &[
            "equiv",
            "tests/rewrites/broadcast.tsv",
            "--scheduler",
            "mcts",
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let count = |l: String| -> usize { l.split(' ').nth(1).unwrap().parse().unwrap() };
    assert!(count(proved(&m)) >= count(proved(&s)), "{s}\n{m}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_scheduler_is_a_usage_error() {
    let (code, _, err) = spores(
        &["run", "examples/loss.la"],
        &[("SPORES_SCHEDULER", "greedy")],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("SPORES_SCHEDULER"), "{err}");
    for cmd in [
        &["run", "examples/loss.la", "--scheduler", "greedy"][..],
        &["opt", "examples/loss.la", "--scheduler", "greedy"],
        &[
            "equiv",
            "tests/rewrites/negative.tsv",
            "--scheduler",
            "greedy",
        ],
    ] {
        let (code, _, err) = spores(cmd, &[]);
        assert_eq!(code, 2, "{cmd:?}: {err}");
        assert!(err.contains("scheduler"), "{cmd:?}: {err}");
    }
}

/// Runs `f` while `threads` other threads spin (a loaded machine).
fn under_load<T>(threads: usize, f: impl FnOnce() -> T) -> T {
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = Arc::new(AtomicBool::new(false));
    let spinners: Vec<_> = (0..threads)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            })
        })
        .collect();
    let out = f();
    stop.store(true, Ordering::Relaxed);
    for s in spinners {
        s.join().unwrap();
    }
    out
}

#[test]
fn the_work_limit_decides_the_plan_whatever_the_load() {
    let (src, ins) = BLOCKS[0];
    // the work of the unlimited runs, then limits that cut them
    let free = |s| saturated(src, ins, &limits(3000, Duration::from_secs(120), s)).2;
    let (ws, wm) = (free(Scheduler::Sampling).work, free(Scheduler::Mcts).work);
    assert!(ws > 0 && wm > ws, "work counted: sampling {ws}, mcts {wm}");
    for (s, work) in [
        (Scheduler::Sampling, ws / 2),
        (Scheduler::Mcts, (ws + wm) / 2),
    ] {
        let l = Limits {
            work,
            ..limits(3000, Duration::from_secs(120), s)
        };
        let run = || {
            let (eg, r, rep) = saturated(src, ins, &l);
            let (p, _, _) = plan(src, ins, &l);
            let shown = p.as_ref().map(|p| (p.expr.to_string(), p.cost));
            (
                eg.total_number_of_nodes(),
                eg.find(r),
                rep.stop,
                rep.work,
                shown,
                p,
            )
        };
        let idle = run();
        let loaded = under_load(4, run);
        assert!(
            idle.2.contains("work limit") || s == Scheduler::Mcts,
            "{}",
            idle.2
        );
        assert!(idle.3 >= work, "stopped at {} of {work}", idle.3);
        assert!(!idle.2.contains("time limit"), "{}", idle.2);
        assert_eq!(
            (idle.0, idle.1, &idle.2, idle.3, &idle.4),
            (loaded.0, loaded.1, &loaded.2, loaded.3, &loaded.4),
            "{s:?}"
        );
        assert_valid(src, ins, &idle.5);
    }
}
