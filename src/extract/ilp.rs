//! Exact extraction by integer linear programming, solved by CBC through good_lp.
//!
//! **Order of work.** (1) The greedy DAG extraction, improved by local search, is the
//! incumbent. (2) Cheap proofs: on a forest the bottom-up optimum is exact
//! ([`forest_optimum`]); otherwise the exact branch and bound of bnb.rs runs for a few
//! milliseconds, which settles small e-graphs (egglog's, spores's own blocks). (3) CBC solves
//! the ILP in a child process that is killed at the time limit (child.rs). (4) When that did
//! not prove the plan optimal, the LP relaxation (lp_round.rs) gives a lower bound, reported
//! with the result so that a search the limit ended has a gap (solving it before CBC cost
//! ~0.1 s per babble e-graph and rarely proved anything CBC's root did not).
//!
//! **Model** (after the SPORES paper's Fig. 11, with shared sub-terms paid once):
//! a binary `x_n` per node and a class variable `z_c = sum x_n <= 1` (one node per class, so a
//! shared class is paid once); `z_r = 1` for every root; for every class `c` and child class
//! `d` of its nodes, `z_d >= sum of x_n over the nodes of c that need d` (one row per pair,
//! `z_d >= z_c` when all of them do: valid because a class chooses one node, and tighter than
//! extraction-gym's one row per node, see [`implication_rows`]); minimise `sum cost_n x_n`. When some
//! costs are negative, a class may only be chosen if a chosen node needs it
//! (`z_c <= sum of its users' x`). With the op-types objective (`--objective op-types`), a
//! binary `y_o` per operator with `x_n <= y_op(n)`; a first solve minimises `sum w_o y_o`, a
//! second the cost among plans of that weight.
//!
//! **Cycles.** A selection may only use the e-graph's cycles if they are broken. Two encodings
//! are implemented ([`Cycles`]). `ilp` cuts cycles lazily (cycles.rs): it solves without
//! acyclicity, adds the set inequality of the classes of every cycle the solution uses (one
//! DFS finds them all, up to a thousand) and solves again. `ilp-levels` gives every class `c` on a
//! cycle a topological level `t_c` in `[0, K)` and requires, for each chosen node `n` of `c`
//! with a child class `d` in the same strongly connected component,
//! `t_c >= t_d + 1 - K (1 - x_n)`; only edges inside strongly connected components can close a
//! cycle, so other classes get no level. Its big-M rows leave the LP relaxation almost
//! unconstrained: on the shared flexc e-graphs the lazy cuts prove all six within the limit
//! where levels proved one.
//!
//! **Reduction before solving.** Nodes of infinite cost (and egglog's subsumed nodes) are
//! dropped; then, repeatedly, nodes with a child class that has no remaining node; a node whose
//! own class is among its children can never be chosen, nor can a node with a child class
//! that dominates its own class in the class graph (dominators.rs: it could only be chosen on
//! a cycle); within a class, a node is dropped when another node costs no more and needs a
//! subset of its child classes (only when no cost is negative; with op-types only for the same
//! operator); and a node whose own cost exceeds the incumbent's total. Only classes reachable
//! from the roots are modelled. Before all that, the cost objective is solved on the
//! contracted reduced graph (contract.rs), where every non-root class with one node and one
//! parent node is folded into that parent (exact); the incumbent is moved off dominated nodes
//! first. Cycles of two classes are cut before the first solve.
//!
//! **Warm start and limits.** The incumbent bounds the search: CBC's objective cutoff is set
//! to its cost, so only plans at least as cheap are explored, and it is the fallback. (Passing
//! it as a MIP start through good_lp made CBC answer invalid or fractional vectors on several
//! shared e-graphs, each costing a second solve; the cutoff gives the same pruning without
//! that.) On timeout the incumbent is used and reported as not proven optimal. Any failure (no
//! answer, an invalid solution, a crashed child) falls back to the incumbent, so extraction
//! always returns a valid plan.
//!
//! **CBC's settings.** Heuristics off (the incumbent is known), at most 10 passes of cut
//! generation at the root, probing off on models of `PROBING_OFF_NODES` node variables or
//! more, and no cut generation at all in the lazy rounds after the first (each round is a
//! new branch and bound over a model that differs by a few cycle inequalities, and CBC's
//! root cuts were most of each round's time). Measured per file in docs/ilp.md.

use super::graph::{ExGraph, Extraction};
use super::{Extractor, GreedyDag, GreedyTree, Objective, OpWeights, Options};
use good_lp::solvers::coin_cbc::{coin_cbc, CoinCbcProblem};
use good_lp::{
    constraint, variable, Expression, ProblemVariables, Solution, SolutionStatus, SolverModel,
    Variable, WithTimeLimit,
};
use std::time::Instant;

