//! The case generator: a scenario drawn from (seed, index) alone, from the step kinds of the
//! scenario format, in a random group tree with random limits, sized for the machine. Cases are
//! valid by construction (every step refers to a group, a file and a task that exist when it
//! runs), so each is worth a run; the same seed and machine give byte-identical files.

use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

use super::case::{Case, Declared};
use crate::model::Version;
use crate::model::record::within;
use crate::model::step::{Advice, Region};
use crate::scenario::{Antagonist, CgroupSpec, Hold, Phase, Step};

/// What the generator knows of the machine.
#[derive(Debug, Clone, Copy)]
pub struct Machine {
    pub version: Version,
    /// RAM, bytes: sizes stay well inside it.
    pub memory: u64,
    /// Swap is enabled: swap limits and page-outs may be generated.
    pub swap: bool,
    /// v1 charge moving works (memory.move_charge_at_immigrate; removed in 6.13).
    pub charge_moving: bool,
    /// cachestat(2) gives per-file truth (6.5 on).
    pub per_file: bool,
}

impl Machine {
    /// The most a case's steps hold or write at once: 1/16 of RAM, 32..128 MiB.
    pub fn budget(&self) -> u64 {
        (self.memory / 16).clamp(32 << 20, 128 << 20)
    }
}

const MIB: u64 = 1 << 20;

/// A seeded source of the generator's choices.
struct Dice(ChaCha8Rng);

impl Dice {
    /// (seed, index) -> an independent stream: splitmix64 of both.
    fn new(seed: u64, index: u32) -> Dice {
        let mut z = seed ^ (u64::from(index).wrapping_add(1)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Dice(ChaCha8Rng::seed_from_u64(z ^ (z >> 31)))
    }
    /// 0..n.
    fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n.max(1)
    }
    /// lo..=hi.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }
    /// True with probability `percent` %.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
    /// A size in whole MiB, lo..=hi MiB.
    fn mib(&mut self, lo: u64, hi: u64) -> u64 {
        self.range(lo.max(1), hi.max(1)) * MIB
    }
}

/// What exists while the steps are generated: files written (and not unlinked), files created
/// for readers, held tasks (the group each is in, the anon it holds, the memory in all), and the
/// groups an `exhaust` ran in (no task may be held there: the OOM killer could take it).
#[derive(Default)]
struct World {
    files: Vec<(String, u64)>,
    created: Vec<(String, u64)>,
    tasks: Vec<Task>,
    next_file: u32,
    next_task: u32,
    synced: bool,
    exhausted: Vec<String>,
    /// (file, group) for every step that writes or dirties a file: holds-files has a truth for
    /// a group only when its subtree writes a file nobody outside it writes.
    writers: Vec<(String, String)>,
    /// (group, bytes) of every buffered write: page cache the group must charge.
    writes: Vec<(String, u64)>,
    /// (file, group, bytes) of page cache a group's writes made that is surely still there: what
    /// a `reclaim` step may ask back (see `World::cache`).
    cache: Vec<(String, String, u64)>,
}

#[derive(Clone)]
struct Task {
    name: String,
    group: String,
    /// The anonymous region its hold mapped, the one `advise` works on.
    anon: u64,
    bytes: u64,
}

impl World {
    /// What a new task or a transient allocation in `g` may take so that no limit above it
    /// (memory.max or memory.high of `g` or an ancestor) is more than half used by held tasks:
    /// a task the OOM killer took would be a false alarm, and one memory.high throttles only
    /// slows the case down.
    fn room(&self, groups: &[CgroupSpec], g: &str, budget: u64) -> u64 {
        groups
            .iter()
            .filter(|a| within(g, &a.name))
            .filter_map(|a| {
                let cap = own_cap(a)?;
                let held: u64 = self
                    .tasks
                    .iter()
                    .filter(|t| within(&t.group, &a.name))
                    .map(|t| t.bytes)
                    .sum();
                Some((cap / 2).saturating_sub(held))
            })
            .min()
            .unwrap_or(budget)
            .min(budget)
    }

