//! peak-reset: a watermark reset through one descriptor restarts from the current usage for
//! that descriptor only. cgroup v2's memory.peak and memory.swap.peak (6.12) keep a watermark
//! per open file: a write resets the writer's to the usage of the moment, and reads through it
//! show the most since then, while the group's own watermark, read through any other
//! descriptor, is left as it was.

use crate::check::args::CheckArgs;
use crate::check::{
    CGROUP, Check, CheckResult, CheckSpec, Kind, Needs, Outcome, missing, req, row_at_or_after,
    row_done_before,
};
use crate::model::contract::{Contract, v2};
use crate::model::counter::{SWAP, USAGE};
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;
use crate::model::{Column, KnobWrite, Record, StepKind, StepRecord};

/// `peak-reset` in the check table.
pub const KIND: Kind = Kind {
    kind: "peak-reset",
    doc: "Each `set` step that wrote the group's `file` (`memory.peak` or `memory.swap.peak`) \
reset the watermark for the descriptor written to only: read through it right after the write, \
the file shows the usage of the moment (memory.current, or memory.swap.current: between the \
least sampled before the step and the most sampled after it), while a new descriptor still \
shows the group's watermark from before (at least what it read before the write). Judged only \
where the watermark was above the usage by more than twice the tolerance (else a reset that \
did nothing would pass). Tolerance: the per-CPU charge stock (64 pages x CPUs) and a huge page \
(2 MiB). Not exercised on a kernel whose watermark file cannot be written (before 6.12: \
EACCES or EINVAL) or has no such file. Result name: `peak-reset(<cgroup>: <file>)`.",
    keys: &[CGROUP, req("file", "`memory.peak` or `memory.swap.peak`")],
    parse,
    promises: &[&v2::PEAK_RESET, &v2::SWAP_PEAK_RESET],
};

#[derive(Debug, Clone, PartialEq)]
pub struct PeakReset {
    pub cgroup: String,
    pub file: String,
}

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    let f = i.need::<String>("file")?;
    if !["memory.peak", "memory.swap.peak"].contains(&f.get_ref().as_str()) {
        return Err(i.err(f.span(), "file must be memory.peak or memory.swap.peak"));
    }
    Ok(Check::new(PeakReset {
        cgroup: i.cgroup("cgroup")?,
        file: f.into_inner(),
    }))
}

impl PeakReset {
    /// The counter the watermark follows, and the promise it keeps.
    fn counter(&self) -> (&'static str, &'static Contract) {
        if self.file == "memory.peak" {
            (USAGE, &v2::PEAK_RESET)
        } else {
            (SWAP, &v2::SWAP_PEAK_RESET)
        }
    }
}

impl CheckSpec for PeakReset {
    fn name(&self) -> String {
        format!("peak-reset({}: {})", self.cgroup, self.file)
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: vec![self.counter().0.into()],
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        let r = peak_reset(self.name(), rec, &self.cgroup, &self.file, self.counter().0);
        match r.outcome {
            Outcome::Fail => r.breaking(self.counter().1),
            _ => r,
        }
    }
    fn promises(&self, _: &Record) -> Vec<&'static Contract> {
        vec![self.counter().1]
    }
}

fn number(s: Option<&str>) -> Option<i64> {
    s?.trim().parse().ok()
}

/// The set steps that wrote `cgroup`'s `file`.
fn resets<'a>(rec: &'a Record, cgroup: &str, file: &str) -> Vec<(&'a StepRecord, &'a KnobWrite)> {
    (rec.steps.iter())
        .filter(|s| s.kind == StepKind::Set && s.cgroup == cgroup)
        .filter_map(|s| {
            let k = s.knob.as_ref()?;
            (k.file == file && k.written.is_some()).then_some((s, k))
        })
        .collect()
}

fn peak_reset(name: String, rec: &Record, cgroup: &str, file: &str, counter: &str) -> CheckResult {
    let Some(col) = rec.series.col(&Column::group(cgroup, counter)) else {
        return missing(name, format!("{cgroup}'s {counter} was not sampled"));
    };
    let m = &rec.machine;
    let tol = (64 * m.cpus * m.page_size + (2 << 20)) as i64;
    let steps = resets(rec, cgroup, file);
    if let Some((_, k)) = steps.iter().find(|(_, k)| k.error.is_some()) {
        return missing(
            name,
            format!(
                "writing {cgroup}'s {file} failed with {}: this kernel cannot reset it (6.12+)",
                k.error.as_deref().unwrap_or("?")
            ),
        );
    }
    let mut judged = Vec::new();
    for (st, k) in steps {
        let (Some(before), Some(fresh), Some(own)) = (
            number(k.before.as_deref()),
            number(k.after.as_deref()),
            number(k.same_fd.as_deref()),
        ) else {
            continue;
        };
        let s = &rec.series;
        let lo = s.get(row_done_before(rec, st.start), col);
        let Some(after_row) = row_at_or_after(rec, st.end) else {
            continue;
        };
        let hi = s.get(after_row, col).max(lo);
        if before - hi <= 2 * tol {
            continue;
        }
        let what = format!(
            "{cgroup}'s {file} read {} before the reset, the usage was {}..{} around it",
            human_bytes(before),
            human_bytes(lo),
            human_bytes(hi)
        );
        if own > hi + tol || own < lo - tol {
            return fail(
                name,
                st,
                tol,
                format!(
                    "through the descriptor reset, it then read {}: not the usage of the moment ({what})",
                    human_bytes(own)
                ),
                own,
            );
        }
        if fresh < before - tol {
            return fail(
                name,
                st,
                tol,
                format!(
                    "through a new descriptor it then read {}: the group's own watermark was reset too ({what})",
                    human_bytes(fresh)
                ),
                fresh,
            );
        }
        judged.push(format!(
            "{} -> {} for the writer, {} for others",
            human_bytes(before),
            human_bytes(own),
            human_bytes(fresh)
        ));
    }
    if judged.is_empty() {
        return missing(
            name,
            format!("no reset of {cgroup}'s {file} found its watermark above the usage"),
        );
    }
    let mut r = CheckResult::new(
        name,
        Outcome::Pass,
        judged.join("; "),
        "the writer's reads restart at the usage, others' keep the watermark".into(),
        format!(
            "{} reset(s) of {cgroup}'s {file} held to the descriptor written to",
            judged.len()
        ),
    );
    r.tolerance = Some(format!(
        "{} (64 pages x {} CPUs of charge stock + a 2 MiB huge page)",
        human_bytes(tol),
        m.cpus
    ));
    r
}

fn fail(name: String, st: &StepRecord, tol: i64, why: String, actual: i64) -> CheckResult {
    let mut r = CheckResult::new(
        name,
        Outcome::Fail,
        human_bytes(actual),
        "the usage of the moment for the writer, the old watermark for others".into(),
        format!("after '{}' (t={:.3}s): {why}", st.describe, st.end),
    );
    r.tolerance = Some(human_bytes(tol));
    r.at = Some(st.end);
    r
}