/// States the exact branch and bound may expand before the solver takes over, and the time
/// it may take (whichever ends first): a few milliseconds of work, which settles e-graphs of a
/// few dozen nodes and costs little where it fails. The time is a cap for a loaded machine,
/// where 5 ms of wall time ended searches that 100,000 states finish (lean-egg/Math Lie
/// Basic #9: proven in ~3 ms when alone, then left to CBC's lazy cuts for 10 s).
const BNB_BUDGET: usize = 100_000;
const BNB_TIME: std::time::Duration = std::time::Duration::from_millis(20);

/// Models of at least this many node variables are solved without CBC's probing: on
/// herbie/1501 (12,096 nodes) the proof took 4.7 s of CPU without it and 9.1 s with it
/// (herbie/5799 and 6439, 2,232 and 4,336 nodes, unchanged); on the babble e-graphs (~1,000
/// nodes) it mostly helps, so smaller models keep it.
const PROBING_OFF_NODES: usize = 4000;

/// Cycles of one solution blocked before the next solve (lazy acyclicity).
const CYCLES_PER_SOLVE: usize = 1000;

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
    /// cycle inequalities on class edges (cycles.rs), added lazily: solve without them, cut
    /// every cycle the solution uses, solve again
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

/// A silent CBC model minimising `objective`, with CBC's preprocessing on or off, and the
/// parameters of `SPORES_CBC_PARAMS=key=value,...` (for experiments). Preprocessing makes
/// proofs several times faster on the shared babble e-graphs; CBC 2.10's CglPreProcess once
/// crashed (segfault) the process on herbie/1501.json with the former model, whose rows held
/// whole classes' sums. The MIP now runs in a child process (child.rs), where a crash costs
/// only the proof, so it runs with preprocessing; the in-process LP relaxation without.
pub(super) fn cbc_model(
    vars: ProblemVariables,
    objective: Expression,
    preprocess: bool,
) -> CoinCbcProblem {
    let mut model = coin_cbc(vars.minimise(objective));
    model.set_log_level(0);
    model.set_parameter("log", "0");
    model.set_parameter("slogLevel", "0");
    model.set_parameter("preprocess", if preprocess { "on" } else { "off" });
    apply_env_params(&mut model);
    model
}

/// The parameters of `SPORES_CBC_PARAMS=key=value,...` (experiments), applied last.
fn apply_env_params(model: &mut CoinCbcProblem) {
    if let Ok(extra) = std::env::var("SPORES_CBC_PARAMS") {
        for kv in extra.split(',') {
            if let Some((k, v)) = kv.split_once('=') {
                model.set_parameter(k, v);
            }
        }
    }
}

/// The classes reachable from the roots through `alive` nodes.
pub(super) fn reachable_live(g: &ExGraph, alive: &[bool]) -> Vec<bool> {
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
    keep
}

/// The rows "a child class is chosen when a chosen node needs it", one per (class `c`, child
/// class `d`): `z_d >= sum of x_n over the modelled nodes n of c that need d`. As a class
/// chooses at most one node, the sum is 1 exactly when the chosen node needs `d`, so the row
/// is valid for every integer solution; it replaces one row per node (`z_d >= x_n`) and is
/// tighter in the LP relaxation, where a class split between two nodes that both need `d`
/// would otherwise pay only half of `d`. When every node of `c` needs `d` the sum is `z_c`
/// itself (the row extraction-gym's faster-ilp-cbc adds for the intersection of children).
/// Each entry: the class, the child class, and the nodes (`None`: all of them).
pub(super) fn implication_rows(
    g: &ExGraph,
    x: &[Option<Variable>],
) -> Vec<(usize, usize, Option<Vec<usize>>)> {
    let mut rows = Vec::new();
    for (c, ns) in g.classes.iter().enumerate() {
        let live: Vec<usize> = ns.iter().copied().filter(|&n| x[n].is_some()).collect();
        let mut users: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for &n in &live {
            for d in g.nodes[n].child_classes() {
                users.entry(d).or_default().push(n);
            }
        }
        for (d, nodes) in users {
            let all = nodes.len() == live.len();
            rows.push((c, d, (!all).then_some(nodes)));
        }
    }
    rows
}

/// Adds the rows of [`implication_rows`] to `model`, with class variables `z`.
pub(super) fn add_implication_rows<M: SolverModel>(
    model: &mut M,
    g: &ExGraph,
    x: &[Option<Variable>],
    z: &[Option<Variable>],
) {
    for (c, d, nodes) in implication_rows(g, x) {
        let (Some(zc), Some(zd)) = (z[c], z[d]) else {
            continue;
        };
        let used: Expression = match nodes {
            None => zc.into(),
            Some(ns) => ns.iter().filter_map(|&n| x[n]).sum(),
        };
        model.add_constraint(constraint!(zd - used >= 0));
    }
}

