//! The sampler's sources, built from the scenario's `SamplePlan`: what each pass reads, in order,
//! and the column each value goes to. The references of the accounting checks first, /proc/vmstat's
//! node counters, every group's files (with its tasks and memory.numa_stat around them where the
//! plan asks), /proc/vmstat again, the per-file truth again.

use std::path::Path;

use anyhow::anyhow;

use super::context::{Context, Stop, read_vmstat};
use super::sample::Source;
use super::sample::pagecache::{self, FileTruth};
use crate::model::counter::{self, DIRTY_WRITEBACK, Loc, stat_key};
use crate::model::{Column, ScenarioResult};
use crate::scenario::SamplePlan;
use crate::sys::cgroup::{Cgroup, file_name, hierarchy_root};
use crate::sys::proc;

/// The columns and sources of a sampler pass for `plan`, in read order. Notes say what this
/// machine cannot give (a /proc/vmstat key it lacks, no per-file truth).
pub(super) fn sampler_sources(
    ctx: &Context,
    plan: &SamplePlan,
    root: &Cgroup,
    groups: &[(String, Cgroup)],
    scratch: &Path,
    result: &mut ScenarioResult,
) -> Result<(Vec<Column>, Vec<Source>), Stop> {
    let mut columns = Vec::new();
    let mut sources = Vec::new();
    let oracle = oracle_sources(ctx, plan, root, groups, scratch, &mut columns, result)?;
    sources.extend(oracle.before);
    sources.extend(oracle.machine);
    // /proc/vmstat's node counters are read before and after the cgroup files, so the global value
    // at the moment a cgroup file was read lies between the two.
    let vm_now = read_vmstat()?;
    let vmstat_path = Path::new(proc::PROC).join("vmstat");
    let mut pre_keys = Vec::new();
    let pre = |k: &String| k.starts_with("nr_") || plan.vmstat_pre.contains(k);
    for k in (plan.vmstat.iter()).filter(|k| pre(k) && vm_now.get(k).is_some()) {
        pre_keys.push((k.clone(), columns.len()));
        columns.push(Column::vmstat_pre(k));
    }
    if !pre_keys.is_empty() {
        sources.push(Source::keyed(&vmstat_path, pre_keys)?);
    }
    for (name, cg) in groups {
        let flush = ctx.machine.flushed_before_read(cg.version, name);
        sources.extend(group_sources(plan, name, cg, groups, flush, &mut columns)?);
    }
    let mut vm_keys = Vec::new();
    for k in &plan.vmstat {
        if vm_now.get(k).is_some() {
            vm_keys.push((k.clone(), columns.len()));
            columns.push(Column::vmstat(k));
        } else {
            result.notes.push(format!(
                "/proc/vmstat has no {k} on this kernel; not sampled"
            ));
        }
    }
    if !vm_keys.is_empty() {
        sources.push(Source::keyed(&vmstat_path, vm_keys)?);
    }
    sources.extend(oracle.after);
    Ok((columns, sources))
}

