//! spores's elementary functions against the jar SystemDS calls, bit for bit: Commons Math
//! 3.4.1's `FastMath` (`exp`, `sin`, `cos`, `tan`, `asin`, `acos`, `sinh`, `cosh`, `tanh`,
//! which SystemDS's `Builtin` uses; runtime/src/kernels/fastmath.rs) on more than a million
//! arguments each: random bit patterns over the whole range, near zero, signed zeros,
//! subnormals, huge values, infinities, NaN, the overflow and underflow thresholds and the
//! branch points of each algorithm (with their neighbouring doubles), multiples of pi/2 for
//! the trigonometric functions; and the lookup tables spores computes, against the jar's.
//! The reference is tests/fastmath/FmHarness.java,
//! run with the commons-math3 jar of the SystemDS installation; skipped, with a message, when
//! SystemDS (or a JDK able to run a source file) is not installed.

use rand::{Rng, SeedableRng};
use spores_runtime::kernels::fastmath;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The commons-math3 jar of the SystemDS installation, if any.
fn commons_math_jar() -> Option<PathBuf> {
    let home = spores::emit::systemds::home()?;
    std::fs::read_dir(home.join("lib"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.starts_with("commons-math3-") && n.ends_with(".jar")
        })
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spores-fastmath-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the harness with `args`; `None` (with the reason printed) when Java cannot run it.
fn harness(jar: &Path, args: &[&str]) -> Option<()> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fastmath/FmHarness.java");
    let out = Command::new("java")
        .arg("-cp")
        .arg(jar)
        .arg(&src)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("Exception in thread"),
            "the harness failed: {err}"
        );
        eprintln!("skipped: java cannot run {} ({err})", src.display());
        return None;
    }
    Some(())
}

fn write_doubles(path: &Path, xs: &[f64]) {
    let mut b = Vec::with_capacity(4 + 8 * xs.len());
    b.extend_from_slice(&(xs.len() as i32).to_be_bytes());
    for x in xs {
        b.extend_from_slice(&x.to_bits().to_be_bytes());
    }
    std::fs::write(path, b).unwrap();
}

fn read_doubles(bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(8)
        .map(|c| f64::from_bits(u64::from_be_bytes(c.try_into().unwrap())))
        .collect()
}

/// `x` and its neighbouring doubles up to `k` steps away.
fn around(out: &mut Vec<f64>, x: f64, k: i64) {
    for d in -k..=k {
        let b = x.to_bits() as i64 + d;
        out.push(f64::from_bits(b as u64));
        out.push(-f64::from_bits(b as u64));
    }
}

/// Arguments every function gets: random bit patterns (every exponent, NaN payloads,
/// subnormals, infinities), values near zero, and the special values.
fn common_arguments(rng: &mut impl Rng) -> Vec<f64> {
    let mut xs = vec![
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        f64::MAX,
        f64::MIN,
        5e-324,
        -5e-324,
        1.0,
        -1.0,
    ];
    for _ in 0..200_000 {
        xs.push(f64::from_bits(rng.gen()));
    }
    for _ in 0..100_000 {
        let m = 10f64.powf(rng.gen_range(-324.0..0.0));
        xs.push(if rng.gen() { m } else { -m });
    }
    for _ in 0..50_000 {
        // huge
        let m = 10f64.powf(rng.gen_range(6.0..308.3));
        xs.push(if rng.gen() { m } else { -m });
    }
    xs
}

/// Uniform arguments in `[lo, hi)`.
fn uniform(xs: &mut Vec<f64>, rng: &mut impl Rng, n: usize, lo: f64, hi: f64) {
    xs.extend((0..n).map(|_| rng.gen_range(lo..hi)));
}

/// The arguments of one function: the common ones, its working range, and its branch points.
fn arguments(name: &str, rng: &mut impl Rng) -> Vec<f64> {
    let mut xs = common_arguments(rng);
    match name {
        "exp" | "sinh" | "cosh" | "tanh" => {
            let r = if name == "exp" { 760.0 } else { 40.0 };
            uniform(&mut xs, rng, 500_000, -r, r);
            uniform(&mut xs, rng, 200_000, -1.5, 1.5);
            let ln_max = f64::MAX.ln();
            for t in [
                ln_max,
                709.0,
                710.0,
                708.0,
                745.1332191019411,
                746.0,
                747.0,
                20.0,
                0.25,
                0.5,
                1.0,
                40.19140625,
                1.494140625,
            ] {
                around(&mut xs, t, 200);
            }
            // integer parts and the multiples of 1/1024 of the tables
            for _ in 0..50_000 {
                let k = rng.gen_range(-760_000i64..760_000) as f64 / 1024.0;
                around(&mut xs, k, 1);
            }
        }
        "sin" | "cos" | "tan" => {
            uniform(&mut xs, rng, 300_000, -10.0, 10.0);
            uniform(&mut xs, rng, 150_000, -4e6, 4e6);
            uniform(&mut xs, rng, 50_000, -1.7, 1.7);
            // multiples of pi/2 (and the eighths of the tables), near and beyond the switch
            // to the Payne-Hanek reduction at 3294198
            let h = std::f64::consts::FRAC_PI_2;
            for k in 0..2000 {
                around(&mut xs, k as f64 * h, 3);
                around(&mut xs, k as f64 / 8.0, 2);
            }
            for _ in 0..20_000 {
                let k = rng.gen_range(0..1u64 << 40) as f64;
                around(&mut xs, k * h, 2);
            }
            around(&mut xs, 3294198.0, 100);
        }
        "asin" | "acos" => {
            uniform(&mut xs, rng, 600_000, -1.0, 1.0);
            for t in [1.0, 0.0, 0.5, 1e-8, 0.99999999] {
                around(&mut xs, t, 5000);
            }
        }
        _ => unreachable!(),
    }
    xs
}

