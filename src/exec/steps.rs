//! The step executors: one function per step kind, and what they share (`StepEnv`).

use std::cell::RefCell;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};

use super::context::{Context, Guard, Stop};
use super::watchdog::Watchdog;
use super::workload::{self, HoldExtras, Holder, Job, JobResult, Limits, WaitError};
use crate::model::MoveRecord;
use crate::model::counter::{FILE, USAGE};
use crate::model::error::Error;
use crate::model::step::{Advice, Region};
use crate::scenario::{Hold, Scenario, Step};
use crate::sys::cgroup::{Cgroup, Version, file_name, stat};
use crate::sys::cleanup::interrupted;
use crate::sys::sysctl::SysctlGuard;

/// Holds writeback off for a dirty probe: dirty pages never expire, the periodic flusher sleeps,
/// and the dirty limits are as high as they go. Both limits are set to MemTotal in bytes; then the
/// kernel (domain_dirty_limits) puts background writeback at half the dirtyable memory. With
/// cgroup writeback (v2) the group is a dirty domain of its own whose dirtyable memory is its file
/// pages plus at most the other clean page cache, scaled by the same ratios: in a fresh VM that is
/// a few MiB and background writeback would start at once. The probe step therefore first makes
/// sure the group has clean file pages of 3x the probe (see `probe_ballast`).
/// Clean page cache a v2 group needs before a probe, as a multiple of the probe's size.
pub(super) const PROBE_BALLAST: u64 = 3;

/// How much clean ballast to write before a probe of `size` in `cg`: none on v1 (no per-group
/// dirty domain; extra pages there would only push a limited group into reclaim, which starts
/// writeback); on v2 what the group's file pages lack of PROBE_BALLAST x size.
pub(super) fn probe_ballast(cg: &Cgroup, size: u64) -> Result<u64, String> {
    if cg.version == Version::V1 {
        return Ok(0);
    }
    let st = cg.stat().map_err(|e| e.to_string())?;
    let file = st.get("file").unwrap_or(0).max(0) as u64;
    Ok((PROBE_BALLAST * size).saturating_sub(file))
}

pub(super) fn hold_writeback(sysctls: &mut SysctlGuard) -> Result<()> {
    let total = crate::sys::proc::mem_total_bytes().max(1 << 30).to_string();
    sysctls.set("vm.dirty_bytes", &total)?;
    sysctls.set("vm.dirty_background_bytes", &total)?;
    sysctls.set("vm.dirty_expire_centisecs", "360000")?;
    sysctls.set("vm.dirty_writeback_centisecs", "0")?;
    Ok(())
}

/// Tasks held across steps (and phases), by name: the holder, the group it is in, the bytes it
/// holds. Dropping a holder kills its process, on every exit path.
pub(super) type Holders = std::collections::BTreeMap<String, (Holder, String, u64)>;

/// What a step's executor works with.
pub(super) struct StepEnv<'a> {
    pub(super) ctx: &'a Context,
    pub(super) sc: &'a Scenario,
    pub(super) phase: &'a str,
    pub(super) step: &'a Step,
    pub(super) deadline: Instant,
    /// The progress watchdog of this step (see `super::watchdog`).
    pub(super) watchdog: &'a RefCell<Watchdog>,
    /// The online checks on the record so far (see `super::online`); None with --keep-going.
    pub(super) failing: Option<&'a dyn Fn() -> Option<String>>,
    /// The helpers' group (sync, create).
    pub(super) aux: &'a Cgroup,
    pub(super) groups: &'a [(String, Cgroup)],
    pub(super) scratch: &'a std::path::Path,
    pub(super) holders: &'a mut Holders,
    pub(super) moves: &'a mut Vec<MoveRecord>,
    /// Notes for the result (an advice the kernel declined).
    pub(super) notes: &'a mut Vec<String>,
}

impl<'a> StepEnv<'a> {
    /// What ends this step's waits early: the deadline, a signal, the watchdog.
    pub(super) fn limits(&self) -> Limits<'a> {
        Limits {
            deadline: self.deadline,
            interrupted: &interrupted,
            watchdog: Some(self.watchdog),
            failing: self.failing,
        }
    }
    /// A declared group (names were checked against them when the scenario was parsed).
    pub(super) fn group(&self, name: &str) -> &Cgroup {
        &self
            .groups
            .iter()
            .find(|(n, _)| n == name)
            .expect("declared group")
            .1
    }
    fn path(&self, file: &str) -> PathBuf {
        self.scratch.join(file)
    }
    /// A worker's failure to finish, as the reason the scenario stopped.
    fn stop(&self, e: WaitError) -> Stop {
        stop_of(e, self.phase, self.step)
    }
    /// The held task `task` (validated when the scenario was parsed).
    fn holder(&mut self, task: &str) -> &mut (Holder, String, u64) {
        self.holders.get_mut(task).expect("validated task")
    }
    fn measured(&self, what: &str) {
        self.ctx.progress.measured(&self.sc.name, what);
    }
}

