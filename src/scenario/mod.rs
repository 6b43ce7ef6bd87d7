//! Scenario files: declarative TOML describing cgroups, phases of workload steps, antagonists,
//! sampled counters and checks. Parsing is strict: unknown keys and bad values are errors that name
//! the file, line and column. The files in `scenarios/` are built into the binary.
//!
//! `raw.rs` is the file as written (serde), `resolve.rs` turns it into the `Scenario` below,
//! `steps.rs` resolves one step, `checks.rs` reads one check's table for its kind (`crate::check`),
//! `describe.rs` puts a step in words.

pub use crate::model::CgroupSpec;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use crate::check::Check;
use crate::model::step::{Advice, Region};
use crate::model::{StepKind, Version};

pub use crate::model::source::MAX_SIZE;

/// The largest scenario file read: anything bigger is not a scenario (`check /dev/zero`).
pub const MAX_FILE: u64 = 1 << 20;

pub use builtin::BUILTIN;

/// The group name a `set` step (and the `knob` check) gives the root of the cgroup hierarchy: only
/// a scenario that has the machine to itself (requires.features = ["dedicated"]) may write it.
pub const ROOT: &str = "/";

/// The helper group the runner creates next to the declared ones (sync, antagonists, create
/// steps run there); no declared group may be called so.
pub const HELPER_GROUP: &str = crate::model::HELPER_GROUP;

pub use crate::model::error::ScenarioError;

/// Where a scenario comes from: the kernel patch whose bug it reproduces.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    /// The patch subject, e.g. "memcg: fix dirty page migration".
    pub subject: String,
    /// Upstream commit id, where known.
    pub commit: Option<String>,
    /// Year or date of the patch.
    pub date: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// The resolved scenario the runner executes.

/// A kernel feature a scenario needs; missing ones make it `skip`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Feature {
    /// /proc/sys/vm/compact_memory (CONFIG_COMPACTION).
    Compaction,
    /// pgmigrate_* / compact_* in /proc/vmstat (CONFIG_VM_EVENT_COUNTERS).
    VmEvents,
    /// Swap enabled (an entry in /proc/swaps); `memcgtest vm` gives its guests a swap disk.
    Swap,
    /// A machine of the run's own (`run --dedicated`; `memcgtest vm` guests are): the scenario
    /// puts the whole machine under memory pressure or changes machine-wide knobs.
    Dedicated,
    /// The run may make a task unkillable (oom_score_adj -1000 needs CAP_SYS_RESOURCE, which a
    /// container's root may lack).
    OomImmune,
    /// Two NUMA nodes with memory or more: pages can move between nodes (`migrate`).
    Numa,
}

impl Feature {
    const ALL: &'static [(&'static str, Feature)] = &[
        ("compaction", Feature::Compaction),
        ("vm-events", Feature::VmEvents),
        ("swap", Feature::Swap),
        ("dedicated", Feature::Dedicated),
        ("oom-immune", Feature::OomImmune),
        ("numa", Feature::Numa),
    ];
    pub fn name(self) -> &'static str {
        Feature::ALL.iter().find(|(_, f)| *f == self).unwrap().0
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Requires {
    pub cgroup: Vec<Version>,
    pub writeback: bool,
    pub features: Vec<Feature>,
}

