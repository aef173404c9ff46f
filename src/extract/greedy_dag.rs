//! DAG-aware greedy extraction (in the style of extraction-gym's faster-greedy-dag): each class
//! keeps, for its best node, the whole set of classes that node's extraction uses, and its cost
//! is the sum over that set, so a sub-term shared by two children is paid once. A node whose
//! children's sets contain its own class would close a cycle and is skipped. Improvements
//! propagate to parents with a worklist, as in the tree extractor. The sets hash with fixed
//! keys, so their iteration order, and with it the rounding of a set's summed cost (which
//! breaks ties between plans of equal cost), is the same in every run.

use super::graph::{ExGraph, Extraction};
use super::{Extractor, GreedyTree, Options};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::rc::Rc;

/// The DAG-aware greedy extractor.
pub struct GreedyDag;

/// The classes (with their chosen nodes) of one class's best extraction.
type CostSet = Rc<ClassSet>;

/// A set of classes with their chosen nodes, hashed with fixed keys (deterministic order).
type ClassSet = HashMap<usize, usize, BuildHasherDefault<DefaultHasher>>;

impl Extractor for GreedyDag {
    fn extract(&self, g: &ExGraph, opts: &Options) -> Extraction {
        let deadline = std::time::Instant::now() + opts.time_limit;
        let parents = g.parents();
        let mut best: Vec<Option<(f64, CostSet)>> = vec![None; g.num_classes()];
        let (mut queue, mut queued) = super::greedy_tree::leaf_queue(g);
        let mut budget = 50 * g.nodes.len() + 1000;
        while let Some(n) = queue.pop_front() {
            queued[n] = false;
            let node = &g.nodes[n];
            if !node.cost.is_finite() || node.children.iter().any(|&c| best[c].is_none()) {
                continue;
            }
            // union of the children's sets, starting from the largest
            let mut kids: Vec<&CostSet> = node
                .children
                .iter()
                .map(|&c| &best[c].as_ref().expect("checked").1)
                .collect();
            kids.sort_by_key(|s| std::cmp::Reverse(s.len()));
            let mut set: ClassSet = kids.first().map(|s| (***s).clone()).unwrap_or_default();
            for s in kids.iter().skip(1) {
                for (&c, &m) in s.iter() {
                    set.entry(c).or_insert(m);
                }
            }
            if set.contains_key(&node.class) {
                continue; // would be a cycle
            }
            set.insert(node.class, n);
            let cost: f64 = set.values().map(|&m| g.nodes[m].cost).sum();
            let better = best[node.class].as_ref().is_none_or(|(b, _)| cost < *b);
            if better {
                best[node.class] = Some((cost, Rc::new(set)));
                if budget == 0 || std::time::Instant::now() > deadline {
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
        // the roots' sets together (a root's set wins for its own classes)
        let mut choice = vec![None; g.num_classes()];
        for &r in &g.roots {
            if let Some((_, set)) = &best[r] {
                for (&c, &n) in set.iter() {
                    choice[c].get_or_insert(n);
                }
            }
        }
        let ex = Extraction::new(choice);
        if g.check(&ex).is_ok() {
            ex
        } else {
            // merging roots' sets can mix choices; fall back to the tree extraction
            GreedyTree.extract(g, opts)
        }
    }
}
