//! Measures the saturation schedulers (`sampling`, `mcts`) on the blocks that hit the node
//! limit: `cargo run --release --example schedulers [-- FILTER...]`.
//!
//! The corpus is what the run-time optimizer really compiles: the peer kernels
//! (../shared/bench/peers/kernels, one repetition, no warm-up, default sizes), the programs of
//! ../shared/data/programs and the drivers of ../shared/data/systemds-scripts (with
//! `--lib builtin`), each run once with a recording optimizer (`Optimizer::record`). Every
//! distinct block whose sampling saturation stops at the node limit under the run-time limits
//! is then compiled again under three budgets, with both schedulers at equal limits:
//!
//! * `rt`: the run-time limits it was compiled under (6,000 nodes, 100 ms, 12 iterations,
//!   scaled by the number of outputs as `Optimizer::plan` does);
//! * `20k` and `5k`: 20,000 and 5,000 nodes (same scaling), 1 s per output, 30 iterations
//!   (`spores opt`'s limits, and a smaller node budget).
//!
//! For each it prints the plan's estimated cost and the compile time (saturation +
//! extraction) of both, then the smallest node budget on a ladder at which each scheduler
//! finds a plan as cheap as sampling's at 20k ("today's best"), and, where the two plans of a
//! budget differ, their measured run times (best of three evaluations on random inputs of the
//! block's shapes and densities). A summary follows. Arguments filter the programs by name.

use spores::optimize::{compile, Input, Optimizer, Recorded};
use spores::raise::{eval_roots, Val};
use spores::runtime::kernels::{rand_matrix, RandSpec};
use spores::saturate::{Limits, Scheduler};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A program of the corpus: name, file, script arguments, library directories, directory to
/// run it from.
struct Program {
    name: String,
    file: PathBuf,
    args: Vec<(String, String)>,
    lib: Vec<PathBuf>,
    cwd: PathBuf,
}

fn corpus(shared: &Path) -> Vec<Program> {
    let mut out = Vec::new();
    let files = |dir: PathBuf, ext: &str| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        v.retain(|p| p.extension().is_some_and(|e| e == ext));
        v.sort();
        v
    };
    let kernels = shared.join("bench/peers/kernels");
    for f in files(kernels.clone(), "dml") {
        out.push(Program {
            name: format!("kernel/{}", stem(&f)),
            file: f,
            args: vec![("reps".into(), "1".into()), ("warmup".into(), "0".into())],
            lib: vec![],
            cwd: kernels.clone(),
        });
    }
    let programs = shared.join("data/programs");
    for f in files(programs.clone(), "la") {
        out.push(Program {
            name: format!("program/{}", stem(&f)),
            file: f,
            args: vec![],
            lib: vec![],
            cwd: programs.clone(),
        });
    }
    let scripts = shared.join("data/systemds-scripts");
    for f in files(scripts.join("drivers"), "dml") {
        out.push(Program {
            name: format!("driver/{}", stem(&f)),
            file: f,
            args: vec![],
            lib: vec![scripts.join("builtin")],
            cwd: scripts.clone(),
        });
    }
    out
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Runs a program with a recording optimizer; returns the blocks it compiled.
fn record(p: &Program) -> Result<Vec<Recorded>, String> {
    let source = std::fs::read_to_string(&p.file).map_err(|e| e.to_string())?;
    let here = std::env::current_dir().map_err(|e| e.to_string())?;
    std::env::set_current_dir(&p.cwd).map_err(|e| e.to_string())?;
    let args: HashMap<String, String> = p.args.iter().cloned().collect();
    let result = (|| {
        let program = spores::driver::compile_with_lib(&source, &args, &p.lib)
            .map_err(|e| format!("{e:?}"))?;
        let sink = Arc::new(Mutex::new(Vec::new()));
        let mut opt = Optimizer::new().map_err(|e| e.to_string())?;
        opt.limits.scheduler = Scheduler::Sampling;
        opt.record = Some(sink.clone());
        let mut out = Vec::new();
        let mut exec =
            spores::exec::Executor::new(&mut out, false).with_optimizer(opt, false, false);
        exec.run(&program).map_err(|e| format!("{e:?}"))?;
        drop(exec);
        let blocks = sink.lock().map_err(|e| e.to_string())?.clone();
        Ok(blocks)
    })();
    std::env::set_current_dir(here).map_err(|e| e.to_string())?;
    result
}