/// The disk a scenario's files go on. `Slow` is for scenarios about pages under writeback: on
/// the run's slow disk (`--slow-scratch`; `memcgtest vm` attaches one whose writes qemu
/// throttles) a page stays under writeback for seconds. Without one, the scratch directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ScratchDisk {
    #[default]
    Default,
    Slow,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Buffered writes like dd: unlink, create, write `size` bytes in `block_size` blocks.
    Write {
        cgroup: String,
        file: String,
        size: u64,
        block_size: u64,
        fsync: bool,
        /// The size under `--quick`, where the scenario sets one (else `size` / 8).
        quick_size: Option<u64>,
    },
    /// sync(2) of everything.
    Sync,
    /// fsync(2) of one file.
    Fsync { cgroup: String, file: String },
    /// Wait, sampling on.
    Sleep(Duration),
    /// Truncate a file to `size` bytes (0: drop all its pages, dirty ones included).
    Truncate {
        cgroup: String,
        file: String,
        size: u64,
    },
    /// Unlink a file.
    Unlink { cgroup: String, file: String },
    /// Proactive reclaim: write `size` to the group's memory.reclaim (cgroup v2). With
    /// `checked`, an EAGAIN (less reclaimed than asked) is left to the checks on the step.
    Reclaim {
        cgroup: String,
        size: u64,
        checked: bool,
    },
    /// Dirty `size` bytes through a shared file mapping, keep them dirty for `hold`, then msync.
    MmapWrite {
        cgroup: String,
        file: String,
        size: u64,
        hold: Duration,
    },
    /// Dirty probe: with writeback held off (vm.dirty_background_bytes raised, expiry and periodic
    /// writeback off, restored after), write exactly `size` bytes; the group's dirty must show them.
    Probe {
        cgroup: String,
        file: String,
        size: u64,
    },
    /// Start a task holding memory (see `Hold`).
    Hold(Hold),
    /// Move the task to cgroup `to` (its pid into cgroup.procs), timing the write.
    /// With `thread`, one of its threads other than the leader only (v1: its tid into the
    /// destination's `tasks`): charges move with the mm's owner, never with a thread.
    Move {
        task: String,
        to: String,
        thread: bool,
    },
    /// The task allocates and touches `anon` more bytes where it is now.
    Grow { task: String, anon: u64 },
    /// Stop the task's background writer and wait for it.
    Wait { task: String },
    /// The task exits, freeing its memory.
    Release { task: String },
    /// Not measured: write `count` files `<file>.<i>` of `size` bytes in the helper group, fsync
    /// them and drop them from the page cache, for read steps.
    Create { file: String, size: u64, count: u32 },
    /// `count` readers in parallel, reader i streaming `<file>.<i>` from a cold cache
    /// (POSIX_FADV_DONTNEED first; `warm`: from what the page cache holds) in 1 MiB reads;
    /// measured: total bytes over the slowest reader.
    Read {
        cgroup: String,
        file: String,
        count: u32,
        warm: bool,
    },
    /// pft-style page-fault loop: `clients` processes (0: one per CPU) each map `size` bytes of
    /// anonymous memory, touch every page, unmap, over and over for `duration`; measured: faults
    /// per second and per CPU-second.
    Fault {
        cgroup: String,
        size: u64,
        clients: u32,
        duration: Duration,
    },
    /// usemem: `clients` processes (0: one per CPU) each write `size` bytes of fresh anonymous
    /// memory once; measured: MB/s over the slowest.
    Usemem {
        cgroup: String,
        size: u64,
        clients: u32,
    },
    /// A task touches `anon` bytes of anonymous memory in a group that cannot hold them: the
    /// group's OOM killer must kill it. `bystanders` small tasks (1 MiB of anon each) wait in
    /// the group meanwhile: with memory.oom.group they must die too, without it they live. In a
    /// group whose memory.high it passes, the kernel throttles it instead; `within` ends that.
    Exhaust {
        cgroup: String,
        anon: u64,
        bystanders: u32,
        /// Stop the task after this long if it is still touching memory (memory.high throttles
        /// it): it touches 4 KiB pages then, whose charges the throttling model counts.
        within: Option<Duration>,
        /// Bystanders of the group with oom_score_adj -1000 (OOM_SCORE_ADJ_MIN): no OOM kill,
        /// memory.oom.group's included, may take them.
        immune: u32,
        /// A group outside this one where a small task waits meanwhile: an OOM in this group
        /// may not kill it, whatever memory.oom.group its ancestors have.
        outside: Option<String>,
        /// With `within`: a task still running then (v1 oom_kill_disable: it waits in the OOM
        /// queue) has its group's limit raised to this, and must then finish.
        raise: Option<u64>,
    },
    /// Waits until the group's memory.stat `counter` is at least `size`, for at most `within`
    /// (then the scenario goes on: checks that need the state say it was not reached).
    Await {
        cgroup: String,
        counter: String,
        size: u64,
        within: Duration,
    },
    /// A held task applies `advice` to one of its mappings.
    Advise {
        task: String,
        advice: Advice,
        region: Region,
    },
    /// A held task moves every page of one of its mappings to NUMA node `node` (with `by`:
    /// move_pages(2), mbind(2) or migrate_pages(2)); the step records where its pages are then,
    /// and what the group's memory.numa_stat says.
    Migrate {
        task: String,
        region: Region,
        node: crate::model::step::Target,
        by: crate::model::step::Mover,
    },
    /// `count` empty groups are made below `cgroup` (removed with the run): the kernel charges
    /// each one's per-CPU statistics to its parent, `cgroup`'s percpu.
    Cgroups { cgroup: String, count: u32 },
    /// On a machine of the run's own: vm.min_free_kbytes raised so that every node's low
    /// watermark is above its free memory (`sys::numa::pressure_min_free_kb`) and kswapd reclaims
    /// from every group; waits until kswapd
    /// has reclaimed `size` (/proc/vmstat pgsteal_kswapd) or `within` passed, then restores it.
    Pressure { size: u64, within: Duration },
    /// On a machine of the run's own: khugepaged scans every 10 ms (its sysfs knobs, restored
    /// after) until it has made two full scans or `within` passed: it collapses what tasks
    /// advised MADV_HUGEPAGE, charging each huge page to their groups (and reclaiming there, as
    /// khugepaged, when a group is at its limit). With `task`, that task advises MADV_HUGEPAGE
    /// on its anonymous memory at the step's start: the advice wakes khugepaged, so its
    /// collapses fall inside the step rather than before it.
    Khugepaged {
        within: Duration,
        task: Option<String>,
    },
    /// Write `value` to the group's `file` (a memory.* file of the group, such as memory.max,
    /// memory.reclaim, memory.peak, v1 memory.soft_limit_in_bytes), recording how the write ended
    /// and what the file reads before and after (`KnobWrite`); without `value`, only read it.
    /// A failed write does not stop the scenario: checks judge it (`knob`).
    Set {
        cgroup: String,
        file: String,
        value: Option<String>,
        /// The declared group whose task makes the write (a process forked into it for the
        /// write alone); None: the runner, outside the run's groups.
        from: Option<String>,
    },
    /// POSIX_FADV_DONTNEED over `<file>.<i>`, i < `count`, from the runner: their clean pages
    /// leave the page cache, and the groups that were charged for them.
    Drop { file: String, count: u32 },
    /// A group of its own made below `cgroup`, a reader in it streaming `<file>.0` from a cold
    /// cache, then the group removed (rmdir) with the page cache it was charged: v1 moves its
    /// statistics to the parent, whose usage keeps the charge.
    Child { cgroup: String, file: String },
}