/// Before a probe: clean ballast for the group's dirty domain (see `probe_ballast`), then
/// writeback held off.
pub(super) fn prepare_probe(
    env: &StepEnv,
    cg: &Cgroup,
    file: &str,
    size: u64,
    guard: &mut Guard,
) -> Result<(), Stop> {
    let need = probe_ballast(cg, size).map_err(|e| Stop::Failed(Error::Kernel(e)))?;
    if need > 0 {
        let ballast = Job::Write {
            path: env.path(&format!("{file}.ballast")),
            size: need,
            block_size: 1 << 20,
            fsync: true,
        };
        let mut w = workload::spawn(&ballast, cg)?;
        w.wait(&env.limits()).map_err(|e| env.stop(e))?;
    }
    hold_writeback(&mut guard.sysctls)?;
    Ok(())
}

/// Runs one step: the executor of its kind.
pub(super) fn execute_step(env: &mut StepEnv) -> Result<JobResult, Stop> {
    let path = |f: &str| env.path(f);
    match env.step {
        Step::Write {
            cgroup,
            file,
            size,
            block_size,
            fsync,
        } => run_job(
            env,
            Job::Write {
                path: path(file),
                size: *size,
                block_size: *block_size,
                fsync: *fsync,
            },
            env.group(cgroup),
        ),
        Step::Sync => run_job(env, Job::Sync, env.aux),
        Step::Fsync { cgroup, file } => {
            run_job(env, Job::Fsync { path: path(file) }, env.group(cgroup))
        }
        Step::Sleep(d) => sleep(env, *d),
        Step::Truncate { cgroup, file, size } => run_job(
            env,
            Job::Truncate {
                path: path(file),
                size: *size,
            },
            env.group(cgroup),
        ),
        Step::Unlink { cgroup, file } => {
            run_job(env, Job::Unlink { path: path(file) }, env.group(cgroup))
        }
        Step::Reclaim { cgroup, size } => reclaim(env, cgroup, *size),
        Step::MmapWrite {
            cgroup,
            file,
            size,
            hold,
        } => run_job(
            env,
            Job::MmapWrite {
                path: path(file),
                size: *size,
                hold_ms: hold.as_millis() as u64,
            },
            env.group(cgroup),
        ),
        Step::Probe { cgroup, file, size } => run_job(
            env,
            Job::Write {
                path: path(file),
                size: *size,
                block_size: 1 << 20,
                fsync: false,
            },
            env.group(cgroup),
        ),
        Step::Hold(h) => hold(env, h),
        Step::Move { task, to } => move_task(env, task, to),
        Step::Grow { task, anon } => grow(env, task, *anon),
        Step::Wait { task } => wait(env, task),
        Step::Release { task } => release(env, task),
        Step::Create { file, size, count } => create(env, file, *size, *count),
        Step::Read {
            cgroup,
            file,
            count,
            warm,
        } => read(env, cgroup, file, *count, *warm),
        Step::Fault {
            cgroup,
            size,
            clients,
            duration,
        } => fault(env, cgroup, *size, *clients, *duration),
        Step::Usemem {
            cgroup,
            size,
            clients,
        } => usemem(env, cgroup, *size, *clients),
        Step::Exhaust {
            cgroup,
            anon,
            bystanders,
            within,
        } => exhaust(env, cgroup, (*anon, *within), *bystanders),
        Step::Await {
            cgroup,
            counter,
            size,
            within,
        } => await_counter(env, cgroup, counter, *size, *within),
        Step::Advise {
            task,
            advice,
            region,
        } => advise(env, task, *advice, *region),
        Step::Cgroups { cgroup, count } => make_cgroups(env, cgroup, *count),
        Step::Pressure { size, within } => {
            let pages = size / env.ctx.machine.page_size;
            wait_machine(env, "pgsteal_kswapd", pages, *within)
        }
        Step::Khugepaged { within } => wait_machine(env, KHUGEPAGED_SCANS, 2, *within),
    }
}

/// write, sync, fsync, truncate, unlink, mmap-write, probe: one worker in the step's group.
pub(super) fn run_job(env: &StepEnv, job: Job, cg: &Cgroup) -> Result<JobResult, Stop> {
    let mut w = workload::spawn(&job, cg)?;
    match w.wait(&env.limits()) {
        Ok(r) => Ok(r),
        Err(WaitError::Timeout) => Err(Stop::Timeout(format!(
            "phase {}, step '{}'",
            env.phase,
            env.step.describe()
        ))),
        Err(e) => Err(env.stop(e)),
    }
}

