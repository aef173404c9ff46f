//! Exact DAG-cost extraction by depth-first branch and bound, for the small e-graphs where
//! a solver run costs more than the search (egglog e-graphs of a few dozen nodes: CBC takes
//! tens of milliseconds to branch on an LP relaxation that sharing makes weak).
//!
//! The search decides the classes a plan needs one at a time: starting from the roots, it
//! takes a needed class that has no node yet and tries each of its live nodes, cheapest first;
//! the node's child classes become needed. A partial plan's cost plus the cheapest node of each
//! needed but undecided class is a lower bound on every completion (costs are non-negative and
//! each class is paid once), so a branch whose bound reaches the incumbent is cut. A complete
//! plan is kept if it is acyclic and cheaper. The search runs under a budget of expanded
//! states; when it completes, its result (or the incumbent it could not beat) is optimal.

use super::graph::{ExGraph, Extraction};
use std::time::Instant;

/// The outcome of a search that completed within its budget: a plan strictly cheaper than
/// the incumbent (then optimal), or `None` when the incumbent is optimal.
pub type Proof = Option<Extraction>;

/// Searches for a plan cheaper than `incumbent` among the `alive` nodes, expanding at most
/// `budget` states and stopping at `deadline`; `None` when either ran out (nothing proven) or
/// some cost is negative (the bound would not hold).
pub fn search(
    g: &ExGraph,
    alive: &[bool],
    incumbent: f64,
    budget: usize,
    deadline: Option<Instant>,
) -> Option<Proof> {
    if g.nodes.iter().any(|n| n.cost < 0.0) {
        return None;
    }
    let nodes: Vec<Vec<usize>> = g
        .classes
        .iter()
        .map(|ns| {
            let mut v: Vec<usize> = ns
                .iter()
                .copied()
                .filter(|&n| alive[n] && g.nodes[n].cost.is_finite())
                .collect();
            v.sort_by(|&a, &b| g.nodes[a].cost.total_cmp(&g.nodes[b].cost));
            v
        })
        .collect();
    let min_cost: Vec<f64> = nodes
        .iter()
        .map(|ns| ns.first().map_or(f64::INFINITY, |&n| g.nodes[n].cost))
        .collect();
    let kids: Vec<Vec<usize>> = g.nodes.iter().map(|n| n.child_classes()).collect();
    let mut s = Search {
        g,
        nodes,
        min_cost,
        kids,
        choice: vec![None; g.num_classes()],
        pending: vec![false; g.num_classes()],
        frontier: Vec::new(),
        cost: 0.0,
        pending_lb: 0.0,
        best: if incumbent.is_finite() {
            incumbent - 1e-9 * incumbent.abs().max(1.0)
        } else {
            f64::INFINITY
        },
        found: None,
        budget,
        deadline,
        colour: vec![0; g.num_classes()],
        touched: Vec::new(),
        stack: Vec::new(),
        order: Vec::new(),
    };
    for &r in &g.roots {
        if !s.pending[r] {
            s.pending[r] = true;
            s.pending_lb += s.min_cost[r];
            s.frontier.push(r);
        }
    }
    s.go();
    (s.budget > 0).then_some(s.found.map(|choice| Extraction {
        choice,
        optimal: true,
        bound: None,
    }))
}

struct Search<'a> {
    g: &'a ExGraph,
    /// each class's live nodes, cheapest first
    nodes: Vec<Vec<usize>>,
    /// each class's cheapest live node's cost
    min_cost: Vec<f64>,
    /// each node's distinct child classes
    kids: Vec<Vec<usize>>,
    choice: Vec<Option<usize>>,
    /// needed and undecided
    pending: Vec<bool>,
    /// the needed classes, undecided ones marked in `pending` (others are stale entries)
    frontier: Vec<usize>,
    cost: f64,
    /// the summed `min_cost` of the pending classes
    pending_lb: f64,
    best: f64,
    found: Option<Vec<Option<usize>>>,
    budget: usize,
    deadline: Option<Instant>,
    /// buffers of [`Search::complete`], all zero / empty between calls
    colour: Vec<u8>,
    touched: Vec<usize>,
    stack: Vec<(usize, usize)>,
    order: Vec<usize>,
}

