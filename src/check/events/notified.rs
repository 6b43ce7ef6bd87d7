//! notified: cgroup v1's notifications arrive when, and only when, their event happened. A group's
//! `listen` entries register eventfds with cgroup.event_control (memory.rst 9, 10, 11); the runner
//! records when each became readable.

use crate::check::args::CheckArgs;
use crate::check::{
    CGROUP, Check, CheckResult, CheckSpec, Kind, Needs, Outcome, missing, opt, req,
};
use crate::model::contract::{Contract, v1};
use crate::model::counter::{LIMIT_HITS, MEMSW, USAGE};
use crate::model::error::ScenarioError;
use crate::model::record::within;
use crate::model::units::{human_bytes, parse_size};
use crate::model::{Column, Notice, Record, StepKind};

/// How long after its event a notification may come: the kernel signals the eventfd from the
/// charge path (thresholds, OOM) or from a work item (pressure); the watcher polls every 50 ms;
/// a busy emulated machine may add half a second.
const LATE: f64 = 1.0;

/// `notified` in the check table.
pub const KIND: Kind = Kind {
    kind: "notified",
    doc: "cgroup v1: the eventfd a group's `listen` entry registered was signalled when, and only \
when, its event happened. A usage threshold (`memory.usage_in_bytes <size>`, or memsw): each \
time the sampled usage crossed it, either way, by more than the kernel's check interval (it \
compares the usage with the thresholds every 128 page events per CPU, plus the 64-page charge \
stock per CPU), a notification came between the sample before and 1 s after the sample past it; \
and none came while the usage stayed farther than that from it. `memory.oom_control`: one came \
during each `exhaust` step of the group that OOM-killed or stopped a task, and none outside \
them. `memory.pressure_level <level>[,mode]`: one came during the steps in which the group (with \
`hierarchy` or the default mode, or a group below it) reclaimed at a limit (its failcnt rose); \
with `never = true`, none came at all (a `local` listener on an ancestor of the group that \
reclaimed). Not exercised when the event never happened; where the kernel refused the \
registration, with its reason. Result name: `notified(<cgroup>: <listen>)`.",
    keys: &[
        CGROUP,
        req("listen", "one of the group's `listen` entries"),
        opt("never", "no notification may come at all (default false)"),
    ],
    parse,
    promises: &[&v1::THRESHOLDS, &v1::OOM_NOTIFY, &v1::PRESSURE_LEVEL],
};

#[derive(Debug, Clone, PartialEq)]
pub struct Notified {
    pub cgroup: String,
    pub listen: String,
    pub never: bool,
}

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(Notified {
        cgroup: i.cgroup("cgroup")?,
        listen: i.need::<String>("listen")?.into_inner().trim().to_string(),
        never: i.get::<bool>("never")?.is_some_and(|b| b.into_inner()),
    }))
}

impl Notified {
    fn promise(&self) -> &'static Contract {
        match self.listen.split(' ').next() {
            Some("memory.oom_control") => &v1::OOM_NOTIFY,
            Some("memory.pressure_level") => &v1::PRESSURE_LEVEL,
            _ => &v1::THRESHOLDS,
        }
    }
}

impl CheckSpec for Notified {
    fn name(&self) -> String {
        format!("notified({}: {})", self.cgroup, self.listen)
    }
    fn needs(&self) -> Needs {
        let mut counters = vec![USAGE.into(), LIMIT_HITS.into()];
        if self.listen.starts_with("memory.memsw.") {
            counters.push(MEMSW.into());
        }
        Needs {
            counters,
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        let name = self.name();
        let Some(all) = rec.notices.as_ref() else {
            return missing(name, "nothing was listened to".into());
        };
        let mine: Vec<&Notice> = (all.iter())
            .filter(|n| n.group == self.cgroup && n.file == self.listen)
            .collect();
        if let Some(why) = mine.iter().find_map(|n| n.refused.as_ref()) {
            return missing(name, format!("the kernel refused the listener: {why}"));
        }
        // A notice of an eventfd signalled n times stands for n notifications.
        let times: Vec<f64> = (mine.iter())
            .flat_map(|n| std::iter::repeat_n(n.t, n.count.max(1) as usize))
            .collect();
        let (file, arg) = self.listen.split_once(' ').unwrap_or((&self.listen, ""));
        let r = match file {
            "memory.oom_control" => oom(name, rec, &self.cgroup, &times),
            "memory.pressure_level" => pressure(name, rec, &self.cgroup, arg, self.never, &times),
            _ => threshold(name, rec, &self.cgroup, file, arg, &times),
        };
        match r.outcome {
            Outcome::Fail => r.breaking(self.promise()),
            _ => r,
        }
    }
    fn promises(&self, _: &Record) -> Vec<&'static Contract> {
        vec![self.promise()]
    }
}

