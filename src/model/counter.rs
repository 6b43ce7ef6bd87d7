//! The counter table: every counter memcgtest samples, where each cgroup version keeps it, the
//! node counter in /proc/vmstat that matches it and its unit. Everything that names a counter
//! (scenario validation, the sampler's sources, the oracle, the timelines) reads it here.

use super::Version;

pub const DIRTY: &str = "dirty";
pub const WRITEBACK: &str = "writeback";
pub const FILE: &str = "file";
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

/// The v2 memory.numa_stat key of a counter, if it has one: the node counters (those with a
/// /proc/vmstat key) are kept per node and per memcg, under the name memory.stat gives them.
pub fn numa_key(name: &str) -> Option<&'static str> {
    match counter(name)? {
        Counter {
            source: Source::Stat { v2, .. },
            vmstat: Some(_),
            ..
        } => Some(v2),
        _ => None,
    }
}

/// Where a counter is read for each cgroup version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A memory.stat key; v1's hierarchical value is `total_<v1>`, v2's memory.stat is
    /// hierarchical only.
    Stat { v1: &'static str, v2: &'static str },
    /// A file of its own (or a key of one); `None`: the version has no such file.
    File { v1: Option<Loc>, v2: Option<Loc> },
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

const fn own(name: &'static str, v1: Option<Loc>, v2: Option<Loc>, unit: Unit) -> Counter {
    Counter {
        name,
        source: Source::File { v1, v2 },
        vmstat: None,
        unit,
    }
}

/// The unit of a counter's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes in both versions (the /proc/vmstat key counts pages).
    Bytes,
    /// A count of events.
    Events,
}

/// A counter in memcgtest's vocabulary. Hierarchical by default (v1 total_*, v2 memory.stat);
/// `<name>.local` asks for the group's own value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    pub name: &'static str,
    pub source: Source,
    /// The node counter in /proc/vmstat that matches it, if any.
    pub vmstat: Option<&'static str>,
    pub unit: Unit,
}

const fn stat(
    name: &'static str,
    v1: &'static str,
    v2: &'static str,
    vmstat: Option<&'static str>,
) -> Counter {
    Counter {
        name,
        source: Source::Stat { v1, v2 },
        vmstat,
        unit: Unit::Bytes,
    }
}

/// Every counter, memory.stat ones first (the order error messages list them in).
pub const COUNTERS: &[Counter] = &[
    stat(DIRTY, "dirty", "file_dirty", Some("nr_dirty")),
    stat(
        WRITEBACK,
        "writeback",
        "file_writeback",
        Some("nr_writeback"),
    ),
    stat(FILE, "cache", "file", Some("nr_file_pages")),
    stat(ANON, "rss", "anon", Some("nr_anon_pages")),
    stat("mapped", "mapped_file", "file_mapped", Some("nr_mapped")),
    stat("shmem", "shmem", "shmem", Some("nr_shmem")),
    // v2's memory.stat has no swap: its swap page counter is a file of its own.
    own(
        SWAP,
        Some(Loc {
            file: "memory.stat",
            key: Some("total_swap"),
        }),
        one("memory.swap.current"),
        Unit::Bytes,
    ),
    own(
        USAGE,
        one("memory.usage_in_bytes"),
        one("memory.current"),
        Unit::Bytes,
    ),
    own(MEMSW, one("memory.memsw.usage_in_bytes"), None, Unit::Bytes),
    own(
        PEAK,
        one("memory.max_usage_in_bytes"),
        one("memory.peak"),
        Unit::Bytes,
    ),
    own(
        LIMIT_HITS,
        one("memory.failcnt"),
        Some(Loc {
            file: "memory.events",
            key: Some("max"),
        }),
        Unit::Events,
    ),
    own(
        OOM_KILLS,
        Some(Loc {
            file: "memory.oom_control",
            key: Some("oom_kill"),
        }),
        Some(Loc {
            file: "memory.events",
            key: Some("oom_kill"),
        }),
        Unit::Events,
    ),
    own(
        OOM_EVENTS,
        None,
        Some(Loc {
            file: "memory.events",
            key: Some("oom"),
        }),
        Unit::Events,
    ),
    own(
        OOM_GROUP_KILLS,
        None,
        Some(Loc {
            file: "memory.events",
            key: Some("oom_group_kill"),
        }),
        Unit::Events,
    ),
    own(
        HIGH_EVENTS,
        None,
        Some(Loc {
            file: "memory.events",
            key: Some("high"),
        }),
        Unit::Events,
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

/// Where a counter of its own file is read from on `version`.
pub fn file(version: Version, name: &str) -> Option<Loc> {
    match (counter(name)?.source, version) {
        (Source::File { v1, .. }, Version::V1) => v1,
        (Source::File { v2, .. }, Version::V2) => v2,
        (Source::Stat { .. }, _) => None,
    }
}

/// Where a counter comes from for a version: the memory.stat key, or None for `usage`.
/// Errors name the unknown counter and list the known ones.
pub fn stat_key(name: &str, version: Version) -> Result<Option<String>, String> {
    let (base, local) = split_local(name);
    // A counter of its own file: read from that file, where the version has one.
    if let Some(c) = counter(base)
        && let Source::File { v1, v2 } = c.source
    {
        let (loc, other) = match version {
            Version::V1 => (v1, "v2"),
            Version::V2 => (v2, "v1"),
        };
        return match (loc, local) {
            (Some(_), false) => Ok(None),
            (Some(_), true) => Err(format!(
                "{name}: {base} is read from a file of its own, which has no per-group value"
            )),
            (None, _) => Err(format!(
                "{name}: cgroup {other} only (cgroup {} has no file for it)",
                version.as_str()
            )),
        };
    }
    let (v1, v2) = COUNTERS
        .iter()
        .find_map(|c| match c.source {
            Source::Stat { v1, v2 } if c.name == base => Some((v1, v2)),
            _ => None,
        })
        .ok_or_else(|| {
            let names: Vec<&str> = COUNTERS.iter().map(|c| c.name).collect();
            format!(
                "unknown counter {name:?} (known: {}; add .local for a group's own value)",
                names.join(", ")
            )
        })?;
    Ok(Some(match (version, local) {
        (Version::V1, false) => format!("total_{v1}"),
        (Version::V1, true) => v1.to_string(),
        (Version::V2, false) => v2.to_string(),
        // v2 memory.stat is hierarchical only; a group's own value is derived by the checks.
        (Version::V2, true) => {
            return Err(format!(
                "{name}: cgroup v2 has no per-group (non-hierarchical) memory.stat"
            ));
        }
    }))
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
