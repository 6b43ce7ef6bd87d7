//! throughput: a phase's write throughput against its baseline's.

use super::args::CheckArgs;
use super::{Check, CheckResult, CheckSpec, MORE_SAMPLES, Outcome, missing, ratio_tolerance};
use crate::model::Record;
use crate::model::StepKind;
use crate::model::error::ScenarioError;
use crate::model::stats::{self, Separation};

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

/// `throughput`: the write throughput of `phase` is at least `min_ratio` times that of
/// `baseline`.
#[derive(Debug, Clone, PartialEq)]
pub struct Throughput {
    pub phase: String,
    pub baseline: String,
    pub min_ratio: f64,
}

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    i.only(&["phase", "baseline", "min_ratio"])?;
    let phase = i.phase_ref("phase")?;
    let baseline = i.phase_ref("baseline")?;
    let min_ratio = i.min_ratio()?;
    for p in [&phase, &baseline] {
        let ph = i
            .phase_outline(p)
            .expect("phase_ref names a declared phase");
        if !ph.steps.contains(&StepKind::Write) {
            return Err(i.err(
                i.span(),
                format!("phase {p:?} has no write step to measure"),
            ));
        }
    }
    Ok(Check::new(Throughput {
        phase,
        baseline,
        min_ratio,
    }))
}

impl CheckSpec for Throughput {
    fn name(&self) -> String {
        format!("throughput({}/{})", self.phase, self.baseline)
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        throughput(
            self.name(),
            rec,
            &self.phase,
            &self.baseline,
            self.min_ratio,
        )
    }
}