fn heard(times: &[f64], from: f64, to: f64) -> bool {
    times.iter().any(|&t| t >= from && t <= to)
}

/// `actual` names what went wrong in a few words (the missing or the stray notification).
fn fail(name: String, actual: String, why: String, at: f64) -> CheckResult {
    let mut r = CheckResult::new(
        name,
        Outcome::Fail,
        actual,
        "a notification with each event, none without".into(),
        why,
    );
    r.at = Some(at);
    r
}

/// A usage threshold: every crossing notified, no notification far from it.
fn threshold(
    name: String,
    rec: &Record,
    cgroup: &str,
    file: &str,
    arg: &str,
    times: &[f64],
) -> CheckResult {
    let counter = if file == "memory.memsw.usage_in_bytes" {
        MEMSW
    } else {
        USAGE
    };
    let (Some(c), Ok(at)) = (
        rec.series.col(&Column::group(cgroup, counter)),
        parse_size(arg),
    ) else {
        return missing(name, format!("{cgroup}'s {counter} was not sampled"));
    };
    let m = &rec.machine;
    let margin = ((128 + 64) * m.cpus * m.page_size) as i64;
    let (s, at) = (&rec.series, at as i64);
    let mut crossings = 0;
    // The last sample on a side of the threshold (farther from it than the margin): a crossing
    // runs from there to the first sample on the other side, however many samples lie between.
    let side = |v: i64| {
        (v < at - margin)
            .then_some(false)
            .or((v > at + margin).then_some(true))
    };
    let mut last: Option<(bool, usize)> = None;
    // Each notification answers one crossing: the earliest not yet taken in its window.
    let mut taken = vec![false; times.len()];
    for r in 0..s.len() {
        let Some(up) = side(s.get(r, c)) else {
            continue;
        };
        let Some((was, from)) = last.replace((up, r)) else {
            continue;
        };
        if was == up {
            continue;
        }
        crossings += 1;
        let answer = (0..times.len())
            .find(|&i| !taken[i] && times[i] >= s.t[from] && times[i] <= s.t[r] + LATE);
        if let Some(i) = answer {
            taken[i] = true;
        } else {
            let (a, b) = (s.get(from, c), s.get(r, c));
            let why = format!(
                "{cgroup}'s {counter} went from {} to {} across the {} threshold between t={:.3}s and t={:.3}s, and no notification came",
                human_bytes(a),
                human_bytes(b),
                human_bytes(at),
                s.t[from],
                s.t[r]
            );
            let actual = format!(
                "{counter} {} -> {} across {}: no notification",
                human_bytes(a),
                human_bytes(b),
                human_bytes(at)
            );
            return fail(name, actual, why, s.t[r]);
        }
    }
    if let Some((actual, why, t)) = stray(rec, (c, counter), cgroup, (at, margin), times) {
        return fail(name, actual, why, t);
    }
    if crossings == 0 {
        return missing(
            name,
            format!(
                "{cgroup}'s {counter} never crossed {} by more than {}",
                human_bytes(at),
                human_bytes(margin)
            ),
        );
    }
    pass(
        name,
        format!(
            "{crossings} crossings of {}, each notified; {} notifications in all",
            human_bytes(at),
            times.len()
        ),
    )
}

