//! `--stats`: time and count per operation kind, like SystemDS's `-stats` heavy hitters.

use crate::raise::work::Work;
use crate::raise::Step;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

/// Accumulated execution statistics.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// per operation: (count, total time)
    pub ops: BTreeMap<&'static str, (u64, Duration)>,
    /// wall time of the whole run
    pub total: Duration,
    /// per basic block: (compilations, saturation time, extraction time)
    pub compile: BTreeMap<usize, (u64, Duration, Duration)>,
    /// saturation + extraction of each compilation, in order
    pub compile_each: Vec<Duration>,
    /// plans taken from another block's compilation of the same statements and inputs
    pub reused: u64,
    /// runs of statements that ran as written, uncompiled, under the compile budget
    pub cold: u64,
    /// per plan run by a segment, in the order first run: the floor table
    pub plans: Vec<PlanStats>,
    /// the index in `plans` of each (block, first statement, plan identity)
    plan_index: HashMap<(usize, usize, usize), usize>,
}

/// The runs of one plan of a segment (or of the segment as lowered, when no plan is cheaper).
#[derive(Clone, Debug, Default)]
pub struct PlanStats {
    /// the block
    pub block: usize,
    /// the segment's first statement in the block
    pub stmt: usize,
    /// where the segment is and what it assigns, e.g. `line 9: G`
    pub label: String,
    /// how many times it ran
    pub runs: u64,
    /// the kernels' wall time over all runs
    pub time: Duration,
    /// the kernels' CPU time over all runs (every thread)
    pub cpu: Duration,
    /// the cost model's estimate of one run in nanoseconds (the executed nodes' costs);
    /// `None` for a segment run as lowered, which has no estimates per node
    pub estimated_ns: Option<f64>,
    /// bytes and flops over all runs
    pub work: Work,
    /// per node of the plan that ran a kernel, in the order of the plan
    pub nodes: BTreeMap<usize, NodeStats>,
    /// the cost model's estimate of each node (same index as the plan), when known
    estimates: Vec<f64>,
}

/// The calls of one node of a plan.
#[derive(Clone, Debug, Default)]
pub struct NodeStats {
    /// the operator's `--stats` name
    pub op: &'static str,
    /// calls
    pub calls: u64,
    /// wall time over all calls
    pub time: Duration,
    /// CPU time over all calls
    pub cpu: Duration,
    /// the cost model's estimate of one call in nanoseconds, when known
    pub estimated_ns: Option<f64>,
    /// bytes and flops over all calls
    pub work: Work,
}

impl Stats {
    /// Adds one execution of `op`.
    pub fn record(&mut self, op: &'static str, t: Duration) {
        let e = self.ops.entry(op).or_default();
        e.0 += 1;
        e.1 += t;
    }
}

impl Stats {
    /// The slot of a plan in [`Stats::plans`], creating it on its first run: `plan` tells
    /// plans of the same segment apart, `estimates` are the cost model's estimate of each of
    /// its nodes (empty when unknown).
    pub fn plan_slot(
        &mut self,
        (block, stmt, plan): (usize, usize, usize),
        label: impl FnOnce() -> String,
        estimates: &[f64],
    ) -> usize {
        let plans = &mut self.plans;
        *self
            .plan_index
            .entry((block, stmt, plan))
            .or_insert_with(|| {
                plans.push(PlanStats {
                    block,
                    stmt,
                    label: label(),
                    estimated_ns: (!estimates.is_empty()).then_some(0.0),
                    estimates: estimates.to_vec(),
                    ..PlanStats::default()
                });
                plans.len() - 1
            })
    }

    /// Adds one kernel call of the plan in `slot`.
    pub fn record_step(&mut self, slot: usize, step: &Step) {
        let p = &mut self.plans[slot];
        p.time += step.time;
        p.cpu += step.cpu;
        p.work += step.work;
        // the estimate of the node, with those of the nodes it absorbed
        let est = p.estimates.get(step.index).map(|e| {
            e + step
                .absorbed
                .iter()
                .filter_map(|a| p.estimates.get(*a))
                .sum::<f64>()
        });
        let n = p.nodes.entry(step.index).or_default();
        n.op = step.op;
        n.calls += 1;
        n.time += step.time;
        n.cpu += step.cpu;
        n.work += step.work;
        n.estimated_ns = est;
        if p.runs == 0 {
            // the estimate of one run: the nodes that run a kernel
            if let (Some(total), Some(e)) = (p.estimated_ns.as_mut(), est) {
                *total += e;
            }
        }
    }

    /// Ends one run of the plan in `slot`.
    pub fn end_run(&mut self, slot: usize) {
        self.plans[slot].runs += 1;
    }
}

