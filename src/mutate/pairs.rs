//! Which mutants of the schemata kernel a coverage table calls for: every field the suite moves
//! (covered), the kernel items it is made of, and the faults that apply to each; the scenarios to
//! run are those in which one of the item's fields moved, the quickest first.

use std::collections::BTreeMap;

use crate::coverage::{Status, Table};
use crate::model::Version;
use crate::model::mutant::{Entry, Fate, Kind, Mode, Mutant};

/// A mutant to run: the fields it feeds and the scenarios in which they moved.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub mutant: Mutant,
    pub fields: Vec<String>,
    pub scenarios: Vec<String>,
    /// Why it is not run (no test can tell it from stock), if so.
    pub equivalent: Option<&'static str>,
}

/// The vm events memcg counts (6.12's memcg_vm_event_stat, by their vmstat names).
const EVENTS: &[&str] = &[
    "pgpgin",
    "pgpgout",
    "pgscan_kswapd",
    "pgscan_direct",
    "pgscan_khugepaged",
    "pgsteal_kswapd",
    "pgsteal_direct",
    "pgsteal_khugepaged",
    "pgfault",
    "pgmajfault",
    "pgrefill",
    "pgactivate",
    "pgdeactivate",
    "pglazyfree",
    "pglazyfreed",
    "swpin_zero",
    "swpout_zero",
    "zswpin",
    "zswpout",
    "zswpwb",
    "thp_fault_alloc",
    "thp_collapse_alloc",
    "thp_swpout",
    "thp_swpout_fallback",
    "numa_pages_migrated",
    "numa_pte_updates",
    "numa_hint_faults",
];

/// Stat items that only ever grow (node items counted like events): a leak changes nothing.
const GROW_ONLY: &[&str] = &[
    "workingset_refault_anon",
    "workingset_refault_file",
    "workingset_activate_anon",
    "workingset_activate_file",
    "workingset_restore_anon",
    "workingset_restore_file",
    "workingset_nodereclaim",
    "pgdemote_kswapd",
    "pgdemote_direct",
    "pgdemote_khugepaged",
    "pgpromote_success",
];

/// The node stat items a migrated page-cache folio moves between nodes in
/// __folio_migrate_mapping(), each through the schemata's migrate_mod_lruvec().
const MIGRATED: &[&str] = &["file", "shmem", "shmem_thp", "swapcached", "file_dirty"];

/// Why a field has no mutant of its own in the patch.
pub const NOT_A_COUNT: &str = "a setting, watermark or failure count: the schemata patch mutates counts (memory.stat, memory.events, the usage files); the single mutants of kernel-patches/ prove it";

/// The kernel items (KIND, ITEM) a field of the interface is made of, or why none.
pub fn items(field: &str, version: Version) -> Result<Vec<(Kind, String)>, &'static str> {
    let (file, key) = field.split_once(':').unwrap_or((field, ""));
    let one = |k: Kind, n: &str| Ok(vec![(k, n.to_string())]);
    match file {
        "memory.current" | "memory.usage_in_bytes" => one(Kind::Counter, "memory"),
        "memory.swap.current" => one(Kind::Counter, "swap"),
        "memory.memsw.usage_in_bytes" => one(Kind::Counter, "memsw"),
        "memory.kmem.usage_in_bytes" => one(Kind::Counter, "kmem"),
        "memory.events" | "memory.events.local" => one(Kind::Memevent, key),
        "memory.swap.events" => one(Kind::Memevent, &format!("swap_{key}")),
        "memory.kmem.tcp.usage_in_bytes" => Err(
            "v1's tcp page counter: the schemata patch mutates the memory, swap, memsw and kmem counters only",
        ),
        // v1 prints the OOM kill count of memory.events there.
        "memory.oom_control" if key == "oom_kill" => one(Kind::Memevent, "oom_kill"),
        "memory.stat" => stat_items(key, version),
        "memory.numa_stat" => numa_items(key, version),
        _ => Err(NOT_A_COUNT),
    }
}

/// A memory.stat key's items: v1's names and `total_` sums mapped to the kernel's, the sums v2
/// prints (`slab`, `pgscan`, `pgsteal`) to their parts.
fn stat_items(key: &str, version: Version) -> Result<Vec<(Kind, String)>, &'static str> {
    let key = match version {
        Version::V1 => key.strip_prefix("total_").unwrap_or(key),
        Version::V2 => key,
    };
    let stat = |names: &[&str]| Ok(names.iter().map(|n| (Kind::Stat, n.to_string())).collect());
    let event = |names: &[&str]| Ok(names.iter().map(|n| (Kind::Event, n.to_string())).collect());
    match key {
        "slab" => stat(&["slab_reclaimable", "slab_unreclaimable"]),
        "pgscan" => event(&["pgscan_kswapd", "pgscan_direct", "pgscan_khugepaged"]),
        "pgsteal" => event(&["pgsteal_kswapd", "pgsteal_direct", "pgsteal_khugepaged"]),
        "hierarchical_memory_limit" | "hierarchical_memsw_limit" => Err(NOT_A_COUNT),
        k if EVENTS.contains(&k) => event(&[k]),
        "cache" => stat(&["file"]),
        "rss" => stat(&["anon"]),
        "rss_huge" => stat(&["anon_thp"]),
        "mapped_file" => stat(&["file_mapped"]),
        "dirty" => stat(&["file_dirty"]),
        "writeback" => stat(&["file_writeback"]),
        k => stat(&[k]),
    }
}

