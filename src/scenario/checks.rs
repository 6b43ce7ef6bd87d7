//! The check table: each `[[check]]` kind, the keys it takes and how it is resolved. Adding a
//! check kind is one entry here, its `Check` variant and one file in `crate::check`.

use std::time::Duration;

use toml::Spanned;

use super::raw::RawCheck;
use super::resolve::{Ctx, check_counter, one_line, vmstat_key};
use super::steps::{CgroupRef, STEPS};
use super::{Check, Phase, ScenarioError, Step};
use crate::sys::cgroup::Version;

/// One check kind: its name, the keys it takes (anything else set is an error at that key) and
/// its resolver.
pub struct CheckKind {
    pub kind: &'static str,
    pub keys: &'static [&'static str],
    resolve: fn(&Input) -> Result<Check, ScenarioError>,
}

/// Every check kind, in the order the unknown-check error lists them.
pub const CHECKS: &[CheckKind] = &[
    CheckKind {
        kind: "no-underflow",
        keys: &["cgroup", "counters"],
        resolve: no_underflow,
    },
    CheckKind {
        kind: "settles",
        keys: &["cgroup", "counters", "within", "bound", "after"],
        resolve: settles,
    },
    CheckKind {
        kind: "throughput",
        keys: &["phase", "baseline", "min_ratio"],
        resolve: throughput,
    },
    CheckKind {
        kind: "exercised",
        keys: &["phase", "vmstat", "min", "what"],
        resolve: exercised,
    },
    CheckKind {
        kind: "tracks-global",
        keys: &["cgroup", "counters", "global", "during", "phase"],
        resolve: tracks_global,
    },
    CheckKind {
        kind: "dirty-probe",
        keys: &["cgroup"],
        resolve: dirty_probe,
    },
    CheckKind {
        kind: "hierarchy",
        keys: &["parent", "counters"],
        resolve: hierarchy,
    },
    CheckKind {
        kind: "no-ratchet",
        keys: &["cgroup", "counters", "bound"],
        resolve: no_ratchet,
    },
    CheckKind {
        kind: "observed",
        keys: &["cgroup", "counters", "global"],
        resolve: observed,
    },
    CheckKind {
        kind: "change",
        keys: &["cgroup", "counter", "step", "by", "tolerance", "needs"],
        resolve: change,
    },
    CheckKind {
        kind: "ratio",
        keys: &["step", "inside", "outside", "min_ratio", "phase"],
        resolve: ratio,
    },
    CheckKind {
        kind: "follows",
        keys: &["from", "to", "counter", "step", "needs"],
        resolve: follows,
    },
];

/// What a check kind's resolver reads: the raw check and the scenario it belongs to.
struct Input<'a, 'b> {
    cx: &'a Ctx<'b>,
    c: &'a Spanned<RawCheck>,
    r: &'a RawCheck,
    kind: &'a str,
    cgroup_ref: &'a CgroupRef<'b>,
    phases: &'a [Phase],
    versions: &'a [Version],
}

