//! egraph-serialize JSON (the format of the extraction-gym benchmark and of egglog's
//! `serialize`) to and from [`ExGraph`], and an extraction written back as a self-contained
//! egraph-serialize selection ([`selection_json`]) or as an s-expression ([`term`]).
//! Malformed input (bad JSON, a child id that names no node, a root class without nodes) is an
//! error with a message, never a panic.
//!
//! egglog's conventions hold: `children` name nodes (only their classes matter), a node marked
//! `"subsumed": true` is never extracted (it gets an infinite cost; a class whose nodes are all
//! subsumed cannot be extracted, and a root that needs one has no valid extraction, as
//! egglog's own `extract` fails with "Unable to find any valid extraction"), and
//! `root_eclasses` may be empty (the caller then picks roots, see
//! [`ExGraph::unreferenced_classes`]). The `let` names egglog writes into `class_data` are kept
//! so that a root can be named by them.

use super::graph::{ExGraph, ExNode, Extraction};
use std::collections::HashMap;
use std::path::Path;

/// A file that is not a usable e-graph.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// unreadable file
    #[error("cannot read {path}: {source}")]
    Io {
        /// the file
        path: String,
        /// the OS error
        source: std::io::Error,
    },
    /// not egraph-serialize JSON
    #[error("{path}: not an egraph-serialize JSON e-graph: {message}")]
    Json {
        /// the file
        path: String,
        /// serde's message (with line and column)
        message: String,
    },
    /// structurally broken
    #[error("{path}: {message}")]
    Invalid {
        /// the file
        path: String,
        /// what is wrong
        message: String,
    },
}

/// Reads an egraph-serialize JSON file.
pub fn load(path: &Path) -> Result<ExGraph, LoadError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io {
        path: p.clone(),
        source,
    })?;
    from_json(&text).map_err(|e| match e {
        LoadError::Json { message, .. } => LoadError::Json {
            path: p.clone(),
            message,
        },
        LoadError::Invalid { message, .. } => LoadError::Invalid {
            path: p.clone(),
            message,
        },
        other => other,
    })
}

/// The largest cost magnitude a file may give a node: CBC and Clp assert on objective
/// coefficients of 1e25 and more.
pub const MAX_COST: f64 = 1e20;

/// Parses egraph-serialize JSON text.
pub fn from_json(text: &str) -> Result<ExGraph, LoadError> {
    let eg: egraph_serialize::EGraph = serde_json::from_str(text).map_err(|e| LoadError::Json {
        path: String::new(),
        message: e.to_string(),
    })?;
    let invalid = |message: String| LoadError::Invalid {
        path: String::new(),
        message,
    };
    let mut g = ExGraph::default();
    let mut class_index: HashMap<&str, usize> = HashMap::new();
    let mut node_index: HashMap<&str, usize> = HashMap::new();
    for (nid, node) in &eg.nodes {
        let cost = node.cost.into_inner();
        if !cost.is_finite() || cost.abs() >= MAX_COST {
            return Err(invalid(format!(
                "node {nid} has cost {cost}: costs must be finite and below {MAX_COST:e} in \
                 magnitude (the LP solver's limit)"
            )));
        }
        let c = *class_index.entry(node.eclass.as_ref()).or_insert_with(|| {
            g.classes.push(Vec::new());
            g.class_names.push(node.eclass.to_string());
            g.classes.len() - 1
        });
        node_index.insert(nid.as_ref(), g.nodes.len());
        g.classes[c].push(g.nodes.len());
        g.node_names.push(nid.to_string());
        g.nodes.push(ExNode {
            class: c,
            cost: if node.subsumed { f64::INFINITY } else { cost },
            op: node.op.clone(),
            children: Vec::new(),
            subsumed: node.subsumed,
        });
    }
    for (k, (nid, node)) in eg.nodes.iter().enumerate() {
        let mut kids = Vec::with_capacity(node.children.len());
        for ch in &node.children {
            let &n = node_index.get(ch.as_ref()).ok_or_else(|| {
                invalid(format!("node {nid} has child {ch}, which names no node"))
            })?;
            kids.push(g.nodes[n].class);
        }
        g.nodes[k].children = kids;
    }
    for r in &eg.root_eclasses {
        let &c = class_index
            .get(r.as_ref())
            .ok_or_else(|| invalid(format!("root e-class {r} has no nodes")))?;
        g.roots.push(c);
    }
    g.class_lets = vec![Vec::new(); g.classes.len()];
    if text.contains("\"let\"") {
        // egglog's class_data: {"CLASS": {"type": ..., "let": "$a, $b"}}
        let raw: serde_json::Value = serde_json::from_str(text).map_err(|e| LoadError::Json {
            path: String::new(),
            message: e.to_string(),
        })?;
        if let Some(data) = raw.get("class_data").and_then(|d| d.as_object()) {
            for (class, d) in data {
                if let (Some(&c), Some(lets)) = (
                    class_index.get(class.as_str()),
                    d.get("let").and_then(|l| l.as_str()),
                ) {
                    g.class_lets[c] = lets.split(',').map(|l| l.trim().to_string()).collect();
                }
            }
        }
    }
    Ok(g)
}

