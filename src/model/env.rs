//! The environment a run happened in, recorded with every result (gathered by `crate::env`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Version;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnvInfo {
    pub kernel: String,
    pub kernel_build: String,
    pub arch: String,
    pub cpus: u64,
    pub page_size: u64,
    pub memory_bytes: u64,
    /// The NUMA nodes with memory (/sys/devices/system/node/has_memory).
    #[serde(default)]
    pub numa_nodes: Vec<u32>,
    pub root: bool,
    pub cgroup: CgroupInfo,
    pub capabilities: Capabilities,
    pub scratch: ScratchInfo,
    pub sysctls: Vec<(String, String)>,
    /// The memcg interface the kernel shows a group: `file` or `file:key` (see `coverage`);
    /// empty where it could not be probed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interface: Vec<String>,
    pub oracle: OracleInfo,
}

/// What the accounting checks can compare with on this kernel, and whether the machine is quiet.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OracleInfo {
    /// "page-cache truth" (cachestat per file) or "machine-wide counters".
    pub kind: String,
    /// Why there is no per-file truth, when there is none.
    pub why_not: Option<String>,
    /// Pages other processes dirtied during one second (/proc/vmstat nr_dirtied; memcgtest
    /// itself writes nothing meanwhile); None when the counter is missing or was not measured.
    pub pages_dirtied_last_second: Option<i64>,
    /// Not measured: memcgtest is the only program of the machine (a `memcgtest vm` guest).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub alone: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CgroupInfo {
    /// v1, v2, hybrid or none.
    pub layout: String,
    pub v1_memory_mount: Option<PathBuf>,
    pub v2_mount: Option<PathBuf>,
    pub v2_has_memory: bool,
    /// The version a run would use with the given --cgroup, or why none.
    pub selected: Result<Version, String>,
    /// Where test cgroups would be created.
    pub test_parent: Option<PathBuf>,
    pub test_parent_writable: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Capabilities {
    /// v1 memory.move_charge_at_immigrate: "available", or why not.
    pub charge_moving: String,
    pub memory_reclaim: bool,
    pub cgroup_kill: bool,
    /// memory.stat keys about dirty and writeback pages.
    pub dirty_stats: Vec<String>,
    /// pgmigrate_success and compact_* in /proc/vmstat (CONFIG_VM_EVENT_COUNTERS).
    pub vm_event_counters: bool,
    /// /proc/sys/vm/compact_memory exists (CONFIG_COMPACTION).
    pub compaction: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScratchInfo {
    pub path: PathBuf,
    pub fstype: Option<String>,
    pub writeback: bool,
    /// The readahead window, in bytes, of a `read` step's readers on its disk (read_ahead_kb,
    /// or up to max_sectors_kb for their 1 MiB reads), where sysfs shows the disk.
    #[serde(default)]
    pub readahead: Option<u64>,
}