/// A hold step: task `task` starts in `cgroup` holding `anon` bytes of touched anonymous memory
/// and, with `file`, a shared mapping of `size` bytes of it (pages dirtied when `dirty`, else
/// read); with `write`, it keeps rewriting that many bytes of `<file>.written` in the background.
/// With `shmem`, it also maps and writes that many bytes of a memfd (shared memory, mapped).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hold {
    pub task: String,
    pub cgroup: String,
    pub anon: u64,
    pub shmem: u64,
    pub file: Option<String>,
    pub size: u64,
    pub dirty: bool,
    /// Keep writing to every page of the mapping until `wait`: its pages stay dirty and under
    /// writeback while the task runs.
    pub redirty: bool,
    pub write: u64,
    /// Its anonymous memory in huge pages (MADV_HUGEPAGE).
    pub huge: bool,
    /// Its anonymous memory mlocked (unevictable).
    pub mlock: bool,
    /// Its anonymous memory written with zeros (zero pages when swapped out).
    pub zero: bool,
    /// Bytes of its anonymous memory given back with MADV_FREE (lazily freed).
    pub lazyfree: u64,
    /// Its shmem on a tmpfs of its own mounted with huge=always (shmem huge pages), not a memfd.
    pub shmem_huge: bool,
    /// Kernel memory: threads (kernel stacks), empty files (slab), a descriptor table grown to
    /// `fds` (vmalloc).
    pub threads: u32,
    pub files: u32,
    pub fds: u32,
    /// Its mapping of `file` is read-only, of a descriptor opened read-only (what MADV_COLLAPSE
    /// of a file needs).
    pub readonly: bool,
    /// MADV_NOHUGEPAGE on the read-only mapping before it is touched: khugepaged leaves it alone.
    pub nohugepage: bool,
    /// Bytes it queues on a TCP connection to itself over loopback, in a network namespace of
    /// its own, never read: socket buffers (sock).
    pub sock: u64,
    /// Bytes of address space it maps and touches one page in every 2 MiB of: a page table page
    /// for each (pagetables).
    pub sparse: u64,
    /// Pipes it makes and keeps open, each of `pipe_size` bytes (0: the kernel's default):
    /// accounted slab, and a ring above 8 KiB taken from the page allocator (see `HOLD_KEYS`).
    pub pipes: u32,
    pub pipe_size: u64,
    /// oom_score_adj -1000: the OOM killer may not pick it. At its group's limit with no other
    /// task to kill, the kernel must refuse what it asks (ENOMEM), and its pipes stop there.
    pub unkillable: bool,
}

