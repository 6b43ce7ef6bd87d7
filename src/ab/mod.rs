//! `memcgtest ab`: a base and a new kernel booted alternately (A B, B A, A B, ...: drift of the
//! machine over the minutes of the run hits both sides alike), each boot one sample per
//! measurement (its median), and `compare`'s verdicts on the two sides' sets. Correctness
//! failures of either kernel are reported beside the comparison.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::compare::{self, Row, Verdict};
use crate::model::error::{Error, exit};
use crate::model::{RunReport, Status};
use crate::vm;

mod behaviour;
mod boot;
mod html;
mod render;

use boot::{boot_until_quiet, save, write};
pub use render::render;

/// One of the two kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Base,
    New,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Base => "base",
            Side::New => "new",
        }
    }
}

/// The boots of `rounds` rounds: (round from 1, side). Odd rounds boot base first, even rounds
/// new first (A B B A A B B A ...): over an even number of rounds a linear drift adds the same to
/// both sides' sums (over an odd number, one round's worth more to the new side).
pub fn order(rounds: u32) -> Vec<(u32, Side)> {
    (1..=rounds)
        .flat_map(|r| {
            let pair = if r % 2 == 1 {
                [Side::Base, Side::New]
            } else {
                [Side::New, Side::Base]
            };
            pair.map(|s| (r, s))
        })
        .collect()
}

/// How one boot ended.
#[derive(Debug, Clone, Serialize)]
pub struct BootResult {
    pub round: u32,
    pub side: Side,
    /// The VM's exit code: 0 every scenario passed, 1 the kernel failed one, 125 not testable.
    pub code: u8,
    pub seconds: f64,
    /// The user CPU time other processes of the host used during the boot, per second of it:
    /// what the guest competed with (see [`BUSY_CPUS`]).
    pub host_busy_cpus: f64,
    /// Whether its figures count: false for a boot run again because the host was busy.
    pub used: bool,
    /// The scenarios that failed or stopped with an error, with why.
    pub failures: Vec<(String, String)>,
}

impl BootResult {
    /// ": " and the first failure's reason, for a verdict line.
    fn why(&self) -> Option<String> {
        self.failures.first().map(|(_, why)| format!(": {why}"))
    }

    /// A boot that never ran to an end: a host error or a signal (125), with why.
    fn stopped(round: u32, side: Side, why: String) -> BootResult {
        BootResult {
            round,
            side,
            code: exit::UNTESTABLE,
            seconds: 0.0,
            host_busy_cpus: 0.0,
            used: true,
            failures: vec![("(boot)".into(), why)],
        }
    }
}

/// Other processes' CPU use, averaged over a boot, above which its figures are not trusted and
/// it boots again (up to [`RETRIES`] times). A build or a second VM beside a TCG guest slows
/// it by a third or more, far beyond the changes `ab` is asked to find; a boot in ten hit by
/// that would hide a regression or, hitting one side more often than the other, feign one.
pub const BUSY_CPUS: f64 = 0.25;
/// How often one boot may be run again because the host was busy.
pub const RETRIES: u32 = 2;

/// The whole A/B run: the boots, the comparison rows and the verdict.
#[derive(Debug, Clone, Serialize)]
pub struct AbReport {
    pub tool: &'static str,
    pub base: PathBuf,
    pub new: PathBuf,
    /// The new kernel's boots' own kernel command line (`--new-append`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub new_append: String,
    pub rounds: u32,
    pub threshold_pct: f64,
    pub boots: Vec<BootResult>,
    /// The first set's comparison, each change judged again by the second set ([`confirmed`]).
    pub rows: Vec<Row>,
    /// The second set's comparison of the measurements the first set found changed (empty
    /// when it found none and no second set ran).
    pub second_set: Vec<Row>,
    /// Wall times of each side's runs and scenarios (boot not included).
    pub cost: Vec<compare::Cost>,
    /// Whether behaviour was compared (`--behaviour`).
    pub behaviour: bool,
    /// The behaviour changes, judged on every used boot of both sets.
    pub changes: Vec<crate::model::behaviour::Change>,
    /// How many observables had enough boots for a verdict.
    pub behaviour_judged: usize,
    /// Exit code and verdict line: see [`judge`].
    pub exit: u8,
    pub verdict: String,
}

