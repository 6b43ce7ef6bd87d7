//! dirty-probe: a probe's exactly known dirty bytes appear in the group's counters.

use crate::check::args::CheckArgs;
use crate::check::pagecache::reference::{Reference, group_and_reference};
use crate::check::{
    Check, CheckResult, CheckSpec, Kind, Needs, Outcome, missing, opt, row_at_or_after,
    row_at_or_before, sum,
};
use crate::model::StepKind;
use crate::model::contract::{v1, v2};
use crate::model::counter::DIRTY_WRITEBACK;
use crate::model::error::ScenarioError;
use crate::model::sum_label;
use crate::model::units::human_bytes;
use crate::model::{Record, StepRecord};

/// dirty-probe: after each probe step (exactly W bytes written with writeback held off), the
/// group's dirty + writeback is W — or, with the per-file truth, what the group's files hold
/// dirty or under writeback (W plus anything still dirty from before). A hidden negative offset
/// (a clamped underflow from earlier phases) shows as a deficit. If the reference did not rise by
/// W, writeback was not held off: not exercised.
pub fn dirty_probe(name: String, rec: &Record, cgroup: &str) -> CheckResult {
    let counters = DIRTY_WRITEBACK.map(String::from);
    let global = GLOBAL.map(String::from);
    let (cols, reference) = match group_and_reference(&name, rec, cgroup, &counters, &global) {
        Ok(x) => x,
        Err(missing) => return *missing,
    };
    let tol = rec.machine.stat_batch_bytes() as i64;
    let gtol = tol + reference.drift;
    let probes: Vec<_> = rec
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::Probe)
        .collect();
    if probes.is_empty() {
        return missing(name, "the scenario ran no probe step".into());
    }
    let mut lines = Vec::new();
    for st in probes {
        let w = st.bytes as i64;
        let r0 = row_at_or_before(rec, st.start);
        let Some(r) = row_at_or_after(rec, st.end) else {
            return missing(name, "no sample after the probe".into());
        };
        let rise = reference.lo(rec, r) - reference.hi(rec, r0);
        if let Some(f) = &reference.foreign {
            let rows: Vec<usize> = (r0..=r).collect();
            let moved = f.moved(rec, r0, &rows);
            if moved > gtol {
                return crate::check::inconclusive(
                    name,
                    format!(
                        "inconclusive: other writers on the machine moved {} by {} during the probe (tolerance {}), and this kernel gives no per-file truth",
                        f.label,
                        human_bytes(moved),
                        human_bytes(gtol)
                    ),
                );
            }
        }
        if rise < w - gtol {
            return missing(
                name,
                format!(
                    "writeback was not held off: {} rose by {} of the {} the probe wrote",
                    reference.label,
                    human_bytes(rise),
                    human_bytes(w)
                ),
            );
        }
        let cg = sum(rec, r, &cols);
        // What the group should show: the files' pages (bracketed), or the probe's size.
        let (want_lo, want_hi) = if reference.per_file {
            (reference.lo(rec, r), reference.hi(rec, r))
        } else {
            (w, w)
        };
        let deficit = if cg < want_lo {
            want_lo - cg
        } else if cg > want_hi {
            want_hi - cg
        } else {
            0
        };
        if deficit.abs() > tol {
            let m = Measured {
                w,
                rise,
                cg,
                want_lo,
                tol,
                deficit,
                r,
            };
            return probe_failure(name, rec, cgroup, st, &reference, m);
        }
        lines.push(format!("{} of {}", human_bytes(cg), human_bytes(want_lo)));
    }
    probe_pass(name, rec, &reference, &lines, tol)
}

/// What one probe step left in the counters.
struct Measured {
    w: i64,
    rise: i64,
    cg: i64,
    want_lo: i64,
    tol: i64,
    deficit: i64,
    r: usize,
}

