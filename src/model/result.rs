//! The result of a run: every scenario's status, checks, measurements and moves. Every reporter,
//! `compare` and the VM host read it (it is Serialize and Deserialize: results.json).

use serde::{Deserialize, Serialize};

use super::record::{MoveRecord, PhaseMeasure, Record};
use crate::model::Version;
use crate::model::env::EnvInfo;
use crate::model::error::Error;
use crate::model::kcidb;
use crate::model::{CheckResult, Outcome};

/// How a scenario ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    Skip,
    Error,
    /// Every failed check matched a known issue of the scenario (exit 0 unless --strict).
    Known,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Skip => "skip",
            Status::Error => "error",
            Status::Known => "known",
        }
    }
}

/// Per-phase results for reports.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseResult {
    #[serde(flatten)]
    pub measure: PhaseMeasure,
    pub antagonists: Vec<String>,
    /// Changes of the sampled /proc/vmstat event counters during the phase.
    pub vmstat_delta: Vec<(String, i64)>,
    /// When the phase began and ended, seconds on the scenario's sample clock (its timeline's
    /// x axis); 0 in results written before they were recorded.
    #[serde(default)]
    pub start: f64,
    #[serde(default)]
    pub end: f64,
}

/// The result of one scenario.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub name: String,
    pub summary: String,
    pub status: Status,
    pub reason: String,
    pub cgroup_version: Option<Version>,
    pub seconds: f64,
    pub samples: usize,
    pub phases: Vec<PhaseResult>,
    pub checks: Vec<CheckResult>,
    /// Notes for people (tolerances, oddities seen, what was left out).
    pub notes: Vec<String>,
    /// Task moves and what they cost.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moves: Vec<MoveRecord>,
    /// Sample sets of everything measured (for `memcgtest compare`), busy repetitions apart.
    pub measurements: Vec<crate::model::Measurement>,
    /// How far each counter moved in the run (as scenarios name it, `.local` included): the
    /// largest change of any group's column, for the coverage table (`memcgtest coverage`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<(String, i64)>,
    /// Known issues expected on this kernel whose checks passed: fixed?
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixed: Vec<crate::model::KnownIssue>,
    /// The upstream fixes the scenario guards (its `fixes`): a failure of it is a failure such a
    /// fix once cured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixes: Vec<crate::model::FixTag>,
    #[serde(skip)]
    pub record: Option<Record>,
    /// Why the scenario could not finish, when its status is `error`: the kernel's fault (exit 1)
    /// or the machine's (125), see `Stop`.
    #[serde(skip)]
    pub error: Option<Error>,
}

impl ScenarioResult {
    /// Whether the run judged the kernel here: the scenario passed, failed or failed as known,
    /// or it is a skip only because paired rates it exists for were inconclusive (the machine
    /// was busy) while a check it declared passed (an accounting check, or another of its
    /// rates): its workload ran and that much was judged. An implied invariant alone is not
    /// what the scenario is about. A skip for a condition never reached judged nothing, nor did one whose
    /// accounting check was inconclusive (other writers on a kernel without per-file truth: an
    /// accounting bug would look the same).
    pub fn judged(&self) -> bool {
        match self.status {
            Status::Pass | Status::Fail | Status::Known => true,
            Status::Error => false,
            Status::Skip => {
                let mut declared = self.checks.iter().filter(|c| !c.implied);
                let busy_rates_only = declared.all(|c| {
                    !c.purpose
                        || c.outcome.judged()
                        || (c.performance && c.outcome == Outcome::Inconclusive)
                });
                busy_rates_only
                    && (self.checks.iter()).any(|c| !c.implied && c.outcome == Outcome::Pass)
            }
        }
    }

    /// Its performance checks that reached no verdict (inconclusive or not exercised).
    pub fn performance_unjudged(&self) -> impl Iterator<Item = &CheckResult> {
        (self.checks.iter()).filter(|c| c.performance && !c.outcome.judged())
    }

    /// A scenario that never ended (the VM guest died in it): failed, with why.
    pub fn unfinished(name: &str, summary: &str, reason: &str, seconds: f64) -> Self {
        let mut r = ScenarioResult::empty(name, summary, Status::Fail, reason.into());
        r.seconds = seconds;
        r
    }

    /// A result with a status and reason and nothing measured or judged yet.
    pub fn empty(name: &str, summary: &str, status: Status, reason: String) -> Self {
        ScenarioResult {
            name: name.into(),
            summary: summary.into(),
            status,
            reason,
            cgroup_version: None,
            seconds: 0.0,
            samples: 0,
            phases: Vec::new(),
            checks: Vec::new(),
            fixed: Vec::new(),
            fixes: Vec::new(),
            notes: Vec::new(),
            moves: Vec::new(),
            measurements: Vec::new(),
            moved: Vec::new(),
            record: None,
            error: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Totals {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub errors: usize,
    /// Scenarios whose every failure was a known issue.
    #[serde(default)]
    pub known: usize,
}

/// One run: the tool, the environment, every scenario's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    pub tool: String,
    pub version: String,
    /// When the run started, RFC 3339 in UTC.
    pub started: String,
    pub environment: EnvInfo,
    pub quick: bool,
    /// The KCIDB ids the run reports under (`--origin`, `--build-id`).
    pub kcidb: kcidb::Ids,
    pub scenarios: Vec<ScenarioResult>,
    pub totals: Totals,
    /// The run's wall time, seconds (each scenario has its own): `compare` shows the suite's
    /// own cost. 0 in result files written before it was recorded.
    #[serde(default)]
    pub seconds: f64,
}

impl RunReport {
    pub fn new(
        environment: EnvInfo,
        quick: bool,
        started: chrono::DateTime<chrono::Utc>,
        kcidb: kcidb::Ids,
        scenarios: Vec<ScenarioResult>,
    ) -> Self {
        let mut rep = RunReport {
            tool: "memcgtest".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            started: started.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            environment,
            quick,
            kcidb,
            scenarios,
            totals: Totals {
                passed: 0,
                failed: 0,
                skipped: 0,
                errors: 0,
                known: 0,
            },
            seconds: 0.0,
        };
        rep.count();
        rep
    }

    /// Recomputes the totals from the scenarios' statuses.
    pub fn count(&mut self) {
        let count = |s: Status| self.scenarios.iter().filter(|r| r.status == s).count();
        self.totals = Totals {
            passed: count(Status::Pass),
            failed: count(Status::Fail),
            skipped: count(Status::Skip),
            errors: count(Status::Error),
            known: count(Status::Known),
        };
    }

    /// Fails the named scenarios with a reason (a kernel splat the VM host saw during them).
    pub fn fail(&mut self, failed: &[(String, String)]) {
        for r in &mut self.scenarios {
            if let Some((_, why)) = failed.iter().find(|(n, _)| *n == r.name) {
                r.status = Status::Fail;
                r.reason = why.clone();
            }
        }
        self.count();
    }
}
