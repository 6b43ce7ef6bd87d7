//! The kinds of workload step a scenario runs, as records, checks and reports name them. The steps
//! themselves, with their keys, are the scenario's (`crate::scenario::Step`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The size of each read(2) a `read` step's readers make: a sequential reader's readahead window
/// depends on it (`crate::sys::readahead`).
pub const READ_REQUEST_BYTES: u64 = 1 << 20;

/// One kind of step: `action = "<name>"` in a scenario file.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum StepKind {
    Write,
    Sync,
    Fsync,
    /// The default of records built field by field: a step that does nothing.
    #[default]
    Sleep,
    Truncate,
    Unlink,
    Reclaim,
    MmapWrite,
    Probe,
    Hold,
    Move,
    Grow,
    Wait,
    Release,
    Create,
    Read,
    Fault,
    Usemem,
    Await,
    Exhaust,
    Advise,
    Migrate,
    Cgroups,
    Pressure,
    Khugepaged,
    Set,
    Drop,
    Child,
}

impl StepKind {
    /// Every kind, in the order errors and references list them.
    pub const ALL: [StepKind; 28] = [
        StepKind::Write,
        StepKind::Sync,
        StepKind::Fsync,
        StepKind::Sleep,
        StepKind::Truncate,
        StepKind::Unlink,
        StepKind::Reclaim,
        StepKind::MmapWrite,
        StepKind::Probe,
        StepKind::Hold,
        StepKind::Advise,
        StepKind::Migrate,
        StepKind::Pressure,
        StepKind::Khugepaged,
        StepKind::Cgroups,
        StepKind::Move,
        StepKind::Grow,
        StepKind::Wait,
        StepKind::Release,
        StepKind::Create,
        StepKind::Read,
        StepKind::Fault,
        StepKind::Usemem,
        StepKind::Await,
        StepKind::Exhaust,
        StepKind::Set,
        StepKind::Drop,
        StepKind::Child,
    ];

    /// The name scenario files use.
    pub fn name(self) -> &'static str {
        match self {
            StepKind::Write => "write",
            StepKind::Sync => "sync",
            StepKind::Fsync => "fsync",
            StepKind::Sleep => "sleep",
            StepKind::Truncate => "truncate",
            StepKind::Unlink => "unlink",
            StepKind::Reclaim => "reclaim",
            StepKind::MmapWrite => "mmap-write",
            StepKind::Probe => "probe",
            StepKind::Hold => "hold",
            StepKind::Move => "move",
            StepKind::Grow => "grow",
            StepKind::Wait => "wait",
            StepKind::Release => "release",
            StepKind::Create => "create",
            StepKind::Read => "read",
            StepKind::Fault => "fault",
            StepKind::Usemem => "usemem",
            StepKind::Await => "await",
            StepKind::Exhaust => "exhaust",
            StepKind::Advise => "advise",
            StepKind::Migrate => "migrate",
            StepKind::Cgroups => "cgroups",
            StepKind::Pressure => "pressure",
            StepKind::Khugepaged => "khugepaged",
            StepKind::Set => "set",
            StepKind::Drop => "drop",
            StepKind::Child => "child",
        }
    }

    /// The kind called `name`.
    pub fn parse(name: &str) -> Option<StepKind> {
        StepKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// "write, sync, ...": every name, for error messages.
    pub fn names() -> String {
        StepKind::ALL.map(StepKind::name).join(", ")
    }

    /// Whether a step of this kind is measured: its rate is a sample for `compare` and the ratio
    /// checks, and the runner records what the rest of the machine did meanwhile.
    pub fn measured(self) -> bool {
        matches!(
            self,
            StepKind::Write | StepKind::Read | StepKind::Fault | StepKind::Usemem
        )
    }

    /// The unit of the rate `compare` and the ratio checks measure a step of this kind in:
    /// faults per second for a fault loop, decimal MB/s for everything that moves bytes.
    pub fn rate_unit(self) -> &'static str {
        match self {
            StepKind::Fault => "faults/s",
            _ => "MB/s",
        }
    }
}

/// What an `advise` step has a held task do with one of its mappings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Advice {
    /// MADV_PAGEOUT: reclaim it now (anon to swap, a huge page whole where the swap device
    /// takes it, zero-filled pages as zero pages, lazily freed ones freed).
    Pageout,
    /// MADV_COLD: deactivate it (onto the inactive lists).
    Cold,
    /// MADV_COLLAPSE: collapse it into huge pages in the task's context, whatever the THP
    /// settings (a file mapping needs CONFIG_READ_ONLY_THP_FOR_FS and no writer of the file).
    Collapse,
    /// Read every page again: swapped-out pages come back (swap-ins, refaults), pages on the
    /// inactive list are referenced.
    Touch,
    /// MADV_HUGEPAGE: khugepaged may collapse it (anon held in 4 KiB pages is advised
    /// MADV_NOHUGEPAGE until then).
    Hugepage,
}

