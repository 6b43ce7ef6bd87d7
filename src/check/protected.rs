//! protected: a group within its memory.min keeps its memory while reclaim works on its parent.
//! Reclaim rooted at a group gives each child its own memory.min as effective protection
//! (mm/page_counter.c: page_counter_calculate_protection, `parent == root`), and shrink_node_memcgs
//! skips a child whose usage is within it (mem_cgroup_below_min): not its LRU pages, not its
//! slab. Further down, a grandchild's effective min is a share of its parent's, and reclaim
//! rooted above the parent (an ancestor's limit, global reclaim) protects the group only as far
//! as the parent is protected itself: so the check judges only reclaim rooted at the parent.

use super::args::CheckArgs;
use super::{
    Check, CheckResult, CheckSpec, Kind, Needs, Outcome, missing, opt, row_at_or_after,
    row_at_or_before, signed,
};
use crate::model::counter::{ANON, FILE, HIGH_EVENTS, LIMIT_HITS, USAGE, local};
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;
use crate::model::{Column, Record, StepKind, StepRecord, Version};

/// Global reclaim by kswapd: a step during which it ran is not judged (it may take the group's
/// memory, whose protection does not reach up to the root).
const KSWAPD_SCANS: &str = "pgscan_kswapd";

/// `protected`: `cgroup`, within its memory.min, loses no memory across the steps (of `phase`,
/// or of every phase) that made its parent reclaim.
#[derive(Debug, Clone, PartialEq)]
pub struct Protected {
    pub cgroup: String,
    pub phase: Option<String>,
}

/// `protected` in the check table.
pub const KIND: Kind = Kind {
    kind: "protected",
    doc: "cgroup v2: a group whose usage is within its memory.min loses none of its memory \
(`file` + `anon`) while reclaim works on its parent. Reclaim rooted at a group gives each child \
its own memory.min as effective protection (page_counter_calculate_protection) and skips a child \
whose usage is within it, LRU pages and slab alike (shrink_node_memcgs, mem_cgroup_below_min). \
Judged across each step (of `phase`, else of every phase) that does not run in the group, during which the parent's own \
limit or high was hit (memory.events.local `max` or `high` rose) or that was a `reclaim` of the \
parent, and at whose start the group's usage was within its memory.min less the tolerance; a \
step during which kswapd scanned (global reclaim, whose protection of the group is only as deep \
as its ancestors') is not judged. Those phases must leave the group's memory alone otherwise (no \
truncate or unlink of its files, no exit of its tasks). Not exercised when no step qualifies, \
the group has no memory.min, or its parent is not a group of the scenario with memory.max or \
memory.high, or an ancestor above the parent has one (reclaim rooted there protects the group \
only as far as the parent is protected). Tolerance: the memcg statistics' flush bound. Result \
name: `protected(<cgroup>)`, with `phase` `protected(<cgroup> in <phase>)`.",
    keys: &[
        opt(
            "cgroup",
            "the group with memory.min (default: the only declared group)",
        ),
        opt(
            "phase",
            "the phase whose steps push the parent while the group is idle (default: every phase)",
        ),
    ],
    parse,
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    if i.versions().contains(&Version::V1) {
        return Err(i.err(
            i.span(),
            "protected judges memory.min, a cgroup v2 setting: add requires.cgroup = [\"v2\"]",
        ));
    }
    Ok(Check::new(Protected {
        cgroup: i.cgroup("cgroup")?,
        phase: i.phase()?,
    }))
}

impl CheckSpec for Protected {
    fn name(&self) -> String {
        match &self.phase {
            Some(p) => format!("protected({} in {p})", self.cgroup),
            None => format!("protected({})", self.cgroup),
        }
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: [FILE, ANON, USAGE, LIMIT_HITS, HIGH_EVENTS]
                .map(String::from)
                .to_vec(),
            local_counters: [LIMIT_HITS, HIGH_EVENTS].map(String::from).to_vec(),
            vmstat: vec![KSWAPD_SCANS.into()],
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        protected(self.name(), rec, &self.cgroup, self.phase.as_deref())
    }
}

/// The parent of `g` ("a/b" -> "a").
fn parent_of(g: &str) -> Option<&str> {
    g.rsplit_once('/').map(|(p, _)| p)
}

