//! Sysctls a run changes, restored on every exit path. The original values are also written to a
//! state file (/run/memcgtest/<pid>.sysctl) before the change, so `memcgtest cleanup` can restore them
//! after a run killed with SIGKILL.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

const STATE_DIR: &str = "/run/memcgtest";

fn state_file(pid: u32) -> PathBuf {
    Path::new(STATE_DIR).join(format!("{pid}.sysctl"))
}

fn proc_path(name: &str) -> PathBuf {
    Path::new("/proc/sys").join(name.replace('.', "/"))
}

/// Changes sysctls and puts them back when dropped.
#[derive(Default)]
pub struct SysctlGuard {
    saved: Vec<(String, String)>,
}

impl SysctlGuard {
    /// Sets `name` (e.g. "vm.dirty_background_bytes") to `value`, remembering the old value.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        // The dirty_*bytes / dirty_*ratio pairs are exclusive: writing one zeroes the other. Save
        // both, bytes first, so the restore (last saved first) writes the ratio, then the bytes.
        let group: Vec<String> = match exclusive_pair(name) {
            Some((bytes, ratio)) => vec![bytes, ratio],
            None => vec![name.to_string()],
        };
        // A stack: every change saves the value it replaces, so nested changes (a probe inside a
        // scenario that set the same sysctl) unwind correctly.
        for n in group {
            let p = proc_path(&n);
            let old = std::fs::read_to_string(&p)
                .with_context(|| format!("read {}", p.display()))?
                .trim()
                .to_string();
            self.saved.push((n, old));
        }
        self.persist()?;
        let p = proc_path(name);
        std::fs::write(&p, value).with_context(|| format!("write {value} to {}", p.display()))
    }

    fn persist(&self) -> Result<()> {
        std::fs::create_dir_all(STATE_DIR).with_context(|| format!("mkdir {STATE_DIR}"))?;
        let text: String = self
            .saved
            .iter()
            .map(|(n, v)| format!("{n} {v}\n"))
            .collect();
        let f = state_file(std::process::id());
        std::fs::write(&f, text).with_context(|| format!("write {}", f.display()))
    }

    /// A mark to restore back to with `restore_to`.
    pub fn mark(&self) -> usize {
        self.saved.len()
    }

    /// Restores every saved value (the reverse order of changes). Errors are collected.
    pub fn restore(&mut self) -> Result<()> {
        self.restore_to(0)
    }

    /// Undoes the changes made since `mark`, last first.
    pub fn restore_to(&mut self, mark: usize) -> Result<()> {
        let mut errs = Vec::new();
        // Order matters for pairs like dirty_bytes/dirty_ratio: undo the last change first.
        while self.saved.len() > mark {
            let (name, old) = self.saved.pop().unwrap();
            if let Err(e) = write_sysctl(&name, &old) {
                errs.push(e);
            }
        }
        if self.saved.is_empty() {
            let _ = std::fs::remove_file(state_file(std::process::id()));
        } else {
            self.persist()?;
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
fn write_sysctl(name: &str, old: &str) -> Result<(), String> {
    if old == "0" && (name.ends_with("dirty_bytes") || name.ends_with("dirty_background_bytes")) {
        return Ok(());
    }
    let p = proc_path(name);
    std::fs::write(&p, old).map_err(|e| format!("write {old} to {}: {e}", p.display()))
}

impl Drop for SysctlGuard {
    fn drop(&mut self) {
        if self.saved.is_empty() {
            return;
        }
        if let Err(e) = self.restore() {
            eprintln!("memcgtest: {e:#}");
        }
    }
}

/// Restores the sysctls of dead runs from their state files.
pub fn restore_leftovers() -> (Vec<String>, Vec<String>) {
    let (mut done, mut failed) = (Vec::new(), Vec::new());
    let Ok(rd) = std::fs::read_dir(STATE_DIR) else {
        return (done, failed);
    };
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_suffix(".sysctl")
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .is_ok_and(|c| c.trim() == "memcgtest")
        {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        for line in text.lines().rev() {
            if let Some((n, v)) = line.split_once(' ') {
                match write_sysctl(n, v) {
                    Ok(()) => done.push(format!("sysctl {n} = {v}")),
                    Err(err) => failed.push(err),
                }
            }
        }
        let _ = std::fs::remove_file(e.path());
    }
    (done, failed)
}
