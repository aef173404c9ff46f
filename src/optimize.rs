//! Run-time optimization: each run of assignments of a basic block (a [`segment`]) is
//! optimized right before it runs, with the actual shapes and
//! non-zero counts of its inputs, and the plan is cached per (block, first statement, input
//! shapes, non-zero bucket) so a loop body compiles once.
//!
//! Compiling a run: its statements are one term with a root per assigned variable; saturate
//! under the rule files, extract all roots at once (ILP on small e-graphs, DAG-aware greedy
//! otherwise), and keep the plan only if its estimated DAG cost is below the statements as
//! written. Scalars are inputs without a value (except the sizes of `matrix(...)`), so one
//! plan serves every iteration.
//!
//! Compiling costs milliseconds (saturation and extraction: 10-30 ms for a typical block), so
//! with a compile budget ([`Optimizer::compile_budget`]) a run of statements is compiled only
//! once it has earned it, a ski-rental rule: until the estimated cost of the statements as
//! written, summed over their runs with the same cache key, reaches the budget, they run as
//! written (the cheap part of compiling, loading the term and costing it, is done once per
//! key). A statement that costs more than the budget compiles on its first run, as it always
//! did; a scalar or vector statement in a loop compiles after enough runs to pay for it, or
//! never; and whichever happens, the time lost to the rule is at most the budget per key
//! beyond what the best plan would have saved. The rule reads estimates and run counts only,
//! never a clock, so the same program and inputs still get the same plans.

pub mod segment;

use crate::analysis::{Context, VarInfo, EG};
use crate::extract::{self, ExGraph, Extraction, Extractor, Options};
use crate::ir::Ir;
use crate::saturate::{saturate, Limits, Report, Rule};
use egg::{Id, Language, RecExpr, Symbol};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a statement's input is at run time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Input {
    /// a matrix with its shape and exact non-zeros
    Matrix {
        /// rows
        rows: usize,
        /// columns
        cols: usize,
        /// non-zeros
        nnz: usize,
        /// whether every value is finite (scanned at run time: rules of sums of products need it)
        finite: bool,
    },
    /// a scalar; its value is part of the plan only where the plan needs it (the size of a
    /// `matrix(v, rows, cols)`), and then it is part of the cache key
    Scalar(Option<f64>),
    /// a finite scalar whose value the plan does not depend on
    FiniteScalar,
}

/// A compiled block: one term with a root per output.
#[derive(Clone, Debug)]
pub struct Plan {
    /// the plan to run
    pub expr: RecExpr<Ir>,
    /// the outputs, in the order of the roots given to [`compile`]
    pub roots: Vec<Id>,
    /// its estimated cost
    pub cost: f64,
    /// the estimated cost of the statement as written
    pub written_cost: f64,
    /// what the analysis estimated for each node of `expr` (same index), for `--explain`
    pub notes: Vec<Note>,
    /// for each node of `expr` (same index): a `sum` the plan makes over a matrix the
    /// statements never form (its operand's e-class holds none of their nodes, inputs
    /// included: `sum(U * (X %*% V))` for the written `sum(X * (U %*% t(V)))`), whose order of
    /// addition the program does not fix, so it may run in the parallel sum's blocks at any
    /// size (`kernels::aggregate::sum_any_order`). Every other sum keeps SystemDS's order:
    /// the statements' own, and those that SystemDS's own rewrites make over their values
    /// (`sum(X + Y)` as `sum(X) + sum(Y)`, `sum(3 * X)` as `3 * sum(X)`, `sum(t(X))` as
    /// `sum(X)`)
    pub unordered: Vec<bool>,
    /// with [`compile_with`]'s `why`, each output's derivation from the statements as written
    /// (one rewrite step per line)
    pub why: Vec<Vec<String>>,
}

/// The analysis's estimates for one node of a plan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Note {
    /// `(rows, cols)` of a matrix, `None` for a scalar
    pub shape: Option<(usize, usize)>,
    /// estimated non-zeros
    pub nnz: f64,
    /// estimated cost of the node itself (without its children)
    pub cost: f64,
}

