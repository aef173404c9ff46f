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
        /// print time and count per operation at the end
        #[arg(long)]
        stats: bool,
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (file, nvargs) = match &cli.command {
        Command::Run { file, nvargs, .. } | Command::Check { file, nvargs } => (file, nvargs),
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
    let name = file.display().to_string();
    let result = match &cli.command {
        Command::Check { .. } => spores::driver::compile(&source, &args).map(|_| None),
        Command::Run { stats, .. } => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let r = spores::driver::run(&source, &args, &mut out, *stats);
            drop(out);
            r
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

fn parse_nvargs(pairs: &[String]) -> Result<ScriptArgs, String> {
    pairs
        .iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(format!("--nvargs expects NAME=VALUE, found '{p}'")),
        })
        .collect()
}
