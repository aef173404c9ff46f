//! Cycle inequalities: how the ILP keeps a selection acyclic without ordering variables.
//!
//! A selection is a valid extraction only if the class graph of its chosen nodes has no cycle.
//! For a cycle of classes `c_1 -> c_2 -> ... -> c_k -> c_1`, write `e_i` for the sum of the
//! variables of the nodes of `c_i` that need `c_(i+1)`: as a class chooses at most one node,
//! `e_i` is 1 exactly when the chosen node of `c_i` needs `c_(i+1)`, and an acyclic selection
//! satisfies `e_1 + ... + e_k <= k - 1` (the cycle inequality of the acyclic subgraph
//! polytope, on class edges; extraction-gym's faster-ilp-cbc writes the same cut with one
//! auxiliary binary per edge, which is weaker in the LP relaxation).
//!
//! Stronger, and what is added: for the set `S` of the classes of a cycle, write `u_c` for the
//! sum of the variables of the nodes of `c` with at least one child class in `S`. If every
//! class of `S` chose such a node, every class of `S` would have an edge into `S` and the
//! chosen subgraph on `S` would contain a cycle; so an acyclic selection satisfies
//! `sum over c in S of u_c <= |S| - 1`. This dominates the cycle inequality (each `e_i` is part
//! of `u_(c_i)`), blocks every cycle inside `S` at once, not only the one found, and is what
//! [`add_cycle_cuts`] adds.
//!
//! There are exponentially many such sets, so the cuts are added lazily: the ILP is solved
//! without them, the cycles of its solution (`ExGraph::find_cycles`, all that one depth-first
//! search meets) are cut, and it is solved again, until a solution has none. (Separating
//! violated cycle inequalities on the LP relaxation by shortest paths before the first solve
//! was tried: it raised eggcc-bril/loop_if's root bound from 4 to 15 of 59 but did not make
//! the proofs faster, and cost ~0.1 s of LP solves on small e-graphs.)

use super::graph::ExGraph;
use good_lp::{constraint, Expression, SolverModel, Variable};

/// Adds, for each set of classes in `cuts` (sorted), the set inequality of the module doc.
pub(super) fn add_cycle_cuts<M: SolverModel>(
    model: &mut M,
    g: &ExGraph,
    x: &[Option<Variable>],
    cuts: &[Vec<usize>],
) {
    for set in cuts {
        let inside = |d: &usize| set.binary_search(d).is_ok();
        let used: Expression = set
            .iter()
            .flat_map(|&c| g.classes[c].iter().copied())
            .filter(|&n| g.nodes[n].children.iter().any(inside))
            .filter_map(|n| x[n])
            .sum();
        model.add_constraint(constraint!(used <= (set.len() as f64) - 1.0));
    }
}

/// The classes of cycle `c`, sorted, so that each set has one spelling.
pub(super) fn canonical(c: &[usize]) -> Vec<usize> {
    let mut s = c.to_vec();
    s.sort_unstable();
    s.dedup();
    s
}

/// The class sets of the cycles of length two among the nodes marked `alive`: pairs of classes
/// each with a node that needs the other.
pub(super) fn two_cycles(g: &ExGraph, alive: &[bool]) -> Vec<Vec<usize>> {
    let mut edges: std::collections::HashSet<(usize, usize)> = Default::default();
    for (n, node) in g.nodes.iter().enumerate() {
        if alive[n] {
            for &d in &node.children {
                if d != node.class {
                    edges.insert((node.class, d));
                }
            }
        }
    }
    let mut out: Vec<Vec<usize>> = edges
        .iter()
        .filter(|&&(c, d)| c < d && edges.contains(&(d, c)))
        .map(|&(c, d)| vec![c, d])
        .collect();
    out.sort_unstable();
    out
}
