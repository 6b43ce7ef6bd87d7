//! Finding the memory controller: which hierarchy carries it (v1, v2 or both in a hybrid layout),
//! where it is mounted, and which cgroup this process lives in.
//!
//! Everything here is a pure function over the text of /proc/self/mountinfo and /proc/self/cgroup,
//! so the layouts of other machines are unit tested from fixtures.

use std::path::{Path, PathBuf};

use super::{CgroupError, Version};
use crate::sys::proc;

/// One cgroup filesystem mount, from a line of /proc/self/mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupMount {
    pub version: Version,
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// The cgroup path that is the root of this mount (not "/" inside containers).
    pub root: String,
    /// v1: the controllers bound to this hierarchy (from the super options).
    pub controllers: Vec<String>,
}

/// The machine's cgroup layout as far as the memory controller is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayoutKind {
    /// Memory controller on a v1 hierarchy, no cgroup2 mount.
    V1,
    /// cgroup2 only, with memory available.
    V2,
    /// v1 memory controller plus a cgroup2 mount without it (systemd's "hybrid").
    Hybrid,
    /// No usable memory controller.
    None,
}

impl LayoutKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            LayoutKind::V1 => "v1",
            LayoutKind::V2 => "v2",
            LayoutKind::Hybrid => "hybrid",
            LayoutKind::None => "none",
        }
    }
}

/// Parses /proc/self/mountinfo (`sys::proc::parse_mountinfo`) and keeps the cgroup and cgroup2
/// mounts.
pub fn parse_mountinfo(text: &str) -> Result<Vec<CgroupMount>, CgroupError> {
    let mounts = proc::parse_mountinfo(text).map_err(|line| CgroupError::Parse {
        path: PathBuf::from("/proc/self/mountinfo"),
        line,
        what: "not a mountinfo line".into(),
    })?;
    let mut out = Vec::new();
    for m in mounts {
        let version = match m.fs_type.as_str() {
            "cgroup" => Version::V1,
            "cgroup2" => Version::V2,
            _ => continue,
        };
        let controllers = match version {
            Version::V1 => m
                .super_options
                .into_iter()
                .filter(|o| !matches!(o.as_str(), "rw" | "ro") && !o.contains('='))
                .collect(),
            Version::V2 => Vec::new(),
        };
        out.push(CgroupMount {
            version,
            mount_point: m.mount_point,
            root: m.root,
            controllers,
        });
    }
    Ok(out)
}

/// The cgroup paths of this process, from /proc/self/cgroup: (v1 memory path, v2 path).
pub fn parse_proc_cgroup(text: &str) -> (Option<String>, Option<String>) {
    let mut v1_memory = None;
    let mut v2 = None;
    for m in proc::parse_cgroups(text) {
        if m.hierarchy == 0 && m.controllers.is_empty() {
            v2 = Some(m.path);
        } else if m.controllers.iter().any(|c| c == "memory") {
            v1_memory = Some(m.path);
        }
    }
    (v1_memory, v2)
}

/// Where the memory controller can be used, for one cgroup version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    pub version: Version,
    pub mount_point: PathBuf,
    /// The directory of the cgroup this process runs in.
    pub own_cgroup: PathBuf,
}

/// The layout of this machine: which memory hierarchies exist and where this process sits in them.
#[derive(Debug, Clone)]
pub struct Layout {
    pub kind: LayoutKind,
    pub v1: Option<Hierarchy>,
    pub v2: Option<Hierarchy>,
    /// A cgroup2 mount without the memory controller (the hybrid case), for reporting.
    pub v2_without_memory: Option<PathBuf>,
}

/// Joins a mount point, the mount's root and the process's cgroup path.
fn own_dir(mount: &CgroupMount, proc_path: &str) -> PathBuf {
    let rel = proc_path
        .strip_prefix(mount.root.as_str())
        .unwrap_or(proc_path);
    let rel = rel.trim_start_matches('/');
    if rel.is_empty() {
        mount.mount_point.clone()
    } else {
        mount.mount_point.join(rel)
    }
}

