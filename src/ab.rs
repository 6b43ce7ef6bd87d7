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
    pub rounds: u32,
    pub threshold_pct: f64,
    pub boots: Vec<BootResult>,
    pub rows: Vec<Row>,
    /// Wall times of each side's runs and scenarios (boot not included).
    pub cost: Vec<compare::Cost>,
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

/// What `ab` needs besides the VM options: the two kernels with their module trees.
pub struct Kernels {
    pub base: (PathBuf, Option<PathBuf>),
    pub new: (PathBuf, Option<PathBuf>),
}

/// Runs the boots in [`order`], each with `opts` (its kernel, modules and report directory set
/// per boot; a boot during which the host was busy runs again), and compares each side's
/// per-boot medians. With `report`: DIR/SIDE-ROUND is each boot's report directory,
/// DIR/SIDE-ROUND.console its kernel console, DIR/SIDE/ROUND.json its result (`memcgtest compare
/// DIR/base DIR/new` judges them again) and DIR/ab.json the comparison. Stops at the
/// first boot that could not test or whose guest refused the command; a boot that failed to
/// start (an error of the host) or a signal ends the series as such a boot, and what was
/// measured before is still compared and reported.
pub fn run(
    opts: &vm::Options,
    kernels: &Kernels,
    rounds: u32,
    threshold_pct: f64,
    report: Option<&Path>,
) -> Result<AbReport> {
    check_inputs(kernels, report)?;
    let mut boots = Vec::new();
    let mut pools: [Vec<serde_json::Value>; 2] = [Vec::new(), Vec::new()];
    let plan = order(rounds);
    let mut o = opts.clone();
    let mut first_accel = None;
    for (i, &(round, side)) in plan.iter().enumerate() {
        (o.kernel, o.modules) = match side {
            Side::Base => kernels.base.clone(),
            Side::New => kernels.new.clone(),
        };
        let label = format!("{}-{round}", side.as_str());
        o.report = report.map(|d| d.join(&label));
        o.console_log = report.map(|d| d.join(format!("{label}.console")));
        eprintln!(
            "memcgtest ab: boot {}/{}: round {round}, {} kernel {}",
            i + 1,
            plan.len(),
            side.as_str(),
            o.kernel.display(),
        );
        let result = match boot_until_quiet(&o, round, side, &mut boots) {
            Ok((result, accel)) => {
                same_accel(&mut first_accel, accel, &mut o, boots.last_mut());
                result
            }
            Err(e) => {
                let mut b = BootResult::stopped(round, side, format!("{e:#}"));
                // A guest command `vm` refuses is the user's (2); anything else the host's.
                if let Some(Error::Usage(_)) = e.downcast_ref::<Error>() {
                    b.code = exit::USAGE;
                }
                boots.push(b);
                None
            }
        };
        if let Some(v) = result {
            if let Some(d) = report {
                save(&d.join(side.as_str()).join(format!("{round}.json")), &v)?;
            }
            pools[side as usize].push(v);
        }
        if boots
            .last()
            .is_some_and(|b| b.code == exit::UNTESTABLE || b.code == exit::USAGE)
        {
            break;
        }
    }
    let rows = compare::compare_runs(&pools[0], &pools[1], threshold_pct, compare::Samples::Runs);
    let cost = compare::costs(&pools[0], &pools[1]);
    let verdict = judge(&boots, &rows);
    let rep = AbReport {
        tool: "memcgtest",
        base: kernels.base.0.clone(),
        new: kernels.new.0.clone(),
        rounds,
        threshold_pct,
        boots,
        rows,
        cost,
        exit: verdict.exit_code(),
        verdict: verdict.to_string(),
    };
    if let Some(d) = report {
        save(&d.join("ab.json"), &serde_json::to_value(&rep)?)?;
    }
    Ok(rep)
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
        for side in [Side::Base, Side::New] {
            let old = d.join(side.as_str());
            if old.exists() {
                std::fs::remove_dir_all(&old)
                    .with_context(|| format!("remove {}", old.display()))?;
            }
        }
    }
    Ok(())
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

