//! The runner: for each scenario, creates its cgroups below the test parent, starts the sampler,
//! runs the phases (workers placed in their cgroups, antagonists alongside), evaluates the checks,
//! and undoes everything on every exit path (a guard's Drop covers errors, timeouts and panics; the
//! signal flag covers Ctrl-C, SIGTERM and SIGHUP).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result};

use super::context::{Context, Guard, Stop};
use super::online::{self, Cut, Online};
use super::phases::Run;
use super::sample::{Sampler, Source};
use super::sources::sampler_sources;
use crate::model::error::Error;
use crate::model::{CheckResult, Column, KnownIssue, MoveRecord, Outcome, StepKind};
use crate::model::{PhaseResult, Record, ScenarioResult, Series, Status};
use crate::scenario::{Feature, SamplePlan, Scenario, ScratchDisk, Step, headroom};
use crate::sys::cgroup::{Cgroup, Version};
use crate::sys::sysctl;
use crate::sys::sysctl::SysctlGuard;
use crate::sys::{cleanup, proc};

mod verdict;
pub use verdict::verdict;

impl ScenarioResult {
    fn new(sc: &Scenario, status: Status, reason: String) -> Self {
        let mut r = ScenarioResult::empty(&sc.name, &sc.summary, status, reason);
        r.fixes = sc.fixes.clone();
        r
    }
}

/// Why a scenario cannot run here, if it cannot (it is then `skip`).
pub fn unmet_requirement(sc: &Scenario, version: Version, dedicated: bool) -> Option<String> {
    if !sc.requires.cgroup.contains(&version) {
        let want: Vec<&str> = sc.requires.cgroup.iter().map(|v| v.as_str()).collect();
        return Some(format!(
            "needs cgroup {}; this run uses {}",
            want.join(" or "),
            version.as_str()
        ));
    }
    for f in &sc.requires.features {
        let ok = match f {
            Feature::Compaction => std::path::Path::new("/proc/sys/vm/compact_memory").exists(),
            Feature::VmEvents => proc::vmstat_has("pgmigrate_success"),
            Feature::Swap => proc::swap_enabled(),
            Feature::Dedicated if !dedicated => {
                return Some(
                    "needs a machine of its own (run --dedicated; memcgtest vm guests are): it puts the whole machine under memory pressure or changes machine-wide knobs"
                        .into(),
                );
            }
            Feature::Dedicated => true,
            Feature::OomImmune if !proc::has_capability(proc::CAP_SYS_RESOURCE) => {
                return Some(
                    "needs to make a task unkillable (oom_score_adj -1000), which takes CAP_SYS_RESOURCE: this run does not have it (a container's root?)"
                        .into(),
                );
            }
            Feature::OomImmune => true,
            Feature::Numa => match crate::sys::numa::too_few() {
                Some(why) => return Some(why),
                None => true,
            },
        };
        if !ok {
            return Some(format!("kernel lacks {} (see `memcgtest env`)", f.name()));
        }
    }
    None
}

