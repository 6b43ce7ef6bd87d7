//! The step table: each `[[phase.step]]` action, the keys it takes and how it is resolved. Adding
//! a step kind is one entry here, its `Step` variant (description, `--quick` scaling) and its
//! executor in the runner.

use std::time::Duration;

use toml::Spanned;

use super::raw::RawStep;
use super::resolve::{Ctx, task_name};
use super::{ScenarioError, Step};
use crate::units::MIN_INTERVAL;

pub(super) type CgroupRef<'a> =
    dyn Fn(&Option<Spanned<String>>, std::ops::Range<usize>) -> Result<String, ScenarioError> + 'a;

/// One step kind: its action name, the keys it takes (anything else set is an error at that key)
/// and its resolver.
pub struct StepKind {
    pub action: &'static str,
    pub keys: &'static [&'static str],
    resolve: fn(&Input) -> Result<Step, ScenarioError>,
}

/// Every step kind, in the order the unknown-action error lists them.
pub const STEPS: &[StepKind] = &[
    StepKind {
        action: "write",
        keys: &["cgroup", "file", "size", "block_size", "fsync"],
        resolve: write,
    },
    StepKind {
        action: "sync",
        keys: &[],
        resolve: |_| Ok(Step::Sync),
    },
    StepKind {
        action: "fsync",
        keys: &["cgroup", "file"],
        resolve: fsync,
    },
    StepKind {
        action: "sleep",
        keys: &["duration"],
        resolve: sleep,
    },
    StepKind {
        action: "truncate",
        keys: &["cgroup", "file", "size"],
        resolve: truncate,
    },
    StepKind {
        action: "unlink",
        keys: &["cgroup", "file"],
        resolve: unlink,
    },
    StepKind {
        action: "reclaim",
        keys: &["cgroup", "size"],
        resolve: |i| {
            Ok(Step::Reclaim {
                cgroup: i.cgroup()?,
                size: i.positive_size()?,
            })
        },
    },
    StepKind {
        action: "mmap-write",
        keys: &["cgroup", "file", "size", "hold"],
        resolve: mmap_write,
    },
    StepKind {
        action: "probe",
        keys: &["cgroup", "file", "size"],
        resolve: probe,
    },
    StepKind {
        action: "hold",
        keys: &[
            "task", "cgroup", "anon", "shmem", "file", "size", "dirty", "redirty", "write",
        ],
        resolve: hold,
    },
    StepKind {
        action: "move",
        keys: &["task", "to"],
        resolve: move_task,
    },
    StepKind {
        action: "grow",
        keys: &["task", "anon"],
        resolve: grow,
    },
    StepKind {
        action: "wait",
        keys: &["task"],
        resolve: wait,
    },
    StepKind {
        action: "release",
        keys: &["task"],
        resolve: release,
    },
    StepKind {
        action: "create",
        keys: &["file", "size", "count"],
        resolve: create,
    },
    StepKind {
        action: "read",
        keys: &["cgroup", "file", "count"],
        resolve: read,
    },
    StepKind {
        action: "fault",
        keys: &["cgroup", "size", "clients", "duration"],
        resolve: fault,
    },
    StepKind {
        action: "usemem",
        keys: &["cgroup", "size", "clients"],
        resolve: usemem,
    },
    StepKind {
        action: "await",
        keys: &["cgroup", "counter", "size", "duration"],
        resolve: await_counter,
    },
    StepKind {
        action: "exhaust",
        keys: &["cgroup", "anon", "bystanders", "duration"],
        resolve: |i| {
            Ok(Step::Exhaust {
                cgroup: i.cgroup()?,
                anon: i.cx.positive_size(&i.need(&i.r.anon, "anon")?, "anon")?,
                bystanders: match &i.r.bystanders {
                    Some(b) if *b.get_ref() > 16 => {
                        return Err(i.cx.err(b.span(), "bystanders must be 0..16"));
                    }
                    Some(b) => *b.get_ref(),
                    None => 0,
                },
                within: match &i.r.duration {
                    Some(d) => Some(i.cx.duration(d)?),
                    None => None,
                },
            })
        },
    },
];

