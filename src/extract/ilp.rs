//! Exact extraction by integer linear programming, solved by CBC through good_lp.
//!
//! **Model** (after the SPORES paper's Fig. 11, with shared sub-terms paid once):
//! a binary `x_n` per node; for every class, `sum x_n <= 1` (one node per class, so a shared
//! class is paid once); for every root, `sum x_n = 1`; for every node and child class `d`,
//! `sum_{m in d} x_m >= x_n`; minimise `sum cost_n x_n`. When some costs are negative, a class
//! may only be chosen if a chosen node needs it (`sum x_c <= sum of its users' x`).
//!
//! **Cycles.** A selection may only use the e-graph's cycles if they are broken. Two encodings
//! are implemented ([`Cycles`]); `ilp` uses topological levels, `ilp-acyclic` lazy acyclic
//! constraints; the extraction bench measures both. With topological levels we give every
//! class `c` on a cycle a topological level `t_c` in `[0, K)` and require, for each chosen node
//! `n` of `c` with a child class `d` in the same strongly connected component,
//! `t_c >= t_d + 1 - K (1 - x_n)`. Only edges inside strongly connected components can close a
//! cycle, so classes outside them get no level and no constraint, which keeps the model small
//! (extraction-gym's faster-ilp-cbc does the same). The acyclic constraints of
//! ../shared/papers/extraction-acyclic-constraints.txt forbid choosing every node of a cycle;
//! as a graph can have exponentially many cycles, we add them lazily, only for the cycles the
//! current solution uses, and solve again.
//!
//! **Reduction before solving.** Nodes of infinite cost are dropped; then, repeatedly, nodes
//! with a child class that has no remaining node; a node whose own class is among its children
//! can never be chosen; within a class, a node is dropped when another node costs no more and
//! needs a subset of its child classes (only when no cost is negative). Only classes reachable from the roots are modelled.
//!
//! **Warm start and limits.** The best greedy extraction (DAG-aware) warm-starts the search as
//! a bound: CBC's objective cutoff is set to its cost, so only plans at least as cheap are
//! explored, and it is the fallback. (Passing it as a MIP start through good_lp made CBC answer
//! invalid or fractional vectors on several shared e-graphs, each costing a second solve; the
//! cutoff gives the same pruning without that.) CBC runs under the time limit; on timeout the
//! best incumbent is used and reported as not proven optimal. Any failure (no incumbent, an
//! invalid solution) falls back to the greedy result, so extraction always returns a valid
//! plan. CBC's preprocessing is off: it crashed (segfault in CglPreProcess) on one of the
//! shared e-graphs. CBC checks its limit only between phases: on the largest shared e-graphs (herbie,
//! 30k+ nodes) it overshoots a 10 s limit several times over.

use super::graph::{ExGraph, Extraction};
use super::{Extractor, GreedyDag, GreedyTree, Options};
use good_lp::solvers::coin_cbc::{coin_cbc, CoinCbcProblem};
use good_lp::{
    constraint, variable, Expression, ProblemVariables, Solution, SolutionStatus, SolverModel,
    Variable, WithTimeLimit,
};

/// The ILP extractor; `cycles` says how cycles are excluded.
pub struct Ilp {
    /// the acyclicity encoding
    pub cycles: Cycles,
}

/// How the ILP excludes cyclic selections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cycles {
    /// topological levels on the classes of strongly connected components (big-M constraints)
    Topological,
    /// the acyclic constraints of He et al. (EGRAPHS 2023), added lazily: solve without them,
    /// and for each cycle the solution uses, forbid choosing all of its nodes; re-solve
    Lazy,
}

/// Progress of the solver on standard error, when `SPORES_DEBUG_ILP` is set.
fn debug(msg: impl FnOnce() -> String) {
    if std::env::var_os("SPORES_DEBUG_ILP").is_some() {
        eprintln!("ilp: {}", msg());
    }
}

/// The sum of the node variables of class `c` (1 when the class is chosen).
pub(super) fn class_sum(g: &ExGraph, x: &[Option<Variable>], c: usize) -> Expression {
    g.classes[c].iter().filter_map(|&n| x[n]).sum()
}