impl Input<'_, '_> {
    fn need(&self, present: bool, key: &str) -> Result<(), ScenarioError> {
        if present {
            Ok(())
        } else {
            Err(self.cx.err(
                self.c.span(),
                format!("check {:?} needs {key:?}", self.kind),
            ))
        }
    }
    fn phase_ref(&self, p: &Option<Spanned<String>>, key: &str) -> Result<String, ScenarioError> {
        self.need(p.is_some(), key)?;
        let p = p.as_ref().unwrap();
        if self.phases.iter().any(|x| &x.name == p.get_ref()) {
            Ok(p.get_ref().clone())
        } else {
            Err(self
                .cx
                .err(p.span(), format!("no phase named {:?}", p.get_ref())))
        }
    }
    /// An optional `phase`.
    fn phase(&self) -> Result<Option<String>, ScenarioError> {
        self.r
            .phase
            .as_ref()
            .map(|_| self.phase_ref(&self.r.phase, "phase"))
            .transpose()
    }
    fn cgroup(&self, v: &Option<Spanned<String>>) -> Result<String, ScenarioError> {
        (self.cgroup_ref)(v, self.c.span())
    }
    fn counters(&self) -> Result<Vec<String>, ScenarioError> {
        self.need(self.r.counters.is_some(), "counters")?;
        let cs = self.r.counters.as_ref().unwrap();
        if cs.get_ref().is_empty() {
            return Err(self.cx.err(cs.span(), "counters must not be empty"));
        }
        for x in cs.get_ref() {
            check_counter(self.cx, x, cs.span(), self.versions)?;
        }
        Ok(cs.get_ref().clone())
    }
    /// Step kinds (`after`, `during`, `step`): names of the step table.
    fn kinds(
        &self,
        v: &Option<Spanned<Vec<String>>>,
        default: &[&str],
    ) -> Result<Vec<String>, ScenarioError> {
        match v {
            None => Ok(default.iter().map(|x| x.to_string()).collect()),
            Some(v) => {
                for k in v.get_ref() {
                    if !STEPS.iter().any(|s| s.action == k) {
                        let known: Vec<&str> = STEPS.iter().map(|s| s.action).collect();
                        return Err(self.cx.err(
                            v.span(),
                            format!("unknown step kind {k:?} (known: {})", known.join(", ")),
                        ));
                    }
                }
                Ok(v.get_ref().clone())
            }
        }
    }
    fn global(&self, default: &[&str]) -> Vec<String> {
        self.r
            .global
            .as_ref()
            .map(|g| g.get_ref().clone())
            .unwrap_or_else(|| default.iter().map(|x| x.to_string()).collect())
    }
    /// `counter` of the checks that take one.
    fn one_counter(&self) -> Result<String, ScenarioError> {
        self.need(self.r.counter.is_some(), "counter")?;
        let c = self.r.counter.as_ref().unwrap();
        check_counter(self.cx, c.get_ref(), c.span(), self.versions)?;
        Ok(c.get_ref().clone())
    }
    /// `step` of the checks that take one.
    fn one_step(&self) -> Result<String, ScenarioError> {
        self.need(self.r.step.is_some(), "step")?;
        let st = self.r.step.as_ref().unwrap();
        Ok(self
            .kinds(
                &Some(Spanned::new(st.span(), vec![st.get_ref().clone()])),
                &[],
            )?
            .remove(0))
    }
    fn needs_moving(&self) -> Result<bool, ScenarioError> {
        match &self.r.needs {
            None => Ok(false),
            Some(n) if n.get_ref() == "charge-moving" => Ok(true),
            Some(n) => Err(self.cx.err(
                n.span(),
                format!("unknown need {:?} (known: charge-moving)", n.get_ref()),
            )),
        }
    }
    /// A positive, finite `min_ratio`.
    fn min_ratio(&self) -> Result<f64, ScenarioError> {
        self.need(self.r.min_ratio.is_some(), "min_ratio")?;
        let m = self.r.min_ratio.as_ref().unwrap();
        if !(*m.get_ref() > 0.0 && m.get_ref().is_finite()) {
            return Err(self.cx.err(m.span(), "min_ratio must be a positive number"));
        }
        Ok(*m.get_ref())
    }
}

