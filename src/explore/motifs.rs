//! Motifs: shapes a check needs that random steps almost never make, added to a case on top of
//! its random steps (a group pair under a limit for `protected`, a move between two groups for
//! `usage-kept`, a hold whose anon and shmem must show, 768 threads' kernel stacks). Each adds
//! its groups and phases and returns the checks it declares.

use super::case::Declared;
use super::case::phase;
use super::dice::Dice;
use super::machine::MIB;
use super::machine::Machine;
use super::strategy::Condition;
use super::tree::{cap_above, is_leaf, protectable};
use super::world::World;
use crate::model::Version;
use crate::model::record::within;
use crate::model::step::{Mover, Region, Target};
use crate::scenario::{CgroupSpec, Hold, Phase, Step};

/// The motifs: name, the kind of condition it makes, how often and what it adds (docs/explore.md).
const MOTIFS: &[(&str, Condition, &str)] = &[
    (
        "protection",
        Condition::History,
        "v2, 1 case in 4: a leaf with memory.min writes first, then a sibling presses the parent's limit (reclaim rooted above a protection set before the groups grew)",
    ),
    (
        "move",
        Condition::History,
        "v1 with charge moving, 1 case in 4: a held task moved with its charges",
    ),
    (
        "hold",
        Condition::Workload,
        "2 cases in 5: a held task whose anon and shmem must show",
    ),
    (
        "thread",
        Condition::Allocation,
        "v2, 3 cases in 10: 768 threads (kernel stacks) and 64 pipes of 1 MiB (rings above the largest kmalloc size class)",
    ),
    (
        "limit",
        Condition::History,
        "1 case in 4: a limit lowered below what a leaf wrote, then lifted",
    ),
    (
        "mid-flight",
        Condition::MidFlight,
        "1 case in 5: memory.high (v1: memory.soft_limit_in_bytes) lowered to a quarter of a file a held task keeps dirtying through its mapping, while it dirties, then lifted",
    ),
    (
        "concurrency",
        Condition::Concurrency,
        "1 case in 5: 2 to 4 tasks of one leaf faulting at the same moment",
    ),
    (
        "numa",
        Condition::MidFlight,
        "on a machine with two NUMA nodes, 1 case in 4: a held task's mapped file (dirtied over and over by its writer meanwhile), anon and shmem (huge pages, 1 in 2) moved away from the node they are on with move_pages",
    ),
];

/// The motifs as a markdown table.
pub fn table() -> String {
    let mut t = String::from("| motif | condition | what it adds |\n|---|---|---|\n");
    for (name, c, what) in MOTIFS {
        t += &format!("| {name} | {} | {what} |\n", c.name());
    }
    t
}

/// The shape `protected` judges, which random steps almost never make (0 declarations in 5400
/// cases): a leaf with memory.min under a parent where reclaim is rooted writes a file of up to
/// half its min first, and a sibling then writes more than the parent's least limit in a phase
/// of its own. Trees with such a pair are rare too (none in 296 cases of one run), so a tree of
/// at most 3 groups without one gets one: a new top-level group with a limit and two children,
/// one protected by half the limit, that no other step uses.
pub fn protection_motif(
    d: &mut Dice,
    m: &Machine,
    groups: &mut Vec<CgroupSpec>,
    w: &mut World,
    phases: &mut Vec<Phase>,
) {
    if phases.is_empty() {
        return;
    }
    let mut pairs = protection_pairs(groups, w);
    if pairs.is_empty() && groups.len() <= 3 {
        protection_tree(d, m, groups);
        pairs = protection_pairs(groups, w);
    }
    if pairs.is_empty() {
        return;
    }
    let (g, sibling, parent_cap) = d.pick(&pairs).clone();
    let g = groups.iter().find(|x| x.name == g).unwrap().clone();
    let groups = &groups[..];
    let mut write = |cgroup: &str, size: u64| {
        let file = w.write(groups, cgroup, size);
        Step::Write {
            cgroup: cgroup.to_string(),
            file,
            size,
            block_size: MIB,
            fsync: false,
            quick_size: None,
        }
    };
    let own = d.mib(3, g.min.unwrap_or(0) / 2 / MIB);
    phases[0].steps.insert(0, write(&g.name, own));
    let press = (parent_cap + 8 * MIB).min(2 * m.budget().max(parent_cap));
    let step = write(&sibling, press);
    motif_phase(phases, step);
}