/// The failed or errored scenarios of a report, with their reasons.
fn failures(rep: &RunReport) -> Vec<(String, String)> {
    rep.scenarios
        .iter()
        .filter(|s| matches!(s.status, Status::Fail | Status::Error))
        .map(|s| (s.name.clone(), s.reason.clone()))
        .collect()
}

/// The scenarios the used boots of `side` failed (a boot that failed without naming one, e.g. a
/// kernel panic before any result, as "(boot exit 1)").
fn failed(boots: &[BootResult], side: Side) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for b in boots
        .iter()
        .filter(|b| b.used && b.side == side && b.code == exit::FAIL)
    {
        out.extend(b.failures.iter().map(|(n, _)| n.clone()));
        if b.failures.is_empty() {
            out.insert("(boot exit 1)".to_string());
        }
    }
    out
}

/// The verdict of an A/B run.
#[derive(Debug, Clone, PartialEq)]
pub enum AbVerdict {
    /// A guest refused the command (a usage error): 2.
    Refused {
        round: u32,
        side: Side,
        why: Option<String>,
    },
    /// The new kernel regressed these measurements (`scenario: measurement +x%`): 1.
    Regressions(Vec<String>),
    /// The new kernel failed these scenarios and the base kernel did not: 1.
    NewFailed(Vec<String>),
    /// A boot could not test: 125, nothing is judged.
    CouldNotTest {
        round: u32,
        side: Side,
        why: Option<String>,
    },
    /// The base kernel failed these scenarios (the new one too, or not): 125, a broken reference
    /// neither clears nor blames.
    BaseFailed { failed: Vec<String>, new_too: bool },
    /// Nothing was measured to compare: 2.
    NothingToCompare,
    /// No measurement had enough boots for a verdict: 125. `busy`: the boots' measurements left
    /// out because the guest's machine was busy through every repetition.
    TooFewBoots { measurements: usize, busy: usize },
    /// No regression: 0.
    NoRegression { judged: usize, measurements: usize },
    /// Behaviour compared (`--behaviour`), nothing above found: `changed` of `judged`
    /// observables changed (1 when `fail` and any did, 125 when none could be judged, else 0),
    /// and the measurements' judged and total count when there were any.
    Behaviour {
        changed: usize,
        judged: usize,
        fail: bool,
        measurements: Option<(usize, usize)>,
    },
}

impl AbVerdict {
    pub fn exit_code(&self) -> u8 {
        match self {
            AbVerdict::Refused { .. } | AbVerdict::NothingToCompare => exit::USAGE,
            AbVerdict::Regressions(_) | AbVerdict::NewFailed(_) => exit::FAIL,
            AbVerdict::CouldNotTest { .. }
            | AbVerdict::BaseFailed { .. }
            | AbVerdict::TooFewBoots { .. } => exit::UNTESTABLE,
            AbVerdict::NoRegression { .. } => exit::OK,
            AbVerdict::Behaviour { judged: 0, .. } => exit::UNTESTABLE,
            AbVerdict::Behaviour { changed, fail, .. } if *fail && *changed > 0 => exit::FAIL,
            AbVerdict::Behaviour { .. } => exit::OK,
        }
    }
}