/// Runs one scenario and always cleans up after it.
pub fn run_scenario(ctx: &Context, sc: &Scenario) -> ScenarioResult {
    let version = ctx.parent.version;
    if let Some(why) = unmet_requirement(sc, version, ctx.dedicated) {
        let mut r = ScenarioResult::new(sc, Status::Skip, why);
        r.cgroup_version = Some(version);
        return r;
    }
    let mut sc = sc.clone();
    if ctx.quick {
        sc.quicken();
    }
    // A version the file declares no check for runs the invariants only (as machine-pressure
    // does everywhere); a check this machine cannot run is another matter.
    sc.checks.retain(|c| c.only.is_none_or(|v| v == version));
    let fit = headroom::fit(
        &sc,
        if ctx.quick && sc.scale { 8 } else { 1 },
        crate::sys::readahead::reader_window(disk_of(ctx, &sc)),
    );
    if fit.divisor > 1 {
        sc.scale_down(fit.divisor);
    }
    let started = Instant::now();
    let mut guard = Guard {
        root: None,
        scratch: None,
        workers: Vec::new(),
        sysctls: SysctlGuard::new(
            std::path::Path::new(crate::sys::sysctl::PROC_SYS),
            std::path::Path::new(crate::sys::lock::RUN_DIR),
            ctx.wait_sysctls,
        ),
    };
    let mut result = ScenarioResult::new(&sc, Status::Error, String::new());
    result.cgroup_version = Some(version);
    let had_purpose = sc.checks.iter().any(|c| c.purpose);
    drop_truthless_checks(&mut sc, &mut result);
    drop_numa_checks(&mut sc, &mut result, &ctx.parent);
    drop_unmeasurable_rates(&mut sc, &mut result, fit);
    // Every check it exists for left out on this machine: what is left could only pass without
    // testing it.
    if had_purpose && !sc.checks.iter().any(|c| c.purpose) {
        result.status = Status::Skip;
        result.reason = format!(
            "none of the checks it exists for can run here: {}",
            result.notes.join("; ")
        );
        return result;
    }
    // The machine's vm sysctls are owned before the clock starts: waiting for another run that
    // owns them never eats into this scenario's timeout.
    let outcome = if needs_sysctls(&sc) {
        guard.sysctls.acquire().map_err(Stop::from)
    } else {
        Ok(())
    }
    .and_then(|()| execute(ctx, &mut sc, &mut guard, &mut result));
    let cleanup = guard.cleanup();
    result.seconds = started.elapsed().as_secs_f64();
    settle(&mut result, outcome, cleanup);
    // A failure the kernel is blamed for (a failed check, or a step it made fail) names the
    // upstream fixes that once cured such failures.
    let kernels = matches!(result.error, Some(Error::Kernel(_)));
    if (result.status == Status::Fail || kernels) && !sc.fixes.is_empty() {
        result.reason += &format!(" [guards {}]", crate::model::join_fixes(&sc.fixes));
    }
    result
}

/// Checks that only the per-file truth can judge (`Needs::per_file`) are not run on a kernel
/// without cachestat(2): a note says so, and the scenario is judged by its other checks rather
/// than skipped for a truth this kernel cannot give.
fn drop_truthless_checks(sc: &mut Scenario, result: &mut ScenarioResult) {
    if let Err(why) = crate::exec::sample::pagecache::support() {
        drop_checks(sc, result, &why, |n| n.per_file);
    }
}

/// Checks of memory.numa_stat (`Needs::numa`) are not run on a kernel without it (CONFIG_NUMA
/// off), nor those of named counters on cgroup v1, whose numa_stat lists LRU sizes only (the
/// invariant over all of them runs there): a note says so.
fn drop_numa_checks(sc: &mut Scenario, result: &mut ScenarioResult, parent: &Cgroup) {
    if !numa_stat_exists(&parent.path) {
        let why = "this kernel has no memory.numa_stat (CONFIG_NUMA off)";
        drop_checks(sc, result, why, |n| n.numa.is_some());
    } else if parent.version == Version::V1 {
        let why = "cgroup v1's memory.numa_stat lists LRU sizes only";
        drop_checks(sc, result, why, |n| n.numa.is_some() && !n.all_counters);
    }
}

/// Says how the scratch disk's readahead shaped the scenario, and removes its paired read rates
/// when even its full sizes leave the readers' group too small for them (`headroom::fit`).
fn drop_unmeasurable_rates(sc: &mut Scenario, result: &mut ScenarioResult, fit: headroom::Fit) {
    result.notes.extend(fit.note);
    let Some(why) = fit.unmeasurable else {
        return;
    };
    sc.checks.retain(|c| {
        let keep = c.rated().is_none_or(|(step, _)| step != StepKind::Read);
        if !keep {
            result.notes.push(format!("{} not run: {why}", c.name()));
        }
        keep
    });
}

/// Removes the checks whose needs `unmet` says this machine cannot give, each declared one with
/// a note (the invariants every scenario gets are left out silently: the coverage table says
/// where they apply).
fn drop_checks(
    sc: &mut Scenario,
    result: &mut ScenarioResult,
    why: &str,
    unmet: impl Fn(&crate::check::Needs) -> bool,
) {
    sc.checks.retain(|c| {
        let keep = !unmet(&c.needs());
        if !keep && !c.implied {
            result.notes.push(format!("{} not run: {why}", c.name()));
        }
        keep
    });
}

