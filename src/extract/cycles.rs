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
//! There are exponentially many cycles, so the cuts are added lazily: the ILP is solved
//! without them, the cycles of its solution (`ExGraph::find_cycles`, all that one depth-first
//! search meets) are cut, and it is solved again, until a solution has none. (Separating
//! violated cycle inequalities on the LP relaxation by shortest paths before the first solve
//! was tried: it raised eggcc-bril/loop_if's root bound from 4 to 15 of 59 but did not make
//! the proofs faster, and cost ~0.1 s of LP solves on small e-graphs.)

use super::graph::ExGraph;
use good_lp::{constraint, Expression, SolverModel, Variable};

/// Adds the cycle inequality of each cycle of classes in `cuts` to `model`.
pub(super) fn add_cycle_cuts<M: SolverModel>(
    model: &mut M,
    g: &ExGraph,
    x: &[Option<Variable>],
    cuts: &[Vec<usize>],
) {
    for cut in cuts {
        let used: Expression = cut
            .iter()
            .zip(cut.iter().cycle().skip(1))
            .flat_map(|(&c, &d)| edge_nodes(g, c, d))
            .filter_map(|n| x[n])
            .sum();
        model.add_constraint(constraint!(used <= (cut.len() as f64) - 1.0));
    }
}

/// The nodes of class `c` that need class `d`.
fn edge_nodes(g: &ExGraph, c: usize, d: usize) -> impl Iterator<Item = usize> + '_ {
    g.classes[c]
        .iter()
        .copied()
        .filter(move |&n| g.nodes[n].children.contains(&d))
}

/// A cycle `c` rotated to start at its smallest class, so that each cycle has one spelling.
pub(super) fn canonical(c: &[usize]) -> Vec<usize> {
    let at = (0..c.len()).min_by_key(|&i| c[i]).unwrap_or(0);
    c[at..].iter().chain(&c[..at]).copied().collect()
}
