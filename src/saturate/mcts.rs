//! Monte Carlo tree search over rule applications, for blocks whose saturation stops at a
//! limit (`SPORES_SCHEDULER=mcts`, `--scheduler mcts`).
//!
//! When the e-graph cannot be saturated, the rewrites applied before the node limit decide
//! which plans exist to extract: phase ordering comes back in the construction phase. The
//! paper in `tensor-eqsat-mcts-extraction.txt` (Hartmann, He, Yoneki; after MCTS-GEB) searches
//! over rule applications with MCTS: a tree whose edges are rule choices and whose nodes are
//! the e-graphs they lead to, each rollout extracted and costed with a fast greedy extractor
//! that counts shared sub-terms once (its section 4.2), UCB1 to balance exploitation and
//! exploration, and a node budget on every e-graph. This file adapts it to egg and to spores:
//!
//! * **The first rollout is today's run.** The search starts with the sampling run
//!   ([`super::runner::run_sampling`], same seed), so its e-graph is always a candidate. When it
//!   saturates, reaches the goal, merges two constants or runs out of time, that is the
//!   answer and nothing else runs; MCTS only works on runs that stopped at the node or
//!   iteration limit, with the time left.
//! * **An action is a choice of rules for egg's iterations.** Single rules (the paper's
//!   actions) are too fine for egg's iteration-at-a-time runner and our budgets, so the
//!   actions are: all rules with K, K/2 or K/4 sampled matches per rule (narrower steps grow
//!   the e-graph slower, so longer chains of rewrites fit under the node limit), and all rules
//!   but one rule file (translate, ra-identities, rename, cleanup, fused, derived). A tree node
//!   is the e-graph after its path of actions from the input, one iteration each (cloned from
//!   its parent and stepped once); an action that changes nothing is pruned, as the paper
//!   prunes saturated children. A path is thus a schedule that switches policy at chosen
//!   iterations.
//! * **Selection and expansion as in the paper.** From the root, at a node with untried actions
//!   the walk stops and expands with probability 1/2 (always when it has no open child);
//!   otherwise it descends to the child of highest UCB1 `mean + C sqrt(ln N / n)`. Untried
//!   actions are taken in the order above.
//! * **Rollout: the sampling run from the new node, keeping its action** (its rules and
//!   sampling width) to the node or iteration limit: heavy rather than random rollouts, since
//!   random one-iteration choices rarely reach the limit within the time budget, and the
//!   policy a rollout keeps is what the node's value then measures. Its e-graph is costed by
//!   [`GreedyDag`], the DAG-aware greedy extractor: the sharing-aware extraction of the
//!   paper's 4.2 in extraction-gym's form (each class keeps the set of classes its best node
//!   uses, so shared sub-terms are paid once).
//! * **Reward** on a log scale normalized by the costs seen so far: `(hi - mean) / (hi - lo)`
//!   with `hi = ln(1 + cost as written)`, `lo` the best `ln(1 + cost)` found and `mean` the
//!   node's average `ln(1 + cost)` (a linear map of the average, so the running
//!   renormalization keeps node statistics consistent). Plan costs span orders of magnitude;
//!   the paper's sum of improvements would let one large drop hide all later ones.
//! * **Result: the cheapest e-graph seen** (by the greedy cost; the first, i.e. the sampling
//!   run's, on ties) goes to the normal extractor. The paper commits to the best root action
//!   and searches again from there; with a few dozen iterations per block there is no budget
//!   for that, so one search is run and its best e-graph kept.
//!
//! Budgets: every e-graph obeys the node and iteration limits (an iteration counts from the
//! input, through the tree path and the rollout); the whole search, the sampling run
//! included, shares one [`Work`] budget ([`Limits::work`]), to which each greedy costing adds
//! [`EXTRACT_WORK`] per e-node. The search stops after [`ROLLOUTS`] steps or when the work is
//! used up, whichever comes first (`--explain` shows "mcts N rollouts" after the stop
//! reason). Every random choice comes from the seed of [`Limits`], and every budget counts
//! work, so the result is deterministic; the wall-clock limit is only a safety net (when it
//! ends the search, the stop reason ends in "time limit"). The plan can never be worse than
//! the program as written: the input is in every e-graph, and the optimizer keeps the
//! statement as written unless the plan is cheaper.

use super::rules::{parse_rules, Rule, RULE_FILES};
use super::runner::{run_sampling, Limits, Report, Scheduler, Work};
use crate::analysis::EG;
use crate::extract::{self, ExGraph, Extractor, GreedyDag, Options};
use egg::Id;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Instant;

/// Search steps after the first rollout (the sampling run), unless the time limit comes
/// first: each expands one action and rolls out from it (a pruned expansion counts too).
pub const ROLLOUTS: usize = 12;
/// The work of costing an e-graph with the greedy DAG extractor, per e-node (in [`Work`]'s
/// units: about the time of one e-matching candidate).
pub const EXTRACT_WORK: usize = 8;
/// The exploration constant of UCB1 (rewards are in [0, 1]).
const EXPLORATION: f64 = 0.7;
/// The probability that selection stops at a node with untried actions (the paper's 50%).
const EXPAND: f64 = 0.5;

