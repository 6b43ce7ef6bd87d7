//! The environment a run happens in: kernel, cgroup layout, where test cgroups go, kernel
//! capabilities, scratch filesystem and the vm sysctls that shape writeback. Printed by
//! `memcgtest env` and recorded with every result.

use std::path::{Path, PathBuf};

use crate::model::counter::DIRTY_WRITEBACK;
use crate::sys::cgroup::detect::{self, Choice, Layout};
use crate::sys::cgroup::{Cgroup, Version, read_path};
use crate::sys::proc::{fstype_of, mem_total_bytes, vmstat_has};

/// Filesystems whose pages never become dirty in memory.stat.
const NO_WRITEBACK_FS: &[&str] = &[
    "tmpfs", "ramfs", "proc", "sysfs", "devtmpfs", "cgroup", "cgroup2",
];

/// The default scratch directory: on the root filesystem, not /tmp (often tmpfs).
pub const DEFAULT_SCRATCH: &str = "/var/tmp";

/// vm sysctls recorded with every result.
pub const SYSCTLS: &[&str] = &[
    "dirty_ratio",
    "dirty_background_ratio",
    "dirty_bytes",
    "dirty_background_bytes",
    "dirty_expire_centisecs",
    "dirty_writeback_centisecs",
    "compaction_proactiveness",
];

pub use crate::model::env::{Capabilities, CgroupInfo, EnvInfo, OracleInfo, ScratchInfo};

pub fn supports_writeback(fstype: Option<&str>) -> bool {
    fstype.is_some_and(|t| !NO_WRITEBACK_FS.contains(&t))
}

/// Where test cgroups go: --parent, or the cgroup this process runs in.
pub fn test_parent(
    layout: &Layout,
    choice: Choice,
    parent: Option<&Path>,
) -> Result<Cgroup, String> {
    let h = layout.pick(choice)?;
    let path = match parent {
        Some(p) => checked_parent(p, &h.mount_point, h.version)?,
        None => h.own_cgroup.clone(),
    };
    Ok(Cgroup::new(path, h.version))
}

/// `--parent` canonicalized (no `..`, no symbolic links left): it must lie inside the selected
/// hierarchy's mount and be a cgroup directory there. A prefix match on the text would accept
/// `<mount>/../../tmp/x`.
pub fn checked_parent(p: &Path, mount: &Path, version: Version) -> Result<PathBuf, String> {
    let canon = p
        .canonicalize()
        .map_err(|e| format!("--parent {}: {e}", p.display()))?;
    let mount = mount.canonicalize().unwrap_or_else(|_| mount.to_path_buf());
    if !canon.starts_with(&mount) {
        return Err(format!(
            "--parent {} ({}) is not inside the {} memory hierarchy at {}",
            p.display(),
            canon.display(),
            version.as_str(),
            mount.display()
        ));
    }
    if !(canon.is_dir() && crate::sys::cleanup::on_cgroupfs(&canon)) {
        return Err(format!(
            "--parent {} is not a cgroup directory",
            canon.display()
        ));
    }
    Ok(canon)
}

fn writable(p: &Path) -> bool {
    nix::unistd::access(p, nix::unistd::AccessFlags::W_OK).is_ok()
}

/// The memcg interface this kernel shows a group: every readable `memory.*` file of a fresh
/// throw-away child (marked with our pid), as `file` for a file of one value and `file:key`
/// for each key of a keyed one (memory.stat, memory.events, memory.numa_stat, v1's
/// memory.oom_control, ...), sorted. Empty where the child cannot be made.
pub fn probe_interface(parent: &Cgroup) -> Vec<String> {
    let name = format!(
        "{}{}-interface",
        crate::sys::cleanup::MARKER,
        std::process::id()
    );
    let Ok(cg) = parent.create_child(&name) else {
        return Vec::new();
    };
    let out = interface(&cg.path);
    let _ = cg.remove_tree(std::time::Duration::from_secs(2));
    out
}