/// Appends a phase of its own (`p<n>`) with one step; its name.
pub fn motif_phase(phases: &mut Vec<Phase>, step: Step) -> String {
    let name = format!("p{}", phases.len());
    phases.push(phase(name.clone(), vec![step]));
    name
}

/// (group, sibling, the parent's least limit) for each leaf `protected` can judge that has a
/// leaf sibling to press the parent (one that exhausted nothing) and a min worth 4 MiB of writes.
fn protection_pairs(groups: &[CgroupSpec], w: &World) -> Vec<(String, String, u64)> {
    (groups.iter())
        .filter_map(|g| {
            let (min, parent, parent_cap) = protectable(groups, g)?;
            let sibling = groups.iter().find(|s| {
                is_leaf(groups, &s.name)
                    && within(&s.name, parent)
                    && !within(&s.name, &g.name)
                    && s.name != parent
            })?;
            (min / 2 >= 4 * MIB && !w.exhausted.contains(&sibling.name))
                .then(|| (g.name.clone(), sibling.name.clone(), parent_cap))
        })
        .collect()
}

/// Adds a top-level group with a limit of 32 MiB up to the size budget and two children below
/// it, the first with memory.min of half the limit (as much as `min_room` allows).
fn protection_tree(d: &mut Dice, m: &Machine, groups: &mut Vec<CgroupSpec>) {
    let n = groups.len();
    let limit = d.mib(32, m.budget() / MIB);
    let spec = |name: String| CgroupSpec {
        name,
        swap: true,
        ..Default::default()
    };
    let parent = format!("g{n}");
    groups.push(CgroupSpec {
        limit: Some(limit),
        ..spec(parent.clone())
    });
    groups.push(CgroupSpec {
        min: Some(limit / 2 / MIB * MIB),
        ..spec(format!("{parent}/g{}", n + 1))
    });
    groups.push(spec(format!("{parent}/g{}", n + 2)));
}

/// The shape `usage-kept` judges (a `change` of usage by 0 at `move`), which random steps rarely
/// make (a move in 10 of 273 v1 cases): a tree of at most 3 groups gets a new top-level group
/// with two children, no limits; a task holding 4 to 16 MiB of plain anon starts in one child
/// and moves, in a phase of its own, to the other, whose memory.move_charge_at_immigrate is 1
/// (anon). Across the move the charge leaves the source as it arrives in the destination, so
/// their parent's usage stays; without a limit on the way the destination's precharge (the
/// anon twice for a moment) reclaims nothing. No other group moves charges, and no other step
/// runs in these: memcgtest starts a worker in its group before exec, and charge moving then
/// moves the runner's copy-on-write pages the child still shares into the group (6.12's
/// mc_handle_present_pte takes any mapped anon page, shared or not; 6.12 v1, seed 64, with every
/// group moving charges: a group's anon 4 MiB above its tasks' RssAnon at the start of a case,
/// in 4 confirmed failures and 20 flaky ones).
pub fn move_motif(
    d: &mut Dice,
    m: &Machine,
    groups: &mut Vec<CgroupSpec>,
    w: &mut World,
    phases: &mut Vec<Phase>,
) -> Option<Declared> {
    if groups.len() > 3 {
        return None;
    }
    let n = groups.len();
    let parent = format!("g{n}");
    let (from, to) = (
        format!("{parent}/g{}", n + 1),
        format!("{parent}/g{}", n + 2),
    );
    for (name, move_charge) in [
        (parent.clone(), None),
        (from.clone(), None),
        (to.clone(), Some(1)),
    ] {
        groups.push(CgroupSpec {
            name,
            swap: true,
            move_charge,
            ..Default::default()
        });
    }
    let anon = d.mib(4, (w.room(groups, &from, m.budget()) / MIB / 2).min(16));
    let task = w.hold(&to, anon, anon);
    let hold = Step::Hold(Hold {
        task: task.clone(),
        cgroup: from,
        anon,
        ..Hold::default()
    });
    motif_phase(phases, hold);
    motif_phase(
        phases,
        Step::Move {
            task,
            to,
            thread: false,
        },
    );
    Some(Declared::UsageKept(parent))
}

