//! notifies: cgroup v2 tells watchers when a value of memory.events changes ("a value change in
//! this file generates a file modified event"), and memory.events.local's event "reflects only
//! the local events". The runner polls each group's event files (exec::notify) and records when
//! each file signalled a change; this check holds them to the sampled counts.

use crate::check::args::CheckArgs;
use crate::check::{CGROUP, Check, CheckResult, CheckSpec, Kind, Needs, Outcome, missing};
use crate::model::contract::{Contract, v2};
use crate::model::counter::{self, Kind as CounterKind};
use crate::model::error::ScenarioError;
use crate::model::record::EVENT_FILES;
use crate::model::{Column, Notice, Record, Version};

/// How long after a count rose its file's event may come: the kernel raises it at once, or
/// within 10 ms (kernfs_notify's rate limit), and the watcher polls every 50 ms; a busy emulated
/// machine may add half a second.
const LATE: f64 = 1.0;

/// `notifies` in the check table.
pub const KIND: Kind = Kind {
    kind: "notifies",
    doc: "cgroup v2: each rise of a count in the group's memory.events, memory.events.local or \
memory.swap.events (sampled) came with a file-modified event on that file (poll(2) POLLPRI, what \
inotify and systemd-oomd wait on) between the sample before it and 1 s after the sample that \
showed it; and every event on memory.events.local came within 1 s of a rise of one of the \
group's own (local) counts: it \"reflects only the local events\", so a child's event raises \
none in its parent's memory.events.local. The kernel raises the event at once or, for a file \
that changed in the last 10 ms, 10 ms later (kernfs_notify). Not exercised when no count of the \
group rose. Every group of a cgroup v2 scenario gets one. Result name: `notifies(<cgroup>)`.",
    keys: &[CGROUP],
    parse,
    promises: &[&v2::EVENTS_NOTIFY, &v2::EVENTS_LOCAL_NOTIFY],
};

#[derive(Debug, Clone, PartialEq)]
pub struct Notifies {
    pub cgroup: String,
}

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(Notifies {
        cgroup: i.cgroup("cgroup")?,
    }))
}

impl CheckSpec for Notifies {
    fn name(&self) -> String {
        format!("notifies({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs {
            all_counters: true,
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        notifies(self.name(), rec, &self.cgroup)
    }
}

/// The group's sampled event counts that live in a watched file: (column, index, file).
fn watched(rec: &Record, cgroup: &str) -> Vec<(Column, usize, &'static str)> {
    (rec.series.columns().iter().enumerate())
        .filter_map(|(i, c)| {
            let Column::Group {
                group,
                counter: name,
                local,
            } = c
            else {
                return None;
            };
            let k = counter::counter(name)?;
            let file = counter::file_of(name, Version::V2, *local)?;
            (group == cgroup && k.kind == CounterKind::Event && file.starts_with("memory."))
                .then_some((c.clone(), i, file))
        })
        .filter(|(_, _, f)| EVENT_FILES.contains(f))
        .collect()
}

fn notifies(name: String, rec: &Record, cgroup: &str) -> CheckResult {
    let Some(notices) = rec.notices.as_ref().filter(|_| rec.version == Version::V2) else {
        return missing(name, "the event files were not watched (cgroup v1)".into());
    };
    let cols = watched(rec, cgroup);
    let s = &rec.series;
    let heard = |file: &str, from: f64, to: f64| {
        (notices.iter()).any(|n| n.group == cgroup && n.file == file && n.t >= from && n.t <= to)
    };
    let mut rises = 0;
    for (col, c, file) in &cols {
        for r in 1..s.len() {
            if s.get(r, *c) <= s.get(r - 1, *c) {
                continue;
            }
            rises += 1;
            if !heard(file, s.t[r - 1], s.t[r] + LATE) {
                let why = format!(
                    "{col} rose from {} to {} between t={:.3}s and t={:.3}s (phase {}), and {cgroup}'s {file} raised no file-modified event then or within {LATE} s",
                    s.get(r - 1, *c),
                    s.get(r, *c),
                    s.t[r - 1],
                    s.t[r],
                    rec.phase_at(s.t[r])
                );
                return fail(name, why, s.t[r], col, &v2::EVENTS_NOTIFY);
            }
        }
    }
    if let Some(n) = stray_local(rec, cgroup, &cols, notices) {
        let why = format!(
            "{cgroup}'s memory.events.local raised a file-modified event at t={:.3}s (phase {}), but none of its own counts there rose within {LATE} s of it",
            n.t,
            rec.phase_at(n.t)
        );
        return fail(
            name,
            why,
            n.t,
            &Column::group(cgroup, "oom_kills"),
            &v2::EVENTS_LOCAL_NOTIFY,
        );
    }
    if rises == 0 {
        return missing(name, format!("none of {cgroup}'s event counts rose"));
    }
    let mut r = CheckResult::new(
        name,
        Outcome::Pass,
        format!("{rises} rises, each with its file's event"),
        "a file-modified event with each change".into(),
        format!(
            "{rises} rises of {cgroup}'s event counts each came with a file-modified event ({} events in all)",
            notices.iter().filter(|n| n.group == cgroup).count()
        ),
    );
    r.tolerance = Some(format!(
        "the event may come up to {LATE} s after the sample that showed the rise"
    ));
    r
}

/// An event on memory.events.local with no rise of a local count near it.
fn stray_local<'a>(
    rec: &Record,
    cgroup: &str,
    cols: &[(Column, usize, &'static str)],
    notices: &'a [Notice],
) -> Option<&'a Notice> {
    let s = &rec.series;
    let local: Vec<usize> = (cols.iter())
        .filter(|(_, _, f)| *f == "memory.events.local")
        .map(|(_, c, _)| *c)
        .collect();
    if local.is_empty() {
        return None;
    }
    let rose_near = |t: f64| {
        (1..s.len()).any(|r| {
            (s.t[r] >= t - LATE && s.t[r - 1] <= t + LATE)
                && local.iter().any(|&c| s.get(r, c) > s.get(r - 1, c))
        })
    };
    (notices.iter())
        .filter(|n| n.group == cgroup && n.file == "memory.events.local")
        .find(|n| !rose_near(n.t))
}

fn fail(name: String, why: String, t: f64, col: &Column, p: &'static Contract) -> CheckResult {
    let mut r = CheckResult::new(
        name,
        Outcome::Fail,
        "no file-modified event".into(),
        "a file-modified event with each change".into(),
        why,
    );
    r.at = Some(t);
    r.columns = vec![col.clone()];
    r.breaking(p)
}
