//! The `spores` command line.

use clap::{Parser, Subcommand};
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
    /// Run a .la or .dml program.
    #[command(after_help = SCRIPT_ARGS_HELP)]
    Run {
        /// the program
        file: PathBuf,
        /// a directory of DML library scripts (NAME.dml defining m_NAME), searched for calls
        /// of functions that are not builtins; repeatable, before those of SPORES_LIB
        #[arg(long = "lib", value_name = "DIR")]
        lib: Vec<PathBuf>,
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
        /// 1e-9 of the largest value the statements computed
        #[arg(long)]
        verify: bool,
        /// write each plan chosen at run time into DIR as a Graphviz DOT file
        /// (block<B>-<var>.dot; render with `dot -Tsvg`)
        #[arg(long, value_name = "DIR", conflicts_with = "no_opt")]
        dot: Option<PathBuf>,
        /// where to run: spores's own runtime, or the program emitted as DML (`spores emit`)
        /// and run by Apache SystemDS on this machine (systemds) or on Spark in local mode
        /// (spark); see scripts/install-systemds.sh. With `--no-opt`, SystemDS runs the
        /// program as written (not emitted), to compare with the emitted program
        #[arg(long, value_enum, default_value = "spores", conflicts_with = "verify")]
        engine: Engine,
        /// the saturation scheduler: sampling or mcts (default: SPORES_SCHEDULER, else
        /// sampling)
        #[arg(long, value_name = "NAME", value_parser = scheduler)]
        scheduler: Option<spores::saturate::Scheduler>,
        /// compile a run of statements once its estimated cost as written, over its runs
        /// with the same input shapes, reaches MS milliseconds; until then it runs as written
        /// (default 10; 0 compiles everything on its first run, the default with --explain,
        /// --verify and --dot)
        #[arg(long, value_name = "MS", value_parser = budget, conflicts_with = "no_opt")]
        compile_budget: Option<f64>,
    },
    /// Write the program as DML with each run of statements whose shapes are known before
    /// running replaced by its optimized plan, for Apache SystemDS (one node or Spark).
    #[command(after_help = SCRIPT_ARGS_HELP)]
    Emit {
        /// the program
        file: PathBuf,
        /// a directory of DML library scripts (NAME.dml defining m_NAME), searched for calls
        /// of functions that are not builtins; repeatable, before those of SPORES_LIB
        #[arg(long = "lib", value_name = "DIR")]
        lib: Vec<PathBuf>,
        /// the shape (and non-zeros) of a variable assigned by read(), when its file has no
        /// .mtd or Matrix Market header; repeatable
        #[arg(long = "shape", value_name = "NAME=ROWSxCOLS[:NNZ]")]
        shapes: Vec<String>,
        /// write the DML here (default: standard output)
        #[arg(short = 'o', long = "output", value_name = "OUT.dml")]
        output: Option<PathBuf>,
        /// print each run of statements with its inputs and plan (fused operators by name),
        /// or why it was kept as written, to standard error
        #[arg(long)]
        explain: bool,
        /// where SystemDS will run the emitted file: on one node, or on Spark (`-exec
        /// spark`), where each operator on a matrix is a Spark instruction with a fixed cost,
        /// so a plan must also not run more of them than it saves
        #[arg(long, value_enum, default_value = "systemds")]
        engine: EmitEngine,
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
        /// the saturation scheduler: sampling or mcts (default: SPORES_SCHEDULER, else
        /// sampling)
        #[arg(long, value_name = "NAME", value_parser = scheduler)]
        scheduler: Option<spores::saturate::Scheduler>,
    },
    /// Optimize a .la program's basic blocks and show the plans.
    #[command(after_help = SCRIPT_ARGS_HELP)]
    Opt {
        /// the program
        file: PathBuf,
        /// a directory of DML library scripts (NAME.dml defining m_NAME), searched for calls
        /// of functions that are not builtins; repeatable, before those of SPORES_LIB
        #[arg(long = "lib", value_name = "DIR")]
        lib: Vec<PathBuf>,
        /// explain each plan: the statements as written, the estimated inputs, the estimated
        /// time, and what saturation and extraction did
        #[arg(long)]
        explain: bool,
        /// write each plan into DIR as a Graphviz DOT file (block<B>-<var>.dot; render with
        /// `dot -Tsvg`)
        #[arg(long, value_name = "DIR")]
        dot: Option<PathBuf>,
        /// write each statement's saturated e-graph as egraph-serialize JSON into DIR
        #[arg(long, value_name = "DIR")]
        dump_egraph: Option<PathBuf>,
        /// show, under each plan, its derivation from the statement as written (one rewrite
        /// step per line)
        #[arg(long)]
        why: bool,
        /// the saturation scheduler: sampling or mcts (default: SPORES_SCHEDULER, else
        /// sampling)
        #[arg(long, value_name = "NAME", value_parser = scheduler)]
        scheduler: Option<spores::saturate::Scheduler>,
    },
    /// Extract the cheapest term from an e-graph in egraph-serialize JSON (egg's, egglog's,
    /// extraction-gym's); one JSON line per extractor with the objective, DAG and tree costs,
    /// the time, whether it is proven optimal, and the lower bound and gap when known.
    Extract(ExtractArgs),
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
    #[command(after_help = SCRIPT_ARGS_HELP)]
    Check {
        /// the program
        file: PathBuf,
        /// a directory of DML library scripts (NAME.dml defining m_NAME), searched for calls
        /// of functions that are not builtins; repeatable, before those of SPORES_LIB
        #[arg(long = "lib", value_name = "DIR")]
        lib: Vec<PathBuf>,
    },
}

