//! Fuzzers that keep the optimizer honest: a differential fuzzer (random well-typed programs
//! run optimized, unoptimized and through an independent reference evaluator, every printed
//! value compared) with a shrinker, and a robustness fuzzer for the front end, the file
//! readers and the command line ([`robust`]).
//!
//! **Differential.** [`gen`] builds a random [`gen::Program`] from a seed and an index (so any
//! program of a run can be regenerated alone); [`check`] runs it in-process through
//! [`crate::driver::run_with`] twice, with and without run-time optimization, each under
//! `catch_unwind`, and through [`reference::run`], and compares the printed tokens one by one
//! with [`reference::agrees`]: NaN must be NaN, an infinity the same infinity, a `+0.0` that
//! every evaluation order keeps must not print as `-0.0`, and finite values agree within
//! `1e-10` times the magnitude bound of their computation (the sum of the absolute values of
//! the terms, so reassociation and cancellation are tolerated; `toString`'s three decimals add
//! half a unit of the last place). The documented exception, sparse kernels and fused
//! operators treating cells outside a sparse pattern as exact zeros, is accounted for by the
//! reference computing both readings (see [`reference`]). A value that differs is excused
//! only when the reference recorded that the program as written reached one of the other
//! documented exceptions for that value: a `round` or `!= 0` next to its discontinuity
//! (rounding), an intermediate or reordered partial product near overflow or underflow, or
//! (optimized runs) a quotient by a zero whose sign a plan may change, or a product of an
//! exact zero with Inf or NaN that kernels may read either way. Excused differences
//! are counted by reason and reported; every other difference is a failure.
//!
//! A failing program is shrunk by [`shrink::shrink`] (delta debugging: drop statements and
//! inputs, replace subexpressions by their operands or by leaves of the same shape) until no
//! smaller program fails the same way. `spores fuzz --seed S --count N` (hidden) runs it;
//! `scripts/fuzz.sh N SEED` wraps that, and tests/fuzz.rs runs a fixed budget.

pub mod gen;
pub mod reference;
pub mod robust;
pub mod shrink;

use gen::Program;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// What went wrong with a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailKind {
    /// a printed value differs from the reference
    Mismatch,
    /// the run returned an error (the programs are well-typed and well-shaped)
    Error,
    /// the run panicked
    Panic,
    /// the run took more processor time than the limit
    Slow,
    /// the reference rejected the program (a generator bug)
    Generator,
}

/// A failing program with what went wrong.
#[derive(Clone, Debug)]
pub struct Failure {
    /// which program of the run
    pub index: u64,
    /// the kind of failure
    pub kind: FailKind,
    /// `optimized` or `unoptimized` (or `reference`)
    pub mode: &'static str,
    /// details: the token, its expected values, the error or panic message
    pub detail: String,
    /// the program
    pub program: Program,
}

/// What checking one program found.
#[derive(Clone, Debug, Default)]
pub struct Checked {
    /// tokens that agree with the reference
    pub compared: usize,
    /// tokens that differ as a documented exception allows, by [`reference::Excuse`]
    /// (rounding, overflow, zero sign, sparse reading)
    pub excused: [usize; 4],
}

impl Checked {
    fn add(&mut self, c: &Checked) {
        self.compared += c.compared;
        for (a, b) in self.excused.iter_mut().zip(c.excused) {
            *a += b;
        }
    }
}

/// The index of an excuse in [`Checked::excused`].
pub fn excuse_index(e: reference::Excuse) -> usize {
    match e {
        reference::Excuse::Rounding => 0,
        reference::Excuse::Overflow => 1,
        reference::Excuse::ZeroSign => 2,
        reference::Excuse::Sparse => 3,
    }
}

/// Settings of a differential run.
#[derive(Clone, Debug)]
pub struct Options {
    /// a run that takes more processor time than this (on its thread: the optimizer and
    /// the front end; wall-clock time would measure the machine's load) is a failure
    pub slow: Duration,
    /// worker threads
    pub threads: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            slow: Duration::from_secs(30),
            threads: 2,
        }
    }
}

/// The program with this index of a run with this seed.
pub fn program(seed: u64, index: u64) -> Program {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index);
    gen::program(&mut rng)
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

