//! The per-file truth as a sampler source: the page cache's own count (cachestat(2), see
//! `crate::sys::cachestat`) of the files each group wrote, summed per group.

use std::path::PathBuf;

use crate::model::counter::{DIRTY, FILE, WRITEBACK};
pub use crate::sys::cachestat::{pages, support};

/// The per-file truth sampled for a set of groups: each file adds its pages (in bytes) to the
/// columns of every group it belongs to (a group's counters are hierarchical, so a file written in
/// `p/a` belongs to `p/a` and `p`). Each group has three columns in a row: file, dirty, writeback.
pub struct FileTruth {
    pub files: Vec<(PathBuf, Vec<usize>)>,
    /// The first column of each group.
    pub groups: Vec<usize>,
    pub page_size: i64,
}

/// The counters the per-file truth has, in column order.
pub const COUNTERS: [&str; 3] = [FILE, DIRTY, WRITEBACK];

impl FileTruth {
    pub fn read_into(&self, row: &mut [i64]) -> Result<(), String> {
        for &g in &self.groups {
            row[g..g + 3].fill(0);
        }
        for (path, groups) in &self.files {
            let p = pages(path).map_err(|e| format!("cachestat {}: {e}", path.display()))?;
            for &g in groups {
                row[g] += p.cache as i64 * self.page_size;
                row[g + 1] += p.dirty as i64 * self.page_size;
                row[g + 2] += p.writeback as i64 * self.page_size;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A directory on a real filesystem (tmpfs pages are never dirty): the crate's own, or
    /// /var/tmp when the tree is not writable; and cachestat(2) must work. These tests are
    /// `#[ignore]`d (a plain `cargo test` may run where neither holds); `ci/test.sh` runs them
    /// with `--include-ignored`, where they must.
    fn disk_dir() -> tempfile::TempDir {
        if let Err(why) = support() {
            panic!("this test needs cachestat(2): {why}");
        }
        let dirs = [env!("CARGO_MANIFEST_DIR"), "/var/tmp"];
        dirs.iter()
            .find_map(|d| tempfile::tempdir_in(d).ok())
            .unwrap_or_else(|| panic!("cannot create a directory in {}", dirs.join(" or ")))
    }

    #[test]
    #[ignore = "needs cachestat(2) (Linux 6.5+) and a disk-backed directory"]
    fn counts_a_written_file_and_zero_for_a_missing_one() {
        let d = disk_dir();
        let p = d.path().join("f");
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(&vec![1u8; 1 << 20]).unwrap();
        let got = pages(&p).unwrap();
        assert_eq!(got.cache, 256, "{got:?}");
        assert!(got.dirty + got.writeback <= 256, "{got:?}");
        f.sync_all().unwrap();
        assert_eq!(pages(&p).unwrap().dirty, 0);
        std::fs::remove_file(&p).unwrap();
        assert_eq!(pages(&p).unwrap(), crate::sys::cachestat::Pages::default());
    }

    #[test]
    #[ignore = "needs cachestat(2) (Linux 6.5+) and a disk-backed directory"]
    fn sums_files_into_their_groups() {
        let d = disk_dir();
        let a = d.path().join("a");
        std::fs::write(&a, vec![1u8; 8192]).unwrap();
        let truth = FileTruth {
            files: vec![(a, vec![0, 3]), (d.path().join("missing"), vec![3])],
            groups: vec![0, 3],
            page_size: 4096,
        };
        let mut row = vec![7i64; 6];
        truth.read_into(&mut row).unwrap();
        assert_eq!(row[0], 8192);
        assert_eq!(row[3], 8192);
        assert_eq!(row[1] + row[2], row[4] + row[5]);
    }
}
