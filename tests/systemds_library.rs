//! More of SystemDS's algorithm library, through drivers written here (tests/dml/drivers),
//! and a corpus of valid programs SystemDS runs that a checker could wrongly reject
//! (tests/dml/accept: untaken branches with mismatched shapes, shapes known only at run
//! time, loops that change shapes, functions called with different shapes). Each runs from
//! ../shared/data/systemds-scripts with `--lib builtin`, optimized and with `--no-opt`, and
//! everything it prints must match what SystemDS 3.4 printed for it
//! (tests/dml/expected/NAME.out, written by scripts/systemds-expected.sh): the same lines,
//! the same words, numbers within 1e-9 relative. `spores check` must accept the corpus.
//! Skipped when the shared data folder is not there.

use std::path::{Path, PathBuf};
use std::process::Command;

fn data_root() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/systemds-scripts");
    p.join("builtin").is_dir().then_some(p)
}

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dml")
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
fn same_word(got: &str, want: &str, tol: f64) -> bool {
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
fn compare(got: &str, want: &str, tol: f64) -> Option<String> {
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

fn run(root: &Path, driver: &Path, opt: bool) -> Result<String, String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spores"));
    cmd.current_dir(root)
        .arg("run")
        .arg(driver)
        .args(["--lib", "builtin"]);
    if !opt {
        cmd.arg("--no-opt");
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().take(4).collect::<Vec<_>>().join(" | "));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Drivers that do not match SystemDS yet, with the reason (one listed that passes, or one
/// not listed that fails, fails the test).
const KNOWN_FAILURES: &[(&str, &str)] = &[(
    "stratstats",
    "SystemDS's products skip a sparse operand's zeros (NaN %*% a 0/1 projection is NaN only \
         in the projected cells; IEEE NaN in every cell in spores), and its sum keeps the last \
         infinity (Inf + -Inf = -Inf, Inf + NaN = Inf; NaN in spores)",
)];

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

#[test]
fn library_drivers_match_systemds() {
    let Some(root) = data_root() else { return };
    let mut names: Vec<String> = std::fs::read_dir(here().join("expected"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "out"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 30, "only {} expected outputs", names.len());
    let mut problems = Vec::new();
    let mut passed = 0;
    for name in &names {
        let known = KNOWN_FAILURES.iter().find(|k| k.0 == name);
        let mut ok = true;
        let want = std::fs::read_to_string(here().join(format!("expected/{name}.out"))).unwrap();
        let mut driver = here().join(format!("drivers/{name}.dml"));
        if !driver.exists() {
            // a program of the acceptance corpus: `spores check` must accept it too
            driver = here().join(format!("accept/{name}.dml"));
            let out = Command::new(env!("CARGO_BIN_EXE_spores"))
                .arg("check")
                .arg(&driver)
                .output()
                .unwrap();
            if !out.status.success() {
                problems.push(format!(
                    "{name}: spores check rejects it: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
        for opt in [true, false] {
            let mode = if opt { "optimized" } else { "--no-opt" };
            match run(&root, &driver, opt) {
                Ok(got) => {
                    if let Some(d) = compare(&got, &want, 1e-9) {
                        ok = false;
                        if known.is_none() {
                            problems.push(format!("{name} ({mode}): {d}"));
                        }
                    }
                }
                Err(e) => {
                    ok = false;
                    if known.is_none() {
                        problems.push(format!("{name} ({mode}): {e}"));
                    }
                }
            }
        }
        match (ok, known) {
            (true, Some(_)) => {
                problems.push(format!("{name} passes: remove it from KNOWN_FAILURES"))
            }
            (false, Some((_, why))) => println!("known failure {name}: {why}"),
            (true, None) => passed += 1,
            (false, None) => {}
        }
    }
    println!("{} drivers, {passed} match SystemDS", names.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The corpus's deferred errors still stop a run where SystemDS stops, at the statement: a
/// taken branch with mismatched shapes fails there, and a use of what it would have
/// assigned is never reached.
#[test]
fn deferred_errors_point_at_the_statement() {
    let dir = std::env::temp_dir().join(format!("spores-accept-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prog = dir.join("taken.dml");
    std::fs::write(
        &prog,
        "X = matrix(1, rows=100, cols=1)\nY = matrix(0, rows=2, cols=2)\nif (nrow(Y) > 0) {\n  print(\"before\")\n  Z = X + Y\n  print(sum(Z))\n}\n",
    )
    .unwrap();
    let check = Command::new(env!("CARGO_BIN_EXE_spores"))
        .arg("check")
        .arg(&prog)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "check rejects a branch that may not run"
    );
    let run = Command::new(env!("CARGO_BIN_EXE_spores"))
        .arg("run")
        .arg(&prog)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert_eq!(String::from_utf8_lossy(&run.stdout), "before\n");
    assert!(err.contains("dimension mismatch"), "{err}");
    assert!(err.contains("taken.dml:5:7"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
