//! How a check kind's parser reads its `[[check]]` table: typed values of its keys, resolved
//! against an outline of the scenario (its groups, phases and their steps, cgroup versions), with
//! errors at the key. The scenario parser builds the outline and calls the kind's parser (see
//! `KINDS`).

use std::ops::Range;
use std::time::Duration;

use serde::de::DeserializeOwned;
use toml::Spanned;

use crate::model::Version;
use crate::model::counter::stat_key;
use crate::model::error::ScenarioError;
use crate::model::source::{Key, Keys};
use crate::model::step::StepKind;

/// What checks may refer to in the scenario they are part of.
#[derive(Debug, Clone, Default)]
pub struct Outline {
    /// The declared groups, by name ("p", "p/a").
    pub groups: Vec<String>,
    pub phases: Vec<PhaseOutline>,
    /// The cgroup versions the scenario runs under.
    pub versions: Vec<Version>,
}

/// One phase of the scenario as checks see it.
#[derive(Debug, Clone, Default)]
pub struct PhaseOutline {
    pub name: String,
    /// The kinds of its steps, in order.
    pub steps: Vec<StepKind>,
    /// The tasks its hold steps start.
    pub holds: Vec<String>,
    /// Left out of `--quick` runs (a warm-up phase with `quick_repeat = 0`).
    pub not_quick: bool,
}

/// One `[[check]]` table as its kind's parser reads it.
pub struct CheckArgs<'a> {
    pub keys: Keys<'a>,
    pub outline: &'a Outline,
    /// The kind's keys (`Kind::keys`): the table was checked against them, and the parser reads
    /// no other (a parser asking for an unlisted key is a bug the tests catch).
    pub allowed: &'static [Key],
}