impl std::fmt::Display for AbVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AbVerdict::Refused { round, side, why } => write!(
                f,
                "round {round} ({} kernel): the command was refused{}",
                side.as_str(),
                why.as_deref().unwrap_or(" (the guest's message is above)")
            ),
            AbVerdict::Regressions(r) => write!(
                f,
                "{} regression(s) of the new kernel: {}",
                r.len(),
                r.join("; ")
            ),
            AbVerdict::NewFailed(n) => write!(
                f,
                "the new kernel failed {} (the base kernel did not)",
                n.join(", ")
            ),
            AbVerdict::CouldNotTest { round, side, why } => write!(
                f,
                "round {round} ({} kernel) could not test{}; nothing is judged",
                side.as_str(),
                why.as_deref().unwrap_or_default()
            ),
            AbVerdict::BaseFailed { failed, new_too } => write!(
                f,
                "the base kernel failed {}{}: a broken reference neither clears nor blames the new one",
                failed.join(", "),
                if *new_too {
                    " (the new kernel too)"
                } else {
                    ""
                }
            ),
            AbVerdict::NothingToCompare => write!(
                f,
                "no measurement to compare (run scenarios that measure, e.g. fault-overhead)"
            ),
            AbVerdict::TooFewBoots { measurements, busy } => write!(
                f,
                "none of {measurements} measurements had enough boots for a verdict{}",
                match busy {
                    0 => String::new(),
                    b => format!(
                        " ({b} boots' measurements left out: measured while the machine was busy)"
                    ),
                }
            ),
            AbVerdict::NoRegression {
                judged,
                measurements,
            } => write!(
                f,
                "no regression: {judged} of {measurements} measurements judged"
            ),
            AbVerdict::Behaviour {
                changed,
                judged,
                fail,
                measurements,
            } => {
                write!(f, "behaviour: {changed} of {judged} observables changed")?;
                if *changed > 0 && !*fail {
                    write!(
                        f,
                        " (a verdict of its own: --fail-on-change makes it exit 1)"
                    )?;
                }
                match measurements {
                    Some((0, m)) => write!(f, "; none of {m} measurements had enough boots"),
                    Some((j, m)) => write!(f, "; no regression: {j} of {m} measurements judged"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// The verdict of an A/B run, in this order: a refused command; a regression of the new kernel
/// or a scenario it failed and the base kernel passed (the kernel under test is at fault); a
/// boot that could not test, or a scenario the base kernel failed (a broken reference neither
/// clears nor blames); nothing measured; no measurement with enough boots; else no regression.
pub fn judge(boots: &[BootResult], rows: &[Row]) -> AbVerdict {
    let used = || boots.iter().filter(|b| b.used);
    if let Some(b) = used().find(|b| b.code == exit::USAGE) {
        return AbVerdict::Refused {
            round: b.round,
            side: b.side,
            why: b.why(),
        };
    }
    let regressions: Vec<String> = rows
        .iter()
        .filter(|r| r.verdict == Verdict::Regression)
        .map(|r| format!("{}: {} {:+.1}%", r.scenario, r.measurement, r.change_pct))
        .collect();
    if !regressions.is_empty() {
        return AbVerdict::Regressions(regressions);
    }
    let (base_failed, new_failed) = (failed(boots, Side::Base), failed(boots, Side::New));
    let new_only: Vec<String> = new_failed.difference(&base_failed).cloned().collect();
    if !new_only.is_empty() {
        return AbVerdict::NewFailed(new_only);
    }
    if let Some(b) = used().find(|b| b.code == exit::UNTESTABLE) {
        return AbVerdict::CouldNotTest {
            round: b.round,
            side: b.side,
            why: b.why(),
        };
    }
    if !base_failed.is_empty() {
        return AbVerdict::BaseFailed {
            failed: base_failed.into_iter().collect(),
            new_too: !new_failed.is_empty(),
        };
    }
    if rows.is_empty() {
        return AbVerdict::NothingToCompare;
    }
    let judged = rows
        .iter()
        .filter(|r| r.verdict != Verdict::TooFewSamples)
        .count();
    if judged == 0 {
        return AbVerdict::TooFewBoots {
            measurements: rows.len(),
            busy: rows.iter().map(|r| r.base_busy + r.new_busy).sum(),
        };
    }
    AbVerdict::NoRegression {
        judged,
        measurements: rows.len(),
    }
}

/// How an A/B judges: the rounds of its first set, the least change of a measurement's median
/// that can be a regression, and whether behaviour is compared too (`--behaviour`, see
/// [`crate::compare::behaviour`]) and a change of it fails the run (`--fail-on-change`).
#[derive(Debug, Clone, Copy)]
pub struct Judging {
    pub rounds: u32,
    pub threshold_pct: f64,
    pub behaviour: bool,
    pub fail_on_change: bool,
}

/// [`judge`]'s verdict with the behaviour comparison's (`changes` of `judged` observables) on
/// top: a verdict that blames or clears nothing (a refused command, a regression, a failure of
/// either kernel, a boot that could not test) stands; else the behaviour verdict, carrying the
/// measurements' when they had one.
pub fn judge_behaviour(
    boots: &[BootResult],
    rows: &[Row],
    changes: &[crate::model::behaviour::Change],
    judged: usize,
    fail_on_change: bool,
) -> AbVerdict {
    let measurements = match judge(boots, rows) {
        AbVerdict::NoRegression {
            judged,
            measurements,
        } => Some((judged, measurements)),
        // Measurements without a verdict (a busy host) leave the behaviour's standing.
        AbVerdict::TooFewBoots { measurements, .. } => Some((0, measurements)),
        AbVerdict::NothingToCompare => None,
        v => return v,
    };
    AbVerdict::Behaviour {
        changed: changes.len(),
        judged,
        fail: fail_on_change,
        measurements,
    }
}

/// What `ab` needs besides the VM options: the two kernels with their module trees.
pub struct Kernels {
    pub base: (PathBuf, Option<PathBuf>),
    pub new: (PathBuf, Option<PathBuf>),
    /// Kernel command line for the new kernel's boots only, after the VM options' `append`
    /// (a mutant of the schemata kernel booted as both: `memcg_mutate=stat:percpu:double`).
    pub new_append: String,
}

/// Runs the boots in [`order`], each with `opts` (its kernel, modules and report directory set
/// per boot; a boot during which the host was busy runs again), and compares each side's
/// per-boot medians. When that first set of rounds finds a change, a second set of as many
/// rounds runs and the change counts only if the second set, judged on its own boots, finds it
/// too (see [`confirmed`]). With `report`: DIR/SIDE-ROUND is each boot's report directory,
/// DIR/SIDE-ROUND.console its kernel console, DIR/SIDE/ROUND.json its result (`memcgtest compare
/// DIR/base DIR/new` judges them again, both sets pooled) and DIR/ab.json the comparison. Stops
/// at the first boot that could not test or whose guest refused the command; a boot that failed
/// to start (an error of the host) or a signal ends the series as such a boot, and what was
/// measured before is still compared and reported.
pub fn run(
    opts: &vm::Options,
    kernels: &Kernels,
    j: Judging,
    report: Option<&Path>,
) -> Result<AbReport> {
    let (rounds, threshold_pct) = (j.rounds, j.threshold_pct);
    check_inputs(kernels, report)?;
    // Behaviour is read from each boot's report directory: a temporary one without --report.
    let scratch = match (j.behaviour, report) {
        (true, None) => Some(
            tempfile::Builder::new()
                .prefix("memcgtest-ab-")
                .tempdir_in(std::env::temp_dir())
                .with_context(|| {
                    format!("make a directory in {}", std::env::temp_dir().display())
                })?,
        ),
        _ => None,
    };
    let report = report.or(scratch.as_ref().map(|t| t.path()));
    let mut b = Booter::new(opts, kernels, report);
    let first = b.set(1..=rounds)?;
    let rows = compare::compare_runs(&first[0], &first[1], threshold_pct, compare::Samples::Runs);
    let candidates = j.behaviour && !behaviour::judge(&b.dirs, behaviour::FIRST_SET).0.is_empty();
    let changed = rows.iter().any(|r| r.verdict.is_change());
    let [mut base, mut new] = first;
    let (rows, second) = if (changed || candidates) && !b.stopped() {
        if changed {
            eprintln!(
                "memcgtest ab: the first {rounds} rounds found a change; {rounds} more rounds, judged on their own, must find it again"
            );
        }
        if candidates {
            eprintln!(
                "memcgtest ab: the first {rounds} rounds show behaviour that may have changed; {rounds} more rounds, a change counts over {} boots a side or more",
                behaviour::POOLED
            );
        }
        let [b2, n2] = b.set(rounds + 1..=2 * rounds)?;
        let all = compare::compare_runs(&b2, &n2, threshold_pct, compare::Samples::Runs);
        base.extend(b2);
        new.extend(n2);
        confirmed(rows, all)
    } else {
        (rows, Vec::new())
    };
    // The suite's own cost over every boot, both sets.
    let cost = compare::costs(&base, &new);
    let (changes, judged) = match j.behaviour {
        true => behaviour::judge(&b.dirs, behaviour::POOLED),
        false => (Vec::new(), 0),
    };
    let verdict = match j.behaviour {
        true => judge_behaviour(&b.boots, &rows, &changes, judged, j.fail_on_change),
        false => judge(&b.boots, &rows),
    };
    let rep = AbReport {
        tool: "memcgtest",
        base: kernels.base.0.clone(),
        new: kernels.new.0.clone(),
        new_append: kernels.new_append.clone(),
        rounds,
        threshold_pct,
        boots: b.boots,
        rows,
        second_set: second,
        cost,
        behaviour: j.behaviour,
        changes,
        behaviour_judged: judged,
        exit: verdict.exit_code(),
        verdict: verdict.to_string(),
    };
    if let Some(d) = report.filter(|_| scratch.is_none()) {
        write_reports(d, &rep, &b.dirs, j.fail_on_change)?;
    }
    Ok(rep)
}

/// The A/B's files in its report directory `d`: ab.json, index.html and, with behaviour compared,
/// kcidb.json (the changes as tests of the new kernel, whose first boot's run names it).
fn write_reports(d: &Path, rep: &AbReport, dirs: &[(Side, PathBuf)], fail: bool) -> Result<()> {
    save(&d.join("ab.json"), &serde_json::to_value(rep)?)?;
    write(&d.join("index.html"), &html::render(rep))?;
    let first_new = dirs.iter().find(|(s, _)| *s == Side::New);
    if let Some((_, first)) = first_new.filter(|_| rep.behaviour) {
        let new = compare::behaviour::run_report(first)?;
        let doc = crate::report::kcidb::behaviour(&new, &rep.changes, rep.behaviour_judged, fail);
        write(&d.join("kcidb.json"), &doc)?;
    }
    Ok(())
}

/// The first set's rows with each change judged again by the second set (`second`: that set's
/// rows): a change stands only when the second set finds the same change of the same
/// measurement; one the second set could not judge (too few boots: a boot that could not test)
/// is left without a verdict; any other is "not repeated". Returns those rows and the second
/// set's rows of the changed measurements. Why: a side's boots vary by 5–25 % under TCG here
/// (docs/ab.md), 4 v 4 boots separate by chance 2 times in 70 per measurement and direction,
/// and an A/B judges ten or more measurements; two independent sets both by chance, per
/// measurement, about 1 time in 1200.
pub fn confirmed(first: Vec<Row>, second: Vec<Row>) -> (Vec<Row>, Vec<Row>) {
    let mut shown = Vec::new();
    let rows = first
        .into_iter()
        .map(|mut r| {
            if !r.verdict.is_change() {
                return r;
            }
            let again = second
                .iter()
                .find(|s| s.scenario == r.scenario && s.measurement == r.measurement);
            r.verdict = match again.map(|s| s.verdict) {
                Some(v) if v == r.verdict => v,
                Some(Verdict::TooFewSamples) | None => Verdict::TooFewSamples,
                Some(_) => Verdict::NotRepeated,
            };
            shown.extend(again.cloned());
            r
        })
        .collect();
    (rows, shown)
}

/// Boots rounds of an A/B and keeps what they measured.
struct Booter<'a> {
    opts: vm::Options,
    kernels: &'a Kernels,
    report: Option<&'a Path>,
    first_accel: Option<vm::AccelChoice>,
    boots: Vec<BootResult>,
    /// The VM options' kernel command line, both sides'.
    append: String,
    /// The report directory of each counted boot that reported a result, with its side.
    dirs: Vec<(Side, PathBuf)>,
}

impl<'a> Booter<'a> {
    fn new(opts: &vm::Options, kernels: &'a Kernels, report: Option<&'a Path>) -> Self {
        Booter {
            opts: opts.clone(),
            kernels,
            report,
            first_accel: None,
            boots: Vec::new(),
            append: opts.append.clone(),
            dirs: Vec::new(),
        }
    }

    /// Whether the last boot ended the A/B: it could not test, or its command was refused.
    fn stopped(&self) -> bool {
        (self.boots.last()).is_some_and(|b| b.code == exit::UNTESTABLE || b.code == exit::USAGE)
    }

    /// Boots the rounds `set` in [`order`] (stopping as [`run`] says) and returns each side's
    /// results of these rounds.
    fn set(&mut self, set: std::ops::RangeInclusive<u32>) -> Result<[Vec<serde_json::Value>; 2]> {
        let plan: Vec<_> = order(*set.end())
            .into_iter()
            .filter(|(r, _)| set.contains(r))
            .collect();
        let mut out: [Vec<serde_json::Value>; 2] = [Vec::new(), Vec::new()];
        for &(round, side) in &plan {
            if let Some(v) = self.one(round, side, 2 * *set.end() as usize)? {
                out[side as usize].push(v);
            }
            if self.stopped() {
                break;
            }
        }
        Ok(out)
    }

    /// One counted boot of `side` in `round` (`of`: the boots planned so far, for progress),
    /// booted again while the host was busy; its result, saved in the report.
    fn one(&mut self, round: u32, side: Side, of: usize) -> Result<Option<serde_json::Value>> {
        let o = &mut self.opts;
        (o.kernel, o.modules) = match side {
            Side::Base => self.kernels.base.clone(),
            Side::New => self.kernels.new.clone(),
        };
        o.append = match (side, self.kernels.new_append.as_str()) {
            (Side::New, extra) if !extra.is_empty() => {
                format!("{} {extra}", self.append).trim().into()
            }
            _ => self.append.clone(),
        };
        let label = format!("{}-{round}", side.as_str());
        o.report = self.report.map(|d| d.join(&label));
        o.console_log = self.report.map(|d| d.join(format!("{label}.console")));
        // Each earlier call left exactly one used boot (retries are marked not used).
        let this = self.boots.iter().filter(|b| b.used).count() + 1;
        eprintln!(
            "memcgtest ab: boot {this}/{of}: round {round}, {} kernel {}",
            side.as_str(),
            o.kernel.display(),
        );
        let result = match boot_until_quiet(o, round, side, &mut self.boots) {
            Ok((result, accel)) => {
                same_accel(&mut self.first_accel, accel, o, self.boots.last_mut());
                result
            }
            Err(e) => {
                let mut b = BootResult::stopped(round, side, format!("{e:#}"));
                // A guest command `vm` refuses is the user's (2); anything else the host's.
                if let Some(Error::Usage(_)) = e.downcast_ref::<Error>() {
                    b.code = exit::USAGE;
                }
                self.boots.push(b);
                None
            }
        };
        if let (Some(v), Some(d)) = (&result, self.report) {
            save(&d.join(side.as_str()).join(format!("{round}.json")), v)?;
            self.dirs.push((side, d.join(&label)));
        }
        Ok(result)
    }
}

/// What can be looked at before the first boot, so a typo is not found minutes in: both kernel
/// images and module trees. The report directory is made, and the results of an earlier A/B in
/// it removed (they would be pooled by `compare` with these).
fn check_inputs(kernels: &Kernels, report: Option<&Path>) -> Result<()> {
    for (k, m) in [&kernels.base, &kernels.new] {
        if let Err(e) = vm::qemu::check_kernel_image(k) {
            return Err(Error::Environment(format!("ab: {e}")).into());
        }
        if let Some(m) = m {
            vm::modules::resolve(m, vm::modules::WANTED)?;
        }
    }
    if let Some(d) = report {
        std::fs::create_dir_all(d).with_context(|| format!("mkdir {}", d.display()))?;
        let rd = std::fs::read_dir(d).with_context(|| format!("read directory {}", d.display()))?;
        for old in rd.filter_map(|e| e.ok().map(|e| e.path())) {
            let name = old.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if earlier_boot(name) && old.is_dir() {
                std::fs::remove_dir_all(&old)
                    .with_context(|| format!("remove {}", old.display()))?;
            }
        }
    }
    Ok(())
}

/// Whether a name in a report directory is what an earlier A/B there left of its boots: a
/// side's results (`base`, `new`) or a boot's report directory (`base-3`, `new-12`), which
/// `compare` and the behaviour comparison would pool with this A/B's.
fn earlier_boot(name: &str) -> bool {
    [Side::Base, Side::New].iter().any(|s| {
        name.strip_prefix(s.as_str()).is_some_and(|rest| {
            rest.is_empty()
                || (rest.strip_prefix('-'))
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
    })
}

/// Keeps every boot under one accelerator. With `--accel auto`, a first boot that fell back to
/// TCG makes every later boot TCG at once (no KVM attempt each time); one that ran under KVM
/// leaves `auto` as it is, so a later KVM failure is still caught and falls back. A boot that ran
/// under another accelerator than the first is not comparable: 125.
fn same_accel(
    first: &mut Option<vm::AccelChoice>,
    used: vm::AccelChoice,
    o: &mut vm::Options,
    boot: Option<&mut BootResult>,
) {
    let Some(f) = *first else {
        *first = Some(used);
        if used == vm::AccelChoice::Tcg {
            o.accel = vm::AccelChoice::Tcg;
        }
        return;
    };
    if let Some(b) = boot.filter(|_| used != f) {
        b.code = exit::UNTESTABLE;
        b.failures = vec![(
            "(boot)".into(),
            format!("ran under {used:?}, the first boot under {f:?}: not comparable"),
        )];
    }
}

#[cfg(test)]
mod tests;
