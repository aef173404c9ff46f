//! The pipeline: parse and check ([`compile`]), then execute ([`execute`]), optimizing each
//! segment of a basic block right before it runs unless [`RunOptions::optimize`] is off
//! ([`crate::optimize`]).

use crate::check::{self, hir, ScriptArgs};
use crate::error::Error;
use crate::exec::{Executor, Stats};
use crate::syntax;
use std::io::Write;

/// Parses and checks a program.
pub fn compile(source: &str, args: &ScriptArgs) -> Result<hir::Program, Error> {
    compile_with_lib(source, args, &[])
}

/// Parses and checks a program; unknown function names resolve to `m_NAME` in `NAME.dml` in
/// the library directories `lib`.
pub fn compile_with_lib(
    source: &str,
    args: &ScriptArgs,
    lib: &[std::path::PathBuf],
) -> Result<hir::Program, Error> {
    syntax::sources::set_main(source);
    let ast = syntax::parse_program(source)?;
    check::check_program_with(&ast, args, lib).map_err(Error::Check)
}

/// How to run a program.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// collect time and count per operation
    pub stats: bool,
    /// optimize statements at run time
    pub optimize: bool,
    /// run optimized statements as written too, and compare
    pub verify: bool,
    /// keep the plans chosen at run time
    pub explain: bool,
    /// write each plan chosen at run time into this directory as Graphviz DOT
    pub dot: Option<std::path::PathBuf>,
    /// library directories for functions that are not builtins (`--lib`, `SPORES_LIB`)
    pub lib: Vec<std::path::PathBuf>,
    /// the saturation scheduler (`--scheduler`); `None`: `SPORES_SCHEDULER` or the default
    pub scheduler: Option<crate::saturate::Scheduler>,
    /// the compile budget in milliseconds of estimated cost (`--compile-budget`, see
    /// [`crate::optimize`]): 0, the default here, compiles every run of statements on its
    /// first run; `spores run` passes [`crate::optimize::DEFAULT_COMPILE_BUDGET_MS`]
    pub compile_budget_ms: f64,
}

/// What a run reports besides its output.
#[derive(Debug, Default)]
pub struct RunReport {
    /// statistics, when asked for
    pub stats: Option<Stats>,
    /// the plans chosen at run time, when asked for
    pub explain: Option<String>,
    /// the largest relative difference found by `verify`
    pub max_rel_diff: f64,
    /// statements run through optimized plans
    pub optimized_runs: u64,
}

/// Compiles and runs a program as written (no optimization, no statistics), printing to
/// `out`; [`run_with`] takes [`RunOptions`].
pub fn run(source: &str, args: &ScriptArgs, out: &mut dyn Write) -> Result<(), Error> {
    run_with(source, args, out, &RunOptions::default()).map(|_| ())
}

/// Compiles and runs a program with the given options.
pub fn run_with(
    source: &str,
    args: &ScriptArgs,
    out: &mut dyn Write,
    opts: &RunOptions,
) -> Result<RunReport, Error> {
    let program = compile_with_lib(source, args, &opts.lib)?;
    execute(&program, out, opts)
}

/// Runs a checked program with the given options.
pub fn execute(
    program: &hir::Program,
    out: &mut dyn Write,
    opts: &RunOptions,
) -> Result<RunReport, Error> {
    let mut exec = Executor::new(out, opts.stats);
    if opts.optimize {
        let mut optimizer =
            crate::optimize::Optimizer::new().expect("rule files are checked by the tests");
        if let Some(s) = opts.scheduler {
            optimizer.limits.scheduler = s;
        }
        optimizer.compile_budget = opts.compile_budget_ms * 1e6;
        exec = exec
            .with_optimizer(optimizer, opts.verify, opts.explain)
            .with_dot(opts.dot.clone());
    }
    let stats = exec.run(program).map_err(Error::Runtime)?;
    Ok(RunReport {
        stats,
        explain: exec.explain.take(),
        max_rel_diff: exec.max_rel_diff,
        optimized_runs: exec.optimized_runs,
    })
}

/// Warnings for script arguments given on the command line that the program never refers to
/// (SystemDS ignores them silently; a misspelt name is the usual cause).
pub fn unused_args(program: &hir::Program, args: &ScriptArgs) -> Vec<String> {
    let mut unused: Vec<&String> = args
        .keys()
        .filter(|k| !program.script_args_used.contains(*k))
        .collect();
    unused.sort_by_key(|k| (k.parse::<u64>().unwrap_or(u64::MAX), k.to_string()));
    unused
        .into_iter()
        .map(|k| {
            if k.bytes().all(|b| b.is_ascii_digit()) {
                format!("-args value {k} (`${k}`) is not used by the program")
            } else {
                format!(
                    "-nvargs {k}={} is not used by the program (no `${k}` in it)",
                    args[k]
                )
            }
        })
        .collect()
}
