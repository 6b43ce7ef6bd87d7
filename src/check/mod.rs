//! Checks: pure functions over a scenario's record (sampled series, phases, steps). Each returns
//! the actual value, what was expected, the tolerance and where it came from, so a failure explains
//! itself. A check whose precondition did not happen returns `NotExercised`, one the machine's
//! other processes left without a verdict `Inconclusive`; either makes the scenario `skip` when
//! the check is one the scenario exists for (`Check::purpose`), never `pass`.

use std::any::Any;

use crate::model::Column;
use crate::model::Record;
use crate::model::StepKind;
use crate::model::contract::{self, Contract, Doc};
use crate::model::error::ScenarioError;
use crate::model::source::{Key, key_table, opt, req};
use crate::model::stats;
use crate::model::units::human_bytes;
pub use crate::model::{CheckResult, Outcome};
pub use args::{CheckArgs, Outline, PhaseOutline};

/// What a check looks at, so the runner samples it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Needs {
    /// Counters sampled in every group (as scenarios name them: `dirty`, `usage`).
    pub counters: Vec<String>,
    /// Counters whose group-local value is sampled too on v1 (`<counter>.local`).
    pub local_counters: Vec<String>,
    /// /proc/vmstat keys.
    pub vmstat: Vec<String>,
    /// /proc/vmstat keys read before the group files as well as after (`nr_*` levels always
    /// are): what the node counted between two samples lies between the two reads.
    pub vmstat_pre: Vec<String>,
    /// The group whose dirty and writeback are compared with a reference: the per-file truth of
    /// its files, or the machine's totals (see `crate::oracle`).
    pub reference: Option<String>,
    /// Only the per-file truth can judge it (no machine-wide fallback): not run without
    /// cachestat(2).
    pub per_file: bool,
    /// The group whose v2 memory.numa_stat is read, summed over the nodes, just before and after
    /// its memory.stat: not run on cgroup v1 (whose numa_stat holds LRU sizes only).
    pub numa: Option<String>,
    /// The group whose tasks' own memory (/proc/PID/status of each task in its cgroup.procs) is
    /// read just before and after the group files.
    pub tasks: Option<String>,
    /// Every counter this kernel's files show, in every group (the invariants judge them all).
    pub all_counters: bool,
}

impl Needs {
    /// What an accounting check needs: the group's counters, the matching /proc/vmstat keys, and
    /// the group's reference (see `reference`).
    pub fn accounting(cgroup: &str, counters: Vec<String>, vmstat: Vec<String>) -> Needs {
        Needs {
            counters,
            vmstat,
            reference: Some(cgroup.to_string()),
            ..Needs::default()
        }
    }
}

/// The not-exercised result of a check that needs charge moving, on a kernel without it.
fn without_moving(name: &str, rec: &Record, needs_moving: bool) -> Option<CheckResult> {
    let why = rec.charge_moving.as_ref().filter(|_| needs_moving)?;
    Some(missing(
        name.to_string(),
        format!("charge moving is not available on this kernel: {why}"),
    ))
}

/// One check kind's parsed spec: everything about the kind but its parser (see `KINDS`).
pub trait CheckSpec: std::fmt::Debug + Send + Sync + SpecBase {
    /// The name results carry, e.g. `settles(test)`.
    fn name(&self) -> String;
    /// What must be sampled for it.
    fn needs(&self) -> Needs {
        Needs::default()
    }
    /// The check's verdict on a record.
    fn evaluate(&self, rec: &Record) -> CheckResult;
    /// Judged while the scenario runs (see `crate::exec` online): a failure on the record so far
    /// (the steps so far, the running one up to now) is a failure of the whole record, whatever
    /// comes after; a rule that waits for an end, a grace period or a statistic of the whole
    /// run is not.
    fn online(&self) -> bool {
        false
    }
    /// `--quick`: sizes in the scenario shrink by `divisor`; a spec that holds a size follows.
    fn scale_down(&mut self, _divisor: u64) {}
    /// It judges speed (paired rates), not accounting: in a scenario that declares other checks
    /// too it is not one the scenario exists for unless its table says `purpose = true`.
    fn performance(&self) -> bool {
        false
    }
    /// The phase a performance check judges, when it judges one: its failure there counts only
    /// when a second round of that phase repeats it, which the runner then runs. Timing under a
    /// noisy machine (an emulated CPU above all) makes a false failure of a rank rule over 5
    /// pairs a matter of chance (1 in 252 per check where the samples are exchangeable); two
    /// independent rounds make it 1 in 63 504, and a real slowdown fails both.
    fn confirmed_in(&self) -> Option<&str> {
        None
    }
    /// The step kind and the two groups whose rates it pairs (a `ratio`), if it does.
    fn rated(&self) -> Option<(StepKind, [&str; 2])> {
        None
    }
    /// The documented promises this check judges on `rec`: by default those of its kind
    /// (`Kind::promises`) made for the record's cgroup version.
    fn promises(&self, rec: &Record) -> Vec<&'static Contract> {
        kind_of(&self.name()).map_or_else(Vec::new, |k| for_version(k.promises, rec))
    }
}