pub(super) fn sleep(env: &StepEnv, d: Duration) -> Result<JobResult, Stop> {
    let until = Instant::now() + d;
    // A sleep makes no progress by design: no watchdog.
    let limits = Limits {
        watchdog: None,
        ..env.limits()
    };
    match workload::poll_until(&limits, || (Instant::now() >= until).then_some(Ok(()))) {
        Ok(()) => Ok(Default::default()),
        Err(WaitError::Timeout) => Err(Stop::Timeout(format!("phase {}, sleep", env.phase))),
        Err(e) => Err(env.stop(e)),
    }
}

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
            sock: hold.sock,
            sparse: hold.sparse,
        },
    };
    let (h, secs, note) =
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

/// The memory.stat key of `counter` in `cg`'s cgroup version.
fn memory_stat_key(cg: &Cgroup, counter: &str) -> Result<String, Stop> {
    Ok(stat::stat_key(counter, cg.version)
        .map_err(|e| anyhow!(e))?
        .ok_or_else(|| anyhow!("{counter}: not a memory.stat counter"))?)
}

/// await: reads the group's memory.stat every 5 ms until `counter` is at least `size`, for at
/// most `within`. Not reaching it ends the step all the same: the checks that need the state
/// (`moved` with `held`) then say the scenario did not test it. The step's `bytes` is the value
/// last read.
pub(super) fn await_counter(
    env: &StepEnv,
    cgroup: &str,
    counter: &str,
    size: u64,
    within: Duration,
) -> Result<JobResult, Stop> {
    let cg = env.group(cgroup);
    let key = memory_stat_key(cg, counter)?;
    let t = Instant::now();
    let until = t + within;
    let mut last = 0;
    // Waiting is idle by design: no watchdog, like a sleep.
    let limits = Limits {
        watchdog: None,
        ..env.limits()
    };
    let r = workload::poll_until(&limits, || {
        match cg.stat() {
            Ok(st) => last = st.get(&key).unwrap_or(0),
            Err(e) => return Some(Err(WaitError::Failed(Error::Kernel(e.to_string())))),
        }
        (last >= size as i64 || Instant::now() >= until).then_some(Ok(()))
    });
    match r {
        Ok(()) => Ok(JobResult {
            bytes: last.max(0) as u64,
            seconds: t.elapsed().as_secs_f64(),
            ..Default::default()
        }),
        Err(WaitError::Timeout) => Err(Stop::Timeout(format!("phase {}, await", env.phase))),
        Err(e) => Err(env.stop(e)),
    }
}

/// khugepaged's count of its full scans (a pseudo key of `wait_machine`).
const KHUGEPAGED_SCANS: &str = "khugepaged.full_scans";

/// Before a `pressure` or `khugepaged` step, on a machine of the run's own: the knobs it turns,
/// restored after the step (`after_step`). `pressure` puts the low watermark above the free
/// memory (min_free_kbytes at 85 % of it: the low watermark is 1.25 times that), so kswapd wakes
/// at the next allocation and reclaims up to the high watermark (1.5 times) from every group;
/// nothing may allocate below the min watermark meanwhile but the kernel's reserves.
pub(super) fn tune_machine(step: &Step, sysctls: &mut SysctlGuard) -> Result<(), Stop> {
    match step {
        Step::Pressure { .. } => {
            let free_kb = crate::sys::proc::mem_free_kb().ok_or_else(|| {
                Stop::Failed(Error::Environment("no MemFree in /proc/meminfo".into()))
            })?;
            sysctls.set("vm.min_free_kbytes", &(free_kb / 100 * 85).to_string())?;
        }
        Step::Khugepaged { .. } => {
            sysctls.set("khugepaged.scan_sleep_millisecs", "10")?;
            sysctls.set("khugepaged.alloc_sleep_millisecs", "10")?;
        }
        _ => {}
    }
    Ok(())
}

