//! monotonic: a group's event counters never fall. They count what happened since the group was
//! made (faults, reclaim, refaults, limit hits, OOM kills, ...): the kernel only adds to them, and
//! a child's counts stay in its ancestors when it is removed. A fall is a count taken back.

use crate::check::args::CheckArgs;
use crate::check::{CGROUP, Check, CheckResult, CheckSpec, Kind, Needs, Outcome, missing};
use crate::model::counter::{self, Kind as CounterKind};
use crate::model::error::ScenarioError;
use crate::model::{Column, Record};

/// The event counters of `cgroup` that were sampled: (column, its index).
fn events(rec: &Record, cgroup: &str) -> Vec<(Column, usize)> {
    rec.series
        .columns()
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            c.test_group() == Some(cgroup)
                && c.counter()
                    .and_then(counter::counter)
                    .is_some_and(|k| k.kind == CounterKind::Event)
        })
        .map(|(i, c)| (c.clone(), i))
        .collect()
}

/// The spans of the steps that reset `col`'s count on purpose: a `set` that wrote the file the
/// counter is read from (v1: 0 into memory.failcnt resets it, as memory.rst documents).
fn resets(rec: &Record, cgroup: &str, col: &Column) -> Vec<(f64, f64)> {
    let local = matches!(col, Column::Group { local: true, .. });
    let Some(file) = col
        .counter()
        .and_then(|n| counter::file_of(n, rec.version, local))
    else {
        return Vec::new();
    };
    (rec.steps.iter())
        .filter(|st| st.cgroup == cgroup)
        .filter(|st| {
            st.knob
                .as_ref()
                .is_some_and(|k| k.file == file && k.written.is_some() && k.error.is_none())
        })
        .map(|st| (st.start, st.end))
        .collect()
}

/// monotonic: no sampled event counter of `cgroup` is ever below its value at an earlier sample.
/// Not exercised when none of them rose.
pub fn monotonic(name: String, rec: &Record, cgroup: &str) -> CheckResult {
    let cols = events(rec, cgroup);
    if cols.is_empty() {
        return missing(name, format!("no event counter of {cgroup} was sampled"));
    }
    let s = &rec.series;
    let mut rose = Vec::new();
    let mut still = 0;
    for (col, c) in &cols {
        let resets = resets(rec, cgroup, col);
        let mut top = (0, if s.is_empty() { 0 } else { s.get(0, *c) });
        for r in 1..s.len() {
            let v = s.get(r, *c);
            let reset = (resets.iter()).any(|&(a, b)| a <= s.t[r] && b >= s.t[top.0]);
            if v < top.1 && !reset {
                let (t, was) = (s.t[r], top.1);
                let mut res = CheckResult::new(
                    name,
                    Outcome::Fail,
                    format!("{col} = {v}"),
                    format!(">= {was}, its value at t={:.3}s", s.t[top.0]),
                    format!(
                        "at t={t:.3}s (phase {}) {col} fell from {was} to {v} (by {}): an event counter only counts up, so a count was taken back: {}",
                        rec.phase_at(t),
                        was - v,
                        s.describe_cols(r, &[*c])
                    ),
                );
                res.at = Some(t);
                res.bound = Some(was);
                res.columns = vec![col.clone()];
                return res;
            }
            top = (r, v);
        }
        let first = if s.is_empty() { 0 } else { s.get(0, *c) };
        match top.1 - first {
            0 => still += 1,
            d => rose.push(format!("{} +{d}", col.counter().unwrap_or("?"))),
        }
    }
    if rose.is_empty() {
        return missing(
            name,
            format!(
                "none of {cgroup}'s {} event counters rose: a fall could not be seen",
                cols.len()
            ),
        );
    }
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!(
            "{} of {} event counters rose, none fell over {} samples",
            rose.len(),
            cols.len(),
            s.len()
        ),
        "never below an earlier value".into(),
        format!(
            "{cgroup}'s event counters only rose: {}{}",
            rose.join(", "),
            if still > 0 {
                format!("; {still} stayed where they were")
            } else {
                String::new()
            }
        ),
    );
    res.tolerance = Some("none: the kernel only adds to them".into());
    res.columns = cols.into_iter().map(|(c, _)| c).collect();
    res
}

/// `monotonic`: `cgroup`'s event counters never fall.
#[derive(Debug, Clone, PartialEq)]
pub struct Monotonic {
    pub cgroup: String,
}

/// `monotonic` in the check table.
pub const KIND: Kind = Kind {
    kind: "monotonic",
    doc: "The group's event counters never fall: every memory.stat event (pgfault, \
pgmajfault, pgscan and pgsteal with their kinds, pgrefill, pgactivate, pgdeactivate, \
pglazyfree(d), the workingset_* refaults, activations and restores, thp_* and the \
zero-page swap events; v1 pgpgin, pgpgout), every memory.events and memory.events.local \
key, memory.swap.events, v1 memory.failcnt, memory.memsw.failcnt and oom_control's \
oom_kill, whichever the kernel shows. They count what happened since the group was made: \
the kernel only adds to them, and a removed child's counts stay in its ancestors, so a \
value below an earlier one is a count taken back. No tolerance. Not exercised when none \
of them rose; the pass line names those that did, and by how much. Every scenario gets \
one for every group. Result name: `monotonic(<cgroup>)`.",
    keys: &[CGROUP],
    parse,
    promises: &[],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(Monotonic {
        cgroup: i.cgroup("cgroup")?,
    }))
}

impl CheckSpec for Monotonic {
    fn name(&self) -> String {
        format!("monotonic({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs {
            all_counters: true,
            ..Needs::default()
        }
    }
    /// Each sample is compared with the one before it.
    fn online(&self) -> bool {
        true
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        monotonic(self.name(), rec, &self.cgroup)
    }
}