/// The files that set a group's limits.
const LIMIT_FILES: [&str; 6] = [
    "memory.max",
    "memory.high",
    "memory.swap.max",
    "memory.swap.high",
    "memory.limit_in_bytes",
    "memory.memsw.limit_in_bytes",
];

/// Why the limits the scenario declared for `cgroup` are not the ones it ran under, if they are
/// not: a `set` step wrote one of its limit files, or an `exhaust` raised its limit. The checks
/// that hold a group to its declared limits are not exercised there (limit-takes judges a
/// lowered limit).
fn limits_changed(rec: &Record, cgroup: &str) -> Option<String> {
    let st = (rec.steps.iter().chain(&rec.stopped))
        .filter(|s| s.cgroup == cgroup)
        .find(|s| {
            let set = (s.knob.as_ref())
                .is_some_and(|k| k.written.is_some() && LIMIT_FILES.contains(&k.file.as_str()));
            set || s.waited.is_some()
        })?;
    Some(format!(
        "{cgroup}'s limits were changed by '{}' (t={:.3}s): this check holds a group to the limits the scenario declared",
        st.describe, st.start
    ))
}

/// The kind whose results are named `name` (`under-limit(g)` is under-limit's).
fn kind_of(name: &str) -> Option<&'static Kind> {
    let kind = name.split('(').next()?;
    KINDS.iter().find(|k| k.kind == kind)
}

/// The promises of `list` made for the record's cgroup version.
fn for_version(list: &[&'static Contract], rec: &Record) -> Vec<&'static Contract> {
    let doc = match rec.version {
        crate::model::Version::V1 => Doc::V1,
        crate::model::Version::V2 => Doc::V2,
    };
    list.iter().copied().filter(|c| c.doc == doc).collect()
}

/// What `Check` needs of every spec (clone, compare, downcast); implemented for every
/// `CheckSpec + Clone + PartialEq`.
pub trait SpecBase {
    fn as_any(&self) -> &dyn Any;
    fn clone_box(&self) -> Box<dyn CheckSpec>;
    fn same(&self, other: &dyn CheckSpec) -> bool;
}

impl<T: CheckSpec + Clone + PartialEq + 'static> SpecBase for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn clone_box(&self) -> Box<dyn CheckSpec> {
        Box::new(self.clone())
    }
    fn same(&self, other: &dyn CheckSpec) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}

/// One check of a scenario: one its file declares, or an invariant every scenario gets for its
/// groups (`implied`: one that could not be exercised does not make the scenario skip; one that
/// fails fails it like any other).
pub struct Check {
    spec: Box<dyn CheckSpec>,
    pub implied: bool,
    /// The promises its `[[check]]` table says it judges (`promise = "v2.max.lowered"`, or a
    /// list: one per cgroup version, say).
    pub promises: Vec<&'static Contract>,
    /// The cgroup version it runs under only (a check about one version's promises in a
    /// scenario of both); None: every version the scenario runs under.
    pub only: Option<crate::model::Version>,
    /// One of the checks the scenario exists for: not judged, the scenario is a skip (see
    /// `purposes` for who they are when the file does not say).
    pub purpose: bool,
}

impl Check {
    pub fn new(spec: impl CheckSpec + 'static) -> Check {
        Check {
            spec: Box::new(spec),
            implied: false,
            promises: Vec::new(),
            only: None,
            purpose: true,
        }
    }

    /// An invariant the scenario did not declare.
    pub fn implied(spec: impl CheckSpec + 'static) -> Check {
        Check {
            spec: Box::new(spec),
            implied: true,
            promises: Vec::new(),
            only: None,
            purpose: false,
        }
    }

