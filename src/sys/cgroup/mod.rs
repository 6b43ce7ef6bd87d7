//! The cgroupfs layer: a thin, explicit handle over a cgroup directory for v1 and v2.
//!
//! Every operation takes or holds a path, and every error names that path and the operation, so a
//! failure on a test machine says exactly which file refused what. Unit tests run these functions
//! against a temporary directory laid out like cgroupfs.

pub mod detect;
pub mod stat;

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use crate::model::Version;

/// An error of the cgroup layer, always with the path and the operation.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path}: line {line}: {what}")]
    Parse {
        path: PathBuf,
        line: usize,
        what: String,
    },
    #[error("{op} {path}: {what}")]
    Other {
        op: &'static str,
        path: PathBuf,
        what: String,
    },
}

impl CgroupError {
    /// The errno of an I/O error, if it is one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            CgroupError::Io { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> CgroupError + 'a {
    move |source| CgroupError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// Reads a whole file, naming it on error.
pub fn read_path(path: &Path) -> Result<String, CgroupError> {
    let mut s = String::new();
    fs::File::open(path)
        .and_then(|mut f| f.read_to_string(&mut s))
        .map_err(io_err("read", path))?;
    Ok(s)
}

/// Writes a value with a single write(2), as cgroupfs expects, naming the file on error.
pub fn write_path(path: &Path, value: &str) -> Result<(), CgroupError> {
    // O_TRUNC like a shell's `echo v > file`: cgroupfs ignores it, a fixture file needs it.
    fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .and_then(|mut f| f.write_all(value.as_bytes()))
        .map_err(io_err("write", path))
}

/// The file names that differ between versions.
pub fn file_name(version: Version, what: &str) -> &'static str {
    match (version, what) {
        (Version::V1, "limit") => "memory.limit_in_bytes",
        (Version::V2, "limit") => "memory.max",
        (Version::V1, "procs") => "cgroup.procs",
        (Version::V2, "procs") => "cgroup.procs",
        (_, "stat") => "memory.stat",
        // usage, memsw, peak: the counter table's.
        _ => crate::model::counter::file(version, what)
            .map(|l| l.file)
            .unwrap_or_else(|| unreachable!("unknown cgroup file kind {what}")),
    }
}

/// The root of the cgroup hierarchy `dir` lies in: the highest ancestor that is still a cgroup
/// directory (has cgroup.procs). Its memory.stat, where it has one (always on v1; on v2 only on
/// newer kernels), counts every page on the machine.
pub fn hierarchy_root(dir: &Path) -> PathBuf {
    let mut root = dir.to_path_buf();
    while let Some(up) = root.parent() {
        if !up.join("cgroup.procs").exists() {
            break;
        }
        root = up.to_path_buf();
    }
    root
}

/// A handle on one cgroup directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroup {
    pub path: PathBuf,
    pub version: Version,
}