/// Waits until a machine-wide count (a /proc/vmstat key, or khugepaged's full scans) rose by
/// `by`, for at most `within`; then the step is done (the checks judge what happened).
fn wait_machine(env: &StepEnv, key: &str, by: u64, within: Duration) -> Result<JobResult, Stop> {
    let read = || -> Option<i64> {
        match key.strip_prefix("khugepaged.") {
            Some(knob) => std::fs::read_to_string(format!(
                "/sys/kernel/mm/transparent_hugepage/khugepaged/{knob}"
            ))
            .ok()?
            .trim()
            .parse()
            .ok(),
            None => crate::sys::proc::vmstat_snapshot(std::path::Path::new(crate::sys::proc::PROC))
                .ok()?
                .get(key),
        }
    };
    let start = read().ok_or_else(|| {
        Stop::Failed(Error::Environment(format!(
            "this kernel does not count {key}"
        )))
    })?;
    let t = Instant::now();
    let until = t + within;
    let mut last = start;
    // Waiting is idle by design: no watchdog, like a sleep.
    let limits = Limits {
        watchdog: None,
        ..env.limits()
    };
    let r = workload::poll_until(&limits, || {
        last = read().unwrap_or(last);
        (last - start >= by as i64 || Instant::now() >= until).then_some(Ok(()))
    });
    match r {
        Ok(()) => Ok(JobResult {
            bytes: (last - start).max(0) as u64,
            seconds: t.elapsed().as_secs_f64(),
            ..Default::default()
        }),
        Err(WaitError::Timeout) => Err(Stop::Timeout(format!(
            "phase {}, {}",
            env.phase,
            env.step.describe()
        ))),
        Err(e) => Err(env.stop(e)),
    }
}

/// Writes `size` to the group's memory.reclaim. The kernel answers EAGAIN when it reclaimed
/// less than asked: with the reclaimable memory the scenario put there, that is its failure.
pub(super) fn reclaim(env: &StepEnv, cgroup: &str, size: u64) -> Result<JobResult, Stop> {
    let cg = env.group(cgroup);
    // Only page cache is surely reclaimable (anon needs swap): with less than 1.5 times what is
    // asked, a short reclaim would not be the kernel's fault.
    let key = memory_stat_key(cg, FILE)?;
    let stat = cg
        .stat()
        .map_err(|e| Stop::Failed(Error::Kernel(e.to_string())))?;
    let cache = stat.get(&key).unwrap_or(0);
    if cache < (size + size / 2) as i64 {
        return Err(Stop::Failed(Error::Environment(format!(
            "{cgroup} holds {} of page cache, less than 1.5 times the {} to reclaim: the workload \
             before the reclaim step did not leave enough (memory pressure on the machine?)",
            crate::model::units::human_bytes(cache),
            crate::model::units::human_bytes(size as i64)
        ))));
    }
    let t = Instant::now();
    match cg.write("memory.reclaim", &size.to_string()) {
        Ok(()) => Ok(JobResult {
            bytes: size,
            seconds: t.elapsed().as_secs_f64(),
            ..Default::default()
        }),
        Err(e) if e.errno() == Some(libc::EAGAIN) => Err(Stop::Failed(Error::Kernel(format!(
            "{e}: the kernel reclaimed less than the {size} bytes asked (EAGAIN) in {:.3} s",
            t.elapsed().as_secs_f64()
        )))),
        Err(e) => Err(Stop::Failed(Error::Environment(format!(
            "{e} (memory.reclaim needs cgroup v2 and Linux 5.19+)"
        )))),
    }
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
        ..Default::default()
    })
}

