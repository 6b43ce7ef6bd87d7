//! exercised: the antagonist did its job (a /proc/vmstat event counter rose).

use crate::check::args::CheckArgs;
use crate::check::{Check, CheckResult, CheckSpec, Kind, Needs, Outcome, missing, opt, req};
use crate::model::Record;
use crate::model::error::ScenarioError;

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

/// `exercised`: /proc/vmstat `vmstat` rose by at least `min` during `phase`: the antagonist did
/// its job. Otherwise the scenario is `skip`, never `pass`.
#[derive(Debug, Clone, PartialEq)]
pub struct Exercised {
    pub phase: String,
    pub vmstat: String,
    pub min: i64,
    pub what: String,
}

/// `exercised` in the check table.
pub const KIND: Kind = Kind {
    kind: "exercised",
    doc:
        "A /proc/vmstat counter rose by at least `min` during `phase`: the antagonist did its job \
(for
example `pgmigrate_success` for the compaction antagonist). It judges no kernel \
count; it guards
the others: a scenario about page migration in which no page migrated \
has tested nothing, so
otherwise the scenario is `skip` with the reason, never `pass`; \
\"cannot verify\" when the counter
is not in /proc/vmstat (a kernel without \
CONFIG_VM_EVENT_COUNTERS). Result name:
`exercised(<phase>: <vmstat>)`.",
    keys: &[
        req(
            "phase",
            "the declared phase during which the counter must rise",
        ),
        req("vmstat", "the /proc/vmstat key (`[a-z0-9_]`)"),
        opt(
            "min",
            "the least rise; an integer of at least 1 (below 1 is an error: the check could not fail) \
(default `1`)",
        ),
        opt(
            "what",
            "what the rise proves, in words for the result: one line, no control characters, at most \
200 characters (default `\"the antagonist\"`)",
        ),
    ],
    parse,
    promises: &[],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    i.need::<String>("vmstat")?;
    let min = i.get::<i64>("min")?;
    if let Some(m) = &min
        && *m.get_ref() < 1
    {
        return Err(i.err(
            m.span(),
            "min must be at least 1 (a counter always rises by 0 or more: the check could not fail)",
        ));
    }
    Ok(Check::new(Exercised {
        phase: i.phase_ref("phase")?,
        vmstat: i.vmstat_key("vmstat")?,
        min: min.map(|m| m.into_inner()).unwrap_or(1),
        what: i
            .one_line("what")?
            .unwrap_or_else(|| "the antagonist".into()),
    }))
}

impl CheckSpec for Exercised {
    fn name(&self) -> String {
        format!("exercised({}: {})", self.phase, self.vmstat)
    }
    fn needs(&self) -> Needs {
        Needs {
            vmstat: vec![self.vmstat.clone()],
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        exercised(
            self.name(),
            rec,
            &self.phase,
            &self.vmstat,
            self.min,
            &self.what,
        )
    }
}
