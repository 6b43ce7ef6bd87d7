//! `memcgtest coverage`: every file and field of the memcg interface a kernel shows, each with the
//! invariants that judge it, the scenarios in which it moved (so those invariants could fail),
//! and the mutants of kernel-patches/ that prove them. The fields come from the kernel (a run's
//! environment records what a fresh group showed: `EnvInfo::interface`); a field the counter
//! table does not know is listed as unknown, one no invariant judges with the reason.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::check::{Check, KINDS};
use crate::model::counter::{self, COUNTERS, Counter, DIRTY, Kind, Source, WRITEBACK};
use crate::model::{CheckResult, Outcome, RunReport, Version};
use crate::scenario::Scenario;

/// The mutants of kernel-patches/, built in: their `Fields:` headers say what each proves.
pub const MUTANTS: &[(&str, &str)] = &[
    (
        "anon-accounting",
        include_str!("../kernel-patches/anon-accounting.patch"),
    ),
    (
        "charging-cost",
        include_str!("../kernel-patches/charging-cost.patch"),
    ),
    (
        "dirty-accounting",
        include_str!("../kernel-patches/dirty-accounting.patch"),
    ),
    (
        "dirty-migration",
        include_str!("../kernel-patches/dirty-migration.patch"),
    ),
    (
        "file-accounting",
        include_str!("../kernel-patches/file-accounting.patch"),
    ),
    (
        "file-leak",
        include_str!("../kernel-patches/file-leak.patch"),
    ),
    (
        "hierarchy-dirty",
        include_str!("../kernel-patches/hierarchy-dirty.patch"),
    ),
    (
        "high-ignored",
        include_str!("../kernel-patches/high-ignored.patch"),
    ),
    (
        "high-unthrottled",
        include_str!("../kernel-patches/high-unthrottled.patch"),
    ),
    (
        "kernel-stack-double",
        include_str!("../kernel-patches/kernel-stack-double.patch"),
    ),
    (
        "limit-events",
        include_str!("../kernel-patches/limit-events.patch"),
    ),
    (
        "limit-slack",
        include_str!("../kernel-patches/limit-slack.patch"),
    ),
    (
        "low-events-local",
        include_str!("../kernel-patches/low-events-local.patch"),
    ),
    (
        "memcg-dirty-unthrottled",
        include_str!("../kernel-patches/memcg-dirty-unthrottled.patch"),
    ),
    (
        "move-charge",
        include_str!("../kernel-patches/move-charge.patch"),
    ),
    (
        "move-writeback",
        include_str!("../kernel-patches/move-writeback.patch"),
    ),
    (
        "numa-dirty",
        include_str!("../kernel-patches/numa-dirty.patch"),
    ),
    (
        "numa-v1-hierarchical",
        include_str!("../kernel-patches/numa-v1-hierarchical.patch"),
    ),
    (
        "oom-group-ignored",
        include_str!("../kernel-patches/oom-group-ignored.patch"),
    ),
    (
        "oom-kill-event",
        include_str!("../kernel-patches/oom-kill-event.patch"),
    ),
    (
        "peak-watermark",
        include_str!("../kernel-patches/peak-watermark.patch"),
    ),
    (
        "pgactivate-net",
        include_str!("../kernel-patches/pgactivate-net.patch"),
    ),
    (
        "pgfault-double",
        include_str!("../kernel-patches/pgfault-double.patch"),
    ),
    (
        "protection-ignored",
        include_str!("../kernel-patches/protection-ignored.patch"),
    ),
    (
        "reclaim-ignores-min",
        include_str!("../kernel-patches/reclaim-ignores-min.patch"),
    ),
    (
        "reclaim-short",
        include_str!("../kernel-patches/reclaim-short.patch"),
    ),
    (
        "shmem-accounting",
        include_str!("../kernel-patches/shmem-accounting.patch"),
    ),
    (
        "sock-leak",
        include_str!("../kernel-patches/sock-leak.patch"),
    ),
    (
        "stat-swap",
        include_str!("../kernel-patches/stat-swap.patch"),
    ),
    (
        "swap-current-half",
        include_str!("../kernel-patches/swap-current-half.patch"),
    ),
    (
        "swap-events-spurious",
        include_str!("../kernel-patches/swap-events-spurious.patch"),
    ),
    (
        "swap-max-ignored",
        include_str!("../kernel-patches/swap-max-ignored.patch"),
    ),
    (
        "writeback-accounting",
        include_str!("../kernel-patches/writeback-accounting.patch"),
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

/// What a field of the interface is, in memcgtest's vocabulary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// A counter of the counter table (`dirty`, `dirty.local`).
    Counter(String),
    /// A counter's per-node split in memory.numa_stat.
    Numa(String),
    /// A limit or setting a scenario writes (named by its v2 file, `memory.max`).
    Setting(&'static str),
    /// Something the table does not hold, and why it is not judged.
    Other(&'static str),
    /// Not known to memcgtest at all.
    Unknown,
}

/// Limits and settings: (v1 file, v2 file, the name coverage uses).
const SETTINGS: &[(Option<&str>, Option<&str>, &str)] = &[
    (
        Some("memory.limit_in_bytes"),
        Some("memory.max"),
        "memory.max",
    ),
    (None, Some("memory.high"), "memory.high"),
    (None, Some("memory.low"), "memory.low"),
    (None, Some("memory.min"), "memory.min"),
    (None, Some("memory.swap.max"), "memory.swap.max"),
    (None, Some("memory.swap.high"), "memory.swap.high"),
    (None, Some("memory.oom.group"), "memory.oom.group"),
    (
        Some("memory.memsw.limit_in_bytes"),
        None,
        "memory.memsw.limit_in_bytes",
    ),
    (
        Some("memory.kmem.limit_in_bytes"),
        None,
        "memory.kmem.limit_in_bytes",
    ),
    (
        Some("memory.kmem.tcp.limit_in_bytes"),
        None,
        "memory.kmem.tcp.limit_in_bytes",
    ),
    (
        Some("memory.soft_limit_in_bytes"),
        None,
        "memory.soft_limit_in_bytes",
    ),
    (
        Some("memory.move_charge_at_immigrate"),
        None,
        "memory.move_charge_at_immigrate",
    ),
    (Some("memory.swappiness"), None, "memory.swappiness"),
    (Some("memory.use_hierarchy"), None, "memory.use_hierarchy"),
    (None, Some("memory.zswap.max"), "memory.zswap.max"),
    (
        None,
        Some("memory.zswap.writeback"),
        "memory.zswap.writeback",
    ),
];

/// Why a field or setting no invariant judges is left out, or why one that has invariants may not
/// move in the suite.
pub fn reason(name: &str) -> Option<&'static str> {
    Some(match name {
        "sec_pagetables" => "secondary page tables of KVM guests: no guest VM runs in a scenario",
        "pgdemote_kswapd" | "pgdemote_direct" | "pgdemote_khugepaged" | "pgpromote_success" => {
            "demotion and promotion between memory tiers: needs tiered memory (CXL, pmem as RAM)"
        }
        "file_thp" => {
            "page cache huge pages of a regular file: huge-pages collapses a read-only mapping, which needs CONFIG_READ_ONLY_THP_FOR_FS"
        }
        "workingset_restore_anon" => {
            "a refault of anon that was active when evicted: MADV_PAGEOUT does not evict pages just swapped in again (they stay in the swap cache), so it takes reclaim under a limit; no scenario gets there yet"
        }
        "pgscan_khugepaged" | "pgsteal_khugepaged" | "pgscan_kswapd" | "pgsteal_kswapd" => {
            "reclaim by khugepaged or kswapd: machine-pressure makes it on a machine of the run's own only (run --dedicated; memcgtest vm guests are)"
        }
        "zswap"
        | "zswapped"
        | "zswpin"
        | "zswpout"
        | "zswpwb"
        | "memory.zswap.max"
        | "memory.zswap.writeback" => "zswap: the test kernels are built without CONFIG_ZSWAP",
        "numa_pages_migrated" | "numa_pte_updates" | "numa_hint_faults" => {
            "NUMA balancing: the test kernels are built without CONFIG_NUMA_BALANCING"
        }
        "sock" => {
            "socket buffers: kernel-memory queues TCP on loopback in a network namespace of its own; without CONFIG_INET or CONFIG_NET_NS it holds none"
        }
        "memory.pressure" => "a pressure statistic (PSI): time stalled, with no truth to compare",
        "memory.pressure_level" => "v1's memory pressure notifications: an event interface",
        "memory.kmem.slabinfo" => "a debug listing of slab caches",
        "memory.kmem.tcp" | "memory.kmem.tcp.limit_in_bytes" => {
            "v1 counts TCP buffers only once memory.kmem.tcp.limit_in_bytes is written: no scenario sets one"
        }
        "memory.kmem.limit_in_bytes" | "memory.kmem.failcnt" => {
            "deprecated: the kernel refuses a kmem limit since 5.16, so it is never hit"
        }
        "memory.soft_limit_in_bytes" => "v1 soft limits act only under global memory pressure",
        "memory.swappiness" => {
            "a weight of reclaim's choice between anon and file: no count follows from it"
        }
        "memory.use_hierarchy" => "always 1: hierarchy is the only mode since 5.x",
        "memory.oom_control:oom_kill_disable" => {
            "a setting: a disabled OOM killer leaves tasks hanging"
        }
        "memory.oom_control:under_oom" => {
            "a state while the OOM killer waits (with oom_kill_disable), never seen with it enabled"
        }
        "memory.peak" | "peak" | "swap_peak" | "memsw_peak" | "kmem_peak" => return None,
        _ => return None,
    })
}

/// The counter the v1 or v2 file and key hold, with `.local` for a group's own value.
fn counter_of(file: &str, key: Option<&str>, version: Version) -> Option<String> {
    for c in COUNTERS {
        match (c.source, key) {
            (Source::Stat { v1, v2 }, Some(k)) if file == "memory.stat" => {
                let mine = match version {
                    Version::V1 => v1,
                    Version::V2 => v2,
                };
                let Some(m) = mine else { continue };
                match (version, c.kind) {
                    (_, Kind::Limit) if k == m => return Some(c.name.into()),
                    (Version::V1, _) if k == format!("total_{m}") => return Some(c.name.into()),
                    (Version::V1, _) if k == m => return Some(counter::local(c.name)),
                    (Version::V2, _) if k == m => return Some(c.name.into()),
                    _ => {}
                }
            }
            (
                Source::File {
                    v1,
                    v2,
                    v1_local,
                    v2_local,
                },
                _,
            ) => {
                let at =
                    |l: Option<counter::Loc>| l.is_some_and(|l| l.file == file && l.key == key);
                match version {
                    Version::V1 if at(v1) => return Some(c.name.into()),
                    Version::V1 if at(v1_local) => return Some(counter::local(c.name)),
                    Version::V2 if at(v2) => return Some(c.name.into()),
                    Version::V2 if at(v2_local) => return Some(counter::local(c.name)),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    None
}

/// What an interface entry (`file` or `file:key`) is under `version`.
pub fn classify(entry: &str, version: Version) -> What {
    let (file, key) = match entry.split_once(':') {
        Some((f, k)) => (f, Some(k)),
        None => (entry, None),
    };
    if let Some(c) = counter_of(file, key, version) {
        return What::Counter(c);
    }
    if file == "memory.numa_stat" {
        let k = key.unwrap_or("");
        return match version {
            Version::V2 => COUNTERS
                .iter()
                .find(|c| counter::numa_key(c.name) == Some(k))
                .map_or(What::Unknown, |c| What::Numa(c.name.into())),
            Version::V1 => counter::V1_NUMA
                .iter()
                .find(|l| l.key == k)
                .map_or(What::Unknown, |l| What::Numa(l.name.into())),
        };
    }
    for (v1, v2, name) in SETTINGS {
        let f = match version {
            Version::V1 => v1,
            Version::V2 => v2,
        };
        if *f == Some(file) && key.is_none() {
            return What::Setting(name);
        }
    }
    let other = |r: &str| reason(r).map(What::Other);
    if file == "memory.pressure" {
        return other("memory.pressure").unwrap();
    }
    if file.starts_with("memory.kmem.tcp.") {
        return other("memory.kmem.tcp").unwrap();
    }
    other(entry)
        .or_else(|| other(file))
        .or_else(|| key.and_then(other))
        .unwrap_or(What::Unknown)
}

/// The invariants (check kinds) that judge a counter under `version`: those every scenario gets,
/// and the declared checks of the built-in scenarios that name it.
pub fn invariants(what: &What, version: Version, scenarios: &[Scenario]) -> Vec<String> {
    let mut out: BTreeSet<String> = BTreeSet::new();
    match what {
        What::Counter(name) => {
            let (base, local) = counter::split_local(name);
            let Some(c) = counter::counter(base) else {
                return Vec::new();
            };
            if crate::check::identities_judged().contains(&base) || has_local(c, version) {
                out.insert("identities".into());
            }
            if c.kind == Kind::Event {
                out.insert("monotonic".into());
            }
            if additive(c, version) || local {
                out.insert("hierarchy".into());
            }
            if version == Version::V2 && !local && [DIRTY, WRITEBACK].contains(&base) {
                out.insert("dirty-domain".into());
            }
            for (kind, names) in [
                ("faults", &["pgfault"][..]),
                ("tasks", &["anon"][..]),
                ("usage-covers", &["usage", "anon", "file"][..]),
                ("limit-counters", &["usage", "peak", "limit_hits"][..]),
                ("under-limit", &["usage", "swap", "memsw"][..]),
            ] {
                if !local && names.contains(&base) {
                    out.insert(kind.into());
                }
            }
            for sc in scenarios {
                if !sc.requires.cgroup.contains(&version) {
                    continue;
                }
                for chk in sc.checks.iter().filter(|c| !c.implied) {
                    if chk.needs().counters.iter().any(|n| n == name) {
                        out.insert(kind_of(chk));
                    }
                }
            }
        }
        What::Numa(_) => {
            out.insert("numa-stat".into());
        }
        What::Setting(s) => {
            for k in match *s {
                "memory.max" => &["under-limit", "limit-counters"][..],
                "memory.high" => &["under-high"][..],
                "memory.low" => &["change"][..],
                "memory.min" => &["change", "protected"][..],
                "memory.swap.max" | "memory.memsw.limit_in_bytes" => {
                    &["under-limit", "limit-counters"][..]
                }
                "memory.swap.high" => &["limit-counters"][..],
                "memory.oom.group" => &["oom-kills"][..],
                "memory.move_charge_at_immigrate" => &["follows", "moved", "change"][..],
                _ => &[][..],
            } {
                out.insert((*k).into());
            }
        }
        What::Other(_) | What::Unknown => {}
    }
    out.into_iter().collect()
}

/// The kind of a check, from its name (`settles(test)` is `settles`).
fn kind_of(c: &Check) -> String {
    let n = c.name();
    n.split('(').next().unwrap_or(&n).to_string()
}

/// Whether the version keeps a group's own value of `c` beside its hierarchical one.
fn has_local(c: &Counter, version: Version) -> bool {
    match (c.source, version) {
        (Source::Stat { v1: Some(_), .. }, Version::V1) => c.kind != Kind::Limit,
        (Source::File { v1_local, .. }, Version::V1) => v1_local.is_some(),
        (Source::File { v2_local, .. }, Version::V2) => v2_local.is_some(),
        _ => false,
    }
}

/// Whether a counter sums over the tree (see `hierarchy`).
fn additive(c: &Counter, version: Version) -> bool {
    match (c.source, c.kind) {
        (_, Kind::Limit) => false,
        _ if c.name.ends_with("peak") => false,
        (Source::Stat { .. }, _) => true,
        (Source::File { .. }, kind) => {
            has_local(c, version) || (version == Version::V2 && kind == Kind::Size)
        }
    }
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
    pub status: Status,
    pub reason: Option<String>,
}

/// The coverage of one cgroup version.
#[derive(Debug, Clone, Serialize)]
pub struct Table {
    pub version: Version,
    pub kernel: String,
    pub rows: Vec<Row>,
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

/// The human table and its summary.
pub fn render(tables: &[Table]) -> String {
    let mut s = String::new();
    for t in tables {
        s += &format!(
            "cgroup {} on Linux {}: {} fields, {:.0} % of memory.stat, memory.events(.local), memory.swap.*, memory.numa_stat and the limit files covered\n",
            t.version.as_str(),
            t.kernel,
            t.rows.len(),
            t.covered_pct()
        );
        s += &format!(
            "{:<40} {:<26} {:<13} {:<44} {:<24} {}\n",
            "field", "name", "status", "invariants", "mutants", "exercised in / why not"
        );
        for r in &t.rows {
            s += &format!(
                "{:<40} {:<26} {:<13} {:<44} {:<24} {}\n",
                r.field,
                r.name,
                status_word(r.status),
                r.invariants.join(","),
                if r.mutants.is_empty() {
                    "-".to_string()
                } else {
                    r.mutants.join(",")
                },
                if r.exercised.is_empty() {
                    r.reason.clone().unwrap_or_default()
                } else {
                    r.exercised.join(",")
                }
            );
        }
        s.push('\n');
    }
    s
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Covered => "covered",
        Status::NotExercised => "not exercised",
        Status::Uncovered => "uncovered",
        Status::Unknown => "unknown",
    }
}

/// The Markdown page docs/coverage.md is made of.
pub fn markdown(tables: &[Table]) -> String {
    let mut s = String::from(
        "# Coverage of the memcg interface\n\nEvery file and field of the memcg interface the test kernels show a group, with the invariants that judge it, the scenarios in which it moved (so those invariants could fail), the mutants of `kernel-patches/` that prove them, and for the others why not. Generated by `ci/coverage.sh` from the quick suite's results in the VM (`memcgtest coverage --results DIR --format markdown`). Back to the [README](../README.md); the invariants are in the [check reference](checks.md).\n",
    );
    for t in tables {
        s += &format!(
            "\n## cgroup {} (Linux {})\n\n{} fields; {:.0} % of those of memory.stat, memory.events(.local), memory.swap.*, memory.numa_stat and the limit files are covered (an invariant judges them and they moved in the suite).\n\n| field | name | status | invariants | mutants | exercised in, or why not |\n|---|---|---|---|---|---|\n",
            t.version.as_str(),
            t.kernel,
            t.rows.len(),
            t.covered_pct()
        );
        for r in &t.rows {
            s += &format!(
                "| `{}` | {} | {} | {} | {} | {} |\n",
                r.field,
                r.name,
                status_word(r.status),
                r.invariants.join(", "),
                r.mutants.join(", "),
                if r.exercised.is_empty() {
                    r.reason.clone().unwrap_or_default()
                } else {
                    r.exercised.join(", ")
                }
            );
        }
    }
    s
}

/// Every check kind name, for a test that the coverage's kinds exist.
pub fn kinds() -> Vec<&'static str> {
    KINDS.iter().map(|k| k.kind).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_patch_is_built_in_with_fields() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernel-patches");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| {
                let n = e.ok()?.file_name().to_string_lossy().into_owned();
                n.strip_suffix(".patch").map(String::from)
            })
            .collect();
        on_disk.sort();
        let built: Vec<String> = MUTANTS.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(built, on_disk, "MUTANTS must list kernel-patches/*.patch");
        for (n, p) in MUTANTS {
            assert!(
                p.lines().any(|l| l.starts_with("Fields:")),
                "{n} has no Fields: header"
            );
        }
        assert_eq!(
            header(MUTANTS[7].1, "Fields"),
            ["memory.high", "high_events"]
        );
    }

    #[test]
    fn fields_are_classified_per_version() {
        use What::*;
        let c = |e: &str, v| classify(e, v);
        assert_eq!(
            c("memory.stat:file_dirty", Version::V2),
            Counter("dirty".into())
        );
        assert_eq!(
            c("memory.stat:total_dirty", Version::V1),
            Counter("dirty".into())
        );
        assert_eq!(
            c("memory.stat:dirty", Version::V1),
            Counter("dirty.local".into())
        );
        assert_eq!(
            c("memory.stat:hierarchical_memory_limit", Version::V1),
            Counter("hierarchical_memory_limit".into())
        );
        assert_eq!(
            c("memory.events:max", Version::V2),
            Counter("limit_hits".into())
        );
        assert_eq!(
            c("memory.events.local:oom_kill", Version::V2),
            Counter("oom_kills.local".into())
        );
        assert_eq!(c("memory.current", Version::V2), Counter("usage".into()));
        assert_eq!(
            c("memory.failcnt", Version::V1),
            Counter("limit_hits".into())
        );
        assert_eq!(
            c("memory.numa_stat:file_dirty", Version::V2),
            Numa("dirty".into())
        );
        assert_eq!(c("memory.max", Version::V2), Setting("memory.max"));
        assert_eq!(
            c("memory.limit_in_bytes", Version::V1),
            Setting("memory.max")
        );
        assert!(matches!(c("memory.pressure:some", Version::V2), Other(_)));
        assert_eq!(c("memory.stat:brand_new", Version::V2), Unknown);
        let inv = invariants(&Counter("pgfault".into()), Version::V2, &[]);
        assert!(inv.contains(&"monotonic".to_string()) && inv.contains(&"faults".to_string()));
        assert!(!inv.contains(&"tasks".to_string()));
        // Every kind named here is a check kind.
        for k in [
            "identities",
            "monotonic",
            "faults",
            "hierarchy",
            "numa-stat",
        ] {
            assert!(kinds().contains(&k), "{k}");
        }
    }
}
