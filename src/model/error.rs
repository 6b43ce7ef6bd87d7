//! Exit codes and the one error type that decides them.
//!
//! The codes are made for CI gating and `git bisect run`: 1 blames the kernel under test, 125
//! makes bisect skip the commit, and 126..255 (which abort a bisect) are never used. Whatever
//! leaves the program as an error is an [`Error`]; `main` asks it for its code. Untyped (anyhow)
//! errors are looked at for an [`Error`] inside; one without is the machine's (125): an error
//! nobody classified never blames the kernel.

/// A scenario file error: where, and what is wrong.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}:{line}:{col}: {msg}")]
pub struct ScenarioError {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub msg: String,
}

/// Exit codes (never 126..255).
pub mod exit {
    /// Every scenario that ran passed (skips allowed).
    pub const OK: u8 = 0;
    /// The kernel is at fault: a check failed, a scenario could not finish because of the kernel
    /// (a worker killed by it, a timeout, a kernel splat), or `compare` found a regression.
    pub const FAIL: u8 = 1;
    /// Usage or scenario-file error.
    pub const USAGE: u8 = 2;
    /// Nothing (or not everything) could be tested on this machine: git bisect skips the commit.
    pub const UNTESTABLE: u8 = 125;
}

/// Why memcgtest stops with an error, and so its exit code.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The command line asks for something that does not exist (an unknown scenario, an
    /// unreadable `compare` input): 2.
    #[error("{0}")]
    Usage(String),
    /// A scenario file that cannot run, with its `file:line:column`: 2.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// This machine cannot test (not root, no memory controller, no writable cgroup, a scratch or
    /// report directory that is missing, not writable or on tmpfs, a marker directory that
    /// already exists, a sysctl value the kernel refuses, a disk full in a worker, every scenario
    /// skipped): 125. The kernel under test is not blamed.
    #[error("{0}")]
    Environment(String),
    /// A signal (SIGINT, SIGTERM, SIGHUP) stopped the run, which is incomplete rather than
    /// failed: 125.
    #[error("interrupted by a signal; cleaned up")]
    Interrupted,
    /// memcgtest itself broke (a panic): 125, a tool bug never blames the kernel.
    #[error("internal error: {0}")]
    Internal(String),
    /// The kernel under test is at fault: a worker it killed (SIGKILL: the OOM killer) or whose
    /// system call failed for no reason of the machine's, a timeout, a failed check: 1.
    #[error("{0}")]
    Kernel(String),
}

impl Error {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::Scenario(_) => exit::USAGE,
            Error::Environment(_) | Error::Interrupted | Error::Internal(_) => exit::UNTESTABLE,
            Error::Kernel(_) => exit::FAIL,
        }
    }

    /// The same kind of error, its message prefixed with `what` ("step 'sync': ...").
    pub fn context(self, what: &str) -> Error {
        match self {
            Error::Usage(m) => Error::Usage(format!("{what}: {m}")),
            Error::Environment(m) => Error::Environment(format!("{what}: {m}")),
            Error::Internal(m) => Error::Internal(format!("{what}: {m}")),
            Error::Kernel(m) => Error::Kernel(format!("{what}: {m}")),
            e @ (Error::Scenario(_) | Error::Interrupted) => e,
        }
    }

    /// How a worker's failure is classified, from its exit status. A worker exits 1 for an error
    /// it blames on the kernel and 125 for the machine's (see [`Error::of_worker`]); any other
    /// code is the tool's. Killed by SIGKILL it was killed by the kernel (the OOM killer), by
    /// SIGSEGV too (the kernel kills a task that oopses in a system call with it; the worker's
    /// own code is safe Rust); SIGABRT is the tool's; other signals (SIGBUS of a mapped file on a
    /// full disk, SIGTERM from someone on this machine, ...) are the machine's.
    pub fn of_worker_status(status: std::process::ExitStatus, msg: String) -> Error {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(1), _) => Error::Kernel(msg),
            (None, Some(libc::SIGKILL | libc::SIGSEGV)) => Error::Kernel(msg),
            (None, Some(libc::SIGABRT)) => Error::Internal(msg),
            _ => Error::Environment(msg),
        }
    }

    /// Classifies an error inside a worker process by the errno of the system call that failed:
    /// the machine's when the errno says so ([`ENVIRONMENT_ERRNOS`]: a full or read-only disk,
    /// permissions, a missing scratch file, process limits), and the tool's (125) when no system
    /// call failed; any other failed system call on our own files and memory blames the kernel.
    pub fn of_worker(e: &anyhow::Error) -> Error {
        let msg = format!("{e:#}");
        let errno = e.chain().find_map(|c| {
            c.downcast_ref::<std::io::Error>()
                .and_then(|io| io.raw_os_error())
                .or_else(|| c.downcast_ref::<nix::errno::Errno>().map(|n| *n as i32))
        });
        match errno {
            Some(n) if ENVIRONMENT_ERRNOS.contains(&n) => Error::Environment(msg),
            Some(_) => Error::Kernel(msg),
            None => Error::Environment(msg),
        }
    }
}

