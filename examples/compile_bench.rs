//! Measures the run-time optimizer's compile work on the blocks a program really compiles,
//! without running the program again:
//!
//! * `cargo run --release --example compile_bench -- record OUT FILE.dml [--lib DIR] [k=v...]`
//!   runs the program once with a recording optimizer (`Optimizer::record`) and writes every
//!   block it compiled (term, roots, inputs with their shapes and non-zeros, limits) to OUT;
//! * `... -- replay IN [--reps N]` compiles each recorded block again, as `Optimizer::plan`
//!   does, and prints per block the plan's estimated cost, the cost as written, why
//!   saturation stopped, the processor time of the compiling thread and the wall time of the
//!   compilation (best of N each) and the plan itself, then the totals.
//!
//! The replay lifts the wall-clock safety nets (saturation's time limit, the extraction's
//! deadline) so that its plans are those of an idle machine and its instruction count is
//! reproducible under `valgrind --tool=callgrind` (the deterministic limits, nodes,
//! iterations and work, are kept). Two builds' replays of one recording can be diffed: the
//! plans must agree, or the new one must be no more expensive.

use egg::{FromOp, Id, Language, RecExpr};
use spores::fuzz::thread_time;
use spores::ir::Ir;
use spores::optimize::{compile, Input, Optimizer, Recorded};
use spores::saturate::{Limits, Scheduler};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("record") => record(&args[1..]),
        Some("replay") => replay(&args[1..]),
        _ => Err(
            "usage: compile_bench record OUT FILE.dml [--lib DIR] [k=v...] | \
                  compile_bench replay IN [--reps N] [--blocks i,j,...]"
                .into(),
        ),
    };
    if let Err(e) = r {
        eprintln!("compile_bench: {e}");
        std::process::exit(1);
    }
}

fn record(args: &[String]) -> Result<(), String> {
    let [out, file, rest @ ..] = args else {
        return Err("record needs OUT and FILE".into());
    };
    let mut lib = Vec::new();
    let mut script_args = HashMap::new();
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        if a == "--lib" {
            lib.push(std::path::PathBuf::from(
                it.next().ok_or("--lib needs a value")?,
            ));
        } else if let Some((k, v)) = a.split_once('=') {
            script_args.insert(k.to_string(), v.to_string());
        } else {
            return Err(format!("unknown argument {a}"));
        }
    }
    let source = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
    let program = spores::driver::compile_with_lib(&source, &script_args, &lib)
        .map_err(|e| format!("{e:?}"))?;
    let sink = Arc::new(Mutex::new(Vec::new()));
    let mut opt = Optimizer::new().map_err(|e| e.to_string())?;
    opt.record = Some(sink.clone());
    let mut printed = Vec::new();
    let mut exec =
        spores::exec::Executor::new(&mut printed, false).with_optimizer(opt, false, false);
    exec.run(&program).map_err(|e| format!("{e:?}"))?;
    drop(exec);
    let blocks = sink.lock().map_err(|e| e.to_string())?.clone();
    let mut text = String::new();
    for b in &blocks {
        write_block(&mut text, b);
    }
    std::fs::write(out, text).map_err(|e| format!("{out}: {e}"))?;
    eprintln!("{} blocks recorded in {out}", blocks.len());
    Ok(())
}

fn write_block(s: &mut String, b: &Recorded) {
    let l = &b.limits;
    let roots: Vec<String> = b
        .roots
        .iter()
        .map(|r| usize::from(*r).to_string())
        .collect();
    let _ = writeln!(
        s,
        "block {} {} {} {} {} {} {}",
        b.block,
        l.iters,
        l.nodes,
        l.work,
        l.matches_per_rule,
        l.seed,
        roots.join(",")
    );
    for (n, i) in &b.inputs {
        let _ = match i {
            Input::Matrix {
                rows,
                cols,
                nnz,
                finite,
            } => writeln!(s, "input {n} M {rows} {cols} {nnz} {finite}"),
            Input::Scalar(Some(v)) => writeln!(s, "input {n} S {}", v.to_bits()),
            Input::Scalar(None) => writeln!(s, "input {n} S -"),
            Input::FiniteScalar => writeln!(s, "input {n} F"),
        };
    }
    for node in b.term.as_ref() {
        let kids: Vec<String> = node
            .children()
            .iter()
            .map(|c| usize::from(*c).to_string())
            .collect();
        let _ = writeln!(s, "node {} {}", node, kids.join(" "));
    }
    let _ = writeln!(s, "end");
}

