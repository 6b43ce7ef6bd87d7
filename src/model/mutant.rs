//! The kill matrix of the mutant schemata (kernel-patches/schemata/memcg-mutate.patch): one kernel
//! with every fault compiled in, one chosen per boot with `memcg_mutate=KIND:ITEM:MODE`; for each
//! fault, whether the suite caught the kernel (killed, by which check) or not (survived).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::Version;

/// What the kernel item is (the patch's KIND).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A memory.stat item (a node or memcg stat item: `file_dirty`, `anon`, v1's `swap`).
    Stat,
    /// A vm event counted per memcg (`pgfault`, `pgscan_direct`).
    Event,
    /// A memory.events item (`low` .. `oom_group_kill`, `swap_high`, `swap_max`, `swap_fail`).
    Memevent,
    /// A page counter as its usage file reads it (`memory`, `swap`, `memsw`, `kmem`).
    Counter,
    /// A node stat item a migrated folio moves between nodes (`file`, `shmem`, `shmem_thp`,
    /// `swapcached`, `file_dirty`): drop moves the nodes' counts only, fraction one page per folio.
    Migrate,
}

/// The fault (the patch's MODE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The memcg never sees it.
    Drop,
    /// It is never decremented.
    Leak,
    /// It is counted twice.
    Double,
    /// It is not passed to the ancestors.
    Local,
    /// A page counter reads 1/8 low (migrate: one page moves per folio, whatever its size).
    Fraction,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Stat => "stat",
            Kind::Event => "event",
            Kind::Memevent => "memevent",
            Kind::Counter => "counter",
            Kind::Migrate => "migrate",
        }
    }
}

impl Mode {
    pub const ALL: [Mode; 5] = [
        Mode::Drop,
        Mode::Leak,
        Mode::Double,
        Mode::Local,
        Mode::Fraction,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Drop => "drop",
            Mode::Leak => "leak",
            Mode::Double => "double",
            Mode::Local => "local",
            Mode::Fraction => "fraction",
        }
    }

    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// One fault of one kernel item.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Mutant {
    pub kind: Kind,
    pub item: String,
    pub mode: Mode,
}

impl fmt::Display for Mutant {
    /// The kernel command line's value: `stat:file_dirty:drop`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}",
            self.kind.as_str(),
            self.item,
            self.mode.as_str()
        )
    }
}

/// What became of a mutant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fate {
    /// The suite failed the kernel (a check, or the kernel crashed or hung).
    Killed,
    /// The scenarios in which its fields move passed.
    Survived,
    /// Not run: no test can tell it from the stock kernel (the reason says why).
    Equivalent,
    /// The boot judged nothing (the reason says why); neither killed nor survived.
    Untested,
}

/// One row of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub mutant: Mutant,
    /// The interface fields the item feeds (`memory.stat:file_dirty`, `memory.numa_stat:...`).
    pub fields: Vec<String>,
    /// The scenarios run: those in which one of the fields moved, quickest first.
    pub scenarios: Vec<String>,
    pub fate: Fate,
    /// The scenario and check that killed it (`boot` when the kernel died).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// The killing check's message, or why it survived, is equivalent or untested.
    #[serde(default)]
    pub message: String,
    /// Whether the killing message names one of the fields (in memcgtest's words).
    #[serde(default)]
    pub names_field: bool,
    pub seconds: f64,
}

/// The kill matrix of one kernel under one cgroup version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    pub cgroup: Version,
    /// The kernel's release (uname -r of the guest).
    pub kernel: String,
    /// When and where it was measured: date, host, accelerator.
    pub measured: String,
    pub entries: Vec<Entry>,
    /// Fields the suite moves that no mutant of the patch reaches, and why.
    #[serde(default)]
    pub unmapped: Vec<(String, String)>,
}

/// How a field stands in a matrix: the modes whose mutant was killed, and those that survived
/// (with why no check of the suite kills them, where that is known: see `SURVIVORS`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Proof {
    pub killed: Vec<Mode>,
    pub survived: Vec<Mode>,
    pub equivalent: Vec<Mode>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

