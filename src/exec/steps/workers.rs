//! The steps of many workers at once in one group: create, read, fault, usemem, and exhaust
//! (bystanders and the task that exhausts the group).

use std::time::{Duration, Instant};

use super::StepEnv;
use crate::exec::context::Stop;
use crate::exec::workload::{self, HoldExtras, Holder, Job, JobResult, Limits, WaitError};
use crate::model::error::Error;
use crate::sys::cgroup::Cgroup;

pub(super) fn create(env: &StepEnv, file: &str, size: u64, count: u32) -> Result<JobResult, Stop> {
    let jobs = (0..count)
        .map(|i| Job::Create {
            path: env.path(&format!("{file}.{i}")),
            size,
        })
        .collect();
    run_parallel(jobs, env.aux, &env.limits()).map_err(|e| env.stop(e))
}

pub(super) fn read(
    env: &StepEnv,
    cgroup: &str,
    file: &str,
    count: u32,
    warm: bool,
) -> Result<JobResult, Stop> {
    let jobs = (0..count)
        .map(|i| Job::Read {
            path: env.path(&format!("{file}.{i}")),
            warm,
        })
        .collect();
    let r = run_parallel(jobs, env.group(cgroup), &env.limits()).map_err(|e| env.stop(e))?;
    env.measured(&format!(
        "{:.1} MB/s",
        r.bytes as f64 / r.seconds.max(1e-9) / 1e6
    ));
    Ok(r)
}

pub(super) fn fault(
    env: &StepEnv,
    cgroup: &str,
    size: u64,
    clients: u32,
    duration: Duration,
) -> Result<JobResult, Stop> {
    let n = clients_or_cpus(clients, env.ctx.machine.cpus);
    let jobs = (0..n)
        .map(|_| Job::Fault {
            size,
            duration_ms: duration.as_millis() as u64,
        })
        .collect();
    let r = run_parallel(jobs, env.group(cgroup), &env.limits()).map_err(|e| env.stop(e))?;
    env.measured(&format!(
        "{:.0} faults/s, {:.0} faults/CPU-s, on {}",
        r.bytes as f64 / r.seconds.max(1e-9),
        r.bytes as f64 / r.cpu_seconds.max(1e-9),
        cpu_list(r.cpus)
    ));
    Ok(r)
}

pub(super) fn usemem(
    env: &StepEnv,
    cgroup: &str,
    size: u64,
    clients: u32,
) -> Result<JobResult, Stop> {
    let n = clients_or_cpus(clients, env.ctx.machine.cpus);
    let jobs = (0..n).map(|_| Job::Usemem { size, small: false }).collect();
    let r = run_parallel(jobs, env.group(cgroup), &env.limits()).map_err(|e| env.stop(e))?;
    env.measured(&format!(
        "{:.1} MB/s",
        r.bytes as f64 / r.seconds.max(1e-9) / 1e6
    ));
    Ok(r)
}

/// exhaust: the bystanders start, then one task touches more anon than the group can hold. The
/// step ends once that task is dead (or done: then the group held it all) and each bystander
/// has died or lived on for a second after it. It counts the group's tasks that died of SIGKILL
/// (the OOM killer's: nothing else here sends it) and the bystanders that lived; those the runner
/// then stops itself. With `within`, a task still touching memory then (throttled above
/// memory.high) is stopped with SIGTERM, which is not counted as a kill.
pub(super) fn exhaust(
    env: &StepEnv,
    cgroup: &str,
    (anon, within, raise): (u64, Option<Duration>, Option<u64>),
    (bystanders, immune, outside): (u32, u32, Option<&str>),
) -> Result<JobResult, Stop> {
    // Workers inherit it; the OOM killer never picks a task at -1000 (OOM_SCORE_ADJ_MIN).
    let adj = std::fs::read_to_string("/proc/self/oom_score_adj").unwrap_or_default();
    if adj.trim() == "-1000" {
        return Err(Stop::Failed(Error::Environment(
            "memcgtest runs with oom_score_adj -1000, which its workers inherit: the OOM killer would never kill them; run it without".into(),
        )));
    }
    let (cg, limits) = (env.group(cgroup), env.limits());
    let mut by = small_tasks(env, cg, bystanders, false)?;
    let mut spared = small_tasks(env, cg, immune, true)?;
    let mut away = match outside {
        Some(g) => small_tasks(env, env.group(g), 1, false)?,
        None => Vec::new(),
    };
    let t = Instant::now();
    let job = Job::Usemem {
        size: anon,
        small: within.is_some(),
    };
    let mut task = workload::spawn(&job, cg)?;
    let mut waited = None;
    let done = match (within, raise) {
        (Some(d), Some(to)) => wait_then_raise(cg, &mut task, &limits, d, to, &mut waited),
        (Some(d), None) => task.wait_or_stop(&limits, d),
        (None, _) => task.wait_or_killed(&limits),
    }
    .map_err(|e| env.stop(e))?;
    let mut r = JobResult {
        seconds: t.elapsed().as_secs_f64(),
        bytes: done.as_ref().map_or(0, |d| d.bytes),
        killed: u32::from(done.is_none()),
        task_killed: done.is_none(),
        waited,
        ..Default::default()
    };
    // A second for the small tasks to die or show they live; waiting is idle by design.
    let killed = reap(env, cgroup, &limits, [&mut by, &mut spared, &mut away])?;
    r.killed += killed[0] + killed[1];
    r.survived = by.len() as u32;
    r.immune = immune;
    r.immune_survived = spared.len() as u32;
    r.outside_killed = outside.map(|_| killed[2]);
    for h in by.into_iter().chain(spared).chain(away) {
        h.release(&limits).map_err(|e| env.stop(e))?;
    }
    Ok(r)
}

