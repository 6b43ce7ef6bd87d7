//! Parsing and validation: raw TOML into the resolved `Scenario`, errors naming file, line and
//! column.

use std::time::Duration;

use toml::Spanned;

use super::checks::{outline, resolve_checks};
use super::implied::implied;
use super::known::known;
use super::raw::{RawCgroup, RawScenario};
use super::steps::read_step;
use super::{
    Antagonist, CgroupSpec, Check, Feature, HELPER_GROUP, Hold, Phase, Requires, SampleSpec,
    Scenario, ScenarioError, ScratchDisk, Step,
};
use crate::model::counter::stat_key;
use crate::model::source::{Text, is_name};
use crate::model::step::Region;
use crate::model::units::{MIN_INTERVAL, parse_size};
use crate::model::{FixTag, StepKind, Version};

/// Parses and validates one scenario file's text. `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    let cx = Text { file, text };
    let raw: RawScenario = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        cx.err(span, e.message().trim().to_string())
    })?;
    resolve(cx, raw)
}

/// Validates the raw file into the `Scenario`; the first error found is returned.
pub(super) fn resolve(cx: Text, raw: RawScenario) -> Result<Scenario, ScenarioError> {
    let cx = &cx;
    let Some(origin) = raw.origin.clone() else {
        return Err(cx.err(
            0..0,
            "missing [origin] table: every scenario names the kernel patch or report it comes from ([origin] subject = \"memcg: ...\", optional commit and date)",
        ));
    };
    let name = scenario_name(cx, &raw)?;

    let cgroup_versions = versions(cx, &raw)?;
    let features = features(cx, &raw)?;

    let cgroups = cgroups(cx, &raw, &cgroup_versions)?;
    let names: Vec<String> = cgroups.iter().map(|c| c.name.clone()).collect();
    let phases = phases(cx, &raw, &names)?;
    check_tasks(cx, &raw, &phases)?;
    check_dedicated(cx, &phases, &features)?;
    check_numa(cx, &phases, &features)?;

    let outline = outline(&cgroups, &phases, &cgroup_versions);
    let (counters, vmstat, mut checks) = sampled(cx, &raw, &outline)?;
    checks.extend(implied(&cgroups, &phases, &checks, &cgroup_versions));

    let interval = match &raw.sample.interval {
        Some(i) => cx.duration_within(i, MIN_INTERVAL)?,
        None => Duration::from_millis(10),
    };
    let timeout = match &raw.timeout {
        Some(t) => cx.duration_within(t, MIN_INTERVAL)?,
        None => Duration::from_secs(300),
    };
    check_writeback(cx, &raw, &phases)?;

    let sysctls = sysctls(cx, &raw)?;
    let known = known(cx, &raw, &checks, &cgroup_versions)?;
    let scratch = scratch(cx, &raw)?;
    let fixes = fixes(cx, &raw)?;

    let sc = Scenario {
        name,
        sysctls,
        scratch,
        scale: raw.scale.unwrap_or(true),
        summary: cx.one_line(&raw.summary, "summary")?,
        description: raw.description,
        origin,
        requires: Requires {
            cgroup: cgroup_versions,
            writeback: raw.requires.writeback,
            features,
        },
        timeout,
        cgroups,
        sample: SampleSpec {
            interval,
            counters,
            vmstat,
        },
        phases,
        checks,
        known,
        fixes,
        source: cx.file.to_string(),
    };
    check_probe_room(cx, &sc)?;
    Ok(sc)
}

/// A probe needs room below its group's limit (see `super::probe`).
fn check_probe_room(cx: &Text, sc: &Scenario) -> Result<(), ScenarioError> {
    match super::probe::cramped(sc) {
        None => Ok(()),
        Some((group, size, limit)) => Err(cx.err(
            0..0,
            format!(
                "a probe of {} in {group} needs a limit of at least {} on {group} and its ancestors (probe and clean ballast in half of it: reclaim during a probe starts writeback), but it is {}",
                crate::model::units::human_bytes(size as i64),
                crate::model::units::human_bytes(super::probe::room(size) as i64),
                crate::model::units::human_bytes(limit as i64)
            ),
        )),
    }
}

