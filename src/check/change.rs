//! change: a step changes a column by a given amount.

use super::{
    Check, CheckResult, CheckSpec, Needs, Outcome, missing, row_at_or_after, row_at_or_before,
    signed,
};
use crate::model::{Column, Record};
use crate::scenario::{CheckInput, ScenarioError};
use crate::units::human_bytes;

/// change: across each step of kind `step`, column `col` changed by `by` bytes: the value at the
/// first sample after the step minus the value at the last sample before it. Default tolerance:
/// the memcg unflushed-stats bound plus 1/32 of |by| (memory the kernel keeps for the task itself,
/// page tables and such, is charged where it was allocated and does not move).
pub fn change(
    name: String,
    rec: &Record,
    col: &str,
    step: &str,
    by: i64,
    tolerance: Option<u64>,
    needs_moving: bool,
) -> CheckResult {
    if let Some(r) = super::without_moving(&name, rec, needs_moving) {
        return r;
    }
    let Some(c) = rec.series.col(col) else {
        return missing(name, format!("column {col} was not sampled"));
    };
    let (tol, tol_text) = match tolerance {
        Some(t) => (
            t as i64,
            format!("{} (set in the scenario)", human_bytes(t as i64)),
        ),
        None => {
            let t = rec.machine.stat_batch_bytes() as i64 + by.abs() / 32;
            (
                t,
                format!(
                    "{} = {} + 1/32 of the expected change (kernel memory of the task stays where it was charged)",
                    human_bytes(t),
                    rec.machine.stat_batch_explained()
                ),
            )
        }
    };
    let mut seen = Vec::new();
    for st in rec.steps.iter().filter(|s| s.kind == step) {
        let r0 = row_at_or_before(rec, st.start);
        let Some(r1) = row_at_or_after(rec, st.end) else {
            return missing(
                name,
                format!("no sample after the {step} step at t={:.3}s", st.end),
            );
        };
        let d = rec.series.get(r1, c) - rec.series.get(r0, c);
        if (d - by).abs() > tol {
            let mut res = CheckResult::new(
                name,
                Outcome::Fail,
                format!("{col} changed by {} ({d} B)", signed(d)),
                format!("{} +- {}", signed(by), human_bytes(tol)),
                format!(
                    "across step '{}' (t={:.3}s..{:.3}s, phase {}), {col} went from {} to {}: {}",
                    st.describe,
                    st.start,
                    st.end,
                    rec.phases[st.phase].name,
                    human_bytes(rec.series.get(r0, c)),
                    human_bytes(rec.series.get(r1, c)),
                    if d.abs() < by.abs() {
                        "less moved than expected (charge left behind?)"
                    } else {
                        "more than expected (charged twice?)"
                    }
                ),
            );
            res.tolerance = Some(tol_text);
            res.at = Some(rec.series.t[r1]);
            res.column = Some(col.to_string());
            return res;
        }
        seen.push(signed(d));
    }
    if seen.is_empty() {
        return missing(name, format!("no {step} step ran"));
    }
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!("changed by {}", seen.join(", ")),
        format!("{} +- {}", signed(by), human_bytes(tol)),
        format!(
            "{col} changed by {} across each {step} step",
            seen.join(", ")
        ),
    );
    res.tolerance = Some(tol_text);
    res
}

/// `change`: across each step of kind `step`, the group's counter changed by `by` bytes
/// (+- tolerance). With `needs_moving`, not exercised where the kernel cannot move charges.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub cgroup: String,
    pub counter: String,
    pub step: String,
    pub by: i64,
    pub tolerance: Option<u64>,
    pub needs_moving: bool,
}

pub fn parse(i: &CheckInput) -> Result<Check, ScenarioError> {
    i.only(&["cgroup", "counter", "step", "by", "tolerance", "needs"])?;
    let counter = i.one_counter()?;
    let step = i.one_step()?;
    let by = i.signed_size("by")?;
    let needs_moving = i.needs_moving()?;
    Ok(Check::new(Change {
        cgroup: i.cgroup("cgroup")?,
        counter,
        step,
        by,
        tolerance: i.size("tolerance")?,
        needs_moving,
    }))
}

impl CheckSpec for Change {
    fn name(&self) -> String {
        let col = Column::group(&self.cgroup, &self.counter);
        format!("change({col} at {})", self.step)
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: vec![self.counter.clone()],
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        change(
            self.name(),
            rec,
            &Column::group(&self.cgroup, &self.counter).to_string(),
            &self.step,
            self.by,
            self.tolerance,
            self.needs_moving,
        )
    }
    /// The expected change follows the sizes.
    fn scale_down(&mut self, divisor: u64) {
        self.by /= divisor as i64;
    }
}
