//! Apache SystemDS's own scripts (../shared/data/systemds-scripts, when present): every driver
//! runs from that folder with `--lib builtin`, optimized and with `--no-opt`, and its last
//! printed line must match SystemDS's checksum in expected.tsv to 1e-9 relative; and every
//! library script of builtin/ is parsed and its functions checked against their declared
//! types, with a floor on how many parse and check so the count cannot regress.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/systemds-scripts");
    p.join("expected.tsv").exists().then_some(p)
}

/// Drivers that cannot match SystemDS yet, with the reason (a driver listed here that
/// passes, or one not listed that fails, fails the test).
const KNOWN_FAILURES: &[(&str, &str)] = &[];

fn run_driver(root: &Path, name: &str, opt: bool) -> Result<f64, String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spores"));
    cmd.current_dir(root)
        .args(["run", &format!("drivers/{name}.dml"), "--lib", "builtin"]);
    if !opt {
        cmd.arg("--no-opt");
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().take(3).collect::<Vec<_>>().join(" | "));
    }
    let last = stdout.lines().last().unwrap_or("").trim().to_string();
    last.parse::<f64>()
        .map_err(|_| format!("last line is not a number: {last:?}"))
}

#[test]
fn drivers_match_systemds() {
    let Some(root) = root() else { return };
    let expected = std::fs::read_to_string(root.join("expected.tsv")).unwrap();
    let mut problems = Vec::new();
    let mut passed = Vec::new();
    for line in expected.lines().filter(|l| !l.trim().is_empty()) {
        let (name, want) = line.split_once('\t').expect("name<TAB>checksum");
        let want: f64 = want.trim().parse().expect("a number");
        let known = KNOWN_FAILURES.iter().find(|k| k.0 == name);
        let mut ok = true;
        for opt in [true, false] {
            let mode = if opt { "optimized" } else { "--no-opt" };
            match run_driver(&root, name, opt) {
                Ok(got) => {
                    let rel = (got - want).abs() / want.abs().max(f64::MIN_POSITIVE);
                    if rel > 1e-9 {
                        ok = false;
                        if known.is_none() {
                            problems
                                .push(format!("{name} ({mode}): {got} vs {want} (rel {rel:.2e})"));
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
            (true, None) => passed.push(name.to_string()),
            (false, None) => {}
        }
    }
    println!("drivers passing: {}", passed.join(", "));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The least number of the 199 library scripts that parse and check without a statement
/// deferred to run time.
const CHECK_FLOOR: usize = 154;
/// The least number that parse.
const PARSE_FLOOR: usize = 192;

#[test]
fn library_scripts_parse_and_check() {
    let Some(root) = root() else { return };
    let dir = root.join("builtin");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "dml"))
        .collect();
    files.sort();
    let (mut parsed, mut checked) = (0, 0);
    for f in &files {
        let src = std::fs::read_to_string(f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let prog = match spores::syntax::parse_program(&src) {
            Ok(p) => p,
            Err(e) => {
                println!("{name}\tparse\t{}", e.message);
                continue;
            }
        };
        parsed += 1;
        match spores::check::check_library(&prog, std::slice::from_ref(&dir)) {
            Ok((_, fails)) if fails.is_empty() => {
                checked += 1;
                println!("{name}\tok");
            }
            Ok((_, fails)) => println!("{name}\tdeferred\t{}", fails[0].message),
            Err(e) => println!("{name}\tcheck\t{}", e.message),
        }
    }
    println!("{} scripts: {parsed} parse, {checked} check", files.len());
    assert!(parsed >= PARSE_FLOOR, "only {parsed} parse");
    assert!(checked >= CHECK_FLOOR, "only {checked} check");
}

/// Function bodies are planned like any block, with the shapes of each call: the fused
/// operators the peer kernels get at the top level appear inside the library scripts.
#[test]
fn library_function_bodies_get_fused_plans() {
    let Some(root) = root() else { return };
    for (driver, op) in [
        ("pnmf", "wdivmm"),
        ("alsCG", "wsubmm"),
        ("alsCG", "wslossw"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_spores"))
            .current_dir(&root)
            .args([
                "run",
                &format!("drivers/{driver}.dml"),
                "--lib",
                "builtin",
                "--explain",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{driver}");
        let plans = String::from_utf8_lossy(&out.stderr);
        assert!(
            plans.lines().any(|l| l.contains(&format!("{op}("))),
            "{driver}: no {op} in the plans\n{plans}"
        );
    }
}