/// `fixes`: each `<12 hex digits> ("<subject>")`, no commit twice.
fn fixes(cx: &Text, raw: &RawScenario) -> Result<Vec<FixTag>, ScenarioError> {
    let mut out: Vec<FixTag> = Vec::new();
    for f in &raw.fixes {
        let tag =
            FixTag::parse(f.get_ref()).map_err(|e| cx.err(f.span(), format!("fixes: {e}")))?;
        if out.iter().any(|t| t.commit == tag.commit) {
            return Err(cx.err(f.span(), format!("fixes: {} is named twice", tag.commit)));
        }
        out.push(tag);
    }
    Ok(out)
}

/// The scenario's `name`: non-empty [A-Za-z0-9_-].
fn scenario_name(cx: &Text, raw: &RawScenario) -> Result<String, ScenarioError> {
    let name = raw.name.get_ref().clone();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(cx.err(raw.name.span(), "name must be non-empty [A-Za-z0-9_-]"));
    }
    Ok(name)
}

/// A pressure or khugepaged step changes the whole machine: the scenario must require a
/// machine of the run's own.
use super::ROOT;

fn check_dedicated(cx: &Text, phases: &[Phase], features: &[Feature]) -> Result<(), ScenarioError> {
    let root = |s: &&Step| matches!(s, Step::Set { cgroup, .. } if cgroup == ROOT);
    if let Some(k) = phases
        .iter()
        .flat_map(|p| &p.steps)
        .filter(|s| matches!(s.kind(), StepKind::Pressure | StepKind::Khugepaged) || root(s))
        .map(|s| s.kind())
        .next()
        && !features.contains(&Feature::Dedicated)
    {
        return Err(cx.err(
            0..0,
            format!(
                "a {k} step changes the whole machine (or writes the root group): the scenario must say requires.features = [\"dedicated\"] (it then runs only with run --dedicated and in memcgtest vm)"
            ),
        ));
    }
    Ok(())
}

/// A migrate step moves pages between NUMA nodes: the scenario must require two.
fn check_numa(cx: &Text, phases: &[Phase], features: &[Feature]) -> Result<(), ScenarioError> {
    let migrates = phases
        .iter()
        .flat_map(|p| &p.steps)
        .any(|s| s.kind() == StepKind::Migrate);
    if migrates && !features.contains(&Feature::Numa) {
        return Err(cx.err(
            0..0,
            "a migrate step moves pages between NUMA nodes: the scenario must say requires.features = [\"numa\"] (it is then skipped on a machine with one node)",
        ));
    }
    Ok(())
}

/// Write steps need `requires.writeback`.
fn check_writeback(cx: &Text, raw: &RawScenario, phases: &[Phase]) -> Result<(), ScenarioError> {
    if phases
        .iter()
        .flat_map(|p| &p.steps)
        .any(|s| matches!(s, Step::Write { .. }))
        && !raw.requires.writeback
    {
        return Err(cx.err(
            0..0,
            "a scenario with write steps must say requires.writeback = true",
        ));
    }
    Ok(())
}

/// `scratch`: "slow" or not set.
fn scratch(cx: &Text, raw: &RawScenario) -> Result<ScratchDisk, ScenarioError> {
    match &raw.scratch {
        None => Ok(ScratchDisk::Default),
        Some(s) if s.get_ref() == "slow" => Ok(ScratchDisk::Slow),
        Some(s) => Err(cx.err(
            s.span(),
            format!("scratch {:?}: the only choice is \"slow\"", s.get_ref()),
        )),
    }
}

/// `requires.cgroup`: both versions when not given.
fn versions(cx: &Text, raw: &RawScenario) -> Result<Vec<Version>, ScenarioError> {
    let mut cgroup_versions = Vec::new();
    for v in &raw.requires.cgroup {
        cgroup_versions.push(match v.get_ref().as_str() {
            "v1" => Version::V1,
            "v2" => Version::V2,
            other => {
                return Err(cx.err(
                    v.span(),
                    format!("unknown cgroup version {other:?} (v1, v2)"),
                ));
            }
        });
    }
    if cgroup_versions.is_empty() {
        cgroup_versions = vec![Version::V1, Version::V2];
    }
    Ok(cgroup_versions)
}

