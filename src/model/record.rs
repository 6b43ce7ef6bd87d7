//! What a scenario run leaves behind for the checks and reports: the sampled series, when each
//! phase and step ran, what each step measured, and /proc/vmstat at phase boundaries.

use serde::{Deserialize, Serialize};

use super::StepKind;
use super::counter::{DIRTY, FILE, USAGE, WRITEBACK};

use crate::model::Series;
use crate::model::Stat;
use crate::model::stats::median;

/// Whether group `group` is `ancestor` or below it (group names are paths: "a", "a/b").
pub fn within(group: &str, ancestor: &str) -> bool {
    group == ancestor
        || group
            .strip_prefix(ancestor)
            .is_some_and(|r| r.starts_with('/'))
}

/// A cgroup the scenario creates, named by its path below the scenario's directory ("a" or "a/b").
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CgroupSpec {
    pub name: String,
    pub limit: Option<u64>,
    /// v2 memory.high.
    pub high: Option<u64>,
    /// v2 memory.low: best-effort protection of the group's memory from reclaim.
    pub low: Option<u64>,
    /// v2 memory.min: hard protection of the group's memory from reclaim.
    pub min: Option<u64>,
    /// May the group's memory be swapped out (`swap = false`: v2 memory.swap.max 0, v1
    /// memory.memsw.limit_in_bytes = its limit).
    pub swap: bool,
    /// Swap the group may use: v2 memory.swap.max, v1 memory.memsw.limit_in_bytes set to its
    /// limit plus this.
    pub swap_max: Option<u64>,
    /// v2 memory.swap.high: above it, the group's tasks are throttled at every charge.
    pub swap_high: Option<u64>,
    /// v2 memory.oom.group: an OOM kill in the group kills all its tasks.
    pub oom_group: bool,
    /// v1 memory.move_charge_at_immigrate (1 anon, 2 mapped file, 3 both) of this group, the
    /// destination of a move.
    pub move_charge: Option<u32>,
    /// v1 notifications registered for the group with cgroup.event_control, each the file and
    /// its argument: `memory.usage_in_bytes 32M` (a threshold), `memory.oom_control`,
    /// `memory.pressure_level low,hierarchy`.
    pub listen: Vec<String>,
}

/// One executed step.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StepRecord {
    pub phase: usize,
    /// Which repetition of the phase (0-based; a second round's go on from the first's).
    pub rep: u32,
    /// The round of its phase: 0, or 1 for the second round the runner runs when a performance
    /// check judged on the phase failed in the first (`CheckSpec::confirmed_in`).
    #[serde(default)]
    pub round: u32,
    pub kind: StepKind,
    pub describe: String,
    /// Seconds since the scenario started.
    pub start: f64,
    pub end: f64,
    /// Bytes the step wrote or read (page faults for a fault step), and the seconds its measured
    /// part took.
    pub bytes: u64,
    pub seconds: f64,
    /// The group the step's workload ran in ("" for helpers such as sync).
    pub cgroup: String,
    /// CPU seconds (user + system) the workload used, where it reports them.
    pub cpu_seconds: f64,
    /// exhaust: the group's tasks that died of SIGKILL, whether the task that needed the memory
    /// was one, and the bystanders that lived on.
    pub killed: u32,
    pub task_killed: bool,
    pub survived: u32,
    /// The page faults the step's workers took, minor and major (their own getrusage count; 0
    /// for steps without workers and for held tasks).
    #[serde(default)]
    pub minflt: u64,
    #[serde(default)]
    pub majflt: u64,
    /// What the rest of the machine did while a measured step ran (write, read, fault, usemem).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<Load>,
    /// exhaust: bystanders at oom_score_adj -1000 started and those that lived; tasks killed
    /// in the group named `outside` (None: there was none).
    #[serde(default)]
    pub immune: u32,
    #[serde(default)]
    pub immune_survived: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside_killed: Option<u32>,
    /// exhaust with `raise`: whether the task that had to wait was under OOM (v1 under_oom)
    /// when its group's limit was raised; None where it did not wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited: Option<bool>,
    /// set: what it wrote to its group's file and what the file read around the write.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub knob: Option<KnobWrite>,
    /// advise: why the kernel declined the advice (MADV_COLLAPSE without a huge page to be had,
    /// or of a file without CONFIG_READ_ONLY_THP_FOR_FS): the step changed nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declined: Option<String>,
    /// hold with pipes: how many the task made (fewer than asked where the kernel refused one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub made: Option<u64>,
    /// migrate: where the task's pages are after it, and the group's memory.numa_stat then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placed: Option<crate::model::placement::Placement>,
}