/// Whether the cgroup at `dir` or one of its ancestors in the same hierarchy shows a
/// memory.numa_stat (the root always does where the kernel has it).
fn numa_stat_exists(dir: &Path) -> bool {
    dir.ancestors()
        .take_while(|d| d.join("cgroup.procs").exists())
        .any(|d| d.join("memory.numa_stat").exists())
}

/// Whether a scenario changes vm sysctls: a `[sysctl]` table or a dirty probe.
fn needs_sysctls(sc: &Scenario) -> bool {
    !sc.sysctls.is_empty()
        || sc
            .phases
            .iter()
            .flat_map(|p| &p.steps)
            .any(|s| matches!(s, Step::Probe { .. }))
}

/// A scenario's final status and reason from how it ended and how its cleanup went. A cleanup
/// failure is the machine's; it never hides a failed check or a kernel error, and the reason
/// keeps the original error first.
fn settle(result: &mut ScenarioResult, outcome: Result<(), Stop>, cleanup: Result<()>) {
    let error = match outcome {
        Ok(()) => None,
        // Stopped half way, but the checks found what broke: that is the verdict, the stop its
        // circumstance.
        Err(Stop::Timeout(msg) | Stop::Stalled(msg)) if result.status == Status::Fail => {
            result.reason = format!("{}; {msg}", result.reason);
            None
        }
        // The online check's failure is in the checks; the stop says when and where.
        Err(Stop::Failing(msg)) if result.status == Status::Fail => {
            result
                .notes
                .push(format!("{msg}; --keep-going runs it to the end"));
            None
        }
        Err(Stop::Timeout(msg) | Stop::Stalled(msg) | Stop::Failing(msg)) => {
            Some(Error::Kernel(msg))
        }
        Err(Stop::Interrupted) => Some(Error::Interrupted),
        Err(Stop::Failed(e)) => Some(e),
    };
    if let Some(e) = error {
        result.status = Status::Error;
        result.reason = e.to_string();
        result.error = Some(e);
    }
    if let Err(e) = cleanup {
        result.reason = if result.reason.is_empty() {
            format!("{e:#}")
        } else {
            format!("{}; {e:#}", result.reason)
        };
        if matches!(result.status, Status::Pass | Status::Skip) {
            result.status = Status::Error;
            result.error = Some(Error::Environment(result.reason.clone()));
        }
    }
}

/// Sets up the groups and the sampler, runs the phases, evaluates the checks.
fn execute(
    ctx: &Context,
    sc: &mut Scenario,
    guard: &mut Guard,
    result: &mut ScenarioResult,
) -> Result<(), Stop> {
    let deadline = Instant::now() + ctx.timeout.unwrap_or(sc.timeout);
    let set = set_up(ctx, sc, guard, result)?;
    let sc: &Scenario = sc;
    let online = (!ctx.keep_going)
        .then(|| Online::new(&sc.checks))
        .flatten()
        .map(|o| (o, set.base.clone()));
    let t0 = Instant::now();
    let sampler = Sampler::start(set.columns, set.sources, sc.sample.interval, t0)?;
    let mut run = Run {
        ctx,
        sc,
        sampler,
        t0,
        deadline,
        aux: &set.aux,
        groups: &set.groups,
        scratch: &set.scratch,
        phases: Vec::new(),
        steps: Vec::new(),
        moves: Vec::new(),
        stopped: None,
        root: &set.root,
        notes: Vec::new(),
        online,
        phase_start: 0.0,
        round_no: 0,
        base: set.base.clone(),
    };
    let watcher = super::notify::Watcher::start(&set.groups, &sc.cgroups, t0);
    // A timeout or a stall stops the phases, not the judgement: the checks are evaluated on the
    // record so far, so the verdict names what broke rather than only how long it took.
    let ran = run.phases(guard);
    let stopped = why_stopped(ctx, sc, &run.sampler, ran)?;
    let base = Record {
        notices: watcher.map(super::notify::Watcher::stop),
        ..set.base
    };
    tear_down(sc, &set.plan, base, run, &stopped, result)?;
    stopped.map_or(Ok(()), Err)
}

