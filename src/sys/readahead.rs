//! The readahead window a sequential reader gets on the scratch directory's disk.
//!
//! A file opened for reading starts with its disk's `ra_pages` (file_ra_state_init), sysfs's
//! `queue/read_ahead_kb`; a request larger than that may read up to the disk's `io_pages`
//! (`queue/max_sectors_kb`) at once (ractl_max_pages in mm/readahead.c, 6.12). A sequential
//! reader ramps its window up to that size and keeps up to two windows ahead of itself: the one
//! it reads and the asynchronous one started at the PG_readahead mark. Their pages are charged to
//! the reader's group from the moment they are added, locked while their I/O is in flight. A
//! partition has no queue of its own: its disk's counts.

use std::path::{Path, PathBuf};

/// Where sysfs is mounted.
pub const SYS: &str = "/sys";

/// The window, in bytes, of a sequential reader making `request`-byte reads of a file under
/// `dir`, read under the sysfs at `sys`: max(read_ahead_kb, min(request, max_sectors_kb)). None
/// when the filesystem is not on a block device sysfs lists (btrfs, overlayfs, NFS and tmpfs
/// show an anonymous device number) or its queue cannot be read.
pub fn window_bytes(sys: &Path, dir: &Path, request: u64) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    window_of_device(sys, (libc::major(dev), libc::minor(dev)), request)
}

/// The window of a `read` step's readers (reads of `READ_REQUEST_BYTES`) under `dir`, on this
/// machine's sysfs.
pub fn reader_window(dir: &Path) -> Option<u64> {
    window_bytes(Path::new(SYS), dir, crate::model::step::READ_REQUEST_BYTES)
}

/// [`window_bytes`] for the block device `major:minor`.
pub fn window_of_device(sys: &Path, (major, minor): (u32, u32), request: u64) -> Option<u64> {
    let disk = disk_dir(&sys.join(format!("dev/block/{major}:{minor}")))?;
    let kib = |file: &str| -> Option<u64> {
        let text = std::fs::read_to_string(disk.join("queue").join(file)).ok()?;
        text.trim().parse::<u64>().ok().map(|kb| kb * 1024)
    };
    let ra = kib("read_ahead_kb")?;
    let io = kib("max_sectors_kb").unwrap_or(0);
    Some(ra.max(request.min(io)))
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

    const MIB: u64 = 1 << 20;

    /// A sysfs laid out as the kernel does: /sys/dev/block/M:m links into /sys/devices, a
    /// partition's directory inside its disk's.
    fn sysfs(read_ahead_kb: &str, max_sectors_kb: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let disk = d.path().join("devices/virtual/block/vda");
        std::fs::create_dir_all(disk.join("queue")).unwrap();
        std::fs::write(disk.join("queue/read_ahead_kb"), read_ahead_kb).unwrap();
        std::fs::write(disk.join("queue/max_sectors_kb"), max_sectors_kb).unwrap();
        std::fs::create_dir_all(disk.join("vda1")).unwrap();
        std::fs::write(disk.join("vda1/partition"), "1\n").unwrap();
        std::fs::create_dir_all(d.path().join("dev/block")).unwrap();
        symlink(disk.as_path(), d.path().join("dev/block/254:0")).unwrap();
        symlink(disk.join("vda1"), d.path().join("dev/block/254:1")).unwrap();
        d
    }

    #[test]
    fn a_disk_and_its_partition_have_the_disk_s_window() {
        let d = sysfs("8192\n", "4096\n");
        assert_eq!(window_of_device(d.path(), (254, 0), MIB), Some(8 * MIB));
        assert_eq!(window_of_device(d.path(), (254, 1), MIB), Some(8 * MIB));
    }

    #[test]
    fn a_request_above_read_ahead_kb_reads_up_to_max_sectors_kb() {
        // The kernel's default 128 KiB window, 1 MiB reads: 1 MiB where the disk takes it.
        let d = sysfs("128\n", "1280\n");
        assert_eq!(window_of_device(d.path(), (254, 0), MIB), Some(MIB));
        assert_eq!(
            window_of_device(d.path(), (254, 0), 64 << 10),
            Some(128 << 10)
        );
        let d = sysfs("128\n", "512\n");
        assert_eq!(window_of_device(d.path(), (254, 0), MIB), Some(512 << 10));
    }

    #[test]
    fn an_anonymous_or_unknown_device_has_none() {
        let d = sysfs("x", "4096\n");
        assert_eq!(window_of_device(d.path(), (0, 42), MIB), None);
        assert_eq!(window_of_device(d.path(), (254, 0), MIB), None);
    }
}