/// What a step kind's resolver reads: the raw step and the scenario-wide resolvers.
struct Input<'a, 'b> {
    cx: &'a Ctx<'b>,
    s: &'a Spanned<RawStep>,
    r: &'a RawStep,
    action: &'a str,
    cgroup_ref: &'a CgroupRef<'b>,
}

impl Input<'_, '_> {
    fn need(
        &self,
        v: &Option<Spanned<String>>,
        key: &str,
    ) -> Result<Spanned<String>, ScenarioError> {
        v.clone().ok_or_else(|| {
            self.cx.err(
                self.s.span(),
                format!("action {:?} needs {key:?}", self.action),
            )
        })
    }
    fn file_name(&self, f: &Option<Spanned<String>>) -> Result<String, ScenarioError> {
        let f = f
            .clone()
            .unwrap_or_else(|| Spanned::new(0..0, "data".to_string()));
        let ok = !f.get_ref().is_empty()
            && f.get_ref()
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && !f.get_ref().starts_with('.');
        if ok {
            Ok(f.get_ref().clone())
        } else {
            Err(self.cx.err(
                f.span(),
                "file must be a plain name inside the scratch directory",
            ))
        }
    }
    /// The step's `cgroup`.
    fn cgroup(&self) -> Result<String, ScenarioError> {
        (self.cgroup_ref)(&self.r.cgroup, self.s.span())
    }
    fn task(&self) -> Result<String, ScenarioError> {
        task_name(self.cx, &self.need(&self.r.task, "task")?)
    }
    /// An optional size, 0 when not given.
    fn size_or_zero(&self, v: &Option<Spanned<String>>) -> Result<u64, ScenarioError> {
        Ok(v.as_ref()
            .map(|x| self.cx.size(x))
            .transpose()?
            .unwrap_or(0))
    }
    /// The `size` a step must have, more than 0.
    fn positive_size(&self) -> Result<u64, ScenarioError> {
        self.cx
            .positive_size(&self.need(&self.r.size, "size")?, "size")
    }
}

pub(super) fn resolve_step(
    cx: &Ctx,
    s: &Spanned<RawStep>,
    cgroup_ref: &CgroupRef,
) -> Result<Step, ScenarioError> {
    let r = s.get_ref();
    let action = r.action.get_ref().as_str();
    let Some(kind) = STEPS.iter().find(|k| k.action == action) else {
        let known: Vec<&str> = STEPS.iter().map(|k| k.action).collect();
        return Err(cx.err(
            r.action.span(),
            format!("unknown action {action:?} (known: {})", known.join(", ")),
        ));
    };
    let present: [(&str, Option<std::ops::Range<usize>>); 15] = [
        ("cgroup", r.cgroup.as_ref().map(|x| x.span())),
        ("file", r.file.as_ref().map(|x| x.span())),
        ("size", r.size.as_ref().map(|x| x.span())),
        ("block_size", r.block_size.as_ref().map(|x| x.span())),
        ("fsync", r.fsync.as_ref().map(|x| x.span())),
        ("duration", r.duration.as_ref().map(|x| x.span())),
        ("hold", r.hold.as_ref().map(|x| x.span())),
        ("task", r.task.as_ref().map(|x| x.span())),
        ("to", r.to.as_ref().map(|x| x.span())),
        ("anon", r.anon.as_ref().map(|x| x.span())),
        ("dirty", r.dirty.as_ref().map(|x| x.span())),
        ("redirty", r.redirty.as_ref().map(|x| x.span())),
        ("write", r.write.as_ref().map(|x| x.span())),
        ("count", r.count.as_ref().map(|x| x.span())),
        ("clients", r.clients.as_ref().map(|x| x.span())),
    ];
    for (key, span) in present {
        if let Some(span) = span
            && !kind.keys.contains(&key)
        {
            return Err(cx.err(span, format!("action {action:?} takes no {key:?}")));
        }
    }
    (kind.resolve)(&Input {
        cx,
        s,
        r,
        action,
        cgroup_ref,
    })
}

