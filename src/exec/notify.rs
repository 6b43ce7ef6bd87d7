//! The file-modified events of the groups' event files: cgroup v2 raises one on memory.events
//! (and memory.events.local, memory.swap.events) whenever a value in it changes (kernfs_notify,
//! at most every 10 ms per file): poll(2) reports POLLPRI on a descriptor that read the file
//! before, until it reads it again. A thread records when each came, for the `notifies` check.

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

/// One watched file: its group, its name, the descriptor that read it last.
struct Watched {
    group: String,
    file: &'static str,
    f: File,
}

impl Watched {
    /// Reads the file to its end from the start: the event seen so far is consumed.
    fn rearm(&mut self) {
        let mut s = String::new();
        let _ = self.f.rewind().and_then(|_| self.f.read_to_string(&mut s));
    }
}

impl Watcher {
    /// Watches the event files of `groups` the kernel has (none under cgroup v1), times from
    /// `t0`. None when there is none.
    pub fn start(groups: &[(String, Cgroup)], t0: Instant) -> Option<Watcher> {
        let mut watched = Vec::new();
        for (name, cg) in groups {
            for file in crate::model::record::EVENT_FILES {
                if let Ok(f) = File::open(cg.path.join(file)) {
                    let mut w = Watched {
                        group: name.clone(),
                        file,
                        f,
                    };
                    w.rearm();
                    watched.push(w);
                }
            }
        }
        if watched.is_empty() {
            return None;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || watch(watched, t0, &flag));
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
                .map(|w| PollFd::new(w.f.as_fd(), PollFlags::POLLPRI))
                .collect();
            if poll(&mut fds, PollTimeout::from(50u16)).unwrap_or(0) <= 0 {
                continue;
            }
            (fds.iter().enumerate())
                .filter(|(_, p)| p.revents().is_some_and(|r| !r.is_empty()))
                .map(|(i, _)| i)
                .collect()
        };
        let t = t0.elapsed().as_secs_f64();
        for i in ready {
            let w = &mut watched[i];
            out.push(Notice {
                t,
                group: w.group.clone(),
                file: w.file.to_string(),
            });
            w.rearm();
        }
    }
    out
}
