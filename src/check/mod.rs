//! Checks: pure functions over a scenario's record (sampled series, phases, steps). Each returns
//! the actual value, what was expected, the tolerance and where it came from, so a failure explains
//! itself. A check whose precondition did not happen returns `NotExercised`, which makes the
//! scenario `skip`, never `pass`.

use serde::{Deserialize, Serialize};

use crate::record::Record;
use crate::scenario::Check;
use crate::stats::{self, Separation, median};
use crate::units::human_bytes;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Pass,
    Fail,
    /// What the check needs did not happen (or cannot be verified on this kernel).
    NotExercised,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
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
    /// The sampled column (or `a+b` sum) that broke, for timelines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
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
            column: None,
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
            after,
        } => settles(
            name,
            rec,
            cgroup,
            counters,
            within.as_secs_f64(),
            *bound,
            after,
        ),
        Check::TracksGlobal {
            cgroup,
            counters,
            global,
            during,
            phase,
        } => tracks_global(
            name,
            rec,
            cgroup,
            counters,
            global,
            during,
            phase.as_deref(),
        ),
        Check::DirtyProbe { cgroup } => dirty_probe(name, rec, cgroup),
        Check::Hierarchy { parent, counters } => hierarchy(name, rec, parent, counters),
        Check::NoRatchet {
            cgroup,
            counters,
            bound,
        } => no_ratchet(name, rec, cgroup, counters, *bound),
        Check::Observed {
            cgroup,
            counters,
            global,
        } => observed(name, rec, cgroup, counters, global),
        Check::Throughput {
            phase,
            baseline,
            min_ratio,
        } => throughput(name, rec, phase, baseline, *min_ratio),
        Check::Follows {
            from,
            to,
            counter,
            step,
            needs_moving,
        } => follows(
            name,
            rec,
            (&format!("{from}.{counter}"), &format!("{to}.{counter}")),
            step,
            *needs_moving,
        ),
        Check::Ratio {
            step,
            inside,
            outside,
            min_ratio,
            phase,
        } => ratio(
            name,
            rec,
            step,
            (inside, outside),
            *min_ratio,
            phase.as_deref(),
        ),
        Check::Change {
            cgroup,
            counter,
            step,
            by,
            tolerance,
            needs_moving,
        } => change(
            name,
            rec,
            &format!("{cgroup}.{counter}"),
            step,
            *by,
            *tolerance,
            *needs_moving,
        ),
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
                r.column = Some(col.clone());
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
    after: &[String],
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
        .filter(|&i| after.iter().any(|k| k == rec.steps[i].kind))
        .collect();
    if syncs.is_empty() {
        return missing(
            name,
            format!("the scenario ran no {} step", after.join("/")),
        );
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
                res.column = Some(col.clone());
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
/// `phase` below every sample of `baseline`). With too few repetitions to judge
/// (`stats::enough_samples`) it is not exercised. The samples are printed either way.
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
    let samples = format!(
        "MB/s samples: {phase} [{}], {baseline} [{}]",
        fmt(&mp.samples_mb_per_s),
        fmt(&mb.samples_mb_per_s)
    );
    let (outcome, detail) = match stats::separation(&mb.samples_mb_per_s, &mp.samples_mb_per_s) {
        Separation::TooFewSamples => (
            Outcome::NotExercised,
            format!(
                "{}; {MORE_SAMPLES}; {samples}",
                stats::too_few(mp.samples_mb_per_s.len(), mb.samples_mb_per_s.len())
            ),
        ),
        _ if ratio >= min_ratio => (
            Outcome::Pass,
            format!("{phase} writes at {ratio:.2}x the {baseline} speed; {samples}"),
        ),
        Separation::Worse => (
            Outcome::Fail,
            format!(
                "{phase} writes at only {ratio:.2}x the {baseline} speed and every {phase} sample is slower than every {baseline} sample: writers in the group are being throttled; {samples}"
            ),
        ),
        _ => (
            Outcome::Pass,
            format!(
                "median ratio {ratio:.2} is below {min_ratio} but the sample sets overlap (noise, not a regression); {samples}"
            ),
        ),
    };
    let mut r = CheckResult::new(
        name,
        outcome,
        format!("{ratio:.2} (median {new:.1} MB/s in {phase} vs {base:.1} MB/s in {baseline})"),
        format!(">= {min_ratio:.2}"),
        detail,
    );
    r.tolerance = Some(ratio_tolerance(min_ratio));
    r
}

/// How a too-small throughput or ratio check gets enough samples.
const MORE_SAMPLES: &str =
    "raise the phase's repeat (one sample per repetition, or per pair) to at least 3 per side";

