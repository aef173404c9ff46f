//! Contraction of single-parent classes: an exact reduction of the extraction problem.
//!
//! A class `d` that is not a root, has one extractable node `n` and one extractable parent
//! node `p` (the only node, anywhere, with `d` among its children) is chosen exactly when `p`
//! is: `p` needs it, nothing else can, and it has no other node to choose. So `n` can be
//! folded into `p`: `p` pays `n`'s cost and needs `n`'s child classes instead of `d`. Repeated
//! to a fixpoint, this collapses the long chains of one-node classes that e-graphs of
//! programs are mostly made of (on the shared babble e-graphs, 1,525 of 1,697 classes have one
//! node and 1,237 one parent), and the ILP models only what is left. extraction-gym's
//! faster-ilp-cbc calls this "pull up".
//!
//! Exactness: every valid extraction of the original graph maps to a valid extraction of the
//! contracted graph with the same DAG cost and back ([`Contracted::expand`]): a chosen `p`
//! implies the chosen `n` and the other way round; a class needed through `d` is needed
//! through `p`, and a class paid once stays paid once, because the contracted node needs the
//! union of the two child sets. Cycles are preserved: a cycle through `d` passes through `p`'s
//! class (its only way in), and shortening it by `d` keeps it a cycle. A merge that would give
//! `p` its own class as a child (a cycle through `d` and `p` alone) is not made; the ILP then
//! sees that cycle as it is.
//!
//! Only extractable nodes count (finite cost, not subsumed, not their own child), and nothing
//! else about the cost model is assumed, so the contraction is exact for any costs, negative
//! ones included; it is not used for the op-types objective, which counts operators per node.

use super::graph::{ExGraph, Extraction};

/// A contracted graph: the same classes and node indices as the original, with absorbed nodes
/// given an infinite cost (never chosen) and absorbing nodes carrying their cost and children.
pub struct Contracted {
    /// the contracted problem
    pub graph: ExGraph,
    /// for each node, the original nodes folded into it (in folding order)
    absorbed: Vec<Vec<usize>>,
    /// how many nodes were folded away
    pub merged: usize,
}

/// Contracts `g` (see the module doc).
pub fn contract(g: &ExGraph) -> Contracted {
    let extractable = |n: usize| {
        let node = &g.nodes[n];
        node.cost.is_finite() && !node.subsumed && !node.children.contains(&node.class)
    };
    let mut graph = g.clone();
    let mut absorbed: Vec<Vec<usize>> = vec![Vec::new(); g.nodes.len()];
    let mut alive: Vec<bool> = (0..g.nodes.len()).map(extractable).collect();
    // the extractable parent nodes of each class, with multiplicity ignored
    let mut parents: Vec<Vec<usize>> = vec![Vec::new(); g.num_classes()];
    for (n, node) in g.nodes.iter().enumerate() {
        if alive[n] {
            for d in node.child_classes() {
                parents[d].push(n);
            }
        }
    }
    let mut is_root = vec![false; g.num_classes()];
    for &r in &g.roots {
        is_root[r] = true;
    }
    let live_nodes = |graph: &ExGraph, alive: &[bool], d: usize| -> Vec<usize> {
        graph.classes[d]
            .iter()
            .copied()
            .filter(|&n| alive[n])
            .collect()
    };
    let mut merged = 0;
    let mut work: Vec<usize> = (0..g.num_classes()).rev().collect();
    while let Some(d) = work.pop() {
        if is_root[d] || parents[d].len() != 1 {
            continue;
        }
        let p = parents[d][0];
        let live = live_nodes(&graph, &alive, d);
        let [n] = live[..] else { continue };
        let pc = graph.nodes[p].class;
        if !alive[p] || pc == d || graph.nodes[n].children.contains(&pc) {
            continue;
        }
        // fold n into p
        let n_children = graph.nodes[n].child_classes();
        let mut children: Vec<usize> = graph.nodes[p]
            .children
            .iter()
            .copied()
            .filter(|&c| c != d)
            .collect();
        let had = graph.nodes[p].child_classes();
        for &e in &n_children {
            parents[e].retain(|&q| q != n);
            if had.binary_search(&e).is_err() {
                children.push(e);
                parents[e].push(p);
            }
            work.push(e);
        }
        parents[d].clear();
        graph.nodes[p].cost += graph.nodes[n].cost;
        graph.nodes[p].children = children;
        graph.nodes[n].cost = f64::INFINITY;
        graph.nodes[n].children.clear();
        alive[n] = false;
        let mut folded = std::mem::take(&mut absorbed[n]);
        folded.insert(0, n);
        absorbed[p].extend(folded);
        merged += 1;
    }
    Contracted {
        graph,
        absorbed,
        merged,
    }
}