/// What setting a scenario up made: its groups (the top one, the declared ones, the helpers'),
/// its scratch directory, the sampler's plan, columns and sources, and what the record holds
/// besides the samples, phases, steps and moves.
struct Setup {
    root: Cgroup,
    groups: Vec<(String, Cgroup)>,
    aux: Cgroup,
    scratch: PathBuf,
    plan: SamplePlan,
    columns: Vec<Column>,
    sources: Vec<Source>,
    base: Record,
}

/// Sets a scenario up: its groups, its vm sysctls, its scratch directory (each in the guard as
/// soon as it exists) and the sampler's sources.
fn set_up(
    ctx: &Context,
    sc: &mut Scenario,
    guard: &mut Guard,
    result: &mut ScenarioResult,
) -> Result<Setup, Stop> {
    // Groups: <parent>/memcgtest-<pid>-<scenario>/{<declared groups>, aux}.
    let root = ctx
        .parent
        .create_child(&cleanup::marked(&sc.name))
        .map_err(anyhow::Error::from)?;
    guard.root = Some(root.clone());
    let (groups, mut charge_moving) = create_groups(sc, &root)?;
    // A scenario that turns charge moving on with a set step needs to know whether it can.
    let sets_moving = (sc.phases.iter().flat_map(|p| &p.steps)).any(|s| {
        matches!(s, crate::scenario::Step::Set { file, .. } if file == "memory.move_charge_at_immigrate")
    });
    if charge_moving.is_none() && sets_moving {
        let probe = crate::sys::env::probe_charge_moving(&root);
        charge_moving = (probe != "available").then_some(probe);
    }
    // Helpers (sync, antagonists) run in a group of their own, outside the measured ones.
    let aux = root
        .create_child(crate::scenario::HELPER_GROUP)
        .map_err(anyhow::Error::from)?;

    for (k, v) in &sc.sysctls {
        // A THP knob newer than the kernel: what it turns off is not there either.
        if k.starts_with("thp.") && !sysctl::exists(Path::new(sysctl::PROC_SYS), k) {
            result.notes.push(format!(
                "[sysctl] {k} = {v} left out: this kernel has no such knob (it is newer than the kernel)"
            ));
            continue;
        }
        guard.sysctls.set(k, v)?;
    }
    // The dirty limits the scenario's writeback domains follow (cgroup v2 gives each memcg one).
    let dirty = (root.version == Version::V2)
        .then(crate::sys::proc::dirty_limits)
        .flatten();

    let scratch = scratch_base(ctx, sc, result).join(cleanup::marked(&sc.name));
    std::fs::create_dir(&scratch).with_context(|| format!("mkdir {}", scratch.display()))?;
    guard.scratch = Some(scratch.clone());

    // Every counter the kernel shows, from the first group's files (all groups show the same).
    let present = match groups.first() {
        Some((_, cg)) => cg.counters_present().map_err(anyhow::Error::from)?,
        None => Vec::new(),
    };
    // A check of a counter this kernel does not show (swpout_zero before 6.12, say) is left
    // out with a note, as a check of a file the kernel lacks is.
    if !present.is_empty() {
        let why = "this kernel's files do not show a counter it needs";
        drop_checks(sc, result, why, |n| {
            n.counters.iter().any(|c| !present.contains(c))
        });
    }
    let plan = SamplePlan::new(sc, root.version, &present);
    // The top group first (a parent read before its children: see oracle_sources), the helpers'
    // group, then the declared ones: the top group's hierarchy check sums them.
    let sampled: Vec<(String, Cgroup)> = [
        (crate::model::TOP_GROUP.to_string(), root.clone()),
        (crate::model::HELPER_GROUP.to_string(), aux.clone()),
    ]
    .into_iter()
    .chain(groups.iter().cloned())
    .collect();
    let (columns, sources) = sampler_sources(ctx, &plan, &root, &sampled, &scratch, result)?;
    // What the record holds besides the samples, phases, steps and moves.
    let base = Record {
        series: Series::default(),
        phases: Vec::new(),
        steps: Vec::new(),
        machine: ctx.machine,
        moves: Vec::new(),
        charge_moving,
        cgroups: sc.cgroups.clone(),
        stopped: None,
        dirty,
        version: ctx.parent.version,
        notices: None,
        repeated: None,
    };
    Ok(Setup {
        root,
        groups,
        aux,
        scratch,
        plan,
        columns,
        sources,
        base,
    })
}