/// Compile-time statistics of one compilation.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// the block
    pub block: usize,
    /// saturation time
    pub saturation: Duration,
    /// extraction time
    pub extraction: Duration,
    /// the saturation report
    pub report: Report,
    /// the estimated cost of the statement as written
    pub written_cost: f64,
    /// why the saturated e-graph could not be written, when it was asked for
    pub dump_error: Option<String>,
    /// the extraction's proven relative gap to the optimum under the cost model (0: proven
    /// optimal), `None` when nothing is proven
    pub gap: Option<f64>,
    /// the extractor that chose the plan (empty when extraction did not run)
    pub extractor: &'static str,
    /// the limits saturation ran under
    pub limits: Limits,
    /// the analysis's estimates of each root after saturation (whether or not a plan is
    /// kept), in the order of the roots
    pub root_notes: Vec<Note>,
}

impl Compiled {
    /// "proven optimal", "within N% of optimal" or "not proven optimal", for `--explain`.
    pub fn optimality(&self) -> String {
        match self.gap {
            Some(g) if g <= 1e-9 => "proven optimal".into(),
            Some(g) => format!("within {:.2}% of optimal", 100.0 * g),
            None => "not proven optimal".into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    block: usize,
    stmt: usize,
    inputs: Vec<(String, KeyInput)>,
}

/// A compilation's arguments, exactly: the same term with the same roots and inputs (shapes,
/// non-zeros, scalar values) compiles to the same plan in any block.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Exact {
    term: RecExpr<Ir>,
    roots: Vec<Id>,
    inputs: Vec<(String, ExactInput)>,
}

/// An input of [`Exact`]: a matrix's shape, non-zeros and finiteness, or a scalar's bits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ExactInput {
    Matrix(usize, usize, usize, bool),
    Scalar(Option<u64>),
    FiniteScalar,
}

impl Exact {
    fn new(term: &RecExpr<Ir>, roots: &[Id], inputs: &[(String, Input)]) -> Exact {
        Exact {
            term: term.clone(),
            roots: roots.to_vec(),
            inputs: inputs
                .iter()
                .map(|(n, i)| {
                    let k = match *i {
                        Input::Matrix {
                            rows,
                            cols,
                            nnz,
                            finite,
                        } => ExactInput::Matrix(rows, cols, nnz, finite),
                        Input::Scalar(v) => ExactInput::Scalar(v.map(f64::to_bits)),
                        Input::FiniteScalar => ExactInput::FiniteScalar,
                    };
                    (n.clone(), k)
                })
                .collect(),
        }
    }
}

/// An input as far as the plan depends on it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum KeyInput {
    /// shape, whether it has no non-zeros (an all-zero input is folded as a constant) and
    /// whether every value is finite; the count of non-zeros, which only the cost model reads,
    /// is matched by [`NNZ_REUSE`] instead
    Matrix(usize, usize, bool, bool),
    /// a scalar, with the bits of its value when the plan depends on it
    Scalar(Option<u64>),
    /// a finite scalar
    FiniteScalar,
}

/// What the optimizer decided for a run of statements.
#[derive(Clone, Debug)]
pub enum Planned {
    /// run this plan
    Plan(Arc<Plan>),
    /// the lowered term is well-formed but no plan is cheaper: run it as lowered
    AsWritten,
    /// the term cannot be planned (for example, shapes that do not match, which the
    /// statements as written report with a diagnostic): run the statements themselves
    Unplanned,
}

/// The run-time optimizer with its plan cache.
pub struct Optimizer {
    rules: Vec<Rule>,
    /// saturation limits per statement
    pub limits: Limits,
    /// extraction settings
    pub extract: Options,
    /// per key, the plans compiled for it with the non-zeros of their matrix inputs
    cache: HashMap<Key, Vec<(Vec<usize>, Planned)>>,
    /// every plan compiled, by its exact arguments: another block (or another statement of
    /// the same block) with the same statements and inputs reuses it instead of compiling
    /// again (compilation is deterministic, so the plan is the one it would have compiled)
    exact: HashMap<Exact, Planned>,
    /// one entry per compilation
    pub compiled: Vec<Compiled>,
    /// plans taken from the compilation of exactly the same statements and inputs elsewhere
    /// (another block, or another statement of the block) instead of compiling again
    pub reused: usize,
    /// when set, every block compiled is also appended here (for measurements: the
    /// scheduler harness, examples/schedulers.rs)
    pub record: Option<Arc<std::sync::Mutex<Vec<Recorded>>>>,
    /// the compile budget (estimated nanoseconds, see the module doc): a key whose
    /// statements as written have cost less than this over their runs so far runs as
    /// written, uncompiled; 0 compiles every key on its first run
    pub compile_budget: f64,
    /// per key not compiled yet: the non-zeros its as-written estimate was made for, that
    /// estimate, and the estimates of its runs so far
    cold: HashMap<Key, Cold>,
    /// runs of statements answered as written under the compile budget
    pub cold_runs: u64,
}

