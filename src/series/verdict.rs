//! What a series did, patch by patch: each patch's build and runs against the base's, the first
//! patch that turned each check red, and the series' exit code. Pure: built from what was
//! recorded, unit-tested without a kernel.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::build::Built;
use super::git::{Patch, Refused};
use crate::model::error::exit;
use crate::model::{Outcome, RunReport, Status};

/// One scenario of one run: its status and its failed checks (name; what it saw and expected).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub scenario: String,
    pub status: Status,
    pub failed: Vec<(String, String)>,
    /// Why, for a failure without a failed check (an error: the guest died, a worker killed).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// One boot of a patch's kernel under one cgroup layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutRun {
    pub cgroup: String,
    /// The boot's exit code (the guest's, or 1 for a kernel that panicked or hung).
    pub code: u8,
    pub seconds: f64,
    pub cells: Vec<Cell>,
    /// Why the boot tested nothing, when it did not.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

impl LayoutRun {
    /// The cells of a guest's report.
    pub fn from_report(cgroup: &str, code: u8, seconds: f64, rep: &RunReport) -> LayoutRun {
        let cells = (rep.scenarios.iter())
            .map(|s| Cell {
                scenario: s.name.clone(),
                status: s.status,
                failed: (s.checks.iter())
                    .filter(|c| c.outcome == Outcome::Fail && c.known.is_none())
                    .map(|c| {
                        (
                            c.name.clone(),
                            format!("{} (expected {})", c.actual, c.expected),
                        )
                    })
                    .collect(),
                reason: match s.status {
                    Status::Fail | Status::Error => s.reason.clone(),
                    _ => String::new(),
                },
            })
            .collect();
        LayoutRun {
            cgroup: cgroup.into(),
            code,
            seconds,
            cells,
            reason: String::new(),
        }
    }

    /// "12 pass, 1 fail, 3 skip".
    pub fn counts(&self) -> String {
        if self.cells.is_empty() {
            return format!("exit {}: {}", self.code, first_line(&self.reason));
        }
        let n = |s: Status| self.cells.iter().filter(|c| c.status == s).count();
        let mut parts = vec![format!("{} pass", n(Status::Pass))];
        for (s, word) in [
            (Status::Fail, "fail"),
            (Status::Error, "error"),
            (Status::Known, "known"),
            (Status::Skip, "skip"),
        ] {
            if n(s) > 0 {
                parts.push(format!("{} {word}", n(s)));
            }
        }
        parts.join(", ")
    }
}

/// A patch's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PatchVerdict {
    /// The base every patch is judged against.
    Base,
    /// Nothing that passed on the base fails.
    Green,
    /// It turned a check red: a check that passed on the base (and on the patch before) fails.
    Bad,
    /// It does not build (a series must bisect: every patch builds).
    BuildFailed,
    /// It fails only what an earlier patch turned red.
    StillRed,
    /// Its kernel could not be tested (a boot the host could not run, every scenario skipped).
    Untestable,
    /// Built but not booted (`--strategy head`): a later patch's run vouches for it (the head
    /// was green, or bisection passed over it).
    NotBooted,
}

impl PatchVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            PatchVerdict::Base => "base",
            PatchVerdict::Green => "green",
            PatchVerdict::Bad => "BAD",
            PatchVerdict::BuildFailed => "BUILD FAILED",
            PatchVerdict::StillRed => "still red",
            PatchVerdict::Untestable => "untestable",
            PatchVerdict::NotBooted => "not booted",
        }
    }
}

/// A patch's A/B against the base (`--ab`): `ab`'s exit code and verdict line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbSummary {
    pub exit: u8,
    pub verdict: String,
    pub seconds: f64,
}

/// A patch: its build, its runs and what they say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatchReport {
    pub patch: Patch,
    pub build: Built,
    pub runs: Vec<LayoutRun>,
    /// Its A/B against the base, with `--ab`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab: Option<AbSummary>,
    pub verdict: PatchVerdict,
}

/// A check that a patch turned red: on the base it passed, on the patch before it did too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Red {
    pub patch: usize,
    pub cgroup: String,
    pub scenario: String,
    /// The failed check; `build` for a build failure, empty for a scenario that failed without
    /// one (the guest died in it).
    pub check: String,
    pub message: String,
}

/// Where a failure is: (cgroup, scenario, check).
type Key = (String, String, String);

