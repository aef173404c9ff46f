//! Every extractor on every crafted e-graph and on a sample of the shared ones: results are
//! valid, exact extractors match a brute-force optimum (crafted) and agree with each other,
//! heuristics are never better than a proven optimum, bad files are errors.

use spores::extract::{serialized, ExGraph, Extraction, Optimal, Options, EXTRACTORS};
use std::path::Path;
use std::time::Duration;

fn opts() -> Options {
    Options {
        time_limit: Duration::from_secs(10),
    }
}

/// The best DAG cost over all valid extractions, by enumeration (tiny graphs only).
fn brute_force(g: &ExGraph) -> Option<f64> {
    let mut best: Option<f64> = None;
    let mut idx = vec![0usize; g.num_classes()];
    loop {
        let ex = Extraction {
            choice: (0..g.num_classes())
                .map(|c| g.classes[c].get(idx[c]).copied())
                .collect(),
            optimal: false,
        };
        if g.check(&ex).is_ok() {
            let c = g.dag_cost(&ex);
            best = Some(best.map_or(c, |b: f64| b.min(c)));
        }
        // next combination
        let mut k = 0;
        loop {
            if k == idx.len() {
                return best;
            }
            idx[k] += 1;
            if idx[k] < g.classes[k].len() {
                break;
            }
            idx[k] = 0;
            k += 1;
        }
    }
}

fn load(name: &str) -> ExGraph {
    serialized::load(Path::new("tests/egraphs").join(name).as_path()).unwrap()
}

#[test]
fn crafted_egraphs() {
    let expected = [
        ("sharing.json", 7.0),
        ("cycle.json", 5.0),
        ("multi_root.json", 8.0),
        ("negative.json", -2.75),
    ];
    for (file, want) in expected {
        let g = load(file);
        assert_eq!(brute_force(&g), Some(want), "{file}: brute force");
        for (name, ex, kind) in EXTRACTORS {
            let r = ex.extract(&g, &opts());
            g.check(&r)
                .unwrap_or_else(|e| panic!("{name} on {file}: {e}"));
            let cost = g.dag_cost(&r);
            assert!(
                cost >= want - 1e-9,
                "{name} on {file} beat the optimum: {cost} < {want}"
            );
            if *kind == Optimal::Dag {
                assert!(r.optimal, "{name} on {file} should prove optimality");
                assert!(
                    (cost - want).abs() < 1e-9,
                    "{name} on {file}: {cost} != {want}"
                );
            }
        }
    }
    // greedy is fooled by sharing, as in the paper's Fig. 10
    let g = load("sharing.json");
    let tree = spores::extract::by_name("greedy-tree")
        .unwrap()
        .extract(&g, &opts());
    assert_eq!(g.dag_cost(&tree), 10.0);
    assert_eq!(g.tree_cost(&tree), 10.0);
}

#[test]
fn infeasible_root_gives_no_valid_extraction_and_no_panic() {
    let g = load("infeasible_root.json");
    assert_eq!(brute_force(&g), None);
    for (name, ex, _) in EXTRACTORS {
        let r = ex.extract(&g, &opts());
        assert!(
            g.check(&r).is_err(),
            "{name} returned a 'valid' extraction of an infeasible root"
        );
    }
}

#[test]
fn malformed_files_are_errors() {
    for (file, msg) in [
        ("dangling_child.json", "names no node"),
        ("missing_root.json", "root e-class Z has no nodes"),
    ] {
        let e = serialized::load(Path::new("tests/egraphs").join(file).as_path()).unwrap_err();
        assert!(e.to_string().contains(msg), "{file}: {e}");
    }
    let e = serialized::from_json("{\"nodes\": 3}").unwrap_err();
    assert!(
        e.to_string().contains("not an egraph-serialize JSON"),
        "{e}"
    );
    let e = serialized::load(Path::new("tests/egraphs/none.json")).unwrap_err();
    assert!(e.to_string().starts_with("cannot read"), "{e}");
}