/// How script arguments are given (SystemDS's command line).
const SCRIPT_ARGS_HELP: &str = "Script arguments, as SystemDS takes them, before or after FILE:
  -args V1 V2 ...        values of $1, $2, ... (--args also works)
  -nvargs NAME=VALUE ... values of $NAME (--nvargs also works)
SystemDS's -f FILE, -s SCRIPT, -stats, -explain and -exec singlenode are accepted too, and its
settings that change nothing here (-seed, -mem, -debug, -gpu, -lineage, -config FILE, ...) are
ignored with a warning, so `spores run` can replace `systemds` or `java ... DMLScript` in a
script; `spores run -exec spark` means `--engine spark`.";

/// Where `spores run` runs a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Engine {
    /// spores's runtime, optimizing at run time
    Spores,
    /// Apache SystemDS on this machine
    Systemds,
    /// Apache SystemDS on Spark in local mode
    Spark,
}

/// Where `spores emit`'s output will run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum EmitEngine {
    /// Apache SystemDS on one node
    Systemds,
    /// Apache SystemDS on Spark
    Spark,
}

#[derive(clap::Args)]
struct ExtractArgs {
    /// the e-graph
    file: PathBuf,
    /// greedy-tree, greedy-dag, ilp, ilp-levels, lp-round, or all
    #[arg(long, default_value = "ilp")]
    extractor: String,
    /// time budget per extractor, in seconds
    #[arg(long, default_value_t = 10.0, value_parser = seconds)]
    time_limit: f64,
    /// a root e-class, by id or by an egglog `let` name (repeatable; replaces the file's
    /// roots). Without it and without roots in the file, the classes no node points to
    #[arg(long = "root", value_name = "CLASS")]
    roots: Vec<String>,
    /// write the extracted selection as egraph-serialize JSON (the chosen node of each class
    /// the term reaches, the roots, and "choices": {class: node}); with `--extractor all`,
    /// the best valid result
    #[arg(long, value_name = "OUT.json")]
    out: Option<PathBuf>,
    /// add the extracted term, as s-expressions with shared sub-terms named once, to the
    /// JSON line ("term")
    #[arg(long)]
    term: bool,
    /// a JSON object mapping an op to its cost; listed ops take that cost, others keep the
    /// file's
    #[arg(long, value_name = "TABLE.json")]
    cost_model: Option<PathBuf>,
    /// cost (the DAG cost) or op-types (the summed weights of the distinct ops used, ties
    /// broken by cost; only the ILP extractors optimize it)
    #[arg(long, default_value = "cost", value_parser = ["cost", "op-types"])]
    objective: String,
    /// for op-types: a JSON object mapping an op to its weight (default 1)
    #[arg(long, value_name = "W.json")]
    op_weights: Option<PathBuf>,
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

/// The library directories: `--lib` in order, then the colon-separated `SPORES_LIB`.
fn lib_dirs(cli: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = cli.to_vec();
    if let Some(env) = std::env::var_os("SPORES_LIB") {
        dirs.extend(std::env::split_paths(&env).filter(|p| !p.as_os_str().is_empty()));
    }
    dirs
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

/// A scheduler's name (`--scheduler`).
fn scheduler(s: &str) -> Result<spores::saturate::Scheduler, String> {
    spores::saturate::Scheduler::parse(s)
}

/// `--compile-budget MS`: a finite number of milliseconds, at least 0.
fn budget(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "expected a number of milliseconds, at least 0, found '{s}'"
        )),
    }
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
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let norm = match spores::cli::normalize(&argv) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    for w in &norm.warnings {
        eprintln!("warning: {w}");
    }
    if norm.clean {
        // SystemDS's -clean removes its working directories and runs nothing; spores has none
        return ExitCode::SUCCESS;
    }
    let cli = Cli::parse_from(&norm.argv);
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
        scheduler,
    } = &cli.command
    {
        return equiv(file, *time_limit, *why, *scheduler);
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
    if let Command::Extract(args) = &cli.command {
        return extract(args);
    }
    let (file, lib) = match &cli.command {
        Command::Run { file, lib, .. }
        | Command::Check { file, lib }
        | Command::Emit { file, lib, .. }
        | Command::Opt { file, lib, .. } => (file, lib_dirs(lib)),
        Command::Equiv { .. } | Command::Extract(_) | Command::Calibrate | Command::Fuzz { .. } => {
            unreachable!("handled above")
        }
    };
    let args = norm.values.to_map();
    let read = match &norm.script {
        Some(text) => Ok(text.clone()),
        None => std::fs::read_to_string(file),
    };
    let source = match read {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot read '{}': {e}", file.display());
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let dirs = match &cli.command {
        Command::Opt {
            dump_egraph, dot, ..
        } => vec![("--dump-egraph", dump_egraph), ("--dot", dot)],
        Command::Run { dot, .. } => vec![("--dot", dot)],
        _ => vec![],
    };
    for (flag, dir) in dirs {
        if let Some(dir) = dir {
            if let Err(e) = writable_dir(dir) {
                eprintln!("error: {flag} {}: {e}", dir.display());
                return ExitCode::from(USAGE_ERROR);
            }
        }
    }
    let name = file.display().to_string();
    match &cli.command {
        Command::Emit {
            shapes,
            output,
            explain,
            engine,
            ..
        } => {
            let engine = match engine {
                EmitEngine::Spark => spores::emit::systemds::Engine::Spark,
                EmitEngine::Systemds => spores::emit::systemds::Engine::SingleNode,
            };
            return emit(
                &source,
                &name,
                &norm.values,
                &lib,
                shapes,
                output.as_deref(),
                *explain,
                engine,
            );
        }
        Command::Run {
            engine: engine @ (Engine::Systemds | Engine::Spark),
            explain,
            stats,
            no_opt,
            ..
        } => {
            let engine = match engine {
                Engine::Spark => spores::emit::systemds::Engine::Spark,
                _ => spores::emit::systemds::Engine::SingleNode,
            };
            let how = SystemdsRun {
                explain: *explain,
                stats: *stats,
                as_written: *no_opt,
            };
            return run_systemds(&source, &name, &norm.values, &lib, engine, how);
        }
        _ => {}
    }
    let program = match spores::driver::compile_with_lib(&source, &args, &lib) {
        Ok(p) => p,
        Err(e) => {
            let color = std::io::stderr().is_terminal();
            eprint!("{}", diagnostics::render(&e, &name, &source, color));
            return ExitCode::from(PROGRAM_ERROR);
        }
    };
    for w in spores::driver::unused_args(&program, &args) {
        eprintln!("warning: {w}");
    }
    let result = match &cli.command {
        Command::Check { .. } => Ok(None),
        Command::Emit { .. } => unreachable!("handled above"),
        Command::Opt {
            explain,
            dump_egraph,
            why,
            scheduler,
            dot,
            ..
        } => {
            let mut optimizer =
                spores::optimize::Optimizer::new().expect("rule files are checked by the tests");
            if let Some(s) = scheduler {
                optimizer.limits.scheduler = *s;
            }
            let opts = spores::explain::OptOptions {
                explain: *explain,
                dump: dump_egraph.as_deref(),
                why: *why,
                dot: dot.as_deref(),
            };
            print!("{}", spores::explain::explain(&program, &optimizer, &opts));
            Ok(None)
        }
        Command::Equiv { .. } | Command::Extract(_) | Command::Calibrate | Command::Fuzz { .. } => {
            unreachable!("handled above")
        }
        Command::Run {
            stats,
            no_opt,
            explain,
            verify,
            dot,
            scheduler,
            compile_budget,
            ..
        } => {
            // the plans are what --explain, --verify and --dot are for: every one compiled
            let diagnose = *explain || *verify || dot.is_some();
            let opts = spores::driver::RunOptions {
                compile_budget_ms: compile_budget.unwrap_or(if diagnose {
                    0.0
                } else {
                    spores::optimize::DEFAULT_COMPILE_BUDGET_MS
                }),
                stats: *stats,
                optimize: !*no_opt,
                verify: *verify,
                explain: *explain,
                dot: dot.clone(),
                lib: lib.clone(),
                scheduler: *scheduler,
            };
            let stdout = std::io::stdout();
            let mut out = std::io::LineWriter::new(stdout.lock());
            let r = spores::driver::execute(&program, &mut out, &opts);
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

/// `spores emit`: the program as optimized DML, to a file or standard output.
#[allow(clippy::too_many_arguments)]
fn emit(
    source: &str,
    name: &str,
    values: &spores::cli::ScriptValues,
    lib: &[PathBuf],
    shapes: &[String],
    output: Option<&std::path::Path>,
    explain: bool,
    engine: spores::emit::systemds::Engine,
) -> ExitCode {
    let mut opts = spores::emit::Options {
        lib: lib.to_vec(),
        min_gain: spores::emit::MIN_GAIN,
        copy_gain: spores::emit::LIBRARY_COPY_GAIN,
        engine,
        ..Default::default()
    };
    for s in shapes {
        match spores::emit::parse_shape(s) {
            Ok(h) => opts.shapes.push(h),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(USAGE_ERROR);
            }
        }
    }
    let emitted = match spores::emit::emit(source, &values.to_map(), &opts) {
        Ok(e) => e,
        Err(e) => {
            let color = std::io::stderr().is_terminal();
            eprint!("{}", diagnostics::render(&e, name, source, color));
            return ExitCode::from(PROGRAM_ERROR);
        }
    };
    if explain {
        eprint!("{}", emitted.explain);
    }
    match output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &emitted.dml) {
                eprintln!("error: cannot write '{}': {e}", path.display());
                return ExitCode::from(USAGE_ERROR);
            }
        }
        None => print!("{}", emitted.dml),
    }
    ExitCode::SUCCESS
}

