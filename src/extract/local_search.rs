//! Local search on an extraction: starting from a valid extraction, change one class's node at
//! a time and keep the change when the DAG cost drops (first improvement, classes in a fixed
//! order, repeated until a full pass finds nothing, or the budget of candidates evaluated or
//! the time budget ends).
//!
//! Greedy extractors decide each class once, bottom-up, so they cannot see that choosing a
//! node makes *other* classes reachable or unreachable. That matters most with negative costs
//! (the maxsat e-graphs, where the extraction is an assignment and each satisfied clause is a
//! class of cost -1) and with heavy sharing. A change can make new classes reachable: they get
//! the node of a fallback extraction (the greedy tree), or their cheapest node. Each candidate
//! is checked whole (every reachable class chosen, no cycle), so the result is always valid.

use super::graph::{ExGraph, Extraction};
use std::time::Instant;

/// The DAG cost of the extraction `choice` from the roots, or `None` if it is not valid (a
/// reachable class without a node, an infinite cost, or a cycle).
fn evaluate(
    g: &ExGraph,
    choice: &[Option<usize>],
    state: &mut [u8],
    stack: &mut Vec<(usize, usize)>,
) -> Option<f64> {
    // 0 unvisited, 1 on the DFS path, 2 done
    state.iter_mut().for_each(|s| *s = 0);
    let mut cost = 0.0;
    for &r in &g.roots {
        if state[r] == 2 {
            continue;
        }
        stack.clear();
        stack.push((r, 0));
        state[r] = 1;
        let n = choice[r]?;
        cost += g.nodes[n].cost;
        while let Some(top) = stack.len().checked_sub(1) {
            let (c, k) = stack[top];
            let n = choice[c].expect("entered classes have a node");
            if let Some(&d) = g.nodes[n].children.get(k) {
                stack[top].1 += 1;
                match state[d] {
                    1 => return None, // cycle
                    2 => {}
                    _ => {
                        let m = choice[d]?;
                        cost += g.nodes[m].cost;
                        state[d] = 1;
                        stack.push((d, 0));
                    }
                }
            } else {
                state[c] = 2;
                stack.pop();
            }
        }
    }
    cost.is_finite().then_some(cost)
}

/// Improves a valid extraction `ex` until a local optimum, `evaluations` candidate
/// extractions evaluated, or `deadline`; `fallback` supplies nodes for classes that become
/// reachable. With a count and no deadline (`None`), the result does not depend on the
/// machine's speed.
pub fn improve(
    g: &ExGraph,
    ex: Extraction,
    fallback: &Extraction,
    evaluations: usize,
    deadline: Option<Instant>,
) -> Extraction {
    let mut state = vec![0u8; g.num_classes()];
    let mut stack = Vec::new();
    let mut choice: Vec<Option<usize>> = (0..g.num_classes())
        .map(|c| {
            ex.choice[c].or(fallback.choice[c]).or_else(|| {
                g.classes[c]
                    .iter()
                    .copied()
                    .filter(|&n| g.nodes[n].cost.is_finite())
                    .min_by(|&a, &b| g.nodes[a].cost.total_cmp(&g.nodes[b].cost))
            })
        })
        .collect();
    let Some(mut best) = evaluate(g, &choice, &mut state, &mut stack) else {
        return ex;
    };
    let start = best;
    let candidates: Vec<usize> = (0..g.num_classes())
        .filter(|&c| g.classes[c].len() > 1)
        .collect();
    let mut left = evaluations;
    'passes: loop {
        let mut improved = false;
        for &c in &candidates {
            let keep = choice[c];
            for &n in &g.classes[c] {
                if Some(n) == keep || !g.nodes[n].cost.is_finite() {
                    continue;
                }
                if left == 0 || deadline.is_some_and(|d| Instant::now() > d) {
                    choice[c] = keep;
                    break 'passes;
                }
                left -= 1;
                choice[c] = Some(n);
                match evaluate(g, &choice, &mut state, &mut stack) {
                    Some(cost) if cost < best - 1e-9 => {
                        best = cost;
                        improved = true;
                        break;
                    }
                    _ => choice[c] = keep,
                }
            }
        }
        if !improved {
            break;
        }
    }
    if best >= start {
        return ex;
    }
    // keep only the reachable classes' nodes
    let _ = evaluate(g, &choice, &mut state, &mut stack);
    Extraction::new(
        choice
            .iter()
            .zip(&state)
            .map(|(&n, &s)| if s == 2 { n } else { None })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::serialized::from_json;

    /// A two-variable MaxSAT instance: each variable class has a positive and a negative
    /// literal node; each literal reaches the clauses it satisfies (cost -1 each).
    const SAT: &str = r#"{"nodes": {
        "r": {"op": "root", "children": ["p1", "p2"], "eclass": "root", "cost": 0},
        "p1": {"op": "p1", "children": ["a", "b"], "eclass": "x1", "cost": 0},
        "n1": {"op": "n1", "children": ["c"], "eclass": "x1", "cost": 0},
        "p2": {"op": "p2", "children": ["c"], "eclass": "x2", "cost": 0},
        "n2": {"op": "n2", "children": ["d"], "eclass": "x2", "cost": 0},
        "a": {"op": "a", "eclass": "ca", "cost": -1},
        "b": {"op": "b", "eclass": "cb", "cost": -1},
        "c": {"op": "c", "eclass": "cc", "cost": -1},
        "d": {"op": "d", "eclass": "cd", "cost": -1}
    }, "root_eclasses": ["root"]}"#;

    fn pick(g: &ExGraph, ops: &[&str]) -> Extraction {
        let mut choice = vec![None; g.num_classes()];
        for (n, node) in g.nodes.iter().enumerate() {
            if ops.contains(&node.op.as_str()) {
                choice[node.class] = Some(n);
            }
        }
        Extraction::new(choice)
    }

    #[test]
    fn flips_a_literal_to_satisfy_more_clauses() {
        let g = from_json(SAT).unwrap();
        let start = pick(&g, &["root", "n1", "n2", "c", "d"]);
        g.check(&start).unwrap();
        assert_eq!(g.dag_cost(&start), -2.0);
        let far = Instant::now() + std::time::Duration::from_secs(5);
        let better = improve(&g, start.clone(), &start, usize::MAX, Some(far));
        g.check(&better).unwrap();
        // the optimum satisfies three clauses (p1 with either literal of x2)
        assert_eq!(g.dag_cost(&better), -3.0);
        // an expired budget keeps the start, and so does a budget of no evaluations
        let same = improve(&g, start.clone(), &start, usize::MAX, Some(Instant::now()));
        assert_eq!(g.dag_cost(&same), -2.0);
        let same = improve(&g, start.clone(), &start, 0, Some(far));
        assert_eq!(g.dag_cost(&same), -2.0);
        // a count alone bounds it: the first candidate (p1) already pays
        let better = improve(&g, start.clone(), &start, 1, None);
        assert_eq!(g.dag_cost(&better), -3.0);
    }
}
