//! The counter table: every counter memcgtest samples, where each cgroup version keeps it, the
//! node counter in /proc/vmstat that matches it and its unit. Everything that names a counter
//! (scenario validation, the sampler's sources, the oracle, the timelines) reads it here.

use super::Version;

pub const DIRTY: &str = "dirty";
pub const WRITEBACK: &str = "writeback";
pub const FILE: &str = "file";
/// The per-file truth's lower bound of the page cache a group's files held when its memory.stat
/// was read: per file the smaller of its cachestat reads before and after, summed (a files column
/// only, not a memcg counter).
pub const HELD: &str = "held";
pub const ANON: &str = "anon";
/// Read from a file of its own (v1 memory.usage_in_bytes, v2 memory.current).
pub const USAGE: &str = "usage";
/// Swap in use by the group (v1 memory.stat total_swap, with swap accounting; v2
/// memory.swap.current).
pub const SWAP: &str = "swap";
/// Memory + swap usage (v1 memory.memsw.usage_in_bytes, with swap accounting).
pub const MEMSW: &str = "memsw";
/// The page counter's high watermark (v1 memory.max_usage_in_bytes, v2 memory.peak).
pub const PEAK: &str = "peak";
/// Charges that failed at the group's limit (v1 memory.failcnt, v2 memory.events `max`).
pub const LIMIT_HITS: &str = "limit_hits";
/// Times reclaim found the group above its memory.high (v2 memory.events `high`; v1 has none).
pub const HIGH_EVENTS: &str = "high_events";
/// Tasks the OOM killer killed in the group (v1 memory.oom_control `oom_kill`, v2 memory.events
/// `oom_kill`).
pub const OOM_KILLS: &str = "oom_kills";
/// Times the group's OOM killer was invoked (v2 memory.events `oom`; v1 has none).
pub const OOM_EVENTS: &str = "oom_events";
/// Times an OOM killed the whole group (v2 memory.events `oom_group_kill`, Linux 5.17+).
pub const OOM_GROUP_KILLS: &str = "oom_group_kills";

/// The counters a page in the page cache is dirty or under writeback in: the accounting checks'
/// subject.
pub const DIRTY_WRITEBACK: [&str; 2] = [DIRTY, WRITEBACK];

/// The v2 memory.numa_stat key of a counter, if it has one: the node counters are kept per node
/// and per memcg, under the name memory.stat gives them.
pub fn numa_key(name: &str) -> Option<&'static str> {
    match counter(name)? {
        Counter {
            source: Source::Stat { v2: Some(v2), .. },
            numa: true,
            ..
        } => Some(v2),
        _ => None,
    }
}

/// A line of cgroup v1's memory.numa_stat (its LRU lists, in pages per node) and the memory.stat
/// counters it sums: `name` is its column's counter (`numa:<group>.lru_file`; the group's own lists
/// `own_lru_file`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V1Numa {
    pub name: &'static str,
    pub key: &'static str,
    pub parts: &'static [&'static str],
}

const LRU_ANON: &[&str] = &["inactive_anon", "active_anon"];
const LRU_FILE: &[&str] = &["inactive_file", "active_file"];
const LRU_UNEVICTABLE: &[&str] = &["unevictable"];
const LRU_ALL: &[&str] = &[
    "inactive_anon",
    "active_anon",
    "inactive_file",
    "active_file",
    "unevictable",
];
const LRU_ANON_LOCAL: &[&str] = &["inactive_anon.local", "active_anon.local"];
const LRU_FILE_LOCAL: &[&str] = &["inactive_file.local", "active_file.local"];
const LRU_UNEVICTABLE_LOCAL: &[&str] = &["unevictable.local"];
const LRU_ALL_LOCAL: &[&str] = &[
    "inactive_anon.local",
    "active_anon.local",
    "inactive_file.local",
    "active_file.local",
    "unevictable.local",
];

/// cgroup v1's memory.numa_stat: the group's own LRU pages (`total`, `file`, ...) and its
/// hierarchy's (`hierarchical_*`), each the sum of memory.stat's LRU counters.
pub const V1_NUMA: &[V1Numa] = &[
    V1Numa {
        name: "lru_total",
        key: "hierarchical_total",
        parts: LRU_ALL,
    },
    V1Numa {
        name: "lru_file",
        key: "hierarchical_file",
        parts: LRU_FILE,
    },
    V1Numa {
        name: "lru_anon",
        key: "hierarchical_anon",
        parts: LRU_ANON,
    },
    V1Numa {
        name: "lru_unevictable",
        key: "hierarchical_unevictable",
        parts: LRU_UNEVICTABLE,
    },
    V1Numa {
        name: "own_lru_total",
        key: "total",
        parts: LRU_ALL_LOCAL,
    },
    V1Numa {
        name: "own_lru_file",
        key: "file",
        parts: LRU_FILE_LOCAL,
    },
    V1Numa {
        name: "own_lru_anon",
        key: "anon",
        parts: LRU_ANON_LOCAL,
    },
    V1Numa {
        name: "own_lru_unevictable",
        key: "unevictable",
        parts: LRU_UNEVICTABLE_LOCAL,
    },
];