/// A phase of its own in which a task starts in a leaf holding 8 to 16 MiB of plain anon and as
/// much shmem (a memfd), and the checks that the leaf's anon and shmem rose by at least that
/// across it: no other truth says what a group's shmem should be (RssShmem counts tmpfs pages
/// charged anywhere), and the task's anon truth is one check among many. At least, because the
/// worker's own runtime is anon of the group too. Only in a leaf without a limit or memory.high
/// above it, and not where charges move in (see `move_motif`); nothing where no leaf is so.
pub fn hold_motif(
    d: &mut Dice,
    m: &Machine,
    groups: &[CgroupSpec],
    w: &mut World,
    phases: &mut Vec<Phase>,
) -> Vec<Declared> {
    // No limit or memory.high on the chain: room counts held tasks, not page cache, and a leaf
    // full of cache under its limit would reclaim (and may swap out) the hold's fresh memory.
    let leaves: Vec<&CgroupSpec> = uncapped_leaves(m, groups, w).collect();
    if leaves.is_empty() {
        return Vec::new();
    }
    let g = d.pick(&leaves).name.clone();
    let most = (w.room(groups, &g, m.budget()) / 4 / MIB).min(16);
    let (anon, shmem) = (d.mib(8, most), d.mib(8, most));
    let task = w.hold(&g, anon, anon + shmem);
    let phase = motif_phase(
        phases,
        Step::Hold(Hold {
            task,
            cgroup: g.clone(),
            anon,
            shmem,
            ..Hold::default()
        }),
    );
    [("anon", anon), ("shmem", shmem)]
        .into_iter()
        .map(|(counter, by)| Declared::HoldRaises {
            group: g.clone(),
            phase: phase.clone(),
            counter,
            by,
        })
        .collect()
}

/// A phase of its own in which a task starts 768 threads in a leaf with 48 MiB of room: 12 MiB
/// of kernel stacks (16 KiB each on x86_64), which `identities` must find within the leaf's
/// kernel memory (v2 kernel_stack within kernel). Random holds start no threads. Fewer would
/// not do: the rule's tolerance is the unflushed bound of each of its six counters (6.5 MiB on
/// 2 CPUs), and 256 threads' stacks counted twice (4 MiB too many) stayed within it. The task
/// also makes 64 pipes of 1 MiB: rings above the largest kmalloc size class, which SLUB takes
/// from the page allocator (1 MiB of slab_unreclaimable, within kernel for `identities`).
pub fn thread_motif(
    d: &mut Dice,
    m: &Machine,
    groups: &[CgroupSpec],
    w: &mut World,
    phases: &mut Vec<Phase>,
) {
    let leaves: Vec<&CgroupSpec> = (groups.iter())
        .filter(|g| is_leaf(groups, &g.name) && !w.exhausted.contains(&g.name))
        .filter(|g| w.room(groups, &g.name, m.budget()) >= 48 * MIB)
        .collect();
    if leaves.is_empty() {
        return;
    }
    let g = d.pick(&leaves).name.clone();
    // The threads' kernel stacks and the few pages of their user stacks, the pipes' slab.
    let task = w.hold(&g, MIB, 26 * MIB);
    motif_phase(
        phases,
        Step::Hold(Hold {
            task,
            cgroup: g,
            anon: MIB,
            threads: 768,
            pipes: 64,
            pipe_size: MIB,
            ..Hold::default()
        }),
    );
}

/// A phase of its own in which a leaf with no limit or memory.high on its chain and no task of
/// its own writes 16 to 32 MiB of page cache (fsync, then sync: all of it clean), gets a memory
/// limit of half of that (v2 memory.max, v1 memory.limit_in_bytes) and then none again: a limit
/// lowered below the usage and changed back, the condition of the promises `v2.max.lowered` and
/// `v1.limit`, which `limit-takes` judges (the kernel reclaims before the write returns) and every
/// invariant judges after. Clean page cache and no task ever: reclaim can always make it fit,
/// so the write neither OOM-kills (v2) nor fails with EBUSY (v1). Where no leaf is so (most
/// random trees have a limit or a task on every leaf), a new top-level group that no other step
/// uses, if the case has room for a group.
pub fn limit_motif(
    d: &mut Dice,
    m: &Machine,
    groups: &mut Vec<CgroupSpec>,
    w: &mut World,
    phases: &mut Vec<Phase>,
) -> Vec<Declared> {
    // A case has at most 6 groups.
    if limitable(m, groups, w).is_empty() && groups.len() < 6 {
        groups.push(CgroupSpec {
            name: format!("g{}", groups.len()),
            swap: true,
            ..Default::default()
        });
    }
    let groups = &groups[..];
    let leaves = limitable(m, groups, w);
    if leaves.is_empty() {
        return Vec::new();
    }
    let g = d.pick(&leaves).clone();
    let size = d.mib(16, 32);
    let file = w.write(groups, &g, size);
    let (knob, none) = match m.version {
        Version::V2 => ("memory.max", "max"),
        Version::V1 => ("memory.limit_in_bytes", "-1"),
    };
    let set = |value: String| set_knob(&g, knob, value);
    let write = fsynced_write(&g, file, size);
    motif_phase(phases, write);
    let steps = &mut phases.last_mut().expect("the motif's phase").steps;
    steps.push(Step::Sync);
    w.synced = true;
    steps.push(set(format!("{}M", size / 2 / MIB)));
    steps.push(set(none.to_string()));
    vec![Declared::LimitTakes(g)]
}

