//! Running scenarios: the runner (guard, setup, phases, teardown), one executor per step kind,
//! the sampler and the workloads that run in the test groups.

mod context;
mod keys;
mod load;
mod notify;
mod online;
mod phases;
pub mod runner;

pub use context::{Context, Progress};
pub mod sample;
mod sources;
mod steps;
pub mod watchdog;
pub mod workload;