/// What a `set` step did to a file of its group: the value it wrote (none: it only read), how the
/// write ended, and what the file read (trimmed) through a new descriptor before and after, and
/// through the descriptor written to, right after the write (memory.peak resets per descriptor).
/// A file that cannot be read (memory.reclaim) reads None.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KnobWrite {
    pub file: String,
    pub written: Option<String>,
    /// The errno name the write failed with (`EINVAL`), or None.
    pub error: Option<String>,
    pub before: Option<String>,
    pub after: Option<String>,
    pub same_fd: Option<String>,
    /// What another thread read from the file while the write(2) ran (v2 memory.high and
    /// memory.max, whose writes reclaim down to the new value before they return).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during: Option<ReadsDuring>,
}

/// The knobs whose writes are read from another thread while they run (`KnobWrite::during`):
/// cgroup v2's that reclaim down to the value written before the write returns.
pub const WATCHED_KNOBS: [&str; 2] = ["memory.high", "memory.max"];

/// Reads of a file from another thread while a write to it was in progress: how long the write
/// took and each run of reads that showed one value, in the order read (only reads that began
/// after the write did).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadsDuring {
    /// From right before the write(2) to right after it returned, ms.
    pub write_ms: f64,
    pub runs: Vec<ReadRun>,
}

/// Consecutive reads that showed the same text: when the first and the last of them began, in
/// ms since the write began, how many there were, and the group's memory.current read right
/// before the first and before the last.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadRun {
    pub value: String,
    pub first_ms: f64,
    pub last_ms: f64,
    pub reads: u64,
    pub usage_first: Option<u64>,
    pub usage_last: Option<u64>,
}

/// What the rest of the machine did while a step was measured: other processes' CPU (their user
/// time: the machine's from /proc/stat minus the run's own and its workers'), the pages they
/// dirtied (nr_dirtied minus the step's own writes), and where the kernel has PSI, the share of
/// the step during which some task waited for a CPU or for I/O (the run's own tasks included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// CPUs other processes kept busy, on average.
    pub others_cpus: f64,
    /// MB/s other processes dirtied.
    pub others_dirtied_mb_s: f64,
    /// MB they dirtied in all (a short step's own metadata and journal pages make a rate of a few
    /// MB/s out of a few hundred KB).
    #[serde(default)]
    pub others_dirtied_mb: f64,
    pub cpu_pressure: Option<f64>,
    pub io_pressure: Option<f64>,
    /// Under `memcgtest vm`: what other processes on the host did meanwhile (the guest's CPUs
    /// are host threads and its disk a host file, so they slow the guest unseen from inside).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostLoad>,
}

/// Other processes on the host under a VM (all but qemu and memcgtest), over a measured step:
/// published by the host, read by the guest (sys::hostload).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HostLoad {
    pub cpus: f64,
    pub dirtied_mb_s: f64,
    pub dirtied_mb: f64,
}

/// The busy rule, for the machine and for the host under a VM.
fn busy(cpus: f64, mb_s: f64, mb: f64) -> bool {
    cpus > Load::BUSY_CPUS || (mb_s > Load::BUSY_DIRTIED_MB_S && mb > Load::BUSY_DIRTIED_MB)
}

impl HostLoad {
    /// Whether the host's other processes were too busy for the guest's figures to count.
    pub fn busy(&self) -> bool {
        busy(self.cpus, self.dirtied_mb_s, self.dirtied_mb)
    }
}

