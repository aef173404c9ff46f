//! LP relaxation with randomized rounding (the optional extractor `lp-round`, after "E-graph
//! extraction via LP relaxation", ../shared/papers/egraph-extraction-lp-relaxation.txt).
//!
//! The ILP of `ilp.rs` without integrality and without acyclicity: a variable in [0, 1] per
//! live node, a root class's nodes summing to 1, and each chosen node's child classes at least
//! as chosen as the node (`sum of the child class's nodes >= node`). Clp solves it (through
//! CBC with no integer variables), which is much faster than branch and bound.
//!
//! Rounding (Algorithm 1 of the paper): from the roots, each class needed picks one node at
//! random with probability proportional to its LP value, memoized per class. A pick whose
//! children lead back to the current path is skipped (the LP knows nothing of cycles); a class
//! whose nodes all have LP value 0 picks by cost. The extractor runs a fixed number of seeded
//! roundings plus the deterministic one (largest value per class) and keeps the cheapest
//! valid one. If the LP optimum is integral and the rounding reproduces its cost, the result
//! is proven optimal (the LP is a relaxation of the exact problem). The paper shows the
//! rounding can be arbitrarily bad, so the greedy DAG extraction competes with the roundings
//! (and is the fallback when none is valid).

use super::graph::{ExGraph, Extraction};
use super::{Extractor, GreedyDag, Options};
use good_lp::{
    constraint, variable, ProblemVariables, Solution, SolutionStatus, SolverModel, Variable,
    WithTimeLimit,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The LP relaxation + rounding extractor.
pub struct LpRound;

/// Seeded roundings per extraction (plus the deterministic one).
const ROUNDINGS: u64 = 32;

impl Extractor for LpRound {
    fn extract(&self, g: &ExGraph, opts: &Options) -> Extraction {
        let start = std::time::Instant::now();
        let fallback = || GreedyDag.extract(g, opts);
        let Some((w, lp_cost)) = relax(g, opts, &[]) else {
            return fallback();
        };
        let mut best: Option<(f64, Extraction)> = None;
        for seed in 0..=ROUNDINGS {
            if seed > 0 && start.elapsed() > opts.time_limit {
                break;
            }
            let mut rng = (seed > 0).then(|| ChaCha8Rng::seed_from_u64(seed));
            let Some(ex) = round(g, &w, rng.as_mut()) else {
                continue;
            };
            if g.check(&ex).is_err() {
                continue;
            }
            let c = g.dag_cost(&ex);
            if best.as_ref().is_none_or(|(b, _)| c < *b) {
                best = Some((c, ex));
            }
        }
        // the rounding can be arbitrarily bad (the paper's Lemma 5.2; spores's own e-graphs,
        // full of cycles between the LA and RA forms, split the LP's weights): the greedy DAG
        // extraction is a candidate too
        let greedy = fallback();
        if g.check(&greedy).is_ok() {
            let c = g.dag_cost(&greedy);
            if best.as_ref().is_none_or(|(b, _)| c < *b) {
                best = Some((c, greedy));
            }
        }
        match best {
            Some((c, mut ex)) => {
                let integral = w.iter().all(|v| (v - v.round()).abs() < 1e-6);
                ex.optimal = integral && (c - lp_cost).abs() <= 1e-6 * lp_cost.abs().max(1.0);
                ex
            }
            None => fallback(),
        }
    }
}

/// Solves the relaxation: the LP value of every node (0 for dead ones) and the LP optimum,
/// a lower bound on the best DAG cost (`None` unless Clp proved its optimum).
pub(super) fn relax(g: &ExGraph, opts: &Options, cuts: &[Vec<usize>]) -> Option<(Vec<f64>, f64)> {
    let alive = super::ilp::reduce(g, false);
    let keep = super::ilp::reachable_live(g, &alive);
    let mut vars = ProblemVariables::new();
    let x: Vec<Option<Variable>> = (0..g.nodes.len())
        .map(|n| {
            (alive[n] && keep[g.nodes[n].class]).then(|| vars.add(variable().min(0.0).max(1.0)))
        })
        .collect();
    // class variables, as in the ILP: short rows
    let z: Vec<Option<Variable>> = (0..g.num_classes())
        .map(|c| keep[c].then(|| vars.add(variable().min(0.0).max(1.0))))
        .collect();
    let zc = |c: usize| z[c].expect("kept class");
    let model = super::ilp::cbc_model(vars, super::ilp::cost_objective(g, &x), false);
    let mut model = model.with_time_limit(opts.time_limit.as_secs_f64().max(1.0));
    if g.roots.iter().any(|&r| !keep[r]) {
        return None;
    }
    for &r in &g.roots {
        model.add_constraint(constraint!(zc(r) == 1));
    }
    for c in (0..g.num_classes()).filter(|&c| keep[c]) {
        model.add_constraint(constraint!(zc(c) - super::ilp::class_sum(g, &x, c) == 0));
    }
    super::ilp::add_implication_rows(&mut model, g, &x, &z);
    super::cycles::add_cycle_cuts(&mut model, g, &x, cuts);
    let solution = model.solve().ok()?;
    if !matches!(solution.status(), SolutionStatus::Optimal) {
        return None;
    }
    let w: Vec<f64> = x
        .iter()
        .map(|v| v.map_or(0.0, |v| solution.value(v).clamp(0.0, 1.0)))
        .collect();
    // over the modelled nodes only: an unmodelled node of infinite cost times 0 is NaN
    let cost = g
        .nodes
        .iter()
        .zip(&x)
        .filter_map(|(node, v)| v.map(|v| node.cost * solution.value(v).clamp(0.0, 1.0)))
        .sum();
    Some((w, cost))
}

/// One rounding: each class tries first a node drawn with probability proportional to its LP
/// value (with `rng`; else the largest value), then the others by decreasing value; classes
/// whose nodes all have value 0 go by cost. The search avoids cycles.
fn round(g: &ExGraph, w: &[f64], mut rng: Option<&mut ChaCha8Rng>) -> Option<Extraction> {
    let order: Vec<Vec<usize>> = g
        .classes
        .iter()
        .map(|ns| {
            let mut cands: Vec<usize> = ns
                .iter()
                .copied()
                .filter(|&n| g.nodes[n].cost.is_finite())
                .collect();
            let total: f64 = cands.iter().map(|&n| w[n]).sum();
            if total <= 1e-9 {
                cands.sort_by(|&a, &b| g.nodes[a].cost.total_cmp(&g.nodes[b].cost));
                return cands;
            }
            cands.sort_by(|&a, &b| w[b].total_cmp(&w[a]));
            if let Some(r) = rng.as_deref_mut() {
                let mut u = r.gen::<f64>() * total;
                let pos = cands
                    .iter()
                    .position(|&n| {
                        let hit = u < w[n];
                        u -= w[n];
                        hit
                    })
                    .unwrap_or(0);
                let first = cands.remove(pos);
                cands.insert(0, first);
            }
            cands
        })
        .collect();
    let ex = super::acyclic_in_order(g, order);
    g.roots
        .iter()
        .all(|&r| ex.choice[r].is_some())
        .then_some(ex)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node of infinite cost (never extractable: egglog's subsumed nodes, folded nodes of a
    /// contracted graph) does not make the LP bound NaN.
    #[test]
    fn infinite_cost_nodes_leave_the_bound_finite() {
        let g = ExGraph::from_triples(
            3,
            &[
                (0, 1.0, &[1]),
                (0, f64::INFINITY, &[2]),
                (1, 2.0, &[]),
                (2, 1.0, &[]),
            ],
        );
        let (_, bound) = relax(&g, &Options::default(), &[]).expect("LP solved");
        assert_eq!(bound, 3.0);
    }
}