/// One iteration's choice of rules.
struct Action {
    rules: Vec<Rule>,
    matches_per_rule: usize,
}

/// The index in [`RULE_FILES`] of the file defining each rule name.
fn rule_files() -> &'static HashMap<String, usize> {
    static FILES: OnceLock<HashMap<String, usize>> = OnceLock::new();
    FILES.get_or_init(|| {
        let mut m = HashMap::new();
        for (k, (file, text)) in RULE_FILES.iter().enumerate() {
            // the rule files are checked by the tests; a broken one only has no group
            for r in parse_rules(file, text).unwrap_or_default() {
                m.insert(r.name.to_string(), k);
            }
        }
        m
    })
}

/// The actions: all rules with K, K/2 and K/4 sampled matches per rule, and all rules but
/// one rule file (for each file that has some but not all of `rules`).
fn actions(rules: &[Rule], limits: &Limits) -> Vec<Action> {
    let files = rule_files();
    let k = match limits.matches_per_rule {
        0 => 200,
        k => k,
    };
    let mut out = vec![Action {
        rules: rules.to_vec(),
        matches_per_rule: limits.matches_per_rule,
    }];
    for narrow in [(k / 2).max(1), (k / 4).max(1)] {
        out.push(Action {
            rules: rules.to_vec(),
            matches_per_rule: narrow,
        });
    }
    for f in 0..RULE_FILES.len() {
        let kept: Vec<Rule> = rules
            .iter()
            .filter(|r| files.get(r.name.as_str()) != Some(&f))
            .cloned()
            .collect();
        if !kept.is_empty() && kept.len() < rules.len() {
            out.push(Action {
                rules: kept,
                matches_per_rule: limits.matches_per_rule,
            });
        }
    }
    out
}

/// The DAG cost of the greedy DAG-aware extraction of `roots` (infinite when it is invalid),
/// its work counted on `work`.
pub fn greedy_cost(eg: &EG, roots: &[Id], work: &Work) -> f64 {
    work.add(EXTRACT_WORK * eg.total_number_of_nodes());
    let roots: Vec<Id> = roots.iter().map(|r| eg.find(*r)).collect();
    let g = ExGraph::from_egg(eg, &roots, |c, n| extract::node_cost(eg, c, n));
    let ex = GreedyDag.extract(&g, &Options::default());
    g.check(&ex)
        .map(|_| g.dag_cost(&ex))
        .unwrap_or(f64::INFINITY)
}

/// A node of the search tree: the e-graph after its path of actions.
struct Node {
    egraph: EG,
    parent: Option<usize>,
    children: Vec<usize>,
    untried: Vec<usize>,
    /// iterations from the input
    depth: usize,
    visits: f64,
    /// the sum of `ln(1 + cost)` over the rollouts through it
    score: f64,
    /// nothing left to search below it (at a limit, or every action tried and exhausted)
    exhausted: bool,
}

