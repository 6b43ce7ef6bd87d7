//! protected: a group within its memory.min keeps its memory while reclaim works on its parent.
//! Reclaim rooted at a group gives each child its own memory.min as effective protection
//! (mm/page_counter.c: page_counter_calculate_protection, `parent == root`), and shrink_node_memcgs
//! skips a child whose usage is within it (mem_cgroup_below_min): not its LRU pages, not its
//! slab. Further down, a grandchild's effective min is a share of its parent's, and reclaim
//! rooted above the parent (an ancestor's limit, global reclaim) protects the group only as far
//! as the parent is protected itself: so the check judges only reclaim rooted at the parent.

use crate::check::args::CheckArgs;
use crate::check::{
    Check, CheckResult, CheckSpec, Kind, Needs, Outcome, missing, opt, row_at_or_after,
    row_at_or_before, signed,
};
use crate::model::contract::v2;
use crate::model::counter::{ANON, FILE, HIGH_EVENTS, LIMIT_HITS, OOM_KILLS, USAGE, local};
use crate::model::error::ScenarioError;
use crate::model::record::within;
use crate::model::units::human_bytes;
use crate::model::{Column, Record, StepKind, StepRecord, Version};

/// Global reclaim (/proc/vmstat counts only reclaim rooted at the root: kswapd, a direct
/// reclaimer out of free memory): a step during which it scanned is not judged (it may take the
/// group's memory, whose protection does not reach up to the root). khugepaged's key (6.2 on;
/// counted as direct before) is left out so that older kernels can run the check: it reclaims
/// globally only when a huge page allocation for a collapse runs short.
const GLOBAL_SCANS: [&str; 2] = ["pgscan_kswapd", "pgscan_direct"];

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
step during which global reclaim scanned (kswapd or a direct reclaimer: its \
protection of the group is only as deep as its ancestors'), or the OOM killer took a task of the \
group (memory.min does not hold it off), is not judged, nor a step on a task (release, grow, \
advise, wait, move: the task may be the group's), nor one at whose start the group held at most \
twice the tolerance. Those phases must leave the group's memory alone otherwise (no \
truncate or unlink of its files, no exit of its tasks). Not exercised when no step qualifies, \
the group has no memory.min or has groups below it (memory is charged where the task runs, and \
a child's effective min is a share of the group's: none without memory_recursiveprot), or its parent is not a group of the scenario with memory.max or \
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
    promises: &[&v2::MIN_PROTECT],
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
            counters: [FILE, ANON, USAGE, LIMIT_HITS, HIGH_EVENTS, OOM_KILLS]
                .map(String::from)
                .to_vec(),
            local_counters: [LIMIT_HITS, HIGH_EVENTS].map(String::from).to_vec(),
            vmstat: GLOBAL_SCANS.map(String::from).to_vec(),
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
    let p = match protection(rec, cgroup) {
        Ok(p) => p,
        Err(why) => return missing(name, why),
    };
    let (s, tol) = (&rec.series, p.tol);
    let mut judged = Vec::new();
    let (mut skipped_over, mut empty) = (0, 0);
    let in_phase = |st: &&StepRecord| phase.is_none_or(|ph| rec.phases[st.phase].name == ph);
    let outside = |st: &&StepRecord| !within(&st.cgroup, cgroup) && !task_step(st.kind);
    for st in rec.steps.iter().filter(in_phase).filter(outside) {
        let Some((r0, r1)) = p.window(st) else {
            continue;
        };
        if s.get(r0, p.usage) > p.min as i64 - tol {
            skipped_over += 1;
            continue;
        }
        // Nothing to lose: no verdict either.
        if p.held(r0) <= 2 * tol {
            empty += 1;
            continue;
        }
        let d = p.held(r1) - p.held(r0);
        if d < -tol {
            return p.lost(name, st, (r0, r1), d);
        }
        judged.push(signed(d));
    }
    if judged.is_empty() {
        return missing(name, p.unjudged(phase, skipped_over, empty));
    }
    p.passed(name, &judged)
}