/// How the phases ended, as the reason the scenario stops after its checks (None: they ran to
/// their end). A timeout says which group was above its memory.high, a stall and a timeout the
/// last sample; a worker the kernel killed stops the scenario at once (an error), naming the
/// OOM kills the samples show.
fn why_stopped(
    ctx: &Context,
    sc: &Scenario,
    sampler: &Sampler,
    ran: Result<(), Stop>,
) -> Result<Option<Stop>, Stop> {
    let timeout_s = ctx.timeout.unwrap_or(sc.timeout).as_secs_f64();
    Ok(match ran {
        Ok(()) => None,
        Err(Stop::Timeout(what)) => {
            let highs: Vec<(&str, u64)> = (sc.cgroups.iter())
                .filter_map(|c| Some((c.name.as_str(), c.high?)))
                .collect();
            let why = match sampler.snapshot().over_high(&highs) {
                Some(over) => over,
                None => "the kernel may be throttling writers forever".to_string(),
            };
            Some(Stop::Timeout(format!(
                "timeout after {timeout_s:.0} s in {what}; {why}; last sample: {}",
                sampler.last_row()
            )))
        }
        Err(Stop::Stalled(what)) => Some(Stop::Stalled(format!(
            "stalled: {what}; last sample: {}",
            sampler.last_row()
        ))),
        Err(Stop::Failing(what)) => Some(Stop::Failing(what)),
        // A task that died (SIGKILL) may be the OOM killer's: say so where it acted.
        Err(Stop::Failed(Error::Kernel(msg))) => {
            sampler.wait_fresh(1);
            return Err(Stop::Failed(Error::Kernel(
                match sampler.snapshot().oom_kills() {
                    Some(oom) => format!("{msg}; {oom}"),
                    None => msg,
                },
            )));
        }
        Err(other) => return Err(other),
    })
}

/// After the phases (`stopped`: why they stopped, if they did): the sampler stopped, the run's
/// notes in the result, and the checks judged on the record.
fn tear_down(
    sc: &Scenario,
    plan: &SamplePlan,
    base: Record,
    run: Run,
    stopped: &Option<Stop>,
    result: &mut ScenarioResult,
) -> Result<(), Stop> {
    let Run {
        sampler,
        phases,
        steps,
        moves,
        stopped: stopped_step,
        notes,
        online,
        groups,
        ..
    } = run;
    let repeated = Some(super::keys::repeated_keys(groups));
    result.notes.extend(notes);
    let cut = match stopped {
        Some(Stop::Failing(_)) => online.and_then(|(o, _)| o.into_cut()),
        _ => None,
    };
    let series: Series = sampler
        .stop()
        .map_err(|e| Stop::Failed(Error::Kernel(format!("{e:#}"))))?;
    conclude(
        sc,
        plan,
        result,
        Record {
            series,
            phases,
            steps,
            moves,
            stopped: stopped_step,
            repeated,
            ..base
        },
        cut,
    );
    if stopped.is_some() {
        // A run cut short measured a partial phase: no sample for `compare` to pool.
        result.measurements.clear();
    }
    Ok(())
}