/// `requires.features`.
fn features(cx: &Text, raw: &RawScenario) -> Result<Vec<Feature>, ScenarioError> {
    let mut features = Vec::new();
    for f in &raw.requires.features {
        let feat = Feature::ALL
            .iter()
            .find(|(n, _)| n == f.get_ref())
            .map(|(_, f)| *f)
            .ok_or_else(|| {
                let names: Vec<_> = Feature::ALL.iter().map(|(n, _)| *n).collect();
                cx.err(
                    f.span(),
                    format!(
                        "unknown feature {:?} (known: {})",
                        f.get_ref(),
                        names.join(", ")
                    ),
                )
            })?;
        features.push(feat);
    }

    Ok(features)
}

/// A `[[cgroup]]` name: [A-Za-z0-9_-] parts joined by '/', not the helper group, declared once,
/// after its parent.
fn check_group_name(
    cx: &Text,
    n: &Spanned<String>,
    cgroups: &[CgroupSpec],
) -> Result<(), ScenarioError> {
    let nm = n.get_ref();
    let valid_part = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if !nm.split('/').all(valid_part) {
        return Err(cx.err(
            n.span(),
            "cgroup name must be [A-Za-z0-9_-] parts joined by '/'",
        ));
    }
    if nm.split('/').next() == Some(HELPER_GROUP) {
        return Err(cx.err(
            n.span(),
            format!(
                "cgroup {nm:?}: {HELPER_GROUP:?} is the runner's helper group; pick another name"
            ),
        ));
    }
    if cgroups.iter().any(|x| &x.name == nm) {
        return Err(cx.err(n.span(), format!("cgroup {nm:?} declared twice")));
    }
    if let Some((parent, _)) = nm.rsplit_once('/')
        && !cgroups.iter().any(|x| x.name == parent)
    {
        return Err(cx.err(
            n.span(),
            format!("parent cgroup {parent:?} must be declared before {nm:?}"),
        ));
    }
    Ok(())
}

/// The `[[cgroup]]` tables: names, parents declared first, limits, v1 charge moving.
fn cgroups(
    cx: &Text,
    raw: &RawScenario,
    cgroup_versions: &[Version],
) -> Result<Vec<CgroupSpec>, ScenarioError> {
    let mut cgroups: Vec<CgroupSpec> = Vec::new();
    for c in &raw.cgroup {
        check_group_name(cx, &c.get_ref().name, &cgroups)?;
        cgroups.push(cgroup(cx, c.get_ref(), cgroup_versions)?);
    }
    Ok(cgroups)
}

/// One `[[cgroup]]` table (its name checked): its limits and settings, each of the cgroup
/// versions the scenario runs under.
fn cgroup(
    cx: &Text,
    c: &RawCgroup,
    cgroup_versions: &[Version],
) -> Result<CgroupSpec, ScenarioError> {
    let limit = c
        .limit
        .as_ref()
        .map(|l| cx.positive_size(l, "limit"))
        .transpose()?;
    let high = v2_size(cx, cgroup_versions, &c.high, "high")?;
    let low = v2_size(cx, cgroup_versions, &c.low, "low")?;
    let min = v2_size(cx, cgroup_versions, &c.min, "min")?;
    let (swap, swap_high, swap_max) = swap(cx, c, cgroup_versions, limit)?;
    let oom_group = match &c.oom_group {
        Some(o) if cgroup_versions.contains(&Version::V1) => {
            return Err(cx.err(
                o.span(),
                "oom_group is a cgroup v2 setting (memory.oom.group): add requires.cgroup = [\"v2\"]",
            ));
        }
        Some(o) => *o.get_ref(),
        None => false,
    };
    let move_charge = match &c.move_charge {
        Some(m) if *m.get_ref() > 3 => {
            return Err(cx.err(m.span(), "move_charge must be 0..3 (1 anon, 2 mapped file)"));
        }
        Some(m) if cgroup_versions.contains(&Version::V2) => {
            return Err(cx.err(
                m.span(),
                "move_charge is a cgroup v1 setting: add requires.cgroup = [\"v1\"]",
            ));
        }
        Some(m) => Some(*m.get_ref()),
        None => None,
    };
    Ok(CgroupSpec {
        name: c.name.get_ref().clone(),
        limit,
        high,
        low,
        min,
        swap,
        swap_max,
        swap_high,
        oom_group,
        move_charge,
        listen: listen(cx, c, cgroup_versions)?,
    })
}