/// How `spores run --engine systemds|spark` runs a program.
struct SystemdsRun {
    /// print the emitter's explanation to standard error
    explain: bool,
    /// pass `-stats` to SystemDS
    stats: bool,
    /// run the program as written (`--no-opt`), not emitted
    as_written: bool,
}

/// `spores run --engine systemds|spark`: emits the program to a temporary file (or, with
/// `--no-opt`, copies it as written) and runs it in SystemDS, its output streamed, its exit
/// code returned.
fn run_systemds(
    source: &str,
    name: &str,
    values: &spores::cli::ScriptValues,
    lib: &[PathBuf],
    engine: spores::emit::systemds::Engine,
    how: SystemdsRun,
) -> ExitCode {
    let SystemdsRun {
        explain,
        stats,
        as_written,
    } = how;
    use spores::emit::systemds;
    let Some(home) = systemds::home() else {
        eprintln!(
            "error: SystemDS is not installed (or java does not run): run \
             scripts/install-systemds.sh, or set SYSTEMDS_HOME"
        );
        return ExitCode::from(USAGE_ERROR);
    };
    let opts = spores::emit::Options {
        lib: lib.to_vec(),
        min_gain: spores::emit::MIN_GAIN,
        copy_gain: spores::emit::LIBRARY_COPY_GAIN,
        engine,
        ..Default::default()
    };
    let emitted = if as_written {
        Ok(spores::emit::Emitted {
            dml: source.to_string(),
            ..Default::default()
        })
    } else {
        spores::emit::emit(source, &values.to_map(), &opts)
    };
    let emitted = match emitted {
        Ok(e) => e,
        Err(e) => {
            let color = std::io::stderr().is_terminal();
            eprint!("{}", diagnostics::render(&e, name, source, color));
            return ExitCode::from(PROGRAM_ERROR);
        }
    };
    if explain {
        eprint!("{}", emitted.explain);
    }
    let work = std::env::temp_dir().join(format!("spores-systemds-{}", std::process::id()));
    let program = work.join("program.dml");
    let mut args: Vec<String> = Vec::new();
    if !values.named.is_empty() {
        args.push("-nvargs".into());
        args.extend(values.named.iter().map(|(k, v)| format!("{k}={v}")));
    }
    if !values.positional.is_empty() {
        args.push("-args".into());
        args.extend(values.positional.iter().cloned());
    }
    if stats {
        args.push("-stats".into());
    }
    let status = std::fs::create_dir_all(&work)
        .and_then(|_| std::fs::write(&program, &emitted.dml))
        .map_err(|e| format!("{}: {e}", program.display()))
        .and_then(|_| systemds::command(&home, engine, &program, &args, &work))
        .and_then(|mut c| stream(&mut c).map_err(|e| format!("cannot run java: {e}")));
    let _ = std::fs::remove_dir_all(&work);
    match status {
        Ok((s, failed)) => match s.code() {
            // SystemDS 3.4 exits with 0 after reporting an error
            Some(0) if failed => ExitCode::from(PROGRAM_ERROR),
            Some(0) => ExitCode::SUCCESS,
            Some(c) => ExitCode::from(u8::try_from(c & 0xff).unwrap_or(PROGRAM_ERROR)),
            None => ExitCode::from(PROGRAM_ERROR),
        },
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(USAGE_ERROR)
        }
    }
}

