//! The checks a generated case declares besides the invariants every scenario gets, derived
//! from its groups, its steps and what the World recorded of them.

use super::case::Declared;
use super::machine::MIB;
use super::machine::Machine;
use super::tree::{is_leaf, protectable};
use super::world::World;
use crate::model::record::within;
use crate::scenario::{CgroupSpec, Phase, Step};

/// The checks every group gets besides the implied invariants: counters never negative, dirty
/// settling after a sync, the page cache of written files held and their dirty and writeback
/// pages counted (both only where no group outside writes the files), memory.high kept, OOM
/// kills where a task exhausts its group.
pub fn declared(m: &Machine, groups: &[CgroupSpec], w: &World) -> Vec<Declared> {
    let mut out = Vec::new();
    for g in groups {
        out.push(Declared::NoUnderflow(g.name.clone()));
        let inside = |x: &str| within(x, &g.name);
        let mine: Vec<&String> = w
            .writers
            .iter()
            .filter(|(_, x)| inside(x))
            .map(|(f, _)| f)
            .collect();
        // Dirty pages settle only where they were made; the files' truth only where no group
        // outside writes them too.
        if w.synced && !mine.is_empty() {
            out.push(Declared::Settles(g.name.clone()));
        }
        let shared = mine
            .iter()
            .any(|f| w.writers.iter().any(|(f2, x)| f2 == *f && !inside(x)));
        if !mine.is_empty() && !shared {
            out.push(Declared::HoldsFiles(g.name.clone()));
            // Leaves only: a parent's hierarchical dirty and writeback may lag its children's
            // until the next flush that reaches it (host 6.18, seed 23 case 77: a parent showed
            // 45 MiB of writeback its only child had finished 228 ms before); `hierarchy`
            // judges the parents' sums with that staleness allowed.
            // And only with per-file truth: against machine-wide counters every other group of
            // the case moves the reference too (Debian 6.1, without cachestat, seed 65 case 52).
            if is_leaf(groups, &g.name) && m.per_file {
                out.push(Declared::TracksGlobal(g.name.clone()));
            }
        }
        if g.high.is_some() {
            // An exhaust takes anon past any memory.high above it, and with no swap reclaim
            // frees none of it: the kernel throttles the task instead (seed 61 case 18 on
            // Debian 6.1: 4.3 MiB over a 27 MiB high after 4 s of throttling).
            let throttled = w.exhausted.iter().any(|x| within(x, &g.name));
            out.push(Declared::UnderHigh {
                group: g.name.clone(),
                throttled,
            });
        }
        if w.exhausted.contains(&g.name) {
            out.push(Declared::OomKills(g.name.clone()));
        }
    }
    for g in limit_hits(groups, w) {
        let d = Declared::LimitHit(g);
        if !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// `protected` for each group it can judge (see `protectable`), in each phase that
/// - surely makes the parent reclaim: a write below it, outside the group, of more than half
///   the parent's least limit;
/// - finds the group holding something to lose: more than 2 MiB made by its steps in the phases
///   before, and at most half its memory.min (so its usage stays within it);
/// - leaves the group alone: no step runs in it; none truncates, unlinks, maps (a hold truncates
///   the file it maps) or reads cold (dropping the cache first) a file it wrote, read or held;
///   none releases, grows, advises or moves a task it ever held; no `exhaust` below the parent
///   (memory.min does not hold off the OOM killer).
pub fn protections(groups: &[CgroupSpec], phases: &[Phase]) -> Vec<Declared> {
    let mut out = Vec::new();
    for g in groups {
        let Some((min, parent, parent_cap)) = protectable(groups, g) else {
            continue;
        };
        let own = Own::of(&g.name, phases);
        for (pi, p) in phases.iter().enumerate() {
            let held = own.made(&phases[..pi]);
            if held > 2 * MIB
                && held <= min / 2
                && !p.steps.iter().any(|s| own.touched_by(s, parent))
                && p.steps
                    .iter()
                    .any(|s| own.pressed_by(s, parent, parent_cap))
            {
                out.push(Declared::Protected {
                    group: g.name.clone(),
                    phase: p.name.clone(),
                });
            }
        }
    }
    out
}

/// What a group's own steps use in a case: the files it wrote, read or held, the tasks it held
/// or took in; and the sizes of the case's files made for readers.
struct Own<'a> {
    group: &'a str,
    files: Vec<&'a str>,
    tasks: Vec<&'a str>,
    created: Vec<(&'a str, u64)>,
}

impl<'a> Own<'a> {
    fn of(group: &'a str, phases: &'a [Phase]) -> Own<'a> {
        let steps = || phases.iter().flat_map(|p| &p.steps);
        let mine = |c: &str| within(c, group);
        let files = steps()
            .filter_map(|s| match s {
                Step::Write { cgroup, file, .. }
                | Step::MmapWrite { cgroup, file, .. }
                | Step::Read { cgroup, file, .. }
                    if mine(cgroup) =>
                {
                    Some(file.as_str())
                }
                Step::Hold(h) if mine(&h.cgroup) => h.file.as_deref(),
                _ => None,
            })
            .collect();
        let tasks = steps()
            .filter_map(|s| match s {
                Step::Hold(h) if mine(&h.cgroup) => Some(h.task.as_str()),
                Step::Move { task, to, .. } if mine(to) => Some(task.as_str()),
                _ => None,
            })
            .collect();
        let created = steps()
            .filter_map(|s| match s {
                Step::Create { file, size, .. } => Some((file.as_str(), *size)),
                _ => None,
            })
            .collect();
        Own {
            group,
            files,
            tasks,
            created,
        }
    }

    fn mine(&self, cgroup: &str) -> bool {
        within(cgroup, self.group)
    }

    /// Whether step `s` disturbs the group (see `protections`); `parent` is where reclaim is
    /// rooted.
    fn touched_by(&self, s: &Step, parent: &str) -> bool {
        let file = |f: &str| self.files.contains(&f);
        s.cgroup().is_some_and(|c| self.mine(c))
            || match s {
                Step::Truncate { file: f, .. } | Step::Unlink { file: f, .. } => file(f),
                Step::Hold(h) => h.file.as_deref().is_some_and(file),
                Step::Read { file: f, warm, .. } => !warm && file(f),
                Step::Release { task }
                | Step::Grow { task, .. }
                | Step::Advise { task, .. }
                | Step::Migrate { task, .. }
                | Step::Move { task, .. } => self.tasks.contains(&task.as_str()),
                Step::Exhaust { cgroup, .. } => within(cgroup, parent),
                _ => false,
            }
    }

    /// Whether step `s` surely makes `parent` reclaim: a write below it, outside the group, of
    /// more than half its least limit.
    fn pressed_by(&self, s: &Step, parent: &str, parent_cap: u64) -> bool {
        match s {
            Step::Write { cgroup, size, .. } | Step::MmapWrite { cgroup, size, .. } => {
                within(cgroup, parent) && !self.mine(cgroup) && *size > parent_cap / 2
            }
            _ => false,
        }
    }

    /// What the group's own steps made in `before`.
    fn made(&self, before: &[Phase]) -> u64 {
        (before.iter().flat_map(|p| &p.steps))
            .map(|s| match s {
                Step::Write { cgroup, size, .. } | Step::MmapWrite { cgroup, size, .. }
                    if self.mine(cgroup) =>
                {
                    *size
                }
                Step::Read { cgroup, file, .. } if self.mine(cgroup) => (self.created.iter())
                    .find(|(f, _)| f == file)
                    .map_or(0, |(_, b)| *b),
                Step::Hold(h) if self.mine(&h.cgroup) => h.anon + h.shmem + h.size,
                _ => 0,
            })
            .sum()
    }
}

/// The groups whose limit a write must have run into: for each write, the group with the least
/// limit among its group and their ancestors, when the write alone is 8 MiB beyond it and no
/// memory.high in the chain reclaims first (the usage would then stay below the limit).
fn limit_hits(groups: &[CgroupSpec], w: &World) -> Vec<String> {
    let mut out = Vec::new();
    for (g, size) in &w.writes {
        let chain: Vec<&CgroupSpec> = groups.iter().filter(|a| within(g, &a.name)).collect();
        if chain.iter().any(|a| a.high.is_some()) {
            continue;
        }
        let least = chain
            .iter()
            .filter_map(|a| a.limit.map(|l| (l, &a.name)))
            .min();
        if let Some((l, name)) = least
            && *size > l + 8 * MIB
            && !out.contains(name)
        {
            out.push(name.clone());
        }
    }
    out
}