/// v1 notifications (`listen`): `memory.usage_in_bytes <size>` or `memory.memsw.usage_in_bytes
/// <size>` (a threshold), `memory.oom_control`, `memory.pressure_level low|medium|critical`
/// with an optional `,default|hierarchy|local`.
fn listen(
    cx: &Text,
    c: &RawCgroup,
    cgroup_versions: &[Version],
) -> Result<Vec<String>, ScenarioError> {
    let mut out = Vec::new();
    for l in &c.listen {
        if cgroup_versions.contains(&Version::V2) {
            return Err(cx.err(
                l.span(),
                "listen is a cgroup v1 interface (cgroup.event_control): add requires.cgroup = [\"v1\"]",
            ));
        }
        let text = l.get_ref().trim();
        let (file, arg) = text.split_once(' ').unwrap_or((text, ""));
        let ok = match file {
            "memory.usage_in_bytes" | "memory.memsw.usage_in_bytes" => {
                crate::model::units::parse_size(arg).is_ok()
            }
            "memory.oom_control" => arg.is_empty(),
            "memory.pressure_level" => {
                let (level, mode) = arg.split_once(',').unwrap_or((arg, "default"));
                ["low", "medium", "critical"].contains(&level)
                    && ["default", "hierarchy", "local"].contains(&mode)
            }
            _ => false,
        };
        if !ok {
            return Err(cx.err(
                l.span(),
                "listen takes \"memory.usage_in_bytes <size>\", \"memory.memsw.usage_in_bytes <size>\", \"memory.oom_control\" or \"memory.pressure_level <low|medium|critical>[,hierarchy|local]\"",
            ));
        }
        out.push(text.to_string());
    }
    Ok(out)
}

/// A size only cgroup v2 has (memory.high, .low, .min, .swap.high): refused when the scenario
/// runs under v1.
fn v2_size(
    cx: &Text,
    cgroup_versions: &[Version],
    v: &Option<Spanned<String>>,
    key: &str,
) -> Result<Option<u64>, ScenarioError> {
    match v {
        Some(h) if cgroup_versions.contains(&Version::V1) => Err(cx.err(
            h.span(),
            format!("{key} is a cgroup v2 setting (memory.{key}): add requires.cgroup = [\"v2\"]"),
        )),
        Some(h) => cx.positive_size(h, key).map(Some),
        None => Ok(None),
    }
}

/// A group's `swap`, `swap_high` and `swap_max`, in that order.
fn swap(
    cx: &Text,
    c: &RawCgroup,
    cgroup_versions: &[Version],
    limit: Option<u64>,
) -> Result<(bool, Option<u64>, Option<u64>), ScenarioError> {
    let swap = match &c.swap {
        Some(s) if !*s.get_ref() && limit.is_none() => {
            return Err(cx.err(
                s.span(),
                "swap = false needs a limit (v1 limits memory+swap to it)",
            ));
        }
        Some(s) => *s.get_ref(),
        None => true,
    };
    let swap_high = v2_size(cx, cgroup_versions, &c.swap_high, "swap_high")?;
    let swap_max = match &c.swap_max {
        Some(m) if !swap => {
            return Err(cx.err(m.span(), "swap_max with swap = false: choose one"));
        }
        Some(m) if cgroup_versions.contains(&Version::V1) && limit.is_none() => {
            return Err(cx.err(
                m.span(),
                "swap_max on cgroup v1 is memory.memsw.limit_in_bytes = limit + swap_max: it needs a limit",
            ));
        }
        Some(m) => Some(cx.size(m)?),
        None => None,
    };
    Ok((swap, swap_high, swap_max))
}