/// Steps on a task record no group (release, grow, advise, wait, move): not judged, the task may
/// be the group's.
fn task_step(k: StepKind) -> bool {
    matches!(
        k,
        StepKind::Release | StepKind::Grow | StepKind::Advise | StepKind::Wait | StepKind::Move
    )
}

/// The group's memory.min and its parent, or why no reclaim rooted at the parent can be judged.
fn min_and_parent<'a>(rec: &Record, cgroup: &'a str) -> Result<(u64, &'a str), String> {
    let Some(min) = rec.group(cgroup).and_then(|g| g.min) else {
        return Err(format!("{cgroup} has no memory.min"));
    };
    let Some(parent) = parent_of(cgroup).filter(|p| rec.group(p).is_some()) else {
        return Err(format!(
            "{cgroup}'s parent is not a group of the scenario: no reclaim is rooted there"
        ));
    };
    // Memory is charged where the task runs: a group with groups below holds its memory there,
    // and their effective min is a share of its own (none without memory_recursiveprot).
    if let Some(c) = (rec.cgroups.iter()).find(|c| c.name != cgroup && within(&c.name, cgroup)) {
        return Err(format!(
            "{} is below {cgroup}: its memory is protected only as far as it has memory.min of its own",
            c.name
        ));
    }
    let caps = |g: &str| rec.limit_of(g).is_some() || rec.high_of(g).is_some();
    if !caps(parent) {
        return Err(format!("{parent} has no memory.max or memory.high"));
    }
    if let Some(a) =
        (rec.cgroups.iter()).find(|a| a.name != parent && within(parent, &a.name) && caps(&a.name))
    {
        return Err(format!(
            "{} above {parent} has a limit: reclaim rooted there protects {cgroup} only as far as {parent} is protected",
            a.name
        ));
    }
    Ok((min, parent))
}

/// What the check judges: the group, its memory.min and its parent, and the columns it reads
/// (the group's memory and OOM kills, the parent's own limit and high events, the machine's
/// global reclaim scans).
struct Protection<'a> {
    rec: &'a Record,
    cgroup: &'a str,
    parent: &'a str,
    min: u64,
    /// The memcg statistics' flush bound.
    tol: i64,
    file: usize,
    anon: usize,
    usage: usize,
    oom: usize,
    max: usize,
    high: usize,
    global: Vec<usize>,
}

/// The group's protection and the columns to judge it, or why it cannot be judged.
fn protection<'a>(rec: &'a Record, cgroup: &'a str) -> Result<Protection<'a>, String> {
    let (min, parent) = min_and_parent(rec, cgroup)?;
    let col = |g: &str, c: &str| rec.series.col(&Column::group(g, c));
    let global: Option<Vec<usize>> = (GLOBAL_SCANS.iter())
        .map(|k| rec.series.col(&Column::vmstat(k)))
        .collect();
    let (Some(file), Some(anon), Some(usage), Some(oom), Some(max), Some(high), Some(global)) = (
        col(cgroup, FILE),
        col(cgroup, ANON),
        col(cgroup, USAGE),
        col(cgroup, OOM_KILLS),
        col(parent, &local(LIMIT_HITS)),
        col(parent, &local(HIGH_EVENTS)),
        global,
    ) else {
        return Err("a column was not sampled".into());
    };
    Ok(Protection {
        rec,
        cgroup,
        parent,
        min,
        tol: rec.machine.stat_batch_bytes() as i64,
        file,
        anon,
        usage,
        oom,
        max,
        high,
        global,
    })
}

