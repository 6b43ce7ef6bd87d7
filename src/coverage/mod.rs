//! `memcgtest coverage`: every file and field of the memcg interface a kernel shows, each with the
//! invariants that judge it, the scenarios in which it moved (so those invariants could fail),
//! and the mutants of kernel-patches/ that prove them. The fields come from the kernel (a run's
//! environment records what a fresh group showed: `EnvInfo::interface`); a field the counter
//! table does not know is listed as unknown, one no invariant judges with the reason.
//!
//! `fields.rs` says what a field is and which invariants judge it, this file how each field
//! stands in the results given, `render.rs` writes the tables (text and Markdown).

use serde::Serialize;

use crate::check::KINDS;
use crate::model::counter::{self, Kind};
use crate::model::mutant::{Matrix, Proof};
use crate::model::{CheckResult, Outcome, RunReport, Version};
use crate::scenario::Scenario;

mod fields;
mod render;

pub use fields::{What, classify, invariants, reason};
pub use render::{markdown, render};

/// The mutants of kernel-patches/, built in: their `Fields:` headers say what each proves.
pub const MUTANTS: &[(&str, &str)] = &[
    (
        "anon-accounting",
        include_str!("../../kernel-patches/anon-accounting.patch"),
    ),
    (
        "charging-cost",
        include_str!("../../kernel-patches/charging-cost.patch"),
    ),
    (
        "dirty-accounting",
        include_str!("../../kernel-patches/dirty-accounting.patch"),
    ),
    (
        "dirty-migration",
        include_str!("../../kernel-patches/dirty-migration.patch"),
    ),
    (
        "events-unnotified",
        include_str!("../../kernel-patches/events-unnotified.patch"),
    ),
    (
        "file-accounting",
        include_str!("../../kernel-patches/file-accounting.patch"),
    ),
    (
        "file-leak",
        include_str!("../../kernel-patches/file-leak.patch"),
    ),
    (
        "hierarchical-limit-own",
        include_str!("../../kernel-patches/hierarchical-limit-own.patch"),
    ),
    (
        "hierarchy-dirty",
        include_str!("../../kernel-patches/hierarchy-dirty.patch"),
    ),
    (
        "high-ignored",
        include_str!("../../kernel-patches/high-ignored.patch"),
    ),
    (
        "high-ooms",
        include_str!("../../kernel-patches/high-ooms.patch"),
    ),
    (
        "high-unthrottled",
        include_str!("../../kernel-patches/high-unthrottled.patch"),
    ),
    (
        "kernel-stack-double",
        include_str!("../../kernel-patches/kernel-stack-double.patch"),
    ),
    (
        "limit-events",
        include_str!("../../kernel-patches/limit-events.patch"),
    ),
    (
        "limit-slack",
        include_str!("../../kernel-patches/limit-slack.patch"),
    ),
    (
        "low-events-local",
        include_str!("../../kernel-patches/low-events-local.patch"),
    ),
    (
        "max-write-no-reclaim",
        include_str!("../../kernel-patches/max-write-no-reclaim.patch"),
    ),
    (
        "memcg-dirty-unthrottled",
        include_str!("../../kernel-patches/memcg-dirty-unthrottled.patch"),
    ),
    (
        "move-charge",
        include_str!("../../kernel-patches/move-charge.patch"),
    ),
    (
        "move-writeback",
        include_str!("../../kernel-patches/move-writeback.patch"),
    ),
    (
        "numa-dirty",
        include_str!("../../kernel-patches/numa-dirty.patch"),
    ),
    (
        "numa-v1-hierarchical",
        include_str!("../../kernel-patches/numa-v1-hierarchical.patch"),
    ),
    (
        "oom-disable-ignored",
        include_str!("../../kernel-patches/oom-disable-ignored.patch"),
    ),
    (
        "oom-group-ignored",
        include_str!("../../kernel-patches/oom-group-ignored.patch"),
    ),
    (
        "oom-group-kills-protected",
        include_str!("../../kernel-patches/oom-group-kills-protected.patch"),
    ),
    (
        "oom-kill-event",
        include_str!("../../kernel-patches/oom-kill-event.patch"),
    ),
    (
        "peak-reset-global",
        include_str!("../../kernel-patches/peak-reset-global.patch"),
    ),
    (
        "peak-watermark",
        include_str!("../../kernel-patches/peak-watermark.patch"),
    ),
    (
        "pgactivate-net",
        include_str!("../../kernel-patches/pgactivate-net.patch"),
    ),
    (
        "pgfault-double",
        include_str!("../../kernel-patches/pgfault-double.patch"),
    ),
    (
        "protection-ignored",
        include_str!("../../kernel-patches/protection-ignored.patch"),
    ),
    (
        "protection-overcommit-zero",
        include_str!("../../kernel-patches/protection-overcommit-zero.patch"),
    ),
    (
        "psi-no-memstall",
        include_str!("../../kernel-patches/psi-no-memstall.patch"),
    ),
    (
        "reclaim-ignores-min",
        include_str!("../../kernel-patches/reclaim-ignores-min.patch"),
    ),
    (
        "reclaim-no-eagain",
        include_str!("../../kernel-patches/reclaim-no-eagain.patch"),
    ),
    (
        "reclaim-short",
        include_str!("../../kernel-patches/reclaim-short.patch"),
    ),
    (
        "reclaim-uncharge-serial",
        include_str!("../../kernel-patches/reclaim-uncharge-serial.patch"),
    ),
    (
        "shmem-accounting",
        include_str!("../../kernel-patches/shmem-accounting.patch"),
    ),
    (
        "sock-leak",
        include_str!("../../kernel-patches/sock-leak.patch"),
    ),
    (
        "soft-limit-live",
        include_str!("../../kernel-patches/soft-limit-live.patch"),
    ),
    (
        "stat-swap",
        include_str!("../../kernel-patches/stat-swap.patch"),
    ),
    (
        "swap-current-half",
        include_str!("../../kernel-patches/swap-current-half.patch"),
    ),
    (
        "swap-events-spurious",
        include_str!("../../kernel-patches/swap-events-spurious.patch"),
    ),
    (
        "swap-high-unthrottled",
        include_str!("../../kernel-patches/swap-high-unthrottled.patch"),
    ),
    (
        "swap-max-ignored",
        include_str!("../../kernel-patches/swap-max-ignored.patch"),
    ),
    (
        "threshold-down-silent",
        include_str!("../../kernel-patches/threshold-down-silent.patch"),
    ),
    (
        "writeback-accounting",
        include_str!("../../kernel-patches/writeback-accounting.patch"),
    ),
];