/// Boots until the host was quiet during the boot (at most [`RETRIES`] times again), pushing
/// every boot onto `boots` (those run again as not used). Returns the counted boot's result and
/// the accelerator it ran under.
fn boot_until_quiet(
    opts: &vm::Options,
    round: u32,
    side: Side,
    boots: &mut Vec<BootResult>,
) -> Result<(Option<serde_json::Value>, vm::AccelChoice)> {
    let mut o = opts.clone();
    for attempt in 0.. {
        if crate::sys::cleanup::interrupted() {
            return Err(Error::Interrupted.into());
        }
        if let Some(d) = &o.report {
            let _ = std::fs::remove_dir_all(d);
        }
        let (mut b, result, accel) = one_boot(&o, round, side)?;
        o.accel = accel;
        let busy = b.host_busy_cpus > BUSY_CPUS;
        // A guest that found the machine busy during its paired measurements judged none of
        // them, or judged nothing at all (125) with one of them inconclusive, though the boot's
        // average load stayed low: a burst; it too runs again (a failure is kept).
        let crowded = result.as_ref().is_some_and(|r| match b.code {
            exit::OK => inconclusive_only(r),
            exit::UNTESTABLE => any_inconclusive_rate(r),
            _ => false,
        });
        if ((busy && b.code != exit::UNTESTABLE) || crowded) && attempt < RETRIES {
            eprintln!(
                "memcgtest ab: {}: its figures do not count; booting it again",
                if crowded {
                    "the guest found the machine busy during its paired measurements and judged nothing".to_string()
                } else {
                    format!(
                        "other processes used {:.2} CPUs on average during that boot (more than {BUSY_CPUS})",
                        b.host_busy_cpus
                    )
                }
            );
            b.used = false;
            boots.push(b);
            continue;
        }
        if busy {
            eprintln!(
                "memcgtest ab: the host stayed busy ({:.2} CPUs by other processes); this boot's figures count, a verdict may be weaker",
                b.host_busy_cpus
            );
        }
        boots.push(b);
        return Ok((result, accel));
    }
    unreachable!("the loop returns by its last attempt")
}

/// The outcomes of a run's performance checks.
fn rate_outcomes(v: &serde_json::Value) -> Vec<&str> {
    let checks = (v["scenarios"].as_array().into_iter().flatten())
        .flat_map(|s| s["checks"].as_array().into_iter().flatten());
    checks
        .filter(|c| c["performance"] == true)
        .filter_map(|c| c["outcome"].as_str())
        .collect()
}

/// Whether a run's result judged none of its performance checks, and the machine was busy
/// during some of them (an inconclusive one): nothing else kept it from a verdict.
fn inconclusive_only(v: &serde_json::Value) -> bool {
    let perf = rate_outcomes(v);
    perf.iter().all(|o| *o != "pass" && *o != "fail") && perf.contains(&"inconclusive")
}

/// Whether a performance check of a run's result was left inconclusive by a busy machine.
fn any_inconclusive_rate(v: &serde_json::Value) -> bool {
    rate_outcomes(v).contains(&"inconclusive")
}

/// Boots once and measures what else the host did meanwhile. A run that reported nothing
/// tested nothing (125).
fn one_boot(
    opts: &vm::Options,
    round: u32,
    side: Side,
) -> Result<(BootResult, Option<serde_json::Value>, vm::AccelChoice)> {
    use crate::sys::proc::{PROC, Who, cpu_seconds, user_cpu_seconds};
    // User time on both sides: see `user_cpu_seconds` for why not system time.
    let ours = || cpu_seconds(Who::Process).0 + cpu_seconds(Who::Children).0;
    let (busy0, ours0, t0) = (
        user_cpu_seconds(Path::new(PROC))?,
        ours(),
        std::time::Instant::now(),
    );
    let out = vm::execute(opts)?;
    let seconds = t0.elapsed().as_secs_f64();
    let others = user_cpu_seconds(Path::new(PROC))? - busy0 - (ours() - ours0);
    let mut b = BootResult {
        round,
        side,
        code: out.code,
        seconds,
        host_busy_cpus: (others / seconds.max(1e-3)).max(0.0),
        used: true,
        failures: Vec::new(),
    };
    let Some((rep, _)) = &out.report else {
        if b.code == exit::OK {
            b.code = exit::UNTESTABLE;
        }
        return Ok((b, None, out.accel));
    };
    b.failures = failures(rep);
    let v = serde_json::to_value(rep).context("serialize a boot's result")?;
    Ok((b, Some(v), out.accel))
}

