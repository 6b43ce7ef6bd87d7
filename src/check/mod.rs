//! Checks: pure functions over a scenario's record (sampled series, phases, steps). Each returns
//! the actual value, what was expected, the tolerance and where it came from, so a failure explains
//! itself. A check whose precondition did not happen returns `NotExercised`, which makes the
//! scenario `skip`, never `pass`.

use serde::Serialize;

use crate::record::Record;
use crate::scenario::Check;
use crate::units::human_bytes;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Pass,
    Fail,
    /// What the check needs did not happen (or cannot be verified on this kernel).
    NotExercised,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    pub name: String,
    pub outcome: Outcome,
    pub passed: bool,
    pub actual: String,
    pub expected: String,
    /// The tolerance and where it comes from.
    pub tolerance: Option<String>,
    /// A sentence for people: what was looked at, and on failure where it broke.
    pub detail: String,
    /// Time (s) of the sample where the check broke, for timelines.
    pub at: Option<f64>,
    /// The bound the failing counter was held to (bytes), for timelines.
    pub bound: Option<i64>,
}

impl CheckResult {
    fn new(
        name: String,
        outcome: Outcome,
        actual: String,
        expected: String,
        detail: String,
    ) -> Self {
        CheckResult {
            name,
            outcome,
            passed: outcome == Outcome::Pass,
            actual,
            expected,
            tolerance: None,
            detail,
            at: None,
            bound: None,
        }
    }
}

/// Evaluates one check on a record. `cgroup` names in counters become `<cgroup>.<counter>` columns.
pub fn evaluate(check: &Check, rec: &Record) -> CheckResult {
    let name = check.name();
    match check {
        Check::NoUnderflow { cgroup, counters } => no_underflow(name, rec, cgroup, counters),
        Check::Settles {
            cgroup,
            counters,
            within,
            bound,
        } => settles(name, rec, cgroup, counters, within.as_secs_f64(), *bound),
        Check::Throughput {
            phase,
            baseline,
            min_ratio,
        } => throughput(name, rec, phase, baseline, *min_ratio),
        Check::Exercised {
            phase,
            vmstat,
            min,
            what,
        } => exercised(name, rec, phase, vmstat, *min, what),
    }
}

fn columns(
    rec: &Record,
    cgroup: &str,
    counters: &[String],
) -> Result<Vec<(String, usize)>, String> {
    counters
        .iter()
        .map(|c| {
            let col = format!("{cgroup}.{c}");
            rec.series
                .col(&col)
                .map(|i| (col.clone(), i))
                .ok_or_else(|| format!("column {col} was not sampled"))
        })
        .collect()
}

fn missing(name: String, why: String) -> CheckResult {
    CheckResult::new(name, Outcome::NotExercised, "-".into(), "-".into(), why)
}

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

/// (b) after each sync step, every counter falls to at most `bound` within `within` seconds (and
/// before the next step starts, which would dirty pages again).
pub fn settles(
    name: String,
    rec: &Record,
    cgroup: &str,
    counters: &[String],
    within: f64,
    bound: Option<u64>,
) -> CheckResult {
    let cols = match columns(rec, cgroup, counters) {
        Ok(c) => c,
        Err(e) => return missing(name, e),
    };
    let (bound, tol) = match bound {
        Some(b) => (
            b as i64,
            format!("{} (set in the scenario)", human_bytes(b as i64)),
        ),
        None => (
            rec.machine.stat_batch_bytes() as i64,
            rec.machine.stat_batch_explained(),
        ),
    };
    let syncs: Vec<usize> = (0..rec.steps.len())
        .filter(|&i| rec.steps[i].kind == "sync")
        .collect();
    if syncs.is_empty() {
        return missing(name, "the scenario ran no sync step".into());
    }
    let mut worst_settle = 0.0f64;
    for &si in &syncs {
        let s = &rec.steps[si];
        let next_start = rec
            .steps
            .get(si + 1)
            .filter(|n| n.kind != "sleep")
            .map(|n| n.start)
            .unwrap_or(f64::INFINITY);
        let end = (s.end + within).min(next_start);
        let rows: Vec<usize> = rec.series.rows_between(s.end, end).collect();
        if rows.is_empty() {
            return missing(
                name,
                format!(
                    "no sample between the end of '{}' at t={:.3}s and the next step",
                    s.describe, s.end
                ),
            );
        }
        let settled = rows
            .iter()
            .find(|&&r| cols.iter().all(|(_, c)| rec.series.get(r, *c) <= bound));
        match settled {
            Some(&r) => worst_settle = worst_settle.max(rec.series.t[r] - s.end),
            None => {
                // Report the last sample of the window: the counter never came down.
                let r = *rows.last().unwrap();
                let (col, c) = cols
                    .iter()
                    .find(|(_, c)| rec.series.get(r, *c) > bound)
                    .unwrap();
                let v = rec.series.get(r, *c);
                let mut res = CheckResult::new(
                    name,
                    Outcome::Fail,
                    format!("{col} = {v} ({})", human_bytes(v)),
                    format!("<= {bound} ({})", human_bytes(bound)),
                    format!(
                        "after the sync in phase {} ended at t={:.3}s, {col} stayed above the bound until t={:.3}s ({} samples): {}",
                        rec.phases[s.phase].name,
                        s.end,
                        rec.series.t[r],
                        rows.len(),
                        rec.series.describe_row(r)
                    ),
                );
                res.tolerance = Some(tol);
                res.at = Some(rec.series.t[r]);
                res.bound = Some(bound);
                return res;
            }
        }
    }
    let mut r = CheckResult::new(
        name,
        Outcome::Pass,
        format!(
            "settled after all {} syncs, slowest in {:.3}s",
            syncs.len(),
            worst_settle
        ),
        format!(
            "{} <= {} within {within}s",
            counters.join(", "),
            human_bytes(bound)
        ),
        format!(
            "{} came back under the bound after every sync",
            counters.join(", ")
        ),
    );
    r.tolerance = Some(tol);
    r
}

