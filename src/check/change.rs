//! change: a step changes a column by a given amount.

use super::{CheckResult, Outcome, missing, row_at_or_after, row_at_or_before, signed};
use crate::model::Record;
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
