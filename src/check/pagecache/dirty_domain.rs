//! dirty-domain: cgroup v2's writeback domain holds a limited group's dirty pages to its share.
//! With cgroup writeback every memcg is a dirty domain of its own (mm/page-writeback.c:
//! balance_dirty_pages with an mdtc, "writeback: implement memcg writeback domain based
//! throttling", 2015). Its dirtyable memory is its file pages plus the least of its headroom
//! (the ceiling, min(memory.max, memory.high) of it and its ancestors, minus its usage) and the
//! machine's other clean page cache (mdtc_calc_avail), and its dirty threshold vm.dirty_ratio of
//! that (domain_dirty_limits). File pages are part of the usage, so the dirtyable memory is at
//! most the ceiling, and a task that dirties pages is paused once the group's dirty + writeback
//! pass its threshold. The threshold is computed from flushed statistics (mem_cgroup_wb_stats),
//! which may be 2 s old, so the check judges what the kernel could know: once a sample (whose
//! read of memory.stat flushed them) showed the dirty pages above the share, they must stop
//! rising, apart from what a writer dirties before its next throttling check.

use crate::check::args::CheckArgs;
use crate::check::{Check, CheckResult, CheckSpec, Kind, Needs, Outcome, columns, missing, opt};
use crate::model::contract::v2;
use crate::model::counter::{DIRTY, WRITEBACK};
use crate::model::error::ScenarioError;
use crate::model::record::within;
use crate::model::units::human_bytes;
use crate::model::{Column, Record, StepKind};

/// `dirty-domain`: `cgroup`'s dirty + writeback stay within vm.dirty_ratio of its ceiling.
#[derive(Debug, Clone, PartialEq)]
pub struct DirtyDomain {
    pub cgroup: String,
}

/// `dirty-domain` in the check table.
pub const KIND: Kind = Kind {
    kind: "dirty-domain",
    doc: "cgroup v2: a group under a memory limit (its own or an ancestor's memory.max or \
memory.high: the ceiling) stops dirtying pages once the kernel has seen its dirty pages above \
vm.dirty_ratio of the ceiling. With cgroup writeback each memcg is a dirty domain of its own \
(balance_dirty_pages with an mdtc): its dirtyable memory is its file pages plus the least of \
its headroom (ceiling - usage) and the machine's other clean page cache, at most the ceiling \
since file pages are part of the usage, and a task dirtying pages is paused once dirty + \
writeback pass dirty_ratio of it. The kernel throttles on flushed statistics (the periodic \
flush every 2 s, or a reader such as the sampler's read of memory.stat), so between two \
samples a writer may pass the share by what it wrote since the last flush; once a sample has \
shown the dirty pages above the share + the unflushed-stats bound, they must not rise by more \
than the tolerance above their least value since (while they stay above). Judged: the dirty \
pages (writeback is not the writer's to hold back: a group at its limit wakes the flusher \
from reclaim). Tolerance: the unflushed-stats bound + 8 pages per CPU (dirtied between two \
throttling checks once the domain is exceeded) + an eighth of the share (what a throttled \
writer dirties before its next check: its wb's rate for half its pause, about a sixteenth of \
the wb's dirty pages). Judged only while vm.dirty_bytes is 0 (a byte limit is converted to a \
ratio of the machine's dirtyable memory, which is not sampled), not during `probe` steps \
(writeback held off), not on cgroup v1 (no writeback domain per memcg), and not where pages \
were dirtied in two groups of the subtree (each is a domain of its own). Not exercised when \
the dirty pages never reached half of dirty_ratio of the ceiling. Every group with a ceiling \
gets it on v2. Result name: `dirty-domain(<cgroup>)`.",
    keys: &[opt(
        "cgroup",
        "the limited group (default: the only declared group)",
    )],
    parse,
    promises: &[&v2::WB_DOMAIN, &v2::WB_RATIO],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(DirtyDomain {
        cgroup: i.cgroup("cgroup")?,
    }))
}

