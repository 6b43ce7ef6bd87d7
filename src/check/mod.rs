//! Checks: pure functions over a scenario's record (sampled series, phases, steps). Each returns
//! the actual value, what was expected, the tolerance and where it came from, so a failure explains
//! itself. A check whose precondition did not happen returns `NotExercised`, which makes the
//! scenario `skip`, never `pass`.

use serde::{Deserialize, Serialize};

use crate::model::Column;
use crate::model::Record;
use crate::scenario::Check;
use crate::stats;
use crate::units::human_bytes;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Pass,
    Fail,
    /// What the check needs did not happen (or cannot be verified on this kernel).
    NotExercised,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckResult {
    pub name: String,
    pub outcome: Outcome,
    pub passed: bool,
    pub actual: String,
    pub expected: String,
    /// The tolerance and where it comes from.
    pub tolerance: Option<String>,
    /// A sentence for people: what was looked at, and on failure where it broke.
    pub detail: String,
    /// Time (s) of the sample where the check broke, for timelines.
    pub at: Option<f64>,
    /// The bound the failing counter was held to (bytes), for timelines.
    pub bound: Option<i64>,
    /// The sampled column (or `a+b` sum) that broke, for timelines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
}

impl CheckResult {
    fn new(
        name: String,
        outcome: Outcome,
        actual: String,
        expected: String,
        detail: String,
    ) -> Self {
        CheckResult {
            name,
            outcome,
            passed: outcome == Outcome::Pass,
            actual,
            expected,
            tolerance: None,
            detail,
            at: None,
            bound: None,
            column: None,
        }
    }
}

/// Evaluates one check on a record. `cgroup` names in counters become `<cgroup>.<counter>` columns.
pub fn evaluate(check: &Check, rec: &Record) -> CheckResult {
    let name = check.name();
    match check {
        Check::NoUnderflow { cgroup, counters } => no_underflow(name, rec, cgroup, counters),
        Check::Settles {
            cgroup,
            counters,
            within,
            bound,
            after,
        } => settles(
            name,
            rec,
            cgroup,
            counters,
            within.as_secs_f64(),
            *bound,
            after,
        ),
        Check::TracksGlobal {
            cgroup,
            counters,
            global,
            during,
            phase,
        } => tracks_global(
            name,
            rec,
            cgroup,
            counters,
            global,
            during,
            phase.as_deref(),
        ),
        Check::DirtyProbe { cgroup } => dirty_probe(name, rec, cgroup),
        Check::Hierarchy { parent, counters } => hierarchy(name, rec, parent, counters),
        Check::NoRatchet {
            cgroup,
            counters,
            bound,
        } => no_ratchet(name, rec, cgroup, counters, *bound),
        Check::Observed {
            cgroup,
            counters,
            global,
        } => observed(name, rec, cgroup, counters, global),
        Check::Throughput {
            phase,
            baseline,
            min_ratio,
        } => throughput(name, rec, phase, baseline, *min_ratio),
        Check::Follows {
            from,
            to,
            counter,
            step,
            needs_moving,
        } => follows_groups(name, rec, (from, to), counter, step, *needs_moving),
        Check::Ratio {
            step,
            inside,
            outside,
            min_ratio,
            phase,
        } => ratio(
            name,
            rec,
            step,
            (inside, outside),
            *min_ratio,
            phase.as_deref(),
        ),
        Check::Change {
            cgroup,
            counter,
            step,
            by,
            tolerance,
            needs_moving,
        } => change(
            name,
            rec,
            &Column::group(cgroup, counter).to_string(),
            step,
            *by,
            *tolerance,
            *needs_moving,
        ),
        Check::Exercised {
            phase,
            vmstat,
            min,
            what,
        } => exercised(name, rec, phase, vmstat, *min, what),
    }
}

/// follows between two groups' columns of one counter.
fn follows_groups(
    name: String,
    rec: &Record,
    (from, to): (&str, &str),
    counter: &str,
    step: &str,
    needs_moving: bool,
) -> CheckResult {
    follows(
        name,
        rec,
        (
            &Column::group(from, counter).to_string(),
            &Column::group(to, counter).to_string(),
        ),
        step,
        needs_moving,
    )
}

fn columns(
    rec: &Record,
    cgroup: &str,
    counters: &[String],
) -> Result<Vec<(String, usize)>, String> {
    counters
        .iter()
        .map(|c| {
            let col = Column::group(cgroup, c).to_string();
            rec.series
                .col(&col)
                .map(|i| (col.clone(), i))
                .ok_or_else(|| format!("column {col} was not sampled"))
        })
        .collect()
}

fn missing(name: String, why: String) -> CheckResult {
    CheckResult::new(name, Outcome::NotExercised, "-".into(), "-".into(), why)
}

/// How a too-small throughput or ratio check gets enough samples.
const MORE_SAMPLES: &str =
    "raise the phase's repeat (one sample per repetition, or per pair) to at least 3 per side";

/// The tolerance of the throughput and ratio checks.
fn ratio_tolerance(min_ratio: f64) -> String {
    format!(
        "minimum ratio {min_ratio} set in the scenario; a failure also needs the sample sets to separate, any verdict enough samples that chance separates them at most {} % of the time (at least 3 v 3)",
        stats::MAX_CHANCE_PCT
    )
}

/// Named series columns: (column name, index).
type Columns = Vec<(String, usize)>;

/// Sum of some columns at a row.
fn sum(rec: &Record, row: usize, cols: &[(String, usize)]) -> i64 {
    cols.iter().map(|(_, c)| rec.series.get(row, *c)).sum()
}

/// The last sample at or before `t` (or the first sample).
fn row_at_or_before(rec: &Record, t: f64) -> usize {
    (0..rec.series.len())
        .rev()
        .find(|&r| rec.series.t[r] <= t)
        .unwrap_or(0)
}

/// The first sample at or after `t`.
fn row_at_or_after(rec: &Record, t: f64) -> Option<usize> {
    (0..rec.series.len()).find(|&r| rec.series.t[r] >= t)
}

/// Groups sampled in a record (column prefixes before the first '.').
fn groups(rec: &Record) -> Vec<String> {
    let mut g: Vec<String> = Vec::new();
    for c in &rec.series.columns {
        if let Some(Column::Group { group: name, .. }) = Column::parse(c)
            && !crate::model::is_meta_column(c)
            && !g.contains(&name)
        {
            g.push(name);
        }
    }
    g
}

fn signed(b: i64) -> String {
    if b > 0 {
        format!("+{}", human_bytes(b))
    } else {
        human_bytes(b)
    }
}

// The check kinds, one file each; `evaluate` above is the table from kind to function.
mod change;
mod dirty_probe;
mod exercised;
mod follows;
mod hierarchy;
mod no_ratchet;
mod no_underflow;
mod observed;
mod ratio;
mod reference;
mod settles;
mod throughput;
mod tracks_global;

pub use change::change;
pub use dirty_probe::dirty_probe;
pub use exercised::exercised;
pub use follows::follows;
pub use hierarchy::hierarchy;
pub use no_ratchet::no_ratchet;
pub use no_underflow::no_underflow;
pub use observed::observed;
pub use ratio::ratio;
pub use reference::STALE_WINDOW;
pub use settles::settles;
pub use throughput::throughput;
pub use tracks_global::tracks_global;

#[cfg(test)]
mod tests;