impl Load {
    /// Other processes' CPU beyond which a measured step says nothing about the kernel: a quarter
    /// of a CPU (as `ab` judges a boot: see docs/ab.md).
    pub const BUSY_CPUS: f64 = 0.25;
    /// Other processes' writes beyond which a measured step says nothing: 4 MB/s of dirtied
    /// pages (an idle machine dirties about none; a background writer tens to hundreds).
    pub const BUSY_DIRTIED_MB_S: f64 = 4.0;
    /// ... and at least this much in all: 8 MB written in 0.15 s dirtied 0.8 MB of ext4 metadata
    /// and journal beside it (6.12 in TCG), 5.4 MB/s that no other process wrote.
    pub const BUSY_DIRTIED_MB: f64 = 2.0;

    /// The CPUs other processes used, here or on the host under a VM, whichever is more.
    pub fn worst_cpus(&self) -> f64 {
        self.others_cpus.max(self.host.map_or(0.0, |h| h.cpus))
    }

    /// Whether the machine (or the host under a VM, by the same thresholds) was too busy for
    /// the step's rate to mean anything.
    pub fn busy(&self) -> bool {
        busy(
            self.others_cpus,
            self.others_dirtied_mb_s,
            self.others_dirtied_mb,
        ) || self.host.is_some_and(|h| h.busy())
    }

    /// "0.61 CPUs, 12.0 MB/s dirtied by other processes".
    pub fn describe(&self) -> String {
        format!(
            "{:.2} CPUs and {:.1} MB/s of dirtied pages by other processes{}",
            self.others_cpus,
            self.others_dirtied_mb_s,
            match self.cpu_pressure {
                Some(p) => format!(", CPU pressure {:.0} %", p * 100.0),
                None => String::new(),
            }
        ) + &match self.host {
            Some(h) => format!(
                "; on the host beside the VM {:.2} CPUs and {:.1} MB/s by other processes",
                h.cpus, h.dirtied_mb_s
            ),
            None => String::new(),
        }
    }

    /// The thresholds, for tolerances.
    pub fn thresholds() -> String {
        format!(
            "a sample counts only when other processes used at most {} CPUs and dirtied at most {} MB/s (or {} MB in all) during its step",
            Self::BUSY_CPUS,
            Self::BUSY_DIRTIED_MB_S,
            Self::BUSY_DIRTIED_MB
        )
    }
}

/// One executed phase.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseRecord {
    pub name: String,
    pub start: f64,
    pub end: f64,
    pub antagonists: Vec<String>,
    /// A warm-up phase (`warmup = true`): it runs, but yields no measurements.
    pub warmup: bool,
    #[serde(skip)]
    pub vmstat_start: Stat,
    #[serde(skip)]
    pub vmstat_end: Stat,
}

/// Facts about the machine that tolerances are derived from.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Machine {
    pub cpus: u64,
    pub page_size: u64,
    /// How far a global node counter (nr_dirty, nr_writeback) may lag: the per-CPU vmstat
    /// threshold ("vm stats threshold" in /proc/zoneinfo, the node's largest) x CPUs, summed over
    /// nodes, in pages.
    pub node_drift_pages: u64,
    /// The multi-gen LRU is on (/sys/kernel/mm/lru_gen/enabled): reclaim isolates up to
    /// MAX_LRU_BATCH pages at a time, not SWAP_CLUSTER_MAX.
    pub lru_gen: bool,
    /// Reading a v2 group's cpu.stat flushes its memcg statistics (see
    /// `cpu_stat_flushes_memcg`): the sampler reads the top group's first, so it is never stale.
    pub top_flushed: bool,
}

/// Whether reading a v2 group's cpu.stat flushes the memcg statistics below it on kernel
/// `release`. Up to 6.15 it did (cgroup_base_stat_cputime_show -> cgroup_rstat_flush, which
/// walks every controller's state of the subtree); since 6.16 each controller has an rstat tree
/// of its own ("cgroup: use separate rstat trees for each subsystem") and cpu.stat flushes only
/// the cgroup's own CPU times (css_rstat_flush(&cgrp->self)). Unknown releases: no.
pub fn cpu_stat_flushes_memcg(release: &str) -> bool {
    crate::model::known::Release::parse(release)
        .is_some_and(|r| r.0.iter().take(2).cmp([6, 16].iter()) == std::cmp::Ordering::Less)
}

