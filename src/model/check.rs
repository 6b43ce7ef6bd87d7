//! What a check concludes: its outcome, the values it compared and why, for every reporter.

use serde::{Deserialize, Serialize};

use super::Column;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Pass,
    Fail,
    /// What the check needs did not happen (or cannot be verified on this kernel).
    NotExercised,
    /// It happened, but other processes on the machine left too little for a verdict: the
    /// paired measurements were taken while the machine was busy, or other writers moved the
    /// machine-wide counters a kernel without per-file truth is judged against.
    Inconclusive,
}

impl Outcome {
    /// Whether the check reached a verdict (passed or failed).
    pub fn judged(self) -> bool {
        matches!(self, Outcome::Pass | Outcome::Fail)
    }

    /// The word reports show for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::NotExercised => "not exercised",
            Outcome::Inconclusive => "inconclusive",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckResult {
    pub name: String,
    pub outcome: Outcome,
    pub passed: bool,
    pub actual: String,
    pub expected: String,
    /// The tolerance and where it comes from.
    pub tolerance: Option<String>,
    /// A sentence for people: what was looked at, and on failure where it broke.
    pub detail: String,
    /// Time (s) of the sample where the check broke, for timelines.
    pub at: Option<f64>,
    /// The bound the failing counter was held to (bytes), for timelines.
    pub bound: Option<i64>,
    /// An invariant every scenario gets, not one its file declares: not exercised, it does not
    /// make the scenario skip.
    #[serde(default)]
    pub implied: bool,
    /// One of the checks the scenario exists for (`purpose`): not judged, the scenario is a skip;
    /// any other check not judged is listed in a passing scenario's line.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub purpose: bool,
    /// It judges speed, not accounting (ratio, throughput): `run --require-performance` makes
    /// such a check left unjudged a skip of the whole run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub performance: bool,
    /// The scenario's known issue this failure matches (see `known`): a known failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known: Option<crate::model::KnownIssue>,
    /// The sampled columns the check judged; on failure, those whose sum broke (for timelines).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<Column>,
    /// The ids of the documented promises (`crate::model::contract`) this result judged: set when
    /// the check was exercised.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub promises: Vec<String>,
    /// On failure, the id of the promise it broke; its detail quotes the promise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broke: Option<String>,
}

impl CheckResult {
    pub fn new(
        name: String,
        outcome: Outcome,
        actual: String,
        expected: String,
        detail: String,
    ) -> Self {
        CheckResult {
            name,
            outcome,
            passed: outcome == Outcome::Pass,
            actual,
            expected,
            tolerance: None,
            detail,
            at: None,
            bound: None,
            known: None,
            implied: false,
            purpose: false,
            performance: false,
            columns: Vec::new(),
            promises: Vec::new(),
            broke: None,
        }
    }

    /// The one-line account of a result: `name: actual (expected expected)`.
    pub fn summary(&self) -> String {
        format!(
            "{}: {} (expected {})",
            self.name, self.actual, self.expected
        )
    }

    /// A failure that broke `promise`: named in `broke`, quoted at the end of the detail.
    pub fn breaking(mut self, promise: &crate::model::contract::Contract) -> Self {
        self.broke = Some(promise.id.to_string());
        self.detail = format!("{}; it breaks {}", self.detail, promise.cite());
        self
    }
}
