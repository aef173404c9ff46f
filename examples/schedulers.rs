//! Measures the saturation schedulers (`sampling`, `mcts`) on the blocks that hit a limit,
//! and writes the table of docs/schedulers.md:
//! `cargo run --release --example schedulers -- [--doc docs/schedulers.md] [FILTER...]`.
//!
//! The corpus is what the run-time optimizer really compiles: the peer kernels
//! (../shared/bench/peers/kernels, one repetition, no warm-up, default sizes), the programs of
//! ../shared/data/programs and the drivers of ../shared/data/systemds-scripts (with
//! `--lib builtin`), each run once with a recording optimizer (`Optimizer::record`).
//!
//! First the work rate: every distinct block is saturated by sampling under the run-time
//! node and iteration limits without a work limit, and the e-matching work it counts
//! (`saturate::runner::Work`) is divided by the processor time it took; this is what sizes
//! the built-in work limits (`RUN_TIME_WORK`, `saturate::runner::WORK`) to the old time limits.
//!
//! Then every block whose sampling saturation stops at the node or work limit under the
//! run-time limits is compiled by both schedulers under two budgets:
//!
//! * equal node budget: the run-time node and iteration limits (6,000 nodes and 12
//!   iterations, scaled by the number of outputs as `Optimizer::plan` does), no work limit;
//! * equal time budget: the run-time limits themselves, whose work limit (`RUN_TIME_WORK`)
//!   stands for the time: both schedulers get the same deterministic work.
//!
//! For each: the plan's estimated cost and the compile time (processor time of saturation +
//! extraction); where the two plans of a budget differ, their measured run times (median of
//! five evaluations on random inputs of the block's shapes and densities, processor time);
//! and the smallest node budget on a ladder at which each scheduler finds a plan as cheap as
//! sampling's at 20,000 nodes without a work limit ("today's best"). A summary and the
//! decision follow. Arguments other than `--doc` filter the programs by name.

use spores::fuzz::thread_time;
use spores::optimize::RUN_TIME_WORK;
use spores::optimize::{compile, Input, Optimizer, Recorded};
use spores::raise::{eval_plan_traced, Val};
use spores::runtime::kernels::{rand_matrix, RandSpec};
use spores::saturate::{Limits, Scheduler};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    /// processor time of saturation and extraction
    ms: f64,
    stop: String,
    work: usize,
    plan: Option<spores::optimize::Plan>,
}

fn run(b: &Recorded, rules: &[spores::saturate::Rule], limits: &Limits) -> Outcome {
    let opts = spores::extract::Options {
        time_limit: Duration::from_millis(500),
        ..Default::default()
    };
    let t = thread_time();
    let (plan, c) = compile(&b.term, &b.roots, &b.inputs, rules, limits, &opts, None);
    Outcome {
        cost: plan.as_ref().map_or(c.written_cost, |p| p.cost),
        ms: thread_time().saturating_sub(t).as_secs_f64() * 1e3,
        stop: c.report.stop.clone(),
        work: c.report.work,
        plan,
    }
}

/// The safety net of the measurements: far above any run here, so that every plan measured
/// is decided by work counts.
const SAFETY: Duration = Duration::from_secs(30);

