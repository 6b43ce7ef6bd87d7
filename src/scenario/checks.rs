//! Resolving a `[[check]]`: the keys each check kind takes and what it becomes.

use std::time::Duration;

use toml::Spanned;

use super::raw::RawCheck;
use super::resolve::{Ctx, check_counter, one_line, vmstat_key};
use super::steps::CgroupRef;
use super::{Check, Phase, ScenarioError, Step};
use crate::cgroup::Version;

pub(super) fn resolve_check(
    cx: &Ctx,
    c: &Spanned<RawCheck>,
    cgroup_ref: &CgroupRef,
    phases: &[Phase],
    versions: &[Version],
) -> Result<Check, ScenarioError> {
    let r = c.get_ref();
    let kind = r.kind.get_ref().as_str();
    let need = |present: bool, key: &str| -> Result<(), ScenarioError> {
        if present {
            Ok(())
        } else {
            Err(cx.err(c.span(), format!("check {kind:?} needs {key:?}")))
        }
    };
    let phase_ref = |p: &Option<Spanned<String>>, key: &str| -> Result<String, ScenarioError> {
        need(p.is_some(), key)?;
        let p = p.as_ref().unwrap();
        if phases.iter().any(|x| &x.name == p.get_ref()) {
            Ok(p.get_ref().clone())
        } else {
            Err(cx.err(p.span(), format!("no phase named {:?}", p.get_ref())))
        }
    };
    let counters = || -> Result<Vec<String>, ScenarioError> {
        need(r.counters.is_some(), "counters")?;
        let cs = r.counters.as_ref().unwrap();
        if cs.get_ref().is_empty() {
            return Err(cx.err(cs.span(), "counters must not be empty"));
        }
        for x in cs.get_ref() {
            check_counter(cx, x, cs.span(), versions)?;
        }
        Ok(cs.get_ref().clone())
    };
    const STEP_KINDS: &[&str] = &[
        "write",
        "sync",
        "fsync",
        "sleep",
        "truncate",
        "unlink",
        "mmap-write",
        "probe",
        "hold",
        "move",
        "grow",
        "wait",
        "release",
        "create",
        "read",
        "fault",
        "usemem",
    ];
    let kinds = |v: &Option<Spanned<Vec<String>>>,
                 default: &[&str]|
     -> Result<Vec<String>, ScenarioError> {
        match v {
            None => Ok(default.iter().map(|x| x.to_string()).collect()),
            Some(v) => {
                for k in v.get_ref() {
                    if !STEP_KINDS.contains(&k.as_str()) {
                        return Err(cx.err(
                            v.span(),
                            format!("unknown step kind {k:?} (known: {})", STEP_KINDS.join(", ")),
                        ));
                    }
                }
                Ok(v.get_ref().clone())
            }
        }
    };
    let global = |default: &[&str]| -> Vec<String> {
        r.global
            .as_ref()
            .map(|g| g.get_ref().clone())
            .unwrap_or_else(|| default.iter().map(|x| x.to_string()).collect())
    };
    // `counter`, `step` and `needs` of the checks that take one of each.
    let one_counter = || -> Result<String, ScenarioError> {
        need(r.counter.is_some(), "counter")?;
        let c = r.counter.as_ref().unwrap();
        check_counter(cx, c.get_ref(), c.span(), versions)?;
        Ok(c.get_ref().clone())
    };
    let one_step = || -> Result<String, ScenarioError> {
        need(r.step.is_some(), "step")?;
        let st = r.step.as_ref().unwrap();
        Ok(kinds(
            &Some(Spanned::new(st.span(), vec![st.get_ref().clone()])),
            &[],
        )?
        .remove(0))
    };
    let needs_moving = || -> Result<bool, ScenarioError> {
        match &r.needs {
            None => Ok(false),
            Some(n) if n.get_ref() == "charge-moving" => Ok(true),
            Some(n) => Err(cx.err(
                n.span(),
                format!("unknown need {:?} (known: charge-moving)", n.get_ref()),
            )),
        }
    };
    let allowed: &[&str] = match kind {
        "no-underflow" => &["cgroup", "counters"],
        "settles" => &["cgroup", "counters", "within", "bound", "after"],
        "throughput" => &["phase", "baseline", "min_ratio"],
        "exercised" => &["phase", "vmstat", "min", "what"],
        "tracks-global" => &["cgroup", "counters", "global", "during", "phase"],
        "dirty-probe" => &["cgroup"],
        "hierarchy" => &["parent", "counters"],
        "no-ratchet" => &["cgroup", "counters", "bound"],
        "observed" => &["cgroup", "counters", "global"],
        "change" => &["cgroup", "counter", "step", "by", "tolerance", "needs"],
        "ratio" => &["step", "inside", "outside", "min_ratio", "phase"],
        "follows" => &["from", "to", "counter", "step", "needs"],
        other => {
            return Err(cx.err(
                r.kind.span(),
                format!(
                    "unknown check {other:?} (known: no-underflow, settles, throughput, exercised, tracks-global, dirty-probe, hierarchy, no-ratchet, observed, change, ratio, follows)"
                ),
            ))
        }
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
            && !allowed.contains(&key)
        {
            return Err(cx.err(span, format!("check {kind:?} takes no {key:?}")));
        }
    }
    Ok(match kind {
        "no-underflow" => Check::NoUnderflow {
            cgroup: cgroup_ref(&r.cgroup, c.span())?,
            counters: counters()?,
        },
        "settles" => Check::Settles {
            cgroup: cgroup_ref(&r.cgroup, c.span())?,
            counters: counters()?,
            within: match &r.within {
                Some(w) => cx.duration(w)?,
                None => Duration::from_secs(10),
            },
            bound: r.bound.as_ref().map(|b| cx.size(b)).transpose()?,
            after: kinds(&r.after, &["sync"])?,
        },
        "tracks-global" => Check::TracksGlobal {
            cgroup: cgroup_ref(&r.cgroup, c.span())?,
            counters: counters()?,
            global: global(&["nr_dirty", "nr_writeback"]),
            during: kinds(
                &r.during,
                &["write", "sync", "mmap-write", "probe", "truncate", "unlink"],
            )?,
            phase: r
                .phase
                .as_ref()
                .map(|_| phase_ref(&r.phase, "phase"))
                .transpose()?,
        },
        "dirty-probe" => Check::DirtyProbe {
            cgroup: cgroup_ref(&r.cgroup, c.span())?,
        },
        "hierarchy" => {
            need(r.parent.is_some(), "parent")?;
            Check::Hierarchy {
                parent: cgroup_ref(&r.parent, c.span())?,
                counters: counters()?,
            }
        }
        "no-ratchet" => Check::NoRatchet {
            cgroup: cgroup_ref(&r.cgroup, c.span())?,
            counters: counters()?,
            bound: r.bound.as_ref().map(|b| cx.size(b)).transpose()?,
        },
        "observed" => Check::Observed {
            cgroup: cgroup_ref(&r.cgroup, c.span())?,
            counters: counters()?,
            global: global(&["nr_writeback"]),
        },
        "throughput" => {
            let phase = phase_ref(&r.phase, "phase")?;
            let baseline = phase_ref(&r.baseline, "baseline")?;
            need(r.min_ratio.is_some(), "min_ratio")?;
            let m = r.min_ratio.as_ref().unwrap();
            if !(*m.get_ref() > 0.0 && m.get_ref().is_finite()) {
                return Err(cx.err(m.span(), "min_ratio must be a positive number"));
            }
            for p in [&phase, &baseline] {
                let ph = phases.iter().find(|x| &x.name == p).unwrap();
                if !ph.steps.iter().any(|s| matches!(s, Step::Write { .. })) {
                    return Err(cx.err(
                        c.span(),
                        format!("phase {p:?} has no write step to measure"),
                    ));
                }
            }
            Check::Throughput {
                phase,
                baseline,
                min_ratio: *m.get_ref(),
            }
        }
        "change" => {
            let counter = one_counter()?;
            let step = one_step()?;
            need(r.by.is_some(), "by")?;
            let by_s = r.by.as_ref().unwrap();
            let (sign, mag) = match by_s.get_ref().trim().strip_prefix('-') {
                Some(m) => (-1i64, m.to_string()),
                None => (1, by_s.get_ref().trim().trim_start_matches('+').to_string()),
            };
            let by = sign * cx.size(&Spanned::new(by_s.span(), mag))? as i64;
            let needs_moving = needs_moving()?;
            Check::Change {
                cgroup: cgroup_ref(&r.cgroup, c.span())?,
                counter,
                step,
                by,
                tolerance: r.tolerance.as_ref().map(|t| cx.size(t)).transpose()?,
                needs_moving,
            }
        }
        "follows" => {
            let counter = one_counter()?;
            let step = one_step()?;
            need(r.from.is_some(), "from")?;
            need(r.to.is_some(), "to")?;
            Check::Follows {
                from: cgroup_ref(&r.from, c.span())?,
                to: cgroup_ref(&r.to, c.span())?,
                counter,
                step,
                needs_moving: needs_moving()?,
            }
        }
        "ratio" => {
            let step = one_step()?;
            need(r.inside.is_some(), "inside")?;
            need(r.outside.is_some(), "outside")?;
            need(r.min_ratio.is_some(), "min_ratio")?;
            let m = r.min_ratio.as_ref().unwrap();
            if !(*m.get_ref() > 0.0 && m.get_ref().is_finite()) {
                return Err(cx.err(m.span(), "min_ratio must be a positive number"));
            }
            Check::Ratio {
                step,
                inside: cgroup_ref(&r.inside, c.span())?,
                outside: cgroup_ref(&r.outside, c.span())?,
                min_ratio: *m.get_ref(),
                phase: r
                    .phase
                    .as_ref()
                    .map(|_| phase_ref(&r.phase, "phase"))
                    .transpose()?,
            }
        }
        "exercised" => {
            need(r.vmstat.is_some(), "vmstat")?;
            if let Some(m) = &r.min
                && *m.get_ref() < 1
            {
                return Err(cx.err(
                    m.span(),
                    "min must be at least 1 (a counter always rises by 0 or more: the check could not fail)",
                ));
            }
            Check::Exercised {
                phase: phase_ref(&r.phase, "phase")?,
                vmstat: vmstat_key(cx, r.vmstat.as_ref().unwrap())?,
                min: r.min.as_ref().map(|m| *m.get_ref()).unwrap_or(1),
                what: r
                    .what
                    .as_ref()
                    .map(|w| one_line(cx, w, "what"))
                    .transpose()?
                    .unwrap_or_else(|| "the antagonist".into()),
            }
        }
        _ => unreachable!(),
    })
}
