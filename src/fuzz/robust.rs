//! The robustness fuzzer: bad input must give exit code 0, 1 or 2 and a message, never a
//! panic, an abort or a hang. It checks nothing else.
//!
//! Inputs are mutated from seeds: programs (the examples, the diagnostic tests and generated
//! programs), Matrix Market files read by `read()`, egraph-serialize JSON given to
//! `spores extract`, and random command lines. Mutations work on bytes and on tokens: delete,
//! duplicate or swap a span, insert a token from a dictionary of DML and format keywords,
//! replace a number by an extreme one (`0`, `-1`, `1e308`, `99999999999999`, `NaN`, ...), and
//! nest a span deeply. [`front_end`] runs a mutated program through parse and check
//! in-process under `catch_unwind` (cheap, thousands per second); [`run_case`] runs the
//! `spores` binary as a subprocess with a time limit and classifies how it ended.

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TOKENS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    "\n",
    "=",
    "+",
    "-",
    "*",
    "/",
    "^",
    "%*%",
    "%%",
    "%/%",
    "!",
    "!=",
    "==",
    "<",
    ">",
    "&",
    "|",
    ":",
    "t(",
    "sum(",
    "rowSums(",
    "matrix(",
    "rand(",
    "read(",
    "as.scalar(",
    "print(",
    "toString(",
    "if",
    "else",
    "for",
    "while",
    "in",
    "TRUE",
    "FALSE",
    "\"",
    "'",
    "$x",
    "ifdef(",
    "rows=",
    "cols=",
    "sparsity=",
    "seed=",
    "X",
    "i",
    "1:",
    "stop(",
    "write(",
    "%%MatrixMarket",
    "coordinate",
    "array",
    "real",
    "integer",
    "pattern",
    "symmetric",
    "general",
    "skew-symmetric",
    "{\"nodes\":",
    "\"children\":",
    "\"eclass\":",
    "\"cost\":",
    "\"op\":",
    "\"root_eclasses\":",
    "null",
    "[]",
    "{}",
];

const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "1e308",
    "-1e308",
    "1e25",
    "99999999999999",
    "4294967297",
    "18446744073709551616",
    "NaN",
    "Inf",
    "-0",
    "0.5",
    "1e-320",
    "3000",
    "100000",
];

/// One mutation of a text.
pub fn mutate(rng: &mut ChaCha8Rng, text: &str) -> String {
    let mut b: Vec<u8> = text.as_bytes().to_vec();
    let n = rng.gen_range(1..=4);
    for _ in 0..n {
        let len = b.len();
        let pos = if len == 0 { 0 } else { rng.gen_range(0..=len) };
        let span = |rng: &mut ChaCha8Rng| -> (usize, usize) {
            if len == 0 {
                return (0, 0);
            }
            let a = rng.gen_range(0..len);
            let l = rng.gen_range(1..=(len - a).min(40));
            (a, a + l)
        };
        match rng.gen_range(0..9) {
            0 => {
                let (a, e) = span(rng);
                b.drain(a..e);
            }
            1 => {
                let (a, e) = span(rng);
                let piece = b[a..e].to_vec();
                let at = rng.gen_range(0..=b.len());
                b.splice(at..at, piece);
            }
            2 | 3 => {
                let t = TOKENS.choose(rng).expect("not empty").as_bytes();
                b.splice(pos..pos, t.iter().copied());
            }
            4 | 5 => {
                // replace a number
                let digits: Vec<usize> = (0..len).filter(|&i| b[i].is_ascii_digit()).collect();
                if let Some(&d) = digits.choose(rng) {
                    let mut e = d;
                    while e < len && (b[e].is_ascii_digit() || b[e] == b'.') {
                        e += 1;
                    }
                    let mut s = d;
                    while s > 0 && (b[s - 1].is_ascii_digit() || b[s - 1] == b'.') {
                        s -= 1;
                    }
                    let t = NUMBERS.choose(rng).expect("not empty").as_bytes();
                    b.splice(s..e, t.iter().copied());
                }
            }
            6 => {
                // nest a span deeply
                let (a, e) = span(rng);
                let depth = *[10usize, 200, 5000].choose(rng).expect("not empty");
                let open = *["abs(", "t(", "(", "-", "exp("]
                    .choose(rng)
                    .expect("not empty");
                let close = if open.ends_with('(') { ")" } else { "" };
                let mut piece = open.repeat(depth).into_bytes();
                piece.extend_from_slice(&b[a..e]);
                piece.extend(close.repeat(depth).into_bytes());
                b.splice(a..e, piece);
            }
            7 => {
                if len > 0 {
                    let i = rng.gen_range(0..len);
                    b[i] = rng.gen();
                }
            }
            _ => {
                // swap two lines
                let mut lines: Vec<&[u8]> = b.split(|&c| c == b'\n').collect();
                if lines.len() > 1 {
                    let i = rng.gen_range(0..lines.len());
                    let j = rng.gen_range(0..lines.len());
                    lines.swap(i, j);
                }
                b = lines.join(&b'\n');
            }
        }
        if b.len() > 200_000 {
            b.truncate(200_000);
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// Parses and checks a program in-process; `Err` with the panic message if it panicked.
pub fn front_end(src: &str) -> Result<(), String> {
    std::panic::catch_unwind(|| {
        let _ = crate::driver::compile(src, &Default::default());
    })
    .map_err(|p| super::panic_message(&*p))
}

/// How a subprocess ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// exit code 0, 1 or 2 and no panic message
    Clean(i32),
    /// another exit code, a signal, or a panic message on stderr
    Crash(String),
    /// killed after the time limit
    Hang,
}

/// Runs `bin args` with `dir` as the working directory, killing it after `limit`.
pub fn run_case(bin: &Path, args: &[String], dir: &Path, limit: Duration) -> Ending {
    let err_path = dir.join("stderr.txt");
    let Ok(err_file) = std::fs::File::create(&err_path) else {
        return Ending::Crash("cannot create stderr file".into());
    };
    let child = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err_file)
        .env("SPORES_TIME_LIMIT", "0.2")
        .spawn();
    let Ok(mut child) = child else {
        return Ending::Crash("cannot start".into());
    };
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Ending::Hang;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Ending::Crash(format!("wait: {e}")),
        }
    };
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    match status.code() {
        Some(c @ 0..=2) if !stderr.contains("panicked") => Ending::Clean(c),
        Some(c) => Ending::Crash(format!(
            "exit code {c}: {}",
            stderr.chars().take(400).collect::<String>()
        )),
        None => Ending::Crash(format!(
            "killed by a signal: {}",
            stderr.chars().take(400).collect::<String>()
        )),
    }
}

