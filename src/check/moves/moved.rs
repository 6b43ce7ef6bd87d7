//! moved: a move step carried what its scenario is about. What a move carried is the least of what
//! left the source and arrived in the destination around the write to cgroup.procs; a task that
//! keeps charging new pages in its new group meanwhile makes that an upper bound, so the moved
//! task should only touch memory it already has (as move-during-writeback's does). A scenario about moving dirty pages
//! whose move carried none (charge moving moves mapped pages only; a buffered writer's page cache
//! stays behind) has tested nothing about them: it is `skip`, never `pass`.

use crate::check::args::CheckArgs;
use crate::check::{Check, CheckResult, CheckSpec, Kind, Outcome, opt, req};
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;
use crate::model::{MoveRecord, Record};

/// `moved`: every move of `task` carried at least `min` bytes of `counters` (summed) from its
/// source group to its destination, and the source held at least `held` of them right before
/// it; else the scenario did not exercise what it is about. `held` alone is for what a broken
/// kernel may not carry (writeback a move leaves behind): only what was there to move counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    pub task: String,
    pub counters: Vec<String>,
    pub want: Want,
}

/// What each move must show: bytes carried, bytes the source held (None: no demand).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Want {
    pub min: Option<u64>,
    pub held: Option<u64>,
}

/// `moved` in the check table.
pub const KIND: Kind = Kind {
    kind: "moved",
    doc: "Every `move` of `task` carried at least `min` of the counters (summed): per counter \
the least of what left the source and what arrived in the destination, read right \
before and after the write to cgroup.procs; with `held`, the source held at least that \
much of them right before the move. `held` alone demands only that: it is for what a \
broken kernel might not carry, such as writeback a move leaves behind. It judges no \
count; it proves the scenario tested what it is about: charge moving moves mapped \
pages only, so a buffered writer's page cache stays behind, and a scenario about \
moving dirty pages whose move carried none has tested nothing. Otherwise the scenario \
is `skip`, with what was carried and what the source held. It is always not exercised \
where charges cannot move, and when the task was never moved. A task that keeps \
charging new pages in its new group makes \"carried\" an upper bound, so the moved task \
should touch only memory it already has. `--quick` divides `min` and `held` (to at \
least 1 byte). Result name: `moved(<task>: <counters joined by +>)`.",
    keys: &[
        req("task", "a task started by a `hold` step of the scenario"),
        req(
            "counters",
            "counters a move records: `usage`, `anon`, `file`, `mapped`, `dirty`, `writeback`",
        ),
        opt(
            "min",
            "the least a move must carry (a size above 0) (default `\"1M\"` when `held` is not set, \
else no demand)",
        ),
        opt(
            "held",
            "the least the source must hold right before the move (a size above 0)",
        ),
    ],
    parse,
    promises: &[],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    let task = i.need::<String>("task")?;
    if !i.holds(task.get_ref()) {
        return Err(i.err(
            task.span(),
            format!("no hold step starts a task {:?}", task.get_ref()),
        ));
    }
    let counters = i.counters()?;
    if let Some(c) = counters
        .iter()
        .find(|c| !MoveRecord::COUNTERS.contains(&c.as_str()))
    {
        return Err(i.err(
            i.span(),
            format!(
                "a move records only {}, not {c:?}",
                MoveRecord::COUNTERS.join(", ")
            ),
        ));
    }
    let (min, held) = (i.size("min")?, i.size("held")?);
    if min == Some(0) || held == Some(0) {
        return Err(i.err(
            i.span(),
            "min and held must be above 0 (a move always carries 0 or more)",
        ));
    }
    let want = Want {
        min: min.or(if held.is_none() { Some(1 << 20) } else { None }),
        held,
    };
    Ok(Check::new(Moved {
        task: task.into_inner(),
        counters,
        want,
    }))
}

impl CheckSpec for Moved {
    fn name(&self) -> String {
        format!("moved({}: {})", self.task, self.counters.join("+"))
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        moved(self.name(), rec, &self.task, &self.counters, self.want)
    }
    fn scale_down(&mut self, divisor: u64) {
        for v in [&mut self.want.min, &mut self.want.held]
            .into_iter()
            .flatten()
        {
            *v = (*v / divisor).max(1);
        }
    }
}

pub fn moved(
    name: String,
    rec: &Record,
    task: &str,
    counters: &[String],
    want: Want,
) -> CheckResult {
    let what = counters.join("+");
    let moves: Vec<_> = rec.moves.iter().filter(|m| m.task == task).collect();
    if moves.is_empty() {
        return crate::check::missing(name, format!("task {task} was never moved"));
    }
    if let Some(r) = crate::check::without_moving(&name, rec, true) {
        return r;
    }
    let mut text = Vec::new();
    let mut outcome = Outcome::Pass;
    for m in &moves {
        let (got, held) = (m.carried_of(counters), m.source_of(counters));
        text.push(format!(
            "{} -> {}: carried {} of {what} (the source held {} at the move)",
            m.from,
            m.to,
            human_bytes(got),
            human_bytes(held)
        ));
        let short = |need: Option<u64>, have: i64| need.is_some_and(|n| have < n as i64);
        if short(want.min, got) || short(want.held, held) {
            outcome = Outcome::NotExercised;
        }
    }
    let detail = match outcome {
        Outcome::Pass => format!(
            "the move of task {task} carried its {what}: {}",
            text.join("; ")
        ),
        _ => format!(
            "the move of task {task} did not {}, so the scenario did not test moving them: {}",
            want.describe(&what),
            text.join("; ")
        ),
    };
    let carried: Vec<String> = moves
        .iter()
        .map(|m| {
            format!(
                "{} carried of {} held",
                human_bytes(m.carried_of(counters)),
                human_bytes(m.source_of(counters))
            )
        })
        .collect();
    CheckResult::new(
        name,
        outcome,
        carried.join(", "),
        format!("{} per move", want.describe(&what)),
        detail,
    )
}

impl Want {
    /// "carry 4.0 MiB of dirty+writeback", "find 2.0 MiB of writeback in the source", or both.
    fn describe(&self, what: &str) -> String {
        let mut parts = Vec::new();
        if let Some(m) = self.min {
            parts.push(format!("carry {} of {what}", human_bytes(m as i64)));
        }
        if let Some(h) = self.held {
            parts.push(format!(
                "find {} of {what} in the source at the move",
                human_bytes(h as i64)
            ));
        }
        parts.join(" and ")
    }
}