/// Runs a command, copying its standard output line by line as it comes; returns its exit
/// status and whether it printed SystemDS's error banner ("An Error Occurred").
fn stream(c: &mut std::process::Command) -> std::io::Result<(std::process::ExitStatus, bool)> {
    use std::io::{BufRead, Write};
    let mut child = c.stdout(std::process::Stdio::piped()).spawn()?;
    let mut failed = false;
    if let Some(out) = child.stdout.take() {
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        for line in std::io::BufReader::new(out).lines() {
            let line = line?;
            failed |= line.contains("An Error Occurred");
            writeln!(lock, "{line}")?;
            lock.flush()?;
        }
    }
    Ok((child.wait()?, failed))
}

fn equiv(
    file: &std::path::Path,
    time_limit: f64,
    why: bool,
    scheduler: Option<spores::saturate::Scheduler>,
) -> ExitCode {
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
    let defaults = spores::saturate::Limits::default();
    let limits = spores::saturate::Limits {
        time: std::time::Duration::from_secs_f64(time_limit),
        scheduler: scheduler.unwrap_or(defaults.scheduler),
        ..defaults
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

/// Reads an op table (`--cost-model`, `--op-weights`); an unreadable or invalid one is a usage
/// error.
fn read_op_table(flag: &str, path: &std::path::Path) -> Result<spores::extract::OpTable, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{flag}: cannot read {}: {e}", path.display()))?;
    spores::extract::parse_op_table(&text).map_err(|e| format!("{flag} {}: {e}", path.display()))
}

fn extract(args: &ExtractArgs) -> ExitCode {
    use spores::extract::{serialized, Objective, OpWeights, Options, EXTRACTORS};
    let file = &args.file;
    let usage = |msg: String| {
        eprintln!("error: {msg}");
        ExitCode::from(USAGE_ERROR)
    };
    let which = args.extractor.as_str();
    let names: Vec<&str> = if which == "all" {
        EXTRACTORS.iter().map(|e| e.0).collect()
    } else if EXTRACTORS.iter().any(|e| e.0 == which) {
        vec![which]
    } else {
        let known: Vec<&str> = EXTRACTORS.iter().map(|e| e.0).collect();
        return usage(format!(
            "unknown extractor '{which}' (expected all, {})",
            known.join(", ")
        ));
    };
    if !(args.time_limit.is_finite() && args.time_limit > 0.0) {
        return usage(format!(
            "--time-limit must be a positive number of seconds, found {}",
            args.time_limit
        ));
    }
    let objective = match (args.objective.as_str(), &args.op_weights) {
        ("cost", Some(_)) => {
            return usage("--op-weights applies only with --objective op-types".into())
        }
        ("cost", None) => Objective::Cost,
        (_, weights) => {
            let table = match weights {
                Some(p) => match read_op_table("--op-weights", p) {
                    Ok(t) => t,
                    Err(e) => return usage(e),
                },
                None => Default::default(),
            };
            Objective::OpTypes(OpWeights(table))
        }
    };
    let cost_table = match &args.cost_model {
        Some(p) => match read_op_table("--cost-model", p) {
            Ok(t) => Some(t),
            Err(e) => return usage(e),
        },
        None => None,
    };
    // extractors that cannot optimize the objective say so
    let (names, refused): (Vec<&str>, Vec<&str>) = names.into_iter().partition(|n| {
        spores::extract::by_name(n)
            .expect("listed")
            .supports(&objective)
    });
    if !refused.is_empty() {
        let able: Vec<&str> = EXTRACTORS
            .iter()
            .filter(|e| e.1.supports(&objective))
            .map(|e| e.0)
            .collect();
        let msg = format!(
            "{} cannot optimize the {} objective (use {})",
            refused.join(", "),
            args.objective,
            able.join(" or ")
        );
        if names.is_empty() {
            return usage(msg);
        }
        eprintln!("note: skipped: {msg}");
    }
    let mut g = match serialized::load(file) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error: {e}");
            // an unreadable file is a usage error, a malformed one an error in the input
            let code = if matches!(e, serialized::LoadError::Io { .. }) {
                USAGE_ERROR
            } else {
                PROGRAM_ERROR
            };
            return ExitCode::from(code);
        }
    };
    if !args.roots.is_empty() {
        let mut roots = Vec::new();
        for r in &args.roots {
            match g.class_by_name(r) {
                Some(c) => roots.push(c),
                None => {
                    let mut some: Vec<String> = g
                        .unreferenced_classes()
                        .into_iter()
                        .chain(0..g.num_classes())
                        .map(|c| g.class_names[c].clone())
                        .collect();
                    some.dedup();
                    some.truncate(5);
                    return usage(format!(
                        "--root {r}: no such e-class in {} (it has {} classes, e.g. {})",
                        file.display(),
                        g.num_classes(),
                        some.join(", ")
                    ));
                }
            }
        }
        g.roots = roots;
    } else if g.roots.is_empty() {
        g.roots = g.unreferenced_classes();
        if g.roots.is_empty() {
            return usage(format!(
                "{} names no root e-classes and every class is used by a node: name one with --root",
                file.display()
            ));
        }
        let shown: Vec<&str> = g
            .roots
            .iter()
            .take(10)
            .map(|&c| g.class_names[c].as_str())
            .collect();
        eprintln!(
            "note: {} names no root e-classes; using the {} class(es) no node points to: {}{}",
            file.display(),
            g.roots.len(),
            shown.join(", "),
            if g.roots.len() > 10 { ", ..." } else { "" }
        );
    }
    if let Some(t) = &cost_table {
        g.apply_cost_table(t);
    }
    let opts = Options {
        time_limit: std::time::Duration::from_secs_f64(args.time_limit),
        objective: objective.clone(),
    };
    let mut code = ExitCode::SUCCESS;
    let mut best: Option<((f64, f64), spores::extract::Extraction)> = None;
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
        let ok = valid.is_ok();
        let value = g.objective(&result, &objective);
        let cost = g.dag_cost(&result);
        let mut line = serde_json::json!({
            "file": file.display().to_string(),
            "extractor": name,
            "objective": ok.then_some(value),
            "dag_cost": ok.then_some(cost),
            "tree_cost": ok.then(|| g.tree_cost(&result)),
            "micros": micros,
            "optimal": result.optimal && ok,
            "bound": if ok { result.bound } else { None },
            "gap": if ok { result.gap(value) } else { None },
        });
        if args.term && ok {
            line["term"] = serialized::term(&g, &result).into();
        }
        println!("{line}");
        if ok
            && best
                .as_ref()
                .is_none_or(|((v, c), _)| (value, cost) < (*v, *c))
        {
            best = Some(((value, cost), result));
        }
    }
    if let Some(out) = &args.out {
        match &best {
            Some((_, ex)) => {
                let text = serialized::selection_json(&g, ex).to_string();
                if let Err(e) = std::fs::write(out, text + "\n") {
                    eprintln!("error: cannot write {}: {e}", out.display());
                    return ExitCode::from(USAGE_ERROR);
                }
            }
            None => eprintln!("error: no valid extraction; {} not written", out.display()),
        }
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
            "robust: {} subprocess cases (exit 0: {}, 1: {}, 2: {}; {} programs that do not end as written either), {} in-process front-end cases, {} failures",
            rep.cases,
            rep.exits[0],
            rep.exits[1],
            rep.exits[2],
            rep.endless,
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
        if r.programs.is_multiple_of(500) {
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
        "fuzz: seed {seed}, programs {first}..{}: {} run, {} values agree, differences excused by a documented exception: {} rounding, {} overflow, {} zero sign, {} sparse reading; {} failures, {:.1} s",
        first + count,
        rep.programs,
        rep.checked.compared,
        rep.checked.excused[0],
        rep.checked.excused[1],
        rep.checked.excused[2],
        rep.checked.excused[3],
        rep.failures.len(),
        start.elapsed().as_secs_f64()
    );
    if rep.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(PROGRAM_ERROR)
    }
}