/// spores's function of that name.
fn spores_fn(name: &str) -> fn(f64) -> f64 {
    match name {
        "exp" => fastmath::exp,
        "sin" => fastmath::sin,
        "cos" => fastmath::cos,
        "tan" => fastmath::tan,
        "asin" => fastmath::asin,
        "acos" => fastmath::acos,
        "sinh" => fastmath::sinh,
        "cosh" => fastmath::cosh,
        "tanh" => fastmath::tanh,
        _ => unreachable!(),
    }
}

/// The functions compared (SystemDS's `Builtin` calls `FastMath` for each).
const FUNCTIONS: [&str; 9] = [
    "exp", "sin", "cos", "tan", "asin", "acos", "sinh", "cosh", "tanh",
];

#[test]
fn fastmath_matches_the_jar_bit_for_bit() {
    let Some(jar) = commons_math_jar() else {
        eprintln!("skipped: SystemDS is not installed (scripts/install-systemds.sh, or set SYSTEMDS_HOME)");
        return;
    };
    let dir = scratch();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(19);
    let mut all = Vec::new();
    for name in FUNCTIONS {
        let xs = arguments(name, &mut rng);
        assert!(xs.len() >= 1_000_000, "{name}: {} arguments", xs.len());
        write_doubles(&dir.join(format!("{name}.in")), &xs);
        all.push((name, xs));
    }
    let mut args = vec!["run", dir.to_str().unwrap()];
    args.extend(FUNCTIONS);
    if harness(&jar, &args).is_none() {
        return;
    }
    let mut report = Vec::new();
    for (name, xs) in &all {
        let bytes = std::fs::read(dir.join(format!("{name}.out"))).unwrap();
        let want = read_doubles(&bytes);
        assert_eq!(want.len(), xs.len());
        let f = spores_fn(name);
        // exp also through the slice kernel the element-wise `exp` runs (SIMD where available)
        let got: Vec<f64> = if *name == "exp" {
            let mut v = xs.clone();
            fastmath::exp_in_place(&mut v);
            assert!(v
                .iter()
                .zip(xs)
                .all(|(&y, &x)| y.to_bits() == f(x).to_bits() || y.is_nan()));
            v
        } else {
            xs.iter().map(|&x| f(x)).collect()
        };
        let bad: Vec<(f64, f64, f64)> = xs
            .iter()
            .zip(&want)
            .zip(&got)
            .map(|((&x, &w), &g)| (x, g, w))
            .filter(|&(_, g, w)| !(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())))
            .collect();
        eprintln!(
            "{name}: {} arguments, {} differ from the jar",
            xs.len(),
            bad.len()
        );
        if !bad.is_empty() {
            report.push(format!(
                "{name}: {} of {} differ, e.g. {:?}",
                bad.len(),
                xs.len(),
                &bad[..bad.len().min(5)]
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(report.is_empty(), "{}", report.join("\n"));
}

#[test]
fn fastmath_tables_match_the_jar() {
    let Some(jar) = commons_math_jar() else {
        eprintln!("skipped: SystemDS is not installed (scripts/install-systemds.sh, or set SYSTEMDS_HOME)");
        return;
    };
    let dir = scratch().join("tables");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tables.bin");
    if harness(&jar, &["tables", file.to_str().unwrap()]).is_none() {
        return;
    }
    let bytes = std::fs::read(&file).unwrap();
    let mut at = 0;
    for (name, ours) in fastmath::tables_by_name() {
        let n = i32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        at += 4;
        let jar = read_doubles(&bytes[at..at + 8 * n]);
        at += 8 * n;
        assert_eq!(jar.len(), ours.len(), "{name}");
        for (i, (a, b)) in ours.iter().zip(&jar).enumerate() {
            let same = a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
            assert!(same, "{name}[{i}]: {a:e} computed, {b:e} in the jar");
        }
    }
    assert_eq!(at, bytes.len());
    let _ = std::fs::remove_dir_all(&dir);
}