impl Machine {
    /// Whether the sampler's read of `group` comes right after a flush of its memcg statistics:
    /// the v2 top group, whose cpu.stat it reads first, on kernels where that read flushes them
    /// (`top_flushed`). Such a group is never stale.
    pub fn flushed_before_read(&self, version: super::Version, group: &str) -> bool {
        self.top_flushed && version == super::Version::V2 && group == super::TOP_GROUP
    }

    pub fn node_drift_bytes(&self) -> u64 {
        self.node_drift_pages * self.page_size
    }

    /// How far a memcg counter read from memory.stat may lag behind the truth. In
    /// memcg_rstat_updated() each CPU keeps up to MEMCG_CHARGE_BATCH (64) - 1 page updates before
    /// adding them to the group's pending count, and a read flushes only once that count exceeds
    /// MEMCG_CHARGE_BATCH x CPUs: up to 2 x 64 x CPUs pages unflushed.
    pub fn stat_batch_bytes(&self) -> u64 {
        2 * 64 * self.cpus * self.page_size
    }

    pub fn stat_batch_explained(&self) -> String {
        format!(
            "2 x 64 pages x {} CPUs x {} B = {} (memcg stats unflushed: per-CPU residue below MEMCG_CHARGE_BATCH plus the flush threshold MEMCG_CHARGE_BATCH x CPUs)",
            self.cpus,
            self.page_size,
            crate::model::units::human_bytes(self.stat_batch_bytes() as i64)
        )
    }
}

/// Everything recorded about one scenario run.
#[derive(Debug, Clone)]
pub struct Record {
    pub series: Series,
    pub phases: Vec<PhaseRecord>,
    pub steps: Vec<StepRecord>,
    pub machine: Machine,
    /// Task moves between groups, with their cost.
    pub moves: Vec<MoveRecord>,
    /// Why this kernel cannot move charges with a task (v1 move_charge_at_immigrate refused),
    /// when a scenario asked for it.
    pub charge_moving: Option<String>,
    /// The scenario's groups as it set them up (limits, memory.high, swap, oom.group).
    pub cgroups: Vec<CgroupSpec>,
    /// The step a stall or timeout cut off, recorded up to that moment. Kept out of `steps`, so
    /// checks and measurements that look at finished steps never judge a cut-off one; the
    /// accounting checks' windows include it (what the samples show during it is real).
    pub stopped: Option<StepRecord>,
    /// vm.dirty_ratio and vm.dirty_bytes while the scenario ran, on cgroup v2 (whose memcgs are
    /// writeback domains of their own); None on v1.
    pub dirty: Option<DirtyLimits>,
    /// The cgroup version the groups ran under: which document's promises apply.
    pub version: crate::model::Version,
    /// The file-modified events of the groups' event files (v2), in time order; None where
    /// they were not watched (cgroup v1).
    pub notices: Option<Vec<Notice>>,
    /// Keys a flat-keyed file of a group printed more than once, read at the scenario's end
    /// (None: not read).
    pub repeated: Option<Vec<RepeatedKey>>,
}

/// The event files whose file-modified events a run records (cgroup v2).
pub const EVENT_FILES: [&str; 3] = ["memory.events", "memory.events.local", "memory.swap.events"];

/// A file-modified event of a group's event file: at `t`, `group`'s `file` (memory.events,
/// memory.events.local, memory.swap.events) told its watchers a value changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Notice {
    pub t: f64,
    pub group: String,
    /// The event file, or a v1 listener as the group's `listen` names it.
    pub file: String,
    /// How many times the kernel signalled a v1 eventfd before it was read (its counter): two
    /// crossings of a threshold within one wake-up of the watcher are one notice of 2. 1 for an
    /// event file.
    pub count: u64,
    /// A listener the kernel refused to register (at t = 0): the errno, with what was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// The machine's dirty limits (/proc/sys/vm/dirty_ratio, dirty_bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirtyLimits {
    pub ratio: u64,
    pub bytes: u64,
}

