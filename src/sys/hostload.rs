//! What the host did while a guest measured: under `memcgtest vm` the guest's CPUs are threads of
//! qemu on the host and its disk is a file there, so a build on the host slows the guest's
//! measured steps while nothing in the guest can see it. The host publishes its load, and the
//! guest reads it around every measured step (see `model::Load`):
//!
//! - the host (`Publisher`) writes, every 100 ms, one text line into the first 4 KiB of a small
//!   file that qemu gives the guest as a read-only virtio disk: since when it publishes, the user
//!   CPU time and the pages dirtied by every process on the host but qemu and memcgtest, and the
//!   same over the last second;
//! - the guest (`read`) reads that block with O_DIRECT, so each read reaches qemu, which reads
//!   the file through the host's page cache and so sees the latest line.
//!
//! A line carries its sequence number at both ends: a read that raced a write is told apart.

use std::collections::VecDeque;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::model::HostLoad;

use super::proc::{self, dirtied_bytes_of, group_members, user_seconds_of};

/// The block the line is in (the guest reads it whole with O_DIRECT).
pub const BLOCK: usize = 4096;
/// The environment variable that gives the guest's run the device to read.
pub const ENV: &str = "MEMCGTEST_HOST_LOAD";
/// How often the host publishes.
const PERIOD: Duration = Duration::from_millis(100);
/// The trailing window of the "recent" figures, for steps shorter than it.
pub const WINDOW: f64 = 1.0;

/// One published reading: counters since the publisher started, and their rates over the last
/// `WINDOW` seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostReading {
    /// Seconds since the publisher started (the host's clock).
    pub t: f64,
    /// User CPU seconds of other processes (the host's, less qemu's and memcgtest's).
    pub others_cpu: f64,
    /// Bytes of pages other processes dirtied (nr_dirtied less qemu's and memcgtest's own).
    pub others_dirtied: f64,
    /// CPUs other processes used over the last window.
    pub recent_cpus: f64,
    /// Bytes per second they dirtied over the last window.
    pub recent_dirtied_bps: f64,
}

impl HostReading {
    /// The line, padded to a block.
    pub fn encode(&self, seq: u64) -> Vec<u8> {
        let line = format!(
            "memcgtest-host-load 1 seq={seq} t={:.3} cpu={:.3} dirtied={:.0} recent_cpus={:.3} recent_bps={:.0} end={seq}\n",
            self.t, self.others_cpu, self.others_dirtied, self.recent_cpus, self.recent_dirtied_bps
        );
        let mut b = line.into_bytes();
        b.resize(BLOCK, 0);
        b
    }

    /// The reading in a block and its sequence number, or None when it is not a whole line
    /// (none yet, or a torn read).
    pub fn decode(block: &[u8]) -> Option<(u64, HostReading)> {
        let text = std::str::from_utf8(block.split(|&c| c == b'\n').next()?).ok()?;
        let mut f = text.split_whitespace();
        if (f.next()?, f.next()?) != ("memcgtest-host-load", "1") {
            return None;
        }
        let mut get = |key: &str| -> Option<String> {
            Some(f.next()?.strip_prefix(key)?.strip_prefix('=')?.to_string())
        };
        let seq = get("seq")?;
        let num = |s: Option<String>| s?.parse::<f64>().ok();
        let r = HostReading {
            t: num(get("t"))?,
            others_cpu: num(get("cpu"))?,
            others_dirtied: num(get("dirtied"))?,
            recent_cpus: num(get("recent_cpus"))?,
            recent_dirtied_bps: num(get("recent_bps"))?,
        };
        (get("end")? == seq).then_some(())?;
        Some((seq.parse().ok()?, r))
    }
}

/// The host's load over a step, from the readings before and after it: over the step itself
/// when it lasted a window or more on the host's clock, else over the window before `after`
/// (which covers the step).
pub fn between(before: &HostReading, after: &HostReading) -> HostLoad {
    let dt = after.t - before.t;
    let (cpus, bps, bytes) = if dt >= WINDOW {
        let dirtied = (after.others_dirtied - before.others_dirtied).max(0.0);
        (
            ((after.others_cpu - before.others_cpu) / dt).max(0.0),
            dirtied / dt,
            dirtied,
        )
    } else {
        let bps = after.recent_dirtied_bps;
        (after.recent_cpus, bps, bps * WINDOW)
    };
    HostLoad {
        cpus,
        dirtied_mb_s: bps / 1e6,
        dirtied_mb: bytes / 1e6,
    }
}

