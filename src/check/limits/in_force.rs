//! in-force: a v2 limit is in force while its write reclaims. Writing memory.high or memory.max
//! below the usage reclaims before the write returns, and both handlers set the new value
//! first (memory_high_write since e82553c10b08, 5.11; memory_max_write always, as cgroup-v2.rst's
//! "Controller Issues and Remedies" says: it "will first set the limit to prevent new charges,
//! and then reclaim"): the group's tasks are held to it, and anyone reading the file sees it,
//! for the whole reclaim. 5.8-5.10 reclaimed first and set memory.high after, so a workload that
//! kept allocating ran unthrottled under the old value, and could keep the write from returning.

use crate::check::args::CheckArgs;
use crate::check::{CGROUP, Check, CheckResult, CheckSpec, Kind, Outcome, missing};
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;
use crate::model::{KnobWrite, ReadRun, ReadsDuring, Record, StepKind};

/// How far from the write's start and end a read counts: the handler sets the value within
/// microseconds of the call, and a read that began right before the return may have met the
/// value set just then (a kernel that sets it last also takes a while to return).
pub const MARGIN_MS: f64 = 1.0;

/// How far the group's usage must have fallen while the old value showed: the write was
/// reclaiming then. A writer held up before its system call (preempted on a busy machine) shows
/// the old value for as long, but nothing reclaims for it meanwhile.
pub const FELL: u64 = 4 << 20;

/// `in-force` in the check table.
pub const KIND: Kind = Kind {
    kind: "in-force",
    doc: "Each successful `set` step that wrote the group's memory.high or memory.max (cgroup \
v2) showed the new value to a reader while the write ran: another thread reads the file over and \
over during the write(2), each read right after one of the group's memory.current. A write of a \
size below the usage at its start is judged: it fails where reads from its first half into its \
second (between 1 ms after its start and 1 ms before its return) showed the old value while \
memory.current fell by 4 MiB or more (the write reclaimed under the old value; a writer held up \
before its system call shows the old value too, but nothing reclaims for it); it passes where \
the value the file reads after the write was read within those bounds. Both handlers set the \
value before they reclaim down to it (memory.high since 5.11, memory.max always), so the \
group's tasks are throttled by it for the whole reclaim. Not exercised when no such write lasted \
long enough for a read to fall between those bounds, or that had nothing to reclaim. \
Implied in every v2 scenario, for each group with such a step (not one made `from` another \
group: its time includes the fork). Result name: \
`in-force(<cgroup>)`.",
    keys: &[CGROUP],
    parse,
    promises: &[],
};

#[derive(Debug, Clone, PartialEq)]
pub struct InForce {
    pub cgroup: String,
}

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(InForce {
        cgroup: i.cgroup("cgroup")?,
    }))
}

impl CheckSpec for InForce {
    fn name(&self) -> String {
        format!("in-force({})", self.cgroup)
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        in_force(self.name(), rec, &self.cgroup)
    }
}

/// What the reads during one write showed.
enum Seen<'a> {
    /// The new value, first read this many ms into the write.
    New(f64),
    /// The old value from the write's first half into its second while the usage fell.
    Old(&'a ReadRun),
    /// Neither: a write with nothing to reclaim, or one too short to read within the bounds.
    Unjudged,
}

/// From when (ms, within the bounds) a run's reads showed its value between MARGIN_MS after
/// the write began and MARGIN_MS before it returned; None when none fell there. A file's value
/// changes once in a write, so a run with reads on both sides of the bounds showed it throughout.
fn within(d: &ReadsDuring, r: &ReadRun) -> Option<f64> {
    let end = d.write_ms - MARGIN_MS;
    (end > MARGIN_MS && r.first_ms <= end && r.last_ms >= MARGIN_MS)
        .then(|| r.first_ms.max(MARGIN_MS))
}

