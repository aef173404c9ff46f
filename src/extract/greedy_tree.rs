//! Greedy tree extraction: bottom-up, each class takes the node with the smallest tree cost
//! (own cost plus the best costs of its child classes), propagated from the leaves with a
//! worklist until nothing improves. Optimal for tree cost when costs are positive; shared
//! sub-terms are paid once per use, so it can be far from the best DAG cost.

use super::graph::{ExGraph, Extraction};
use super::{acyclic_by_preference, Extractor, Options};
use std::collections::VecDeque;

/// The greedy tree extractor.
pub struct GreedyTree;

/// The worklist both greedy extractors start from: every leaf node, marked as queued.
pub(crate) fn leaf_queue(g: &ExGraph) -> (VecDeque<usize>, Vec<bool>) {
    let mut queued = vec![false; g.nodes.len()];
    let queue: VecDeque<usize> = (0..g.nodes.len())
        .filter(|&n| g.nodes[n].children.is_empty())
        .collect();
    queue.iter().for_each(|&n| queued[n] = true);
    (queue, queued)
}

/// Best tree cost of every class (infinite when it has no finite extraction).
pub fn tree_costs(
    g: &ExGraph,
    deadline: Option<std::time::Instant>,
) -> (Vec<f64>, Vec<Option<usize>>) {
    let parents = g.parents();
    let mut best = vec![f64::INFINITY; g.num_classes()];
    let mut choice = vec![None; g.num_classes()];
    let mut queued = vec![false; g.nodes.len()];
    let mut queue: VecDeque<usize> = (0..g.nodes.len())
        .filter(|&n| g.nodes[n].children.is_empty())
        .collect();
    queue.iter().for_each(|&n| queued[n] = true);
    // with zero or negative costs improvements can go round a cycle: bound the updates
    let mut budget = 50 * g.nodes.len() + 1000;
    while let Some(n) = queue.pop_front() {
        queued[n] = false;
        let node = &g.nodes[n];
        let cost = node.children.iter().fold(node.cost, |a, &c| a + best[c]);
        if cost < best[node.class] {
            best[node.class] = cost;
            choice[node.class] = Some(n);
            if budget == 0 || deadline.is_some_and(|d| std::time::Instant::now() > d) {
                break;
            }
            budget -= 1;
            for &p in &parents[node.class] {
                if !queued[p] {
                    queued[p] = true;
                    queue.push_back(p);
                }
            }
        }
    }
    (best, choice)
}

impl Extractor for GreedyTree {
    fn extract(&self, g: &ExGraph, _opts: &Options) -> Extraction {
        let (best, choice) = tree_costs(g, None);
        let ex = Extraction::new(choice);
        if g.check(&ex).is_ok() {
            return ex;
        }
        acyclic_by_preference(g, |n| {
            let node = &g.nodes[n];
            node.children.iter().fold(node.cost, |a, &c| a + best[c])
        })
    }
}
