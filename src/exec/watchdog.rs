//! The progress watchdog. A workload the kernel throttles forever (a leaked dirty or writeback
//! count makes balance_dirty_pages() pause a writer for good) would otherwise run into the
//! scenario's timeout minutes later, with no check evaluated. The watchdog sees it in seconds:
//! while a step waits for its workers, it sums what every task of the run's groups did —
//! bytes through read(2)/write(2) (`rchar`, `wchar` in /proc/PID/io) and page faults (`minflt`,
//! `majflt` in /proc/PID/stat) — and, for steps that wait on writeback (sync, fsync), the pages
//! written back machine-wide (`nr_written` in /proc/vmstat). When that sum has not changed for
//! the stall time, the step is stalled and the runner evaluates every check on the record so far.
//!
//! Other processes on the machine can only make the watchdog see progress where there is none
//! (nr_written), never the reverse: it may fire late (then the timeout still applies), not
//! falsely. Under `memcgtest vm` the host's other processes can: they take the CPUs the guest's
//! vCPUs run on and the disk its images are on (a VM suite beside a cargo build on the host
//! stalled 10 s in a 128 MiB write). Time during which the host was busy (sys::hostload, the
//! same rule as for measured steps) does not count towards a stall.

use std::path::{Path, PathBuf};

use crate::sys::cgroup::Cgroup;
use crate::sys::{hostload, proc};
use std::time::{Duration, Instant};

/// Default time without progress after which a step counts as stalled.
pub const STALL: Duration = Duration::from_secs(30);
/// The default under `--quick`, whose workloads are 8x smaller.
pub const QUICK_STALL: Duration = Duration::from_secs(10);
/// How often the watchdog reads /proc (the wait loops poll every few ms).
const EVERY: Duration = Duration::from_millis(250);

/// Watches the tasks of some cgroups and their descendants.
pub struct Watchdog {
    /// The scenario's top-level test groups (not the helpers' group, whose antagonists — a
    /// compaction loop — never stop).
    groups: Vec<Cgroup>,
    proc: PathBuf,
    /// None: the watchdog is off.
    stall: Option<Duration>,
    /// Count pages written back machine-wide as progress (steps that wait on writeback).
    writeback: bool,
    /// The last progress total and when it last changed.
    last: Option<(u64, Instant)>,
    checked: Option<Instant>,
}

impl Watchdog {
    pub fn new(groups: Vec<Cgroup>, proc: &Path, stall: Option<Duration>, writeback: bool) -> Self {
        Watchdog {
            groups,
            proc: proc.to_path_buf(),
            stall,
            writeback,
            last: None,
            checked: None,
        }
    }

    /// How long there has been no progress, when that is at least the stall time.
    pub fn stalled(&mut self, now: Instant) -> Option<Duration> {
        let stall = self.stall?;
        if self.checked.is_some_and(|c| now.duration_since(c) < EVERY) {
            return None;
        }
        let previous = self.checked.replace(now);
        // A group whose tasks cannot be listed (removed under us) counts no progress.
        let tasks: Vec<i32> = self
            .groups
            .iter()
            .flat_map(|g| g.pids_below().unwrap_or_default())
            .collect();
        // The host busy over the last window: the time since the last check is not idle time.
        let paused = hostload::read()
            .filter(|r| hostload::recent(r).busy())
            .and(previous)
            .map(|p| now.duration_since(p));
        let mut total = tasks_progress(&self.proc, &tasks);
        if self.writeback {
            let written = proc::vmstat_snapshot(&self.proc)
                .ok()
                .and_then(|v| v.get("nr_written"));
            total = total.wrapping_add(written.unwrap_or(0) as u64);
        }
        judge(&mut self.last, total, now, stall, paused)
    }
}

/// Records `total` at `now`; the time since it last changed, less the `paused` time (the host
/// was busy), once that reaches `stall`.
fn judge(
    last: &mut Option<(u64, Instant)>,
    total: u64,
    now: Instant,
    stall: Duration,
    paused: Option<Duration>,
) -> Option<Duration> {
    match last {
        Some((v, since)) if *v == total => {
            *since = (*since + paused.unwrap_or_default()).min(now);
            let idle = now.duration_since(*since);
            (idle >= stall).then_some(idle)
        }
        _ => {
            *last = Some((total, now));
            None
        }
    }
}