/// A patch header's value (`Fields:`, `Caught-by:`), split at commas.
pub fn header(patch: &str, name: &str) -> Vec<String> {
    patch
        .lines()
        .take_while(|l| !l.starts_with("---"))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| {
            v.split(',')
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty() && !x.starts_with('('))
                .collect()
        })
        .unwrap_or_default()
}

/// How a field stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Judged by an invariant that was exercised (the field moved where it ran).
    Covered,
    /// Judged, but it never moved in the results given (or no results were given).
    NotExercised,
    /// No invariant judges it; the reason says why.
    Uncovered,
    /// Not in memcgtest's tables.
    Unknown,
}

/// One field of the interface.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// `file` or `file:key`.
    pub field: String,
    /// What memcgtest calls it.
    pub name: String,
    pub invariants: Vec<String>,
    /// Scenarios in which it moved beyond the invariants' tolerance (counters), or whose check of
    /// it was exercised (settings).
    pub exercised: Vec<String>,
    /// Mutants of kernel-patches/ that prove an invariant of it.
    pub mutants: Vec<String>,
    /// What the schemata kernel's kill matrix says of it (see `apply_matrices`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proven: Option<Proof>,
    pub status: Status,
    pub reason: Option<String>,
}

/// The coverage of one cgroup version.
#[derive(Debug, Clone, Serialize)]
pub struct Table {
    pub version: Version,
    pub kernel: String,
    pub rows: Vec<Row>,
    /// When and where the kill matrix applied to the rows was measured, if one applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matrix: Option<String>,
}