/// The seeds the mutations start from.
#[derive(Clone, Debug, Default)]
pub struct Corpus {
    /// programs
    pub programs: Vec<String>,
    /// Matrix Market files
    pub mtx: Vec<String>,
    /// egraph-serialize JSON files
    pub json: Vec<String>,
}

impl Corpus {
    /// Reads the seeds from a source tree (examples/, tests/fail/, tests/egraphs/) plus a few
    /// generated programs and built-in Matrix Market files.
    pub fn from_tree(root: &Path) -> Corpus {
        let mut c = Corpus::default();
        let read_dir = |d: PathBuf, ext: &str, into: &mut Vec<String>| {
            if let Ok(rd) = std::fs::read_dir(d) {
                let mut paths: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
                paths.sort();
                for p in paths {
                    if p.extension().and_then(|e| e.to_str()) == Some(ext) {
                        if let Ok(t) = std::fs::read_to_string(&p) {
                            into.push(t);
                        }
                    }
                }
            }
        };
        read_dir(root.join("examples"), "la", &mut c.programs);
        read_dir(root.join("tests/fail"), "la", &mut c.programs);
        read_dir(root.join("tests/fail/data"), "mtx", &mut c.mtx);
        read_dir(root.join("tests/egraphs"), "json", &mut c.json);
        for i in 0..20 {
            c.programs.push(super::program(7, i).render());
        }
        c.mtx.extend([
            "%%MatrixMarket matrix coordinate real general\n3 4 3\n1 1 1.5\n2 3 -2\n3 4 7e3\n"
                .to_string(),
            "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n".to_string(),
            "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n1 1\n3 2\n".to_string(),
            "%%MatrixMarket matrix coordinate integer general\n2 5 1\n2 5 -4\n".to_string(),
        ]);
        c
    }
}

/// What a robustness run found.
#[derive(Clone, Debug, Default)]
pub struct RobustReport {
    /// cases run
    pub cases: u64,
    /// cases that ended with each exit code 0, 1, 2
    pub exits: [u64; 3],
    /// `run` cases whose program did not end, as written (`--no-opt`) either: a mutated
    /// program that loops for ever
    pub endless: u64,
    /// crashes and hangs: the case's description and input
    pub failures: Vec<String>,
}