/// One compilation's outcome.
#[derive(Clone)]
struct Outcome {
    cost: f64,
    ms: f64,
    stop: String,
    plan: Option<spores::optimize::Plan>,
}

fn run(b: &Recorded, rules: &[spores::saturate::Rule], limits: &Limits) -> Outcome {
    let opts = spores::extract::Options {
        time_limit: Duration::from_millis(500),
        ..Default::default()
    };
    let (plan, c) = compile(&b.term, &b.roots, &b.inputs, rules, limits, &opts, None);
    Outcome {
        cost: plan.as_ref().map_or(c.written_cost, |p| p.cost),
        ms: (c.saturation + c.extraction).as_secs_f64() * 1e3,
        stop: c.report.stop.clone(),
        plan,
    }
}

/// The limits of a budget: `nodes` per output (scaled as `Optimizer::plan` scales them).
fn budget(b: &Recorded, nodes: usize, time: Duration, iters: usize, s: Scheduler) -> Limits {
    let extra = b.roots.len().clamp(1, 4) - 1;
    Limits {
        nodes: nodes + nodes * 2 * extra / 5,
        time: time * (1 + extra as u32),
        iters,
        scheduler: s,
        ..b.limits.clone()
    }
}

/// Random values of the block's inputs.
fn values(b: &Recorded) -> HashMap<egg::Symbol, Val> {
    b.inputs
        .iter()
        .enumerate()
        .map(|(k, (n, i))| {
            let v = match *i {
                Input::Matrix {
                    rows, cols, nnz, ..
                } => Val::Matrix(Arc::new(rand_matrix(&RandSpec {
                    rows,
                    cols,
                    min: 0.5,
                    max: 1.5,
                    sparsity: nnz as f64 / (rows * cols).max(1) as f64,
                    seed: 11 + k as u64,
                }))),
                Input::Scalar(Some(v)) => Val::Scalar(v),
                Input::Scalar(None) | Input::FiniteScalar => Val::Scalar(0.75),
            };
            (egg::Symbol::from(n.as_str()), v)
        })
        .collect()
}

/// The best of three evaluations of a plan (or of the block as written), in ms.
fn time_plan(b: &Recorded, o: &Outcome, vals: &HashMap<egg::Symbol, Val>) -> Option<f64> {
    let (expr, roots) = match &o.plan {
        Some(p) => (&p.expr, &p.roots),
        None => (&b.term, &b.roots),
    };
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        eval_roots(expr, roots, vals, &mut |_, _| {}).ok()?;
        best = best.min(t.elapsed().as_secs_f64() * 1e3);
    }
    Some(best)
}

