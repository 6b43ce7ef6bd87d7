//! Sysctls a run changes, restored on every exit path, with one machine-wide owner at a time.
//!
//! The first change takes `/run/memcgtest/sysctl.lock` (flock; another run holding it is waited
//! for, or with `--no-wait` refused), and the true original of every sysctl is recorded once in
//! `/run/memcgtest/sysctl.state` before it is changed. Nested changes (a probe inside a scenario
//! that set the same sysctl) unwind through an in-memory stack; when the guard is restored (the end
//! of the scenario, on every exit path) the state file is removed and the lock released. A run killed with
//! SIGKILL leaves the state file and drops the lock: the next owner (a run or `memcgtest cleanup`)
//! first restores those originals, so values a dead run set are never taken for originals.
//!
//! Paths are parameters (`/proc/sys` and the run directory) so tests use temporary directories.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::model::error::Error;
use crate::sys::lock::{self, Owner};

/// The real locations.
pub const PROC_SYS: &str = "/proc/sys";

fn state_file(run_dir: &Path) -> PathBuf {
    run_dir.join("sysctl.state")
}

/// A sysctl's file (`vm.dirty_bytes`: /proc/sys/vm/dirty_bytes), one of khugepaged's knobs
/// (`khugepaged.scan_sleep_millisecs`: /sys/kernel/mm/transparent_hugepage/khugepaged/...) or
/// of THP's (`thp.shrink_underused`: /sys/kernel/mm/transparent_hugepage/...), the sysfs ones found
/// from the /proc/sys given, so tests keep both in a temporary directory.
fn proc_path(proc_sys: &Path, name: &str) -> PathBuf {
    let thp = proc_sys.join("../../sys/kernel/mm/transparent_hugepage");
    if let Some(knob) = name.strip_prefix("khugepaged.") {
        return thp.join("khugepaged").join(knob);
    }
    match name.strip_prefix("thp.") {
        Some(knob) => thp.join(knob),
        None => proc_sys.join(name.replace('.', "/")),
    }
}

/// Whether the kernel has the sysctl or knob `name` (a THP knob newer than the kernel is absent).
pub fn exists(proc_sys: &Path, name: &str) -> bool {
    proc_path(proc_sys, name).exists()
}

fn read_sysctl(proc_sys: &Path, name: &str) -> Result<String> {
    let p = proc_path(proc_sys, name);
    Ok(std::fs::read_to_string(&p)
        .with_context(|| format!("read {}", p.display()))?
        .trim()
        .to_string())
}

/// Changes sysctls and puts them back when dropped.
pub struct SysctlGuard {
    proc_sys: PathBuf,
    run_dir: PathBuf,
    /// Wait for another run that owns the sysctls (else refuse: 125).
    wait: bool,
    /// The stack of replaced values, for nested changes.
    saved: Vec<(String, String)>,
    /// The true originals of everything changed, in the order first changed.
    originals: Vec<(String, String)>,
    owner: Option<Owner>,
}

impl Default for SysctlGuard {
    fn default() -> Self {
        SysctlGuard::new(Path::new(PROC_SYS), Path::new(lock::RUN_DIR), true)
    }
}

impl SysctlGuard {
    pub fn new(proc_sys: &Path, run_dir: &Path, wait: bool) -> Self {
        SysctlGuard {
            proc_sys: proc_sys.to_path_buf(),
            run_dir: run_dir.to_path_buf(),
            wait,
            saved: Vec::new(),
            originals: Vec::new(),
            owner: None,
        }
    }

    /// Becomes the machine's sysctl owner (waiting, or refusing with 125 under `--no-wait`), and
    /// repairs what a dead owner left. Called before a scenario that changes sysctls starts, so
    /// the wait never eats into its timeout; `set` calls it too.
    pub fn acquire(&mut self) -> Result<()> {
        if self.owner.is_some() {
            return Ok(());
        }
        let mut busy = String::new();
        let Some(owner) = lock::own_sysctls(&self.run_dir, self.wait, &mut busy)? else {
            return Err(Error::Environment(format!(
                "the vm sysctls are held by run {} and --no-wait was given",
                if busy.is_empty() { "?" } else { &busy }
            ))
            .into());
        };
        self.owner = Some(owner);
        let (_, failed) = restore_state(&self.proc_sys, &self.run_dir);
        if !failed.is_empty() {
            self.owner = None;
            anyhow::bail!(
                "restoring the sysctls a dead run changed: {}",
                failed.join("; ")
            );
        }
        Ok(())
    }

