//! Saturation: egg's `Runner` under iteration, node and time limits, with a scheduler that
//! samples at most K matches per rule per iteration with a seeded RNG (paper 3.1, "Dealing
//! with Expansive Rules"). An iteration that dropped matches never counts as saturated.
//! [`Limits::scheduler`] chooses between that run ([`Scheduler::Sampling`]) and a Monte Carlo
//! tree search over rule applications that starts from it ([`Scheduler::Mcts`], in
//! `super::mcts`).

use super::rules::Rule;
use crate::analysis::{Context, EG};
use crate::ir::Ir;
use egg::{Id, RecExpr, Runner, SearchMatches, StopReason};
use rand::seq::index::sample;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::{Duration, Instant};

/// Limits and sampling of one saturation run.
#[derive(Clone, Debug)]
pub struct Limits {
    /// iterations
    pub iters: usize,
    /// e-nodes
    pub nodes: usize,
    /// wall time
    pub time: Duration,
    /// matches applied per rule per iteration (0: all)
    pub matches_per_rule: usize,
    /// sampling seed
    pub seed: u64,
    /// how rewrites are scheduled
    pub scheduler: Scheduler,
}

/// How saturation chooses the rewrites it applies (`SPORES_SCHEDULER`, `--scheduler`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scheduler {
    /// one run of all rules, at most K sampled matches per rule per iteration
    #[default]
    Sampling,
    /// the sampling run first; when it stops at the node (or iteration) limit, a Monte Carlo
    /// tree search over which rules the next iteration applies, each rollout costed by the
    /// DAG-aware greedy extractor; the cheapest e-graph found is returned (`super::mcts`)
    Mcts,
}

impl Scheduler {
    /// The names accepted by `SPORES_SCHEDULER` and `--scheduler`.
    pub const NAMES: &'static [&'static str] = &["sampling", "mcts"];

    /// The scheduler called `name`, or an error listing the names.
    pub fn parse(name: &str) -> Result<Scheduler, String> {
        match name.trim() {
            "sampling" => Ok(Scheduler::Sampling),
            "mcts" => Ok(Scheduler::Mcts),
            other => Err(format!(
                "unknown scheduler '{other}' (expected {})",
                Scheduler::NAMES.join(" or ")
            )),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Scheduler::Sampling => "sampling",
            Scheduler::Mcts => "mcts",
        }
    }
}

impl Limits {
    /// The built-in limits, overridden by `SPORES_ITER_LIMIT`, `SPORES_NODE_LIMIT`,
    /// `SPORES_TIME_LIMIT` (seconds), `SPORES_MATCH_LIMIT` and `SPORES_SCHEDULER`
    /// (`sampling` or `mcts`); a value that is not a non-negative number (a whole one for the
    /// counts) or not a scheduler's name is an error naming the variable.
    pub fn from_env() -> Result<Limits, String> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let count = |k: &str, d: usize| -> Result<usize, String> {
            match var(k) {
                None => Ok(d),
                Some(v) => v
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| format!("{k}={v}: expected a whole non-negative number")),
            }
        };
        let time = match var("SPORES_TIME_LIMIT") {
            None => Duration::from_secs(1),
            Some(v) => v
                .trim()
                .parse::<f64>()
                .map_err(|_| format!("SPORES_TIME_LIMIT={v}: expected seconds"))
                .and_then(seconds)
                .map_err(|e| format!("SPORES_TIME_LIMIT={v}: {e}"))?,
        };
        let scheduler = match var("SPORES_SCHEDULER") {
            None => Scheduler::default(),
            Some(v) => Scheduler::parse(&v).map_err(|e| format!("SPORES_SCHEDULER={v}: {e}"))?,
        };
        Ok(Limits {
            iters: count("SPORES_ITER_LIMIT", 30)?,
            nodes: count("SPORES_NODE_LIMIT", 20_000)?,
            time,
            matches_per_rule: count("SPORES_MATCH_LIMIT", 200)?,
            seed: 7,
            scheduler,
        })
    }
}

/// A number of seconds as a duration: finite, non-negative and at most a year.
pub fn seconds(v: f64) -> Result<Duration, String> {
    if !(0.0..=365.0 * 86400.0).contains(&v) {
        return Err(format!(
            "{v} is not a time limit (seconds, from 0 to one year)"
        ));
    }
    Ok(Duration::from_secs_f64(v))
}

