//! oom-kills: the group's OOM-kill count (v1 memory.oom_control `oom_kill`, v2 memory.events
//! `oom_kill`) rises by exactly the number of its tasks the runner saw die of SIGKILL in each
//! `exhaust` step, and by nothing else over the run. The task that needed more than the group
//! can hold must be the one killed, alone, unless the group has memory.oom.group: then every
//! task of the group dies with it (mm/oom_kill.c: oom_kill_process, mem_cgroup_get_oom_group),
//! and the count may hold the victim twice: oom_kill_process kills it, then kills every member,
//! the victim again unless it has let go of its mm by then, and each kill counts (6.1, 6.12).
//! With `events = true` (v2), memory.events `oom` counts each OOM and `oom_group_kill` each
//! whole-group kill.

use crate::check::args::CheckArgs;
use crate::check::{
    Check, CheckResult, CheckSpec, Kind, Needs, Outcome, columns, missing, opt, row_at_or_after,
    row_at_or_before,
};
use crate::model::StepKind;
use crate::model::Version;
use crate::model::contract::{Contract, v1, v2};
use crate::model::counter::{OOM_EVENTS, OOM_GROUP_KILLS, OOM_KILLS};
use crate::model::error::ScenarioError;
use crate::model::record::within;
use crate::model::{Record, StepRecord};

/// `oom-kills`: `cgroup`'s OOM kills match what its exhaust steps saw.
#[derive(Debug, Clone, PartialEq)]
pub struct OomKills {
    pub cgroup: String,
    /// Check memory.events `oom` too (cgroup v2 only).
    pub events: bool,
    /// The victim may not count twice under memory.oom.group.
    pub exact: bool,
}

/// `oom-kills` in the check table.
pub const KIND: Kind = Kind {
    kind: "oom-kills",
    doc: "Across each `exhaust` step of the group, its OOM-kill count (v1 memory.oom_control \
`oom_kill`, v2 memory.events `oom_kill`) rises by exactly the number of its tasks the \
runner saw die of SIGKILL, and over the run by no more than across those steps. The \
task that needed more than the group can hold must be the one killed, alone (the \
bystanders live), unless the group has memory.oom.group: then every task of the group \
dies with it (mm/oom_kill.c: oom_kill_process, mem_cgroup_get_oom_group), and the \
count may hold the victim twice: oom_kill_process kills it, then every member, the \
victim again unless it has let go of its mm by then, and each kill counts (6.1 and \
6.12 do so in 3 of 3 quick runs). An ancestor's memory.oom.group applies when the OOM \
is rooted at or above it, which depends on what the groups around held: then either the \
victim alone or all of the group's tasks may die, the victim possibly counted twice. \
With `events = true` (v2), memory.events `oom` rises \
in a step if and only if a task died, and `oom_group_kill` by one per whole-group \
kill. With `exact = true` the victim may not count twice: the count must equal the \
tasks killed under memory.oom.group too (the known-issue scenario `oom-group-count`). Not exercised when no task was killed (the group held it all) or no exhaust step \
ran in the group. Result name: `oom-kills(<cgroup>)`.",
    keys: &[
        opt(
            "cgroup",
            "the group of the `exhaust` steps (default: the only declared group)",
        ),
        opt(
            "events",
            "also judge memory.events `oom` and `oom_group_kill`; `true` needs `requires.cgroup = \
[\"v2\"]` (cgroup v1 counts no OOM events) (default `false`)",
        ),
        opt(
            "exact",
            "under memory.oom.group too, the count must equal the tasks killed: the victim may not \
count twice (default `false`)",
        ),
    ],
    parse,
    promises: &[
        &v2::MAX_OOM,
        &v2::MAX_ORDER0,
        &v2::EVENTS_OOM_KILL,
        &v2::OOMGROUP_KILL,
        &v2::EVENTS_OOM,
        &v2::EVENTS_OOM_GROUP_KILL,
        &v2::OOMGROUP_PROTECTED,
        &v2::OOMGROUP_SCOPE,
        &v1::RECLAIM_OOM,
        &v1::OOM_KILL_COUNT,
    ],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    let events = match i.get::<bool>("events")? {
        Some(e) if *e.get_ref() && i.versions().contains(&Version::V1) => {
            return Err(i.err(
                e.span(),
                "events: cgroup v1 counts no OOM events: add requires.cgroup = [\"v2\"]",
            ));
        }
        Some(e) => e.into_inner(),
        None => false,
    };
    Ok(Check::new(OomKills {
        cgroup: i.cgroup("cgroup")?,
        events,
        exact: i.get::<bool>("exact")?.is_some_and(|e| e.into_inner()),
    }))
}