/// The summed cost of the chosen nodes.
pub(super) fn cost_objective(g: &ExGraph, x: &[Option<Variable>]) -> Expression {
    g.nodes
        .iter()
        .zip(x)
        .filter_map(|(node, v)| v.map(|v| node.cost * v))
        .sum()
}

/// The nodes that a reduction starts from: finite cost, and not a child of their own class.
fn finite_and_not_self_loops(g: &ExGraph) -> Vec<bool> {
    g.nodes
        .iter()
        .map(|n| n.cost.is_finite() && !n.children.contains(&n.class))
        .collect()
}

/// Nodes that can appear in some valid extraction, after the reductions of the module doc.
/// With `same_op`, a node is only dominated by a node of the same operator (the op-types
/// objective counts operators, so a cheaper node of another op does not dominate).
pub fn reduce(g: &ExGraph, same_op: bool) -> Vec<bool> {
    let mut alive = finite_and_not_self_loops(g);
    let parents = g.parents();
    loop {
        drop_dead_children(g, &parents, &mut alive);
        drop_dominated(g, same_op, &mut alive);
        // nodes that could only be chosen on a cycle (dominators.rs); dropping them can
        // empty classes and change the dominators, hence the loop
        if super::dominators::drop_cycle_only(g, &mut alive) == 0 {
            return alive;
        }
    }
}

/// `g` with an infinite cost on every node that is in no valid extraction: a node with a
/// child class that has no such node, or one that could only be chosen on a cycle
/// (dominators.rs). The same valid extractions at the same costs, so the incumbent stays
/// valid; what it removes lets the contraction (contract.rs) fold more classes.
fn without_invalid(g: &ExGraph) -> ExGraph {
    let mut alive = finite_and_not_self_loops(g);
    let parents = g.parents();
    loop {
        drop_dead_children(g, &parents, &mut alive);
        if super::dominators::drop_cycle_only(g, &mut alive) == 0 {
            break;
        }
    }
    let mut out = g.clone();
    for (node, keep) in out.nodes.iter_mut().zip(alive) {
        if !keep {
            node.cost = f64::INFINITY;
        }
    }
    out
}

/// `g` with an infinite cost on the nodes [`reduce`] drops, and the incumbent `warm` moved off
/// them: a node dropped as dominated is replaced by a live node of its class that costs no
/// more and needs a subset of its child classes (still valid: fewer edges, no new class; no
/// dearer). When that fails (or `warm` is not valid), [`without_invalid`] and `warm` as it is.
/// The reduced graph has one optimum fewer ways, so the contraction folds more classes.
fn reduced_with_incumbent(g: &ExGraph, warm: &Extraction) -> (ExGraph, Extraction) {
    let fallback = || (without_invalid(g), warm.clone());
    if g.check(warm).is_err() {
        return fallback();
    }
    let alive = reduce(g, false);
    let mut moved = warm.clone();
    for c in g.reachable(warm) {
        let Some(n) = warm.choice[c] else {
            return fallback();
        };
        if alive[n] {
            continue;
        }
        let kids = g.nodes[n].child_classes();
        let better = g.classes[c].iter().copied().find(|&m| {
            alive[m]
                && g.nodes[m].cost <= g.nodes[n].cost
                && g.nodes[m]
                    .child_classes()
                    .iter()
                    .all(|d| kids.binary_search(d).is_ok())
        });
        match better {
            Some(m) => moved.choice[c] = Some(m),
            None => return fallback(),
        }
    }
    let moved = prune(g, moved);
    let all_alive = g
        .reachable(&moved)
        .iter()
        .all(|&c| moved.choice[c].is_some_and(|n| alive[n]));
    if !all_alive || g.check(&moved).is_err() || g.dag_cost(&moved) > g.dag_cost(warm) {
        return fallback();
    }
    let mut out = g.clone();
    for (node, keep) in out.nodes.iter_mut().zip(alive) {
        if !keep {
            node.cost = f64::INFINITY;
        }
    }
    (out, moved)
}

/// Drops, to a fixpoint, the nodes with a child class that has no live node.
fn drop_dead_children(g: &ExGraph, parents: &[Vec<usize>], alive: &mut [bool]) {
    let mut live_count: Vec<usize> = vec![0; g.num_classes()];
    for (n, node) in g.nodes.iter().enumerate() {
        if alive[n] {
            live_count[node.class] += 1;
        }
    }
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
}