impl Cgroup {
    pub fn new(path: impl Into<PathBuf>, version: Version) -> Self {
        Cgroup {
            path: path.into(),
            version,
        }
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    pub fn read(&self, name: &str) -> Result<String, CgroupError> {
        read_path(&self.file(name))
    }

    pub fn write(&self, name: &str, value: &str) -> Result<(), CgroupError> {
        write_path(&self.file(name), value)
    }

    /// Creates a child cgroup. On v2 this first enables +memory in our own subtree_control (when it
    /// is not already), so the child gets the memory controller.
    pub fn create_child(&self, name: &str) -> Result<Cgroup, CgroupError> {
        if self.version == Version::V2 {
            self.enable_memory_for_children()?;
        }
        let path = self.path.join(name);
        fs::create_dir(&path).map_err(io_err("mkdir", &path))?;
        Ok(Cgroup::new(path, self.version))
    }

    /// v2: makes the memory controller available to children. Fails with EBUSY when this group has
    /// processes of its own (the no-internal-processes rule).
    pub fn enable_memory_for_children(&self) -> Result<(), CgroupError> {
        let cur = self.read("cgroup.subtree_control")?;
        if cur.split_whitespace().any(|c| c == "memory") {
            return Ok(());
        }
        self.write("cgroup.subtree_control", "+memory")
    }

    /// Sets the memory limit in bytes (None: unlimited).
    pub fn set_limit(&self, bytes: Option<u64>) -> Result<(), CgroupError> {
        let v = match (bytes, self.version) {
            (Some(b), _) => b.to_string(),
            (None, Version::V1) => "-1".into(),
            (None, Version::V2) => "max".into(),
        };
        self.write(file_name(self.version, "limit"), &v)
    }

    /// Sets a v2 memory control file to `bytes`: memory.high (above it, the group's charging
    /// tasks reclaim and are throttled), memory.low or memory.min (protection from reclaim).
    pub fn set_v2(&self, file: &str, bytes: u64) -> Result<(), CgroupError> {
        self.write(file, &bytes.to_string())
    }

    /// Moves process `pid` into this group (its cgroup.procs).
    pub fn add_process(&self, pid: i32) -> Result<(), CgroupError> {
        self.write(file_name(self.version, "procs"), &pid.to_string())
    }

    /// cgroup.procs opened for writing, for a child to place itself with one write(2) of "0"
    /// between fork and exec (the only call safe there in a multi-threaded parent).
    pub fn open_procs(&self) -> Result<fs::File, CgroupError> {
        let p = self.file(file_name(self.version, "procs"));
        fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .map_err(io_err("open for writing", &p))
    }

    /// The counters of the counter table this group's files show on this kernel (a name with
    /// `.local` for a group's own value where the version keeps one: v1 memory.stat, v2
    /// memory.events.local), in table order.
    pub fn counters_present(&self) -> Result<Vec<String>, CgroupError> {
        use crate::model::counter::{COUNTERS, Kind, Source, file, local, stat_key};
        let stat = self.stat()?;
        let mut out = Vec::new();
        for c in COUNTERS {
            let names: Vec<String> = match (c.source, c.kind) {
                (Source::Stat { .. }, Kind::Limit) => vec![c.name.to_string()],
                (Source::Stat { .. }, _) => vec![c.name.to_string(), local(c.name)],
                (Source::File { .. }, _) => vec![c.name.to_string(), local(c.name)],
            };
            for n in names {
                let present = match stat_key(&n, self.version) {
                    Ok(Some(key)) => stat.get(&key).is_some(),
                    Ok(None) => file(self.version, &n).is_some_and(|loc| {
                        let text = self.read(loc.file).ok();
                        match (text, loc.key) {
                            (Some(t), Some(k)) => {
                                t.lines().any(|l| l.split_whitespace().next() == Some(k))
                            }
                            (Some(_), None) => true,
                            (None, _) => false,
                        }
                    }),
                    Err(_) => false,
                };
                if present {
                    out.push(n);
                }
            }
        }
        Ok(out)
    }

    /// Parsed memory.stat.
    pub fn stat(&self) -> Result<stat::Stat, CgroupError> {
        let p = self.file("memory.stat");
        stat::parse_stat(&read_path(&p)?, &p)
    }

    /// The processes in this cgroup (not its children).
    pub fn procs(&self) -> Result<Vec<i32>, CgroupError> {
        let p = self.file("cgroup.procs");
        let text = read_path(&p)?;
        text.lines()
            .enumerate()
            .map(|(i, l)| {
                l.trim().parse().map_err(|_| CgroupError::Parse {
                    path: p.clone(),
                    line: i + 1,
                    what: format!("not a pid: {l:?}"),
                })
            })
            .collect()
    }

    /// Child cgroups (directories).
    pub fn children(&self) -> Result<Vec<Cgroup>, CgroupError> {
        let rd = fs::read_dir(&self.path).map_err(io_err("list", &self.path))?;
        let mut out = Vec::new();
        for e in rd {
            let e = e.map_err(io_err("list", &self.path))?;
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                out.push(Cgroup::new(e.path(), self.version));
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// Kills every process in this cgroup and its descendants and waits (bounded) until they are
    /// gone: cgroup.kill where the kernel has it, otherwise SIGKILL to each pid.
    pub fn kill_all(&self, wait: Duration) -> Result<(), CgroupError> {
        let deadline = Instant::now() + wait;
        let kill_file = self.file("cgroup.kill");
        loop {
            let pids = self.pids_below()?;
            if pids.is_empty() {
                return Ok(());
            }
            if kill_file.exists() {
                write_path(&kill_file, "1")?;
            } else {
                for pid in &pids {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(*pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
            if Instant::now() >= deadline {
                return Err(CgroupError::Other {
                    op: "kill",
                    path: self.path.clone(),
                    what: format!("processes still present after {wait:?}: {pids:?}"),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The processes in this cgroup and its descendants.
    pub fn pids_below(&self) -> Result<Vec<i32>, CgroupError> {
        let mut out = self.procs()?;
        for c in self.children()? {
            out.extend(c.pids_below()?);
        }
        Ok(out)
    }

    /// Removes this cgroup and its descendants bottom-up, retrying rmdir while the kernel still
    /// holds the group busy (EBUSY right after the last task exits), up to `wait`.
    pub fn remove_tree(&self, wait: Duration) -> Result<(), CgroupError> {
        for c in self.children()? {
            c.remove_tree(wait)?;
        }
        let deadline = Instant::now() + wait;
        loop {
            match fs::remove_dir(&self.path) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) if Instant::now() < deadline && e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(io_err("rmdir", &self.path)(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temp dir laid out like a cgroupfs directory.
    fn fake_cgroup(version: Version) -> (tempfile::TempDir, Cgroup) {
        let d = tempfile::tempdir().unwrap();
        for f in ["cgroup.procs", "memory.stat", "cgroup.subtree_control"] {
            fs::write(d.path().join(f), "").unwrap();
        }
        fs::write(d.path().join(file_name(version, "limit")), "").unwrap();
        fs::write(d.path().join(file_name(version, "usage")), "4096\n").unwrap();
        let cg = Cgroup::new(d.path(), version);
        (d, cg)
    }

    #[test]
    fn limit_files_per_version() {
        let (_d, cg) = fake_cgroup(Version::V1);
        cg.set_limit(Some(1 << 30)).unwrap();
        assert_eq!(cg.read("memory.limit_in_bytes").unwrap(), "1073741824");
        cg.set_limit(None).unwrap();
        assert_eq!(cg.read("memory.limit_in_bytes").unwrap(), "-1");
        let (_d2, cg2) = fake_cgroup(Version::V2);
        cg2.set_limit(None).unwrap();
        assert_eq!(cg2.read("memory.max").unwrap(), "max");
    }

    #[test]
    fn v2_child_enables_memory_first() {
        let (_d, cg) = fake_cgroup(Version::V2);
        let child = cg.create_child("c").unwrap();
        assert_eq!(cg.read("cgroup.subtree_control").unwrap(), "+memory");
        assert!(child.path.is_dir());
    }

    #[test]
    fn errors_name_path_and_operation() {
        let cg = Cgroup::new("/nonexistent/memcgtest", Version::V1);
        let e = cg.read("memory.stat").unwrap_err().to_string();
        assert!(
            e.starts_with("read /nonexistent/memcgtest/memory.stat:"),
            "{e}"
        );
        let e = cg.set_limit(None).unwrap_err().to_string();
        assert!(
            e.starts_with("write /nonexistent/memcgtest/memory.limit_in_bytes:"),
            "{e}"
        );
    }

    #[test]
    fn procs_parse_and_reject_garbage() {
        let (_d, cg) = fake_cgroup(Version::V1);
        fs::write(cg.file("cgroup.procs"), "12\n34\n").unwrap();
        assert_eq!(cg.procs().unwrap(), vec![12, 34]);
        fs::write(cg.file("cgroup.procs"), "12\nx\n").unwrap();
        assert!(cg.procs().unwrap_err().to_string().contains("line 2"));
    }

    #[test]
    fn the_hierarchy_root_is_the_top_cgroup_directory() {
        let d = tempfile::tempdir().unwrap();
        let leaf = d.path().join("memory/a/b");
        std::fs::create_dir_all(&leaf).unwrap();
        for p in ["memory", "memory/a", "memory/a/b"] {
            std::fs::write(d.path().join(p).join("cgroup.procs"), "").unwrap();
        }
        assert_eq!(hierarchy_root(&leaf), d.path().join("memory"));
    }

    #[test]
    fn remove_tree_bottom_up() {
        let d = tempfile::tempdir().unwrap();
        let root = Cgroup::new(d.path().join("r"), Version::V1);
        fs::create_dir_all(root.path.join("a/b")).unwrap();
        root.remove_tree(Duration::from_millis(10)).unwrap();
        assert!(!root.path.exists());
    }
}
