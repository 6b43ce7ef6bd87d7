//! The case generator: a scenario drawn from (seed, index) alone, in a random group tree with
//! random limits, sized for the machine: random phases of steps drawn by the strategies
//! (`strategy`), the motifs that make the shapes some checks need (`motifs`), and the checks the
//! case declares (`declare`). Cases are valid by construction (every step refers to a group, a
//! file and a task that exist when it runs: `world` keeps track), so each is worth a run; the
//! same seed and machine give byte-identical files.

use std::time::Duration;

use super::case::{Case, phase};
use super::declare::{declared, protections};
use super::dice::Dice;
use super::machine::Machine;
use super::motifs::{
    concurrency_motif, hold_motif, limit_motif, midflight_motif, move_motif, numa_motif,
    protection_motif, thread_motif,
};
use super::strategy;
use super::tree::{leaves, tree};
use super::world::World;
use crate::model::Version;
use crate::model::step::Advice;
use crate::scenario::{Antagonist, CgroupSpec, Phase, Step};

/// The case (seed, index) for `m`.
pub fn generate(seed: u64, index: u32, m: &Machine) -> Case {
    let mut d = Dice::new(seed, index);
    let mut groups = tree(&mut d, m);
    // Charge moving (v1, where the kernel still has it): the move motif below. The draw is made
    // where charge moving is gone too, so that the cases of a seed are the same up to it.
    let moving = m.version == Version::V1 && d.chance(50) && m.charge_moving;
    let mut w = World::default();
    let (mut phases, paged_out) = random_phases(&mut d, m, &groups, &mut w);
    if m.version == Version::V2 && d.chance(25) {
        protection_motif(&mut d, m, &mut groups, &mut w, &mut phases);
    }
    let mut motifs = Vec::new();
    if moving && d.chance(50) {
        motifs.extend(move_motif(&mut d, m, &mut groups, &mut w, &mut phases));
    }
    // From a stream of its own, so that the cases before it stay as they were.
    let mut h = Dice::new(seed ^ 0x686f_6c64, index);
    if h.chance(40) {
        motifs.extend(hold_motif(&mut h, m, &groups, &mut w, &mut phases));
    }
    // v2 only: v1 shows no kernel_stack.
    if h.chance(30) && m.version == Version::V2 {
        thread_motif(&mut h, m, &groups, &mut w, &mut phases);
    }
    // Streams of their own: a knob changed under a running writer, tasks faulting at once.
    let mut f = Dice::new(seed ^ 0x666c_6967, index);
    if f.chance(20) {
        midflight_motif(&mut f, m, &groups, &mut w, &mut phases);
    }
    let mut c = Dice::new(seed ^ 0x636f_6e63, index);
    if c.chance(20) {
        concurrency_motif(&mut c, m, &groups, &w, &mut phases);
    }
    // A stream of its own again: a limit lowered below a leaf's usage and lifted again.
    let mut l = Dice::new(seed ^ 0x6c69_6d69, index);
    if l.chance(25) {
        motifs.extend(limit_motif(&mut l, m, &mut groups, &mut w, &mut phases));
    }
    // Only where there are two nodes, and then from a stream of its own: a one-node machine's
    // cases are what they were.
    let mut n = Dice::new(seed ^ 0x6e75_6d61, index);
    if m.numa && n.chance(25) {
        numa_motif(&mut n, m, &groups, &mut w, &mut phases);
    }
    phases.extend(end_phase(&w));
    let mut checks = declared(m, &groups, &w);
    checks.extend(protections(&groups, &phases));
    checks.extend(motifs);
    let swap = paged_out || groups.iter().any(|g| g.swap_max.is_some());
    Case {
        name: format!("explore-{seed}-{index}"),
        seed,
        index,
        version: m.version,
        swap: swap && m.swap,
        groups,
        phases,
        checks,
    }
}

/// 1..3 phases p0, p1, ... of 1..5 steps each drawn by the strategies in the tree's leaves (a
/// phase whose draws found nothing to work on sleeps), some with the compaction antagonist;
/// whether a step pages anon out (the case needs swap).
fn random_phases(
    d: &mut Dice,
    m: &Machine,
    groups: &[CgroupSpec],
    w: &mut World,
) -> (Vec<Phase>, bool) {
    let leaves = leaves(groups);
    let mut phases = Vec::new();
    let mut paged_out = false;
    for pi in 0..d.range(1, 3) {
        let mut steps = Vec::new();
        for _ in 0..d.range(1, 5) {
            if let Some(st) = strategy::step(d, m, groups, &leaves, w) {
                paged_out |= matches!(
                    &st,
                    Step::Advise {
                        advice: Advice::Pageout,
                        ..
                    }
                );
                steps.push(st);
            }
        }
        if steps.is_empty() {
            steps.push(Step::Sleep(Duration::from_millis(100)));
        }
        let antagonists = if d.chance(15) {
            vec![Antagonist::Compaction]
        } else {
            Vec::new()
        };
        phases.push(Phase {
            antagonists,
            ..phase(format!("p{pi}"), steps)
        });
    }
    (phases, paged_out)
}