/// The tolerance of the throughput and ratio checks.
fn ratio_tolerance(min_ratio: f64) -> String {
    format!(
        "minimum ratio {min_ratio} set in the scenario; a failure also needs the sample sets to separate, any verdict enough samples that chance separates them at most {} % of the time (at least 3 v 3)",
        stats::MAX_CHANCE_PCT
    )
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

/// Named series columns: (column name, index).
type Columns = Vec<(String, usize)>;

/// Sum of some columns at a row.
fn sum(rec: &Record, row: usize, cols: &[(String, usize)]) -> i64 {
    cols.iter().map(|(_, c)| rec.series.get(row, *c)).sum()
}

/// The last sample at or before `t` (or the first sample).
fn row_at_or_before(rec: &Record, t: f64) -> usize {
    (0..rec.series.len())
        .rev()
        .find(|&r| rec.series.t[r] <= t)
        .unwrap_or(0)
}

/// The first sample at or after `t`.
fn row_at_or_after(rec: &Record, t: f64) -> Option<usize> {
    (0..rec.series.len()).find(|&r| rec.series.t[r] >= t)
}

/// Groups sampled in a record (column prefixes before the first '.').
fn groups(rec: &Record) -> Vec<String> {
    let mut g: Vec<String> = Vec::new();
    for c in &rec.series.columns {
        if let Some((name, _)) = c.split_once('.')
            && !crate::sample::is_meta_column(c)
            && !g.iter().any(|x| x == name)
        {
            g.push(name.to_string());
        }
    }
    g
}

/// How much a set of columns can move while one sampler pass reads the files one after another:
/// their rate of change around the row times the pass duration (the `sampler.pass_us` column).
fn read_skew(rec: &Record, row: usize, cols: &[usize]) -> i64 {
    let Some(pc) = rec.series.col("sampler.pass_us") else {
        return 0;
    };
    let pass = rec.series.get(row, pc) as f64 / 1e6;
    let mut rate = 0.0f64;
    for &c in cols {
        for (a, b) in [
            (row.saturating_sub(1), row),
            (row, (row + 1).min(rec.series.len() - 1)),
        ] {
            let dt = rec.series.t[b] - rec.series.t[a];
            if dt > 0.0 {
                let r = (rec.series.get(b, c) - rec.series.get(a, c)).abs() as f64 / dt;
                rate = rate.max(r);
            }
        }
    }
    (rate * pass * cols.len() as f64) as i64
}

/// hierarchy: the parent's hierarchical counter equals its own (v1 `.local`, sampled on v1) plus
/// its children's hierarchical counters, at every sample.
pub fn hierarchy(name: String, rec: &Record, parent: &str, counters: &[String]) -> CheckResult {
    let children: Vec<String> = groups(rec)
        .into_iter()
        .filter(|g| {
            g.strip_prefix(parent)
                .and_then(|r| r.strip_prefix('/'))
                .is_some_and(|r| !r.contains('/'))
        })
        .collect();
    if children.is_empty() {
        return missing(name, format!("{parent} has no child groups"));
    }
    let batch = rec.machine.stat_batch_bytes() as i64;
    let tol_base = batch * (children.len() as i64 + 1);
    let mut worst = 0i64;
    for c in counters {
        let Some(p) = rec.series.col(&format!("{parent}.{c}")) else {
            return missing(name, format!("column {parent}.{c} was not sampled"));
        };
        let own = rec.series.col(&format!("{parent}.{c}.local"));
        let mut kids = Vec::new();
        for ch in &children {
            match rec.series.col(&format!("{ch}.{c}")) {
                Some(i) => kids.push(i),
                None => return missing(name, format!("column {ch}.{c} was not sampled")),
            }
        }
        let mut all: Vec<usize> = vec![p];
        all.extend(&kids);
        all.extend(own);
        // The files of one pass are read one after another, so a burst (a task exiting and
        // freeing everything at once) between the parent's read and a child's shows in that one
        // sample. A real disagreement (stale or wrong totals) is still there at the next pass.
        let mut prev_bad: Option<usize> = None;
        for r in 0..rec.series.len() {
            let pv = rec.series.get(r, p);
            let ov = own.map(|o| rec.series.get(r, o)).unwrap_or(0);
            let kv: i64 = kids.iter().map(|&k| rec.series.get(r, k)).sum();
            let gap = (pv - ov - kv).abs();
            let tol = tol_base + read_skew(rec, r, &all);
            let bad = gap > tol;
            let persists = bad && prev_bad == Some(r.wrapping_sub(1)) && r > 0;
            if bad {
                prev_bad = Some(r);
            }
            if persists {
                let t = rec.series.t[r];
                let mut res = CheckResult::new(
                    name,
                    Outcome::Fail,
                    format!("{parent}.{c} = {pv} ({})", human_bytes(pv)),
                    format!(
                        "own {} + children {} = {} +- {}",
                        human_bytes(ov),
                        human_bytes(kv),
                        human_bytes(ov + kv),
                        human_bytes(tol)
                    ),
                    format!(
                        "at t={t:.3}s (phase {}) the parent's hierarchical {c} differs from the sum of its parts by {}, as in the sample before (t={:.3}s): {}",
                        rec.phase_at(t),
                        human_bytes(gap),
                        rec.series.t[r - 1],
                        rec.series.describe_row(r)
                    ),
                );
                res.tolerance = Some(format!(
                    "{} groups x {} plus read skew (rate of change x sampler pass time), in two consecutive samples (one pass reads the files one after another, so a burst between two reads shows in one sample only)",
                    children.len() + 1,
                    rec.machine.stat_batch_explained()
                ));
                res.at = Some(t);
                res.column = Some(format!("{parent}.{c}"));
                return res;
            }
            worst = worst.max(gap);
        }
    }
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!(
            "largest gap {} over {} samples",
            human_bytes(worst),
            rec.series.len()
        ),
        format!("parent = own + {} children", children.len()),
        format!(
            "{parent}'s {} equal the sum of their parts",
            counters.join(", ")
        ),
    );
    res.tolerance = Some(format!(
        "{} groups x the memcg per-CPU stat batch ({}) plus read skew",
        children.len() + 1,
        human_bytes(batch)
    ));
    res
}

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
        .filter(|(_, s)| s.kind == "sync")
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

