//! The /proc readers of the cold paths: the filesystem type of a path (mountinfo), vmstat keys,
//! swap areas and MemTotal. Each reads under a /proc root (`*_in`) so the unit tests use a temp
//! tree; the plain forms read the real /proc.

use std::path::Path;

use crate::sys::cgroup::read_path;

/// The real /proc.
pub const PROC: &str = "/proc";

/// The filesystem type holding `path`, from /proc/self/mountinfo (longest matching mount point).
pub fn fstype_of(path: &Path) -> Option<String> {
    fstype_in(Path::new(PROC), path)
}

/// [`fstype_of`] under a /proc at `proc`.
pub fn fstype_in(proc: &Path, path: &Path) -> Option<String> {
    let mi = std::fs::read_to_string(proc.join("self/mountinfo")).ok()?;
    let path = path.canonicalize().ok()?;
    let mut best: Option<(usize, String)> = None;
    for line in mi.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let sep = f.iter().position(|x| *x == "-")?;
        let mp = Path::new(f.get(4)?);
        if path.starts_with(mp) {
            let len = mp.as_os_str().len();
            if best.as_ref().is_none_or(|(l, _)| len >= *l) {
                best = Some((len, f.get(sep + 1)?.to_string()));
            }
        }
    }
    best.map(|(_, t)| t)
}

/// Whether /proc/vmstat has `key`.
pub fn vmstat_has(key: &str) -> bool {
    vmstat_has_in(Path::new(PROC), key)
}

/// [`vmstat_has`] under a /proc at `proc`.
pub fn vmstat_has_in(proc: &Path, key: &str) -> bool {
    std::fs::read_to_string(proc.join("vmstat"))
        .map(|s| s.lines().any(|l| l.split(' ').next() == Some(key)))
        .unwrap_or(false)
}

/// Whether any swap area is enabled (/proc/swaps lists one below its header).
pub fn swap_enabled() -> bool {
    swap_enabled_in(Path::new(PROC))
}

/// [`swap_enabled`] under a /proc at `proc`.
pub fn swap_enabled_in(proc: &Path) -> bool {
    std::fs::read_to_string(proc.join("swaps"))
        .map(|s| s.lines().count() > 1)
        .unwrap_or(false)
}

/// MemTotal from /proc/meminfo in bytes (0 if unreadable).
pub fn mem_total_bytes() -> u64 {
    mem_total_bytes_in(Path::new(PROC))
}

/// [`mem_total_bytes`] under a /proc at `proc`.
pub fn mem_total_bytes_in(proc: &Path) -> u64 {
    read_path(&proc.join("meminfo"))
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(0)
        * 1024
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_proc() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("self")).unwrap();
        let root = Path::new("/").canonicalize().unwrap();
        let here = std::env::temp_dir().canonicalize().unwrap();
        std::fs::write(
            d.path().join("self/mountinfo"),
            format!(
                "22 1 8:1 / {} rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
                 23 22 0:20 / {} rw,nosuid shared:2 - tmpfs tmpfs rw\n",
                root.display(),
                here.display()
            ),
        )
        .unwrap();
        std::fs::write(
            d.path().join("vmstat"),
            "nr_dirty 12\npgmigrate_success 3\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("swaps"),
            "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("meminfo"),
            "MemTotal:        2048 kB\nMemFree:          100 kB\n",
        )
        .unwrap();
        d
    }

    #[test]
    fn the_longest_mount_point_gives_the_filesystem_type() {
        let p = fake_proc();
        let here = std::env::temp_dir();
        assert_eq!(fstype_in(p.path(), &here).as_deref(), Some("tmpfs"));
        assert_eq!(fstype_in(p.path(), Path::new("/")).as_deref(), Some("ext4"));
        assert_eq!(fstype_in(&p.path().join("absent"), Path::new("/")), None);
    }

    #[test]
    fn vmstat_swaps_and_meminfo() {
        let p = fake_proc();
        assert!(vmstat_has_in(p.path(), "pgmigrate_success"));
        assert!(!vmstat_has_in(p.path(), "pgmigrate"));
        assert!(!swap_enabled_in(p.path()));
        std::fs::write(
            p.path().join("swaps"),
            "Filename Type Size Used Priority\n/dev/vdb partition 1024 0 -2\n",
        )
        .unwrap();
        assert!(swap_enabled_in(p.path()));
        assert_eq!(mem_total_bytes_in(p.path()), 2048 * 1024);
        assert_eq!(mem_total_bytes_in(&p.path().join("absent")), 0);
    }
}
