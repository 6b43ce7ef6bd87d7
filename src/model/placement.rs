//! Per-node truth: where a held task's pages are after a `migrate` step, and what its group's
//! memory.numa_stat said at that moment.

use serde::{Deserialize, Serialize};

use super::Version;
use super::step::Region;

/// What a `migrate` step left: the region's pages per node (move_pages(2)'s answer, index: node)
/// and the group's memory.numa_stat read between two such answers that agreed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    pub task: String,
    /// The group the task was in (its pages are charged there).
    pub cgroup: String,
    pub region: Region,
    /// The node the step asked for.
    pub node: u32,
    /// The region's pages on each node after the move (4 KiB pages).
    pub pages: Vec<u64>,
    /// Pages on no node: not present (swapped out, never touched) or refused (an errno).
    pub unplaced: u64,
    /// The group's memory.numa_stat lines the region's pages count in, bytes per node (v1 lists
    /// pages: converted); a line the kernel lacks is absent.
    pub numa: Vec<(String, Vec<i64>)>,
    /// Whether the two answers around the memory.numa_stat read agreed (else the last of three
    /// tries was kept: something else moved the pages meanwhile, NUMA balancing).
    pub stable: bool,
}

impl Placement {
    /// Bytes of the region on `node`.
    pub fn bytes_on(&self, node: usize) -> i64 {
        self.pages.get(node).copied().unwrap_or(0) as i64 * 4096
    }
}

/// The memory.numa_stat lines a page of `region` counts in on its node. v2: anon pages in
/// `anon`; a memfd's in `shmem` and `file` (and `file_mapped`, being mapped); a mapped file's in
/// `file` and `file_mapped`. v1 lists LRU sizes only: shmem is swap-backed and sits on the anon
/// LRU (`anon`), a file's pages on the file LRU (`file`).
pub fn region_lines(region: Region, version: Version) -> &'static [&'static str] {
    match (version, region) {
        (Version::V2, Region::Anon) => &["anon"],
        (Version::V2, Region::Shmem) => &["shmem", "file", "file_mapped"],
        (Version::V2, Region::File) => &["file", "file_mapped"],
        (Version::V1, Region::Anon | Region::Shmem) => &["anon"],
        (Version::V1, Region::File) => &["file"],
    }
}