/// Where a counter is read for each cgroup version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A memory.stat key (None: the version does not print it); v1's hierarchical value is
    /// `total_<v1>`, v2's memory.stat is hierarchical only.
    Stat {
        v1: Option<&'static str>,
        v2: Option<&'static str>,
    },
    /// A file of its own (or a key of one); `None`: the version has no such file. `v1_local`,
    /// `v2_local`: where the version keeps the group's own value (v1 memory.stat `swap`, v2
    /// memory.events.local).
    File {
        v1: Option<Loc>,
        v2: Option<Loc>,
        v1_local: Option<Loc>,
        v2_local: Option<Loc>,
    },
}

/// A cgroup file holding one number (`key` None), or a key of a flat-keyed file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    pub file: &'static str,
    pub key: Option<&'static str>,
}

const fn one(file: &'static str) -> Option<Loc> {
    Some(Loc { file, key: None })
}

const fn key(file: &'static str, key: &'static str) -> Option<Loc> {
    Some(Loc {
        file,
        key: Some(key),
    })
}

/// The unit of a counter's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes in both versions (a /proc/vmstat key counts pages).
    Bytes,
    /// A count of events.
    Events,
}

/// What a counter's values are, which decides the invariants that hold for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An amount held now (memory.stat sizes, page counters): it goes up and down.
    Size,
    /// How often something happened since the group was made: it never falls.
    Event,
    /// A limit the kernel derives (v1 hierarchical_memory_limit).
    Limit,
}

/// A counter in memcgtest's vocabulary. Hierarchical by default (v1 total_*, v2 memory.stat);
/// `<name>.local` asks for the group's own value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    pub name: &'static str,
    pub source: Source,
    /// The node counter in /proc/vmstat that matches it, in the same unit once pages are bytes.
    pub vmstat: Option<&'static str>,
    pub unit: Unit,
    pub kind: Kind,
    /// Kept per node too: v2 memory.numa_stat has it under its memory.stat name.
    pub numa: bool,
}

/// A memory.stat size of both versions, kept per node.
const fn size(
    name: &'static str,
    v1: &'static str,
    v2: &'static str,
    vmstat: Option<&'static str>,
) -> Counter {
    Counter {
        name,
        source: Source::Stat {
            v1: Some(v1),
            v2: Some(v2),
        },
        vmstat,
        unit: Unit::Bytes,
        kind: Kind::Size,
        numa: true,
    }
}

/// A v2-only memory.stat size; `numa`: kept per node.
const fn size2(name: &'static str, numa: bool) -> Counter {
    Counter {
        name,
        source: Source::Stat {
            v1: None,
            v2: Some(name),
        },
        vmstat: None,
        unit: Unit::Bytes,
        kind: Kind::Size,
        numa,
    }
}

/// A memory.stat event count, under the same name in the versions that print it.
const fn event(name: &'static str, v1: bool, v2: bool, numa: bool) -> Counter {
    Counter {
        name,
        source: Source::Stat {
            v1: if v1 { Some(name) } else { None },
            v2: if v2 { Some(name) } else { None },
        },
        vmstat: None,
        unit: Unit::Events,
        kind: Kind::Event,
        numa,
    }
}

/// A file of its own (or a key of one).
const fn own(
    name: &'static str,
    v1: Option<Loc>,
    v2: Option<Loc>,
    v2_local: Option<Loc>,
    unit: Unit,
    kind: Kind,
) -> Counter {
    Counter {
        name,
        source: Source::File {
            v1,
            v2,
            v1_local: None,
            v2_local,
        },
        vmstat: None,
        unit,
        kind,
        numa: false,
    }
}

/// A key of v2 memory.events (hierarchical) with its memory.events.local twin.
const fn v2_event(name: &'static str, key: &'static str) -> Counter {
    own(
        name,
        None,
        Some(Loc {
            file: "memory.events",
            key: Some(key),
        }),
        Some(Loc {
            file: "memory.events.local",
            key: Some(key),
        }),
        Unit::Events,
        Kind::Event,
    )
}

