//! What a dirty probe needs of its group: room below the limit for the probe and its clean
//! ballast, so that nothing starts writeback while it writes.
//!
//! Two kernel facts set the room. Reclaim that meets only dirty pages on the tail of an LRU list
//! wakes the flusher threads (shrink_inactive_list, WB_REASON_VMSCAN), which write back every
//! dirty page of the disk, the probe's too. With two NUMA nodes the probe's pages may be the only
//! pages of its group on the node they were allocated on, so a group at its limit meets them
//! first on that node's list. And with cgroup writeback (v2) the group is a dirty domain of its
//! own: background writeback starts at half its dirtyable memory (its file pages plus the
//! headroom below its limit, domain_dirty_limits with both dirty_bytes raised to MemTotal).

use super::{Scenario, Step};
use crate::model::record::within;

/// Clean page cache a v2 group needs before a probe, as a multiple of the probe's size: with the
/// probe, its file pages are then (PROBE_BALLAST + 1) x size and background writeback starts
/// above twice the probe.
pub const PROBE_BALLAST: u64 = 3;

/// The smallest probe `Scenario::scale_down` leaves: four times the unflushed-stats tolerance of
/// two CPUs (1 MiB), so a probe that shows nothing is told from one that shows all.
pub const MIN_PROBE: u64 = 4 << 20;

/// The smallest limit of a probe's group (or of an ancestor) that leaves room for a probe of
/// `size`: the probe and its ballast in at most half of it (the rest: what the group holds
/// besides, its kernel memory, the tasks' anon).
pub fn room(size: u64) -> u64 {
    2 * (PROBE_BALLAST + 1) * size
}

/// The limit that bounds `group`: the smallest of its own and its declared ancestors'.
pub fn bounding_limit(sc: &Scenario, group: &str) -> Option<u64> {
    sc.cgroups
        .iter()
        .filter(|c| within(group, &c.name))
        .filter_map(|c| c.limit)
        .min()
}

/// The first probe step whose group's limit leaves it no room: (group, probe size, limit).
pub fn cramped(sc: &Scenario) -> Option<(String, u64, u64)> {
    sc.phases
        .iter()
        .flat_map(|p| &p.steps)
        .find_map(|s| match s {
            Step::Probe { cgroup, size, .. } => bounding_limit(sc, cgroup)
                .filter(|&l| l < room(*size))
                .map(|l| (cgroup.clone(), *size, l)),
            _ => None,
        })
}

/// The files written in `group`'s subtree (their pages are charged to it), relative to the
/// scratch directory.
pub fn own_files(sc: &Scenario, group: &str) -> Vec<String> {
    super::plan::file_plan(sc)
        .files
        .into_iter()
        .filter(|(_, groups)| groups.iter().any(|g| g == group))
        .map(|(f, _)| f)
        .collect()
}
