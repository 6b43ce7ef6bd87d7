//! limit-takes: a limit written below the usage takes at once. Writing memory.max (v1
//! memory.limit_in_bytes) below the group's usage reclaims until the usage fits, or invokes the
//! OOM killer, before the write returns (mm/memcontrol.c memory_max_write; v1
//! mem_cgroup_resize_max fails with EBUSY instead when it cannot reclaim enough).

use crate::check::args::CheckArgs;
use crate::check::{
    CGROUP, Check, CheckResult, CheckSpec, Kind, Needs, Outcome, missing, row_at_or_after,
};
use crate::model::contract::{v1, v2};
use crate::model::counter::USAGE;
use crate::model::error::ScenarioError;
use crate::model::units::{human_bytes, parse_size};
use crate::model::{Column, Record, StepKind};

/// `limit-takes` in the check table.
pub const KIND: Kind = Kind {
    kind: "limit-takes",
    doc: "Each `set` step that lowered the group's memory limit (v2 memory.max, v1 \
memory.limit_in_bytes) below its usage and succeeded left the usage within the new limit: the \
first sample taken after the write returned shows at most the limit. The kernel reclaims before \
the write returns (memory_max_write; v1 mem_cgroup_resize_max) and, where reclaim cannot make \
the usage fit, v2 invokes the OOM killer and v1 refuses the write with EBUSY. Tolerance: the \
per-CPU charge stock (64 pages x CPUs) and a huge page (2 MiB): a charge between the write and \
the sample tries the batch or a THP at once. Not exercised when no set step lowered the limit \
below the usage sampled before it. Result name: `limit-takes(<cgroup>)`.",
    keys: &[CGROUP],
    parse,
    promises: &[&v2::MAX_LOWERED, &v1::LIMIT],
};

#[derive(Debug, Clone, PartialEq)]
pub struct LimitTakes {
    pub cgroup: String,
}

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(LimitTakes {
        cgroup: i.cgroup("cgroup")?,
    }))
}

impl CheckSpec for LimitTakes {
    fn name(&self) -> String {
        format!("limit-takes({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: vec![USAGE.into()],
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        limit_takes(self.name(), rec, &self.cgroup)
    }
}

/// The limit files of both versions.
const LIMIT_FILES: [&str; 2] = ["memory.max", "memory.limit_in_bytes"];

fn limit_takes(name: String, rec: &Record, cgroup: &str) -> CheckResult {
    let Some(usage) = rec.series.col(&Column::group(cgroup, USAGE)) else {
        return missing(name, format!("{cgroup}'s usage was not sampled"));
    };
    let m = &rec.machine;
    let tolerance = 64 * m.cpus * m.page_size + (2 << 20);
    let mut judged = Vec::new();
    for s in (rec.steps.iter()).filter(|s| s.kind == StepKind::Set && s.cgroup == cgroup) {
        let Some(k) = s
            .knob
            .as_ref()
            .filter(|k| LIMIT_FILES.contains(&k.file.as_str()))
        else {
            continue;
        };
        let (None, Some(limit)) = (
            &k.error,
            k.written.as_deref().and_then(|w| parse_size(w).ok()),
        ) else {
            continue;
        };
        let before = rec
            .series
            .get(crate::check::row_done_before(rec, s.start), usage);
        let Some(after_row) = row_at_or_after(rec, s.end) else {
            continue;
        };
        if before <= limit as i64 {
            continue;
        }
        let after = rec.series.get(after_row, usage);
        if after > (limit + tolerance) as i64 {
            let mut r = CheckResult::new(
                name,
                Outcome::Fail,
                format!("usage {}", human_bytes(after)),
                format!("<= {} (the limit written)", human_bytes(limit as i64)),
                format!(
                    "{cgroup}'s {} was lowered from a usage of {} to {}; at t={:.3}s, after the write returned, the usage was still {}",
                    k.file,
                    human_bytes(before),
                    human_bytes(limit as i64),
                    rec.series.t[after_row],
                    human_bytes(after)
                ),
            );
            r.tolerance = Some(format!(
                "{} (64 pages x {} CPUs of charge stock + a 2 MiB huge page)",
                human_bytes(tolerance as i64),
                m.cpus
            ));
            r.at = Some(rec.series.t[after_row]);
            r.bound = Some(limit as i64);
            r.columns = vec![Column::group(cgroup, USAGE)];
            return r;
        }
        judged.push(format!(
            "{} -> {} (usage then {})",
            human_bytes(before),
            human_bytes(limit as i64),
            human_bytes(after)
        ));
    }
    if judged.is_empty() {
        return missing(
            name,
            format!("no set step lowered {cgroup}'s limit below its usage"),
        );
    }
    CheckResult::new(
        name,
        Outcome::Pass,
        judged.join("; "),
        "usage within the new limit once the write returned".into(),
        format!(
            "{cgroup}'s limit was lowered below its usage {} time(s) and took at once",
            judged.len()
        ),
    )
}
