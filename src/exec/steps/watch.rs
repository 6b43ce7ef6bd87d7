//! Reads of a knob from another thread while a `set` step's write(2) to it runs. cgroup v2's
//! memory.high and memory.max writes reclaim down to the new value before they return
//! (memory_high_write, memory_max_write), and both put the value in force first: what another
//! reader sees during the write, and the group's memory.current read right before it (falling
//! while the write reclaims), is how the `in-force` check knows.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::model::{ReadRun, ReadsDuring, WATCHED_KNOBS};
use crate::sys::cgroup::Version;

/// The most runs of equal reads kept (a value changes once in a write; more means the file is
/// written from elsewhere too, and the first runs say enough).
const MAX_RUNS: usize = 64;

/// The pause between two reads: a read every few tenths of a millisecond, without taking a
/// whole CPU from the writer on a 2-CPU guest.
const PAUSE: Duration = Duration::from_micros(100);

/// The knobs whose writes are watched: v2's that reclaim before they return.
pub(super) fn watched(version: Version, file: &str) -> bool {
    version == Version::V2 && WATCHED_KNOBS.contains(&file)
}

/// Reads of one text in a row, all before the write began or all after: the text, when the
/// first and the last began, how many, and memory.current read right before the first and the
/// last.
struct Run {
    value: String,
    first: Instant,
    last: Instant,
    reads: u64,
    usage_first: Option<u64>,
    usage_last: Option<u64>,
    writing: bool,
}

/// A thread reading one file (and its group's memory.current) over and over until stopped.
pub(super) struct Watch {
    stop: Arc<AtomicBool>,
    writing: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<Run>>>,
}

impl Watch {
    /// Starts reading `path` and returns once the first read is done, so the reader runs when
    /// the write begins.
    pub(super) fn start(path: &Path) -> Watch {
        let (stop, writing) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let started = Arc::new(AtomicBool::new(false));
        let (s, w, up, p) = (
            stop.clone(),
            writing.clone(),
            started.clone(),
            path.to_path_buf(),
        );
        let thread = std::thread::spawn(move || read_until(&p, &s, &w, &up));
        while !started.load(Ordering::Acquire) && !thread.is_finished() {
            std::thread::yield_now();
        }
        Watch {
            stop,
            writing,
            thread: Some(thread),
        }
    }

    /// Marks the write's start (call right after taking its time): later reads begin runs of
    /// their own.
    pub(super) fn mark(&self) {
        self.writing.store(true, Ordering::Release);
    }

    /// Stops the reader; its runs after the mark, timed from `began` (the write's start), and
    /// `write_ms`.
    pub(super) fn finish(mut self, began: Instant, write_ms: f64) -> ReadsDuring {
        self.stop.store(true, Ordering::Release);
        let runs = (self.thread.take())
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        let ms = |i: Instant| i.saturating_duration_since(began).as_secs_f64() * 1e3;
        ReadsDuring {
            write_ms,
            runs: (runs.into_iter().filter(|r| r.writing))
                .map(|r| ReadRun {
                    first_ms: ms(r.first),
                    last_ms: ms(r.last),
                    value: r.value,
                    reads: r.reads,
                    usage_first: r.usage_first,
                    usage_last: r.usage_last,
                })
                .collect(),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Reads memory.current and then `path` until `stop`: each run of equal texts with the start
/// of its first and last read and the usage read right before them. A read of `path` that
/// fails ends the runs (the group is going).
fn read_until(
    path: &Path,
    stop: &AtomicBool,
    writing: &AtomicBool,
    started: &AtomicBool,
) -> Vec<Run> {
    let current = path.with_file_name("memory.current");
    let usage = || {
        std::fs::read_to_string(&current)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    let mut runs: Vec<Run> = Vec::new();
    while !stop.load(Ordering::Acquire) {
        // Before the time: a run marked as during the write began after the write's time.
        let w = writing.load(Ordering::Acquire);
        let t = Instant::now();
        let u = usage();
        let Ok(text) = std::fs::read_to_string(path) else {
            break;
        };
        let text = text.trim();
        if let Some(r) = runs
            .last_mut()
            .filter(|r| r.value == text && r.writing == w)
        {
            (r.last, r.reads, r.usage_last) = (t, r.reads + 1, u);
        } else if runs.len() >= MAX_RUNS {
            break;
        } else {
            runs.push(Run {
                value: text.to_string(),
                first: t,
                last: t,
                reads: 1,
                usage_first: u,
                usage_last: u,
                writing: w,
            });
            started.store(true, Ordering::Release);
        }
        std::thread::sleep(PAUSE);
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_records_each_value_during_the_write_with_the_usage_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let (high, current) = (
            dir.path().join("memory.high"),
            dir.path().join("memory.current"),
        );
        // Replaced whole (a plain file read mid-write would show it empty; a knob cannot).
        let replace = |p: &Path, text: &str| {
            let tmp = p.with_extension("new");
            std::fs::write(&tmp, text).unwrap();
            std::fs::rename(&tmp, p).unwrap();
        };
        replace(&high, "max\n");
        replace(&current, "134217728\n");
        let w = Watch::start(&high);
        std::thread::sleep(Duration::from_millis(3));
        let began = Instant::now();
        w.mark();
        std::thread::sleep(Duration::from_millis(5));
        replace(&current, "16777216\n");
        replace(&high, "16777216\n");
        std::thread::sleep(Duration::from_millis(5));
        let d = w.finish(began, 10.0);
        let values: Vec<&str> = d.runs.iter().map(|r| r.value.as_str()).collect();
        assert_eq!(values, ["max", "16777216"], "{d:?}");
        assert!(d.runs[0].first_ms >= 0.0 && d.runs[0].last_ms < d.runs[1].first_ms);
        assert_eq!(d.runs[0].usage_first, Some(128 << 20));
        assert_eq!(d.runs[1].usage_last, Some(16 << 20));
    }
}