    /// Sets `name` (e.g. "vm.dirty_background_bytes") to `value`, remembering the old value.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        self.acquire()?;
        // The dirty_*bytes / dirty_*ratio pairs are exclusive: writing one zeroes the other. Save
        // both, bytes first, so the restore (last saved first) writes the ratio, then the bytes.
        let group: Vec<String> = match exclusive_pair(name) {
            Some((bytes, ratio)) => vec![bytes, ratio],
            None => vec![name.to_string()],
        };
        let mut new_originals = false;
        for n in group {
            let old = read_sysctl(&self.proc_sys, &n)?;
            if !self.originals.iter().any(|(o, _)| *o == n) {
                self.originals.push((n.clone(), old.clone()));
                new_originals = true;
            }
            self.saved.push((n, old));
        }
        // Recorded before the change: a SIGKILL right after it still leaves the originals.
        if new_originals {
            self.persist()?;
        }
        let p = proc_path(&self.proc_sys, name);
        std::fs::write(&p, value).with_context(|| format!("write {value} to {}", p.display()))
    }

    fn persist(&self) -> Result<()> {
        let text: String = self
            .originals
            .iter()
            .map(|(n, v)| format!("{n} {v}\n"))
            .collect();
        let f = state_file(&self.run_dir);
        let tmp = f.with_extension("tmp");
        std::fs::write(&tmp, text).with_context(|| format!("write {}", tmp.display()))?;
        std::fs::rename(&tmp, &f).with_context(|| format!("rename to {}", f.display()))
    }

    /// A mark to restore back to with `restore_to`.
    pub fn mark(&self) -> usize {
        self.saved.len()
    }

    /// Restores every saved value (the reverse order of changes), then gives up the ownership:
    /// the state file goes (it stays when a value could not be written back, for the next owner
    /// or `cleanup` to retry) and the lock is released. Errors are collected.
    pub fn restore(&mut self) -> Result<()> {
        let r = self.restore_to(0);
        if self.owner.is_some() {
            if r.is_ok() {
                let _ = std::fs::remove_file(state_file(&self.run_dir));
            }
            self.originals.clear();
            self.owner = None;
        }
        r
    }

    /// Undoes the changes made since `mark`, last first (the ownership stays).
    pub fn restore_to(&mut self, mark: usize) -> Result<()> {
        let mut errs = Vec::new();
        while self.saved.len() > mark {
            let (name, old) = self.saved.pop().unwrap();
            if let Err(e) = write_sysctl(&self.proc_sys, &name, &old) {
                errs.push(e);
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            anyhow::bail!("restoring sysctls: {}", errs.join("; "))
        }
    }
}

/// (bytes, ratio) names of the exclusive pair `name` belongs to.
fn exclusive_pair(name: &str) -> Option<(String, String)> {
    for (b, r) in [
        ("vm.dirty_bytes", "vm.dirty_ratio"),
        ("vm.dirty_background_bytes", "vm.dirty_background_ratio"),
    ] {
        if name == b || name == r {
            return Some((b.to_string(), r.to_string()));
        }
    }
    None
}

/// Writes a sysctl back. A "0" for dirty_*bytes is skipped: the kernel refuses it (the minimum is
/// 1), and restoring the ratio half of the pair has already set it to 0.
fn write_sysctl(proc_sys: &Path, name: &str, old: &str) -> Result<(), String> {
    if old == "0" && (name.ends_with("dirty_bytes") || name.ends_with("dirty_background_bytes")) {
        return Ok(());
    }
    let p = proc_path(proc_sys, name);
    std::fs::write(&p, old).map_err(|e| format!("write {old} to {}: {e}", p.display()))
}

impl Drop for SysctlGuard {
    fn drop(&mut self) {
        if self.saved.is_empty() && self.owner.is_none() {
            return;
        }
        if let Err(e) = self.restore() {
            eprintln!("memcgtest: {e:#}");
        }
    }
}

