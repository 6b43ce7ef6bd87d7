//! The scenario file as written: serde types with spans for error messages; unknown keys are
//! rejected.

use serde::Deserialize;
use toml::Spanned;

use super::Origin;

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
    pub(super) origin: Origin,
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
    pub(super) oom_group: Option<Spanned<bool>>,
    pub(super) move_charge: Option<Spanned<u32>>,
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
    #[serde(default)]
    pub(super) warmup: bool,
    #[serde(default)]
    pub(super) steps: Vec<Spanned<RawStep>>,
    #[serde(default)]
    pub(super) antagonists: Vec<Spanned<RawAntagonist>>,
}

/// One step as written: `action` picks the kind, the other keys are its parameters.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStep {
    pub(super) action: Spanned<String>,
    pub(super) cgroup: Option<Spanned<String>>,
    pub(super) file: Option<Spanned<String>>,
    pub(super) size: Option<Spanned<String>>,
    pub(super) block_size: Option<Spanned<String>>,
    pub(super) fsync: Option<Spanned<bool>>,
    pub(super) duration: Option<Spanned<String>>,
    pub(super) hold: Option<Spanned<String>>,
    pub(super) task: Option<Spanned<String>>,
    pub(super) to: Option<Spanned<String>>,
    pub(super) anon: Option<Spanned<String>>,
    /// hold: bytes of shared memory (a memfd, mapped and written).
    pub(super) shmem: Option<Spanned<String>>,
    pub(super) dirty: Option<Spanned<bool>>,
    /// hold: keep dirtying the mapping until `wait` (pages stay dirty and under writeback).
    pub(super) redirty: Option<Spanned<bool>>,
    pub(super) write: Option<Spanned<String>>,
    pub(super) count: Option<Spanned<u32>>,
    pub(super) clients: Option<Spanned<u32>>,
    pub(super) bystanders: Option<Spanned<u32>>,
    pub(super) counter: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAntagonist {
    pub(super) kind: Spanned<String>,
}

/// One `[[check]]` table as written: `kind` and the keys of that kind (see `checks.rs`), with their
/// spans.
pub(super) type RawCheck = std::collections::BTreeMap<Spanned<String>, Spanned<toml::Value>>;
