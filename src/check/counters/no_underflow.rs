//! no-underflow: no sampled value is negative.

use crate::check::args::CheckArgs;
use crate::check::{
    Check, CheckResult, CheckSpec, Kind, Needs, Outcome, columns, missing, opt, req,
};
use crate::model::Record;
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;

/// (a) no sampled value is negative. Old kernels print an underflowed counter as a negative number
/// (or as a huge unsigned one, which the parser turns back into the negative number it encodes).
pub fn no_underflow(name: String, rec: &Record, cgroup: &str, counters: &[String]) -> CheckResult {
    let cols = match columns(rec, cgroup, counters) {
        Ok(c) => c,
        Err(e) => return missing(name, e),
    };
    for row in 0..rec.series.len() {
        for (col, i) in &cols {
            let v = rec.series.get(row, *i);
            if v < 0 {
                let t = rec.series.t[row];
                let mut r = CheckResult::new(
                    name,
                    Outcome::Fail,
                    format!("{col} = {v} ({})", human_bytes(v)),
                    ">= 0".into(),
                    format!(
                        "{col} went negative at t={t:.3}s (sample {row}, phase {}): the counter underflowed",
                        rec.phase_at(t)
                    ),
                );
                r.at = Some(t);
                r.bound = Some(0);
                r.columns = vec![col.clone()];
                return r;
            }
        }
    }
    let n = rec.series.len();
    CheckResult::new(
        name,
        Outcome::Pass,
        format!("min >= 0 over {n} samples"),
        ">= 0".into(),
        format!("{} never negative in {n} samples", counters.join(", ")),
    )
}

/// `no-underflow`: no sampled value of the group's counters is negative.
#[derive(Debug, Clone, PartialEq)]
pub struct NoUnderflow {
    pub cgroup: String,
    pub counters: Vec<String>,
}

/// `no-underflow` in the check table.
pub const KIND: Kind = Kind {
    kind: "no-underflow",
    doc:
        "No sampled value of the group's counters is negative, at any sample. A count of pages or \
bytes
cannot be below zero; a kernel that subtracts what it never added underflows. Old \
kernels print an
underflowed counter as a negative number, or as a value above 2^63 \
printed unsigned, which the
parser turns back into the negative number it encodes. No \
tolerance. Result name:
`no-underflow(<cgroup>)`.",
    keys: &[
        opt(
            "cgroup",
            "the group whose counters are checked (default: the only declared group)",
        ),
        req("counters", "the counters that must never be negative"),
    ],
    parse,
    promises: &[],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(NoUnderflow {
        cgroup: i.cgroup("cgroup")?,
        counters: i.counters()?,
    }))
}

impl CheckSpec for NoUnderflow {
    fn name(&self) -> String {
        format!("no-underflow({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: self.counters.clone(),
            ..Needs::default()
        }
    }
    /// A negative sample is a failure whatever follows.
    fn online(&self) -> bool {
        true
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        no_underflow(self.name(), rec, &self.cgroup, &self.counters)
    }
}
