//! memcgtest: a testsuite for the Linux memory cgroup controller. See README.md.
//!
//! The library: everything but the command line, which is `main.rs`.

pub mod cgroup;
pub mod check;
pub mod cleanup;
pub mod compare;
pub mod env;
pub mod error;
pub mod exec;
pub mod lock;
pub mod model;
pub mod oracle;
pub mod progress;
pub mod report;
pub mod scenario;
pub mod stats;
pub mod sysctl;
pub mod units;
pub mod vm;