/// How far the group's usage fell from the first read of the run to the last (each usage read
/// right before its read of the file).
fn fell(r: &ReadRun) -> u64 {
    match (r.usage_first, r.usage_last) {
        (Some(a), Some(b)) => a.saturating_sub(b),
        _ => 0,
    }
}

/// Judges one write's reads against `after`, what the file read once it returned. Only a write
/// of a size below the usage at its start had reclaiming to do.
fn seen<'a>(d: &'a ReadsDuring, after: &str) -> Seen<'a> {
    let usage = d.runs.first().and_then(|r| r.usage_first);
    let reclaims = after
        .parse::<u64>()
        .ok()
        .zip(usage)
        .is_some_and(|(v, u)| v < u);
    if !reclaims {
        return Seen::Unjudged;
    }
    let stale = (d.runs.iter()).find(|r| {
        r.value != after
            && within(d, r).is_some()
            && r.last_ms >= d.write_ms / 2.0
            && fell(r) >= FELL
    });
    if let Some(r) = stale {
        return Seen::Old(r);
    }
    (d.runs.iter())
        .filter(|r| r.value == after)
        .find_map(|r| within(d, r))
        .map_or(Seen::Unjudged, Seen::New)
}

fn in_force(name: String, rec: &Record, cgroup: &str) -> CheckResult {
    let writes: Vec<(&KnobWrite, &ReadsDuring, &str)> = (rec.steps.iter())
        .filter(|s| s.kind == StepKind::Set && s.cgroup == cgroup)
        .filter_map(|s| s.knob.as_ref())
        .filter(|k| k.error.is_none())
        .filter_map(|k| Some((k, k.during.as_ref()?, k.after.as_deref()?)))
        .collect();
    let expected = "the value written, from the start of the write".to_string();
    let mut passed = Vec::new();
    for (k, d, after) in &writes {
        match seen(d, after) {
            Seen::Old(r) => {
                return CheckResult::new(
                    name,
                    Outcome::Fail,
                    format!("{} read {:?}", k.file, r.value),
                    expected,
                    failure(cgroup, k, d, r),
                );
            }
            Seen::New(from) => passed.push(format!(
                "{} read {after} from {from:.1} ms into a write of {:.1} ms",
                k.file, d.write_ms
            )),
            Seen::Unjudged => {}
        }
    }
    if passed.is_empty() {
        return missing(name, not_judged(cgroup, writes.len()));
    }
    CheckResult::new(
        name,
        Outcome::Pass,
        passed.join("; "),
        expected,
        format!(
            "{} write(s) to {cgroup}'s memory.high or memory.max read as written while they ran",
            passed.len()
        ),
    )
}

/// Why no write was judged: none, or none read within the bounds.
fn not_judged(cgroup: &str, writes: usize) -> String {
    match writes {
        0 => format!("no set step wrote {cgroup}'s memory.high or memory.max"),
        n => format!(
            "{n} write(s) to {cgroup}'s memory.high or memory.max, none below the usage at its start and read between {MARGIN_MS} ms after it began and {MARGIN_MS} ms before it returned (a write with little to reclaim is over sooner)"
        ),
    }
}

/// The failure's detail: the old value, when, and the usage falling meanwhile.
fn failure(cgroup: &str, k: &KnobWrite, d: &ReadsDuring, r: &ReadRun) -> String {
    let written = k.written.as_deref().unwrap_or("-");
    let after = k.after.as_deref().unwrap_or("-");
    let (from, to) = (
        r.first_ms.max(MARGIN_MS),
        r.last_ms.min(d.write_ms - MARGIN_MS),
    );
    let (a, b) = (r.usage_first.unwrap_or(0), r.usage_last.unwrap_or(0));
    format!(
        "{cgroup}'s {} read {:?} from {from:.1} to {to:.1} ms into the write of {written:?} ({:.1} ms; after it, {after:?}) while memory.current fell from {} to {}: the old value stayed in force while the write reclaimed",
        k.file,
        r.value,
        d.write_ms,
        human_bytes(a as i64),
        human_bytes(b as i64)
    )
}