/// The scenario's declared groups below its top group, with their limits and v1 charge moving;
/// and why charge moving is unavailable, when a group asked for it and the kernel refused.
#[allow(clippy::type_complexity)]
fn create_groups(
    sc: &Scenario,
    root: &Cgroup,
) -> Result<(Vec<(String, Cgroup)>, Option<String>), Stop> {
    let mut groups: Vec<(String, Cgroup)> = Vec::new();
    let mut charge_moving: Option<String> = None;
    for spec in &sc.cgroups {
        let (parent, leaf) = match spec.name.rsplit_once('/') {
            Some((p, l)) => (groups.iter().find(|(n, _)| n == p).unwrap().1.clone(), l),
            None => (root.clone(), spec.name.as_str()),
        };
        let cg = parent.create_child(leaf).map_err(anyhow::Error::from)?;
        if spec.limit.is_some() {
            cg.set_limit(spec.limit).map_err(anyhow::Error::from)?;
        }
        for (file, v) in [
            ("memory.high", spec.high),
            ("memory.low", spec.low),
            ("memory.min", spec.min),
        ] {
            if let Some(b) = v {
                cg.set_v2(file, b).map_err(anyhow::Error::from)?;
            }
        }
        if !spec.swap {
            forbid_swap(&cg, spec)?;
        }
        set_swap_limits(&cg, spec)?;
        if spec.oom_group {
            cg.write("memory.oom.group", "1").map_err(|e| {
                Stop::Failed(Error::Environment(format!(
                    "{e} (memory.oom.group needs Linux 4.19)"
                )))
            })?;
        }
        if let Some(m) = spec.move_charge {
            match cg.write("memory.move_charge_at_immigrate", &m.to_string()) {
                Ok(()) => {}
                Err(e) if m > 0 && e.errno() == Some(libc::EINVAL) => {
                    charge_moving = Some(format!(
                        "writing {m} to {} gives EINVAL (charge moving was deprecated in 6.2 and removed in 6.13)",
                        cg.file("memory.move_charge_at_immigrate").display()
                    ));
                }
                Err(e) => return Err(Stop::Failed(Error::Environment(e.to_string()))),
            }
        }
        groups.push((spec.name.clone(), cg));
    }
    Ok((groups, charge_moving))
}

/// Keeps a group's memory out of swap (`swap = false`): v2 memory.swap.max 0, v1
/// memory.memsw.limit_in_bytes equal to the memory limit. Without those files (no swap
/// accounting) that is fine only when the machine has no swap at all.
fn forbid_swap(cg: &Cgroup, spec: &crate::model::CgroupSpec) -> Result<(), Stop> {
    let (file, value) = match cg.version {
        Version::V2 => ("memory.swap.max", "0".to_string()),
        Version::V1 => (
            "memory.memsw.limit_in_bytes",
            spec.limit
                .expect("validated: swap = false has a limit")
                .to_string(),
        ),
    };
    if !cg.file(file).exists() && !crate::sys::proc::swap_enabled() {
        return Ok(());
    }
    cg.write(file, &value).map_err(|e| {
        Stop::Failed(Error::Environment(format!(
            "{e} (writing {value}: group {} must not swap, and this machine has swap)",
            spec.name
        )))
    })
}

/// A group's swap limits: v2 memory.swap.max and memory.swap.high, v1
/// memory.memsw.limit_in_bytes = limit + swap_max. Without the files (no swap accounting) the
/// limit cannot be tested: the machine's, 125.
fn set_swap_limits(cg: &Cgroup, spec: &crate::model::CgroupSpec) -> Result<(), Stop> {
    let mut writes = Vec::new();
    match cg.version {
        Version::V2 => {
            writes.extend(spec.swap_max.map(|m| ("memory.swap.max", m)));
            writes.extend(spec.swap_high.map(|h| ("memory.swap.high", h)));
        }
        Version::V1 => {
            if let (Some(m), Some(l)) = (spec.swap_max, spec.limit) {
                writes.push(("memory.memsw.limit_in_bytes", l + m));
            }
        }
    }
    for (file, value) in writes {
        cg.write(file, &value.to_string()).map_err(|e| {
            Stop::Failed(Error::Environment(format!(
                "{e} (group {} limits its swap: this kernel needs swap accounting)",
                spec.name
            )))
        })?;
    }
    Ok(())
}

