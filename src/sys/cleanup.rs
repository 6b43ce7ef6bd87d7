//! Leaving nothing behind. Every cgroup and scratch directory a run creates is named
//! `memcgtest-<pid>-<what>`; signals set a flag the runner polls so it can undo its work on Ctrl-C,
//! SIGTERM and SIGHUP; `memcgtest cleanup` removes what a run killed with SIGKILL left: marked
//! directories whose run no longer holds its liveness lock (`lock.rs`), and nothing else.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::sys::cgroup::Cgroup;
use crate::sys::lock;

/// The prefix of every name a run creates.
pub const MARKER: &str = "memcgtest-";

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Installs handlers for SIGINT, SIGTERM and SIGHUP that only set the interrupted flag.
pub fn install_signal_handlers() {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
    let act = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only stores to an atomic.
        unsafe {
            let _ = sigaction(s, &act);
        }
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The name of something this process creates.
pub fn marked(what: &str) -> String {
    format!("{MARKER}{}-{what}", std::process::id())
}

/// The pid in a marked name, if it is one.
pub fn marker_pid(name: &str) -> Option<i32> {
    let rest = name.strip_prefix(MARKER)?;
    let (pid, what) = rest.split_once('-')?;
    if what.is_empty() {
        return None;
    }
    pid.parse().ok()
}

/// Whether `path` is on a cgroup filesystem (v1 or v2): `cleanup` kills only what such a
/// directory's cgroup.procs lists, never what a plain file of that name says.
pub fn on_cgroupfs(path: &Path) -> bool {
    use nix::sys::statfs::{CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC, statfs};
    statfs(path).is_ok_and(|s| {
        let t = s.filesystem_type();
        t == CGROUP_SUPER_MAGIC || t == CGROUP2_SUPER_MAGIC
    })
}

/// The pid of a marked entry whose run is dead (its liveness lock in `run_dir` is not held).
fn dead_marker(name: &std::ffi::OsStr, run_dir: &Path) -> Option<i32> {
    marker_pid(&name.to_string_lossy()).filter(|pid| !lock::is_live(run_dir, *pid))
}

/// Leftover cgroups of dead runs anywhere below `root`: marked directories whose run's lock is
/// not held. Live runs' groups and everything below a marked group are not descended into;
/// symbolic links are never followed.
pub fn cgroup_leftovers(root: &Path, run_dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.filter_map(|e| e.ok()) {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let name = e.file_name();
            if marker_pid(&name.to_string_lossy()).is_some() {
                if dead_marker(&name, run_dir).is_some() {
                    out.push(e.path());
                }
            } else {
                todo.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// Leftover scratch directories of dead runs directly in `dir`: marked names that are real
/// directories (not symbolic links, not files) owned by `uid` (root) whose run's lock is not
/// held. Anything else with a marked name is someone else's and is left alone.
pub fn scratch_leftovers(dir: &Path, run_dir: &Path, uid: u32) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .filter(|e| {
            std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.is_dir() && m.uid() == uid)
                && dead_marker(&e.file_name(), run_dir).is_some()
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Where to look and what with.
pub struct Places<'a> {
    /// Cgroup directories whose whole subtree is searched (validated to be on cgroupfs).
    pub cgroup_roots: &'a [Cgroup],
    pub scratch_dirs: &'a [PathBuf],
    /// The run directory (liveness locks, sysctl state) and /proc/sys.
    pub run_dir: &'a Path,
    pub proc_sys: &'a Path,
}

/// Removes leftover cgroups below the roots (killing what still runs in them), leftover scratch
/// directories, and the sysctls a dead run left changed (when no live run owns them). Returns
/// what was removed and what could not be.
pub fn clean(at: &Places) -> (Vec<String>, Vec<String>) {
    let mut removed = Vec::new();
    let mut failed = Vec::new();
    let mut dead = Vec::new();
    for root in at.cgroup_roots {
        for p in cgroup_leftovers(&root.path, at.run_dir) {
            if !on_cgroupfs(&p) {
                failed.push(format!("{} is not on a cgroup filesystem", p.display()));
                continue;
            }
            dead.extend(marker_pid(
                &p.file_name().unwrap_or_default().to_string_lossy(),
            ));
            let cg = Cgroup::new(&p, root.version);
            let r = cg
                .kill_all(Duration::from_secs(10))
                .and_then(|_| cg.remove_tree(Duration::from_secs(10)));
            match r {
                Ok(()) => removed.push(format!("cgroup {}", p.display())),
                Err(e) => failed.push(e.to_string()),
            }
        }
    }
    for d in at.scratch_dirs {
        for p in scratch_leftovers(d, at.run_dir, 0) {
            dead.extend(marker_pid(
                &p.file_name().unwrap_or_default().to_string_lossy(),
            ));
            match std::fs::remove_dir_all(&p) {
                Ok(()) => removed.push(format!("scratch {}", p.display())),
                Err(e) => failed.push(format!("remove {}: {e}", p.display())),
            }
        }
    }
    for pid in dead {
        lock::remove_stale(at.run_dir, pid);
    }
    let (r, f) = crate::sys::sysctl::restore_leftovers(at.proc_sys, at.run_dir);
    removed.extend(r);
    failed.extend(f);
    (removed, failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_names() {
        assert_eq!(marker_pid("memcgtest-123-dirty-migration"), Some(123));
        assert_eq!(marker_pid("memcgtest-123-"), None);
        assert_eq!(marker_pid("memcgtest-x-a"), None);
        assert_eq!(marker_pid("other-123-a"), None);
        assert!(marked("s").starts_with(&format!("memcgtest-{}-", std::process::id())));
    }

    /// Reproductions 2 and 7: liveness is the lock, whatever the binary is called; only root's
    /// real directories are scratch leftovers (another user's entry, a symlink or a plain file
    /// with a marked name are left alone and are no error).
    #[test]
    fn scratch_leftovers_are_dead_root_directories_only() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        let run = tempfile::tempdir().unwrap();
        let me = std::process::id() as i32;
        let uid = std::fs::metadata(d.path()).unwrap().uid();
        // pid 2^22+1 is above pid_max's default, so it is dead.
        for n in ["memcgtest-4194305-a", "someone-else", "memcgtest-notapid-x"] {
            std::fs::create_dir(d.path().join(n)).unwrap();
        }
        std::fs::create_dir(d.path().join(format!("memcgtest-{me}-live"))).unwrap();
        std::fs::write(d.path().join("memcgtest-4194306-file"), "").unwrap();
        std::os::unix::fs::symlink("/", d.path().join("memcgtest-4194307-link")).unwrap();
        let _l = lock::LiveLock::acquire(run.path(), me).unwrap();
        let found = scratch_leftovers(d.path(), run.path(), uid);
        assert_eq!(found, vec![d.path().join("memcgtest-4194305-a")]);
        // Owned by someone else: not ours to remove.
        assert!(scratch_leftovers(d.path(), run.path(), uid + 1).is_empty());
    }

    /// Reproduction 7: markers are found at any depth (a run killed from another cgroup), but
    /// not inside a live run's group.
    #[test]
    fn cgroup_leftovers_are_found_at_any_depth() {
        let d = tempfile::tempdir().unwrap();
        let run = tempfile::tempdir().unwrap();
        let me = std::process::id() as i32;
        let _l = lock::LiveLock::acquire(run.path(), me).unwrap();
        for p in [
            "system.slice/ci-job.scope/memcgtest-4194305-a/test",
            "user.slice/memcgtest-4194306-b",
            &format!("memcgtest-{me}-live/memcgtest-4194307-inside"),
            "other/x",
        ] {
            std::fs::create_dir_all(d.path().join(p)).unwrap();
        }
        assert_eq!(
            cgroup_leftovers(d.path(), run.path()),
            vec![
                d.path()
                    .join("system.slice/ci-job.scope/memcgtest-4194305-a"),
                d.path().join("user.slice/memcgtest-4194306-b"),
            ]
        );
    }

    /// Reproduction 3: a directory that is not a cgroup is never treated as one.
    #[test]
    fn plain_directories_are_not_cgroups() {
        let d = tempfile::tempdir().unwrap();
        assert!(!on_cgroupfs(d.path()));
    }
}
