//! The sampler: a thread that reads memory.stat (and usage) of every test cgroup and /proc/vmstat at
//! a fixed interval for the whole scenario, reusing open file descriptors (pread at offset 0), and
//! keeps the full time series. Columns are named `<cgroup>.<counter>` and `vmstat.<key>`.
//!
//! The reading is hand-written on purpose, unlike the cold paths in `sys::proc` (the `procfs`
//! crate): a pass runs every few milliseconds for the whole scenario, and each source is a
//! descriptor opened once and read with pread at offset 0 into a buffer kept across passes, the
//! wanted keys picked out without allocating (`stat::extract`). procfs opens the file again on
//! every read and builds a map of every key, which would add syscalls and allocations to each
//! pass, stretch the pass (the skew between the files it reads) and perturb the memory being
//! measured.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

use crate::model::{Column, Series};
use crate::sys::cgroup::stat;

pub mod pagecache;
pub mod tasks;

/// What one sampler pass reads, in order: a counter file, the page cache's count of the files
/// the groups wrote, or the groups' tasks' own count of their memory.
pub enum Source {
    File(FileSource),
    Truth(pagecache::FileTruth),
    Tasks(tasks::TaskMemory),
}

impl Source {
    /// A "key value" file; `keys` pairs a key in the file with a column index.
    pub fn keyed(path: &Path, keys: Vec<(String, usize)>) -> Result<Source> {
        FileSource::keyed(path, keys).map(Source::File)
    }
    /// A v2 memory.numa_stat; `keys` pairs a key with the column its sum over the nodes fills.
    /// memory.numa_stat: each key's values summed over the nodes, times `unit` (v1 counts
    /// pages, v2 bytes and events).
    pub fn node_sums(path: &Path, keys: Vec<(String, usize)>, unit: i64) -> Result<Source> {
        let mut f = FileSource::keyed(path, keys)?;
        f.node_sums = Some(unit);
        Ok(Source::File(f))
    }
    /// A file holding one number.
    pub fn single(path: &Path, col: usize) -> Result<Source> {
        FileSource::single(path, col).map(Source::File)
    }
    fn read_into(
        &self,
        buf: &mut Vec<u8>,
        row: &mut [i64],
        scratch: &mut Vec<Option<i64>>,
    ) -> Result<()> {
        match self {
            Source::File(f) => f.read_into(buf, row, scratch),
            Source::Truth(t) => t.read_into(row).map_err(|e| anyhow!(e)),
            Source::Tasks(t) => t.read_into(row).map_err(|e| anyhow!(e)),
        }
    }
}

/// One file the sampler reads and the columns it fills.
pub struct FileSource {
    path: PathBuf,
    file: File,
    /// memory.stat / vmstat keys (in the file) and the column each fills; empty: the whole file is
    /// one number (memory.current, memory.usage_in_bytes) going to `single`.
    keys: Vec<String>,
    cols: Vec<usize>,
    single: Option<usize>,
    /// memory.numa_stat: each key's values summed over the nodes, times this.
    node_sums: Option<i64>,
    /// A cgroup file: one read returns all of it (see `read_into`).
    one_record: bool,
}

impl FileSource {
    fn keyed(path: &Path, keys: Vec<(String, usize)>) -> Result<FileSource> {
        let file = File::open(path).with_context(|| format!("open {}", path.display()))?;
        let (keys, cols) = keys.into_iter().unzip();
        Ok(FileSource {
            path: path.to_path_buf(),
            file,
            keys,
            cols,
            single: None,
            node_sums: None,
            one_record: crate::sys::cleanup::on_cgroupfs(path),
        })
    }
    fn single(path: &Path, col: usize) -> Result<FileSource> {
        let file = File::open(path).with_context(|| format!("open {}", path.display()))?;
        Ok(FileSource {
            path: path.to_path_buf(),
            file,
            keys: Vec::new(),
            cols: Vec::new(),
            single: Some(col),
            node_sums: None,
            one_record: crate::sys::cleanup::on_cgroupfs(path),
        })
    }

    fn read_into(
        &self,
        buf: &mut Vec<u8>,
        row: &mut [i64],
        scratch: &mut Vec<Option<i64>>,
    ) -> Result<()> {
        // The buffer's length is its capacity and stays so: no zero-filling on each read (it
        // cost several microseconds a pass); `len` is how much of it this read filled.
        let mut len = 0;
        loop {
            if len == buf.len() {
                buf.resize((buf.len() * 2).max(8192), 0);
            }
            let n = self
                .file
                .read_at(&mut buf[len..], len as u64)
                .with_context(|| format!("read {}", self.path.display()))?;
            len += n;
            // The cgroup files sampled (memory.stat, numa_stat, the counters of their own) are
            // one seq_file record each, returned whole by a read with room for it: no read for
            // the end. /proc/vmstat is one record per line and may come in page-sized parts.
            if n == 0 || (self.one_record && len < buf.len()) {
                break;
            }
        }
        let text = std::str::from_utf8(&buf[..len])
            .map_err(|_| anyhow!("{}: not UTF-8", self.path.display()))?;
        if let Some(col) = self.single {
            row[col] = stat::parse_value(text.trim()).ok_or_else(|| {
                anyhow!("{}: not an integer: {:?}", self.path.display(), text.trim())
            })?;
            return Ok(());
        }
        scratch.resize(self.keys.len(), None);
        let extract = if self.node_sums.is_some() {
            stat::extract_node_sums
        } else {
            stat::extract
        };
        extract(text, &self.keys, scratch)
            .map_err(|line| anyhow!("{}: line {line}: malformed value", self.path.display()))?;
        let unit = self.node_sums.unwrap_or(1);
        for (i, v) in scratch.iter().enumerate() {
            match v {
                Some(v) => row[self.cols[i]] = *v * unit,
                None => bail!("{}: no key {}", self.path.display(), self.keys[i]),
            }
        }
        Ok(())
    }
}