/// Why a mutant survives the suite, for those the matrices found alive (`KIND:ITEM:MODE`, why).
pub const SURVIVORS: &[(&str, &str)] = &[
    (
        "stat:file_thp:drop",
        "when a file's huge pages appear is the kernel's choice (6.12 maps them at the fault, through a MADV_HUGEPAGE mapping's readahead; 6.1 declines the collapse): no step says how many there must be",
    ),
    (
        "stat:file_thp:leak",
        "a file's huge pages stay cached after their task, and no scenario drops them while it samples",
    ),
    (
        "stat:percpu:drop",
        "500 new groups charge 2.8 MiB of percpu on 2 CPUs; no step can state the amount: it scales with the possible CPUs, the tolerance with the online ones",
    ),
    (
        "stat:percpu:leak",
        "the 500 groups are removed only after the scenario stopped sampling",
    ),
    (
        "stat:percpu:double",
        "2.8 MiB more stays within the kernel-parts rule's tolerance (six unflushed counters: 6.5 MiB on 2 CPUs)",
    ),
    (
        "stat:percpu:local",
        "2.8 MiB stays within hierarchy((top))'s tolerance for sizes (4 groups x 1 MiB unflushed on 2 CPUs), which it keeps: the top group's own percpu (its children's memcg structures, charged to it when they were made) is a size no child shows",
    ),
    (
        "stat:slab_unreclaimable:double",
        "kernel-memory's 5.4 MiB more stays within the kernel-parts rule's tolerance (6.5 MiB on 2 CPUs)",
    ),
    (
        "stat:workingset_restore_anon:drop",
        "restores are refaults of pages that were active when evicted: restores <= refaults is all that holds",
    ),
    (
        "stat:workingset_restore_file:drop",
        "restores are refaults of pages that were active when evicted: restores <= refaults is all that holds",
    ),
    (
        "stat:workingset_nodereclaim:drop",
        "shadow nodes are reclaimed under slab pressure at the kernel's choice: no step says how many",
    ),
    (
        "stat:workingset_nodereclaim:double",
        "shadow nodes are reclaimed under slab pressure at the kernel's choice: no step says how many",
    ),
    (
        "event:pgrefill:double",
        "the node counts no refill of a cgroup's own reclaim (shrink_active_list: only when !cgroup_reclaim), so within-node cannot bound it, and how many active pages reclaim scans is its own choice",
    ),
    (
        "event:pgmajfault:double",
        "v1 (v2's is killed by within-node): a v1 group's reads may show its events up to 3 s late, so within-node holds its rise to the node's over 3 s more, which no scenario's major faults outlast; the tasks' own major faults are no truth (a retried fault is major for the task, not the memcg)",
    ),
    (
        "event:pgscan_khugepaged:double",
        "khugepaged reclaims a few pages in machine-pressure only (556): within every rule's tolerance, within-node's reclaim batch (2 CPUs x 544) too",
    ),
    (
        "event:pgsteal_khugepaged:drop",
        "khugepaged reclaims a few pages in machine-pressure only: within the tolerance of every rule over them",
    ),
    (
        "event:pgsteal_kswapd:drop",
        "a lost count passes every upper bound (pgsteal <= pgscan, within-node), and no truth bounds kswapd's steals in a group from below: the node's count holds every group's",
    ),
    (
        "counter:kmem:drop",
        "v1's kernel memory counter at 0 passes every rule over it (kmem <= usage, kmem <= its watermark): v1 shows no kernel statistic to hold it to, and no v1 scenario holds an amount of kernel memory a step states (kernel-memory runs under v2)",
    ),
    (
        "counter:kmem:fraction",
        "v1's kernel memory counter 1/8 low passes every rule over it (kmem <= usage, kmem <= its watermark): v1 shows no kernel statistic to hold it to, and no v1 scenario holds an amount of kernel memory a step states (kernel-memory runs under v2)",
    ),
    (
        "memevent:high:double",
        "the checks over memory events ask for at least one (limit-counters, under-high, oom-kills count kills, not events): twice as many pass",
    ),
    (
        "memevent:low:double",
        "the checks over memory events ask for at least one (limit-counters, under-high, oom-kills count kills, not events): twice as many pass",
    ),
    (
        "memevent:max:double",
        "the checks over memory events ask for at least one (limit-counters, under-high, oom-kills count kills, not events): twice as many pass",
    ),
    (
        "memevent:oom:double",
        "the checks over memory events ask for at least one (limit-counters, under-high, oom-kills count kills, not events): twice as many pass",
    ),
    (
        "memevent:swap_fail:double",
        "the checks over memory events ask for at least one (limit-counters, under-high, oom-kills count kills, not events): twice as many pass",
    ),
    (
        "memevent:swap_high:double",
        "the checks over memory events ask for at least one (limit-counters, under-high, oom-kills count kills, not events): twice as many pass",
    ),
];