/// Held tasks exit at the end: their exit is a step too.
fn end_phase(w: &World) -> Option<Phase> {
    let steps: Vec<Step> = (w.tasks.iter())
        .map(|t| Step::Release {
            task: t.name.clone(),
        })
        .collect();
    (!steps.is_empty()).then(|| phase("end".into(), steps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::case::Declared;
    use crate::explore::strategy::{CLIMB_SECS, climb_secs};
    use crate::explore::tree::{cap_above, own_cap, protected_below};
    use crate::model::record::within;

    fn machine(version: Version) -> Machine {
        Machine {
            version,
            memory: 2 << 30,
            swap: true,
            charge_moving: true,
            per_file: true,
            numa: false,
        }
    }

    /// The same seed and machine give the same file, byte for byte; another index another case.
    #[test]
    fn cases_are_reproducible_from_seed_and_index() {
        let m = machine(Version::V2);
        assert_eq!(generate(7, 3, &m).to_toml(), generate(7, 3, &m).to_toml());
        assert_ne!(generate(7, 3, &m).to_toml(), generate(7, 4, &m).to_toml());
        assert_ne!(generate(7, 3, &m).to_toml(), generate(8, 3, &m).to_toml());
    }

    /// Every generated case is a valid scenario, for both versions, over many seeds and
    /// machines (seed 21 case 384 on this project's 23.5 GiB host once advised memory a task had
    /// only grown, which no advice reaches).
    #[test]
    fn generated_cases_parse() {
        let machines = [Version::V1, Version::V2].into_iter().flat_map(|version| {
            [(2u64 << 30, true), (47 << 29, true), (4 << 30, false)].map(|(memory, swap)| Machine {
                version,
                memory,
                swap,
                charge_moving: swap,
                per_file: swap,
                numa: false,
            })
        });
        for (m, seed) in machines.flat_map(|m| [42, 21, 5].map(move |s| (m, s))) {
            for i in 0..500 {
                let c = generate(seed, i, &m);
                let text = c.to_toml();
                let sc = crate::scenario::parse("case.toml", &text)
                    .unwrap_or_else(|e| panic!("case {i}: {e}\n{text}"));
                assert_eq!(sc.name, c.name);
                assert!(c.groups.len() <= 6);
                assert!(c.groups.iter().all(|g| g.name.matches('/').count() <= 2));
            }
        }
    }

    /// No case protects more below a limit (or memory.high) than half of it: memory the limit
    /// cannot reclaim would make the kernel's OOM killer a false alarm. Some cases still protect.
    #[test]
    fn protection_stays_within_half_of_every_limit_above_it() {
        let m = machine(Version::V2);
        let mut protecting = 0;
        for seed in [11, 42] {
            for i in 0..400 {
                let c = generate(seed, i, &m);
                for a in &c.groups {
                    let Some(cap) = own_cap(a) else {
                        continue;
                    };
                    let below = protected_below(&c.groups, &a.name);
                    assert!(below <= cap / 2, "seed {seed} case {i}: {}", c.to_toml());
                    protecting += usize::from(below > 0);
                }
            }
        }
        assert!(protecting > 0);
    }

    /// A reclaim step asks for page cache its group's own writes made earlier in the case: at
    /// most half of what they wrote and an eighth of the least limit above the group (a 20-minute
    /// exploration of stock 6.12, seed 11, ended 68 cases before judging by asking groups with no
    /// page cache). Reclaims are still drawn.
    #[test]
    fn reclaim_asks_only_for_page_cache_the_group_made() {
        let m = machine(Version::V2);
        let mut reclaims = 0;
        for i in 0..600 {
            let c = generate(11, i, &m);
            let mut made: Vec<(&str, u64)> = Vec::new();
            for st in c.phases.iter().flat_map(|p| &p.steps) {
                match st {
                    Step::Write { cgroup, size, .. } | Step::MmapWrite { cgroup, size, .. } => {
                        made.push((cgroup, *size))
                    }
                    Step::Reclaim { cgroup, size, .. } => {
                        reclaims += 1;
                        let made: u64 = made.iter().filter(|(g, _)| g == cgroup).map(|x| x.1).sum();
                        assert!(made >= 2 * size, "case {i}: {}", c.to_toml());
                        assert!(8 * size <= cap_above(&c.groups, cgroup), "case {i}");
                    }
                    _ => {}
                }
            }
        }
        assert!(reclaims > 20, "{reclaims} reclaim steps in 600 cases");
    }

    /// No exhaust is drawn that memory.high throttles for longer than CLIMB_SECS on its way to
    /// the OOM kill, and some are drawn below a memory.high.
    #[test]
    fn no_exhaust_crawls_below_a_high() {
        let m = machine(Version::V2);
        let mut below_high = 0;
        for i in 0..600 {
            let c = generate(73, i, &m);
            for s in c.phases.iter().flat_map(|p| &p.steps) {
                let Step::Exhaust { cgroup, .. } = s else {
                    continue;
                };
                let chain = || c.groups.iter().filter(|a| within(cgroup, &a.name));
                let limit = chain().filter_map(|a| a.limit).min().unwrap();
                if let Some(high) = chain().filter_map(|a| a.high).min() {
                    below_high += 1;
                    let secs = climb_secs(high, limit);
                    assert!(secs <= CLIMB_SECS, "case {i}: {secs} s: {}", c.to_toml());
                }
            }
        }
        assert!(
            below_high > 0,
            "no exhaust below a memory.high in 600 cases"
        );
    }

    /// memory.high above an exhaust is judged with the throttling bound (the exhaust's anon has
    /// no swap to go to: seed 61 case 18 on Debian 6.1 passed a 27 MiB high by 4.3 MiB while
    /// throttled), and only there. Both kinds are drawn.
    #[test]
    fn high_above_an_exhaust_is_judged_as_throttled() {
        let m = machine(Version::V2);
        let (mut throttled, mut plain) = (0, 0);
        for i in 0..600 {
            let c = generate(61, i, &m);
            let exhausted: Vec<&str> = (c.phases.iter().flat_map(|p| &p.steps))
                .filter_map(|s| match s {
                    Step::Exhaust { cgroup, .. } => Some(cgroup.as_str()),
                    _ => None,
                })
                .collect();
            for d in &c.checks {
                if let Declared::UnderHigh {
                    group,
                    throttled: t,
                } = d
                {
                    let below = exhausted.iter().any(|x| within(x, group));
                    assert_eq!(*t, below, "case {i}: {}", c.to_toml());
                    if *t {
                        throttled += 1;
                    } else {
                        plain += 1;
                    }
                }
            }
        }
        assert!(
            throttled > 0 && plain > 0,
            "{throttled} throttled, {plain} not"
        );
    }

    /// `protected` is declared, and only for a group with memory.min under a parent where
    /// reclaim is rooted, in phases that leave it alone; the case parses with it.
    #[test]
    fn protection_is_declared_where_reclaim_is_rooted_at_the_parent() {
        let declared = each_declared(Version::V2, |i, c, d| {
            let Declared::Protected { group, phase } = d else {
                return false;
            };
            let g = c.groups.iter().find(|g| &g.name == group).unwrap();
            assert!(g.min.is_some(), "case {i}");
            let (parent, _) = group.rsplit_once('/').unwrap();
            let p = c.groups.iter().find(|g| g.name == parent).unwrap();
            assert!(p.limit.is_some() || p.high.is_some(), "case {i}");
            let ph = c.phases.iter().find(|p| &p.name == phase).unwrap();
            assert!(
                ph.steps.iter().all(|s| s.cgroup() != Some(group.as_str())),
                "case {i}: {}",
                c.to_toml()
            );
            true
        });
        // The motif adds the shape to a quarter of the cases whose tree allows it or is small
        // enough to take a group with two children: about one case in ten.
        assert!(
            declared >= 30,
            "protected declared in {declared} of 600 cases"
        );
    }

    /// v1 cases with charge moving declare that a group's usage stays across moves below it,
    /// only where every move's destination chain has no limit.
    #[test]
    fn usage_kept_across_moves_only_without_a_limit_on_the_way() {
        let declared = each_declared(Version::V1, |i, c, d| {
            let Declared::UsageKept(x) = d else {
                return false;
            };
            for s in c.phases.iter().flat_map(|p| &p.steps) {
                if let Step::Move { to, .. } = s
                    && within(to, x)
                {
                    assert_eq!(cap_above(&c.groups, to), u64::MAX, "case {i}");
                }
            }
            true
        });
        for i in 0..600 {
            assert!(
                v2_has_no_move_charge(i),
                "case {i}: v2 cases never set move_charge"
            );
        }
        assert!(
            declared >= 30,
            "usage kept declared in {declared} of 600 cases"
        );
    }

    /// Runs `f` on every declared check of cases 0..600 of seed 5; how many it counted (true).
    fn each_declared(version: Version, mut f: impl FnMut(u32, &Case, &Declared) -> bool) -> usize {
        let m = machine(version);
        let mut n = 0;
        for i in 0..600 {
            let c = generate(5, i, &m);
            n += c.checks.iter().filter(|d| f(i, &c, d)).count();
        }
        n
    }

    fn v2_has_no_move_charge(i: u32) -> bool {
        let c = generate(5, i, &machine(Version::V2));
        c.groups.iter().all(|g| g.move_charge.is_none()) && !c.to_toml().contains("usage\"\nstep")
    }

    /// The generator's output, pinned: FNV-1a over the files of 3000 cases for each of six
    /// machines (v1 and v2; with swap and cachestat, a large host, neither). A refactor must
    /// leave it as it is; a change of what is drawn changes it on purpose, and says so.
    #[test]
    fn generated_cases_are_pinned() {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for version in [Version::V1, Version::V2] {
            for (memory, swap) in [(2u64 << 30, true), (47 << 29, true), (4 << 30, false)] {
                let m = Machine {
                    version,
                    memory,
                    swap,
                    charge_moving: swap,
                    per_file: swap,
                    numa: false,
                };
                for i in 0..3000 {
                    for b in generate(71, i, &m).to_toml().bytes() {
                        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
                    }
                }
            }
        }
        assert_eq!(h, PINNED, "generated cases changed: {h:#018x}");
    }

    /// 0xe7ad_b415_b98e_e745 from 60cc8ea (before the strategies refactor, which kept it) until
    /// the limit motif (0x290e_92d7_6e11_bde9; with the motif never drawn the old value came out)
    /// and no unlink of a file a held task maps changed it on purpose (the motif then left out
    /// leaves a task had ever been in and counted its sync), then 0x7767_a6a6_fe0f_f272 until the
    /// mid-flight and concurrency motifs and the thread motif's pipes changed it on purpose
    /// (2026-12-06).
    const PINNED: u64 = 0x0ea2_079d_caac_8ff1;

    /// No case unlinks a file while a held task maps it.
    #[test]
    fn no_unlink_of_a_file_a_held_task_maps() {
        for version in [Version::V1, Version::V2] {
            for i in 0..600 {
                let c = generate(5, i, &machine(version));
                let mut mapped: Vec<(String, String)> = Vec::new();
                for s in c.phases.iter().flat_map(|p| &p.steps) {
                    match s {
                        Step::Hold(h) => {
                            if let Some(f) = &h.file {
                                mapped.push((h.task.clone(), f.clone()));
                            }
                        }
                        Step::Release { task } => mapped.retain(|(t, _)| t != task),
                        Step::Unlink { file, .. } => {
                            assert!(!mapped.iter().any(|(_, f)| f == file), "case {i}: {file}")
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// The limit motif: in some cases a leaf with nothing capping it writes a clean file and gets
    /// a limit of half of it, lifted right after, and limit-takes judges that leaf.
    #[test]
    fn limit_motif_lowers_a_limit_below_what_it_wrote_and_lifts_it() {
        for version in [Version::V1, Version::V2] {
            let (knob, none) = match version {
                Version::V2 => ("memory.max", "max"),
                Version::V1 => ("memory.limit_in_bytes", "-1"),
            };
            let mut n = 0;
            for i in 0..300 {
                let c = generate(3, i, &machine(version));
                let Some(g) = c.checks.iter().find_map(|d| match d {
                    Declared::LimitTakes(g) => Some(g.clone()),
                    _ => None,
                }) else {
                    continue;
                };
                n += 1;
                let steps: Vec<&Step> = (c.phases.iter())
                    .flat_map(|p| &p.steps)
                    .filter(|s| s.cgroup() == Some(g.as_str()) || matches!(s, Step::Sync))
                    .collect();
                let k = steps.len();
                assert!(k >= 4, "case {i}: {steps:?}");
                let Step::Write { size, fsync, .. } = steps[k - 4] else {
                    panic!("case {i}: {steps:?}")
                };
                assert!(*fsync && matches!(steps[k - 3], Step::Sync));
                let set = |s: &Step| match s {
                    Step::Set { file, value, .. } if file == knob => value.clone(),
                    _ => None,
                };
                let half = format!("{}M", size / 2 / crate::explore::machine::MIB);
                assert_eq!(set(steps[k - 2]).as_deref(), Some(half.as_str()));
                assert_eq!(set(steps[k - 1]).as_deref(), Some(none));
                let spec = c.groups.iter().find(|x| x.name == g).unwrap();
                assert_eq!(cap_above(&c.groups, &g), u64::MAX, "case {i}");
                assert!(spec.swap && spec.swap_max.is_none(), "case {i}");
            }
            assert!(
                (30..=120).contains(&n),
                "{version:?}: the limit motif in {n} of 300 cases"
            );
        }
    }

    /// A third or more of the cases get a hold of their own whose anon and shmem must show.
    #[test]
    fn hold_motif_declares_both_counters() {
        for version in [Version::V1, Version::V2] {
            let n = (0..300)
                .filter(|&i| {
                    let c = generate(3, i, &machine(version));
                    let k = |x: &str| {
                        c.checks.iter().any(
                            |d| matches!(d, Declared::HoldRaises { counter, .. } if *counter == x),
                        )
                    };
                    k("anon") && k("shmem")
                })
                .count();
            assert!(n >= 60, "{version:?}: the hold motif in {n} of 300 cases");
        }
    }

    /// A seeded run reaches every kind of condition: the first 40 cases of seed 1 (the CI's
    /// seed), under v2 and v1, and the mid-flight and concurrency motifs where they apply.
    #[test]
    fn a_seeded_run_reaches_every_condition() {
        use crate::explore::strategy::{Condition, conditions};
        for version in [Version::V2, Version::V1] {
            let mut reached = std::collections::BTreeMap::new();
            for i in 0..40 {
                for c in conditions(&generate(1, i, &machine(version)).phases) {
                    *reached.entry(c).or_insert(0) += 1;
                }
            }
            for c in Condition::ALL {
                assert!(
                    reached.contains_key(&c),
                    "{version:?}: no case of seed 1 made {} ({reached:?})",
                    c.name()
                );
            }
        }
    }

    /// On a two-node machine the numa motif moves a held task's file, anon and shmem away while
    /// its writer dirties the file (mid-flight), and its cases say they need two nodes; on one
    /// node no case has a migrate step.
    #[test]
    fn numa_moves_pages_away_while_a_task_writes() {
        let numa = Machine {
            numa: true,
            ..machine(Version::V2)
        };
        let moved = |m: &Machine, i| {
            let c = generate(1, i, m);
            let n = (c.phases.iter().flat_map(|p| &p.steps))
                .filter(|s| matches!(s, Step::Migrate { .. }))
                .count();
            (n, c)
        };
        let (mut cases, mut midflight) = (0, 0);
        for i in 0..40 {
            let (n, c) = moved(&numa, i);
            if n > 0 {
                assert_eq!(n, 3, "file, anon and shmem");
                assert!(c.to_toml().contains("\"numa\"]"), "{}", c.to_toml());
                crate::scenario::parse("c.toml", &c.to_toml()).unwrap();
                cases += 1;
                midflight += crate::explore::strategy::conditions(&c.phases)
                    .contains(&crate::explore::strategy::Condition::MidFlight)
                    as usize;
            }
            assert_eq!(moved(&machine(Version::V2), i).0, 0);
        }
        assert!(
            cases >= 3 && midflight == cases,
            "{cases} cases, {midflight} mid-flight"
        );
    }

    /// The mid-flight motif lowers memory.high under a task that keeps dirtying, and lifts it.
    #[test]
    fn midflight_lowers_high_while_a_task_writes() {
        let n = (0..200)
            .filter(|&i| {
                let c = generate(5, i, &machine(Version::V2));
                c.phases.iter().any(|p| {
                    let s = &p.steps;
                    s.len() == 6
                        && matches!(&s[0], Step::Write { .. })
                        && matches!(&s[1], Step::Hold(h) if h.redirty)
                        && matches!(&s[2], Step::Set { file, value: Some(v), .. } if file == "memory.high" && v != "max")
                        && matches!(s.last(), Some(Step::Wait { .. }))
                })
            })
            .count();
        assert!(
            (10..=80).contains(&n),
            "the mid-flight motif in {n} of 200 cases"
        );
    }
}
