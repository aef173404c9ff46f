//! What the test binaries that run DML programs against SystemDS's recorded outputs share:
//! running `spores run` optimized and with `--no-opt`, comparing printed output word by word
//! with a relative tolerance on numbers, and the bookkeeping of known failures (a case
//! listed as known that passes, or one not listed that fails, fails the test).

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

/// `spores run ARGS` from `dir` (with `--no-opt` unless `opt`): its standard output, or the
/// first lines of its error output when it fails. Optimized, every run of statements is
/// compiled (`--compile-budget 0`): the test inputs are small, and under the default budget
/// most statements would run as written.
pub fn run_spores<S: AsRef<OsStr>>(dir: &Path, args: &[S], opt: bool) -> Result<String, String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spores"));
    cmd.current_dir(dir).arg("run").args(args);
    if opt {
        cmd.args(["--compile-budget", "0"]);
    } else {
        cmd.arg("--no-opt");
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().take(4).collect::<Vec<_>>().join(" | "));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A word split into its text and the numbers in it (`DISPERSION,0.5` is `DISPERSION,#`
/// and 0.5; `1.0E-7` is one number).
fn numbers(word: &str) -> (String, Vec<f64>) {
    let (mut text, mut nums) = (String::new(), Vec::new());
    let b = word.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit()
            || (matches!(b[i], b'-' | b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit));
        if !starts {
            text.push(b[i] as char);
            i += 1;
            continue;
        }
        // the longest prefix from here that parses as a number
        let mut end = i + 1;
        let mut best = None;
        while end <= b.len() {
            if let Ok(v) = word[i..end].parse::<f64>() {
                best = Some((end, v));
            }
            if end == b.len() || !matches!(b[end], b'0'..=b'9' | b'.' | b'e' | b'E' | b'-' | b'+') {
                break;
            }
            end += 1;
        }
        match best {
            Some((e, v)) => {
                text.push('#');
                nums.push(v);
                i = e;
            }
            None => {
                text.push(b[i] as char);
                i += 1;
            }
        }
    }
    (text, nums)
}

/// Whether two printed words agree: equal text around numbers within `tol` relative (NaN
/// and infinities as words, equal only to themselves).
pub fn same_word(got: &str, want: &str, tol: f64) -> bool {
    if got == want {
        return true;
    }
    let ((gt, gn), (wt, wn)) = (numbers(got), numbers(want));
    gt == wt
        && gn.len() == wn.len()
        && gn
            .iter()
            .zip(&wn)
            .all(|(g, w)| g == w || (g - w).abs() <= tol * w.abs().max(g.abs()))
}

/// The first difference between two outputs, if any.
pub fn compare(got: &str, want: &str, tol: f64) -> Option<String> {
    let g: Vec<&str> = got.lines().collect();
    let w: Vec<&str> = want.lines().collect();
    for (i, (gl, wl)) in g.iter().zip(&w).enumerate() {
        let gw: Vec<&str> = gl.split_whitespace().collect();
        let ww: Vec<&str> = wl.split_whitespace().collect();
        if gw.len() != ww.len() || gw.iter().zip(&ww).any(|(a, b)| !same_word(a, b, tol)) {
            return Some(format!("line {}: {gl:?} vs SystemDS's {wl:?}", i + 1));
        }
    }
    (g.len() != w.len()).then(|| format!("{} lines vs SystemDS's {}", g.len(), w.len()))
}

/// Runs `case(name, optimized)` for every name, optimized and with `--no-opt`, and fails the
/// test on the first report of all problems: a case that is not in `known` and fails, or
/// one that is and passes. `extra` problems found by the caller are reported with them.
/// Returns the names that passed.
pub fn judge<F>(
    names: &[String],
    known: &[(&str, &str)],
    mut extra: Vec<String>,
    mut case: F,
) -> Vec<String>
where
    F: FnMut(&str, bool) -> Result<(), String>,
{
    let mut passed = Vec::new();
    for name in names {
        let known = known.iter().find(|k| k.0 == name);
        let mut ok = true;
        for opt in [true, false] {
            let mode = if opt { "optimized" } else { "--no-opt" };
            if let Err(e) = case(name, opt) {
                ok = false;
                if known.is_none() {
                    extra.push(format!("{name} ({mode}): {e}"));
                }
            }
        }
        match (ok, known) {
            (true, Some(_)) => {
                extra.push(format!("{name} passes: remove it from the known failures"))
            }
            (false, Some((_, why))) => println!("known failure {name}: {why}"),
            (true, None) => passed.push(name.clone()),
            (false, None) => {}
        }
    }
    println!(
        "{} of {} cases match SystemDS: {}",
        passed.len(),
        names.len(),
        passed.join(", ")
    );
    assert!(extra.is_empty(), "{}", extra.join("\n"));
    passed
}

#[test]
fn compare_words() {
    assert!(same_word("1.0", "1.0", 0.0));
    assert!(same_word("0.30000000000000004", "0.3", 1e-9));
    assert!(!same_word("0.31", "0.3", 1e-9));
    assert!(same_word("NaN", "NaN", 1e-9));
    assert!(!same_word("NaN", "1", 1e-9));
    assert!(same_word("A,0.30000000000000004", "A,0.3", 1e-9));
    assert!(!same_word("A,0.31", "A,0.3", 1e-9));
    assert!(!same_word("B,0.3", "A,0.3", 1e-9));
    assert!(same_word("1.0E-7", "1.0000000000001E-7", 1e-9));
    assert!(!same_word("1.0E-7", "1.0E-8", 1e-9));
    assert!(same_word("-2.5;", "-2.5000000000001;", 1e-9));
    assert!(!same_word("a", "b", 1e-9));
    assert!(compare("1\n2\n", "1\n2\n", 1e-9).is_none());
    assert!(compare("1\n", "1\n2\n", 1e-9).is_some());
    assert!(compare("1 2\n", "1 3\n", 1e-9).is_some());
}