/// The reason a surviving mutant is left so, if one is given.
pub fn survivor_reason(mutant: &Mutant) -> Option<&'static str> {
    let m = mutant.to_string();
    SURVIVORS.iter().find(|(k, _)| *k == m).map(|(_, why)| *why)
}

impl Matrix {
    /// The field's proof, or None when no entry of the matrix feeds it. A mode counts as killed
    /// when the mutants of every item the field sums (memory.stat's `slab`, v1's numa `total`)
    /// were, and as survived when one of them survived.
    pub fn proof(&self, field: &str) -> Option<Proof> {
        let feeding: Vec<&Entry> = (self.entries.iter())
            .filter(|e| e.fields.iter().any(|f| f == field))
            .collect();
        if feeding.is_empty() {
            return None;
        }
        let mut p = Proof::default();
        for mode in Mode::ALL {
            let of: Vec<&&Entry> = feeding.iter().filter(|e| e.mutant.mode == mode).collect();
            if of.is_empty() {
                continue;
            }
            if of.iter().any(|e| e.fate == Fate::Survived) {
                p.survived.push(mode);
                for e in of.iter().filter(|e| e.fate == Fate::Survived) {
                    if let Some(why) = survivor_reason(&e.mutant) {
                        p.reasons.push(format!("{}: {why}", e.mutant));
                    }
                }
            } else if of.iter().any(|e| e.fate == Fate::Killed) {
                p.killed.push(mode);
            } else if of.iter().all(|e| e.fate == Fate::Equivalent) {
                p.equivalent.push(mode);
            }
        }
        Some(p)
    }

    /// Killed, survived, equivalent and untested mutants.
    pub fn counts(&self) -> [usize; 4] {
        let n = |f: Fate| self.entries.iter().filter(|e| e.fate == f).count();
        [
            n(Fate::Killed),
            n(Fate::Survived),
            n(Fate::Equivalent),
            n(Fate::Untested),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(item: &str, mode: Mode, fate: Fate, fields: &[&str]) -> Entry {
        Entry {
            mutant: Mutant {
                kind: Kind::Stat,
                item: item.into(),
                mode,
            },
            fields: fields.iter().map(|f| f.to_string()).collect(),
            scenarios: vec![],
            fate,
            scenario: None,
            check: None,
            message: String::new(),
            names_field: false,
            seconds: 1.0,
        }
    }

    #[test]
    fn a_sum_is_proven_only_when_every_part_is() {
        let m = Matrix {
            cgroup: Version::V2,
            kernel: "6.12".into(),
            measured: String::new(),
            entries: vec![
                entry(
                    "slab_reclaimable",
                    Mode::Drop,
                    Fate::Killed,
                    &["s:slab", "s:r"],
                ),
                entry(
                    "slab_unreclaimable",
                    Mode::Drop,
                    Fate::Survived,
                    &["s:slab"],
                ),
                entry(
                    "slab_reclaimable",
                    Mode::Leak,
                    Fate::Killed,
                    &["s:slab", "s:r"],
                ),
                entry("slab_unreclaimable", Mode::Leak, Fate::Killed, &["s:slab"]),
            ],
            unmapped: vec![],
        };
        let p = m.proof("s:slab").unwrap();
        assert_eq!(p.killed, vec![Mode::Leak]);
        assert_eq!(p.survived, vec![Mode::Drop]);
        assert_eq!(m.proof("s:r").unwrap().killed, vec![Mode::Drop, Mode::Leak]);
        assert!(m.proof("s:other").is_none());
        assert_eq!(m.counts(), [3, 1, 0, 0]);
        let text = Mutant {
            kind: Kind::Counter,
            item: "memory".into(),
            mode: Mode::Fraction,
        }
        .to_string();
        assert_eq!(text, "counter:memory:fraction");
    }
}