/// A cache key that has run as written under the compile budget.
#[derive(Clone, Debug)]
struct Cold {
    /// the non-zeros of its matrix inputs when `written` was estimated
    nnz: Vec<usize>,
    /// the estimated cost of one run as written
    written: f64,
    /// the estimated cost of its runs so far
    spent: f64,
}

/// The compile budget of `spores run` (`--compile-budget`), in milliseconds of estimated
/// cost: about a compilation's time (the median compilation of the benchmark programs takes
/// 10-30 ms), so that no key loses more than that to running as written (the ski-rental rule
/// of the module doc).
pub const DEFAULT_COMPILE_BUDGET_MS: f64 = 10.0;

/// A block as the optimizer compiled it: what [`compile`] was given.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// the block
    pub block: usize,
    /// its term, with one root per output
    pub term: RecExpr<Ir>,
    /// the outputs
    pub roots: Vec<Id>,
    /// the inputs
    pub inputs: Vec<(String, Input)>,
    /// the saturation limits it was compiled under
    pub limits: Limits,
}

impl Optimizer {
    /// An optimizer with the built-in rules and limits sized for run-time compilation (12
    /// iterations, 6000 nodes, [`RUN_TIME_WORK`] per statement, a 1 s safety net), each
    /// overridden by its `SPORES_*_LIMIT` variable when that is set (see
    /// [`Limits::from_env`]).
    pub fn new() -> Result<Optimizer, crate::saturate::RuleError> {
        Ok(Optimizer {
            rules: crate::saturate::all_rules()?,
            limits: run_time_limits(),
            extract: Options {
                time_limit: Duration::from_millis(500),
                ..Options::default()
            },
            cache: HashMap::new(),
            exact: HashMap::new(),
            compiled: Vec::new(),
            reused: 0,
            record: None,
            compile_budget: 0.0,
            cold: HashMap::new(),
            cold_runs: 0,
        })
    }

    /// Keeps only the rules whose names `keep` accepts (and empties the cache).
    pub fn retain_rules(&mut self, keep: impl Fn(&str) -> bool) {
        self.rules.retain(|r| keep(r.name.as_str()));
        self.cache.clear();
        self.exact.clear();
        self.cold.clear();
    }

    /// An optimizer with the same rules, limits and extraction settings, and an empty cache.
    pub fn clone_settings(&self) -> Optimizer {
        Optimizer {
            rules: self.rules.clone(),
            limits: self.limits.clone(),
            extract: self.extract.clone(),
            cache: HashMap::new(),
            exact: HashMap::new(),
            compiled: Vec::new(),
            reused: 0,
            record: None,
            compile_budget: self.compile_budget,
            cold: HashMap::new(),
            cold_runs: 0,
        }
    }

    /// Compiles a segment (one root per output) without the cache: the limits grow with
    /// the number of outputs; with `dump`, the saturated e-graph is written there; with
    /// `why`, the plan carries its derivation.
    pub fn compile_segment(
        &self,
        term: &RecExpr<Ir>,
        roots: &[Id],
        inputs: &[(String, Input)],
        dump: Option<&std::path::Path>,
        why: bool,
    ) -> (Option<Plan>, Compiled) {
        let limits = self.limits_for(roots.len());
        compile_with(
            term,
            roots,
            inputs,
            &self.rules,
            &limits,
            &self.extract,
            dump,
            why,
        )
    }