impl Default for Limits {
    /// [`Limits::from_env`], or the built-in limits when the environment is invalid (the
    /// command line rejects an invalid environment at start-up).
    fn default() -> Limits {
        Limits::from_env().unwrap_or(Limits {
            iters: 30,
            nodes: 20_000,
            time: Duration::from_secs(1),
            matches_per_rule: 200,
            seed: 7,
            scheduler: Scheduler::default(),
        })
    }
}

/// What a saturation run did.
#[derive(Clone, Debug)]
pub struct Report {
    /// iterations run
    pub iterations: usize,
    /// e-nodes at the end
    pub nodes: usize,
    /// e-classes at the end
    pub classes: usize,
    /// wall time
    pub time: Duration,
    /// why it stopped: "saturated", "iteration limit", "node limit", "time limit", "goal reached"
    pub stop: String,
}

/// Samples at most `limit` matches per rule per iteration.
struct Sampler {
    limit: usize,
    rng: ChaCha8Rng,
    iteration: usize,
    dropped: bool,
}

impl egg::RewriteScheduler<Ir, Context> for Sampler {
    fn can_stop(&mut self, iteration: usize) -> bool {
        !(self.iteration == iteration && self.dropped)
    }

    fn search_rewrite<'a>(
        &mut self,
        iteration: usize,
        egraph: &EG,
        rewrite: &'a Rule,
    ) -> Vec<SearchMatches<'a, Ir>> {
        if iteration != self.iteration {
            self.iteration = iteration;
            self.dropped = false;
        }
        // a class with a known constant is never rewritten (analysis module doc: rules are
        // identities of real arithmetic; the constant is the plan)
        // e-matching itself is bounded (egg stops a search at the limit): on e-graphs with
        // huge classes one search could otherwise run for seconds past the time limit
        let cap = if self.limit == 0 {
            usize::MAX
        } else {
            self.limit.saturating_mul(50)
        };
        let mut matches = rewrite.search_with_limit(egraph, cap);
        matches.retain(|m| {
            let d = &egraph[m.eclass].data;
            d.konst.is_none() || !d.kind.is_scalar()
        });
        let total: usize = matches.iter().map(|m| m.substs.len()).sum();
        if self.limit == 0 || total <= self.limit {
            return matches;
        }
        self.dropped = true;
        let mut keep = sample(&mut self.rng, total, self.limit).into_vec();
        keep.sort_unstable();
        let mut out = Vec::new();
        let (mut base, mut k) = (0, 0);
        for m in matches {
            let n = m.substs.len();
            let mut substs = Vec::new();
            while k < keep.len() && keep[k] < base + n {
                substs.push(m.substs[keep[k] - base].clone());
                k += 1;
            }
            base += n;
            if !substs.is_empty() {
                out.push(SearchMatches {
                    eclass: m.eclass,
                    substs,
                    ast: m.ast,
                });
            }
        }
        out
    }
}

/// Ends saturation once two different constants were merged: the e-graph is then not
/// trusted (callers check [`Context::conflicts`]).
fn stop_on_conflict(r: &mut Runner<Ir, Context, ()>) -> Result<(), String> {
    if r.egraph.analysis.conflicts > 0 {
        Err(CONFLICT.to_string())
    } else {
        Ok(())
    }
}

/// The stop reason of a saturation that merged two different constants.
pub const CONFLICT: &str = "constant conflict";

/// Saturates `egraph` under `rules` with the scheduler of `limits`; stops early once `goal`
/// (if any) says so.
pub fn saturate(
    egraph: EG,
    roots: &[Id],
    rules: &[Rule],
    limits: &Limits,
    goal: Option<&dyn Fn(&EG) -> bool>,
) -> (EG, Report) {
    match limits.scheduler {
        Scheduler::Sampling => run_sampling(egraph, roots, rules, limits, goal),
        Scheduler::Mcts => super::mcts::saturate(egraph, roots, rules, limits, goal),
    }
}

