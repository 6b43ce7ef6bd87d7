//! The per-file truth as a sampler source: the page cache's own count (cachestat(2), see
//! `crate::sys::cachestat`) of the files each group wrote, summed per group.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub use crate::model::counter::HELD;
use crate::model::counter::{DIRTY, FILE, WRITEBACK};
pub use crate::sys::cachestat::{pages, pages_backwards, support};

/// The per-file truth sampled for a set of groups: each file adds its pages (in bytes) to the
/// columns of every group it belongs to (a group's counters are hierarchical, so a file written in
/// `p/a` belongs to `p/a` and `p`). Each group has three columns in a row: file, dirty, writeback.
pub struct FileTruth {
    /// Each file and the groups it belongs to (indices into `groups`).
    pub files: Vec<(PathBuf, Vec<usize>)>,
    /// The first column of each group.
    pub groups: Vec<usize>,
    pub page_size: i64,
    /// Each file's cached pages at the last read, shared by the read before the cgroup files
    /// (which stores them) and the read after (which uses them for `held`).
    pub last: Arc<Mutex<Vec<u64>>>,
    /// For the read after the cgroup files: each group's column of [`HELD`], the sum over its
    /// files of the smaller of the two reads of each file. A file that only grows or only
    /// shrinks within the sampler's pass held at least that much in between; the smaller of the
    /// two sums is no such bound when one file grows while another shrinks (a writer at its
    /// group's limit, whose reclaim evicts an older file) and the files are read one by one.
    /// Nor is a file appended at its end while its start is evicted (one file written at its
    /// group's limit) unless the two reads walk it in opposite directions: this read walks each
    /// file from its end (`pages_backwards`).
    pub held: Option<Vec<usize>>,
}

/// The counters the per-file truth has, in column order.
pub const COUNTERS: [&str; 3] = [FILE, DIRTY, WRITEBACK];

impl FileTruth {
    pub fn read_into(&self, row: &mut [i64]) -> Result<(), String> {
        for &g in &self.groups {
            row[g..g + 3].fill(0);
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        last.resize(self.files.len(), 0);
        if let Some(held) = &self.held {
            held.iter().for_each(|&c| row[c] = 0);
        }
        for (i, (path, groups)) in self.files.iter().enumerate() {
            // The read after the cgroup files walks each file from its end: with the read
            // before (from its start) it brackets a file appended and evicted at once.
            let read = match self.held {
                Some(_) => pages_backwards,
                None => pages,
            };
            let p = read(path).map_err(|e| format!("cachestat {}: {e}", path.display()))?;
            let low = p.cache.min(last[i]);
            for &i in groups {
                let g = self.groups[i];
                row[g] += p.cache as i64 * self.page_size;
                row[g + 1] += p.dirty as i64 * self.page_size;
                row[g + 2] += p.writeback as i64 * self.page_size;
                if let Some(held) = &self.held {
                    row[held[i]] += low as i64 * self.page_size;
                }
            }
            if self.held.is_none() {
                last[i] = p.cache;
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

    /// A walk from the end in pieces counts what one walk does on a file nobody changes, a
    /// tail shorter than a piece and a partly cached file included.
    #[test]
    #[ignore = "needs cachestat(2) (Linux 6.5+) and a disk-backed directory"]
    fn a_walk_from_the_end_counts_what_one_walk_does() {
        let d = disk_dir();
        let p = d.path().join("f");
        std::fs::write(&p, vec![1u8; (17 << 20) + 3 * 4096]).unwrap();
        crate::exec::workload::drop_cache(&p).ok();
        let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        use std::io::{Seek, SeekFrom};
        f.seek(SeekFrom::Start(5 << 20)).unwrap();
        f.write_all(&vec![2u8; 3 << 20]).unwrap();
        f.sync_all().unwrap();
        let (one, back) = (pages(&p).unwrap(), pages_backwards(&p).unwrap());
        assert_eq!(one, back);
        assert!(back.cache >= 3 << 8, "{back:?}");
    }

    #[test]
    #[ignore = "needs cachestat(2) (Linux 6.5+) and a disk-backed directory"]
    fn sums_files_into_their_groups() {
        let d = disk_dir();
        let a = d.path().join("a");
        std::fs::write(&a, vec![1u8; 8192]).unwrap();
        let truth = FileTruth {
            files: vec![(a, vec![0, 1]), (d.path().join("missing"), vec![1])],
            groups: vec![0, 3],
            page_size: 4096,
            last: Arc::default(),
            held: None,
        };
        let mut row = vec![7i64; 6];
        truth.read_into(&mut row).unwrap();
        assert_eq!(row[0], 8192);
        assert_eq!(row[3], 8192);
        assert_eq!(row[1] + row[2], row[4] + row[5]);
    }

    /// The read after the cgroup files sums, per group, the smaller of each file's two reads:
    /// a file that shrank in between counts what it held after, one that grew what it held before.
    #[test]
    #[ignore = "needs cachestat(2) (Linux 6.5+) and a disk-backed directory"]
    fn held_is_the_smaller_read_of_each_file() {
        let d = disk_dir();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::write(&a, vec![1u8; 4 * 4096]).unwrap();
        std::fs::write(&b, vec![1u8; 4096]).unwrap();
        let last = Arc::default();
        let make = |held| FileTruth {
            files: vec![(a.clone(), vec![0]), (b.clone(), vec![0])],
            groups: vec![0],
            page_size: 4096,
            last: Arc::clone(&last),
            held,
        };
        let (before, after) = (make(None), make(Some(vec![3])));
        let mut row = vec![0i64; 4];
        before.read_into(&mut row).unwrap();
        assert_eq!(row[0], 5 * 4096);
        // a is emptied (a partly truncated large folio may stay whole), b grows to 3 pages.
        std::fs::File::options()
            .write(true)
            .open(&a)
            .unwrap()
            .set_len(0)
            .unwrap();
        std::fs::write(&b, vec![1u8; 3 * 4096]).unwrap();
        after.read_into(&mut row).unwrap();
        assert_eq!(row[0], 3 * 4096);
        assert_eq!(row[3], 4096, "min(4, 0) + min(1, 3) pages");
    }
}