impl Advice {
    pub const ALL: [Advice; 5] = [
        Advice::Pageout,
        Advice::Cold,
        Advice::Collapse,
        Advice::Touch,
        Advice::Hugepage,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Advice::Pageout => "pageout",
            Advice::Cold => "cold",
            Advice::Collapse => "collapse",
            Advice::Touch => "touch",
            Advice::Hugepage => "hugepage",
        }
    }
    pub fn parse(name: &str) -> Option<Advice> {
        Advice::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// Where a `migrate` step moves a mapping's pages: to a node, or `away` from the node that holds
/// most of them now (to the next node with memory, in the order the kernel lists them). A dirty
/// page that moves keeps its dirty count with it only if the kernel moves it; one move away
/// from wherever the pages were dirtied leaves a wrong count behind whatever node that was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    Node(u32),
    Away,
}

impl Target {
    /// As scenario files and the holder's commands write it: the node's number, or `away`.
    pub fn name(self) -> String {
        match self {
            Target::Node(n) => n.to_string(),
            Target::Away => "away".into(),
        }
    }
    pub fn parse(s: &str) -> Option<Target> {
        match s {
            "away" => Some(Target::Away),
            n => n.parse().ok().filter(|n| *n <= 63).map(Target::Node),
        }
    }
}

/// The system call a `migrate` step moves pages with; each enters migration its own way.
/// move_pages(2) moves the listed pages (do_move_pages_to_node); mbind(2) with MPOL_MF_MOVE
/// binds the range to the node and moves the pages of it that only this process maps
/// (queue_pages_range, then migrate_pages with MR_MEMPOLICY_MBIND; the policy is set back to
/// the default right after); migrate_pages(2) moves every page of the process that is on the
/// other nodes (do_migrate_pages, MR_SYSCALL; as root also pages that others map): every
/// mapping of the task goes, not only the step's region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Mover {
    #[default]
    MovePages,
    Mbind,
    MigratePages,
}

impl Mover {
    pub const ALL: [Mover; 3] = [Mover::MovePages, Mover::Mbind, Mover::MigratePages];
    /// As scenario files and the holder's commands write it: the system call's name.
    pub fn name(self) -> &'static str {
        match self {
            Mover::MovePages => "move_pages",
            Mover::Mbind => "mbind",
            Mover::MigratePages => "migrate_pages",
        }
    }
    pub fn parse(s: &str) -> Option<Mover> {
        Mover::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// One of a held task's mappings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Region {
    /// Its anonymous memory (`anon`).
    Anon,
    /// Its shared memory (`shmem`).
    Shmem,
    /// Its mapping of `file`.
    File,
}

impl Region {
    pub const ALL: [Region; 3] = [Region::Anon, Region::Shmem, Region::File];
    pub fn name(self) -> &'static str {
        match self {
            Region::Anon => "anon",
            Region::Shmem => "shmem",
            Region::File => "file",
        }
    }
    pub fn parse(name: &str) -> Option<Region> {
        Region::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// Kinds joined by `sep` ("sync/fsync").
pub fn join(kinds: &[StepKind], sep: &str) -> String {
    kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(sep)
}

impl fmt::Display for StepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `set` value relative to the group's usage: `current+1M` writes what memory.current (v1
/// memory.usage_in_bytes) reads just before, plus 1 MiB: a limit just above what the group holds
/// whatever its tasks' own overhead came to.
pub const CURRENT_PLUS: &str = "current+";

/// What a `current+SIZE` value adds to the group's usage (an error naming the value when SIZE
/// is not a size); None for any other value.
pub fn plus_current(value: &str) -> Option<Result<u64, String>> {
    let rest = value.strip_prefix(CURRENT_PLUS)?;
    Some(super::units::parse_size(rest).map_err(|e| {
        format!("value {value:?}: after \"{CURRENT_PLUS}\" goes a size (\"1M\"): {e}")
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn current_plus_adds_a_size_or_names_the_value() {
        assert_eq!(plus_current("current+1M"), Some(Ok(1 << 20)));
        assert_eq!(plus_current("32M"), None);
        let e = plus_current("current+x").unwrap().unwrap_err();
        assert!(
            e.contains("\"current+x\"") && e.contains("goes a size"),
            "{e}"
        );
    }

    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for k in StepKind::ALL {
            assert_eq!(StepKind::parse(k.name()), Some(k));
            assert_eq!(
                serde_json::to_string(&k).unwrap(),
                format!("\"{}\"", k.name())
            );
        }
        assert_eq!(StepKind::parse("mmap_write"), None);
    }
}
