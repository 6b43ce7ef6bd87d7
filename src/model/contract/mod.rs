//! The contracts: every behavioural promise the kernel's cgroup memory documentation makes
//! (Documentation/admin-guide/cgroup-v2.rst, Memory; cgroup-v1/memory.rst), each with the
//! condition it names. The checks say which promises they judge and quote the one a failure
//! broke; `memcgtest contracts` lists them with the checks, scenarios and mutants that judge them.
//! Interface facts (file names, units, output formats) and permissions ("the usage may go over
//! the limit temporarily") are not promises of behaviour: the checks' tolerances hold them.

pub mod v1;
pub mod v2;

use serde::{Serialize, Serializer};

/// The document a promise is made in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Doc {
    /// Documentation/admin-guide/cgroup-v2.rst, section Memory (and the parts of the general
    /// sections that speak of memory: mount options, distribution models, writeback).
    V2,
    /// Documentation/admin-guide/cgroup-v1/memory.rst.
    V1,
}

impl Doc {
    pub fn path(self) -> &'static str {
        match self {
            Doc::V2 => "Documentation/admin-guide/cgroup-v2.rst",
            Doc::V1 => "Documentation/admin-guide/cgroup-v1/memory.rst",
        }
    }

    /// The short name reports use: cgroup-v2.rst, memory.rst (v1).
    pub fn short(self) -> &'static str {
        match self {
            Doc::V2 => "cgroup-v2.rst",
            Doc::V1 => "cgroup-v1/memory.rst",
        }
    }
}

/// What a promise is about. Each class has a mutant in kernel-patches/ written from one of its
/// promises, caught by the check that judges that promise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// Hard limits: memory.max, v1 limit_in_bytes, memsw; what they let through, when they act.
    Limit,
    /// memory.high: throttling, reclaim above it, never the OOM killer.
    High,
    /// memory.min and memory.low: what they keep, for whom, how it is shared.
    Protection,
    /// Reclaim on request: memory.reclaim, v1 force_empty, swappiness.
    Reclaim,
    /// The OOM killer: whom it kills, when, memory.oom.group, v1 oom_control.
    Oom,
    /// Swap: memory.swap.*, what may be swapped and when.
    Swap,
    /// Watermarks: memory.peak and its reset, v1 max_usage_in_bytes.
    Peak,
    /// Event counters and notifications: memory.events(.local), failcnt, eventfd, file events.
    Events,
    /// What memory.stat and memory.numa_stat count, and where.
    Stat,
    /// Ancestors and descendants: charges, stats and limits along the tree.
    Hierarchy,
    /// Whose memory a page is: first touch, migration of tasks, v1 charge moving, removal.
    Ownership,
    /// The knobs themselves: defaults, values read back, deprecated v1 knobs.
    Knobs,
    /// Dirty memory and writeback per group.
    Writeback,
}

impl Class {
    pub const ALL: [Class; 13] = [
        Class::Limit,
        Class::High,
        Class::Protection,
        Class::Reclaim,
        Class::Oom,
        Class::Swap,
        Class::Peak,
        Class::Events,
        Class::Stat,
        Class::Hierarchy,
        Class::Ownership,
        Class::Knobs,
        Class::Writeback,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Class::Limit => "limit",
            Class::High => "high",
            Class::Protection => "protection",
            Class::Reclaim => "reclaim",
            Class::Oom => "oom",
            Class::Swap => "swap",
            Class::Peak => "peak",
            Class::Events => "events",
            Class::Stat => "stat",
            Class::Hierarchy => "hierarchy",
            Class::Ownership => "ownership",
            Class::Knobs => "knobs",
            Class::Writeback => "writeback",
        }
    }
}

/// The most of a promise's quote a failure message carries.
const QUOTE_MAX: usize = 100;

/// One promise of the documentation.
#[derive(Debug)]
pub struct Contract {
    /// Stable id, `v2.max.oom`: what scenario files (`promise = ...`), mutants (`Promises:`)
    /// and results name.
    pub id: &'static str,
    pub doc: Doc,
    /// The file or section that makes it.
    pub topic: &'static str,
    /// The promise, quoted from the document ("…" where words are left out).
    pub quote: &'static str,
    /// The condition it names, as a scenario reaches it.
    pub condition: &'static str,
    pub class: Class,
    /// Why no test can judge it; None for the promises the suite judges.
    pub unjudged: Option<&'static str>,
}

impl Contract {
    /// The line a failure quotes: `cgroup-v2.rst, memory.max: "..."`, the quote cut at a word
    /// after QUOTE_MAX characters (a failure reads in one line; `memcgtest contracts` has it whole).
    pub fn cite(&self) -> String {
        let q = self.quote;
        let quote = match q.char_indices().nth(QUOTE_MAX) {
            None => q.to_string(),
            Some((i, _)) => format!("{} …", q[..i].rsplit_once(' ').map_or(&q[..i], |(a, _)| a)),
        };
        format!("{}, {}: \"{quote}\"", self.doc.short(), self.topic)
    }
}

impl PartialEq for Contract {
    fn eq(&self, other: &Contract) -> bool {
        self.id == other.id
    }
}

impl Serialize for Contract {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id)
    }
}

/// Every contract: cgroup v2's, then v1's.
pub fn all() -> impl Iterator<Item = &'static Contract> {
    v2::ALL.iter().chain(v1::ALL.iter()).copied()
}

/// The contract `id`.
pub fn get(id: &str) -> Option<&'static Contract> {
    all().find(|c| c.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failure quotes a promise in at most QUOTE_MAX characters and a word, whole words.
    #[test]
    fn a_long_quote_is_cut_at_a_word() {
        for c in all() {
            let cite = c.cite();
            let quote = cite.split_once(": \"").unwrap().1.trim_end_matches('"');
            assert!(quote.chars().count() <= QUOTE_MAX + 2, "{cite}");
            match quote.strip_suffix(" …") {
                Some(cut) => assert!(
                    c.quote.starts_with(cut) && c.quote[cut.len()..].starts_with(' '),
                    "{cite}"
                ),
                None => assert_eq!(quote, c.quote),
            }
        }
    }

    /// Ids are unique and name their document; every class has promises; each promise is
    /// quoted and has a condition; a reason is given only where nothing judges.
    #[test]
    fn the_table_is_well_formed() {
        let mut ids: Vec<&str> = all().map(|c| c.id).collect();
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n, "duplicate contract ids");
        for c in all() {
            let prefix = match c.doc {
                Doc::V2 => "v2.",
                Doc::V1 => "v1.",
            };
            assert!(c.id.starts_with(prefix), "{}", c.id);
            assert!(
                c.id.chars()
                    .all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || ".-_".contains(x)),
                "{}",
                c.id
            );
            assert!(!c.quote.is_empty() && !c.condition.is_empty(), "{}", c.id);
            assert!(
                !c.quote.contains('"'),
                "{}: quote the promise without \"",
                c.id
            );
            assert!(c.unjudged.is_none_or(|r| !r.is_empty()), "{}", c.id);
        }
        for class in Class::ALL {
            assert!(all().any(|c| c.class == class), "{class:?} has no promise");
        }
        assert_eq!(get("v2.max.limit").map(|c| c.class), Some(Class::Limit));
    }
}
