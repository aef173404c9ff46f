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
}

impl Stats {
    /// Adds one execution of `op`.
    pub fn record(&mut self, op: &'static str, t: Duration) {
        let e = self.ops.entry(op).or_default();
        e.0 += 1;
        e.1 += t;
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
        Ok(())
    }
}
