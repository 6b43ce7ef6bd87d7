//! The steps of held tasks: hold starts one, move, grow, advise, wait and release work on it
//! (see `Holders`).

use std::time::Instant;

use super::StepEnv;
use crate::exec::context::Stop;
use crate::exec::workload::{HoldExtras, Holder, Job, JobResult};
use crate::model::MoveRecord;
use crate::model::counter::USAGE;
use crate::model::error::Error;
use crate::model::placement::{Placement, region_lines};
use crate::model::step::{Advice, Mover, Region, Target};
use crate::scenario::Hold;
use crate::sys::cgroup::{Cgroup, file_name, stat};

pub(super) fn hold(env: &mut StepEnv, hold: &Hold) -> Result<JobResult, Stop> {
    let job = Job::Hold {
        anon: hold.anon,
        shmem: hold.shmem,
        file: hold.file.as_ref().map(|f| env.path(f)),
        file_size: hold.size,
        dirty: hold.dirty,
        redirty: hold.redirty,
        write: hold.write,
        extras: HoldExtras {
            huge: hold.huge,
            mlock: hold.mlock,
            zero: hold.zero,
            lazyfree: hold.lazyfree,
            shmem_huge: hold
                .shmem_huge
                .then(|| env.path(&format!("{}.tmpfs", hold.task))),
            threads: hold.threads,
            files: (hold.files > 0)
                .then(|| (env.path(&format!("{}.files", hold.task)), hold.files)),
            fds: hold.fds,
            readonly: hold.readonly,
            nohugepage: hold.nohugepage,
            sock: hold.sock,
            sparse: hold.sparse,
            pipes: hold.pipes,
            pipe_size: hold.pipe_size,
            unkillable: hold.unkillable,
        },
    };
    let (h, secs, made, note) =
        Holder::start(&job, env.group(&hold.cgroup), &env.limits()).map_err(|e| env.stop(e))?;
    if !note.is_empty() {
        env.notes
            .push(format!("phase {}, task {}: {note}", env.phase, hold.task));
    }
    env.holders
        .insert(hold.task.clone(), (h, hold.cgroup.clone(), hold.bytes()));
    Ok(JobResult {
        bytes: hold.bytes(),
        seconds: secs,
        made,
        ..Default::default()
    })
}

pub(super) fn move_task(env: &mut StepEnv, task: &str, to: &str) -> Result<JobResult, Stop> {
    let to_cg = env.group(to).clone();
    let from_cg = env.group(&env.holders[task].1).clone();
    let (src0, dst0) = (move_snapshot(&from_cg), move_snapshot(&to_cg));
    let (h, from, bytes) = env.holder(task);
    let sys0 = thread_sys_seconds();
    let t = Instant::now();
    // We are root and the group is ours: a refused move is the kernel's doing.
    to_cg.add_process(h.pid).map_err(|e| {
        Stop::Failed(Error::Kernel(format!(
            "move task {task} (pid {}): {e}",
            h.pid
        )))
    })?;
    let wall = t.elapsed().as_secs_f64();
    let sys_seconds = thread_sys_seconds() - sys0;
    let (src1, dst1) = (move_snapshot(&from_cg), move_snapshot(&to_cg));
    let m = MoveRecord {
        task: task.to_string(),
        from: from.clone(),
        to: to.to_string(),
        bytes: *bytes,
        wall_seconds: wall,
        sys_seconds,
        carried: carried(&src0, &src1, &dst0, &dst1),
        source: src0,
    };
    *from = to.to_string();
    let bytes = *bytes;
    env.measured(&format!(
        "moved {} in {:.3} s ({:.0} MiB/s, {:.3} s system)",
        crate::model::units::human_bytes(m.bytes as i64),
        m.wall_seconds,
        m.mib_per_s(),
        m.sys_seconds
    ));
    env.moves.push(m);
    Ok(JobResult {
        bytes,
        seconds: wall,
        ..Default::default()
    })
}

/// Moves one thread of held task `task` other than its leader to `to` (v1: its tid into
/// `tasks`). The process stays where it is: the record keeps it in its group.
pub(super) fn move_thread(env: &mut StepEnv, task: &str, to: &str) -> Result<JobResult, Stop> {
    let to_cg = env.group(to).clone();
    let pid = env.holder(task).0.pid;
    let tid = std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .find(|&t| t != pid)
        .ok_or_else(|| {
            Stop::Failed(Error::Environment(format!(
                "task {task} (pid {pid}) has no thread besides its leader: give its hold threads"
            )))
        })?;
    let t = Instant::now();
    to_cg.write("tasks", &tid.to_string()).map_err(|e| {
        Stop::Failed(Error::Kernel(format!(
            "move thread {tid} of task {task}: {e}"
        )))
    })?;
    Ok(JobResult {
        seconds: t.elapsed().as_secs_f64(),
        ..Default::default()
    })
}

/// A group's MOVE_COUNTERS now (bytes; a counter this kernel lacks reads 0).
fn move_snapshot(cg: &Cgroup) -> Vec<(String, i64)> {
    let stat = cg.stat().ok();
    MoveRecord::COUNTERS
        .iter()
        .map(|&c| {
            let v = match stat::stat_key(c, cg.version) {
                Ok(Some(key)) => stat.as_ref().and_then(|s| s.get(&key)),
                _ => cg
                    .read(file_name(cg.version, USAGE))
                    .ok()
                    .and_then(|t| t.trim().parse().ok()),
            };
            (c.to_string(), v.unwrap_or(0))
        })
        .collect()
}

