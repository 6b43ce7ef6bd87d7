//! no-ratchet: the values counters settle to do not creep upwards.

use crate::check::args::CheckArgs;
use crate::check::{
    Check, CheckResult, CheckSpec, Kind, Needs, Outcome, columns, missing, opt, req, sum,
};
use crate::model::Record;
use crate::model::StepKind;
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;

/// no-ratchet: the values the counters settle to after each sync (lowest sample before the next
/// step) must stay under `bound` and must not creep upward from cycle to cycle (a leak).
pub fn no_ratchet(
    name: String,
    rec: &Record,
    cgroup: &str,
    counters: &[String],
    bound: Option<u64>,
) -> CheckResult {
    let cols = match columns(rec, cgroup, counters) {
        Ok(c) => c,
        Err(e) => return missing(name, e),
    };
    let bound = bound.unwrap_or(rec.machine.stat_batch_bytes()) as i64;
    let creep_limit = (rec.machine.page_size * rec.machine.cpus) as i64;
    let mut settled = Vec::new();
    for (i, st) in rec
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.kind == StepKind::Sync)
    {
        let next = rec
            .steps
            .get(i + 1)
            .map(|n| n.start)
            .unwrap_or(f64::INFINITY);
        let end = next.min(st.end + 10.0);
        if let Some(v) = rec
            .series
            .rows_between(st.end, end)
            .map(|r| sum(rec, r, &cols))
            .min()
        {
            settled.push(v);
        }
    }
    if settled.len() < 3 {
        return missing(
            name,
            format!("needs at least 3 write+sync cycles, saw {}", settled.len()),
        );
    }
    let fmt = settled
        .iter()
        .map(|v| human_bytes(*v))
        .collect::<Vec<_>>()
        .join(", ");
    let rises = settled.windows(2).filter(|w| w[1] > w[0]).count();
    let creep = settled[settled.len() - 1] - settled[0];
    let max = *settled.iter().max().unwrap();
    let (outcome, detail) = if max > bound {
        (
            Outcome::Fail,
            format!(
                "after a sync the counters stayed at {} (> {}): a leak; values per cycle: {fmt}",
                human_bytes(max),
                human_bytes(bound)
            ),
        )
    } else if creep > creep_limit && rises * 3 >= (settled.len() - 1) * 2 {
        (
            Outcome::Fail,
            format!(
                "the settled value crept up by {} over {} cycles, rising in {rises} of them: a slow leak; values per cycle: {fmt}",
                human_bytes(creep),
                settled.len()
            ),
        )
    } else {
        (
            Outcome::Pass,
            format!("settled values over {} cycles: {fmt}", settled.len()),
        )
    };
    let mut res = CheckResult::new(
        name,
        outcome,
        format!("max {}, creep {}", human_bytes(max), human_bytes(creep)),
        format!(
            "max <= {}, creep <= {} unless noise",
            human_bytes(bound),
            human_bytes(creep_limit)
        ),
        detail,
    );
    res.tolerance = Some(format!(
        "bound {}; creep: more than one page per CPU ({}) with the value rising in 2/3 of the cycles",
        rec.machine.stat_batch_explained(),
        human_bytes(creep_limit)
    ));
    res.bound = Some(bound);
    res
}

/// `no-ratchet`: the values the counters settle to after each sync do not creep upward over the
/// cycles.
#[derive(Debug, Clone, PartialEq)]
pub struct NoRatchet {
    pub cgroup: String,
    pub counters: Vec<String>,
    pub bound: Option<u64>,
}

/// `no-ratchet` in the check table.
pub const KIND: Kind = Kind {
    kind: "no-ratchet",
    doc: "The values the counters (summed) settle to after each `sync` step, the lowest sample \
before the next step and within 10 s, stay at most `bound` and do not creep upward \
from cycle to cycle. A count that leaks a few pages per cycle stays under a single \
bound for a long time; its rise over the cycles shows it. Creep fails when the last \
settled value is more than one page per CPU above the first and the value rose from \
one cycle to the next in at least 2/3 of the cycles. Not exercised with fewer than 3 \
sync cycles. Result name: `no-ratchet(<cgroup>)`.",
    keys: &[
        opt(
            "cgroup",
            "the group whose counters are checked (default: the only declared group)",
        ),
        req("counters", "the counters summed"),
        opt(
            "bound",
            "the most a settled value may be (a size) (default: the unflushed-stats bound)",
        ),
    ],
    parse,
    promises: &[],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(NoRatchet {
        cgroup: i.cgroup("cgroup")?,
        counters: i.counters()?,
        bound: i.size("bound")?,
    }))
}

impl CheckSpec for NoRatchet {
    fn name(&self) -> String {
        format!("no-ratchet({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: self.counters.clone(),
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        no_ratchet(self.name(), rec, &self.cgroup, &self.counters, self.bound)
    }
}