/// Every counter, memory.stat ones first (the order error messages list them in): the whole
/// memcg interface of Linux 6.1 to 6.12 that holds a number (the limits a scenario sets are
/// its own; see `coverage` for the files and fields a kernel shows).
pub const COUNTERS: &[Counter] = &[
    size(DIRTY, "dirty", "file_dirty", Some("nr_dirty")),
    size(
        WRITEBACK,
        "writeback",
        "file_writeback",
        Some("nr_writeback"),
    ),
    size(FILE, "cache", "file", Some("nr_file_pages")),
    size(ANON, "rss", "anon", Some("nr_anon_pages")),
    size("mapped", "mapped_file", "file_mapped", Some("nr_mapped")),
    size("shmem", "shmem", "shmem", Some("nr_shmem")),
    size(
        "swapcached",
        "swapcached",
        "swapcached",
        Some("nr_swapcached"),
    ),
    // Huge pages: /proc/vmstat counts them in huge pages, not base pages.
    size("anon_thp", "rss_huge", "anon_thp", None),
    size2("file_thp", true),
    size2("shmem_thp", true),
    size(
        "inactive_anon",
        "inactive_anon",
        "inactive_anon",
        Some("nr_inactive_anon"),
    ),
    size(
        "active_anon",
        "active_anon",
        "active_anon",
        Some("nr_active_anon"),
    ),
    size(
        "inactive_file",
        "inactive_file",
        "inactive_file",
        Some("nr_inactive_file"),
    ),
    size(
        "active_file",
        "active_file",
        "active_file",
        Some("nr_active_file"),
    ),
    size(
        "unevictable",
        "unevictable",
        "unevictable",
        Some("nr_unevictable"),
    ),
    size2("kernel", false),
    size2("kernel_stack", true),
    size2("pagetables", true),
    size2("sec_pagetables", true),
    size2("percpu", false),
    size2("sock", false),
    size2("vmalloc", false),
    size2("zswap", false),
    size2("zswapped", false),
    size2("slab_reclaimable", true),
    size2("slab_unreclaimable", true),
    size2("slab", false),
    event("workingset_refault_anon", true, true, true),
    event("workingset_refault_file", true, true, true),
    event("workingset_activate_anon", false, true, true),
    event("workingset_activate_file", false, true, true),
    event("workingset_restore_anon", false, true, true),
    event("workingset_restore_file", false, true, true),
    event("workingset_nodereclaim", false, true, true),
    event("pgdemote_kswapd", false, true, true),
    event("pgdemote_direct", false, true, true),
    event("pgdemote_khugepaged", false, true, true),
    event("pgpromote_success", false, true, true),
    event("pgscan", false, true, false),
    event("pgsteal", false, true, false),
    event("pgscan_kswapd", false, true, false),
    event("pgscan_direct", false, true, false),
    event("pgscan_khugepaged", false, true, false),
    event("pgsteal_kswapd", false, true, false),
    event("pgsteal_direct", false, true, false),
    event("pgsteal_khugepaged", false, true, false),
    event("pgfault", true, true, false),
    event("pgmajfault", true, true, false),
    event("pgpgin", true, false, false),
    event("pgpgout", true, false, false),
    event("pgrefill", false, true, false),
    event("pgactivate", false, true, false),
    event("pgdeactivate", false, true, false),
    event("pglazyfree", false, true, false),
    event("pglazyfreed", false, true, false),
    event("swpin_zero", false, true, false),
    event("swpout_zero", false, true, false),
    event("zswpin", false, true, false),
    event("zswpout", false, true, false),
    event("zswpwb", false, true, false),
    event("thp_fault_alloc", false, true, false),
    event("thp_collapse_alloc", false, true, false),
    event("thp_swpout", false, true, false),
    event("thp_swpout_fallback", false, true, false),
    event("numa_pages_migrated", false, true, false),
    event("numa_pte_updates", false, true, false),
    event("numa_hint_faults", false, true, false),
    // v1's limits as the kernel derives them: the least of the group's and its ancestors'.
    Counter {
        name: "hierarchical_memory_limit",
        source: Source::Stat {
            v1: Some("hierarchical_memory_limit"),
            v2: None,
        },
        vmstat: None,
        unit: Unit::Bytes,
        kind: Kind::Limit,
        numa: false,
    },
    Counter {
        name: "hierarchical_memsw_limit",
        source: Source::Stat {
            v1: Some("hierarchical_memsw_limit"),
            v2: None,
        },
        vmstat: None,
        unit: Unit::Bytes,
        kind: Kind::Limit,
        numa: false,
    },
    // v2's memory.stat has no swap: its swap page counter is a file of its own. v1 prints the
    // group's own swap beside total_swap.
    Counter {
        name: SWAP,
        source: Source::File {
            v1: key("memory.stat", "total_swap"),
            v2: one("memory.swap.current"),
            v1_local: key("memory.stat", "swap"),
            v2_local: None,
        },
        vmstat: None,
        unit: Unit::Bytes,
        kind: Kind::Size,
        numa: false,
    },
    own(
        USAGE,
        one("memory.usage_in_bytes"),
        one("memory.current"),
        None,
        Unit::Bytes,
        Kind::Size,
    ),
    own(
        MEMSW,
        one("memory.memsw.usage_in_bytes"),
        None,
        None,
        Unit::Bytes,
        Kind::Size,
    ),
    own(
        PEAK,
        one("memory.max_usage_in_bytes"),
        one("memory.peak"),
        None,
        Unit::Bytes,
        Kind::Size,
    ),
    own(
        "swap_peak",
        None,
        one("memory.swap.peak"),
        None,
        Unit::Bytes,
        Kind::Size,
    ),
    own(
        "memsw_peak",
        one("memory.memsw.max_usage_in_bytes"),
        None,
        None,
        Unit::Bytes,
        Kind::Size,
    ),
    own(
        "kmem",
        one("memory.kmem.usage_in_bytes"),
        None,
        None,
        Unit::Bytes,
        Kind::Size,
    ),
    own(
        "kmem_peak",
        one("memory.kmem.max_usage_in_bytes"),
        None,
        None,
        Unit::Bytes,
        Kind::Size,
    ),
    own(
        "kmem_tcp",
        one("memory.kmem.tcp.usage_in_bytes"),
        None,
        None,
        Unit::Bytes,
        Kind::Size,
    ),
    own(
        LIMIT_HITS,
        one("memory.failcnt"),
        key("memory.events", "max"),
        key("memory.events.local", "max"),
        Unit::Events,
        Kind::Event,
    ),
    own(
        "memsw_hits",
        one("memory.memsw.failcnt"),
        None,
        None,
        Unit::Events,
        Kind::Event,
    ),
    own(
        OOM_KILLS,
        key("memory.oom_control", "oom_kill"),
        key("memory.events", "oom_kill"),
        key("memory.events.local", "oom_kill"),
        Unit::Events,
        Kind::Event,
    ),
    v2_event(OOM_EVENTS, "oom"),
    v2_event(OOM_GROUP_KILLS, "oom_group_kill"),
    v2_event(HIGH_EVENTS, "high"),
    v2_event("low_events", "low"),
    own(
        "swap_high_events",
        None,
        key("memory.swap.events", "high"),
        None,
        Unit::Events,
        Kind::Event,
    ),
    own(
        "swap_max_events",
        None,
        key("memory.swap.events", "max"),
        None,
        Unit::Events,
        Kind::Event,
    ),
    own(
        "swap_fail_events",
        None,
        key("memory.swap.events", "fail"),
        None,
        Unit::Events,
        Kind::Event,
    ),
];

