//! The step table: each `[[phase]]` step's action, the keys it takes (the one list: unknown keys
//! are refused against it, the reference and the generators read it) and its reader. Adding a
//! step kind is one entry here, its `Step` variant (description, `--quick` scaling) and its
//! executor in `crate::exec`. The readers too long for an entry are in `steps/readers.rs`.

use std::cell::RefCell;
use std::ops::Range;
use std::time::Duration;

use toml::Spanned;

use super::{ScenarioError, Step};
use crate::model::StepKind;
use crate::model::source::{Key, Keys, Table, Text, key_table, opt, req};
use crate::model::units::MIN_INTERVAL;
use readers::{advise, await_counter, hold, migrate, write};

mod readers;

/// `cgroup`: required unless the scenario declares one group only.
const CGROUP: Key = opt(
    "cgroup",
    "the declared group the step runs in (may be left out when only one is declared)",
);
const FILE: Key = opt(
    "file",
    "a plain file name in the scenario's scratch directory (default `data`)",
);
const TASK: Key = req("task", "the held task's name ([A-Za-z0-9_-])");

/// One step kind: its action, its keys and its reader.
pub struct StepSyntax {
    pub kind: StepKind,
    /// What the step does, one line.
    pub doc: &'static str,
    pub keys: &'static [Key],
    read: fn(&StepArgs) -> Result<Step, ScenarioError>,
}