/// Drops dominated nodes: same class, cost <= and child classes a subset (sound only when no
/// cost is negative: otherwise extra children can lower the total). Per class, the cheapest
/// live node of each set of child classes is looked up for every subset of a node's set (sets
/// of up to 12 classes; larger ones are kept), so large classes (herbie's have thousands of
/// nodes) cost linear time; among equal sets and costs the first node stays.
fn drop_dominated(g: &ExGraph, same_op: bool, alive: &mut [bool]) {
    if !g.nodes.iter().all(|n| n.cost >= 0.0) {
        return;
    }
    for nodes in &g.classes {
        let live: Vec<(usize, Vec<usize>)> = nodes
            .iter()
            .filter(|&&n| alive[n])
            .map(|&n| (n, g.nodes[n].child_classes()))
            .collect();
        if live.len() < 2 {
            continue;
        }
        let op = |n: usize| if same_op { g.nodes[n].op.as_str() } else { "" };
        // (operator, child set) -> the cheapest node with it (first among equals)
        let mut best: std::collections::HashMap<(&str, &[usize]), usize> = Default::default();
        for (n, set) in &live {
            best.entry((op(*n), set.as_slice()))
                .and_modify(|b| {
                    if g.nodes[*n].cost < g.nodes[*b].cost {
                        *b = *n;
                    }
                })
                .or_insert(*n);
        }
        let mut dead = Vec::new();
        for (n, set) in &live {
            if set.len() > 12 {
                continue;
            }
            let cost = g.nodes[*n].cost;
            let mut sub: Vec<usize> = Vec::with_capacity(set.len());
            let dominated = (0u32..1 << set.len()).any(|mask| {
                sub.clear();
                sub.extend(
                    (0..set.len())
                        .filter(|i| mask >> i & 1 == 1)
                        .map(|i| set[i]),
                );
                match best.get(&(op(*n), sub.as_slice())) {
                    Some(&b) if b == *n => false,
                    Some(&b) => g.nodes[b].cost <= cost,
                    None => false,
                }
            });
            if dominated {
                dead.push(*n);
            }
        }
        for n in dead {
            alive[n] = false;
        }
    }
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
    fn supports(&self, _objective: &Objective) -> bool {
        true
    }

    fn extract(&self, g: &ExGraph, opts: &Options) -> Extraction {
        let start = Instant::now();
        // the greedy DAG extraction, improved by local search for a fifth of the budget
        let warm = super::local_search::improve(
            g,
            GreedyDag.extract(g, opts),
            &GreedyTree.extract(g, opts),
            usize::MAX,
            Some(start + opts.time_limit / 5),
        );
        let warm_ok = g.check(&warm).is_ok();
        debug(|| {
            format!(
                "warm start {} at {:.3}s",
                g.dag_cost(&warm),
                start.elapsed().as_secs_f64()
            )
        });
        if let Objective::OpTypes(w) = &opts.objective {
            return self.op_types(g, opts, w, warm, start);
        }
        // the cost objective is solved on the contracted graph (contract.rs), where the warm
        // start is as valid and costs the same
        let (reduced, warm_reduced) = reduced_with_incumbent(g, &warm);
        let contracted = super::contract::contract(&reduced);
        debug(|| format!("contracted {} nodes", contracted.merged));
        let ex = self.extract_cost(&contracted.graph, opts, warm_reduced, start);
        let ex = prune(g, contracted.expand(&ex));
        if g.check(&ex).is_ok() || !warm_ok {
            ex
        } else {
            debug_assert!(false, "contracted extraction invalid: {:?}", g.check(&ex));
            warm
        }
    }
}

