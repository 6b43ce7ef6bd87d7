//! throughput: a phase's write throughput against its baseline's.

use crate::check::args::CheckArgs;
use crate::check::{
    Check, CheckResult, CheckSpec, Kind, MORE_SAMPLES, Outcome, missing, ratio_tolerance, req,
};
use crate::model::StepKind;
use crate::model::error::ScenarioError;
use crate::model::stats::{self, Separation};
use crate::model::{Load, Record};

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
    // Repetitions measured on a busy machine are no samples (see `Load`).
    let busy: usize = [p, b]
        .iter()
        .map(|&i| {
            let reps = rec.steps.iter().filter(|s| s.phase == i).map(|s| s.rep);
            let mut reps: Vec<u32> = reps.collect();
            reps.dedup();
            reps.iter().filter(|&&r| rec.busy_rep(i, r)).count()
        })
        .sum();
    let (outcome, detail) = match stats::separation(&mb.samples_mb_per_s, &mp.samples_mb_per_s) {
        Separation::TooFewSamples if busy > 0 => (
            Outcome::Inconclusive,
            format!(
                "inconclusive: {busy} repetitions were measured while the machine was busy ({}), and the quiet ones are too few for a verdict ({}); {samples}",
                Load::thresholds(),
                stats::too_few(mp.samples_mb_per_s.len(), mb.samples_mb_per_s.len())
            ),
        ),
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

/// `throughput` in the check table.
pub const KIND: Kind = Kind {
    kind: "throughput",
    doc:
        "The median write rate (MB/s) of the write steps of `phase` is at least `min_ratio` times \
the
median of `baseline`, one sample per repetition. Machines are noisy, so, as \
lkp-tests decides a
regression, a lower ratio fails only when the two sample sets \
separate (every `phase` sample
below every `baseline` sample); with overlapping sets it \
passes and says the difference is noise.
With fewer samples than the sample-size rule \
needs (the chance that the sets separate by chance
at most 5 %: at least 3 v 3) it is \
not exercised (\"too few samples\"); when repetitions measured while the machine was busy \
(left out, see ratio) took the samples it needed, inconclusive. The samples are printed
either way. A memcg bug \
that throttles the group's writers (a wrong dirty count makes
balance_dirty_pages() \
pause them) shows as writes slower than before it. Both phases must contain
a `write` \
step (else a parse error: `phase \"...\" has no write step to measure`). Not \
exercised
when one of the phases did not run or wrote nothing measurable. Result \
name:
`throughput(<phase>/<baseline>)`.",
    keys: &[
        req("phase", "the declared phase whose writes are judged"),
        req("baseline", "the declared phase they are compared with"),
        req(
            "min_ratio",
            "the lowest acceptable ratio of the medians: a positive, finite number",
        ),
    ],
    parse,
    promises: &[],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
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
    fn performance(&self) -> bool {
        true
    }
}
