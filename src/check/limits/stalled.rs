//! stalled: a group's memory.pressure (PSI) counts the time its tasks were stalled on memory.
//! The kernel's throttling above memory.high and the reclaim it forces are memory stalls
//! (psi_memstall_enter around them), so a task throttled for seconds adds seconds to the
//! group's `some total=` (microseconds). Reclaim a task does to enforce a limit it writes is not
//! a stall of its own (since 5.9, e22c6ed90aa9: only the allocation paths enter a memstall),
//! so a group whose task only writes another group's limit shows none.

use std::time::Duration;

use crate::check::args::CheckArgs;
use crate::check::{CGROUP, Check, CheckResult, CheckSpec, Kind, Outcome, missing, opt};
use crate::model::contract::v2;
use crate::model::error::ScenarioError;
use crate::model::{Record, StepKind};

/// `stalled` in the check table.
pub const KIND: Kind = Kind {
    kind: "stalled",
    doc: "cgroup v2: between the group's first and last `set` steps that read its \
memory.pressure, its `some total=` (the microseconds some task of the group was stalled on \
memory) rose by at least `at_least`, or by at most `at_most`. The scenario puts the reads around \
steps the kernel must throttle (memory.high's sleeps and reclaim are memory stalls: \
psi_memstall_enter), so the stall is at least most of their length; or around a limit that a task \
of the group writes (`set` with `from`), whose reclaim in the write is no stall of the writer's \
(since 5.9). Not exercised where the kernel has no memory.pressure (PSI off, \
or disabled at boot as Debian's kernels are without psi=1) or fewer than two reads ran. Result \
name: `stalled(<cgroup>)`.",
    keys: &[
        CGROUP,
        opt("at_least", "the least rise of `some total=` (a duration)"),
        opt("at_most", "the most it may rise (a duration)"),
    ],
    parse,
    promises: &[&v2::PRESSURE],
};

/// The bound on the rise of `some total=`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    AtLeast(Duration),
    AtMost(Duration),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stalled {
    pub cgroup: String,
    pub bound: Bound,
}

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    let bound = match (i.duration("at_least")?, i.duration("at_most")?) {
        (Some(d), None) if !d.is_zero() => Bound::AtLeast(d),
        (None, Some(d)) => Bound::AtMost(d),
        _ => {
            return Err(i.err(
                i.span(),
                "stalled needs at_least (a duration above 0) or at_most, one of them",
            ));
        }
    };
    Ok(Check::new(Stalled {
        cgroup: i.cgroup("cgroup")?,
        bound,
    }))
}

/// `some total=` of a memory.pressure text, in microseconds.
fn some_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix("total="))?
        .parse()
        .ok()
}

impl CheckSpec for Stalled {
    fn name(&self) -> String {
        format!("stalled({})", self.cgroup)
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        let name = self.name();
        let reads: Vec<(f64, Option<u64>, Option<&String>)> = (rec.steps.iter())
            .filter(|s| s.kind == StepKind::Set && s.cgroup == self.cgroup)
            .filter_map(|s| Some((s, s.knob.as_ref()?)))
            .filter(|(_, k)| k.file == "memory.pressure" && k.written.is_none())
            .map(|(s, k)| {
                (
                    s.end,
                    k.after.as_deref().and_then(some_total),
                    k.error.as_ref(),
                )
            })
            .collect();
        if reads.iter().any(|r| r.2.is_some() || r.1.is_none()) || reads.len() < 2 {
            return missing(
                name,
                format!(
                    "{} has no readable memory.pressure here (PSI off), or fewer than two reads",
                    self.cgroup
                ),
            );
        }
        let (first, last) = (&reads[0], &reads[reads.len() - 1]);
        let rose = last.1.unwrap_or(0).saturating_sub(first.1.unwrap_or(0));
        let (bad, expected, why) = match self.bound {
            Bound::AtLeast(d) => (
                rose < d.as_micros() as u64,
                format!(">= +{:.3} s", d.as_secs_f64()),
                "less than the stall its throttled steps must show",
            ),
            Bound::AtMost(d) => (
                rose > d.as_micros() as u64,
                format!("<= +{:.3} s", d.as_secs_f64()),
                "its tasks stalled on memory although they only wrote a limit",
            ),
        };
        let what = format!(
            "{}'s memory.pressure some total rose by {:.3} s between t={:.3}s and t={:.3}s",
            self.cgroup,
            rose as f64 / 1e6,
            first.0,
            last.0
        );
        if bad {
            let mut r = CheckResult::new(
                name,
                Outcome::Fail,
                format!("+{:.3} s", rose as f64 / 1e6),
                expected,
                format!("{what}: {why}"),
            );
            r.at = Some(last.0);
            return r.breaking(&v2::PRESSURE);
        }
        CheckResult::new(
            name,
            Outcome::Pass,
            format!("+{:.3} s", rose as f64 / 1e6),
            expected,
            what,
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn some_total_reads_the_some_line() {
        let t = "some avg10=0.00 avg60=0.00 avg300=0.00 total=1234\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=99\n";
        assert_eq!(super::some_total(t), Some(1234));
        assert_eq!(super::some_total("full total=1"), None);
    }
}
