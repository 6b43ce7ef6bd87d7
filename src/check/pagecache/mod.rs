//! The page cache a group's tasks wrote (per-file truth, the machine's totals) against its file,
//! dirty and writeback counters.

pub(super) mod dirty_domain;
pub(super) mod dirty_probe;
pub(super) mod holds_files;
pub(super) mod observed;
pub(super) mod reference;
pub(super) mod settles;
pub(super) mod tracks_global;
