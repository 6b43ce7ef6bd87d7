//! exercised: the antagonist did its job (a /proc/vmstat event counter rose).

use super::{CheckResult, Outcome, missing};
use crate::model::Record;

/// (d) the antagonist did its job: a /proc/vmstat event counter rose during the phase.
pub fn exercised(
    name: String,
    rec: &Record,
    phase: &str,
    key: &str,
    min: i64,
    what: &str,
) -> CheckResult {
    let Some(p) = rec.phase_by_name(phase) else {
        return missing(name, format!("phase {phase} did not run"));
    };
    let ph = &rec.phases[p];
    let (Some(a), Some(b)) = (ph.vmstat_start.get(key), ph.vmstat_end.get(key)) else {
        return missing(
            name,
            format!(
                "cannot verify {what}: {key} is not in /proc/vmstat (kernel without CONFIG_VM_EVENT_COUNTERS?)"
            ),
        );
    };
    let delta = b - a;
    let outcome = if delta >= min {
        Outcome::Pass
    } else {
        Outcome::NotExercised
    };
    CheckResult::new(
        name,
        outcome,
        format!("{key} +{delta}"),
        format!(">= +{min}"),
        match outcome {
            Outcome::Pass => format!("{what}: {key} rose by {delta} during phase {phase}"),
            _ => format!(
                "{what} did not happen: {key} rose by {delta} during phase {phase} (needed {min})"
            ),
        },
    )
}
