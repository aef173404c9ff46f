//! egraph-serialize JSON (the format of the extraction-gym benchmark) to and from [`ExGraph`].
//! Malformed input (bad JSON, a child id that names no node, a root class without nodes) is an
//! error with a message, never a panic.

use super::graph::{ExGraph, ExNode};
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
            cost,
            op: node.op.clone(),
            children: Vec::new(),
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
    if g.roots.is_empty() {
        return Err(invalid("no root e-classes".into()));
    }
    Ok(g)
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
            g.node_names[n].clone(),
            egraph_serialize::Node {
                op: node.op.clone(),
                children: node
                    .children
                    .iter()
                    .map(|&c| g.node_names[g.classes[c][0]].clone().into())
                    .collect(),
                eclass: g.class_names[node.class].clone().into(),
                cost: egraph_serialize::Cost::new(cost).expect("finite cost"),
                subsumed: false,
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