fn read_blocks(text: &str) -> Result<Vec<Recorded>, String> {
    let mut out = Vec::new();
    let mut cur: Option<Recorded> = None;
    for (ln, line) in text.lines().enumerate() {
        let bad = || format!("line {}: {line}", ln + 1);
        let w: Vec<&str> = line.split(' ').collect();
        match w[0] {
            "block" => {
                let num = |i: usize| w.get(i).and_then(|x| x.parse::<u64>().ok()).ok_or_else(bad);
                let limits = Limits {
                    iters: num(2)? as usize,
                    nodes: num(3)? as usize,
                    work: num(4)? as usize,
                    time: Duration::from_secs(3600),
                    matches_per_rule: num(5)? as usize,
                    seed: num(6)?,
                    scheduler: Scheduler::Sampling,
                };
                let roots = w
                    .get(7)
                    .ok_or_else(bad)?
                    .split(',')
                    .map(|r| r.parse::<usize>().map(Id::from).map_err(|_| bad()))
                    .collect::<Result<Vec<Id>, String>>()?;
                cur = Some(Recorded {
                    block: num(1)? as usize,
                    term: RecExpr::default(),
                    roots,
                    inputs: vec![],
                    limits,
                });
            }
            "input" => {
                let b = cur.as_mut().ok_or_else(bad)?;
                let n = w.get(1).ok_or_else(bad)?.to_string();
                let num = |i: usize| {
                    w.get(i)
                        .and_then(|x| x.parse::<usize>().ok())
                        .ok_or_else(bad)
                };
                let i = match *w.get(2).ok_or_else(bad)? {
                    "M" => Input::Matrix {
                        rows: num(3)?,
                        cols: num(4)?,
                        nnz: num(5)?,
                        finite: *w.get(6).ok_or_else(bad)? == "true",
                    },
                    "S" if w.get(3) == Some(&"-") => Input::Scalar(None),
                    "S" => Input::Scalar(Some(f64::from_bits(
                        w.get(3)
                            .and_then(|x| x.parse::<u64>().ok())
                            .ok_or_else(bad)?,
                    ))),
                    "F" => Input::FiniteScalar,
                    _ => return Err(bad()),
                };
                b.inputs.push((n, i));
            }
            "node" => {
                let b = cur.as_mut().ok_or_else(bad)?;
                let op = w.get(1).ok_or_else(bad)?;
                let kids = w[2..]
                    .iter()
                    .filter(|x| !x.is_empty())
                    .map(|c| c.parse::<usize>().map(Id::from).map_err(|_| bad()))
                    .collect::<Result<Vec<Id>, String>>()?;
                let node = Ir::from_op(op, kids).map_err(|_| bad())?;
                b.term.add(node);
            }
            "end" => out.push(cur.take().ok_or_else(bad)?),
            _ => return Err(bad()),
        }
    }
    Ok(out)
}

fn replay(args: &[String]) -> Result<(), String> {
    let [file, rest @ ..] = args else {
        return Err("replay needs IN".into());
    };
    let mut reps = 1;
    let mut only: Option<Vec<usize>> = None;
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--reps" => {
                reps = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--reps needs a number")?
            }
            "--blocks" => {
                only = Some(
                    it.next()
                        .ok_or("--blocks needs a list")?
                        .split(',')
                        .filter_map(|v| v.parse().ok())
                        .collect(),
                )
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
    let blocks = read_blocks(&text)?;
    let opt = Optimizer::new().map_err(|e| e.to_string())?;
    let rules = spores::saturate::all_rules().map_err(|e| e.to_string())?;
    let opts = spores::extract::Options {
        time_limit: Duration::from_secs(3600),
        ..opt.extract.clone()
    };
    let mut total = 0.0;
    let mut total_wall = 0.0;
    let mut times = Vec::new();
    for (k, b) in blocks.iter().enumerate() {
        if only.as_ref().is_some_and(|o| !o.contains(&k)) {
            continue;
        }
        let mut best = f64::INFINITY;
        let mut best_wall = f64::INFINITY;
        let mut last = None;
        for _ in 0..reps {
            let (t, w) = (thread_time(), std::time::Instant::now());
            let r = compile(&b.term, &b.roots, &b.inputs, &rules, &b.limits, &opts, None);
            best = best.min((thread_time() - t).as_secs_f64() * 1e3);
            best_wall = best_wall.min(w.elapsed().as_secs_f64() * 1e3);
            last = Some(r);
        }
        total_wall += best_wall;
        let (plan, c) = last.expect("reps >= 1");
        total += best;
        times.push(best);
        let plan_text = match &plan {
            Some(p) => p
                .roots
                .iter()
                .map(|&r| spores::optimize::root_term(&p.expr, r).to_string())
                .collect::<Vec<_>>()
                .join(" ; "),
            None => "as written".into(),
        };
        println!(
            "#{k} block {} cost {:.6e} written {:.6e} {} iters {} nodes {} stop {} ms {:.2} wall {:.2}\n  {}",
            b.block,
            plan.as_ref().map_or(c.written_cost, |p| p.cost),
            c.written_cost,
            c.extractor,
            c.report.iterations,
            c.report.nodes,
            c.report.stop,
            best,
            best_wall,
            plan_text
        );
    }
    times.sort_by(f64::total_cmp);
    let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
    println!(
        "total {:.1} ms of this thread's processor time over {} blocks (median {:.2} ms), \
         {:.1} ms wall",
        total,
        times.len(),
        median,
        total_wall
    );
    Ok(())
}
