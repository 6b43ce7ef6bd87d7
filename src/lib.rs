//! memcgtest: a testsuite for the Linux memory cgroup controller. See README.md.
//!
//! The library: everything but the command line, which is `main.rs`.

pub mod ab;
pub mod check;
pub mod compare;
pub mod env;
pub mod exec;
pub mod model;
pub mod oracle;
pub mod progress;
pub mod report;
pub mod scenario;
pub mod sys;
pub mod vm;