mod accounting;
pub use accounting::{STALE_WINDOW, dirty_probe, observed, tracks_global};

#[cfg(test)]
mod tests;

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
    if needs_moving && let Some(why) = &rec.charge_moving {
        return missing(
            name,
            format!("charge moving is not available on this kernel: {why}"),
        );
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

fn signed(b: i64) -> String {
    if b > 0 {
        format!("+{}", human_bytes(b))
    } else {
        human_bytes(b)
    }
}

/// ratio: paired A/B. The rates of `step` steps in `inside` and in `outside` (alternating in the
/// scenario, so drift hits both); the median ratio must be at least `min_ratio`. Like lkp-tests,
/// a lower ratio fails only when the two sample sets separate (every inside sample below every
/// outside one); otherwise the difference is within the noise and is reported as such. With too
/// few samples to judge (`stats::enough_samples`) it is not exercised. Without `phase`, every
/// phase but the warm-up ones counts.
pub fn ratio(
    name: String,
    rec: &Record,
    step: &str,
    (inside, outside): (&str, &str),
    min_ratio: f64,
    phase: Option<&str>,
) -> CheckResult {
    let rates = |g: &str| -> Vec<f64> {
        rec.steps
            .iter()
            .filter(|s| s.kind == step && s.cgroup == g)
            .filter(|s| {
                rec.phases.get(s.phase).is_some_and(|x| match phase {
                    Some(p) => x.name == p,
                    None => !x.warmup,
                })
            })
            .filter_map(crate::record::step_rate)
            .collect()
    };
    let (a, b) = (rates(inside), rates(outside));
    if a.is_empty() || b.is_empty() {
        return missing(
            name,
            format!("no {step} step with a rate ran in {inside} and in {outside}"),
        );
    }
    let unit = if step == "fault" { "faults/s" } else { "MB/s" };
    let (ma, mb) = (median(&a).unwrap(), median(&b).unwrap());
    let r = ma / mb;
    let pairs: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x / y).collect();
    let (pmin, pmax) = pairs
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
    let fmt = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.0}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let samples = format!(
        "{unit} samples: {inside} [{}], {outside} [{}]; pair ratios {pmin:.2}..{pmax:.2}",
        fmt(&a),
        fmt(&b)
    );
    let (outcome, detail) = match stats::separation(&b, &a) {
        Separation::TooFewSamples => (
            Outcome::NotExercised,
            format!(
                "{}; {MORE_SAMPLES}; {samples}",
                stats::too_few(a.len(), b.len())
            ),
        ),
        _ if r >= min_ratio => (
            Outcome::Pass,
            format!("{step} in {inside} runs at {r:.2}x the rate in {outside}; {samples}"),
        ),
        Separation::Worse => (
            Outcome::Fail,
            format!(
                "{step} in {inside} runs at {r:.2}x the rate in {outside}, below {min_ratio}, and every {inside} sample is below every {outside} sample; {samples}"
            ),
        ),
        _ => (
            Outcome::Pass,
            format!(
                "{step} in {inside} runs at {r:.2}x the rate in {outside}, below {min_ratio}, but the sample sets overlap: within the noise; {samples}"
            ),
        ),
    };
    let mut res = CheckResult::new(
        name,
        outcome,
        format!("{r:.2} (median {ma:.0} vs {mb:.0} {unit})"),
        format!(">= {min_ratio:.2}"),
        detail,
    );
    res.tolerance = Some(ratio_tolerance(min_ratio));
    res
}

/// follows: across each step of kind `step`, everything column `from` held moves to `to`: `from`
/// falls to about 0 and `to` rises by what `from` had before the step. Tolerance: the unflushed
/// stats bound plus 1/32 of the amount. Nothing to move (from at ~0 before) is not exercised.
pub fn follows(
    name: String,
    rec: &Record,
    (from, to): (&str, &str),
    step: &str,
    needs_moving: bool,
) -> CheckResult {
    if needs_moving && let Some(why) = &rec.charge_moving {
        return missing(
            name,
            format!("charge moving is not available on this kernel: {why}"),
        );
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
            res.column = Some(to.to_string());
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