/// The guest's side: the device named by `ENV`, read now. None where there is none (not under
/// `memcgtest vm`), where the read failed or raced a write twice, or where the host has not
/// published for `STALE` (a reading that stopped changing says nothing about now).
pub fn read() -> Option<HostReading> {
    static DEV: OnceLock<Option<PathBuf>> = OnceLock::new();
    static LAST: Mutex<Option<(u64, Instant)>> = Mutex::new(None);
    let dev = DEV.get_or_init(|| std::env::var_os(ENV).map(PathBuf::from));
    let dev = dev.as_deref()?;
    let (seq, r) =
        (0..2).find_map(|_| read_block(dev).ok().and_then(|b| HostReading::decode(&b)))?;
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    let now = Instant::now();
    match *last {
        Some((s, since)) if s == seq => (now.duration_since(since) < STALE).then_some(r),
        _ => {
            *last = Some((seq, now));
            Some(r)
        }
    }
}

/// How long a reading may stay the same before the guest no longer believes it (the host
/// publishes every `PERIOD`).
const STALE: Duration = Duration::from_millis(1500);

/// KiB this process has read from the load disk: its O_DIRECT reads count in /proc/vmstat
/// pgpgin like any other, which the watchdog takes for the tasks' progress where the kernel
/// has no per-task I/O counts (it subtracts them).
static READ_KIB: AtomicU64 = AtomicU64::new(0);

/// KiB read from the load disk so far (see `READ_KIB`).
pub fn read_kib() -> u64 {
    READ_KIB.load(Ordering::Relaxed)
}

/// The first block of `dev`, read past the guest's page cache.
fn read_block(dev: &Path) -> std::io::Result<Vec<u8>> {
    #[repr(C, align(4096))]
    struct Aligned([u8; BLOCK]);
    let f = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)?;
    let mut buf = Box::new(Aligned([0; BLOCK]));
    READ_KIB.fetch_add(BLOCK as u64 / 1024, Ordering::Relaxed);
    f.read_exact_at(&mut buf.0, 0)?;
    Ok(buf.0.to_vec())
}

/// What the host's other processes have done so far: (user CPU seconds, bytes dirtied), the
/// machine's less `ours` (memcgtest itself and qemu's process group: qemu, or a wrapper and the
/// qemu it started). Bytes dirtied stay 0 where `writes` is false (qemu's own cannot be read).
fn others(proc_root: &Path, ours: &[i32], writes: bool) -> Option<(f64, f64)> {
    let m = proc::machine_counters(proc_root).ok()?;
    let own_cpu = user_seconds_of(proc_root, ours);
    let own_bytes: u64 = ours.iter().map(|&p| dirtied_bytes_of(proc_root, p)).sum();
    let page = proc::page_size() as f64;
    let bytes = m.dirtied_pages as f64 * page - own_bytes as f64;
    Some((m.user_seconds - own_cpu, if writes { bytes } else { 0.0 }))
}

/// The host's side, before qemu opens it: `file` as a block of zeros ("nothing yet").
pub fn create(file: &Path) -> Result<()> {
    std::fs::write(file, vec![0u8; BLOCK]).with_context(|| format!("create {}", file.display()))
}