/// [`saturate`] with the sampling scheduler, whatever `limits.scheduler` says.
pub fn run_sampling(
    egraph: EG,
    roots: &[Id],
    rules: &[Rule],
    limits: &Limits,
    goal: Option<&dyn Fn(&EG) -> bool>,
) -> (EG, Report) {
    let start = Instant::now();
    let sampler = Sampler {
        limit: limits.matches_per_rule,
        rng: ChaCha8Rng::seed_from_u64(limits.seed),
        iteration: usize::MAX,
        dropped: false,
    };
    let runner = match goal {
        None => {
            let mut r = Runner::default()
                .with_egraph(egraph)
                .with_iter_limit(limits.iters)
                .with_node_limit(limits.nodes)
                .with_time_limit(limits.time)
                .with_scheduler(sampler)
                .with_hook(stop_on_conflict);
            r.roots = roots.to_vec();
            r.run(rules)
        }
        Some(g) => {
            // one iteration at a time, so that reaching the goal ends the search
            let mut r = Runner::default().with_egraph(egraph);
            let mut iterations = 0;
            let mut stop = None;
            while iterations < limits.iters {
                let remaining = limits.time.saturating_sub(start.elapsed());
                r = Runner::default()
                    .with_egraph(r.egraph)
                    .with_iter_limit(1)
                    .with_node_limit(limits.nodes)
                    .with_time_limit(remaining)
                    .with_hook(stop_on_conflict)
                    .with_scheduler(Sampler {
                        limit: limits.matches_per_rule,
                        rng: ChaCha8Rng::seed_from_u64(limits.seed + iterations as u64),
                        iteration: usize::MAX,
                        dropped: false,
                    })
                    .run(rules);
                iterations += 1;
                let reason = r.stop_reason.clone();
                if g(&r.egraph) {
                    stop = Some("goal reached".to_string());
                    break;
                }
                match reason {
                    Some(StopReason::IterationLimit(_)) => {}
                    Some(other) => {
                        stop = Some(describe(&other));
                        break;
                    }
                    None => {}
                }
            }
            let report = Report {
                iterations,
                nodes: r.egraph.total_number_of_nodes(),
                classes: r.egraph.number_of_classes(),
                time: start.elapsed(),
                stop: stop.unwrap_or_else(|| "iteration limit".into()),
            };
            return (r.egraph, report);
        }
    };
    let report = Report {
        iterations: runner.iterations.len(),
        nodes: runner.egraph.total_number_of_nodes(),
        classes: runner.egraph.number_of_classes(),
        time: start.elapsed(),
        stop: runner
            .stop_reason
            .as_ref()
            .map_or("unknown".into(), describe),
    };
    (runner.egraph, report)
}

fn describe(r: &StopReason) -> String {
    match r {
        StopReason::Saturated => "saturated".into(),
        StopReason::IterationLimit(_) => "iteration limit".into(),
        StopReason::NodeLimit(_) => "node limit".into(),
        StopReason::TimeLimit(_) => "time limit".into(),
        StopReason::Other(s) => s.clone(),
    }
}

/// Adds an expression to a fresh e-graph with the given context; returns its root.
pub fn egraph_with(ctx: Context, expr: &RecExpr<Ir>) -> (EG, Id) {
    let mut eg = EG::new(ctx);
    let root = eg.add_expr(expr);
    eg.rebuild();
    (eg, root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use egg::RewriteScheduler;

    #[test]
    fn a_sampled_iteration_never_counts_as_saturated() {
        let mut ctx = Context::default();
        for v in ["A", "B", "C", "D"] {
            ctx.vars
                .insert(v.into(), crate::analysis::VarInfo::Scalar(None));
        }
        let e: RecExpr<Ir> = "(+ A (+ B (+ C D)))".parse().unwrap();
        let (eg, _) = egraph_with(ctx, &e);
        let rules = crate::saturate::all_rules().unwrap();
        let comm = rules
            .iter()
            .find(|r| r.name.as_str() == "union-comm")
            .unwrap();
        let mut s = Sampler {
            limit: 1,
            rng: ChaCha8Rng::seed_from_u64(1),
            iteration: usize::MAX,
            dropped: false,
        };
        let m = s.search_rewrite(0, &eg, comm);
        assert_eq!(m.iter().map(|x| x.substs.len()).sum::<usize>(), 1);
        assert!(!s.can_stop(0), "matches were dropped in iteration 0");
        let mut all = Sampler {
            limit: 0,
            rng: ChaCha8Rng::seed_from_u64(1),
            iteration: usize::MAX,
            dropped: false,
        };
        assert_eq!(
            all.search_rewrite(0, &eg, comm)
                .iter()
                .map(|x| x.substs.len())
                .sum::<usize>(),
            3
        );
        assert!(all.can_stop(0));
        // same seed, same sample
        let mut s2 = Sampler {
            limit: 1,
            rng: ChaCha8Rng::seed_from_u64(1),
            iteration: usize::MAX,
            dropped: false,
        };
        let m2 = s2.search_rewrite(0, &eg, comm);
        assert_eq!(m[0].eclass, m2[0].eclass);
    }
}