impl Record {
    /// The settings of group `name`, if the scenario declared it.
    pub fn group(&self, name: &str) -> Option<&CgroupSpec> {
        self.cgroups.iter().find(|c| c.name == name)
    }
    /// The memory limit set on group `name` (memory.limit_in_bytes / memory.max).
    pub fn limit_of(&self, name: &str) -> Option<u64> {
        self.group(name)?.limit
    }
    /// The memory.high set on group `name`.
    pub fn high_of(&self, name: &str) -> Option<u64> {
        self.group(name)?.high
    }
    /// Whether a group below `name` has `what` set.
    pub fn any_below(&self, name: &str, what: impl Fn(&CgroupSpec) -> bool) -> bool {
        self.cgroups.iter().any(|c| {
            c.name
                .strip_prefix(name)
                .is_some_and(|r| r.starts_with('/'))
                && what(c)
        })
    }
}

fn sum_of(v: &[(String, i64)], counters: &[String]) -> i64 {
    v.iter()
        .filter(|(c, _)| counters.contains(c))
        .map(|(_, b)| *b)
        .sum()
}

/// One `move` step: a task's pid written into another group's cgroup.procs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MoveRecord {
    pub task: String,
    pub from: String,
    pub to: String,
    /// Memory the task held (anon + mapped file), bytes.
    pub bytes: u64,
    /// Wall time of the write(2) to cgroup.procs (charge moving runs inside it), seconds.
    pub wall_seconds: f64,
    /// System time the writing thread spent in it, seconds.
    pub sys_seconds: f64,
    /// What the move carried, per counter (usage, anon, file, dirty, writeback; bytes): the
    /// least of what arrived in `to` and what left `from`, from both groups' counters read right
    /// before and right after the write (0 when either side did not change).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carried: Vec<(String, i64)>,
    /// What the source group held of each counter right before the move: what could have moved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source: Vec<(String, i64)>,
}

impl MoveRecord {
    /// What a move is described by: usage and these memory.stat counters of both groups.
    pub const COUNTERS: [&'static str; 6] = [USAGE, "anon", FILE, "mapped", DIRTY, WRITEBACK];
    /// Bytes of `counters` the move carried (summed).
    pub fn carried_of(&self, counters: &[String]) -> i64 {
        sum_of(&self.carried, counters)
    }
    /// Bytes of `counters` the source held right before the move (summed).
    pub fn source_of(&self, counters: &[String]) -> i64 {
        sum_of(&self.source, counters)
    }
    /// MiB moved per second of wall time.
    pub fn mib_per_s(&self) -> f64 {
        self.bytes as f64 / 1048576.0 / self.wall_seconds.max(1e-9)
    }
}

/// Bytes, seconds and MB/s of the write steps of one phase.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PhaseMeasure {
    pub name: String,
    pub bytes: u64,
    pub seconds: f64,
    /// Decimal megabytes per second, as dd prints them: the median over the repetitions.
    pub mb_per_s: Option<f64>,
    /// MB/s of each repetition.
    pub samples_mb_per_s: Vec<f64>,
    /// Wall time of the whole phase.
    pub wall_seconds: f64,
}

impl Record {
    /// A record of `series` with nothing else recorded (no phases, steps, moves or groups).
    pub fn bare(series: Series, machine: Machine, version: crate::model::Version) -> Record {
        Record {
            series,
            phases: Vec::new(),
            steps: Vec::new(),
            machine,
            moves: Vec::new(),
            charge_moving: None,
            cgroups: Vec::new(),
            stopped: None,
            dirty: None,
            version,
            notices: None,
            repeated: None,
        }
    }

    /// Bytes and seconds of the write steps of each repetition of phase `phase`, busy ones
    /// included, indexed by repetition.
    fn write_reps(&self, phase: usize) -> Vec<(u64, f64)> {
        let mut reps: Vec<(u64, f64)> = Vec::new();
        for s in self
            .steps
            .iter()
            .filter(|s| s.phase == phase && s.kind == StepKind::Write)
        {
            let i = s.rep as usize;
            if reps.len() <= i {
                reps.resize(i + 1, (0, 0.0));
            }
            reps[i].0 += s.bytes;
            reps[i].1 += s.seconds;
        }
        reps
    }