    /// The limits of a segment with `outputs` outputs: a block of several statements gets
    /// more nodes (40% of a statement's budget per extra output, up to four), so that each
    /// statement's rewrites are still reached, and more work and time (one statement's per
    /// extra output).
    pub fn limits_for(&self, outputs: usize) -> Limits {
        let extra = outputs.clamp(1, 4) - 1;
        Limits {
            nodes: self.limits.nodes + self.limits.nodes * 2 * extra / 5,
            work: self.limits.work * (1 + extra),
            time: self.limits.time * (1 + extra as u32),
            ..self.limits.clone()
        }
    }

    /// The plan for the statements of `block` starting at `stmt`, lowered into `term` with
    /// one root per output, given these inputs.
    pub fn plan(
        &mut self,
        block: usize,
        stmt: usize,
        term: &RecExpr<Ir>,
        roots: &[Id],
        inputs: &[(String, Input)],
    ) -> Planned {
        let key = Key {
            block,
            stmt,
            inputs: inputs
                .iter()
                .map(|(n, i)| {
                    let k = match i {
                        Input::Matrix {
                            rows,
                            cols,
                            nnz,
                            finite,
                        } => KeyInput::Matrix(*rows, *cols, *nnz == 0, *finite),
                        Input::Scalar(v) => KeyInput::Scalar(v.map(f64::to_bits)),
                        Input::FiniteScalar => KeyInput::FiniteScalar,
                    };
                    (n.clone(), k)
                })
                .collect(),
        };
        let nnz: Vec<usize> = inputs
            .iter()
            .filter_map(|(_, i)| match i {
                Input::Matrix { nnz, .. } => Some(*nnz),
                _ => None,
            })
            .collect();
        let near = |a: usize, b: usize| a.max(b) <= a.min(b).saturating_mul(NNZ_REUSE);
        if let Some((_, p)) = self.cache.get(&key).and_then(|plans| {
            plans
                .iter()
                .find(|(at, _)| at.iter().zip(&nnz).all(|(&a, &b)| near(a, b)))
        }) {
            return p.clone();
        }
        let exact = Exact::new(term, roots, inputs);
        if let Some(p) = self.exact.get(&exact) {
            let p = p.clone();
            self.reused += 1;
            self.cache.entry(key).or_default().push((nnz, p.clone()));
            return p;
        }
        if self.compile_budget > 0.0 {
            let cold = match self.cold.get_mut(&key) {
                Some(c) if c.nnz.iter().zip(&nnz).all(|(&a, &b)| near(a, b)) => c,
                _ => {
                    let written = written_cost(term, roots, inputs);
                    self.cold.insert(
                        key.clone(),
                        Cold {
                            nnz: nnz.clone(),
                            written,
                            spent: 0.0,
                        },
                    );
                    self.cold.get_mut(&key).expect("just inserted")
                }
            };
            // a term that cannot be costed as written is compiled (and most likely
            // reported unplanned) at once
            if cold.written.is_finite() && cold.spent + cold.written < self.compile_budget {
                cold.spent += cold.written;
                self.cold_runs += 1;
                return Planned::AsWritten;
            }
            self.cold.remove(&key);
        }
        let limits = self.limits_for(roots.len());
        if let Some(r) = &self.record {
            if let Ok(mut r) = r.lock() {
                r.push(Recorded {
                    block,
                    term: term.clone(),
                    roots: roots.to_vec(),
                    inputs: inputs.to_vec(),
                    limits,
                });
            }
        }
        let (plan, stats) = self.compile_segment(term, roots, inputs, None, false);
        let planned = match plan {
            Some(p) => Planned::Plan(Arc::new(p)),
            None if stats.written_cost.is_finite() => Planned::AsWritten,
            None => Planned::Unplanned,
        };
        self.compiled.push(Compiled { block, ..stats });
        self.cache
            .entry(key)
            .or_default()
            .push((nnz, planned.clone()));
        self.exact.insert(exact, planned.clone());
        planned
    }
}

/// The work limit of a statement at run time: about 0.1 s of e-matching on an idle 2-core
/// machine of 2026 (examples/schedulers.rs measures the rate).
pub const RUN_TIME_WORK: usize = 500_000;

/// The run-time limits: 12 iterations, 6000 nodes, [`RUN_TIME_WORK`] and a 1 s safety net
/// per statement unless the environment sets them (`SPORES_ITER_LIMIT`, ...: see
/// [`Limits::from_env`]).
/// Whether the environment sets the limit variable `k` (an empty value counts as unset).
pub fn limit_set(k: &str) -> bool {
    std::env::var(k).is_ok_and(|v| !v.trim().is_empty())
}

