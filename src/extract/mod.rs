//! Stage 5, extract: picks the cheapest executable plan out of a saturated e-graph.
//!
//! Every extractor implements [`Extractor`] over an [`ExGraph`] (built from spores's own
//! e-graphs or from egraph-serialize JSON) and is listed once in [`EXTRACTORS`] with whether it
//! is exact. Every result can be checked with [`ExGraph::check`] (roots chosen, each node in
//! its class, children chosen, no cycle); [`ExGraph::dag_cost`] counts each chosen class once,
//! [`ExGraph::tree_cost`] once per use.
//!
//! | extractor | file | optimal for |
//! |---|---|---|
//! | `greedy-tree` | greedy_tree.rs | tree cost (positive costs) |
//! | `greedy-dag` | greedy_dag.rs | neither (DAG-aware heuristic) |
//! | `ilp` | ilp.rs, cycles.rs (lazy cycle cuts) | DAG cost, when CBC proves it within the time limit |
//! | `ilp-levels` | ilp.rs (topological levels) | the same |
//! | `lp-round` | lp_round.rs (LP relaxation, randomized rounding) | neither (proven only when the LP is integral) |
//!
//! The ILP's warm start, greedy DAG extraction, is first improved by local search
//! (local_search.rs), which also makes it a better fallback. Before any solver runs, the ILP
//! tries to prove it optimal (or beat it) with the exact branch and bound of bnb.rs; CBC runs
//! in a child process that the time limit ends (child.rs). [`Options::objective`] chooses
//! between the DAG cost and the op-types objective, which only the ILP extractors optimize
//! ([`Extractor::supports`]).

pub mod bnb;
pub mod child;
pub mod contract;
pub mod cost;
pub mod cycles;
pub mod dominators;
pub mod graph;
pub mod greedy_dag;
pub mod greedy_tree;
pub mod ilp;
pub mod local_search;
pub mod lp_round;
pub mod serialized;

pub use cost::{executable, greedy, node_cost, NnzCost};
pub use graph::{ExGraph, ExNode, Extraction};
pub use greedy_dag::GreedyDag;
pub use greedy_tree::GreedyTree;
pub use ilp::{quick_proof, Cycles, Ilp};

use std::collections::HashMap;
use std::time::Duration;

/// Settings of an extraction.
#[derive(Clone, Debug)]
pub struct Options {
    /// wall-time budget (the ILP's solver limit)
    pub time_limit: Duration,
    /// what to minimise
    pub objective: Objective,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            time_limit: Duration::from_secs(10),
            objective: Objective::Cost,
        }
    }
}

/// A cost or weight per operator name (`--cost-model`, `--op-weights`).
pub type OpTable = HashMap<String, f64>;

/// What an extraction minimises.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Objective {
    /// the DAG cost: the sum of the chosen nodes' costs, each class paid once
    #[default]
    Cost,
    /// the summed weights of the distinct operators the plan uses (each a kernel or an
    /// instruction to implement), ties broken by the DAG cost
    OpTypes(OpWeights),
}

/// The weight of each operator for [`Objective::OpTypes`]; unlisted operators weigh 1.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpWeights(pub OpTable);

impl OpWeights {
    /// The weight of `op`.
    pub fn weight(&self, op: &str) -> f64 {
        self.0.get(op).copied().unwrap_or(1.0)
    }
}

/// Parses a JSON object mapping operator names to non-negative finite numbers.
pub fn parse_op_table(text: &str) -> Result<OpTable, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let serde_json::Value::Object(map) = v else {
        return Err("expected a JSON object mapping an op to a number".into());
    };
    let mut table = OpTable::new();
    for (op, value) in map {
        match value.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 => {
                table.insert(op, x);
            }
            Some(x) => {
                return Err(format!(
                    "the cost of '{op}' is {x}: costs must be finite and non-negative"
                ))
            }
            None => return Err(format!("the cost of '{op}' is {value}, not a number")),
        }
    }
    Ok(table)
}

/// An extraction algorithm.
pub trait Extractor: Sync {
    /// Extracts every root of `g`. Always returns an extraction; it is valid whenever `g` has
    /// a valid extraction at all (check with [`ExGraph::check`]).
    fn extract(&self, g: &ExGraph, opts: &Options) -> Extraction;

    /// Whether it minimises `objective` (every extractor minimises the cost; the others
    /// must be refused rather than ignored).
    fn supports(&self, objective: &Objective) -> bool {
        matches!(objective, Objective::Cost)
    }
}

/// What an extractor guarantees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Optimal {
    /// optimal tree cost
    Tree,
    /// optimal DAG cost (when it reports `optimal`)
    Dag,
    /// a heuristic
    Neither,
}

/// The registry: name, extractor, guarantee.
pub const EXTRACTORS: &[(&str, &dyn Extractor, Optimal)] = &[
    ("greedy-tree", &GreedyTree, Optimal::Tree),
    ("greedy-dag", &GreedyDag, Optimal::Neither),
    (
        "ilp",
        &Ilp {
            cycles: Cycles::Lazy,
        },
        Optimal::Dag,
    ),
    (
        "ilp-levels",
        &Ilp {
            cycles: Cycles::Topological,
        },
        Optimal::Dag,
    ),
    // optimal only when the relaxation happens to be integral: a heuristic
    ("lp-round", &lp_round::LpRound, Optimal::Neither),
];

/// Looks an extractor up by name.
pub fn by_name(name: &str) -> Option<&'static dyn Extractor> {
    EXTRACTORS.iter().find(|e| e.0 == name).map(|e| e.1)
}

/// Builds a valid extraction by depth-first search from the roots, trying each class's nodes
/// in order of `key` and never choosing a node whose children lead back to the current path.
/// Used when a greedy choice closed a cycle (zero or negative costs).
pub fn acyclic_by_preference(g: &ExGraph, key: impl Fn(usize) -> f64) -> Extraction {
    let order: Vec<Vec<usize>> = g
        .classes
        .iter()
        .map(|ns| {
            let mut v: Vec<usize> = ns
                .iter()
                .copied()
                .filter(|&n| g.nodes[n].cost.is_finite())
                .collect();
            v.sort_by(|&a, &b| key(a).total_cmp(&key(b)));
            v
        })
        .collect();
    acyclic_in_order(g, order)
}

/// Builds an extraction by depth-first search from the roots, trying each class's nodes in the
/// given order (finite-cost nodes only) and never choosing a node whose children lead back to
/// the current path. A class that fails once stays failed, so the search is linear; the result
/// may then miss a root (check it).
pub fn acyclic_in_order(g: &ExGraph, mut order: Vec<Vec<usize>>) -> Extraction {
    let mut choice: Vec<Option<usize>> = vec![None; g.num_classes()];
    // 0 unknown, 1 on path, 2 done, 3 failed
    let mut state = vec![0u8; g.num_classes()];
    fn visit(
        g: &ExGraph,
        c: usize,
        order: &mut Vec<Vec<usize>>,
        choice: &mut Vec<Option<usize>>,
        state: &mut Vec<u8>,
    ) -> bool {
        match state[c] {
            1 | 3 => return false,
            2 => return true,
            _ => {}
        }
        state[c] = 1;
        let candidates = order[c].clone();
        for n in candidates {
            if g.nodes[n]
                .children
                .iter()
                .all(|&d| visit(g, d, order, choice, state))
            {
                choice[c] = Some(n);
                state[c] = 2;
                return true;
            }
        }
        state[c] = 3;
        false
    }
    for &r in &g.roots {
        visit(g, r, &mut order, &mut choice, &mut state);
    }
    Extraction::new(choice)
}
