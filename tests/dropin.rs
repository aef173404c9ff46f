//! `spores run` in place of SystemDS's command line: every argument form SystemDS accepts,
//! `$1`..`$N` typed as SystemDS types them, and the files a program reads and writes
//! (formats, `.mtd` metadata, scalars, created folders, clear errors for bad files).

use std::path::Path;
use std::process::Command;

#[allow(dead_code)] // this binary uses only the scratch folders
mod sysds;

fn spores(args: &[&str]) -> (i32, String, String) {
    outcome(Command::new(env!("CARGO_BIN_EXE_spores")).args(args))
}

/// [`spores`] run in the folder `dir` (relative paths in the program resolve there).
fn spores_at(dir: &Path, args: &[&str]) -> (i32, String, String) {
    outcome(
        Command::new(env!("CARGO_BIN_EXE_spores"))
            .args(args)
            .current_dir(dir),
    )
}

/// Exit code (-1 when killed by a signal), stdout and stderr of a command.
fn outcome(cmd: &mut Command) -> (i32, String, String) {
    let o = cmd.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A fresh folder for one test, removed when the test passes.
fn tmp(name: &str) -> sysds::Scratch {
    sysds::tmp("dropin", name)
}

fn write(path: &Path, text: &str) -> String {
    std::fs::write(path, text).unwrap();
    path.display().to_string()
}

#[test]
fn every_argument_form_gives_the_same_values() {
    let dir = tmp("forms");
    let prog = write(
        &dir.join("args.dml"),
        "print($1 + 1)\nprint($2)\nprint($3)\nprint($4 + \"!\")\nprint($k * 2)\nprint(ifdef($9, 7))\n",
    );
    // $1 is an integer, 1e3 a double, TRUE a boolean, a quoted word a string without quotes
    let want = "42\n1000.0\nTRUE\nq!\n5.0\n7\n";
    let forms: Vec<Vec<&str>> = vec![
        vec![
            "run", &prog, "-args", "41", "1e3", "TRUE", "'q'", "-nvargs", "k=2.5",
        ],
        vec![
            "run", "-f", &prog, "-nvargs", "k=2.5", "-args", "41", "1e3", "TRUE", "'q'",
        ],
        vec![
            "run", "--args", "41", "1e3", "TRUE", "'q'", "--nvargs", "k=2.5", &prog,
        ],
        vec![
            "run", "-nvargs", "k=2.5", "-args", "41", "1e3", "TRUE", "'q'", &prog,
        ],
        vec![
            "run",
            "-exec",
            "singlenode",
            "-f",
            &prog,
            "-args",
            "41",
            "1e3",
            "TRUE",
            "q",
            "--nvargs=k=2.5",
            "--no-opt",
        ],
    ];
    for f in &forms {
        let (code, out, err) = spores(f);
        assert_eq!(code, 0, "{f:?}: {err}");
        assert_eq!(out, want, "{f:?}");
        assert!(!err.contains("warning"), "{f:?}: {err}");
    }
    // SystemDS's spellings of spores's options
    let (code, out, err) = spores(&[
        "run", "-stats", "-explain", "-f", &prog, "-args", "41", "1e3", "TRUE", "q", "-nvargs",
        "k=1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("42\n"), "{out}");
    assert!(err.contains("Heavy hitter instructions"), "{err}");
    // an empty -args value leaves its $N unset, as in SystemDS
    let (code, _, err) = spores(&[
        "run", &prog, "-args", "41", "", "TRUE", "q", "-nvargs", "k=1",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("script argument `$2` is not set"), "{err}");
}

#[test]
fn missing_unused_and_malformed_arguments() {
    let dir = tmp("bad-args");
    let prog = write(
        &dir.join("p.dml"),
        "x = $1\ny = ifdef($n, 3)\nprint(x + y)\n",
    );
    // a missing positional argument is an error naming it, at check time
    let (code, _, err) = spores(&["run", &prog]);
    assert_eq!(code, 1);
    assert!(err.contains("script argument `$1` is not set"), "{err}");
    assert!(err.contains("p.dml:1:5"), "{err}");
    // arguments the program never refers to are warnings
    let (code, out, err) = spores(&["run", &prog, "-args", "1", "2", "-nvargs", "n=4", "nn=5"]);
    assert_eq!((code, out.as_str()), (0, "5\n"), "{err}");
    assert!(
        err.contains("warning: -args value 2 (`$2`) is not used"),
        "{err}"
    );
    assert!(err.contains("warning: -nvargs nn=5 is not used"), "{err}");
    assert!(!err.contains("n=4"), "{err}");
    for bad in [
        vec!["run", &prog, "-exec", "hadoop"],
        vec!["run", &prog, "-nvargs", "1n=3"],
        vec!["run", &prog, "-nvargs", "n="],
        vec!["run", &prog, "-nvargs", "n"],
        vec!["run", "-f", &prog, "-f", "other.dml"],
        vec!["run", "-args", "1"],
    ] {
        let (code, _, err) = spores(&bad);
        assert_eq!(code, 2, "{bad:?}: {err}");
    }
}

/// SystemDS's command lines with its other settings run unchanged: the settings that change
/// nothing here are warnings, `-s` runs the text it is given, `-clean` runs nothing.
#[test]
fn systemds_settings_and_inline_scripts() {
    let dir = tmp("settings");
    let prog = write(&dir.join("p.dml"), "print(\"r=\" + ($1 * 2))\n");
    for argv in [
        vec!["run", "-seed", "7", "-f", &prog, "-args", "3"],
        vec![
            "run",
            "-lineage",
            "reuse_full",
            "-f",
            &prog,
            "-args",
            "3",
            "-mem",
        ],
        vec![
            "run",
            "-gpu",
            &prog,
            "-args",
            "3",
            "-sparseIntermediate",
            "-debug",
        ],
        vec!["run", "-f", &prog, "-args", "3", "-explain", "--no-opt"],
        vec![
            "run",
            "-s",
            "print(\"r=\" + ($1 * 2))",
            "-args",
            "3",
            "-stats",
        ],
    ] {
        let (code, out, err) = spores_at(&dir, &argv);
        assert_eq!(code, 0, "{argv:?}: {err}");
        assert!(out.starts_with("r=6\n"), "{argv:?}: {out}");
    }
    // the inline script's diagnostics name it
    let (code, _, err) = spores_at(&dir, &["run", "-s", "x = 1 +", "-args", "3"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("<-s script>"), "{err}");
    let (code, out, err) = spores_at(&dir, &["run", "-clean"]);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    // a configuration file that does not exist stops the run, as in SystemDS
    let (code, _, err) = spores_at(&dir, &["run", &prog, "-config", "nope.xml", "-args", "3"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nope.xml"), "{err}");
}

/// A branch that fails whenever it runs does not reach the code after the `if`: when both
/// branches fail (for these arguments), the run stops at the taken one's statement with its
/// own message, and `spores check` accepts the program (other arguments make it valid).
#[test]
fn a_failing_branch_reports_its_own_error() {
    let dir = tmp("failing-branch");
    let prog = write(
        &dir.join("p.dml"),
        "A = matrix(3, rows=$1, cols=$1)\nif ($2) {\n  A[10, 20] = 7\n} else {\n  A[10:19, 1] = A[1:10, 1]\n}\nprint(sum(A))\n",
    );
    for (n, taken, want) in [
        ("10", "TRUE", "column index 20 out of bounds"),
        ("10", "FALSE", "row index 19 out of bounds"),
    ] {
        let (code, out, err) = spores(&["run", &prog, "-args", n, taken]);
        assert_eq!((code, out.as_str()), (1, ""), "{err}");
        assert!(err.contains(want), "{taken}: {err}");
        assert!(!err.contains("undefined variable"), "{err}");
    }
    // with room for both indexings either branch runs to the print
    let (code, out, err) = spores(&["run", &prog, "-args", "20", "TRUE"]);
    assert_eq!((code, out.as_str()), (0, "1204.0\n"), "{err}");
    let (code, _, err) = spores(&["check", &prog, "-args", "10", "TRUE"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn written_files_read_back_in_every_format() {
    let dir = tmp("files");
    let out = dir.join("deep/er/out");
    let prog = write(
        &dir.join("w.dml"),
        "X = rand(rows=$r, cols=$c, min=-5, max=5, sparsity=$sp, seed=4)
write(X, $out + \"/X\")
write(X, $out + \"/X.csv\", format=\"csv\")
write(X, $out + \"/Xh.csv\", format=\"csv\", header=TRUE, sep=\";\")
write(X, $out + \"/X.mtx\", format=\"mm\")
s = sum(X)
write(s, $out + \"/s\")
n = nrow(X)
write(n, $out + \"/n\")
b = s > 0
write(b, $out + \"/b\")
str = \"a string\"
write(str, $out + \"/str\")
print(s)
",
    );
    let read = write(
        &dir.join("r.dml"),
        "A = read($out + \"/X\")
B = read($out + \"/X.csv\")
C = read($out + \"/Xh.csv\")
D = read($out + \"/X.mtx\")
E = read($out + \"/X.csv\", format=\"csv\", header=FALSE, sep=\",\")
s = read($out + \"/s\", data_type=\"scalar\", value_type=\"double\")
n = read($out + \"/n\")
b = read($out + \"/b\")
str = read($out + \"/str\")
print(s)
print(sum(abs(A - B)) + sum(abs(A - C)) + sum(abs(A - D)) + sum(abs(A - E)))
print(sum(A) == s)
print(n + nrow(A))
print(b)
print(str)
s2 = read($out + \"/s\")
print(s2 + \" \" + n + \" \" + b + \" \" + str)
",
    );
    let o = out.display().to_string();
    for (r, c, sp) in [("30", "20", "0.1"), ("12", "7", "1.0")] {
        let args = ["-nvargs", "r", "c", "sp", "out"];
        let nv = [
            format!("r={r}"),
            format!("c={c}"),
            format!("sp={sp}"),
            format!("out={o}"),
        ];
        let (code, sum, err) = spores(&["run", &prog, args[0], &nv[0], &nv[1], &nv[2], &nv[3]]);
        assert_eq!(code, 0, "{err}");
        let (code, back, err) = spores(&["run", &read, "-nvargs", &nv[3]]);
        assert_eq!(code, 0, "{err}");
        let lines: Vec<&str> = back.lines().collect();
        assert_eq!(lines[0], sum.trim(), "{back}");
        assert_eq!(
            &lines[1..5],
            [
                "0.0",
                "TRUE",
                &(2 * r.parse::<i32>().unwrap()).to_string(),
                {
                    if sum.trim().starts_with('-') {
                        "FALSE"
                    } else {
                        "TRUE"
                    }
                }
            ]
        );
        assert_eq!(lines[5], "a string");
        // a path built from constant strings is known when the program is checked: the
        // scalars' `.mtd`s type them there, so they concatenate to a string (as in SystemDS)
        assert_eq!(
            lines[6],
            format!("{} {r} {} a string", sum.trim(), lines[4]),
            "{back}"
        );
        let mtd = std::fs::read_to_string(out.join("X.mtd")).unwrap();
        assert!(mtd.contains(&format!("\"rows\": {r},")), "{mtd}");
        assert!(mtd.contains("\"format\": \"text\","), "{mtd}");
        assert!(!out.join("X.mtx.mtd").exists());
        assert_eq!(std::fs::read_to_string(out.join("n")).unwrap(), r);
    }
}

/// `read(..., naStrings=...)` takes one string or a list of them (SystemDS joins a list with
/// its `·` separator): the fields equal to one of them read as NaN.
#[test]
fn na_strings_are_a_string_or_a_list() {
    let dir = tmp("nastrings");
    write(&dir.join("m.csv"), "1,NA,3\n4,null,-\n7,8,9\n");
    let prog = write(
        &dir.join("na.dml"),
        "A = read(\"m.csv\", format=\"csv\", naStrings=[\"NA\", \"null\", \"-\"])
B = read(\"m.csv\", format=\"csv\", naStrings=\"NA\u{b7}null\u{b7}-\")
C = read(\"m.csv\", format=\"csv\", naStrings=list(\"NA\", \"null\", \"-\"))
print(sum(is.nan(A)) + \" \" + sum(is.nan(B)) + \" \" + sum(is.nan(C)))
print(sum(replace(target=A, pattern=NaN, replacement=0)))
",
    );
    let (code, out, err) = spores_at(&dir, &["run", &prog]);
    assert_eq!(code, 0, "{err}");
    // (what SystemDS 3.4 prints for this program)
    assert_eq!(out, "3.0 3.0 3.0\n32.0\n");
    // anything but strings in the list is an error naming the argument
    let bad = write(
        &dir.join("bad.dml"),
        "A = read(\"m.csv\", format=\"csv\", naStrings=list(\"NA\", 1))\nprint(sum(A))\n",
    );
    let (code, _, err) = spores_at(&dir, &["run", &bad]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("naStrings"), "{err}");
}

#[test]
fn bad_files_are_clear_errors() {
    let dir = tmp("badfiles");
    let prog = write(&dir.join("r.dml"), "X = read($f)\nprint(sum(X))\n");
    let cases = [
        (
            "trunc.csv",
            "1,2\n3,4\n",
            Some("{\"rows\": 3, \"cols\": 2, \"format\": \"csv\"}"),
            ":2: the file ends after 2 rows",
        ),
        ("short.csv", "1,2\n3\n", None, ":2: 1 fields, expected 2"),
        (
            "cells.txt",
            "1 1 1\n1 9 2\n",
            Some("{\"rows\": 2, \"cols\": 2, \"format\": \"text\"}"),
            ":2: column index 9 out of range",
        ),
        (
            "fmt.csv",
            "1,2\n",
            Some("{\"rows\": 1, \"cols\": 2, \"format\": \"xml\"}"),
            "unknown format \"xml\"",
        ),
        (
            "huge.csv",
            "1,2\n",
            Some("{\"rows\": 2000000000, \"cols\": 2000000000, \"format\": \"csv\"}"),
            "needs about",
        ),
        (
            "json.csv",
            "1,2\n",
            Some("{\"rows\": 1,"),
            ".mtd:1: not JSON",
        ),
    ];
    for (name, body, mtd, want) in cases {
        let p = dir.join(name);
        write(&p, body);
        if let Some(m) = mtd {
            write(&dir.join(format!("{name}.mtd")), m);
        }
        let f = format!("f={}", p.display());
        let (code, _, err) = spores(&["run", &prog, "-nvargs", &f]);
        assert_eq!(code, 1, "{name}: {err}");
        assert!(err.contains(want), "{name}: {err}");
        assert!(err.contains(&p.display().to_string()), "{name}: {err}");
        assert!(err.contains("r.dml:1:5"), "{name}: {err}");
    }
}

#[test]
fn extract_and_equiv_report_bad_files() {
    let (code, _, err) = spores(&["extract", "no/such/graph.json"]);
    assert_eq!(code, 2, "{err}");
    let dir = tmp("equiv");
    let f = write(&dir.join("bad.tsv"), "this is not a table\n");
    let (code, out, err) = spores(&["equiv", &f]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("bad.tsv: line 1"), "{err}");
}

/// `source("file.dml") as ns` and `ns::f(..)` calls (one and several outputs, a sourced file
/// sourcing another, a local function of the same name as a sourced one, `eval` of a name
/// whose namespace is the sourced file's path, as SystemDS names it): the same printed values
/// as the program with those functions written in it; an unknown namespace or function is an
/// error at the call.
#[test]
fn sourced_functions_are_called_through_their_namespace() {
    let dir = tmp("source");
    write(
        &dir.join("lib.dml"),
        "cube = function(Double x) return (Double y) { y = x^3 }\n",
    );
    write(
        &dir.join("lib2.dml"),
        "source(\"lib.dml\") as inner\n\
         two = function(Matrix[Double] X) return (Double a, Matrix[Double] B) {\n\
           a = inner::cube(sum(X)); B = helper(X) }\n\
         helper = function(Matrix[Double] X) return (Matrix[Double] Y) { Y = X + 1 }\n",
    );
    let main = write(
        &dir.join("main.dml"),
        "source(\"lib.dml\") as fns1\nsource(\"lib2.dml\") as L2\n\
         print(fns1::cube(2))\n[a, B] = L2::two(matrix(0.5, 2, 2))\nprint(a + \" \" + sum(B))\n\
         cube = function(Double x) return (Double y) { y = -1 }\nprint(cube(2))\n\
         print(eval(\"lib.dml::cube\", 3))\nns = \"./lib.dml\"\nprint(eval(ns + \"::cube\", list(4)))\n",
    );
    let inline = write(
        &dir.join("inline.dml"),
        "print(c3(2))\n[a, B] = two(matrix(0.5, 2, 2))\nprint(a + \" \" + sum(B))\nprint(cube(2))\n\
         c3 = function(Double x) return (Double y) { y = x^3 }\n\
         two = function(Matrix[Double] X) return (Double a, Matrix[Double] B) {\n\
           a = c3(sum(X)); B = X + 1 }\n\
         cube = function(Double x) return (Double y) { y = -1 }\nprint(c3(3))\nprint(c3(4))\n",
    );
    let run = |file: &str, extra: &[&str]| spores_at(&dir, &[&["run", file], extra].concat());
    let want = run(&inline, &[]);
    assert_eq!(want.0, 0, "{}", want.2);
    for extra in [&[][..], &["--no-opt"][..]] {
        let got = run(&main, extra);
        assert_eq!(got.0, 0, "{}", got.2);
        assert_eq!(got.1, want.1);
    }
    let bad = write(
        &dir.join("bad.dml"),
        "source(\"lib.dml\") as fns1\nprint(fns2::cube(2))\n",
    );
    let (code, _, err) = run(&bad, &[]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown namespace `fns2`"), "{err}");
    let bad = write(
        &dir.join("bad2.dml"),
        "source(\"lib.dml\") as fns1\nprint(fns1::square(2))\n",
    );
    let (code, _, err) = run(&bad, &[]);
    assert_eq!(code, 1);
    assert!(err.contains("does not define `square`"), "{err}");
}

/// `eval` of a name known only when it runs (built in a loop, from a sourced namespace, with
/// SystemDS's `.defaultNS::` prefix) calls the function the string names then: the printed
/// values are the direct calls', optimized and with `--no-opt`. A name of no function, or of
/// one that does not take the arguments, is accepted by `spores check` and fails when the
/// call runs, naming the function, at the eval's name.
#[test]
fn eval_looks_up_a_name_known_only_when_it_runs() {
    let dir = tmp("eval-runtime");
    write(
        &dir.join("lib.dml"),
        "cube = function(Matrix[Double] X) return (Matrix[Double] Y) { Y = X^3 }\n",
    );
    let dynamic = write(
        &dir.join("dynamic.dml"),
        "source(\"lib.dml\") as L\n\
         g1 = function(Matrix[Double] X, Double s) return (Matrix[Double] Y) { Y = X * s }\n\
         g2 = function(Matrix[Double] X, Double s) return (Double y) { y = sum(X) + s }\n\
         X = matrix(\"1 2 3 4\", rows=2, cols=2)\n\
         for (i in 1:2) {\n  print(toString(eval(\"g\" + i, X, i + 0.5)))\n}\n\
         ns = \"L\"\nfor (i in 1:1) {\n  print(toString(eval(ns + \"::cube\", X + i)))\n}\n\
         for (i in 1:1) {\n  print(sum(eval(\".defaultNS::g\" + i, list(s=3, X=X))))\n}\n",
    );
    let direct = write(
        &dir.join("direct.dml"),
        "source(\"lib.dml\") as L\n\
         g1 = function(Matrix[Double] X, Double s) return (Matrix[Double] Y) { Y = X * s }\n\
         g2 = function(Matrix[Double] X, Double s) return (Double y) { y = sum(X) + s }\n\
         X = matrix(\"1 2 3 4\", rows=2, cols=2)\n\
         print(toString(g1(X, 1.5)))\nprint(toString(as.matrix(g2(X, 2.5))))\n\
         print(toString(L::cube(X + 1)))\nprint(sum(g1(X, 3)))\n",
    );
    let run = |file: &str, extra: &[&str]| spores_at(&dir, &[&["run", file], extra].concat());
    let want = run(&direct, &[]);
    assert_eq!(want.0, 0, "{}", want.2);
    assert!(
        want.1.starts_with("1.500 3.000\n4.500 6.000\n"),
        "{}",
        want.1
    );
    for extra in [&[][..], &["--no-opt"][..]] {
        let got = run(&dynamic, extra);
        assert_eq!(got.0, 0, "{}", got.2);
        assert_eq!(got.1, want.1);
    }
    for (text, name, at) in [
        (
            "for (i in 1:3) {\n  print(sum(eval(\"g\" + i, X, 1)))\n}\n",
            "'.defaultNS::g3' (called through eval) is non-existing",
            "bad.dml:5:18",
        ),
        (
            "n = \"g\"\nfor (i in 1:1) {\n  print(sum(eval(n + i, X, X)))\n}\n",
            "`g1` is called through eval at line 6, column 18",
            "bad.dml:6:28",
        ),
    ] {
        let bad = write(
            &dir.join("bad.dml"),
            &format!(
                "g1 = function(Matrix[Double] X, Double s) return (Matrix[Double] Y) {{ Y = X * s }}\n\
                 g2 = function(Matrix[Double] X, Double s) return (Double y) {{ y = sum(X) + s }}\n\
                 X = matrix(1, 2, 2)\n{text}"
            ),
        );
        let (code, _, err) = spores_at(&dir, &["check", &bad]);
        assert_eq!(code, 0, "{err}");
        let (code, out, err) = run(&bad, &[]);
        assert_eq!(code, 1, "{out}{err}");
        assert!(err.contains(name), "{err}");
        assert!(err.contains(at), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// A file sourced by a sourced file is read when the program is checked, as SystemDS's parser
/// reads it (its top level or a branch of it, whether or not a function of it is called): a
/// missing one is a check-time error at its `source` statement in the sourced file, and
/// nothing runs; once it exists, the program checks and runs.
#[test]
fn files_sourced_by_sourced_files_are_read_before_running() {
    let dir = tmp("nested-source");
    write(
        &dir.join("a.dml"),
        "if (FALSE) {\n  source(\"sub/missing.dml\") as m\n}\n\
         g = function(Double x) return (Double y) { y = x + 1 }\n",
    );
    let main = write(
        &dir.join("main.dml"),
        "source(\"a.dml\") as a\nprint(\"first\")\n",
    );
    let spores_in = |args: &[&str]| spores_at(&dir, args);
    for cmd in ["check", "run"] {
        let (code, out, err) = spores_in(&[cmd, &main]);
        assert_eq!(code, 1, "{cmd}: {out}{err}");
        assert_eq!(out, "", "{cmd}");
        assert!(err.contains("cannot read sub/missing.dml"), "{err}");
        assert!(err.contains("a.dml:2:3"), "{err}");
    }
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    write(
        &dir.join("sub/missing.dml"),
        "h = function(Double x) return (Double y) { y = x }\n",
    );
    let (code, out, err) = spores_in(&["run", &main]);
    assert_eq!((code, out.as_str()), (0, "first\n"), "{err}");
}

/// `setwd(folder)` as SystemDS's parser applies it: the `source` statements after it in the
/// same file find relative paths under the folder, also when it stands in a branch that never
/// runs; a source before it, an absolute path and a path already starting with `folder/` are
/// kept; a `setwd` inside a sourced file moves only that file's sources. Each `f.dml` adds its
/// folder's number (0 for the working folder, 1 for `a`, 2 for `b`), so every printed value
/// names the file its namespace found: the values are SystemDS 3.4's for the same files.
#[test]
fn setwd_moves_where_later_sources_look() {
    let dir = tmp("setwd");
    for (sub, n) in [("", 0), ("a", 1), ("b", 2)] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        write(
            &dir.join(sub).join("f.dml"),
            &format!("f = function(Double x) return (Double y) {{ y = x + {n} }}\n"),
        );
    }
    write(
        &dir.join("b/g.dml"),
        "setwd(\"a\")\nsource(\"f.dml\") as F\n\
         g = function(Double x) return (Double y) { y = F::f(x) * 10 }\n",
    );
    let abs = dir.join("f.dml").display().to_string();
    let main = write(
        &dir.join("main.dml"),
        &format!(
            "source(\"f.dml\") as Z\nsetwd(\"b\")\nsource(\"g.dml\") as G\nsource(\"f.dml\") as M\n\
             source(\"{abs}\") as ABS\nif (FALSE) {{\n  setwd(\"a\")\n}}\n\
             source(\"f.dml\") as N\nsource(\"a/f.dml\") as P\n\
             print(Z::f(100))\nprint(G::g(100))\nprint(M::f(100))\nprint(ABS::f(100))\n\
             print(N::f(100))\nprint(P::f(100))\n"
        ),
    );
    for extra in [&[][..], &["--no-opt"][..]] {
        let (code, out, err) = spores_at(&dir, &[&["run", main.as_str()], extra].concat());
        assert_eq!(code, 0, "{err}");
        assert_eq!(out, "100.0\n1010.0\n102.0\n100.0\n101.0\n101.0\n");
    }
    // without the `setwd`, `g.dml` is not in the working folder
    let (code, _, err) = spores(&[
        "check",
        &write(
            &dir.join("no.dml"),
            "source(\"g.dml\") as G\nprint(G::g(1))\n",
        ),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cannot read g.dml"), "{err}");
}
