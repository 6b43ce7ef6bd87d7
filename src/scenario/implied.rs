//! The invariants every scenario gets without declaring them (see `implied`).

use crate::check::Check;
use crate::model::{CgroupSpec, TOP_GROUP, Version};

use super::{Phase, Step};

/// The invariants every scenario gets, for every group it declares, unless the file declares
/// the same check for that group: identities, monotonic, faults, usage-covers, limit-counters,
/// numa-stat over every node counter (v2; dropped under v1), tasks (not in scenarios that move
/// tasks: a task that moves without its charge parts from it by design), under-limit for a
/// limited group, placed where a task migrates, in-force (v2) for a group whose memory.high or
/// memory.max a `set` step writes, and hierarchy over every counter for each group with children and for the
/// scenario's own top group (`TOP_GROUP`), whose events within-node holds to the node's. They judge every counter the kernel shows (see
/// `SamplePlan`).
pub(super) fn implied(
    cgroups: &[CgroupSpec],
    phases: &[Phase],
    checks: &[Check],
    versions: &[Version],
) -> Vec<Check> {
    use crate::check::{
        DirtyDomain, Faults, Hierarchy, Identities, LimitCounters, Monotonic, Notifies, NumaStat,
        Tasks, UnderLimit, UsageCovers, WithinNode,
    };
    let steps = || phases.iter().flat_map(|p| &p.steps);
    let moves = steps().any(|s| matches!(s, Step::Move { .. }));
    let migrates = steps().any(|s| matches!(s, Step::Migrate { .. }));
    let has_children = |p: &str| has_children(cgroups, p);
    let has_ceiling = |g: &str| has_ceiling(cgroups, g);
    let versions_v2 = versions.contains(&Version::V2);
    let writes_limit = |g: &str| writes_limit(phases, g);
    let mut out: Vec<Check> = Vec::new();
    for c in cgroups {
        let g = c.name.clone();
        let mut add = |chk: Check| {
            if !checks.iter().any(|d| d.name() == chk.name()) {
                out.push(chk);
            }
        };
        add(Check::implied(Identities { cgroup: g.clone() }));
        add(Check::implied(Monotonic { cgroup: g.clone() }));
        add(Check::implied(Faults { cgroup: g.clone() }));
        add(Check::implied(UsageCovers { cgroup: g.clone() }));
        add(Check::implied(LimitCounters {
            cgroup: g.clone(),
            hit: false,
        }));
        add(Check::implied(NumaStat {
            cgroup: g.clone(),
            counters: Vec::new(),
            all: true,
        }));
        if !moves {
            add(Check::implied(Tasks {
                cgroup: g.clone(),
                needs_moving: false,
            }));
        }
        if versions_v2 && has_ceiling(&g) {
            add(Check::implied(DirtyDomain { cgroup: g.clone() }));
        }
        if versions_v2 {
            add(Check::implied(Notifies { cgroup: g.clone() }));
        }
        if migrates {
            add(Check::implied(crate::check::Placed { cgroup: g.clone() }));
        }
        if versions_v2 && writes_limit(&g) {
            add(Check::implied(crate::check::InForce { cgroup: g.clone() }));
        }
        if c.limit.is_some() || c.swap_max.is_some() {
            add(Check::implied(UnderLimit { cgroup: g.clone() }));
        }
        if has_children(&g) {
            add(Check::implied(Hierarchy {
                parent: g.clone(),
                counters: Vec::new(),
                all: true,
            }));
        }
    }
    // The scenario's own top group holds its groups and the helpers' and nothing else: its
    // counters are theirs summed (a statistic not passed to the ancestors shows here), and its
    // events are a part of the node's.
    let top = [
        Check::implied(Hierarchy {
            parent: TOP_GROUP.to_string(),
            counters: Vec::new(),
            all: true,
        }),
        Check::implied(crate::check::Interface),
        Check::implied(WithinNode {
            cgroup: TOP_GROUP.to_string(),
        }),
    ];
    for chk in top {
        if !checks.iter().any(|d| d.name() == chk.name()) {
            out.push(chk);
        }
    }
    out
}

/// Whether group `p` has a child among `cgroups`.
fn has_children(cgroups: &[CgroupSpec], p: &str) -> bool {
    cgroups.iter().any(|c| crate::model::is_child(&c.name, p))
}

/// Whether group `g` or an ancestor has memory.max or memory.high (see `dirty-domain`).
fn has_ceiling(cgroups: &[CgroupSpec], g: &str) -> bool {
    (cgroups.iter()).any(|c| {
        crate::model::record::within(g, &c.name) && (c.limit.is_some() || c.high.is_some())
    })
}

/// Whether a `set` step from the runner writes one of group `g`'s watched knobs (see
/// `in-force`).
fn writes_limit(phases: &[Phase], g: &str) -> bool {
    phases.iter().flat_map(|p| &p.steps).any(|s| {
        matches!(s, Step::Set { cgroup, file, value: Some(_), from: None }
            if cgroup == g && crate::model::WATCHED_KNOBS.contains(&file.as_str()))
    })
}
