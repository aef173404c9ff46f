//! `spores extract` on e-graphs written by the real egglog library (tests/egraphs/egglog, made
//! by scripts/egglog-egraphs.sh): an attention head in its 3-pass form saturated with rewrites
//! to the 2-pass tiled / online-softmax form. Cost tables pick the plan, subsumed nodes are
//! never chosen, op-types differs from cost where it should, and every result (library and
//! `--out` file) is a valid selection whose objective equals an exhaustive search's.

use spores::extract::{
    parse_op_table, serialized, ExGraph, Extraction, Objective, OpWeights, Options, EXTRACTORS,
};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const DIR: &str = "tests/egraphs/egglog";
const FILES: [&str; 3] = [
    "attention.json",
    "attention_subsumed.json",
    "attention_two_layers.json",
];
const GLOBAL: [&str; 4] = ["transpose", "row_max", "exp_sub", "row_sum"];
const TILED: [&str; 5] = [
    "tiled_qk",
    "online_stats",
    "stats_max",
    "stats_sum",
    "tiled_exp_matmul",
];

fn path(name: &str) -> PathBuf {
    Path::new(DIR).join(name)
}

/// An egglog e-graph with its default roots (egglog writes none) and an optional cost table.
fn load(file: &str, table: Option<&str>) -> ExGraph {
    let mut g = serialized::load(&path(file)).unwrap();
    assert!(g.roots.is_empty(), "egglog names no roots");
    g.roots = g.unreferenced_classes();
    assert_eq!(g.roots.len(), 1, "{file}: one output");
    if let Some(t) = table {
        let text = std::fs::read_to_string(path(t)).unwrap();
        g.apply_cost_table(&parse_op_table(&text).unwrap());
    }
    g
}

fn weights(file: Option<&str>) -> Objective {
    Objective::OpTypes(OpWeights(match file {
        Some(f) => parse_op_table(&std::fs::read_to_string(path(f)).unwrap()).unwrap(),
        None => Default::default(),
    }))
}