/// The sum of rchar + wchar (/proc/PID/io) and minflt + majflt (/proc/PID/stat) over `pids`.
/// Tasks that exited in between count nothing.
pub fn tasks_progress(proc: &Path, pids: &[i32]) -> u64 {
    pids.iter()
        .map(|p| {
            let dir = proc.join(p.to_string());
            let io = std::fs::read_to_string(dir.join("io")).unwrap_or_default();
            let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
            io_bytes(&io).wrapping_add(faults(&stat))
        })
        .fold(0u64, u64::wrapping_add)
}

/// rchar + wchar of a /proc/PID/io text.
fn io_bytes(io: &str) -> u64 {
    io.lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| matches!(*k, "rchar" | "wchar"))
        .filter_map(|(_, v)| v.trim().parse::<u64>().ok())
        .fold(0u64, u64::wrapping_add)
}

/// minflt + majflt of a /proc/PID/stat text (fields 10 and 12, counted after the command name,
/// which may contain spaces and parentheses).
fn faults(stat: &str) -> u64 {
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0;
    };
    // rest starts at field 3 (state): minflt is field 10, majflt field 12.
    let f: Vec<&str> = rest.split_whitespace().collect();
    let at = |n: usize| {
        f.get(n - 3)
            .and_then(|x| x.parse::<u64>().ok())
            .unwrap_or(0)
    };
    at(10).wrapping_add(at(12))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let s = "42 (a) b (c) S 1 42 42 0 -1 4194560 7 0 3 0 5 6 0 0 20 0 1 0 100 0 0";
        assert_eq!(faults(s), 10);
        assert_eq!(faults("garbage"), 0);
    }

    #[test]
    fn io_counts_syscall_bytes_only() {
        let io = "rchar: 100\nwchar: 20\nsyscr: 5\nread_bytes: 4096\nwrite_bytes: 8192\n";
        assert_eq!(io_bytes(io), 120);
    }

    #[test]
    fn a_stall_is_time_without_change() {
        let t0 = Instant::now();
        let s = Duration::from_secs(10);
        let mut last = None;
        let secs = Duration::from_secs;
        assert_eq!(judge(&mut last, 5, t0, s, None), None);
        assert_eq!(judge(&mut last, 5, t0 + secs(9), s, None), None);
        assert_eq!(judge(&mut last, 6, t0 + secs(11), s, None), None);
        let at = t0 + secs(21);
        assert_eq!(judge(&mut last, 6, at, s, None), Some(secs(10)));
        // 4 s of it with the host busy: not a stall until 4 s later.
        let mut last = None;
        assert_eq!(judge(&mut last, 6, t0, s, None), None);
        assert_eq!(judge(&mut last, 6, t0 + secs(6), s, Some(secs(4))), None);
        assert_eq!(judge(&mut last, 6, t0 + secs(12), s, None), None);
        assert_eq!(judge(&mut last, 6, t0 + secs(14), s, None), Some(secs(10)));
    }

    #[test]
    fn progress_is_summed_over_the_tasks_of_a_fake_tree() {
        let d = tempfile::tempdir().unwrap();
        let cg = d.path().join("cg");
        std::fs::create_dir_all(cg.join("a/b")).unwrap();
        std::fs::write(cg.join("cgroup.procs"), "").unwrap();
        std::fs::write(cg.join("a/cgroup.procs"), "7\n").unwrap();
        std::fs::write(cg.join("a/b/cgroup.procs"), "8\n9\n").unwrap();
        let group = |p: &str| Cgroup::new(cg.join(p), crate::sys::cgroup::Version::V1);
        let proc = d.path().join("proc");
        for (pid, w) in [(7, 1), (8, 2)] {
            std::fs::create_dir_all(proc.join(pid.to_string())).unwrap();
            std::fs::write(
                proc.join(pid.to_string()).join("io"),
                format!("rchar: 0\nwchar: {w}\n"),
            )
            .unwrap();
        }
        let mut pids = group("").pids_below().unwrap();
        pids.sort();
        assert_eq!(pids, vec![7, 8, 9]);
        assert_eq!(group("a/b").pids_below().unwrap(), vec![8, 9]);
        assert_eq!(tasks_progress(&proc, &pids), 3);
        std::fs::write(proc.join("vmstat"), "nr_dirty 1\nnr_written 40\n").unwrap();
        let vm = proc::vmstat_snapshot(&proc).unwrap();
        assert_eq!(vm.get("nr_written"), Some(40));
    }
}
