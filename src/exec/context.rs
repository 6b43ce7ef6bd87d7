//! What the runner, the phase and step executors and the sampler's sources share: where and how
//! scenarios run (`Context`), why a scenario stopped (`Stop`), and what it created (`Guard`, undone
//! on drop).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, anyhow};

use super::workload::Worker;
use crate::model::error::Error;
use crate::model::{Machine, Stat};
use crate::sys::cgroup::Cgroup;
use crate::sys::proc;
use crate::sys::sysctl::SysctlGuard;

/// Where and how scenarios run.
pub struct Context {
    /// The cgroup test groups are created below (own cgroup or --parent).
    pub parent: Cgroup,
    pub scratch: PathBuf,
    /// The slow disk's directory for scenarios with `scratch = "slow"` (`--slow-scratch`).
    pub slow_scratch: Option<PathBuf>,
    /// Wait for another run that owns the vm sysctls (else the scenario stops: 125).
    pub wait_sysctls: bool,
    pub quick: bool,
    /// The machine is the run's own (`--dedicated`): scenarios that need it run.
    pub dedicated: bool,
    pub timeout: Option<Duration>,
    /// The progress watchdog's time (see `super::watchdog`); None turns it off.
    pub stall: Option<Duration>,
    /// Run every scenario to its end, not only to its first confirmed failure (see
    /// `super::online`).
    pub keep_going: bool,
    pub machine: Machine,
    pub progress: Progress,
}

pub use crate::report::progress::Progress;

/// Why a scenario could not go on. A timeout is the kernel's fault (a writer throttled forever, a
/// hang); `Failed` says whose fault it is: the kernel's for a worker it killed or failed (see
/// `Error::of_worker_status`), a move it refused, a counter file that broke mid-run; the
/// machine's for everything the runner sets up (groups, a marker directory left over, sysctls the
/// kernel refuses, the scratch directory, opening counter files).
pub(super) enum Stop {
    Timeout(String),
    /// The progress watchdog fired: no workload progress for its time (the kernel's, like a
    /// timeout, but seen in seconds).
    Stalled(String),
    /// An online check failed (see `super::online`): the kernel's, and the checks say what.
    Failing(String),
    Interrupted,
    Failed(Error),
}

/// Untyped errors come from setting up: the machine's (see `Error::from`).
impl From<anyhow::Error> for Stop {
    fn from(e: anyhow::Error) -> Self {
        Stop::Failed(e.into())
    }
}

/// Everything a scenario created; undone on drop.
pub(super) struct Guard {
    pub(super) root: Option<Cgroup>,
    pub(super) scratch: Option<PathBuf>,
    pub(super) workers: Vec<Worker>,
    pub(super) sysctls: SysctlGuard,
}

impl Guard {
    pub(super) fn cleanup(&mut self) -> Result<()> {
        let mut errs = Vec::new();
        for w in &mut self.workers {
            w.kill(Duration::from_secs(5));
        }
        self.workers.clear();
        if let Err(e) = self.sysctls.restore() {
            errs.push(format!("{e:#}"));
        }
        if let Some(root) = self.root.take()
            && let Err(e) = root
                .kill_all(Duration::from_secs(10))
                .and_then(|_| root.remove_tree(Duration::from_secs(10)))
        {
            errs.push(e.to_string());
        }
        if let Some(dir) = self.scratch.take()
            && let Err(e) = std::fs::remove_dir_all(&dir)
        {
            errs.push(format!("remove {}: {e}", dir.display()));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(anyhow!("cleanup: {}", errs.join("; ")))
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Err(e) = self.cleanup() {
            eprintln!("memcgtest: {e:#}");
        }
    }
}

/// /proc/vmstat now, all keys.
pub(super) fn read_vmstat() -> Result<Stat> {
    proc::vmstat_snapshot(Path::new(proc::PROC))
}
