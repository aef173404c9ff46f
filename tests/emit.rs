//! `spores emit`: the emitted DML parses and checks in spores and computes what the program
//! computes, in spores (always) and in SystemDS 3.4 (when it is installed: see
//! scripts/install-systemds.sh; else the SystemDS parts say they were skipped), on one node
//! and, with `SPORES_TEST_SPARK=1` and Spark's jars installed, on Spark in local mode.
//! Each SystemDS run batches all cases into one program, since a JVM start takes seconds.

use spores::emit::{self, systemds, Emitted};
use spores::fuzz::reference;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn emit_with(src: &str, args: &[(&str, &str)], opts: &emit::Options) -> Emitted {
    let args: HashMap<String, String> = args
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    emit::emit(src, &args, opts).unwrap_or_else(|e| panic!("emit: {e}\n{src}"))
}

/// Runs DML in spores as written (no run-time optimization); returns what it printed.
fn run_spores(src: &str, args: &[(&str, &str)]) -> String {
    let args: HashMap<String, String> = args
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let opts = spores::driver::RunOptions::default();
    let mut out = Vec::new();
    spores::driver::run_with(src, &args, &mut out, &opts)
        .unwrap_or_else(|e| panic!("spores: {e}\n{src}"));
    String::from_utf8(out).unwrap()
}

/// Whether two printed numbers agree to `tol` relative (NaN with NaN, infinities exactly).
fn close(a: f64, b: f64, tol: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    a == b || (a - b).abs() <= tol * a.abs().max(b.abs())
}

/// The checksums a program prints: each kernel's `result=` values, and the last line (the
/// programs' checksum convention).
fn checksums(out: &str) -> Vec<f64> {
    let mut v: Vec<f64> = out
        .split_whitespace()
        .filter_map(|t| t.strip_prefix("result="))
        .map(|t| t.parse().unwrap())
        .collect();
    if let Some(last) = out.lines().last().and_then(|l| l.trim().parse().ok()) {
        v.push(last);
    }
    v
}

/// The program as written and as emitted print the same first checksum in spores, to `tol`.
fn assert_same_checksum(src: &str, dml: &str, tol: f64) {
    let (a, b) = (run_spores(src, &[]), run_spores(dml, &[]));
    assert!(
        close(checksums(&a)[0], checksums(&b)[0], tol),
        "{a} vs {b}\n{dml}"
    );
}

/// The program as written and as emitted print the same first number in SystemDS (single
/// node), to `tol`.
fn assert_same_in_systemds(home: &Path, src: &str, dml: &str, tol: f64) {
    let single = systemds::Engine::SingleNode;
    let (a, b) = (
        run_systemds(home, single, src, &[]),
        run_systemds(home, single, dml, &[]),
    );
    let num = |o: &str| o.lines().find_map(|l| l.trim().parse::<f64>().ok());
    assert!(
        matches!((num(&a), num(&b)), (Some(x), Some(y)) if close(x, y, tol)),
        "{a} vs {b}\n{dml}"
    );
}

/// Generated programs (the differential fuzzer's), emitted and run as written by spores,
/// print what the fuzzer's reference evaluator computes (its tolerance and the exceptions it
/// allows optimized runs).
#[test]
fn emitted_generated_programs_agree_with_the_reference() {
    let (mut programs, mut optimized) = (0, 0);
    for index in 0..100 {
        let p = spores::fuzz::program(21, index);
        let Ok(expected) = reference::run(&p) else {
            continue;
        };
        let src = p.render();
        // the run-time node limit: these constant-heavy programs saturate to far more
        // nodes than real ones (and signed-zero constants, kept apart by the analysis, more
        // often meet in one class and make a run keep its statements as written), so the
        // ahead-of-time limit would only make the test slower; the printing of plans as
        // DML, which this test checks, does not depend on it
        let opts = emit::Options {
            nodes: Some(6000),
            ..emit::Options::default()
        };
        let e = emit_with(&src, &[], &opts);
        optimized += e.optimized;
        let out = spores::fuzz::run_source(&e.dml, false, Duration::from_secs(30))
            .unwrap_or_else(|(k, d)| panic!("{k:?}: {d}\n{}", e.dml));
        let tokens: Vec<&str> = out.split_whitespace().collect();
        assert_eq!(tokens.len(), expected.len(), "{}\n{out}", e.dml);
        for (t, x) in tokens.iter().zip(&expected) {
            assert_ne!(
                reference::agrees_optimized(t, x),
                reference::Verdict::Differ,
                "printed {t}, expected {:?}\noriginal:\n{src}\nemitted:\n{}\nexplain:\n{}",
                x.cell.v,
                e.dml,
                e.explain
            );
        }
        programs += 1;
    }
    println!("{programs} programs, {optimized} runs replaced by plans");
    // (37 of 100: constants that overflow or are zeros of different signs are not folded, and
    // `ifelse`, `%/%` and `%%` are barriers, so fewer statements of these programs get a plan)
    assert!(programs >= 60 && optimized >= 35, "{programs} {optimized}");
}

/// A program to emit: name, source, script arguments.
type Case = (String, String, Vec<(&'static str, &'static str)>);

/// The peer kernels and the example programs, at small shapes.
fn cases() -> Option<Vec<Case>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    let kernels = root.join("bench/peers/kernels");
    let programs = root.join("data/programs");
    if !kernels.is_dir() || !programs.is_dir() {
        println!(
            "skipped: no {} or {}",
            kernels.display(),
            programs.display()
        );
        return None;
    }
    let small = vec![
        ("m", "120"),
        ("n", "50"),
        ("k", "4"),
        ("sp", "0.1"),
        ("reps", "1"),
        ("warmup", "0"),
    ];
    let mut files: Vec<PathBuf> = std::fs::read_dir(&kernels)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "dml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        out.push((name, std::fs::read_to_string(&f).unwrap(), small.clone()));
    }
    for name in ["als", "pnmf"] {
        // the programs fix their sizes at the top; smaller ones keep the test fast
        let src = std::fs::read_to_string(programs.join(format!("{name}.la")))
            .unwrap()
            .replacen("m = 8000;", "m = 400;", 1)
            .replacen("n = 3000;", "n = 150;", 1);
        out.push((name.to_string(), src, vec![]));
    }
    Some(out)
}

