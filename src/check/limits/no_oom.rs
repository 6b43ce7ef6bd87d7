//! no-oom: a group whose usage met its limits, and whose memory the kernel could reclaim or
//! throttle, saw no OOM: memory.high never invokes the OOM killer, and page cache is reclaimed
//! (dirty pages written back first) rather than a task killed.

use crate::check::args::CheckArgs;
use crate::check::{CGROUP, Check, CheckResult, CheckSpec, Kind, Needs, Outcome, columns, missing};
use crate::model::contract::{Contract, v2};
use crate::model::counter::{OOM_EVENTS, OOM_KILLS, USAGE};
use crate::model::error::ScenarioError;
use crate::model::record::within;
use crate::model::units::human_bytes;
use crate::model::{Column, Record, Version};

/// `no-oom` in the check table.
pub const KIND: Kind = Kind {
    kind: "no-oom",
    doc: "The group's OOM counts (v2 memory.events `oom` and `oom_kill`, v1 memory.oom_control \
`oom_kill`) never rose and no task of it was OOM-killed in an `exhaust` step, while its usage \
met a limit or memory.high of the group or an ancestor (came within 90 % of the least limit, \
or passed the least memory.high). cgroup-v2.rst: going over memory.high \"never invokes the OOM \
killer\" (the kernel throttles the task instead), and page cache is reclaimed, dirty pages \
written back first, where anonymous memory would need the OOM killer. Not exercised when the \
usage never met a limit or memory.high. No tolerance: an OOM is an event. Result name: \
`no-oom(<cgroup>)`.",
    keys: &[CGROUP],
    parse,
    promises: &[&v2::HIGH_NO_OOM, &v2::MAX_NO_OOM_CACHE, &v2::EVENTS_OOM],
};

#[derive(Debug, Clone, PartialEq)]
pub struct NoOom {
    pub cgroup: String,
}

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(NoOom {
        cgroup: i.cgroup("cgroup")?,
    }))
}

impl CheckSpec for NoOom {
    fn name(&self) -> String {
        format!("no-oom({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: vec![USAGE.into(), OOM_KILLS.into()],
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        no_oom(self.name(), rec, &self.cgroup)
    }
}

/// The least memory limit and memory.high of `cgroup` and its ancestors.
fn caps(rec: &Record, cgroup: &str) -> (Option<u64>, Option<u64>) {
    let chain = || rec.cgroups.iter().filter(|a| within(cgroup, &a.name));
    (
        chain().filter_map(|a| a.limit).min(),
        chain().filter_map(|a| a.high).min(),
    )
}

fn no_oom(name: String, rec: &Record, cgroup: &str) -> CheckResult {
    let Some(usage) = rec.series.col(&Column::group(cgroup, USAGE)) else {
        return missing(name, format!("{cgroup}'s usage was not sampled"));
    };
    let s = &rec.series;
    let peak = (0..s.len()).map(|r| s.get(r, usage)).max().unwrap_or(0);
    let (limit, high) = caps(rec, cgroup);
    let met_limit = limit.is_some_and(|l| peak as u64 >= l / 10 * 9);
    let met_high = high.is_some_and(|h| peak as u64 > h);
    if !met_limit && !met_high {
        return missing(
            name,
            format!(
                "{cgroup}'s usage (up to {}) never met a limit or memory.high",
                human_bytes(peak)
            ),
        );
    }
    let counters: Vec<String> = [OOM_KILLS, OOM_EVENTS].map(String::from).to_vec();
    let cols = columns(rec, cgroup, &counters[..1]).unwrap_or_default();
    let cols: Vec<(Column, usize)> = (cols.into_iter())
        .chain(columns(rec, cgroup, &counters[1..]).unwrap_or_default())
        .collect();
    let killed: u32 = (rec.steps.iter())
        .filter(|st| st.cgroup == cgroup)
        .map(|st| st.killed)
        .sum();
    for (col, c) in &cols {
        let first = if s.is_empty() { 0 } else { s.get(0, *c) };
        if let Some(r) = (0..s.len()).find(|&r| s.get(r, *c) > first) {
            let mut res = CheckResult::new(
                name,
                Outcome::Fail,
                format!("{col} {} -> {}", first, s.get(r, *c)),
                "no OOM".into(),
                format!(
                    "at t={:.3}s (phase {}) {col} rose from {first} to {} while {cgroup}'s usage met {}",
                    s.t[r],
                    rec.phase_at(s.t[r]),
                    s.get(r, *c),
                    met(limit, high)
                ),
            );
            res.at = Some(s.t[r]);
            res.columns = vec![col.clone()];
            return breaking(res, rec, met_limit);
        }
    }
    if killed > 0 {
        let res = CheckResult::new(
            name,
            Outcome::Fail,
            format!("{killed} tasks killed"),
            "no OOM".into(),
            format!(
                "{killed} of {cgroup}'s tasks died of SIGKILL while its usage met {}",
                met(limit, high)
            ),
        );
        return breaking(res, rec, met_limit);
    }
    if cols.is_empty() {
        return missing(name, format!("neither OOM count of {cgroup} was sampled"));
    }
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!("usage up to {}, no OOM", human_bytes(peak)),
        "no OOM".into(),
        format!(
            "{cgroup}'s usage reached {} against {}; its OOM counts ({}) stayed",
            human_bytes(peak),
            met(limit, high),
            cols.iter()
                .map(|(c, _)| c.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    res.promises = judged(rec, met_limit);
    res
}

/// A failure, quoting the promise it broke.
fn breaking(res: CheckResult, rec: &Record, met_limit: bool) -> CheckResult {
    match judged(rec, met_limit)
        .first()
        .and_then(|id| crate::model::contract::get(id))
    {
        Some(p) => res.breaking(p),
        None => res,
    }
}

/// The promise a run judged: the page cache's where the usage met a limit, memory.high's where
/// it passed only a memory.high (v2; memory.rst promises neither).
fn judged(rec: &Record, met_limit: bool) -> Vec<String> {
    let p: &[&Contract] = match (rec.version, met_limit) {
        (Version::V1, _) => return Vec::new(),
        // Readahead and the other allocations that do not retry do not count an oom event.
        (Version::V2, true) => &[&v2::MAX_NO_OOM_CACHE, &v2::EVENTS_OOM],
        (Version::V2, false) => &[&v2::HIGH_NO_OOM],
    };
    p.iter().map(|c| c.id.to_string()).collect()
}

fn met(limit: Option<u64>, high: Option<u64>) -> String {
    let mut parts = Vec::new();
    if let Some(l) = limit {
        parts.push(format!("a limit of {}", human_bytes(l as i64)));
    }
    if let Some(h) = high {
        parts.push(format!("a memory.high of {}", human_bytes(h as i64)));
    }
    parts.join(" and ")
}
