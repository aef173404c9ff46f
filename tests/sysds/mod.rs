//! What the test binaries that run programs in SystemDS itself share: a fresh scratch folder,
//! and running a DML file in SystemDS (single node) or in spores, keeping its printed lines.

use std::path::{Path, PathBuf};

/// A fresh, empty scratch folder `spores-PREFIX-PID-NAME` in the temporary directory, removed
/// when the test is done with it ([`Scratch`]).
pub fn tmp(prefix: &str, name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("spores-{prefix}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

/// A test's scratch folder: removed on drop, unless the test is failing (a panic is
/// unwinding), when it is kept for inspection and its path printed.
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("scratch folder kept: {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Runs a DML file with spores (`--no-opt` unless `opt`); returns its printed lines. Fails the
/// test when spores fails.
pub fn run_spores(prog: &Path, nvargs: &[String], opt: bool) -> Vec<String> {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_spores"));
    c.arg("run").arg(prog).arg("-nvargs").args(nvargs);
    // optimized, every run of statements compiled: under the default compile budget the
    // small inputs of these tests would run mostly as written
    if opt {
        c.args(["--compile-budget", "0"]);
    } else {
        c.arg("--no-opt");
    }
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "spores: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(String::from)
        .collect()
}

/// Runs a DML file with SystemDS in `dir`; returns its printed lines (without the statistics).
/// Fails the test when SystemDS fails.
pub fn run_systemds(home: &Path, dir: &Path, prog: &Path, nvargs: &[String]) -> Vec<String> {
    use spores::emit::systemds;
    let mut args = vec!["-nvargs".to_string()];
    args.extend(nvargs.iter().cloned());
    let o = systemds::command(
        home,
        systemds::Engine::SingleNode,
        prog,
        &args,
        &dir.join("systemds-work"),
    )
    .unwrap()
    .current_dir(dir)
    .output()
    .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && !out.contains("Exception"),
        "SystemDS: {out}\n{err}"
    );
    out.lines()
        .take_while(|l| !l.starts_with("SystemDS Statistics"))
        .map(String::from)
        .collect()
}

/// Writes a random CSV matrix to `path` with the `.mtd` SystemDS writes beside it: each cell
/// is `0` with probability `zeros`, else `value(rng)` (its text); the `.mtd` counts the
/// non-zeros. Returns `path`.
pub fn csv_with_mtd(
    path: PathBuf,
    rows: usize,
    cols: usize,
    zeros: f64,
    seed: u64,
    mut value: impl FnMut(&mut rand_chacha::ChaCha8Rng) -> String,
) -> PathBuf {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut text = String::new();
    let mut nnz = 0;
    for _ in 0..rows {
        let cells: Vec<String> = (0..cols)
            .map(|_| {
                if rng.gen::<f64>() < zeros {
                    return "0".to_string();
                }
                nnz += 1;
                value(&mut rng)
            })
            .collect();
        text += &cells.join(",");
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    std::fs::write(
        format!("{}.mtd", path.display()),
        format!(
            r#"{{"data_type": "matrix", "value_type": "double", "rows": {rows}, "cols": {cols}, "nnz": {nnz}, "format": "csv", "header": false, "sep": ","}}"#
        ),
    )
    .unwrap();
    path
}