    /// The write MB/s of each repetition of phase `phase` that wrote, and whether the machine
    /// was busy during it (see `Load`).
    fn write_rates(&self, phase: usize) -> Vec<(f64, bool)> {
        (self.write_reps(phase).into_iter().enumerate())
            .filter(|(_, (_, s))| *s > 0.0)
            .map(|(r, (b, s))| (b as f64 / s / 1e6, self.busy_rep(phase, r as u32)))
            .collect()
    }

    /// The write steps of phase `phase`: bytes and seconds of all, MB/s of each repetition
    /// measured while the machine was quiet (see `Load`) and their median.
    pub fn phase_measure(&self, phase: usize) -> PhaseMeasure {
        let reps = self.write_reps(phase);
        let bytes = reps.iter().map(|r| r.0).sum();
        let seconds = reps.iter().map(|r| r.1).sum();
        let samples: Vec<f64> = (self.write_rates(phase).into_iter())
            .filter_map(|(rate, busy)| (!busy).then_some(rate))
            .collect();
        let p = &self.phases[phase];
        PhaseMeasure {
            name: p.name.clone(),
            bytes,
            seconds,
            mb_per_s: median(&samples),
            samples_mb_per_s: samples,
            wall_seconds: p.end - p.start,
        }
    }

    /// Whether a measured step of repetition `rep` of phase `phase` ran on a busy machine.
    pub fn busy_rep(&self, phase: usize, rep: u32) -> bool {
        self.steps
            .iter()
            .any(|s| s.phase == phase && s.rep == rep && s.load.is_some_and(|l| l.busy()))
    }

    /// How far each group counter moved: the largest range of any group's column (for a derived
    /// limit, 1 when one was in force), for `memcgtest coverage`.
    pub fn moved(&self) -> Vec<(String, i64)> {
        let s = &self.series;
        let mut out: Vec<(String, i64)> = Vec::new();
        for (i, c) in s.columns().iter().enumerate() {
            let super::Column::Group {
                group,
                counter,
                local,
            } = c
            else {
                continue;
            };
            // The helpers' group has no invariant of its own.
            if group == super::HELPER_GROUP {
                continue;
            }
            let name = if *local {
                super::counter::local(counter)
            } else {
                counter.clone()
            };
            let (lo, hi) = (0..s.len()).fold((i64::MAX, i64::MIN), |(lo, hi), r| {
                let v = s.get(r, i);
                (lo.min(v), hi.max(v))
            });
            let limit = super::counter::counter(counter)
                .is_some_and(|c| c.kind == super::counter::Kind::Limit);
            let range = match (s.is_empty(), limit) {
                (true, _) => 0,
                // A derived limit "moves" when one is in force (below the page counter's max).
                (false, true) => i64::from(lo < 1 << 60),
                (false, false) => hi - lo,
            };
            match out.iter_mut().find(|(n, _)| *n == name) {
                Some(e) => e.1 = e.1.max(range),
                None => out.push((name, range)),
            }
        }
        out
    }

    pub fn phase_by_name(&self, name: &str) -> Option<usize> {
        self.phases.iter().position(|p| p.name == name)
    }

    /// The phase a time falls in, for messages.
    pub fn phase_at(&self, t: f64) -> &str {
        self.phases
            .iter()
            .find(|p| t >= p.start && t <= p.end)
            .map(|p| p.name.as_str())
            .unwrap_or("between phases")
    }
}

/// A named set of samples of one quantity, higher is better (for `memcgtest compare`): one per
/// repetition (a task move: one), split by what the rest of the machine did meanwhile (see
/// `Load::busy`). In JSON: `{"name", "unit", "samples": [quiet ones], "busy_samples": [busy
/// ones]}`, `busy_samples` absent when none was busy (and in files written before they were kept).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Measurement {
    pub name: String,
    pub unit: String,
    /// The samples measured while the machine was quiet: the ones `compare` judges.
    pub samples: Vec<f64>,
    /// The samples measured while it was busy, in repetition order: kept, never judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub busy_samples: Vec<f64>,
}

