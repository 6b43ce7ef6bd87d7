//! settles: after each sync step the counters fall to a bound.

use crate::model::contract::{v1, v2};
use std::time::Duration;

use crate::check::args::CheckArgs;
use crate::check::{
    CGROUP, Check, CheckResult, CheckSpec, Columns, Kind, NEEDS, Needs, Outcome, columns, missing,
    opt, req,
};
use crate::model::StepKind;
use crate::model::error::ScenarioError;
use crate::model::step;
use crate::model::units::human_bytes;
use crate::model::{Record, StepRecord};

/// (b) after each sync step, every counter falls to at most `bound` within `within` seconds (and
/// before the next step starts, which would dirty pages again).
pub fn settles(
    name: String,
    rec: &Record,
    cgroup: &str,
    counters: &[String],
    within: f64,
    bound: Option<u64>,
    after: &[StepKind],
) -> CheckResult {
    let cols = match columns(rec, cgroup, counters) {
        Ok(c) => c,
        Err(e) => return missing(name, e),
    };
    let (bound, tol) = bound_and_tolerance(rec, bound);
    let syncs: Vec<usize> = (0..rec.steps.len())
        .filter(|&i| after.contains(&rec.steps[i].kind))
        .collect();
    if syncs.is_empty() {
        return missing(
            name,
            format!("the scenario ran no {} step", step::join(after, "/")),
        );
    }
    let top = peak(rec, &cols);
    if top <= 2 * bound {
        return missing(
            name,
            format!(
                "{} reached at most {}, within twice the bound: there was nothing to settle",
                counters.join(", "),
                human_bytes(top)
            ),
        );
    }
    let mut slowest = 0.0f64;
    for &si in &syncs {
        let s = &rec.steps[si];
        let rows = window(rec, si, within);
        if rows.is_empty() {
            return missing(
                name,
                format!(
                    "no sample between the end of '{}' at t={:.3}s and the next step",
                    s.describe, s.end
                ),
            );
        }
        let settled = rows
            .iter()
            .find(|&&r| cols.iter().all(|(_, c)| rec.series.get(r, *c) <= bound));
        match settled {
            Some(&r) => slowest = slowest.max(rec.series.t[r] - s.end),
            None => {
                return never_settled(name, rec, &cols, s, &rows, bound, tol);
            }
        }
    }
    let settled = Settled {
        steps: syncs.len(),
        slowest,
        top,
    };
    passed(name, counters, after, within, (bound, tol), settled)
}

/// The bound the counters must fall to, and its tolerance text: the scenario's, or the
/// unflushed-stats bound.
fn bound_and_tolerance(rec: &Record, bound: Option<u64>) -> (i64, String) {
    match bound {
        Some(b) => (
            b as i64,
            format!("{} (set in the scenario)", human_bytes(b as i64)),
        ),
        None => (
            rec.machine.stat_batch_bytes() as i64,
            rec.machine.stat_batch_explained(),
        ),
    }
}

/// What there was to settle: the counters' peak over the run.
fn peak(rec: &Record, cols: &Columns) -> i64 {
    (0..rec.series.len())
        .flat_map(|r| cols.iter().map(move |(_, c)| (r, *c)))
        .map(|(r, c)| rec.series.get(r, c))
        .max()
        .unwrap_or(0)
}

/// The samples after step `si` in which its counters must settle: from its end for `within`
/// seconds, and before the next step starts (one that is not a `sleep`).
fn window(rec: &Record, si: usize, within: f64) -> Vec<usize> {
    let s = &rec.steps[si];
    let next_start = rec
        .steps
        .get(si + 1)
        .filter(|n| n.kind != StepKind::Sleep)
        .map(|n| n.start)
        .unwrap_or(f64::INFINITY);
    let end = (s.end + within).min(next_start);
    rec.series.rows_between(s.end, end).collect()
}

/// How the counters settled: after how many steps, the slowest (s), from what peak.
struct Settled {
    steps: usize,
    slowest: f64,
    top: i64,
}