/// The counter called `name` (without `.local`).
pub fn counter(name: &str) -> Option<&'static Counter> {
    COUNTERS.iter().find(|c| c.name == name)
}

/// The suffix that asks for a group's own value of a counter (`dirty.local`).
const LOCAL: &str = ".local";

/// The name of a counter's group-local value (`dirty` -> `dirty.local`).
pub fn local(name: &str) -> String {
    format!("{name}{LOCAL}")
}

/// A counter name as scenarios write it, taken apart: (`dirty`, true) for `dirty.local`.
pub fn split_local(name: &str) -> (&str, bool) {
    match name.strip_suffix(LOCAL) {
        Some(base) => (base, true),
        None => (name, false),
    }
}

/// The node counter in /proc/vmstat that matches a memcg counter, if any.
pub fn global_key(name: &str) -> Option<&'static str> {
    counter(name).and_then(|c| c.vmstat)
}

/// Where a counter of its own file is read from on `version` (`name.local`: its own value, v2
/// memory.events.local).
pub fn file(version: Version, name: &str) -> Option<Loc> {
    let (base, local) = split_local(name);
    match (counter(base)?.source, version, local) {
        (Source::File { v1, .. }, Version::V1, false) => v1,
        (Source::File { v2, .. }, Version::V2, false) => v2,
        (Source::File { v1_local, .. }, Version::V1, true) => v1_local,
        (Source::File { v2_local, .. }, Version::V2, true) => v2_local,
        _ => None,
    }
}

