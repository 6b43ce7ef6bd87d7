//! Steps in words, for the progress display, the records and error messages ("write 64.0 MiB to
//! data", "task t in p/a holds 8.0 MiB anon").

use super::{Hold, Step};
use crate::model::step::Target;
use crate::model::units::human_bytes;

/// A size in words ("64.0 MiB").
fn hb(b: u64) -> String {
    human_bytes(b as i64)
}

/// "per-CPU" for 0 clients, else the number.
fn clients_text(clients: u32) -> String {
    if clients == 0 {
        "per-CPU".to_string()
    } else {
        clients.to_string()
    }
}

impl Hold {
    /// What the task holds and how, in words.
    fn describe(&self) -> String {
        let mut held = Vec::new();
        if self.anon > 0 || self.shmem == 0 {
            held.push(format!("{} anon", hb(self.anon)));
        }
        if self.shmem > 0 {
            held.push(format!("{} of a memfd mapped and written", hb(self.shmem)));
        }
        let mut d = format!(
            "task {} in {} holds {}",
            self.task,
            self.cgroup,
            held.join(", ")
        );
        let how: Vec<&str> = [
            (self.huge, "in huge pages"),
            (self.mlock, "mlocked"),
            (self.zero, "zero-filled"),
            (self.lazyfree > 0, "partly MADV_FREE'd"),
            (self.shmem_huge, "shmem on a huge=always tmpfs"),
            (self.unkillable, "unkillable"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, w)| *w)
        .collect();
        if !how.is_empty() {
            d += &format!(" ({})", how.join(", "));
        }
        for (n, what) in [
            (self.threads, "threads"),
            (self.files, "files made"),
            (self.fds, "descriptors' table"),
            (self.pipes, "pipes"),
        ] {
            if n > 0 {
                d += &format!(", {n} {what}");
            }
        }
        if self.sock > 0 {
            d += &format!(", {} queued on a loopback TCP connection", hb(self.sock));
        }
        if self.sparse > 0 {
            d += &format!(", {} of address space touched every 2 MiB", hb(self.sparse));
        }
        if let Some(f) = &self.file {
            if self.size > 0 {
                d += &format!(
                    ", {} of {f} mapped{}",
                    hb(self.size),
                    match (self.dirty, self.redirty, self.readonly) {
                        (_, true, _) => " and dirtied over and over",
                        (true, false, _) => " and dirtied",
                        (false, false, true) => " read-only",
                        _ => "",
                    }
                );
            }
            if self.write > 0 {
                d += &format!(", rewriting {} of {f}.written", hb(self.write));
            }
        }
        d
    }
}