/// Works out the layout. `v2_controllers` reads cgroup.controllers of the v2 root (a closure so that
/// tests need no filesystem).
pub fn layout(
    mountinfo: &str,
    proc_cgroup: &str,
    v2_controllers: impl Fn(&Path) -> Option<String>,
) -> Result<Layout, CgroupError> {
    let mounts = parse_mountinfo(mountinfo)?;
    let (v1_path, v2_path) = parse_proc_cgroup(proc_cgroup);
    let v1 = mounts
        .iter()
        .find(|m| m.version == Version::V1 && m.controllers.iter().any(|c| c == "memory"))
        .zip(v1_path.as_deref())
        .map(|(m, p)| Hierarchy {
            version: Version::V1,
            mount_point: m.mount_point.clone(),
            own_cgroup: own_dir(m, p),
        });
    let v2_mount = mounts.iter().find(|m| m.version == Version::V2);
    let mut v2 = None;
    let mut v2_without_memory = None;
    if let (Some(m), Some(p)) = (v2_mount, v2_path.as_deref()) {
        let has_memory = v2_controllers(&m.mount_point)
            .map(|c| c.split_whitespace().any(|c| c == "memory"))
            .unwrap_or(false);
        if has_memory {
            v2 = Some(Hierarchy {
                version: Version::V2,
                mount_point: m.mount_point.clone(),
                own_cgroup: own_dir(m, p),
            });
        } else {
            v2_without_memory = Some(m.mount_point.clone());
        }
    }
    let kind = match (&v1, &v2, &v2_without_memory) {
        (Some(_), None, Some(_)) => LayoutKind::Hybrid,
        (Some(_), _, _) => LayoutKind::V1,
        (None, Some(_), _) => LayoutKind::V2,
        (None, None, _) => LayoutKind::None,
    };
    Ok(Layout {
        kind,
        v1,
        v2,
        v2_without_memory,
    })
}

/// Reads the real layout of this process.
pub fn detect() -> Result<Layout, CgroupError> {
    detect_in(Path::new(proc::PROC))
}

/// [`detect`] under a /proc at `proc` (the mounts it names are read where they are).
pub fn detect_in(proc: &Path) -> Result<Layout, CgroupError> {
    let mountinfo = super::read_path(&proc.join("self/mountinfo"))?;
    let proc_cgroup = super::read_path(&proc.join("self/cgroup"))?;
    layout(&mountinfo, &proc_cgroup, |mp| {
        std::fs::read_to_string(mp.join("cgroup.controllers")).ok()
    })
}

/// Which version the user asked for with `--cgroup`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Choice {
    Auto,
    V1,
    V2,
    /// `series` only: every patch under v1 and under v2.
    Both,
}

