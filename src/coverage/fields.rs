//! The interface's fields in memcgtest's vocabulary: what a v1 or v2 file and key is (a counter
//! of the counter table, its per-node split, a setting, or something not judged and why), and the
//! invariants that judge it.

use std::collections::BTreeSet;

use crate::check::Check;
use crate::model::Version;
use crate::model::counter::{self, COUNTERS, Counter, DIRTY, Kind, Source, WRITEBACK};
use crate::scenario::Scenario;

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
            if !local && crate::model::node_events::node_event(base).is_some() {
                out.insert("within-node".into());
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