impl CheckSpec for OomKills {
    fn name(&self) -> String {
        format!("oom-kills({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        let mut counters = vec![OOM_KILLS.to_string()];
        if self.events {
            counters.extend([OOM_EVENTS, OOM_GROUP_KILLS].map(String::from));
        }
        Needs {
            counters,
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        oom_kills(self.name(), rec, &self.cgroup, self.events, self.exact)
    }
    /// With `events`, also what memory.events `oom` and `oom_group_kill` promise.
    fn promises(&self, rec: &Record) -> Vec<&'static Contract> {
        let events = [&v2::EVENTS_OOM, &v2::EVENTS_OOM_GROUP_KILL];
        let group = rec.group(&self.cgroup).is_some_and(|g| g.oom_group);
        let steps = || {
            (rec.steps.iter()).filter(|s| s.kind == StepKind::Exhaust && s.cgroup == self.cgroup)
        };
        let immune = steps().any(|s| s.immune > 0);
        let outside = steps().any(|s| s.outside_killed.is_some());
        (crate::check::for_version(KIND.promises, rec).into_iter())
            .filter(|p| self.events || !events.iter().any(|e| e == p))
            .filter(|p| group || !(*p == &v2::OOMGROUP_KILL || *p == &v2::EVENTS_OOM_GROUP_KILL))
            .filter(|p| immune || *p != &v2::OOMGROUP_PROTECTED)
            .filter(|p| outside || *p != &v2::OOMGROUP_SCOPE)
            .collect()
    }
}

/// What one exhaust step did to the counters.
struct Seen<'a> {
    step: &'a StepRecord,
    kills: i64,
    /// memory.events `oom` and `oom_group_kill`.
    events: Option<(i64, i64)>,
    /// Rows of the last sample before the step and the first after it.
    rows: (usize, usize),
}

/// A failed judgement: actual, expected, why.
type Verdict = (String, String, String);

pub fn oom_kills(
    name: String,
    rec: &Record,
    cgroup: &str,
    events: bool,
    exact: bool,
) -> CheckResult {
    let mut want = vec![OOM_KILLS.to_string()];
    if events {
        want.extend([OOM_EVENTS, OOM_GROUP_KILLS].map(String::from));
    }
    let cols = match columns(rec, cgroup, &want) {
        Ok(c) => c.iter().map(|x| x.1).collect::<Vec<_>>(),
        Err(e) => return missing(name, e),
    };
    let s = &rec.series;
    if rec.any_below(cgroup, |_| true) {
        return parent(name, rec, cgroup, cols[0]);
    }
    let own = rec.group(cgroup).is_some_and(|g| g.oom_group);
    // memory.oom.group of an ancestor applies when the OOM is rooted at or above it (its limit,
    // or one above, was hit): then all of the ancestor's tasks die, else the victim alone; which
    // limit was hit depends on what the groups around held (stock 6.12, explore seed 66 case
    // 168: oom.group on a parent with a 52 MiB limit over a 95 MiB child, the victim counted
    // twice in the child).
    let above = rec
        .cgroups
        .iter()
        .any(|a| a.oom_group && a.name != cgroup && within(cgroup, &a.name));
    let group_kill = own || above;
    // Under memory.oom.group the victim may be counted a second time (see the top).
    let twice = group_kill && !exact;
    let seen = match seen_steps(rec, cgroup, &cols) {
        Ok(v) if v.is_empty() => return missing(name, format!("no exhaust step ran in {cgroup}")),
        Ok(v) => v,
        Err(e) => return missing(name, e),
    };
    let fail = |row: usize, (actual, expected, why): Verdict| {
        let mut res = CheckResult::new(name.clone(), Outcome::Fail, actual, expected, why);
        res.at = Some(s.t[row]);
        res
    };
    for v in &seen {
        if let Some((f, promise)) = spared(cgroup, v) {
            return fail(v.rows.1, f).breaking(promise);
        }
        if let Some((f, promise)) = judge_step(rec, cgroup, &cols, (own, above, twice), v) {
            return fail(v.rows.1, f).breaking(promise);
        }
    }
    let killed: i64 = seen.iter().map(|v| v.step.killed as i64).sum();
    let counted: i64 = seen.iter().map(|v| v.kills).sum();
    let whole = s.get(s.len() - 1, cols[0]) - s.get(0, cols[0]);
    if whole != counted {
        return fail(
            s.len() - 1,
            (
                format!("{cgroup}.oom_kills rose by {whole} over the run"),
                format!("+{counted} (what the exhaust steps counted)"),
                format!(
                    "{cgroup}'s OOM-kill count rose by {whole} over the run, but by {counted} across its exhaust steps, the only ones in which its tasks were killed"
                ),
            ),
        );
    }
    if killed == 0 {
        return missing(
            name,
            format!(
                "no task of {cgroup} was killed: the group held all its exhaust steps asked for, so its OOM killer was not tested"
            ),
        );
    }
    passed(name, &seen, cgroup, group_kill, twice, events)
}