/// Every step kind, in `StepKind::ALL` order.
pub const STEPS: &[StepSyntax] = &[
    StepSyntax {
        kind: StepKind::Write,
        doc: "buffered writes like dd: unlink, create, write `size` bytes in `block_size` blocks",
        keys: &[
            CGROUP,
            FILE,
            req("size", "bytes to write"),
            opt("block_size", "bytes per write(2), 1..64M (default 1M)"),
            opt("fsync", "fsync(2) the file at the end (default false)"),
            opt(
                "quick_size",
                "bytes to write under `--quick`, at most `size` (default `size` / 8, at least `block_size`)",
            ),
        ],
        read: write,
    },
    StepSyntax {
        kind: StepKind::Sync,
        doc: "calls sync(2) from the helper group: every dirty page of the machine is written",
        keys: &[],
        read: |_| Ok(Step::Sync),
    },
    StepSyntax {
        kind: StepKind::Fsync,
        doc: "calls fsync(2) on one file",
        keys: &[CGROUP, FILE],
        read: |i| {
            Ok(Step::Fsync {
                cgroup: i.cgroup()?,
                file: i.file()?,
            })
        },
    },
    StepSyntax {
        kind: StepKind::Sleep,
        doc: "wait, sampling on",
        keys: &[req("duration", "how long")],
        read: |i| Ok(Step::Sleep(i.duration()?)),
    },
    StepSyntax {
        kind: StepKind::Truncate,
        doc: "truncate a file (0: drop all its pages, dirty ones included)",
        keys: &[CGROUP, FILE, opt("size", "the new size (default 0)")],
        read: |i| {
            Ok(Step::Truncate {
                cgroup: i.cgroup()?,
                file: i.file()?,
                size: i.size_or_zero("size")?,
            })
        },
    },
    StepSyntax {
        kind: StepKind::Unlink,
        doc: "unlink a file",
        keys: &[CGROUP, FILE],
        read: |i| {
            Ok(Step::Unlink {
                cgroup: i.cgroup()?,
                file: i.file()?,
            })
        },
    },
    StepSyntax {
        kind: StepKind::Reclaim,
        doc: "proactive reclaim: write `size` to the group's memory.reclaim (cgroup v2)",
        keys: &[
            CGROUP,
            req("size", "bytes to ask for"),
            opt(
                "checked",
                "the kernel answering EAGAIN (it reclaimed less than asked) does not stop the scenario: the checks on the step judge what it took (default false: a kernel error)",
            ),
        ],
        read: |i| {
            Ok(Step::Reclaim {
                cgroup: i.cgroup()?,
                size: i.positive_size("size")?,
                checked: i.flag("checked")?,
            })
        },
    },
    StepSyntax {
        kind: StepKind::MmapWrite,
        doc: "dirty `size` bytes through a shared file mapping, keep them dirty for `hold`, then msync",
        keys: &[
            CGROUP,
            FILE,
            req("size", "bytes to dirty"),
            opt(
                "hold",
                "how long the pages stay dirty before msync (default 1s)",
            ),
        ],
        read: |i| {
            Ok(Step::MmapWrite {
                cgroup: i.cgroup()?,
                file: i.file()?,
                size: i.positive_size("size")?,
                hold: i.get_duration("hold")?.unwrap_or(Duration::from_secs(1)),
            })
        },
    },
    StepSyntax {
        kind: StepKind::Probe,
        doc: "with writeback held off (sysctls raised for the step, restored after), write exactly `size` bytes: the group's dirty must show them",
        keys: &[
            CGROUP,
            opt("file", "a plain file name (default `probe`)"),
            req("size", "bytes to write"),
        ],
        read: |i| {
            Ok(Step::Probe {
                cgroup: i.cgroup()?,
                file: i.file_or("probe")?,
                size: i.positive_size("size")?,
            })
        },
    },
    StepSyntax {
        kind: StepKind::Hold,
        doc: "start a task that holds memory until it is released (anon, a memfd, a mapped file, a background writer)",
        keys: readers::HOLD_KEYS,
        read: hold,
    },
    StepSyntax {
        kind: StepKind::Advise,
        doc: "a held task applies advice to one of its mappings: `pageout` (MADV_PAGEOUT: reclaim it now), `cold` (MADV_COLD: deactivate it), `collapse` (MADV_COLLAPSE: into huge pages), `touch` (read every page again: swap-ins, refaults, references), `hugepage` (MADV_HUGEPAGE: khugepaged may collapse it)",
        keys: &[
            TASK,
            req(
                "advice",
                "`pageout`, `cold`, `collapse`, `touch` or `hugepage`",
            ),
            opt("region", "`anon` (default), `shmem` or `file`"),
        ],
        read: advise,
    },
    StepSyntax {
        kind: StepKind::Migrate,
        doc: "a held task moves every page of one of its mappings to NUMA node `node` with move_pages(2), mbind(2) or migrate_pages(2) (needs requires.features = [\"numa\"]); the step records how many of its pages are on each node then, and the group's memory.numa_stat and memory.stat, read right after: the `placed` check judges them",
        keys: &[
            TASK,
            opt("region", "`anon` (default), `shmem` or `file`"),
            req(
                "node",
                "the node to move to: 0..63, a node with memory; or `\"away\"`: from the node holding most of the pages now to the next node with memory (one such move leaves the pages off the node they were dirtied on, wherever that was)",
            ),
            opt(
                "by",
                "the system call: `move_pages` (default: the region's pages, listed), `mbind` (MPOL_BIND with MPOL_MF_MOVE over the region, the default policy restored right after: the pages only this task maps) or `migrate_pages` (every page of the task on another node, all its mappings: the region is only what the step records)",
            ),
        ],
        read: migrate,
    },
    StepSyntax {
        kind: StepKind::Pressure,
        doc: "on a machine of the run's own (requires.features = [\"dedicated\"]): vm.min_free_kbytes raised so that every NUMA node's low watermark is above its free memory (85 % of the free memory of the node with the most for its size, scaled to the machine; with one node, 85 % of its free memory), so kswapd reclaims from every group, until it has reclaimed `size` or `duration` passed; then restored",
        keys: &[
            req(
                "size",
                "what kswapd must reclaim (/proc/vmstat pgsteal_kswapd)",
            ),
            req("duration", "the longest it waits"),
        ],
        read: |i| {
            Ok(Step::Pressure {
                size: i.positive_size("size")?,
                within: i.duration()?,
            })
        },
    },
    StepSyntax {
        kind: StepKind::Khugepaged,
        doc: "on a machine of the run's own (requires.features = [\"dedicated\"]): khugepaged scans every 10 ms until it has made two full scans or `duration` passed; then its knobs are restored. It collapses what held tasks advised `hugepage`, charging the huge pages to their groups",
        keys: &[
            req("duration", "the longest it waits"),
            opt(
                "task",
                "a held task that advises MADV_HUGEPAGE on its anonymous memory at the step's start, once khugepaged's knobs are set (the advice wakes khugepaged, which collapses at once: so every collapse of that memory falls inside the step)",
            ),
        ],
        read: |i| {
            Ok(Step::Khugepaged {
                within: i.duration()?,
                task: i.task_opt()?,
            })
        },
    },
    StepSyntax {
        kind: StepKind::Cgroups,
        doc: "make `count` empty groups below `cgroup` (removed with the run): the kernel charges each one's per-CPU statistics to its parent (percpu); on cgroup v2 the group must hold no task",
        keys: &[CGROUP, req("count", "1..10000")],
        read: |i| {
            let n = i.need::<u32>("count")?;
            if !(1..=10_000).contains(n.get_ref()) {
                return Err(i.err(n.span(), "count must be 1..10000"));
            }
            Ok(Step::Cgroups {
                cgroup: i.cgroup()?,
                count: n.into_inner(),
            })
        },
    },
    StepSyntax {
        kind: StepKind::Move,
        doc: "move a held task to another group (its pid into cgroup.procs), timing the write",
        keys: &[
            TASK,
            req("to", "the declared group it moves to"),
            opt(
                "thread",
                "move one of the task's threads other than its leader only (cgroup v1: its tid into `tasks`; the task needs `threads`) (default false)",
            ),
        ],
        read: |i| {
            Ok(Step::Move {
                task: i.task()?,
                to: i.group("to")?,
                thread: i.flag("thread")?,
            })
        },
    },
    StepSyntax {
        kind: StepKind::Grow,
        doc: "a held task touches `anon` more bytes of anonymous memory where it is now",
        keys: &[TASK, req("anon", "bytes")],
        read: |i| {
            Ok(Step::Grow {
                task: i.task()?,
                anon: i.positive_size("anon")?,
            })
        },
    },
    StepSyntax {
        kind: StepKind::Wait,
        doc: "stop a held task's background writer (and redirtying) and wait for it",
        keys: &[TASK],
        read: |i| Ok(Step::Wait { task: i.task()? }),
    },
    StepSyntax {
        kind: StepKind::Release,
        doc: "a held task exits, freeing its memory",
        keys: &[TASK],
        read: |i| Ok(Step::Release { task: i.task()? }),
    },
    StepSyntax {
        kind: StepKind::Create,
        doc: "not measured: write `count` files `<file>.<i>` of `size` bytes in the helper group, on disk and not in the page cache, for read steps: written with O_DIRECT (no page-cache copy to make, write back and drop: in a TCG guest the copy costs more than the disk; a v2 quick suite's 38 creates took 18.6 s buffered, 8 s direct, 2026-12-07); where the filesystem refuses O_DIRECT (EINVAL) or `size` is not whole pages, written through the page cache, fsynced and dropped",
        keys: &[
            FILE,
            req("size", "bytes per file"),
            opt("count", "how many files, 1..64 (default 1)"),
        ],
        read: |i| {
            Ok(Step::Create {
                file: i.file()?,
                size: i.positive_size("size")?,
                count: i.count()?,
            })
        },
    },
    StepSyntax {
        kind: StepKind::Read,
        doc: "`count` readers in parallel, reader i streaming `<file>.<i>` from a cold cache (or a warm one); measured: bytes over the slowest reader",
        keys: &[
            CGROUP,
            FILE,
            opt("count", "how many readers, 1..64 (default 1)"),
            opt(
                "warm",
                "read what the page cache holds instead of dropping the file from it first: a second read references its pages (activation), evicted ones refault (default false)",
            ),
        ],
        read: |i| {
            Ok(Step::Read {
                cgroup: i.cgroup()?,
                file: i.file()?,
                count: i.count()?,
                warm: i.flag("warm")?,
            })
        },
    },
    StepSyntax {
        kind: StepKind::Fault,
        doc: "pft-style page-fault loop: each client maps `size` bytes of anonymous memory, touches every page, unmaps, for `duration`; measured: faults per second and per CPU-second",
        keys: &[
            CGROUP,
            req("size", "bytes per region, at least 4K"),
            opt("clients", "processes, 0..64, 0 = one per CPU (default 1)"),
            req(
                "duration",
                "how long, at least the sampling interval's minimum",
            ),
        ],
        read: |i| {
            let (clients, size) = i.clients_and_size()?;
            Ok(Step::Fault {
                cgroup: i.cgroup()?,
                size,
                clients,
                duration: i.duration_within(MIN_INTERVAL)?,
            })
        },
    },
    StepSyntax {
        kind: StepKind::Usemem,
        doc: "usemem: each client writes `size` bytes of fresh anonymous memory once; measured: MB/s over the slowest",
        keys: &[
            CGROUP,
            req("size", "bytes per client, at least 4K"),
            opt("clients", "processes, 0..64, 0 = one per CPU (default 1)"),
        ],
        read: |i| {
            let (clients, size) = i.clients_and_size()?;
            Ok(Step::Usemem {
                cgroup: i.cgroup()?,
                size,
                clients,
            })
        },
    },
    StepSyntax {
        kind: StepKind::Await,
        doc: "wait until the group's memory.stat `counter` is at least `size`, for at most `duration` (then go on: checks that need the state say it was not reached)",
        keys: &[
            CGROUP,
            req(
                "counter",
                "a memory.stat counter (dirty, writeback, file, anon, ...)",
            ),
            req("size", "the value to reach"),
            req("duration", "how long to wait at most"),
        ],
        read: await_counter,
    },
    StepSyntax {
        kind: StepKind::Exhaust,
        doc: "a task touches `anon` bytes of anonymous memory in a group that cannot hold them: the group's OOM killer must kill it (or memory.high throttle it)",
        keys: &[
            CGROUP,
            req("anon", "bytes the task touches"),
            opt(
                "bystanders",
                "small tasks (1 MiB of anon each) waiting in the group, 0..16 (default 0)",
            ),
            opt(
                "duration",
                "stop the task after this long if it is still touching memory (memory.high throttles it)",
            ),
            opt(
                "immune",
                "bystanders with oom_score_adj -1000 (no OOM kill may take them), 0..16 (default 0)",
            ),
            opt(
                "outside",
                "a declared group outside this one where a small task waits: an OOM here may not kill it",
            ),
            opt(
                "raise",
                "with `duration`: a task still running then gets its group's limit raised to this size and must finish (v1 oom_kill_disable); `duration` counts from when the group is at its limit (usage within 2 MiB of it), and a task at its limit gets one `duration` more to be under OOM, so a slow machine's task still on its way is not judged",
            ),
        ],
        read: |i| {
            let immune = match i.get::<u32>("immune")? {
                Some(b) if *b.get_ref() > 16 => {
                    return Err(i.err(b.span(), "immune must be 0..16"));
                }
                Some(b) => b.into_inner(),
                None => 0,
            };
            let outside = match i.get::<String>("outside")? {
                Some(_) => Some(i.group("outside")?),
                None => None,
            };
            let within = i.get_duration("duration")?;
            let raise = match i.get::<String>("raise")? {
                Some(r) if within.is_none() => {
                    return Err(i.err(
                        r.span(),
                        "raise needs duration: how long the task may wait first",
                    ));
                }
                Some(r) => Some(i.text().positive_size(&r, "raise")?),
                None => None,
            };
            Ok(Step::Exhaust {
                cgroup: i.cgroup()?,
                anon: i.positive_size("anon")?,
                bystanders: match i.get::<u32>("bystanders")? {
                    Some(b) if *b.get_ref() > 16 => {
                        return Err(i.err(b.span(), "bystanders must be 0..16"));
                    }
                    Some(b) => b.into_inner(),
                    None => 0,
                },
                within,
                immune,
                outside,
                raise,
            })
        },
    },
    StepSyntax {
        kind: StepKind::Set,
        doc: "write `value` to a file of the group (memory.max, memory.reclaim, memory.peak, v1 memory.soft_limit_in_bytes, ...), recording how the write ended and what the file reads before and after it, through a new descriptor and through the one written to; without `value`, only read the file. A write the kernel refuses does not stop the scenario: the `knob` check judges it",
        keys: &[
            CGROUP,
            req("file", "a `memory.*` file of the group"),
            opt(
                "value",
                "the text written (a size such as `\"32M\"`, `\"max\"`, `\"-1\"`, `\"8M swappiness=0\"`), or `\"current+1M\"`: what the group uses now (memory.current, v1 memory.usage_in_bytes) plus a size, a limit just above what its tasks hold; none: only read",
            ),
            opt(
                "from",
                "a declared group: a process forked into it makes the write, so what the write costs (reclaim in the writer's context, PSI) is that group's (default: the runner, outside the run's groups)",
            ),
        ],
        read: |i| {
            let f = i.need::<String>("file")?;
            let file = f.get_ref();
            let plain = file
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._".contains(&b));
            if !file.starts_with("memory.") || !plain {
                return Err(i.err(
                    f.span(),
                    "file must be a memory.* file of the group ([a-z0-9._])",
                ));
            }
            let value = match i.get::<String>("value")? {
                Some(v) => {
                    let text = i.text().one_line(&v, "value")?;
                    if let Some(Err(e)) = crate::model::step::plus_current(&text) {
                        return Err(i.err(v.span(), e));
                    }
                    Some(text)
                }
                None => None,
            };
            let root = i
                .get::<String>("cgroup")?
                .is_some_and(|c| c.get_ref() == super::ROOT);
            Ok(Step::Set {
                cgroup: if root {
                    super::ROOT.to_string()
                } else {
                    i.cgroup()?
                },
                file: file.clone(),
                from: match i.get::<String>("from")? {
                    Some(f) if value.is_none() => {
                        return Err(i.err(f.span(), "from names who writes: it needs a value"));
                    }
                    Some(_) => Some(i.group("from")?),
                    None => None,
                },
                value,
            })
        },
    },
    StepSyntax {
        kind: StepKind::Drop,
        doc: "POSIX_FADV_DONTNEED over `count` files `<file>.<i>` from the runner: their clean pages leave the page cache, and the groups charged for them",
        keys: &[FILE, opt("count", "how many files, 1..64 (default 1)")],
        read: |i| {
            Ok(Step::Drop {
                file: i.file()?,
                count: i.count()?,
            })
        },
    },
    StepSyntax {
        kind: StepKind::Child,
        doc: "make a group of its own below `cgroup`, stream `<file>.0` into the page cache from a reader in it, then remove the group (rmdir) with the pages it was charged",
        keys: &[CGROUP, FILE],
        read: |i| {
            Ok(Step::Child {
                cgroup: i.cgroup()?,
                file: i.file()?,
            })
        },
    },
];