pub fn protected(name: String, rec: &Record, cgroup: &str, phase: Option<&str>) -> CheckResult {
    let Some(min) = rec.group(cgroup).and_then(|g| g.min) else {
        return missing(name, format!("{cgroup} has no memory.min"));
    };
    let Some(parent) = parent_of(cgroup).filter(|p| rec.group(p).is_some()) else {
        return missing(
            name,
            format!("{cgroup}'s parent is not a group of the scenario: no reclaim is rooted there"),
        );
    };
    let caps = |g: &str| rec.limit_of(g).is_some() || rec.high_of(g).is_some();
    if !caps(parent) {
        return missing(name, format!("{parent} has no memory.max or memory.high"));
    }
    if let Some(a) = (rec.cgroups.iter()).find(|a| {
        a.name != parent && crate::model::record::within(parent, &a.name) && caps(&a.name)
    }) {
        return missing(
            name,
            format!(
                "{} above {parent} has a limit: reclaim rooted there protects {cgroup} only as far as {parent} is protected",
                a.name
            ),
        );
    }
    let col = |g: &str, c: &str| rec.series.col(&Column::group(g, c));
    let vm = rec.series.col(&Column::vmstat(KSWAPD_SCANS));
    let (Some(file), Some(anon), Some(usage), Some(max), Some(high), Some(kswapd)) = (
        col(cgroup, FILE),
        col(cgroup, ANON),
        col(cgroup, USAGE),
        col(parent, &local(LIMIT_HITS)),
        col(parent, &local(HIGH_EVENTS)),
        vm,
    ) else {
        return missing(name, "a column was not sampled".into());
    };
    let s = &rec.series;
    let tol = rec.machine.stat_batch_bytes() as i64;
    let held = |r: usize| s.get(r, file) + s.get(r, anon);
    let mut judged = Vec::new();
    let mut skipped_over = 0;
    let in_phase = |st: &&StepRecord| phase.is_none_or(|p| rec.phases[st.phase].name == p);
    let outside = |st: &&StepRecord| !crate::model::record::within(&st.cgroup, cgroup);
    for st in rec.steps.iter().filter(in_phase).filter(outside) {
        let r0 = row_at_or_before(rec, st.start);
        let Some(r1) = row_at_or_after(rec, st.end) else {
            continue;
        };
        let rose = |c: usize| s.get(r1, c) > s.get(r0, c);
        let pushed =
            rose(max) || rose(high) || (st.kind == StepKind::Reclaim && st.cgroup == parent);
        if !pushed || rose(kswapd) {
            continue;
        }
        if s.get(r0, usage) > min as i64 - tol {
            skipped_over += 1;
            continue;
        }
        let d = held(r1) - held(r0);
        if d < -tol {
            let mut res = CheckResult::new(
                name,
                Outcome::Fail,
                format!("{cgroup}.file + anon changed by {}", signed(d)),
                format!(">= -{} (none reclaimed)", human_bytes(tol)),
                format!(
                    "across step '{}' (t={:.3}s..{:.3}s), while {parent} reclaimed, {cgroup} held {} of {} memory.min yet lost {}: file {} -> {}, anon {} -> {}",
                    st.describe,
                    st.start,
                    st.end,
                    human_bytes(s.get(r0, usage)),
                    human_bytes(min as i64),
                    human_bytes(-d),
                    human_bytes(s.get(r0, file)),
                    human_bytes(s.get(r1, file)),
                    human_bytes(s.get(r0, anon)),
                    human_bytes(s.get(r1, anon)),
                ),
            );
            res.tolerance = Some(rec.machine.stat_batch_explained());
            res.at = Some(s.t[r1]);
            res.columns = vec![Column::group(cgroup, FILE), Column::group(cgroup, ANON)];
            return res;
        }
        judged.push(signed(d));
    }
    if judged.is_empty() {
        let why = match skipped_over {
            0 => format!(
                "no step{} made {parent} reclaim (its own max or high events did not rise, and it was not a reclaim of {parent}) without kswapd",
                phase.map(|p| format!(" of phase {p}")).unwrap_or_default()
            ),
            n => format!(
                "in the {n} steps that made {parent} reclaim, {cgroup}'s usage was not within its memory.min"
            ),
        };
        return missing(name, why);
    }
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!("changed by {}", judged.join(", ")),
        format!(">= -{}", human_bytes(tol)),
        format!(
            "{cgroup} (memory.min {}) kept its file and anon across {} steps that made {parent} reclaim: changed by {}",
            human_bytes(min as i64),
            judged.len(),
            judged.join(", ")
        ),
    );
    res.tolerance = Some(rec.machine.stat_batch_explained());
    res
}
