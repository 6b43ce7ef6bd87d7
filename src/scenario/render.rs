//! Scenario parts written back as scenario-file TOML: the inverse of the parser, for the
//! scenarios `explore` generates and shrinks (parse(render(x)) == x, a test holds it).

use std::time::Duration;

use super::{Antagonist, CgroupSpec, Hold, Phase, Step};
use crate::model::step::{Mover, Target};

/// A size as scenario files write it: the largest unit that divides it (`"64M"`, `"4K"`,
/// `"4097"`).
pub fn size(b: u64) -> String {
    for (unit, shift) in [("T", 40), ("G", 30), ("M", 20), ("K", 10)] {
        if b > 0 && b.trailing_zeros() >= shift {
            return format!("\"{}{unit}\"", b >> shift);
        }
    }
    format!("\"{b}\"")
}

/// A duration as scenario files write it: whole seconds or milliseconds.
pub fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("\"{}s\"", ms / 1000)
    } else {
        format!("\"{ms}ms\"")
    }
}

/// A TOML string (names and files are plain: `[A-Za-z0-9_./-]`).
fn s(v: &str) -> String {
    format!("\"{v}\"")
}

/// An inline table's `key = value` pairs, the action first.
struct Table(Vec<(&'static str, String)>);

impl Table {
    fn new(action: &str) -> Table {
        Table(vec![("action", s(action))])
    }
    fn with(mut self, key: &'static str, value: String) -> Table {
        self.0.push((key, value));
        self
    }
    fn flag(self, key: &'static str, on: bool) -> Table {
        if on {
            self.with(key, "true".into())
        } else {
            self
        }
    }
    fn bytes(self, key: &'static str, b: u64) -> Table {
        if b > 0 { self.with(key, size(b)) } else { self }
    }
    fn count(self, key: &'static str, n: u32) -> Table {
        if n > 0 {
            self.with(key, n.to_string())
        } else {
            self
        }
    }
    fn render(&self) -> String {
        let pairs: Vec<String> = self.0.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        format!("{{ {} }}", pairs.join(", "))
    }
}

impl Step {
    /// The step as an inline table of a phase's `steps`.
    pub fn to_toml(&self) -> String {
        let t = Table::new(self.kind().name());
        match self {
            Step::Write { .. }
            | Step::Fsync { .. }
            | Step::Unlink { .. }
            | Step::Truncate { .. }
            | Step::MmapWrite { .. }
            | Step::Probe { .. }
            | Step::Create { .. }
            | Step::Read { .. } => file_step(t, self),
            Step::Reclaim { .. }
            | Step::Fault { .. }
            | Step::Usemem { .. }
            | Step::Exhaust { .. }
            | Step::Await { .. }
            | Step::Cgroups { .. } => group_step(t, self),
            Step::Hold(h) => hold(t, h),
            Step::Move { task, to, thread } => {
                let t = t.with("task", s(task)).with("to", s(to));
                if *thread {
                    t.with("thread", "true".into())
                } else {
                    t
                }
            }
            Step::Grow { task, anon } => t.with("task", s(task)).with("anon", size(*anon)),
            Step::Wait { task } | Step::Release { task } => t.with("task", s(task)),
            Step::Advise {
                task,
                advice,
                region,
            } => t
                .with("task", s(task))
                .with("advice", s(advice.name()))
                .with("region", s(region.name())),
            Step::Migrate {
                task,
                region,
                node,
                by,
            } => {
                let t = t
                    .with("task", s(task))
                    .with("region", s(region.name()))
                    .with(
                        "node",
                        match node {
                            Target::Node(n) => n.to_string(),
                            Target::Away => s("away"),
                        },
                    );
                match by {
                    Mover::MovePages => t,
                    by => t.with("by", s(by.name())),
                }
            }
            Step::Sync => t,
            Step::Sleep(d) => t.with("duration", duration(*d)),
            Step::Pressure { size: n, within } => {
                t.with("size", size(*n)).with("duration", duration(*within))
            }
            Step::Khugepaged { within, task } => {
                let t = t.with("duration", duration(*within));
                match task {
                    Some(task) => t.with("task", s(task)),
                    None => t,
                }
            }
            Step::Drop { file, count } => t.with("file", s(file)).count("count", *count),
            Step::Child { cgroup, file } => t.with("cgroup", s(cgroup)).with("file", s(file)),
            Step::Set {
                cgroup,
                file,
                value,
                from,
            } => {
                let t = t.with("cgroup", s(cgroup)).with("file", s(file));
                let t = match from {
                    Some(f) => t.with("from", s(f)),
                    None => t,
                };
                match value {
                    Some(v) => t.with("value", s(v)),
                    None => t,
                }
            }
        }
        .render()
    }
}

/// The keys of a step on a file: writes, fsync, unlink, truncate, mmap writes, the dirty probe,
/// the files read steps read and the readers.
fn file_step(t: Table, step: &Step) -> Table {
    match step {
        Step::Write {
            cgroup,
            file,
            size: n,
            block_size,
            fsync,
            quick_size,
        } => t
            .with("cgroup", s(cgroup))
            .with("file", s(file))
            .with("size", size(*n))
            .with("block_size", size(*block_size))
            .flag("fsync", *fsync)
            .bytes("quick_size", quick_size.unwrap_or(0)),
        Step::Fsync { cgroup, file } | Step::Unlink { cgroup, file } => {
            t.with("cgroup", s(cgroup)).with("file", s(file))
        }
        Step::Truncate {
            cgroup,
            file,
            size: n,
        } => t
            .with("cgroup", s(cgroup))
            .with("file", s(file))
            .with("size", size(*n)),
        Step::MmapWrite {
            cgroup,
            file,
            size: n,
            hold,
        } => t
            .with("cgroup", s(cgroup))
            .with("file", s(file))
            .with("size", size(*n))
            .with("hold", duration(*hold)),
        Step::Probe {
            cgroup,
            file,
            size: n,
        } => t
            .with("cgroup", s(cgroup))
            .with("file", s(file))
            .with("size", size(*n)),
        Step::Create {
            file,
            size: n,
            count,
        } => t
            .with("file", s(file))
            .with("size", size(*n))
            .with("count", count.to_string()),
        Step::Read {
            cgroup,
            file,
            count,
            warm,
        } => t
            .with("cgroup", s(cgroup))
            .with("file", s(file))
            .with("count", count.to_string())
            .flag("warm", *warm),
        _ => unreachable!("to_toml renders {} itself", step.kind()),
    }
}

/// The keys of a step that works on a group: proactive reclaim, fault and usemem clients, a task
/// the group cannot hold, a wait on its counter, empty groups below it.
fn group_step(t: Table, step: &Step) -> Table {
    match step {
        Step::Reclaim {
            cgroup,
            size: n,
            checked,
        } => (t.with("cgroup", s(cgroup)).with("size", size(*n))).flag("checked", *checked),
        Step::Fault {
            cgroup,
            size: n,
            clients,
            duration: d,
        } => t
            .with("cgroup", s(cgroup))
            .with("size", size(*n))
            .with("clients", clients.to_string())
            .with("duration", duration(*d)),
        Step::Usemem {
            cgroup,
            size: n,
            clients,
        } => t
            .with("cgroup", s(cgroup))
            .with("size", size(*n))
            .with("clients", clients.to_string()),
        Step::Exhaust {
            cgroup,
            anon,
            bystanders,
            within,
            immune,
            outside,
            raise,
        } => {
            let t = t
                .with("cgroup", s(cgroup))
                .with("anon", size(*anon))
                .count("bystanders", *bystanders);
            let t = match within {
                Some(d) => t.with("duration", duration(*d)),
                None => t,
            };
            let t = t.count("immune", *immune);
            let t = match outside {
                Some(g) => t.with("outside", s(g)),
                None => t,
            };
            match raise {
                Some(r) => t.with("raise", size(*r)),
                None => t,
            }
        }
        Step::Await {
            cgroup,
            counter,
            size: n,
            within,
        } => t
            .with("cgroup", s(cgroup))
            .with("counter", s(counter))
            .with("size", size(*n))
            .with("duration", duration(*within)),
        Step::Cgroups { cgroup, count } => {
            t.with("cgroup", s(cgroup)).with("count", count.to_string())
        }
        _ => unreachable!("to_toml renders {} itself", step.kind()),
    }
}

/// The keys of a hold step: those of what it holds that are set.
fn hold(t: Table, h: &Hold) -> Table {
    let t = t
        .with("task", s(&h.task))
        .with("cgroup", s(&h.cgroup))
        .bytes("anon", h.anon)
        .bytes("shmem", h.shmem);
    let t = match &h.file {
        Some(f) => t.with("file", s(f)),
        None => t,
    };
    t.bytes("size", h.size)
        .flag("dirty", h.dirty)
        .flag("redirty", h.redirty)
        .bytes("write", h.write)
        .flag("huge", h.huge)
        .flag("mlock", h.mlock)
        .flag("zero", h.zero)
        .bytes("lazyfree", h.lazyfree)
        .flag("shmem_huge", h.shmem_huge)
        .count("threads", h.threads)
        .count("files", h.files)
        .count("fds", h.fds)
        .flag("readonly", h.readonly)
        .flag("nohugepage", h.nohugepage)
        .bytes("sock", h.sock)
        .bytes("sparse", h.sparse)
        .count("pipes", h.pipes)
        .bytes("pipe_size", h.pipe_size)
        .flag("unkillable", h.unkillable)
}

/// A `[[cgroup]]` table.
pub fn cgroup(c: &CgroupSpec) -> String {
    let mut out = format!("[[cgroup]]\nname = {}\n", s(&c.name));
    for (key, v) in [
        ("limit", c.limit),
        ("high", c.high),
        ("low", c.low),
        ("min", c.min),
        ("swap_high", c.swap_high),
    ] {
        if let Some(b) = v {
            out += &format!("{key} = {}\n", size(b));
        }
    }
    if let Some(m) = c.swap_max {
        out += &format!("swap_max = {}\n", size(m));
    }
    if !c.swap {
        out += "swap = false\n";
    }
    if c.oom_group {
        out += "oom_group = true\n";
    }
    if let Some(m) = c.move_charge {
        out += &format!("move_charge = {m}\n");
    }
    if !c.listen.is_empty() {
        let l: Vec<String> = c.listen.iter().map(|x| format!("{x:?}")).collect();
        out += &format!("listen = [{}]\n", l.join(", "));
    }
    out
}

/// A `[[phase]]` table, one step per line.
pub fn phase(p: &Phase) -> String {
    let mut out = format!("[[phase]]\nname = {}\n", s(&p.name));
    if p.repeat > 1 {
        out += &format!("repeat = {}\n", p.repeat);
    }
    if let Some(q) = p.quick_repeat {
        out += &format!("quick_repeat = {q}\n");
    }
    if p.warmup {
        out += "warmup = true\n";
    }
    if p.alternate {
        out += "alternate = true\n";
    }
    if !p.antagonists.is_empty() {
        let a: Vec<&str> = p
            .antagonists
            .iter()
            .map(|a| match a {
                Antagonist::Compaction => "{ kind = \"compaction\" }",
            })
            .collect();
        out += &format!("antagonists = [{}]\n", a.join(", "));
    }
    out += "steps = [\n";
    for st in &p.steps {
        out += &format!("  {},\n", st.to_toml());
    }
    out += "]\n";
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::step::{Advice, Region};

    #[test]
    fn sizes_and_durations_are_written_as_files_write_them() {
        assert_eq!(size(64 << 20), "\"64M\"");
        assert_eq!(size(4096), "\"4K\"");
        assert_eq!(size(4097), "\"4097\"");
        assert_eq!(size(3 << 30), "\"3G\"");
        assert_eq!(duration(Duration::from_millis(1500)), "\"1500ms\"");
        assert_eq!(duration(Duration::from_secs(2)), "\"2s\"");
    }

    /// A hold with every key set.
    fn every_hold() -> Hold {
        Hold {
            task: "t".into(),
            cgroup: "p/a".into(),
            anon: 8 << 20,
            shmem: 4 << 20,
            file: Some("f".into()),
            size: 4 << 20,
            dirty: true,
            redirty: true,
            write: 2 << 20,
            huge: true,
            mlock: true,
            zero: true,
            lazyfree: 1 << 20,
            shmem_huge: false,
            threads: 3,
            files: 10,
            fds: 100,
            readonly: false,
            nohugepage: false,
            sock: 1 << 20,
            sparse: 64 << 20,
            pipes: 4,
            pipe_size: 1 << 20,
            unkillable: true,
        }
    }

    /// One step of every kind, with every key set.
    fn every_step() -> Vec<Step> {
        let first = vec![
            Step::Write {
                cgroup: "p/a".into(),
                file: "f".into(),
                size: 8 << 20,
                block_size: 1 << 20,
                fsync: true,
                quick_size: Some(2 << 20),
            },
            Step::Sync,
            Step::Fsync {
                cgroup: "p".into(),
                file: "f".into(),
            },
            Step::Sleep(Duration::from_millis(250)),
            Step::Truncate {
                cgroup: "p".into(),
                file: "f".into(),
                size: 0,
            },
            Step::MmapWrite {
                cgroup: "p".into(),
                file: "m".into(),
                size: 4 << 20,
                hold: Duration::from_millis(100),
            },
        ];
        let rest = vec![
            Step::Create {
                file: "r".into(),
                size: 4 << 20,
                count: 2,
            },
            Step::Read {
                cgroup: "p".into(),
                file: "r".into(),
                count: 2,
                warm: true,
            },
            Step::Fault {
                cgroup: "p".into(),
                size: 8192,
                clients: 1,
                duration: Duration::from_millis(50),
            },
            Step::Usemem {
                cgroup: "p".into(),
                size: 8192,
                clients: 2,
            },
            Step::Unlink {
                cgroup: "p".into(),
                file: "f".into(),
            },
            Step::Exhaust {
                cgroup: "p/a".into(),
                anon: 64 << 20,
                bystanders: 1,
                within: None,
                immune: 1,
                outside: Some("p".into()),
                raise: None,
            },
            Step::Await {
                cgroup: "p".into(),
                counter: "dirty".into(),
                size: 1 << 20,
                within: Duration::from_secs(1),
            },
            Step::Cgroups {
                cgroup: "p".into(),
                count: 3,
            },
        ];
        [first, task_steps(), rest].concat()
    }

    /// Every step of a held task, from its hold to its release.
    fn task_steps() -> Vec<Step> {
        vec![
            Step::Hold(every_hold()),
            Step::Grow {
                task: "t".into(),
                anon: 1 << 20,
            },
            Step::Advise {
                task: "t".into(),
                advice: Advice::Pageout,
                region: Region::Anon,
            },
            Step::Migrate {
                task: "t".into(),
                region: Region::Shmem,
                node: Target::Node(1),
                by: Mover::Mbind,
            },
            Step::Migrate {
                task: "t".into(),
                region: Region::File,
                node: Target::Away,
                by: Mover::MigratePages,
            },
            Step::Move {
                task: "t".into(),
                to: "p".into(),
                thread: false,
            },
            Step::Wait { task: "t".into() },
            Step::Release { task: "t".into() },
        ]
    }

    /// Every step kind, written and read back, is the same step; so are groups and phases.
    #[test]
    fn steps_groups_and_phases_round_trip() {
        let steps = every_step();
        let phase = Phase {
            name: "all".into(),
            repeat: 1,
            quick_repeat: None,
            warmup: false,
            alternate: false,
            steps: steps.clone(),
            antagonists: vec![Antagonist::Compaction],
        };
        let groups = [
            CgroupSpec {
                name: "p".into(),
                limit: Some(256 << 20),
                swap: true,
                move_charge: Some(3),
                ..Default::default()
            },
            CgroupSpec {
                name: "p/a".into(),
                limit: Some(32 << 20),
                swap: false,
                ..Default::default()
            },
        ];
        let text = format!(
            "name = \"rt\"\nsummary = \"round trip\"\n[origin]\nsubject = \"x\"\n[requires]\ncgroup = [\"v1\"]\nwriteback = true\nfeatures = [\"numa\"]\n{}{}{}",
            cgroup(&groups[0]),
            cgroup(&groups[1]),
            super::phase(&phase)
        );
        let sc = crate::scenario::parse("rt.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(sc.phases[0].steps, steps, "{text}");
        assert_eq!(sc.phases[0].antagonists, phase.antagonists);
        assert_eq!(sc.cgroups[0].limit, groups[0].limit);
        assert_eq!(sc.cgroups[0].move_charge, Some(3));
        assert!(!sc.cgroups[1].swap);
    }
}