fn run_time_limits() -> Limits {
    let set = limit_set;
    let env = Limits::default();
    Limits {
        iters: if set("SPORES_ITER_LIMIT") {
            env.iters
        } else {
            12
        },
        nodes: if set("SPORES_NODE_LIMIT") {
            env.nodes
        } else {
            6000
        },
        work: if set("SPORES_WORK_LIMIT") {
            env.work
        } else {
            RUN_TIME_WORK
        },
        time: if set("SPORES_TIME_LIMIT") {
            env.time
        } else {
            Duration::from_secs(1)
        },
        ..env
    }
}

/// The analysis context of a statement's inputs.
pub fn context(inputs: &[(String, Input)]) -> Context {
    let mut ctx = Context::default();
    for (n, i) in inputs {
        let info = match i {
            Input::Matrix {
                rows,
                cols,
                nnz,
                finite,
            } => VarInfo::Matrix {
                rows: *rows,
                cols: *cols,
                nnz: *nnz as f64,
                finite: *finite,
            },
            Input::Scalar(v) => VarInfo::Scalar(*v),
            Input::FiniteScalar => VarInfo::FiniteScalar,
        };
        ctx.vars.insert(Symbol::from(n.as_str()), info);
    }
    ctx
}

/// How far the non-zeros of a matrix input may drift from those a cached plan was compiled
/// for (a factor, either way) before the statement is compiled again. The count of non-zeros
/// only feeds the cost model's estimates (an all-zero input, which the analysis folds, is part
/// of the key itself), so any cached plan is a valid plan; within a factor of 4 in density the
/// choice rarely changes, and a loop whose support shrinks step by step (L2-SVM's support
/// vectors) is compiled once or twice instead of at every halving.
pub const NNZ_REUSE: usize = 4;

/// The states the exact search may expand to prove (or improve) the greedy plan of a large
/// e-graph at run time: a count rather than a deadline, so that the plan does not depend on
/// the machine's load.
pub const RUN_TIME_PROOF_STATES: usize = 20_000;

/// The candidate plans local search may evaluate to improve the greedy plan of a large
/// e-graph at run time (each a walk over one plan; a count, like [`RUN_TIME_PROOF_STATES`]).
/// The greedy extraction decides each class alone, so it can pay for a product twice: CG's
/// `sum(p * q)` with `q = t(A) %*% (A %*% p)` read as `sum((A %*% p)^2)` next to an mmchain
/// that forms `A %*% p` again; changing that one class's choice drops the second product.
pub const RUN_TIME_LOCAL_SEARCH: usize = 20_000;

/// The largest e-graph (in nodes) extracted with the ILP at run time.
pub const ILP_MAX_NODES: usize = 400;

/// Saturates and extracts a term with several outputs (`roots`, ids of nodes of `term`: the
/// values a block assigns), so that what they share is computed once; with `dump`, writes the
/// saturated e-graph there as egraph-serialize JSON.
pub fn compile(
    term: &RecExpr<Ir>,
    roots: &[Id],
    inputs: &[(String, Input)],
    rules: &[Rule],
    limits: &Limits,
    opts: &Options,
    dump: Option<&std::path::Path>,
) -> (Option<Plan>, Compiled) {
    compile_with(term, roots, inputs, rules, limits, opts, dump, false)
}

/// The e-graph of `term` under the inputs' analysis context (with explanations when `why`),
/// the class of each of its nodes, and the classes of `roots`.
fn load(
    term: &RecExpr<Ir>,
    roots: &[Id],
    inputs: &[(String, Input)],
    why: bool,
) -> (EG, Vec<Id>, Vec<Id>) {
    let mut eg = EG::new(context(inputs));
    if why {
        eg = eg.with_explanations_enabled();
    }
    let mut ids: Vec<Id> = Vec::with_capacity(term.as_ref().len());
    for node in term.as_ref() {
        let node = node.clone().map_children(|c| ids[usize::from(c)]);
        ids.push(eg.add(node));
    }
    let roots: Vec<Id> = roots.iter().map(|r| ids[usize::from(*r)]).collect();
    eg.rebuild();
    let roots: Vec<Id> = roots.iter().map(|r| eg.find(*r)).collect();
    (eg, ids, roots)
}

