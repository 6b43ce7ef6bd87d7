//! Performance: paired rates inside and outside a group, a phase's throughput against its baseline.

pub(super) mod ratio;
pub(super) mod throughput;