/// One group's sources, in read order: its tasks (before), its numa_stat (before), its memory.stat
/// and own files, its numa_stat (after), its tasks (after).
fn group_sources(
    plan: &SamplePlan,
    name: &str,
    cg: &Cgroup,
    groups: &[(String, Cgroup)],
    flush: bool,
    columns: &mut Vec<Column>,
) -> Result<Vec<Source>, Stop> {
    let tasks = plan.tasks.iter().any(|g| g == name);
    let numa = plan.numa.iter().any(|g| g == name);
    let mut sources = Vec::new();
    if tasks {
        sources.push(tasks_source(name, groups, true, columns)?);
    }
    // Keys of one file are read together (memory.stat, memory.events, ...): one read a file.
    let mut keyed: Vec<(&str, Vec<(String, usize)>)> = vec![("memory.stat", Vec::new())];
    let mut single = Vec::new();
    let (mut usage, mut usage_first) = (None, None);
    for c in &plan.counters {
        let col = columns.len();
        columns.push(Column::group(name, c));
        let (file, key) = match stat_key(c, cg.version).map_err(|e| anyhow!(e))? {
            Some(key) => ("memory.stat", key),
            None => match counter::file(cg.version, c) {
                Some(Loc { file, key: Some(k) }) => (file, k.to_string()),
                Some(Loc { file, key: None }) => {
                    let src = Source::single(&cg.file(file), col)?;
                    if c == counter::USAGE {
                        usage = Some(file);
                        usage_first = Some(src);
                    } else {
                        single.push(src);
                    }
                    continue;
                }
                None => {
                    return Err(anyhow!("{c}: no file on cgroup {}", cg.version.as_str()).into());
                }
            },
        };
        match keyed.iter_mut().find(|(f, _)| *f == file) {
            Some((_, keys)) => keys.push((key, col)),
            None => keyed.push((file, vec![(key, col)])),
        }
    }
    // The files of their own first, the usage first of all, then memory.stat with
    // memory.numa_stat around it, then the usage again: every other file of the group was read
    // between the two usage reads (the checks rely on that order).
    if let Some(first) = usage_first {
        sources.push(first);
    }
    sources.extend(single);
    let stat = keyed.remove(0).1;
    for (file, keys) in keyed {
        sources.push(Source::keyed(&cg.file(file), keys)?);
    }
    if numa {
        sources.push(numa_source(plan, name, cg, true, columns)?);
    }
    // Before 6.16 the v2 top group's cpu.stat flushes the statistics of its whole subtree
    // (`Machine::flushed_before_read`: hierarchy((top)) then allows it no staleness); read for
    // that, nothing kept.
    if flush {
        sources.push(Source::keyed(&cg.file("cpu.stat"), Vec::new())?);
    }
    sources.push(Source::keyed(&cg.file("memory.stat"), stat)?);
    if numa {
        sources.push(numa_source(plan, name, cg, false, columns)?);
    }
    if let Some(file) = usage {
        sources.push(Source::single(&cg.file(file), columns.len())?);
        columns.push(Column::again(name, counter::USAGE));
    }
    if tasks {
        sources.push(tasks_source(name, groups, false, columns)?);
    }
    Ok(sources)
}

/// A group's memory.numa_stat: each sampled counter it holds, summed over the nodes. Read just
/// before (`pre`) and after the group's memory.stat, so what memory.stat showed lies between the
/// two reads while the counter moves one way.
fn numa_source(
    plan: &SamplePlan,
    name: &str,
    cg: &Cgroup,
    pre: bool,
    columns: &mut Vec<Column>,
) -> Result<Source, Stop> {
    let mut keys = Vec::new();
    for (c, key) in plan.numa_counters(cg.version) {
        keys.push((key.to_string(), columns.len()));
        columns.push(Column::numa(name, c, pre));
    }
    // v1 counts pages there.
    let unit = match cg.version {
        crate::sys::cgroup::Version::V1 => crate::sys::proc::page_size() as i64,
        crate::sys::cgroup::Version::V2 => 1,
    };
    Ok(Source::node_sums(&cg.file("memory.numa_stat"), keys, unit)?)
}

/// A group's tasks' own anonymous memory (see `sample::tasks`): read just before (`pre`) and after
/// the group's files, so what they showed lies between the two reads while the memory moves one
/// way.
fn tasks_source(
    name: &str,
    groups: &[(String, Cgroup)],
    pre: bool,
    columns: &mut Vec<Column>,
) -> Result<Source, Stop> {
    use crate::exec::sample::tasks::{COUNTERS, TaskMemory};
    let first = columns.len();
    for c in COUNTERS {
        columns.push(Column::tasks(name, c, pre));
    }
    // The group and every group below it: their tasks' memory is in its hierarchical counters.
    let below = format!("{name}/");
    let procs: Vec<_> = groups
        .iter()
        .filter(|(g, _)| g == name || g.starts_with(&below))
        .map(|(_, cg)| cg.file(file_name(cg.version, "procs")))
        .collect();
    let t = TaskMemory::new(procs, first, Path::new(proc::PROC))
        .map_err(|e| anyhow!("open the cgroup.procs of {name} and below: {e}"))?;
    Ok(Source::Tasks(t))
}