/// The estimated cost of the unsaturated e-graph's terms (the statements as written, their
/// shared nodes counted once); infinite when they are not well-formed.
fn cost_as_written(eg: &EG, roots: &[Id]) -> f64 {
    let g = ExGraph::from_egg(eg, roots, |c, n| extract::node_cost(eg, c, n));
    let ex = extract::GreedyTree.extract(&g, &Options::default());
    g.check(&ex)
        .map(|_| g.dag_cost(&ex))
        .unwrap_or(f64::INFINITY)
}

/// The estimated cost of `term`'s roots as written under these inputs, without saturating
/// (what [`Compiled::written_cost`] reports).
pub fn written_cost(term: &RecExpr<Ir>, roots: &[Id], inputs: &[(String, Input)]) -> f64 {
    let (eg, _, roots) = load(term, roots, inputs, false);
    cost_as_written(&eg, &roots)
}

/// [`compile`]; with `why`, saturation records explanations (slower, more memory) and the
/// plan carries each output's derivation (`spores opt --why`).
#[allow(clippy::too_many_arguments)]
pub fn compile_with(
    term: &RecExpr<Ir>,
    roots: &[Id],
    inputs: &[(String, Input)],
    rules: &[Rule],
    limits: &Limits,
    opts: &Options,
    dump: Option<&std::path::Path>,
    why: bool,
) -> (Option<Plan>, Compiled) {
    let written_terms: Vec<RecExpr<Ir>> = if why {
        roots.iter().map(|&r| root_term(term, r)).collect()
    } else {
        vec![]
    };
    let (eg, ids, roots) = load(term, roots, inputs, why);
    let written = cost_as_written(&eg, &roots);
    let t0 = Instant::now();
    let (mut eg, report) = saturate(eg, &roots, rules, limits, None);
    let saturation = t0.elapsed();
    if eg.analysis.conflicts > 0 {
        // two different constants were merged: a rule was unsound here, trust nothing
        let stats = Compiled {
            block: 0,
            saturation,
            extraction: Duration::ZERO,
            report,
            written_cost: written,
            dump_error: None,
            gap: None,
            extractor: "",
            limits: limits.clone(),
            root_notes: roots.iter().map(|r| note(&eg, *r, 0.0)).collect(),
        };
        return (None, stats);
    }
    let t1 = Instant::now();
    let roots: Vec<Id> = roots.iter().map(|r| eg.find(*r)).collect();
    // the statements' own nodes, as they are in the saturated e-graph: among plans of equal
    // estimated cost, the one closest to the program as written wins
    let written_nodes: HashSet<Ir, rustc_hash::FxBuildHasher> = term
        .as_ref()
        .iter()
        .map(|n| n.clone().map_children(|c| eg.find(ids[usize::from(c)])))
        .collect();
    // the classes of the statements' own values (their nodes, inputs included)
    let written_classes: HashSet<Id, rustc_hash::FxBuildHasher> =
        ids.iter().map(|&c| eg.find(c)).collect();
    let g = ExGraph::from_egg(&eg, &roots, |c, n| {
        let cost = extract::node_cost(&eg, c, n);
        if written_nodes.contains(n) {
            cost
        } else {
            cost + REWRITTEN_NODE
        }
    });
    // CBC's time limit has one-second granularity and is checked only between phases, so at
    // run time the ILP is used on small e-graphs only; larger ones get the DAG-aware greedy,
    // improved by local search (at most RUN_TIME_LOCAL_SEARCH candidates) and then proven
    // optimal (or improved) by the exact search when it finishes within
    // RUN_TIME_PROOF_STATES states (a few ms; the extraction time limit is only a safety net).
    let ilp = g.nodes.len() <= ILP_MAX_NODES;
    let ex = if ilp {
        extract::Ilp {
            cycles: extract::Cycles::Lazy,
        }
        .extract(&g, opts)
    } else {
        let deadline = Instant::now() + opts.time_limit;
        let greedy = extract::GreedyDag.extract(&g, opts);
        let greedy = extract::local_search::improve(
            &g,
            greedy.clone(),
            &greedy,
            RUN_TIME_LOCAL_SEARCH,
            Some(deadline),
        );
        extract::quick_proof(&g, greedy, RUN_TIME_PROOF_STATES, deadline).unwrap_or_else(|ex| ex)
    };
    let gap = ex.gap(g.dag_cost(&ex));
    let extraction = t1.elapsed();
    let dump_error = dump.and_then(|path| {
        path.parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|_| extract::serialized::write(&g, path))
            .err()
            .map(|e| format!("cannot write {}: {e}", path.display()))
    });
    let stats = Compiled {
        block: 0,
        saturation,
        extraction,
        report,
        written_cost: written,
        dump_error,
        gap,
        extractor: if ilp {
            "ILP"
        } else {
            "greedy DAG + exact search"
        },
        limits: limits.clone(),
        root_notes: roots.iter().map(|r| note(&eg, *r, 0.0)).collect(),
    };
    if g.check(&ex).is_err() {
        return (None, stats);
    }
    let cost = g.dag_cost(&ex);
    // keep the statement as written unless the plan is strictly cheaper (NaN: as written)
    if cost.partial_cmp(&(written * (1.0 - 1e-9))) != Some(std::cmp::Ordering::Less) {
        return (None, stats);
    }
    let mut expr = RecExpr::default();
    let mut memo = HashMap::new();
    let mut notes = Vec::new();
    let mut unordered = Vec::new();
    let mut b = Builder {
        eg: &eg,
        g: &g,
        ex: &ex,
        written: &written_nodes,
        written_classes: &written_classes,
        out: &mut expr,
        memo: &mut memo,
        notes: &mut notes,
        unordered: &mut unordered,
    };
    let plan_roots = g
        .roots
        .iter()
        .map(|&root_class| b.build(root_class))
        .collect::<Vec<Id>>();
    let why = written_terms
        .iter()
        .zip(&plan_roots)
        .map(|(w, &p)| crate::equiv::derivation(&mut eg, w, &root_term(&expr, p)))
        .collect();
    (
        Some(Plan {
            expr,
            roots: plan_roots,
            cost,
            written_cost: written,
            notes,
            unordered,
            why,
        }),
        stats,
    )
}

