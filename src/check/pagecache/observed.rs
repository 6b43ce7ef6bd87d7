//! observed: the group's counters were seen above 0 while their reference was.

use crate::check::args::CheckArgs;
use crate::check::pagecache::reference::group_and_reference;
use crate::check::{Check, CheckResult, CheckSpec, Kind, Needs, Outcome, missing, opt, req, sum};
use crate::model::Record;
use crate::model::contract::{v1, v2};
use crate::model::error::ScenarioError;
use crate::model::sum_label;
use crate::model::units::human_bytes;

/// observed: the group's counters were seen above 0 while its reference was — with the per-file
/// truth, while the group's own files had such pages (e.g. pages under writeback), else while the
/// global counters did. If the reference never rose, nothing happened to observe: not exercised.
/// Without per-file truth, a miss while other writers moved the machine's counters is
/// inconclusive: the global rise may have been theirs.
pub fn observed(
    name: String,
    rec: &Record,
    cgroup: &str,
    counters: &[String],
    global: &[String],
) -> CheckResult {
    let (cols, reference) = match group_and_reference(&name, rec, cgroup, counters, global) {
        Ok(x) => x,
        Err(missing) => return *missing,
    };
    let floor = reference.drift;
    let all: Vec<usize> = (0..rec.series.len()).collect();
    let rmax = all.iter().map(|&r| reference.lo(rec, r)).max().unwrap_or(0);
    let cmax = all.iter().map(|&r| sum(rec, r, &cols)).max().unwrap_or(0);
    let names: Vec<&str> = counters.iter().map(String::as_str).collect();
    let cl = sum_label(&crate::check::group_columns(cgroup, &names));
    if rmax <= floor {
        return missing(
            name,
            format!(
                "nothing to observe: {} never rose above {}",
                reference.label,
                human_bytes(floor)
            ),
        );
    }
    if cmax <= 0
        && let Some(f) = &reference.foreign
    {
        let moved = f.moved(rec, 0, &all);
        if moved > rec.machine.stat_batch_bytes() as i64 + floor {
            return crate::check::inconclusive(
                name,
                format!(
                    "inconclusive: {cl} never rose above 0, but other writers on the machine moved {} by up to {} (no per-file truth on this kernel)",
                    f.label,
                    human_bytes(moved)
                ),
            );
        }
    }
    let outcome = if cmax > 0 {
        Outcome::Pass
    } else {
        Outcome::Fail
    };
    CheckResult::new(
        name,
        outcome,
        format!("{cl} up to {}", human_bytes(cmax)),
        "> 0 at some sample".into(),
        match outcome {
            Outcome::Pass => format!(
                "{cl} reached {} while {} reached {}",
                human_bytes(cmax),
                reference.label,
                human_bytes(rmax)
            ),
            _ => format!(
                "{} reached {} but {cl} never rose above 0: the group's pages were not accounted",
                reference.label,
                human_bytes(rmax)
            ),
        },
    )
}

/// `observed`: the group's counter was seen above 0 while its reference was (e.g. writeback
/// happened and was accounted); no activity at all makes the scenario `skip`.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    pub cgroup: String,
    pub counters: Vec<String>,
    pub global: Vec<String>,
}

/// `observed` in the check table.
pub const KIND: Kind = Kind {
    kind: "observed",
    doc:
        "The group's counters (summed) were seen above 0 while their reference was: with per-file \
truth,
while the group's own files had such pages (e.g. pages under writeback), else \
while the `global`
counters rose. Writeback that happened in the group's files and never \
showed in the group was not
accounted. Not exercised when the reference never rose \
(nothing happened to observe); without
per-file truth, a miss while other writers moved \
the machine's counters is inconclusive. Result
name: `observed(<cgroup>: <counters \
joined by +>)`.",
    keys: &[
        opt(
            "cgroup",
            "the group whose counters must be seen (default: the only declared group)",
        ),
        req("counters", "the counters (e.g. `[\"writeback\"]`)"),
        opt(
            "global",
            "the /proc/vmstat keys of the machine-wide reference (not checked for spelling) (default \
`[\"nr_writeback\"]`)",
        ),
    ],
    parse,
    promises: &[&v2::STAT_WRITEBACK, &v1::STAT_DIRTY],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(Observed {
        cgroup: i.cgroup("cgroup")?,
        counters: i.counters()?,
        global: i.global(&["nr_writeback"])?,
    }))
}

impl CheckSpec for Observed {
    fn name(&self) -> String {
        format!("observed({}: {})", self.cgroup, self.counters.join("+"))
    }
    fn needs(&self) -> Needs {
        Needs::accounting(&self.cgroup, self.counters.clone(), self.global.clone())
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        observed(self.name(), rec, &self.cgroup, &self.counters, &self.global)
    }
}
