//! follows: across a step, what one column held moves to another.

use crate::check::args::CheckArgs;
use crate::check::{
    Check, CheckResult, CheckSpec, Kind, Needs, Outcome, missing, opt, req, row_at_or_after,
    row_at_or_before, signed,
};
use crate::model::StepKind;
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;
use crate::model::{Column, Record};

/// follows: across each step of kind `step`, everything column `from` held moves to `to`: `from`
/// falls to about 0 and `to` rises by what `from` had before the step. Tolerance: the unflushed
/// stats bound plus 1/32 of the amount. Nothing to move (from at ~0 before) is not exercised.
pub fn follows(
    name: String,
    rec: &Record,
    (from, to): (&Column, &Column),
    step: StepKind,
    needs_moving: bool,
) -> CheckResult {
    if let Some(r) = crate::check::without_moving(&name, rec, needs_moving) {
        return r;
    }
    let (Some(f), Some(t)) = (rec.series.col(from), rec.series.col(to)) else {
        return missing(name, format!("columns {from} and {to} were not sampled"));
    };
    let batch = rec.machine.stat_batch_bytes() as i64;
    let mut seen = Vec::new();
    for st in rec.steps.iter().filter(|s| s.kind == step) {
        let r0 = row_at_or_before(rec, st.start);
        let Some(r1) = row_at_or_after(rec, st.end) else {
            return missing(
                name,
                format!("no sample after the {step} step at t={:.3}s", st.end),
            );
        };
        let (a0, a1) = (rec.series.get(r0, f), rec.series.get(r1, f));
        let (b0, b1) = (rec.series.get(r0, t), rec.series.get(r1, t));
        let tol = batch + a0.abs() / 32;
        if a0 <= tol {
            return missing(
                name,
                format!(
                    "nothing to move: {from} was {} before step '{}'",
                    human_bytes(a0),
                    st.describe
                ),
            );
        }
        let moved = b1 - b0;
        if a1.abs() > tol || (moved - a0).abs() > tol {
            let mut res = CheckResult::new(
                name,
                Outcome::Fail,
                format!(
                    "{from} {} -> {}, {to} rose by {}",
                    human_bytes(a0),
                    human_bytes(a1),
                    signed(moved)
                ),
                format!(
                    "{from} -> 0 and {to} +{}, each +- {}",
                    human_bytes(a0),
                    human_bytes(tol)
                ),
                format!(
                    "across step '{}' (t={:.3}s..{:.3}s) {}",
                    st.describe,
                    st.start,
                    st.end,
                    if a1.abs() > tol {
                        "part of it stayed behind"
                    } else {
                        "the destination did not receive what the source had"
                    }
                ),
            );
            res.at = Some(rec.series.t[r1]);
            res.columns = vec![to.clone()];
            res.tolerance = Some(format!(
                "{} + 1/32 of the amount",
                rec.machine.stat_batch_explained()
            ));
            return res;
        }
        seen.push(human_bytes(a0));
    }
    if seen.is_empty() {
        return missing(name, format!("no {step} step ran"));
    }
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!("moved {}", seen.join(", ")),
        format!("all of {from} to {to}"),
        format!(
            "all of {from} ({}) moved to {to} at each {step} step",
            seen.join(", ")
        ),
    );
    res.tolerance = Some(format!(
        "{} + 1/32 of the amount",
        rec.machine.stat_batch_explained()
    ));
    res
}

/// `follows`: across each step of kind `step`, all of `from`'s counter moves to `to`: `from` ends
/// near 0 and `to` rises by what `from` had.
#[derive(Debug, Clone, PartialEq)]
pub struct Follows {
    pub from: String,
    pub to: String,
    pub counter: String,
    pub step: StepKind,
    pub needs_moving: bool,
}

/// `follows` in the check table.
pub const KIND: Kind = Kind {
    kind: "follows",
    doc: "Across each step of kind `step`, everything `from`'s counter held moves to `to`: \
`from` falls to about 0 and `to` rises by what `from` had before the step. A move with \
charge moving carries the task's charges from the old group to the new one. Tolerance: \
the unflushed-stats bound + 1/32 of the amount. Not exercised when `from` held nothing \
(no more than the tolerance) before a step, when no such step ran, or, with `needs = \
\"charge-moving\"`, where charges cannot move. Result name: `follows(<from> -> <to>: \
<counter> at <step>)`.",
    keys: &[
        req("from", "the declared group the counter leaves"),
        req("to", "the declared group it arrives in"),
        req("counter", "one counter"),
        req(
            "step",
            "the step kind across which it moves (the built-in scenarios use `move`)",
        ),
        opt("needs", "`\"charge-moving\"`"),
    ],
    parse,
    promises: &[],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    let counter = i.one_counter()?;
    let step = i.one_step()?;
    Ok(Check::new(Follows {
        from: i.named_cgroup("from")?,
        to: i.named_cgroup("to")?,
        counter,
        step,
        needs_moving: i.needs_moving()?,
    }))
}

impl CheckSpec for Follows {
    fn name(&self) -> String {
        let Follows {
            from,
            to,
            counter,
            step,
            ..
        } = self;
        format!("follows({from} -> {to}: {counter} at {step})")
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
        follows(
            self.name(),
            rec,
            (
                &Column::group(&self.from, &self.counter),
                &Column::group(&self.to, &self.counter),
            ),
            self.step,
            self.needs_moving,
        )
    }
}