impl Search<'_> {
    fn go(&mut self) {
        if self.budget == 0 {
            return;
        }
        self.budget -= 1;
        if self.budget.is_multiple_of(64) && self.deadline.is_some_and(|d| Instant::now() > d) {
            self.budget = 0;
            return;
        }
        if self.cost + self.pending_lb >= self.best {
            return;
        }
        // the next pending class (stale entries are popped and put back afterwards)
        let mut stale = Vec::new();
        let c = loop {
            match self.frontier.pop() {
                Some(c) if self.pending[c] => break Some(c),
                Some(c) => stale.push(c),
                None => break None,
            }
        };
        match c {
            None => self.complete(),
            Some(c) => {
                self.pending[c] = false;
                self.pending_lb -= self.min_cost[c];
                for i in 0..self.nodes[c].len() {
                    let n = self.nodes[c][i];
                    self.choice[c] = Some(n);
                    self.cost += self.g.nodes[n].cost;
                    let mut newly = 0;
                    for k in 0..self.kids[n].len() {
                        let d = self.kids[n][k];
                        if self.choice[d].is_none() && !self.pending[d] {
                            self.pending[d] = true;
                            self.pending_lb += self.min_cost[d];
                            self.frontier.push(d);
                            newly += 1;
                        }
                    }
                    self.go();
                    for _ in 0..newly {
                        let d = self.frontier.pop().expect("pushed above");
                        self.pending[d] = false;
                        self.pending_lb -= self.min_cost[d];
                    }
                    self.cost -= self.g.nodes[n].cost;
                    self.choice[c] = None;
                    if self.budget == 0 {
                        break;
                    }
                }
                self.pending[c] = true;
                self.pending_lb += self.min_cost[c];
                self.frontier.push(c);
            }
        }
        while let Some(c) = stale.pop() {
            self.frontier.push(c);
        }
    }

    /// Every needed class has a node: keep the plan if it is acyclic and cheaper (what
    /// [`ExGraph::check`] and [`ExGraph::dag_cost`] decide, with the search's own buffers:
    /// a complete plan is reached thousands of times per search).
    fn complete(&mut self) {
        if !self.acyclic() {
            return;
        }
        let c = self.dag_cost();
        if c < self.best {
            self.best = c;
            self.found = Some(self.choice.clone());
        }
    }

    /// Whether every class the roots need has a node and the chosen nodes they reach form no
    /// cycle (colours: 0 unvisited, 1 on the path, 2 done).
    fn acyclic(&mut self) -> bool {
        let mut ok = true;
        'roots: for &r in &self.g.roots {
            if self.colour[r] != 0 {
                continue;
            }
            self.colour[r] = 1;
            self.touched.push(r);
            self.stack.push((r, 0));
            while let Some((c, k)) = self.stack.pop() {
                let Some(n) = self.choice[c] else {
                    ok = false;
                    break 'roots;
                };
                let kids = &self.kids[n];
                if k < kids.len() {
                    self.stack.push((c, k + 1));
                    let d = kids[k];
                    match self.colour[d] {
                        1 => {
                            ok = false;
                            break 'roots;
                        }
                        0 => {
                            self.colour[d] = 1;
                            self.touched.push(d);
                            self.stack.push((d, 0));
                        }
                        _ => {}
                    }
                } else {
                    self.colour[c] = 2;
                }
            }
        }
        self.stack.clear();
        for &c in &self.touched {
            self.colour[c] = 0;
        }
        self.touched.clear();
        ok
    }

    /// [`ExGraph::dag_cost`] of the current choice: the chosen nodes of the classes the roots
    /// reach, summed in the order [`ExGraph::reachable`] visits them (the same rounding).
    fn dag_cost(&mut self) -> f64 {
        self.order.extend(&self.g.roots);
        while let Some(c) = self.order.pop() {
            if self.colour[c] != 0 {
                continue;
            }
            self.colour[c] = 1;
            self.touched.push(c);
            if let Some(n) = self.choice[c] {
                self.order.extend(&self.g.nodes[n].children);
            }
        }
        let sum = self
            .touched
            .iter()
            .filter_map(|&c| self.choice[c])
            .map(|n| self.g.nodes[n].cost)
            .sum();
        for &c in &self.touched {
            self.colour[c] = 0;
        }
        self.touched.clear();
        sum
    }
}
