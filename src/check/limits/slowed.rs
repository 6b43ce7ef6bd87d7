//! slowed: steps the kernel must throttle take at least a given time. Above memory.swap.high (and
//! memory.high) the kernel puts a charging task to sleep on its way back to user space
//! (mem_cgroup_handle_over_high: overage² × 64 pages' worth of a second per 64 pages charged,
//! at most 2 s). A sleep can only make a step longer, however busy the machine: a step that took
//! less than the penalty was not throttled.

use std::time::Duration;

use crate::check::args::CheckArgs;
use crate::check::{Check, CheckResult, CheckSpec, Kind, Outcome, missing, opt, req};
use crate::model::contract::v2;
use crate::model::error::ScenarioError;
use crate::model::{Record, StepKind};

/// `slowed` in the check table.
pub const KIND: Kind = Kind {
    kind: "slowed",
    doc: "Each step of kind `step` (of `phase`, when given) took at least `at_least` of wall \
time: the kernel throttles a task whose group is above memory.swap.high or memory.high by \
putting it to sleep on its way back to user space (mm/memcontrol.c mem_cgroup_handle_over_high: \
64 × overage² seconds per 64 pages charged, at most 2 s, none below 10 ms). Wall time only grows \
on a busy machine, so a step shorter than the penalty was not throttled; the scenario derives \
`at_least` from the formula, with a margin. Not exercised when no such step ran. Result name: \
`slowed(<step>)`, or `slowed(<step> in <phase>)`.",
    keys: &[
        req("step", "the step kind that must be slowed"),
        req("at_least", "the least wall time each takes (a duration)"),
        opt("phase", "only steps of this declared phase"),
    ],
    parse,
    promises: &[&v2::SWAP_HIGH],
};

#[derive(Debug, Clone, PartialEq)]
pub struct Slowed {
    pub step: StepKind,
    pub phase: Option<String>,
    pub at_least: Duration,
}

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(Slowed {
        step: i.one_step()?,
        phase: i.phase()?,
        at_least: match i.duration("at_least")? {
            Some(d) if !d.is_zero() => d,
            _ => return Err(i.err(i.span(), "slowed needs at_least, a duration above 0")),
        },
    }))
}

impl CheckSpec for Slowed {
    fn name(&self) -> String {
        match &self.phase {
            Some(p) => format!("slowed({} in {p})", self.step),
            None => format!("slowed({})", self.step),
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        let name = self.name();
        let least = self.at_least.as_secs_f64();
        let steps: Vec<_> = (rec.steps.iter())
            .filter(|s| s.kind == self.step)
            .filter(|s| {
                self.phase
                    .as_ref()
                    .is_none_or(|p| &rec.phases[s.phase].name == p)
            })
            .collect();
        if steps.is_empty() {
            return missing(name, format!("no {} step ran", self.step));
        }
        if let Some(s) = steps.iter().find(|s| s.end - s.start < least) {
            let mut r = CheckResult::new(
                name,
                Outcome::Fail,
                format!("{:.3} s", s.end - s.start),
                format!(">= {least:.3} s"),
                format!(
                    "'{}' (t={:.3}s..{:.3}s) took {:.3} s: too short for the sleep the kernel owes a task of a group above its memory.swap.high or memory.high",
                    s.describe,
                    s.start,
                    s.end,
                    s.end - s.start
                ),
            );
            r.at = Some(s.end);
            return r;
        }
        let took: Vec<String> = steps
            .iter()
            .map(|s| format!("{:.3} s", s.end - s.start))
            .collect();
        CheckResult::new(
            name,
            Outcome::Pass,
            took.join(", "),
            format!(">= {least:.3} s"),
            format!(
                "each {} step took at least {least:.3} s: {}",
                self.step,
                took.join(", ")
            ),
        )
    }
}