struct Shared {
    stop: AtomicBool,
    count: AtomicU64,
    /// When the last sample in the series began (its time, in microseconds since t0).
    last_start_us: AtomicU64,
    series: Mutex<Series>,
    error: Mutex<Option<String>>,
}

/// A running sampler thread.
pub struct Sampler {
    shared: Arc<Shared>,
    t0: Instant,
    handle: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Takes one sample synchronously (so setup errors surface at once), then samples every
    /// `interval` on a thread until stopped.
    /// A last column, `sampler.pass_us`, records how long each pass over the sources took (the
    /// checks bound the skew between files read in one pass by it).
    pub fn start(
        mut columns: Vec<Column>,
        sources: Vec<Source>,
        interval: Duration,
        t0: Instant,
    ) -> Result<Sampler> {
        columns.push(Column::pass());
        let ncols = columns.len();
        let mut series = Series::new(columns);
        let mut buf = Vec::with_capacity(8192);
        let mut scratch = Vec::new();
        let mut row = vec![0i64; ncols];
        let pass = Instant::now();
        for s in &sources {
            s.read_into(&mut buf, &mut row, &mut scratch)?;
        }
        row[ncols - 1] = pass.elapsed().as_micros() as i64;
        series.push(t0.elapsed().as_secs_f64(), &row);
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            count: AtomicU64::new(1),
            last_start_us: AtomicU64::new(0),
            series: Mutex::new(series),
            error: Mutex::new(None),
        });
        let sh = shared.clone();
        let handle = std::thread::Builder::new()
            .name("sampler".into())
            .spawn(move || {
                let mut next = Instant::now() + interval;
                while !sh.stop.load(Ordering::Relaxed) {
                    // Sleep in slices of at most 50 ms, so stop() is prompt at long intervals.
                    loop {
                        let now = Instant::now();
                        if next <= now || sh.stop.load(Ordering::Relaxed) {
                            break;
                        }
                        std::thread::sleep((next - now).min(Duration::from_millis(50)));
                    }
                    if sh.stop.load(Ordering::Relaxed) {
                        break;
                    }
                    // Fixed schedule; when a read took longer than the interval, skip ahead.
                    next = (next + interval).max(Instant::now());
                    let started = t0.elapsed();
                    let t = started.as_secs_f64();
                    let pass = Instant::now();
                    for s in &sources {
                        if let Err(e) = s.read_into(&mut buf, &mut row, &mut scratch) {
                            *sh.error.lock().unwrap() = Some(format!("{e:#}"));
                            return;
                        }
                    }
                    row[ncols - 1] = pass.elapsed().as_micros() as i64;
                    sh.series.lock().unwrap().push(t, &row);
                    (sh.last_start_us).store(started.as_micros() as u64, Ordering::Release);
                    sh.count.fetch_add(1, Ordering::Release);
                }
            })
            .context("start sampler thread")?;
        Ok(Sampler {
            shared,
            t0,
            handle: Some(handle),
        })
    }

    /// Number of samples taken so far.
    pub fn count(&self) -> u64 {
        self.shared.count.load(Ordering::Acquire)
    }

    /// Waits until `n` more samples exist (bounded by 100 intervals' worth of wall time: 2 s).
    pub fn wait_fresh(&self, n: u64) {
        let target = self.count() + n;
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.count() < target && Instant::now() < deadline && self.error().is_none() {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Waits until a sample that began after this call is in the series (bounded like
    /// `wait_fresh`): what happened before the call shows in a whole sample. At most the rest of an
    /// interval and one pass, where two fresh samples take an interval and a pass more.
    pub fn wait_newer(&self) {
        let since = self.t0.elapsed().as_micros() as u64;
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.shared.last_start_us.load(Ordering::Acquire) < since
            && Instant::now() < deadline
            && self.error().is_none()
        {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    pub fn error(&self) -> Option<String> {
        self.shared.error.lock().unwrap().clone()
    }

    /// The samples so far (for the online checks, see `super::super::online`).
    pub fn snapshot(&self) -> Series {
        self.shared.series.lock().unwrap().clone()
    }

    /// The latest sample, for timeout messages: each test group's usage, anon, file, dirty and
    /// writeback (what a stuck writer or a throttled charger shows), then where the whole row is.
    pub fn last_row(&self) -> String {
        use crate::model::counter::{ANON, DIRTY, FILE, USAGE, WRITEBACK};
        let s = self.shared.series.lock().unwrap();
        let Some(last) = s.len().checked_sub(1) else {
            return "no samples".into();
        };
        let wanted = [USAGE, ANON, FILE, DIRTY, WRITEBACK];
        let cols: Vec<usize> = (s.columns().iter().enumerate())
            .filter(|(_, c)| match c {
                Column::Group { counter, local, .. } => {
                    !local && wanted.contains(&counter.as_str())
                }
                _ => false,
            })
            .map(|(i, _)| i)
            .collect();
        format!("{} {}", s.describe_cols(last, &cols), s.csv_line(last))
    }

    /// Stops the thread and returns the series (or the read error that stopped it).
    pub fn stop(mut self) -> Result<Series> {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            h.join().map_err(|_| anyhow!("sampler thread panicked"))?;
        }
        if let Some(e) = self.error() {
            bail!("sampler: {e}");
        }
        Ok(std::mem::take(&mut *self.shared.series.lock().unwrap()))
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_fake_cgroup_files() {
        let d = tempfile::tempdir().unwrap();
        let stat = d.path().join("memory.stat");
        let usage = d.path().join("memory.current");
        // Two spaces: the update below changes this one byte (see there).
        std::fs::write(&stat, "file_dirty  4096\nfile_writeback 0\n").unwrap();
        std::fs::write(&usage, "8192\n").unwrap();
        let cols = vec!["t.dirty".into(), "t.writeback".into(), "t.usage".into()];
        let sources = vec![
            Source::keyed(
                &stat,
                vec![("file_dirty".into(), 0), ("file_writeback".into(), 1)],
            )
            .unwrap(),
            Source::single(&usage, 2).unwrap(),
        ];
        let s = Sampler::start(cols, sources, Duration::from_millis(1), Instant::now()).unwrap();
        s.wait_fresh(3);
        // The open descriptor sees new contents (pread at offset 0 every time).
        // Rewritten in place, never truncated: fs::write truncates first, and a pass reading the
        // empty file in between stopped the sampler (missing key; about 1 run in 150). A rename
        // would leave the kept descriptor on the old file. Only one byte differs, so a pass sees
        // the old text or the new one.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&stat)
            .unwrap()
            .write_all_at(b"file_dirty -4096\nfile_writeback 0\n", 0)
            .unwrap();
        // A sample begun after the write is in when wait_newer returns: it shows the new value.
        let t0 = s.t0;
        let written = t0.elapsed().as_secs_f64();
        s.wait_newer();
        let last = s.snapshot();
        assert!(
            last.t[last.len() - 1] >= written,
            "{} < {written}",
            last.t[last.len() - 1]
        );
        assert_eq!(last.get(last.len() - 1, 0), -4096);
        s.wait_fresh(3);
        let series = s.stop().unwrap();
        assert!(series.len() >= 6);
        assert_eq!(series.get(0, 0), 4096);
        assert_eq!(series.get(0, 2), 8192);
        assert_eq!(series.get(series.len() - 1, 0), -4096);
        assert!(series.t.windows(2).all(|w| w[0] <= w[1]));
        assert!(
            series
                .to_csv()
                .starts_with("t[s],t.dirty[B],t.writeback[B],t.usage[B],sampler:pass_us[us]\n")
        );
    }

    #[test]
    fn a_file_larger_than_the_buffer_is_read_whole_and_a_shorter_one_after_it_too() {
        let d = tempfile::tempdir().unwrap();
        let big = d.path().join("vmstat");
        let mut text: String = (0..2000).map(|i| format!("filler_{i} {i}\n")).collect();
        text += "nr_dirty 77\n";
        assert!(text.len() > 16384);
        std::fs::write(&big, &text).unwrap();
        let small = d.path().join("memory.stat");
        std::fs::write(&small, "file_dirty 5\n").unwrap();
        let src = |p: &Path, k: &str, c| Source::keyed(p, vec![(k.into(), c)]).unwrap();
        let (mut buf, mut row, mut scratch) = (Vec::new(), vec![0i64; 2], Vec::new());
        for _ in 0..2 {
            for s in [src(&big, "nr_dirty", 0), src(&small, "file_dirty", 1)] {
                s.read_into(&mut buf, &mut row, &mut scratch).unwrap();
            }
            assert_eq!(row, [77, 5]);
        }
        // The buffer grew once and stays at that length: no zero-filling per read.
        assert!(buf.len() >= text.len(), "{}", buf.len());
    }

    #[test]
    fn missing_key_is_an_error_at_start() {
        let d = tempfile::tempdir().unwrap();
        let stat = d.path().join("memory.stat");
        std::fs::write(&stat, "cache 1\n").unwrap();
        let src = Source::keyed(&stat, vec![("total_dirty".into(), 0)]).unwrap();
        let e = Sampler::start(
            vec!["t.x".into()],
            vec![src],
            Duration::from_millis(1),
            Instant::now(),
        )
        .err()
        .unwrap();
        assert!(format!("{e:#}").contains("total_dirty"), "{e:#}");
    }
}
