//! The extraction problem, independent of where the e-graph comes from: classes, nodes with
//! costs and child classes, roots. Built from egraph-serialize JSON ([`super::serialized`]) or
//! from spores's own e-graphs ([`ExGraph::from_egg`]).

use super::{Objective, OpTable};
use crate::analysis::EG;
use crate::ir::Ir;
use egg::Language;

/// A node: its class, cost, operator and child classes.
#[derive(Clone, Debug)]
pub struct ExNode {
    /// the class it belongs to
    pub class: usize,
    /// its own cost (may be negative; infinite means "never choose")
    pub cost: f64,
    /// the operator, for printing
    pub op: String,
    /// child classes, in order
    pub children: Vec<usize>,
    /// marked `subsumed` by egglog: never extracted (its cost is infinite)
    pub subsumed: bool,
}

impl ExNode {
    /// Its distinct child classes, sorted.
    pub fn child_classes(&self) -> Vec<usize> {
        let mut k = self.children.clone();
        k.sort_unstable();
        k.dedup();
        k
    }
}

/// An extraction problem.
#[derive(Clone, Debug, Default)]
pub struct ExGraph {
    /// nodes
    pub nodes: Vec<ExNode>,
    /// the nodes of each class
    pub classes: Vec<Vec<usize>>,
    /// the classes that must be extracted
    pub roots: Vec<usize>,
    /// class names (ids in the source)
    pub class_names: Vec<String>,
    /// node names (ids in the source); empty for graphs built by [`ExGraph::from_egg`], whose
    /// names [`ExGraph::node_name`] makes on demand
    pub node_names: Vec<String>,
    /// names egglog's `let` gave each class (from `class_data`; empty when none), which
    /// `--root` accepts as well as class ids
    pub class_lets: Vec<Vec<String>>,
    /// for graphs built by [`ExGraph::from_egg`]: each node's e-class and its index among the
    /// class's nodes (empty for graphs read from JSON)
    pub egg_nodes: Vec<(egg::Id, usize)>,
}

/// One node per needed class.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extraction {
    /// the chosen node of each class (`None` where not needed)
    pub choice: Vec<Option<usize>>,
    /// whether the extractor proved this objective value optimal
    pub optimal: bool,
    /// a proven lower bound on the best objective value, when the extractor has one (the LP
    /// relaxation's optimum, or the objective itself when optimal)
    pub bound: Option<f64>,
}

impl Extraction {
    /// An extraction with these choices, neither proven nor bounded.
    pub fn new(choice: Vec<Option<usize>>) -> Extraction {
        Extraction {
            choice,
            optimal: false,
            bound: None,
        }
    }

    /// The relative gap between `value` and the bound: `(value - bound) / max(|value|, 1e-9)`,
    /// 0 when proven optimal, `None` without a bound.
    pub fn gap(&self, value: f64) -> Option<f64> {
        if self.optimal {
            return Some(0.0);
        }
        self.bound
            .map(|b| ((value - b) / value.abs().max(1e-9)).max(0.0))
    }
}

impl ExGraph {
    /// Builds the graph of an egg e-graph with a cost per node, given its class and itself
    /// (infinite: not executable).
    pub fn from_egg(eg: &EG, roots: &[egg::Id], cost: impl Fn(egg::Id, &Ir) -> f64) -> ExGraph {
        use std::fmt::Write as _;
        let mut g = ExGraph::default();
        // class ids are dense (below the number of ids ever made): a table, not a hash map
        let slots = eg
            .classes()
            .map(|c| usize::from(c.id) + 1)
            .max()
            .unwrap_or(0);
        let mut index = vec![usize::MAX; slots];
        let nodes: usize = eg.classes().map(|c| c.nodes.len()).sum();
        g.classes.reserve(eg.number_of_classes());
        g.class_names.reserve(eg.number_of_classes());
        g.nodes.reserve(nodes);
        g.egg_nodes.reserve(nodes);
        for class in eg.classes() {
            index[usize::from(class.id)] = g.classes.len();
            g.classes.push(Vec::with_capacity(class.nodes.len()));
            g.class_names.push(usize::from(class.id).to_string());
        }
        let at = |id: egg::Id| index[usize::from(eg.find(id))];
        let mut op = String::new();
        for class in eg.classes() {
            let c = index[usize::from(class.id)];
            for node in &class.nodes {
                let id = g.nodes.len();
                op.clear();
                let _ = write!(op, "{node}");
                g.nodes.push(ExNode {
                    class: c,
                    cost: cost(class.id, node),
                    op: op.as_str().into(),
                    children: node.children().iter().map(|ch| at(*ch)).collect(),
                    subsumed: false,
                });
                let k = g.classes[c].len();
                g.egg_nodes.push((class.id, k));
                g.classes[c].push(id);
            }
        }
        g.roots = roots.iter().map(|r| at(*r)).collect();
        g
    }