pub(super) fn resolve_check(
    cx: &Ctx,
    c: &Spanned<RawCheck>,
    cgroup_ref: &CgroupRef,
    phases: &[Phase],
    versions: &[Version],
) -> Result<Check, ScenarioError> {
    let r = c.get_ref();
    let kind = r.kind.get_ref().as_str();
    let Some(entry) = CHECKS.iter().find(|k| k.kind == kind) else {
        let known: Vec<&str> = CHECKS.iter().map(|k| k.kind).collect();
        return Err(cx.err(
            r.kind.span(),
            format!("unknown check {kind:?} (known: {})", known.join(", ")),
        ));
    };
    let present = [
        ("cgroup", r.cgroup.as_ref().map(|x| x.span())),
        ("counters", r.counters.as_ref().map(|x| x.span())),
        ("within", r.within.as_ref().map(|x| x.span())),
        ("bound", r.bound.as_ref().map(|x| x.span())),
        ("phase", r.phase.as_ref().map(|x| x.span())),
        ("baseline", r.baseline.as_ref().map(|x| x.span())),
        ("min_ratio", r.min_ratio.as_ref().map(|x| x.span())),
        ("vmstat", r.vmstat.as_ref().map(|x| x.span())),
        ("min", r.min.as_ref().map(|x| x.span())),
        ("what", r.what.as_ref().map(|x| x.span())),
        ("after", r.after.as_ref().map(|x| x.span())),
        ("during", r.during.as_ref().map(|x| x.span())),
        ("parent", r.parent.as_ref().map(|x| x.span())),
        ("global", r.global.as_ref().map(|x| x.span())),
        ("counter", r.counter.as_ref().map(|x| x.span())),
        ("step", r.step.as_ref().map(|x| x.span())),
        ("by", r.by.as_ref().map(|x| x.span())),
        ("tolerance", r.tolerance.as_ref().map(|x| x.span())),
        ("needs", r.needs.as_ref().map(|x| x.span())),
        ("inside", r.inside.as_ref().map(|x| x.span())),
        ("outside", r.outside.as_ref().map(|x| x.span())),
        ("from", r.from.as_ref().map(|x| x.span())),
        ("to", r.to.as_ref().map(|x| x.span())),
    ];
    for (key, span) in present {
        if let Some(span) = span
            && !entry.keys.contains(&key)
        {
            return Err(cx.err(span, format!("check {kind:?} takes no {key:?}")));
        }
    }
    (entry.resolve)(&Input {
        cx,
        c,
        r,
        kind,
        cgroup_ref,
        phases,
        versions,
    })
}

fn no_underflow(i: &Input) -> Result<Check, ScenarioError> {
    Ok(Check::NoUnderflow {
        cgroup: i.cgroup(&i.r.cgroup)?,
        counters: i.counters()?,
    })
}

fn settles(i: &Input) -> Result<Check, ScenarioError> {
    let r = i.r;
    Ok(Check::Settles {
        cgroup: i.cgroup(&r.cgroup)?,
        counters: i.counters()?,
        within: match &r.within {
            Some(w) => i.cx.duration(w)?,
            None => Duration::from_secs(10),
        },
        bound: r.bound.as_ref().map(|b| i.cx.size(b)).transpose()?,
        after: i.kinds(&r.after, &["sync"])?,
    })
}

fn throughput(i: &Input) -> Result<Check, ScenarioError> {
    let phase = i.phase_ref(&i.r.phase, "phase")?;
    let baseline = i.phase_ref(&i.r.baseline, "baseline")?;
    let min_ratio = i.min_ratio()?;
    for p in [&phase, &baseline] {
        let ph = i.phases.iter().find(|x| &x.name == p).unwrap();
        if !ph.steps.iter().any(|s| matches!(s, Step::Write { .. })) {
            return Err(i.cx.err(
                i.c.span(),
                format!("phase {p:?} has no write step to measure"),
            ));
        }
    }
    Ok(Check::Throughput {
        phase,
        baseline,
        min_ratio,
    })
}

