//! What the test binaries that run programs in SystemDS itself share: a fresh scratch folder
//! and running a DML file in SystemDS (single node), keeping its printed lines.

use std::path::{Path, PathBuf};

/// A fresh, empty scratch folder `spores-PREFIX-PID-NAME` in the temporary directory.
pub fn tmp(prefix: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("spores-{prefix}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
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