/// A seed for the `k`th random stream of a search, distinct from the sampling run's.
fn derive(seed: u64, k: usize) -> u64 {
    seed ^ (k as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Saturates `egraph` under `rules` by the sampling run and then, if it stopped at a limit, a
/// Monte Carlo tree search (module doc); returns the e-graph with the cheapest greedy
/// extraction found and the report of the run that built it (`iterations` counted from the
/// input, `time` the whole search's).
pub fn saturate(
    egraph: EG,
    roots: &[Id],
    rules: &[Rule],
    limits: &Limits,
    goal: Option<&dyn Fn(&EG) -> bool>,
) -> (EG, Report) {
    let start = Instant::now();
    let sampling = Limits {
        scheduler: Scheduler::Sampling,
        ..limits.clone()
    };
    let work = Work::default();
    let (first, report) = run_sampling(egraph.clone(), roots, rules, &sampling, goal, &work);
    let at_limit = report.stop == "node limit" || report.stop == "iteration limit";
    if !at_limit || first.analysis.conflicts > 0 || work.spent(limits.work) {
        return (first, report);
    }
    let actions = actions(rules, limits);
    let written = greedy_cost(&egraph, roots, &work);
    let c0 = greedy_cost(&first, roots, &work);
    let hi = if written.is_finite() {
        written.ln_1p()
    } else if c0.is_finite() {
        c0.ln_1p()
    } else {
        0.0
    };
    let score = |c: f64| if c.is_finite() { c.ln_1p() } else { hi };
    let mut lo = score(c0).min(hi);
    let mut best = (c0, first, report);
    let mut nodes = vec![Node {
        egraph,
        parent: None,
        children: Vec::new(),
        untried: (0..actions.len()).collect(),
        depth: 0,
        visits: 1.0,
        score: score(c0),
        exhausted: false,
    }];
    let mut rng = ChaCha8Rng::seed_from_u64(derive(limits.seed, usize::MAX));
    // the report of the run that built the result, marked with the search's size
    let finish = |eg: EG, r: Report, iterations: usize, rollouts: usize, late: bool| {
        let report = Report {
            iterations,
            time: start.elapsed(),
            work: work.get(),
            stop: format!(
                "{}, mcts {rollouts} rollouts{}",
                r.stop,
                if late { ", time limit" } else { "" }
            ),
            ..r
        };
        (eg, report)
    };
    let mut rollouts = 1;
    let mut late = false;
    for rollout in 0..ROLLOUTS {
        if work.spent(limits.work) || nodes[0].exhausted {
            break;
        }
        if start.elapsed() >= limits.time {
            late = true;
            break;
        }
        // selection: stop at a node with untried actions with probability EXPAND, else UCB1
        let mut n = 0;
        loop {
            let open: Vec<usize> = nodes[n]
                .children
                .iter()
                .copied()
                .filter(|&c| !nodes[c].exhausted)
                .collect();
            if !nodes[n].untried.is_empty() && (open.is_empty() || rng.gen_bool(EXPAND)) {
                break;
            }
            if open.is_empty() {
                break; // exhausted: marked below
            }
            let parent_visits = nodes[n].visits.max(1.0);
            let value = |c: usize| {
                let mean = nodes[c].score / nodes[c].visits;
                let reward = if hi - lo > 1e-12 {
                    ((hi - mean) / (hi - lo)).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                reward + EXPLORATION * (parent_visits.ln() / nodes[c].visits).sqrt()
            };
            n = open
                .iter()
                .copied()
                .max_by(|&a, &b| value(a).total_cmp(&value(b)).then(b.cmp(&a)))
                .expect("open is not empty");
        }
        if nodes[n].untried.is_empty() {
            mark_exhausted(&mut nodes, n);
            continue;
        }
        // expansion: one iteration of the next untried action
        let a = nodes[n].untried.remove(0);
        let depth = nodes[n].depth + 1;
        let step = Limits {
            iters: 1,
            time: limits.time.saturating_sub(start.elapsed()),
            matches_per_rule: actions[a].matches_per_rule,
            seed: derive(limits.seed, 2 * rollout),
            ..sampling.clone()
        };
        let (eg, rep) = run_sampling(
            nodes[n].egraph.clone(),
            roots,
            &actions[a].rules,
            &step,
            goal,
            &work,
        );
        if eg.analysis.conflicts > 0 || rep.stop == "goal reached" {
            return finish(eg, rep, depth, rollouts, false);
        }
        let unchanged = (eg.total_number_of_nodes(), eg.number_of_classes())
            == (
                nodes[n].egraph.total_number_of_nodes(),
                nodes[n].egraph.number_of_classes(),
            );
        if unchanged {
            if nodes[n].untried.is_empty() && nodes[n].children.iter().all(|&c| nodes[c].exhausted)
            {
                mark_exhausted(&mut nodes, n);
            }
            continue;
        }
        let at_limit = rep.stop != "iteration limit" || depth >= limits.iters;
        let child = nodes.len();
        nodes[n].children.push(child);
        nodes.push(Node {
            egraph: eg,
            parent: Some(n),
            children: Vec::new(),
            untried: if at_limit {
                Vec::new()
            } else {
                (0..actions.len()).collect()
            },
            depth,
            visits: 0.0,
            score: 0.0,
            exhausted: false,
        });
        rollouts += 1;
        // rollout: the sampling run of the node's action from the new node, costed by the
        // greedy extractor
        let (eg, rep, iterations) = if at_limit {
            (nodes[child].egraph.clone(), rep, depth)
        } else {
            let roll = Limits {
                iters: limits.iters - depth,
                time: limits.time.saturating_sub(start.elapsed()),
                matches_per_rule: actions[a].matches_per_rule,
                seed: derive(limits.seed, 2 * rollout + 1),
                ..sampling.clone()
            };
            let (eg, rep) = run_sampling(
                nodes[child].egraph.clone(),
                roots,
                &actions[a].rules,
                &roll,
                goal,
                &work,
            );
            let iterations = depth + rep.iterations;
            (eg, rep, iterations)
        };
        if eg.analysis.conflicts > 0 || rep.stop == "goal reached" {
            return finish(eg, rep, iterations, rollouts, false);
        }
        let c = greedy_cost(&eg, roots, &work);
        lo = lo.min(score(c));
        let mut m = Some(child);
        while let Some(k) = m {
            nodes[k].visits += 1.0;
            nodes[k].score += score(c);
            m = nodes[k].parent;
        }
        if at_limit {
            mark_exhausted(&mut nodes, child);
        }
        if c < best.0 {
            best = (c, eg, Report { iterations, ..rep });
        }
    }
    let (_, eg, rep) = best;
    let iterations = rep.iterations;
    finish(eg, rep, iterations, rollouts, late)
}

/// Marks `n` exhausted, and each ancestor whose actions are all tried and whose children are
/// all exhausted.
fn mark_exhausted(nodes: &mut [Node], n: usize) {
    nodes[n].exhausted = true;
    let mut m = nodes[n].parent;
    while let Some(k) = m {
        if !nodes[k].untried.is_empty() || nodes[k].children.iter().any(|&c| !nodes[c].exhausted) {
            break;
        }
        nodes[k].exhausted = true;
        m = nodes[k].parent;
    }
}
