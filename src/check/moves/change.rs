//! change: a step changes a column by a given amount.

use crate::check::args::CheckArgs;
use crate::check::{
    Check, CheckResult, CheckSpec, Kind, Needs, Outcome, missing, opt, req, row_at_or_after,
    row_done_before, signed,
};
use crate::model::StepKind;
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;
use crate::model::{Column, Machine, Record, StepRecord};

/// What a step must change a column by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expect {
    /// Bytes, signed.
    pub by: i64,
    /// Set in the scenario, else the default below.
    pub tolerance: Option<u64>,
    /// Only falling short of `by` fails; going beyond it passes with a note.
    pub at_least: bool,
    /// Only going beyond `by` fails; falling short of it passes with a note (a count the
    /// kernel may not reach in full, but can never exceed).
    pub at_most: bool,
    /// Judge the change across all the matching steps together (from before the first to after
    /// the last), not across each.
    pub total: bool,
    /// `by` is per object the step made (a hold's pipes: `StepRecord::made`), not in all.
    pub each: bool,
}

impl Expect {
    /// Exactly `by`, default tolerance.
    pub fn exactly(by: i64) -> Self {
        Expect {
            by,
            tolerance: None,
            at_least: false,
            at_most: false,
            total: false,
            each: false,
        }
    }

    /// What step `st` must change the column by: `by`, or `by` times what it made with `each`
    /// (None: it reports nothing made).
    fn for_step(&self, st: &StepRecord) -> Option<Expect> {
        match (self.each, st.made) {
            (false, _) => Some(*self),
            (true, Some(n)) => Some(Expect {
                by: self.by * n as i64,
                ..*self
            }),
            (true, None) => None,
        }
    }

    /// The tolerance (bytes, or events for an event counter) and where it comes from.
    fn tolerance(&self, m: &Machine, events: bool) -> (i64, String) {
        match self.tolerance {
            Some(t) => (
                t as i64,
                format!("{} (set in the scenario)", amount(t as i64, events)),
            ),
            None if events => {
                let t = (2 * 64 * m.cpus) as i64 + self.by.abs() / 32;
                (
                    t,
                    format!(
                        "{t} events = 2 x 64 x {} CPUs (memcg events unflushed) + 1/32 of the expected change",
                        m.cpus
                    ),
                )
            }
            None => {
                let t = m.stat_batch_bytes() as i64 + self.by.abs() / 32;
                (
                    t,
                    format!(
                        "{} = {} + 1/32 of the expected change (kernel memory of the task stays where it was charged)",
                        human_bytes(t),
                        m.stat_batch_explained()
                    ),
                )
            }
        }
    }

    /// Whether a change `d` is wrong under tolerance `tol`.
    fn wrong(&self, d: i64, tol: i64) -> bool {
        if self.at_least {
            // Short when it did not get within tol of `by` in its direction.
            (d - self.by) * self.by.signum() < -tol
        } else if self.at_most {
            // Beyond when it went more than tol past `by` in its direction.
            (d - self.by) * self.by.signum() > tol
        } else {
            (d - self.by).abs() > tol
        }
    }
}

/// A change or a value of a column: bytes, or a count of events.
fn amount(v: i64, events: bool) -> String {
    if events {
        v.to_string()
    } else {
        human_bytes(v)
    }
}

/// A signed change, as `amount`.
fn signed_amount(v: i64, events: bool) -> String {
    match (events, v > 0) {
        (true, true) => format!("+{v}"),
        (true, false) => v.to_string(),
        (false, _) => signed(v),
    }
}

/// change: across each step of kind `step`, column `col` changed by `by` bytes: the value at the
/// first sample after the step minus the value at the last sample whose pass had ended before
/// it (for a parent's memory.stat counter, a later sample may count: see [`caught_up`]). Default
/// tolerance: the memcg unflushed-stats bound plus 1/32 of |by| (memory the kernel keeps for the
/// task itself, page tables and such, is charged where it was allocated and does not move).
pub fn change(
    name: String,
    rec: &Record,
    col: &Column,
    step: StepKind,
    expect: Expect,
    needs_moving: bool,
) -> CheckResult {
    change_in(name, rec, col, (step, None), expect, needs_moving)
}

