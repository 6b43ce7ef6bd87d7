//! faults: a group's fault counters against what its tasks, and those of the groups below it,
//! counted of their own faults. The
//! kernel counts a fault in the memcg of the faulting mm's owner (count_memcg_event_mm, at the
//! start of handle_mm_fault, PGFAULT; where it reads a page in, PGMAJFAULT), and in the task's
//! own counters when the fault completes (mm_account_fault: min_flt, maj_flt, which getrusage
//! reports). A worker joins its group before exec, so each of its faults is in the group's
//! pgfault: across a step, the group's pgfault rose by at least what the step's workers counted.
//! A retried fault is counted again in the memcg only, and tasks held in the group fault too, so
//! the rise may be larger; for a step that ran alone in its group, at most half as large again.
//! pgmajfault gets no bound from the tasks' count (see `faults`).

use crate::check::args::CheckArgs;
use crate::check::{
    Check, CheckResult, CheckSpec, Kind, Needs, Outcome, missing, opt, row_at_or_after,
    row_at_or_before, stale_lag,
};
use crate::model::contract::v2;
use crate::model::error::ScenarioError;
use crate::model::{Column, Record, StepKind, StepRecord};

/// Steps whose workers took fewer faults are not judged: the tolerance would be most of them.
const MIN_FAULTS: u64 = 4096;

/// The factor the group's count may exceed its tasks' by, for a step alone in its group.
const MAX_EXCESS: f64 = 1.5;

/// Whether a task held by a hold step was alive in `cgroup` or below it at some time in
/// [from, to] (it faults too, so the group's count may be above the step's workers').
fn others_held(rec: &Record, cgroup: &str, (from, to): (f64, f64)) -> bool {
    let within = |g: &str| g == cgroup || g.starts_with(&format!("{cgroup}/"));
    // A held task lives from its hold step to its release step; moves change its group.
    let mut alive: Vec<(String, String, f64)> = Vec::new(); // (describe of hold, group, since)
    for s in &rec.steps {
        match s.kind {
            StepKind::Hold => alive.push((s.describe.clone(), s.cgroup.clone(), s.start)),
            StepKind::Move | StepKind::Release | StepKind::Exhaust => {
                // The record does not name the task: any live one may have moved or gone. Be
                // cautious: a move or release keeps "someone held" true up to its end.
                if alive.iter().any(|(_, g, since)| within(g) && *since <= to) && s.end >= from {
                    return true;
                }
                if s.kind == StepKind::Move {
                    for a in &mut alive {
                        a.1 = s.cgroup.clone();
                    }
                }
            }
            _ => {}
        }
    }
    alive.iter().any(|(_, g, since)| within(g) && *since <= to)
}