/// The `[[phase]]` tables with their steps and antagonists.
fn phases(cx: &Text, raw: &RawScenario, groups: &[String]) -> Result<Vec<Phase>, ScenarioError> {
    let mut phases = Vec::new();
    for p in &raw.phase {
        let rp = p.get_ref();
        if !is_name(rp.name.get_ref()) {
            return Err(cx.err(rp.name.span(), "phase name must be non-empty [A-Za-z0-9_-]"));
        }
        if phases.iter().any(|x: &Phase| &x.name == rp.name.get_ref()) {
            return Err(cx.err(
                rp.name.span(),
                format!("phase {:?} declared twice", rp.name.get_ref()),
            ));
        }
        let mut steps = Vec::new();
        for s in &rp.steps {
            steps.push(read_step(*cx, s, groups)?);
        }
        if steps.is_empty() {
            return Err(cx.err(p.span(), "a phase needs at least one step"));
        }
        let mut antagonists = Vec::new();
        for a in &rp.antagonists {
            let k = &a.get_ref().kind;
            antagonists.push(match k.get_ref().as_str() {
                "compaction" => Antagonist::Compaction,
                other => {
                    return Err(cx.err(
                        k.span(),
                        format!("unknown antagonist {other:?} (known: compaction)"),
                    ));
                }
            });
        }
        let repeat = match &rp.repeat {
            Some(r) if *r.get_ref() == 0 || *r.get_ref() > 100 => {
                return Err(cx.err(r.span(), "repeat must be 1..100"));
            }
            Some(r) => *r.get_ref(),
            None => 1,
        };
        // 0 leaves a warm-up phase out of --quick runs (the phases after it warm up as well).
        let least = if rp.warmup { 0 } else { 1 };
        let quick_repeat = match &rp.quick_repeat {
            Some(q) if *q.get_ref() < least || *q.get_ref() > repeat => {
                let what = if rp.warmup {
                    ""
                } else {
                    ", 0 only for a warm-up phase"
                };
                return Err(cx.err(
                    q.span(),
                    format!("quick_repeat must be {least}..{repeat} (repeat{what})"),
                ));
            }
            Some(q) => Some(*q.get_ref()),
            None => None,
        };
        phases.push(Phase {
            name: rp.name.get_ref().clone(),
            repeat,
            quick_repeat,
            warmup: rp.warmup,
            alternate: rp.alternate,
            steps,
            antagonists,
        });
    }
    if phases.is_empty() {
        return Err(cx.err(0..0, "a scenario needs at least one [[phase]]"));
    }
    Ok(phases)
}

/// What `[sample]` lists, and the checks (whose needs are sampled too: see `SamplePlan`).
#[allow(clippy::type_complexity)]
fn sampled(
    cx: &Text,
    raw: &RawScenario,
    outline: &crate::check::Outline,
) -> Result<(Vec<String>, Vec<String>, Vec<Check>), ScenarioError> {
    let mut counters: Vec<String> = Vec::new();
    for c in &raw.sample.counters {
        check_counter(cx, c.get_ref(), c.span(), &outline.versions)?;
        if !counters.contains(c.get_ref()) {
            counters.push(c.get_ref().clone());
        }
    }
    let mut vmstat: Vec<String> = Vec::new();
    for v in &raw.sample.vmstat {
        vmstat.push(cx.vmstat_key(v)?);
    }

    let checks = resolve_checks(*cx, &raw.check, outline)?;

    Ok((counters, vmstat, checks))
}

/// The THP knobs a `[sysctl]` table may set (/sys/kernel/mm/transparent_hugepage/...), each to
/// "0" or "1". shrink_underused (6.12 on), at 1, puts every anonymous THP on the deferred split
/// queue when it is faulted or collapsed, so that the shrinker can split the ones mostly zero;
/// v1 charge moving splits a THP it finds on that queue instead of moving it whole.
pub const THP_KNOBS: &[&str] = &["shrink_underused"];

/// `[sysctl]`: vm.* keys (and the THP knobs, `thp.<knob>`) with their values as they will be
/// written, by their full names.
fn sysctls(cx: &Text, raw: &RawScenario) -> Result<Vec<(String, String)>, ScenarioError> {
    let mut sysctls = Vec::new();
    for (k, v) in &raw.sysctl {
        if let Some(knob) = k.strip_prefix("thp.") {
            if !THP_KNOBS.contains(&knob) {
                let known = THP_KNOBS.join(", thp.");
                let why = format!("sysctl {k:?}: the THP knobs that may be set are thp.{known}");
                return Err(cx.err(v.span(), why));
            }
            if !matches!(v.get_ref().as_str(), "0" | "1") {
                let why = format!("sysctl {k}: {:?} must be 0 or 1", v.get_ref());
                return Err(cx.err(v.span(), why));
            }
            sysctls.push((k.clone(), v.get_ref().clone()));
            continue;
        }
        let Some(short) = k.strip_prefix("vm.") else {
            return Err(cx.err(
                v.span(),
                format!("sysctl {k:?}: only vm.* sysctls (and thp.* knobs) may be set"),
            ));
        };
        if short.is_empty() || !short.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(cx.err(v.span(), format!("bad sysctl name {k:?}")));
        }
        sysctls.push((k.clone(), sysctl_value(cx, short, v)?));
    }

    Ok(sysctls)
}