/// The term of one root of a multi-root expression.
pub fn root_term(e: &RecExpr<Ir>, root: Id) -> RecExpr<Ir> {
    use egg::Language;
    e[root].build_recexpr(|id| e[id].clone())
}

/// The egg e-class and node behind an [`ExGraph`] node built by `from_egg`.
fn egg_node(eg: &EG, g: &ExGraph, n: usize) -> (Id, Ir) {
    let (id, k) = g.egg_nodes[n];
    (id, eg[id].nodes[k].clone())
}

/// The analysis's estimates of a class, with a node's cost.
fn note(eg: &EG, class: Id, cost: f64) -> Note {
    let d = &eg[class].data;
    Note {
        shape: match d.kind {
            crate::analysis::Kind::Mat(r, c) => Some((r, c)),
            _ => None,
        },
        nnz: d.nnz,
        cost,
    }
}

/// The estimated cost (ns) added to each node of a plan that is not one of the statements' own
/// nodes: far below any kernel's cost (a kernel call alone is ~150 ns), so it only decides
/// between plans the cost model cannot tell apart, for the one that computes more of the
/// program as written (`(Yu - Yd) / (Bx * Bx)` rather than its equal-cost `(Yu - Yd) * Bx ^ -2`,
/// whose last bits differ), and a plan that only rewrites keeps the statements.
pub const REWRITTEN_NODE: f64 = 0.01;

/// Builds an extracted plan into a term (each class once, shared by every root), with the
/// analysis's estimates for each node.
struct Builder<'a> {
    eg: &'a EG,
    g: &'a ExGraph,
    ex: &'a Extraction,
    /// the statements' own nodes (canonical in `eg`)
    written: &'a HashSet<Ir, rustc_hash::FxBuildHasher>,
    /// the classes of the statements' own nodes (canonical in `eg`)
    written_classes: &'a HashSet<Id, rustc_hash::FxBuildHasher>,
    out: &'a mut RecExpr<Ir>,
    memo: &'a mut HashMap<usize, Id>,
    notes: &'a mut Vec<Note>,
    /// [`Plan::unordered`]
    unordered: &'a mut Vec<bool>,
}

