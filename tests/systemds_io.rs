//! Files against SystemDS 3.4 itself: the same program run by both writes the same text, CSV,
//! Matrix Market and `.mtd` files (apart from the `created` time stamp), and each engine reads
//! what the other wrote with the same values. Skipped, with a message, when SystemDS is not
//! installed (scripts/install-systemds.sh, or `SYSTEMDS_HOME`; see `spores::emit::systemds`).

use rand::Rng;
use std::path::{Path, PathBuf};

mod sysds;
use sysds::{run_spores, run_systemds};

/// A fresh scratch folder for this binary.
fn tmp(name: &str) -> sysds::Scratch {
    sysds::tmp("sysds", name)
}

/// SystemDS's install folder, when SystemDS and Java are there.
fn systemds_home() -> Option<PathBuf> {
    spores::emit::systemds::home()
}

/// A CSV input with a `.mtd`: random values with six significant digits (so that both engines
/// print them the same way), a given share of them zero, some negative, tiny or large.
fn input(dir: &Path, rows: usize, cols: usize, zeros: f64, seed: u64) -> PathBuf {
    sysds::csv_with_mtd(dir.join("in.csv"), rows, cols, zeros, seed, |rng| {
        let scale = [1e-9, 1e-3, 1.0, 1e4, 1e12][rng.gen_range(0..5)];
        format!("{:.5e}", rng.gen_range(-1.0..1.0) * scale)
    })
}

const WRITE: &str = r#"X = read($in)
write(X, $out + "/X.txt")
write(X, $out + "/X.csv", format="csv")
write(X, $out + "/Xh.csv", format="csv", header=TRUE, sep=";")
write(X, $out + "/X.mm", format="mm")
Z = X * 0
write(Z, $out + "/Z.txt")
write(Z, $out + "/Z.csv", format="csv")
write(Z, $out + "/Z.mm", format="mm")
s = sum(X)
write(s, $out + "/s.txt")
n = nrow(X)
write(n, $out + "/n.txt")
b = s == s
write(b, $out + "/b.txt")
t = "some text"
write(t, $out + "/str.txt")
print(s)
"#;

const READ: &str = r#"A = read($dir + "/X.txt")
B = read($dir + "/X.csv")
C = read($dir + "/Xh.csv")
D = read($dir + "/X.mm")
Z = read($dir + "/Z.txt")
s = read($dir + "/s.txt")
n = read($dir + "/n.txt")
b = read($dir + "/b.txt")
str = read($dir + "/str.txt")
write(A, $out + "/A.csv", format="csv")
write(B, $out + "/B.csv", format="csv")
write(C, $out + "/C.csv", format="csv")
write(D, $out + "/D.csv", format="csv")
print(sum(Z))
print(s)
print(n)
print(b)
print(str)
"#;