/// A `[sysctl]` value as it will be written to /proc/sys/vm/`key`: a non-negative integer, or for
/// `*_bytes` keys a size ("64M", written as bytes), within what the kernel accepts for the key
/// (dirty_bytes at least two pages, dirty_background_bytes at least 1, `*_ratio` at most 100).
/// No sign, no whitespace: "16 32" or a newline would write something else than meant.
pub(super) fn sysctl_value(
    cx: &Text,
    key: &str,
    v: &Spanned<String>,
) -> Result<String, ScenarioError> {
    let bad = |why: String| Err(cx.err(v.span(), format!("sysctl vm.{key}: {why}")));
    let text = v.get_ref();
    if text.is_empty() || text.chars().any(|c| c.is_whitespace()) {
        return bad(format!("{text:?} must be one number without spaces"));
    }
    let n = if key.ends_with("_bytes") {
        match parse_size(text) {
            Ok(n) => n,
            Err(m) => return bad(m),
        }
    } else if text.chars().all(|c| c.is_ascii_digit()) {
        match text.parse::<u64>() {
            Ok(n) => n,
            Err(_) => return bad(format!("{text:?} is too large")),
        }
    } else {
        return bad(format!("{text:?} is not a non-negative integer"));
    };
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    let min = match key {
        "dirty_bytes" => 2 * page,
        "dirty_background_bytes" => 1,
        _ => 0,
    };
    if n < min {
        return bad(format!("the kernel refuses less than {min}"));
    }
    if key.ends_with("_ratio") && n > 100 {
        return bad("a ratio is a percentage, at most 100".into());
    }
    Ok(n.to_string())
}

pub(super) fn check_counter(
    cx: &Text,
    name: &str,
    span: std::ops::Range<usize>,
    versions: &[Version],
) -> Result<(), ScenarioError> {
    for v in versions {
        stat_key(name, *v).map_err(|m| cx.err(span.clone(), m))?;
    }
    Ok(())
}

/// Tasks must be held before they are used, and not held twice while alive; a phase that holds
/// a task cannot repeat; an advice is about memory the task holds.
pub(super) fn check_tasks(
    cx: &Text,
    raw: &RawScenario,
    phases: &[Phase],
) -> Result<(), ScenarioError> {
    let mut alive: Vec<&Hold> = Vec::new();
    for (p, rp) in phases.iter().zip(&raw.phase) {
        for (st, rs) in p.steps.iter().zip(&rp.get_ref().steps) {
            match st {
                Step::Hold(h) => {
                    if p.repeat > 1 {
                        return Err(cx.err(rs.span(), "a phase that holds a task cannot repeat"));
                    }
                    if alive.iter().any(|a| a.task == h.task) {
                        return Err(cx.err(rs.span(), format!("task {:?} is already held", h.task)));
                    }
                    alive.push(h);
                }
                Step::Move { task, .. }
                | Step::Grow { task, .. }
                | Step::Wait { task }
                | Step::Release { task }
                | Step::Advise { task, .. }
                | Step::Migrate { task, .. }
                | Step::Khugepaged {
                    task: Some(task), ..
                } if !alive.iter().any(|a| a.task == *task) => {
                    return Err(cx.err(rs.span(), format!("no task {task:?} is held here")));
                }
                Step::Khugepaged {
                    task: Some(task), ..
                } if !alive.iter().any(|a| a.task == *task && a.anon > 0) => {
                    return Err(cx.err(
                        rs.span(),
                        format!("task {task:?} holds no anon memory to advise hugepage"),
                    ));
                }
                Step::Advise { task, region, .. } | Step::Migrate { task, region, .. } => {
                    let h = alive.iter().find(|a| a.task == *task).expect("alive");
                    let holds = match region {
                        Region::Anon => h.anon > 0,
                        Region::Shmem => h.shmem > 0,
                        Region::File => h.size > 0,
                    };
                    if !holds {
                        return Err(cx.err(
                            rs.span(),
                            format!(
                                "task {task:?} holds no {} memory to {}",
                                region.name(),
                                st.kind().name()
                            ),
                        ));
                    }
                }
                Step::Release { task } => alive.retain(|t| t.task != *task),
                _ => {}
            }
        }
    }
    Ok(())
}
