//! Runs every extractor over the shared e-graphs (../shared/data/egraphs) and compares DAG
//! costs with best-known.tsv. Prints one TSV row per (file, extractor), then a table per
//! family: files, geometric mean of cost / best known, files within 0.1% of best known,
//! files solved to proven optimality, median and max time.
//!
//! `cargo bench --bench extract -- [--time-limit SECS] [--only SUBSTRING] [--skip SUBSTRING]
//! [--extractors a,b]`
//!
//! `cargo bench --bench extract -- --small` instead times the `ilp` extractor (median of 21
//! runs per e-graph) on the e-graphs under 100 nodes: the egglog test e-graphs
//! (tests/egraphs/egglog, with each of their cost tables) and the shared ones that small. The
//! goal is a median under 5 ms, every one proven optimal.

use spores::extract::{serialized, Options, EXTRACTORS};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let time_limit: f64 = flag("--time-limit")
        .and_then(|v| v.parse().ok())
        .unwrap_or(10.0);
    let only = flag("--only").unwrap_or_default();
    let skip = flag("--skip");
    let wanted: Vec<String> = flag("--extractors")
        .map(|v| v.split(',').map(String::from).collect())
        .unwrap_or_else(|| EXTRACTORS.iter().map(|e| e.0.to_string()).collect());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/egraphs");
    if args.iter().any(|a| a == "--small") {
        small(&root);
        return;
    }
    let Ok(best_text) = std::fs::read_to_string(root.join("best-known.tsv")) else {
        eprintln!("no ../shared/data/egraphs/best-known.tsv; nothing to do");
        return;
    };
    let best: HashMap<String, Option<f64>> = best_text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            Some((c.first()?.to_string(), c.get(2)?.parse().ok()))
        })
        .collect();
    let mut files: Vec<&String> = best
        .keys()
        .filter(|f| f.contains(&only) && !skip.as_ref().is_some_and(|s| f.contains(s.as_str())))
        .collect();
    files.sort();
    let opts = Options {
        time_limit: Duration::from_secs_f64(time_limit),
        ..Options::default()
    };
    // family -> extractor -> (ratios, within, optimal, times, files, invalid)
    type Acc = (Vec<f64>, usize, usize, Vec<f64>, usize, usize);
    let mut table: BTreeMap<(String, String), Acc> = BTreeMap::new();
    println!("file\textractor\tdag_cost\tbest_known\tratio\toptimal\tseconds\tvalid");
    for f in files {
        let family = f.split('/').next().unwrap_or("").to_string();
        let g = match serialized::load(&root.join(f)) {
            Ok(g) => g,
            Err(e) => {
                println!("{f}\t-\t-\t-\t-\t-\t-\tload error: {e}");
                continue;
            }
        };
        for (name, ex, _) in EXTRACTORS
            .iter()
            .filter(|e| wanted.iter().any(|w| w == e.0))
        {
            let t = Instant::now();
            let r = ex.extract(&g, &opts);
            let secs = t.elapsed().as_secs_f64();
            let valid = g.check(&r);
            let cost = g.dag_cost(&r);
            let bk = best.get(f).copied().flatten();
            let ratio = match (bk, valid.is_ok()) {
                (Some(b), true) if b != 0.0 => cost / b,
                (Some(_), true) => 1.0 + cost.abs(),
                _ => f64::NAN,
            };
            println!(
                "{f}\t{name}\t{cost}\t{}\t{ratio:.5}\t{}\t{secs:.3}\t{}",
                bk.map_or("NA".into(), |b| b.to_string()),
                r.optimal,
                valid.as_ref().map_or_else(|e| e.clone(), |_| "ok".into())
            );
            let e = table.entry((family.clone(), name.to_string())).or_default();
            e.4 += 1;
            if valid.is_err() {
                e.5 += 1;
                continue;
            }
            if let Some(b) = bk {
                // negative costs (maxsat): compare how far above the best known we are
                let within = cost <= b + 1e-3 * b.abs().max(1e-9);
                e.1 += usize::from(within);
                if ratio.is_finite() && ratio > 0.0 {
                    e.0.push(ratio);
                }
            }
            e.2 += usize::from(r.optimal);
            e.3.push(secs);
        }
    }
    println!();
    println!("family\textractor\tfiles\tgeomean_cost_over_best\twithin_0.1%\tproven_optimal\tmedian_s\tmax_s\tinvalid");
    for ((family, name), (ratios, within, optimal, mut times, n, invalid)) in table {
        times.sort_by(f64::total_cmp);
        let geo = if ratios.is_empty() {
            f64::NAN
        } else {
            (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp()
        };
        let med = times.get(times.len() / 2).copied().unwrap_or(f64::NAN);
        let max = times.last().copied().unwrap_or(f64::NAN);
        println!(
            "{family}\t{name}\t{n}\t{geo:.4}\t{within}\t{optimal}\t{med:.3}\t{max:.3}\t{invalid}"
        );
    }
}

