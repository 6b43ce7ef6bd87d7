//! Counters that must agree with each other and with what the group's tasks hold, at every sample.

pub(super) mod faults;
pub(super) mod identities;
pub(super) mod interface;
pub(super) mod monotonic;
pub(super) mod no_ratchet;
pub(super) mod no_underflow;
pub(super) mod numa_stat;
pub(super) mod tasks;
pub(super) mod usage_covers;
