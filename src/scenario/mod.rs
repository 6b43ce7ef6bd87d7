//! Scenario files: declarative TOML describing cgroups, phases of workload steps, antagonists,
//! sampled counters and checks. Parsing is strict: unknown keys and bad values are errors that name
//! the file, line and column. The files in `scenarios/` are built into the binary.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::cgroup::{Version, stat};
use crate::model::counter::DIRTY_WRITEBACK;
use crate::units::{MIN_INTERVAL, parse_duration_within, parse_size};

/// The largest size a scenario may give (see `Ctx::size`).
pub const MAX_SIZE: u64 = 1 << 40;

/// The largest scenario file read: anything bigger is not a scenario (`check /dev/zero`).
pub const MAX_FILE: u64 = 1 << 20;

/// The scenario files shipped with memcgtest, built into the binary.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "dirty-migration.toml",
        include_str!("../../scenarios/dirty-migration.toml"),
    ),
    (
        "dirty-accounting.toml",
        include_str!("../../scenarios/dirty-accounting.toml"),
    ),
    (
        "writeback-accounting.toml",
        include_str!("../../scenarios/writeback-accounting.toml"),
    ),
    (
        "truncate-dirty.toml",
        include_str!("../../scenarios/truncate-dirty.toml"),
    ),
    (
        "mmap-dirty.toml",
        include_str!("../../scenarios/mmap-dirty.toml"),
    ),
    (
        "move-charge-anon.toml",
        include_str!("../../scenarios/move-charge-anon.toml"),
    ),
    (
        "move-charge-file.toml",
        include_str!("../../scenarios/move-charge-file.toml"),
    ),
    (
        "move-during-writeback.toml",
        include_str!("../../scenarios/move-during-writeback.toml"),
    ),
    (
        "move-no-charge.toml",
        include_str!("../../scenarios/move-no-charge.toml"),
    ),
    ("move-v2.toml", include_str!("../../scenarios/move-v2.toml")),
    (
        "reclaim-parallel-read.toml",
        include_str!("../../scenarios/reclaim-parallel-read.toml"),
    ),
    (
        "fault-overhead.toml",
        include_str!("../../scenarios/fault-overhead.toml"),
    ),
    (
        "move-charge-swap.toml",
        include_str!("../../scenarios/move-charge-swap.toml"),
    ),
];

/// The helper group the runner creates next to the declared ones (sync, antagonists, create
/// steps run there); no declared group may be called so.
pub const HELPER_GROUP: &str = "aux";

/// A scenario file error: where, and what is wrong.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}:{line}:{col}: {msg}")]
pub struct ScenarioError {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub msg: String,
}