/// `change` over the steps of kind `step` in phase `phase` only (all phases with `None`).
pub fn change_in(
    name: String,
    rec: &Record,
    col: &Column,
    (step, phase): (StepKind, Option<&str>),
    expect: Expect,
    needs_moving: bool,
) -> CheckResult {
    if let Some(r) = crate::check::without_moving(&name, rec, needs_moving) {
        return r;
    }
    let Some(c) = rec.series.col(col) else {
        return missing(name, format!("column {col} was not sampled"));
    };
    let events = (col.counter().and_then(crate::model::counter::counter))
        .is_some_and(|k| k.unit == crate::model::counter::Unit::Events);
    let human_bytes = |v: i64| amount(v, events);
    let signed = |v: i64| signed_amount(v, events);
    let mut seen = Vec::new();
    let mut beyond = Vec::new();
    let mut late = Vec::new();
    let (mut wanted, mut tol_text) = (String::new(), String::new());
    for st in &spans(rec, (step, phase), expect.total) {
        let Some(e) = expect.for_step(st) else {
            return missing(
                name,
                format!(
                    "the {step} step at t={:.3}s reports nothing it made",
                    st.end
                ),
            );
        };
        let by = e.by;
        let tol;
        (tol, tol_text, wanted) = match bounds(&e, &rec.machine, events) {
            Ok(b) => b,
            Err(why) => return missing(name, why),
        };
        let r0 = row_done_before(rec, st.start);
        let Some(r1) = row_at_or_after(rec, st.end) else {
            return missing(
                name,
                format!("no sample after the {step} step at t={:.3}s", st.end),
            );
        };
        let mut d = rec.series.get(r1, c) - rec.series.get(r0, c);
        if e.wrong(d, tol) {
            // A parent's statistics wait for its next flush: a later sample may count.
            match caught_up(rec, col, (c, st), r0, |d| !e.wrong(d, tol)) {
                Some(r) => {
                    d = rec.series.get(r, c) - rec.series.get(r0, c);
                    late.push(format!(
                        "{:.0} ms after the {step} step at t={:.3}s",
                        (rec.series.t[r] - st.end) * 1e3,
                        st.end
                    ));
                }
                None => {
                    let mut res = wrong(name, rec, (col, c, events), st, (r0, r1), by, wanted);
                    res.tolerance = Some(tol_text);
                    return res;
                }
            }
        }
        if (e.at_least || e.at_most) && (d - by).abs() > tol {
            beyond.push(format!(
                "{} at t={:.3}s",
                human_bytes((d - by).abs()),
                st.end
            ));
        }
        seen.push(signed(d));
    }
    if seen.is_empty() {
        return missing(name, none_judged(rec, (step, phase)));
    }
    let notes = Notes {
        late,
        beyond,
        at_least: expect.at_least,
    };
    passed(
        name,
        col,
        (step, expect.total),
        (&seen, wanted, tol_text),
        notes,
    )
}

/// What a passing change adds to its detail: the steps whose parent showed the change only at
/// a later flush, and those that went beyond (short of) what was asked.
struct Notes {
    late: Vec<String>,
    beyond: Vec<String>,
    at_least: bool,
}

/// The pass result of `change`: the changes `seen`, what was wanted and the tolerance, `notes`.
fn passed(
    name: String,
    col: &Column,
    (step, total): (StepKind, bool),
    (seen, wanted, tol_text): (&[String], String, String),
    Notes {
        late,
        beyond,
        at_least,
    }: Notes,
) -> CheckResult {
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!("changed by {}", seen.join(", ")),
        wanted,
        format!(
            "{col} changed by {} across {}",
            seen.join(", "),
            if total {
                format!("its {step} steps together")
            } else {
                format!("each {step} step")
            }
        ),
    );
    res.tolerance = Some(tol_text);
    if !late.is_empty() {
        res.detail += &format!(
            "; the parent's statistics showed it at its next flush, {} (a child's statistics reach a parent when the parent is flushed: when a read finds enough pending, or the periodic flush)",
            late.join(", ")
        );
    }
    if !beyond.is_empty() {
        let (how, key) = match at_least {
            true => ("beyond", "at_least"),
            false => ("short of", "at_most"),
        };
        res.detail += &format!(
            "; {how} what was asked (allowed here: {key}): {}",
            beyond.join(", ")
        );
    }
    res
}

