//! More of SystemDS's algorithm library, through drivers written here (tests/dml/drivers),
//! and a corpus of valid programs SystemDS runs that a checker could wrongly reject
//! (tests/dml/accept: untaken branches with mismatched shapes, shapes known only at run
//! time, loops that change shapes, functions called with different shapes). Each runs from
//! ../shared/data/systemds-scripts with `--lib builtin`, optimized and with `--no-opt`, and
//! everything it prints must match what SystemDS 3.4 printed for it
//! (tests/dml/expected/NAME.out, written by scripts/systemds-expected.sh): the same lines,
//! the same words, numbers within 1e-9 relative. `spores check` must accept the corpus.
//! Skipped when the shared data folder is not there.

mod common;

use spores_runtime::kernels::matmul::java_vlen;
use std::path::{Path, PathBuf};
use std::process::Command;

fn data_root() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/systemds-scripts");
    p.join("builtin").is_dir().then_some(p)
}

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dml")
}

/// What SystemDS printed for `name` on a CPU of the vector width spores follows here
/// ([`java_vlen`]): SystemDS's Vector API kernels sum in blocks of the JVM's preferred
/// vector length, so a few outputs differ between an AVX-512 machine (8 doubles, the files
/// of expected/) and an AVX2 one (4, expected/vlen4/, written by
/// scripts/systemds-expected.sh where they differ).
fn expected(name: &str) -> PathBuf {
    let alt = here().join(format!("expected/vlen{}/{name}.out", java_vlen()));
    if java_vlen() != 8 && alt.exists() {
        alt
    } else {
        here().join(format!("expected/{name}.out"))
    }
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
    // the acceptance corpus: `spores check` must accept every program of it (checked where
    // and as it runs: from the scripts folder, with its library)
    let mut problems = Vec::new();
    for name in &names {
        let accept = here().join(format!("accept/{name}.dml"));
        if accept.exists() {
            let out = Command::new(env!("CARGO_BIN_EXE_spores"))
                .current_dir(&root)
                .arg("check")
                .arg(&accept)
                .args(["--lib", "builtin"])
                .output()
                .unwrap();
            if !out.status.success() {
                problems.push(format!(
                    "{name}: spores check rejects it: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    common::judge(&names, KNOWN_FAILURES, problems, |name, opt| {
        let want = std::fs::read_to_string(expected(name)).unwrap();
        let mut driver = here().join(format!("drivers/{name}.dml"));
        if !driver.exists() {
            driver = here().join(format!("accept/{name}.dml"));
        }
        let args = [driver.as_os_str(), "--lib".as_ref(), "builtin".as_ref()];
        let got = common::run_spores(&root, &args, opt)?;
        match common::compare(&got, &want, 1e-9) {
            Some(d) => Err(d),
            None => Ok(()),
        }
    });
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
