//! ratio: paired A/B rates of a step inside and outside a group.

use crate::check::args::CheckArgs;
use crate::check::{
    Check, CheckResult, CheckSpec, Kind, MORE_SAMPLES, Outcome, inconclusive, missing, opt,
    ratio_tolerance, req,
};
use std::collections::BTreeMap;

use crate::model::StepKind;
use crate::model::error::ScenarioError;
use crate::model::stats::{self, Separation, median};
use crate::model::{Load, Record};

/// One pair of a ratio check: the rates of the inside and outside steps of one repetition of a
/// phase, and the busiest load measured during either.
struct Pair {
    inside: f64,
    outside: f64,
    load: Option<Load>,
    /// The round of the phase it ran in (see `CheckSpec::confirmed_in`).
    round: u32,
}

/// The pairs of `step` steps in `inside` and `outside`: one per repetition of a phase that ran
/// both (of `phase` only, or of every phase but warm-ups).
fn pairs(
    rec: &Record,
    step: StepKind,
    (inside, outside): (&str, &str),
    phase: Option<&str>,
) -> Vec<Pair> {
    // (phase, repetition, round) -> (inside rate, outside rate, the busier load of the two).
    type Rates = (Option<f64>, Option<f64>, Option<Load>);
    let mut by_rep: BTreeMap<(usize, u32, u32), Rates> = BTreeMap::new();
    for s in rec.steps.iter().filter(|s| s.kind == step) {
        let in_phase = rec.phases.get(s.phase).is_some_and(|x| match phase {
            Some(p) => x.name == p,
            None => !x.warmup,
        });
        let Some(rate) = crate::model::step_rate(s).filter(|_| in_phase) else {
            continue;
        };
        let e = by_rep.entry((s.phase, s.rep, s.round)).or_default();
        if s.cgroup == inside {
            e.0 = Some(rate);
        } else if s.cgroup == outside {
            e.1 = Some(rate);
        } else {
            continue;
        }
        // The pair's load: a busy one if either step's was.
        e.2 = match (e.2, s.load) {
            (Some(l), _) if l.busy() => Some(l),
            (l, None) => l,
            (_, l) => l,
        };
    }
    by_rep
        .into_iter()
        .filter_map(|((_, _, round), (i, o, load))| {
            Some(Pair {
                inside: i?,
                outside: o?,
                load,
                round,
            })
        })
        .collect()
}

/// ratio: paired A/B. The rates of `step` steps in `inside` and in `outside`, paired by the
/// repetition of the phase they ran in (the scenario alternates their order, so drift hits both);
/// the median ratio must be at least `min_ratio`. A pair measured while the rest of the machine
/// was busy (`Load::busy`) is left out: with too few quiet pairs left the check is inconclusive,
/// never a pass or a failure. Like lkp-tests, a lower ratio fails only when the two sample sets
/// separate (every inside sample below every outside one); otherwise the difference is within the
/// noise and is reported as such. With too few samples to judge (`stats::enough_samples`) it is
/// not exercised. Without `phase`, every phase but the warm-up ones counts. Where the phase ran
/// a second round (`CheckSpec::confirmed_in`), each round is judged on its own pairs and the
/// check fails only when both fail (`two_rounds`).
pub fn ratio(
    name: String,
    rec: &Record,
    step: StepKind,
    (inside, outside): (&str, &str),
    min_ratio: f64,
    phase: Option<&str>,
) -> CheckResult {
    let all = pairs(rec, step, (inside, outside), phase);
    if all.is_empty() {
        return missing(
            name,
            format!("no {step} step with a rate ran in {inside} and in {outside}"),
        );
    }
    let round = |r: u32| all.iter().filter(|p| p.round == r).collect::<Vec<_>>();
    let (first, second) = (round(0), round(1));
    let judge =
        |pairs: Vec<&Pair>| judged(name.clone(), &pairs, step, (inside, outside), min_ratio);
    if second.is_empty() {
        return judge(first);
    }
    two_rounds(judge(first), judge(second))
}

/// The verdict of a phase that ran two rounds: a failure only when both rounds failed (a
/// slowdown of the kernel slows every round; a chance separation of the samples seldom comes
/// twice); otherwise what the rounds found, a pass where either passed. The detail gives both.
fn two_rounds(first: CheckResult, second: CheckResult) -> CheckResult {
    let outcome = match (first.outcome, second.outcome) {
        (Outcome::Fail, Outcome::Fail) => Outcome::Fail,
        (Outcome::Pass, _) | (_, Outcome::Pass) => Outcome::Pass,
        (o, _) => o,
    };
    let said = match outcome {
        Outcome::Fail => "failed in both rounds",
        _ if first.outcome == Outcome::Fail => {
            "a first round failed and a second did not repeat it, so the first was chance"
        }
        _ => "judged in two rounds",
    };
    let mut res = CheckResult::new(
        second.name.clone(),
        outcome,
        format!("{} then {}", first.actual, second.actual),
        second.expected.clone(),
        format!(
            "{said}: first round: {}; second round: {}",
            first.detail, second.detail
        ),
    );
    res.tolerance = second.tolerance;
    res
}

