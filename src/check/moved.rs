//! moved: a move step carried what its scenario is about. What a move carried is the least of what
//! left the source and arrived in the destination around the write to cgroup.procs; a task that
//! keeps charging new pages in its new group meanwhile makes that an upper bound, so the moved
//! task should only touch memory it already has (as move-during-writeback's does). A scenario about moving dirty pages
//! whose move carried none (charge moving moves mapped pages only; a buffered writer's page cache
//! stays behind) has tested nothing about them: it is `skip`, never `pass`.

use super::{Check, CheckResult, CheckSpec, Outcome};
use crate::model::{MoveRecord, Record};
use crate::scenario::{CheckInput, ScenarioError, Step};
use crate::units::human_bytes;

/// `moved`: every move of `task` carried at least `min` bytes of `counters` (summed) from its
/// source group to its destination; else the scenario did not exercise what it is about.
#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    pub task: String,
    pub counters: Vec<String>,
    pub min: u64,
}

pub fn parse(i: &CheckInput) -> Result<Check, ScenarioError> {
    i.only(&["task", "counters", "min"])?;
    let task = i.need::<String>("task")?;
    let held = i
        .phases()
        .iter()
        .flat_map(|p| &p.steps)
        .any(|s| matches!(s, Step::Hold { task: t, .. } if t == task.get_ref()));
    if !held {
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
    let min = i.size("min")?.unwrap_or(1 << 20);
    if min == 0 {
        return Err(i.err(
            i.span(),
            "min must be above 0 (a move always carries 0 or more)",
        ));
    }
    Ok(Check::new(Moved {
        task: task.into_inner(),
        counters,
        min,
    }))
}

impl CheckSpec for Moved {
    fn name(&self) -> String {
        format!("moved({}: {})", self.task, self.counters.join("+"))
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        moved(
            self.name(),
            rec,
            &self.task,
            &self.counters,
            self.min as i64,
        )
    }
    fn scale_down(&mut self, divisor: u64) {
        self.min = (self.min / divisor).max(1);
    }
}

pub fn moved(name: String, rec: &Record, task: &str, counters: &[String], min: i64) -> CheckResult {
    let what = counters.join("+");
    let moves: Vec<_> = rec.moves.iter().filter(|m| m.task == task).collect();
    if moves.is_empty() {
        return super::missing(name, format!("task {task} was never moved"));
    }
    if let Some(r) = super::without_moving(&name, rec, true) {
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
        if got < min {
            outcome = Outcome::NotExercised;
        }
    }
    let detail = match outcome {
        Outcome::Pass => format!(
            "the move of task {task} carried its {what}: {}",
            text.join("; ")
        ),
        _ => format!(
            "the move of task {task} did not carry {} of {what}, so the scenario did not test moving them: {}",
            human_bytes(min),
            text.join("; ")
        ),
    };
    let carried: Vec<String> = moves
        .iter()
        .map(|m| human_bytes(m.carried_of(counters)))
        .collect();
    CheckResult::new(
        name,
        outcome,
        carried.join(", "),
        format!(">= {} per move", human_bytes(min)),
        detail,
    )
}
