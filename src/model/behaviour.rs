//! Behaviour compared between a base and a new kernel (`ab --behaviour`, `compare
//! --behaviour`): every counter a scenario's sampler read, at the end of each phase and of the
//! scenario, is an observable; each boot gives one value of it. A change is a verdict of its
//! own, not a failure: a patch may mean to change what the kernel shows.

use serde::{Deserialize, Serialize};

/// The name of the last sample of a scenario, as a phase: the state it left behind and what
/// moved over the whole scenario.
pub const END: &str = "(end)";

/// The group of the machine-wide counters (/proc/vmstat).
pub const MACHINE: &str = "(machine)";

/// How a counter is read at a phase boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Measure {
    /// The value at the phase's end (a gauge: usage, file, percpu).
    Level,
    /// How far it moved over the phase (an event counter: pgfault, oom_kill, workingset_refault).
    Delta,
}

/// One observable: a counter of a group (or of the machine) at the end of a phase of a scenario.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Observable {
    pub scenario: String,
    /// The phase at whose end it was read ([`END`]: the scenario's last sample; a phase whose
    /// name repeats is numbered, `name#2`).
    pub phase: String,
    /// A group as the scenario names it (`(top)` its top group), or [`MACHINE`].
    pub group: String,
    /// The counter as scenarios name it (`percpu`, `dirty.local`, `oom_kills`) or the vmstat key.
    pub counter: String,
    pub measure: Measure,
}

impl std::fmt::Display for Observable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = match self.measure {
            Measure::Level => "at the end of",
            Measure::Delta => "over",
        };
        let phase = match self.phase.as_str() {
            END => "the scenario".to_string(),
            p => format!("phase {p}"),
        };
        write!(
            f,
            "{}: {}.{} {how} {phase}",
            self.scenario, self.group, self.counter
        )
    }
}

/// One side's values of an observable: one per boot that showed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub boots: usize,
    pub median: f64,
    pub min: i64,
    pub max: i64,
}

impl Spread {
    /// The spread of `values` (not empty).
    pub fn of(values: &[i64]) -> Spread {
        let xs: Vec<f64> = values.iter().map(|&v| v as f64).collect();
        Spread {
            boots: values.len(),
            median: super::stats::median(&xs).unwrap_or(0.0),
            min: values.iter().copied().min().unwrap_or(0),
            max: values.iter().copied().max().unwrap_or(0),
        }
    }
    /// Largest minus smallest value: the noise seen between this side's own boots.
    pub fn range(&self) -> i64 {
        self.max - self.min
    }
}

/// How an observable changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    /// Every boot of the base kernel showed the key, none of the new one's.
    Vanished,
    /// No boot of the base kernel showed the key, every boot of the new one did.
    Appeared,
    /// The same value in every boot of each side, different between the sides.
    Exact,
    /// The two sides' values apart, by more than the noise and the floor (see `compare::behaviour`).
    Shifted,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Vanished => "vanished",
            ChangeKind::Appeared => "appeared",
            ChangeKind::Exact => "exact",
            ChangeKind::Shifted => "shifted",
        }
    }
}

/// A behaviour change: an observable whose values differ between the kernels beyond the noise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    #[serde(flatten)]
    pub what: Observable,
    /// B, pages or events.
    pub unit: String,
    pub kind: ChangeKind,
    /// None: the side never showed the key.
    pub base: Option<Spread>,
    pub new: Option<Spread>,
}

impl Change {
    /// New median minus base median (0 when a side never showed the key).
    pub fn delta(&self) -> f64 {
        match (&self.base, &self.new) {
            (Some(b), Some(n)) => n.median - b.median,
            _ => 0.0,
        }
    }
    /// The change of the median, percent of the base's (None when a side never showed the key
    /// or the base's median is 0).
    pub fn pct(&self) -> Option<f64> {
        match &self.base {
            Some(b) if b.median != 0.0 && self.new.is_some() => {
                Some(self.delta() / b.median.abs() * 100.0)
            }
            _ => None,
        }
    }
    /// One line: the observable, base against new, the size of the change.
    pub fn line(&self) -> String {
        let side = |s: &Option<Spread>| match s {
            None => "absent".to_string(),
            Some(s) if s.min == s.max => format!("{} ({} boots)", self.amount(s.min), s.boots),
            Some(s) => format!(
                "{} ({}..{}, {} boots)",
                self.amount(s.median as i64),
                self.amount(s.min),
                self.amount(s.max),
                s.boots
            ),
        };
        let size = self
            .pct()
            .map(|p| format!(", {p:+.1} %"))
            .unwrap_or_default();
        format!(
            "behaviour changed ({}): {}: base {} -> new {}{size}",
            self.kind.as_str(),
            self.what,
            side(&self.base),
            side(&self.new)
        )
    }
    fn amount(&self, v: i64) -> String {
        match self.unit.as_str() {
            "B" => super::units::human_bytes(v),
            u => format!("{v} {u}"),
        }
    }
}