/// A notification that came while the usage stayed far from the threshold, for a second
/// either side: what it was, why it is wrong, and when.
fn stray(
    rec: &Record,
    (c, counter): (usize, &str),
    cgroup: &str,
    (at, margin): (i64, i64),
    times: &[f64],
) -> Option<(String, String, f64)> {
    let s = &rec.series;
    for &t in times {
        let near = s.rows_between(t - LATE, t + LATE).map(|r| s.get(r, c));
        let (lo, hi) = near.fold((i64::MAX, i64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
        if lo != i64::MAX && (lo > at + margin || hi < at - margin) {
            let why = format!(
                "a notification came at t={t:.3}s while {cgroup}'s {counter} stayed between {} and {}, farther than {} from the {} threshold",
                human_bytes(lo),
                human_bytes(hi),
                human_bytes(margin),
                human_bytes(at)
            );
            let actual = format!(
                "a notification at t={t:.3}s with {counter} {}..{}, not near {}",
                human_bytes(lo),
                human_bytes(hi),
                human_bytes(at)
            );
            return Some((actual, why, t));
        }
    }
    None
}

fn pass(name: String, what: String) -> CheckResult {
    CheckResult::new(
        name,
        Outcome::Pass,
        what.clone(),
        "a notification with each event, none without".into(),
        what,
    )
}

/// OOM: each exhaust step that killed or stopped a task notified, nothing outside them.
fn oom(name: String, rec: &Record, cgroup: &str, times: &[f64]) -> CheckResult {
    let steps: Vec<(f64, f64)> = (rec.steps.iter().chain(&rec.stopped))
        .filter(|s| s.kind == StepKind::Exhaust && s.cgroup == cgroup)
        .filter(|s| s.killed > 0 || s.task_killed || s.bytes == 0 || s.waited == Some(true))
        .map(|s| (s.start, s.end))
        .collect();
    for &(a, b) in &steps {
        if !heard(times, a, b + LATE) {
            return fail(
                name,
                format!("an OOM at t={a:.3}..{b:.3}s: no notification"),
                format!("an OOM in {cgroup} between t={a:.3}s and t={b:.3}s was not notified"),
                b,
            );
        }
    }
    if let Some(&t) = times
        .iter()
        .find(|&&t| !steps.iter().any(|&(a, b)| t >= a && t <= b + LATE))
    {
        return fail(
            name,
            format!("an OOM notification at t={t:.3}s, no OOM"),
            format!("an OOM notification came at t={t:.3}s, outside every OOM of {cgroup}"),
            t,
        );
    }
    if steps.is_empty() {
        return missing(name, format!("no OOM happened in {cgroup}"));
    }
    pass(name, format!("{} OOMs, each notified", steps.len()))
}

/// Pressure: notified during the steps that reclaimed at the group's limit (or below it, unless
/// `local`); with `never`, not at all.
fn pressure(
    name: String,
    rec: &Record,
    cgroup: &str,
    arg: &str,
    never: bool,
    times: &[f64],
) -> CheckResult {
    if never {
        return match times.first() {
            Some(&t) => fail(
                name,
                format!("a {arg} notification at t={t:.3}s"),
                format!("a {arg} notification came at t={t:.3}s, where none may come"),
                t,
            ),
            None if reclaimed(rec, cgroup, true).is_empty() => {
                missing(name, format!("nothing below {cgroup} reclaimed"))
            }
            None => pass(name, "no notification, as none may come".into()),
        };
    }
    let local = arg.ends_with(",local");
    let steps = reclaimed(rec, cgroup, !local);
    for &(a, b) in &steps {
        if !heard(times, a, b + LATE) {
            return fail(
                name,
                format!("reclaim at t={a:.3}..{b:.3}s: no {arg} notification"),
                format!(
                    "{cgroup} reclaimed at a limit between t={a:.3}s and t={b:.3}s and no {arg} notification came"
                ),
                b,
            );
        }
    }
    if steps.is_empty() {
        return missing(name, format!("{cgroup} never reclaimed at a limit"));
    }
    pass(
        name,
        format!(
            "{} steps reclaimed, each notified ({} notifications)",
            steps.len(),
            times.len()
        ),
    )
}

/// The (start, end) of the steps during which the failcnt of `cgroup` (or, with `below`, of a
/// group below it) rose by at least 512: reclaim at a limit, a vmpressure window's worth.
fn reclaimed(rec: &Record, cgroup: &str, below: bool) -> Vec<(f64, f64)> {
    let s = &rec.series;
    let cols: Vec<usize> = (rec.cgroups.iter())
        .filter(|g| g.name == cgroup || (below && within(&g.name, cgroup)))
        .filter_map(|g| s.col(&Column::group(&g.name, LIMIT_HITS)))
        .collect();
    (rec.steps.iter())
        .filter(|st| {
            let r0 = crate::check::row_done_before(rec, st.start);
            let r1 =
                crate::check::row_at_or_after(rec, st.end).unwrap_or(s.len().saturating_sub(1));
            cols.iter().any(|&c| s.get(r1, c) - s.get(r0, c) >= 512)
        })
        .map(|st| (st.start, st.end))
        .collect()
}