/// Waits `within` for the task (without the progress watchdog: a task waiting in the OOM queue
/// makes none); if it still runs, reads whether its group is under OOM (v1 memory.oom_control
/// under_oom), raises the group's limit to `to` and waits for it to finish. `waited`: whether it
/// was found under OOM, when it had to wait.
fn wait_then_raise(
    cg: &Cgroup,
    task: &mut workload::Worker,
    limits: &Limits,
    within: Duration,
    to: u64,
    waited: &mut Option<bool>,
) -> Result<Option<JobResult>, WaitError> {
    // `within` counts from when the group is at its limit: before that no OOM is due, and on a
    // slow machine the task may take longer to get there (6.12 v1 under TCG: 28 of 32 MiB after
    // 2.4 s, judged "not under OOM" at 1 s). The step's deadline still bounds it.
    let mut reached = false;
    let under_oom = loop {
        let early = Limits {
            deadline: limits.deadline.min(Instant::now() + within),
            watchdog: None,
            ..*limits
        };
        match task.wait_or_killed(&early) {
            Err(WaitError::Timeout) if early.deadline < limits.deadline => {}
            other => return other,
        }
        let under = (cg.read("memory.oom_control").ok())
            .is_some_and(|s| s.lines().any(|l| l.trim() == "under_oom 1"));
        if under || reached {
            break under;
        }
        reached = at_limit(cg);
    };
    *waited = Some(under_oom);
    // v1 refuses a memory limit above the memory+swap limit: that one goes first.
    let files: &[&str] = match cg.version {
        crate::model::Version::V1 if cg.file("memory.memsw.limit_in_bytes").exists() => {
            &["memory.memsw.limit_in_bytes", "memory.limit_in_bytes"]
        }
        crate::model::Version::V1 => &["memory.limit_in_bytes"],
        crate::model::Version::V2 => &["memory.max"],
    };
    for file in files {
        cg.write(file, &to.to_string())
            .map_err(|e| WaitError::Failed(Error::Environment(e.to_string())))?;
    }
    task.wait_or_killed(limits)
}

/// Whether `cg`'s usage is within 2 MiB of its memory limit (the charges cached per CPU keep it
/// up to a batch of pages per CPU below; v1 memory.usage_in_bytes and memory.limit_in_bytes, v2
/// memory.current and memory.max).
fn at_limit(cg: &Cgroup) -> bool {
    use crate::sys::cgroup::file_name;
    let num = |what: &str| {
        let s = cg.read(file_name(cg.version, what)).ok()?;
        s.trim().parse::<u64>().ok()
    };
    match (num("usage"), num("limit")) {
        (Some(u), Some(l)) => u + (2 << 20) >= l,
        // An unlimited group ("max") or an unreadable file: no limit to wait for.
        _ => true,
    }
}

/// `n` small tasks (1 MiB of anon each) waiting in `cg`; with `immune`, at oom_score_adj -1000
/// (written for each by its pid, as root may).
fn small_tasks(env: &StepEnv, cg: &Cgroup, n: u32, immune: bool) -> Result<Vec<Holder>, Stop> {
    let small = Job::Hold {
        anon: 1 << 20,
        shmem: 0,
        file: None,
        file_size: 0,
        dirty: false,
        redirty: false,
        write: 0,
        extras: HoldExtras::default(),
    };
    let limits = env.limits();
    let mut out = Vec::new();
    for _ in 0..n {
        let h = Holder::start(&small, cg, &limits)
            .map_err(|e| env.stop(e))?
            .0;
        if immune {
            let path = format!("/proc/{}/oom_score_adj", h.worker.child.id());
            std::fs::write(&path, "-1000").map_err(|e| {
                Stop::Failed(Error::Environment(format!("write -1000 to {path}: {e}")))
            })?;
        }
        out.push(h);
    }
    Ok(out)
}

