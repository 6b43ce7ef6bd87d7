//! under-limit: a limited group's usage never exceeds its limit, at any sample.

use super::args::CheckArgs;
use super::{Check, CheckResult, CheckSpec, Kind, Needs, Outcome, columns, missing, opt};
use crate::model::Record;
use crate::model::counter::{OOM_KILLS, USAGE};
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;

/// `under-limit`: the group's usage (v1 memory.usage_in_bytes, v2 memory.current: its page
/// counter) is at most the limit the scenario set (v1 memory.limit_in_bytes, v2 memory.max) at
/// every sample. A charge that would cross the limit reclaims or fails; the counter may pass it
/// only by forced charges (an OOM victim exiting, __GFP_NOFAIL), which the tolerance covers, and
/// for one sample during an OOM kill in the group: try_charge() force-charges for a dying task,
/// by more than the tolerance (seen once on 6.12: 1.8 MiB above a 16 MiB limit in oom-group).
#[derive(Debug, Clone, PartialEq)]
pub struct UnderLimit {
    pub cgroup: String,
}

/// `under-limit` in the check table.
pub const KIND: Kind = Kind {
    kind: "under-limit",
    doc: "The group's usage (its page counter: v1 memory.usage_in_bytes, v2 memory.current) is \
at most the limit the scenario set (v1 memory.limit_in_bytes, v2 memory.max) at every \
sample. A charge that would cross the limit reclaims or fails; the counter may pass it \
only by forced charges (an OOM victim exiting, __GFP_NOFAIL), which the tolerance \
covers, and for one sample within 0.5 s of an OOM kill in the group (where `oom_kills` \
is sampled): try_charge() force-charges for a dying task, by more than the tolerance \
(seen once on 6.12 in oom-group: 1.8 MiB above a 16 MiB limit); the pass line lists \
such samples, two in a row still fail. Tolerance: the unflushed-stats bound. Not \
exercised when the group has no limit or its usage never came within 90 % of the limit \
(the limit was not tested). Result name: `under-limit(<cgroup>)`.",
    keys: &[opt(
        "cgroup",
        "the limited group (default: the only declared group)",
    )],
    parse,
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(UnderLimit {
        cgroup: i.cgroup("cgroup")?,
    }))
}

impl CheckSpec for UnderLimit {
    fn name(&self) -> String {
        format!("under-limit({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: vec![USAGE.into()],
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        under_limit(self.name(), rec, &self.cgroup)
    }
}

pub fn under_limit(name: String, rec: &Record, cgroup: &str) -> CheckResult {
    let Some(limit) = rec.limit_of(cgroup) else {
        return missing(name, format!("{cgroup} has no limit"));
    };
    let c = match columns(rec, cgroup, &[USAGE.into()]) {
        Ok(c) => c[0].1,
        Err(e) => return missing(name, e),
    };
    let tol = rec.machine.stat_batch_bytes() as i64;
    let bound = limit as i64 + tol;
    let (max, at, excused) = peak(rec, cgroup, c, (limit as i64, bound));
    if rec.series.is_empty() {
        return missing(name, "no samples".into());
    }
    // A limit the workload never came near was not tested.
    if max < limit as i64 / 10 * 9 {
        return missing(
            name,
            format!(
                "{cgroup}'s usage peaked at {}, below 90 % of its limit of {}: the limit was never tested",
                human_bytes(max),
                human_bytes(limit as i64)
            ),
        );
    }
    let t = rec.series.t[at];
    let mut res = if max > bound {
        let mut res = CheckResult::new(
            name,
            Outcome::Fail,
            format!("{cgroup}.usage = {} at t={t:.3}s", human_bytes(max)),
            format!("<= limit {}", human_bytes(limit as i64)),
            format!(
                "at t={t:.3}s (phase {}) {cgroup}'s usage was {} above its limit of {}: the page counter let charges past its max: {}",
                rec.phase_at(t),
                human_bytes(max - limit as i64),
                human_bytes(limit as i64),
                rec.series.describe_row(at)
            ),
        );
        res.at = Some(t);
        res.bound = Some(limit as i64);
        res.columns = vec![rec.series.columns()[c].clone()];
        res
    } else {
        CheckResult::new(
            name,
            Outcome::Pass,
            format!(
                "max usage {} over {} samples",
                human_bytes(max),
                rec.series.len()
            ),
            format!("<= limit {}", human_bytes(limit as i64)),
            format!(
                "{cgroup}'s usage stayed under its limit of {} (highest {}, {:.0} %)",
                human_bytes(limit as i64),
                human_bytes(max),
                max as f64 * 100.0 / limit as f64
            ),
        )
    };
    let oom = if columns(rec, cgroup, &[OOM_KILLS.into()]).is_ok() {
        format!(
            "; one sample above it within {OOM_WINDOW} s of an OOM kill in the group is a charge forced for the victim, undone as it exits"
        )
    } else {
        String::new()
    };
    res.tolerance = Some(format!(
        "{} (charges forced past the limit: an OOM victim exiting, __GFP_NOFAIL){oom}",
        rec.machine.stat_batch_explained()
    ));
    if !excused.is_empty() {
        res.detail += &format!(
            "; above the limit for one sample during an OOM kill (forced for the victim, gone at the next sample): {}",
            excused.join(", ")
        );
    }
    res
}

/// The group's highest usage and its row, leaving out single samples above `bound` within
/// OOM_WINDOW of an OOM kill in the group (`limit` plus tolerance; returned as "X at t=Ys" for the detail).
fn peak(
    rec: &Record,
    cgroup: &str,
    c: usize,
    (limit, bound): (i64, i64),
) -> (i64, usize, Vec<String>) {
    let s = &rec.series;
    let above = |r: usize| r < s.len() && s.get(r, c) > bound;
    // A charge forced past the limit for an OOM victim is undone as it exits: one sample above
    // the limit while the group's OOM killer kills is that, and is reported, not failed.
    let forced = |r: usize| !above(r + 1) && (r == 0 || !above(r - 1)) && oom_near(rec, cgroup, r);
    let (mut max, mut at) = (i64::MIN, 0);
    let mut excused = Vec::new();
    for r in 0..s.len() {
        let v = s.get(r, c);
        if above(r) && forced(r) {
            excused.push(format!("{} at t={:.3}s", human_bytes(v - limit), s.t[r]));
            continue;
        }
        if v > max {
            (max, at) = (v, r);
        }
    }
    (max, at, excused)
}

/// How close to an OOM kill (s) a one-sample excess counts as forced for the victim.
const OOM_WINDOW: f64 = 0.5;

/// Whether the group's OOM-kill count changed within OOM_WINDOW of row `r` (false when it is not
/// sampled).
fn oom_near(rec: &Record, cgroup: &str, r: usize) -> bool {
    let s = &rec.series;
    let Ok(cols) = columns(rec, cgroup, &[OOM_KILLS.into()]) else {
        return false;
    };
    let k = cols[0].1;
    let t = s.t[r];
    let near: Vec<usize> = (0..s.len())
        .filter(|&q| (s.t[q] - t).abs() <= OOM_WINDOW)
        .collect();
    near.windows(2).any(|w| s.get(w[1], k) != s.get(w[0], k))
}