/// Per counter, the least of what left the source and what arrived in the destination (0 when
/// either did not move that way): what the move itself carried, not what the task did meanwhile.
pub(super) fn carried(
    src0: &[(String, i64)],
    src1: &[(String, i64)],
    dst0: &[(String, i64)],
    dst1: &[(String, i64)],
) -> Vec<(String, i64)> {
    let at = |v: &[(String, i64)], c: &str| v.iter().find(|(k, _)| k == c).map_or(0, |x| x.1);
    src0.iter()
        .map(|(c, _)| {
            let left = at(src0, c) - at(src1, c);
            let arrived = at(dst1, c) - at(dst0, c);
            (c.clone(), left.min(arrived).max(0))
        })
        .collect()
}

pub(super) fn grow(env: &mut StepEnv, task: &str, anon: u64) -> Result<JobResult, Stop> {
    let limits = env.limits();
    let secs = env.holder(task).0.command(&format!("grow {anon}"), &limits);
    let secs = secs.map_err(|e| env.stop(e))?;
    // The bytes the task holds, for the moves after this.
    env.holder(task).2 += anon;
    Ok(JobResult {
        bytes: anon,
        seconds: secs,
        ..Default::default()
    })
}

pub(super) fn advise(
    env: &mut StepEnv,
    task: &str,
    advice: Advice,
    region: Region,
) -> Result<JobResult, Stop> {
    let limits = env.limits();
    let r = env.holder(task).0.advise(advice, region, &limits);
    let (secs, note) = r.map_err(|e| env.stop(e))?;
    if !note.is_empty() {
        env.notes.push(format!(
            "phase {}, task {task}: {} of its {} did not happen: {note}",
            env.phase,
            advice.name(),
            region.name()
        ));
    }
    Ok(JobResult {
        seconds: secs,
        declined: (!note.is_empty()).then(|| note.clone()),
        ..Default::default()
    })
}

/// `migrate`: the held task moves `region` to `node`; then its group's memory.numa_stat is read
/// between two answers of where the pages are, until the two agree (three tries): what the
/// `placed` check holds the group's per-node counters to.
pub(super) fn migrate(
    env: &mut StepEnv,
    task: &str,
    region: Region,
    (target, by): (Target, Mover),
) -> Result<JobResult, Stop> {
    let limits = env.limits();
    let cg = env.group(&env.holders[task].1).clone();
    let r = env
        .holder(task)
        .0
        .placed(region, Some((target, by)), &limits);
    let (secs, node, mut pages, mut unplaced) = r.map_err(|e| env.stop(e))?;
    let node = node.unwrap_or(0);
    let mut tries = 0;
    let (numa, stable) = loop {
        let numa = numa_lines(&cg, region).map_err(|e| Stop::Failed(Error::Kernel(e)))?;
        let r = env.holder(task).0.placed(region, None, &limits);
        let (_, _, after, left) = r.map_err(|e| env.stop(e))?;
        let stable = (&after, left) == (&pages, unplaced);
        (pages, unplaced, tries) = (after, left, tries + 1);
        if stable || tries == 3 {
            break (numa, stable);
        }
    };
    let placement = Placement {
        task: task.to_string(),
        cgroup: env.holders[task].1.clone(),
        region,
        node,
        pages,
        unplaced,
        numa,
        stable,
    };
    env.measured(&format!(
        "{} of task {task} on nodes {:?} after the move to node {node} ({} on none)",
        region.name(),
        placement.pages,
        placement.unplaced
    ));
    Ok(JobResult {
        seconds: secs,
        placed: Some(placement),
        ..Default::default()
    })
}

/// The memory.numa_stat lines `region`'s pages count in, bytes per node (v1 counts pages).
fn numa_lines(cg: &Cgroup, region: Region) -> Result<Vec<(String, Vec<i64>)>, String> {
    let text = cg
        .read("memory.numa_stat")
        .map_err(|e| format!("read memory.numa_stat: {e}"))?;
    let unit = match cg.version {
        crate::sys::cgroup::Version::V1 => crate::sys::proc::page_size() as i64,
        crate::sys::cgroup::Version::V2 => 1,
    };
    Ok(region_lines(region, cg.version)
        .iter()
        .filter_map(|&k| {
            let v = stat::node_values(&text, k)?;
            Some((k.to_string(), v.iter().map(|x| x * unit).collect()))
        })
        .collect())
}

pub(super) fn wait(env: &mut StepEnv, task: &str) -> Result<JobResult, Stop> {
    let limits = env.limits();
    let (h, _, _) = env.holder(task);
    let secs = h.command("wait", &limits);
    let secs = secs.map_err(|e| env.stop(e))?;
    Ok(JobResult {
        seconds: secs,
        ..Default::default()
    })
}

pub(super) fn release(env: &mut StepEnv, task: &str) -> Result<JobResult, Stop> {
    let (h, _, _) = env.holders.remove(task).expect("validated task");
    h.release(&env.limits()).map_err(|e| env.stop(e))?;
    Ok(Default::default())
}

/// System CPU time of the calling thread so far, seconds.
pub(super) fn thread_sys_seconds() -> f64 {
    crate::sys::proc::cpu_seconds(crate::sys::proc::Who::Thread).1
}