impl CheckArgs<'_> {
    /// An error at `span`.
    pub fn err(&self, span: Range<usize>, msg: impl Into<String>) -> ScenarioError {
        self.keys.err(span, msg)
    }

    /// The table's span.
    pub fn span(&self) -> Range<usize> {
        self.keys.span.clone()
    }

    /// The value of `key` as a `T`, if set; a value of another type is an error at the value.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<Spanned<T>>, ScenarioError> {
        assert!(
            self.allowed.iter().any(|k| k.name == key),
            "{} reads {key:?}, which its keys do not list",
            self.keys.what
        );
        self.keys.get(key)
    }

    /// The value of a key the kind cannot do without.
    pub fn need<T: DeserializeOwned>(&self, key: &str) -> Result<Spanned<T>, ScenarioError> {
        self.get(key)?
            .ok_or_else(|| self.err(self.span(), format!("{} needs {key:?}", self.keys.what)))
    }

    /// A declared phase named by `key`, which must be set.
    pub fn phase_ref(&self, key: &str) -> Result<String, ScenarioError> {
        let p = self.need::<String>(key)?;
        match self.outline.phases.iter().find(|x| &x.name == p.get_ref()) {
            Some(x) if x.not_quick => Err(self.err(
                p.span(),
                format!(
                    "phase {:?} does not run under --quick (quick_repeat = 0): no check can name it",
                    p.get_ref()
                ),
            )),
            Some(_) => Ok(p.into_inner()),
            None => Err(self.err(p.span(), format!("no phase named {:?}", p.get_ref()))),
        }
    }

    /// An optional `phase`.
    pub fn phase(&self) -> Result<Option<String>, ScenarioError> {
        match self.get::<String>("phase")? {
            Some(_) => self.phase_ref("phase").map(Some),
            None => Ok(None),
        }
    }

    /// The declared phase called `name` (one `phase_ref` returned).
    pub fn phase_outline(&self, name: &str) -> Option<&PhaseOutline> {
        self.outline.phases.iter().find(|p| p.name == name)
    }

    /// Whether a hold step of the scenario starts task `task`.
    pub fn holds(&self, task: &str) -> bool {
        self.outline
            .phases
            .iter()
            .any(|p| p.holds.iter().any(|t| t == task))
    }

    /// A declared group named by `key`; when not set, the only declared group.
    pub fn cgroup(&self, key: &str) -> Result<String, ScenarioError> {
        let groups = &self.outline.groups;
        match self.get::<String>(key)? {
            Some(s) if groups.contains(s.get_ref()) => Ok(s.into_inner()),
            Some(s) => Err(self.err(
                s.span(),
                format!("no cgroup named {:?} is declared", s.get_ref()),
            )),
            None if groups.len() == 1 => Ok(groups[0].clone()),
            None if groups.is_empty() => Err(self.err(
                self.span(),
                "no [[cgroup]] is declared: add one, and cgroup = \"...\" here",
            )),
            None => Err(self.err(
                self.span(),
                "which cgroup? add cgroup = \"...\" (more than one is declared)",
            )),
        }
    }

    /// The cgroup versions the scenario runs under.
    pub fn versions(&self) -> &[Version] {
        &self.outline.versions
    }

    /// A declared group named by `key`, which must be set.
    pub fn named_cgroup(&self, key: &str) -> Result<String, ScenarioError> {
        self.need::<String>(key)?;
        self.cgroup(key)
    }

    /// A counter of the counter table, valid under every version the scenario runs under.
    fn counter(&self, name: &str, span: Range<usize>) -> Result<(), ScenarioError> {
        for v in self.versions() {
            stat_key(name, *v).map_err(|m| self.err(span.clone(), m))?;
        }
        Ok(())
    }

    /// `counters`: a non-empty list of counters of the counter table.
    pub fn counters(&self) -> Result<Vec<String>, ScenarioError> {
        let cs = self.need::<Vec<String>>("counters")?;
        if cs.get_ref().is_empty() {
            return Err(self.err(cs.span(), "counters must not be empty"));
        }
        for x in cs.get_ref() {
            self.counter(x, cs.span())?;
        }
        Ok(cs.into_inner())
    }

    /// `counter` of the checks that take one.
    pub fn one_counter(&self) -> Result<String, ScenarioError> {
        let c = self.need::<String>("counter")?;
        self.counter(c.get_ref(), c.span())?;
        Ok(c.into_inner())
    }

    /// Step kinds (`after`, `during`): names of the step table; `default` when not set.
    pub fn kinds(&self, key: &str, default: &[StepKind]) -> Result<Vec<StepKind>, ScenarioError> {
        match self.get::<Vec<String>>(key)? {
            None => Ok(default.to_vec()),
            Some(v) => v
                .get_ref()
                .iter()
                .map(|k| self.step_kind(k, v.span()))
                .collect(),
        }
    }

    /// `step` of the checks that take one: a name of the step table.
    pub fn one_step(&self) -> Result<StepKind, ScenarioError> {
        let st = self.need::<String>("step")?;
        self.step_kind(st.get_ref(), st.span())
    }

    fn step_kind(&self, k: &str, span: Range<usize>) -> Result<StepKind, ScenarioError> {
        StepKind::parse(k).ok_or_else(|| {
            self.err(
                span,
                format!("unknown step kind {k:?} (known: {})", StepKind::names()),
            )
        })
    }

    /// `global`: /proc/vmstat keys ([a-z0-9_]), `default` when not set.
    pub fn global(&self, default: &[&str]) -> Result<Vec<String>, ScenarioError> {
        Ok(match self.get::<Vec<String>>("global")? {
            Some(g) => {
                for k in g.get_ref() {
                    self.keys
                        .text
                        .vmstat_key(&Spanned::new(g.span(), k.clone()))?;
                }
                g.into_inner()
            }
            None => default.iter().map(|x| x.to_string()).collect(),
        })
    }

    /// `needs`: whether the check needs the kernel to move charges with a task.
    pub fn needs_moving(&self) -> Result<bool, ScenarioError> {
        match self.get::<String>("needs")? {
            None => Ok(false),
            Some(n) if n.get_ref() == "charge-moving" => Ok(true),
            Some(n) => Err(self.err(
                n.span(),
                format!("unknown need {:?} (known: charge-moving)", n.get_ref()),
            )),
        }
    }

    /// A positive, finite `min_ratio`.
    pub fn min_ratio(&self) -> Result<f64, ScenarioError> {
        let m = self.need::<f64>("min_ratio")?;
        if !(*m.get_ref() > 0.0 && m.get_ref().is_finite()) {
            return Err(self.err(m.span(), "min_ratio must be a positive number"));
        }
        Ok(m.into_inner())
    }

    /// A size (`64M`) of at most 1 TiB, if set.
    pub fn size(&self, key: &str) -> Result<Option<u64>, ScenarioError> {
        self.get::<String>(key)?
            .map(|s| self.keys.text.size(&s))
            .transpose()
    }

    /// A signed size (`-64M`, `+8M`, `8M`), which must be set.
    pub fn signed_size(&self, key: &str) -> Result<i64, ScenarioError> {
        let s = self.need::<String>(key)?;
        let (sign, mag) = match s.get_ref().trim().strip_prefix('-') {
            Some(m) => (-1i64, m.to_string()),
            None => (1, s.get_ref().trim().trim_start_matches('+').to_string()),
        };
        Ok(sign * self.keys.text.size(&Spanned::new(s.span(), mag))? as i64)
    }

    /// A duration of at most a day, if set.
    pub fn duration(&self, key: &str) -> Result<Option<Duration>, ScenarioError> {
        self.get::<String>(key)?
            .map(|d| self.keys.text.duration(&d))
            .transpose()
    }

    /// A /proc/vmstat key, which must be set.
    pub fn vmstat_key(&self, key: &str) -> Result<String, ScenarioError> {
        self.keys.text.vmstat_key(&self.need(key)?)
    }

    /// Free text that reaches reports (one line), if set.
    pub fn one_line(&self, key: &str) -> Result<Option<String>, ScenarioError> {
        self.get::<String>(key)?
            .map(|t| self.keys.text.one_line(&t, key))
            .transpose()
    }
}
