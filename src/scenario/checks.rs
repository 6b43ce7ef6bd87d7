//! Reading a `[[check]]` table: its `kind` picks an entry of the check table
//! (`crate::check::KINDS`), whose parser reads the other keys through a `CheckInput`. The kinds
//! themselves, with their keys, live in `crate::check`, one file each.

use std::time::Duration;

use serde::de::DeserializeOwned;
use toml::Spanned;

use super::raw::RawCheck;
use super::resolve::{Ctx, check_counter, one_line, vmstat_key};
use super::steps::{CgroupRef, STEPS};
use super::{Phase, ScenarioError};
use crate::check::{Check, KINDS};
use crate::sys::cgroup::Version;

/// One `[[check]]` table as a check kind's parser reads it: typed values of its keys, resolved
/// against the scenario (declared groups, phases, step kinds, counters), errors at the key.
pub struct CheckInput<'a, 'b> {
    cx: &'a Ctx<'b>,
    /// The table's own span (errors about a missing key point there).
    span: std::ops::Range<usize>,
    table: &'a RawCheck,
    kind: &'a str,
    cgroup_ref: &'a CgroupRef<'b>,
    phases: &'a [Phase],
    versions: &'a [Version],
}

impl CheckInput<'_, '_> {
    /// The keys the kind takes: any other key set is an error at that key (the first in the file).
    pub fn only(&self, keys: &[&str]) -> Result<(), ScenarioError> {
        let mut foreign: Vec<(&Spanned<String>, &Spanned<toml::Value>)> = self
            .table
            .iter()
            .filter(|(k, _)| k.get_ref() != "kind" && !keys.contains(&k.get_ref().as_str()))
            .collect();
        foreign.sort_by_key(|(k, _)| k.span().start);
        match foreign.first() {
            Some((k, v)) => Err(self.cx.err(
                v.span(),
                format!("check {:?} takes no {:?}", self.kind, k.get_ref()),
            )),
            None => Ok(()),
        }
    }

    /// An error at `span`.
    pub fn err(&self, span: std::ops::Range<usize>, msg: impl Into<String>) -> ScenarioError {
        self.cx.err(span, msg)
    }

    /// The table's span.
    pub fn span(&self) -> std::ops::Range<usize> {
        self.span.clone()
    }