/// The step reference (docs/steps.md), generated from `STEPS`.
pub fn reference() -> String {
    let mut s = String::from(
        "# Step actions

Every action a `[[phase]]` step can take, with its keys. Generated from the step table (`STEPS`
in src/scenario/steps.rs); `cargo test --test docs` fails when this page and the code differ, and
`MEMCGTEST_WRITE_DOCS=1 cargo test --test docs` writes it anew. Back to the
[README](../README.md); the file format is in [scenario-format.md](scenario-format.md).

A step is a table with `action` and the keys of that action, inline
(`steps = [{ action = \"write\", cgroup = \"test\", size = \"64M\" }]`) or as `[[phase.steps]]`;
any other key is an error at that key (`action \"sync\" takes no \"counter\"`). Sizes are strings
(`\"64M\"`, at most 1 TiB), durations too (`\"10s\"`, at most a day). Files are plain names in the
scenario's own scratch directory. A task is started by `hold` and named by the steps that use it.
",
    );
    for st in STEPS {
        s += &format!("\n## {}\n\n{}.\n\n", st.kind, capitalized(st.doc));
        s += &key_table(st.keys, "action");
    }
    s
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// The syntax of a kind.
pub fn syntax(kind: StepKind) -> &'static StepSyntax {
    STEPS
        .iter()
        .find(|s| s.kind == kind)
        .expect("every kind has an entry")
}