/// A silent CBC model minimising the cost of the chosen nodes, with preprocessing off (CBC 2.10's CglPreProcess
/// segfaults on some shared e-graphs, herbie/1501.json with a 10 s limit, which would kill the
/// process) and the parameters of `SPORES_CBC_PARAMS=key=value,...` (for experiments).
pub(super) fn cbc_model(
    g: &ExGraph,
    vars: ProblemVariables,
    x: &[Option<Variable>],
) -> CoinCbcProblem {
    let objective: Expression = g
        .nodes
        .iter()
        .zip(x)
        .filter_map(|(node, v)| v.map(|v| node.cost * v))
        .sum();
    let mut model = coin_cbc(vars.minimise(objective));
    model.set_log_level(0);
    model.set_parameter("log", "0");
    model.set_parameter("slogLevel", "0");
    model.set_parameter("preprocess", "off");
    if let Ok(extra) = std::env::var("SPORES_CBC_PARAMS") {
        for kv in extra.split(',') {
            if let Some((k, v)) = kv.split_once('=') {
                model.set_parameter(k, v);
            }
        }
    }
    model
}

/// Nodes that can appear in some valid extraction, after the reductions of the module doc.
pub fn reduce(g: &ExGraph) -> Vec<bool> {
    let mut alive: Vec<bool> = g
        .nodes
        .iter()
        .map(|n| n.cost.is_finite() && !n.children.contains(&n.class))
        .collect();
    let mut live_count: Vec<usize> = vec![0; g.num_classes()];
    for (n, node) in g.nodes.iter().enumerate() {
        if alive[n] {
            live_count[node.class] += 1;
        }
    }
    // drop nodes with a dead child class, to a fixpoint
    let parents = g.parents();
    let mut dead: Vec<usize> = (0..g.num_classes())
        .filter(|&c| live_count[c] == 0)
        .collect();
    while let Some(c) = dead.pop() {
        for &p in &parents[c] {
            if alive[p] {
                alive[p] = false;
                let pc = g.nodes[p].class;
                live_count[pc] -= 1;
                if live_count[pc] == 0 {
                    dead.push(pc);
                }
            }
        }
    }
    // dominated nodes: same class, cost <= and child classes a subset (sound only when no
    // cost is negative: otherwise extra children can lower the total)
    let nonnegative = g.nodes.iter().all(|n| n.cost >= 0.0);
    for nodes in g.classes.iter().filter(|_| nonnegative) {
        if nodes.len() > 64 {
            continue;
        }
        let mut sets: Vec<(usize, Vec<usize>)> = nodes
            .iter()
            .filter(|&&n| alive[n])
            .map(|&n| (n, g.nodes[n].child_classes()))
            .collect();
        sets.sort_by(|a, b| {
            g.nodes[a.0]
                .cost
                .total_cmp(&g.nodes[b.0].cost)
                .then(a.1.len().cmp(&b.1.len()))
        });
        for i in 0..sets.len() {
            if !alive[sets[i].0] {
                continue;
            }
            for j in i + 1..sets.len() {
                let (a, b) = (&sets[i], &sets[j]);
                if alive[b.0]
                    && g.nodes[a.0].cost <= g.nodes[b.0].cost
                    && a.1.iter().all(|c| b.1.binary_search(c).is_ok())
                {
                    alive[b.0] = false;
                }
            }
        }
    }
    alive
}

