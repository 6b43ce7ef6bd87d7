//! under-limit: a limited group's usage never exceeds its limit, at any sample.

use super::{Check, CheckResult, CheckSpec, Needs, Outcome, columns, missing};
use crate::model::Record;
use crate::model::counter::USAGE;
use crate::scenario::{CheckInput, ScenarioError};
use crate::units::human_bytes;

/// `under-limit`: the group's usage (v1 memory.usage_in_bytes, v2 memory.current: its page
/// counter) is at most the limit the scenario set (v1 memory.limit_in_bytes, v2 memory.max) at
/// every sample. A charge that would cross the limit reclaims or fails; the counter may pass it
/// only by forced charges (an OOM victim exiting, __GFP_NOFAIL), which the tolerance covers.
#[derive(Debug, Clone, PartialEq)]
pub struct UnderLimit {
    pub cgroup: String,
}

pub fn parse(i: &CheckInput) -> Result<Check, ScenarioError> {
    i.only(&["cgroup"])?;
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
    let (mut max, mut at) = (i64::MIN, 0);
    for r in 0..rec.series.len() {
        let v = rec.series.get(r, c);
        if v > max {
            (max, at) = (v, r);
        }
    }
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
        res.column = Some(rec.series.columns[c].clone());
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
    res.tolerance = Some(format!(
        "{} (charges forced past the limit: an OOM victim exiting, __GFP_NOFAIL)",
        rec.machine.stat_batch_explained()
    ));
    res
}
