//! The scenario file as written: serde types with spans for error messages; unknown keys are
//! rejected (those of steps and checks by their kind's reader).

use serde::Deserialize;
use toml::Spanned;

use super::Origin;
use crate::model::source::Table;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub(super) name: Spanned<String>,
    pub(super) summary: Spanned<String>,
    #[serde(default)]
    pub(super) description: String,
    pub(super) timeout: Option<Spanned<String>>,
    /// "slow": the scenario's files go on the run's slow disk when it has one.
    pub(super) scratch: Option<Spanned<String>>,
    /// false: `--quick` leaves its sizes alone.
    pub(super) scale: Option<bool>,
    /// Required; a missing one gets an error of its own (serde's would point at line 1:1).
    pub(super) origin: Option<Origin>,
    #[serde(default)]
    pub(super) requires: RawRequires,
    #[serde(default)]
    pub(super) cgroup: Vec<Spanned<RawCgroup>>,
    #[serde(default)]
    pub(super) sample: RawSample,
    /// vm sysctls set for the whole scenario and restored afterwards.
    #[serde(default)]
    pub(super) sysctl: std::collections::BTreeMap<String, Spanned<String>>,
    pub(super) phase: Vec<Spanned<RawPhase>>,
    #[serde(default)]
    pub(super) check: Vec<Spanned<RawCheck>>,
    /// Known issues: checks expected to fail on some kernels.
    #[serde(default)]
    pub(super) known: Vec<Spanned<RawKnown>>,
    /// The upstream fixes it guards: `<12 hex digits> ("<subject>")` each.
    #[serde(default)]
    pub(super) fixes: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawKnown {
    pub(super) check: Spanned<String>,
    pub(super) from: Spanned<String>,
    pub(super) to: Option<Spanned<String>>,
    pub(super) cgroup: Option<Spanned<String>>,
    pub(super) text: Spanned<String>,
    pub(super) link: Option<Spanned<String>>,
    pub(super) matches: Option<Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRequires {
    #[serde(default)]
    pub(super) cgroup: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) writeback: bool,
    #[serde(default)]
    pub(super) features: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCgroup {
    pub(super) name: Spanned<String>,
    pub(super) limit: Option<Spanned<String>>,
    pub(super) high: Option<Spanned<String>>,
    pub(super) low: Option<Spanned<String>>,
    pub(super) min: Option<Spanned<String>>,
    pub(super) swap: Option<Spanned<bool>>,
    pub(super) swap_max: Option<Spanned<String>>,
    pub(super) swap_high: Option<Spanned<String>>,
    pub(super) oom_group: Option<Spanned<bool>>,
    pub(super) move_charge: Option<Spanned<u32>>,
    #[serde(default)]
    pub(super) listen: Vec<Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSample {
    pub(super) interval: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) counters: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) vmstat: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPhase {
    pub(super) name: Spanned<String>,
    pub(super) repeat: Option<Spanned<u32>>,
    pub(super) quick_repeat: Option<Spanned<u32>>,
    #[serde(default)]
    pub(super) warmup: bool,
    /// Odd repetitions run the measured steps in reverse order (A B, B A, ...).
    #[serde(default)]
    pub(super) alternate: bool,
    #[serde(default)]
    pub(super) steps: Vec<Spanned<Table>>,
    #[serde(default)]
    pub(super) antagonists: Vec<Spanned<RawAntagonist>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAntagonist {
    pub(super) kind: Spanned<String>,
}

/// A step or `[[check]]` table as written: `action` or `kind` and the keys of that kind, with
/// their spans (read by the step table, `steps.rs`, and the check table, `crate::check::KINDS`).
pub(super) type RawCheck = Table;