/// Runs `count` subprocess cases of the `spores` binary `bin` with inputs mutated from
/// `corpus`, in the scratch directory `dir`; `in_process` mutated programs are also checked
/// in-process through [`front_end`].
pub fn run(
    bin: &Path,
    corpus: &Corpus,
    seed: u64,
    count: u64,
    in_process: u64,
    dir: &Path,
    limit: Duration,
) -> RobustReport {
    use rand::SeedableRng;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut rep = RobustReport::default();
    let mutants: Vec<String> = (0..in_process)
        .map(|_| {
            let seed_prog = corpus
                .programs
                .choose(&mut rng)
                .cloned()
                .unwrap_or_default();
            mutate(&mut rng, &seed_prog)
        })
        .collect();
    // the front end runs on a thread with the stack of the `spores` binary's command-line
    // thread (1 GiB), so that deep nesting behaves as it does there
    let panics = std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || {
            mutants
                .into_iter()
                .filter_map(|m| front_end(&m).err().map(|p| (p, m)))
                .collect::<Vec<_>>()
        })
        .map(|h| h.join().unwrap_or_default())
        .unwrap_or_default();
    for (p, m) in panics {
        rep.failures
            .push(format!("front end panicked ({p}) on:\n{m}"));
    }
    let _ = std::fs::create_dir_all(dir);
    for _ in 0..count {
        rep.cases += 1;
        let (args, input) = case(&mut rng, corpus, dir);
        match run_case(bin, &args, dir, limit) {
            Ending::Clean(c) => rep.exits[c as usize] += 1,
            Ending::Crash(why) => rep.failures.push(format!(
                "spores {} crashed ({why}); input:\n{input}",
                args.join(" ")
            )),
            // a mutated program may loop for ever (`while (i < 1) i = i - 2`): when it does
            // not end as written either (`run --no-opt`), that is the program, not spores
            Ending::Hang if endless(bin, &args, dir, limit) => rep.endless += 1,
            Ending::Hang => rep.failures.push(format!(
                "spores {} did not end within {limit:?}; input:\n{input}",
                args.join(" ")
            )),
        }
    }
    rep
}

/// Whether a case that did not end within `limit` is a `run` of a program that does not
/// end as written either (`--no-opt`): a mutated program may loop for ever (`while (i < 1)
/// i = i - 2`), which is the program's doing, not spores's.
pub fn endless(bin: &Path, args: &[String], dir: &Path, limit: Duration) -> bool {
    if args.first().map(String::as_str) != Some("run") {
        return false;
    }
    let mut a = args.to_vec();
    if !a.iter().any(|x| x == "--no-opt") {
        a.push("--no-opt".to_string());
    }
    matches!(run_case(bin, &a, dir, limit), Ending::Hang)
}

/// One subprocess case: its arguments, with its input files written into `dir`.
fn case(rng: &mut ChaCha8Rng, corpus: &Corpus, dir: &Path) -> (Vec<String>, String) {
    let s = |x: &str| x.to_string();
    match rng.gen_range(0..10) {
        0..=3 => {
            let src = corpus.programs.choose(rng).cloned().unwrap_or_default();
            let m = mutate(rng, &src);
            let _ = std::fs::write(dir.join("p.la"), &m);
            let cmd = *["run", "run", "check", "opt"]
                .choose(rng)
                .expect("not empty");
            let mut args = vec![s(cmd), s("p.la")];
            if cmd == "run" {
                // optimized, every statement compiled: the programs are small, and under the
                // default compile budget most of them would run as written
                if rng.gen_bool(0.3) {
                    args.push(s("--no-opt"));
                } else {
                    args.extend([s("--compile-budget"), s("0")]);
                }
            }
            (args, m)
        }
        4..=6 => {
            let src = corpus.mtx.choose(rng).cloned().unwrap_or_default();
            let m = mutate(rng, &src);
            let _ = std::fs::write(dir.join("m.mtx"), &m);
            let prog = "X = read(\"m.mtx\")\nprint(sum(X))\nprint(nrow(X) + ncol(X))\nY = X %*% t(X)\nprint(sum(Y))\n";
            let _ = std::fs::write(dir.join("p.la"), prog);
            (vec![s("run"), s("p.la")], m)
        }
        7..=8 => {
            let src = corpus.json.choose(rng).cloned().unwrap_or_default();
            let m = mutate(rng, &src);
            let _ = std::fs::write(dir.join("g.json"), &m);
            let ex = *["all", "ilp", "greedy-dag", "lp-round", "greedy-tree"]
                .choose(rng)
                .expect("not empty");
            (
                vec![
                    s("extract"),
                    s("g.json"),
                    s("--extractor"),
                    s(ex),
                    s("--time-limit"),
                    s("1"),
                ],
                m,
            )
        }
        _ => {
            // a random command line over valid files
            let _ = std::fs::write(
                dir.join("ok.la"),
                "X = matrix(1, rows=2, cols=2)\nprint(sum(X))\n",
            );
            let words = [
                "run",
                "check",
                "opt",
                "equiv",
                "extract",
                "calibrate",
                "ok.la",
                "missing.la",
                ".",
                "--stats",
                "--no-opt",
                "--explain",
                "--verify",
                "--nvargs",
                "x=1",
                "=",
                "x=",
                "--time-limit",
                "-1",
                "NaN",
                "inf",
                "1e20",
                "--extractor",
                "bogus",
                "all",
                "--dump-egraph",
                "ok.la",
                "--help",
                "-",
                "--",
            ];
            let n = rng.gen_range(0..6);
            let args: Vec<String> = (0..n)
                .map(|_| s(words.choose(rng).expect("not empty")))
                .filter(|w| w != "calibrate")
                .collect();
            let line = args.join(" ");
            (args, line)
        }
    }
}