fn exercised(i: &Input) -> Result<Check, ScenarioError> {
    let r = i.r;
    i.need(r.vmstat.is_some(), "vmstat")?;
    if let Some(m) = &r.min
        && *m.get_ref() < 1
    {
        return Err(i.cx.err(
            m.span(),
            "min must be at least 1 (a counter always rises by 0 or more: the check could not fail)",
        ));
    }
    Ok(Check::Exercised {
        phase: i.phase_ref(&r.phase, "phase")?,
        vmstat: vmstat_key(i.cx, r.vmstat.as_ref().unwrap())?,
        min: r.min.as_ref().map(|m| *m.get_ref()).unwrap_or(1),
        what: r
            .what
            .as_ref()
            .map(|w| one_line(i.cx, w, "what"))
            .transpose()?
            .unwrap_or_else(|| "the antagonist".into()),
    })
}

fn tracks_global(i: &Input) -> Result<Check, ScenarioError> {
    Ok(Check::TracksGlobal {
        cgroup: i.cgroup(&i.r.cgroup)?,
        counters: i.counters()?,
        global: i.global(&["nr_dirty", "nr_writeback"]),
        during: i.kinds(
            &i.r.during,
            &["write", "sync", "mmap-write", "probe", "truncate", "unlink"],
        )?,
        phase: i.phase()?,
    })
}

fn dirty_probe(i: &Input) -> Result<Check, ScenarioError> {
    Ok(Check::DirtyProbe {
        cgroup: i.cgroup(&i.r.cgroup)?,
    })
}

fn hierarchy(i: &Input) -> Result<Check, ScenarioError> {
    i.need(i.r.parent.is_some(), "parent")?;
    Ok(Check::Hierarchy {
        parent: i.cgroup(&i.r.parent)?,
        counters: i.counters()?,
    })
}

fn no_ratchet(i: &Input) -> Result<Check, ScenarioError> {
    Ok(Check::NoRatchet {
        cgroup: i.cgroup(&i.r.cgroup)?,
        counters: i.counters()?,
        bound: i.r.bound.as_ref().map(|b| i.cx.size(b)).transpose()?,
    })
}

fn observed(i: &Input) -> Result<Check, ScenarioError> {
    Ok(Check::Observed {
        cgroup: i.cgroup(&i.r.cgroup)?,
        counters: i.counters()?,
        global: i.global(&["nr_writeback"]),
    })
}

fn change(i: &Input) -> Result<Check, ScenarioError> {
    let r = i.r;
    let counter = i.one_counter()?;
    let step = i.one_step()?;
    i.need(r.by.is_some(), "by")?;
    let by_s = r.by.as_ref().unwrap();
    let (sign, mag) = match by_s.get_ref().trim().strip_prefix('-') {
        Some(m) => (-1i64, m.to_string()),
        None => (1, by_s.get_ref().trim().trim_start_matches('+').to_string()),
    };
    let by = sign * i.cx.size(&Spanned::new(by_s.span(), mag))? as i64;
    let needs_moving = i.needs_moving()?;
    Ok(Check::Change {
        cgroup: i.cgroup(&r.cgroup)?,
        counter,
        step,
        by,
        tolerance: r.tolerance.as_ref().map(|t| i.cx.size(t)).transpose()?,
        needs_moving,
    })
}

fn ratio(i: &Input) -> Result<Check, ScenarioError> {
    let r = i.r;
    let step = i.one_step()?;
    i.need(r.inside.is_some(), "inside")?;
    i.need(r.outside.is_some(), "outside")?;
    let min_ratio = i.min_ratio()?;
    Ok(Check::Ratio {
        step,
        inside: i.cgroup(&r.inside)?,
        outside: i.cgroup(&r.outside)?,
        min_ratio,
        phase: i.phase()?,
    })
}

fn follows(i: &Input) -> Result<Check, ScenarioError> {
    let r = i.r;
    let counter = i.one_counter()?;
    let step = i.one_step()?;
    i.need(r.from.is_some(), "from")?;
    i.need(r.to.is_some(), "to")?;
    Ok(Check::Follows {
        from: i.cgroup(&r.from)?,
        to: i.cgroup(&r.to)?,
        counter,
        step,
        needs_moving: i.needs_moving()?,
    })
}
