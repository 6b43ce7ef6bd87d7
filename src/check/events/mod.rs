//! Events a group counts and notifies: OOM kills, v1 thresholds and OOM waits, v2 memory.events
//! changes, an antagonist's vmstat events.

pub(super) mod exercised;
pub(super) mod notified;
pub(super) mod notifies;
pub(super) mod oom_kills;
pub(super) mod oom_waits;