fn save(path: &Path, v: &serde_json::Value) -> Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).with_context(|| format!("mkdir {}", d.display()))?;
    }
    let text = serde_json::to_string_pretty(v)?;
    std::fs::write(path, text + "\n").with_context(|| format!("write {}", path.display()))
}

/// The human form: each boot, the comparison table, the verdict.
pub fn render(rep: &AbReport) -> String {
    let mut s = format!(
        "A/B: base {}\n     new  {}\n{} rounds, boots in the order A B, B A, ...\n\n",
        rep.base.display(),
        rep.new.display(),
        rep.rounds
    );
    for b in &rep.boots {
        s += &format!(
            "round {} {:<4} exit {:>3} {:>6.0} s  host busy {:.2} CPUs{}{}\n",
            b.round,
            b.side.as_str(),
            b.code,
            b.seconds,
            b.host_busy_cpus,
            if b.used {
                ""
            } else {
                "  (busy host: booted again)"
            },
            if b.failures.is_empty() {
                String::new()
            } else {
                format!(
                    "  failed: {}",
                    b.failures
                        .iter()
                        .map(|(n, why)| format!("{n} ({})", why.lines().next().unwrap_or("")))
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            }
        );
    }
    s += "\n";
    if !rep.rows.is_empty() {
        s += &compare::render(&rep.rows, rep.threshold_pct, compare::Samples::Runs);
    }
    s += &compare::render_costs(&rep.cost);
    s += &format!("verdict: {} (exit {})\n", rep.verdict, rep.exit);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run that judged none of its performance checks, one of them inconclusive (a busy
    /// machine), is booted again; one that judged any, or whose only trouble is a scenario it
    /// cannot run, is not.
    #[test]
    fn only_a_run_inconclusive_throughout_is_retried() {
        let check = |performance: bool, outcome: &str| serde_json::json!({"performance": performance, "outcome": outcome});
        let run = |checks: Vec<serde_json::Value>| serde_json::json!({ "scenarios": [{"status": "pass", "checks": checks}] });
        let busy = check(true, "inconclusive");
        assert!(inconclusive_only(&run(vec![
            busy.clone(),
            check(false, "pass")
        ])));
        assert!(inconclusive_only(&run(vec![
            busy.clone(),
            check(true, "not-exercised")
        ])));
        assert!(!inconclusive_only(&run(vec![
            busy.clone(),
            check(true, "pass")
        ])));
        assert!(!inconclusive_only(&run(vec![check(true, "not-exercised")])));
        assert!(!inconclusive_only(&run(vec![check(false, "inconclusive")])));
        assert!(!inconclusive_only(&run(vec![])));
        // A guest that judged nothing (125) with a rate inconclusive is crowded too.
        assert!(any_inconclusive_rate(&run(vec![
            busy.clone(),
            check(true, "pass")
        ])));
        assert!(!any_inconclusive_rate(&run(vec![check(
            false,
            "inconclusive"
        )])));
        assert!(!inconclusive_only(&serde_json::json!({})));
    }

    #[test]
    fn order_alternates_which_side_boots_first() {
        let o: Vec<String> = order(3)
            .iter()
            .map(|(r, s)| format!("{r}{}", &s.as_str()[..1]))
            .collect();
        assert_eq!(o, ["1b", "1n", "2n", "2b", "3b", "3n"]);
        assert!(order(0).is_empty());
    }

    fn boot(side: Side, code: u8) -> BootResult {
        BootResult {
            round: 1,
            side,
            code,
            seconds: 1.0,
            host_busy_cpus: 0.0,
            used: true,
            failures: Vec::new(),
        }
    }

    fn row(verdict: Verdict) -> Row {
        Row {
            scenario: "fault-overhead".into(),
            measurement: "one-client: fault outside".into(),
            unit: "faults/s".into(),
            base: vec![3.0; 3],
            new: vec![2.0; 3],
            base_busy: 0,
            new_busy: 0,
            base_median: 3.0,
            new_median: 2.0,
            change_pct: -33.3,
            verdict,
        }
    }

    #[test]
    fn exit_codes_blame_the_new_kernel_only() {
        let ok = [boot(Side::Base, 0), boot(Side::New, 0)];
        assert_eq!(
            judge(&ok, &[row(Verdict::NoSignificantChange)]).exit_code(),
            0
        );
        let v = judge(&ok, &[row(Verdict::Regression)]);
        let (c, why) = (v.exit_code(), v.to_string());
        assert_eq!(c, 1);
        assert!(why.contains("fault outside -33.3%"), "{why}");
        assert_eq!(judge(&ok, &[row(Verdict::Improvement)]).exit_code(), 0);
        // Too few samples is no verdict: not a failure, and alone not a pass either.
        assert_eq!(judge(&ok, &[row(Verdict::TooFewSamples)]).exit_code(), 125);
        // Every boot busy throughout: the rows are still there (not "nothing to compare", 2),
        // too few to judge, and the verdict says why.
        let mut busy = row(Verdict::TooFewSamples);
        (busy.base, busy.new, busy.base_busy, busy.new_busy) = (vec![], vec![], 4, 4);
        let v = judge(&ok, &[busy]);
        assert_eq!(v.exit_code(), 125);
        assert!(
            v.to_string().contains("(8 boots' measurements left out"),
            "{v}"
        );
        let some = [
            row(Verdict::TooFewSamples),
            row(Verdict::NoSignificantChange),
        ];
        assert_eq!(judge(&ok, &some).exit_code(), 0);
        assert_eq!(judge(&ok, &[]).exit_code(), 2);
        let new_fails = [boot(Side::Base, 0), boot(Side::New, 1)];
        let v = judge(&new_fails, &[]);
        let (c, why) = (v.exit_code(), v.to_string());
        assert_eq!(c, 1);
        assert!(why.contains("(boot exit 1)"), "{why}");
        // A failure the base kernel shares is not the new kernel's.
        let mut b = boot(Side::Base, 1);
        b.failures = vec![("oom-kill".into(), "x".into())];
        let mut n = boot(Side::New, 1);
        n.failures = vec![("oom-kill".into(), "y".into())];
        let v = judge(&[b.clone(), n.clone()], &[]);
        let (c, why) = (v.exit_code(), v.to_string());
        assert_eq!(c, 125, "{why}");
        assert!(why.contains("oom-kill (the new kernel too)"), "{why}");
        n.failures.push(("memory-high".into(), "z".into()));
        let v = judge(&[b, n], &[]);
        let (c, why) = (v.exit_code(), v.to_string());
        assert_eq!(c, 1);
        assert!(why.contains("failed memory-high (the base"), "{why}");
        // A guest that refused the command: 2.
        assert_eq!(judge(&[boot(Side::Base, 2)], &[]).exit_code(), 2);
        let stopped = BootResult::stopped(1, Side::New, "mkfs: disk full".into());
        let v = judge(&[boot(Side::Base, 0), stopped], &[]);
        let (c, why) = (v.exit_code(), v.to_string());
        assert_eq!(c, 125);
        assert!(why.contains("mkfs: disk full"), "{why}");
        let base_fails = [boot(Side::Base, 1), boot(Side::New, 0)];
        assert_eq!(
            judge(&base_fails, &[row(Verdict::NoSignificantChange)]).exit_code(),
            125
        );
        let untestable = [boot(Side::Base, 0), boot(Side::New, 125)];
        assert_eq!(judge(&untestable, &[]).exit_code(), 125);
        // A regression stands even when a later boot could not test.
        assert_eq!(
            judge(&untestable, &[row(Verdict::Regression)]).exit_code(),
            1
        );
        // A boot run again does not count.
        let mut rerun = boot(Side::New, 1);
        rerun.used = false;
        assert_eq!(
            judge(
                &[rerun, boot(Side::New, 0)],
                &[row(Verdict::NoSignificantChange)]
            )
            .exit_code(),
            0
        );
    }
}
