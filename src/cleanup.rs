//! Leaving nothing behind. Every cgroup and scratch directory a run creates is named
//! `memcgtest-<pid>-<what>`; signals set a flag the runner polls so it can undo its work on Ctrl-C,
//! SIGTERM and SIGHUP; `memcgtest cleanup` removes what a run killed with SIGKILL left: directories
//! whose pid no longer runs memcgtest, and nothing else.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::cgroup::Cgroup;

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

/// Whether `pid` is a live memcgtest process (so its directories are not leftovers).
fn alive_memcgtest(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim() == "memcgtest")
        .unwrap_or(false)
}

/// Leftover entries of dead runs in `dir` (cgroup or scratch directory).
pub fn leftovers(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name();
            marker_pid(&name.to_string_lossy()).is_some_and(|pid| !alive_memcgtest(pid))
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Removes leftover cgroups below `parent` (killing what still runs in them) and leftover scratch
/// directories in `scratch`. Returns what was removed and what could not be.
pub fn clean(parents: &[Cgroup], scratch_dirs: &[PathBuf]) -> (Vec<String>, Vec<String>) {
    let mut removed = Vec::new();
    let mut failed = Vec::new();
    for parent in parents {
        for p in leftovers(&parent.path) {
            let cg = Cgroup::new(&p, parent.version);
            let r = cg
                .kill_all(Duration::from_secs(10))
                .and_then(|_| cg.remove_tree(Duration::from_secs(10)));
            match r {
                Ok(()) => removed.push(format!("cgroup {}", p.display())),
                Err(e) => failed.push(e.to_string()),
            }
        }
    }
    for d in scratch_dirs {
        for p in leftovers(d) {
            match std::fs::remove_dir_all(&p) {
                Ok(()) => removed.push(format!("scratch {}", p.display())),
                Err(e) => failed.push(format!("remove {}: {e}", p.display())),
            }
        }
    }
    let (r, f) = crate::sysctl::restore_leftovers();
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

    #[test]
    fn leftovers_skip_foreign_and_live_entries() {
        let d = tempfile::tempdir().unwrap();
        // pid 2^22+1 is above pid_max's default, so it is dead.
        for n in ["memcgtest-4194305-a", "someone-else", "memcgtest-notapid-x"] {
            std::fs::create_dir(d.path().join(n)).unwrap();
        }
        // A live memcgtest run would be skipped; this test binary is not called memcgtest, so use
        // our own pid only to show live non-memcgtest pids count as leftovers (pid reuse).
        let found = leftovers(d.path());
        assert_eq!(found, vec![d.path().join("memcgtest-4194305-a")]);
    }
}