    /// Its verdict on a record, marked implied where it is, with the promises it judged. A
    /// failure the check did not tie to a promise breaks the declared one, else the one promise
    /// of its kind for this cgroup version.
    pub fn judge(&self, rec: &Record) -> CheckResult {
        let mut r = self.spec.evaluate(rec);
        r.implied = self.implied;
        r.purpose = self.purpose;
        r.performance = self.spec.performance();
        if !r.outcome.judged() {
            return r;
        }
        // A check that says which promises its result judged (identities: the rules whose
        // counters moved) keeps its list; the others judged their kind's.
        let mut judged: Vec<&'static Contract> = if r.promises.is_empty() {
            self.spec.promises(rec)
        } else {
            r.promises
                .iter()
                .filter_map(|id| contract::get(id))
                .collect()
        };
        let declared = for_version(&self.promises, rec);
        for p in &declared {
            if !judged.contains(p) {
                judged.push(p);
            }
        }
        r.promises = judged.iter().map(|p| p.id.to_string()).collect();
        if r.outcome == Outcome::Fail && r.broke.is_none() {
            let one = (judged.len() == 1).then(|| judged[0]);
            if let Some(p) = declared.first().copied().or(one) {
                r = r.breaking(p);
            }
        }
        r
    }
}

impl std::ops::Deref for Check {
    type Target = dyn CheckSpec;
    fn deref(&self) -> &Self::Target {
        &*self.spec
    }
}

impl std::ops::DerefMut for Check {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut *self.spec
    }
}

impl Clone for Check {
    fn clone(&self) -> Self {
        Check {
            spec: self.spec.clone_box(),
            implied: self.implied,
            promises: self.promises.clone(),
            only: self.only,
            purpose: self.purpose,
        }
    }
}

impl PartialEq for Check {
    fn eq(&self, other: &Self) -> bool {
        self.implied == other.implied
            && self.purpose == other.purpose
            && self.promises == other.promises
            && self.spec.same(&*other.spec)
    }
}

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.spec.fmt(f)
    }
}

/// One check kind: its name in scenario files (`kind = "settles"`), what it judges, the keys it
/// takes (the one list: any other key is refused at that key before its parser runs, and the
/// reference, docs/checks.md, is generated from it) and its parser.
pub struct Kind {
    pub kind: &'static str,
    /// What it judges and why, for the reference (Markdown, one paragraph or a few).
    pub doc: &'static str,
    pub keys: &'static [Key],
    pub parse: fn(&CheckArgs) -> Result<Check, ScenarioError>,
    /// The documented promises it judges wherever it is exercised (see `crate::model::contract`);
    /// a `[[check]]` table may name one more with `promise`.
    pub promises: &'static [&'static Contract],
}

/// Every check kind, in the order the unknown-check error and the reference list them. A new
/// kind is a file in this directory (its spec, `CheckSpec` impl, parser and `KIND`) and one line
/// here.
pub const KINDS: &[Kind] = &[
    counters::no_underflow::KIND,
    pagecache::settles::KIND,
    perf::throughput::KIND,
    events::exercised::KIND,
    pagecache::tracks_global::KIND,
    pagecache::dirty_probe::KIND,
    hierarchy::sums::KIND,
    counters::no_ratchet::KIND,
    pagecache::observed::KIND,
    moves::change::KIND,
    perf::ratio::KIND,
    moves::follows::KIND,
    moves::moved::KIND,
    limits::limit_counters::KIND,
    pagecache::holds_files::KIND,
    limits::under_limit::KIND,
    pagecache::dirty_domain::KIND,
    limits::under_high::KIND,
    protection::protected::KIND,
    counters::tasks::KIND,
    counters::usage_covers::KIND,
    events::oom_kills::KIND,
    counters::numa_stat::KIND,
    counters::interface::KIND,
    counters::identities::KIND,
    counters::monotonic::KIND,
    counters::faults::KIND,
    limits::knob::KIND,
    limits::in_force::KIND,
    limits::limit_takes::KIND,
    limits::no_oom::KIND,
    limits::peak_reset::KIND,
    events::notifies::KIND,
    events::notified::KIND,
    events::oom_waits::KIND,
    limits::slowed::KIND,
    limits::stalled::KIND,
    hierarchy::within_node::KIND,
    moves::placed::KIND,
];

/// The `cgroup` key most checks take.
const CGROUP: Key = opt(
    "cgroup",
    "the declared group judged; may be left out when the scenario declares one group only",
);