impl Measurement {
    /// A measurement of (sample, measured while the machine was busy) pairs.
    fn of(name: String, unit: &str, samples: impl IntoIterator<Item = (f64, bool)>) -> Self {
        let (busy, quiet): (Vec<_>, Vec<_>) = samples.into_iter().partition(|s| s.1);
        Measurement {
            name,
            unit: unit.into(),
            samples: quiet.into_iter().map(|s| s.0).collect(),
            busy_samples: busy.into_iter().map(|s| s.0).collect(),
        }
    }
}

/// The rate of a step: MB/s for reads and writes, faults/s for fault loops.
pub fn step_rate(s: &StepRecord) -> Option<f64> {
    if s.seconds <= 0.0 || s.bytes == 0 {
        return None;
    }
    let per_s = s.bytes as f64 / s.seconds;
    Some(if s.kind == StepKind::Fault {
        per_s
    } else {
        per_s / 1e6
    })
}

impl Record {
    /// Everything measurable in the run, as sample sets: write MB/s per phase (one sample per
    /// repetition), read MB/s and faults/s (and faults per CPU-second) per phase and group, and the
    /// MiB/s of each task move. Repetitions measured while the machine was busy are kept, marked
    /// (`busy_samples`). Warm-up phases yield none.
    pub fn measurements(&self) -> Vec<Measurement> {
        let mut out = Vec::new();
        for (i, p) in self.phases.iter().enumerate() {
            if !p.warmup {
                self.phase_measurements(i, &mut out);
            }
        }
        for m in self.moves.iter().filter(|m| m.bytes > 0) {
            let name = format!("move {} {} -> {}", m.task, m.from, m.to);
            out.push(Measurement::of(name, "MiB/s", [(m.mib_per_s(), false)]));
        }
        out
    }

    /// The measurements of phase `i`: its writes, and its reads, faults and usemem per group.
    fn phase_measurements(&self, i: usize, out: &mut Vec<Measurement>) {
        let name = &self.phases[i].name;
        let m = Measurement::of(format!("{name}: write"), "MB/s", self.write_rates(i));
        if !m.samples.is_empty() || !m.busy_samples.is_empty() {
            out.push(m);
        }
        let mut keys: Vec<(StepKind, &str)> = Vec::new();
        for s in self.steps.iter().filter(|s| {
            s.phase == i && [StepKind::Read, StepKind::Fault, StepKind::Usemem].contains(&s.kind)
        }) {
            if !keys.contains(&(s.kind, s.cgroup.as_str())) {
                keys.push((s.kind, s.cgroup.as_str()));
            }
        }
        for (kind, cg) in keys {
            let steps = || {
                (self.steps.iter())
                    .filter(move |s| s.phase == i && s.kind == kind && s.cgroup == cg)
                    .map(|s| (s, self.busy_rep(i, s.rep)))
            };
            let rates = steps().filter_map(|(s, busy)| Some((step_rate(s)?, busy)));
            let name_of = format!("{name}: {kind} in {cg}");
            out.push(Measurement::of(name_of, kind.rate_unit(), rates));
            if kind == StepKind::Fault {
                let per_cpu = (steps().filter(|(s, _)| s.cpu_seconds > 0.0))
                    .map(|(s, busy)| (s.bytes as f64 / s.cpu_seconds, busy));
                let name_of = format!("{name}: fault in {cg} per CPU");
                out.push(Measurement::of(name_of, "faults/CPU-s", per_cpu));
            }
        }
    }
}

/// A key that one of a group's flat-keyed files (memory.stat, memory.numa_stat, the event files)
/// printed more than once: each key is one counter, printed once by its file's table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepeatedKey {
    pub group: String,
    pub file: String,
    pub key: String,
    pub times: usize,
}

/// The keys `text` (a flat-keyed file: "key value..." lines) prints more than once, with how often.
pub fn repeated_keys(text: &str) -> Vec<(String, usize)> {
    let mut seen: Vec<(String, usize)> = Vec::new();
    for key in text
        .lines()
        .filter_map(|l| l.split_ascii_whitespace().next())
    {
        match seen.iter_mut().find(|(k, _)| k == key) {
            Some((_, n)) => *n += 1,
            None => seen.push((key.to_string(), 1)),
        }
    }
    seen.retain(|(_, n)| *n > 1);
    seen
}
