//! Locks that make concurrent runs safe on a shared machine (flock(2) under /run/memcgtest).
//!
//! - Liveness: every run (and `vm`, `env`) holds an exclusive flock on `<run dir>/<pid>.lock` for
//!   its whole life. A marker `memcgtest-<pid>-*` is live iff that lock is held: no process-name
//!   matching, and a reused pid that is not a memcgtest run never holds it. The kernel drops the
//!   lock when the process dies, however it dies.
//! - Sysctls: `<run dir>/sysctl.lock` is held by the one run that changes vm sysctls (see
//!   `sysctl.rs`).
//!
//! Every function takes the run directory, so tests use temporary ones.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Where locks and the sysctl state live.
pub const RUN_DIR: &str = "/run/memcgtest";

/// The liveness lock file of run `pid`.
pub fn live_lock_path(run_dir: &Path, pid: i32) -> PathBuf {
    run_dir.join(format!("{pid}.lock"))
}

/// flock(2) on an open file: `Ok(true)` when taken, `Ok(false)` when someone else holds it and
/// `block` is false.
fn flock(f: &File, op: libc::c_int, block: bool) -> std::io::Result<bool> {
    let op = if block { op } else { op | libc::LOCK_NB };
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(f.as_raw_fd(), op) } == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) if !block => return Ok(false),
            _ => return Err(e),
        }
    }
}

/// Whether an flock error says the kernel has no file locking at all (CONFIG_FILE_LOCKING off,
/// as `make tinyconfig` leaves it: flock(2) is ENOSYS). Such a kernel cannot arbitrate between
/// runs; memcgtest then runs unprotected and says so once (in a VM guest nothing else runs).
fn no_file_locking(e: &std::io::Error) -> bool {
    if e.raw_os_error() != Some(libc::ENOSYS) {
        return false;
    }
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        eprintln!(
            "memcgtest: this kernel has no file locking (flock: ENOSYS, CONFIG_FILE_LOCKING off): concurrent memcgtest runs on it are not kept apart"
        )
    });
    true
}

/// Creates the run directory (root-only writable).
fn make_run_dir(run_dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(run_dir)
        .with_context(|| format!("mkdir {}", run_dir.display()))
}

/// An exclusive flock on a lock file that still has its name: a lock taken on a file that was
/// unlinked meanwhile (by its dead owner's cleanup) is retried on the new file, so two holders can
/// never both believe they own the name.
fn lock_named(path: &Path, block: bool) -> Result<Option<File>> {
    loop {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .with_context(|| format!("open {}", path.display()))?;
        match flock(&f, libc::LOCK_EX, block) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) if no_file_locking(&e) => return Ok(Some(f)),
            Err(e) => return Err(e).with_context(|| format!("flock {}", path.display())),
        }
        let held = f.metadata()?;
        match std::fs::symlink_metadata(path) {
            Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => return Ok(Some(f)),
            _ => continue,
        }
    }
}

/// The liveness lock of this process, held until dropped (then its file is removed).
pub struct LiveLock {
    path: PathBuf,
    _file: File,
}

impl LiveLock {
    /// Takes `<run_dir>/<pid>.lock` for `pid` (this process). Waits only for a `cleanup` that is
    /// looking at a stale file of the same pid.
    pub fn acquire(run_dir: &Path, pid: i32) -> Result<LiveLock> {
        make_run_dir(run_dir)?;
        let path = live_lock_path(run_dir, pid);
        let file = lock_named(&path, true)?.expect("a blocking flock returns the lock");
        Ok(LiveLock { path, _file: file })
    }
}

