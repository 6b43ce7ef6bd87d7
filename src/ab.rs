//! `memcgtest ab`: a base and a new kernel booted alternately (A B, B A, A B, ...: drift of the
//! machine over the minutes of the run hits both sides alike), each side's samples pooled per
//! measurement over the rounds, and `compare`'s verdicts on the pools. Correctness failures of
//! either kernel are reported beside the comparison.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::compare::{self, Row, Verdict};
use crate::error::{Error, exit};
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
/// new first (A B B A A B ...), so a linear drift adds the same to both sides' sums.
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
    /// The CPU time other processes of the host used during the boot, per second of it: what
    /// the guest competed with (see [`BUSY_CPUS`]).
    pub host_busy_cpus: f64,
    /// Whether its figures count: false for a boot run again because the host was busy.
    pub used: bool,
    /// The scenarios that failed or stopped with an error, with why.
    pub failures: Vec<(String, String)>,
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
    /// Exit code: see [`exit_code`].
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

/// The verdict of an A/B run and its exit code. 1 when the new kernel regressed a measurement or
/// failed a scenario (the kernel under test is at fault); 125 when a boot could not test, or the
/// base kernel failed (a broken reference cannot clear the new kernel) and the new one did not,
/// or no measurement had enough boots for a verdict; 2 when nothing was compared; else 0.
pub fn exit_code(boots: &[BootResult], rows: &[Row]) -> (u8, String) {
    let regressions: Vec<String> = rows
        .iter()
        .filter(|r| r.verdict == Verdict::Regression)
        .map(|r| format!("{}: {} {:+.1}%", r.scenario, r.measurement, r.change_pct))
        .collect();
    let failed = |side: Side| {
        boots
            .iter()
            .any(|b| b.used && b.side == side && b.code == exit::FAIL)
    };
    let untestable = boots.iter().find(|b| b.used && b.code == exit::UNTESTABLE);
    if !regressions.is_empty() {
        return (
            exit::FAIL,
            format!(
                "{} regression(s) of the new kernel: {}",
                regressions.len(),
                regressions.join("; ")
            ),
        );
    }
    if failed(Side::New) {
        return (
            exit::FAIL,
            "the new kernel failed a scenario (see its boots)".into(),
        );
    }
    if let Some(b) = untestable {
        return (
            exit::UNTESTABLE,
            format!(
                "round {} ({} kernel) could not test; nothing is judged",
                b.round,
                b.side.as_str()
            ),
        );
    }
    if failed(Side::Base) {
        return (
            exit::UNTESTABLE,
            "the base kernel failed a scenario, the new one did not: a broken reference clears nothing".into(),
        );
    }
    if rows.is_empty() {
        return (
            exit::USAGE,
            "no measurement to compare (run scenarios that measure, e.g. fault-overhead)".into(),
        );
    }
    let judged = rows
        .iter()
        .filter(|r| r.verdict != Verdict::TooFewSamples)
        .count();
    if judged == 0 {
        return (
            exit::UNTESTABLE,
            format!(
                "none of {} measurements had enough boots for a verdict",
                rows.len()
            ),
        );
    }
    (
        exit::OK,
        format!(
            "no regression: {judged} of {} measurements judged",
            rows.len()
        ),
    )
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
/// --per-run DIR/base DIR/new` judges them again) and DIR/ab.json the comparison. Stops at the
/// first boot that could not test.
pub fn run(
    opts: &vm::Options,
    kernels: &Kernels,
    rounds: u32,
    threshold_pct: f64,
    report: Option<&Path>,
) -> Result<AbReport> {
    // Both kernels are looked at before the first boot: a typo in --new is not found minutes in.
    for k in [&kernels.base.0, &kernels.new.0] {
        if let Err(e) = vm::qemu::check_kernel_image(k) {
            return Err(Error::Environment(format!("ab: {e}")).into());
        }
    }
    if let Some(d) = report {
        std::fs::create_dir_all(d).with_context(|| format!("mkdir {}", d.display()))?;
    }
    let mut boots = Vec::new();
    let mut pools: [Vec<serde_json::Value>; 2] = [Vec::new(), Vec::new()];
    let plan = order(rounds);
    // Every boot runs under the accelerator the first one ended up with: both sides alike, and
    // no KVM attempt (and fallback) per boot on a machine where it fails.
    let mut o = opts.clone();
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
        let (result, accel) = boot_until_quiet(&o, round, side, &mut boots)?;
        o.accel = accel;
        if let Some(v) = result {
            if let Some(d) = report {
                save(&d.join(side.as_str()).join(format!("{round}.json")), &v)?;
            }
            pools[side as usize].push(v);
        }
        if boots.last().is_some_and(|b| b.code == exit::UNTESTABLE) {
            break;
        }
    }
    let rows = compare::compare(
        &compare::per_run(&pools[0]),
        &compare::per_run(&pools[1]),
        threshold_pct,
    );
    let cost = compare::costs(&pools[0], &pools[1]);
    let (code, verdict) = exit_code(&boots, &rows);
    let rep = AbReport {
        tool: "memcgtest",
        base: kernels.base.0.clone(),
        new: kernels.new.0.clone(),
        rounds,
        threshold_pct,
        boots,
        rows,
        cost,
        exit: code,
        verdict,
    };
    if let Some(d) = report {
        save(&d.join("ab.json"), &serde_json::to_value(&rep)?)?;
    }
    Ok(rep)
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
        if busy && attempt < RETRIES && b.code != exit::UNTESTABLE {
            eprintln!(
                "memcgtest ab: other processes used {:.2} CPUs on average during that boot (more than {BUSY_CPUS}): its figures do not count; booting it again",
                b.host_busy_cpus
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

/// Boots once and measures what else the host did meanwhile. A run that reported nothing
/// tested nothing (125).
fn one_boot(
    opts: &vm::Options,
    round: u32,
    side: Side,
) -> Result<(BootResult, Option<serde_json::Value>, vm::AccelChoice)> {
    use crate::sys::proc::{PROC, Who, busy_cpu_seconds, cpu_seconds};
    let ours = || {
        let (a, b) = cpu_seconds(Who::Process);
        let (c, d) = cpu_seconds(Who::Children);
        a + b + c + d
    };
    let (busy0, ours0, t0) = (
        busy_cpu_seconds(Path::new(PROC))?,
        ours(),
        std::time::Instant::now(),
    );
    let out = vm::execute(opts)?;
    let seconds = t0.elapsed().as_secs_f64();
    let others = busy_cpu_seconds(Path::new(PROC))? - busy0 - (ours() - ours0);
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
        s += &compare::render(&rep.rows, rep.threshold_pct);
    }
    s += &compare::render_costs(&rep.cost);
    s += &format!("verdict: {} (exit {})\n", rep.verdict, rep.exit);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

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
            base_median: 3.0,
            new_median: 2.0,
            change_pct: -33.3,
            verdict,
        }
    }

    #[test]
    fn exit_codes_blame_the_new_kernel_only() {
        let ok = [boot(Side::Base, 0), boot(Side::New, 0)];
        assert_eq!(exit_code(&ok, &[row(Verdict::NoSignificantChange)]).0, 0);
        let (c, why) = exit_code(&ok, &[row(Verdict::Regression)]);
        assert_eq!(c, 1);
        assert!(why.contains("fault outside -33.3%"), "{why}");
        assert_eq!(exit_code(&ok, &[row(Verdict::Improvement)]).0, 0);
        // Too few samples is no verdict: not a failure, and alone not a pass either.
        assert_eq!(exit_code(&ok, &[row(Verdict::TooFewSamples)]).0, 125);
        let some = [
            row(Verdict::TooFewSamples),
            row(Verdict::NoSignificantChange),
        ];
        assert_eq!(exit_code(&ok, &some).0, 0);
        assert_eq!(exit_code(&ok, &[]).0, 2);
        let new_fails = [boot(Side::Base, 0), boot(Side::New, 1)];
        assert_eq!(exit_code(&new_fails, &[]).0, 1);
        let base_fails = [boot(Side::Base, 1), boot(Side::New, 0)];
        assert_eq!(
            exit_code(&base_fails, &[row(Verdict::NoSignificantChange)]).0,
            125
        );
        let untestable = [boot(Side::Base, 0), boot(Side::New, 125)];
        assert_eq!(exit_code(&untestable, &[]).0, 125);
        // A regression stands even when a later boot could not test.
        assert_eq!(exit_code(&untestable, &[row(Verdict::Regression)]).0, 1);
        // A boot run again does not count.
        let mut rerun = boot(Side::New, 1);
        rerun.used = false;
        assert_eq!(
            exit_code(
                &[rerun, boot(Side::New, 0)],
                &[row(Verdict::NoSignificantChange)]
            )
            .0,
            0
        );
    }
}
