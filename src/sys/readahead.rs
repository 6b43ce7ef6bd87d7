//! The readahead window of the scratch directory's disk.
//!
//! A file opened for reading starts with its backing device's `ra_pages` (file_ra_state_init in
//! mm/readahead.c), which sysfs shows as the disk's `queue/read_ahead_kb` (the bdi's
//! `read_ahead_kb`). A sequential reader ramps its window up to that size and then keeps up to
//! two windows ahead of itself: the one it is reading and the asynchronous one started when it
//! reaches the PG_readahead mark. Pages of both are charged to the reader's group while their I/O
//! is in flight (locked, so reclaim scans them and cannot free them) or until it reads them.
//! A partition has no queue of its own: its disk's is the one that counts.

use std::path::{Path, PathBuf};

/// Where sysfs is mounted.
pub const SYS: &str = "/sys";

/// The readahead window, in bytes, of the disk holding `dir`, read under the sysfs at `sys`;
/// None when the filesystem is not on a block device sysfs lists (btrfs and overlayfs show an
/// anonymous device number, tmpfs none) or the file cannot be read.
pub fn window_bytes(sys: &Path, dir: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    window_of_device(sys, libc::major(dev), libc::minor(dev))
}

/// [`window_bytes`] for the block device `major:minor`.
pub fn window_of_device(sys: &Path, major: u32, minor: u32) -> Option<u64> {
    let node = sys.join(format!("dev/block/{major}:{minor}"));
    let disk = disk_dir(&node)?;
    let text = std::fs::read_to_string(disk.join("queue/read_ahead_kb")).ok()?;
    text.trim().parse::<u64>().ok().map(|kb| kb * 1024)
}

/// The sysfs directory of the disk behind `node` (/sys/dev/block/M:m, a link): the node itself,
/// or for a partition (it has a `partition` file) the directory above it.
fn disk_dir(node: &Path) -> Option<PathBuf> {
    let real = node.canonicalize().ok()?;
    if real.join("partition").exists() {
        real.parent().map(Path::to_path_buf)
    } else {
        Some(real)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A sysfs laid out as the kernel does: /sys/dev/block/M:m links into /sys/devices, a
    /// partition's directory inside its disk's.
    fn sysfs() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let disk = d.path().join("devices/virtual/block/vda");
        std::fs::create_dir_all(disk.join("queue")).unwrap();
        std::fs::write(disk.join("queue/read_ahead_kb"), "8192\n").unwrap();
        std::fs::create_dir_all(disk.join("vda1")).unwrap();
        std::fs::write(disk.join("vda1/partition"), "1\n").unwrap();
        std::fs::create_dir_all(d.path().join("dev/block")).unwrap();
        symlink(disk.as_path(), d.path().join("dev/block/254:0")).unwrap();
        symlink(disk.join("vda1"), d.path().join("dev/block/254:1")).unwrap();
        d
    }

    #[test]
    fn a_disk_and_its_partition_have_the_disk_s_window() {
        let d = sysfs();
        assert_eq!(window_of_device(d.path(), 254, 0), Some(8 << 20));
        assert_eq!(window_of_device(d.path(), 254, 1), Some(8 << 20));
    }

    #[test]
    fn an_anonymous_or_unknown_device_has_none() {
        let d = sysfs();
        assert_eq!(window_of_device(d.path(), 0, 42), None);
        std::fs::write(
            d.path()
                .join("devices/virtual/block/vda/queue/read_ahead_kb"),
            "x",
        )
        .unwrap();
        assert_eq!(window_of_device(d.path(), 254, 0), None);
    }
}