/// A group with child groups: its kill count over the run against the tasks that died of SIGKILL
/// in the exhaust steps whose kills it counts. v2's memory.events is hierarchical (a child's
/// kills count in every ancestor: memcg_memory_event walks up); v1's memory.oom_control
/// `oom_kill` is the group's own (04fd61a4e010, 5.7: before it a v1 parent counted its
/// children's kills too). Not judged under memory.oom.group (a victim may count twice there).
fn parent(name: String, rec: &Record, cgroup: &str, col: usize) -> CheckResult {
    let v1 = rec.version == Version::V1;
    let below = |x: &StepRecord| within(&x.cgroup, cgroup) && x.cgroup != cgroup;
    let exhausts = || (rec.steps.iter()).filter(|x| x.kind == StepKind::Exhaust);
    if rec
        .cgroups
        .iter()
        .any(|g| g.oom_group && within(&g.name, cgroup))
    {
        return missing(
            name,
            format!("{cgroup} or a group below it has memory.oom.group: a victim may count twice"),
        );
    }
    // A task held in the subtree may be a victim no exhaust step counts.
    if (rec.steps.iter()).any(|x| x.kind == StepKind::Hold && within(&x.cgroup, cgroup)) {
        return missing(
            name,
            format!("tasks held in or below {cgroup} may be OOM victims no exhaust step counts"),
        );
    }
    let killed_below: i64 = exhausts()
        .filter(|x| below(x))
        .map(|x| x.killed as i64)
        .sum();
    let own: i64 = exhausts()
        .filter(|x| x.cgroup == cgroup)
        .map(|x| x.killed as i64)
        .sum();
    if killed_below + own == 0 {
        return missing(name, format!("no task in or below {cgroup} was killed"));
    }
    let s = &rec.series;
    let whole = s.get(s.len() - 1, col) - s.get(0, col);
    let (want, whose) = if v1 {
        (
            own,
            "its own tasks' (v1's memory.oom_control oom_kill is the group's own)",
        )
    } else {
        (
            own + killed_below,
            "its tasks' and its child groups' (v2's memory.events is hierarchical)",
        )
    };
    let counted = format!(
        "{cgroup}.oom_kills rose by {whole} over the run; {own} of its own tasks and {killed_below} of its child groups' died of SIGKILL"
    );
    let outcome = if whole == want {
        Outcome::Pass
    } else {
        Outcome::Fail
    };
    let mut res = CheckResult::new(
        name,
        outcome,
        format!("{cgroup}.oom_kills rose by {whole}"),
        format!("+{want}: {whose} kills"),
        counted,
    );
    if outcome == Outcome::Fail {
        res.at = Some(s.t[s.len() - 1]);
    }
    res
}