    /// The value of `key` as a `T`, if set; a value of another type is an error at the value.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<Spanned<T>>, ScenarioError> {
        let Some((_, v)) = self.table.iter().find(|(k, _)| k.get_ref() == key) else {
            return Ok(None);
        };
        Ok(Some(Spanned::new(v.span(), self.cx.typed(v)?)))
    }

    /// The value of a key the kind cannot do without.
    pub fn need<T: DeserializeOwned>(&self, key: &str) -> Result<Spanned<T>, ScenarioError> {
        self.get(key)?.ok_or_else(|| {
            self.cx
                .err(self.span(), format!("check {:?} needs {key:?}", self.kind))
        })
    }

    /// A declared phase named by `key`, which must be set.
    pub fn phase_ref(&self, key: &str) -> Result<String, ScenarioError> {
        let p = self.need::<String>(key)?;
        if self.phases.iter().any(|x| &x.name == p.get_ref()) {
            Ok(p.into_inner())
        } else {
            Err(self
                .cx
                .err(p.span(), format!("no phase named {:?}", p.get_ref())))
        }
    }

    /// An optional `phase`.
    pub fn phase(&self) -> Result<Option<String>, ScenarioError> {
        match self.get::<String>("phase")? {
            Some(_) => self.phase_ref("phase").map(Some),
            None => Ok(None),
        }
    }

    /// The phases of the scenario, resolved.
    pub fn phases(&self) -> &[Phase] {
        self.phases
    }

    /// A declared group named by `key`; when not set, the only declared group.
    pub fn cgroup(&self, key: &str) -> Result<String, ScenarioError> {
        (self.cgroup_ref)(&self.get(key)?, self.span())
    }

    /// The cgroup versions the scenario runs under.
    pub fn versions(&self) -> &[Version] {
        self.versions
    }

    /// A declared group named by `key`, which must be set.
    pub fn named_cgroup(&self, key: &str) -> Result<String, ScenarioError> {
        let g = self.need::<String>(key)?;
        (self.cgroup_ref)(&Some(g), self.span())
    }

    /// `counters`: a non-empty list of counters of the counter table.
    pub fn counters(&self) -> Result<Vec<String>, ScenarioError> {
        let cs = self.need::<Vec<String>>("counters")?;
        if cs.get_ref().is_empty() {
            return Err(self.cx.err(cs.span(), "counters must not be empty"));
        }
        for x in cs.get_ref() {
            check_counter(self.cx, x, cs.span(), self.versions)?;
        }
        Ok(cs.into_inner())
    }

    /// `counter` of the checks that take one.
    pub fn one_counter(&self) -> Result<String, ScenarioError> {
        let c = self.need::<String>("counter")?;
        check_counter(self.cx, c.get_ref(), c.span(), self.versions)?;
        Ok(c.into_inner())
    }

    /// Step kinds (`after`, `during`): names of the step table; `default` when not set.
    pub fn kinds(&self, key: &str, default: &[&str]) -> Result<Vec<String>, ScenarioError> {
        match self.get::<Vec<String>>(key)? {
            None => Ok(default.iter().map(|x| x.to_string()).collect()),
            Some(v) => {
                for k in v.get_ref() {
                    self.step_kind(k, v.span())?;
                }
                Ok(v.into_inner())
            }
        }
    }

    /// `step` of the checks that take one: a name of the step table.
    pub fn one_step(&self) -> Result<String, ScenarioError> {
        let st = self.need::<String>("step")?;
        self.step_kind(st.get_ref(), st.span())?;
        Ok(st.into_inner())
    }

    fn step_kind(&self, k: &str, span: std::ops::Range<usize>) -> Result<(), ScenarioError> {
        if STEPS.iter().any(|s| s.action == k) {
            return Ok(());
        }
        let known: Vec<&str> = STEPS.iter().map(|s| s.action).collect();
        Err(self.cx.err(
            span,
            format!("unknown step kind {k:?} (known: {})", known.join(", ")),
        ))
    }

    /// `global`: /proc/vmstat keys, `default` when not set.
    pub fn global(&self, default: &[&str]) -> Result<Vec<String>, ScenarioError> {
        Ok(match self.get::<Vec<String>>("global")? {
            Some(g) => g.into_inner(),
            None => default.iter().map(|x| x.to_string()).collect(),
        })
    }

    /// `needs`: whether the check needs the kernel to move charges with a task.
    pub fn needs_moving(&self) -> Result<bool, ScenarioError> {
        match self.get::<String>("needs")? {
            None => Ok(false),
            Some(n) if n.get_ref() == "charge-moving" => Ok(true),
            Some(n) => Err(self.cx.err(
                n.span(),
                format!("unknown need {:?} (known: charge-moving)", n.get_ref()),
            )),
        }
    }

    /// A positive, finite `min_ratio`.
    pub fn min_ratio(&self) -> Result<f64, ScenarioError> {
        let m = self.need::<f64>("min_ratio")?;
        if !(*m.get_ref() > 0.0 && m.get_ref().is_finite()) {
            return Err(self.cx.err(m.span(), "min_ratio must be a positive number"));
        }
        Ok(m.into_inner())
    }

    /// A size (`64M`) of at most 1 TiB, if set.
    pub fn size(&self, key: &str) -> Result<Option<u64>, ScenarioError> {
        self.get::<String>(key)?
            .map(|s| self.cx.size(&s))
            .transpose()
    }

    /// A signed size (`-64M`, `+8M`, `8M`), which must be set.
    pub fn signed_size(&self, key: &str) -> Result<i64, ScenarioError> {
        let s = self.need::<String>(key)?;
        let (sign, mag) = match s.get_ref().trim().strip_prefix('-') {
            Some(m) => (-1i64, m.to_string()),
            None => (1, s.get_ref().trim().trim_start_matches('+').to_string()),
        };
        Ok(sign * self.cx.size(&Spanned::new(s.span(), mag))? as i64)
    }

    /// A duration of at most a day, if set.
    pub fn duration(&self, key: &str) -> Result<Option<Duration>, ScenarioError> {
        self.get::<String>(key)?
            .map(|d| self.cx.duration(&d))
            .transpose()
    }

    /// A /proc/vmstat key, which must be set.
    pub fn vmstat_key(&self, key: &str) -> Result<String, ScenarioError> {
        vmstat_key(self.cx, &self.need(key)?)
    }

    /// Free text that reaches reports (one line), if set.
    pub fn one_line(&self, key: &str) -> Result<Option<String>, ScenarioError> {
        self.get::<String>(key)?
            .map(|t| one_line(self.cx, &t, key))
            .transpose()
    }
}

pub(super) fn resolve_check(
    cx: &Ctx,
    c: &Spanned<RawCheck>,
    cgroup_ref: &CgroupRef,
    phases: &[Phase],
    versions: &[Version],
) -> Result<Check, ScenarioError> {
    let table = c.get_ref();
    let Some((_, kind)) = table.iter().find(|(k, _)| k.get_ref() == "kind") else {
        return Err(cx.err(c.span(), "missing field `kind`"));
    };
    let kind_name: String = cx.typed(kind)?;
    let Some(entry) = KINDS.iter().find(|k| k.kind == kind_name) else {
        let known: Vec<&str> = KINDS.iter().map(|k| k.kind).collect();
        return Err(cx.err(
            kind.span(),
            format!("unknown check {kind_name:?} (known: {})", known.join(", ")),
        ));
    };
    (entry.parse)(&CheckInput {
        cx,
        span: c.span(),
        table,
        kind: &kind_name,
        cgroup_ref,
        phases,
        versions,
    })
}