/// The processor time the calling thread has used (wall-clock time where the platform has
/// no per-thread clock).
pub fn thread_time() -> Duration {
    #[cfg(unix)]
    {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec through a valid pointer
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0 {
            return Duration::new(
                t.tv_sec.max(0) as u64,
                t.tv_nsec.clamp(0, 999_999_999) as u32,
            );
        }
    }
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

/// Runs DML source in-process; returns what it printed, or the failure.
pub fn run_source(src: &str, optimize: bool, slow: Duration) -> Result<String, (FailKind, String)> {
    let opts = crate::driver::RunOptions {
        optimize,
        ..Default::default()
    };
    let start = Instant::now();
    let cpu = thread_time();
    let mut out = Vec::new();
    let r = catch_unwind(AssertUnwindSafe(|| {
        crate::driver::run_with(src, &Default::default(), &mut out, &opts)
    }));
    let took = thread_time().saturating_sub(cpu);
    match r {
        Err(p) => Err((FailKind::Panic, panic_message(&*p))),
        Ok(Err(e)) => Err((FailKind::Error, e.to_string())),
        Ok(Ok(_)) if took > slow => Err((
            FailKind::Slow,
            format!(
                "took {took:?} of processor time ({:?} wall-clock)",
                start.elapsed()
            ),
        )),
        Ok(Ok(_)) => Ok(String::from_utf8_lossy(&out).into_owned()),
    }
}

/// Checks one program: optimized and unoptimized runs against the reference.
pub fn check(p: &Program, opts: &Options) -> Result<Checked, (FailKind, &'static str, String)> {
    let expected =
        reference::run(p).map_err(|e| (FailKind::Generator, "reference", e.0.clone()))?;
    let src = p.render();
    let mut checked = Checked::default();
    for (optimize, mode) in [(false, "unoptimized"), (true, "optimized")] {
        let out = run_source(&src, optimize, opts.slow).map_err(|(k, d)| (k, mode, d))?;
        let tokens: Vec<(usize, &str)> = out
            .lines()
            .enumerate()
            .flat_map(|(l, line)| line.split_whitespace().map(move |t| (l, t)))
            .collect();
        if tokens.len() != expected.len() {
            return Err((
                FailKind::Mismatch,
                mode,
                format!(
                    "printed {} values, the reference {}:\n{out}",
                    tokens.len(),
                    expected.len()
                ),
            ));
        }
        for (k, ((line, t), e)) in tokens.iter().zip(&expected).enumerate() {
            let agrees = if optimize {
                reference::agrees_optimized
            } else {
                reference::agrees
            };
            match agrees(t, e) {
                reference::Verdict::Agree => checked.compared += 1,
                reference::Verdict::Excused(x) => checked.excused[excuse_index(x)] += 1,
                reference::Verdict::Differ => {
                    let c = e.cell;
                    return Err((
                        FailKind::Mismatch,
                        mode,
                        format!(
                            "value {k} (output line {}: `{}`) is {t}, the reference has {} (sparse reading {}, magnitude bound {:e}{})",
                            line + 1,
                            out.lines().nth(*line).unwrap_or(""),
                            crate::runtime::format::java_double(c.v),
                            crate::runtime::format::java_double(c.z),
                            c.s,
                            if c.pz { ", must be +0.0" } else { "" }
                        ),
                    ));
                }
            }
        }
    }
    Ok(checked)
}

/// The result of a differential run.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// programs run
    pub programs: u64,
    /// values and excused differences
    pub checked: Checked,
    /// failures, in program order
    pub failures: Vec<Failure>,
}

/// Runs programs `first..first + count` of the run with `seed`, on `opts.threads` threads;
/// `progress` is called after each program with its index.
pub fn run(
    seed: u64,
    first: u64,
    count: u64,
    opts: &Options,
    progress: &(dyn Fn(u64, &Report) + Sync),
) -> Report {
    let report = std::sync::Mutex::new(Report::default());
    let next = std::sync::atomic::AtomicU64::new(first);
    std::thread::scope(|s| {
        for _ in 0..opts.threads.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= first + count {
                    break;
                }
                let p = program(seed, i);
                let r = check(&p, opts);
                let mut rep = report.lock().unwrap_or_else(|e| e.into_inner());
                rep.programs += 1;
                match r {
                    Ok(c) => rep.checked.add(&c),
                    Err((kind, mode, detail)) => rep.failures.push(Failure {
                        index: i,
                        kind,
                        mode,
                        detail,
                        program: p,
                    }),
                }
                progress(i, &rep);
            });
        }
    });
    let mut rep = report.into_inner().unwrap_or_else(|e| e.into_inner());
    rep.failures.sort_by_key(|f| f.index);
    rep
}