/// Where a counter comes from for a version: the memory.stat key, or None for `usage`.
/// Errors name the unknown counter and list the known ones.
pub fn stat_key(name: &str, version: Version) -> Result<Option<String>, String> {
    let (base, local) = split_local(name);
    let other = match version {
        Version::V1 => "v2",
        Version::V2 => "v1",
    };
    let Some(c) = counter(base) else {
        let names: Vec<&str> = COUNTERS.iter().map(|c| c.name).collect();
        return Err(format!(
            "unknown counter {name:?} (known: {}; add .local for a group's own value)",
            names.join(", ")
        ));
    };
    match c.source {
        // A counter of its own file: read from that file, where the version has one.
        Source::File {
            v1,
            v2,
            v1_local,
            v2_local,
        } => {
            let (loc, own) = match version {
                Version::V1 => (v1, v1_local),
                Version::V2 => (v2, v2_local),
            };
            match (loc, local, own) {
                (Some(_), false, _) | (Some(_), true, Some(_)) => Ok(None),
                (Some(_), true, None) => Err(format!(
                    "{name}: {base} is read from a file of its own, which has no per-group value on cgroup {}",
                    version.as_str()
                )),
                (None, _, _) => Err(format!(
                    "{name}: cgroup {other} only (cgroup {} has no file for it)",
                    version.as_str()
                )),
            }
        }
        Source::Stat { v1, v2 } => {
            let key = match version {
                Version::V1 => v1,
                Version::V2 => v2,
            }
            .ok_or_else(|| {
                format!(
                    "{name}: cgroup {other} only (cgroup {}'s memory.stat has no such line)",
                    version.as_str()
                )
            })?;
            Ok(Some(match (version, local, c.kind) {
                // A limit the kernel derives is one line, with no total_ twin.
                (_, false, Kind::Limit) => key.to_string(),
                (_, true, Kind::Limit) => {
                    return Err(format!("{name}: {base} has no per-group value"));
                }
                (Version::V1, false, _) => format!("total_{key}"),
                (Version::V1, true, _) => key.to_string(),
                (Version::V2, false, _) => key.to_string(),
                // v2 memory.stat is hierarchical only; a group's own value is derived by the
                // checks.
                (Version::V2, true, _) => {
                    return Err(format!(
                        "{name}: cgroup v2 has no per-group (non-hierarchical) memory.stat"
                    ));
                }
            }))
        }
    }
}

/// The file a counter of its own file is read from under `version` (v1 memory.failcnt for
/// `limit_hits`), or its group-local value (`local`: v2 memory.events.local); None for a
/// memory.stat counter or one the version does not have.
pub fn file_of(name: &str, version: crate::model::Version, local: bool) -> Option<&'static str> {
    let Source::File {
        v1,
        v2,
        v1_local,
        v2_local,
    } = counter(name)?.source
    else {
        return None;
    };
    match (version, local) {
        (crate::model::Version::V1, false) => v1,
        (crate::model::Version::V2, false) => v2,
        (crate::model::Version::V1, true) => v1_local,
        (crate::model::Version::V2, true) => v2_local,
    }
    .map(|l| l.file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_in_the_table_once() {
        for c in COUNTERS {
            assert_eq!(COUNTERS.iter().filter(|d| d.name == c.name).count(), 1);
        }
        for n in [DIRTY, WRITEBACK, FILE, USAGE, MEMSW] {
            assert!(counter(n).is_some(), "{n}");
        }
        assert_eq!(file(Version::V2, MEMSW), None);
        assert_eq!(file(Version::V1, DIRTY), None);
        assert_eq!(
            file(Version::V2, SWAP).map(|l| l.file),
            Some("memory.swap.current")
        );
        assert_eq!(global_key("swap"), None);
        assert_eq!(numa_key(DIRTY), Some("file_dirty"));
        assert_eq!(numa_key("swap"), None);
        assert_eq!(numa_key(USAGE), None);
        assert_eq!(split_local(&local(DIRTY)), (DIRTY, true));
        assert_eq!(split_local(DIRTY), (DIRTY, false));
    }

    #[test]
    fn vocabulary_maps_per_version() {
        assert_eq!(
            stat_key("dirty", Version::V1).unwrap().unwrap(),
            "total_dirty"
        );
        assert_eq!(
            stat_key("dirty.local", Version::V1).unwrap().unwrap(),
            "dirty"
        );
        assert_eq!(
            stat_key("dirty", Version::V2).unwrap().unwrap(),
            "file_dirty"
        );
        assert_eq!(stat_key("usage", Version::V2).unwrap(), None);
        assert!(stat_key("dirty.local", Version::V2).is_err());
        assert!(
            stat_key("bogus", Version::V1)
                .unwrap_err()
                .contains("known")
        );
    }
}