/// The host's side: a thread that publishes a reading every `PERIOD` into `file` until dropped.
pub struct Publisher {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Publisher {
    /// Starts publishing into `file` (made by [`create`]) what processes other than this one
    /// and qemu's process group (`qemu` leads it) do. Where that cannot be known, says so on
    /// stderr and publishes less (nothing, or no writes): the guest then judges without it.
    pub fn start(file: &Path, qemu: i32) -> Publisher {
        let stop = Arc::new(AtomicBool::new(false));
        let out = match std::fs::File::options().write(true).open(file) {
            Ok(f) => f,
            Err(e) => {
                eprintln!(
                    "memcgtest vm: open {}: {e}; the guest will not see the host's load",
                    file.display()
                );
                return Publisher { stop, thread: None };
            }
        };
        let root = Path::new(proc::PROC);
        let writes = std::fs::read_to_string(root.join(qemu.to_string()).join("io")).is_ok();
        if !writes {
            eprintln!(
                "memcgtest vm: /proc/{qemu}/io cannot be read (no task I/O accounting?): the host's other writers are not judged, only their CPU"
            );
        }
        let flag = stop.clone();
        let me = std::process::id() as i32;
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            let mut ours = vec![me, qemu];
            let mut history: VecDeque<(f64, f64, f64)> = VecDeque::new();
            let Some(base) = others(root, &ours, writes) else {
                eprintln!(
                    "memcgtest vm: /proc/stat cannot be read: the guest will not see the host's load"
                );
                return;
            };
            let mut seq = 0u64;
            while !flag.load(Ordering::Relaxed) {
                // Once a second, who is qemu's (a wrapper may have started it as a child).
                if seq.is_multiple_of(10) {
                    ours = group_members(root, qemu);
                    ours.extend([me, qemu]);
                    ours.sort();
                    ours.dedup();
                }
                if let Some((cpu, bytes)) = others(root, &ours, writes) {
                    let t = start.elapsed().as_secs_f64();
                    let (cpu, bytes) = (cpu - base.0, bytes - base.1);
                    history.push_back((t, cpu, bytes));
                    while history.len() > 2 && t - history[1].0 >= WINDOW {
                        history.pop_front();
                    }
                    let (t0, c0, b0) = history[0];
                    let span = (t - t0).max(1e-3);
                    let r = HostReading {
                        t,
                        others_cpu: cpu,
                        others_dirtied: bytes,
                        recent_cpus: ((cpu - c0) / span).max(0.0),
                        recent_dirtied_bps: ((bytes - b0) / span).max(0.0),
                    };
                    seq += 1;
                    let _ = out.write_all_at(&r.encode(seq), 0);
                }
                std::thread::sleep(PERIOD);
            }
        });
        Publisher {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(t: f64, cpu: f64, dirtied: f64) -> HostReading {
        HostReading {
            t,
            others_cpu: cpu,
            others_dirtied: dirtied,
            recent_cpus: 0.5,
            recent_dirtied_bps: 2e6,
        }
    }

    #[test]
    fn a_line_decodes_whole_and_a_torn_one_not() {
        let r = reading(12.5, 3.25, 8192.0);
        let b = r.encode(7);
        assert_eq!(b.len(), BLOCK);
        assert_eq!(HostReading::decode(&b), Some((7, r)));
        assert_eq!(HostReading::decode(&[0u8; BLOCK]), None);
        // The first half of line 8 over line 7: the sequence numbers at the ends differ.
        let mut torn = r.encode(8);
        let n = torn.iter().position(|&c| c == b'r').unwrap();
        torn[n..].copy_from_slice(&b[n..]);
        assert_eq!(HostReading::decode(&torn), None);
    }

    #[test]
    fn a_long_step_is_judged_over_itself_a_short_one_over_the_window() {
        let load = |cpus, dirtied_mb_s, dirtied_mb| HostLoad {
            cpus,
            dirtied_mb_s,
            dirtied_mb,
        };
        // 2 s on the host's clock: 1 CPU-second and 4 MB by others.
        let l = between(&reading(10.0, 5.0, 0.0), &reading(12.0, 6.0, 4e6));
        assert_eq!(l, load(0.5, 2.0, 4.0));
        // 0.2 s: the last window's rates.
        let l = between(&reading(10.0, 5.0, 0.0), &reading(10.2, 5.0, 0.0));
        assert_eq!(l, load(0.5, 2.0, 2.0));
    }

    /// The publisher's file, read back as the guest would (through the page cache here).
    #[test]
    fn the_publisher_writes_readings_until_dropped() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("load");
        create(&f).unwrap();
        let p = Publisher::start(&f, std::process::id() as i32);
        std::thread::sleep(Duration::from_millis(350));
        drop(p);
        let (seq, r) = HostReading::decode(&std::fs::read(&f).unwrap()).expect("a reading");
        assert!(seq >= 2, "{seq}");
        assert!(r.t > 0.1 && r.t < 5.0, "{r:?}");
        assert!(r.recent_cpus >= 0.0 && r.recent_dirtied_bps >= 0.0);
    }
}