impl Layout {
    /// Picks the hierarchy to test in: auto prefers v2 when it carries memory.
    pub fn pick(&self, choice: Choice) -> Result<&Hierarchy, String> {
        match choice {
            Choice::V1 => self
                .v1
                .as_ref()
                .ok_or_else(|| "no v1 memory controller is mounted".to_string()),
            Choice::V2 => self
                .v2
                .as_ref()
                .ok_or_else(|| match &self.v2_without_memory {
                    Some(p) => format!(
                        "cgroup2 at {} does not offer the memory controller (it is bound to v1)",
                        p.display()
                    ),
                    None => "no cgroup2 filesystem is mounted".to_string(),
                }),
            Choice::Both => {
                Err("--cgroup both is for `memcgtest series` (each patch under v1 and v2)".into())
            }
            Choice::Auto => {
                self.v2.as_ref().or(self.v1.as_ref()).ok_or_else(|| {
                    "no memory controller is mounted (neither v1 nor v2)".to_string()
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = include_str!("../../../tests/fixtures/mountinfo.hybrid");
    const V2: &str = include_str!("../../../tests/fixtures/mountinfo.v2");
    const V1: &str = include_str!("../../../tests/fixtures/mountinfo.v1");

    #[test]
    fn hybrid_layout_is_v1_memory_plus_unified() {
        let cg = "4:memory:/process_api/abc\n0::/\n";
        let l = layout(HYBRID, cg, |_| Some("".into())).unwrap();
        assert_eq!(l.kind, LayoutKind::Hybrid);
        let v1 = l.v1.as_ref().unwrap();
        assert_eq!(
            v1.own_cgroup,
            PathBuf::from("/sys/fs/cgroup/memory/process_api/abc")
        );
        assert_eq!(
            l.v2_without_memory,
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(l.pick(Choice::Auto).unwrap().version, Version::V1);
        assert!(l.pick(Choice::V2).unwrap_err().contains("bound to v1"));
    }

    #[test]
    fn pure_v2_layout() {
        let cg = "0::/user.slice/user-0.slice/session-1.scope\n";
        let l = layout(V2, cg, |_| Some("cpuset cpu io memory pids\n".into())).unwrap();
        assert_eq!(l.kind, LayoutKind::V2);
        let h = l.pick(Choice::Auto).unwrap();
        assert_eq!(
            h.own_cgroup,
            PathBuf::from("/sys/fs/cgroup/user.slice/user-0.slice/session-1.scope")
        );
        assert!(l.pick(Choice::V1).is_err());
    }

    #[test]
    fn pure_v1_layout_with_container_root() {
        // Inside a container the memory mount's root is the container's own cgroup.
        let cg = "5:memory:/docker/c0ffee/inner\n3:cpu,cpuacct:/docker/c0ffee\n";
        let l = layout(V1, cg, |_| None).unwrap();
        assert_eq!(l.kind, LayoutKind::V1);
        let h = l.pick(Choice::V1).unwrap();
        assert_eq!(h.own_cgroup, PathBuf::from("/sys/fs/cgroup/memory/inner"));
    }

    #[test]
    fn no_memory_controller() {
        let l = layout("", "", |_| None).unwrap();
        assert_eq!(l.kind, LayoutKind::None);
        assert!(l.pick(Choice::Auto).is_err());
    }

    #[test]
    fn malformed_mountinfo_is_an_error() {
        assert!(parse_mountinfo("1 2 3\n").is_err());
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(3000))]

            /// Arbitrary mountinfo and /proc/self/cgroup text: no panic; an error names the
            /// file and a line that exists.
            #[test]
            fn arbitrary_mountinfo(text in any::<String>(), cg in any::<String>()) {
                match parse_mountinfo(&text) {
                    Ok(_) => {}
                    Err(CgroupError::Parse { path, line, .. }) => {
                        prop_assert_eq!(path, PathBuf::from("/proc/self/mountinfo"));
                        prop_assert!(line >= 1 && line <= text.lines().count());
                    }
                    Err(e) => prop_assert!(false, "{}", e),
                }
                let _ = layout(&text, &cg, |_| Some("memory".into()));
            }

            /// Lines shaped like mountinfo with hostile fields (escapes, separators, UTF-8).
            #[test]
            fn mountinfo_shaped_lines(
                fields in proptest::collection::vec("[-a-z0-9/\\\\ ,=é]{0,8}", 0..14)
            ) {
                let line = fields.join(" ");
                let _ = parse_mountinfo(&line);
                let text = format!("{}\n{line}\n", V1.lines().next().unwrap());
                let _ = layout(&text, &line, |_| None);
            }
        }
    }

    /// The layout of a process read from a /proc and a cgroup2 mount in a temp tree.
    #[test]
    fn detection_reads_the_process_and_its_mounts_under_a_root() {
        let d = tempfile::tempdir().unwrap();
        let proc = d.path().join("proc");
        let mnt = d.path().join("cgroup");
        std::fs::create_dir_all(proc.join("self")).unwrap();
        std::fs::create_dir_all(mnt.join("a\\b c")).unwrap();
        std::fs::write(
            proc.join("self/mountinfo"),
            format!(
                "30 22 0:26 / {} rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n",
                mnt.display()
            ),
        )
        .unwrap();
        std::fs::write(proc.join("self/cgroup"), "0::/a\\b c\n").unwrap();
        std::fs::write(mnt.join("cgroup.controllers"), "cpu io memory pids\n").unwrap();
        let l = detect_in(&proc).unwrap();
        assert_eq!(l.kind, LayoutKind::V2);
        assert_eq!(l.v2.unwrap().own_cgroup, mnt.join("a\\b c"));
        std::fs::write(mnt.join("cgroup.controllers"), "cpu io pids\n").unwrap();
        let l = detect_in(&proc).unwrap();
        assert_eq!(l.kind, LayoutKind::None);
        assert_eq!(l.v2_without_memory, Some(mnt.clone()));
        let e = detect_in(&d.path().join("absent")).unwrap_err();
        assert!(e.to_string().contains("absent/self/mountinfo"), "{e}");
    }
}