    /// Page cache `g` surely holds: what its writes made (truncates and unlinks taken off), at
    /// most a quarter of any limit or memory.high above it (the limit reclaims the rest, and held
    /// tasks may take up to half). Cache of a group that exhausted its memory is not counted
    /// (the OOM path reclaims it first).
    fn cache(&self, groups: &[CgroupSpec], g: &str) -> u64 {
        if self.exhausted.iter().any(|x| x == g) {
            return 0;
        }
        let made: u64 = (self.cache.iter())
            .filter(|(_, x, _)| x == g)
            .map(|(_, _, b)| b)
            .sum();
        (cap_above(groups, g) / 4).min(made)
    }

    /// A new task held in `g` (where it will be at the end) with `anon` of anonymous memory
    /// among `bytes` in all; its name.
    fn hold(&mut self, g: &str, anon: u64, bytes: u64) -> String {
        let name = format!("t{}", self.next_task);
        self.next_task += 1;
        self.tasks.push(Task {
            name: name.clone(),
            group: g.to_string(),
            anon,
            bytes,
        });
        name
    }

    /// A write of `bytes` to `file` by `g`. Under a limit or memory.high, the cache made before
    /// by any group below it, `g` too, may be what the limit reclaims now: it no longer counts
    /// (stock 6.12, seed 66 case 34: a 42 MiB mmap-write, then 64 MiB written under the same
    /// 48 MiB limit and unlinked, left no cache for the reclaim the generator counted on).
    fn cached(&mut self, groups: &[CgroupSpec], file: &str, g: &str, bytes: u64) {
        let shares_a_cap = |x: &str| {
            groups.iter().any(|a| {
                within(g, &a.name) && within(x, &a.name) && (a.limit.is_some() || a.high.is_some())
            })
        };
        self.cache.retain(|(_, x, _)| !shares_a_cap(x));
        self.cache.push((file.to_string(), g.to_string(), bytes));
    }
}

/// The least of a group's own memory.max and memory.high, where it has one.
fn own_cap(a: &CgroupSpec) -> Option<u64> {
    [a.limit, a.high].into_iter().flatten().min()
}

/// Whether no group lies below `g`.
fn is_leaf(groups: &[CgroupSpec], g: &str) -> bool {
    !groups.iter().any(|c| c.name != g && within(&c.name, g))
}

/// Where `protected` can judge `g`: a leaf with memory.min whose parent is where reclaim is
/// rooted (the parent has memory.max or memory.high, nothing above it does: reclaim rooted
/// higher protects the group only as far as the parent is protected; a group with groups below
/// holds its memory there, where its min reaches only as a share). Its min, its parent and the
/// parent's least limit.
fn protectable<'a>(groups: &'a [CgroupSpec], g: &'a CgroupSpec) -> Option<(u64, &'a str, u64)> {
    let min = g.min?;
    let (parent, _) = g.name.rsplit_once('/')?;
    let parent_cap = groups.iter().find(|a| a.name == parent).and_then(own_cap)?;
    let above = |a: &&CgroupSpec| a.name != parent && within(parent, &a.name);
    let capped_above = groups.iter().filter(above).any(|a| own_cap(a).is_some());
    (is_leaf(groups, &g.name) && !capped_above).then_some((min, parent, parent_cap))
}

/// The least memory.max or memory.high of `g` and its ancestors; u64::MAX without one.
fn cap_above(groups: &[CgroupSpec], g: &str) -> u64 {
    (groups.iter())
        .filter(|a| within(g, &a.name))
        .filter_map(own_cap)
        .min()
        .unwrap_or(u64::MAX)
}