// ---------------------------------------------------------------------------------------------
// The file as written (serde, with spans for error messages).

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Spanned<String>,
    summary: Spanned<String>,
    #[serde(default)]
    description: String,
    timeout: Option<Spanned<String>>,
    origin: Origin,
    #[serde(default)]
    requires: RawRequires,
    #[serde(default)]
    cgroup: Vec<Spanned<RawCgroup>>,
    #[serde(default)]
    sample: RawSample,
    /// vm sysctls set for the whole scenario and restored afterwards.
    #[serde(default)]
    sysctl: std::collections::BTreeMap<String, Spanned<String>>,
    phase: Vec<Spanned<RawPhase>>,
    #[serde(default)]
    check: Vec<Spanned<RawCheck>>,
}

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

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRequires {
    #[serde(default)]
    cgroup: Vec<Spanned<String>>,
    #[serde(default)]
    writeback: bool,
    #[serde(default)]
    features: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCgroup {
    name: Spanned<String>,
    limit: Option<Spanned<String>>,
    move_charge: Option<Spanned<u32>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSample {
    interval: Option<Spanned<String>>,
    #[serde(default)]
    counters: Vec<Spanned<String>>,
    #[serde(default)]
    vmstat: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhase {
    name: Spanned<String>,
    repeat: Option<Spanned<u32>>,
    #[serde(default)]
    warmup: bool,
    #[serde(default)]
    steps: Vec<Spanned<RawStep>>,
    #[serde(default)]
    antagonists: Vec<Spanned<RawAntagonist>>,
}

/// One step as written: `action` picks the kind, the other keys are its parameters.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    action: Spanned<String>,
    cgroup: Option<Spanned<String>>,
    file: Option<Spanned<String>>,
    size: Option<Spanned<String>>,
    block_size: Option<Spanned<String>>,
    fsync: Option<Spanned<bool>>,
    duration: Option<Spanned<String>>,
    hold: Option<Spanned<String>>,
    task: Option<Spanned<String>>,
    to: Option<Spanned<String>>,
    anon: Option<Spanned<String>>,
    dirty: Option<Spanned<bool>>,
    write: Option<Spanned<String>>,
    count: Option<Spanned<u32>>,
    clients: Option<Spanned<u32>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAntagonist {
    kind: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCheck {
    kind: Spanned<String>,
    cgroup: Option<Spanned<String>>,
    counters: Option<Spanned<Vec<String>>>,
    within: Option<Spanned<String>>,
    bound: Option<Spanned<String>>,
    phase: Option<Spanned<String>>,
    baseline: Option<Spanned<String>>,
    min_ratio: Option<Spanned<f64>>,
    vmstat: Option<Spanned<String>>,
    min: Option<Spanned<i64>>,
    what: Option<Spanned<String>>,
    after: Option<Spanned<Vec<String>>>,
    during: Option<Spanned<Vec<String>>>,
    parent: Option<Spanned<String>>,
    global: Option<Spanned<Vec<String>>>,
    counter: Option<Spanned<String>>,
    step: Option<Spanned<String>>,
    by: Option<Spanned<String>>,
    tolerance: Option<Spanned<String>>,
    needs: Option<Spanned<String>>,
    inside: Option<Spanned<String>>,
    outside: Option<Spanned<String>>,
    from: Option<Spanned<String>>,
    to: Option<Spanned<String>>,
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
    /// Swap enabled (an entry in /proc/swaps); `memcgtest vm` gives its guests a swap file.
    Swap,
}

impl Feature {
    const ALL: &'static [(&'static str, Feature)] = &[
        ("compaction", Feature::Compaction),
        ("vm-events", Feature::VmEvents),
        ("swap", Feature::Swap),
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

/// A cgroup the scenario creates, named by its path below the scenario's directory ("a" or "a/b").
#[derive(Debug, Clone, Serialize)]
pub struct CgroupSpec {
    pub name: String,
    pub limit: Option<u64>,
    /// v1 memory.move_charge_at_immigrate (1 anon, 2 mapped file, 3 both) of this group, the
    /// destination of a move.
    pub move_charge: Option<u32>,
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
    /// Start task `task` in `cgroup` holding `anon` bytes of touched anonymous memory and, with
    /// `file`, a shared mapping of `size` bytes of it (pages dirtied when `dirty`, else read); with
    /// `write`, it keeps rewriting that many bytes of `<file>.written` in the background.
    Hold {
        task: String,
        cgroup: String,
        anon: u64,
        file: Option<String>,
        size: u64,
        dirty: bool,
        write: u64,
    },
    /// Move the task to cgroup `to` (its pid into cgroup.procs), timing the write.
    Move { task: String, to: String },
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
    /// (POSIX_FADV_DONTNEED first) in 1 MiB reads; measured: total bytes over the slowest reader.
    Read {
        cgroup: String,
        file: String,
        count: u32,
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
}

/// "per-CPU" for 0 clients, else the number.
fn clients_text(clients: u32) -> String {
    if clients == 0 {
        "per-CPU".to_string()
    } else {
        clients.to_string()
    }
}

impl Step {
    pub fn describe(&self) -> String {
        match self {
            Step::Write { size, file, .. } => {
                format!(
                    "write {} to {file}",
                    crate::units::human_bytes(*size as i64)
                )
            }
            Step::Sync => "sync".into(),
            Step::Fsync { file, .. } => format!("fsync {file}"),
            Step::Sleep(d) => format!("sleep {d:?}"),
            Step::Truncate { file, size, .. } => format!("truncate {file} to {size}"),
            Step::Unlink { file, .. } => format!("unlink {file}"),
            Step::MmapWrite { size, file, .. } => {
                format!(
                    "dirty {} of {file} through mmap",
                    crate::units::human_bytes(*size as i64)
                )
            }
            Step::Probe { size, .. } => {
                format!(
                    "dirty probe: write {} with writeback held off",
                    crate::units::human_bytes(*size as i64)
                )
            }
            Step::Hold {
                task,
                cgroup,
                anon,
                file,
                size,
                dirty,
                write,
            } => {
                let hb = |b: u64| crate::units::human_bytes(b as i64);
                let mut d = format!("task {task} in {cgroup} holds {} anon", hb(*anon));
                if let Some(f) = file {
                    if *size > 0 {
                        d += &format!(
                            ", {} of {f} mapped{}",
                            hb(*size),
                            if *dirty { " and dirtied" } else { "" }
                        );
                    }
                    if *write > 0 {
                        d += &format!(", rewriting {} of {f}.written", hb(*write));
                    }
                }
                d
            }
            Step::Move { task, to } => format!("move task {task} to {to}"),
            Step::Grow { task, anon } => format!(
                "task {task} allocates {} more",
                crate::units::human_bytes(*anon as i64)
            ),
            Step::Wait { task } => format!("stop task {task}'s writer"),
            Step::Release { task } => format!("task {task} exits"),
            Step::Create { file, size, count } => format!(
                "create {count} files {file}.N of {}",
                crate::units::human_bytes(*size as i64)
            ),
            Step::Read {
                cgroup,
                file,
                count,
            } => format!("{count} readers of {file}.N in {cgroup}, cold cache"),
            Step::Fault {
                cgroup,
                size,
                clients,
                duration,
            } => format!(
                "{} fault clients in {cgroup}, {} regions, {duration:?}",
                clients_text(*clients),
                crate::units::human_bytes(*size as i64)
            ),
            Step::Usemem {
                cgroup,
                size,
                clients,
            } => format!(
                "usemem: {} clients in {cgroup} write {} of fresh anonymous memory",
                clients_text(*clients),
                crate::units::human_bytes(*size as i64)
            ),
        }
    }

    /// The group the step's workload runs in, if it names one.
    pub fn cgroup(&self) -> Option<&str> {
        match self {
            Step::Write { cgroup, .. }
            | Step::Fsync { cgroup, .. }
            | Step::Truncate { cgroup, .. }
            | Step::Unlink { cgroup, .. }
            | Step::MmapWrite { cgroup, .. }
            | Step::Probe { cgroup, .. }
            | Step::Hold { cgroup, .. }
            | Step::Read { cgroup, .. }
            | Step::Fault { cgroup, .. }
            | Step::Usemem { cgroup, .. } => Some(cgroup),
            Step::Move { to, .. } => Some(to),
            _ => None,
        }
    }

    /// The kind name used in records and in checks' `after`/`during` lists.
    pub fn kind(&self) -> &'static str {
        match self {
            Step::Write { .. } => "write",
            Step::Sync => "sync",
            Step::Fsync { .. } => "fsync",
            Step::Sleep(_) => "sleep",
            Step::Truncate { .. } => "truncate",
            Step::Unlink { .. } => "unlink",
            Step::MmapWrite { .. } => "mmap-write",
            Step::Probe { .. } => "probe",
            Step::Hold { .. } => "hold",
            Step::Move { .. } => "move",
            Step::Grow { .. } => "grow",
            Step::Wait { .. } => "wait",
            Step::Release { .. } => "release",
            Step::Create { .. } => "create",
            Step::Read { .. } => "read",
            Step::Fault { .. } => "fault",
            Step::Usemem { .. } => "usemem",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Antagonist {
    /// Writes 1 to /proc/sys/vm/compact_memory in a loop, forcing page migration.
    Compaction,
}

#[derive(Debug, Clone)]
pub struct Phase {
    pub name: String,
    /// How many times the steps run in a row; measurements keep one sample per repetition.
    pub repeat: u32,
    /// Runs to bring the machine to speed (first-touch faults, cold caches); measures nothing.
    pub warmup: bool,
    pub steps: Vec<Step>,
    pub antagonists: Vec<Antagonist>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    /// No sampled value of these counters is ever negative (old kernels print underflow).
    NoUnderflow {
        cgroup: String,
        counters: Vec<String>,
    },
    /// After each step of a kind in `after` (default: sync), the counters fall to at most `bound`
    /// (default: the per-CPU stat batch) within `within`.
    Settles {
        cgroup: String,
        counters: Vec<String>,
        within: Duration,
        bound: Option<u64>,
        after: Vec<String>,
    },
    /// During steps of the kinds in `during`, the rise of the group's counters (summed) follows the
    /// rise of the global /proc/vmstat counters (summed, pages), sample by sample.
    TracksGlobal {
        cgroup: String,
        counters: Vec<String>,
        global: Vec<String>,
        during: Vec<String>,
        /// Only steps of this phase.
        phase: Option<String>,
    },
    /// After each probe step, the group's dirty + writeback equals the bytes the probe wrote.
    DirtyProbe { cgroup: String },
    /// The parent's hierarchical counter equals its own plus its children's (v1), or the sum of its
    /// children's (v2), at every sample.
    Hierarchy {
        parent: String,
        counters: Vec<String>,
    },
    /// The values the counters settle to after each sync do not creep upward over the cycles.
    NoRatchet {
        cgroup: String,
        counters: Vec<String>,
        bound: Option<u64>,
    },
    /// The group's counter was seen above 0 while the global one was (e.g. writeback happened
    /// and was accounted); no global activity at all makes the scenario `skip`.
    Observed {
        cgroup: String,
        counters: Vec<String>,
        global: Vec<String>,
    },
    /// Write throughput of `phase` is at least `min_ratio` times that of `baseline`.
    Throughput {
        phase: String,
        baseline: String,
        min_ratio: f64,
    },
    /// Across each step of kind `step`, the group's counter changed by `by` bytes (+- tolerance).
    /// With `needs_moving`, the check is not exercised where the kernel cannot move charges.
    Change {
        cgroup: String,
        counter: String,
        step: String,
        by: i64,
        tolerance: Option<u64>,
        needs_moving: bool,
    },
    /// Across each step of kind `step`, all of `from`'s counter moves to `to`: `from` ends near 0
    /// and `to` rises by what `from` had.
    Follows {
        from: String,
        to: String,
        counter: String,
        step: String,
        needs_moving: bool,
    },
    /// Paired A/B: the rate of `step` steps in `inside` is at least `min_ratio` times that in
    /// `outside` (medians), unless the sample sets overlap (then the difference is noise).
    Ratio {
        step: String,
        inside: String,
        outside: String,
        min_ratio: f64,
        /// Only steps of this phase.
        phase: Option<String>,
    },
    /// /proc/vmstat `vmstat` rose by at least `min` during `phase`: the antagonist did its job.
    /// Otherwise the scenario is `skip`, never `pass`.
    Exercised {
        phase: String,
        vmstat: String,
        min: i64,
        what: String,
    },
}

impl Check {
    pub fn name(&self) -> String {
        match self {
            Check::NoUnderflow { cgroup, .. } => format!("no-underflow({cgroup})"),
            Check::Settles { cgroup, .. } => format!("settles({cgroup})"),
            Check::Throughput {
                phase, baseline, ..
            } => format!("throughput({phase}/{baseline})"),
            Check::Exercised { phase, vmstat, .. } => format!("exercised({phase}: {vmstat})"),
            Check::TracksGlobal { cgroup, .. } => format!("tracks-global({cgroup})"),
            Check::DirtyProbe { cgroup } => format!("dirty-probe({cgroup})"),
            Check::Hierarchy { parent, .. } => format!("hierarchy({parent})"),
            Check::NoRatchet { cgroup, .. } => format!("no-ratchet({cgroup})"),
            Check::Observed {
                cgroup, counters, ..
            } => format!("observed({cgroup}: {})", counters.join("+")),
            Check::Change {
                cgroup,
                counter,
                step,
                ..
            } => format!("change({cgroup}.{counter} at {step})"),
            Check::Follows {
                from,
                to,
                counter,
                step,
                ..
            } => format!("follows({from} -> {to}: {counter} at {step})"),
            Check::Ratio {
                step,
                inside,
                outside,
                phase,
                ..
            } => match phase {
                Some(p) => format!("ratio({p}: {step} {inside}/{outside})"),
                None => format!("ratio({step}: {inside}/{outside})"),
            },
        }
    }
}

/// What the sampler reads: counters of every scenario cgroup, and /proc/vmstat keys.
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
    /// vm sysctls (name without "vm.", value) set for the scenario and restored afterwards.
    pub sysctls: Vec<(String, String)>,
    /// Where it was read from ("builtin:NAME.toml" or a path).
    pub source: String,
}

impl Scenario {
    /// Scales sizes and limits down for smoke runs on slow machines; checks stay as they are,
    /// except the expected change of a `change` check, which follows the sizes.
    pub fn scale_down(&mut self, divisor: u64) {
        for c in &mut self.checks {
            if let Check::Change { by, .. } = c {
                *by /= divisor as i64;
            }
        }
        for c in &mut self.cgroups {
            c.limit = c.limit.map(|l| (l / divisor).max(16 << 20));
        }
        for p in &mut self.phases {
            for s in &mut p.steps {
                match s {
                    Step::Write {
                        size, block_size, ..
                    } => *size = (*size / divisor).max(*block_size),
                    Step::Hold {
                        anon, size, write, ..
                    } => {
                        *anon /= divisor;
                        *size /= divisor;
                        *write /= divisor;
                    }
                    Step::Grow { anon, .. } => *anon /= divisor,
                    Step::Create { size, .. } => *size = (*size / divisor).max(1 << 20),
                    Step::Fault { duration, .. } => *duration /= divisor as u32,
                    Step::Usemem { size, .. } => *size = (*size / divisor).max(1 << 20),
                    _ => {}
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing and validation.

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn err(&self, span: std::ops::Range<usize>, msg: impl Into<String>) -> ScenarioError {
        let (line, col) = line_col(self.text, span.start);
        ScenarioError {
            file: self.file.to_string(),
            line,
            col,
            msg: msg.into(),
        }
    }
    /// A size of at most `MAX_SIZE` (1 TiB: no memcg test writes or holds more, and sums of
    /// sizes cannot overflow).
    fn size(&self, s: &Spanned<String>) -> Result<u64, ScenarioError> {
        match parse_size(s.get_ref()).map_err(|m| self.err(s.span(), m))? {
            n if n > MAX_SIZE => {
                Err(self.err(s.span(), format!("{:?} is more than 1 TiB", s.get_ref())))
            }
            n => Ok(n),
        }
    }
    /// A size that must not be 0 (`key` names it in the message).
    fn positive_size(&self, s: &Spanned<String>, key: &str) -> Result<u64, ScenarioError> {
        match self.size(s)? {
            0 => Err(self.err(s.span(), format!("{key} must be more than 0"))),
            n => Ok(n),
        }
    }
    /// Any duration: at most a day.
    fn duration(&self, s: &Spanned<String>) -> Result<Duration, ScenarioError> {
        self.duration_within(s, Duration::ZERO)
    }
    /// A duration of at least `min` and at most a day.
    fn duration_within(
        &self,
        s: &Spanned<String>,
        min: Duration,
    ) -> Result<Duration, ScenarioError> {
        parse_duration_within(s.get_ref(), min).map_err(|m| self.err(s.span(), m))
    }
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, col)
}

/// Parses and validates one scenario file's text. `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    let cx = Ctx { file, text };
    let raw: RawScenario = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        cx.err(span, e.message().trim().to_string())
    })?;
    resolve(&cx, raw)
}

fn resolve(cx: &Ctx, raw: RawScenario) -> Result<Scenario, ScenarioError> {
    let name = raw.name.get_ref().clone();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(cx.err(raw.name.span(), "name must be non-empty [A-Za-z0-9_-]"));
    }

    let mut cgroup_versions = Vec::new();
    for v in &raw.requires.cgroup {
        cgroup_versions.push(match v.get_ref().as_str() {
            "v1" => Version::V1,
            "v2" => Version::V2,
            other => {
                return Err(cx.err(
                    v.span(),
                    format!("unknown cgroup version {other:?} (v1, v2)"),
                ));
            }
        });
    }
    if cgroup_versions.is_empty() {
        cgroup_versions = vec![Version::V1, Version::V2];
    }
    let mut features = Vec::new();
    for f in &raw.requires.features {
        let feat = Feature::ALL
            .iter()
            .find(|(n, _)| n == f.get_ref())
            .map(|(_, f)| *f)
            .ok_or_else(|| {
                let names: Vec<_> = Feature::ALL.iter().map(|(n, _)| *n).collect();
                cx.err(
                    f.span(),
                    format!(
                        "unknown feature {:?} (known: {})",
                        f.get_ref(),
                        names.join(", ")
                    ),
                )
            })?;
        features.push(feat);
    }

    let mut cgroups: Vec<CgroupSpec> = Vec::new();
    for c in &raw.cgroup {
        let n = &c.get_ref().name;
        let nm = n.get_ref();
        let valid_part = |p: &str| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        };
        if !nm.split('/').all(valid_part) {
            return Err(cx.err(
                n.span(),
                "cgroup name must be [A-Za-z0-9_-] parts joined by '/'",
            ));
        }
        if nm.split('/').next() == Some(HELPER_GROUP) {
            return Err(cx.err(
                n.span(),
                format!("cgroup {nm:?}: {HELPER_GROUP:?} is the runner's helper group; pick another name"),
            ));
        }
        if cgroups.iter().any(|x| &x.name == nm) {
            return Err(cx.err(n.span(), format!("cgroup {nm:?} declared twice")));
        }
        if let Some((parent, _)) = nm.rsplit_once('/')
            && !cgroups.iter().any(|x| x.name == parent)
        {
            return Err(cx.err(
                n.span(),
                format!("parent cgroup {parent:?} must be declared before {nm:?}"),
            ));
        }
        let limit = c
            .get_ref()
            .limit
            .as_ref()
            .map(|l| cx.positive_size(l, "limit"))
            .transpose()?;
        let move_charge = match &c.get_ref().move_charge {
            Some(m) if *m.get_ref() > 3 => {
                return Err(cx.err(m.span(), "move_charge must be 0..3 (1 anon, 2 mapped file)"));
            }
            Some(m) if cgroup_versions.contains(&Version::V2) => {
                return Err(cx.err(
                    m.span(),
                    "move_charge is a cgroup v1 setting: add requires.cgroup = [\"v1\"]",
                ));
            }
            Some(m) => Some(*m.get_ref()),
            None => None,
        };
        cgroups.push(CgroupSpec {
            name: nm.clone(),
            limit,
            move_charge,
        });
    }
    let cgroup_ref = |s: &Option<Spanned<String>>,
                      at: std::ops::Range<usize>|
     -> Result<String, ScenarioError> {
        match s {
            Some(s) if cgroups.iter().any(|c| &c.name == s.get_ref()) => Ok(s.get_ref().clone()),
            Some(s) => Err(cx.err(
                s.span(),
                format!("no cgroup named {:?} is declared", s.get_ref()),
            )),
            None if cgroups.len() == 1 => Ok(cgroups[0].name.clone()),
            None => Err(cx.err(
                at,
                "which cgroup? add cgroup = \"...\" (more than one is declared)",
            )),
        }
    };

    let mut phases = Vec::new();
    for p in &raw.phase {
        let rp = p.get_ref();
        if !is_name(rp.name.get_ref()) {
            return Err(cx.err(rp.name.span(), "phase name must be non-empty [A-Za-z0-9_-]"));
        }
        if phases.iter().any(|x: &Phase| &x.name == rp.name.get_ref()) {
            return Err(cx.err(
                rp.name.span(),
                format!("phase {:?} declared twice", rp.name.get_ref()),
            ));
        }
        let mut steps = Vec::new();
        for s in &rp.steps {
            steps.push(resolve_step(cx, s, &cgroup_ref)?);
        }
        if steps.is_empty() {
            return Err(cx.err(p.span(), "a phase needs at least one step"));
        }
        let mut antagonists = Vec::new();
        for a in &rp.antagonists {
            let k = &a.get_ref().kind;
            antagonists.push(match k.get_ref().as_str() {
                "compaction" => Antagonist::Compaction,
                other => {
                    return Err(cx.err(
                        k.span(),
                        format!("unknown antagonist {other:?} (known: compaction)"),
                    ));
                }
            });
        }
        let repeat = match &rp.repeat {
            Some(r) if *r.get_ref() == 0 || *r.get_ref() > 100 => {
                return Err(cx.err(r.span(), "repeat must be 1..100"));
            }
            Some(r) => *r.get_ref(),
            None => 1,
        };
        phases.push(Phase {
            name: rp.name.get_ref().clone(),
            repeat,
            warmup: rp.warmup,
            steps,
            antagonists,
        });
    }
    if phases.is_empty() {
        return Err(cx.err(0..0, "a scenario needs at least one [[phase]]"));
    }
    check_tasks(cx, &raw, &phases)?;

    let mut counters: Vec<String> = Vec::new();
    for c in &raw.sample.counters {
        check_counter(cx, c.get_ref(), c.span(), &cgroup_versions)?;
        if !counters.contains(c.get_ref()) {
            counters.push(c.get_ref().clone());
        }
    }
    let mut vmstat: Vec<String> = Vec::new();
    for v in &raw.sample.vmstat {
        vmstat.push(vmstat_key(cx, v)?);
    }

    let mut checks = Vec::new();
    for c in &raw.check {
        let chk = resolve_check(cx, c, &cgroup_ref, &phases, &cgroup_versions)?;
        // Whatever a check looks at is sampled, without repeating it under [sample].
        let (cs, vs): (Vec<String>, Vec<String>) = match &chk {
            Check::NoUnderflow { counters, .. }
            | Check::Settles { counters, .. }
            | Check::Hierarchy { counters, .. }
            | Check::NoRatchet { counters, .. } => (counters.clone(), vec![]),
            Check::TracksGlobal {
                counters, global, ..
            }
            | Check::Observed {
                counters, global, ..
            } => (counters.clone(), global.clone()),
            Check::DirtyProbe { .. } => (
                DIRTY_WRITEBACK.map(String::from).to_vec(),
                vec!["nr_dirty".into(), "nr_writeback".into()],
            ),
            Check::Exercised { vmstat, .. } => (vec![], vec![vmstat.clone()]),
            Check::Change { counter, .. } => (vec![counter.clone()], vec![]),
            Check::Ratio { .. } => (vec![], vec![]),
            Check::Follows { counter, .. } => (vec![counter.clone()], vec![]),
            Check::Throughput { .. } => (vec![], vec![]),
        };
        for x in cs {
            if !counters.contains(&x) {
                counters.push(x);
            }
        }
        for v in vs {
            if !vmstat.contains(&v) {
                vmstat.push(v);
            }
        }
        checks.push(chk);
    }

    let interval = match &raw.sample.interval {
        Some(i) => cx.duration_within(i, MIN_INTERVAL)?,
        None => Duration::from_millis(10),
    };
    let timeout = match &raw.timeout {
        Some(t) => cx.duration_within(t, MIN_INTERVAL)?,
        None => Duration::from_secs(300),
    };
    if phases
        .iter()
        .flat_map(|p| &p.steps)
        .any(|s| matches!(s, Step::Write { .. }))
        && !raw.requires.writeback
    {
        return Err(cx.err(
            0..0,
            "a scenario with write steps must say requires.writeback = true",
        ));
    }

    let mut sysctls = Vec::new();
    for (k, v) in &raw.sysctl {
        let Some(short) = k.strip_prefix("vm.") else {
            return Err(cx.err(
                v.span(),
                format!("sysctl {k:?}: only vm.* sysctls may be set"),
            ));
        };
        if short.is_empty() || !short.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(cx.err(v.span(), format!("bad sysctl name {k:?}")));
        }
        sysctls.push((short.to_string(), sysctl_value(cx, short, v)?));
    }

    Ok(Scenario {
        name,
        sysctls,
        summary: one_line(cx, &raw.summary, "summary")?,
        description: raw.description,
        origin: raw.origin,
        requires: Requires {
            cgroup: cgroup_versions,
            writeback: raw.requires.writeback,
            features,
        },
        timeout,
        cgroups,
        sample: SampleSpec {
            interval,
            counters,
            vmstat,
        },
        phases,
        checks,
        source: cx.file.to_string(),
    })
}

/// A `[sysctl]` value as it will be written to /proc/sys/vm/`key`: a non-negative integer, or for
/// `*_bytes` keys a size ("64M", written as bytes), within what the kernel accepts for the key
/// (dirty_bytes at least two pages, dirty_background_bytes at least 1, `*_ratio` at most 100).
/// No sign, no whitespace: "16 32" or a newline would write something else than meant.
fn sysctl_value(cx: &Ctx, key: &str, v: &Spanned<String>) -> Result<String, ScenarioError> {
    let bad = |why: String| Err(cx.err(v.span(), format!("sysctl vm.{key}: {why}")));
    let text = v.get_ref();
    if text.is_empty() || text.chars().any(|c| c.is_whitespace()) {
        return bad(format!("{text:?} must be one number without spaces"));
    }
    let n = if key.ends_with("_bytes") {
        match parse_size(text) {
            Ok(n) => n,
            Err(m) => return bad(m),
        }
    } else if text.chars().all(|c| c.is_ascii_digit()) {
        match text.parse::<u64>() {
            Ok(n) => n,
            Err(_) => return bad(format!("{text:?} is too large")),
        }
    } else {
        return bad(format!("{text:?} is not a non-negative integer"));
    };
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    let min = match key {
        "dirty_bytes" => 2 * page,
        "dirty_background_bytes" => 1,
        _ => 0,
    };
    if n < min {
        return bad(format!("the kernel refuses less than {min}"));
    }
    if key.ends_with("_ratio") && n > 100 {
        return bad("a ratio is a percentage, at most 100".into());
    }
    Ok(n.to_string())
}

/// A name as reports print it: non-empty [A-Za-z0-9_-].
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Free text that reaches reports (KTAP diagnostics, one line each): no control characters (a
/// newline would forge KTAP lines such as `ok 1 forged-pass`), at most 200 characters.
fn one_line(cx: &Ctx, s: &Spanned<String>, key: &str) -> Result<String, ScenarioError> {
    let t = s.get_ref();
    if t.chars().any(char::is_control) {
        return Err(cx.err(
            s.span(),
            format!("{key} must be one line without control characters"),
        ));
    }
    if t.chars().count() > 200 {
        return Err(cx.err(s.span(), format!("{key} is longer than 200 characters")));
    }
    Ok(t.clone())
}

/// A /proc/vmstat key: [a-z0-9_].
fn vmstat_key(cx: &Ctx, s: &Spanned<String>) -> Result<String, ScenarioError> {
    let t = s.get_ref();
    if t.is_empty()
        || !t
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        return Err(cx.err(
            s.span(),
            format!("{t:?} is not a /proc/vmstat key ([a-z0-9_])"),
        ));
    }
    Ok(t.clone())
}

fn check_counter(
    cx: &Ctx,
    name: &str,
    span: std::ops::Range<usize>,
    versions: &[Version],
) -> Result<(), ScenarioError> {
    for v in versions {
        stat::stat_key(name, *v).map_err(|m| cx.err(span.clone(), m))?;
    }
    Ok(())
}

type CgroupRef<'a> =
    dyn Fn(&Option<Spanned<String>>, std::ops::Range<usize>) -> Result<String, ScenarioError> + 'a;

fn resolve_step(
    cx: &Ctx,
    s: &Spanned<RawStep>,
    cgroup_ref: &CgroupRef,
) -> Result<Step, ScenarioError> {
    let r = s.get_ref();
    let action = r.action.get_ref().as_str();
    // Which keys each action takes; anything else set is an error at that key.
    let allowed: &[&str] = match action {
        "write" => &["cgroup", "file", "size", "block_size", "fsync"],
        "sync" => &[],
        "fsync" | "unlink" => &["cgroup", "file"],
        "truncate" => &["cgroup", "file", "size"],
        "sleep" => &["duration"],
        "mmap-write" => &["cgroup", "file", "size", "hold"],
        "probe" => &["cgroup", "file", "size"],
        "hold" => &["task", "cgroup", "anon", "file", "size", "dirty", "write"],
        "move" => &["task", "to"],
        "grow" => &["task", "anon"],
        "wait" | "release" => &["task"],
        "create" => &["file", "size", "count"],
        "read" => &["cgroup", "file", "count"],
        "fault" => &["cgroup", "size", "clients", "duration"],
        "usemem" => &["cgroup", "size", "clients"],
        other => {
            return Err(cx.err(
                r.action.span(),
                format!(
                    "unknown action {other:?} (known: write, sync, fsync, sleep, truncate, unlink, mmap-write, probe, hold, move, grow, wait, release, create, read, fault, usemem)"
                ),
            ));
        }
    };
    let present: [(&str, Option<std::ops::Range<usize>>); 14] = [
        ("cgroup", r.cgroup.as_ref().map(|x| x.span())),
        ("file", r.file.as_ref().map(|x| x.span())),
        ("size", r.size.as_ref().map(|x| x.span())),
        ("block_size", r.block_size.as_ref().map(|x| x.span())),
        ("fsync", r.fsync.as_ref().map(|x| x.span())),
        ("duration", r.duration.as_ref().map(|x| x.span())),
        ("hold", r.hold.as_ref().map(|x| x.span())),
        ("task", r.task.as_ref().map(|x| x.span())),
        ("to", r.to.as_ref().map(|x| x.span())),
        ("anon", r.anon.as_ref().map(|x| x.span())),
        ("dirty", r.dirty.as_ref().map(|x| x.span())),
        ("write", r.write.as_ref().map(|x| x.span())),
        ("count", r.count.as_ref().map(|x| x.span())),
        ("clients", r.clients.as_ref().map(|x| x.span())),
    ];
    for (key, span) in present {
        if let Some(span) = span
            && !allowed.contains(&key)
        {
            return Err(cx.err(span, format!("action {action:?} takes no {key:?}")));
        }
    }
    let need = |v: &Option<Spanned<String>>, key: &str| -> Result<Spanned<String>, ScenarioError> {
        v.clone()
            .ok_or_else(|| cx.err(s.span(), format!("action {action:?} needs {key:?}")))
    };
    let file_name = |f: &Option<Spanned<String>>| -> Result<String, ScenarioError> {
        let f = f
            .clone()
            .unwrap_or_else(|| Spanned::new(0..0, "data".to_string()));
        let ok = !f.get_ref().is_empty()
            && f.get_ref()
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && !f.get_ref().starts_with('.');
        if ok {
            Ok(f.get_ref().clone())
        } else {
            Err(cx.err(
                f.span(),
                "file must be a plain name inside the scratch directory",
            ))
        }
    };
    Ok(match action {
        "write" => {
            let size = cx.positive_size(&need(&r.size, "size")?, "size")?;
            let block_size = match &r.block_size {
                Some(b) => cx.size(b)?,
                None => 1 << 20,
            };
            if block_size == 0 || block_size > 64 << 20 {
                return Err(cx.err(
                    r.block_size.as_ref().unwrap().span(),
                    "block_size must be 1..64M",
                ));
            }
            Step::Write {
                cgroup: cgroup_ref(&r.cgroup, s.span())?,
                file: file_name(&r.file)?,
                size,
                block_size,
                fsync: r.fsync.as_ref().map(|f| *f.get_ref()).unwrap_or(false),
            }
        }
        "sync" => Step::Sync,
        "fsync" => Step::Fsync {
            cgroup: cgroup_ref(&r.cgroup, s.span())?,
            file: file_name(&r.file)?,
        },
        "sleep" => Step::Sleep(cx.duration(&need(&r.duration, "duration")?)?),
        "truncate" => Step::Truncate {
            cgroup: cgroup_ref(&r.cgroup, s.span())?,
            file: file_name(&r.file)?,
            size: r
                .size
                .as_ref()
                .map(|x| cx.size(x))
                .transpose()?
                .unwrap_or(0),
        },
        "unlink" => Step::Unlink {
            cgroup: cgroup_ref(&r.cgroup, s.span())?,
            file: file_name(&r.file)?,
        },
        "mmap-write" => Step::MmapWrite {
            cgroup: cgroup_ref(&r.cgroup, s.span())?,
            file: file_name(&r.file)?,
            size: cx.positive_size(&need(&r.size, "size")?, "size")?,
            hold: r
                .hold
                .as_ref()
                .map(|h| cx.duration(h))
                .transpose()?
                .unwrap_or(Duration::from_secs(1)),
        },
        "probe" => Step::Probe {
            cgroup: cgroup_ref(&r.cgroup, s.span())?,
            file: r
                .file
                .as_ref()
                .map(|_| file_name(&r.file))
                .transpose()?
                .unwrap_or_else(|| "probe".into()),
            size: cx.positive_size(&need(&r.size, "size")?, "size")?,
        },
        "hold" => {
            let size = r
                .size
                .as_ref()
                .map(|x| cx.size(x))
                .transpose()?
                .unwrap_or(0);
            let write = r
                .write
                .as_ref()
                .map(|x| cx.size(x))
                .transpose()?
                .unwrap_or(0);
            if (size > 0 || write > 0) && r.file.is_none() {
                return Err(cx.err(s.span(), "a hold with size or write needs a file"));
            }
            let anon = r
                .anon
                .as_ref()
                .map(|x| cx.size(x))
                .transpose()?
                .unwrap_or(0);
            if anon == 0 && size == 0 && write == 0 {
                return Err(cx.err(
                    s.span(),
                    "a hold must hold something: anon, size or write more than 0",
                ));
            }
            Step::Hold {
                task: task_name(cx, &need(&r.task, "task")?)?,
                cgroup: cgroup_ref(&r.cgroup, s.span())?,
                anon,
                file: r.file.as_ref().map(|_| file_name(&r.file)).transpose()?,
                size,
                dirty: r.dirty.as_ref().map(|d| *d.get_ref()).unwrap_or(false),
                write,
            }
        }
        "move" => {
            let to = need(&r.to, "to")?;
            Step::Move {
                task: task_name(cx, &need(&r.task, "task")?)?,
                to: cgroup_ref(&Some(to), s.span())?,
            }
        }
        "grow" => Step::Grow {
            task: task_name(cx, &need(&r.task, "task")?)?,
            anon: cx.positive_size(&need(&r.anon, "anon")?, "anon")?,
        },
        "wait" => Step::Wait {
            task: task_name(cx, &need(&r.task, "task")?)?,
        },
        "release" => Step::Release {
            task: task_name(cx, &need(&r.task, "task")?)?,
        },
        "create" | "read" => {
            let count = match &r.count {
                Some(c) if *c.get_ref() == 0 || *c.get_ref() > 64 => {
                    return Err(cx.err(c.span(), "count must be 1..64"));
                }
                Some(c) => *c.get_ref(),
                None => 1,
            };
            if action == "create" {
                Step::Create {
                    file: file_name(&r.file)?,
                    size: cx.positive_size(&need(&r.size, "size")?, "size")?,
                    count,
                }
            } else {
                Step::Read {
                    cgroup: cgroup_ref(&r.cgroup, s.span())?,
                    file: file_name(&r.file)?,
                    count,
                }
            }
        }
        "fault" | "usemem" => {
            let clients = match &r.clients {
                Some(c) if *c.get_ref() > 64 => {
                    return Err(cx.err(c.span(), "clients must be 0..64 (0: one per CPU)"));
                }
                Some(c) => *c.get_ref(),
                None => 1,
            };
            let size = cx.size(&need(&r.size, "size")?)?;
            if size < 4096 {
                return Err(cx.err(r.size.as_ref().unwrap().span(), "size must be at least 4K"));
            }
            if action == "usemem" {
                Step::Usemem {
                    cgroup: cgroup_ref(&r.cgroup, s.span())?,
                    size,
                    clients,
                }
            } else {
                Step::Fault {
                    cgroup: cgroup_ref(&r.cgroup, s.span())?,
                    size,
                    clients,
                    duration: cx.duration_within(&need(&r.duration, "duration")?, MIN_INTERVAL)?,
                }
            }
        }
        _ => unreachable!(),
    })
}

fn task_name(cx: &Ctx, t: &Spanned<String>) -> Result<String, ScenarioError> {
    let ok = !t.get_ref().is_empty()
        && t.get_ref()
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(t.get_ref().clone())
    } else {
        Err(cx.err(t.span(), "task name must be [A-Za-z0-9_-]"))
    }
}

/// Tasks must be held before they are used, and not held twice while alive; a phase that holds
/// a task cannot repeat.
fn check_tasks(cx: &Ctx, raw: &RawScenario, phases: &[Phase]) -> Result<(), ScenarioError> {
    let mut alive: Vec<String> = Vec::new();
    for (p, rp) in phases.iter().zip(&raw.phase) {
        for (st, rs) in p.steps.iter().zip(&rp.get_ref().steps) {
            match st {
                Step::Hold { task, .. } => {
                    if p.repeat > 1 {
                        return Err(cx.err(rs.span(), "a phase that holds a task cannot repeat"));
                    }
                    if alive.contains(task) {
                        return Err(cx.err(rs.span(), format!("task {task:?} is already held")));
                    }
                    alive.push(task.clone());
                }
                Step::Move { task, .. }
                | Step::Grow { task, .. }
                | Step::Wait { task }
                | Step::Release { task }
                    if !alive.contains(task) =>
                {
                    return Err(cx.err(rs.span(), format!("no task {task:?} is held here")));
                }
                Step::Release { task } => alive.retain(|t| t != task),
                _ => {}
            }
        }
    }
    Ok(())
}

fn resolve_check(
    cx: &Ctx,
    c: &Spanned<RawCheck>,
    cgroup_ref: &CgroupRef,
    phases: &[Phase],
    versions: &[Version],
) -> Result<Check, ScenarioError> {
    let r = c.get_ref();
    let kind = r.kind.get_ref().as_str();
    let need = |present: bool, key: &str| -> Result<(), ScenarioError> {
        if present {
            Ok(())
        } else {
            Err(cx.err(c.span(), format!("check {kind:?} needs {key:?}")))
        }
    };
    let phase_ref = |p: &Option<Spanned<String>>, key: &str| -> Result<String, ScenarioError> {
        need(p.is_some(), key)?;
        let p = p.as_ref().unwrap();
        if phases.iter().any(|x| &x.name == p.get_ref()) {
            Ok(p.get_ref().clone())
        } else {
            Err(cx.err(p.span(), format!("no phase named {:?}", p.get_ref())))
        }
    };
    let counters = || -> Result<Vec<String>, ScenarioError> {
        need(r.counters.is_some(), "counters")?;
        let cs = r.counters.as_ref().unwrap();
        if cs.get_ref().is_empty() {
            return Err(cx.err(cs.span(), "counters must not be empty"));
        }
        for x in cs.get_ref() {
            check_counter(cx, x, cs.span(), versions)?;
        }
        Ok(cs.get_ref().clone())
    };
    const STEP_KINDS: &[&str] = &[
        "write",
        "sync",
        "fsync",
        "sleep",
        "truncate",
        "unlink",
        "mmap-write",
        "probe",
        "hold",
        "move",
        "grow",
        "wait",
        "release",
        "create",
        "read",
        "fault",
        "usemem",
    ];
    let kinds = |v: &Option<Spanned<Vec<String>>>,
                 default: &[&str]|
     -> Result<Vec<String>, ScenarioError> {
        match v {
            None => Ok(default.iter().map(|x| x.to_string()).collect()),
            Some(v) => {
                for k in v.get_ref() {
                    if !STEP_KINDS.contains(&k.as_str()) {
                        return Err(cx.err(
                            v.span(),
                            format!("unknown step kind {k:?} (known: {})", STEP_KINDS.join(", ")),
                        ));
                    }
                }
                Ok(v.get_ref().clone())
            }
        }
    };
    let global = |default: &[&str]| -> Vec<String> {
        r.global
            .as_ref()
            .map(|g| g.get_ref().clone())
            .unwrap_or_else(|| default.iter().map(|x| x.to_string()).collect())
    };
    // `counter`, `step` and `needs` of the checks that take one of each.
    let one_counter = || -> Result<String, ScenarioError> {
        need(r.counter.is_some(), "counter")?;
        let c = r.counter.as_ref().unwrap();
        check_counter(cx, c.get_ref(), c.span(), versions)?;
        Ok(c.get_ref().clone())
    };
    let one_step = || -> Result<String, ScenarioError> {
        need(r.step.is_some(), "step")?;
        let st = r.step.as_ref().unwrap();
        Ok(kinds(
            &Some(Spanned::new(st.span(), vec![st.get_ref().clone()])),
            &[],
        )?
        .remove(0))
    };
    let needs_moving = || -> Result<bool, ScenarioError> {
        match &r.needs {
            None => Ok(false),
            Some(n) if n.get_ref() == "charge-moving" => Ok(true),
            Some(n) => Err(cx.err(
                n.span(),
                format!("unknown need {:?} (known: charge-moving)", n.get_ref()),
            )),
        }
    };
    let allowed: &[&str] = match kind {
        "no-underflow" => &["cgroup", "counters"],
        "settles" => &["cgroup", "counters", "within", "bound", "after"],
        "throughput" => &["phase", "baseline", "min_ratio"],
        "exercised" => &["phase", "vmstat", "min", "what"],
        "tracks-global" => &["cgroup", "counters", "global", "during", "phase"],
        "dirty-probe" => &["cgroup"],
        "hierarchy" => &["parent", "counters"],
        "no-ratchet" => &["cgroup", "counters", "bound"],
        "observed" => &["cgroup", "counters", "global"],
        "change" => &["cgroup", "counter", "step", "by", "tolerance", "needs"],
        "ratio" => &["step", "inside", "outside", "min_ratio", "phase"],
        "follows" => &["from", "to", "counter", "step", "needs"],
        other => {
            return Err(cx.err(
                r.kind.span(),
                format!(
                    "unknown check {other:?} (known: no-underflow, settles, throughput, exercised, tracks-global, dirty-probe, hierarchy, no-ratchet, observed, change, ratio, follows)"
                ),
            ))
        }
    };
    let present = [
        ("cgroup", r.cgroup.as_ref().map(|x| x.span())),
        ("counters", r.counters.as_ref().map(|x| x.span())),
        ("within", r.within.as_ref().map(|x| x.span())),
        ("bound", r.bound.as_ref().map(|x| x.span())),
        ("phase", r.phase.as_ref().map(|x| x.span())),
        ("baseline", r.baseline.as_ref().map(|x| x.span())),
        ("min_ratio", r.min_ratio.as_ref().map(|x| x.span())),
        ("vmstat", r.vmstat.as_ref().map(|x| x.span())),
        ("min", r.min.as_ref().map(|x| x.span())),
        ("what", r.what.as_ref().map(|x| x.span())),
        ("after", r.after.as_ref().map(|x| x.span())),
        ("during", r.during.as_ref().map(|x| x.span())),
        ("parent", r.parent.as_ref().map(|x| x.span())),
        ("global", r.global.as_ref().map(|x| x.span())),
        ("counter", r.counter.as_ref().map(|x| x.span())),
        ("step", r.step.as_ref().map(|x| x.span())),
        ("by", r.by.as_ref().map(|x| x.span())),
        ("tolerance", r.tolerance.as_ref().map(|x| x.span())),
        ("needs", r.needs.as_ref().map(|x| x.span())),
        ("inside", r.inside.as_ref().map(|x| x.span())),
        ("outside", r.outside.as_ref().map(|x| x.span())),
        ("from", r.from.as_ref().map(|x| x.span())),
        ("to", r.to.as_ref().map(|x| x.span())),
    ];
    for (key, span) in present {
        if let Some(span) = span
            && !allowed.contains(&key)
        {
            return Err(cx.err(span, format!("check {kind:?} takes no {key:?}")));
        }
    }
    Ok(match kind {
        "no-underflow" => Check::NoUnderflow {
            cgroup: cgroup_ref(&r.cgroup, c.span())?,
            counters: counters()?,
        },
        "settles" => Check::Settles {
            cgroup: cgroup_ref(&r.cgroup, c.span())?,
            counters: counters()?,
            within: match &r.within {
                Some(w) => cx.duration(w)?,
                None => Duration::from_secs(10),
            },
            bound: r.bound.as_ref().map(|b| cx.size(b)).transpose()?,
            after: kinds(&r.after, &["sync"])?,
        },
        "tracks-global" => Check::TracksGlobal {
            cgroup: cgroup_ref(&r.cgroup, c.span())?,
            counters: counters()?,
            global: global(&["nr_dirty", "nr_writeback"]),
            during: kinds(
                &r.during,
                &["write", "sync", "mmap-write", "probe", "truncate", "unlink"],
            )?,
            phase: r
                .phase
                .as_ref()
                .map(|_| phase_ref(&r.phase, "phase"))
                .transpose()?,
        },
        "dirty-probe" => Check::DirtyProbe {
            cgroup: cgroup_ref(&r.cgroup, c.span())?,
        },
        "hierarchy" => {
            need(r.parent.is_some(), "parent")?;
            Check::Hierarchy {
                parent: cgroup_ref(&r.parent, c.span())?,
                counters: counters()?,
            }
        }
        "no-ratchet" => Check::NoRatchet {
            cgroup: cgroup_ref(&r.cgroup, c.span())?,
            counters: counters()?,
            bound: r.bound.as_ref().map(|b| cx.size(b)).transpose()?,
        },
        "observed" => Check::Observed {
            cgroup: cgroup_ref(&r.cgroup, c.span())?,
            counters: counters()?,
            global: global(&["nr_writeback"]),
        },
        "throughput" => {
            let phase = phase_ref(&r.phase, "phase")?;
            let baseline = phase_ref(&r.baseline, "baseline")?;
            need(r.min_ratio.is_some(), "min_ratio")?;
            let m = r.min_ratio.as_ref().unwrap();
            if !(*m.get_ref() > 0.0 && m.get_ref().is_finite()) {
                return Err(cx.err(m.span(), "min_ratio must be a positive number"));
            }
            for p in [&phase, &baseline] {
                let ph = phases.iter().find(|x| &x.name == p).unwrap();
                if !ph.steps.iter().any(|s| matches!(s, Step::Write { .. })) {
                    return Err(cx.err(
                        c.span(),
                        format!("phase {p:?} has no write step to measure"),
                    ));
                }
            }
            Check::Throughput {
                phase,
                baseline,
                min_ratio: *m.get_ref(),
            }
        }
        "change" => {
            let counter = one_counter()?;
            let step = one_step()?;
            need(r.by.is_some(), "by")?;
            let by_s = r.by.as_ref().unwrap();
            let (sign, mag) = match by_s.get_ref().trim().strip_prefix('-') {
                Some(m) => (-1i64, m.to_string()),
                None => (1, by_s.get_ref().trim().trim_start_matches('+').to_string()),
            };
            let by = sign * cx.size(&Spanned::new(by_s.span(), mag))? as i64;
            let needs_moving = needs_moving()?;
            Check::Change {
                cgroup: cgroup_ref(&r.cgroup, c.span())?,
                counter,
                step,
                by,
                tolerance: r.tolerance.as_ref().map(|t| cx.size(t)).transpose()?,
                needs_moving,
            }
        }
        "follows" => {
            let counter = one_counter()?;
            let step = one_step()?;
            need(r.from.is_some(), "from")?;
            need(r.to.is_some(), "to")?;
            Check::Follows {
                from: cgroup_ref(&r.from, c.span())?,
                to: cgroup_ref(&r.to, c.span())?,
                counter,
                step,
                needs_moving: needs_moving()?,
            }
        }
        "ratio" => {
            let step = one_step()?;
            need(r.inside.is_some(), "inside")?;
            need(r.outside.is_some(), "outside")?;
            need(r.min_ratio.is_some(), "min_ratio")?;
            let m = r.min_ratio.as_ref().unwrap();
            if !(*m.get_ref() > 0.0 && m.get_ref().is_finite()) {
                return Err(cx.err(m.span(), "min_ratio must be a positive number"));
            }
            Check::Ratio {
                step,
                inside: cgroup_ref(&r.inside, c.span())?,
                outside: cgroup_ref(&r.outside, c.span())?,
                min_ratio: *m.get_ref(),
                phase: r
                    .phase
                    .as_ref()
                    .map(|_| phase_ref(&r.phase, "phase"))
                    .transpose()?,
            }
        }
        "exercised" => {
            need(r.vmstat.is_some(), "vmstat")?;
            if let Some(m) = &r.min
                && *m.get_ref() < 1
            {
                return Err(cx.err(
                    m.span(),
                    "min must be at least 1 (a counter always rises by 0 or more: the check could not fail)",
                ));
            }
            Check::Exercised {
                phase: phase_ref(&r.phase, "phase")?,
                vmstat: vmstat_key(cx, r.vmstat.as_ref().unwrap())?,
                min: r.min.as_ref().map(|m| *m.get_ref()).unwrap_or(1),
                what: r
                    .what
                    .as_ref()
                    .map(|w| one_line(cx, w, "what"))
                    .transpose()?
                    .unwrap_or_else(|| "the antagonist".into()),
            }
        }
        _ => unreachable!(),
    })
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

#[cfg(test)]
mod tests;