/// Waits up to a second for the small tasks of each list to die of SIGKILL or show they live;
/// keeps the living in their lists and returns how many of each died. One that exited otherwise
/// is a failure of its own.
fn reap(
    env: &StepEnv,
    cgroup: &str,
    limits: &Limits,
    lists: [&mut Vec<Holder>; 3],
) -> Result<[u32; 3], Stop> {
    use std::os::unix::process::ExitStatusExt;
    let brief = Limits {
        deadline: limits.deadline.min(Instant::now() + Duration::from_secs(1)),
        watchdog: None,
        ..*limits
    };
    let mut killed = [0u32; 3];
    let mut lists = lists;
    let waited = workload::poll_until(&brief, || {
        let mut failed = None;
        for (i, list) in lists.iter_mut().enumerate() {
            list.retain_mut(|h| match h.worker.child.try_wait() {
                Ok(Some(st)) if st.signal() == Some(libc::SIGKILL) => {
                    killed[i] += 1;
                    false
                }
                Ok(Some(st)) => {
                    failed = Some(Error::of_worker_status(
                        st,
                        format!("bystander of {cgroup}'s exhaust exited with {st}"),
                    ));
                    false
                }
                _ => true,
            });
        }
        match failed {
            Some(e) => Some(Err(WaitError::Failed(e))),
            None => lists.iter().all(|l| l.is_empty()).then_some(Ok(())),
        }
    });
    match waited {
        Ok(()) | Err(WaitError::Timeout) => Ok(killed),
        Err(e) => Err(env.stop(e)),
    }
}

/// Runs jobs in parallel in one group and sums them up: bytes and CPU seconds add, the seconds are
/// the slowest job's (the step lasts as long as its last worker).
pub(super) fn run_parallel(
    jobs: Vec<Job>,
    cg: &Cgroup,
    limits: &Limits,
) -> Result<JobResult, WaitError> {
    let mut workers = Vec::new();
    for j in &jobs {
        workers.push(workload::spawn(j, cg).map_err(|e| WaitError::Failed(e.into()))?);
    }
    let mut total = JobResult::default();
    for w in &mut workers {
        let r = w.wait(limits)?;
        total.bytes += r.bytes;
        total.cpu_seconds += r.cpu_seconds;
        total.cpus |= r.cpus;
        total.minflt += r.minflt;
        total.majflt += r.majflt;
        total.seconds = total.seconds.max(r.seconds);
    }
    Ok(total)
}

/// The CPUs of a mask, as a note says them: "CPU 1", "CPUs 0,1".
fn cpu_list(mask: u64) -> String {
    let cpus: Vec<String> = (0..64)
        .filter(|c| mask & (1 << c) != 0)
        .map(|c| c.to_string())
        .collect();
    match cpus.len() {
        0 => "no CPU seen".to_string(),
        1 => format!("CPU {}", cpus[0]),
        _ => format!("CPUs {}", cpus.join(",")),
    }
}

/// A step's client count: 0 means one per CPU.
pub(super) fn clients_or_cpus(clients: u32, cpus: u64) -> u32 {
    if clients == 0 { cpus as u32 } else { clients }
}

/// POSIX_FADV_DONTNEED over `<file>.<i>` from the runner: the clean pages leave the page cache.
pub(super) fn drop_files(env: &StepEnv, file: &str, count: u32) -> Result<JobResult, Stop> {
    let t = Instant::now();
    for i in 0..count {
        let path = env.path(&format!("{file}.{i}"));
        crate::exec::workload::drop_cache(&path)
            .map_err(|e| Stop::Failed(Error::Environment(format!("{e:#}"))))?;
    }
    Ok(JobResult {
        seconds: t.elapsed().as_secs_f64(),
        ..Default::default()
    })
}

/// A group of its own below `cgroup` (`child`, removed with the run if anything fails),
/// a reader in it streaming `<file>.0` from a cold cache, then the group removed (rmdir) with
/// what it was charged.
pub(super) fn child(env: &StepEnv, cgroup: &str, file: &str) -> Result<JobResult, Stop> {
    let parent = env.group(cgroup);
    let cg = parent.create_child("child").map_err(|e| {
        Stop::Failed(Error::Environment(format!(
            "make a group below {cgroup}: {e}"
        )))
    })?;
    let job = Job::Read {
        path: env.path(&format!("{file}.0")),
        warm: false,
    };
    let r = run_parallel(vec![job], &cg, &env.limits()).map_err(|e| env.stop(e))?;
    cg.remove_tree(Duration::from_secs(5)).map_err(|e| {
        Stop::Failed(Error::Kernel(format!(
            "remove the group below {cgroup} after its reader: {e}"
        )))
    })?;
    Ok(r)
}
