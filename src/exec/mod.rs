//! Running scenarios: the runner (guard, setup, phases, teardown), one executor per step kind,
//! the sampler and the workloads that run in the test groups.

mod phases;
pub mod runner;
pub mod sample;
mod sources;
mod steps;
pub mod suite;
pub mod watchdog;
pub mod workload;
