//! The command line: exit codes (1 for program errors, 2 for usage errors), `--nvargs`,
//! `--stats` and `check`.

use std::process::Command;

fn spores(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_spores"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn run_with_nvargs_and_stats() {
    let (code, out, err) = spores(&[
        "run",
        "examples/loss.la",
        "--stats",
        "--nvargs",
        "m=50",
        "n=40",
        "r=3",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("loss "), "{out}");
    assert!(err.contains("Heavy hitter instructions"), "{err}");
    assert!(err.contains("%*%"), "{err}");
}

#[test]
fn peer_kernel_runs_with_nvargs() {
    let k = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/bench/peers/kernels/loss.dml"
    );
    if !std::path::Path::new(k).exists() {
        return;
    }
    let (code, out, err) = spores(&[
        "run", k, "--nvargs", "m=200", "n=100", "k=5", "sp=0.05", "reps=2", "warmup=1", "seed=3",
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("KTIME loss "))
        .collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].starts_with("KTIME loss 0 ") && lines[2].contains(" result="),
        "{out}"
    );
}

#[test]
fn exit_codes() {
    let (code, _, err) = spores(&["check", "tests/fail/matmul_mismatch.la"]);
    assert_eq!(code, 1);
    assert!(err.contains("tests/fail/matmul_mismatch.la:3:5"), "{err}");
    let (code, _, err) = spores(&["run", "tests/fail/read_missing_file.la"]);
    assert_eq!(code, 1, "{err}");
    let (code, _, _) = spores(&["check", "examples/logreg.la"]);
    assert_eq!(code, 0);
    let (code, _, err) = spores(&["run", "no/such/file.la"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, _) = spores(&["run"]);
    assert_eq!(code, 2);
    let (code, _, err) = spores(&["run", "examples/loss.la", "--nvargs", "m"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn equiv_prints_one_line_per_case_and_a_summary() {
    let (code, out, err) = spores(&["equiv", "tests/rewrites/negative.tsv"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines
            .iter()
            .take(lines.len() - 1)
            .all(|l| l.contains(" not-proved")),
        "{out}"
    );
    assert_eq!(
        *lines.last().unwrap(),
        format!("proved 0 of {}", lines.len() - 1)
    );
}

#[test]
fn opt_explain_shows_plans_with_costs() {
    let (code, out, err) = spores(&[
        "opt",
        "examples/loss.la",
        "--explain",
        "--nvargs",
        "m=40",
        "n=30",
        "r=3",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("block 0:"), "{out}");
    // the statements as written, from the source
    assert!(
        out.contains("    loss = sum((X - U %*% t(V))^2)\n"),
        "{out}"
    );
    // the plan with its estimated time, and what saturation and extraction did
    assert!(out.contains("  plan, estimated "), "{out}");
    assert!(out.contains("wsloss"), "{out}");
    assert!(
        out.contains("  saturation: ") && out.contains(" nodes; "),
        "{out}"
    );
    assert!(out.contains("  extraction: "), "{out}");
    // block headers are wrapped
    assert!(out.lines().all(|l| l.chars().count() <= 120), "{out}");
}

#[test]
fn extract_prints_json_lines_and_rejects_bad_files() {
    let (code, out, err) = spores(&[
        "extract",
        "tests/egraphs/sharing.json",
        "--extractor",
        "all",
        "--time-limit",
        "5",
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), spores::extract::EXTRACTORS.len(), "{out}");
    for l in &lines {
        assert!(
            l.starts_with("{\"file\":\"tests/egraphs/sharing.json\",\"extractor\":"),
            "{l}"
        );
        assert!(
            l.contains("\"dag_cost\":")
                && l.contains("\"tree_cost\":")
                && l.contains("\"micros\":"),
            "{l}"
        );
    }
    assert!(
        out.contains("\"extractor\":\"ilp\",\"objective\":7.0,\"dag_cost\":7.0,\"tree_cost\":11.0"),
        "{out}"
    );
    assert!(out.contains("\"optimal\":true"), "{out}");
    for bad in [
        "tests/egraphs/dangling_child.json",
        "tests/egraphs/missing_root.json",
        "README.md",
    ] {
        let (code, out, err) = spores(&["extract", bad]);
        assert_eq!(code, 1, "{bad}: {out} {err}");
        assert!(
            err.starts_with("error: ") && !err.contains("panicked"),
            "{err}"
        );
    }
    let (code, _, err) = spores(&["extract", "tests/egraphs/infeasible_root.json"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no valid extraction"), "{err}");
    let (code, _, _) = spores(&[
        "extract",
        "tests/egraphs/sharing.json",
        "--extractor",
        "nope",
    ]);
    assert_eq!(code, 2);
}

#[test]
fn opt_dumps_egraphs_as_json() {
    let dir = std::env::temp_dir().join(format!("spores-dump-{}", std::process::id()));
    let d = dir.to_str().unwrap();
    let (code, _, err) = spores(&[
        "opt",
        "examples/loss.la",
        "--dump-egraph",
        d,
        "--nvargs",
        "m=20",
        "n=10",
        "r=2",
    ]);
    assert_eq!(code, 0, "{err}");
    let f = dir.join("block0-loss.json");
    let (code, out, err) = spores(&["extract", f.to_str().unwrap(), "--extractor", "greedy-dag"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"dag_cost\":"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn spores_env(args: &[&str], env: (&str, &str)) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_spores"))
        .args(args)
        .env(env.0, env.1)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn bad_limits_are_usage_errors_not_panics() {
    for (k, v) in [
        ("SPORES_TIME_LIMIT", "-1"),
        ("SPORES_TIME_LIMIT", "NaN"),
        ("SPORES_TIME_LIMIT", "inf"),
        ("SPORES_TIME_LIMIT", "1e20"),
        ("SPORES_NODE_LIMIT", "abc"),
        ("SPORES_ITER_LIMIT", "-1"),
        ("SPORES_MATCH_LIMIT", "1.5"),
    ] {
        let (code, err) = spores_env(&["run", "examples/loss.la"], (k, v));
        assert_eq!(code, 2, "{k}={v}: {err}");
        assert!(err.contains(k), "{k}={v}: {err}");
    }
    for b in ["NaN", "inf", "-1", "ten", ""] {
        let (code, _, err) = spores(&["run", "examples/loss.la", "--compile-budget", b]);
        assert_eq!(code, 2, "--compile-budget {b}: {err}");
        assert!(
            err.contains("compile-budget"),
            "--compile-budget {b}: {err}"
        );
    }
    let (code, _, err) = spores(&["run", "examples/loss.la", "--no-opt", "--compile-budget=5"]);
    assert_eq!(code, 2, "--no-opt with a compile budget: {err}");
    for t in ["NaN", "inf", "-1", "1e20"] {
        let (code, _, err) = spores(&["equiv", "tests/rewrites/negative.tsv", "--time-limit", t]);
        assert_eq!(code, 2, "equiv --time-limit {t}: {err}");
        let (code, _, err) = spores(&["extract", "tests/egraphs/sharing.json", "--time-limit", t]);
        assert_eq!(code, 2, "extract --time-limit {t}: {err}");
    }
}

#[test]
fn huge_costs_in_an_egraph_are_an_error_not_an_abort() {
    let dir = std::env::temp_dir().join(format!("spores-cli-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("big.json");
    std::fs::write(
        &f,
        r#"{"nodes":{"n1":{"op":"x","children":[],"eclass":"a","cost":1e25}},"root_eclasses":["a"]}"#,
    )
    .unwrap();
    let (code, _, err) = spores(&["extract", f.to_str().unwrap()]);
    assert!(code == 1 || code == 2, "{code}: {err}");
    assert!(err.contains("cost"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn dump_egraph_into_a_file_is_a_usage_error() {
    let dir = std::env::temp_dir().join(format!("spores-cli-dump-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("a-file");
    std::fs::write(&f, "").unwrap();
    let (code, _, err) = spores(&[
        "opt",
        "examples/loss.la",
        "--dump-egraph",
        f.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--dump-egraph"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn print_output_appears_while_the_program_runs() {
    use std::io::BufRead;
    let dir = std::env::temp_dir().join(format!("spores-cli-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("slow.la");
    // the first line is printed before seconds of work; it must reach the pipe before the
    // program ends
    std::fs::write(
        &f,
        "print(\"first\")\nX = rand(rows=400, cols=400, seed=1)\nfor (i in 1:200) {\n  X = X %*% X\n  X = X / max(X)\n}\nprint(\"second \" + sum(X))\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_spores"))
        .args(["run", f.to_str().unwrap(), "--no-opt"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "first");
    let still_running = child.try_wait().unwrap().is_none();
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(child.wait().unwrap().success());
    assert!(rest[0].starts_with("second"), "{rest:?}");
    assert!(
        still_running,
        "the first line arrived only when the program ended"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn opt_why_shows_the_derivation_of_each_plan() {
    let (code, out, err) = spores(&["opt", "examples/loss.la", "--why"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("why:"), "{out}");
    // the loss is fused into wsloss, and the derivation names the rule that did it
    let steps: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("why:"))
        .skip(2) // the output's name
        .take_while(|l| l.starts_with("        "))
        .collect();
    assert!(!steps.is_empty(), "{out}");
    assert!(steps.iter().any(|s| s.contains("wsloss")), "{steps:?}");
}

/// A loop whose input's non-zeros halve at every iteration is compiled again only when they
/// drift more than `NNZ_REUSE` times from those of a cached plan (never when they reach zero:
/// an all-zero input is part of the key), and the plans give the values of the program as
/// written.
#[test]
fn plans_are_reused_while_density_drifts_within_a_factor() {
    let dir = std::env::temp_dir().join(format!("spores-cli-drift-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("drift.dml");
    std::fs::write(
        &f,
        "X = rand(rows=4000, cols=3, min=1, max=2, seed=3)\n\
         v = rand(rows=3, cols=1, min=1, max=2, seed=4)\n\
         n = 4000\n\
         for (i in 1:6) {\n\
         \x20 n = n / 2\n\
         \x20 M = X * (seq(1, 4000) <= n)\n\
         \x20 if (i > 0) { r = sum((M %*% v) * rowSums(M)) }\n\
         \x20 print(r)\n\
         }\n",
    )
    .unwrap();
    let f = f.to_str().unwrap();
    // every run compiled (the statements are too cheap to pass the default compile budget)
    let (code, out, err) = spores(&["run", f, "--stats", "--compile-budget", "0"]);
    assert_eq!(code, 0, "{err}");
    let (_, written, _) = spores(&["run", f, "--no-opt"]);
    for (a, b) in out.lines().zip(written.lines()) {
        let (a, b): (f64, f64) = (a.parse().unwrap(), b.parse().unwrap());
        assert!((a - b).abs() <= 1e-12 * b.abs(), "{a} vs {b}");
    }
    // the mask's non-zeros 2000, 1000, ..., 62: a plan compiled at c serves down to c / NNZ_REUSE
    let mut anchor: Option<usize> = None;
    let mut want = 0;
    for nnz in (1..=6).map(|i| 4000usize >> i) {
        if anchor.is_none_or(|a| a > nnz * spores::optimize::NNZ_REUSE) {
            anchor = Some(nnz);
            want += 1;
        }
    }
    // block 1 is the assignment of M: its row of the compile table
    let row = err
        .lines()
        .skip_while(|l| !l.starts_with("Compile time per block"))
        .find(|l| l.split_whitespace().next() == Some("1"))
        .unwrap_or_else(|| panic!("no compile row of block 1: {err}"));
    let got: usize = row.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(
        want > 1 && want < 6,
        "the test's drift spans several factors"
    );
    assert_eq!(got, want, "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
