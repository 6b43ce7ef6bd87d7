//! The tasks' own count of their anonymous memory: for a group, the processes in its cgroup.procs
//! and its descendants' (the counters are hierarchical) and, for each, the RssAnon line of
//! /proc/PID/status (the mm's own page counter, kept at every fault and unmap, apart from the
//! memcg statistics). A group's anon is the anonymous memory its tasks faulted in (they entered
//! the group before exec), so the two must agree.
//!
//! RssShmem is no truth for the group's shmem: it also counts pages of tmpfs files the task maps
//! that were charged elsewhere (in the VM the memcgtest binary itself, which lives in the
//! initramfs: 3.7 MiB of RssShmem in a fresh worker whose group held none). /proc/PID/status
//! rather than smaps_rollup: the latter walks every page table of the task, which for a task
//! holding 2 GiB takes milliseconds per read, in every sampler pass.

use std::path::{Path, PathBuf};

use crate::exec::workload::FORKED_NAME;

/// The counters this source fills for the group, in column order: the tasks' anonymous memory
/// (RssAnon), their swapped-out anonymous pages (VmSwap: swap entries in their page tables) and
/// their threads beyond the first (`Threads:` - 1 per task: before 6.2 each thread caches up to
/// 64 events of its mm's counters, and a sleeping thread never passes them on), and their page
/// tables (VmPTE: the mm's own count of its page table pages, raised and lowered with them).
pub const COUNTERS: [&str; 4] = [
    crate::model::counter::ANON,
    crate::model::counter::SWAP,
    EXTRA_THREADS,
    "pagetables",
];

use crate::model::column::EXTRA_THREADS;

/// One group's tasks' anonymous memory, as one sampler source.
pub struct TaskMemory {
    /// The cgroup.procs of the group and of each group below it. Opened on every pass, unlike the
    /// counter files: cgroup v1 keeps the pid list it built at the first read of an open file
    /// and serves it again to later reads (cgroup_pidlist_start()), so a kept descriptor would
    /// not see a task that joined after it (seen on 6.18: 60 ms of a new task missing).
    procs: Vec<PathBuf>,
    /// The first of the columns filled (one per `COUNTERS`).
    col: usize,
    /// Where /proc is (a temp dir in tests).
    proc_root: PathBuf,
}

impl TaskMemory {
    pub fn new(procs: Vec<PathBuf>, col: usize, proc_root: &Path) -> std::io::Result<TaskMemory> {
        for p in &procs {
            std::fs::metadata(p)?;
        }
        Ok(TaskMemory {
            procs,
            col,
            proc_root: proc_root.to_path_buf(),
        })
    }

    /// Fills the column with the sum over the tasks, in bytes. A task that exits between the
    /// cgroup.procs read and its status read counts 0 (its memory is going too). The status
    /// files are opened on every pass (tasks come and go); scenarios that use this hold few.
    pub fn read_into(&self, row: &mut [i64]) -> Result<(), String> {
        let (mut anon, mut swap, mut threads, mut tables) = (0, 0, 0, 0);
        for path in &self.procs {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("read {}: {e}", path.display()))?;
            for pid in text.split_ascii_whitespace() {
                let status = self.proc_root.join(pid).join("status");
                let Ok(s) = std::fs::read_to_string(&status) else {
                    continue; // gone: it exited after the cgroup.procs read
                };
                let s = self.with_mm(pid, s);
                // A worker joins its group between fork and exec; until it execs, its mm is a
                // copy of the runner's, whose anonymous memory RssAnon shows but the runner's
                // group is charged for. Seen under load on a busy host: a forked writer not yet
                // exec'd for 2 samples showed the runner's 31 MiB in a group whose anon was 0.
                if status_name(&s).as_bytes() == FORKED_NAME.to_bytes() {
                    continue;
                }
                anon += status_kb(&s, "RssAnon:");
                swap += status_kb(&s, "VmSwap:");
                threads += status_count(&s, "Threads:").saturating_sub(1);
                tables += status_kb(&s, "VmPTE:");
            }
        }
        row[self.col] = anon;
        row[self.col + 1] = swap;
        row[self.col + 2] = threads;
        row[self.col + 3] = tables;
        Ok(())
    }
}

