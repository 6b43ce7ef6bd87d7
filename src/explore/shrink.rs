//! Shrinking a failing case: smaller variants, most aggressive first (a phase, a group with what
//! runs in it, a step, plain holds, the antagonists, a group's limits, the other checks, half the
//! sizes), each repaired so it is still a valid scenario; the explorer keeps a variant only while
//! the same check still fails on it.

use super::case::{Case, Declared};
use crate::scenario::{Hold, Phase, Step};

/// The smaller variants of `c`, most aggressive first; each repaired (see `repair`) and different
/// from `c`.
pub fn candidates(c: &Case, failing: &str) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    let mut push = |mut v: Case| {
        repair(&mut v);
        if v != *c && !v.phases.is_empty() && !out.contains(&v) {
            out.push(v);
        }
    };
    // The declared checks other than the failing one.
    let mut v = c.clone();
    v.checks
        .retain(|d| failing.starts_with(d.kind()) && failing.contains(d.group()));
    push(v);
    for i in 0..c.phases.len() {
        let mut v = c.clone();
        v.phases.remove(i);
        push(v);
    }
    // Groups, children first (a parent goes with its subtree).
    for g in c.groups.iter().rev() {
        let mut v = c.clone();
        let below = format!("{}/", g.name);
        v.groups
            .retain(|x| x.name != g.name && !x.name.starts_with(&below));
        push(v);
    }
    for (pi, p) in c.phases.iter().enumerate() {
        for si in 0..p.steps.len() {
            let mut v = c.clone();
            v.phases[pi].steps.remove(si);
            push(v);
        }
    }
    // Holds without their variations (huge pages, zero pages, lazyfree, a dirtied mapping).
    push(each_step(c, plain));
    if c.phases.iter().any(|p| !p.antagonists.is_empty()) {
        let mut v = c.clone();
        v.phases.iter_mut().for_each(|p| p.antagonists.clear());
        push(v);
    }
    for gi in 0..c.groups.len() {
        let mut v = c.clone();
        let g = &mut v.groups[gi];
        (g.high, g.low, g.min, g.swap_max, g.oom_group) = (None, None, None, None, false);
        push(v);
        let mut v = c.clone();
        let g = &mut v.groups[gi];
        (g.limit, g.swap_max, g.swap) = (None, None, true);
        push(v);
    }
    push(each_step(c, halve));
    out
}

/// `c` with `f` applied to every step.
fn each_step(c: &Case, f: fn(&mut Step)) -> Case {
    let mut v = c.clone();
    v.phases.iter_mut().flat_map(|p| &mut p.steps).for_each(f);
    v
}

/// A hold without its variations: base pages, no zero pages or lazyfree, a clean mapping that
/// nothing dirties again.
fn plain(s: &mut Step) {
    if let Step::Hold(h) = s {
        (h.huge, h.zero, h.lazyfree, h.dirty, h.shmem_huge) = (false, false, 0, false, false);
        // Redirtying needs a dirtied mapping.
        h.redirty = false;
    }
}

/// Halves a step's sizes, down to 1 MiB (a limit stays: halving both would keep the ratio).
fn halve(s: &mut Step) {
    let h = |b: &mut u64| *b = (*b / 2).max(1 << 20).min(*b);
    match s {
        Step::Write { size, .. }
        | Step::MmapWrite { size, .. }
        | Step::Create { size, .. }
        | Step::Usemem { size, .. } => h(size),
        Step::Hold(hold) => {
            for b in [&mut hold.anon, &mut hold.shmem, &mut hold.size] {
                if *b > 0 {
                    h(b);
                }
            }
            hold.lazyfree = hold.lazyfree.min(hold.anon);
        }
        Step::Grow { anon, .. } => h(anon),
        _ => {}
    }
}

/// Makes a variant a valid scenario again: steps whose group, task or file no longer exists go,
/// as do steps a group's changed settings no longer allow (an `exhaust` needs a limit without
/// swap), empty phases, and declared checks of groups that went.
pub fn repair(c: &mut Case) {
    let groups: Vec<String> = c.groups.iter().map(|g| g.name.clone()).collect();
    keep_valid_steps(c, &groups);
    c.phases.retain(|p: &Phase| !p.steps.is_empty());
    keep_valid_checks(c, &groups);
    // A task's memory may only move where the moved-to group exists; a group's parent must too.
    c.groups.retain(|g| match g.name.rsplit_once('/') {
        Some((parent, _)) => groups.iter().any(|n| n == parent),
        None => true,
    });
    c.swap = c.groups.iter().any(|g| g.swap_max.is_some())
        || c.phases.iter().flat_map(|p| &p.steps).any(|s| {
            matches!(
                s,
                Step::Advise {
                    advice: crate::model::step::Advice::Pageout,
                    ..
                }
            )
        });
}