/// The limits of a budget: `nodes` per output (scaled as `Optimizer::plan` scales them), no
/// work limit.
fn budget(b: &Recorded, nodes: usize, iters: usize, s: Scheduler) -> Limits {
    let extra = b.roots.len().clamp(1, 4) - 1;
    Limits {
        nodes: nodes + nodes * 2 * extra / 5,
        work: 0,
        time: SAFETY,
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

/// The median of five evaluations of a plan (or of the block as written), in ms of
/// processor time.
fn time_plan(b: &Recorded, o: &Outcome, vals: &HashMap<egg::Symbol, Val>) -> Option<f64> {
    let (expr, roots, unordered) = match &o.plan {
        Some(p) => (&p.expr, &p.roots, &p.unordered[..]),
        None => (&b.term, &b.roots, &[][..]),
    };
    let mut ts = Vec::new();
    for _ in 0..5 {
        let t = thread_time();
        eval_plan_traced(expr, roots, unordered, vals, None).ok()?;
        ts.push(thread_time().saturating_sub(t).as_secs_f64() * 1e3);
    }
    ts.sort_by(f64::total_cmp);
    Some(ts[2])
}

/// Equal costs (within 1e-9 relative; two infinite costs are equal).
fn same(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// Per budget: mcts cheaper, equal, dearer; compile ms of sampling and of mcts.
#[derive(Default)]
struct Tally {
    cheaper: usize,
    equal: usize,
    dearer: usize,
    same_and_faster: usize,
    ms_sampling: f64,
    ms_mcts: f64,
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let doc = args.iter().position(|a| a == "--doc").map(|k| {
        let path = args.get(k + 1).cloned().unwrap_or_default();
        args.drain(k..(k + 2).min(args.len()));
        PathBuf::from(path)
    });
    let rate_only = args.iter().any(|a| a == "--rate");
    args.retain(|a| a != "--rate");
    let filters = args;
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
    let mut md = String::new();
    let _ = writeln!(
        md,
        "<!-- generated by `cargo run --release --example schedulers -- --doc docs/schedulers.md`; \
         the decision at the end is written by hand -->\n"
    );
    let _ = writeln!(
        md,
        "{} distinct blocks compiled at run time.\n",
        blocks.len()
    );
    // the work rate: sampling at the run-time node and iteration limits, no work limit
    let (mut work, mut ms, mut at_time) = (0usize, 0f64, 0);
    // the most work per output of a run that took at most 100 ms per output (the old
    // run-time time limit)
    let mut fast = (0usize, 0f64);
    for (_, b) in &blocks {
        let o = run(
            b,
            &rules,
            &budget(b, 6000, b.limits.iters, Scheduler::Sampling),
        );
        work += o.work;
        ms += o.ms;
        at_time += usize::from(o.stop == "time limit");
        let outputs = b.roots.len().clamp(1, 4);
        if o.ms <= 100.0 * outputs as f64 && o.work / outputs > fast.0 {
            fast = (o.work / outputs, o.ms);
        }
    }
    let rate = work as f64 / ms.max(1e-9);
    let _ = writeln!(
        md,
        "Work rate: sampling at the run-time node and iteration limits (no work limit) counted \
         {work} units of e-matching work in {ms:.0} ms of processor time (saturation and \
         extraction) over these blocks: {rate:.0} units/ms, so `RUN_TIME_WORK` = \
         {RUN_TIME_WORK} is {:.0} ms and `WORK` = {} is {:.0} ms. ({at_time} runs ended at the \
         {SAFETY:?} safety net.) The most work per output of a run that took at most 100 ms per \
         output (the old run-time limit): {} units (in {:.0} ms).\n",
        RUN_TIME_WORK as f64 / rate,
        spores::saturate::runner::WORK,
        spores::saturate::runner::WORK as f64 / rate,
        fast.0,
        fast.1,
    );
    eprintln!("{md}");
    if rate_only {
        return;
    }
    let ladder = [1000, 2000, 3000, 5000, 8000, 12000, 20000];
    let _ = writeln!(
        md,
        "Costs are the plan's estimated cost (as written when no plan is cheaper), ms the \
         processor time of saturation + extraction. `nodes`: equal node budget (run-time node \
         and iteration limits, no work limit); `time`: equal time budget (the run-time limits, \
         whose work limit stands for the time). min nodes: the smallest budget of \
         {ladder:?} at which each finds sampling's cost at 20,000 nodes. run ms: median \
         processor time of five runs of the two plans (sampling/mcts), where they differ.\n"
    );
    let _ = writeln!(
        md,
        "| block | roots | nodes: sampling | nodes: mcts | time: sampling | time: mcts | \
         min nodes sampling | min nodes mcts | run ms sampling/mcts |\n\
         |---|---|---|---|---|---|---|---|---|"
    );
    let mut tallies: HashMap<&str, Tally> = HashMap::new();
    let mut ladder_wins = (0, 0, 0);
    let mut hit = 0;
    for (name, b) in &blocks {
        let rt = |s| Limits {
            scheduler: s,
            ..b.limits.clone()
        };
        let t_s = run(b, &rules, &rt(Scheduler::Sampling));
        if t_s.stop != "node limit" && t_s.stop != "work limit" {
            continue;
        }
        hit += 1;
        let t_m = run(b, &rules, &rt(Scheduler::Mcts));
        let n_s = run(
            b,
            &rules,
            &budget(b, 6000, b.limits.iters, Scheduler::Sampling),
        );
        let n_m = run(b, &rules, &budget(b, 6000, b.limits.iters, Scheduler::Mcts));
        let target = run(b, &rules, &budget(b, 20_000, 30, Scheduler::Sampling)).cost;
        let smallest = |s: Scheduler| {
            ladder.iter().copied().find(|&n| {
                let o = run(b, &rules, &budget(b, n, 30, s));
                o.cost <= target * (1.0 + 1e-9)
            })
        };
        let (ms_, mm) = (smallest(Scheduler::Sampling), smallest(Scheduler::Mcts));
        match (ms_, mm) {
            (Some(a), Some(c)) if c < a => ladder_wins.0 += 1,
            (None, Some(_)) => ladder_wins.0 += 1,
            (Some(a), Some(c)) if c == a => ladder_wins.1 += 1,
            (None, None) => ladder_wins.1 += 1,
            _ => ladder_wins.2 += 1,
        }
        let mut timings = Vec::new();
        let mut vals = None;
        for (tag, s, m) in [("nodes", &n_s, &n_m), ("time", &t_s, &t_m)] {
            let e = tallies.entry(tag).or_default();
            if m.cost < s.cost * (1.0 - 1e-9) {
                e.cheaper += 1;
            } else if same(m.cost, s.cost) {
                e.equal += 1;
                e.same_and_faster += usize::from(m.ms < s.ms);
            } else {
                e.dearer += 1;
            }
            e.ms_sampling += s.ms;
            e.ms_mcts += m.ms;
            if !same(m.cost, s.cost) {
                let v = vals.get_or_insert_with(|| values(b));
                let fmt = |x: Option<f64>| x.map_or("err".to_string(), |t| format!("{t:.2}"));
                timings.push(format!(
                    "{tag}: {}/{}",
                    fmt(time_plan(b, s, v)),
                    fmt(time_plan(b, m, v))
                ));
            }
        }
        let nodes = |x: Option<usize>| x.map_or(">20000".to_string(), |n| n.to_string());
        let cell = |o: &Outcome| format!("{:.4e} / {:.0}", o.cost, o.ms);
        let row = format!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} |",
            b.roots.len(),
            cell(&n_s),
            cell(&n_m),
            cell(&t_s),
            cell(&t_m),
            nodes(ms_),
            nodes(mm),
            timings.join("; ")
        );
        eprintln!("{row}");
        let _ = writeln!(md, "{row}");
    }
    let _ = writeln!(
        md,
        "\n{hit} blocks stop at the node or work limit under the run-time limits.\n"
    );
    for tag in ["nodes", "time"] {
        if let Some(t) = tallies.get(tag) {
            let _ = writeln!(
                md,
                "- {tag}: mcts cheaper on {}, equal on {} (of which faster to compile on {}), \
                 dearer on {}; compile time sampling {:.0} ms, mcts {:.0} ms ({:.1}x)",
                t.cheaper,
                t.equal,
                t.same_and_faster,
                t.dearer,
                t.ms_sampling,
                t.ms_mcts,
                t.ms_mcts / t.ms_sampling.max(1e-9)
            );
        }
    }
    let _ = writeln!(
        md,
        "- smallest node budget reaching sampling's cost at 20,000 nodes: mcts smaller on {}, \
         equal on {}, larger on {}",
        ladder_wins.0, ladder_wins.1, ladder_wins.2
    );
    match doc {
        Some(path) => {
            // keep the hand-written decision (from its heading on) of an existing document
            let old = std::fs::read_to_string(&path).unwrap_or_default();
            let decision = old
                .find("\n## Decision")
                .map_or(String::new(), |k| old[k..].to_string());
            let text = format!("# Saturation schedulers: sampling and mcts\n\n{md}{decision}");
            if let Err(e) = std::fs::write(&path, text) {
                eprintln!("cannot write {}: {e}", path.display());
            }
        }
        None => print!("{md}"),
    }
}