/// `cgroups`: empty groups below `cgroup`, named after the run's marker so `cleanup` knows them;
/// they go with the run's tree.
pub(super) fn make_cgroups(env: &mut StepEnv, cgroup: &str, count: u32) -> Result<JobResult, Stop> {
    let parent = env.group(cgroup).clone();
    let t = Instant::now();
    for i in 0..count {
        parent.create_child(&format!("empty-{i}")).map_err(|e| {
            Stop::Failed(Error::Environment(format!(
                "make empty group {i} below {cgroup}: {e}"
            )))
        })?;
    }
    Ok(JobResult {
        seconds: t.elapsed().as_secs_f64(),
        ..Default::default()
    })
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
        "{:.0} faults/s, {:.0} faults/CPU-s",
        r.bytes as f64 / r.seconds.max(1e-9),
        r.bytes as f64 / r.cpu_seconds.max(1e-9)
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
    (anon, within): (u64, Option<Duration>),
    bystanders: u32,
) -> Result<JobResult, Stop> {
    use std::os::unix::process::ExitStatusExt;
    // Workers inherit it; the OOM killer never picks a task at -1000 (OOM_SCORE_ADJ_MIN).
    let adj = std::fs::read_to_string("/proc/self/oom_score_adj").unwrap_or_default();
    if adj.trim() == "-1000" {
        return Err(Stop::Failed(Error::Environment(
            "memcgtest runs with oom_score_adj -1000, which its workers inherit: the OOM killer would never kill them; run it without".into(),
        )));
    }
    let (cg, limits) = (env.group(cgroup), env.limits());
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
    let mut by = Vec::new();
    for _ in 0..bystanders {
        by.push(
            Holder::start(&small, cg, &limits)
                .map_err(|e| env.stop(e))?
                .0,
        );
    }
    let t = Instant::now();
    let job = Job::Usemem {
        size: anon,
        small: within.is_some(),
    };
    let mut task = workload::spawn(&job, cg)?;
    let done = match within {
        Some(d) => task.wait_or_stop(&limits, d),
        None => task.wait_or_killed(&limits),
    }
    .map_err(|e| env.stop(e))?;
    let mut r = JobResult {
        seconds: t.elapsed().as_secs_f64(),
        bytes: done.as_ref().map_or(0, |d| d.bytes),
        killed: u32::from(done.is_none()),
        task_killed: done.is_none(),
        ..Default::default()
    };
    // A second for the bystanders to die or show they live; waiting is idle by design.
    let bystander_limits = Limits {
        deadline: limits.deadline.min(Instant::now() + Duration::from_secs(1)),
        watchdog: None,
        ..limits
    };
    let waited = workload::poll_until(&bystander_limits, || {
        let mut failed = None;
        by.retain_mut(|h| match h.worker.child.try_wait() {
            Ok(Some(st)) if st.signal() == Some(libc::SIGKILL) => {
                r.killed += 1;
                false
            }
            Ok(Some(st)) => {
                failed = Some(Error::of_worker_status(
                    st,
                    format!("bystander in {cgroup} exited with {st}"),
                ));
                false
            }
            _ => true,
        });
        match failed {
            Some(e) => Some(Err(WaitError::Failed(e))),
            None => by.is_empty().then_some(Ok(())),
        }
    });
    match waited {
        Ok(()) | Err(WaitError::Timeout) => {}
        Err(e) => return Err(env.stop(e)),
    }
    r.survived = by.len() as u32;
    for h in by {
        h.release(&limits).map_err(|e| env.stop(e))?;
    }
    Ok(r)
}

/// A worker's failure to finish, as the reason a scenario stopped.
pub(super) fn stop_of(e: WaitError, phase: &str, step: &Step) -> Stop {
    match e {
        WaitError::Timeout => Stop::Timeout(format!("phase {phase}, step '{}'", step.describe())),
        WaitError::Interrupted => Stop::Interrupted,
        WaitError::Stalled(stall) => Stop::Stalled(format!(
            "phase {phase}, step '{}': no task of the test groups read, wrote or faulted in a page{} for {:.0} s (the progress watchdog); where they were: {}",
            step.describe(),
            if waits_on_writeback(step) {
                ", and no page was written back"
            } else {
                ""
            },
            stall.idle.as_secs_f64(),
            match stall.tasks.is_empty() {
                true => "no task left".to_string(),
                false => stall.tasks.join("; "),
            }
        )),
        WaitError::Failed(e) => Stop::Failed(e.context(&format!("step '{}'", step.describe()))),
        WaitError::Failing(why) => Stop::Failing(format!(
            "{why}, in phase {phase}, step '{}'",
            step.describe()
        )),
    }
}

/// Whether a step waits for writeback (sync, fsync, msync, a write with fsync, a probe's fsynced
/// ballast, a truncate or unlink of pages under writeback): then pages written back
/// machine-wide count as its progress too.
pub(super) fn waits_on_writeback(step: &Step) -> bool {
    matches!(
        step,
        Step::Sync
            | Step::Fsync { .. }
            | Step::Probe { .. }
            | Step::Truncate { .. }
            | Step::Unlink { .. }
            | Step::MmapWrite { .. }
            | Step::Create { .. }
            | Step::Wait { .. }
            | Step::Release { .. }
            | Step::Write { fsync: true, .. }
    )
}

/// How long a step stays idle by design (an mmap-write's hold): added to the watchdog's time.
pub(super) fn idle_by_design(step: &Step) -> Duration {
    match step {
        Step::MmapWrite { hold, .. } => *hold,
        _ => Duration::ZERO,
    }
}

/// System CPU time of the calling thread so far, seconds.
pub(super) fn thread_sys_seconds() -> f64 {
    crate::sys::proc::cpu_seconds(crate::sys::proc::Who::Thread).1
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
        total.minflt += r.minflt;
        total.majflt += r.majflt;
        total.seconds = total.seconds.max(r.seconds);
    }
    Ok(total)
}

/// A step's client count: 0 means one per CPU.
pub(super) fn clients_or_cpus(clients: u32, cpus: u64) -> u32 {
    if clients == 0 { cpus as u32 } else { clients }
}
