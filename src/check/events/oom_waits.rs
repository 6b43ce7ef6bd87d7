//! oom-waits: cgroup v1's oom_kill_disable. With it set, a task that needs more than its group can
//! hold is not killed: it sleeps in the group's OOM wait queue (memory.oom_control under_oom 1)
//! until the limit is raised or usage falls, then goes on (memory.rst 10).

use crate::check::args::CheckArgs;
use crate::check::{CGROUP, Check, CheckResult, CheckSpec, Kind, Outcome, missing};
use crate::model::contract::{Contract, v1};
use crate::model::error::ScenarioError;
use crate::model::{Record, StepKind, StepRecord};

/// `oom-waits` in the check table.
pub const KIND: Kind = Kind {
    kind: "oom-waits",
    doc: "cgroup v1: after a `set` step wrote 1 to the group's memory.oom_control \
(oom_kill_disable), each `exhaust` step of the group with `raise` killed no task, found the \
group under OOM (under_oom 1) when its wait ended, and its task finished once the limit was \
raised: \"tasks under cgroup will hang/sleep in memory cgroup's OOM-waitqueue … Then, stopped \
tasks will work again.\" Not exercised when oom_kill_disable was not set or no such step ran. \
Result name: `oom-waits(<cgroup>)`.",
    keys: &[CGROUP],
    parse,
    promises: &[&v1::OOM_DISABLE],
};

#[derive(Debug, Clone, PartialEq)]
pub struct OomWaits {
    pub cgroup: String,
}

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(OomWaits {
        cgroup: i.cgroup("cgroup")?,
    }))
}

impl CheckSpec for OomWaits {
    fn name(&self) -> String {
        format!("oom-waits({})", self.cgroup)
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        let name = self.name();
        let written = |value: &'static str| {
            (rec.steps.iter())
                .filter(|s| s.kind == StepKind::Set && s.cgroup == self.cgroup)
                .filter_map(|s| Some((s, s.knob.as_ref()?)))
                .filter(move |(_, k)| {
                    k.file == "memory.oom_control"
                        && k.written.as_deref() == Some(value)
                        && k.error.is_none()
                })
                .map(|(s, _)| s.end)
        };
        let disabled_at = written("1").next();
        // Until oom_kill_disable is cleared again, if it is.
        let until = (written("0"))
            .find(|&t| disabled_at.is_some_and(|from| t > from))
            .unwrap_or(f64::INFINITY);
        let Some(from) = disabled_at else {
            return missing(
                name,
                format!("oom_kill_disable was not set in {}", self.cgroup),
            );
        };
        let steps: Vec<&StepRecord> = (rec.steps.iter().chain(&rec.stopped))
            .filter(|s| s.kind == StepKind::Exhaust && s.cgroup == self.cgroup)
            .filter(|s| s.start >= from && s.start < until)
            .collect();
        if steps.is_empty() {
            return missing(
                name,
                format!(
                    "no exhaust step ran in {} after oom_kill_disable",
                    self.cgroup
                ),
            );
        }
        for st in &steps {
            if let Some(why) = wrong(st) {
                let mut r = CheckResult::new(
                    name,
                    Outcome::Fail,
                    why.0,
                    "no task killed; under OOM while waiting; finished once the limit was raised"
                        .into(),
                    format!(
                        "in '{}' (t={:.3}s..{:.3}s): {}",
                        st.describe, st.start, st.end, why.1
                    ),
                );
                r.at = Some(st.end);
                return r.breaking(&v1::OOM_DISABLE);
            }
        }
        CheckResult::new(
            name,
            Outcome::Pass,
            format!("{} OOMs waited, none killed", steps.len()),
            "no task killed; under OOM while waiting; finished once the limit was raised".into(),
            format!(
                "with oom_kill_disable, each of {} exhaust steps in {} waited under OOM, killed nothing, and finished after the limit was raised",
                steps.len(),
                self.cgroup
            ),
        )
    }
    fn promises(&self, _: &Record) -> Vec<&'static Contract> {
        vec![&v1::OOM_DISABLE]
    }
}

/// What went wrong in one exhaust step: (actual, why).
fn wrong(st: &StepRecord) -> Option<(String, String)> {
    if st.killed > 0 {
        return Some((
            format!("{} tasks killed", st.killed),
            "the OOM killer killed a task although oom_kill_disable was set".into(),
        ));
    }
    match st.waited {
        None => Some((
            "the task did not wait".into(),
            "the task finished before its wait ended: it never ran into the limit".into(),
        )),
        Some(false) => Some((
            "under_oom 0".into(),
            "the task was still running when its wait ended, but memory.oom_control did not show the group under OOM".into(),
        )),
        Some(true) if st.bytes == 0 => Some((
            "the task did not finish".into(),
            "the task did not finish after the limit was raised".into(),
        )),
        Some(true) => None,
    }
}
