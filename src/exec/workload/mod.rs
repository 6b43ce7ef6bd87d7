//! Workloads and antagonists. Each runs as a child process (this binary re-executed with the
//! hidden `__worker` subcommand) that is placed in its cgroup between fork and exec, before it does
//! any work, so every page it touches is charged to that group from the start.

use std::cell::RefCell;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::exec::watchdog::{Stall, Watchdog};
use crate::model::error::Error;
use crate::sys::cgroup::Cgroup;

/// What a worker process does. Sent to the child as JSON on its command line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum Job {
    /// dd-like buffered writer: unlink, create, write `size` bytes in `block_size` blocks.
    Write {
        path: PathBuf,
        size: u64,
        block_size: u64,
        fsync: bool,
    },
    /// sync(2).
    Sync,
    /// fsync(2) of a file.
    Fsync { path: PathBuf },
    /// Antagonist: writes 1 to /proc/sys/vm/compact_memory until killed.
    Compaction,
    /// ftruncate(2) a file to `size`.
    Truncate { path: PathBuf, size: u64 },
    /// unlink(2) a file.
    Unlink { path: PathBuf },
    /// Create a file of `size`, map it shared, dirty every page, keep it dirty for `hold_ms`, msync.
    MmapWrite {
        path: PathBuf,
        size: u64,
        hold_ms: u64,
    },
    /// A task that holds memory and waits for commands on stdin (see `Holder`): `anon` bytes of
    /// touched anonymous memory and, with `file`, a shared mapping of `file_size` bytes of that
    /// file, every page dirtied (`dirty`) or only read. With `write`, a thread rewrites the first
    /// `write` bytes of `<file>.written` over and over (buffered, like dd) until told to stop.
    Hold {
        anon: u64,
        /// Bytes of a memfd, mapped shared and written (shmem, mapped file).
        #[serde(default)]
        shmem: u64,
        file: Option<PathBuf>,
        file_size: u64,
        dirty: bool,
        /// Keep dirtying the mapping until told to stop (see `Step::Hold`).
        #[serde(default)]
        redirty: bool,
        write: u64,
        /// How it holds its anonymous memory and what kernel memory it makes.
        #[serde(default)]
        extras: HoldExtras,
    },
    /// Write a file of `size`, fsync it and drop it from the page cache (POSIX_FADV_DONTNEED).
    Create { path: PathBuf, size: u64 },
    /// Read a file from a cold cache (POSIX_FADV_DONTNEED first) in 1 MiB reads.
    Read {
        path: PathBuf,
        #[serde(default)]
        warm: bool,
    },
    /// Page-fault loop for `duration_ms`: map `size` bytes anonymous, touch every page, unmap.
    Fault { size: u64, duration_ms: u64 },
    /// usemem: map `size` bytes anonymous and write every byte once; measured: MB/s. With
    /// `small`, in 4 KiB pages (MADV_NOHUGEPAGE), else in huge pages where the kernel gives them.
    Usemem {
        size: u64,
        #[serde(default)]
        small: bool,
    },
}

/// What a worker reports on stdout when it finishes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct JobResult {
    /// Bytes written (or otherwise processed).
    pub bytes: u64,
    /// Seconds spent in the measured part (the write loop for a writer, the call for sync).
    pub seconds: f64,
    /// Seconds spent in fsync after the writes, when asked for.
    pub fsync_seconds: f64,
    /// CPU seconds (user + system) the worker used, for jobs that measure it.
    #[serde(default)]
    pub cpu_seconds: f64,
    /// An exhaust step's count of the group's tasks that died of SIGKILL (the OOM killer's),
    /// whether the task that needed the memory was one, and the bystanders that lived on (the
    /// runner's own count, not a worker's).
    #[serde(default)]
    pub killed: u32,
    #[serde(default)]
    pub task_killed: bool,
    #[serde(default)]
    pub survived: u32,
    /// The page faults the worker took in its whole life (getrusage: minor, major), for the
    /// faults invariant; summed over a step's workers.
    #[serde(default)]
    pub minflt: u64,
    #[serde(default)]
    pub majflt: u64,
    /// exhaust: its bystanders at oom_score_adj -1000, how many of them lived, and whether the
    /// task waiting outside the group was killed (None: there was none).
    #[serde(default)]
    pub immune: u32,
    #[serde(default)]
    pub immune_survived: u32,
    #[serde(default)]
    pub outside_killed: Option<u32>,
    /// exhaust with `raise`: whether the task, still running when its wait ended, was found
    /// under OOM (v1 under_oom 1) before the limit was raised (None: it did not have to wait).
    #[serde(default)]
    pub waited: Option<bool>,
    /// set: what it wrote and what the file read around it.
    #[serde(default)]
    pub knob: Option<crate::model::KnobWrite>,
    /// advise: why the kernel declined the advice (a collapse it could not make).
    #[serde(default)]
    pub declined: Option<String>,
    /// hold with pipes: how many it made (fewer than asked when the kernel refused one).
    #[serde(default)]
    pub made: Option<u64>,
    /// migrate: where the task's pages are then, and what its group's memory.numa_stat said.
    #[serde(default)]
    pub placed: Option<crate::model::placement::Placement>,
    /// fault: the CPUs (bit n: CPU n, below 64) the workers were found on after each pass, so a
    /// rate can be read against where it ran (each CPU of a guest has its own node).
    #[serde(default)]
    pub cpus: u64,
}