/// The first sample after step `st` at which the change of column `c` from row `r0` is `right`,
/// for a hierarchical memory.stat counter of a group that is a parent during the step (sampled
/// groups below it, or a `child` step below it): such a parent shows its subtree's statistics
/// as of its last flush. A child's updates reach it when the parent is flushed (a read that
/// finds enough pending, since 6.16 often not even that, or the periodic flush: ANCESTOR_LAG),
/// and so do a removed child's, flushed into the parent's pending values when the child is
/// freed (ownership's p.file on the 6.18 host beside a kernel build: its page counter +16 MiB at
/// once, memory.stat 150 ms later). Only samples up to ANCESTOR_LAG after the step and before
/// the next step that may change the counter count; None when none is right.
fn caught_up(
    rec: &Record,
    col: &Column,
    (c, st): (usize, &StepRecord),
    r0: usize,
    right: impl Fn(i64) -> bool,
) -> Option<usize> {
    let Column::Group {
        group,
        counter,
        local: false,
    } = col
    else {
        return None;
    };
    // A step in the group or below it, or one naming no group (a release, a drop, a sync), may
    // change the counter itself; a sleep or a step in another group cannot.
    let may_change = |o: &StepRecord| {
        o.kind != StepKind::Sleep
            && (o.cgroup.is_empty()
                || o.cgroup == *group
                || crate::model::is_below(&o.cgroup, group))
    };
    let parent = (st.kind == StepKind::Child && st.cgroup == *group)
        || crate::check::has_sampled_below(rec, group);
    if !parent || !crate::check::hierarchy::parts::flushed(counter) {
        return None;
    }
    let next = (rec.steps.iter())
        .filter(|o| o.start >= st.end && may_change(o))
        .map(|o| o.start)
        .fold(f64::INFINITY, f64::min);
    let until = next.min(st.end + crate::check::hierarchy::parts::ANCESTOR_LAG);
    (0..rec.series.len())
        .filter(|&r| rec.series.t[r] > st.end && rec.series.t[r] <= until)
        .find(|&r| right(rec.series.get(r, c) - rec.series.get(r0, c)))
}

/// The tolerance for `e`, where it comes from, and what is expected in words; Err: why the check
/// could not fail (a tolerance of half the change or more would pass a kernel that did half).
fn bounds(e: &Expect, m: &Machine, events: bool) -> Result<(i64, String, String), String> {
    let (by, (tol, tol_text)) = (e.by, e.tolerance(m, events));
    let (signed, human) = (|v| signed_amount(v, events), |v| amount(v, events));
    if (by != 0 || e.at_least || e.at_most) && 2 * tol >= by.abs() {
        return Err(format!(
            "the expected change {} is within twice the tolerance {} on this machine: a step that did half of it would pass, so the check could not fail",
            signed(by),
            human(tol)
        ));
    }
    let wanted = if e.at_least {
        format!("{} or beyond, within {}", signed(by), human(tol))
    } else if e.at_most {
        format!("{} or short of it, within {}", signed(by), human(tol))
    } else {
        format!("{} +- {}", signed(by), human(tol))
    };
    Ok((tol, tol_text, wanted))
}

/// The steps of kind `step` (in `phase`, if given) that did what they were asked, each on its
/// own or, with `total`, as one span (none when the kernel declined one of them: the total is
/// then not what the steps together should have made).
fn spans(rec: &Record, (step, phase): (StepKind, Option<&str>), total: bool) -> Vec<StepRecord> {
    // A write the kernel refused (a key it does not have) changed nothing on purpose.
    let done = |s: &&StepRecord| s.knob.as_ref().is_none_or(|k| k.error.is_none());
    let all = of_kind(rec, (step, phase));
    let declined = all.iter().any(|s| s.declined.is_some());
    let matching: Vec<StepRecord> = (all.into_iter().filter(done))
        .filter(|s| s.declined.is_none())
        .cloned()
        .collect();
    match (total, declined) {
        (true, true) => Vec::new(),
        (true, false) => all_of(&matching),
        (false, _) => matching,
    }
}