/// The scenario's result from its record: notes on moves, per-phase results, the checks and the
/// status they give.
fn conclude(
    sc: &Scenario,
    plan: &SamplePlan,
    result: &mut ScenarioResult,
    record: Record,
    cut: Option<Cut>,
) {
    result.samples = record.series.len();
    for m in &record.moves {
        result.notes.push(move_note(m));
    }
    if let Some(why) = &record.charge_moving {
        result
            .notes
            .push(format!("charge moving unavailable: {why}"));
    }
    for (i, p) in record.phases.iter().enumerate() {
        result.phases.push(PhaseResult {
            measure: record.phase_measure(i),
            antagonists: p.antagonists.clone(),
            vmstat_delta: plan
                .vmstat
                .iter()
                .filter(|k| !k.starts_with("nr_"))
                .filter_map(|k| Some((k.clone(), p.vmstat_end.get(k)? - p.vmstat_start.get(k)?)))
                .collect(),
            start: p.start,
            end: p.end,
        });
    }
    result.checks = sc.checks.iter().map(|c| c.judge(&record)).collect();
    if let Some(cut) = &cut {
        online::cut_short(&mut result.checks, cut);
    }
    let release = crate::sys::proc::kernel_release();
    result.fixed = mark_known(
        &mut result.checks,
        &sc.known,
        &release,
        result.cgroup_version,
    );
    (result.status, result.reason) = verdict(&result.checks);
    // A skipped scenario did not reach what its known issues are about (a collapse the kernel
    // declined breaks no count): they are not shown as fixed.
    if result.status == Status::Skip {
        result.fixed.clear();
    }
    for k in &result.fixed {
        result.notes.push(format!(
            "known issue no longer fails on this kernel (fixed?): {}: {}",
            k.check,
            k.describe()
        ));
    }
    result.moves = record.moves.clone();
    result.measurements = record.measurements();
    result.moved = record.moved();
    result.record = Some(record);
}

/// The result's note on a move: what it held, where from and to, how long it took.
fn move_note(m: &MoveRecord) -> String {
    format!(
        "moved task {} ({} held) from {} to {} in {:.3} s wall, {:.3} s system{}",
        m.task,
        crate::model::units::human_bytes(m.bytes as i64),
        m.from,
        m.to,
        m.wall_seconds,
        m.sys_seconds,
        if m.bytes > 0 {
            format!(": {:.0} MiB/s", m.mib_per_s())
        } else {
            String::new()
        }
    )
}

/// The disk a scenario's files go on (see `scratch_base`, which also says so).
fn disk_of<'a>(ctx: &'a Context, sc: &Scenario) -> &'a Path {
    match (&sc.scratch, &ctx.slow_scratch) {
        (ScratchDisk::Slow, Some(slow)) => slow,
        _ => &ctx.scratch,
    }
}

/// The directory a scenario's files go under: the slow disk for `scratch = "slow"` when the run
/// has one, else the scratch directory (a note says which, and why it matters).
fn scratch_base<'a>(ctx: &'a Context, sc: &Scenario, result: &mut ScenarioResult) -> &'a Path {
    if sc.scratch != ScratchDisk::Slow {
        return &ctx.scratch;
    }
    match &ctx.slow_scratch {
        Some(slow) => {
            result.notes.push(format!(
                "files on the slow disk {} (pages stay under writeback for seconds)",
                slow.display()
            ));
            slow
        }
        None => {
            result.notes.push(format!(
                "no slow disk (--slow-scratch): files on {}, where pages stay under writeback \
                 only as long as this disk takes to write them",
                ctx.scratch.display()
            ));
            &ctx.scratch
        }
    }
}

/// Marks each failed check a known issue covers (one expected on `release` under `version`) and
/// returns the issues expected here whose checks all passed (fixed?). An issue whose checks were
/// not exercised is neither, nor is one borrowed from another scenario (its case may not have
/// met the issue's conditions).
pub fn mark_known(
    checks: &mut [CheckResult],
    known: &[KnownIssue],
    release: &str,
    version: Option<crate::model::Version>,
) -> Vec<KnownIssue> {
    let here: Vec<&KnownIssue> = known
        .iter()
        .filter(|k| k.applies(release, version))
        .collect();
    for c in checks.iter_mut().filter(|c| c.outcome == Outcome::Fail) {
        c.known = here
            .iter()
            .find(|k| k.covers_failure(&c.name, &c.actual, &c.detail))
            .map(|k| (*k).clone());
    }
    here.into_iter()
        .filter(|k| k.borrowed_from.is_none())
        .filter(|k| {
            let mine: Vec<&CheckResult> = checks.iter().filter(|c| k.covers(&c.name)).collect();
            !mine.is_empty() && mine.iter().all(|c| c.outcome == Outcome::Pass)
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests;