    /// The name of node `n`: its id in the source, or for a graph built by
    /// [`ExGraph::from_egg`] `class.k` (the k-th node of that e-class).
    pub fn node_name(&self, n: usize) -> String {
        match (self.node_names.get(n), self.egg_nodes.get(n)) {
            (Some(name), _) => name.clone(),
            (None, Some((id, k))) => format!("{}.{k}", usize::from(*id)),
            (None, None) => n.to_string(),
        }
    }

    /// Number of classes.
    pub fn num_classes(&self) -> usize {
        self.classes.len()
    }

    /// Checks an extraction: every root chosen, each chosen node in its class, every child
    /// class of a chosen reachable node chosen, and no cycle among the reachable choices.
    pub fn check(&self, ex: &Extraction) -> Result<(), String> {
        if ex.choice.len() != self.classes.len() {
            return Err("choice vector of the wrong length".into());
        }
        for (c, ch) in ex.choice.iter().enumerate() {
            if let Some(n) = ch {
                if self.nodes.get(*n).map(|x| x.class) != Some(c) {
                    return Err(format!(
                        "class {} chose a node of another class",
                        self.class_names[c]
                    ));
                }
            }
        }
        // DFS with colours: 0 unvisited, 1 on the path, 2 done
        let mut colour = vec![0u8; self.classes.len()];
        for &r in &self.roots {
            let mut stack = vec![(r, 0usize)];
            if colour[r] == 2 {
                continue;
            }
            colour[r] = 1;
            while let Some((c, k)) = stack.pop() {
                let n = ex.choice[c].ok_or_else(|| {
                    format!("class {} is needed but not chosen", self.class_names[c])
                })?;
                if self.nodes[n].subsumed {
                    return Err(format!(
                        "class {} chose the subsumed node {}",
                        self.class_names[c],
                        self.node_name(n)
                    ));
                }
                if !self.nodes[n].cost.is_finite() {
                    return Err(format!(
                        "class {} chose a node of infinite cost",
                        self.class_names[c]
                    ));
                }
                let kids = &self.nodes[n].children;
                if k < kids.len() {
                    stack.push((c, k + 1));
                    let d = kids[k];
                    match colour[d] {
                        1 => return Err(format!("cycle through class {}", self.class_names[d])),
                        0 => {
                            colour[d] = 1;
                            stack.push((d, 0));
                        }
                        _ => {}
                    }
                } else {
                    colour[c] = 2;
                }
            }
        }
        Ok(())
    }

    /// Cycles of the selection `ex` among the classes the roots reach, as lists of classes
    /// (each class's chosen node needs the next, the last needs the first), at most `limit`:
    /// a depth-first search from the roots reports every back edge it meets (after
    /// extraction-gym's faster-ilp-cbc, which blocks all of them before solving again).
    pub fn find_cycles(&self, ex: &Extraction, limit: usize) -> Vec<Vec<usize>> {
        let mut colour = vec![0u8; self.classes.len()]; // 0 new, 1 on path, 2 done
        let mut path: Vec<usize> = Vec::new();
        let mut cycles = Vec::new();
        // (class, index of the next child to visit)
        let mut stack: Vec<(usize, usize)> = Vec::new();
        for &r in &self.roots {
            if colour[r] != 0 {
                continue;
            }
            colour[r] = 1;
            path.push(r);
            stack.push((r, 0));
            while let Some(&mut (c, ref mut k)) = stack.last_mut() {
                let kids: &[usize] = ex.choice[c].map_or(&[], |n| &self.nodes[n].children);
                if *k < kids.len() && cycles.len() < limit {
                    let d = kids[*k];
                    *k += 1;
                    match colour[d] {
                        0 => {
                            colour[d] = 1;
                            path.push(d);
                            stack.push((d, 0));
                        }
                        1 => {
                            let at = path.iter().position(|&x| x == d).expect("on path");
                            let cycle = path[at..].to_vec();
                            if !cycles.contains(&cycle) {
                                cycles.push(cycle);
                            }
                        }
                        _ => {}
                    }
                } else {
                    colour[c] = 2;
                    path.pop();
                    stack.pop();
                }
            }
        }
        cycles
    }