impl CheckSpec for DirtyDomain {
    fn name(&self) -> String {
        format!("dirty-domain({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: vec![DIRTY.into(), WRITEBACK.into()],
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        dirty_domain(self.name(), rec, &self.cgroup)
    }
}

/// The group's ceiling: the least memory.max or memory.high of it and its declared ancestors.
pub fn ceiling(rec: &Record, cgroup: &str) -> Option<u64> {
    rec.cgroups
        .iter()
        .filter(|c| c.name == cgroup || cgroup.starts_with(&format!("{}/", c.name)))
        .flat_map(|c| [c.limit, c.high])
        .flatten()
        .min()
}

/// Samples in a row above the bound that fail: one may be a flush of the statistics.
const RUN: usize = 2;

/// The step kinds whose tasks dirty page cache (or may, as a held file mapping does).
const DIRTYING: [StepKind; 5] = [
    StepKind::Write,
    StepKind::MmapWrite,
    StepKind::Create,
    StepKind::Probe,
    StepKind::Hold,
];

pub fn dirty_domain(name: String, rec: &Record, cgroup: &str) -> CheckResult {
    let d = match domain(rec, cgroup) {
        Ok(d) => d,
        Err(why) => return missing(name, why),
    };
    match judge(rec, &d) {
        Err(rise) => unthrottled(name, rec, cgroup, &d, rise),
        Ok(peak) => passed(name, rec, cgroup, &d, peak),
    }
}

/// What the check judges a group's dirty pages against: its writeback domain's share and the
/// tolerance, and where its dirty count is sampled.
struct Domain {
    /// vm.dirty_ratio (%).
    ratio: u64,
    /// The least memory.max or memory.high of the group and its ancestors.
    ceil: u64,
    /// vm.dirty_ratio of the ceiling.
    share: i64,
    /// Above this the kernel has seen the domain over its share.
    known: i64,
    /// The rise allowed once the kernel has seen it.
    growth: i64,
    /// The group's dirty column, and where it is in a row.
    column: Column,
    dirty: usize,
}

/// The group's writeback domain, or why the check cannot judge it.
fn domain(rec: &Record, cgroup: &str) -> Result<Domain, String> {
    let Some(limits) = rec.dirty else {
        return Err(
            "cgroup v1 has no writeback domain per memcg (or the run did not read vm.dirty_ratio)"
                .into(),
        );
    };
    if limits.bytes > 0 {
        return Err(format!(
            "vm.dirty_bytes is {}: a byte limit is converted to a ratio of the machine's dirtyable memory, which is not sampled",
            human_bytes(limits.bytes as i64)
        ));
    }
    let Some(ceil) = ceiling(rec, cgroup) else {
        return Err(format!(
            "neither {cgroup} nor a group above it has memory.max or memory.high"
        ));
    };
    one_writer(rec, cgroup)?;
    let mut cols = columns(rec, cgroup, &[DIRTY.into()])?;
    let (column, dirty) = cols.remove(0);
    let m = &rec.machine;
    let share = ceil as i64 / 100 * limits.ratio as i64;
    // Above `known` the kernel saw the domain over its share: reading memory.stat flushes the
    // group's statistics (mem_cgroup_flush_stats once more than MEMCG_CHARGE_BATCH x CPUs
    // updates are pending), and balance_dirty_pages reads the flushed values.
    let stats = 2 * m.stat_batch_bytes() as i64;
    Ok(Domain {
        ratio: limits.ratio,
        ceil,
        share,
        known: share + stats,
        growth: stats + (8 * m.cpus * m.page_size) as i64 + share / 8,
        column,
        dirty,
    })
}

/// Whether pages were dirtied in one group of the subtree at most; if not, why that is no
/// verdict.
fn one_writer(rec: &Record, cgroup: &str) -> Result<(), String> {
    // Each memcg is a domain of its own (the writer's current group), and a group's dirty count
    // is hierarchical: with writers in two groups of the subtree each is held to its own share,
    // and their sum is not bounded by this group's.
    let mut writers: Vec<&str> = rec
        .steps
        .iter()
        .filter(|st| DIRTYING.contains(&st.kind) && within(&st.cgroup, cgroup))
        .map(|st| st.cgroup.as_str())
        .collect();
    writers.sort();
    writers.dedup();
    if writers.len() > 1 {
        return Err(format!(
            "pages were dirtied in {} groups of {cgroup}'s subtree ({}): each is a writeback domain of its own, and their sum is not bounded by {cgroup}'s share",
            writers.len(),
            writers.join(", ")
        ));
    }
    Ok(())
}

/// Whether a `probe` step (writeback held off) ran at `t` or ended at most 0.5 s before.
fn probing(rec: &Record, t: f64) -> bool {
    rec.steps
        .iter()
        .chain(&rec.stopped)
        .any(|st| st.kind == StepKind::Probe && st.start <= t && t <= st.end + 0.5)
}

/// A rise of the dirty pages past the tolerance, RUN samples in a row, once the kernel had seen
/// them above the share: at row `r` they were `v`, up from `floor` at row `floor_at`.
struct Rise {
    r: usize,
    v: i64,
    floor: i64,
    floor_at: usize,
}

/// Follows the dirty pages outside `probe` steps: the first rise that lasted, or else their
/// peak and its row.
fn judge(rec: &Record, d: &Domain) -> Result<(i64, usize), Rise> {
    let s = &rec.series;
    // The least dirty count since the domain was last seen within its share, and when.
    let mut floor: Option<(i64, usize)> = None;
    let (mut run, mut top, mut top_at) = (0, 0i64, 0usize);
    for r in (0..s.len()).filter(|&r| !probing(rec, s.t[r])) {
        // Dirty pages only: pages under writeback are not the writer's to hold back. A group at
        // its limit wakes the flusher from reclaim, which turns its dirty pages into writeback
        // at once, and the domain's hard limit (dom->dirty_limit) follows a falling threshold
        // only by 1/32 every 200 ms: stock 6.12 in TCG held 15.6 MiB under writeback (0 dirty)
        // in a 19 MiB group writing 124 MiB (explore seed 1, case 16).
        let v = s.get(r, d.dirty);
        if v > top {
            (top, top_at) = (v, r);
        }
        // Judged: the dirty pages rising once the kernel knew the domain was over its share.
        // Between two reads the kernel throttles on statistics up to FLUSH_TIME (2 s) old (the
        // periodic flush; mem_cgroup_wb_stats flushes only when that is a cycle late), so a
        // writer may pass the share by whatever it wrote since the last read: stock 6.12 in TCG
        // dirtied 38.5 MiB of a 128 MiB group while the sampler stalled for 300 ms under a
        // compaction loop, then held still until the flusher wrote them (dirty-migration).
        let Some((f, _)) = floor.filter(|_| v > d.known) else {
            floor = (v > d.known).then_some((v, r));
            run = 0;
            continue;
        };
        run = if v > f + d.growth { run + 1 } else { 0 };
        if v < f {
            floor = Some((v, r));
        }
        if run >= RUN {
            let (floor, floor_at) = floor.expect("set above");
            return Err(Rise {
                r,
                v,
                floor,
                floor_at,
            });
        }
    }
    Ok((top, top_at))
}

/// The failure for dirty pages that kept rising once the kernel had seen them above the share.
fn unthrottled(name: String, rec: &Record, cgroup: &str, d: &Domain, rise: Rise) -> CheckResult {
    let Rise {
        r,
        v,
        floor: f,
        floor_at: fr,
    } = rise;
    let s = &rec.series;
    let t = s.t[r];
    let mut res = CheckResult::new(
        name,
        Outcome::Fail,
        format!("{cgroup}.dirty = {}", human_bytes(v)),
        format!(
            "<= {} + {} (its dirty pages when the kernel last saw them above {}% of {} = {})",
            human_bytes(f),
            human_bytes(d.growth),
            d.ratio,
            human_bytes(d.ceil as i64),
            human_bytes(d.share)
        ),
        format!(
            "at t={t:.3}s (phase {}) {cgroup}'s dirty pages had risen by {} since t={:.3}s although they were {} above vm.dirty_ratio ({} %) of its ceiling of {} (its memory limit) then, for {RUN} samples in a row: its writers were not throttled by its writeback domain: {}",
            rec.phase_at(t),
            human_bytes(v - f),
            s.t[fr],
            human_bytes(f - d.share),
            d.ratio,
            human_bytes(d.ceil as i64),
            s.describe_cols(r, &[d.dirty])
        ),
    );
    res.at = Some(t);
    res.bound = Some(f + d.growth);
    res.columns = vec![d.column.clone()];
    res.tolerance = Some(tolerance_text(rec, d.growth));
    res
}

/// The verdict when no rise lasted: not exercised if the dirty pages (peaking at `top`, row
/// `top_at`) never came near the share, else a pass.
fn passed(
    name: String,
    rec: &Record,
    cgroup: &str,
    d: &Domain,
    (top, top_at): (i64, usize),
) -> CheckResult {
    if top < d.share / 2 {
        return missing(
            name,
            format!(
                "{cgroup}'s dirty pages reached at most {}, below half of {} % of its ceiling of {} ({}): its writeback domain was not in play",
                human_bytes(top),
                d.ratio,
                human_bytes(d.ceil as i64),
                human_bytes(d.share)
            ),
        );
    }
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!(
            "dirty peaked at {} at t={:.3}s",
            human_bytes(top),
            rec.series.t[top_at]
        ),
        format!(
            "no rise beyond {} once above {}% of {} = {}",
            human_bytes(d.growth),
            d.ratio,
            human_bytes(d.ceil as i64),
            human_bytes(d.share)
        ),
        format!(
            "{cgroup}'s dirty pages (up to {}) never rose by more than {} once the kernel had seen them above vm.dirty_ratio ({} %) of its ceiling of {}",
            human_bytes(top),
            human_bytes(d.growth),
            d.ratio,
            human_bytes(d.ceil as i64)
        ),
    );
    res.tolerance = Some(tolerance_text(rec, d.growth));
    res
}

fn tolerance_text(rec: &Record, growth: i64) -> String {
    format!(
        "{} = 2 x {} + 8 pages x {} CPUs (dirtied between two throttling checks once the domain is exceeded) + an eighth of the share (a throttled writer dirties, before its next check, what its wb's rate allows for half its pause: about a sixteenth of the wb's dirty pages; 11 % of the share seen on 6.12 in TCG), counted from the least dirty count since the group was last seen within its share + 2 x the unflushed-stats bound, for {RUN} samples in a row",
        human_bytes(growth),
        rec.machine.stat_batch_explained(),
        rec.machine.cpus
    )
}
