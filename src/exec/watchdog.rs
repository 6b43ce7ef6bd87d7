//! The progress watchdog. A workload the kernel throttles forever (a leaked dirty or writeback
//! count makes balance_dirty_pages() pause a writer for good) would otherwise run into the
//! scenario's timeout minutes later, with no check evaluated. The watchdog sees it in seconds:
//! while a step waits for its workers, it sums what every task of the run's groups did —
//! bytes through read(2)/write(2) (`rchar`, `wchar` in /proc/PID/io) and page faults (`minflt`,
//! `majflt` in /proc/PID/stat) — and, for steps that wait on writeback (sync, fsync), the pages
//! written back machine-wide (`nr_written` in /proc/vmstat). When that sum has not changed for
//! the stall time, the step is stalled and the runner evaluates every check on the record so far.
//! A kernel without per-task I/O counts (no CONFIG_TASK_IO_ACCOUNTING: no /proc/PID/io, as in the
//! project's minimal test kernel) would show a writer between two write(2) calls only by its
//! faults, none once its buffer is mapped: there the pages dirtied and read in machine-wide
//! (`nr_dirtied`, `pgpgin`) count instead (a 128 MiB write at a limit under compaction in a slow
//! guest had been called a 78 s stall while it dirtied 96 MiB).
//!
//! Other processes on the machine can only make the watchdog see progress where there is none
//! (nr_written), never the reverse: it may fire late (then the timeout still applies), not
//! falsely. Under `memcgtest vm` the host's other processes can: they take the CPUs the guest's
//! vCPUs run on and the disk its images are on (a VM suite beside a cargo build on the host
//! stalled 10 s in a 128 MiB write). Time during which they kept a CPU busy or dirtied 50 MB/s
//! (sys::hostload) does not count towards a stall, up to twice the stall time: a real stall on
//! a busy host is still diagnosed, at most three stall times after it began.

use std::path::{Path, PathBuf};

use crate::sys::cgroup::Cgroup;
use crate::sys::hostload::{self, HostReading};
use crate::sys::proc;
use std::time::{Duration, Instant};

/// Default time without progress after which a step counts as stalled.
pub const STALL: Duration = Duration::from_secs(30);
/// The default under `--quick`, whose workloads are 8x smaller.
pub const QUICK_STALL: Duration = Duration::from_secs(10);
/// How often the watchdog reads /proc (the wait loops poll every few ms).
const EVERY: Duration = Duration::from_millis(250);
/// Other processes on the host beyond which the guest may stop for a while (a whole CPU of the
/// two its vCPUs run on, or a disk busy with 50 MB/s of their writes).
const HOST_BUSY_CPUS: f64 = 1.0;
const HOST_BUSY_BPS: f64 = 50e6;
/// The most idle time a busy host may excuse, in stall times.
const MAX_EXCUSED: u32 = 2;

/// The progress total, when it last changed, and how much of the time since the host excused.
#[derive(Debug, Clone, Copy)]
struct Progress {
    total: u64,
    since: Instant,
    excused: Duration,
}

/// A stall: how long nothing moved, and where the test groups' tasks were when the watchdog saw
/// it (state, wait channel, top of the kernel stack), before they are killed.
#[derive(Debug, Clone, PartialEq)]
pub struct Stall {
    pub idle: Duration,
    pub tasks: Vec<String>,
}

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
    /// The kernel keeps no per-task I/O counts (/proc/PID/io needs CONFIG_TASK_IO_ACCOUNTING):
    /// the pages dirtied and read in machine-wide count instead.
    no_task_io: bool,
    last: Option<Progress>,
    checked: Option<Instant>,
    /// The host's reading at the last check (under `memcgtest vm`).
    host: Option<HostReading>,
}

impl Watchdog {
    pub fn new(groups: Vec<Cgroup>, proc: &Path, stall: Option<Duration>, writeback: bool) -> Self {
        Watchdog {
            groups,
            proc: proc.to_path_buf(),
            stall,
            writeback,
            no_task_io: !proc.join("self/io").exists(),
            last: None,
            checked: None,
            host: None,
        }
    }