/// The step kinds the generator draws from, with weights.
const KINDS: &[(&str, u64)] = &[
    ("write", 14),
    ("mmap", 6),
    ("read", 6),
    ("truncate", 5),
    ("unlink", 3),
    ("fsync", 3),
    ("sync", 8),
    ("sleep", 4),
    ("fault", 4),
    ("usemem", 3),
    ("hold", 10),
    ("grow", 3),
    ("advise", 4),
    ("move", 5),
    ("release", 5),
    ("reclaim", 4),
    ("exhaust", 3),
];

/// The case (seed, index) for `m`.
pub fn generate(seed: u64, index: u32, m: &Machine) -> Case {
    let mut d = Dice::new(seed, index);
    let mut groups = tree(&mut d, m);
    // Charge moving (v1, where the kernel still has it): the move motif below. The draw is made
    // where charge moving is gone too, so that the cases of a seed are the same up to it.
    let moving = m.version == Version::V1 && d.chance(50) && m.charge_moving;
    let leaves: Vec<String> = (groups.iter())
        .filter(|g| is_leaf(&groups, &g.name))
        .map(|g| g.name.clone())
        .collect();
    let mut w = World::default();
    let mut phases = Vec::new();
    let mut swap = groups.iter().any(|g| g.swap_max.is_some());
    for pi in 0..d.range(1, 3) {
        let mut steps = Vec::new();
        for _ in 0..d.range(1, 5) {
            if let Some(st) = step(&mut d, m, &groups, &leaves, &mut w) {
                swap |= matches!(
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
        phases.push(Phase {
            name: format!("p{pi}"),
            repeat: 1,
            warmup: false,
            alternate: false,
            steps,
            antagonists: if d.chance(15) {
                vec![Antagonist::Compaction]
            } else {
                Vec::new()
            },
        });
    }
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
    // Held tasks exit at the end: their exit is a step too.
    if !w.tasks.is_empty() {
        let steps = w
            .tasks
            .iter()
            .map(|t| Step::Release {
                task: t.name.clone(),
            })
            .collect();
        phases.push(Phase {
            name: "end".into(),
            repeat: 1,
            warmup: false,
            alternate: false,
            steps,
            antagonists: Vec::new(),
        });
    }
    let mut checks = declared(m, &groups, &w);
    checks.extend(protections(&groups, &phases));
    checks.extend(motifs);
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

/// A random tree: 1..6 groups, 3 levels at most, names g0, g0/g1, ...; some with limits.
fn tree(d: &mut Dice, m: &Machine) -> Vec<CgroupSpec> {
    let mut groups: Vec<CgroupSpec> = Vec::new();
    let n = d.range(1, 6);
    let budget = m.budget() / MIB;
    for i in 0..n {
        let parents: Vec<String> = groups
            .iter()
            .filter(|g| g.name.matches('/').count() < 2)
            .map(|g| g.name.clone())
            .collect();
        let name = if parents.is_empty() || d.chance(35) {
            format!("g{i}")
        } else {
            format!("{}/g{i}", d.pick(&parents))
        };
        let mut g = CgroupSpec {
            name,
            swap: true,
            ..Default::default()
        };
        if d.chance(40) {
            g.limit = Some(d.mib(16, budget));
        }
        if m.version == Version::V2 {
            if d.chance(15) {
                g.high = Some(d.mib(16, budget));
            }
            if d.chance(10) {
                g.low = Some(d.mib(8, budget / 2));
            }
            if d.chance(10) {
                let min = d.mib(8, budget / 2);
                g.min = Some(min.min(min_room(&groups, &g.name))).filter(|&m| m >= 8 * MIB);
            }
            if d.chance(10) {
                g.oom_group = true;
            }
        }
        if g.limit.is_some() && d.chance(25) {
            g.swap = false;
        } else if m.swap && g.limit.is_some() && d.chance(20) {
            g.swap_max = Some(d.mib(1, 16));
        }
        groups.push(g);
    }
    groups
}

/// The most memory.min a new group `g` may get: at most half of each ancestor's memory.max or
/// memory.high, less what groups below that ancestor already protect. When an ancestor's limit
/// reclaims, the protection of the groups below it counts in full (its children's effective min is
/// their own memory.min), so memory the limit cannot reclaim leaves the kernel the OOM killer, as
/// documented: a case that asked for it would be a false alarm (explore of stock 6.12, seed 11: a
/// child with min 53M under a 33M limit, its writer OOM-killed).
fn min_room(groups: &[CgroupSpec], g: &str) -> u64 {
    groups
        .iter()
        .filter(|a| a.name != g && within(g, &a.name))
        .filter_map(|a| {
            let cap = own_cap(a)?;
            Some((cap / 2).saturating_sub(protected_below(groups, &a.name)))
        })
        .min()
        .unwrap_or(u64::MAX)
}

/// The memory.min of the groups strictly below `a`.
fn protected_below(groups: &[CgroupSpec], a: &str) -> u64 {
    (groups.iter())
        .filter(|o| o.name != a && within(&o.name, a))
        .filter_map(|o| o.min)
        .sum()
}

/// One step, or None when the kind drawn has nothing to work on yet.
fn step(
    d: &mut Dice,
    m: &Machine,
    groups: &[CgroupSpec],
    leaves: &[String],
    w: &mut World,
) -> Option<Step> {
    let total: u64 = KINDS.iter().map(|(_, n)| n).sum();
    let mut x = d.below(total);
    let kind = KINDS
        .iter()
        .find(|(_, n)| {
            if x < *n {
                true
            } else {
                x -= n;
                false
            }
        })
        .map(|(k, _)| *k)
        .unwrap_or("sleep");
    let budget = m.budget() / MIB;
    let g = d.pick(leaves).clone();
    let room = w.room(groups, &g, m.budget());
    Some(match kind {
        "write" => {
            let size = d.mib(1, budget);
            let file = fresh_file(w, size);
            w.writers.push((file.clone(), g.clone()));
            w.writes.push((g.clone(), size));
            w.cached(groups, &file, &g, size);
            Step::Write {
                cgroup: g,
                file,
                size,
                block_size: *d.pick(&[4096, 64 << 10, MIB]),
                fsync: d.chance(20),
            }
        }
        "mmap" => {
            let size = d.mib(1, budget / 2);
            let file = fresh_file(w, size);
            w.writers.push((file.clone(), g.clone()));
            w.cached(groups, &file, &g, size);
            Step::MmapWrite {
                cgroup: g,
                file,
                size,
                hold: Duration::from_millis(d.range(1, 8) * 100),
            }
        }
        "read" => {
            let (file, fresh) = match w.created.is_empty() || d.chance(30) {
                true => {
                    let f = format!("r{}", w.next_file);
                    w.next_file += 1;
                    (f, true)
                }
                false => (d.pick(&w.created).0.clone(), false),
            };
            if fresh {
                let size = d.mib(1, budget);
                w.created.push((file.clone(), size));
                // The reader's file is made (not measured) right before.
                return Some(Step::Create {
                    file,
                    size,
                    count: 1,
                });
            }
            Step::Read {
                cgroup: g,
                file,
                count: 1,
                warm: d.chance(40),
            }
        }
        "truncate" if !w.files.is_empty() => {
            let (file, size) = d.pick(&w.files).clone();
            let size = *d.pick(&[0, size / 2 / 4096 * 4096]);
            for c in w.cache.iter_mut().filter(|c| c.0 == file) {
                c.2 = c.2.min(size);
            }
            Step::Truncate {
                cgroup: g,
                file,
                size,
            }
        }
        "unlink" if !w.files.is_empty() => {
            let i = d.below(w.files.len() as u64) as usize;
            let (file, _) = w.files[i].clone();
            w.files.remove(i);
            w.cache.retain(|c| c.0 != file);
            Step::Unlink { cgroup: g, file }
        }
        "fsync" if !w.files.is_empty() => Step::Fsync {
            cgroup: g,
            file: d.pick(&w.files).0.clone(),
        },
        "sync" => {
            w.synced = true;
            Step::Sync
        }
        "sleep" => Step::Sleep(Duration::from_millis(d.range(1, 5) * 100)),
        "fault" if room >= 2 * MIB => Step::Fault {
            cgroup: g,
            size: d.mib(1, (room / MIB).min(16)),
            clients: 1,
            duration: Duration::from_millis(d.range(1, 5) * 100),
        },
        "usemem" if room >= 2 * MIB => Step::Usemem {
            cgroup: g,
            size: d.mib(1, room / MIB / 2),
            clients: 1,
        },
        "hold" if room >= 4 * MIB && !w.exhausted.contains(&g) => {
            let room = room / MIB;
            let anon = if d.chance(80) { d.mib(1, room / 2) } else { 0 };
            let shmem = if d.chance(30) { d.mib(1, room / 4) } else { 0 };
            let (file, size, dirty) = match (w.files.is_empty(), d.chance(30)) {
                (false, true) => {
                    let (f, s) = d.pick(&w.files).clone();
                    (Some(f), s.min(room / 4 * MIB).max(MIB), d.chance(50))
                }
                _ => (None, 0, false),
            };
            if let Some(f) = &file {
                w.writers.push((f.clone(), g.clone()));
            }
            let (anon, shmem) = if anon + shmem + size == 0 {
                (MIB, 0)
            } else {
                (anon, shmem)
            };
            let task = w.hold(&g, anon, anon + shmem + size);
            Step::Hold(Hold {
                task,
                cgroup: g,
                anon,
                shmem,
                file,
                size,
                dirty,
                redirty: false,
                write: 0,
                huge: anon >= 4 * MIB && d.chance(20),
                mlock: false,
                zero: anon > 0 && d.chance(15),
                lazyfree: if anon > 0 && d.chance(15) {
                    anon / 2
                } else {
                    0
                },
                shmem_huge: false,
                threads: 0,
                files: 0,
                fds: 0,
                readonly: false,
                sock: 0,
                sparse: 0,
            })
        }
        "grow" if !w.tasks.is_empty() => {
            let i = d.below(w.tasks.len() as u64) as usize;
            let room = w.room(groups, &w.tasks[i].group, m.budget());
            if room < 2 * MIB {
                return None;
            }
            let anon = d.mib(1, room / MIB / 2);
            // Grown memory is a mapping of its own: `advise` reaches only the hold's anon.
            w.tasks[i].bytes += anon;
            Step::Grow {
                task: w.tasks[i].name.clone(),
                anon,
            }
        }
        "advise" if w.tasks.iter().any(|t| t.anon > 0) => {
            let anon: Vec<&Task> = w.tasks.iter().filter(|t| t.anon > 0).collect();
            let task = d.pick(&anon).name.clone();
            let mut advice = *d.pick(&[
                Advice::Pageout,
                Advice::Cold,
                Advice::Touch,
                Advice::Collapse,
            ]);
            if advice == Advice::Pageout && !m.swap {
                advice = Advice::Touch;
            }
            Step::Advise {
                task,
                advice,
                region: Region::Anon,
            }
        }
        "move" if !w.tasks.is_empty() => {
            let i = d.below(w.tasks.len() as u64) as usize;
            let to = d.pick(leaves).clone();
            // The destination must have room for what the task holds (v1 moves its charge).
            if w.tasks[i].group == to
                || w.exhausted.contains(&to)
                || w.room(groups, &to, m.budget()) < w.tasks[i].bytes
            {
                return None;
            }
            w.tasks[i].group = to.clone();
            Step::Move {
                task: w.tasks[i].name.clone(),
                to,
            }
        }
        "release" if !w.tasks.is_empty() => {
            let i = d.below(w.tasks.len() as u64) as usize;
            let task = w.tasks.remove(i).name;
            Step::Release { task }
        }
        // Only page cache is surely reclaimable (anon needs swap), and the step refuses to ask for
        // more than two thirds of what the group holds: ask for at most half of what it surely has.
        "reclaim" if m.version == Version::V2 && w.cache(groups, &g) >= 2 * MIB => Step::Reclaim {
            size: d.mib(1, (w.cache(groups, &g) / 2 / MIB).min(8)),
            cgroup: g,
        },
        "exhaust" => {
            // Only where the OOM killer must act: a group whose own limit holds no swap.
            let spec = groups.iter().find(|s| s.name == g)?;
            let occupied = w.tasks.iter().any(|t| t.group == g);
            if spec.swap || spec.limit.is_none() || w.exhausted.contains(&g) || occupied {
                return None;
            }
            if throttled_climb_secs(groups, w, &g) > CLIMB_SECS {
                return None;
            }
            w.exhausted.push(g.clone());
            Step::Exhaust {
                cgroup: g,
                anon: spec.limit.unwrap() * 2,
                bystanders: d.range(0, 2) as u32,
                within: None,
            }
        }
        _ => return None,
    })
}

/// The longest the generator lets memory.high throttle an `exhaust` on its way to the OOM kill.
const CLIMB_SECS: f64 = 20.0;

/// Seconds an `exhaust` in `g` is throttled before it reaches the least limit above it, by the
/// least memory.high above it (its anon has no swap, so reclaim frees none of it). The kernel
/// (mem_cgroup_handle_over_high, calculate_high_delay) puts a task to sleep on its way back to
/// user space for every 64 pages it charged over high: 64 * overage² seconds, overage being
/// (usage - high) / high, times the pages charged / 64, none below 10 ms, at most 2 s. That is
/// 8 s per MiB from 18 % over high on when the task faults 4 KiB pages, 1 s per MiB with THP
/// (a huge page counts 512); a huge page may not be there, so the model takes 4 KiB. Debian
/// 6.1, seed 73 case 34, with THP: an exhaust took 111 s to climb from g0's 31 MiB memory.high
/// to its group's 113 MiB limit; with two writes before it, the case passed its 120 s timeout
/// and failed as an error. Tasks held below the memory.high's group add to its usage.
fn throttled_climb_secs(groups: &[CgroupSpec], w: &World, g: &str) -> f64 {
    let chain = || groups.iter().filter(|a| within(g, &a.name));
    let Some((throttler, high)) = chain()
        .filter_map(|a| Some((a, a.high?)))
        .min_by_key(|x| x.1)
    else {
        return 0.0;
    };
    let limit = chain().filter_map(|a| a.limit).min().unwrap_or(u64::MAX);
    let held: u64 = (w.tasks.iter())
        .filter(|t| within(&t.group, &throttler.name))
        .map(|t| t.bytes)
        .sum();
    climb_secs(high, limit.saturating_add(held))
}

/// The kernel's memory.high throttling of a task charging 4 KiB pages from `high` to `end`.
fn climb_secs(high: u64, end: u64) -> f64 {
    const BATCH: u64 = 64 * 4096;
    let mut secs = 0.0;
    let mut usage = high;
    while usage < end && secs < 3600.0 {
        usage = usage.saturating_add(BATCH);
        let overage = (usage - high) as f64 / high as f64;
        let sleep = (64.0 * overage * overage).min(2.0);
        if sleep > 0.01 {
            secs += sleep;
        }
    }
    secs
}

/// A new file name, remembered as written.
fn fresh_file(w: &mut World, size: u64) -> String {
    let f = format!("f{}", w.next_file);
    w.next_file += 1;
    w.files.push((f.clone(), size));
    f
}

/// The checks every group gets besides the implied invariants: counters never negative, dirty
/// settling after a sync, the page cache of written files held and their dirty and writeback
/// pages counted (both only where no group outside writes the files), memory.high kept, OOM
/// kills where a task exhausts its group.
fn declared(m: &Machine, groups: &[CgroupSpec], w: &World) -> Vec<Declared> {
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

/// The shape `protected` judges, which random steps almost never make (0 declarations in 5400
/// cases): a leaf with memory.min under a parent where reclaim is rooted writes a file of up to
/// half its min first, and a sibling then writes more than the parent's least limit in a phase
/// of its own. Trees with such a pair are rare too (none in 296 cases of one run), so a tree of
/// at most 3 groups without one gets one: a new top-level group with a limit and two children,
/// one protected by half the limit, that no other step uses.
fn protection_motif(
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
        let file = fresh_file(w, size);
        w.writers.push((file.clone(), cgroup.to_string()));
        w.writes.push((cgroup.to_string(), size));
        w.cached(groups, &file, cgroup, size);
        Step::Write {
            cgroup: cgroup.to_string(),
            file,
            size,
            block_size: MIB,
            fsync: false,
        }
    };
    let own = d.mib(3, g.min.unwrap_or(0) / 2 / MIB);
    phases[0].steps.insert(0, write(&g.name, own));
    let press = (parent_cap + 8 * MIB).min(2 * m.budget().max(parent_cap));
    let step = write(&sibling, press);
    motif_phase(phases, step);
}

/// Appends a phase of its own (`p<n>`) with one step; its name.
fn motif_phase(phases: &mut Vec<Phase>, step: Step) -> String {
    let name = format!("p{}", phases.len());
    phases.push(Phase {
        name: name.clone(),
        repeat: 1,
        warmup: false,
        alternate: false,
        steps: vec![step],
        antagonists: Vec::new(),
    });
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

/// `protected` for each group it can judge (see `protectable`), in each phase that
/// - surely makes the parent reclaim: a write below it, outside the group, of more than half
///   the parent's least limit;
/// - finds the group holding something to lose: more than 2 MiB made by its steps in the phases
///   before, and at most half its memory.min (so its usage stays within it);
/// - leaves the group alone: no step runs in it; none truncates, unlinks, maps (a hold truncates
///   the file it maps) or reads cold (dropping the cache first) a file it wrote, read or held;
///   none releases, grows, advises or moves a task it ever held; no `exhaust` below the parent
///   (memory.min does not hold off the OOM killer).
fn protections(groups: &[CgroupSpec], phases: &[Phase]) -> Vec<Declared> {
    let steps = || phases.iter().flat_map(|p| &p.steps);
    let created: Vec<(&str, u64)> = steps()
        .filter_map(|s| match s {
            Step::Create { file, size, .. } => Some((file.as_str(), *size)),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for g in groups {
        let Some((min, parent, parent_cap)) = protectable(groups, g) else {
            continue;
        };
        let mine = |c: &str| within(c, &g.name);
        let files: Vec<&str> = steps()
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
        let tasks: Vec<&str> = steps()
            .filter_map(|s| match s {
                Step::Hold(h) if mine(&h.cgroup) => Some(h.task.as_str()),
                Step::Move { task, to } if mine(to) => Some(task.as_str()),
                _ => None,
            })
            .collect();
        let touches = |s: &Step| {
            s.cgroup().is_some_and(mine)
                || match s {
                    Step::Truncate { file, .. } | Step::Unlink { file, .. } => {
                        files.contains(&file.as_str())
                    }
                    Step::Hold(h) => h.file.as_deref().is_some_and(|f| files.contains(&f)),
                    Step::Read { file, warm, .. } => !warm && files.contains(&file.as_str()),
                    Step::Release { task }
                    | Step::Grow { task, .. }
                    | Step::Advise { task, .. }
                    | Step::Move { task, .. } => tasks.contains(&task.as_str()),
                    Step::Exhaust { cgroup, .. } => within(cgroup, parent),
                    _ => false,
                }
        };
        let presses = |s: &Step| match s {
            Step::Write { cgroup, size, .. } | Step::MmapWrite { cgroup, size, .. } => {
                within(cgroup, parent) && !mine(cgroup) && *size > parent_cap / 2
            }
            _ => false,
        };
        // What the group's own steps made before phase `pi`.
        let made = |pi: usize| -> u64 {
            (phases[..pi].iter().flat_map(|p| &p.steps))
                .map(|s| match s {
                    Step::Write { cgroup, size, .. } | Step::MmapWrite { cgroup, size, .. }
                        if mine(cgroup) =>
                    {
                        *size
                    }
                    Step::Read { cgroup, file, .. } if mine(cgroup) => (created.iter())
                        .find(|(f, _)| f == file)
                        .map_or(0, |(_, b)| *b),
                    Step::Hold(h) if mine(&h.cgroup) => h.anon + h.shmem + h.size,
                    _ => 0,
                })
                .sum()
        };
        for (pi, p) in phases.iter().enumerate() {
            let held = made(pi);
            if held > 2 * MIB
                && held <= min / 2
                && !p.steps.iter().any(touches)
                && p.steps.iter().any(presses)
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
fn move_motif(
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
    motif_phase(phases, Step::Move { task, to });
    Some(Declared::UsageKept(parent))
}

/// A phase of its own in which a task starts in a leaf holding 8 to 16 MiB of plain anon and as
/// much shmem (a memfd), and the checks that the leaf's anon and shmem rose by at least that
/// across it: no other truth says what a group's shmem should be (RssShmem counts tmpfs pages
/// charged anywhere), and the task's anon truth is one check among many. At least, because the
/// worker's own runtime is anon of the group too. Only in a leaf without a limit or memory.high
/// above it, and not where charges move in (see `move_motif`); nothing where no leaf is so.
fn hold_motif(
    d: &mut Dice,
    m: &Machine,
    groups: &[CgroupSpec],
    w: &mut World,
    phases: &mut Vec<Phase>,
) -> Vec<Declared> {
    // No limit or memory.high on the chain: room counts held tasks, not page cache, and a leaf
    // full of cache under its limit would reclaim (and may swap out) the hold's fresh memory.
    let leaves: Vec<&CgroupSpec> = (groups.iter())
        .filter(|g| is_leaf(groups, &g.name) && !w.exhausted.contains(&g.name))
        .filter(|g| cap_above(groups, &g.name) == u64::MAX && g.move_charge.is_none())
        .filter(|g| w.room(groups, &g.name, m.budget()) >= 32 * MIB)
        .collect();
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
/// 2 CPUs), and 256 threads' stacks counted twice (4 MiB too many) stayed within it.
fn thread_motif(
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
    // The threads' kernel stacks and the few pages of their user stacks.
    let task = w.hold(&g, MIB, 24 * MIB);
    motif_phase(
        phases,
        Step::Hold(Hold {
            task,
            cgroup: g,
            anon: MIB,
            threads: 768,
            ..Hold::default()
        }),
    );
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

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(version: Version) -> Machine {
        Machine {
            version,
            memory: 2 << 30,
            swap: true,
            charge_moving: true,
            per_file: true,
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
                    Step::Reclaim { cgroup, size } => {
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

    /// The throttling model: nothing within 1.25 % of high, 2 s per 64 pages from 17.7 % over it
    /// on (8 s per MiB).
    #[test]
    fn climb_follows_the_kernels_high_delay() {
        assert_eq!(climb_secs(32 * MIB, 32 * MIB), 0.0);
        assert_eq!(climb_secs(100 * MIB, 101 * MIB), 0.0);
        let far = climb_secs(16 * MIB, 40 * MIB) - climb_secs(16 * MIB, 30 * MIB);
        assert!((far - 80.0).abs() < 0.01, "{far}");
        let near = climb_secs(32 * MIB, 34 * MIB);
        assert!(near > 0.0 && near < 2.0, "{near}");
        // Debian 6.1, seed 73 case 34: 111 s with THP, about 600 s without.
        assert!(climb_secs(31 * MIB, 113 * MIB) > 500.0);
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

    const PINNED: u64 = 0xe7ad_b415_b98e_e745;

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
}