/// The failure of `col` (column `c`, counting events or bytes) across step `st`, sampled at
/// rows `r0` and `r1`: it changed by something other than `by`.
fn wrong(
    name: String,
    rec: &Record,
    (col, c, events): (&Column, usize, bool),
    st: &StepRecord,
    (r0, r1): (usize, usize),
    by: i64,
    wanted: String,
) -> CheckResult {
    let d = rec.series.get(r1, c) - rec.series.get(r0, c);
    let mut res = CheckResult::new(
        name,
        Outcome::Fail,
        format!(
            "{col} changed by {} ({d}{})",
            signed_amount(d, events),
            if events { "" } else { " B" }
        ),
        wanted,
        format!(
            "across step '{}' (t={:.3}s..{:.3}s, phase {}), {col} went from {} to {}: {}",
            st.describe,
            st.start,
            st.end,
            rec.phases[st.phase].name,
            amount(rec.series.get(r0, c), events),
            amount(rec.series.get(r1, c), events),
            missed(by, d, st.kind, events)
        ),
    );
    res.at = Some(rec.series.t[r1]);
    res.columns = vec![col.clone()];
    res
}

/// Why no step of kind `step` (in `phase`) was judged: none ran, or the kernel refused or
/// declined what they asked. "this kernel" only where it lacks what was asked (a knob it does
/// not have, a collapse it cannot make): `ci/matrix.sh` counts only such skips as n/a.
fn none_judged(rec: &Record, (step, phase): (StepKind, Option<&str>)) -> String {
    let steps = of_kind(rec, (step, phase));
    if let Some(note) = steps.iter().find_map(|s| s.declined.as_deref()) {
        return if note.contains("this kernel cannot") {
            format!("this kernel declined what the {step} step asked: {note}")
        } else {
            format!("the kernel did not do what the {step} step asked: {note}")
        };
    }
    let refused = steps.iter().find_map(|s| s.knob.as_ref()?.error.as_deref());
    match refused {
        Some(e) => {
            format!("this kernel refused what a {step} step wrote ({e}): it changed nothing")
        }
        None => format!("no {step} step ran"),
    }
}

/// The steps of kind `step` (in `phase`, if given), in the order they ran.
fn of_kind<'r>(rec: &'r Record, (step, phase): (StepKind, Option<&str>)) -> Vec<&'r StepRecord> {
    (rec.steps.iter())
        .filter(|s| s.kind == step)
        .filter(|s| phase.is_none_or(|p| rec.phases[s.phase].name == p))
        .collect()
}

/// The matching steps as one span: from the first's start to the last's end.
fn all_of(steps: &[StepRecord]) -> Vec<StepRecord> {
    match (steps.first(), steps.last()) {
        (Some(a), Some(b)) => vec![StepRecord {
            end: b.end,
            describe: format!("{} .. {} ({} steps)", a.describe, b.describe, steps.len()),
            ..a.clone()
        }],
        _ => Vec::new(),
    }
}

/// How a change of `d` missed the expected `by`, in words.
fn missed(by: i64, d: i64, step: StepKind, events: bool) -> String {
    let human_bytes = |v: i64| amount(v, events);
    if by == 0 {
        format!(
            "it {} by {} where it should have stayed",
            if d < 0 { "fell" } else { "rose" },
            human_bytes(d.abs())
        )
    } else if d.signum() == -by.signum() {
        "it went the other way".to_string()
    } else if (by - d) * by.signum() > 0 {
        format!(
            "{} less than expected{}",
            human_bytes((by - d).abs()),
            if step == StepKind::Move {
                " (charge left behind?)"
            } else {
                ""
            }
        )
    } else {
        format!(
            "{} more than expected ({})",
            human_bytes((d - by).abs()),
            if step == StepKind::Reclaim {
                "reclaimed more than asked"
            } else {
                "charged twice?"
            }
        )
    }
}

/// `change`: across each step of kind `step` (of `phase`, when given), the group's counter
/// changed by `by` bytes (+- tolerance). With `needs_moving`, not exercised where the kernel
/// cannot move charges.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub cgroup: String,
    pub counter: String,
    pub step: StepKind,
    pub phase: Option<String>,
    pub expect: Expect,
    pub needs_moving: bool,
}