impl Ilp {
    /// The cost objective: cheap proofs, then CBC with lazy cycle cuts, then the LP bound.
    fn extract_cost(
        &self,
        g: &ExGraph,
        opts: &Options,
        warm: Extraction,
        start: Instant,
    ) -> Extraction {
        let warm_ok = g.check(&warm).is_ok();
        let warm_cost = g.dag_cost(&warm);
        let tol = |v: f64| 1e-6 * v.abs().max(1.0);
        // small e-graphs: a forest's exact optimum, or an exact search, faster than a solver run
        let deadline = Instant::now() + BNB_TIME.min(opts.time_limit / 10);
        let warm = match quick_proof(g, warm, BNB_BUDGET, deadline) {
            Ok(ex) => return ex,
            Err(warm) => warm,
        };
        let (solved, rounds_bound) =
            self.solve_with_cuts(g, opts, warm_ok.then_some(&warm), start, None);
        if let Some(ex) = &solved {
            debug(|| format!("check {:?}, cost {}", g.check(ex), g.dag_cost(ex)));
        }
        let mut best = match solved {
            // CBC's incumbent at timeout can be worse than its warm start
            Some(ex)
                if g.check(&ex).is_ok()
                    && !(warm_ok && warm_cost < g.dag_cost(&ex) - tol(warm_cost)) =>
            {
                ex
            }
            _ => warm,
        };
        // a solve whose answer still had cycles bounds the optimum all the same
        best.bound = match (best.bound, rounds_bound) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let best_cost = g.dag_cost(&best);
        if best.optimal {
            best.bound = Some(best_cost);
            return best;
        }
        // the limit ended the search: the LP relaxation bounds the optimum (CBC's own bound
        // died with its process), and may even prove the plan optimal
        // (in a child process too, ended at 1.4 times the limit: the LP of the largest shared
        // e-graphs takes seconds)
        let lp_bound = super::child::run_bounded(start + opts.time_limit.mul_f64(1.4), || {
            super::lp_round::relax(g, opts, &[]).map(|(_, b)| Extraction {
                choice: Vec::new(),
                optimal: false,
                bound: Some(b),
            })
        })
        .and_then(|carrier| carrier.bound);
        debug(|| format!("LP {lp_bound:?} at {:.4}s", start.elapsed().as_secs_f64()));
        let b = match (best.bound, lp_bound) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        if g.check(&best).is_ok() && b.is_some_and(|b| best_cost <= b + tol(b)) {
            return proven(best, best_cost);
        }
        best.bound = b.map(|b| b.min(best_cost));
        best
    }
}

/// Tries to prove the best DAG-cost extraction without a solver: the exact optimum of a
/// forest ([`forest_optimum`]), then the exact branch and bound (bnb.rs) for at most `states`
/// expanded states or until `deadline`, whichever comes first (a budget of states gives the
/// same answer on any machine; a deadline does not).
/// `Ok` with a proven optimal extraction (`warm` or a better one), or `Err(warm)` unproven.
/// `warm` is the incumbent (it may be invalid: then any valid plan beats it).
pub fn quick_proof(
    g: &ExGraph,
    warm: Extraction,
    states: usize,
    deadline: Instant,
) -> Result<Extraction, Extraction> {
    let warm_ok = g.check(&warm).is_ok();
    let warm_cost = g.dag_cost(&warm);
    if warm_ok {
        if let Some(b) = forest_optimum(g) {
            if warm_cost <= b + 1e-6 * b.abs().max(1.0) {
                debug(|| format!("forest: greedy optimal ({b})"));
                return Ok(proven(warm, warm_cost));
            }
        }
    }
    match super::bnb::search(
        g,
        &reduce(g, false),
        if warm_ok { warm_cost } else { f64::INFINITY },
        states,
        Some(deadline),
    ) {
        Some(Some(ex)) => {
            let ex = prune(g, ex);
            let c = g.dag_cost(&ex);
            debug(|| format!("branch and bound: optimum {c}"));
            Ok(proven(ex, c))
        }
        Some(None) if warm_ok => {
            debug(|| format!("branch and bound: greedy optimal ({warm_cost})"));
            Ok(proven(warm, warm_cost))
        }
        Some(None) => Ok(warm), // no valid extraction at all
        None => {
            debug(|| {
                format!(
                    "branch and bound: budget exhausted ({:?} past its deadline)",
                    Instant::now().saturating_duration_since(deadline)
                )
            });
            Err(warm)
        }
    }
}

/// `ex`, proven optimal with value `value`.
fn proven(ex: Extraction, value: f64) -> Extraction {
    Extraction {
        optimal: true,
        bound: Some(value),
        ..ex
    }
}

/// Keeps only the choices of the classes the roots reach.
fn prune(g: &ExGraph, ex: Extraction) -> Extraction {
    let mut pruned = vec![None; g.num_classes()];
    for c in g.reachable(&ex) {
        pruned[c] = ex.choice[c];
    }
    Extraction {
        choice: pruned,
        ..ex
    }
}

