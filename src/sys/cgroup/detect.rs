//! Finding the memory controller: which hierarchy carries it (v1, v2 or both in a hybrid layout),
//! where it is mounted, and which cgroup this process lives in.
//!
//! Everything here is a pure function over the text of /proc/self/mountinfo and /proc/self/cgroup,
//! so the layouts of other machines are unit tested from fixtures.

use std::path::{Path, PathBuf};

use super::{CgroupError, Version};

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

/// Parses /proc/self/mountinfo and keeps the cgroup and cgroup2 mounts.
pub fn parse_mountinfo(text: &str) -> Result<Vec<CgroupMount>, CgroupError> {
    let mut mounts = Vec::new();
    for (no, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(' ').collect();
        let sep = fields
            .iter()
            .position(|f| *f == "-")
            .ok_or_else(|| CgroupError::Parse {
                path: PathBuf::from("/proc/self/mountinfo"),
                line: no + 1,
                what: "no ' - ' separator".into(),
            })?;
        if fields.len() < sep + 4 || sep < 6 {
            return Err(CgroupError::Parse {
                path: PathBuf::from("/proc/self/mountinfo"),
                line: no + 1,
                what: "too few fields".into(),
            });
        }
        let fstype = fields[sep + 1];
        let version = match fstype {
            "cgroup" => Version::V1,
            "cgroup2" => Version::V2,
            _ => continue,
        };
        let controllers = if version == Version::V1 {
            fields[sep + 3]
                .split(',')
                .filter(|o| !matches!(*o, "rw" | "ro") && !o.contains('='))
                .map(String::from)
                .collect()
        } else {
            Vec::new()
        };
        mounts.push(CgroupMount {
            version,
            mount_point: PathBuf::from(unescape_octal(fields[4])),
            root: unescape_octal(fields[3]),
            controllers,
        });
    }
    Ok(mounts)
}

/// mountinfo escapes space, tab, newline and backslash as \ooo.
fn unescape_octal(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        // Three octal digits (bytes, not a str slice: what follows a backslash may be the middle
        // of a multi-byte character), at most \377.
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)) && d[0] <= b'3');
        if bytes[i] == b'\\'
            && let Some(d) = octal
        {
            out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The cgroup paths of this process, from /proc/self/cgroup: (v1 memory path, v2 path).
pub fn parse_proc_cgroup(text: &str) -> (Option<String>, Option<String>) {
    let mut v1_memory = None;
    let mut v2 = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if id == "0" && ctrls.is_empty() {
            v2 = Some(path.to_string());
        } else if ctrls.split(',').any(|c| c == "memory") {
            v1_memory = Some(path.to_string());
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
    let mountinfo = super::read_path(Path::new("/proc/self/mountinfo"))?;
    let proc_cgroup = super::read_path(Path::new("/proc/self/cgroup"))?;
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

    #[test]
    fn octal_escapes() {
        assert_eq!(unescape_octal("/a\\040b"), "/a b");
        assert_eq!(unescape_octal("/plain"), "/plain");
    }
}