/// The counters' rise across each exhaust step of `cgroup`, or why it cannot be measured.
fn seen_steps<'a>(rec: &'a Record, cgroup: &str, cols: &[usize]) -> Result<Vec<Seen<'a>>, String> {
    let s = &rec.series;
    let mut seen = Vec::new();
    for step in rec
        .steps
        .iter()
        .filter(|x| x.kind == StepKind::Exhaust && x.cgroup == cgroup)
    {
        let b = row_at_or_before(rec, step.start);
        let Some(a) = row_at_or_after(rec, step.end) else {
            return Err(format!("no sample after '{}'", step.describe));
        };
        let rise = |c: usize| s.get(a, c) - s.get(b, c);
        seen.push(Seen {
            step,
            kills: rise(cols[0]),
            events: (cols.len() == 3).then(|| (rise(cols[1]), rise(cols[2]))),
            rows: (b, a),
        });
    }
    Ok(seen)
}

/// The tasks no OOM kill may take: the step's bystanders at oom_score_adj -1000 and the task it
/// kept waiting outside the group. A killed one, with the promise its death broke.
fn spared(cgroup: &str, v: &Seen) -> Option<(Verdict, &'static Contract)> {
    let st = v.step;
    let when = format!("in '{}' (t={:.3}s..{:.3}s)", st.describe, st.start, st.end);
    if st.immune_survived < st.immune {
        let dead = st.immune - st.immune_survived;
        return Some((
            (
                format!(
                    "{dead} of {} tasks at oom_score_adj -1000 killed",
                    st.immune
                ),
                "none of them killed".into(),
                format!(
                    "{when} the OOM killer took {dead} of {cgroup}'s tasks whose oom_score_adj is -1000"
                ),
            ),
            &v2::OOMGROUP_PROTECTED,
        ));
    }
    match st.outside_killed {
        Some(n) if n > 0 => Some((
            (
                format!("{n} task(s) outside {cgroup} killed"),
                "no task outside the group killed".into(),
                format!("{when} an OOM in {cgroup} killed a task waiting in another group"),
            ),
            &v2::OOMGROUP_SCOPE,
        )),
        _ => None,
    }
}

/// One exhaust step: the kill count against the tasks that died, who died, the events. `cols`
/// are the counters judged (oom_kills, then oom and oom_group_kill where there are events): the
/// diagnostics show those, not the whole sample.
fn judge_step(
    rec: &Record,
    cgroup: &str,
    cols: &[usize],
    (own, above, twice): (bool, bool, bool),
    v: &Seen,
) -> Option<(Verdict, &'static Contract)> {
    let group_kill = own || above;
    let under_v1 = rec.version == crate::model::Version::V1;
    let s = &rec.series;
    let row = |r: usize| s.describe_cols(r, cols);
    let killed = v.step.killed as i64;
    let when = format!(
        "in '{}' (phase {}, t={:.3}s..{:.3}s)",
        v.step.describe,
        rec.phase_at(v.step.start),
        v.step.start,
        v.step.end
    );
    let twice = i64::from(twice && killed > 0);
    if v.kills < killed || v.kills > killed + twice {
        let counted = if under_v1 {
            &v1::OOM_KILL_COUNT
        } else {
            &v2::EVENTS_OOM_KILL
        };
        return Some((
            (
                format!("{cgroup}.oom_kills rose by {}", v.kills),
                format!(
                    "+{killed}{} (the tasks that died of SIGKILL)",
                    if twice > 0 {
                        " or +1 more (the victim twice)"
                    } else {
                        ""
                    }
                ),
                format!(
                    "{when} {killed} of {cgroup}'s tasks were killed, yet its OOM-kill count rose by {}: {} .. {}",
                    v.kills,
                    row(v.rows.0),
                    row(v.rows.1)
                ),
            ),
            counted,
        ));
    }
    if let Some(verdict) = who_died(cgroup, (own, above), under_v1, v, &when) {
        return Some(verdict);
    }
    let (e, g) = v.events?;
    // oom_group_kill counts where the group kill was rooted: an ancestor's is not the group's.
    let group = i64::from(own && killed > 0);
    ((e > 0) != (killed > 0) || g != group).then(|| {
        ((
            format!("{cgroup}.oom_events rose by {e}, oom_group_kills by {g}"),
            format!(
                "oom {}, oom_group_kill +{group}",
                if killed > 0 { "> 0" } else { "+0" }
            ),
            format!(
                "{when} {killed} of {cgroup}'s tasks were killed{}, and memory.events oom rose by {e}, oom_group_kill by {g}: {}",
                if group_kill { " (memory.oom.group set)" } else { "" },
                row(v.rows.1)
            ),
        ), if g != group { &v2::EVENTS_OOM_GROUP_KILL } else { &v2::EVENTS_OOM })
    })
}

