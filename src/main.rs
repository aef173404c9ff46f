//! The `spores` command line.

use clap::{Parser, Subcommand};
use spores::check::ScriptArgs;
use spores::diagnostics;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "spores",
    version,
    about = "Optimizing compiler and runtime for linear-algebra programs (a DML subset)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a .la program.
    Run {
        /// the program
        file: PathBuf,
        /// script arguments for `$name`, as name=value pairs
        #[arg(long, num_args = 1.., value_name = "NAME=VALUE")]
        nvargs: Vec<String>,
        /// print time and count per operation, and compile time per block, at the end
        #[arg(long)]
        stats: bool,
        /// run the program as written, without run-time optimization
        #[arg(long, conflicts_with_all = ["explain", "verify"])]
        no_opt: bool,
        /// print the plan chosen for each optimized statement to standard error
        #[arg(long)]
        explain: bool,
        /// also run each optimized statement as written and fail if they differ by more than
        /// 1e-9 relative
        #[arg(long)]
        verify: bool,
    },
    /// Prove rewrites by equality saturation: a TSV of id, method, lhs, rhs, shapes, note.
    Equiv {
        /// the cases file
        file: PathBuf,
        /// saturation time limit per case, in seconds
        #[arg(long, default_value_t = 1.0, value_parser = seconds)]
        time_limit: f64,
        /// print each proved case's derivation: one line per rewrite step, with its rule
        #[arg(long)]
        why: bool,
    },
    /// Optimize a .la program's basic blocks and show the plans.
    Opt {
        /// the program
        file: PathBuf,
        /// print each block's input, e-graph statistics and extracted plan with its cost
        #[arg(long)]
        explain: bool,
        /// write each statement's saturated e-graph as egraph-serialize JSON into DIR
        #[arg(long, value_name = "DIR")]
        dump_egraph: Option<PathBuf>,
        /// script arguments for `$name`, as name=value pairs
        #[arg(long, num_args = 1.., value_name = "NAME=VALUE")]
        nvargs: Vec<String>,
    },
    /// Extract the cheapest term from an e-graph in egraph-serialize JSON; one JSON line per
    /// extractor with the DAG and tree costs, the time and whether it is proven optimal.
    Extract {
        /// the e-graph
        file: PathBuf,
        /// greedy-tree, greedy-dag, ilp, ilp-acyclic, lp-round, or all
        #[arg(long, default_value = "ilp")]
        extractor: String,
        /// time budget per extractor, in seconds
        #[arg(long, default_value_t = 10.0, value_parser = seconds)]
        time_limit: f64,
    },
    /// Measure the cost model's weights (nanoseconds per unit of kernel work) on this
    /// machine and print them next to the built-in values.
    Calibrate,
    /// Fuzz the optimizer (differential) or the front end (robustness); for developers.
    #[command(hide = true)]
    Fuzz {
        /// the run's seed
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// how many programs (or robustness cases)
        #[arg(long, default_value_t = 1000)]
        count: u64,
        /// the index of the first program
        #[arg(long, default_value_t = 0)]
        first: u64,
        /// worker threads
        #[arg(long, default_value_t = 2)]
        threads: usize,
        /// do not shrink failures
        #[arg(long)]
        no_shrink: bool,
        /// print the program with index FIRST and stop
        #[arg(long)]
        show: bool,
        /// run the robustness fuzzer instead, with this source tree's examples and tests
        #[arg(long, value_name = "TREE")]
        robust: Option<PathBuf>,
    },
    /// Parse and check a .la program without running it.
    Check {
        /// the program
        file: PathBuf,
        /// script arguments for `$name`, as name=value pairs
        #[arg(long, num_args = 1.., value_name = "NAME=VALUE")]
        nvargs: Vec<String>,
    },
}

/// Exit code for errors in the program being run.
const PROGRAM_ERROR: u8 = 1;
/// Exit code for bad command lines and unreadable files.
const USAGE_ERROR: u8 = 2;

