//! memcgtest: a testsuite for the Linux memory cgroup controller. See README.md.
//!
//! The library: everything but the command line, which is `main.rs`.

pub mod ab;
pub mod check;
pub mod compare;
pub mod contracts;
pub mod coverage;
pub mod exec;
pub mod explore;
pub mod model;
pub mod mutate;
pub mod report;
pub mod scenario;
pub mod series;
pub mod suite;
pub mod sys;
pub mod vm;