/// The best (objective, DAG cost) over every valid extraction, by enumerating every choice
/// of a node per class (subsumed nodes included: the check rejects them).
fn exhaustive(g: &ExGraph, objective: &Objective) -> Option<(f64, f64)> {
    let mut best: Option<(f64, f64)> = None;
    let mut idx = vec![0usize; g.num_classes()];
    loop {
        let ex = Extraction::new(
            (0..g.num_classes())
                .map(|c| g.classes[c].get(idx[c]).copied())
                .collect(),
        );
        if g.check(&ex).is_ok() {
            let key = (g.objective(&ex, objective), g.dag_cost(&ex));
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
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

fn ops(g: &ExGraph, ex: &Extraction) -> BTreeSet<String> {
    g.reachable(ex)
        .iter()
        .filter_map(|&c| ex.choice[c])
        .map(|n| g.nodes[n].op.clone())
        .collect()
}

fn ilp(g: &ExGraph, objective: Objective) -> Extraction {
    let opts = Options {
        objective,
        ..Options::default()
    };
    let r = spores::extract::by_name("ilp").unwrap().extract(g, &opts);
    g.check(&r).unwrap();
    r
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(1.0)
}

#[test]
fn cost_tables_pick_the_tiled_or_the_global_operators() {
    for file in FILES {
        let two = load(file, Some("two_pass_costs.json"));
        let r = ilp(&two, Objective::Cost);
        let used = ops(&two, &r);
        assert!(
            TILED.iter().all(|o| used.contains(*o)) && GLOBAL.iter().all(|o| !used.contains(*o)),
            "{file}, 2-pass table: {used:?}"
        );
        let three = load(file, Some("three_pass_costs.json"));
        let r3 = ilp(&three, Objective::Cost);
        let used3 = ops(&three, &r3);
        // the global operators; where egglog subsumed the row sum, its online replacement
        let allowed: &[&str] = if file == "attention_subsumed.json" {
            &["online_stats", "stats_sum"]
        } else {
            &[]
        };
        assert!(
            TILED
                .iter()
                .all(|o| used3.contains(*o) == allowed.contains(o)),
            "{file}, 3-pass table: {used3:?}"
        );
        assert!(
            ["transpose", "row_max", "exp_sub"]
                .iter()
                .all(|o| used3.contains(*o)),
            "{file}, 3-pass table: {used3:?}"
        );
        // the 3-pass row sum, unless egglog subsumed it
        assert_eq!(
            used3.contains("row_sum"),
            file != "attention_subsumed.json",
            "{file}: {used3:?}"
        );
        for (g, r) in [(&two, &r), (&three, &r3)] {
            let (best, _) = exhaustive(g, &Objective::Cost).unwrap();
            assert!(r.optimal, "{file}: not proven");
            assert!(
                close(g.dag_cost(r), best),
                "{file}: {} vs {best}",
                g.dag_cost(r)
            );
        }
    }
}

#[test]
fn subsumed_nodes_are_never_chosen() {
    // with the 3-pass table the row sum is the cheapest node of its class: egglog forbids it
    let g = load("attention_subsumed.json", Some("three_pass_costs.json"));
    let subsumed: Vec<usize> = (0..g.nodes.len())
        .filter(|&n| g.nodes[n].subsumed)
        .collect();
    assert_eq!(subsumed.len(), 1);
    assert_eq!(g.nodes[subsumed[0]].op, "row_sum");
    for objective in [Objective::Cost, weights(None)] {
        for (name, ex, _) in EXTRACTORS {
            if !ex.supports(&objective) {
                continue;
            }
            let opts = Options {
                objective: objective.clone(),
                ..Options::default()
            };
            let r = ex.extract(&g, &opts);
            g.check(&r).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                r.choice.iter().flatten().all(|&n| !g.nodes[n].subsumed),
                "{name} chose a subsumed node"
            );
        }
    }
    // a choice of the subsumed node is not a valid extraction
    let mut r = ilp(&g, Objective::Cost);
    let n = subsumed[0];
    if g.reachable(&r).contains(&g.nodes[n].class) {
        r.choice[g.nodes[n].class] = Some(n);
        assert!(g.check(&r).unwrap_err().contains("subsumed"));
    }
}

#[test]
fn op_types_differs_from_cost_and_is_optimal() {
    for file in FILES {
        let g = load(file, Some("two_pass_costs.json"));
        let by_cost = ilp(&g, Objective::Cost);
        // the tiled kernels are new kernels to write: weigh them 10
        let objective = weights(Some("new_kernel_weights.json"));
        let by_types = ilp(&g, objective.clone());
        let (o, c) = exhaustive(&g, &objective).unwrap();
        assert!(by_types.optimal, "{file}");
        assert!(close(g.objective(&by_types, &objective), o), "{file}");
        assert!(
            close(g.dag_cost(&by_types), c),
            "{file}: tie broken by cost"
        );
        // fewer new kernels, at a higher cost
        assert!(g.objective(&by_types, &objective) < g.objective(&by_cost, &objective) - 1.0);
        assert!(g.dag_cost(&by_types) > g.dag_cost(&by_cost));
        assert!(!ops(&g, &by_types).contains("tiled_exp_matmul"), "{file}");
        // unit weights: the fewest distinct operators
        let unit = weights(None);
        let r = ilp(&g, unit.clone());
        let (o, c) = exhaustive(&g, &unit).unwrap();
        assert!(
            close(g.objective(&r, &unit), o) && close(g.dag_cost(&r), c),
            "{file}"
        );
        assert_eq!(g.objective(&r, &unit), ops(&g, &r).len() as f64);
    }
}

#[test]
fn small_egglog_egraphs_are_proven_without_a_solver() {
    // the exact search proves these in far less than a CBC run; the speed goal itself is in
    // benches/extract.rs (--small)
    for file in FILES {
        for table in ["two_pass_costs.json", "three_pass_costs.json"] {
            let g = load(file, Some(table));
            let proof = spores::extract::bnb::search(
                &g,
                &vec![true; g.nodes.len()],
                f64::INFINITY,
                1 << 20,
                None,
            )
            .expect("completes")
            .expect("some plan");
            g.check(&proof).unwrap();
            let (best, _) = exhaustive(&g, &Objective::Cost).unwrap();
            assert!(close(g.dag_cost(&proof), best), "{file} {table}");
            // the incumbent it cannot beat is proven
            assert_eq!(
                spores::extract::bnb::search(&g, &vec![true; g.nodes.len()], best, 1 << 20, None),
                Some(None)
            );
        }
    }
}

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

/// Checks an `--out` file against the e-graph it came from: one node per class, each the
/// original node (op, class, not subsumed), children naming the chosen node of each child
/// class, the roots chosen, acyclic; returns the selection's (objective, cost).
fn check_out(g: &ExGraph, out: &Path, objective: &Objective) -> (f64, f64) {
    let text = std::fs::read_to_string(out).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let choices = v["choices"].as_object().unwrap();
    let nodes = v["nodes"].as_object().unwrap();
    assert_eq!(choices.len(), nodes.len());
    let mut choice = vec![None; g.num_classes()];
    for (class, node) in choices {
        let c = g.class_by_name(class).unwrap();
        let n = g
            .node_names
            .iter()
            .position(|x| x == node.as_str().unwrap())
            .unwrap();
        assert_eq!(g.nodes[n].class, c);
        assert!(!g.nodes[n].subsumed);
        let written = &nodes[node.as_str().unwrap()];
        assert_eq!(written["op"], g.nodes[n].op.as_str());
        assert_eq!(written["eclass"], class.as_str());
        choice[c] = Some(n);
    }
    let index = |id: &str| g.node_names.iter().position(|x| x == id).unwrap();
    for (id, written) in nodes {
        let parent = index(id);
        let kids = written["children"].as_array().unwrap();
        assert_eq!(kids.len(), g.nodes[parent].children.len());
        for (k, child) in kids.iter().enumerate() {
            let child = child.as_str().unwrap();
            assert!(
                nodes.contains_key(child),
                "child {child} not in the selection"
            );
            assert_eq!(g.nodes[index(child)].class, g.nodes[parent].children[k]);
        }
    }
    let roots: Vec<&str> = v["root_eclasses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(
        roots,
        g.roots
            .iter()
            .map(|&r| g.class_names[r].as_str())
            .collect::<Vec<_>>()
    );
    let ex = Extraction::new(choice);
    g.check(&ex).unwrap();
    // the written file is itself a loadable e-graph whose only extraction is the selection
    let back = serialized::load(out).unwrap();
    assert_eq!(back.nodes.len(), nodes.len());
    assert!(back.classes.iter().all(|c| c.len() == 1));
    (g.objective(&ex, objective), g.dag_cost(&ex))
}

#[test]
fn out_files_are_valid_optimal_selections() {
    let dir = std::env::temp_dir().join(format!("spores-egglog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("out.json");
    let out_s = out.to_str().unwrap();
    for file in FILES {
        for table in ["two_pass_costs.json", "three_pass_costs.json"] {
            for (objective, wfile) in [
                ("cost", None),
                ("op-types", None),
                ("op-types", Some("new_kernel_weights.json")),
            ] {
                for extractor in ["ilp", "ilp-levels", "all"] {
                    let f = path(file);
                    let t = path(table);
                    let mut args = vec![
                        "extract",
                        f.to_str().unwrap(),
                        "--cost-model",
                        t.to_str().unwrap(),
                        "--objective",
                        objective,
                        "--extractor",
                        extractor,
                        "--out",
                        out_s,
                    ];
                    let w = wfile.map(path);
                    if let Some(w) = &w {
                        args.extend(["--op-weights", w.to_str().unwrap()]);
                    }
                    let _ = std::fs::remove_file(&out);
                    let (code, stdout, err) = spores(&args);
                    assert_eq!(code, 0, "{args:?}: {err}");
                    assert!(err.contains("names no root e-classes"), "{err}");
                    let g = load(file, Some(table));
                    let obj = if objective == "cost" {
                        Objective::Cost
                    } else {
                        weights(wfile)
                    };
                    let (o, c) = check_out(&g, &out, &obj);
                    let (bo, bc) = exhaustive(&g, &obj).unwrap();
                    assert!(
                        close(o, bo) && close(c, bc),
                        "{args:?}: ({o}, {c}) vs ({bo}, {bc})"
                    );
                    // the JSON line of the exact extractor reports the objective
                    let line = stdout
                        .lines()
                        .find(|l| l.contains("\"extractor\":\"ilp\""))
                        .unwrap_or_else(|| stdout.lines().next().unwrap());
                    let v: serde_json::Value = serde_json::from_str(line).unwrap();
                    if extractor != "all" {
                        assert!(close(v["objective"].as_f64().unwrap(), bo), "{line}");
                        assert_eq!(v["optimal"], true, "{line}");
                        assert_eq!(v["gap"], 0.0, "{line}");
                    }
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn roots_tables_and_objectives_are_checked() {
    let f = path("attention_two_layers.json");
    let f = f.to_str().unwrap();
    // a root by id, by egglog let name; the inner layer alone is cheaper than both
    let (code, both, err) = spores(&["extract", f]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("__main__.Mat-24"), "{err}");
    let (code, inner, err) = spores(&["extract", f, "--root", "$out0"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("names no root"), "{err}");
    let (_, by_id, _) = spores(&["extract", f, "--root", "__main__.Mat-12"]);
    let cost = |s: &str| -> f64 {
        let v: serde_json::Value = serde_json::from_str(s.trim()).unwrap();
        v["dag_cost"].as_f64().unwrap()
    };
    assert_eq!(cost(&inner), cost(&by_id));
    assert!(cost(&inner) < cost(&both));
    let (_, two, _) = spores(&["extract", f, "--root", "$out0", "--root", "$out1"]);
    assert_eq!(cost(&two), cost(&both));
    // a root that names no class: usage error listing some classes
    let (code, _, err) = spores(&["extract", f, "--root", "nope"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--root nope") && err.contains("__main__.Mat-24"),
        "{err}"
    );
    // bad cost tables and weights
    let dir = std::env::temp_dir().join(format!("spores-tables-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (text, msg) in [
        ("[1, 2]", "expected a JSON object"),
        ("{\"matmul\": -1}", "non-negative"),
        ("{\"matmul\": \"cheap\"}", "not a number"),
        ("{\"matmul\": 1e999}", "not valid JSON"),
        ("{\"matmul\": ", "not valid JSON"),
    ] {
        let t = dir.join("t.json");
        std::fs::write(&t, text).unwrap();
        for flag in ["--cost-model", "--op-weights"] {
            let mut args = vec!["extract", f, flag, t.to_str().unwrap()];
            if flag == "--op-weights" {
                args.extend(["--objective", "op-types"]);
            }
            let (code, _, err) = spores(&args);
            assert_eq!(code, 2, "{text}: {err}");
            assert!(err.contains(flag) && err.contains(msg), "{text}: {err}");
        }
    }
    let (code, _, err) = spores(&["extract", f, "--cost-model", "no/such.json"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
    // extractors that cannot optimize op-types say so
    let (code, _, err) = spores(&[
        "extract",
        f,
        "--objective",
        "op-types",
        "--extractor",
        "greedy-dag",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("greedy-dag cannot optimize the op-types objective"),
        "{err}"
    );
    let (code, out, err) = spores(&[
        "extract",
        f,
        "--objective",
        "op-types",
        "--extractor",
        "all",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("skipped") && err.contains("lp-round"), "{err}");
    assert_eq!(out.lines().count(), 2, "{out}");
    let (code, _, _) = spores(&["extract", f, "--op-weights", "x.json"]);
    assert_eq!(code, 2);
}

#[test]
fn a_root_that_needs_an_all_subsumed_class_has_no_extraction() {
    // as in egglog, whose extract fails: "Unable to find any valid extraction"
    let dir = std::env::temp_dir().join(format!("spores-subsumed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("g.json");
    std::fs::write(
        &f,
        r#"{"nodes": {
            "k": {"op": "k", "children": ["f"], "eclass": "top", "cost": 1},
            "f": {"op": "f", "children": ["a"], "eclass": "mid", "cost": 1, "subsumed": true},
            "a": {"op": "a", "children": [], "eclass": "leaf", "cost": 1}
        }}"#,
    )
    .unwrap();
    let (code, _, err) = spores(&["extract", f.to_str().unwrap(), "--extractor", "all"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no valid extraction"), "{err}");
    // with an alternative that is not subsumed, that one is chosen
    std::fs::write(
        &f,
        r#"{"nodes": {
            "k": {"op": "k", "children": ["f"], "eclass": "top", "cost": 1},
            "f": {"op": "f", "children": ["a"], "eclass": "mid", "cost": 1, "subsumed": true},
            "g": {"op": "g", "children": ["a"], "eclass": "mid", "cost": 5},
            "a": {"op": "a", "children": [], "eclass": "leaf", "cost": 1}
        }}"#,
    )
    .unwrap();
    let (code, out, err) = spores(&[
        "extract",
        f.to_str().unwrap(),
        "--extractor",
        "all",
        "--term",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), EXTRACTORS.len());
    assert!(out.lines().all(|l| l.contains("(k (g a))")), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}