    /// A cycle among the chosen nodes reachable from the roots, as the list of its nodes.
    pub fn find_cycle(&self, ex: &Extraction) -> Option<Vec<usize>> {
        let mut colour = vec![0u8; self.classes.len()];
        let mut path: Vec<usize> = Vec::new(); // classes on the current path
        fn dfs(
            g: &ExGraph,
            ex: &Extraction,
            c: usize,
            colour: &mut [u8],
            path: &mut Vec<usize>,
        ) -> Option<Vec<usize>> {
            colour[c] = 1;
            path.push(c);
            if let Some(n) = ex.choice[c] {
                for &d in &g.nodes[n].children {
                    match colour[d] {
                        1 => {
                            let at = path.iter().position(|&x| x == d).expect("on path");
                            return Some(path[at..].iter().filter_map(|&k| ex.choice[k]).collect());
                        }
                        0 => {
                            if let Some(cy) = dfs(g, ex, d, colour, path) {
                                return Some(cy);
                            }
                        }
                        _ => {}
                    }
                }
            }
            colour[c] = 2;
            path.pop();
            None
        }
        for &r in &self.roots {
            if colour[r] == 0 {
                if let Some(cy) = dfs(self, ex, r, &mut colour, &mut path) {
                    return Some(cy);
                }
            }
        }
        None
    }

    /// The classes reachable from the roots through the chosen nodes.
    pub fn reachable(&self, ex: &Extraction) -> Vec<usize> {
        let mut seen = vec![false; self.classes.len()];
        let mut order = Vec::new();
        let mut stack: Vec<usize> = self.roots.clone();
        while let Some(c) = stack.pop() {
            if seen[c] {
                continue;
            }
            seen[c] = true;
            order.push(c);
            if let Some(n) = ex.choice[c] {
                stack.extend(&self.nodes[n].children);
            }
        }
        order
    }

    /// DAG cost: each reachable class's chosen node counted once.
    pub fn dag_cost(&self, ex: &Extraction) -> f64 {
        self.reachable(ex)
            .iter()
            .filter_map(|&c| ex.choice[c])
            .map(|n| self.nodes[n].cost)
            .sum()
    }

    /// Tree cost: shared sub-terms counted once per use (the extraction must be acyclic).
    pub fn tree_cost(&self, ex: &Extraction) -> f64 {
        let mut memo: Vec<Option<f64>> = vec![None; self.classes.len()];
        fn go(g: &ExGraph, ex: &Extraction, c: usize, memo: &mut Vec<Option<f64>>) -> f64 {
            if let Some(v) = memo[c] {
                return v;
            }
            let Some(n) = ex.choice[c] else {
                return f64::INFINITY;
            };
            let node = &g.nodes[n];
            let mut v = node.cost;
            for &d in &node.children {
                v += go(g, ex, d, memo);
            }
            memo[c] = Some(v);
            v
        }
        self.roots.iter().map(|&r| go(self, ex, r, &mut memo)).sum()
    }

    /// The classes no node points to, in order (egglog's JSON names no roots: these are the
    /// terms that were added and not used inside another).
    pub fn unreferenced_classes(&self) -> Vec<usize> {
        let mut used = vec![false; self.classes.len()];
        for node in &self.nodes {
            for &c in &node.children {
                used[c] = true;
            }
        }
        (0..self.classes.len()).filter(|&c| !used[c]).collect()
    }

    /// The class named `name`: a class id, or a name egglog's `let` bound to it.
    pub fn class_by_name(&self, name: &str) -> Option<usize> {
        self.class_names.iter().position(|n| n == name).or_else(|| {
            self.class_lets
                .iter()
                .position(|lets| lets.iter().any(|l| l == name))
        })
    }