impl TaskMemory {
    /// The status of process `pid` as its mm counts it: a leader that exited before its threads
    /// (a zombie whose cgroup.procs entry stays while they live) has no mm and no Rss lines of
    /// its own, though the mm lives on in its threads; a live thread's status then speaks for
    /// it. (Seen: a 768-thread task exiting, its group's anon 8.9 MiB above a count of 0.)
    fn with_mm(&self, pid: &str, status: String) -> String {
        if status.contains("RssAnon:") || status_count(&status, "Threads:") < 1 {
            return status;
        }
        let Ok(dir) = std::fs::read_dir(self.proc_root.join(pid).join("task")) else {
            return status;
        };
        (dir.flatten())
            .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
            .find(|t| t.contains("RssAnon:"))
            .unwrap_or(status)
    }
}

/// The `Name:` line (the task's comm) of a /proc/PID/status text.
fn status_name(text: &str) -> &str {
    text.lines()
        .find_map(|l| l.strip_prefix("Name:"))
        .map_or("", str::trim)
}

/// A plain number line (`Threads:`) of a /proc/PID/status text; 0 where missing.
pub fn status_count(text: &str, key: &str) -> i64 {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or(0)
}

/// A kB line (`RssAnon:`, `VmSwap:`) of a /proc/PID/status text, in bytes (0 where the line is
/// missing: a kernel thread, a task whose mm is gone while it exits).
pub fn status_kb(text: &str, key: &str) -> i64 {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
        .map_or(0, |kb| kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_the_tasks_of_a_group_and_its_children_from_their_status() {
        let dir = tempfile::tempdir().unwrap();
        let proc_root = dir.path().join("proc");
        for (pid, anon) in [(10, 100), (11, 50)] {
            std::fs::create_dir_all(proc_root.join(pid.to_string())).unwrap();
            std::fs::write(
                proc_root.join(pid.to_string()).join("status"),
                format!(
                    "Name:\tx\nVmRSS:\t 999 kB\nRssAnon:\t {anon} kB\nRssFile:\t 7 kB\nVmPTE:\t {} kB\nVmSwap:\t {} kB\nThreads:\t{}\n",
                    anon / 25,
                    anon / 10,
                    anon / 50
                ),
            )
            .unwrap();
        }
        // The group holds 10 and 12 (which exited before its status was read), its child 11,
        // and 13, forked by the runner and not exec'd yet (it still has the runner's memory).
        std::fs::create_dir_all(proc_root.join("13")).unwrap();
        std::fs::write(
            proc_root.join("13/status"),
            format!(
                "Name:\t{}\nRssAnon:\t 30000 kB\nVmSwap:\t 0 kB\nThreads:\t1\n",
                FORKED_NAME.to_str().unwrap()
            ),
        )
        .unwrap();
        let procs = dir.path().join("cgroup.procs");
        std::fs::write(&procs, "10\n12\n13\n").unwrap();
        let child = dir.path().join("child.procs");
        std::fs::write(&child, "11\n").unwrap();
        let empty = dir.path().join("empty.procs");
        std::fs::write(&empty, "").unwrap();
        let mut row = vec![-1i64; 8];
        let t = TaskMemory::new(vec![procs, child], 0, &proc_root).unwrap();
        t.read_into(&mut row).unwrap();
        let t = TaskMemory::new(vec![empty], 4, &proc_root).unwrap();
        t.read_into(&mut row).unwrap();
        assert_eq!(row, vec![150 * 1024, 15 * 1024, 1, 6 * 1024, 0, 0, 0, 0]);
    }

    #[test]
    fn a_leader_gone_before_its_threads_is_counted_by_a_live_thread() {
        let dir = tempfile::tempdir().unwrap();
        let proc_root = dir.path().join("proc");
        let leader = "Name:\tx\nState:\tZ (zombie)\nThreads:\t2\n";
        let thread =
            "Name:\tx\nState:\tS\nRssAnon:\t 40 kB\nVmPTE:\t 8 kB\nVmSwap:\t 0 kB\nThreads:\t2\n";
        for (path, text) in [
            ("20/status", leader),
            ("20/task/20/status", leader),
            ("20/task/21/status", thread),
        ] {
            let p = proc_root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let procs = dir.path().join("cgroup.procs");
        std::fs::write(&procs, "20\n").unwrap();
        let mut row = vec![-1i64; 4];
        let t = TaskMemory::new(vec![procs], 0, &proc_root).unwrap();
        t.read_into(&mut row).unwrap();
        assert_eq!(row, vec![40 * 1024, 0, 1, 8 * 1024]);
    }

    #[test]
    fn status_without_rss_lines_counts_zero() {
        assert_eq!(status_kb("Name:\tkthreadd\nState:\tS\n", "RssAnon:"), 0);
    }
}
