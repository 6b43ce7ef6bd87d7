//! ratio: paired A/B rates of a step inside and outside a group.

use super::args::CheckArgs;
use super::{
    Check, CheckResult, CheckSpec, Kind, MORE_SAMPLES, Outcome, missing, opt, ratio_tolerance, req,
};
use crate::model::Record;
use crate::model::StepKind;
use crate::model::error::ScenarioError;
use crate::model::stats::{self, Separation, median};

/// ratio: paired A/B. The rates of `step` steps in `inside` and in `outside` (alternating in the
/// scenario, so drift hits both); the median ratio must be at least `min_ratio`. Like lkp-tests,
/// a lower ratio fails only when the two sample sets separate (every inside sample below every
/// outside one); otherwise the difference is within the noise and is reported as such. With too
/// few samples to judge (`stats::enough_samples`) it is not exercised. Without `phase`, every
/// phase but the warm-up ones counts.
pub fn ratio(
    name: String,
    rec: &Record,
    step: StepKind,
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
            .filter_map(crate::model::step_rate)
            .collect()
    };
    let (a, b) = (rates(inside), rates(outside));
    if a.is_empty() || b.is_empty() {
        return missing(
            name,
            format!("no {step} step with a rate ran in {inside} and in {outside}"),
        );
    }
    let unit = step.rate_unit();
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

/// `ratio`: paired A/B: the rate of `step` steps in `inside` is at least `min_ratio` times that in
/// `outside` (medians), unless the sample sets overlap (then the difference is noise).
#[derive(Debug, Clone, PartialEq)]
pub struct Ratio {
    pub step: StepKind,
    pub inside: String,
    pub outside: String,
    pub min_ratio: f64,
    /// Only steps of this phase.
    pub phase: Option<String>,
}

/// `ratio` in the check table.
pub const KIND: Kind = Kind {
    kind: "ratio",
    doc: "Paired A/B: the median rate of the `step` steps that ran in `inside` is at least \
`min_ratio` times the median in `outside`; the two alternate in the scenario, so drift \
of the machine hits both. Without `phase`, every phase but warm-up ones counts. As \
lkp-tests decides, a lower ratio fails only when the sample sets separate (every \
inside sample below every outside one). With fewer samples than the sample-size rule \
needs (at least 3 pairs) it is not exercised: \"too few samples\". All samples and the \
pair ratios' range are printed. The rate is MB/s, or faults/s for `fault` steps. A \
memcg bug that makes charging in a group slower, or throttles its writers, shows as \
the group running slower than an identical workload beside it. Not exercised when no \
such step with a rate ran in one of the groups. Result name: `ratio(<step>: \
<inside>/<outside>)`, or `ratio(<phase>: <step> <inside>/<outside>)`.",
    keys: &[
        req(
            "step",
            "the step kind whose rates are compared (`write`, `read`, `fault`, `usemem`, ...)",
        ),
        req("inside", "the declared group under test"),
        req("outside", "the declared group it is compared with"),
        req(
            "min_ratio",
            "the lowest acceptable ratio of the medians: a positive, finite number",
        ),
        opt("phase", "only steps of this declared phase"),
    ],
    parse,
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    let step = i.one_step()?;
    let inside = i.named_cgroup("inside")?;
    let outside = i.named_cgroup("outside")?;
    Ok(Check::new(Ratio {
        step,
        inside,
        outside,
        min_ratio: i.min_ratio()?,
        phase: i.phase()?,
    }))
}

impl CheckSpec for Ratio {
    fn name(&self) -> String {
        let Ratio {
            step,
            inside,
            outside,
            phase,
            ..
        } = self;
        match phase {
            Some(p) => format!("ratio({p}: {step} {inside}/{outside})"),
            None => format!("ratio({step}: {inside}/{outside})"),
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        ratio(
            self.name(),
            rec,
            self.step,
            (&self.inside, &self.outside),
            self.min_ratio,
            self.phase.as_deref(),
        )
    }
}