/// A sample of the shared e-graphs: small files of several families.
fn sample() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/egraphs");
    let mut out = Vec::new();
    for fam in [
        "egg",
        "babble",
        "eggcc-bril",
        "lean-egg",
        "tensat",
        "maxsat",
        "set_covering",
    ] {
        let Ok(dir) = std::fs::read_dir(root.join(fam)) else {
            continue;
        };
        let mut files: Vec<_> = dir
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.metadata().map(|m| m.len() < 400_000).unwrap_or(false))
            .collect();
        files.sort();
        out.extend(files.into_iter().take(3));
    }
    out
}

#[test]
fn shared_egraphs_sample() {
    let mut checked = 0;
    for path in sample() {
        let Ok(g) = serialized::load(&path) else {
            continue; // lean-egg files with a root class without nodes
        };
        let mut exact: Option<f64> = None;
        let mut costs = Vec::new();
        let quick = Options {
            time_limit: Duration::from_secs(2),
        };
        for (name, ex, kind) in EXTRACTORS {
            let r = ex.extract(&g, &quick);
            g.check(&r)
                .unwrap_or_else(|e| panic!("{name} on {}: {e}", path.display()));
            let c = g.dag_cost(&r);
            if *kind == Optimal::Dag && r.optimal {
                exact = Some(c);
            }
            costs.push((*name, c));
        }
        if let Some(opt) = exact {
            for (name, c) in &costs {
                assert!(
                    *c >= opt - 1e-6 * opt.abs().max(1.0),
                    "{name} beat the proven optimum on {}",
                    path.display()
                );
            }
        }
        checked += 1;
    }
    if Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/egraphs")
        .exists()
    {
        assert!(checked >= 12, "only {checked} shared e-graphs checked");
    }
}

#[test]
fn spores_egraphs_extract_with_every_extractor() {
    // an e-graph of spores's own language, saturated, extracted by all extractors
    use spores::analysis::{Context, VarInfo, EG};
    let mut ctx = Context::default();
    for (v, r, c, nnz) in [
        ("X", 50, 40, 20.0),
        ("U", 50, 3, 150.0),
        ("V", 40, 3, 120.0),
    ] {
        ctx.vars.insert(
            v.into(),
            VarInfo::Matrix {
                rows: r,
                cols: c,
                nnz,
                finite: false,
            },
        );
    }
    let e: egg::RecExpr<spores::ir::Ir> = "(msum (m* X (mmul U (t V))))".parse().unwrap();
    let mut eg = EG::new(ctx);
    let root = eg.add_expr(&e);
    eg.rebuild();
    let rules = spores::saturate::all_rules().unwrap();
    let limits = spores::saturate::Limits {
        time: Duration::from_millis(300),
        nodes: 5000,
        ..Default::default()
    };
    let (eg, _) = spores::saturate::saturate(eg, &[root], &rules, &limits, None);
    let g = ExGraph::from_egg(&eg, &[root], |c, n| spores::extract::node_cost(&eg, c, n));
    let greedy = spores::extract::greedy(&eg, root).0;
    for (name, ex, _) in EXTRACTORS {
        let r = ex.extract(&g, &opts());
        g.check(&r).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            g.dag_cost(&r) <= greedy + 1e-6,
            "{name}: {} vs greedy tree {greedy}",
            g.dag_cost(&r)
        );
    }
    // and the JSON round trip keeps the problem
    let dir = std::env::temp_dir().join(format!("spores-eg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("g.json");
    serialized::write(&g, &p).unwrap();
    let back = serialized::load(&p).unwrap();
    assert_eq!(back.nodes.len(), g.nodes.len());
    let ilp = spores::extract::by_name("ilp").unwrap();
    let (a, b) = (ilp.extract(&g, &opts()), ilp.extract(&back, &opts()));
    assert!((g.dag_cost(&a) - back.dag_cost(&b)).abs() < 1e-6 * g.dag_cost(&a).abs().max(1.0));
    std::fs::remove_dir_all(&dir).unwrap();
}