/// The `--small` benchmark (see the module documentation).
fn small(shared: &Path) {
    let mut graphs: Vec<(String, spores::extract::ExGraph)> = Vec::new();
    let egglog = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/egraphs/egglog");
    let mut tables: Vec<Option<std::path::PathBuf>> = vec![None];
    let mut files = Vec::new();
    for e in std::fs::read_dir(&egglog).into_iter().flatten().flatten() {
        let p = e.path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with("_costs.json") {
            tables.push(Some(p));
        } else if name.starts_with("attention") {
            files.push(p);
        }
    }
    files.sort();
    tables.sort();
    for f in &files {
        for t in &tables {
            let mut g = serialized::load(f).expect("egglog fixture");
            g.roots = g.unreferenced_classes();
            if let Some(t) = t {
                let text = std::fs::read_to_string(t).unwrap();
                g.apply_cost_table(&spores::extract::parse_op_table(&text).unwrap());
            }
            let name = format!(
                "{} {}",
                f.file_name().unwrap().to_string_lossy(),
                t.as_ref().map_or("file costs".into(), |t| t
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .to_string())
            );
            graphs.push((name, g));
        }
    }
    let mut stack = vec![shared.to_path_buf()];
    let mut shared_files = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "json")
                && p.metadata().map(|m| m.len() < 100_000).unwrap_or(false)
            {
                shared_files.push(p);
            }
        }
    }
    shared_files.sort();
    for p in shared_files {
        if let Ok(g) = serialized::load(&p) {
            if g.nodes.len() < 100 {
                let name = p.strip_prefix(shared).unwrap_or(&p).display().to_string();
                graphs.push((name, g));
            }
        }
    }
    let ilp = spores::extract::by_name("ilp").expect("registered");
    let opts = Options::default();
    let mut medians = Vec::new();
    let mut proven = 0;
    println!("egraph\tnodes\tmedian_ms\toptimal");
    for (name, g) in &graphs {
        let mut times = Vec::new();
        let mut optimal = false;
        for _ in 0..21 {
            let t = Instant::now();
            let r = ilp.extract(g, &opts);
            times.push(t.elapsed().as_secs_f64() * 1e3);
            assert!(g.check(&r).is_ok(), "{name}: invalid extraction");
            optimal = r.optimal;
        }
        times.sort_by(f64::total_cmp);
        let med = times[times.len() / 2];
        println!("{name}\t{}\t{med:.3}\t{optimal}", g.nodes.len());
        medians.push(med);
        proven += usize::from(optimal);
    }
    medians.sort_by(f64::total_cmp);
    let med = medians.get(medians.len() / 2).copied().unwrap_or(f64::NAN);
    let max = medians.last().copied().unwrap_or(f64::NAN);
    println!(
        "\n{} e-graphs under 100 nodes: median {med:.3} ms, max {max:.3} ms, {proven} proven optimal",
        graphs.len()
    );
}