fn write(i: &Input) -> Result<Step, ScenarioError> {
    let size = i.positive_size()?;
    let block_size = match &i.r.block_size {
        Some(b) => i.cx.size(b)?,
        None => 1 << 20,
    };
    if block_size == 0 || block_size > 64 << 20 {
        return Err(i.cx.err(
            i.r.block_size.as_ref().unwrap().span(),
            "block_size must be 1..64M",
        ));
    }
    Ok(Step::Write {
        cgroup: i.cgroup()?,
        file: i.file_name(&i.r.file)?,
        size,
        block_size,
        fsync: i.r.fsync.as_ref().map(|f| *f.get_ref()).unwrap_or(false),
    })
}

fn fsync(i: &Input) -> Result<Step, ScenarioError> {
    Ok(Step::Fsync {
        cgroup: i.cgroup()?,
        file: i.file_name(&i.r.file)?,
    })
}

fn sleep(i: &Input) -> Result<Step, ScenarioError> {
    Ok(Step::Sleep(
        i.cx.duration(&i.need(&i.r.duration, "duration")?)?,
    ))
}

fn truncate(i: &Input) -> Result<Step, ScenarioError> {
    Ok(Step::Truncate {
        cgroup: i.cgroup()?,
        file: i.file_name(&i.r.file)?,
        size: i.size_or_zero(&i.r.size)?,
    })
}

fn unlink(i: &Input) -> Result<Step, ScenarioError> {
    Ok(Step::Unlink {
        cgroup: i.cgroup()?,
        file: i.file_name(&i.r.file)?,
    })
}

fn mmap_write(i: &Input) -> Result<Step, ScenarioError> {
    Ok(Step::MmapWrite {
        cgroup: i.cgroup()?,
        file: i.file_name(&i.r.file)?,
        size: i.positive_size()?,
        hold: i
            .r
            .hold
            .as_ref()
            .map(|h| i.cx.duration(h))
            .transpose()?
            .unwrap_or(Duration::from_secs(1)),
    })
}

fn probe(i: &Input) -> Result<Step, ScenarioError> {
    Ok(Step::Probe {
        cgroup: i.cgroup()?,
        file: i
            .r
            .file
            .as_ref()
            .map(|_| i.file_name(&i.r.file))
            .transpose()?
            .unwrap_or_else(|| "probe".into()),
        size: i.positive_size()?,
    })
}

fn hold(i: &Input) -> Result<Step, ScenarioError> {
    let r = i.r;
    let size = i.size_or_zero(&r.size)?;
    let write = i.size_or_zero(&r.write)?;
    if (size > 0 || write > 0) && r.file.is_none() {
        return Err(i
            .cx
            .err(i.s.span(), "a hold with size or write needs a file"));
    }
    let dirty = r.dirty.as_ref().map(|d| *d.get_ref()).unwrap_or(false);
    let redirty = r.redirty.as_ref().map(|d| *d.get_ref()).unwrap_or(false);
    if redirty && (size == 0 || !dirty) {
        return Err(i.cx.err(
            r.redirty.as_ref().unwrap().span(),
            "redirty keeps dirtying the mapping: it needs a file, a size and dirty = true",
        ));
    }
    let anon = i.size_or_zero(&r.anon)?;
    let shmem = i.size_or_zero(&r.shmem)?;
    if anon == 0 && shmem == 0 && size == 0 && write == 0 {
        return Err(i.cx.err(
            i.s.span(),
            "a hold must hold something: anon, shmem, size or write more than 0",
        ));
    }
    Ok(Step::Hold {
        task: i.task()?,
        cgroup: i.cgroup()?,
        anon,
        shmem,
        file: r.file.as_ref().map(|_| i.file_name(&r.file)).transpose()?,
        size,
        dirty,
        redirty,
        write,
    })
}

