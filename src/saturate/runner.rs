//! Saturation: egg's `Runner` under iteration, node and work limits, with a scheduler that
//! samples at most K matches per rule per iteration with a seeded RNG (paper 3.1, "Dealing
//! with Expansive Rules"). An iteration that dropped matches never counts as saturated.
//! [`Limits::scheduler`] chooses between that run ([`Scheduler::Sampling`]) and a Monte Carlo
//! tree search over rule applications that starts from it ([`Scheduler::Mcts`], in
//! `super::mcts`).
//!
//! Every limit that decides the plan counts work, so that the same block gives the same plan
//! on an idle and on a loaded machine: iterations, e-nodes, and [`Work`], the e-matching work
//! of the rule searches. The wall-clock limit stays as a safety net above them: when it ends a
//! run (reported as "time limit"), the e-graph is as valid as at any other limit, but which
//! one it is depends on the machine's speed and load.

use super::rules::Rule;
use crate::analysis::{Context, EG};
use crate::ir::Ir;
use egg::{
    ENodeOrVar, Id, Language, RecExpr, Runner, RunnerLimits, RunnerResult, SearchMatches,
    StopReason,
};
use rand::seq::index::sample;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Limits and sampling of one saturation run.
#[derive(Clone, Debug)]
pub struct Limits {
    /// iterations
    pub iters: usize,
    /// e-nodes
    pub nodes: usize,
    /// e-matching work (see [`Work`]): the budget that ends a run whose node and iteration
    /// limits are not reached, deterministic where a wall-clock limit is not (0: none)
    pub work: usize,
    /// wall time: a safety net above `work`, reported when it ends a run (the plan is then
    /// still valid, but depends on the machine's load)
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
    /// at most K sampled matches per rule per iteration; without a goal, the lowering rules
    /// alone for [`LOWERING_ITERS`] iterations first, then all rules
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
    /// `SPORES_WORK_LIMIT`, `SPORES_TIME_LIMIT` (seconds), `SPORES_MATCH_LIMIT` and
    /// `SPORES_SCHEDULER`
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
            None => TIME,
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
            work: count("SPORES_WORK_LIMIT", WORK)?,
            time,
            matches_per_rule: count("SPORES_MATCH_LIMIT", 200)?,
            seed: 7,
            scheduler,
        })
    }
}

/// The built-in work limit of [`Limits`] (`spores equiv`, and `spores opt`/`run` with
/// `SPORES_NODE_LIMIT`-style overrides): about a second of e-matching on an idle 2-core
/// machine of 2026 (the scheduler harness, examples/schedulers.rs, measures the rate).
pub const WORK: usize = 5_000_000;

/// The built-in wall-clock safety net of [`Limits`]: well above [`WORK`]'s time, so that it
/// only fires on a machine many times slower or busier than the one `WORK` was sized on.
pub const TIME: Duration = Duration::from_secs(10);

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
            work: WORK,
            time: TIME,
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
    /// the [`Work`] counted (by all the runs of the search, for mcts)
    pub work: usize,
    /// why it stopped: "saturated", "iteration limit", "node limit", "work limit", "time
    /// limit", "goal reached"
    pub stop: String,
}

/// The deterministic work of saturation, counted as rules are searched: a rule's search
/// costs the e-classes holding its pattern's root operator (the candidates e-matching
/// visits; all classes for a pattern without one) plus the matches it finds. A count shared
/// by the runs of one saturation (the iterations of a goal search, the runs of an mcts
/// search), which stop once it reaches [`Limits::work`].
#[derive(Clone, Debug, Default)]
pub struct Work(Rc<Cell<usize>>);

impl Work {
    /// The work counted so far.
    pub fn get(&self) -> usize {
        self.0.get()
    }

    /// Counts `n` more.
    pub fn add(&self, n: usize) {
        self.0.set(self.0.get().saturating_add(n));
    }

    /// Whether `limit` (0: none) is reached.
    pub fn spent(&self, limit: usize) -> bool {
        limit > 0 && self.get() >= limit
    }
}

/// The stop reason of a run that used up its [`Limits::work`].
pub const WORK_LIMIT: &str = "work limit";

/// Samples at most `limit` matches per rule per iteration, counting [`Work`].
struct Sampler {
    limit: usize,
    rng: ChaCha8Rng,
    iteration: usize,
    dropped: bool,
    work: Work,
    work_limit: usize,
}