impl Drop for LiveLock {
    fn drop(&mut self) {
        // Unlinked while still held: nobody can mistake the name for a dead run's meanwhile.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether run `pid` is alive: its liveness lock is held. No lock file means no live run.
/// A lock held after its run died (by a worker between fork and exec) is waited for, 2 s at most.
pub fn is_live(run_dir: &Path, pid: i32) -> bool {
    let path = live_lock_path(run_dir, pid);
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
    else {
        return false;
    };
    // Taken: nobody holds it, the run is dead (released when `f` closes). An error other than
    // "held" (which flock on a regular file does not give) counts as live: never tear down what
    // might run.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        let gone = || {
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
                == Err(nix::errno::Errno::ESRCH)
        };
        match flock(&f, libc::LOCK_SH, false) {
            Ok(true) => return false,
            // No file locking on this kernel: the pid's existence is all there is to go by.
            Err(e) if no_file_locking(&e) => return !gone(),
            _ => {}
        }
        // Held although the run itself is gone: a worker it was forking shares the lock until
        // it execs or dies of its death signal (a cgroup.procs write can take a while). That
        // takes milliseconds; a lock still held after 2 s is taken as live.
        if !gone() || std::time::Instant::now() >= deadline {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Removes the lock file of a dead run (taken first, so a new run of the same pid is not hurt).
pub fn remove_stale(run_dir: &Path, pid: i32) {
    let path = live_lock_path(run_dir, pid);
    if !path.exists() {
        return;
    }
    if let Ok(Some(_f)) = lock_named(&path, false) {
        let _ = std::fs::remove_file(&path);
    }
}

/// The machine-wide sysctl ownership lock, with the owner's pid written into it.
pub struct Owner {
    _file: File,
}

/// Who holds the sysctl lock, as written in it ("" if unknown).
fn holder(path: &Path) -> String {
    let mut s = String::new();
    let _ = File::open(path).and_then(|mut f| f.read_to_string(&mut s));
    s.trim().to_string()
}

/// Takes `<run_dir>/sysctl.lock`. When another run holds it: with `wait`, says so on stderr
/// and waits; without, `Ok(None)` naming the holder in `busy`.
pub fn own_sysctls(run_dir: &Path, wait: bool, busy: &mut String) -> Result<Option<Owner>> {
    make_run_dir(run_dir)?;
    let path = run_dir.join("sysctl.lock");
    let mut file = match lock_named(&path, false)? {
        Some(f) => f,
        None => {
            *busy = holder(&path);
            if !wait {
                return Ok(None);
            }
            eprintln!(
                "memcgtest: waiting for the vm sysctls: run {} changes them (flock {})",
                if busy.is_empty() { "?" } else { busy },
                path.display()
            );
            lock_named(&path, true)?.expect("a blocking flock returns the lock")
        }
    };
    file.set_len(0)?;
    write!(file, "{}", std::process::id())?;
    Ok(Some(Owner { _file: file }))
}

/// Takes the sysctl lock only if nobody holds it (for `cleanup`).
pub fn try_own_sysctls(run_dir: &Path) -> Result<Option<Owner>> {
    if !run_dir.is_dir() {
        return Ok(None);
    }
    let mut busy = String::new();
    own_sysctls(run_dir, false, &mut busy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_is_live_and_a_released_one_dead() {
        let d = tempfile::tempdir().unwrap();
        let me = std::process::id() as i32;
        assert!(!is_live(d.path(), me), "no lock file: dead");
        let l = LiveLock::acquire(d.path(), me).unwrap();
        // A different open file description: flock sees the conflict even in one process.
        assert!(is_live(d.path(), me));
        drop(l);
        assert!(!is_live(d.path(), me));
        assert!(!live_lock_path(d.path(), me).exists(), "removed on drop");
        // A stale file left by a SIGKILLed run is dead, and removable.
        std::fs::write(live_lock_path(d.path(), 4194305), "").unwrap();
        assert!(!is_live(d.path(), 4194305));
        remove_stale(d.path(), 4194305);
        assert!(!live_lock_path(d.path(), 4194305).exists());
    }

    #[test]
    fn the_sysctl_lock_has_one_owner() {
        let d = tempfile::tempdir().unwrap();
        let mut busy = String::new();
        let a = own_sysctls(d.path(), false, &mut busy).unwrap();
        assert!(a.is_some());
        assert!(own_sysctls(d.path(), false, &mut busy).unwrap().is_none());
        assert_eq!(busy, std::process::id().to_string(), "the holder is named");
        assert!(try_own_sysctls(d.path()).unwrap().is_none());
        drop(a);
        assert!(try_own_sysctls(d.path()).unwrap().is_some());
    }
}