/// A closed pipe on standard output (`spores equiv ... | head`) ends the process quietly, as
/// for other command-line tools, instead of a panic in `println!` (Rust ignores SIGPIPE).
fn restore_sigpipe() {
    #[cfg(unix)]
    {
        extern "C" {
            fn signal(signum: i32, handler: usize) -> usize;
        }
        const SIGPIPE: i32 = 13;
        const SIG_DFL: usize = 0;
        // SAFETY: resets one signal's disposition to the default before any thread starts.
        unsafe {
            signal(SIGPIPE, SIG_DFL);
        }
    }
}

/// Creates `dir` if needed and checks that files can be written into it.
fn writable_dir(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(".spores-write-test");
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

/// A time limit in seconds: finite, non-negative, at most a year.
fn seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    spores::saturate::runner::seconds(v).map(|_| v)
}

/// Runs the command line on a thread with a large stack: checking, lowering and evaluation
/// recurse over expressions, and programs may nest up to `syntax::depth::MAX_DEPTH` levels.
fn main() -> ExitCode {
    restore_sigpipe();
    std::thread::Builder::new()
        .name("spores".into())
        .stack_size(1 << 30)
        .spawn(real_main)
        .map_or(ExitCode::FAILURE, |t| t.join().unwrap_or(ExitCode::FAILURE))
}

fn real_main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = spores::extract::cost::weights_from_env() {
        eprintln!("error: {e}");
        return ExitCode::from(USAGE_ERROR);
    }
    if let Err(e) = spores::saturate::Limits::from_env() {
        eprintln!("error: {e}");
        return ExitCode::from(USAGE_ERROR);
    }
    if let Command::Equiv {
        file,
        time_limit,
        why,
    } = &cli.command
    {
        return equiv(file, *time_limit, *why);
    }
    if let Command::Calibrate = &cli.command {
        return match spores::calibrate::calibrate(&mut std::io::stdout()) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(USAGE_ERROR)
            }
        };
    }
    if let Command::Fuzz {
        seed,
        count,
        first,
        threads,
        no_shrink,
        show,
        robust,
    } = &cli.command
    {
        return fuzz(
            *seed,
            *count,
            *first,
            *threads,
            !*no_shrink,
            *show,
            robust.as_deref(),
        );
    }
    if let Command::Extract {
        file,
        extractor,
        time_limit,
    } = &cli.command
    {
        return extract(file, extractor, *time_limit);
    }
    let (file, nvargs) = match &cli.command {
        Command::Run { file, nvargs, .. }
        | Command::Check { file, nvargs }
        | Command::Opt { file, nvargs, .. } => (file, nvargs),
        Command::Equiv { .. }
        | Command::Extract { .. }
        | Command::Calibrate
        | Command::Fuzz { .. } => {
            unreachable!("handled above")
        }
    };
    let args = match parse_nvargs(nvargs) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let source = match std::fs::read_to_string(file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot read '{}': {e}", file.display());
            return ExitCode::from(USAGE_ERROR);
        }
    };
    if let Command::Opt {
        dump_egraph: Some(dir),
        ..
    } = &cli.command
    {
        if let Err(e) = writable_dir(dir) {
            eprintln!("error: --dump-egraph {}: {e}", dir.display());
            return ExitCode::from(USAGE_ERROR);
        }
    }
    let name = file.display().to_string();
    let result = match &cli.command {
        Command::Check { .. } => spores::driver::compile(&source, &args).map(|_| None),
        Command::Opt {
            explain,
            dump_egraph,
            ..
        } => spores::driver::compile(&source, &args).map(|p| {
            let rules = spores::saturate::all_rules().expect("rule files are checked by the tests");
            let text =
                spores::explain::explain(&p, &rules, &Default::default(), dump_egraph.as_deref());
            if *explain {
                print!("{text}");
            }
            None
        }),
        Command::Equiv { .. }
        | Command::Extract { .. }
        | Command::Calibrate
        | Command::Fuzz { .. } => {
            unreachable!("handled above")
        }
        Command::Run {
            stats,
            no_opt,
            explain,
            verify,
            ..
        } => {
            let opts = spores::driver::RunOptions {
                stats: *stats,
                optimize: !*no_opt,
                verify: *verify,
                explain: *explain,
            };
            let stdout = std::io::stdout();
            let mut out = std::io::LineWriter::new(stdout.lock());
            let r = spores::driver::run_with(&source, &args, &mut out, &opts);
            drop(out);
            r.map(|report| {
                if let Some(text) = &report.explain {
                    eprint!("{text}");
                }
                if *verify {
                    eprintln!(
                        "verify: {} optimized statement runs, largest relative difference {:.3e}",
                        report.optimized_runs, report.max_rel_diff
                    );
                }
                report.stats
            })
        }
    };
    match result {
        Ok(stats) => {
            if let Some(s) = stats {
                eprint!("{s}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            let color = std::io::stderr().is_terminal();
            eprint!("{}", diagnostics::render(&e, &name, &source, color));
            ExitCode::from(PROGRAM_ERROR)
        }
    }
}

fn equiv(file: &std::path::Path, time_limit: f64, why: bool) -> ExitCode {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read '{}': {e}", file.display());
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let cases = match spores::equiv::read_cases(&text) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            return ExitCode::from(PROGRAM_ERROR);
        }
    };
    let rules = match spores::saturate::all_rules() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: broken rule file: {e}");
            return ExitCode::from(PROGRAM_ERROR);
        }
    };
    let limits = spores::saturate::Limits {
        time: std::time::Duration::from_secs_f64(time_limit),
        ..Default::default()
    };
    let mut proved = 0;
    for case in &cases {
        let o = spores::equiv::prove_with(case, &rules, &limits, why);
        let verdict = if o.proved { "proved" } else { "not-proved" };
        proved += usize::from(o.proved);
        match (&o.report, &o.error) {
            (Some(r), _) => println!(
                "{} {verdict} {:.1} ms, {} iterations, {} nodes, {} classes, {}",
                o.id,
                r.time.as_secs_f64() * 1e3,
                r.iterations,
                r.nodes,
                r.classes,
                r.stop
            ),
            (None, Some(e)) => println!("{} {verdict} ({e})", o.id),
            (None, None) => println!("{} {verdict}", o.id),
        }
        for step in &o.derivation {
            println!("  {step}");
        }
    }
    println!("proved {proved} of {}", cases.len());
    ExitCode::SUCCESS
}

