//! The pipeline, one line per stage: parse, check, (optimize: later), execute.

use crate::check::{self, hir, ScriptArgs};
use crate::error::Error;
use crate::exec::{Executor, Stats};
use crate::syntax;
use std::io::Write;

/// Parses and checks a program.
pub fn compile(source: &str, args: &ScriptArgs) -> Result<hir::Program, Error> {
    let ast = syntax::parse_program(source)?;
    check::check_program(&ast, args).map_err(Error::Check)
}

/// Compiles and runs a program, printing to `out`; returns statistics when asked for.
pub fn run(
    source: &str,
    args: &ScriptArgs,
    out: &mut dyn Write,
    stats: bool,
) -> Result<Option<Stats>, Error> {
    let program = compile(source, args)?;
    Executor::new(out, stats)
        .run(&program)
        .map_err(Error::Runtime)
}