fn move_task(i: &Input) -> Result<Step, ScenarioError> {
    let to = i.need(&i.r.to, "to")?;
    Ok(Step::Move {
        task: i.task()?,
        to: (i.cgroup_ref)(&Some(to), i.s.span())?,
    })
}

fn grow(i: &Input) -> Result<Step, ScenarioError> {
    Ok(Step::Grow {
        task: i.task()?,
        anon: i.cx.positive_size(&i.need(&i.r.anon, "anon")?, "anon")?,
    })
}

fn wait(i: &Input) -> Result<Step, ScenarioError> {
    Ok(Step::Wait { task: i.task()? })
}

fn release(i: &Input) -> Result<Step, ScenarioError> {
    Ok(Step::Release { task: i.task()? })
}

/// `count` of create and read: 1..64, default 1.
fn count(i: &Input) -> Result<u32, ScenarioError> {
    Ok(match &i.r.count {
        Some(c) if *c.get_ref() == 0 || *c.get_ref() > 64 => {
            return Err(i.cx.err(c.span(), "count must be 1..64"));
        }
        Some(c) => *c.get_ref(),
        None => 1,
    })
}

fn create(i: &Input) -> Result<Step, ScenarioError> {
    let count = count(i)?;
    Ok(Step::Create {
        file: i.file_name(&i.r.file)?,
        size: i.positive_size()?,
        count,
    })
}

fn read(i: &Input) -> Result<Step, ScenarioError> {
    let count = count(i)?;
    Ok(Step::Read {
        cgroup: i.cgroup()?,
        file: i.file_name(&i.r.file)?,
        count,
    })
}

/// `clients` (0..64, 0: one per CPU, default 1) and `size` (at least 4K) of fault and usemem.
fn clients_and_size(i: &Input) -> Result<(u32, u64), ScenarioError> {
    let clients = match &i.r.clients {
        Some(c) if *c.get_ref() > 64 => {
            return Err(i.cx.err(c.span(), "clients must be 0..64 (0: one per CPU)"));
        }
        Some(c) => *c.get_ref(),
        None => 1,
    };
    let size = i.cx.size(&i.need(&i.r.size, "size")?)?;
    if size < 4096 {
        return Err(i.cx.err(
            i.r.size.as_ref().unwrap().span(),
            "size must be at least 4K",
        ));
    }
    Ok((clients, size))
}

fn fault(i: &Input) -> Result<Step, ScenarioError> {
    let (clients, size) = clients_and_size(i)?;
    Ok(Step::Fault {
        cgroup: i.cgroup()?,
        size,
        clients,
        duration: i
            .cx
            .duration_within(&i.need(&i.r.duration, "duration")?, MIN_INTERVAL)?,
    })
}

/// `await`: a memory.stat counter of the group (`counter`), at least `size`, within `duration`.
fn await_counter(i: &Input) -> Result<Step, ScenarioError> {
    let c = i.need(&i.r.counter, "counter")?;
    let stat_counter = matches!(
        crate::model::counter::counter(c.get_ref()),
        Some(crate::model::counter::Counter {
            source: crate::model::counter::Source::Stat { .. },
            ..
        })
    );
    if !stat_counter {
        return Err(i.cx.err(
            c.span(),
            "counter must be a memory.stat counter (dirty, writeback, file, anon, ...)",
        ));
    }
    let within = i.need(&i.r.duration, "duration")?;
    Ok(Step::Await {
        cgroup: i.cgroup()?,
        counter: c.into_inner(),
        size: i.positive_size()?,
        within: i.cx.duration(&within)?,
    })
}

fn usemem(i: &Input) -> Result<Step, ScenarioError> {
    let (clients, size) = clients_and_size(i)?;
    Ok(Step::Usemem {
        cgroup: i.cgroup()?,
        size,
        clients,
    })
}