impl Protection<'_> {
    /// The group's file + anon at row `r`.
    fn held(&self, r: usize) -> i64 {
        let s = &self.rec.series;
        s.get(r, self.file) + s.get(r, self.anon)
    }

    /// The rows just before and after step `st`, if it made the parent reclaim (its own max or
    /// high events rose, or it was a reclaim of the parent) and neither global reclaim nor the
    /// OOM killer ran during it.
    fn window(&self, st: &StepRecord) -> Option<(usize, usize)> {
        let (rec, s) = (self.rec, &self.rec.series);
        let r0 = row_at_or_before(rec, st.start);
        let r1 = row_at_or_after(rec, st.end)?;
        let rose = |c: usize| s.get(r1, c) > s.get(r0, c);
        let pushed = rose(self.max)
            || rose(self.high)
            || (st.kind == StepKind::Reclaim && st.cgroup == self.parent);
        // Global reclaim, or the OOM killer (memory.min does not hold it off), is no verdict.
        if !pushed || self.global.iter().any(|&c| rose(c)) || rose(self.oom) {
            return None;
        }
        Some((r0, r1))
    }

    /// The failure for memory the group lost (`d`) across step `st` (rows `r0`, `r1`).
    fn lost(&self, name: String, st: &StepRecord, (r0, r1): (usize, usize), d: i64) -> CheckResult {
        let (cgroup, parent, s) = (self.cgroup, self.parent, &self.rec.series);
        let (file, anon) = (self.file, self.anon);
        let mut res = CheckResult::new(
            name,
            Outcome::Fail,
            format!("{cgroup}.file + anon changed by {}", signed(d)),
            format!(">= -{} (none reclaimed)", human_bytes(self.tol)),
            format!(
                "across step '{}' (t={:.3}s..{:.3}s), while {parent} reclaimed, {cgroup} held {} of {} memory.min yet lost {}: file {} -> {}, anon {} -> {}",
                st.describe,
                st.start,
                st.end,
                human_bytes(s.get(r0, self.usage)),
                human_bytes(self.min as i64),
                human_bytes(-d),
                human_bytes(s.get(r0, file)),
                human_bytes(s.get(r1, file)),
                human_bytes(s.get(r0, anon)),
                human_bytes(s.get(r1, anon)),
            ),
        );
        res.tolerance = Some(self.rec.machine.stat_batch_explained());
        res.at = Some(s.t[r1]);
        res.columns = vec![Column::group(cgroup, FILE), Column::group(cgroup, ANON)];
        res
    }

    /// Why no step was judged: none made the parent reclaim, or in those that did the group was
    /// above its memory.min (`skipped_over` of them) or held too little to lose (`empty`).
    fn unjudged(&self, phase: Option<&str>, skipped_over: usize, empty: usize) -> String {
        let (cgroup, parent) = (self.cgroup, self.parent);
        match (skipped_over, empty) {
            (0, e) if e > 0 => format!(
                "in the {e} steps that made {parent} reclaim, {cgroup} held too little to lose (at most twice the tolerance)"
            ),
            (0, _) => format!(
                "no step{} made {parent} reclaim (its own max or high events did not rise, and it was not a reclaim of {parent}) without global reclaim",
                phase.map(|p| format!(" of phase {p}")).unwrap_or_default()
            ),
            (n, _) => format!(
                "in the {n} steps that made {parent} reclaim, {cgroup}'s usage was not within its memory.min"
            ),
        }
    }

    /// The pass result: how the group's memory changed across each judged step.
    fn passed(&self, name: String, judged: &[String]) -> CheckResult {
        let mut res = CheckResult::new(
            name,
            Outcome::Pass,
            format!("changed by {}", judged.join(", ")),
            format!(">= -{}", human_bytes(self.tol)),
            format!(
                "{} (memory.min {}) kept its file and anon across {} steps that made {} reclaim: changed by {}",
                self.cgroup,
                human_bytes(self.min as i64),
                judged.len(),
                self.parent,
                judged.join(", ")
            ),
        );
        res.tolerance = Some(self.rec.machine.stat_batch_explained());
        res
    }
}