/// The leaves `limit_motif` may lower a limit in: no limit or memory.high on the chain, no swap
/// limit (v1 memory.memsw.limit_in_bytes must stay at or above the memory limit), nothing that
/// moves charges in, no exhaust, room for 32 MiB, and no held task ever (one that moved on left
/// its anon charged there: without swap, reclaim could not make the usage fit).
fn limitable(m: &Machine, groups: &[CgroupSpec], w: &World) -> Vec<String> {
    uncapped_leaves(m, groups, w)
        .filter(|g| g.swap && g.swap_max.is_none())
        .filter(|g| !w.held_in.contains(&g.name))
        .map(|g| g.name.clone())
        .collect()
}

/// The leaves with no limit or memory.high on their chain, nothing moving charges in, no
/// exhaust, and room for 32 MiB, in tree order.
fn uncapped_leaves<'a>(
    m: &'a Machine,
    groups: &'a [CgroupSpec],
    w: &'a World,
) -> impl Iterator<Item = &'a CgroupSpec> {
    (groups.iter())
        .filter(|g| is_leaf(groups, &g.name) && !w.exhausted.contains(&g.name))
        .filter(|g| cap_above(groups, &g.name) == u64::MAX && g.move_charge.is_none())
        .filter(|g| w.room(groups, &g.name, m.budget()) >= 32 * MIB)
}

/// Knobs changed mid-flight: in a phase of its own, an uncapped leaf with no task of its own
/// writes 16 to 32 MiB of a file (fsync), then a task maps it and keeps dirtying every page in
/// the background (`hold` with `redirty`) while a knob is lowered to a quarter of that under it,
/// held 300 ms, and lifted again; then the task stops dirtying. v2 lowers memory.high: the pages
/// are written back, reclaimed and faulted in again under it, their charges racing the write of
/// memory.high, and every invariant then judges the state (memory.high, not max: a task above
/// high is throttled, never OOM-killed). v1 lowers memory.soft_limit_in_bytes, which only global
/// pressure enforces: a write racing the charges and no more.
pub fn midflight_motif(
    d: &mut Dice,
    m: &Machine,
    groups: &[CgroupSpec],
    w: &mut World,
    phases: &mut Vec<Phase>,
) {
    let leaves = limitable(m, groups, w);
    if leaves.is_empty() {
        return;
    }
    let (knob, none) = match m.version {
        Version::V2 => ("memory.high", "max"),
        Version::V1 => ("memory.soft_limit_in_bytes", "-1"),
    };
    let g = d.pick(&leaves).clone();
    let size = d.mib(16, 32);
    let file = w.write(groups, &g, size);
    w.maps(&file, &g);
    let task = w.hold(&g, MIB, MIB + size);
    if let Some(t) = w.tasks.last_mut() {
        t.file = Some(file.clone());
    }
    let set = |value: String| set_knob(&g, knob, value);
    let write = fsynced_write(&g, file.clone(), size);
    motif_phase(phases, write);
    let steps = &mut phases.last_mut().expect("the motif's phase").steps;
    steps.push(Step::Hold(Hold {
        task: task.clone(),
        cgroup: g.clone(),
        anon: MIB,
        file: Some(file),
        size,
        dirty: true,
        redirty: true,
        ..Hold::default()
    }));
    steps.push(set(format!("{}M", size / 4 / MIB)));
    steps.push(Step::Sleep(std::time::Duration::from_millis(300)));
    steps.push(set(none.into()));
    steps.push(Step::Wait { task });
}

