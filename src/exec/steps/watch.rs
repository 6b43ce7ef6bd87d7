//! Reads of a knob from another thread while a `set` step's write(2) to it runs. cgroup v2's
//! memory.high and memory.max writes reclaim down to the new value before they return
//! (memory_high_write, memory_max_write), and both put the value in force first: what another
//! reader sees during the write, and the group's memory.current beside it (falling while the
//! write reclaims), is how the `in-force` check knows.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::model::{ReadRun, ReadsDuring};
use crate::sys::cgroup::Version;

/// The most runs of equal reads kept (a value changes once in a write; more means the file is
/// written from elsewhere too, and the first runs say enough).
const MAX_RUNS: usize = 64;

/// The v2 knobs whose writes reclaim before they return, watched while written.
pub(super) fn watched(version: Version, file: &str) -> bool {
    version == Version::V2 && matches!(file, "memory.high" | "memory.max")
}

/// Reads of one text in a row: the text, when the first and the last began, how many, and the
/// group's memory.current read right after the first and the last.
type Run = (String, Instant, Instant, u64, Option<u64>, Option<u64>);

/// A thread reading one file (and its group's memory.current) over and over until stopped.
pub(super) struct Watch {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Run>>,
}

impl Watch {
    /// Starts reading `path` and returns once the first read is done, so the reader runs when
    /// the write begins.
    pub(super) fn start(path: &Path) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicBool::new(false));
        let (s, p) = (stop.clone(), path.to_path_buf());
        let up = started.clone();
        let thread = std::thread::spawn(move || read_until(&p, &s, &up));
        while !started.load(Ordering::Acquire) && !thread.is_finished() {
            std::thread::yield_now();
        }
        Watch { stop, thread }
    }

    /// Stops the reader; its runs, timed from `began` (the write's start), and `write_ms`.
    pub(super) fn finish(self, began: Instant, write_ms: f64) -> ReadsDuring {
        self.stop.store(true, Ordering::Release);
        let runs = self.thread.join().unwrap_or_default();
        let ms = |i: Instant| match i.checked_duration_since(began) {
            Some(d) => d.as_secs_f64() * 1e3,
            None => -(began.duration_since(i).as_secs_f64() * 1e3),
        };
        ReadsDuring {
            write_ms,
            runs: (runs.into_iter())
                .map(
                    |(value, first, last, reads, usage_first, usage_last)| ReadRun {
                        value,
                        first_ms: ms(first),
                        last_ms: ms(last),
                        reads,
                        usage_first,
                        usage_last,
                    },
                )
                .collect(),
        }
    }
}

/// Reads `path` and memory.current beside it until `stop`: each run of equal texts with the
/// start of its first and last read and the usage then. A read of `path` that fails ends the
/// runs (the group is going).
fn read_until(path: &Path, stop: &AtomicBool, started: &AtomicBool) -> Vec<Run> {
    let current = path.with_file_name("memory.current");
    let usage = || {
        std::fs::read_to_string(&current)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    let mut runs: Vec<Run> = Vec::new();
    while !stop.load(Ordering::Acquire) {
        let t = Instant::now();
        let Ok(text) = std::fs::read_to_string(path) else {
            break;
        };
        let text = text.trim();
        let u = usage();
        if let Some(r) = runs.last_mut().filter(|r| r.0 == text) {
            (r.2, r.3, r.5) = (t, r.3 + 1, u);
        } else if runs.len() >= MAX_RUNS {
            break;
        } else {
            runs.push((text.to_string(), t, t, 1, u, u));
        }
        started.store(true, Ordering::Release);
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_records_each_value_in_turn_with_the_usage_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let (high, current) = (
            dir.path().join("memory.high"),
            dir.path().join("memory.current"),
        );
        std::fs::write(&high, "max\n").unwrap();
        std::fs::write(&current, "134217728\n").unwrap();
        let w = Watch::start(&high);
        let began = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(5));
        // Replaced whole (a plain file read mid-write would show it empty; a knob cannot).
        let replace = |p: &Path, text: &str| {
            let tmp = p.with_extension("new");
            std::fs::write(&tmp, text).unwrap();
            std::fs::rename(&tmp, p).unwrap();
        };
        replace(&current, "16777216\n");
        replace(&high, "16777216\n");
        std::thread::sleep(std::time::Duration::from_millis(5));
        let d = w.finish(began, 10.0);
        let values: Vec<&str> = d.runs.iter().map(|r| r.value.as_str()).collect();
        assert_eq!(values, ["max", "16777216"], "{d:?}");
        assert!(d.runs[0].first_ms < 0.0 && d.runs[0].last_ms < d.runs[1].first_ms);
        assert_eq!(d.runs[0].usage_first, Some(128 << 20));
        assert_eq!(d.runs[1].usage_last, Some(16 << 20));
    }
}