fn file(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A `.mtd` without its time stamp.
fn mtd_without_time(p: &Path) -> String {
    file(p)
        .lines()
        .filter(|l| !l.contains("\"created\""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn close(a: &str, b: &str) -> bool {
    let (x, y): (f64, f64) = (a.parse().unwrap(), b.parse().unwrap());
    x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
}

#[test]
fn spores_and_systemds_write_the_same_files_and_read_each_others() {
    let Some(home) = systemds_home() else {
        eprintln!(
            "skipped: SystemDS is not installed (run \
             /work/shared/bench/peers/install-systemds.sh /opt/systemds, or set SYSTEMDS_HOME)"
        );
        return;
    };
    let dir = tmp("cross");
    let write = dir.join("write.dml");
    let read = dir.join("read.dml");
    std::fs::write(&write, WRITE).unwrap();
    std::fs::write(&read, READ).unwrap();
    // dense and sparse (SystemDS writes sparse blocks through other code paths)
    for (k, (rows, cols, zeros)) in [(25, 6, 0.33), (3, 40, 0.33), (40, 30, 0.95)]
        .into_iter()
        .enumerate()
    {
        let case = dir.join(format!("case{k}"));
        std::fs::create_dir_all(&case).unwrap();
        let inp = input(&case, rows, cols, zeros, k as u64 + 11);
        let nv = |out: &Path| {
            vec![
                format!("in={}", inp.display()),
                format!("out={}", out.display()),
            ]
        };
        let (js, ss) = (case.join("sysds/w"), case.join("spores/w"));
        let sums_j = run_systemds(&home, &case, &write, &nv(&js));
        for opt in [true, false] {
            let sums_s = run_spores(&write, &nv(&ss), opt);
            assert!(close(&sums_j[0], &sums_s[0]), "{sums_j:?} vs {sums_s:?}");
            for f in [
                "X.txt", "X.csv", "Xh.csv", "X.mm", "Z.txt", "Z.csv", "Z.mm", "n.txt", "b.txt",
                "str.txt",
            ] {
                assert_eq!(file(&ss.join(f)), file(&js.join(f)), "case {k}: {f}");
            }
            assert!(close(&file(&ss.join("s.txt")), &file(&js.join("s.txt"))));
            for f in [
                "X.txt", "X.csv", "Xh.csv", "Z.txt", "Z.csv", "s.txt", "n.txt", "b.txt", "str.txt",
            ] {
                let m = format!("{f}.mtd");
                assert_eq!(
                    mtd_without_time(&ss.join(&m)),
                    mtd_without_time(&js.join(&m)),
                    "{m}"
                );
            }
            for f in ["X.mm.mtd", "Z.mm.mtd"] {
                assert_eq!(ss.join(f).exists(), js.join(f).exists(), "{f}");
            }
        }
        // each reads what the other wrote
        let (jr, sr) = (case.join("sysds/r"), case.join("spores/r"));
        let rd = |from: &Path, out: &Path| {
            vec![
                format!("dir={}", from.display()),
                format!("out={}", out.display()),
            ]
        };
        let printed_j = run_systemds(&home, &case, &read, &rd(&ss, &jr));
        let printed_s = run_spores(&read, &rd(&js, &sr), true);
        assert_eq!(printed_j[0], "0.0");
        // each prints the scalar the other wrote (their sums may differ in the last bit:
        // SystemDS adds with Kahan's compensation)
        assert_eq!(printed_j[1], file(&ss.join("s.txt")));
        assert_eq!(printed_s[1], file(&js.join("s.txt")));
        assert_eq!(printed_j[2..], printed_s[2..]);
        assert_eq!(
            printed_j[2..],
            [rows.to_string(), "TRUE".into(), "some text".into()]
        );
        for f in ["A.csv", "B.csv", "C.csv", "D.csv"] {
            assert_eq!(
                file(&jr.join(f)),
                file(&js.join("X.csv")),
                "SystemDS read {f}"
            );
            assert_eq!(
                file(&sr.join(f)),
                file(&js.join("X.csv")),
                "spores read {f}"
            );
        }
    }
}

const WRITE_BINARY: &str = r#"X = read($in)
S = cbind(X, matrix(0, nrow(X), 1100))
U = S * (S > 0.9 * max(S))
Z = S * 0
C = X[, 1]
write(X, $out + "/X.bin", format="binary")
write(S, $out + "/S.bin", format="binary")
write(U, $out + "/U.bin", format="binary")
write(Z, $out + "/Z.bin", format="binary")
write(C, $out + "/C.bin", format="binary")
write(X, $out + "/X.csv", format="csv")
write(S, $out + "/S.csv", format="csv")
write(U, $out + "/U.csv", format="csv")
write(Z, $out + "/Z.csv", format="csv")
write(C, $out + "/C.csv", format="csv")
L = list(X, nrow(X), "text", list(a=C, b=7))
write(L, $out + "/L", format="text")
"#;

const READ_BINARY: &str = r#"X = read($dir + "/X.bin")
S = read($dir + "/S.bin")
U = read($dir + "/U.bin")
Z = read($dir + "/Z.bin")
C = read($dir + "/C.bin", format="binary")
write(X, $out + "/X.csv", format="csv")
write(S, $out + "/S.csv", format="csv")
write(U, $out + "/U.csv", format="csv")
write(Z, $out + "/Z.csv", format="csv")
write(C, $out + "/C.csv", format="csv")
L = read($list)
print(length(L))
print(sum(as.matrix(L[1])))
print(as.scalar(L[2]) + 1)
print(as.scalar(L[3]))
"#;

/// SystemDS's binary blocks: dense, sparse over 2x2 blocks (SystemDS writes that as a folder of
/// part files), ultra-sparse, empty and one-column matrices, written by one engine and read by
/// the other with the same values (compared through their CSV files); the `.mtd`s agree. A
/// list is written as SystemDS writes it, and each engine reads the other's list with the
/// same printed values.
#[test]
fn spores_and_systemds_read_each_others_binary_files() {
    let Some(home) = systemds_home() else {
        eprintln!("skipped: SystemDS is not installed (scripts/install-systemds.sh, or set SYSTEMDS_HOME)");
        return;
    };
    let dir = tmp("binary");
    let (write, read) = (dir.join("write.dml"), dir.join("read.dml"));
    std::fs::write(&write, WRITE_BINARY).unwrap();
    std::fs::write(&read, READ_BINARY).unwrap();
    let inp = input(&dir, 1200, 3, 0.33, 7);
    let nv = |k: &str, v: &Path, out: &Path| {
        vec![
            format!("{k}={}", v.display()),
            format!("out={}", out.display()),
        ]
    };
    let (js, ss) = (dir.join("sysds/w"), dir.join("spores/w"));
    run_systemds(&home, &dir, &write, &nv("in", &inp, &js));
    run_spores(&write, &nv("in", &inp, &ss), true);
    let names = ["X", "S", "U", "Z", "C"];
    for n in names {
        let csv = format!("{n}.csv");
        assert_eq!(file(&ss.join(&csv)), file(&js.join(&csv)), "{csv}");
        let m = format!("{n}.bin.mtd");
        assert_eq!(
            mtd_without_time(&ss.join(&m)),
            mtd_without_time(&js.join(&m)),
            "{m}"
        );
    }
    // a list: a folder of its entries (nested lists as folders), each with its .mtd
    for f in [
        "L.mtd",
        "L/0_null",
        "L/0_null.mtd",
        "L/1_null",
        "L/1_null.mtd",
        "L/2_null",
        "L/2_null.mtd",
        "L/3_null.mtd",
        "L/3_null/0_a",
        "L/3_null/0_a.mtd",
        "L/3_null/1_b",
        "L/3_null/1_b.mtd",
    ] {
        assert_eq!(
            mtd_without_time(&ss.join(f)),
            mtd_without_time(&js.join(f)),
            "{f}"
        );
    }
    let (jr, sr) = (dir.join("sysds/r"), dir.join("spores/r"));
    // the list's path as one argument: its .mtd is read when the program is checked
    let with_list = |v: &Path, out: &Path| {
        let mut a = nv("dir", v, out);
        a.push(format!("list={}", v.join("L").display()));
        a
    };
    let printed = run_systemds(&home, &dir, &read, &with_list(&ss, &jr));
    assert_eq!(printed.len(), 4, "{printed:?}");
    for opt in [true, false] {
        assert_eq!(run_spores(&read, &with_list(&js, &sr), opt), printed);
        for n in names {
            let csv = format!("{n}.csv");
            assert_eq!(
                file(&sr.join(&csv)),
                file(&js.join(&csv)),
                "spores read {n}.bin"
            );
            assert_eq!(
                file(&jr.join(&csv)),
                file(&js.join(&csv)),
                "SystemDS read {n}.bin"
            );
        }
    }
}