/// The optimal DAG cost when the e-graph is a forest under the roots: every class has at most
/// one extractable parent node and no root has one. Then no two uses of a class can meet in an
/// extraction (each class hangs below one node, the roots' terms are disjoint), the DAG cost of
/// any extraction is its tree cost with each child class of a node counted once, and the
/// bottom-up minimum of that is exact. `None` when the e-graph is not such a forest or a root
/// cannot be extracted.
pub fn forest_optimum(g: &ExGraph) -> Option<f64> {
    let mut parents = vec![usize::MAX; g.num_classes()]; // MAX none, else the one parent
    for (n, node) in g.nodes.iter().enumerate() {
        if !node.cost.is_finite() {
            continue;
        }
        for d in node.child_classes() {
            if parents[d] == usize::MAX {
                parents[d] = n;
            } else if parents[d] != n {
                return None;
            }
        }
    }
    if g.roots.iter().any(|&r| parents[r] != usize::MAX) {
        return None;
    }
    let mut roots = g.roots.clone();
    roots.sort_unstable();
    roots.dedup();
    // iterative post-order over the classes below the roots (acyclic: every class's single
    // parent chain ends at a root, which has no parent)
    let mut best: Vec<Option<f64>> = vec![None; g.num_classes()];
    let mut stack: Vec<(usize, bool)> = roots.iter().map(|&r| (r, false)).collect();
    while let Some((c, expanded)) = stack.pop() {
        if best[c].is_some() {
            continue;
        }
        if !expanded {
            stack.push((c, true));
            for &n in &g.classes[c] {
                if g.nodes[n].cost.is_finite() {
                    for d in g.nodes[n].child_classes() {
                        if best[d].is_none() {
                            stack.push((d, false));
                        }
                    }
                }
            }
            continue;
        }
        let v = g.classes[c]
            .iter()
            .filter(|&&n| g.nodes[n].cost.is_finite())
            .map(|&n| {
                let node = &g.nodes[n];
                node.child_classes()
                    .iter()
                    .fold(node.cost, |a, &d| a + best[d].unwrap_or(f64::INFINITY))
            })
            .fold(f64::INFINITY, f64::min);
        best[c] = Some(v);
    }
    let total: f64 = roots
        .iter()
        .map(|&r| best[r].unwrap_or(f64::INFINITY))
        .sum();
    total.is_finite().then_some(total)
}

impl Ilp {
    /// The lexicographic op-types optimum: first the least summed weight of the distinct
    /// operators, then, among plans with that weight, the least DAG cost (two solves).
    fn op_types(
        &self,
        g: &ExGraph,
        opts: &Options,
        w: &OpWeights,
        warm: Extraction,
        start: Instant,
    ) -> Extraction {
        let warm_ok = g.check(&warm).is_ok();
        let first = self
            .solve_with_cuts(g, opts, None, start, Some((w, None)))
            .0;
        let Some(first) = first.filter(|ex| g.check(ex).is_ok()) else {
            return warm;
        };
        let weight = g.objective(&first, &opts.objective);
        let second = self
            .solve_with_cuts(g, opts, None, start, Some((w, Some(weight))))
            .0
            .filter(|ex| g.check(ex).is_ok());
        let mut best = match second {
            Some(ex) => Extraction {
                optimal: ex.optimal && first.optimal,
                ..ex
            },
            None => Extraction {
                optimal: false,
                ..first
            },
        };
        if warm_ok {
            let key = |ex: &Extraction| (g.objective(ex, &opts.objective), g.dag_cost(ex));
            let (a, b) = (key(&warm), key(&best));
            if a.0 < b.0 - 1e-9 || (a.0 <= b.0 + 1e-9 && a.1 < b.1 - 1e-9) {
                best = warm; // only when the solver stopped early
            }
        }
        best.bound = best.optimal.then(|| g.objective(&best, &opts.objective));
        best
    }