fn extract(file: &std::path::Path, which: &str, time_limit: f64) -> ExitCode {
    use spores::extract::{serialized, Options, EXTRACTORS};
    let names: Vec<&str> = if which == "all" {
        EXTRACTORS.iter().map(|e| e.0).collect()
    } else if EXTRACTORS.iter().any(|e| e.0 == which) {
        vec![which]
    } else {
        let known: Vec<&str> = EXTRACTORS.iter().map(|e| e.0).collect();
        eprintln!(
            "error: unknown extractor '{which}' (expected all, {})",
            known.join(", ")
        );
        return ExitCode::from(USAGE_ERROR);
    };
    let g = match serialized::load(file) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(PROGRAM_ERROR);
        }
    };
    let opts = Options {
        time_limit: std::time::Duration::from_secs_f64(time_limit),
    };
    let mut code = ExitCode::SUCCESS;
    for name in names {
        let ex = spores::extract::by_name(name).expect("listed");
        let start = std::time::Instant::now();
        let result = ex.extract(&g, &opts);
        let micros = start.elapsed().as_micros();
        let valid = g.check(&result);
        if let Err(e) = &valid {
            eprintln!(
                "error: {name} on {}: no valid extraction: {e}",
                file.display()
            );
            code = ExitCode::from(PROGRAM_ERROR);
        }
        let line = serde_json::json!({
            "file": file.display().to_string(),
            "extractor": name,
            "dag_cost": valid.is_ok().then(|| g.dag_cost(&result)),
            "tree_cost": valid.is_ok().then(|| g.tree_cost(&result)),
            "micros": micros,
            "optimal": result.optimal && valid.is_ok(),
        });
        println!("{line}");
    }
    code
}