/// Strongly connected components of the class graph over live nodes (Tarjan, iterative).
fn scc(g: &ExGraph, alive: &[bool], keep: &[bool]) -> Vec<usize> {
    let n = g.num_classes();
    let succ: Vec<Vec<usize>> = (0..n)
        .map(|c| {
            let mut s: Vec<usize> = g.classes[c]
                .iter()
                .filter(|&&m| alive[m])
                .flat_map(|&m| g.nodes[m].children.iter().copied())
                .filter(|&d| keep[d])
                .collect();
            s.sort_unstable();
            s.dedup();
            s
        })
        .collect();
    let (mut index, mut low, mut comp) = (vec![usize::MAX; n], vec![0; n], vec![usize::MAX; n]);
    let (mut stack, mut on) = (Vec::new(), vec![false; n]);
    let (mut next, mut ncomp) = (0, 0);
    for start in 0..n {
        if index[start] != usize::MAX || !keep[start] {
            continue;
        }
        let mut call = vec![(start, 0usize)];
        index[start] = next;
        low[start] = next;
        next += 1;
        stack.push(start);
        on[start] = true;
        while let Some(&mut (v, ref mut k)) = call.last_mut() {
            if *k < succ[v].len() {
                let w = succ[v][*k];
                *k += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on[w] = true;
                    call.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                call.pop();
                if let Some(&(u, _)) = call.last() {
                    low[u] = low[u].min(low[v]);
                }
                if low[v] == index[v] {
                    while let Some(w) = stack.pop() {
                        on[w] = false;
                        comp[w] = ncomp;
                        if w == v {
                            break;
                        }
                    }
                    ncomp += 1;
                }
            }
        }
    }
    comp
}

impl Extractor for Ilp {
    fn extract(&self, g: &ExGraph, opts: &Options) -> Extraction {
        let start = std::time::Instant::now();
        // the greedy DAG extraction, improved by local search for a fifth of the budget
        let warm = super::local_search::improve(
            g,
            GreedyDag.extract(g, opts),
            &GreedyTree.extract(g, opts),
            start + opts.time_limit / 5,
        );
        let warm_ok = g.check(&warm).is_ok();
        let mut cuts: Vec<Vec<usize>> = Vec::new();
        let mut solved;
        loop {
            solved = solve(g, opts, warm_ok.then_some(&warm), start, self.cycles, &cuts);
            let cycle = match (&solved, self.cycles) {
                (Some(ex), Cycles::Lazy) => g.find_cycle(ex),
                _ => None,
            };
            match cycle {
                Some(c) if start.elapsed() < opts.time_limit && cuts.len() < 10_000 => cuts.push(c),
                _ => break,
            }
        }
        if let Some(ex) = &solved {
            debug(|| format!("check {:?}, cost {}", g.check(ex), g.dag_cost(ex)));
        }
        match solved {
            Some(ex) if g.check(&ex).is_ok() => {
                if warm_ok && g.dag_cost(&warm) < g.dag_cost(&ex) - 1e-9 {
                    // CBC's incumbent at timeout can be worse than its warm start
                    Extraction {
                        optimal: false,
                        ..warm
                    }
                } else {
                    ex
                }
            }
            _ => warm,
        }
    }
}