    /// Solves the model, adding the cycle inequalities of the cycles each solution uses
    /// (lazy encoding) and solving again, until a solution has none or the time is up. Also
    /// the best lower bound any solve proved: a model with only some of the cycle inequalities
    /// is a relaxation, so its bound holds even when its answer had cycles.
    fn solve_with_cuts(
        &self,
        g: &ExGraph,
        opts: &Options,
        warm: Option<&Extraction>,
        start: Instant,
        ops: Option<(&OpWeights, Option<f64>)>,
    ) -> (Option<Extraction>, Option<f64>) {
        let mut cuts: Vec<Vec<usize>> = Vec::new();
        if self.cycles == Cycles::Lazy && std::env::var_os("SPORES_ILP_NO_PRECUTS").is_none() {
            cuts = super::cycles::two_cycles(g, &reduce(g, ops.is_some()));
            debug(|| format!("{} two-cycles cut up front", cuts.len()));
        }
        let mut bound: Option<f64> = None;
        let mut known: std::collections::HashSet<Vec<usize>> = cuts.iter().cloned().collect();
        let mut later_round = false;
        loop {
            // in a child process that is killed at the time limit (child.rs)
            let solved = super::child::run_bounded(start + opts.time_limit, || {
                solve(g, opts, warm, start, self.cycles, &cuts, ops, later_round)
            });
            later_round = true;
            let cycles = match (&solved, self.cycles) {
                (Some(ex), Cycles::Lazy) => g.find_cycles(ex, CYCLES_PER_SOLVE),
                _ => Vec::new(),
            };
            debug(|| format!("{} cycles in the solution", cycles.len()));
            if let Some(b) = solved.as_ref().and_then(|ex| ex.bound) {
                bound = Some(bound.map_or(b, |a: f64| a.max(b)));
            }
            if cycles.is_empty() || start.elapsed() >= opts.time_limit || cuts.len() >= 10_000 {
                return (solved.filter(|ex| g.find_cycle(ex).is_none()), bound);
            }
            for c in cycles {
                let c = super::cycles::canonical(&c);
                if known.insert(c.clone()) {
                    cuts.push(c);
                }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn solve(
    g: &ExGraph,
    opts: &Options,
    warm: Option<&Extraction>,
    start: Instant,
    cycles: Cycles,
    cuts: &[Vec<usize>],
    ops: Option<(&OpWeights, Option<f64>)>,
    later_round: bool,
) -> Option<Extraction> {
    let mut alive = reduce(g, ops.is_some());
    // with non-negative costs, a node that alone costs more than the incumbent is in no
    // better plan
    if let (Some(w), None) = (warm, ops) {
        if g.nodes.iter().all(|n| n.cost >= 0.0) {
            let c = g.dag_cost(w);
            let limit = c + 1e-6 * c.abs().max(1.0);
            for (n, node) in g.nodes.iter().enumerate() {
                if node.cost > limit {
                    alive[n] = false;
                }
            }
        }
    }
    debug(|| format!("reduced at {:.2}s", start.elapsed().as_secs_f64()));
    let keep = reachable_live(g, &alive);
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
    debug(|| {
        let nodes = (0..g.nodes.len())
            .filter(|&n| alive[n] && keep[g.nodes[n].class])
            .count();
        let classes = keep.iter().filter(|&&k| k).count();
        let on_cycles = (0..g.num_classes())
            .filter(|&c| keep[c] && comp_size[&comp[c]] > 1)
            .count();
        format!("model: {nodes} nodes, {classes} classes, {on_cycles} classes on cycles")
    });
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
    // op-types: one usage variable per operator of a modelled node
    let mut op_vars: Vec<(String, Variable)> = Vec::new();
    let mut op_index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    if ops.is_some() {
        for (n, node) in g.nodes.iter().enumerate() {
            if x[n].is_some() && !op_index.contains_key(node.op.as_str()) {
                op_index.insert(node.op.as_str(), op_vars.len());
                op_vars.push((node.op.clone(), vars.add(variable().binary())));
            }
        }
    }
    let op_weight_sum =
        |w: &OpWeights| -> Expression { op_vars.iter().map(|(op, y)| w.weight(op) * *y).sum() };
    // a class variable z_c = the sum of its node variables keeps every other row short
    let z: Vec<Option<Variable>> = (0..g.num_classes())
        .map(|c| keep[c].then(|| vars.add(variable().min(0.0).max(1.0))))
        .collect();
    let zc = |c: usize| z[c].expect("kept class");
    let objective = match ops {
        Some((w, None)) => op_weight_sum(w),
        _ => cost_objective(g, &x),
    };
    let mut model = cbc_model(vars, objective, true);
    if let (Some(w), None) = (warm, ops) {
        // the greedy plan's cost bounds the search: only plans at least as cheap are explored
        let c = g.dag_cost(w);
        model.set_parameter("cutoff", &format!("{}", c + 1e-6 * c.abs().max(1.0)));
        // CBC's primal heuristics look for what the incumbent already is: on the shared babble
        // e-graphs the proofs take ~40% less CPU time without them
        model.set_parameter("heuristicsOnOff", "off");
    }
    // at most 10 passes of CBC's cut generation at the root (its default on small models is
    // up to 100, here ~70): babble/towers 11.01.50 proven in 2.7 s of CPU (was 5.8),
    // rover/box_filter_3 in 7.7 s (was 12.5); no change measured on the other babble files
    model.set_parameter("passCuts", "10");
    if x.iter().flatten().count() >= PROBING_OFF_NODES {
        model.set_parameter("probing", "off");
    }
    if later_round {
        // a round after cycle cuts were added: CBC's own cut generation at every round's root
        // cost more than it saved (eggcc-bril/range_check: 14 rounds of ~0.6 s, unproven at
        // 10 s; without CBC's cuts after the first round, proven in ~2.5 s)
        model.set_parameter("cuts", "off");
    }
    apply_env_params(&mut model);
    let remaining = opts
        .time_limit
        .saturating_sub(start.elapsed())
        .as_secs_f64()
        .max(1.0);
    let mut model = model.with_time_limit(remaining);
    for (c, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
        model.add_constraint(constraint!(zc(c) - class_sum(g, &x, c) == 0));
    }
    for &r in &g.roots {
        model.add_constraint(constraint!(zc(r) == 1));
    }
    super::cycles::add_cycle_cuts(&mut model, g, &x, cuts);
    if let Some((w, limit)) = ops {
        for (n, node) in g.nodes.iter().enumerate() {
            if let Some(xn) = x[n] {
                let y = op_vars[op_index[node.op.as_str()]].1;
                model.add_constraint(constraint!(xn - y <= 0));
            }
        }
        if let Some(limit) = limit {
            model.add_constraint(constraint!(op_weight_sum(w) <= limit + 1e-6));
        }
    }
    // With negative costs (or the op-types objective, where a chosen node's operator costs
    // whether it is needed or not), a class may only be chosen when a chosen node needs it
    // (roots aside): otherwise choosing a node nobody needs could lower the objective.
    if ops.is_some() || g.nodes.iter().any(|n| n.cost < 0.0) {
        let parents = g.parents();
        for c in 0..g.num_classes() {
            if keep[c] && !g.roots.contains(&c) {
                let users: Expression = parents[c].iter().filter_map(|&p| x[p]).sum();
                model.add_constraint(constraint!(zc(c) - users <= 0));
            }
        }
    }
    add_implication_rows(&mut model, g, &x, &z);
    for (n, node) in g.nodes.iter().enumerate() {
        let Some(xn) = x[n] else { continue };
        for d in node.child_classes() {
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
    // CBC's best possible objective when it stopped: a lower bound (cost objective only)
    let cbc_bound = solution.model().best_possible_value();
    debug(|| {
        format!(
            "solved at {:.2}s, {:?}, bound {cbc_bound}",
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
    let mut ex = prune(g, Extraction::new(choice));
    ex.optimal = optimal;
    // (with only some cycle inequalities the model is a relaxation: the bound still holds)
    if ops.is_none() && cbc_bound.is_finite() {
        ex.bound = Some(cbc_bound);
    }
    Some(ex)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small random graphs with non-negative costs, classes of up to four nodes and repeated
    /// child sets: the best valid extraction among the nodes [`reduce`] keeps costs the same as
    /// the best among all nodes (both by enumeration), and the sample drops nodes.
    #[test]
    fn reduction_keeps_the_optimum() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(23);
        let mut dropped = 0;
        for _ in 0..300 {
            let g = ExGraph::random(&mut rng, 2..5, 1..5, true, |r| f64::from(r.gen_range(0..4)));
            let alive = reduce(&g, false);
            dropped += alive.iter().filter(|a| !**a).count();
            let (mut best_all, mut best_alive) = (f64::INFINITY, f64::INFINITY);
            for ex in g.every_choice() {
                if g.check(&ex).is_ok() {
                    let c = g.dag_cost(&ex);
                    best_all = best_all.min(c);
                    if g.reachable(&ex)
                        .iter()
                        .all(|&k| alive[ex.choice[k].unwrap()])
                    {
                        best_alive = best_alive.min(c);
                    }
                }
            }
            assert_eq!(best_all, best_alive, "{g:?} {alive:?}");
        }
        assert!(dropped > 100, "{dropped} dropped");
    }

    /// CBC with lazy cycle cuts, without the exact search that settles small graphs first, on
    /// small random graphs with cycles: every answer it proves optimal is valid and costs the
    /// brute-force optimum, whatever the number of rounds (later rounds run with other CBC
    /// settings), and most graphs are proven.
    #[test]
    fn lazy_rounds_reach_the_brute_force_optimum() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(41);
        let ilp = Ilp {
            cycles: Cycles::Lazy,
        };
        let opts = Options::default();
        let (mut proven, mut cyclic) = (0, 0);
        for _ in 0..40 {
            let g = ExGraph::random(&mut rng, 3..6, 1..4, false, |r| {
                f64::from(r.gen_range(0..5))
            });
            let all = g.every_choice();
            let best = all
                .iter()
                .filter(|ex| g.check(ex).is_ok())
                .map(|ex| g.dag_cost(ex))
                .fold(f64::INFINITY, f64::min);
            cyclic += usize::from(all.iter().any(|ex| g.find_cycle(ex).is_some()));
            let (ex, _) = ilp.solve_with_cuts(&g, &opts, None, Instant::now(), None);
            if let Some(ex) = ex.filter(|ex| ex.optimal) {
                assert!(g.check(&ex).is_ok(), "{g:?} {ex:?}");
                assert_eq!(g.dag_cost(&ex), best, "{g:?} {ex:?}");
                proven += 1;
            }
        }
        assert!(
            proven >= 30 && cyclic >= 10,
            "{proven} proven, {cyclic} with cycles"
        );
    }
}
