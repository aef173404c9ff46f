//! Nodes that can only be chosen on a cycle, found with dominators of the class graph.
//!
//! A class `d` dominates a class `c` when every path of the class graph from the roots to `c`
//! passes through `d` (the roots hang below one virtual root). If a node `n` of class `c` has
//! such a `d` among its child classes, then in any extraction where `n` is chosen and `c` is
//! reachable, the path that reaches `c` is a path of the class graph, so it runs through `d`,
//! and `n` closes the cycle `d -> ... -> c -> d`: `n` is in no valid extraction. (A self-loop
//! is the case `d = c`; a node that needs a root is the case of a sole root, which dominates
//! everything; extraction-gym's faster-ilp-cbc removes these two.) Dropping such nodes removes
//! whole families of cycles before the solve: loops of eggcc's e-graphs point back to their
//! headers. The rule holds for any costs, as it only removes nodes of invalid extractions.

use super::graph::ExGraph;

/// Marks dead (in `alive`) every live node of a class reachable from the roots with a child
/// class that dominates its own class, in the class graph of the live nodes. Returns how many.
pub fn drop_cycle_only(g: &ExGraph, alive: &mut [bool]) -> usize {
    let nc = g.num_classes();
    let virt = nc; // the virtual root above the roots
    let succ = |c: usize| -> Vec<usize> {
        if c == virt {
            let mut r = g.roots.clone();
            r.sort_unstable();
            r.dedup();
            return r;
        }
        let mut s: Vec<usize> = g.classes[c]
            .iter()
            .filter(|&&n| alive[n])
            .flat_map(|&n| g.nodes[n].children.iter().copied())
            .collect();
        s.sort_unstable();
        s.dedup();
        s
    };
    // reverse post-order from the virtual root (iterative DFS)
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); nc + 1];
    let mut seen = vec![false; nc + 1];
    let mut post: Vec<usize> = Vec::new();
    let mut stack: Vec<(usize, usize)> = vec![(virt, 0)];
    seen[virt] = true;
    succs[virt] = succ(virt);
    while let Some(&mut (v, ref mut k)) = stack.last_mut() {
        if *k < succs[v].len() {
            let w = succs[v][*k];
            *k += 1;
            if !seen[w] {
                seen[w] = true;
                succs[w] = succ(w);
                stack.push((w, 0));
            }
        } else {
            post.push(v);
            stack.pop();
        }
    }
    let mut order = vec![usize::MAX; nc + 1]; // post-order number
    for (i, &v) in post.iter().enumerate() {
        order[v] = i;
    }
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); nc + 1];
    for &v in &post {
        for &w in &succs[v] {
            preds[w].push(v);
        }
    }
    // Cooper, Harvey and Kennedy's iterative dominators over the reverse post-order
    let mut idom = vec![usize::MAX; nc + 1];
    idom[virt] = virt;
    let intersect = |idom: &[usize], mut a: usize, mut b: usize| {
        while a != b {
            while order[a] < order[b] {
                a = idom[a];
            }
            while order[b] < order[a] {
                b = idom[b];
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for &v in post.iter().rev().skip(1) {
            let mut new = usize::MAX;
            for &p in &preds[v] {
                if idom[p] == usize::MAX {
                    continue;
                }
                new = if new == usize::MAX {
                    p
                } else {
                    intersect(&idom, p, new)
                };
            }
            if new != idom[v] {
                idom[v] = new;
                changed = true;
            }
        }
    }
    // pre/post numbers of the dominator tree: d dominates c iff d's interval holds c's
    let mut kids: Vec<Vec<usize>> = vec![Vec::new(); nc + 1];
    for &v in &post {
        if v != virt {
            kids[idom[v]].push(v);
        }
    }
    let (mut tin, mut tout) = (vec![0usize; nc + 1], vec![0usize; nc + 1]);
    let mut clock = 0;
    let mut stack: Vec<(usize, usize)> = vec![(virt, 0)];
    tin[virt] = clock;
    while let Some(&mut (v, ref mut k)) = stack.last_mut() {
        if *k < kids[v].len() {
            let w = kids[v][*k];
            *k += 1;
            clock += 1;
            tin[w] = clock;
            stack.push((w, 0));
        } else {
            tout[v] = clock;
            stack.pop();
        }
    }
    let dominates = |d: usize, c: usize| seen[d] && tin[d] <= tin[c] && tout[c] <= tout[d];
    let mut dropped = 0;
    for c in (0..nc).filter(|&c| seen[c]) {
        for &n in &g.classes[c] {
            if alive[n] && g.nodes[n].children.iter().any(|&d| dominates(d, c)) {
                alive[n] = false;
                dropped += 1;
            }
        }
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_edges_to_a_dominator_are_dropped_and_others_kept() {
        // root 0 -> 1 -> 2; node 3 of class 2 points back to 1 (which dominates 2); class 2
        // also has a leaf node; class 1 has a second way to 3, which 2 does not dominate
        let g = ExGraph::from_triples(
            4,
            &[
                (0, 1.0, &[1]),    // 0
                (1, 1.0, &[2]),    // 1
                (1, 1.0, &[3]),    // 2
                (2, 1.0, &[1]),    // 3: needs 1, which dominates 2: cycle only
                (2, 1.0, &[]),     // 4
                (3, 1.0, &[2]),    // 5: 2 does not dominate 3 (1 -> 3 directly)
                (3, 1.0, &[]),     // 6
                (3, 1.0, &[0, 3]), // 7: needs the root and itself
            ],
        );
        let mut alive = vec![true; g.nodes.len()];
        assert_eq!(drop_cycle_only(&g, &mut alive), 2);
        assert_eq!(
            alive,
            vec![true, true, true, false, true, true, true, false]
        );
    }

    /// Small random graphs: no valid extraction (all of them enumerated) chooses a dropped
    /// node in a class the roots reach, and the sample drops nodes that are not self-loops.
    #[test]
    fn no_valid_extraction_uses_a_dropped_node() {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut dropped_total = 0;
        for _ in 0..300 {
            let g = ExGraph::random(&mut rng, 2..6, 1..3, false, |_| 1.0);
            let mut alive = vec![true; g.nodes.len()];
            dropped_total += drop_cycle_only(&g, &mut alive);
            for ex in g.every_choice() {
                if g.check(&ex).is_ok() {
                    for c in g.reachable(&ex) {
                        let n = ex.choice[c].expect("valid");
                        assert!(alive[n], "{g:?}: valid {ex:?} uses dropped node {n}");
                    }
                }
            }
        }
        assert!(dropped_total > 50, "{dropped_total} dropped");
    }
}