impl Step {
    /// The step in words (those that run in a group over time in `describe_group_step`).
    pub fn describe(&self) -> String {
        match self {
            Step::Write { size, file, .. } => format!("write {} to {file}", hb(*size)),
            Step::Sync => "sync".into(),
            Step::Fsync { file, .. } => format!("fsync {file}"),
            Step::Sleep(d) => format!("sleep {d:?}"),
            Step::Truncate { file, size, .. } => format!("truncate {file} to {size}"),
            Step::Unlink { file, .. } => format!("unlink {file}"),
            Step::Reclaim { cgroup, size, .. } => {
                format!("ask {cgroup}'s memory.reclaim for {}", hb(*size))
            }
            Step::MmapWrite { size, file, .. } => {
                format!("dirty {} of {file} through mmap", hb(*size))
            }
            Step::Probe { size, .. } => {
                format!("dirty probe: write {} with writeback held off", hb(*size))
            }
            Step::Hold(h) => h.describe(),
            Step::Move {
                task,
                to,
                thread: false,
            } => format!("move task {task} to {to}"),
            Step::Move { task, to, .. } => format!("move a thread of task {task} to {to}"),
            Step::Grow { task, anon } => format!("task {task} allocates {} more", hb(*anon)),
            Step::Wait { task } => format!("stop task {task}'s writer"),
            Step::Advise {
                task,
                advice,
                region,
            } => format!("task {task}: {} its {}", advice.name(), region.name()),
            Step::Migrate {
                task,
                region,
                node,
                by,
            } => {
                let to = match node {
                    Target::Away => "another node".to_string(),
                    Target::Node(n) => format!("node {n}"),
                };
                format!(
                    "task {task} moves its {} to {to} ({})",
                    region.name(),
                    by.name()
                )
            }
            Step::Cgroups { cgroup, count } => format!("make {count} empty groups below {cgroup}"),
            Step::Pressure { size, within } => format!(
                "kswapd reclaims {} machine-wide (min_free_kbytes raised), for at most {within:?}",
                hb(*size)
            ),
            Step::Khugepaged { within, task } => {
                let advised = match task {
                    Some(t) => format!("task {t} advises hugepage, "),
                    None => String::new(),
                };
                format!(
                    "{advised}khugepaged scans every 10 ms, two full scans in at most {within:?}"
                )
            }
            Step::Release { task } => format!("task {task} exits"),
            Step::Set {
                cgroup,
                file,
                value: Some(v),
                from,
            } => match from {
                Some(f) => format!("a task in {f} writes {v:?} to {cgroup}'s {file}"),
                None => format!("write {v:?} to {cgroup}'s {file}"),
            },
            Step::Set {
                cgroup,
                file,
                value: None,
                ..
            } => format!("read {cgroup}'s {file}"),
            Step::Drop { file, count } => {
                format!("drop {count} files {file}.N from the page cache (POSIX_FADV_DONTNEED)")
            }
            Step::Child { cgroup, file } => {
                format!("a new group below {cgroup} reads {file}.0 and is removed")
            }
            Step::Create { file, size, count } => {
                format!("create {count} files {file}.N of {}", hb(*size))
            }
            Step::Read { .. }
            | Step::Fault { .. }
            | Step::Usemem { .. }
            | Step::Await { .. }
            | Step::Exhaust { .. } => self.describe_group_step(),
        }
    }

    /// A step that runs in a group over time, in words: readers, fault and usemem clients, a
    /// wait on a counter, a task the group cannot hold.
    fn describe_group_step(&self) -> String {
        match self {
            Step::Read {
                cgroup,
                file,
                count,
                warm,
            } => format!(
                "{count} readers of {file}.N in {cgroup}, {} cache",
                if *warm { "warm" } else { "cold" }
            ),
            Step::Fault {
                cgroup,
                size,
                clients,
                duration,
            } => format!(
                "{} fault clients in {cgroup}, {} regions, {duration:?}",
                clients_text(*clients),
                hb(*size)
            ),
            Step::Usemem {
                cgroup,
                size,
                clients,
            } => format!(
                "usemem: {} clients in {cgroup} write {} of fresh anonymous memory",
                clients_text(*clients),
                hb(*size)
            ),
            Step::Await {
                cgroup,
                counter,
                size,
                within,
            } => format!(
                "wait up to {within:?} for {cgroup}.{counter} >= {}",
                hb(*size)
            ),
            Step::Exhaust {
                cgroup,
                anon,
                bystanders,
                within,
                immune,
                outside,
                raise,
            } => format!(
                "a task in {cgroup} touches {} of anon, more than the group can hold{}{}{}{}{}",
                hb(*anon),
                match bystanders {
                    0 => String::new(),
                    n => format!(", beside {n} small tasks"),
                },
                match immune {
                    0 => String::new(),
                    n => format!(", {n} at oom_score_adj -1000"),
                },
                match outside {
                    Some(g) => format!(", a task waiting in {g}"),
                    None => String::new(),
                },
                match raise {
                    Some(r) => format!(", its limit raised to {} if it waits", hb(*r)),
                    None => String::new(),
                },
                match within {
                    Some(d) => format!(", for at most {d:?}"),
                    None => String::new(),
                }
            ),
            _ => unreachable!("describe describes {} itself", self.kind()),
        }
    }
}