fn solve(
    g: &ExGraph,
    opts: &Options,
    warm: Option<&Extraction>,
    start: std::time::Instant,
    cycles: Cycles,
    cuts: &[Vec<usize>],
) -> Option<Extraction> {
    let alive = reduce(g);
    debug(|| format!("reduced at {:.2}s", start.elapsed().as_secs_f64()));
    // classes reachable from the roots through live nodes
    let mut keep = vec![false; g.num_classes()];
    let mut stack = g.roots.clone();
    while let Some(c) = stack.pop() {
        if std::mem::replace(&mut keep[c], true) {
            continue;
        }
        for &n in &g.classes[c] {
            if alive[n] {
                stack.extend(&g.nodes[n].children);
            }
        }
    }
    if g.roots
        .iter()
        .any(|&r| g.classes[r].iter().all(|&n| !alive[n]))
    {
        return None; // a root cannot be extracted
    }
    let comp = scc(g, &alive, &keep);
    let mut comp_size = std::collections::HashMap::new();
    for c in 0..g.num_classes() {
        if keep[c] {
            *comp_size.entry(comp[c]).or_insert(0usize) += 1;
        }
    }
    let cyclic = |c: usize| cycles == Cycles::Topological && keep[c] && comp_size[&comp[c]] > 1;
    let mut vars = ProblemVariables::new();
    let mut x: Vec<Option<Variable>> = vec![None; g.nodes.len()];
    for (n, node) in g.nodes.iter().enumerate() {
        if alive[n] && keep[node.class] {
            let init = warm.map_or(0.0, |w| {
                f64::from(u8::from(w.choice[node.class] == Some(n)))
            });
            x[n] = Some(vars.add(variable().binary().initial(init)));
        }
    }
    let k = g.num_classes() as f64;
    let t: Vec<Option<Variable>> = (0..g.num_classes())
        .map(|c| cyclic(c).then(|| vars.add(variable().min(0.0).max(k))))
        .collect();
    let class_sum = |c: usize| class_sum(g, &x, c);
    let mut model = cbc_model(g, vars, &x);
    if let Some(w) = warm {
        // the greedy plan's cost bounds the search: only plans at least as cheap are explored
        let c = g.dag_cost(w);
        model.set_parameter("cutoff", &format!("{}", c + 1e-6 * c.abs().max(1.0)));
    }
    let remaining = opts
        .time_limit
        .saturating_sub(start.elapsed())
        .as_secs_f64()
        .max(1.0);
    let mut model = model.with_time_limit(remaining);
    for (c, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
        model.add_constraint(constraint!(class_sum(c) <= 1));
    }
    for &r in &g.roots {
        model.add_constraint(constraint!(class_sum(r) == 1));
    }
    for cut in cuts {
        let chosen: Expression = cut.iter().filter_map(|&n| x[n]).sum();
        model.add_constraint(constraint!(chosen <= (cut.len() as f64) - 1.0));
    }
    // With negative costs, choosing a node nobody needs would lower the objective: a class may
    // only be chosen when a chosen node needs it (roots aside).
    if g.nodes.iter().any(|n| n.cost < 0.0) {
        let parents = g.parents();
        for c in 0..g.num_classes() {
            if keep[c] && !g.roots.contains(&c) {
                let users: Expression = parents[c].iter().filter_map(|&p| x[p]).sum();
                model.add_constraint(constraint!(class_sum(c) - users <= 0));
            }
        }
    }
    for (n, node) in g.nodes.iter().enumerate() {
        let Some(xn) = x[n] else { continue };
        for d in node.child_classes() {
            model.add_constraint(constraint!(class_sum(d) - xn >= 0));
            if let (Some(tc), Some(td)) = (t[node.class], t[d]) {
                if comp[node.class] == comp[d] {
                    model.add_constraint(constraint!(tc - td - k * xn >= 1.0 - k));
                }
            }
        }
    }
    debug(|| format!("model built at {:.2}s", start.elapsed().as_secs_f64()));
    let solution = match model.solve() {
        Ok(s) => s,
        Err(e) => {
            debug(|| format!("{e:?}"));
            return None;
        }
    };
    // CBC can stop before branching (its time checks are coarse) and hand back the root LP
    // relaxation under an "optimal" status: a fractional answer is no answer.
    if x.iter().flatten().any(|&v| {
        let a = solution.value(v);
        (a - a.round()).abs() > 1e-6
    }) {
        debug(|| format!("fractional answer at {:.2}s", start.elapsed().as_secs_f64()));
        return None;
    }
    let optimal = matches!(solution.status(), SolutionStatus::Optimal);
    debug(|| {
        format!(
            "solved at {:.2}s, {:?}",
            start.elapsed().as_secs_f64(),
            solution.status()
        )
    });
    let mut choice = vec![None; g.num_classes()];
    for (n, node) in g.nodes.iter().enumerate() {
        if let Some(v) = x[n] {
            if solution.value(v) > 0.5 {
                choice[node.class] = Some(n);
            }
        }
    }
    // keep only what the roots need (the ILP may select unreachable classes at zero cost)
    let mut ex = Extraction { choice, optimal };
    let reach = g.reachable(&ex);
    let mut pruned = vec![None; g.num_classes()];
    for c in reach {
        pruned[c] = ex.choice[c];
    }
    ex.choice = pruned;
    Some(ex)
}