/// One program that runs every case in turn, each after a `CASE name` line.
fn batch(parts: &[(String, String)]) -> String {
    let mut s = String::new();
    for (name, src) in parts {
        s.push_str(&format!("print(\"CASE {name}\")\n{src}\n"));
    }
    s
}

/// The checksums of each case of a batch's output.
fn per_case(out: &str) -> Vec<(String, Vec<f64>)> {
    let mut v: Vec<(String, String)> = Vec::new();
    for line in out.lines() {
        if line.starts_with("SystemDS Statistics") {
            break;
        }
        match line.strip_prefix("CASE ") {
            Some(n) => v.push((n.to_string(), String::new())),
            None => {
                if let Some((_, text)) = v.last_mut() {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
    }
    v.into_iter().map(|(n, t)| (n, checksums(&t))).collect()
}

fn run_systemds(home: &Path, engine: systemds::Engine, program: &str, args: &[String]) -> String {
    // one folder per run: tests run in parallel in one process
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let work = std::env::temp_dir().join(format!(
        "spores-emit-test-{}-{engine:?}-{run}",
        std::process::id()
    ));
    std::fs::create_dir_all(&work).unwrap();
    let file = work.join("batch.dml");
    std::fs::write(&file, program).unwrap();
    let o = systemds::command(home, engine, &file, args, &work)
        .unwrap()
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&work);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success() && !out.contains("An Error Occurred"),
        "SystemDS ({engine:?}): {out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// The peer kernels and als.la/pnmf.la: each emitted program checks in spores, replaces at
/// least one run, and prints the original's checksums when spores runs it; SystemDS (one
/// node, and Spark when asked for) runs original and emitted programs to the same checksums
/// (1e-8 relative).
#[test]
fn kernels_and_programs_keep_their_checksums() {
    let Some(cases) = cases() else { return };
    let mut originals = Vec::new();
    let mut emitted = Vec::new();
    let mut args: Vec<(&str, &str)> = Vec::new();
    for (name, src, a) in &cases {
        let e = emit_with(src, a, &emit::Options::default());
        // a run is kept as written only when spores has no cheaper plan or SystemDS's own
        // fused operators already run it as well (pnmf's updates)
        assert!(
            e.optimized > 0 || e.explain.contains("does not beat SystemDS's own"),
            "{name}: nothing optimized\n{}",
            e.explain
        );
        spores::driver::compile(&e.dml, &Default::default())
            .unwrap_or_else(|err| panic!("{name}: emitted DML does not check: {err}\n{}", e.dml));
        let (want, got) = (
            checksums(&run_spores(src, a)),
            checksums(&run_spores(&e.dml, a)),
        );
        assert!(!want.is_empty() && want.len() == got.len(), "{name}");
        for (w, g) in want.iter().zip(&got) {
            assert!(
                close(*w, *g, 1e-9),
                "{name} in spores: {w} vs {g}\n{}",
                e.dml
            );
        }
        originals.push((name.clone(), src.clone()));
        emitted.push((name.clone(), e.dml));
        for kv in a {
            if !args.contains(kv) {
                args.push(*kv);
            }
        }
    }
    let Some(home) = systemds::home() else {
        println!("skipped: SystemDS not installed (scripts/install-systemds.sh)");
        return;
    };
    let mut sargs = vec!["-nvargs".to_string()];
    sargs.extend(args.iter().map(|(k, v)| format!("{k}={v}")));
    let single = systemds::Engine::SingleNode;
    let want = per_case(&run_systemds(
        home.as_path(),
        single,
        &batch(&originals),
        &sargs,
    ));
    let mut engines = vec![single];
    let spark = std::env::var("SPORES_TEST_SPARK").is_ok_and(|v| v == "1");
    match (spark, systemds::spark_jars(&home)) {
        (true, Some(_)) => engines.push(systemds::Engine::Spark),
        (true, None) => println!("skipped Spark: no jars (scripts/install-systemds.sh --spark)"),
        (false, _) => println!("skipped Spark: set SPORES_TEST_SPARK=1"),
    }
    for engine in engines {
        let got = per_case(&run_systemds(&home, engine, &batch(&emitted), &sargs));
        assert_eq!(want.len(), cases.len());
        assert_eq!(got.len(), want.len());
        for ((name, w), (_, g)) in want.iter().zip(&got) {
            assert!(!w.is_empty() && w.len() == g.len(), "{name}: {w:?} {g:?}");
            for (a, b) in w.iter().zip(g) {
                assert!(close(*a, *b, 1e-8), "{name} ({engine:?}): {a} vs {b}");
            }
        }
        println!("SystemDS ({engine:?}): {} cases agree", want.len());
    }
}

/// Shapes of `read()` inputs come from Matrix Market headers and `--shape` hints; without
/// either, the run stays as written and the explanation says why.
#[test]
fn read_shapes_come_from_headers_and_hints() {
    let dir = std::env::temp_dir().join(format!("spores-emit-read-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (rows, cols) = (60, 40);
    let mut mm = format!("%%MatrixMarket matrix coordinate real general\n{rows} {cols} 30\n");
    for k in 0..30 {
        mm.push_str(&format!(
            "{} {} {}.5\n",
            1 + (7 * k) % rows,
            1 + (11 * k) % cols,
            k
        ));
    }
    let mtx = dir.join("X.mtx");
    std::fs::write(&mtx, mm).unwrap();
    let program = |path: &Path, format: &str| {
        format!(
            "X = read(\"{}\"{format})\nU = rand(rows={rows}, cols=3, seed=1)\n\
             V = rand(rows={cols}, cols=3, seed=2)\n# the gradient\nG = (U %*% t(V) - X) %*% V\nr = sum(G^2)\nprint(r)\n",
            path.display()
        )
    };
    let src = program(&mtx, ", format=\"mm\"");
    let e = emit_with(&src, &[], &emit::Options::default());
    assert_eq!(e.optimized, 1, "{}", e.explain);
    assert!(
        e.explain.contains(&format!("X {rows}x{cols} (from")),
        "{}",
        e.explain
    );
    assert!(e.dml.contains("# the gradient\n"), "{}", e.dml);
    assert_same_checksum(&src, &e.dml, 1e-9);

    // a CSV without .mtd: unknown until a hint gives it
    let csv = dir.join("X.csv");
    let mut text = String::new();
    for i in 0..rows {
        let row: Vec<String> = (0..cols)
            .map(|j| {
                if (i * j) % 7 == 1 {
                    format!("{i}.25")
                } else {
                    "0".into()
                }
            })
            .collect();
        text.push_str(&row.join(","));
        text.push('\n');
    }
    std::fs::write(&csv, text).unwrap();
    let src = program(&csv, ", format=\"csv\"");
    let e = emit_with(&src, &[], &emit::Options::default());
    assert_eq!(e.optimized, 0);
    assert!(
        e.explain.contains("kept as written: the shape of `read(")
            && e.explain.contains("` is not known before running"),
        "{}",
        e.explain
    );
    assert!(e.dml.ends_with(&src), "{}", e.dml);
    let opts = emit::Options {
        shapes: vec![emit::parse_shape(&format!("X={rows}x{cols}:60")).unwrap()],
        ..Default::default()
    };
    let e = emit_with(&src, &[], &opts);
    assert_eq!(e.optimized, 1, "{}", e.explain);
    assert_same_checksum(&src, &e.dml, 1e-9);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(emit::parse_shape("X=3x4:13").is_err());
    assert!(emit::parse_shape("X=3y4").is_err());
}

/// Outputs that later statements of the same run read as the run's inputs are computed into
/// temporaries first, so the emitted statements read the values the program means.
#[test]
fn reassigned_inputs_keep_their_meaning() {
    let src = "A = rand(rows=30, cols=20, seed=3)\nB = rand(rows=20, cols=30, seed=4)\n\
               C = A %*% B\nA = t(B) * 2\nD = A %*% B + C\nB = t(A)\nE = sum(A * t(B))\n\
               print(sum(A) + sum(B) + sum(C) + sum(D) + E)\n";
    let e = emit_with(src, &[], &emit::Options::default());
    assert_same_checksum(src, &e.dml, 1e-12);
}

/// Functions, control flow and prints stay as written around the replaced runs (a function
/// called with two shapes gets a planned copy for each, the original stays), and the emitted program prints what the original prints.
#[test]
fn functions_and_control_flow_are_kept() {
    let src = "f = function(matrix[double] A) return (double s) {\n  s = sum(A %*% t(A))\n}\n\
               X = rand(rows=40, cols=30, sparsity=0.2, seed=5)\nU = rand(rows=40, cols=4, seed=6)\n\
               V = rand(rows=30, cols=4, seed=7)\ni = 0\nwhile (i < 3) {\n  # residual\n  \
               R = (U %*% t(V) - X) %*% V\n  if (i == 1) {\n    print(\"mid \" + sum(R))\n  }\n  \
               U = U - 0.001 * R\n  i = i + 1\n}\nprint(f(U) + f(X))\n";
    let e = emit_with(src, &[], &emit::Options::default());
    assert!(e.optimized >= 1, "{}", e.explain);
    // two calls with different shapes: a copy for each, the original kept as written
    assert!(
        e.explain
            .contains("function f: copy f_spores1 for 1 call(s)")
            && e.explain
                .contains("function f: copy f_spores2 for 1 call(s)"),
        "{}",
        e.explain
    );
    assert!(
        e.dml.contains("print(f_spores1(U) + f_spores2(X))"),
        "{}",
        e.dml
    );
    assert!(e.dml.contains("  # residual\n"), "{}", e.dml);
    assert!(e.dml.contains("s = sum(A %*% t(A))"), "{}", e.dml);
    let (a, b) = (run_spores(src, &[]), run_spores(&e.dml, &[]));
    let (a, b): (Vec<&str>, Vec<&str>) = (
        a.split_whitespace().collect(),
        b.split_whitespace().collect(),
    );
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        match (x.parse::<f64>(), y.parse::<f64>()) {
            (Ok(x), Ok(y)) => assert!(close(x, y, 1e-9), "{x} vs {y}\n{}", e.dml),
            _ => assert_eq!(x, y),
        }
    }
}

/// `spores run --engine systemds` streams SystemDS's output and fails when SystemDS reports
/// an error (SystemDS itself exits with 0 then).
#[test]
fn run_engine_systemds_reports_output_and_failure() {
    if systemds::home().is_none() {
        println!("skipped: SystemDS not installed (scripts/install-systemds.sh)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("spores-emit-engine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("p.dml");
    std::fs::write(
        &file,
        "X = rand(rows=20, cols=10, seed=$s)\nU = rand(rows=20, cols=2, seed=2)\n\
         V = rand(rows=10, cols=2, seed=3)\nprint(\"loss \" + sum((X - U %*% t(V))^2))\n\
         if ($fail) { stop(\"asked to fail\") }\n",
    )
    .unwrap();
    let run = |fail: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_spores"))
            .args(["run", "--engine", "systemds"])
            .arg(&file)
            .args(["-nvargs", "s=1", &format!("fail={fail}")])
            .output()
            .unwrap()
    };
    let (ok, bad) = (run("FALSE"), run("TRUE"));
    let _ = std::fs::remove_dir_all(&dir);
    let out = String::from_utf8_lossy(&ok.stdout);
    assert!(ok.status.success() && out.contains("loss "), "{out}");
    assert_eq!(
        bad.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&bad.stdout)
    );
}

/// The als.la gradients at full size: `rand(min=-0.5, ...)` is finite (the negative bound is
/// a negation, folded), so the product chains reassociate and neither gradient builds the
/// dense users x items residual that SystemDS builds for the program as written; the
/// conjugate-gradient steps, which SystemDS's chain reordering already runs well, stay as
/// written.
#[test]
fn als_gradients_stay_sparse() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/programs/als.la");
    let Ok(src) = std::fs::read_to_string(&path) else {
        println!("skipped: no {}", path.display());
        return;
    };
    let e = emit_with(&src, &[], &emit::Options::default());
    let g: Vec<&str> = e
        .dml
        .lines()
        .filter(|l| l.trim_start().starts_with("G = "))
        .collect();
    assert_eq!(g.len(), 2, "{}", e.dml);
    for l in g {
        // U %*% t(V) (8000x3000) and V %*% t(U) (3000x8000) are the dense intermediates
        assert!(
            !l.contains("U %*% t(V)") && !l.contains("V %*% t(U)"),
            "{l}\n{}",
            e.explain
        );
    }
    assert!(e.explain.contains("U %*% tmmul(V, V)"), "{}", e.explain);
}

/// `sum(X * (U %*% t(V)))` over a sparse X is SystemDS's `wdivmm` (a dot product per
/// non-zero, a sparse result, then its sum); ahead of time spores looks far enough (its
/// node limit, `emit::AHEAD_OF_TIME_NODES`) to find `sum(V * (t(X) %*% U))`, one pass over
/// X and no sampled product, and the emitted program prints the original's sum.
#[test]
fn sampled_sums_become_thin_products() {
    let src = "X = rand(rows=4000, cols=1000, sparsity=0.01, seed=4)\n\
               U = rand(rows=4000, cols=10, seed=1)\nV = rand(rows=1000, cols=10, seed=2)\n\
               for (i in 1:2) {\n  r = sum(X * (U %*% t(V)))\n  print(r)\n}\n";
    let e = emit_with(src, &[], &emit::Options::default());
    let r: Vec<&str> = e
        .dml
        .lines()
        .filter(|l| l.trim_start().starts_with("r = "))
        .collect();
    assert_eq!(r.len(), 1, "{}", e.dml);
    assert!(
        !r[0].contains("t(V)") && r[0].contains("%*%"),
        "{}\n{}",
        r[0],
        e.explain
    );
    let (a, b) = (run_spores(src, &[]), run_spores(&e.dml, &[]));
    let (a, b) = (checksums(&a), checksums(&b));
    assert_eq!(a.len(), 1);
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert!(close(*x, *y, 1e-10), "{x} {y}");
    }
}

/// A matrix updated in a loop by something of unknown shape keeps its shape when that shape
/// is the only one the update can have (`U + a * S` is `U`'s shape unless U is a vector;
/// anything else fails at run time), so the runs that read it after the loop are planned.
#[test]
fn loop_updates_keep_a_known_shape() {
    let src = "X = rand(rows=3000, cols=800, sparsity=0.01, seed=4)\n\
               U = rand(rows=3000, cols=10, seed=1)\nV = rand(rows=800, cols=10, seed=2)\n\
               S = U\nfor (i in 1:2) {\n  if (i == 1) { S = U } else { S = V }\n  \
               if (nrow(S) == nrow(U)) { U = U + 0.1 * S }\n}\n\
               G = (X - U %*% t(V)) %*% V\nprint(sum(G))\n";
    let e = emit_with(src, &[], &emit::Options::default());
    // G's run is planned (its inputs listed), not kept for an unknown shape
    assert!(e.explain.contains("G: (X 3000x800"), "{}", e.explain);
    assert!(
        !e.explain.contains("the shape of `U` is not known"),
        "{}",
        e.explain
    );
    let (a, b) = (run_spores(src, &[]), run_spores(&e.dml, &[]));
    let (a, b) = (checksums(&a), checksums(&b));
    assert_eq!(a.len(), 1);
    assert!(close(a[0], b[0], 1e-10), "{a:?} {b:?}");
}

/// PNMF's updates and objective are `wdivmm`, `wdivmmt` and `wcemm` in SystemDS as written;
/// spores's plan for them is the same operators rescaled, which is no gain, so the block is
/// kept as written, with both costs in the explanation.
#[test]
fn runs_systemds_already_fuses_stay_as_written() {
    let src = "X = rand(rows=800, cols=300, sparsity=0.01, seed=4)\n\
               W = rand(rows=800, cols=10, seed=1)\nH = rand(rows=10, cols=300, seed=2)\n\
               i = 0\nwhile (i < 2) {\n  \
               H = (H * (t(W) %*% (X / (W %*% H + 1e-15)))) / t(colSums(W))\n  \
               W = (W * ((X / (W %*% H + 1e-15)) %*% t(H))) / t(rowSums(H))\n  \
               i = i + 1\n}\nprint(sum(W) + sum(H))\n";
    let e = emit_with(src, &[], &emit::Options::default());
    assert!(
        e.explain.contains("H, W: kept as written: the plan (cost")
            && e.explain
                .contains("does not beat SystemDS's own fused operators"),
        "{}",
        e.explain
    );
    assert!(e
        .dml
        .contains("  H = (H * (t(W) %*% (X / (W %*% H + 1e-15)))) / t(colSums(W))\n"));
}

/// `spores run -exec spark` (SystemDS's spelling of `--engine spark`) emits the program and
/// runs it in SystemDS on Spark in local mode, when Spark's jars are installed
/// (`scripts/install-systemds.sh --spark`); it prints what spores prints for the program.
#[test]
fn exec_spark_runs_on_spark_local_mode() {
    let Some(home) = systemds::home() else {
        println!("skipped: SystemDS not installed (scripts/install-systemds.sh)");
        return;
    };
    if systemds::spark_jars(&home).is_none() {
        println!("skipped: no Spark jars (scripts/install-systemds.sh --spark)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("spores-emit-spark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("p.dml");
    let src = "X = rand(rows=$m, cols=300, sparsity=0.01, seed=3)\n\
               U = rand(rows=$m, cols=5, seed=4)\nV = rand(rows=300, cols=5, seed=5)\n\
               G = (U %*% t(V) - X) %*% V\nprint(sum(G^2))\n";
    std::fs::write(&file, src).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_spores"))
        .args(["run", "-f"])
        .arg(&file)
        .args(["-exec", "spark", "-nvargs", "m=500"])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    // Spark ran it: SystemDS reports its Spark instructions
    assert!(text.contains("Number of executed Spark inst"), "{text}");
    let got: f64 = text
        .lines()
        .find_map(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no checksum in {text}"));
    let want = checksums(&run_spores(src, &[("m", "500")]))[0];
    assert!(close(want, got, 1e-8), "{want} vs {got}");
}

/// A function of the file called once is emitted with its body planned for that call's
/// shapes (its name, signature and comments kept); spores and SystemDS print the original's
/// checksum for it.
#[test]
fn function_bodies_are_planned_for_their_one_call() {
    let src = "# gradient\ngrad = function(Matrix[Double] X, Matrix[Double] U, Matrix[Double] V, \
               Double lambda) return (Matrix[Double] G) {\n  # the residual times V\n  \
               G = (U %*% t(V) - X) %*% V + lambda * U\n}\n\
               X = rand(rows=400, cols=150, sparsity=0.02, seed=3)\n\
               U = rand(rows=400, cols=4, seed=4)\nV = rand(rows=150, cols=4, seed=5)\n\
               G = grad(X, U, V, 0.001)\nprint(sum(G^2))\n";
    let e = emit_with(src, &[], &emit::Options::default());
    assert!(
        e.explain
            .contains("function grad: body planned for X 400x150, U 400x4, V 150x4, lambda=0.001: 1 run(s) replaced"),
        "{}",
        e.explain
    );
    assert!(
        e.dml.contains("grad = function(Matrix[Double] X,"),
        "{}",
        e.dml
    );
    assert!(
        e.dml.contains("  # the residual times V\n  G = "),
        "{}",
        e.dml
    );
    assert!(!e.dml.contains("U %*% t(V)"), "{}", e.dml);
    assert_same_checksum(src, &e.dml, 1e-9);
    let Some(home) = systemds::home() else {
        println!("skipped SystemDS: not installed (scripts/install-systemds.sh)");
        return;
    };
    assert_same_in_systemds(&home, src, &e.dml, 1e-9);
}

/// Whether a function is planned in place depends on its calls in the syntax tree: a name
/// followed by `(` in a comment or a string is no call (the body is still planned in place),
/// while a call from another function's body is one spores did not see from the top level
/// (the body is planned as a copy that only the seen call calls).
#[test]
fn calls_are_counted_in_the_syntax_tree() {
    let def = "grad = function(Matrix[Double] X, Matrix[Double] U, Matrix[Double] V) \
               return (Matrix[Double] G) {\n  G = (U %*% t(V) - X) %*% V\n}\n";
    let data = "X = rand(rows=300, cols=120, sparsity=0.02, seed=3)\n\
                U = rand(rows=300, cols=4, seed=4)\nV = rand(rows=120, cols=4, seed=5)\n";
    // comments and strings that look like calls
    let src = format!(
        "{def}{data}# grad(X, U, V) is called once\nG = grad(X, U, V)\n\
         print(\"grad(X, U, V): \" + sum(G^2))\n"
    );
    let e = emit_with(&src, &[], &emit::Options::default());
    assert!(
        e.explain.contains("function grad: body planned for"),
        "{}",
        e.explain
    );
    assert!(!e.dml.contains("grad_spores"), "{}", e.dml);
    // a second call, from another function's body
    let src = format!(
        "{def}twice = function(Matrix[Double] X, Matrix[Double] U, Matrix[Double] V) \
         return (Matrix[Double] G) {{\n  G = 2 * grad(X, U, V)\n}}\n{data}\
         G = grad(X, U, V)\nH = twice(X, U, V)\nprint(sum(G^2) + sum(H^2))\n"
    );
    let e = emit_with(&src, &[], &emit::Options::default());
    assert!(
        e.explain.contains("function grad: copy grad_spores"),
        "{}",
        e.explain
    );
    // the copy is called by the top level, the original by `twice`
    assert!(e.dml.contains("G = grad_spores"), "{}", e.dml);
    assert!(e.dml.contains("G = 2 * grad(X, U, V)"), "{}", e.dml);
    assert_same_checksum(&src, &e.dml, 1e-9);
}

/// The library path: a driver that calls a function of SystemDS's algorithm library
/// (`--lib` with `scripts/builtin` of SystemDS 3.4) from two places with different shapes
/// gets one planned copy per call, appended to the program (with no least gain: the command
/// line's keeps these small runs as written); the emitted program checks,
/// and prints the original's checksums in spores (always) and in SystemDS (when installed),
/// where the first call's is SystemDS's own recorded checksum of the driver.
#[test]
fn library_functions_are_planned_as_copies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/systemds-scripts");
    let Ok(expected) = std::fs::read_to_string(root.join("expected.tsv")) else {
        println!("skipped: no {}", root.display());
        return;
    };
    let recorded: f64 = expected
        .lines()
        .find_map(|l| l.strip_prefix("lmCG\t"))
        .and_then(|v| v.trim().parse().ok())
        .expect("expected.tsv has lmCG");
    let data = root.join("data").display().to_string();
    let src = std::fs::read_to_string(root.join("drivers/lmCG.dml"))
        .unwrap()
        .replace("\"data/", &format!("\"{data}/"))
        + "B2 = lmCG(X=X[1:500, ], y=y[1:500, ], icpt=1, maxi=50, verbose=FALSE)\n\
           print(sum(B2))\n";
    let lib = vec![root.join("builtin")];
    let opts = emit::Options {
        lib: lib.clone(),
        ..Default::default()
    };
    // what the command line emits: these plans save microseconds, below its least gain
    let cli = emit_with(
        &src,
        &[],
        &emit::Options {
            min_gain: emit::MIN_GAIN,
            ..opts.clone()
        },
    );
    assert!(
        cli.optimized == 0 && cli.explain.contains("saves less than"),
        "{}",
        cli.explain
    );
    // with no least gain per run but the command line's least gain per library copy: the
    // plans are found, and the copies are not made for them
    let copies = emit_with(
        &src,
        &[],
        &emit::Options {
            copy_gain: emit::LIBRARY_COPY_GAIN,
            ..opts.clone()
        },
    );
    assert!(
        copies.optimized == 0
            && copies
                .explain
                .contains("a copy of a library function must save"),
        "{}",
        copies.explain
    );
    let e = emit_with(&src, &[], &opts);
    assert!(e.optimized > 0, "{}", e.explain);
    for copy in ["lmCG_spores1", "lmCG_spores2"] {
        assert!(
            e.dml.contains(&format!("\n{copy} = function("))
                && e.dml.contains(&format!("= {copy}(X=")),
            "no {copy}:\n{}",
            e.dml
        );
    }
    spores::driver::compile_with_lib(&e.dml, &Default::default(), &lib)
        .unwrap_or_else(|err| panic!("emitted DML does not check: {err}\n{}", e.dml));
    let run = |text: &str| {
        let o = spores::driver::RunOptions {
            lib: lib.clone(),
            ..Default::default()
        };
        let mut out = Vec::new();
        spores::driver::run_with(text, &HashMap::new(), &mut out, &o)
            .unwrap_or_else(|err| panic!("spores: {err}\n{text}"));
        let out = String::from_utf8(out).unwrap();
        let nums: Vec<f64> = out.lines().filter_map(|l| l.trim().parse().ok()).collect();
        assert_eq!(nums.len(), 2, "{out}");
        nums
    };
    let (want, got) = (run(&src), run(&e.dml));
    assert!(
        close(want[0], recorded, 1e-8),
        "{want:?} vs SystemDS's {recorded}"
    );
    for (w, g) in want.iter().zip(&got) {
        assert!(close(*w, *g, 1e-9), "in spores: {w} vs {g}\n{}", e.dml);
    }
    let Some(home) = systemds::home() else {
        println!("skipped SystemDS: not installed (scripts/install-systemds.sh)");
        return;
    };
    let out = run_systemds(
        &home,
        systemds::Engine::SingleNode,
        &batch(&[("original".into(), src), ("emitted".into(), e.dml)]),
        &[],
    );
    let nums = |case: &str| -> Vec<f64> {
        let text = out.split(&format!("CASE {case}\n")).nth(1).unwrap_or("");
        text.lines()
            .take_while(|l| !l.starts_with("CASE "))
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    };
    let (a, b) = (nums("original"), nums("emitted"));
    assert!(a.len() == 2 && b.len() == 2, "{out}");
    assert!(close(a[0], recorded, 1e-8), "{a:?} vs {recorded}");
    for (x, y) in a.iter().zip(&b) {
        assert!(close(*x, *y, 1e-8), "in SystemDS: {x} vs {y}");
    }
}

/// A constant string argument selects its branch in the function's planned body (the
/// builtin alsCG's `if (regType == "L2")`): the variable that branch sizes keeps one shape,
/// so the run that uses it is planned.
#[test]
fn constant_strings_select_their_branch() {
    let src = "grad = function(Matrix[Double] X, Matrix[Double] U, Matrix[Double] V, \
               String how) return (Matrix[Double] G) {\n  w = matrix(0, rows=1, cols=1)\n  \
               if (how == \"L2\") {\n    w = matrix(1, rows=nrow(X), cols=1)\n  }\n  \
               G = (U %*% t(V) - X) %*% V + 0.001 * U * w\n}\n\
               X = rand(rows=300, cols=120, sparsity=0.02, seed=3)\n\
               U = rand(rows=300, cols=4, seed=4)\nV = rand(rows=120, cols=4, seed=5)\n\
               G = grad(X, U, V, \"L2\")\nprint(sum(G^2))\n";
    let e = emit_with(src, &[], &emit::Options::default());
    assert!(
        e.explain.contains("function grad: body planned for")
            && e.explain.contains("1 run(s) replaced"),
        "{}",
        e.explain
    );
    assert!(!e.dml.contains("U %*% t(V)"), "{}", e.dml);
    assert_same_checksum(src, &e.dml, 1e-9);
    // a string that differs from the compared one takes the other branch: w stays 1x1
    let other = src.replace("grad(X, U, V, \"L2\")", "grad(X, U, V, \"none\")");
    let e = emit_with(&other, &[], &emit::Options::default());
    assert_same_checksum(&other, &e.dml, 1e-9);
}

/// Shapes returned by a function reach the statements after its call (the inter-procedural
/// analysis SystemDS does): the gradient after `Y = prep(X)` is planned with `Y`'s shape and
/// replaced, and the emitted program prints the original's checksum in spores and (when
/// installed) SystemDS.
#[test]
fn returned_shapes_plan_the_statements_after_a_call() {
    let src = "prep = function(Matrix[Double] X, Double s) return (Matrix[Double] Y) {\n  \
               Y = s * X\n}\n\
               X = rand(rows=400, cols=150, sparsity=0.02, seed=3)\n\
               U = rand(rows=400, cols=4, seed=4)\nV = rand(rows=150, cols=4, seed=5)\n\
               Y = prep(X, 0.5)\nG = (U %*% t(V) - Y) %*% V\nprint(sum(G^2))\n";
    let e = emit_with(src, &[], &emit::Options::default());
    assert!(
        !e.explain.contains("not known before running") && e.optimized >= 1,
        "{}",
        e.explain
    );
    assert!(!e.dml.contains("U %*% t(V)"), "{}", e.dml);
    assert_same_checksum(src, &e.dml, 1e-9);
    let Some(home) = systemds::home() else {
        println!("skipped SystemDS: not installed (scripts/install-systemds.sh)");
        return;
    };
    assert_same_in_systemds(&home, src, &e.dml, 1e-8);
}

/// SystemDS's pca calls `[X, Centering, ScaleFactor] = scale(X, center, scale)` and then
/// computes the covariance of the scaled `X`: with the shapes scale returns, that run is
/// planned (compared with SystemDS's own operators) instead of kept for an unknown shape.
#[test]
fn library_calls_return_their_shapes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/systemds-scripts");
    let Ok(driver) = std::fs::read_to_string(root.join("drivers/pca.dml")) else {
        println!("skipped: no {}", root.display());
        return;
    };
    let data = root.join("data").display().to_string();
    let src = driver.replace("\"data/", &format!("\"{data}/"));
    let opts = emit::Options {
        lib: vec![root.join("builtin")],
        ..Default::default()
    };
    let e = emit_with(&src, &[], &opts);
    let cov = e
        .explain
        .lines()
        .find(|l| l.contains(" mu, C: "))
        .unwrap_or_else(|| panic!("no run for mu, C:\n{}", e.explain));
    assert!(!cov.contains("not known"), "{}", e.explain);
    spores::driver::compile_with_lib(&e.dml, &Default::default(), &opts.lib)
        .unwrap_or_else(|err| panic!("emitted DML does not check: {err}\n{}", e.dml));
}

/// `--shape` for a driver whose input has no header: multiLogReg (SystemDS's library) is
/// planned for its call only when the CSV input's shape is hinted, and a hint that names no
/// input (the class count `K`, which multiLogReg computes from the labels) is reported as
/// ignored. The emitted program prints the original's checksum in spores.
#[test]
fn shape_hints_reach_library_calls() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/systemds-scripts");
    let Ok(mtx) = std::fs::read_to_string(root.join("data/X.mtx")) else {
        println!("skipped: no {}", root.display());
        return;
    };
    let dir = std::env::temp_dir().join(format!("spores-emit-hint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // the Matrix Market file as a dense CSV without .mtd
    let mut lines = mtx.lines().filter(|l| !l.starts_with('%'));
    let dims: Vec<usize> = lines
        .next()
        .unwrap()
        .split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect();
    let (rows, cols) = (dims[0], dims[1]);
    let mut cells = vec![0.0_f64; rows * cols];
    for l in lines {
        let t: Vec<&str> = l.split_whitespace().collect();
        let (i, j): (usize, usize) = (t[0].parse().unwrap(), t[1].parse().unwrap());
        cells[(i - 1) * cols + j - 1] = t[2].parse().unwrap();
    }
    let csv: String = cells
        .chunks(cols)
        .map(|r| {
            let r: Vec<String> = r.iter().map(|v| format!("{v:?}")).collect();
            r.join(",") + "\n"
        })
        .collect();
    let path = dir.join("X.csv");
    std::fs::write(&path, csv).unwrap();
    let src = format!(
        "X = read(\"{}\", format=\"csv\")\nyc = read(\"{}\", format=\"mm\")\n\
         betas = multiLogReg(X=X, Y=yc, icpt=2, maxi=5, verbose=FALSE)\nprint(sum(betas))\n",
        path.display(),
        root.join("data/yc.mtx").display()
    );
    let lib = vec![root.join("builtin")];
    let plain = emit_with(
        &src,
        &[],
        &emit::Options {
            lib: lib.clone(),
            ..Default::default()
        },
    );
    assert!(
        plain
            .explain
            .contains("the shape of its argument `X` is not known"),
        "{}",
        plain.explain
    );
    let opts = emit::Options {
        lib: lib.clone(),
        shapes: vec![
            emit::parse_shape(&format!("X={rows}x{cols}")).unwrap(),
            emit::parse_shape("K=1000x3").unwrap(),
        ],
        ..Default::default()
    };
    let e = emit_with(&src, &[], &opts);
    assert!(
        e.explain
            .contains(&format!("body planned for X {rows}x{cols}, Y {rows}x1"))
            && e.explain.contains("--shape K ignored"),
        "{}",
        e.explain
    );
    let run = |text: &str| {
        let o = spores::driver::RunOptions {
            lib: lib.clone(),
            ..Default::default()
        };
        let mut out = Vec::new();
        spores::driver::run_with(text, &HashMap::new(), &mut out, &o)
            .unwrap_or_else(|err| panic!("spores: {err}\n{text}"));
        checksums(&String::from_utf8(out).unwrap())[0]
    };
    let (a, b) = (run(&src), run(&e.dml));
    assert!(close(a, b, 1e-9), "{a} vs {b}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A function's output may hold Inf or NaN (it is not an input the program reads, which are
/// assumed finite): a plan after the call does not factor `Y * 3 - Y * 2` into `Y`
/// (where `Y = log(X)` of a sparse `X` is -Inf, `-Inf * 3 - -Inf * 2` is NaN while `Y` is
/// -Inf), for a call used as an expression and as a statement.
#[test]
fn returned_values_are_not_assumed_finite() {
    for call in ["Y = f(X)", "[Y] = f(X)"] {
        let src = format!(
            "f = function(Matrix[Double] X) return (Matrix[Double] Y) {{\n  Y = log(X)\n}}\n\
             X = rand(rows=50, cols=40, sparsity=0.3, seed=1)\n{call}\n\
             Z = Y * 3 - Y * 2\nprint(sum(Z))\n"
        );
        let e = emit_with(&src, &[], &emit::Options::default());
        assert!(
            !e.explain.contains("not known before running"),
            "{}",
            e.explain
        );
        let (a, b) = (run_spores(&src, &[]), run_spores(&e.dml, &[]));
        let (x, y) = (checksums(&a)[0], checksums(&b)[0]);
        assert!(
            x.is_nan() && close(x, y, 1e-9),
            "{a} vs {b}\n{}\n{}",
            e.dml,
            e.explain
        );
    }
}

/// The written term after [`emit::systemds_consumer_rewrites`], as text, and how many
/// rewrites applied.
fn consumer_rewritten(term: &str) -> (String, usize) {
    let t: egg::RecExpr<spores::ir::Ir> = term.parse().unwrap();
    let root = egg::Id::from(t.as_ref().len() - 1);
    let (out, roots, n) = emit::systemds_consumer_rewrites(&t, &[root]);
    assert_eq!(roots.len(), 1);
    assert_eq!(usize::from(roots[0]), out.as_ref().len() - 1);
    (out.to_string(), n)
}

/// SystemDS aggregates a factor instead of a matrix product, and drops a transpose or an
/// aggregate under a full sum, only when the product (transpose, aggregate) has no other
/// consumer; the model applies that to the run as written, counting consumers after merging
/// equal subterms (SystemDS's common-subexpression elimination comes first).
#[test]
fn systemds_consumer_rewrites_need_one_consumer() {
    // sum(W %*% H) alone: column sums of W times row sums of H
    let (t, n) = consumer_rewritten("(msum (mmul W H))");
    assert_eq!(n, 1);
    assert_eq!(t, "(msum (m* (t (colSums W)) (rowSums H)))");
    // through a transpose and a row aggregate under the sum
    let (t, n) = consumer_rewritten("(msum (t (rowSums (mmul W H))))");
    assert_eq!(n, 3, "{t}");
    assert!(!t.contains("mmul"), "{t}");
    // colSums / rowSums of a product
    assert_eq!(
        consumer_rewritten("(colSums (mmul W H))").0,
        "(mmul (colSums W) H)"
    );
    assert_eq!(
        consumer_rewritten("(rowSums (mmul W H))").0,
        "(mmul W (rowSums H))"
    );
    // the product shared (written twice, merged): SystemDS forms it once, nothing applies
    let shared = "(m- (msum (mmul W H)) (msum (m* X (log (m+ (mmul W H) eps)))))";
    let (t, n) = consumer_rewritten(shared);
    assert_eq!(n, 0, "{t}");
    assert_eq!(t, shared);
    // a transpose read by two operations stays
    assert_eq!(consumer_rewritten("(m+ (msum (t X)) (colSums (t X)))").1, 0);
}

/// `sum(W %*% H)` alone is `sum(t(colSums(W)) * rowSums(H))` in SystemDS already, so a plan
/// avoiding the dense product gains nothing there and the run is kept as written; with the
/// product also feeding `wcemm`, SystemDS forms it, and spores's plan replaces the run.
#[test]
fn aggregates_of_unshared_products_stay_as_written() {
    let head = "X = rand(rows=2000, cols=5000, sparsity=0.01, seed=4)\n\
                W = rand(rows=2000, cols=10, seed=1)\nH = rand(rows=10, cols=5000, seed=2)\n";
    let opts = emit::Options {
        min_gain: emit::MIN_GAIN,
        ..Default::default()
    };
    let alone = format!("{head}r = sum(W %*% H)\nprint(r)\n");
    let e = emit_with(&alone, &[], &opts);
    assert_eq!(e.optimized, 0, "{}", e.explain);
    assert!(e.dml.contains("\nr = sum(W %*% H)\n"), "{}", e.dml);
    let shared = format!("{head}r = sum(W %*% H) - sum(X * log(W %*% H + 1e-8))\nprint(r)\n");
    let e = emit_with(&shared, &[], &opts);
    assert_eq!(e.optimized, 1, "{}", e.explain);
    assert!(!e.dml.contains("sum(W %*% H)"), "{}", e.dml);
    assert_same_checksum(&shared, &e.dml, 1e-10);
}

/// The Spark instructions of a term: operators with a matrix operand or result, `tmmul` as a
/// transpose and a product, scalar arithmetic none.
#[test]
fn spark_instructions_count_matrix_operators() {
    let shape = |s: egg::Symbol| match s.as_str() {
        "X" => Some((200, 50)),
        "U" => Some((200, 3)),
        "V" => Some((50, 3)),
        _ => None,
    };
    let count = |t: &str| {
        let e: egg::RecExpr<spores::ir::Ir> = t.parse().unwrap();
        let root = egg::Id::from(e.as_ref().len() - 1);
        emit::spark_instructions(&e, &[root], &shape, &|_| None)
    };
    assert_eq!(count("(msum (m* V (tmmul X U)))"), Some(4));
    assert_eq!(count("(msum (m* X (mmul U (t V))))"), Some(4));
    assert_eq!(count("(m+ (msum X) (m* a 2))"), Some(1));
    assert_eq!(count("(msum (mmul X W))"), None, "W has no shape");
}

/// On Spark (`emit::Options::engine`) each Spark instruction has a fixed cost on both
/// sides: `sum(X * (U %*% t(V)))` as a thin product (one pass over X on one node) takes
/// more instructions than SystemDS's fused operator and is kept as written there, while the
/// ALS gradient's plan (no dense 20000 x 5000 product) replaces the run on both engines.
#[test]
fn spark_engine_charges_each_instruction() {
    let head = "X = rand(rows=20000, cols=5000, sparsity=0.01, seed=4)\n\
                U = rand(rows=20000, cols=10, seed=1)\nV = rand(rows=5000, cols=10, seed=2)\n";
    let spark = emit::Options {
        min_gain: emit::MIN_GAIN,
        engine: systemds::Engine::Spark,
        ..Default::default()
    };
    let single = emit::Options {
        engine: systemds::Engine::SingleNode,
        ..spark.clone()
    };
    let xuv = format!("{head}r = sum(X * (U %*% t(V)))\nprint(r)\n");
    assert_eq!(emit_with(&xuv, &[], &single).optimized, 1);
    let e = emit_with(&xuv, &[], &spark);
    assert_eq!(e.optimized, 0, "{}", e.explain);
    assert!(
        e.explain.contains("Spark instructions 4 against 2"),
        "{}",
        e.explain
    );
    let grad = format!("{head}G = (U %*% t(V) - X) %*% V\nprint(sum(G^2))\n");
    for o in [&single, &spark] {
        let e = emit_with(&grad, &[], o);
        assert_eq!(e.optimized, 1, "{:?}: {}", o.engine, e.explain);
    }
}