/// The failure when the group's count after a probe is off by more than the tolerance.
fn probe_failure(
    name: String,
    rec: &Record,
    cgroup: &str,
    st: &StepRecord,
    reference: &Reference,
    m: Measured,
) -> CheckResult {
    let Measured {
        w,
        rise,
        cg,
        want_lo,
        tol,
        deficit,
        r,
    } = m;
    let t = rec.series.t[r];
    let mut res = CheckResult::new(
        name,
        Outcome::Fail,
        format!(
            "{} = {cg} ({})",
            sum_label(&crate::check::group_columns(cgroup, &DIRTY_WRITEBACK)),
            human_bytes(cg)
        ),
        format!(
            "{want_lo} ({}) +- {}",
            human_bytes(want_lo),
            human_bytes(tol)
        ),
        format!(
            "after the probe in phase {} wrote {} ({} rose by {}), the group shows {}: {} of {} ({}) at t={t:.3}s",
            rec.phases[st.phase].name,
            human_bytes(w),
            reference.label,
            human_bytes(rise),
            human_bytes(cg),
            if deficit > 0 {
                "a deficit"
            } else {
                "an excess"
            },
            human_bytes(deficit.abs()),
            if deficit > 0 {
                "a hidden negative offset: the counter underflowed earlier and the clamp at 0 hid it"
            } else {
                "pages counted that were not written"
            },
        ),
    );
    res.tolerance = Some(rec.machine.stat_batch_explained());
    res.at = Some(t);
    res.bound = Some(want_lo - tol);
    res.columns = crate::check::group_columns(cgroup, &DIRTY_WRITEBACK);
    res
}

/// The pass: every probe showed in the group's count.
fn probe_pass(
    name: String,
    rec: &Record,
    reference: &Reference,
    lines: &[String],
    tol: i64,
) -> CheckResult {
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!("dirty+writeback after each probe: {}", lines.join(", ")),
        format!(
            "{} +- {}",
            if reference.per_file {
                "what the group's files hold dirty or under writeback"
            } else {
                "each probe's size"
            },
            human_bytes(tol)
        ),
        format!(
            "the group's dirty count showed exactly what each probe wrote (reference: {})",
            reference.label
        ),
    );
    res.tolerance = Some(rec.machine.stat_batch_explained());
    res
}

/// The /proc/vmstat keys of the global reference of a probe.
const GLOBAL: [&str; 2] = ["nr_dirty", "nr_writeback"];

/// `dirty-probe`: after each probe step, the group's dirty + writeback equals the bytes the probe
/// wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct DirtyProbe {
    pub cgroup: String,
}

/// `dirty-probe` in the check table.
pub const KIND: Kind = Kind {
    kind: "dirty-probe",
    doc: "After each `probe` step (exactly the probe's size written with writeback held off), \
the group's dirty + writeback equals what its files hold dirty or under writeback \
(cachestat(2): the probe's bytes plus anything still dirty from before), or without \
per-file truth the probe's size. A deficit is a hidden negative offset: an underflow \
from earlier phases that the kernel clamps to 0 when memory.stat is read. Tolerance: \
the unflushed-stats bound. Not exercised when the reference did not rise by the \
probe's size (writeback was not held off) or, without per-file truth, when the rest of \
the machine moved during the probe. The global reference is nr_dirty and nr_writeback. \
Result name: `dirty-probe(<cgroup>)`.",
    keys: &[opt(
        "cgroup",
        "the group whose dirty + writeback must show the probe (default: the only declared group)",
    )],
    parse,
    promises: &[&v2::STAT_DIRTY, &v1::STAT_DIRTY],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(DirtyProbe {
        cgroup: i.cgroup("cgroup")?,
    }))
}

impl CheckSpec for DirtyProbe {
    fn name(&self) -> String {
        format!("dirty-probe({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs::accounting(
            &self.cgroup,
            DIRTY_WRITEBACK.map(String::from).to_vec(),
            GLOBAL.map(String::from).to_vec(),
        )
    }
    /// Only finished probes, each with its samples after it, are judged.
    fn online(&self) -> bool {
        true
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        dirty_probe(self.name(), rec, &self.cgroup)
    }
}