/// Errnos that say the machine, not the kernel under test, stopped a workload.
pub const ENVIRONMENT_ERRNOS: &[i32] = &[
    libc::ENOSPC,
    libc::EDQUOT,
    libc::EROFS,
    libc::EFBIG,
    libc::EACCES,
    libc::EPERM,
    libc::ENOENT,
    libc::ENOTDIR,
    libc::EISDIR,
    libc::EEXIST,
    libc::ENAMETOOLONG,
    libc::EMFILE,
    libc::ENFILE,
    libc::EPIPE,
];

/// An untyped error: the [`Error`] inside it, if any, else the machine's (125) with its context.
impl From<anyhow::Error> for Error {
    fn from(e: anyhow::Error) -> Self {
        match e.downcast_ref::<Error>() {
            Some(typed) => typed.clone(),
            None => Error::Environment(format!("{e:#}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    fn scenario_error() -> ScenarioError {
        ScenarioError {
            file: "f.toml".into(),
            line: 3,
            col: 7,
            msg: "bad".into(),
        }
    }

    #[test]
    fn each_kind_has_its_exit_code() {
        assert_eq!(Error::Usage("no scenario".into()).exit_code(), 2);
        assert_eq!(Error::Scenario(scenario_error()).exit_code(), 2);
        assert_eq!(Error::Environment("not root".into()).exit_code(), 125);
        assert_eq!(Error::Interrupted.exit_code(), 125);
        assert_eq!(Error::Internal("panic".into()).exit_code(), 125);
        assert_eq!(Error::Kernel("check failed".into()).exit_code(), 1);
        assert_eq!(
            Error::Scenario(scenario_error()).to_string(),
            "f.toml:3:7: bad"
        );
    }

    #[test]
    fn untyped_errors_keep_the_typed_one_inside_or_blame_the_machine() {
        let e = anyhow::Error::new(Error::Usage("u".into())).context("while doing x");
        assert_eq!(Error::from(e).exit_code(), 2);
        let e = anyhow::Error::new(Error::Kernel("k".into()));
        assert_eq!(Error::from(e).exit_code(), 1);
        let e = anyhow::anyhow!("cannot read /proc/self/mountinfo");
        let typed = Error::from(e);
        assert_eq!(typed.exit_code(), 125);
        assert!(typed.to_string().contains("mountinfo"), "{typed}");
    }

    #[test]
    fn worker_errors_are_classified_by_errno() {
        let io = |n: i32| {
            anyhow::Error::new(std::io::Error::from_raw_os_error(n)).context("write /var/tmp/x")
        };
        assert_eq!(Error::of_worker(&io(libc::ENOSPC)).exit_code(), 125);
        assert_eq!(Error::of_worker(&io(libc::EROFS)).exit_code(), 125);
        assert_eq!(Error::of_worker(&io(libc::EIO)).exit_code(), 1);
        let nix = anyhow::Error::new(nix::errno::Errno::EDQUOT).context("msync");
        assert_eq!(Error::of_worker(&nix).exit_code(), 125);
        let nix = anyhow::Error::new(nix::errno::Errno::EFAULT).context("msync");
        assert_eq!(Error::of_worker(&nix).exit_code(), 1);
        // No system call failed: the tool's own error.
        assert_eq!(
            Error::of_worker(&anyhow::anyhow!("unknown holder command")).exit_code(),
            125
        );
    }

    #[test]
    fn worker_exit_statuses_are_classified() {
        let by = |raw: i32| Error::of_worker_status(ExitStatus::from_raw(raw), String::new());
        // Exit codes sit in bits 8..15 of the wait status, signals in bits 0..6.
        assert_eq!(by(1 << 8).exit_code(), 1);
        assert_eq!(by(125 << 8).exit_code(), 125);
        assert_eq!(by(2 << 8).exit_code(), 125);
        assert_eq!(by(libc::SIGKILL).exit_code(), 1);
        assert_eq!(by(libc::SIGSEGV).exit_code(), 1);
        assert_eq!(by(libc::SIGBUS).exit_code(), 125);
        assert_eq!(by(libc::SIGTERM).exit_code(), 125);
        assert_eq!(by(libc::SIGABRT).exit_code(), 125);
    }
}
