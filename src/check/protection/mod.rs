//! memory.min and memory.low: what a protected group keeps while reclaim works above it.

pub(super) mod protected;