/// The verdict on one round's pairs.
fn judged(
    name: String,
    all: &[&Pair],
    step: StepKind,
    (inside, outside): (&str, &str),
    min_ratio: f64,
) -> CheckResult {
    let (quiet, busy): (Vec<&Pair>, Vec<&Pair>) =
        all.iter().partition(|p| !p.load.is_some_and(|l| l.busy()));
    let rates = Rates {
        step,
        inside,
        outside,
        a: quiet.iter().map(|p| p.inside).collect(),
        b: quiet.iter().map(|p| p.outside).collect(),
        busy_text: left_out(&busy, all.len(), (inside, outside)),
    };
    if !stats::enough_samples(rates.a.len(), rates.b.len()) {
        return too_few(name, &rates, (busy.len(), all.len()), min_ratio);
    }
    verdict(name, &rates, min_ratio)
}

/// The rates of the quiet pairs, inside (`a`) and outside (`b`), and what the messages say of
/// them.
struct Rates<'a> {
    step: StepKind,
    inside: &'a str,
    outside: &'a str,
    a: Vec<f64>,
    b: Vec<f64>,
    /// The pairs left out as busy, for the detail (empty when none was).
    busy_text: String,
}

impl Rates<'_> {
    /// The quiet samples of each side, as the messages list them.
    fn samples(&self) -> String {
        format!(
            "{} samples: {} [{}], {} [{}]",
            self.step.rate_unit(),
            self.inside,
            listed(&self.a),
            self.outside,
            listed(&self.b)
        )
    }
}

/// Rates, as the messages list them: whole numbers, separated by spaces.
fn listed(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x:.0}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the detail says of the pairs measured while the machine was busy (of `all` pairs): how
/// many, the busiest load, and their rates; nothing when there were none.
fn left_out(busy: &[&Pair], all: usize, (inside, outside): (&str, &str)) -> String {
    if busy.is_empty() {
        return String::new();
    }
    let worst = busy
        .iter()
        .filter_map(|p| p.load)
        .max_by(|x, y| x.worst_cpus().total_cmp(&y.worst_cpus()))
        .map(|l| l.describe())
        .unwrap_or_default();
    format!(
        "; {} of {} pairs left out, measured while the machine was busy (up to {worst}): {inside} [{}], {outside} [{}]",
        busy.len(),
        all,
        listed(&busy.iter().map(|p| p.inside).collect::<Vec<_>>()),
        listed(&busy.iter().map(|p| p.outside).collect::<Vec<_>>())
    )
}

/// The tolerance text of every verdict: the ratio's and the busy-machine thresholds.
fn tolerance(min_ratio: f64) -> String {
    format!("{}; {}", ratio_tolerance(min_ratio), Load::thresholds())
}

/// Too few quiet pairs for a verdict (`busy` of `all` pairs left out): inconclusive when the
/// busy ones took them, not exercised when even all of them would be too few (the scenario's
/// repeat is too small, whatever the machine did).
fn too_few(name: String, r: &Rates, (busy, all): (usize, usize), min_ratio: f64) -> CheckResult {
    let (a, b) = (r.a.len(), r.b.len());
    let samples = format!("{}{}", r.samples(), r.busy_text);
    let mut res = if busy == 0 || !stats::enough_samples(all, all) {
        missing(
            name,
            format!("{}; {MORE_SAMPLES}; {samples}", stats::too_few(a, b)),
        )
    } else {
        inconclusive(
            name,
            format!(
                "inconclusive: the machine was busy during {} of {} pairs, and the {} quiet ones are too few for a verdict ({}); {samples}",
                busy,
                all,
                all - busy,
                stats::too_few(a, b)
            ),
        )
    };
    res.tolerance = Some(tolerance(min_ratio));
    res
}

/// The verdict on the quiet pairs: the ratio of the medians against `min_ratio`, a lower one
/// failing only when the sample sets separate.
fn verdict(name: String, rates: &Rates, min_ratio: f64) -> CheckResult {
    let Rates {
        step,
        inside,
        outside,
        a,
        b,
        busy_text,
    } = rates;
    let unit = step.rate_unit();
    let (ma, mb) = (median(a).unwrap(), median(b).unwrap());
    let r = ma / mb;
    let ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    let (pmin, pmax) = ratios
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
    let samples = format!(
        "{}; pair ratios {pmin:.2}..{pmax:.2}{busy_text}",
        rates.samples()
    );
    let (outcome, detail) = match stats::separation(b, a) {
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
    res.tolerance = Some(tolerance(min_ratio));
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
`min_ratio` times the median in `outside`, paired by the repetition they ran in; the \
phase alternates their order (`alternate = true`), so drift of the machine hits both. \
A pair measured while the rest of the machine was busy (other processes above a quarter \
of a CPU, or dirtying more than 4 MB/s; the runner runs such a repetition again) is left \
out and shown; with too few quiet pairs left the check is inconclusive, never a pass or \
a failure. Without `phase`, every phase but warm-up ones counts. As \
lkp-tests decides, a lower ratio fails only when the sample sets separate (every \
inside sample below every outside one). With `phase`, such a failure counts only when a \
second round of the phase repeats it: the runner then runs the phase's repetitions once \
more and judges each round on its own pairs (5 exchangeable pairs separate by chance 1 \
time in 252; twice, 1 in 63 504; a slower kernel fails both). With fewer samples than \
the sample-size rule needs (at least 3 pairs) it is not exercised: \"too few samples\". \
All samples and the \
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
    promises: &[],
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
    fn performance(&self) -> bool {
        true
    }
    fn rated(&self) -> Option<(StepKind, [&str; 2])> {
        Some((self.step, [&self.inside, &self.outside]))
    }
    fn confirmed_in(&self) -> Option<&str> {
        self.phase.as_deref()
    }
}