/// Who the OOM killer took in one exhaust step: the task that needed the memory alone, or with
/// memory.oom.group every task of the group (with an ancestor's only, either).
fn who_died(
    cgroup: &str,
    (own, above): (bool, bool),
    under_v1: bool,
    v: &Seen,
    when: &str,
) -> Option<(Verdict, &'static Contract)> {
    let group_kill = own || above;
    let (killed, survived) = (v.step.killed, v.step.survived);
    let all = killed + survived;
    // With an ancestor's memory.oom.group only, either may happen (see `oom_kills`).
    let alone_or_all = v.step.task_killed
        && match (own, above) {
            (true, _) => survived == 0,
            (false, true) => survived == 0 || killed == 1,
            (false, false) => killed == 1,
        };
    if killed == 0 || alone_or_all {
        return None;
    }
    let promise = match (group_kill, under_v1) {
        (true, _) => &v2::OOMGROUP_KILL,
        (false, true) => &v1::RECLAIM_OOM,
        (false, false) => &v2::MAX_ORDER0,
    };
    let verdict = (
        format!("{killed} killed, {survived} bystanders lived"),
        if group_kill {
            format!("all {all} tasks killed (memory.oom.group)")
        } else {
            "the task that needed the memory killed, alone".to_string()
        },
        format!(
            "{when} the OOM killer killed {killed} of {cgroup}'s {all} tasks{}{}",
            if v.step.task_killed {
                ""
            } else {
                ", not the task that needed the memory"
            },
            if group_kill {
                ": memory.oom.group is set, so it must kill them all"
            } else {
                ": without memory.oom.group it must stop at the task that needed the memory"
            }
        ),
    );
    Some((verdict, promise))
}

fn passed(
    name: String,
    seen: &[Seen],
    cgroup: &str,
    group_kill: bool,
    twice: bool,
    events: bool,
) -> CheckResult {
    let killed: i64 = seen.iter().map(|v| v.step.killed as i64).sum();
    let counted: i64 = seen.iter().map(|v| v.kills).sum();
    let doubled = counted - killed;
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!(
            "{killed} tasks killed in {} exhaust steps, oom_kills +{counted}",
            seen.len()
        ),
        format!(
            "oom_kills = the tasks killed{}{}",
            if group_kill {
                "; all the group's tasks per OOM (memory.oom.group)"
            } else {
                "; one per OOM"
            },
            if events { "; oom events with each" } else { "" }
        ),
        format!(
            "each OOM in {cgroup} killed {}; its OOM-kill count followed {}{}",
            if group_kill {
                "every task of the group"
            } else {
                "the task that needed the memory, and no bystander"
            },
            if doubled > 0 {
                format!("(the victim counted twice in {doubled})")
            } else {
                "exactly".to_string()
            },
            if events {
                "; memory.events oom and oom_group_kill rose with each"
            } else {
                ""
            }
        ),
    );
    if twice {
        res.tolerance = Some(format!(
            "the victim may count twice per OOM under memory.oom.group (oom_kill_process kills it, then every member, the victim again unless it has let go of its mm): {doubled} of {} OOMs did",
            seen.iter().filter(|v| v.step.killed > 0).count()
        ));
    }
    res
}