/// The extraction `ex` of `g` as a self-contained egraph-serialize e-graph: the chosen node of
/// each class reachable from the roots (same id, op, class and cost, `children` naming the
/// chosen node of each child class), the roots, and `"choices": {class: node}`.
pub fn selection_json(g: &ExGraph, ex: &Extraction) -> serde_json::Value {
    let mut nodes = serde_json::Map::new();
    let mut choices = serde_json::Map::new();
    for c in g.reachable(ex) {
        let Some(n) = ex.choice[c] else { continue };
        let node = &g.nodes[n];
        let children: Vec<serde_json::Value> = node
            .children
            .iter()
            .filter_map(|&d| ex.choice[d].map(|m| g.node_name(m).into()))
            .collect();
        nodes.insert(
            g.node_name(n),
            serde_json::json!({
                "op": node.op,
                "children": children,
                "eclass": g.class_names[c],
                "cost": node.cost,
            }),
        );
        choices.insert(g.class_names[c].clone(), g.node_name(n).into());
    }
    serde_json::json!({
        "nodes": nodes,
        "root_eclasses": g.roots.iter().map(|&r| g.class_names[r].clone()).collect::<Vec<_>>(),
        "choices": choices,
    })
}

/// The extracted term as s-expressions: a sub-term used more than once (and not a leaf) is
/// written once as `(let $tN TERM)`, in dependency order, and referred to as `$tN`; then one
/// line per root. The extraction must be valid.
pub fn term(g: &ExGraph, ex: &Extraction) -> String {
    let n = g.num_classes();
    let mut uses = vec![0usize; n];
    for &r in &g.roots {
        uses[r] += 1;
    }
    for c in g.reachable(ex) {
        if let Some(m) = ex.choice[c] {
            for &d in &g.nodes[m].children {
                uses[d] += 1;
            }
        }
    }
    let mut name: Vec<Option<String>> = vec![None; n];
    let mut out = String::new();
    // post-order: children are written (or named) before their users
    fn text(
        g: &ExGraph,
        ex: &Extraction,
        c: usize,
        uses: &[usize],
        name: &mut Vec<Option<String>>,
        out: &mut String,
    ) -> String {
        if let Some(s) = &name[c] {
            return s.clone();
        }
        let Some(m) = ex.choice[c] else {
            return "?".into();
        };
        let node = &g.nodes[m];
        let s = if node.children.is_empty() {
            node.op.clone()
        } else {
            let kids: Vec<String> = node
                .children
                .iter()
                .map(|&d| text(g, ex, d, uses, name, out))
                .collect();
            format!("({} {})", node.op, kids.join(" "))
        };
        if uses[c] > 1 && !node.children.is_empty() {
            let id = format!("$t{}", name.iter().flatten().count() + 1);
            out.push_str(&format!("(let {id} {s})\n"));
            name[c] = Some(id.clone());
            return id;
        }
        s
    }
    let mut roots = Vec::new();
    for &r in &g.roots {
        let s = text(g, ex, r, &uses, &mut name, &mut out);
        roots.push(s);
    }
    for s in roots {
        out.push_str(&s);
        out.push('\n');
    }
    out
}

/// Writes an [`ExGraph`] as egraph-serialize JSON (infinite costs are written as a large
/// finite number, which the format requires).
pub fn write(g: &ExGraph, path: &Path) -> std::io::Result<()> {
    let mut eg = egraph_serialize::EGraph::default();
    for (n, node) in g.nodes.iter().enumerate() {
        let cost = if node.cost.is_finite() {
            node.cost
        } else {
            1e18
        };
        eg.add_node(
            g.node_name(n),
            egraph_serialize::Node {
                op: node.op.clone(),
                children: node
                    .children
                    .iter()
                    .map(|&c| g.node_name(g.classes[c][0]).into())
                    .collect(),
                eclass: g.class_names[node.class].clone().into(),
                cost: egraph_serialize::Cost::new(cost).expect("finite cost"),
                subsumed: node.subsumed,
            },
        );
    }
    eg.root_eclasses = g
        .roots
        .iter()
        .map(|&r| g.class_names[r].clone().into())
        .collect();
    eg.to_json_file(path)
}
