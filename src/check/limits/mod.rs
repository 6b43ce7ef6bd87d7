//! Limits, high marks and throttling: what a group may hold, what its knobs read back, how long its
//! tasks wait.

pub(super) mod in_force;
pub(super) mod knob;
pub(super) mod limit_counters;
pub(super) mod limit_takes;
pub(super) mod no_oom;
pub(super) mod peak_reset;
pub(super) mod slowed;
pub(super) mod stalled;
pub(super) mod under_high;
pub(super) mod under_limit;