/// The `needs` key: not exercised where the kernel cannot move charges.
const NEEDS: Key = opt(
    "needs",
    "`\"charge-moving\"`: the check is not exercised where the kernel cannot move charges with a task (cgroup v1 memory.move_charge_at_immigrate refused with EINVAL: 6.13+), with that reason",
);

/// The check reference (docs/checks.md), generated from `KINDS`.
pub fn reference() -> String {
    let mut s = String::from(REFERENCE_HEAD);
    for k in KINDS {
        s += &format!("\n## {}\n\n{}\n\n", k.kind, k.doc.trim());
        if !k.promises.is_empty() {
            let ids: Vec<String> = k.promises.iter().map(|p| format!("`{}`", p.id)).collect();
            s += &format!("Promises it judges: {}.\n\n", ids.join(", "));
        }
        s += &key_table(k.keys, "kind");
    }
    s
}

const REFERENCE_HEAD: &str = "# Check kinds

Every `[[check]]` kind a scenario file can use, with the keys it takes. Generated from the check
table (`KINDS` in src/check/mod.rs); `cargo test --test docs` fails when this page and the code
differ, and `MEMCGTEST_WRITE_DOCS=1 cargo test --test docs` writes it anew. Back to the
[README](../README.md); the file format is in [scenario-format.md](scenario-format.md).

`kind` is required in every `[[check]]`; any key a kind does not list below is an error at that
key (`check \"KIND\" takes no \"KEY\"`). Sizes are strings (`\"64M\"`, at most 1 TiB), durations
too (`\"10s\"`, at most a day). A counter is a name of the counter table (see
[scenario-format.md](scenario-format.md)), valid under every cgroup version the scenario runs
under. A phase is a declared `[[phase]]`; a step kind an `action` of the step table. \"The
unflushed-stats bound\" is 2 x 64 pages x CPUs x page size: the per-CPU residue below
MEMCG_CHARGE_BATCH plus the flush threshold MEMCG_CHARGE_BATCH x CPUs. A check either reaches
a verdict (pass, fail) or not: *not exercised* (what it needs did not happen) or *inconclusive*
(it happened, but other processes on the machine left too little for a verdict: paired rates
measured while the machine was busy, machine-wide counters other writers moved). A check the
scenario exists for that reaches no verdict makes its scenario `skip`, never `pass`; any other
is listed in the passing scenario's line.

Every kind also takes `promise`: the id of a documented promise the check judges in this
scenario (`memcgtest contracts` lists them; the promise must be made for a cgroup version the
scenario runs under). A failure then quotes it. Each kind below names the promises it judges
wherever it is exercised.

Every kind also takes `purpose = true|false`: whether the scenario exists for this check. By
default every check is, except the performance ones (`ratio`, `throughput`) in a scenario that
declares other checks too; in a scenario of performance checks only, they are its purpose.
";

/// A group's columns of `counters`, as a check names the sum it judges.
fn group_columns(cgroup: &str, counters: &[&str]) -> Vec<Column> {
    counters.iter().map(|c| Column::group(cgroup, c)).collect()
}

/// The columns of `cgroup`'s `counters` (as scenarios name them), or which was not sampled.
fn columns(rec: &Record, cgroup: &str, counters: &[String]) -> Result<Columns, String> {
    counters
        .iter()
        .map(|c| {
            let col = Column::group(cgroup, c);
            rec.series
                .col(&col)
                .map(|i| (col.clone(), i))
                .ok_or_else(|| format!("column {col} was not sampled"))
        })
        .collect()
}

/// How long a group's memory.stat may lag what it counts: a concurrent flush for a leaf
/// (STALE_WINDOW), the periodic flush for a group with sampled children (ANCESTOR_LAG; see
/// hierarchy).
fn stale_lag(rec: &Record, cgroup: &str) -> f64 {
    if has_sampled_below(rec, cgroup) {
        hierarchy::parts::ANCESTOR_LAG
    } else {
        STALE_WINDOW
    }
}

/// Whether a group has sampled groups below it: a parent, whose memory.stat can lag them.
fn has_sampled_below(rec: &Record, cgroup: &str) -> bool {
    (rec.series.groups().iter()).any(|g| crate::model::is_below(g, cgroup))
}