/// `change` in the check table.
pub const KIND: Kind = Kind {
    kind: "change",
    doc: "Across each step of kind `step` (of `phase` only, when given), the group's counter \
changed by `by`: the value at the first sample after the step minus the value at the \
last sample whose pass (its reads, one file after another) had ended before the step \
began. A step that adds or removes a known amount (a task holding 256 \
MiB that exits, a move with charge moving, a truncate of a known file, a \
memory.reclaim request) changes the group's count by that amount. A parent's memory.stat \
counter (a group with sampled groups below it, or one a `child` step ran below) shows its \
subtree's statistics as of its last flush, so where the first sample after the step falls \
short, a later one counts: up to 3 s after the step (the periodic flush) and before the next \
step in the group or below it, or naming no group; the pass line says how late. \
Default tolerance: \
the unflushed-stats bound + 1/32 of |by| (the task's own kernel memory, page tables \
and such, stays where it was charged). With `at_least = true` only a change short of \
`by` in its direction fails; going beyond passes and the detail says by how much; with \
`at_most = true` the other way round (a count the kernel may not reach in full but can \
never exceed: 16 MiB of zero-filled pages swap out as at most 4096 zero pages). Not \
exercised when the tolerance is half of |by| or more (a step that did half would pass: \
a machine with many CPUs under `--quick`), when no such step ran, or, with `needs = \
\"charge-moving\"`, where charges cannot move. `--quick` divides `by` like the sizes. \
Result name: `change(<cgroup>.<counter> at <step>)`, or `change(<cgroup>.<counter> at \
<step> in <phase>)`.",
    keys: &[
        opt("cgroup", "the group (default: the only declared group)"),
        req("counter", "one counter"),
        req("step", "the step kind across which the change is measured"),
        req(
            "by",
            "the expected change: a signed size (`\"-64M\"`, `\"+8M\"`, `\"8M\"`, `\"0\"`)",
        ),
        opt(
            "tolerance",
            "the allowed difference (a size) (default: the unflushed-stats bound + 1/32 of |by|)",
        ),
        opt("needs", "`\"charge-moving\"`"),
        opt(
            "at_least",
            "only falling short of `by` fails; needs a non-zero `by` (default `false`)",
        ),
        opt(
            "at_most",
            "only going beyond `by` fails; needs a non-zero `by` (default `false`)",
        ),
        opt("phase", "only steps of this declared phase"),
        opt(
            "total",
            "judge the change across all such steps together, from before the first to after the last (default `false`: across each)",
        ),
        opt(
            "each",
            "`by` is per object the step made (a hold's `pipes`: how many it made, fewer where the kernel refused one) (default `false`)",
        ),
    ],
    parse,
    promises: &[],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    let counter = i.one_counter()?;
    let step = i.one_step()?;
    let by = i.signed_size("by")?;
    let needs_moving = i.needs_moving()?;
    let at_least = match i.get::<bool>("at_least")? {
        Some(a) if *a.get_ref() && by == 0 => {
            return Err(i.err(a.span(), "at_least needs a non-zero `by`"));
        }
        a => a.is_some_and(|a| a.into_inner()),
    };
    let at_most = match i.get::<bool>("at_most")? {
        Some(a) if *a.get_ref() && (by == 0 || at_least) => {
            return Err(i.err(
                a.span(),
                "at_most needs a non-zero `by` and no at_least (say `by` alone for both bounds)",
            ));
        }
        a => a.is_some_and(|a| a.into_inner()),
    };
    Ok(Check::new(Change {
        cgroup: i.cgroup("cgroup")?,
        counter,
        step,
        phase: i.phase()?,
        expect: Expect {
            by,
            tolerance: i.size("tolerance")?,
            at_least,
            at_most,
            total: i.get::<bool>("total")?.is_some_and(|t| t.into_inner()),
            each: i.get::<bool>("each")?.is_some_and(|t| t.into_inner()),
        },
        needs_moving,
    }))
}

impl CheckSpec for Change {
    fn name(&self) -> String {
        let col = Column::group(&self.cgroup, &self.counter);
        match &self.phase {
            Some(p) => format!("change({col} at {} in {p})", self.step),
            None => format!("change({col} at {})", self.step),
        }
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: vec![self.counter.clone()],
            ..Needs::default()
        }
    }
    /// Only finished steps, each with a sample after it, are judged.
    fn online(&self) -> bool {
        true
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        change_in(
            self.name(),
            rec,
            &Column::group(&self.cgroup, &self.counter),
            (self.step, self.phase.as_deref()),
            self.expect,
            self.needs_moving,
        )
    }
    /// The expected change follows the sizes.
    fn scale_down(&mut self, divisor: u64) {
        self.expect.by /= divisor as i64;
    }
}