/// What failed in a patch's runs (build failure included) that did not fail on the base.
fn failures(p: &PatchReport, base: &PatchReport) -> Vec<(Key, String)> {
    if let Built::Failed { errors, .. } = &p.build {
        let first = errors
            .first()
            .cloned()
            .unwrap_or_else(|| "make failed".into());
        return vec![((String::new(), String::new(), "build".into()), first)];
    }
    let base_failed: BTreeSet<Key> = (base.runs.iter())
        .flat_map(|r| cell_failures(r).into_iter().map(|(k, _)| k))
        .collect();
    let mut out: Vec<(Key, String)> = (p.runs.iter())
        .flat_map(cell_failures)
        .filter(|(k, _)| !base_failed.contains(k))
        .collect();
    // A regression against the base, or a performance scenario the patch's kernel failed.
    if let Some(ab) = p.ab.as_ref().filter(|ab| ab.exit == exit::FAIL) {
        out.push((
            ("ab".into(), "ab".into(), "performance".into()),
            ab.verdict.clone(),
        ));
    }
    out
}

/// Every failure of a run: each failed check, or the scenario itself when it failed without one.
fn cell_failures(r: &LayoutRun) -> Vec<(Key, String)> {
    let mut out = Vec::new();
    for c in &r.cells {
        if !matches!(c.status, Status::Fail | Status::Error) {
            continue;
        }
        let key = |check: &str| (r.cgroup.clone(), c.scenario.clone(), check.to_string());
        if c.failed.is_empty() {
            out.push((key(""), first_line(&c.reason).to_string()));
        }
        out.extend(c.failed.iter().map(|(n, m)| (key(n), m.clone())));
    }
    // A kernel that panicked or hung before a scenario could fail.
    if out.is_empty() && r.code == exit::FAIL {
        let why = if r.reason.is_empty() {
            "the boot failed"
        } else {
            first_line(&r.reason)
        };
        out.push((
            (r.cgroup.clone(), "(boot)".into(), String::new()),
            why.to_string(),
        ));
    }
    out
}

/// Whether a patch's runs failed something the base's did not (or it does not build): what
/// `--strategy head` bisects on, by the rules that make a patch bad.
pub fn red_against(p: &PatchReport, base: &PatchReport) -> bool {
    !failures(p, base).is_empty()
}

/// What one run of a patch said, for bisection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    Green,
    Red,
    Untestable,
}

/// The next patch `--strategy head` boots, from what the patches booted so far said (`seen[i]`,
/// None: not booted; the base is green, the head red): the middle of the patches after the last
/// green one and before the first red one that were not found untestable. None when there is
/// nothing left to boot: the first red one is then the first bad patch.
pub fn next_to_boot(seen: &[Option<Seen>]) -> Option<usize> {
    let first_red = seen.iter().position(|s| *s == Some(Seen::Red))?;
    let last_green = seen[..first_red]
        .iter()
        .rposition(|s| *s == Some(Seen::Green))
        .unwrap_or(0);
    let open: Vec<usize> = (last_green + 1..first_red)
        .filter(|&i| seen[i].is_none())
        .collect();
    open.get(open.len() / 2).copied()
}

/// Whether a base can judge the patches: it was built and its runs tested its kernel.
pub fn judges(base: &PatchReport) -> bool {
    matches!(base.build, Built::Image { .. }) && tested(base)
}

/// Whether a patch's runs tested its kernel: some scenario passed or failed, or a boot failed.
pub fn tested(p: &PatchReport) -> bool {
    (p.runs.iter()).any(|r| {
        r.code == exit::FAIL || (r.cells.iter()).any(|c| !matches!(c.status, Status::Skip))
    })
}

/// The whole series: every patch, what turned red where, and its verdict.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeriesReport {
    pub tool: String,
    pub tree: String,
    pub cgroups: Vec<String>,
    /// What each guest ran.
    pub guest: Vec<String>,
    pub patches: Vec<PatchReport>,
    /// The mbox patch `git am` refused (the series stops there).
    pub refused: Option<Refused>,
    pub red: Vec<Red>,
    pub first_bad: Option<usize>,
    pub exit: u8,
    pub verdict: String,
    /// How the patches were chosen for booting ("every", "head") and what that cost.
    #[serde(default)]
    pub strategy: String,
    #[serde(default)]
    pub cost: Cost,
}

/// What a strategy cost in runs (one patch under one layout): those it used, those of them it
/// booted (the others were recorded by an earlier series run), and those `--strategy every`
/// uses for the same series (every patch that builds, every layout).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub runs: usize,
    pub booted: usize,
    pub every: usize,
}

impl SeriesReport {
    /// The rows of the table scenario (layout) x patch: every (scenario, cgroup) run, sorted.
    pub fn rows(&self) -> Vec<(String, String)> {
        let rows: BTreeSet<(String, String)> = (self.patches.iter())
            .flat_map(|p| p.runs.iter())
            .flat_map(|r| {
                r.cells
                    .iter()
                    .map(|c| (c.scenario.clone(), r.cgroup.clone()))
            })
            .collect();
        rows.into_iter().collect()
    }
}

