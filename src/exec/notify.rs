//! The file-modified events of the groups' event files: cgroup v2 raises one on memory.events
//! (and memory.events.local, memory.swap.events) whenever a value in it changes (kernfs_notify,
//! at most every 10 ms per file): poll(2) reports POLLPRI on a descriptor that read the file
//! before, until it reads it again. And cgroup v1's notifications: an eventfd registered with a
//! group's cgroup.event_control (a usage threshold, an OOM, a pressure level) becomes readable
//! when the kernel signals it. A thread records when each came, for the `notifies` and
//! `notified` checks.

use std::fs::File;
use std::io::{Read, Seek};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::model::Notice;
use crate::sys::cgroup::Cgroup;

/// A running watcher; `stop` returns what it saw.
pub struct Watcher {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Notice>>,
}

/// One watched file or eventfd: its group, its name (or the listener), the descriptor polled,
/// and for a listener the file it listens on (kept open while registered).
struct Watched {
    group: String,
    file: String,
    f: File,
    eventfd: bool,
    _target: Option<File>,
}

impl Watched {
    /// Consumes what was signalled: reads the event file to its end from the start (1), or the
    /// eventfd's 8-byte count of signals (at least 1).
    fn rearm(&mut self) -> u64 {
        if self.eventfd {
            let mut count = [0u8; 8];
            match self.f.read(&mut count) {
                Ok(8) => u64::from_ne_bytes(count).max(1),
                _ => 1,
            }
        } else {
            let mut s = String::new();
            let _ = self.f.rewind().and_then(|_| self.f.read_to_string(&mut s));
            1
        }
    }

    fn events(&self) -> PollFlags {
        if self.eventfd {
            PollFlags::POLLIN
        } else {
            PollFlags::POLLPRI
        }
    }
}

/// Registers `listen` (`memory.oom_control`, `memory.usage_in_bytes 32M`, ...) for `cg`: an
/// eventfd, the file listened on, and "<eventfd> <fd> <argument>" written to cgroup.event_control.
fn listener(group: &str, cg: &Cgroup, listen: &str) -> Result<Watched, String> {
    use std::io::Write;
    use std::os::fd::{AsRawFd, FromRawFd};
    let (file, arg) = listen.split_once(' ').unwrap_or((listen, ""));
    let target = File::open(cg.path.join(file)).map_err(|e| format!("open {file}: {e}"))?;
    // SAFETY: eventfd(2) returns a new descriptor we own, or -1.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(format!("eventfd: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    let f = unsafe { File::from_raw_fd(fd) };
    let line = format!("{} {} {arg}", f.as_raw_fd(), target.as_raw_fd());
    let control = cg.path.join("cgroup.event_control");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&control)
        .and_then(|mut c| c.write_all(line.trim_end().as_bytes()))
        .map_err(|e| format!("write {line:?} to cgroup.event_control: {e}"))?;
    Ok(Watched {
        group: group.to_string(),
        file: listen.to_string(),
        f,
        eventfd: true,
        _target: Some(target),
    })
}

impl Watcher {
    /// Watches the event files of `groups` the kernel has (none under cgroup v1) and registers
    /// the v1 listeners their specs name, times from `t0`. None when there is nothing to watch.
    pub fn start(
        groups: &[(String, Cgroup)],
        specs: &[crate::model::CgroupSpec],
        t0: Instant,
    ) -> Option<Watcher> {
        let mut watched = Vec::new();
        let mut refused = Vec::new();
        for (name, cg) in groups {
            for file in crate::model::record::EVENT_FILES {
                if let Ok(f) = File::open(cg.path.join(file)) {
                    let mut w = Watched {
                        group: name.clone(),
                        file: file.to_string(),
                        f,
                        eventfd: false,
                        _target: None,
                    };
                    w.rearm();
                    watched.push(w);
                }
            }
            let listens = specs
                .iter()
                .filter(|s| &s.name == name)
                .flat_map(|s| &s.listen);
            for l in listens {
                match listener(name, cg, l) {
                    Ok(w) => watched.push(w),
                    Err(why) => refused.push(Notice {
                        t: 0.0,
                        group: name.clone(),
                        file: l.clone(),
                        count: 0,
                        refused: Some(why),
                    }),
                }
            }
        }
        if watched.is_empty() && refused.is_empty() {
            return None;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut seen = refused;
            seen.extend(watch(watched, t0, &flag));
            seen
        });
        Some(Watcher { stop, thread })
    }

    /// Stops the thread; the notices it recorded, in time order.
    pub fn stop(self) -> Vec<Notice> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

fn watch(mut watched: Vec<Watched>, t0: Instant, stop: &AtomicBool) -> Vec<Notice> {
    let mut out = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let ready: Vec<usize> = {
            let mut fds: Vec<PollFd> = (watched.iter())
                .map(|w| PollFd::new(w.f.as_fd(), w.events()))
                .collect();
            if poll(&mut fds, PollTimeout::from(50u16)).unwrap_or(0) <= 0 {
                continue;
            }
            (fds.iter().enumerate())
                .filter(|(_, p)| p.revents().is_some_and(|r| !r.is_empty()))
                .map(|(i, _)| i)
                .collect()
        };
        for i in ready {
            let w = &mut watched[i];
            let count = w.rearm();
            // The time of the read that re-armed the file, not of poll's return: the read takes
            // every notification up to it (kernfs keeps the count a reader last saw), so one that
            // came between the two, for a count that rose meanwhile, is this notice's too. Timed
            // at poll's return, such a rise had no event after it (6.12 v2, protection-rules: g's
            // max count rose in the 6 ms before the read and no more after).
            let t = t0.elapsed().as_secs_f64();
            out.push(Notice {
                t,
                group: w.group.clone(),
                file: w.file.clone(),
                count,
                refused: None,
            });
        }
    }
    out
}