impl Hold {
    /// What the task holds, in bytes.
    pub fn bytes(&self) -> u64 {
        self.anon + self.shmem + self.size
    }
}

impl Step {
    /// The group the step's workload runs in, if it names one.
    pub fn cgroup(&self) -> Option<&str> {
        match self {
            Step::Write { cgroup, .. }
            | Step::Fsync { cgroup, .. }
            | Step::Truncate { cgroup, .. }
            | Step::Unlink { cgroup, .. }
            | Step::Reclaim { cgroup, .. }
            | Step::MmapWrite { cgroup, .. }
            | Step::Probe { cgroup, .. }
            | Step::Read { cgroup, .. }
            | Step::Fault { cgroup, .. }
            | Step::Usemem { cgroup, .. }
            | Step::Exhaust { cgroup, .. }
            | Step::Await { cgroup, .. }
            | Step::Set { cgroup, .. }
            | Step::Child { cgroup, .. } => Some(cgroup),
            Step::Hold(h) => Some(&h.cgroup),
            Step::Move { to, .. } => Some(to),
            Step::Cgroups { cgroup, .. } => Some(cgroup),
            _ => None,
        }
    }

    /// The kind of step it is.
    pub fn kind(&self) -> StepKind {
        match self {
            Step::Write { .. } => StepKind::Write,
            Step::Sync => StepKind::Sync,
            Step::Fsync { .. } => StepKind::Fsync,
            Step::Sleep(_) => StepKind::Sleep,
            Step::Truncate { .. } => StepKind::Truncate,
            Step::Unlink { .. } => StepKind::Unlink,
            Step::Reclaim { .. } => StepKind::Reclaim,
            Step::MmapWrite { .. } => StepKind::MmapWrite,
            Step::Probe { .. } => StepKind::Probe,
            Step::Hold(_) => StepKind::Hold,
            Step::Move { .. } => StepKind::Move,
            Step::Grow { .. } => StepKind::Grow,
            Step::Wait { .. } => StepKind::Wait,
            Step::Release { .. } => StepKind::Release,
            Step::Create { .. } => StepKind::Create,
            Step::Read { .. } => StepKind::Read,
            Step::Fault { .. } => StepKind::Fault,
            Step::Usemem { .. } => StepKind::Usemem,
            Step::Exhaust { .. } => StepKind::Exhaust,
            Step::Await { .. } => StepKind::Await,
            Step::Advise { .. } => StepKind::Advise,
            Step::Migrate { .. } => StepKind::Migrate,
            Step::Cgroups { .. } => StepKind::Cgroups,
            Step::Pressure { .. } => StepKind::Pressure,
            Step::Khugepaged { .. } => StepKind::Khugepaged,
            Step::Set { .. } => StepKind::Set,
            Step::Drop { .. } => StepKind::Drop,
            Step::Child { .. } => StepKind::Child,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Antagonist {
    /// Writes 1 to /proc/sys/vm/compact_memory in a loop, forcing page migration.
    Compaction,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub name: String,
    /// How many times the steps run in a row; measurements keep one sample per repetition.
    pub repeat: u32,
    /// How many times `--quick` runs the steps (at most `repeat`; None: `repeat`): for a phase
    /// whose later repetitions add samples, not conditions.
    pub quick_repeat: Option<u32>,
    /// Runs to bring the machine to speed (first-touch faults, cold caches); measures nothing.
    pub warmup: bool,
    /// Odd repetitions run the steps in blocks reversed (see `Phase::order`): paired measurements
    /// go A B, B A, A B, ..., so neither side always runs first.
    pub alternate: bool,
    pub steps: Vec<Step>,
    pub antagonists: Vec<Antagonist>,
}

impl Phase {
    /// The steps of repetition `rep`, in the order they run. Without `alternate`, as written.
    /// With it, odd repetitions reverse the order of the blocks, each block a measured step and
    /// the steps after it up to the next measured one (`write A, sync, write B, sync` becomes
    /// `write B, sync, write A, sync`); steps before the first measured one stay first.
    pub fn order(&self, rep: u32) -> Vec<&Step> {
        if !self.alternate || rep.is_multiple_of(2) {
            return self.steps.iter().collect();
        }
        let mut head = Vec::new();
        let mut blocks: Vec<Vec<&Step>> = Vec::new();
        for s in &self.steps {
            if s.kind().measured() {
                blocks.push(vec![s]);
            } else if let Some(b) = blocks.last_mut() {
                b.push(s);
            } else {
                head.push(s);
            }
        }
        head.into_iter()
            .chain(blocks.into_iter().rev().flatten())
            .collect()
    }

    /// Whether it measures anything: not a warm-up, with a measured step.
    pub fn measures(&self) -> bool {
        !self.warmup && self.steps.iter().any(|s| s.kind().measured())
    }
}

/// The scenario's `[sample]` table: the interval, and counters and /proc/vmstat keys sampled
/// beside those its checks need (see `SamplePlan`).
#[derive(Debug, Clone)]
pub struct SampleSpec {
    pub interval: Duration,
    pub counters: Vec<String>,
    pub vmstat: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub summary: String,
    pub description: String,
    pub origin: Origin,
    pub requires: Requires,
    pub timeout: Duration,
    pub cgroups: Vec<CgroupSpec>,
    pub sample: SampleSpec,
    pub phases: Vec<Phase>,
    pub checks: Vec<Check>,
    /// Checks expected to fail on some kernels (`[[known]]`).
    pub known: Vec<crate::model::KnownIssue>,
    /// The upstream fixes it guards (`fixes = ["<12 hex> (\"subject\")"]`), as LTP tags a
    /// regression test with the kernel commit: a failure names them.
    pub fixes: Vec<crate::model::FixTag>,
    /// Sysctls (full name: `vm.dirty_bytes`, `thp.shrink_underused`; value) set for the scenario
    /// and restored afterwards.
    pub sysctls: Vec<(String, String)>,
    /// Which disk its files go on.
    pub scratch: ScratchDisk,
    /// Whether `--quick` shrinks its sizes (`scale = false`: they are as small as what it tests
    /// allows, such as a file eight times its group's limit).
    pub scale: bool,
    /// Where it was read from ("builtin:NAME.toml" or a path).
    pub source: String,
}

/// The smallest limit, high mark or protection `Scenario::scale_down` leaves.
pub const MIN_LIMIT: u64 = 16 << 20;

impl Scenario {
    /// A `--quick` run's phases, whether or not its sizes scale: each runs `quick_repeat` times
    /// where set, and a warm-up phase with 0 is left out.
    pub fn quicken(&mut self) {
        self.phases.retain(|p| p.quick_repeat != Some(0));
        for p in &mut self.phases {
            p.repeat = p.quick_repeat.take().unwrap_or(p.repeat);
        }
    }

    /// Scales sizes and limits down for smoke runs on slow machines; checks stay as they are,
    /// except where they hold a size (the expected change of a `change` check follows the sizes).
    /// A write's `quick_size` replaces its size / `divisor`.
    pub fn scale_down(&mut self, divisor: u64) {
        for c in &mut self.checks {
            c.scale_down(divisor);
        }
        for c in &mut self.cgroups {
            c.limit = c.limit.map(|l| (l / divisor).max(MIN_LIMIT));
            c.high = c.high.map(|l| (l / divisor).max(MIN_LIMIT));
            c.low = c.low.map(|l| (l / divisor).max(MIN_LIMIT));
            c.min = c.min.map(|l| (l / divisor).max(MIN_LIMIT));
        }
        for p in &mut self.phases {
            for s in &mut p.steps {
                match s {
                    Step::Write {
                        size,
                        block_size,
                        quick_size,
                        ..
                    } => {
                        *size = quick_size
                            .take()
                            .unwrap_or(*size / divisor)
                            .max(*block_size)
                    }
                    Step::Hold(h) => {
                        h.anon /= divisor;
                        h.shmem /= divisor;
                        h.size /= divisor;
                        h.write /= divisor;
                        h.lazyfree /= divisor;
                    }
                    Step::Grow { anon, .. } => *anon /= divisor,
                    // As the limits: the probe and its ballast need room below them.
                    Step::Probe { size, .. } => *size = (*size / divisor).max(probe::MIN_PROBE),
                    Step::MmapWrite { size, .. }
                    | Step::Reclaim { size, .. }
                    | Step::Create { size, .. }
                    | Step::Usemem { size, .. }
                    | Step::Await { size, .. } => *size = (*size / divisor).max(1 << 20),
                    Step::Fault { duration, .. } => *duration /= divisor as u32,
                    // The limits shrink as much, but not below 16 MiB: stay 2x above that.
                    Step::Exhaust { anon, .. } => *anon = (*anon / divisor).max(32 << 20),
                    _ => {}
                }
            }
        }
    }
}

/// Reads a scenario file from disk: a regular file of at most `MAX_FILE` bytes. Opened without
/// blocking (a FIFO would wait for a writer) and checked on the open descriptor.
pub fn load_file(path: &Path) -> Result<Scenario, ScenarioError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let err = |msg: String| ScenarioError {
        file: path.display().to_string(),
        line: 0,
        col: 0,
        msg,
    };
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| err(format!("cannot read: {e}")))?;
    let meta = f.metadata().map_err(|e| err(format!("cannot read: {e}")))?;
    if !meta.is_file() {
        return Err(err("not a regular file".into()));
    }
    if meta.len() > MAX_FILE {
        return Err(err(format!(
            "larger than {MAX_FILE} bytes: not a scenario file"
        )));
    }
    let mut bytes = Vec::new();
    f.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(format!("cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(err(format!(
            "larger than {MAX_FILE} bytes: not a scenario file"
        )));
    }
    let text = String::from_utf8(bytes).map_err(|e| err(format!("not UTF-8: {e}")))?;
    parse(&path.display().to_string(), &text)
}

/// All scenarios: the built-in ones, then those of `dir` (which replace built-ins of the same name).
pub fn load_all(dir: Option<&Path>) -> Result<Vec<Scenario>, ScenarioError> {
    let mut out: Vec<Scenario> = Vec::new();
    for (file, text) in BUILTIN {
        out.push(parse(&format!("builtin:{file}"), text)?);
    }
    if let Some(dir) = dir {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| ScenarioError {
                file: dir.display().to_string(),
                line: 0,
                col: 0,
                msg: format!("cannot list scenario directory: {e}"),
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        paths.sort();
        for p in paths {
            let s = load_file(&p)?;
            out.retain(|x| x.name != s.name);
            out.push(s);
        }
    }
    Ok(out)
}

mod builtin;
mod checks;
mod describe;
pub mod headroom;
mod implied;
mod known;
pub mod plan;
pub mod probe;
mod raw;
pub mod render;
mod resolve;
mod steps;

pub use crate::model::source::Key;
pub use plan::SamplePlan;
pub use resolve::parse;
pub use steps::{STEPS, StepSyntax, reference as steps_reference, syntax};

#[cfg(test)]
mod tests;