fn fuzz(
    seed: u64,
    count: u64,
    first: u64,
    threads: usize,
    shrink: bool,
    show: bool,
    robust: Option<&std::path::Path>,
) -> ExitCode {
    use spores::fuzz;
    if show {
        print!("{}", fuzz::program(seed, first).render());
        return ExitCode::SUCCESS;
    }
    if let Some(tree) = robust {
        let Ok(bin) = std::env::current_exe() else {
            eprintln!("error: cannot find the spores binary");
            return ExitCode::from(USAGE_ERROR);
        };
        let corpus = fuzz::robust::Corpus::from_tree(tree);
        let dir = std::env::temp_dir().join(format!("spores-robust-{}", std::process::id()));
        let rep = fuzz::robust::run(
            &bin,
            &corpus,
            seed,
            count,
            count * 10,
            &dir,
            std::time::Duration::from_secs(20),
        );
        let _ = std::fs::remove_dir_all(&dir);
        for f in &rep.failures {
            println!("FAILURE: {f}\n");
        }
        println!(
            "robust: {} subprocess cases (exit 0: {}, 1: {}, 2: {}), {} in-process front-end cases, {} failures",
            rep.cases,
            rep.exits[0],
            rep.exits[1],
            rep.exits[2],
            count * 10,
            rep.failures.len()
        );
        return if rep.failures.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(PROGRAM_ERROR)
        };
    }
    let opts = fuzz::Options {
        threads,
        ..Default::default()
    };
    let start = std::time::Instant::now();
    // failures are printed as they are found (a long run may be stopped), shrunk at the end
    let printed = std::sync::atomic::AtomicUsize::new(0);
    let progress = |_: u64, r: &fuzz::Report| {
        let done = printed.load(std::sync::atomic::Ordering::Relaxed);
        for f in r.failures.iter().skip(done) {
            eprintln!(
                "found: program {} (seed {seed}): {:?} in the {} run: {}",
                f.index, f.kind, f.mode, f.detail
            );
        }
        printed.store(r.failures.len(), std::sync::atomic::Ordering::Relaxed);
        if r.programs % 500 == 0 {
            eprintln!(
                "fuzz: {} programs, {} failures, {:.0} s",
                r.programs,
                r.failures.len(),
                start.elapsed().as_secs_f64()
            );
        }
    };
    let rep = fuzz::run(seed, first, count, &opts, &progress);
    for f in &rep.failures {
        println!(
            "FAILURE: program {} (seed {seed}): {:?} in the {} run: {}",
            f.index, f.kind, f.mode, f.detail
        );
        let program = if shrink {
            let fails = |p: &fuzz::gen::Program| fuzz::check(p, &opts).err().map(|e| e.0);
            fuzz::shrink::shrink(&f.program, f.kind, 2000, &fails)
        } else {
            f.program.clone()
        };
        if shrink {
            if let Err((k, mode, d)) = fuzz::check(&program, &opts) {
                println!("shrunk: {k:?} in the {mode} run: {d}");
            }
        }
        println!(
            "--- program{} ---\n{}---",
            if shrink { " (shrunk)" } else { "" },
            program.render()
        );
    }
    println!(
        "fuzz: seed {seed}, programs {first}..{}: {} run, {} values compared, {} skipped as unstable, {} failures, {:.1} s",
        first + count,
        rep.programs,
        rep.compared,
        rep.skipped,
        rep.failures.len(),
        start.elapsed().as_secs_f64()
    );
    if rep.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(PROGRAM_ERROR)
    }
}

fn parse_nvargs(pairs: &[String]) -> Result<ScriptArgs, String> {
    pairs
        .iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(format!("--nvargs expects NAME=VALUE, found '{p}'")),
        })
        .collect()
}