/// When a parent's unflushed statistics may show a burst that no sample saw: while a step that
/// maps, touches and unmaps memory over and over (`fault`: 64 MiB in about 35 ms on a fast
/// machine, faster than the sampler) ran in the group or below it, and ANCESTOR_LAG after. A
/// parent read before the next flush shows its subtree's value at the last flush, which may lie
/// anywhere in that cycle; the periodic flush corrects it within ANCESTOR_LAG. Never for a leaf
/// (a read flushes it).
/// The fault steps' own spans serve the counters kept exactly (page counters, see `faulting`).
struct Churn {
    /// (start, end) of the fault steps in the group or below it; none for a leaf.
    faults: Vec<(f64, f64)>,
    /// How long after a fault step a parent's statistics may still show its burst.
    lag: f64,
}

impl Churn {
    fn new(rec: &Record, cgroup: &str) -> Churn {
        let lag = stale_lag(rec, cgroup);
        let faults = (rec.steps.iter().chain(&rec.stopped))
            .filter(|_| lag > STALE_WINDOW)
            .filter(|s| s.kind == StepKind::Fault)
            .filter(|s| s.cgroup == cgroup || crate::model::is_below(&s.cgroup, cgroup))
            .map(|s| (s.start, s.end))
            .collect();
        Churn { faults, lag }
    }

    /// Whether a fault step ran at `t` or ended at most `after` seconds before it.
    fn within(&self, t: f64, after: f64) -> bool {
        (self.faults.iter()).any(|&(a, b)| a <= t && t <= b + after)
    }

    /// Whether a gap that began at `t` may be such a burst.
    fn at(&self, t: f64) -> bool {
        self.within(t, self.lag)
    }

    /// Whether a fault loop was running at `t`. It maps, touches and unmaps its region about
    /// every 20 ms, as often as the sampler reads, so a parent's and a child's page counters,
    /// read a few milliseconds apart, may differ by the region at every sample of the loop
    /// (Debian 6.1 under TCG: a parent's usage 6 MiB, one 6 MiB region, above its children's in
    /// consecutive samples, 2 cases in 303), a difference no rate between samples shows.
    fn faulting(&self, t: f64) -> bool {
        self.within(t, STALE_WINDOW)
    }
}

/// A run of samples off by more than a check's tolerance, confirmed once it lasted `n` samples
/// and, when it began while a parent's statistics could show an unseen burst (see [`Churn`]),
/// ANCESTOR_LAG seconds.
struct Gap {
    run: usize,
    since: Option<f64>,
    churn: Churn,
}

impl Gap {
    fn new(rec: &Record, cgroup: &str) -> Gap {
        Gap {
            run: 0,
            since: None,
            churn: Churn::new(rec, cgroup),
        }
    }

    /// Whether the gap is confirmed at time `t` after `n` samples in a row (`off`: this one is off).
    fn confirmed(&mut self, t: f64, off: bool, n: usize) -> bool {
        if !off {
            (self.run, self.since) = (0, None);
            return false;
        }
        self.run += 1;
        let since = *self.since.get_or_insert(t);
        self.run >= n && (!self.churn.at(since) || t - since >= hierarchy::parts::ANCESTOR_LAG)
    }

    /// For the tolerance text: what a parent is allowed.
    fn text(&self) -> String {
        if self.churn.faults.is_empty() {
            String::new()
        } else {
            format!(
                "; a gap that began during a fault loop below the group must also last {:.0} s (its unflushed statistics may show a burst no sample saw; the periodic flush corrects them)",
                hierarchy::parts::ANCESTOR_LAG
            )
        }
    }
}

fn missing(name: String, why: String) -> CheckResult {
    CheckResult::new(name, Outcome::NotExercised, "-".into(), "-".into(), why)
}

/// The result of a check that ran but got no verdict because of the machine's other processes
/// (`why` says which and how much).
fn inconclusive(name: String, why: String) -> CheckResult {
    CheckResult::new(name, Outcome::Inconclusive, "-".into(), "-".into(), why)
}

/// Marks which declared checks the scenario exists for, where its file left it open: every
/// check but the performance ones, or, when it declares nothing else, its performance checks
/// (a scenario of ratios exists for them). `explicit[i]` is check i's `purpose` key.
pub fn purposes(checks: &mut [Check], explicit: &[Option<bool>]) {
    let only_speed = checks.iter().all(|c| c.performance());
    for (c, e) in checks.iter_mut().zip(explicit) {
        c.purpose = e.unwrap_or(only_speed || !c.performance());
    }
}

