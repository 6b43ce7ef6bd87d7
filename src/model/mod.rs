//! The model at the bottom of the crate (it imports nothing else of it): what a run records (sampled series, phases, steps, the machine) and the
//! result every reporter, `compare` and the VM host read, and the events a run streams to the VM
//! host.

pub mod behaviour;
pub mod check;
pub mod column;
pub mod contract;
pub mod counter;
pub mod env;
pub mod error;
pub mod event;
pub mod fix;
#[cfg(test)]
pub mod fixtures;
pub mod format;
pub mod kcidb;
pub mod known;
pub mod mutant;
pub mod node_events;
pub mod placement;
pub mod record;
pub mod result;
pub mod series;
pub mod source;
pub mod stat;
pub mod stats;
pub mod step;
pub mod units;
pub mod version;

pub use check::{CheckResult, Outcome};
pub use column::{Column, HELPER_GROUP, TOP_GROUP, is_below, is_child, join_names, sum_label};
pub use event::Event;
pub use fix::{FixTag, join_fixes};
pub use format::Format;
pub use known::{KnownIssue, Release};
pub use record::{
    CgroupSpec, DirtyLimits, HostLoad, KnobWrite, Load, Machine, Measurement, MoveRecord, Notice,
    PhaseMeasure, PhaseRecord, ReadRun, ReadsDuring, Record, StepRecord, WATCHED_KNOBS, step_rate,
};
pub use result::{PhaseResult, RunReport, ScenarioResult, Status, Totals};
pub use series::Series;
pub use stat::Stat;
pub use step::StepKind;
pub use version::Version;