impl PatchReport {
    /// The status of `scenario` under `cgroup` in this patch's runs.
    pub fn status(&self, scenario: &str, cgroup: &str) -> Option<Status> {
        (self.runs.iter().filter(|r| r.cgroup == cgroup))
            .flat_map(|r| r.cells.iter())
            .find(|c| c.scenario == scenario)
            .map(|c| c.status)
    }
}

/// Judges each patch against the base (patches[0]) and the patch before it.
pub fn judge(patches: &mut [PatchReport]) -> Vec<Red> {
    let Some((base, rest)) = patches.split_first_mut() else {
        return Vec::new();
    };
    base.verdict = PatchVerdict::Base;
    let mut red = Vec::new();
    // What failed on the patch before, by scenario: one that keeps failing is still red when
    // another of its checks is the one to fail (a broken kernel trips a scenario's checks in
    // different orders from boot to boot).
    let mut red_before: BTreeSet<(String, String)> = BTreeSet::new();
    for p in rest.iter_mut() {
        let built = matches!(p.build, Built::Image { .. });
        if built && p.runs.is_empty() {
            p.verdict = PatchVerdict::NotBooted;
            continue;
        }
        let now = failures(p, base);
        if built && !tested(p) {
            p.verdict = PatchVerdict::Untestable;
            continue;
        }
        let new: Vec<&(Key, String)> = now
            .iter()
            .filter(|((cg, sc, _), _)| !red_before.contains(&(cg.clone(), sc.clone())))
            .collect();
        red.extend(new.iter().map(|((cgroup, scenario, check), message)| Red {
            patch: p.patch.index,
            cgroup: cgroup.clone(),
            scenario: scenario.clone(),
            check: check.clone(),
            message: message.clone(),
        }));
        p.verdict = match (built, new.is_empty(), now.is_empty()) {
            (false, _, _) => PatchVerdict::BuildFailed,
            (true, false, _) => PatchVerdict::Bad,
            (true, true, false) => PatchVerdict::StillRed,
            (true, true, true) => PatchVerdict::Green,
        };
        red_before = now.into_iter().map(|((cg, sc, _), _)| (cg, sc)).collect();
    }
    red
}

/// The series' exit code and verdict line: 1 when a patch turned a check red or does not build,
/// 125 when the base or a patch could not be tested (and none was bad), 2 when the mbox does
/// not apply (and none was bad), else 0.
pub fn verdict(patches: &[PatchReport], refused: Option<&Refused>) -> (u8, String, Option<usize>) {
    let bad = (patches.iter())
        .find(|p| matches!(p.verdict, PatchVerdict::Bad | PatchVerdict::BuildFailed));
    if let Some(p) = bad {
        let line = format!("first bad patch: {} {}", p.patch.short(), p.patch.subject);
        return (exit::FAIL, line, Some(p.patch.index));
    }
    match patches.first() {
        None => return (exit::UNTESTABLE, "nothing was tested".into(), None),
        Some(b) if !matches!(b.build, Built::Image { .. }) => {
            return (
                exit::UNTESTABLE,
                "the base does not build: there is nothing to judge the patches against".into(),
                None,
            );
        }
        Some(b) if !tested(b) => {
            return (
                exit::UNTESTABLE,
                "the base's runs tested nothing: there is nothing to judge the patches against"
                    .into(),
                None,
            );
        }
        _ => {}
    }
    let untestable: Vec<String> = (patches.iter())
        .filter(|p| p.verdict == PatchVerdict::Untestable)
        .map(|p| format!("#{} {}", p.patch.index, p.patch.short()))
        .collect();
    if !untestable.is_empty() {
        let line = format!(
            "no bad patch, but {} could not be tested",
            untestable.join(", ")
        );
        return (exit::UNTESTABLE, line, None);
    }
    if let Some(r) = refused {
        let line = format!(
            "no bad patch among the {} applied, but patch {} ({}) does not apply",
            patches.len() - 1,
            r.number,
            r.subject
        );
        return (exit::USAGE, line, None);
    }
    let vouched = (patches.iter())
        .filter(|p| p.verdict == PatchVerdict::NotBooted)
        .count();
    let line = match vouched {
        0 => format!("every patch green ({})", self::patches(patches.len() - 1)),
        n => format!(
            "every patch green ({}; {n} not booted, vouched for by the head's runs)",
            self::patches(patches.len() - 1)
        ),
    };
    (exit::OK, line, None)
}

/// "1 patch", "6 patches".
pub fn patches(n: usize) -> String {
    if n == 1 {
        "1 patch".into()
    } else {
        format!("{n} patches")
    }
}

pub fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}