/// NUMA: in a phase of its own, a task of a leaf with room (twice what it holds) holds 8 to 32 MiB of a file it keeps
/// dirtying through its mapping, 2 MiB of anon and 4 to 8 MiB of shmem (on a huge=always tmpfs,
/// 1 case in 2), and moves each away from the node holding it while the writer runs: the
/// migration path's per-node stat moves of dirty, mapped, shmem and huge pages, which `placed`
/// and every per-node invariant then judge.
pub fn numa_motif(
    d: &mut Dice,
    m: &Machine,
    groups: &[CgroupSpec],
    w: &mut World,
    phases: &mut Vec<Phase>,
) {
    let size = d.mib(8, 32);
    let shmem = d.mib(4, 8);
    let huge = d.chance(50);
    // Any leaf with room for all of it twice over (a limit then never reclaims it meanwhile).
    let leaves: Vec<String> = (groups.iter())
        .filter(|g| is_leaf(groups, &g.name) && !w.exhausted.contains(&g.name))
        .filter(|g| g.move_charge.is_none() && !w.held_in.contains(&g.name))
        .filter(|g| w.room(groups, &g.name, m.budget()) >= 2 * (size + shmem + 2 * MIB))
        .map(|g| g.name.clone())
        .collect();
    if leaves.is_empty() {
        return;
    }
    let g = d.pick(&leaves).clone();
    let file = w.write(groups, &g, size);
    w.maps(&file, &g);
    let task = w.hold(&g, 2 * MIB + shmem, 2 * MIB + shmem + size);
    if let Some(t) = w.tasks.last_mut() {
        t.file = Some(file.clone());
    }
    motif_phase(phases, fsynced_write(&g, file.clone(), size));
    let steps = &mut phases.last_mut().expect("the motif's phase").steps;
    steps.push(Step::Hold(Hold {
        task: task.clone(),
        cgroup: g,
        anon: 2 * MIB,
        shmem,
        shmem_huge: huge,
        file: Some(file),
        size,
        dirty: true,
        redirty: true,
        ..Hold::default()
    }));
    // Each mapping by another system call: every way into migration in each motif.
    for (region, by) in Region::ALL.into_iter().zip(Mover::ALL) {
        steps.push(Step::Migrate {
            task: task.clone(),
            region,
            node: Target::Away,
            by,
        });
    }
    steps.push(Step::Sleep(std::time::Duration::from_millis(200)));
    steps.push(Step::Wait { task });
}

/// Concurrency: in a phase of its own, 2 to 4 tasks of one leaf with room for them fault in 1 to
/// 4 MiB each at the same moment, for 300 ms (`fault` with clients): their charges and
/// uncharges race on the group's page counter and per-CPU stock, which every invariant then
/// judges.
pub fn concurrency_motif(
    d: &mut Dice,
    m: &Machine,
    groups: &[CgroupSpec],
    w: &World,
    phases: &mut Vec<Phase>,
) {
    let clients = 2 + d.index(3) as u32;
    let leaves: Vec<&CgroupSpec> = (groups.iter())
        .filter(|g| is_leaf(groups, &g.name) && !w.exhausted.contains(&g.name))
        .filter(|g| w.room(groups, &g.name, m.budget()) >= 8 * MIB * clients as u64)
        .collect();
    if leaves.is_empty() {
        return;
    }
    let g = d.pick(&leaves).name.clone();
    let size = d.mib(1, 4);
    motif_phase(
        phases,
        Step::Fault {
            cgroup: g,
            size,
            clients,
            duration: std::time::Duration::from_millis(300),
        },
    );
}

/// The runner writes `value` to `g`'s `knob`.
fn set_knob(g: &str, knob: &str, value: String) -> Step {
    Step::Set {
        cgroup: g.to_string(),
        file: knob.to_string(),
        value: Some(value),
        from: None,
    }
}

/// `g` writes `size` bytes of `file` in 1 MiB blocks and fsyncs it.
fn fsynced_write(g: &str, file: String, size: u64) -> Step {
    Step::Write {
        cgroup: g.to_string(),
        file,
        size,
        block_size: MIB,
        fsync: true,
        quick_size: None,
    }
}