/// One step table as its kind's reader reads it: typed values of its keys (only those of the
/// kind's list), the scenario's declared groups.
pub(super) struct StepArgs<'a> {
    keys: Keys<'a>,
    syntax: &'static StepSyntax,
    groups: &'a [String],
    /// The keys the reader asked for (the table tests check it reads all of its list).
    read: RefCell<Vec<&'static str>>,
}

impl StepArgs<'_> {
    fn key(&self, name: &str) -> &'static str {
        let key = self
            .syntax
            .keys
            .iter()
            .find(|k| k.name == name)
            .unwrap_or_else(|| panic!("{} reads {name:?}, not in its keys", self.syntax.kind));
        self.read.borrow_mut().push(key.name);
        key.name
    }
    fn err(&self, span: Range<usize>, msg: impl Into<String>) -> ScenarioError {
        self.keys.err(span, msg)
    }
    fn get<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
    ) -> Result<Option<Spanned<T>>, ScenarioError> {
        self.keys.get(self.key(name))
    }
    fn need<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
    ) -> Result<Spanned<T>, ScenarioError> {
        self.keys.need(self.key(name))
    }
    fn text(&self) -> &Text<'_> {
        &self.keys.text
    }
    /// A declared group named by `key`; for `cgroup`, the only declared group when not set.
    fn group(&self, key: &str) -> Result<String, ScenarioError> {
        match self.get::<String>(key)? {
            Some(s) if self.groups.contains(s.get_ref()) => Ok(s.into_inner()),
            Some(s) => Err(self.err(
                s.span(),
                format!("no cgroup named {:?} is declared", s.get_ref()),
            )),
            None if key == "cgroup" && self.groups.len() == 1 => Ok(self.groups[0].clone()),
            None if key == "cgroup" && self.groups.is_empty() => Err(self.err(
                self.keys.span.clone(),
                "no [[cgroup]] is declared: add one, and cgroup = \"...\" here",
            )),
            None if key == "cgroup" => Err(self.err(
                self.keys.span.clone(),
                "which cgroup? add cgroup = \"...\" (more than one is declared)",
            )),
            None => Err(self.err(
                self.keys.span.clone(),
                format!("{} needs {key:?}", self.keys.what),
            )),
        }
    }
    fn cgroup(&self) -> Result<String, ScenarioError> {
        self.group("cgroup")
    }
    fn task(&self) -> Result<String, ScenarioError> {
        let t = self.need::<String>("task")?;
        task_name(self.text(), &t)
    }
    /// `task` when set.
    fn task_opt(&self) -> Result<Option<String>, ScenarioError> {
        match self.get::<String>("task")? {
            Some(t) => task_name(self.text(), &t).map(Some),
            None => Ok(None),
        }
    }
    /// `file`: a plain name inside the scratch directory, `data` when not set.
    fn file(&self) -> Result<String, ScenarioError> {
        self.file_or("data")
    }
    fn file_or(&self, default: &str) -> Result<String, ScenarioError> {
        match self.get::<String>("file")? {
            Some(f) => file_name(self.text(), &f),
            None => Ok(default.to_string()),
        }
    }
    /// A size, 0 when not set.
    fn size_or_zero(&self, key: &str) -> Result<u64, ScenarioError> {
        Ok(self
            .get::<String>(key)?
            .map(|x| self.text().size(&x))
            .transpose()?
            .unwrap_or(0))
    }
    /// A size that must be set, more than 0.
    fn positive_size(&self, key: &str) -> Result<u64, ScenarioError> {
        let s = self.need::<String>(key)?;
        self.text().positive_size(&s, key)
    }
    fn get_duration(&self, key: &str) -> Result<Option<Duration>, ScenarioError> {
        self.get::<String>(key)?
            .map(|d| self.text().duration(&d))
            .transpose()
    }
    fn duration(&self) -> Result<Duration, ScenarioError> {
        self.duration_within(Duration::ZERO)
    }
    fn duration_within(&self, min: Duration) -> Result<Duration, ScenarioError> {
        let d = self.need::<String>("duration")?;
        self.text().duration_within(&d, min)
    }
    fn flag(&self, key: &str) -> Result<bool, ScenarioError> {
        Ok(self.get::<bool>(key)?.is_some_and(|b| b.into_inner()))
    }
    /// `count` of create and read: 1..64, default 1.
    fn count(&self) -> Result<u32, ScenarioError> {
        Ok(match self.get::<u32>("count")? {
            Some(c) if *c.get_ref() == 0 || *c.get_ref() > 64 => {
                return Err(self.err(c.span(), "count must be 1..64"));
            }
            Some(c) => c.into_inner(),
            None => 1,
        })
    }
    /// `clients` (0..64, 0: one per CPU, default 1) and `size` (at least 4K) of fault and usemem.
    fn clients_and_size(&self) -> Result<(u32, u64), ScenarioError> {
        let clients = match self.get::<u32>("clients")? {
            Some(c) if *c.get_ref() > 64 => {
                return Err(self.err(c.span(), "clients must be 0..64 (0: one per CPU)"));
            }
            Some(c) => c.into_inner(),
            None => 1,
        };
        let s = self.need::<String>("size")?;
        let size = self.text().size(&s)?;
        if size < 4096 {
            return Err(self.err(s.span(), "size must be at least 4K"));
        }
        Ok((clients, size))
    }
}