/// A memory.numa_stat key's items: v2 prints stat items per node, v1 sums of the LRU lists.
fn numa_items(key: &str, version: Version) -> Result<Vec<(Kind, String)>, &'static str> {
    let parts: &[&str] = match (version, key.strip_prefix("hierarchical_").unwrap_or(key)) {
        // Per node, also what migration moves across nodes.
        (Version::V2, k) if MIGRATED.contains(&k) => {
            return Ok(vec![(Kind::Stat, k.into()), (Kind::Migrate, k.into())]);
        }
        (Version::V2, _) => return stat_items(key, version),
        (Version::V1, "total") => &[
            "inactive_anon",
            "active_anon",
            "inactive_file",
            "active_file",
            "unevictable",
        ],
        (Version::V1, "file") => &["inactive_file", "active_file"],
        (Version::V1, "anon") => &["inactive_anon", "active_anon"],
        (Version::V1, "unevictable") => &["unevictable"],
        _ => return Err(NOT_A_COUNT),
    };
    Ok(parts.iter().map(|p| (Kind::Stat, p.to_string())).collect())
}

/// The faults that apply to an item, and those that would be equivalent to stock (with why).
pub fn modes(kind: Kind, item: &str, version: Version) -> Vec<(Mode, Option<&'static str>)> {
    use Mode::*;
    let grows = "equivalent: the item only ever grows, so a kernel that never decrements it is the stock kernel";
    let alone = "equivalent: cgroup v1 raises a memory event in its group alone (memcg_memory_event stops there off the default hierarchy), so a count not passed to the ancestors is v1's own way";
    match kind {
        Kind::Memevent if version == Version::V1 => {
            vec![(Drop, None), (Double, None), (Local, Some(alone))]
        }
        Kind::Stat if GROW_ONLY.contains(&item) => {
            vec![
                (Drop, None),
                (Leak, Some(grows)),
                (Double, None),
                (Local, None),
            ]
        }
        Kind::Stat => vec![(Drop, None), (Leak, None), (Double, None), (Local, None)],
        Kind::Event | Kind::Memevent => vec![(Drop, None), (Double, None), (Local, None)],
        Kind::Counter if matches!(item, "memory" | "memsw") => {
            vec![(Drop, None), (Leak, None), (Double, None), (Fraction, None)]
        }
        Kind::Counter => vec![(Drop, None), (Double, None), (Fraction, None)],
        // One page per folio differs only for a large folio: shmem's huge pages (also file).
        Kind::Migrate if matches!(item, "file" | "shmem" | "shmem_thp") => {
            vec![(Drop, None), (Fraction, None)]
        }
        Kind::Migrate => vec![(Drop, None)],
    }
}

/// The plans for a coverage table: every covered field's items and modes, one plan per mutant
/// (its fields and scenarios merged); and the covered fields no mutant reaches, with why.
/// `seconds` orders the scenarios, quickest first.
pub fn plan(table: &Table, seconds: &BTreeMap<String, f64>) -> (Vec<Plan>, Vec<(String, String)>) {
    let mut plans: BTreeMap<Mutant, Plan> = BTreeMap::new();
    let mut unmapped = Vec::new();
    let covered: Vec<&crate::coverage::Row> = (table.rows.iter())
        .filter(|r| r.status == Status::Covered)
        .collect();
    // The items that are covered fields of their own: a part of a sum (v2's pgscan) is a mutant
    // only where it is covered itself, and runs only where it moved itself (pgscan_khugepaged
    // moves in machine-pressure alone, pgscan in every reclaim).
    // A migrate item rides along a per-node field and is no part of a sum.
    type Items = Vec<(Kind, String)>;
    let counts =
        |its: Items| -> (Items, Items) { its.into_iter().partition(|i| i.0 != Kind::Migrate) };
    let alone: Vec<(Kind, String)> = (covered.iter())
        .filter_map(|r| items(&r.field, table.version).ok())
        .map(|its| counts(its).0)
        .filter(|its| its.len() == 1)
        .flatten()
        .collect();
    for row in covered {
        let (its, sum): (Vec<(Kind, String)>, bool) =
            match items(&row.field, table.version).map(counts) {
                Ok((its, moved)) if its.len() > 1 => (
                    (its.into_iter().filter(|i| alone.contains(i)))
                        .chain(moved)
                        .collect(),
                    true,
                ),
                Ok((its, moved)) => (its.into_iter().chain(moved).collect(), false),
                Err(why) => {
                    unmapped.push((row.field.clone(), why.to_string()));
                    continue;
                }
            };
        for (kind, item) in its {
            for (mode, equivalent) in modes(kind, &item, table.version) {
                let mutant = Mutant {
                    kind,
                    item: item.clone(),
                    mode,
                };
                let p = plans.entry(mutant.clone()).or_insert(Plan {
                    mutant,
                    fields: Vec::new(),
                    scenarios: Vec::new(),
                    equivalent,
                });
                push_new(&mut p.fields, &row.field);
                // A part runs where it moved itself, not everywhere its sum did.
                for s in row.exercised.iter().filter(|_| !sum) {
                    push_new(&mut p.scenarios, s);
                }
            }
        }
    }
    let mut plans: Vec<Plan> = plans.into_values().collect();
    for p in &mut plans {
        let at = |s: &String| seconds.get(s).copied().unwrap_or(f64::MAX);
        p.scenarios
            .sort_by(|a, b| at(a).total_cmp(&at(b)).then(a.cmp(b)));
    }
    (plans, unmapped)
}

fn push_new(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.to_string());
    }
}

/// The matrix entry of a plan no boot runs (equivalent).
pub fn equivalent_entry(p: &Plan, why: &str) -> Entry {
    Entry {
        mutant: p.mutant.clone(),
        fields: p.fields.clone(),
        scenarios: Vec::new(),
        fate: Fate::Equivalent,
        scenario: None,
        check: None,
        message: why.to_string(),
        names_field: false,
        seconds: 0.0,
    }
}
