//! Apache SystemDS's own scripts (../shared/data/systemds-scripts, when present): every driver
//! runs from that folder with `--lib builtin`, optimized and with `--no-opt`, and its last
//! printed line must match SystemDS's checksum in expected.tsv to 1e-9 relative; and every
//! library script of builtin/ is parsed and its functions checked against their declared
//! types, with a floor on how many parse and check so the count cannot regress.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/systemds-scripts");
    p.join("expected.tsv").exists().then_some(p)
}

/// Drivers that cannot match SystemDS yet, with the reason.
const KNOWN_FAILURES: &[(&str, &str)] = &[];

#[test]
fn drivers_match_systemds() {
    let Some(root) = root() else { return };
    let expected = std::fs::read_to_string(root.join("expected.tsv")).unwrap();
    let checksums: Vec<(String, String)> = expected
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (name, want) = l.split_once('\t').expect("name<TAB>checksum");
            (name.to_string(), want.trim().to_string())
        })
        .collect();
    let names: Vec<String> = checksums.iter().map(|c| c.0.clone()).collect();
    common::judge(&names, KNOWN_FAILURES, Vec::new(), |name, opt| {
        let want = &checksums.iter().find(|c| c.0 == name).unwrap().1;
        let driver = format!("drivers/{name}.dml");
        let got = common::run_spores(&root, &[driver.as_str(), "--lib", "builtin"], opt)?;
        let last = got.lines().last().unwrap_or("").trim();
        last.parse::<f64>()
            .map_err(|_| format!("last line is not a number: {last:?}"))?;
        match common::compare(last, want, 1e-9) {
            Some(d) => Err(d),
            None => Ok(()),
        }
    });
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