/// What a held task does besides holding its memory: how its anonymous memory is held, and the
/// kernel memory it makes (see `scenario::Hold`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldExtras {
    /// Anonymous memory in huge pages (MADV_HUGEPAGE on a 2 MiB aligned region).
    pub huge: bool,
    /// mlock(2) the anonymous memory: unevictable.
    pub mlock: bool,
    /// Write zeros, not a pattern (a zero-filled page swaps out as a zero page).
    pub zero: bool,
    /// Bytes of the anonymous memory given back with MADV_FREE after touching it.
    pub lazyfree: u64,
    /// The shmem in a file on a tmpfs of its own mounted with huge=always (in a mount namespace
    /// of its own, at this directory), not a memfd.
    pub shmem_huge: Option<PathBuf>,
    /// Threads that sleep until it exits: a kernel stack each.
    pub threads: u32,
    /// Empty files made in this directory (in 100 subdirectories): inodes and dentries, slab.
    pub files: Option<(PathBuf, u32)>,
    /// The file descriptor table grown to this many (one descriptor dup'ed that high): a table
    /// that large is vmalloc'ed.
    pub fds: u32,
    /// The file mapped read-only from a read-only descriptor, on a 2 MiB boundary.
    #[serde(default)]
    pub readonly: bool,
    /// MADV_NOHUGEPAGE on that mapping before it is touched.
    #[serde(default)]
    pub nohugepage: bool,
    /// Bytes queued on a loopback TCP connection to itself, in a network namespace of its own.
    #[serde(default)]
    pub sock: u64,
    /// Bytes of address space touched once every 2 MiB (page tables).
    #[serde(default)]
    pub sparse: u64,
    /// Pipes made and kept open, each resized to `pipe_size` bytes when not 0.
    #[serde(default)]
    pub pipes: u32,
    #[serde(default)]
    pub pipe_size: u64,
    /// oom_score_adj -1000; its pipes stop at the first the kernel refuses.
    #[serde(default)]
    pub unkillable: bool,
}

/// A running worker process.
pub struct Worker {
    pub child: Child,
    pub what: String,
}

/// How waiting for a worker ended, when it did not finish normally. `Failed` says whose fault it
/// is: from the worker's exit status (`Error::of_worker_status`), else the machine's or the tool's.
#[derive(Debug)]
pub enum WaitError {
    Timeout,
    Interrupted,
    /// The progress watchdog saw no task of the run's groups make progress for this long.
    Stalled(Stall),
    /// An online check failed on the record so far (see `crate::exec::online`): its message.
    Failing(String),
    Failed(Error),
}

/// What ends a wait besides the awaited thing: the scenario's deadline, Ctrl-C or SIGTERM
/// (`interrupted`), and, while a workload runs, the progress watchdog.
pub struct Limits<'a> {
    pub deadline: Instant,
    pub interrupted: &'a dyn Fn() -> bool,
    pub watchdog: Option<&'a RefCell<Watchdog>>,
    /// The scenario's online checks on the record so far: why to stop, when one failed.
    pub failing: Option<&'a dyn Fn() -> Option<String>>,
}