/// Drops the steps whose group (of `groups`), task or file no longer exists when they run, and
/// an `exhaust` in a group whose limit now has swap or is gone.
fn keep_valid_steps(c: &mut Case, groups: &[String]) {
    let has = |g: &str| groups.iter().any(|x| x == g);
    let exhaustible = |g: &str| {
        c.groups
            .iter()
            .any(|s| s.name == g && s.limit.is_some() && !s.swap)
    };
    let (mut tasks, mut files): (Vec<(String, bool)>, Vec<String>) = (Vec::new(), Vec::new());
    let mut created: Vec<String> = Vec::new();
    for p in &mut c.phases {
        p.steps.retain(|s| match s {
            Step::Write { cgroup, file, .. } | Step::MmapWrite { cgroup, file, .. } => {
                has(cgroup) && {
                    files.push(file.clone());
                    true
                }
            }
            Step::Create { file, .. } => {
                created.push(file.clone());
                true
            }
            Step::Read { cgroup, file, .. } => has(cgroup) && created.contains(file),
            Step::Truncate { cgroup, file, .. } | Step::Fsync { cgroup, file } => {
                has(cgroup) && files.contains(file)
            }
            Step::Unlink { cgroup, file } => {
                let ok = has(cgroup) && files.contains(file);
                if ok {
                    files.retain(|f| f != file);
                }
                ok
            }
            Step::Hold(h) => {
                let ok = has(&h.cgroup) && h.file.as_ref().is_none_or(|f| files.contains(f));
                if ok {
                    tasks.push((h.task.clone(), h.anon > 0));
                }
                ok
            }
            Step::Move { task, to, .. } => has(to) && tasks.iter().any(|t| t.0 == *task),
            Step::Grow { task, .. } | Step::Wait { task } => tasks.iter().any(|t| t.0 == *task),
            Step::Advise { task, .. }
            | Step::Migrate { task, .. }
            | Step::Khugepaged {
                task: Some(task), ..
            } => tasks.iter().any(|t| t.0 == *task && t.1),
            Step::Release { task } => {
                let ok = tasks.iter().any(|t| t.0 == *task);
                tasks.retain(|t| t.0 != *task);
                ok
            }
            Step::Exhaust { cgroup, .. } => has(cgroup) && exhaustible(cgroup),
            Step::Fault { cgroup, .. }
            | Step::Usemem { cgroup, .. }
            | Step::Reclaim { cgroup, .. }
            | Step::Probe { cgroup, .. }
            | Step::Await { cgroup, .. }
            | Step::Cgroups { cgroup, .. }
            | Step::Set { cgroup, .. }
            | Step::Child { cgroup, .. } => has(cgroup),
            Step::Drop { .. } => true,
            Step::Sync | Step::Sleep(_) | Step::Pressure { .. } | Step::Khugepaged { .. } => true,
        });
    }
}

/// Drops the declared checks of groups (of `groups`) and phases that went, and sets a hold's
/// expected rise to its sizes (halved with them); it goes with the hold.
fn keep_valid_checks(c: &mut Case, groups: &[String]) {
    c.checks.retain(|d| groups.iter().any(|x| x == d.group()));
    // A check of a phase goes with it.
    let phases: Vec<String> = c.phases.iter().map(|p| p.name.clone()).collect();
    c.checks.retain(|d| match d {
        Declared::Protected { phase, .. } => phases.contains(phase),
        _ => true,
    });
    let holds: Vec<(String, Hold)> = (c.phases.iter())
        .flat_map(|p| p.steps.iter().map(move |s| (p, s)))
        .filter_map(|(p, s)| match s {
            Step::Hold(h) => Some((p.name.clone(), h.clone())),
            _ => None,
        })
        .collect();
    c.checks.retain_mut(|d| match d {
        Declared::HoldRaises {
            group,
            phase,
            counter,
            by,
        } => match holds.iter().find(|(p, h)| p == phase && &h.cgroup == group) {
            Some((_, h)) => {
                *by = if *counter == "anon" { h.anon } else { h.shmem };
                *by > 0
            }
            None => false,
        },
        _ => true,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::generator::generate;
    use crate::explore::machine::Machine;
    use crate::model::Version;

    /// Every candidate of many generated cases is a valid scenario, and smaller.
    #[test]
    fn candidates_are_valid_and_smaller() {
        for (version, failing) in [
            (Version::V1, "identities(g0)"),
            (Version::V2, "protected(g0/g1)"),
        ] {
            candidates_parse(version, failing);
        }
    }

    fn candidates_parse(version: Version, failing: &str) {
        let m = Machine {
            version,
            memory: 2 << 30,
            swap: true,
            charge_moving: true,
            per_file: true,
            numa: true,
        };
        for i in 0..40 {
            let c = generate(9, i, &m);
            for v in candidates(&c, failing) {
                let text = v.to_toml();
                crate::scenario::parse("v.toml", &text)
                    .unwrap_or_else(|e| panic!("case {i}: {e}\n{text}"));
                assert!(
                    v.steps() <= c.steps() && v.groups.len() <= c.groups.len(),
                    "case {i}"
                );
            }
        }
    }

    /// A hold's expected rise is halved with the hold, and goes when the hold goes.
    #[test]
    fn hold_raises_follows_its_hold() {
        let m = Machine {
            version: Version::V2,
            memory: 2 << 30,
            swap: true,
            charge_moving: true,
            per_file: true,
            numa: false,
        };
        let mut seen = 0;
        for i in 0..200 {
            let c = generate(9, i, &m);
            for v in candidates(&c, "change(g0.anon at hold in p1)") {
                for d in &v.checks {
                    if let Declared::HoldRaises {
                        group,
                        phase,
                        counter,
                        by,
                    } = d
                    {
                        seen += 1;
                        let p = v.phases.iter().find(|p| &p.name == phase).unwrap();
                        let held = p.steps.iter().find_map(|s| match s {
                            Step::Hold(h) if &h.cgroup == group => {
                                Some(if *counter == "anon" { h.anon } else { h.shmem })
                            }
                            _ => None,
                        });
                        assert_eq!(held, Some(*by), "case {i}");
                    }
                }
            }
        }
        assert!(seen > 0);
    }
}