    /// Sets each listed op's node cost (subsumed nodes stay infinite); ops not listed keep
    /// theirs.
    pub fn apply_cost_table(&mut self, table: &OpTable) {
        for node in &mut self.nodes {
            if let Some(&c) = table.get(&node.op) {
                if !node.subsumed {
                    node.cost = c;
                }
            }
        }
    }

    /// The value of `objective` for an extraction: its DAG cost, or the summed weights of the
    /// distinct ops its reachable nodes use.
    pub fn objective(&self, ex: &Extraction, objective: &Objective) -> f64 {
        match objective {
            Objective::Cost => self.dag_cost(ex),
            Objective::OpTypes(w) => {
                let mut ops: Vec<&str> = self
                    .reachable(ex)
                    .iter()
                    .filter_map(|&c| ex.choice[c])
                    .map(|n| self.nodes[n].op.as_str())
                    .collect();
                ops.sort_unstable();
                ops.dedup();
                ops.iter().map(|op| w.weight(op)).sum()
            }
        }
    }

    /// For each class, the nodes that have it as a child (deduplicated).
    pub fn parents(&self) -> Vec<Vec<usize>> {
        let mut p = vec![Vec::new(); self.classes.len()];
        for (n, node) in self.nodes.iter().enumerate() {
            for &c in &node.children {
                if p[c].last() != Some(&n) {
                    p[c].push(n);
                }
            }
        }
        p
    }
}

#[cfg(test)]
impl ExGraph {
    /// A graph for unit tests from (class, cost, child classes) triples, rooted at class 0.
    pub(crate) fn from_triples(classes: usize, nodes: &[(usize, f64, &[usize])]) -> ExGraph {
        let mut g = ExGraph {
            classes: vec![Vec::new(); classes],
            roots: vec![0],
            class_names: (0..classes).map(|c| c.to_string()).collect(),
            class_lets: vec![Vec::new(); classes],
            ..ExGraph::default()
        };
        for (i, &(class, cost, children)) in nodes.iter().enumerate() {
            g.nodes.push(ExNode {
                class,
                cost,
                op: format!("n{i}"),
                children: children.to_vec(),
                subsumed: false,
            });
            g.node_names.push(i.to_string());
            g.classes[class].push(i);
        }
        g
    }

    /// A small random graph for unit tests: a class count from `classes`, per class a node
    /// count from `per_class`, each node with up to two child classes (its own class left out
    /// unless `self_loops`) and the cost `cost` draws after its children.
    pub(crate) fn random(
        rng: &mut rand_chacha::ChaCha8Rng,
        classes: std::ops::Range<usize>,
        per_class: std::ops::Range<usize>,
        self_loops: bool,
        mut cost: impl FnMut(&mut rand_chacha::ChaCha8Rng) -> f64,
    ) -> ExGraph {
        use rand::Rng;
        let classes = rng.gen_range(classes);
        let mut nodes: Vec<(usize, f64, Vec<usize>)> = Vec::new();
        for c in 0..classes {
            for _ in 0..rng.gen_range(per_class.clone()) {
                let kids: Vec<usize> = (0..rng.gen_range(0..3))
                    .map(|_| rng.gen_range(0..classes))
                    .filter(|&d| self_loops || d != c)
                    .collect();
                nodes.push((c, cost(rng), kids));
            }
        }
        let spec: Vec<(usize, f64, &[usize])> = nodes
            .iter()
            .map(|(c, k, v)| (*c, *k, v.as_slice()))
            .collect();
        ExGraph::from_triples(classes, &spec)
    }

    /// Every choice of one node (or none) per class, valid or not, for brute-force checks.
    pub(crate) fn every_choice(&self) -> Vec<Extraction> {
        let mut all: Vec<Vec<Option<usize>>> = vec![Vec::new()];
        for class in &self.classes {
            let mut next = Vec::new();
            for prefix in &all {
                for o in std::iter::once(None).chain(class.iter().map(|&n| Some(n))) {
                    let mut v = prefix.clone();
                    v.push(o);
                    next.push(v);
                }
            }
            all = next;
        }
        all.into_iter().map(Extraction::new).collect()
    }
}