/// Writes back the originals recorded in the state file (the caller owns the sysctl lock) and
/// removes it when all went back. Names must be vm sysctls or THP knobs (khugepaged's too): the
/// file is root's, but a hand-edited one must not write elsewhere.
fn restore_state(proc_sys: &Path, run_dir: &Path) -> (Vec<String>, Vec<String>) {
    let (mut done, mut failed) = (Vec::new(), Vec::new());
    let f = state_file(run_dir);
    let Ok(text) = std::fs::read_to_string(&f) else {
        return (done, failed);
    };
    let valid = |n: &str| {
        n.strip_prefix("vm.")
            .or_else(|| n.strip_prefix("khugepaged."))
            .or_else(|| n.strip_prefix("thp."))
            .is_some_and(|k| {
                !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
    };
    // Written in the order first changed: pairs bytes then ratio, so undo in reverse.
    for line in text.lines().rev() {
        match line.split_once(' ') {
            Some((n, v)) if valid(n) => match write_sysctl(proc_sys, n, v) {
                Ok(()) => done.push(format!("sysctl {n} = {v}")),
                Err(err) => failed.push(err),
            },
            _ => failed.push(format!("{}: bad line {line:?}", f.display())),
        }
    }
    if failed.is_empty() {
        let _ = std::fs::remove_file(&f);
    }
    (done, failed)
}

/// For `cleanup`: restores the originals a dead owner recorded, unless a live run owns the
/// sysctls now (then they are its business and nothing is touched).
pub fn restore_leftovers(proc_sys: &Path, run_dir: &Path) -> (Vec<String>, Vec<String>) {
    match lock::try_own_sysctls(run_dir) {
        Ok(Some(_owner)) => restore_state(proc_sys, run_dir),
        Ok(None) => (Vec::new(), Vec::new()),
        Err(e) => (Vec::new(), vec![format!("{e:#}")]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake /proc/sys/vm with the dirty knobs.
    fn fake() -> (tempfile::TempDir, tempfile::TempDir) {
        let sys = tempfile::tempdir().unwrap();
        let vm = sys.path().join("vm");
        std::fs::create_dir(&vm).unwrap();
        for (k, v) in [
            ("dirty_bytes", "0"),
            ("dirty_ratio", "20"),
            ("dirty_background_bytes", "0"),
            ("dirty_background_ratio", "10"),
            ("dirty_writeback_centisecs", "500"),
            ("dirty_expire_centisecs", "3000"),
        ] {
            std::fs::write(vm.join(k), format!("{v}\n")).unwrap();
        }
        (sys, tempfile::tempdir().unwrap())
    }

    fn get(sys: &Path, n: &str) -> String {
        read_sysctl(sys, n).unwrap()
    }

    #[test]
    fn nested_changes_unwind_and_originals_come_back() {
        let (sys, run) = fake();
        let mut g = SysctlGuard::new(sys.path(), run.path(), false);
        g.set("vm.dirty_writeback_centisecs", "100").unwrap();
        let m = g.mark();
        g.set("vm.dirty_writeback_centisecs", "0").unwrap();
        g.set("vm.dirty_bytes", "1000000").unwrap();
        assert!(state_file(run.path()).exists());
        g.restore_to(m).unwrap();
        assert_eq!(get(sys.path(), "vm.dirty_writeback_centisecs"), "100");
        g.restore().unwrap();
        assert_eq!(get(sys.path(), "vm.dirty_writeback_centisecs"), "500");
        assert_eq!(get(sys.path(), "vm.dirty_ratio"), "20");
        assert!(!state_file(run.path()).exists());
    }

    /// Reproduction 1: run B started while run A had the probe's values set saved A's values as
    /// "originals" and restored those. Now B cannot change anything while A owns the sysctls.
    #[test]
    fn a_second_run_cannot_take_the_first_runs_values_for_originals() {
        let (sys, run) = fake();
        let mut a = SysctlGuard::new(sys.path(), run.path(), true);
        a.set("vm.dirty_writeback_centisecs", "0").unwrap();
        let mut b = SysctlGuard::new(sys.path(), run.path(), false);
        let e = b.set("vm.dirty_writeback_centisecs", "0").unwrap_err();
        assert_eq!(crate::model::error::Error::from(e).exit_code(), 125);
        // cleanup while A lives restores nothing of A's.
        let (done, failed) = restore_leftovers(sys.path(), run.path());
        assert!(done.is_empty() && failed.is_empty(), "{done:?} {failed:?}");
        assert_eq!(get(sys.path(), "vm.dirty_writeback_centisecs"), "0");
        a.restore().unwrap();
        b.set("vm.dirty_writeback_centisecs", "0").unwrap();
        b.restore().unwrap();
        assert_eq!(get(sys.path(), "vm.dirty_writeback_centisecs"), "500");
    }

    /// A waiting run gets the lock when the owner leaves and records the true originals.
    #[test]
    fn a_waiting_run_proceeds_when_the_owner_leaves() {
        let (sys, run) = fake();
        let mut a = SysctlGuard::new(sys.path(), run.path(), true);
        a.set("vm.dirty_expire_centisecs", "360000").unwrap();
        let (s, r) = (sys.path().to_path_buf(), run.path().to_path_buf());
        let t = std::thread::spawn(move || {
            let mut b = SysctlGuard::new(&s, &r, true);
            b.set("vm.dirty_expire_centisecs", "1").unwrap();
            let orig = b.originals.clone();
            b.restore().unwrap();
            orig
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        a.restore().unwrap();
        let orig = t.join().unwrap();
        assert_eq!(
            orig,
            vec![("vm.dirty_expire_centisecs".into(), "3000".into())]
        );
        assert_eq!(get(sys.path(), "vm.dirty_expire_centisecs"), "3000");
    }

    /// A run killed with SIGKILL (its guard forgotten, its lock dropped) leaves the state file:
    /// the next owner restores the true originals first, and so does cleanup.
    #[test]
    fn a_dead_owners_originals_are_restored_by_the_next_owner_or_cleanup() {
        for by_cleanup in [false, true] {
            let (sys, run) = fake();
            let mut a = SysctlGuard::new(sys.path(), run.path(), true);
            a.set("vm.dirty_bytes", "123456789").unwrap();
            a.set("vm.dirty_writeback_centisecs", "0").unwrap();
            // As if killed: nothing restored, only the lock goes with the process.
            a.saved.clear();
            a.owner = None;
            drop(a);
            assert_eq!(get(sys.path(), "vm.dirty_ratio"), "20"); // fake: no pair logic
            if by_cleanup {
                let (done, failed) = restore_leftovers(sys.path(), run.path());
                assert!(failed.is_empty(), "{failed:?}");
                assert_eq!(done.len(), 3, "{done:?}");
            } else {
                let mut b = SysctlGuard::new(sys.path(), run.path(), false);
                b.set("vm.dirty_writeback_centisecs", "7").unwrap();
                assert_eq!(
                    b.originals,
                    vec![("vm.dirty_writeback_centisecs".into(), "500".into())]
                );
                b.restore().unwrap();
            }
            assert_eq!(get(sys.path(), "vm.dirty_writeback_centisecs"), "500");
            assert_eq!(get(sys.path(), "vm.dirty_bytes"), "123456789");
            assert!(!state_file(run.path()).exists());
        }
    }

    /// A THP knob lives in sysfs, beside khugepaged's; a dead run's value of it comes back too.
    #[test]
    fn a_thp_knob_is_set_in_sysfs_and_restored_after_a_dead_run() {
        let (sys, run) = fake();
        let proc_sys = sys.path().join("proc/sys");
        let thp = sys.path().join("sys/kernel/mm/transparent_hugepage");
        std::fs::create_dir_all(&proc_sys).unwrap();
        std::fs::create_dir_all(&thp).unwrap();
        std::fs::write(thp.join("shrink_underused"), "1\n").unwrap();
        assert!(exists(&proc_sys, "thp.shrink_underused"));
        assert!(!exists(&proc_sys, "thp.no_such_knob"));
        let mut g = SysctlGuard::new(&proc_sys, run.path(), true);
        g.set("thp.shrink_underused", "0").unwrap();
        assert_eq!(get(&proc_sys, "thp.shrink_underused"), "0");
        // As if killed: nothing restored, only the lock goes with the process.
        g.saved.clear();
        g.owner = None;
        drop(g);
        let (done, failed) = restore_leftovers(&proc_sys, run.path());
        assert_eq!(failed, Vec::<String>::new());
        assert_eq!(done, ["sysctl thp.shrink_underused = 1"]);
        assert_eq!(get(&proc_sys, "thp.shrink_underused"), "1");
    }

    #[test]
    fn a_forged_state_line_writes_nothing_outside_vm() {
        let (sys, run) = fake();
        std::fs::write(state_file(run.path()), "kernel.x 1\nvm.../../x 1\n").unwrap();
        let (done, failed) = restore_leftovers(sys.path(), run.path());
        assert!(done.is_empty());
        assert_eq!(failed.len(), 2);
    }
}