/// The pass result, once the counters settled after every step.
fn passed(
    name: String,
    counters: &[String],
    after: &[StepKind],
    within: f64,
    (bound, tol): (i64, String),
    settled: Settled,
) -> CheckResult {
    let Settled {
        steps,
        slowest,
        top,
    } = settled;
    let mut r = CheckResult::new(
        name,
        Outcome::Pass,
        format!(
            "settled after all {} {} steps, slowest in {:.3}s, from up to {}",
            steps,
            step::join(after, "/"),
            slowest,
            human_bytes(top)
        ),
        format!(
            "{} <= {} within {within}s",
            counters.join(", "),
            human_bytes(bound)
        ),
        format!(
            "{} (up to {} during the run) came back under the bound after every {} step",
            counters.join(", "),
            human_bytes(top),
            step::join(after, "/")
        ),
    );
    r.tolerance = Some(tol);
    r
}

/// The failure when a counter stayed above the bound for the whole window after a sync.
fn never_settled(
    name: String,
    rec: &Record,
    cols: &Columns,
    s: &StepRecord,
    rows: &[usize],
    bound: i64,
    tol: String,
) -> CheckResult {
    // Report the last sample of the window: the counter never came down.
    let r = *rows.last().unwrap();
    let (col, c) = cols
        .iter()
        .find(|(_, c)| rec.series.get(r, *c) > bound)
        .unwrap();
    let v = rec.series.get(r, *c);
    let mut res = CheckResult::new(
        name,
        Outcome::Fail,
        format!("{col} = {v} ({})", human_bytes(v)),
        format!("<= {bound} ({})", human_bytes(bound)),
        format!(
            "after the {} step '{}' in phase {} ended at t={:.3}s, {col} stayed above the bound until t={:.3}s ({} samples): {}",
            s.kind,
            s.describe,
            rec.phases[s.phase].name,
            s.end,
            rec.series.t[r],
            rows.len(),
            rec.series.describe_row(r)
        ),
    );
    res.tolerance = Some(tol);
    res.at = Some(rec.series.t[r]);
    res.bound = Some(bound);
    res.columns = vec![col.clone()];
    res
}

/// `settles`: after each step of a kind in `after` (default: sync), the counters fall to at most
/// `bound` (default: the per-CPU stat batch) within `within` (default: 10 s).
#[derive(Debug, Clone, PartialEq)]
pub struct Settles {
    pub cgroup: String,
    pub counters: Vec<String>,
    pub within: Duration,
    pub bound: Option<u64>,
    pub after: Vec<StepKind>,
    /// Not exercised where the kernel cannot move charges (`needs = "charge-moving"`).
    pub needs_moving: bool,
}

/// `settles` in the check table.
pub const KIND: Kind = Kind {
    kind: "settles",
    doc: "After every step of a kind in `after`, all the counters fall to at most `bound` within \
`within`, and before the next step starts (a following `sleep` step does not end the \
window). After sync(2) the group's pages are clean, so what memory.stat still shows is \
at most what the memcg statistics have not flushed: the unflushed-stats bound. Not \
exercised when no step of those kinds ran, when no sample fell between such a \
step's end and the next step, or when the counters never rose above twice the bound \
(nothing to settle); the pass line says how high they went. Result name: `settles(<cgroup>)`, or `settles(<cgroup> \
after <kinds>)` when `after` is not `[\"sync\"]`.",
    keys: &[
        CGROUP,
        req("counters", "the counters that must settle"),
        opt(
            "within",
            "how long after the step they may take (default `\"10s\"`)",
        ),
        opt(
            "bound",
            "the value (a size) they must fall to (default: the unflushed-stats bound)",
        ),
        opt(
            "after",
            "step kinds after which they must settle (default `[\"sync\"]`)",
        ),
        NEEDS,
    ],
    parse,
    promises: &[&v2::STAT_DIRTY, &v1::STAT_DIRTY],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(Settles {
        cgroup: i.cgroup("cgroup")?,
        counters: i.counters()?,
        within: i.duration("within")?.unwrap_or(Duration::from_secs(10)),
        bound: i.size("bound")?,
        after: i.kinds("after", &[StepKind::Sync])?,
        needs_moving: i.needs_moving()?,
    }))
}

impl CheckSpec for Settles {
    fn name(&self) -> String {
        if self.after == [StepKind::Sync] {
            format!("settles({})", self.cgroup)
        } else {
            format!(
                "settles({} after {})",
                self.cgroup,
                step::join(&self.after, "/")
            )
        }
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: self.counters.clone(),
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        if let Some(r) = crate::check::without_moving(&self.name(), rec, self.needs_moving) {
            return r;
        }
        settles(
            self.name(),
            rec,
            &self.cgroup,
            &self.counters,
            self.within.as_secs_f64(),
            self.bound,
            &self.after,
        )
    }
}
