//! Resolving a `[[phase.step]]`: the keys each action takes and what it becomes.

use std::time::Duration;

use toml::Spanned;

use super::raw::RawStep;
use super::resolve::{Ctx, task_name};
use super::{ScenarioError, Step};
use crate::units::MIN_INTERVAL;

pub(super) type CgroupRef<'a> =
    dyn Fn(&Option<Spanned<String>>, std::ops::Range<usize>) -> Result<String, ScenarioError> + 'a;

pub(super) fn resolve_step(
    cx: &Ctx,
    s: &Spanned<RawStep>,
    cgroup_ref: &CgroupRef,
) -> Result<Step, ScenarioError> {
    let r = s.get_ref();
    let action = r.action.get_ref().as_str();
    // Which keys each action takes; anything else set is an error at that key.
    let allowed: &[&str] = match action {
        "write" => &["cgroup", "file", "size", "block_size", "fsync"],
        "sync" => &[],
        "fsync" | "unlink" => &["cgroup", "file"],
        "truncate" => &["cgroup", "file", "size"],
        "sleep" => &["duration"],
        "mmap-write" => &["cgroup", "file", "size", "hold"],
        "probe" => &["cgroup", "file", "size"],
        "hold" => &["task", "cgroup", "anon", "file", "size", "dirty", "write"],
        "move" => &["task", "to"],
        "grow" => &["task", "anon"],
        "wait" | "release" => &["task"],
        "create" => &["file", "size", "count"],
        "read" => &["cgroup", "file", "count"],
        "fault" => &["cgroup", "size", "clients", "duration"],
        "usemem" => &["cgroup", "size", "clients"],
        other => {
            return Err(cx.err(
                r.action.span(),
                format!(
                    "unknown action {other:?} (known: write, sync, fsync, sleep, truncate, unlink, mmap-write, probe, hold, move, grow, wait, release, create, read, fault, usemem)"
                ),
            ));
        }
    };
    let present: [(&str, Option<std::ops::Range<usize>>); 14] = [
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
        ("write", r.write.as_ref().map(|x| x.span())),
        ("count", r.count.as_ref().map(|x| x.span())),
        ("clients", r.clients.as_ref().map(|x| x.span())),
    ];
    for (key, span) in present {
        if let Some(span) = span
            && !allowed.contains(&key)
        {
            return Err(cx.err(span, format!("action {action:?} takes no {key:?}")));
        }
    }
    let need = |v: &Option<Spanned<String>>, key: &str| -> Result<Spanned<String>, ScenarioError> {
        v.clone()
            .ok_or_else(|| cx.err(s.span(), format!("action {action:?} needs {key:?}")))
    };
    let file_name = |f: &Option<Spanned<String>>| -> Result<String, ScenarioError> {
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
            Err(cx.err(
                f.span(),
                "file must be a plain name inside the scratch directory",
            ))
        }
    };
    Ok(match action {
        "write" => {
            let size = cx.positive_size(&need(&r.size, "size")?, "size")?;
            let block_size = match &r.block_size {
                Some(b) => cx.size(b)?,
                None => 1 << 20,
            };
            if block_size == 0 || block_size > 64 << 20 {
                return Err(cx.err(
                    r.block_size.as_ref().unwrap().span(),
                    "block_size must be 1..64M",
                ));
            }
            Step::Write {
                cgroup: cgroup_ref(&r.cgroup, s.span())?,
                file: file_name(&r.file)?,
                size,
                block_size,
                fsync: r.fsync.as_ref().map(|f| *f.get_ref()).unwrap_or(false),
            }
        }
        "sync" => Step::Sync,
        "fsync" => Step::Fsync {
            cgroup: cgroup_ref(&r.cgroup, s.span())?,
            file: file_name(&r.file)?,
        },
        "sleep" => Step::Sleep(cx.duration(&need(&r.duration, "duration")?)?),
        "truncate" => Step::Truncate {
            cgroup: cgroup_ref(&r.cgroup, s.span())?,
            file: file_name(&r.file)?,
            size: r
                .size
                .as_ref()
                .map(|x| cx.size(x))
                .transpose()?
                .unwrap_or(0),
        },
        "unlink" => Step::Unlink {
            cgroup: cgroup_ref(&r.cgroup, s.span())?,
            file: file_name(&r.file)?,
        },
        "mmap-write" => Step::MmapWrite {
            cgroup: cgroup_ref(&r.cgroup, s.span())?,
            file: file_name(&r.file)?,
            size: cx.positive_size(&need(&r.size, "size")?, "size")?,
            hold: r
                .hold
                .as_ref()
                .map(|h| cx.duration(h))
                .transpose()?
                .unwrap_or(Duration::from_secs(1)),
        },
        "probe" => Step::Probe {
            cgroup: cgroup_ref(&r.cgroup, s.span())?,
            file: r
                .file
                .as_ref()
                .map(|_| file_name(&r.file))
                .transpose()?
                .unwrap_or_else(|| "probe".into()),
            size: cx.positive_size(&need(&r.size, "size")?, "size")?,
        },
        "hold" => {
            let size = r
                .size
                .as_ref()
                .map(|x| cx.size(x))
                .transpose()?
                .unwrap_or(0);
            let write = r
                .write
                .as_ref()
                .map(|x| cx.size(x))
                .transpose()?
                .unwrap_or(0);
            if (size > 0 || write > 0) && r.file.is_none() {
                return Err(cx.err(s.span(), "a hold with size or write needs a file"));
            }
            let anon = r
                .anon
                .as_ref()
                .map(|x| cx.size(x))
                .transpose()?
                .unwrap_or(0);
            if anon == 0 && size == 0 && write == 0 {
                return Err(cx.err(
                    s.span(),
                    "a hold must hold something: anon, size or write more than 0",
                ));
            }
            Step::Hold {
                task: task_name(cx, &need(&r.task, "task")?)?,
                cgroup: cgroup_ref(&r.cgroup, s.span())?,
                anon,
                file: r.file.as_ref().map(|_| file_name(&r.file)).transpose()?,
                size,
                dirty: r.dirty.as_ref().map(|d| *d.get_ref()).unwrap_or(false),
                write,
            }
        }
        "move" => {
            let to = need(&r.to, "to")?;
            Step::Move {
                task: task_name(cx, &need(&r.task, "task")?)?,
                to: cgroup_ref(&Some(to), s.span())?,
            }
        }
        "grow" => Step::Grow {
            task: task_name(cx, &need(&r.task, "task")?)?,
            anon: cx.positive_size(&need(&r.anon, "anon")?, "anon")?,
        },
        "wait" => Step::Wait {
            task: task_name(cx, &need(&r.task, "task")?)?,
        },
        "release" => Step::Release {
            task: task_name(cx, &need(&r.task, "task")?)?,
        },
        "create" | "read" => {
            let count = match &r.count {
                Some(c) if *c.get_ref() == 0 || *c.get_ref() > 64 => {
                    return Err(cx.err(c.span(), "count must be 1..64"));
                }
                Some(c) => *c.get_ref(),
                None => 1,
            };
            if action == "create" {
                Step::Create {
                    file: file_name(&r.file)?,
                    size: cx.positive_size(&need(&r.size, "size")?, "size")?,
                    count,
                }
            } else {
                Step::Read {
                    cgroup: cgroup_ref(&r.cgroup, s.span())?,
                    file: file_name(&r.file)?,
                    count,
                }
            }
        }
        "fault" | "usemem" => {
            let clients = match &r.clients {
                Some(c) if *c.get_ref() > 64 => {
                    return Err(cx.err(c.span(), "clients must be 0..64 (0: one per CPU)"));
                }
                Some(c) => *c.get_ref(),
                None => 1,
            };
            let size = cx.size(&need(&r.size, "size")?)?;
            if size < 4096 {
                return Err(cx.err(r.size.as_ref().unwrap().span(), "size must be at least 4K"));
            }
            if action == "usemem" {
                Step::Usemem {
                    cgroup: cgroup_ref(&r.cgroup, s.span())?,
                    size,
                    clients,
                }
            } else {
                Step::Fault {
                    cgroup: cgroup_ref(&r.cgroup, s.span())?,
                    size,
                    clients,
                    duration: cx.duration_within(&need(&r.duration, "duration")?, MIN_INTERVAL)?,
                }
            }
        }
        _ => unreachable!(),
    })
}