/// Reads one step table: its `action` picks the kind, whose keys only it may carry.
pub(super) fn read_step(
    text: Text,
    table: &Spanned<Table>,
    groups: &[String],
) -> Result<Step, ScenarioError> {
    let Some((_, action)) = table
        .get_ref()
        .iter()
        .find(|(k, _)| k.get_ref() == "action")
    else {
        return Err(text.err(table.span(), "missing field `action`"));
    };
    let name: String = text.typed(action)?;
    let Some(kind) = StepKind::parse(&name) else {
        return Err(text.err(
            action.span(),
            format!("unknown action {name:?} (known: {})", StepKind::names()),
        ));
    };
    let syntax = syntax(kind);
    let args = StepArgs {
        keys: Keys {
            text,
            table: table.get_ref(),
            span: table.span(),
            what: format!("action {name:?}"),
            tag: "action",
        },
        syntax,
        groups,
        read: RefCell::new(Vec::new()),
    };
    let names: Vec<&str> = syntax.keys.iter().map(|k| k.name).collect();
    args.keys.only(&names)?;
    (syntax.read)(&args)
}

/// A file name: a plain name inside the scratch directory.
fn file_name(text: &Text, f: &Spanned<String>) -> Result<String, ScenarioError> {
    let n = f.get_ref();
    let ok = !n.is_empty()
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && !n.starts_with('.');
    if ok {
        Ok(n.clone())
    } else {
        Err(text.err(
            f.span(),
            "file must be a plain name inside the scratch directory",
        ))
    }
}

/// A task's name: [A-Za-z0-9_-].
pub(super) fn task_name(text: &Text, t: &Spanned<String>) -> Result<String, ScenarioError> {
    if crate::model::source::is_name(t.get_ref()) {
        Ok(t.get_ref().clone())
    } else {
        Err(text.err(t.span(), "task name must be [A-Za-z0-9_-]"))
    }
}

#[cfg(test)]
mod tests;
