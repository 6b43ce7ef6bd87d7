//! The model at the centre: what a run records (sampled series, phases, steps, the machine) and the
//! result every reporter, `compare` and the VM host read, and the events a run streams to the VM
//! host.

pub mod column;
pub mod counter;
pub mod event;
pub mod record;
pub mod result;
pub mod series;

pub use column::{Column, META_PREFIXES, PASS_COLUMN, is_meta_column};
pub use event::Event;
pub use record::{
    CgroupSpec, Machine, Measurement, MoveRecord, PhaseMeasure, PhaseRecord, Record, StepRecord,
    step_rate,
};
pub use result::{PhaseResult, RunReport, ScenarioResult, Status, Totals};
pub use series::Series;