    /// How long there has been no progress and where the tasks wait, when that is at least the
    /// stall time.
    pub fn stalled(&mut self, now: Instant) -> Option<Stall> {
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
        // The host busy since the last check: that time is not idle time.
        let host = hostload::read();
        let excused = match (previous, std::mem::replace(&mut self.host, host), host) {
            (Some(p), Some(a), Some(b)) if host_busy(&a, &b) => now
                .duration_since(p)
                .min(Duration::from_secs_f64(b.t - a.t)),
            _ => Duration::ZERO,
        };
        let mut total = tasks_progress(&self.proc, &tasks);
        let keys: &[&str] = match (self.writeback, self.no_task_io) {
            (false, false) => &[],
            (true, false) => &["nr_written"],
            (false, true) => &["nr_dirtied", "pgpgin"],
            (true, true) => &["nr_written", "nr_dirtied", "pgpgin"],
        };
        if !keys.is_empty()
            && let Ok(v) = proc::vmstat_snapshot(&self.proc)
        {
            for k in keys {
                total = total.wrapping_add(v.get(k).unwrap_or(0) as u64);
            }
            // The run's own reads of the host's load disk (this thread's, done by now) are no
            // task's progress.
            if self.no_task_io {
                total = total.wrapping_sub(hostload::read_kib());
            }
        }
        let idle = judge(&mut self.last, total, now, stall, excused)?;
        let tasks = (tasks.iter().take(8))
            .filter_map(|&p| proc::task_state(&self.proc, p, 8))
            .collect();
        Some(Stall { idle, tasks })
    }
}

/// Whether the host's other processes kept a CPU busy or the disk busy with their writes between
/// two readings.
fn host_busy(a: &HostReading, b: &HostReading) -> bool {
    let dt = b.t - a.t;
    dt > 0.0
        && ((b.others_cpu - a.others_cpu) / dt >= HOST_BUSY_CPUS
            || (b.others_dirtied - a.others_dirtied) / dt >= HOST_BUSY_BPS)
}

/// Records `total` at `now`, with `excused` more time the host was busy; once the time since the
/// total last changed, less what the host excused (at most `MAX_EXCUSED` stall times), reaches
/// `stall`: that time, all of it.
fn judge(
    last: &mut Option<Progress>,
    total: u64,
    now: Instant,
    stall: Duration,
    excused: Duration,
) -> Option<Duration> {
    match last {
        Some(p) if p.total == total => {
            p.excused = (p.excused + excused).min(stall * MAX_EXCUSED);
            let idle = now.duration_since(p.since);
            (idle.saturating_sub(p.excused) >= stall).then_some(idle)
        }
        _ => {
            *last = Some(Progress {
                total,
                since: now,
                excused: Duration::ZERO,
            });
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
    let at = |n| proc::stat_field(stat, n).and_then(|x| x.parse::<u64>().ok());
    at(10).unwrap_or(0).wrapping_add(at(12).unwrap_or(0))
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
        let z = Duration::ZERO;
        assert_eq!(judge(&mut last, 5, t0, s, z), None);
        assert_eq!(judge(&mut last, 5, t0 + secs(9), s, z), None);
        assert_eq!(judge(&mut last, 6, t0 + secs(11), s, z), None);
        let at = t0 + secs(21);
        assert_eq!(judge(&mut last, 6, at, s, z), Some(secs(10)));
        // 4 s of it with the host busy: a stall 4 s later, reported as all 14 s.
        let mut last = None;
        assert_eq!(judge(&mut last, 6, t0, s, z), None);
        assert_eq!(judge(&mut last, 6, t0 + secs(6), s, secs(4)), None);
        assert_eq!(judge(&mut last, 6, t0 + secs(12), s, z), None);
        assert_eq!(judge(&mut last, 6, t0 + secs(14), s, z), Some(secs(14)));
        // A host busy all along excuses at most two stall times.
        let mut last = None;
        assert_eq!(judge(&mut last, 6, t0, s, z), None);
        for t in 1..30 {
            assert_eq!(judge(&mut last, 6, t0 + secs(t), s, secs(1)), None, "{t}");
        }
        assert_eq!(
            judge(&mut last, 6, t0 + secs(30), s, secs(1)),
            Some(secs(30))
        );
    }

    #[test]
    fn a_host_is_busy_by_a_cpu_or_50_mb_s_between_readings() {
        let r = |t, cpu, dirtied| HostReading {
            t,
            others_cpu: cpu,
            others_dirtied: dirtied,
            recent_cpus: 0.0,
            recent_dirtied_bps: 0.0,
        };
        assert!(host_busy(&r(1.0, 0.0, 0.0), &r(1.5, 0.6, 0.0)));
        assert!(!host_busy(&r(1.0, 0.0, 0.0), &r(1.5, 0.3, 10e6)));
        assert!(host_busy(&r(1.0, 0.0, 0.0), &r(1.5, 0.0, 30e6)));
        // No new reading: nothing to excuse.
        assert!(!host_busy(&r(1.0, 0.0, 0.0), &r(1.0, 0.0, 0.0)));
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