/// The `memory.*` files of a cgroup directory and their keys (see `probe_interface`).
pub fn interface(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        if !file.starts_with("memory.") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue; // write-only (memory.reclaim, memory.force_empty)
        };
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let keyed = lines.len() > 1
            || lines
                .first()
                .is_some_and(|l| l.contains(' ') || l.contains('='));
        if !keyed {
            out.push(file);
            continue;
        }
        for l in lines {
            // "key value", "key N0=.. N1=.." (v2 numa_stat), "key=N N0=.." (v1 numa_stat),
            // "some avg10=.." (pressure).
            let first = l.split_whitespace().next().unwrap_or("");
            let key = first.split('=').next().unwrap_or(first);
            if !key.is_empty() {
                out.push(format!("{file}:{key}"));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Probes v1 charge moving by creating a throw-away child (marked with our pid) and writing 1 to its
/// memory.move_charge_at_immigrate. 6.13 removed the feature (EINVAL).
pub fn probe_charge_moving(parent: &Cgroup) -> String {
    if parent.version == Version::V2 {
        return "not available: cgroup v2 never moves charges with a task".into();
    }
    if !parent.file("memory.move_charge_at_immigrate").exists() {
        return "not available: no memory.move_charge_at_immigrate".into();
    }
    let name = format!(
        "{}{}-probe",
        crate::sys::cleanup::MARKER,
        std::process::id()
    );
    let cg = match parent.create_child(&name) {
        Ok(c) => c,
        Err(e) => return format!("unknown: {e}"),
    };
    let r = cg.write("memory.move_charge_at_immigrate", "1");
    let _ = cg.remove_tree(std::time::Duration::from_secs(2));
    match r {
        Ok(()) => "available".into(),
        Err(e) if e.errno() == Some(libc::EINVAL) => {
            "not available: writing 1 to memory.move_charge_at_immigrate gives EINVAL (removed in 6.13)".into()
        }
        Err(e) => format!("not available: {e}"),
    }
}

/// Whether `gather` measures the machine's other writers: over a second of /proc/vmstat, or not
/// at all where memcgtest runs alone (a `memcgtest vm` guest, whose init starts nothing else;
/// under TCG the second was a second of every boot).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Writers {
    Measure,
    Alone,
}

/// Which accounting oracle this kernel gives, and how busy the machine's writers are.
fn oracle_info(writers: Writers) -> OracleInfo {
    let cachestat = crate::sys::cachestat::support();
    OracleInfo {
        kind: if cachestat.is_ok() {
            "page-cache truth"
        } else {
            "machine-wide counters"
        }
        .to_string(),
        why_not: cachestat.err(),
        pages_dirtied_last_second: match writers {
            Writers::Measure => crate::sys::proc::pages_dirtied_during(
                Path::new(crate::sys::proc::PROC),
                std::time::Duration::from_secs(1),
            ),
            Writers::Alone => None,
        },
        alone: writers == Writers::Alone,
    }
}

/// The dirty and writeback keys of the test parent's memory.stat (none where it is unknown).
fn dirty_stat_keys(tp: Option<&Cgroup>) -> Vec<String> {
    tp.and_then(|c| c.stat().ok())
        .map(|s| {
            s.0.into_iter()
                .map(|(k, _)| k)
                .filter(|k| DIRTY_WRITEBACK.iter().any(|c| k.contains(c)))
                .collect()
        })
        .unwrap_or_default()
}

/// Gathers everything. `probe` allows creating a throw-away cgroup for the charge-moving probe.
pub fn gather(
    choice: Choice,
    parent: Option<&Path>,
    scratch: &Path,
    probe: bool,
    writers: Writers,
) -> EnvInfo {
    let uts = nix::sys::utsname::uname().ok();
    let s = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| {
        uts.as_ref()
            .map(|u| f(u).to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let machine = crate::sys::proc::machine(Path::new(crate::sys::proc::PROC));
    let memory_bytes = mem_total_bytes();
    let layout = detect::detect().ok();
    let selected = layout
        .as_ref()
        .ok_or_else(|| "cannot read the cgroup layout".to_string())
        .and_then(|l| l.pick(choice).map(|h| h.version));
    let tp = layout
        .as_ref()
        .and_then(|l| test_parent(l, choice, parent).ok());
    let root = nix::unistd::geteuid().is_root();
    let cgroup = CgroupInfo {
        layout: layout
            .as_ref()
            .map(|l| l.kind.as_str())
            .unwrap_or("none")
            .to_string(),
        v1_memory_mount: layout
            .as_ref()
            .and_then(|l| l.v1.as_ref().map(|h| h.mount_point.clone())),
        v2_mount: layout.as_ref().and_then(|l| {
            l.v2.as_ref()
                .map(|h| h.mount_point.clone())
                .or(l.v2_without_memory.clone())
        }),
        v2_has_memory: layout.as_ref().is_some_and(|l| l.v2.is_some()),
        selected,
        test_parent: tp.as_ref().map(|c| c.path.clone()),
        test_parent_writable: tp.as_ref().is_some_and(|c| writable(&c.path)),
    };
    let dirty_stats = dirty_stat_keys(tp.as_ref());
    let capabilities = Capabilities {
        charge_moving: match &tp {
            Some(c) if probe && root && writable(&c.path) => probe_charge_moving(c),
            Some(c) if c.version == Version::V2 => probe_charge_moving(c),
            _ => "unknown: probing needs root and a writable test parent".into(),
        },
        memory_reclaim: tp
            .as_ref()
            .is_some_and(|c| c.file("memory.reclaim").exists()),
        cgroup_kill: tp.as_ref().is_some_and(|c| c.file("cgroup.kill").exists()),
        dirty_stats,
        vm_event_counters: vmstat_has("pgmigrate_success"),
        compaction: Path::new("/proc/sys/vm/compact_memory").exists(),
    };
    let fstype = fstype_of(scratch);
    let oracle = oracle_info(writers);
    let interface = match &tp {
        Some(c) if probe && root && writable(&c.path) => probe_interface(c),
        _ => Vec::new(),
    };
    EnvInfo {
        interface,
        oracle,
        kernel: s(|u| u.release()),
        kernel_build: s(|u| u.version()),
        arch: s(|u| u.machine()),
        cpus: machine.cpus,
        page_size: machine.page_size,
        memory_bytes,
        numa_nodes: crate::sys::numa::memory_nodes(),
        root,
        cgroup,
        capabilities,
        scratch: ScratchInfo {
            path: scratch.to_path_buf(),
            writeback: supports_writeback(fstype.as_deref()),
            fstype,
            readahead: crate::sys::readahead::reader_window(scratch),
        },
        sysctls: SYSCTLS
            .iter()
            .map(|k| {
                let v = read_path(&Path::new("/proc/sys/vm").join(k))
                    .map(|v| v.trim().to_string())
                    .unwrap_or_else(|_| "absent".into());
                (format!("vm.{k}"), v)
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reproduction 3: `--parent <mount>/../../tmp/x` passed a prefix match on the text.
    #[test]
    fn parent_outside_the_mount_or_not_a_cgroup_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let mount = d.path().join("sys/fs/cgroup/memory");
        std::fs::create_dir_all(mount.join("a")).unwrap();
        std::fs::create_dir_all(d.path().join("tmp/x")).unwrap();
        let escape = mount.join("../../../../tmp/x");
        assert!(escape.starts_with(&mount), "the old check accepted it");
        let e = checked_parent(&escape, &mount, Version::V1).unwrap_err();
        assert!(e.contains("is not inside the v1 memory hierarchy"), "{e}");
        // Inside the mount but not on cgroupfs (a plain directory here): refused too.
        let e = checked_parent(&mount.join("a"), &mount, Version::V1).unwrap_err();
        assert!(e.contains("not a cgroup directory"), "{e}");
        let e = checked_parent(&mount.join("missing"), &mount, Version::V1).unwrap_err();
        assert!(e.contains("missing"), "{e}");
    }
}