impl Stats {
    /// Adds one compilation of (a run of statements of) `block`.
    pub fn record_compile(&mut self, block: usize, saturation: Duration, extraction: Duration) {
        let e = self.compile.entry(block).or_default();
        e.0 += 1;
        e.1 += saturation;
        e.2 += extraction;
        self.compile_each.push(saturation + extraction);
    }

    /// Counts a plan taken from another block's compilation of the same statements and
    /// inputs (no compilation).
    pub fn record_reuse(&mut self) {
        self.reused += 1;
    }

    /// Counts a run of statements that ran as written under the compile budget.
    pub fn record_cold(&mut self) {
        self.cold += 1;
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "spores statistics:")?;
        writeln!(
            f,
            "Total execution time: {:.3} sec.",
            self.total.as_secs_f64()
        )?;
        writeln!(f, "Heavy hitter instructions:")?;
        writeln!(f, "  #  Instruction    Time(s)      Count")?;
        let mut rows: Vec<_> = self.ops.iter().collect();
        rows.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(b.0)));
        for (i, (op, (n, t))) in rows.iter().enumerate() {
            writeln!(
                f,
                "{:>3}  {:<12} {:>9.3} {:>10}",
                i + 1,
                op,
                t.as_secs_f64(),
                n
            )?;
        }
        if !self.plans.is_empty() {
            let w = crate::extract::cost::weights();
            writeln!(
                f,
                "Plans per run (kernel wall and CPU time, the cost model's estimate, bytes moved, flops; \
                 floor = max(bytes / {:.2} GB/s, flops / {:.2} GFLOP/s) in CPU time, the machine figures of `spores calibrate`):",
                1.0 / w.read_byte,
                1.0 / w.flop
            )?;
            writeln!(
                f,
                "   runs   wall(ms)    cpu(ms)  estimated(ms)  est/cpu        MB      MFLOP  floor(ms)  cpu/floor  where"
            )?;
            for p in &self.plans {
                row(
                    f,
                    p.runs,
                    (p.time, p.cpu),
                    p.estimated_ns,
                    p.work,
                    w,
                    &p.label,
                )?;
                for (i, n) in &p.nodes {
                    let what = format!("  - #{i} {}", n.op);
                    row(
                        f,
                        n.calls,
                        (n.time, n.cpu),
                        n.estimated_ns,
                        n.work,
                        w,
                        &what,
                    )?;
                }
            }
        }
        if !self.compile.is_empty() || self.cold > 0 {
            writeln!(f, "Compile time per block:")?;
            writeln!(f, "  block  compilations  saturation(ms)  extraction(ms)")?;
            for (b, (n, s, e)) in &self.compile {
                writeln!(
                    f,
                    "  {b:>5}  {n:>12}  {:>14.1}  {:>14.1}",
                    s.as_secs_f64() * 1e3,
                    e.as_secs_f64() * 1e3
                )?;
            }
            let (s, e) = self
                .compile
                .values()
                .fold((Duration::ZERO, Duration::ZERO), |(s, e), c| {
                    (s + c.1, e + c.2)
                });
            let mut each = self.compile_each.clone();
            each.sort();
            let median = each.get(each.len() / 2).copied().unwrap_or_default();
            writeln!(
                f,
                "  total {} compilations: {:.1} ms saturation, {:.1} ms extraction, median {:.1} ms \
                 per compilation; {} plans reused from another block; {} runs of statements as \
                 written under the compile budget",
                each.len(),
                s.as_secs_f64() * 1e3,
                e.as_secs_f64() * 1e3,
                median.as_secs_f64() * 1e3,
                self.reused,
                self.cold
            )?;
        }
        Ok(())
    }
}

/// One line of the floor table: figures per run (or call) of `n`.
fn row(
    f: &mut fmt::Formatter<'_>,
    n: u64,
    (wall, cpu): (Duration, Duration),
    est_ns: Option<f64>,
    work: Work,
    w: &crate::extract::cost::Weights,
    what: &str,
) -> fmt::Result {
    let per = n.max(1) as f64;
    let wall = wall.as_secs_f64() * 1e3 / per;
    let cpu = cpu.as_secs_f64() * 1e3 / per;
    let work = Work {
        bytes: work.bytes / per,
        flops: work.flops / per,
    };
    let floor = work.floor_ns(w.read_byte, w.flop) * 1e-6;
    let (est, ratio) = match est_ns {
        Some(e) => (
            format!("{:.3}", e * 1e-6),
            format!("{:.2}", e * 1e-6 / cpu.max(1e-6)),
        ),
        None => ("-".into(), "-".into()),
    };
    writeln!(
        f,
        "{n:>7}  {wall:>9.3}  {cpu:>9.3}  {est:>13}  {ratio:>7}  {:>8.2}  {:>9.2}  {floor:>9.3}  {:>9.2}  {what}",
        work.bytes * 1e-6,
        work.flops * 1e-6,
        cpu / floor.max(1e-9),
    )
}
