//! The system layer: the cgroupfs (mounts, layout, groups and their files), the sysctls the runs
//! change and restore, the cleanup of leftovers and the lock that serializes runs. Each works over
//! a root path (a /proc/sys, a cgroup mount, a run directory), so the unit tests use temp trees.

pub mod cachestat;
pub mod cgroup;
pub mod cleanup;
pub mod env;
pub mod hostload;
pub mod lock;
pub mod numa;
pub mod outdir;
pub mod proc;
pub mod readahead;
pub mod sysctl;