impl Table {
    /// The share of the fields the acceptance counts (memory.stat, memory.events(.local),
    /// memory.swap.*, memory.numa_stat, the limit files) that are covered, in percent.
    pub fn covered_pct(&self) -> f64 {
        let counted: Vec<&Row> = self.rows.iter().filter(|r| counted(&r.field)).collect();
        let covered = counted
            .iter()
            .filter(|r| r.status == Status::Covered)
            .count();
        100.0 * covered as f64 / counted.len().max(1) as f64
    }

    /// The share of the counted fields that are proven, in percent: every fault the kill
    /// matrix tried on them killed (none survived), or, for a field no schemata mutant reaches
    /// (a limit, a watermark), covered and named by a single mutant of kernel-patches/.
    pub fn proven_pct(&self) -> f64 {
        let counted: Vec<&Row> = self.rows.iter().filter(|r| counted(&r.field)).collect();
        let proven = counted.iter().filter(|r| r.is_proven()).count();
        100.0 * proven as f64 / counted.len().max(1) as f64
    }
}

impl Row {
    /// Proven: see [`Table::proven_pct`].
    pub fn is_proven(&self) -> bool {
        match &self.proven {
            Some(p) => !p.killed.is_empty() && p.survived.is_empty(),
            None => self.status == Status::Covered && !self.mutants.is_empty(),
        }
    }
}

/// The kill matrices shipped with memcgtest (`memcgtest mutate`'s full runs on the test kernel).
pub const MATRICES: &[&str] = &[
    include_str!("../../docs/mutate/6.12-v2.json"),
    include_str!("../../docs/mutate/6.12-v1.json"),
];

/// Gives each table's rows their proof from the matrix of the same cgroup version and kernel
/// series (6.12 for 6.12.118): the last of `matrices` that applies.
pub fn apply_matrices(tables: &mut [Table], matrices: &[Matrix]) {
    let series = |k: &str| k.split('.').take(2).collect::<Vec<_>>().join(".");
    for t in tables {
        let Some(m) = (matrices.iter().rev())
            .find(|m| m.cgroup == t.version && series(&m.kernel) == series(&t.kernel))
        else {
            continue;
        };
        t.matrix = Some(format!("Linux {}, {}", m.kernel, m.measured));
        for r in &mut t.rows {
            r.proven = m.proof(&r.field);
        }
    }
}

/// The files the coverage figure counts, as the acceptance of "every field" names them:
/// memory.stat, memory.events(.local), memory.swap.*, memory.numa_stat and the limit files.
fn counted(field: &str) -> bool {
    let file = field.split(':').next().unwrap_or(field);
    file == "memory.stat"
        || file.starts_with("memory.events")
        || file.starts_with("memory.swap.")
        || file == "memory.numa_stat"
        || LIMIT_FILES.contains(&file)
}

/// The limit files of both versions.
const LIMIT_FILES: &[&str] = &[
    "memory.max",
    "memory.high",
    "memory.low",
    "memory.min",
    "memory.zswap.max",
    "memory.limit_in_bytes",
    "memory.memsw.limit_in_bytes",
    "memory.kmem.limit_in_bytes",
    "memory.kmem.tcp.limit_in_bytes",
    "memory.soft_limit_in_bytes",
];

/// The counters a field moves with: a v1 memory.numa_stat line's LRU counters, else itself.
fn numa_parts(name: &str) -> Vec<String> {
    match counter::V1_NUMA.iter().find(|l| l.name == name) {
        Some(l) => l.parts.iter().map(|p| p.to_string()).collect(),
        None => vec![name.to_string()],
    }
}

/// How far a counter must move for an invariant over it to be able to fail: an event once, a size
/// by more than twice the statistics' unflushed bound on two CPUs (2 MiB), a derived limit by
/// being in force at all (`Record::moved` gives it 1).
fn moved_enough(name: &str, by: i64) -> bool {
    let (base, _) = counter::split_local(name);
    match counter::counter(base) {
        Some(c) if c.unit == counter::Unit::Events || c.kind == Kind::Limit => by > 0,
        _ => by > 2 << 20,
    }
}

