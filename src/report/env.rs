//! `memcgtest env` for people.

use std::path::PathBuf;

use crate::model::env::EnvInfo;

/// The human form of `memcgtest env`.
pub fn render(e: &EnvInfo) -> String {
    let yn = |b: bool| if b { "yes" } else { "no" };
    let p = |o: &Option<PathBuf>| {
        o.as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or("-".into())
    };
    let mut s = String::new();
    s += &format!("kernel:            {} ({})\n", e.kernel, e.arch);
    s += &format!(
        "cpus / memory:     {} / {}\n",
        e.cpus,
        crate::model::units::human_bytes(e.memory_bytes as i64)
    );
    s += &format!("numa nodes:        {:?} (with memory)\n", e.numa_nodes);
    s += &format!("running as root:   {}\n", yn(e.root));
    s += &format!("cgroup layout:     {}\n", e.cgroup.layout);
    s += &format!("  v1 memory mount: {}\n", p(&e.cgroup.v1_memory_mount));
    s += &format!(
        "  cgroup2 mount:   {}{}\n",
        p(&e.cgroup.v2_mount),
        if e.cgroup.v2_mount.is_some() && !e.cgroup.v2_has_memory {
            " (without the memory controller)"
        } else {
            ""
        }
    );
    s += &format!(
        "  selected:        {}\n",
        match &e.cgroup.selected {
            Ok(v) => v.as_str().to_string(),
            Err(w) => format!("none: {w}"),
        }
    );
    s += &format!(
        "  test cgroups go: {} (writable: {})\n",
        p(&e.cgroup.test_parent),
        yn(e.cgroup.test_parent_writable)
    );
    s += "capabilities:\n";
    s += &format!("  charge moving:   {}\n", e.capabilities.charge_moving);
    s += &format!("  memory.reclaim:  {}\n", yn(e.capabilities.memory_reclaim));
    s += &format!("  cgroup.kill:     {}\n", yn(e.capabilities.cgroup_kill));
    s += &format!(
        "  dirty stats:     {}\n",
        e.capabilities.dirty_stats.join(" ")
    );
    s += &format!(
        "  vm event counters (pgmigrate_*): {}\n",
        yn(e.capabilities.vm_event_counters)
    );
    s += &format!("  compaction:      {}\n", yn(e.capabilities.compaction));
    s += &format!(
        "scratch:           {} ({}, writeback: {}, readahead window of 1 MiB reads: {})\n",
        e.scratch.path.display(),
        e.scratch.fstype.as_deref().unwrap_or("unknown fs"),
        yn(e.scratch.writeback),
        e.scratch
            .readahead
            .map_or("unknown".to_string(), |b| format!("{} KiB", b >> 10))
    );
    s += &format!(
        "accounting oracle: {}\n",
        match &e.oracle.why_not {
            None => "page-cache truth: cachestat(2) of the files each group wrote, independent of other processes".to_string(),
            Some(w) => format!(
                "machine-wide counters (/proc/vmstat); windows in which other writers moved them are inconclusive ({w})"
            ),
        }
    );
    s += &format!(
        "other writers:     {}\n",
        match e.oracle.pages_dirtied_last_second {
            None if e.oracle.alone => {
                "none: memcgtest runs alone on this machine (a memcgtest vm guest)".to_string()
            }
            None => "unknown (no nr_dirtied in /proc/vmstat)".to_string(),
            Some(0) => "none in the last second".to_string(),
            Some(n) => format!(
                "active: {} dirtied in the last second{}",
                crate::model::units::human_bytes(n * e.page_size as i64),
                if e.oracle.why_not.is_some() {
                    " (expect inconclusive accounting windows)"
                } else {
                    " (the per-file truth is not affected)"
                }
            ),
        }
    );
    s += "sysctls:          ";
    s += &e
        .sysctls
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ");
    s.push('\n');
    s
}
