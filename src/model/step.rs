//! The kinds of workload step a scenario runs, as records, checks and reports name them. The steps
//! themselves, with their keys, are the scenario's (`crate::scenario::Step`).

use std::fmt;

use serde::{Deserialize, Serialize};

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
}

impl StepKind {
    /// Every kind, in the order errors and references list them.
    pub const ALL: [StepKind; 20] = [
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

/// Kinds joined by `sep` ("sync/fsync").
pub fn join(kinds: &[StepKind], sep: &str) -> String {
    kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(sep)
}

impl fmt::Display for StepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
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