/// Equal costs (within 1e-9 relative; two infinite costs are equal).
fn same(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

fn main() {
    let filters: Vec<String> = std::env::args().skip(1).collect();
    let shared = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared"));
    let rules = spores::saturate::all_rules().expect("rule files load");
    let mut seen = HashSet::new();
    let mut blocks: Vec<(String, Recorded)> = Vec::new();
    for p in corpus(&shared) {
        if !filters.is_empty() && !filters.iter().any(|f| p.name.contains(f.as_str())) {
            continue;
        }
        match record(&p) {
            Ok(rs) => {
                let mut count: HashMap<usize, usize> = HashMap::new();
                for r in rs {
                    let k = count.entry(r.block).or_default();
                    *k += 1;
                    let key = format!("{} {:?} {:?}", r.term, r.roots, r.inputs);
                    if seen.insert(key) {
                        blocks.push((format!("{}:b{}.{}", p.name, r.block, k), r));
                    }
                }
            }
            Err(e) => eprintln!("skipped {}: {e}", p.name),
        }
    }
    eprintln!("{} distinct blocks compiled at run time", blocks.len());
    let one = Duration::from_secs(1);
    let ladder = [1000, 2000, 3000, 5000, 8000, 12000, 20000];
    println!(
        "block\troots\trt_samp_cost\trt_samp_ms\trt_mcts_cost\trt_mcts_ms\t\
         20k_samp_cost\t20k_samp_ms\t20k_mcts_cost\t20k_mcts_ms\t\
         5k_samp_cost\t5k_samp_ms\t5k_mcts_cost\t5k_mcts_ms\t\
         min_nodes_samp\tmin_nodes_mcts\trun_ms_samp/mcts"
    );
    // summary per budget: mcts cheaper, equal, dearer; compile ms of both
    let mut summary: HashMap<&str, (usize, usize, usize, f64, f64)> = HashMap::new();
    let mut ladder_wins = (0, 0, 0);
    let mut hit = 0;
    for (name, b) in &blocks {
        let rt_s = run(
            b,
            &rules,
            &Limits {
                scheduler: Scheduler::Sampling,
                ..b.limits.clone()
            },
        );
        if rt_s.stop != "node limit" {
            continue;
        }
        hit += 1;
        let rt_m = run(
            b,
            &rules,
            &Limits {
                scheduler: Scheduler::Mcts,
                ..b.limits.clone()
            },
        );
        let big = |s| budget(b, 20_000, one, 30, s);
        let small = |s| budget(b, 5_000, one, 30, s);
        let k20_s = run(b, &rules, &big(Scheduler::Sampling));
        let k20_m = run(b, &rules, &big(Scheduler::Mcts));
        let k5_s = run(b, &rules, &small(Scheduler::Sampling));
        let k5_m = run(b, &rules, &small(Scheduler::Mcts));
        let target = k20_s.cost;
        let smallest = |s: Scheduler| {
            ladder.iter().copied().find(|&n| {
                let o = run(b, &rules, &budget(b, n, one, 30, s));
                o.cost <= target * (1.0 + 1e-9)
            })
        };
        let (ms, mm) = (smallest(Scheduler::Sampling), smallest(Scheduler::Mcts));
        match (ms, mm) {
            (Some(a), Some(c)) if c < a => ladder_wins.0 += 1,
            (None, Some(_)) => ladder_wins.0 += 1,
            (Some(a), Some(c)) if c == a => ladder_wins.1 += 1,
            (None, None) => ladder_wins.1 += 1,
            _ => ladder_wins.2 += 1,
        }
        let mut timings = Vec::new();
        let mut vals = None;
        for (tag, s, m) in [
            ("rt", &rt_s, &rt_m),
            ("20k", &k20_s, &k20_m),
            ("5k", &k5_s, &k5_m),
        ] {
            let e = summary.entry(tag).or_default();
            if m.cost < s.cost * (1.0 - 1e-9) {
                e.0 += 1;
            } else if same(m.cost, s.cost) {
                e.1 += 1;
            } else {
                e.2 += 1;
            }
            e.3 += s.ms;
            e.4 += m.ms;
            if !same(m.cost, s.cost) {
                let v = vals.get_or_insert_with(|| values(b));
                let fmt = |x: Option<f64>| x.map_or("err".to_string(), |t| format!("{t:.2}"));
                timings.push(format!(
                    "{tag}:{}/{}",
                    fmt(time_plan(b, s, v)),
                    fmt(time_plan(b, m, v))
                ));
            }
        }
        let nodes = |x: Option<usize>| x.map_or(">20000".to_string(), |n| n.to_string());
        println!(
            "{name}\t{}\t{:.4e}\t{:.1}\t{:.4e}\t{:.1}\t{:.4e}\t{:.1}\t{:.4e}\t{:.1}\t{:.4e}\t{:.1}\t{:.4e}\t{:.1}\t{}\t{}\t{}",
            b.roots.len(),
            rt_s.cost,
            rt_s.ms,
            rt_m.cost,
            rt_m.ms,
            k20_s.cost,
            k20_s.ms,
            k20_m.cost,
            k20_m.ms,
            k5_s.cost,
            k5_s.ms,
            k5_m.cost,
            k5_m.ms,
            nodes(ms),
            nodes(mm),
            timings.join(" ")
        );
    }
    println!("\n{hit} blocks hit the node limit at run time");
    for tag in ["rt", "20k", "5k"] {
        if let Some((better, equal, worse, s_ms, m_ms)) = summary.get(tag) {
            println!(
                "{tag}: mcts cheaper on {better}, equal on {equal}, dearer on {worse}; compile time sampling {s_ms:.0} ms, mcts {m_ms:.0} ms"
            );
        }
    }
    println!(
        "smallest node budget reaching sampling's 20k cost: mcts smaller on {}, equal on {}, larger on {}",
        ladder_wins.0, ladder_wins.1, ladder_wins.2
    );
}