/// (c) the write throughput of `phase` is at least `min_ratio` times that of `baseline`: median
/// over each phase's repetitions. Machines are noisy, so as lkp-tests decides a regression, it
/// fails only when the ratio is below the minimum AND the two sample sets separate (every sample of
/// `phase` below every sample of `baseline`). The samples are printed either way.
pub fn throughput(
    name: String,
    rec: &Record,
    phase: &str,
    baseline: &str,
    min_ratio: f64,
) -> CheckResult {
    let (Some(p), Some(b)) = (rec.phase_by_name(phase), rec.phase_by_name(baseline)) else {
        return missing(name, format!("phase {phase} or {baseline} did not run"));
    };
    let (mp, mb) = (rec.phase_measure(p), rec.phase_measure(b));
    let (Some(new), Some(base)) = (mp.mb_per_s, mb.mb_per_s) else {
        return missing(name, "a phase wrote nothing measurable".into());
    };
    let ratio = new / base;
    let fmt = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.0}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let max_new = mp.samples_mb_per_s.iter().cloned().fold(f64::MIN, f64::max);
    let min_base = mb.samples_mb_per_s.iter().cloned().fold(f64::MAX, f64::min);
    let separate = max_new < min_base;
    let outcome = if ratio >= min_ratio || !separate {
        Outcome::Pass
    } else {
        Outcome::Fail
    };
    let samples = format!(
        "MB/s samples: {phase} [{}], {baseline} [{}]",
        fmt(&mp.samples_mb_per_s),
        fmt(&mb.samples_mb_per_s)
    );
    let mut r = CheckResult::new(
        name,
        outcome,
        format!("{ratio:.2} (median {new:.1} MB/s in {phase} vs {base:.1} MB/s in {baseline})"),
        format!(">= {min_ratio:.2}"),
        match (outcome, ratio >= min_ratio) {
            (Outcome::Pass, true) => {
                format!("{phase} writes at {ratio:.2}x the {baseline} speed; {samples}")
            }
            (Outcome::Pass, false) => format!(
                "median ratio {ratio:.2} is below {min_ratio} but the sample sets overlap (noise, not a regression); {samples}"
            ),
            _ => format!(
                "{phase} writes at only {ratio:.2}x the {baseline} speed and every {phase} sample is slower than every {baseline} sample: writers in the group are being throttled; {samples}"
            ),
        },
    );
    r.tolerance = Some(format!(
        "minimum ratio {min_ratio} set in the scenario; a failure also needs the sample sets to separate"
    ));
    r
}

/// (d) the antagonist did its job: a /proc/vmstat event counter rose during the phase.
pub fn exercised(
    name: String,
    rec: &Record,
    phase: &str,
    key: &str,
    min: i64,
    what: &str,
) -> CheckResult {
    let Some(p) = rec.phase_by_name(phase) else {
        return missing(name, format!("phase {phase} did not run"));
    };
    let ph = &rec.phases[p];
    let (Some(a), Some(b)) = (ph.vmstat_start.get(key), ph.vmstat_end.get(key)) else {
        return missing(
            name,
            format!(
                "cannot verify {what}: {key} is not in /proc/vmstat (kernel without CONFIG_VM_EVENT_COUNTERS?)"
            ),
        );
    };
    let delta = b - a;
    let outcome = if delta >= min {
        Outcome::Pass
    } else {
        Outcome::NotExercised
    };
    CheckResult::new(
        name,
        outcome,
        format!("{key} +{delta}"),
        format!(">= +{min}"),
        match outcome {
            Outcome::Pass => format!("{what}: {key} rose by {delta} during phase {phase}"),
            _ => format!(
                "{what} did not happen: {key} rose by {delta} during phase {phase} (needed {min})"
            ),
        },
    )
}

#[cfg(test)]
mod tests;