/// How a too-small throughput or ratio check gets enough samples.
const MORE_SAMPLES: &str =
    "raise the phase's repeat (one sample per repetition, or per pair) to at least 3 per side";

/// The tolerance of the throughput and ratio checks.
fn ratio_tolerance(min_ratio: f64) -> String {
    format!(
        "minimum ratio {min_ratio} set in the scenario; a failure also needs the sample sets to separate, any verdict enough samples that chance separates them at most {} % of the time (at least 3 v 3)",
        stats::MAX_CHANCE_PCT
    )
}

/// Sampled columns and where they are in a row.
type Columns = Vec<(Column, usize)>;

/// Sum of some columns at a row.
fn sum(rec: &Record, row: usize, cols: &[(Column, usize)]) -> i64 {
    cols.iter().map(|(_, c)| rec.series.get(row, *c)).sum()
}

/// The last sample at or before `t` (or the first sample).
fn row_at_or_before(rec: &Record, t: f64) -> usize {
    (0..rec.series.len())
        .rev()
        .find(|&r| rec.series.t[r] <= t)
        .unwrap_or(0)
}

/// The last sample whose pass had ended by `t`: a pass reads its files one after another from
/// its time on, so the sample taken just before a step may have read some of them during it
/// (6.12 v1, explore seed 67 case 36: a parent's usage read mid-move, with the destination's
/// precharge on top, looked like 6.5 MiB that the move then took away). Without the pass
/// durations, the last sample at or before `t`.
fn row_done_before(rec: &Record, t: f64) -> usize {
    let s = &rec.series;
    let pass = s.col(&Column::pass());
    let took = |r: usize| pass.map_or(0.0, |c| s.get(r, c) as f64 / 1e6);
    (0..s.len())
        .rev()
        .find(|&r| s.t[r] + took(r) <= t)
        .unwrap_or(0)
}

/// The first sample at or after `t`.
fn row_at_or_after(rec: &Record, t: f64) -> Option<usize> {
    (0..rec.series.len()).find(|&r| rec.series.t[r] >= t)
}

/// Groups sampled in a record.
fn groups(rec: &Record) -> Vec<String> {
    rec.series.groups().into_iter().map(String::from).collect()
}

fn signed(b: i64) -> String {
    if b > 0 {
        format!("+{}", human_bytes(b))
    } else {
        human_bytes(b)
    }
}

pub mod args;

// The check kinds, one file each (see `KINDS`), in folders by family.
mod counters;
mod events;
mod hierarchy;
mod limits;
mod moves;
mod pagecache;
mod perf;
mod protection;

pub use counters::faults::{Faults, faults};
pub use counters::identities::{Identities, identities, judged as identities_judged};
pub use counters::interface::{Interface, interface};
pub use counters::monotonic::{Monotonic, monotonic};
pub use counters::no_ratchet::{NoRatchet, no_ratchet};
pub use counters::no_underflow::{NoUnderflow, no_underflow};
pub use counters::numa_stat::{NumaStat, numa_stat};
pub use counters::tasks::{Tasks, tasks};
pub use counters::usage_covers::{UsageCovers, usage_covers};
pub use events::exercised::{Exercised, exercised};
pub use events::notifies::Notifies;
pub use events::oom_kills::{OomKills, oom_kills};
pub use hierarchy::sums::{Hierarchy, hierarchy};
pub use hierarchy::within_node::{WithinNode, within_node};
pub use limits::in_force::InForce;
pub use limits::limit_counters::{LimitCounters, limit_counters};
pub use limits::under_high::{UnderHigh, throttled_growth, under_high};
pub use limits::under_limit::{UnderLimit, under_limit};
pub use moves::change::{Change, Expect, change, change_in};
pub use moves::follows::{Follows, follows};
pub use moves::moved::{Moved, Want, moved};
pub use moves::placed::{Placed, placed};
pub use pagecache::dirty_domain::{DirtyDomain, dirty_domain};
pub use pagecache::dirty_probe::{DirtyProbe, dirty_probe};
pub use pagecache::holds_files::{HoldsFiles, holds_files};
pub use pagecache::observed::{Observed, observed};
pub use pagecache::reference::STALE_WINDOW;
pub use pagecache::settles::{Settles, settles};
pub use pagecache::tracks_global::{TracksGlobal, tracks_global};
pub use perf::ratio::{Ratio, ratio};
pub use perf::throughput::{Throughput, throughput};
pub use protection::protected::{Protected, protected};

#[cfg(test)]
mod tests;