/// Calls `done` every 5 ms until it gives an answer; `Interrupted` once `interrupted()` is true,
/// `Stalled` when the watchdog says so, `Timeout` at the deadline. The runner's one wait loop
/// (workers, holders, sleep steps).
pub fn poll_until<T>(
    limits: &Limits,
    mut done: impl FnMut() -> Option<Result<T, WaitError>>,
) -> Result<T, WaitError> {
    loop {
        if let Some(r) = done() {
            return r;
        }
        if (limits.interrupted)() {
            return Err(WaitError::Interrupted);
        }
        if let Some(w) = limits.watchdog
            && let Some(stall) = w.borrow_mut().stalled(Instant::now())
        {
            return Err(WaitError::Stalled(stall));
        }
        if let Some(why) = limits.failing.and_then(|f| f()) {
            return Err(WaitError::Failing(why));
        }
        if Instant::now() >= limits.deadline {
            return Err(WaitError::Timeout);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The name (comm) a worker has between joining its group and exec: its mm is still a copy of
/// the runner's, whose memory the tasks sampler must not count as the group's. exec gives it
/// the binary's name again. At most 15 bytes (TASK_COMM_LEN).
pub const FORKED_NAME: &std::ffi::CStr = c"memcgtest-fork";

/// Starts a worker for `job` inside `cgroup`. The worker gets SIGKILL when the calling thread
/// ends (PR_SET_PDEATHSIG), so workers are spawned from the runner's main thread only.
pub fn spawn(job: &Job, cgroup: &Cgroup) -> Result<Worker> {
    // Opened here, written in the child after fork: "0" moves the writing process itself.
    let procs_file = cgroup.open_procs().context("place a worker in its group")?;
    let fd = procs_file.as_raw_fd();
    // SAFETY: getpid has no preconditions.
    let runner = unsafe { libc::getpid() };
    let exe = std::env::current_exe().context("cannot find my own executable")?;
    let mut cmd = Command::new(exe);
    cmd.arg("__worker")
        .arg(serde_json::to_string(job)?)
        .stdin(if matches!(job, Job::Hold { .. }) {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: Ctrl-C reaches the runner, which then stops workers in order.
        .process_group(0);
    unsafe {
        cmd.pre_exec(move || {
            // Dies with the runner (SIGKILL when the thread that forked it ends, the runner's
            // main thread): nothing spins on after the runner is killed with SIGKILL. The parent
            // check closes the window in which the runner died before prctl.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != runner {
                libc::_exit(125);
            }
            // Marked before it joins the group, until exec renames it (see FORKED_NAME).
            if libc::prctl(libc::PR_SET_NAME, FORKED_NAME.as_ptr()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let r = libc::write(fd, b"0".as_ptr().cast(), 1);
            if r != 1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .with_context(|| format!("start worker in {}", cgroup.path.display()))?;
    drop(procs_file);
    Ok(Worker {
        child,
        what: format!("{job:?}"),
    })
}

impl Worker {
    /// Waits until the worker exits, the deadline passes, or `interrupted()` turns true.
    pub fn wait(&mut self, limits: &Limits) -> Result<JobResult, WaitError> {
        let status = self.exit_status(limits)?;
        self.outcome(status)
    }

    /// Like `wait`, for a worker the OOM killer may kill: `None` when it died of SIGKILL.
    pub fn wait_or_killed(&mut self, limits: &Limits) -> Result<Option<JobResult>, WaitError> {
        use std::os::unix::process::ExitStatusExt;
        let status = self.exit_status(limits)?;
        if status.signal() == Some(libc::SIGKILL) {
            return Ok(None);
        }
        self.outcome(status).map(Some)
    }

    /// Like `wait_or_killed`, but a worker still running after `within` is stopped with SIGTERM
    /// (a fatal signal also ends a throttling sleep, schedule_timeout_killable) and reported
    /// as a result of 0 bytes.
    pub fn wait_or_stop(
        &mut self,
        limits: &Limits,
        within: Duration,
    ) -> Result<Option<JobResult>, WaitError> {
        use std::os::unix::process::ExitStatusExt;
        let until = Instant::now() + within;
        let early = Limits {
            deadline: limits.deadline.min(until),
            ..*limits
        };
        match self.wait_or_killed(&early) {
            Err(WaitError::Timeout) if Instant::now() >= until && until < limits.deadline => {}
            other => return other,
        }
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let status = self.exit_status(limits)?;
        match status.signal() {
            Some(libc::SIGTERM) => Ok(Some(JobResult::default())),
            Some(libc::SIGKILL) => Ok(None),
            _ => self.outcome(status).map(Some),
        }
    }

    /// How the worker exited, once it has.
    fn exit_status(&mut self, limits: &Limits) -> Result<std::process::ExitStatus, WaitError> {
        poll_until(limits, || match self.child.try_wait() {
            Ok(Some(status)) => Some(Ok(status)),
            Ok(None) => None,
            Err(e) => Some(Err(WaitError::Failed(Error::Environment(format!(
                "wait for worker: {e}"
            ))))),
        })
    }

    /// What an exited worker reported: its JSON result, or why it failed.
    fn outcome(&mut self, status: std::process::ExitStatus) -> Result<JobResult, WaitError> {
        let mut out = String::new();
        let mut err = String::new();
        if let Some(o) = self.child.stdout.as_mut() {
            let _ = o.read_to_string(&mut out);
        }
        if let Some(e) = self.child.stderr.as_mut() {
            let _ = e.read_to_string(&mut err);
        }
        if !status.success() {
            return Err(WaitError::Failed(Error::of_worker_status(
                status,
                format!("worker {} exited with {status}{}", self.what, said(&err)),
            )));
        }
        serde_json::from_str(out.trim()).map_err(|e| {
            WaitError::Failed(Error::Internal(format!(
                "worker {} printed {out:?}: {e}",
                self.what
            )))
        })
    }

    /// Kills the worker and reaps it (SIGKILL; waits at most `wait`).
    pub fn kill(&mut self, wait: Duration) {
        let _ = self.child.kill();
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// A running holder task (`Job::Hold`) and its command channel.
pub struct Holder {
    pub worker: Worker,
    pub pid: i32,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Holder {
    /// Starts a holder in `cgroup` and waits until its memory is set up; returns the seconds the
    /// set-up took.
    /// The holder's note (what it could not hold) comes with the seconds.
    pub fn start(
        job: &Job,
        cgroup: &Cgroup,
        limits: &Limits,
    ) -> Result<(Holder, f64, Option<u64>, String), WaitError> {
        let mut worker = spawn(job, cgroup).map_err(|e| WaitError::Failed(e.into()))?;
        let stdin = worker.child.stdin.take().expect("holder stdin is piped");
        let stdout = std::io::BufReader::new(worker.child.stdout.take().expect("stdout piped"));
        let pid = worker.child.id() as i32;
        let mut h = Holder {
            worker,
            pid,
            stdin,
            stdout,
        };
        let (secs, note) = h.answer_noted("ready", limits)?;
        // "ready SECS made=N NOTE...": the pipes it made, when it was asked for some.
        let (made, note) = match note.split_once(' ').unwrap_or((&note, "")) {
            (m, rest) if m.starts_with("made=") => (m[5..].parse().ok(), rest.to_string()),
            _ => (None, note),
        };
        Ok((h, secs, made, note))
    }

    /// Reads the holder's next line, which must start with `word`; returns the seconds it reports.
    fn answer(&mut self, word: &str, limits: &Limits) -> Result<f64, WaitError> {
        self.answer_noted(word, limits).map(|(secs, _)| secs)
    }

    /// `answer`, with the rest of the line: a note the holder adds (an advice the kernel declined).
    fn answer_noted(&mut self, word: &str, limits: &Limits) -> Result<(f64, String), WaitError> {
        use std::io::BufRead;
        let fd = self.stdout.get_ref().as_raw_fd();
        poll_until(limits, || {
            if !self.stdout.buffer().is_empty() {
                return Some(Ok(()));
            }
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let n = unsafe { libc::poll(&mut pfd, 1, 50) };
            (n > 0).then_some(Ok(()))
        })?;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| self.failed(format!("read from holder: {e}")))?;
        let mut it = line.split_whitespace();
        if it.next() != Some(word) {
            return Err(self.failed(format!("holder said {:?} instead of {word:?}", line.trim())));
        }
        let secs = it.next().and_then(|x| x.parse().ok()).unwrap_or(0.0);
        Ok((secs, it.collect::<Vec<_>>().join(" ")))
    }

    /// Writes one command line to the holder.
    fn send(&mut self, cmd: &str) -> Result<(), WaitError> {
        match writeln!(self.stdin, "{cmd}").and_then(|_| self.stdin.flush()) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.failed(format!("send {cmd:?} to holder: {e}"))),
        }
    }

    /// Sends one command and waits for its "ok"; returns the seconds the holder reports.
    pub fn command(&mut self, cmd: &str, limits: &Limits) -> Result<f64, WaitError> {
        self.send(cmd)?;
        self.answer("ok", limits)
    }

    /// Sends an `advise ADVICE REGION` command; returns the seconds and the holder's note.
    pub fn advise(
        &mut self,
        advice: crate::model::step::Advice,
        region: crate::model::step::Region,
        limits: &Limits,
    ) -> Result<(f64, String), WaitError> {
        let cmd = format!("advise {} {}", advice.name(), region.name());
        self.send(&cmd)?;
        self.answer_noted("ok", limits)
    }

    /// Sends `migrate REGION NODE|away MOVER` (`to`: Some) or `where REGION`; returns the
    /// seconds, the node moved to (None for `where`), the region's pages per node after it
    /// (index: node) and the pages on no node.
    pub fn placed(
        &mut self,
        region: crate::model::step::Region,
        to: Option<(crate::model::step::Target, crate::model::step::Mover)>,
        limits: &Limits,
    ) -> Result<(f64, Option<u32>, Vec<u64>, u64), WaitError> {
        let cmd = match to {
            Some((n, by)) => format!("migrate {} {} {}", region.name(), n.name(), by.name()),
            None => format!("where {}", region.name()),
        };
        self.send(&cmd)?;
        let (secs, text) = self.answer_noted("ok", limits)?;
        let mut it = text.split_whitespace();
        let node = it.next().and_then(|n| n.parse::<u32>().ok());
        let per: Option<Vec<u64>> = it
            .next()
            .map(|p| p.split(',').map(|n| n.parse().ok()).collect())
            .unwrap_or(Some(Vec::new()));
        let unplaced = it.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        match per {
            Some(per) => Ok((secs, node, per, unplaced)),
            None => Err(self.failed(format!("holder answered {cmd:?} with {text:?}"))),
        }
    }

    /// The holder stopped talking: whose fault it is follows from how it exited (a holder that
    /// is still alive broke the protocol: the tool's fault). Its stderr is added to `msg`.
    fn failed(&mut self, msg: String) -> WaitError {
        // Its stderr says why, once it has exited (reading earlier would block).
        std::thread::sleep(Duration::from_millis(50));
        match self.worker.child.try_wait() {
            Ok(Some(status)) => {
                let mut err = String::new();
                if let Some(e) = self.worker.child.stderr.as_mut() {
                    let _ = e.read_to_string(&mut err);
                }
                WaitError::Failed(Error::of_worker_status(
                    status,
                    format!("{msg}; it exited with {status}{}", said(&err)),
                ))
            }
            _ => WaitError::Failed(Error::Internal(msg)),
        }
    }

    /// Tells the holder to exit (freeing its memory) and reaps it.
    pub fn release(mut self, limits: &Limits) -> Result<(), WaitError> {
        let _ = writeln!(self.stdin, "exit").and_then(|_| self.stdin.flush());
        poll_until(limits, || match self.worker.child.try_wait() {
            Ok(Some(st)) if st.success() => Some(Ok(())),
            Ok(Some(st)) => Some(Err(WaitError::Failed(Error::of_worker_status(
                st,
                format!("holder exited with {st}"),
            )))),
            Ok(None) => None,
            Err(e) => Some(Err(WaitError::Failed(Error::Environment(format!(
                "wait for holder: {e}"
            ))))),
        })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill(Duration::from_secs(5));
        }
    }
}

mod child;
pub(crate) use child::drop_cache;
pub use child::worker_main;

/// ": <stderr>" of a worker that said something before it died, else nothing.
fn said(stderr: &str) -> String {
    match stderr.trim() {
        "" => String::new(),
        t => format!(": {t}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use child::{create_cold, write_file};

    /// A created file has the size and the bytes a buffered write gives it, directly written
    /// (whole pages) or not (a tail), and replaces what was there.
    #[test]
    fn create_makes_the_bytes_a_write_makes() {
        let d = tempfile::tempdir().unwrap();
        for size in [3u64 << 20, (2 << 20) + 100] {
            let (a, b) = (d.path().join("a"), d.path().join("b"));
            std::fs::write(&a, b"old").unwrap();
            let r = create_cold(&a, size).unwrap();
            assert_eq!(r.bytes, size);
            write_file(&b, size, 1 << 20, true).unwrap();
            assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        }
    }

    #[test]
    fn writer_writes_exact_size_and_reports_it() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"old").unwrap();
        let r = write_file(&p, 3 * 4096 + 100, 4096, true).unwrap();
        assert_eq!(r.bytes, 3 * 4096 + 100);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 3 * 4096 + 100);
        assert!(r.seconds >= 0.0);
    }

    #[test]
    fn job_json_round_trip() {
        let j = Job::Write {
            path: "/x".into(),
            size: 1,
            block_size: 1,
            fsync: false,
        };
        let s = serde_json::to_string(&j).unwrap();
        assert_eq!(serde_json::from_str::<Job>(&s).unwrap(), j);
    }
}
