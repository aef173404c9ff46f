//! `--stats`: time and count per operation kind, like SystemDS's `-stats` heavy hitters.

use std::collections::BTreeMap;
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
    /// Adds one compilation of (a run of statements of) `block`.
    pub fn record_compile(&mut self, block: usize, saturation: Duration, extraction: Duration) {
        let e = self.compile.entry(block).or_default();
        e.0 += 1;
        e.1 += saturation;
        e.2 += extraction;
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
        if !self.compile.is_empty() {
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
        }
        Ok(())
    }
}