impl Sampler {
    fn new(limits: &Limits, seed: u64, work: &Work) -> Sampler {
        Sampler {
            limit: limits.matches_per_rule,
            rng: ChaCha8Rng::seed_from_u64(seed),
            iteration: usize::MAX,
            dropped: false,
            work: work.clone(),
            work_limit: limits.work,
        }
    }
}

impl egg::RewriteScheduler<Ir, Context> for Sampler {
    fn can_stop(&mut self, iteration: usize) -> bool {
        !(self.iteration == iteration && self.dropped)
    }

    /// Searches the rules in order while work is left: once it is used up, the matches found
    /// so far are applied and the run ends before its next iteration (as "work limit").
    fn search_rewrites<'a>(
        &mut self,
        iteration: usize,
        egraph: &EG,
        rewrites: &[&'a Rule],
        limits: &RunnerLimits,
    ) -> RunnerResult<Vec<Vec<SearchMatches<'a, Ir>>>> {
        if self.work.spent(self.work_limit) {
            return Err(StopReason::Other(WORK_LIMIT.into()));
        }
        let mut out = Vec::with_capacity(rewrites.len());
        for rw in rewrites {
            if self.work.spent(self.work_limit) {
                // the rules not searched count as dropped matches: not saturated
                self.dropped = true;
                break;
            }
            out.push(self.search_rewrite(iteration, egraph, rw));
            limits.check_limits(iteration, egraph)?;
        }
        Ok(out)
    }

    fn search_rewrite<'a>(
        &mut self,
        iteration: usize,
        egraph: &EG,
        rewrite: &'a Rule,
    ) -> Vec<SearchMatches<'a, Ir>> {
        let f = search_one(egraph, rewrite, self.cap());
        self.take(iteration, egraph, f)
    }
}

/// One rule's search: its matches and the candidate classes it visited.
struct Found<'a> {
    matches: Vec<SearchMatches<'a, Ir>>,
    candidates: usize,
}

/// Searches one rule (at most `cap` matches; egg stops a search at the limit: on e-graphs
/// with huge classes one search could otherwise run for seconds past the time limit). A
/// pattern with an operator no class holds has no match: its search is skipped (it costs
/// the same work, so that the work limit ends a run where it always did).
fn search_one<'a>(egraph: &EG, rewrite: &'a Rule, cap: usize) -> Found<'a> {
    let pattern = rewrite.searcher.get_pattern_ast();
    let absent = pattern.is_some_and(|p| {
        p.as_ref().iter().any(|n| match n {
            ENodeOrVar::ENode(n) => egraph
                .classes_for_op(&n.discriminant())
                .is_none_or(|c| c.len() == 0),
            ENodeOrVar::Var(_) => false,
        })
    });
    let matches = if absent {
        Vec::new()
    } else {
        rewrite.search_with_limit(egraph, cap)
    };
    let candidates = match pattern.and_then(|p| p.as_ref().last()) {
        Some(ENodeOrVar::ENode(n)) => egraph
            .classes_for_op(&n.discriminant())
            .map_or(0, |c| c.len()),
        _ => egraph.number_of_classes(),
    };
    Found {
        matches,
        candidates,
    }
}

impl Sampler {
    /// The most matches one search returns.
    fn cap(&self) -> usize {
        if self.limit == 0 {
            usize::MAX
        } else {
            self.limit.saturating_mul(50)
        }
    }

    /// Counts a search's work and keeps a sample of its matches.
    fn take<'a>(
        &mut self,
        iteration: usize,
        egraph: &EG,
        found: Found<'a>,
    ) -> Vec<SearchMatches<'a, Ir>> {
        if iteration != self.iteration {
            self.iteration = iteration;
            self.dropped = false;
        }
        let Found {
            mut matches,
            candidates,
        } = found;
        let found: usize = matches.iter().map(|m| m.substs.len()).sum();
        self.work.add(candidates + found);
        // a class with a known constant is never rewritten (analysis module doc: rules are
        // identities of real arithmetic; the constant is the plan)
        matches.retain(|m| {
            let d = &egraph[m.eclass].data;
            (d.konst.is_none() && !d.unfolded) || !d.kind.is_scalar()
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
        Scheduler::Sampling if goal.is_none() => run_phased(egraph, roots, rules, limits),
        Scheduler::Sampling => run_sampling(egraph, roots, rules, limits, goal, &Work::default()),
        Scheduler::Mcts => super::mcts::saturate(egraph, roots, rules, limits, goal),
    }
}