/// The checks of `kinds` that were exercised (passed) in a scenario result.
fn exercised_checks(checks: &[CheckResult], kinds: &[String]) -> bool {
    checks.iter().any(|c| {
        c.outcome == Outcome::Pass && kinds.iter().any(|k| c.name.starts_with(&format!("{k}(")))
    })
}

/// The coverage tables: one per cgroup version and kernel of the `reports` (runs' results), or of the
/// running kernel (`interface` under `version`, nothing exercised) when there are none.
pub fn tables(
    reports: &[RunReport],
    probed: Option<(Version, String, Vec<String>)>,
    scenarios: &[Scenario],
) -> Vec<Table> {
    let mut tables = Vec::new();
    let mut sources: Vec<(Version, String, Vec<String>, Vec<&RunReport>)> = Vec::new();
    for rep in reports {
        let Ok(v) = rep.environment.cgroup.selected else {
            continue;
        };
        let kernel = &rep.environment.kernel;
        match sources.iter_mut().find(|s| s.0 == v && s.1 == *kernel) {
            Some(s) => s.3.push(rep),
            None => sources.push((
                v,
                rep.environment.kernel.clone(),
                rep.environment.interface.clone(),
                vec![rep],
            )),
        }
    }
    if let Some((v, kernel, interface)) = probed {
        sources.push((v, kernel, interface, Vec::new()));
    }
    for (version, kernel, interface, reps) in sources {
        let rows = interface
            .iter()
            .map(|entry| row(entry, version, &reps, scenarios))
            .collect();
        tables.push(Table {
            version,
            kernel,
            rows,
            matrix: None,
        });
    }
    tables
}

fn row(entry: &str, version: Version, reps: &[&RunReport], scenarios: &[Scenario]) -> Row {
    let what = classify(entry, version);
    let invariants = invariants(&what, version, scenarios);
    let (name, key) = match &what {
        What::Counter(n) => (n.clone(), n.clone()),
        What::Numa(n) => (format!("{n} (per node)"), format!("numa:{n}")),
        What::Setting(s) => (s.to_string(), s.to_string()),
        What::Other(_) | What::Unknown => ("-".into(), String::new()),
    };
    let mut exercised = Vec::new();
    for rep in reps {
        for s in &rep.scenarios {
            let hit = match &what {
                What::Counter(n) | What::Numa(n) => numa_parts(n).iter().any(|part| {
                    s.moved
                        .iter()
                        .any(|(c, by)| c == part && moved_enough(c, *by))
                }),
                What::Setting(_) => exercised_checks(&s.checks, &invariants),
                _ => false,
            };
            if hit && !exercised.contains(&s.name) {
                exercised.push(s.name.clone());
            }
        }
    }
    let base = counter::split_local(&key).0.to_string();
    let mutants: Vec<String> = MUTANTS
        .iter()
        .filter(|(_, p)| header(p, "Fields").iter().any(|f| *f == key || *f == base))
        .map(|(n, _)| n.to_string())
        .collect();
    let own_reason = match &what {
        What::Other(r) => Some(r.to_string()),
        What::Counter(n) | What::Numa(n) => reason(counter::split_local(n).0).map(String::from),
        What::Setting(s) => reason(s).map(String::from),
        What::Unknown => Some("not in memcgtest's counter table: news to it".into()),
    };
    let status = match (&what, invariants.is_empty(), exercised.is_empty()) {
        (What::Unknown, _, _) => Status::Unknown,
        (_, true, _) => Status::Uncovered,
        (_, false, true) => Status::NotExercised,
        (_, false, false) => Status::Covered,
    };
    Row {
        field: entry.to_string(),
        name,
        invariants,
        exercised,
        mutants,
        proven: None,
        reason: if status == Status::Covered {
            None
        } else {
            own_reason.or_else(|| {
                (status == Status::NotExercised && reps.is_empty())
                    .then(|| "no results given (memcgtest coverage --results DIR)".into())
            })
        },
        status,
    }
}

/// Every check kind name, for a test that the coverage's kinds exist.
pub fn kinds() -> Vec<&'static str> {
    KINDS.iter().map(|k| k.kind).collect()
}

#[cfg(test)]
mod tests;