/// What the sampler reads for the accounting checks' references; each part may be empty.
#[derive(Default)]
struct OracleSources {
    /// Per-file truth read before the cgroup files, and after them.
    before: Option<Source>,
    after: Option<Source>,
    /// The memcg root's and the run's own totals (fallback without per-file truth).
    machine: Vec<Source>,
}

/// The references the accounting checks need: the per-file truth, read before and after the
/// cgroup files (so the truth at the moment of the cgroup read lies in that bracket), and, for
/// groups without it, the run's top group and the memcg root, read before the test groups (a
/// parent read after its children can be stale on 6.18 v1, see docs/findings.md).
fn oracle_sources(
    ctx: &Context,
    plan: &SamplePlan,
    root: &Cgroup,
    groups: &[(String, Cgroup)],
    scratch: &Path,
    columns: &mut Vec<Column>,
    result: &mut ScenarioResult,
) -> Result<OracleSources, Stop> {
    let accounting = &plan.reference;
    if accounting.is_empty() {
        return Ok(OracleSources::default());
    }
    let files = &plan.files;
    let mut truth_groups: Vec<&str> = Vec::new();
    let mut truth = None;
    match pagecache::support() {
        Ok(()) => {
            for (g, why) in &files.unavailable {
                if accounting.contains(g) {
                    result.notes.push(format!(
                        "no per-file truth for {g}: {why}; its accounting checks compare with machine-wide /proc/vmstat"
                    ));
                }
            }
            for (name, _) in groups {
                if files.files.iter().any(|(_, gs)| gs.contains(name)) {
                    truth_groups.push(name);
                }
            }
            let last = std::sync::Arc::default();
            let mut make = |pre: bool| {
                let first = columns.len();
                for g in &truth_groups {
                    for c in pagecache::COUNTERS {
                        columns.push(Column::files(g, c, pre));
                    }
                }
                let held = (!pre).then(|| {
                    truth_groups
                        .iter()
                        .map(|g| {
                            columns.push(Column::files(g, pagecache::HELD, false));
                            columns.len() - 1
                        })
                        .collect()
                });
                let index = |g: &str| truth_groups.iter().position(|x| *x == g).unwrap();
                Source::Truth(FileTruth {
                    files: files
                        .files
                        .iter()
                        .map(|(f, gs)| (scratch.join(f), gs.iter().map(|g| index(g)).collect()))
                        .collect(),
                    groups: (0..truth_groups.len()).map(|i| first + 3 * i).collect(),
                    page_size: ctx.machine.page_size as i64,
                    last: std::sync::Arc::clone(&last),
                    held,
                })
            };
            if !truth_groups.is_empty() {
                truth = Some((make(true), make(false)));
            }
        }
        Err(why) => result.notes.push(format!(
            "no per-file truth: {why}; accounting checks compare with machine-wide /proc/vmstat, and a window in which other writers moved it beyond the tolerance is inconclusive"
        )),
    }
    let mut machine = Vec::new();
    if accounting
        .iter()
        .any(|g| !truth_groups.contains(&g.as_str()))
    {
        let mut views = vec![("run", root.clone())];
        let top = hierarchy_root(&root.path);
        if top.join("memory.stat").exists() {
            views.insert(0, ("root", Cgroup::new(top, root.version)));
        }
        for (which, cg) in views {
            let mut keyed = Vec::new();
            for c in DIRTY_WRITEBACK {
                if let Some(key) = stat_key(c, cg.version).map_err(|e| anyhow!(e))? {
                    keyed.push((key, columns.len()));
                    columns.push(Column::machine(which, c));
                }
            }
            machine.push(Source::keyed(&cg.file("memory.stat"), keyed)?);
        }
    }
    let (before, after) = truth.unzip();
    Ok(OracleSources {
        before,
        after,
        machine,
    })
}