/// The iterations of the first phase of a sampling saturation without a goal: only the
/// [`super::rules::lowering`] rules, so that the relational forms of a block (where the
/// aggregates move past joins and reorder) are built before the raising back to LA and the
/// LA rules multiply every node. Counted in [`Limits::iters`]; the work and node limits hold
/// for both phases. (With one phase, `sum(X * (U %*% t(V)))` reaches a sum of a thin product,
/// `sum(V * (t(X) %*% U))`, only past 6000 nodes, the run-time limit; lowering first, it
/// reaches `sum(U * (X %*% V))` within it: docs/floor.md, seventh run.)
pub const LOWERING_ITERS: usize = 3;

/// Sampling saturation in two phases: [`LOWERING_ITERS`] iterations of the lowering rules,
/// then every rule for the iterations left. The report covers both.
fn run_phased(egraph: EG, roots: &[Id], rules: &[Rule], limits: &Limits) -> (EG, Report) {
    let first: Vec<Rule> = rules
        .iter()
        .filter(|r| super::rules::lowering(r.name.as_str()))
        .cloned()
        .collect();
    let work = Work::default();
    if first.len() == rules.len() || first.is_empty() || limits.iters <= LOWERING_ITERS {
        return run_sampling(egraph, roots, rules, limits, None, &work);
    }
    let start = Instant::now();
    let phase = Limits {
        iters: LOWERING_ITERS,
        ..limits.clone()
    };
    let (egraph, one) = run_sampling(egraph, roots, &first, &phase, None, &work);
    // a phase that ended at a limit other than its iterations ends the run
    if one.stop != "iteration limit" && one.stop != "saturated" {
        return (egraph, one);
    }
    let rest = Limits {
        iters: limits.iters - one.iterations,
        time: limits.time.saturating_sub(start.elapsed()),
        ..limits.clone()
    };
    let (egraph, two) = run_sampling(egraph, roots, rules, &rest, None, &work);
    let report = Report {
        iterations: one.iterations + two.iterations,
        time: start.elapsed(),
        ..two
    };
    (egraph, report)
}

/// [`saturate`] with the sampling scheduler, whatever `limits.scheduler` says, counting its
/// work on `work` (which may hold the work of earlier runs: the run stops when the total
/// reaches `limits.work`).
pub fn run_sampling(
    egraph: EG,
    roots: &[Id],
    rules: &[Rule],
    limits: &Limits,
    goal: Option<&dyn Fn(&EG) -> bool>,
    work: &Work,
) -> (EG, Report) {
    let start = Instant::now();
    let runner = match goal {
        None => {
            let mut r = Runner::default()
                .with_egraph(egraph)
                .with_iter_limit(limits.iters)
                .with_node_limit(limits.nodes)
                .with_time_limit(limits.time)
                .with_scheduler(Sampler::new(limits, limits.seed, work))
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
                    .with_scheduler(Sampler::new(limits, limits.seed + iterations as u64, work))
                    .run(rules);
                iterations += 1;
                let reason = r.stop_reason.clone();
                if g(&r.egraph) {
                    stop = Some("goal reached".to_string());
                    break;
                }
                match reason {
                    Some(StopReason::IterationLimit(_)) if !work.spent(limits.work) => {}
                    Some(StopReason::IterationLimit(_)) => {
                        stop = Some(WORK_LIMIT.to_string());
                        break;
                    }
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
                work: work.get(),
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
        work: work.get(),
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
        let mut s = Sampler::new(
            &Limits {
                matches_per_rule: 1,
                ..Limits::default()
            },
            1,
            &Work::default(),
        );
        let m = s.search_rewrite(0, &eg, comm);
        assert_eq!(m.iter().map(|x| x.substs.len()).sum::<usize>(), 1);
        assert!(!s.can_stop(0), "matches were dropped in iteration 0");
        let mut all = Sampler::new(
            &Limits {
                matches_per_rule: 0,
                ..Limits::default()
            },
            1,
            &Work::default(),
        );
        assert_eq!(
            all.search_rewrite(0, &eg, comm)
                .iter()
                .map(|x| x.substs.len())
                .sum::<usize>(),
            3
        );
        assert!(all.can_stop(0));
        // same seed, same sample
        let mut s2 = Sampler::new(
            &Limits {
                matches_per_rule: 1,
                ..Limits::default()
            },
            1,
            &Work::default(),
        );
        let m2 = s2.search_rewrite(0, &eg, comm);
        assert_eq!(m[0].eclass, m2[0].eclass);
    }
}