impl Builder<'_> {
    fn add(&mut self, node: Ir, note: Note) -> Id {
        self.add_node(node, note, false)
    }

    fn add_node(&mut self, node: Ir, note: Note, unordered: bool) -> Id {
        self.notes.push(note);
        self.unordered.push(unordered);
        self.out.add(node)
    }

    /// The plan of `class` (built once).
    fn build(&mut self, class: usize) -> Id {
        if let Some(&id) = self.memo.get(&class) {
            return id;
        }
        let n = self.ex.choice[class].expect("checked extraction");
        let (cid, mut node) = egg_node(self.eg, self.g, n);
        let note = note(self.eg, cid, extract::node_cost(self.eg, cid, &node));
        let id = match self.as_division(&node, n) {
            Some((num, den, k)) => {
                // `a * b ^ -k` (k > 0) computed as the division `a / b ^ k` (`a / b` for k = 1)
                let a = self.build(num);
                let den_class = self.ex.choice[den].expect("checked extraction");
                let base = self.build(self.g.nodes[den_class].children[0]);
                let den = if k == 1.0 {
                    base
                } else {
                    let (pc, _) = egg_node(self.eg, self.g, den_class);
                    let e = self.add(Ir::Num(crate::ir::Const::new(k)), note_of_scalar());
                    let pn = note_of(self.eg, pc);
                    self.add(Ir::EPow([base, e]), pn)
                };
                self.add(Ir::EDiv([a, den]), note)
            }
            None => {
                // a sum over a matrix the statements never form (node canonical here)
                let unordered = match &node {
                    Ir::MSum(a) => !self.written_classes.contains(&self.eg.find(*a)),
                    _ => false,
                };
                for (k, child) in node.children_mut().iter_mut().enumerate() {
                    *child = self.build(self.g.nodes[n].children[k]);
                }
                self.add_node(node, note, unordered)
            }
        };
        self.memo.insert(class, id);
        id
    }

    /// For a product the optimizer made (not one of the statements' own nodes) of a factor
    /// and a power by a negative constant `-k`, `(a, b ^ -k, k)` as ExGraph classes: the
    /// product is computed as the division `a / b ^ k`, as a program writes it. Division is
    /// one rounding where `b ^ -k` and the product are two, so the written `a / (b * b)` (which
    /// the relational form reads as `a * b ^ -2`) keeps its bits; for 0, -0, Inf, NaN and
    /// subnormals both forms give the same values (`b ^ -k` is `±Inf` exactly where `b ^ k` is
    /// `±0`, with the same sign), except where `b ^ -k` alone overflows (README exception 2).
    /// A power whose value is known but not folded (a constant that overflows or underflows,
    /// `(-5e-309) ^ -1`) stays a product: constants are computed as written.
    fn as_division(&self, node: &Ir, n: usize) -> Option<(usize, usize, f64)> {
        let (Ir::EMul(_) | Ir::Join(_)) = node else {
            return None;
        };
        if self.written.contains(node) {
            return None;
        }
        let kids = &self.g.nodes[n].children;
        // the right factor first: `a * b ^ -k` as `a / b ^ k`
        [(kids[0], kids[1]), (kids[1], kids[0])]
            .into_iter()
            .find_map(|(num, den)| {
                let choice = self.ex.choice[den]?;
                let (pc, Ir::EPow([_, e]) | Ir::Pow([_, e])) = egg_node(self.eg, self.g, choice)
                else {
                    return None;
                };
                let d = &self.eg[pc].data;
                if d.value.is_some() && d.konst.is_none() {
                    return None;
                }
                let k = -self.eg[e].data.konst?;
                (k > 0.0 && k.is_finite()).then_some((num, den, k))
            })
    }
}

/// The estimates of a class (a node added by [`Builder`] for it).
fn note_of(eg: &EG, class: Id) -> Note {
    note(eg, class, 0.0)
}

/// The estimates of a constant.
fn note_of_scalar() -> Note {
    Note {
        shape: None,
        nnz: 1.0,
        cost: 0.0,
    }
}
