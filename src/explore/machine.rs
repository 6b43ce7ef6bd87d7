//! What the generator knows of the machine it draws cases for, and the unit it sizes them in: the
//! bottom of the explorer, which every other file of it may import.

use crate::model::Version;

/// A mebibyte, in bytes.
pub const MIB: u64 = 1 << 20;

/// What the generator knows of the machine.
#[derive(Debug, Clone, Copy)]
pub struct Machine {
    pub version: Version,
    /// RAM, bytes: sizes stay well inside it.
    pub memory: u64,
    /// Swap is enabled: swap limits and page-outs may be generated.
    pub swap: bool,
    /// v1 charge moving works (memory.move_charge_at_immigrate; removed in 6.13).
    pub charge_moving: bool,
    /// cachestat(2) gives per-file truth (6.5 on).
    pub per_file: bool,
    /// Two NUMA nodes with memory or more: pages may be moved across them (the numa motif).
    pub numa: bool,
}

impl Machine {
    /// The most a case's steps hold or write at once: 1/16 of RAM, 32..128 MiB.
    pub fn budget(&self) -> u64 {
        (self.memory / 16).clamp(32 << 20, 128 << 20)
    }
}