/// faults: for each step whose workers took at least `MIN_FAULTS` faults in `cgroup`, the
/// group's pgfault rose across it by at least their count (within the unflushed bound), and by
/// at most `MAX_EXCESS` times it when no held task shared the group. Not exercised when no step
/// took that many. pgmajfault has no such bound: the task counts a fault that was retried as
/// major (mm_account_fault: FAULT_FLAG_TRIED) though it read nothing in, and the group counts
/// only the faults that read a page (Debian's 6.1: an mmap write over a file under writeback,
/// 369 major faults of the task's own, 1 in the group's pgmajfault).
pub fn faults(name: String, rec: &Record, cgroup: &str) -> CheckResult {
    let s = &rec.series;
    let Some(fc) = s.col(&Column::group(cgroup, "pgfault")) else {
        return missing(name, format!("{cgroup}'s pgfault was not sampled"));
    };
    let tol = 2 * 64 * rec.machine.cpus as i64;
    let steps: Vec<&StepRecord> = rec
        .steps
        .iter()
        // Steps in the group or below it: its counters are hierarchical.
        .filter(|st| st.cgroup == cgroup || st.cgroup.starts_with(&format!("{cgroup}/")))
        .filter(|st| st.minflt + st.majflt >= MIN_FAULTS)
        .collect();
    let mut judged = Vec::new();
    for st in &steps {
        let r0 = row_at_or_before(rec, st.start);
        let Some(r1) = row_at_or_after(rec, st.end) else {
            continue;
        };
        let tasks = (st.minflt + st.majflt) as i64;
        // A parent's statistics may lag its children's by the periodic flush: its lower bound is
        // read that long after the step (the counter never falls), and only a step in the group
        // itself gets the upper bound (a stale count before it would inflate the rise).
        let lag = stale_lag(rec, cgroup);
        let own = st.cgroup == cgroup;
        let late = row_at_or_after(rec, st.end + lag);
        let r_low = late.unwrap_or(s.len() - 1);
        if late.is_none() && !own && s.get(r_low, fc) - s.get(r0, fc) < tasks - tol {
            // The run ended before the parent's count had to be fresh.
            continue;
        }
        let group = s.get(r_low, fc) - s.get(r0, fc);
        let alone = own && !others_held(rec, cgroup, (st.start, st.end));
        let fail = |what: &str, expected: String, group: i64, row: usize| {
            let t = s.t[row];
            let mut res = CheckResult::new(
                name.clone(),
                Outcome::Fail,
                format!("{cgroup}.pgfault rose by {group}"),
                expected,
                format!(
                    "across '{}' (phase {}, t={:.3}s..{t:.3}s) its workers counted {tasks} page faults of their own (getrusage: {} minor, {} major) and {cgroup}'s pgfault rose by {group}: {what}",
                    st.describe, rec.phases[st.phase].name, st.start, st.minflt, st.majflt
                ),
            );
            res.at = Some(t);
            res.columns = vec![Column::group(cgroup, "pgfault")];
            res.tolerance = Some(format!(
                "{tol} events (2 x 64 x {} CPUs: the unflushed bound of memcg events); at most {MAX_EXCESS}x the tasks' count when no held task shared the group (a retried fault counts again in the memcg only)",
                rec.machine.cpus
            ));
            res
        };
        if group < tasks - tol {
            return fail(
                "the group counted fewer faults than its tasks took",
                format!(">= {tasks} - {tol}"),
                group,
                r_low,
            );
        }
        let group_at_end = s.get(r1, fc) - s.get(r0, fc);
        if alone && group_at_end as f64 > tasks as f64 * MAX_EXCESS + tol as f64 {
            return fail(
                "the group counted more faults than its tasks could have taken",
                format!("<= {MAX_EXCESS} x {tasks} + {tol}"),
                group_at_end,
                r1,
            );
        }
        judged.push(format!("{} {group} for {tasks}", st.kind));
    }
    if judged.is_empty() {
        return missing(
            name,
            format!("no step in {cgroup} took {MIN_FAULTS} page faults or more: nothing to count"),
        );
    }
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!("{} steps judged", judged.len()),
        "the group's pgfault rise >= its tasks' faults".into(),
        format!(
            "{cgroup}'s pgfault rose across each step by at least what its workers counted of their own faults: {}",
            judged.join(", ")
        ),
    );
    res.tolerance = Some(format!(
        "{tol} events (the unflushed bound of memcg events); at most {MAX_EXCESS}x for a step alone in its group"
    ));
    res.columns = vec![Column::group(cgroup, "pgfault")];
    res
}

/// `faults`: `cgroup`'s pgfault against its workers' own counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Faults {
    pub cgroup: String,
}

/// `faults` in the check table.
pub const KIND: Kind = Kind {
    kind: "faults",
    doc: "The group's fault counters against what its workers counted of their own faults. \
The kernel counts a fault in the memcg of the faulting mm's owner at the start of \
handle_mm_fault (pgfault), and where it reads a page in (pgmajfault); the task's own \
counters (getrusage: minor and major faults) when the fault completes. Every worker \
joins its group before exec, so across a step whose workers took at least 4096 faults, \
the group's pgfault must rise by at least their count, and for a step alone in its group \
(no held task there) by at most 1.5 times it (a retried fault counts again in the memcg \
only). pgmajfault is not bounded so: the task counts a retried fault as major though it \
read nothing in, the group only a fault that read a page. Tolerance: the unflushed bound of \
memcg events, 2 x 64 x CPUs. Not exercised when no step took that many faults. Every \
scenario gets one for every group. Result name: `faults(<cgroup>)`.",
    keys: &[opt(
        "cgroup",
        "the declared group judged; may be left out when the scenario declares one group only",
    )],
    parse,
    promises: &[&v2::STAT_FAULTS],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(Faults {
        cgroup: i.cgroup("cgroup")?,
    }))
}

impl CheckSpec for Faults {
    fn name(&self) -> String {
        format!("faults({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: vec!["pgfault".into()],
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        faults(self.name(), rec, &self.cgroup)
    }
}