impl Contracted {
    /// The extraction of the original graph that `ex` (of the contracted graph) stands for:
    /// each chosen node's folded nodes chosen in their classes; proof and bound carried over
    /// (the two problems have the same optimum).
    pub fn expand(&self, ex: &Extraction) -> Extraction {
        let mut choice = ex.choice.clone();
        for &n in ex.choice.iter().flatten() {
            for &m in &self.absorbed[n] {
                choice[self.graph.nodes[m].class] = Some(m);
            }
        }
        Extraction {
            choice,
            optimal: ex.optimal,
            bound: ex.bound,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(classes: usize, nodes: &[(usize, f64, &[usize])]) -> ExGraph {
        ExGraph::from_triples(classes, nodes)
    }

    /// Every selection of one node per class (or none), as extractions.
    fn all_extractions(g: &ExGraph) -> Vec<Extraction> {
        let mut out = vec![Vec::new()];
        for c in 0..g.num_classes() {
            let mut next = Vec::new();
            for prefix in &out {
                let mut options: Vec<Option<usize>> = vec![None];
                options.extend(g.classes[c].iter().map(|&n| Some(n)));
                for o in options {
                    let mut v: Vec<Option<usize>> = prefix.clone();
                    v.push(o);
                    next.push(v);
                }
            }
            out = next;
        }
        out.into_iter().map(Extraction::new).collect()
    }

    /// The best DAG cost over all valid extractions, by enumeration.
    fn optimum(g: &ExGraph) -> Option<f64> {
        all_extractions(g)
            .iter()
            .filter(|ex| g.check(ex).is_ok())
            .map(|ex| g.dag_cost(ex))
            .min_by(f64::total_cmp)
    }

    #[test]
    fn chains_fold_into_their_parent_and_expand_back() {
        // class 0: node 0 needs the chain 1 -> 2 -> 3 (a leaf), node 1 the leaf class 4
        let g = graph(
            5,
            &[
                (0, 1.0, &[1]),
                (0, 5.0, &[4]),
                (1, 1.0, &[2]),
                (2, 1.0, &[3]),
                (3, 1.0, &[]),
                (4, 1.0, &[]),
            ],
        );
        let c = contract(&g);
        // classes 1, 2, 3 fold into node 0, class 4 into node 1
        assert_eq!(c.merged, 4);
        assert_eq!(c.graph.nodes[0].cost, 4.0);
        assert!(c.graph.nodes[0].children.is_empty());
        assert_eq!(optimum(&c.graph), optimum(&g));
        let ex = Extraction::new(vec![Some(0), None, None, None, None]);
        let back = c.expand(&ex);
        assert!(g.check(&back).is_ok(), "{:?}", g.check(&back));
        assert_eq!(g.dag_cost(&back), c.graph.dag_cost(&ex));
    }

    #[test]
    fn shared_and_multi_node_classes_stay() {
        // class 3 has two parents (nodes 1 and 2), class 1 has two nodes
        let g = graph(
            4,
            &[
                (0, 1.0, &[1, 2]),
                (1, 1.0, &[3]),
                (1, 2.0, &[]),
                (2, 1.0, &[3]),
                (3, 1.0, &[]),
            ],
        );
        let c = contract(&g);
        // class 2 (one node, one parent) folds into node 0; then class 3 has parents 1 and 0
        assert_eq!(c.merged, 1);
        assert_eq!(c.graph.nodes[0].child_classes(), vec![1, 3]);
        assert_eq!(optimum(&c.graph), optimum(&g));
    }

    #[test]
    fn a_fold_that_would_close_a_cycle_is_not_made() {
        // 0 -> 1 -> 0 (cycle) or 0 -> leaf 2
        let g = graph(
            3,
            &[
                (0, 1.0, &[1]),
                (0, 3.0, &[2]),
                (1, 1.0, &[0]),
                (2, 1.0, &[]),
            ],
        );
        let c = contract(&g);
        assert!(c.graph.nodes[0].children == vec![1]);
        assert_eq!(optimum(&c.graph), optimum(&g));
        assert_eq!(optimum(&g), Some(4.0));
    }

    /// Small random graphs: the contracted optimum equals the original's, and the optimal
    /// contracted extraction expands to a valid original one of the same cost.
    #[test]
    fn random_graphs_keep_their_optimum() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let (mut folded, mut tried) = (0, 0);
        for _ in 0..300 {
            let classes = rng.gen_range(2..6);
            let mut nodes: Vec<(usize, f64, Vec<usize>)> = Vec::new();
            for c in 0..classes {
                for _ in 0..rng.gen_range(1..3) {
                    let kids: Vec<usize> = (0..rng.gen_range(0..3))
                        .map(|_| rng.gen_range(0..classes))
                        .collect();
                    nodes.push((c, f64::from(rng.gen_range(-1..6)), kids));
                }
            }
            if nodes.len() > 9 {
                continue;
            }
            let spec: Vec<(usize, f64, &[usize])> = nodes
                .iter()
                .map(|(c, k, v)| (*c, *k, v.as_slice()))
                .collect();
            let g = graph(classes, &spec);
            let c = contract(&g);
            folded += c.merged;
            tried += 1;
            assert_eq!(optimum(&c.graph), optimum(&g), "{g:?}");
            for ex in all_extractions(&c.graph) {
                if c.graph.check(&ex).is_ok() {
                    let back = c.expand(&ex);
                    assert!(g.check(&back).is_ok(), "{g:?} {ex:?}");
                    assert_eq!(g.dag_cost(&back), c.graph.dag_cost(&ex));
                }
            }
        }
        // the sample exercises the folding, not only graphs it leaves alone
        assert!(
            tried > 100 && folded > tried / 4,
            "{folded} folds in {tried} graphs"
        );
    }
}
