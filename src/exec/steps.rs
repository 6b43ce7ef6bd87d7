//! The step executors: one function per step kind, and what they share (`StepEnv`). The steps of
//! one worker and sleep are here; those of held tasks in tasks.rs, of many workers in workers.rs,
//! and those without a worker in kernel.rs.

use std::cell::RefCell;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::context::{Context, Guard, Stop};
use super::watchdog::Watchdog;
use super::workload::{self, Holder, Job, JobResult, Limits, WaitError};
use crate::model::MoveRecord;
use crate::model::error::Error;
use crate::model::step::{Advice, Region};
use crate::scenario::probe::{self, PROBE_BALLAST};
use crate::scenario::{Scenario, Step};
use crate::sys::cgroup::{Cgroup, Version};
use crate::sys::cleanup::interrupted;
use crate::sys::sysctl::SysctlGuard;

mod kernel;
mod tasks;
mod watch;
mod workers;

pub(super) use kernel::tune_machine;
use kernel::{KHUGEPAGED_SCANS, await_counter, make_cgroups, reclaim, set, wait_machine};
use tasks::{advise, grow, hold, migrate, move_task, move_thread, release, wait};
use workers::{child, drop_files};
use workers::{create, exhaust, fault, read, usemem};

/// Holds writeback off for a dirty probe: dirty pages never expire, the periodic flusher sleeps,
/// and the dirty limits are as high as they go. Both limits are set to MemTotal in bytes; then the
/// kernel (domain_dirty_limits) puts background writeback at half the dirtyable memory. With
/// cgroup writeback (v2) the group is a dirty domain of its own whose dirtyable memory is its file
/// pages plus at most the other clean page cache, scaled by the same ratios: in a fresh VM that is
/// a few MiB and background writeback would start at once. The probe step therefore first makes
/// sure the group has clean file pages of PROBE_BALLAST x the probe (see `probe_ballast`), and
/// room below its limit for them and the probe (see `crate::scenario::probe`).
///
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

/// Before a probe: room below the group's limit (the clean page cache of the files written in
/// its subtree dropped), clean ballast for its dirty domain (see `probe_ballast`), then writeback
/// held off.
pub(super) fn prepare_probe(
    env: &StepEnv,
    group: &str,
    file: &str,
    size: u64,
    guard: &mut Guard,
) -> Result<(), Stop> {
    for f in probe::own_files(env.sc, group) {
        let path = env.path(&f);
        if path.exists() {
            crate::exec::workload::drop_cache(&path)
                .map_err(|e| Stop::Failed(Error::Environment(format!("{e:#}"))))?;
        }
    }
    let cg = env.group(group);
    let need = probe_ballast(cg, size).map_err(|e| Stop::Failed(Error::Kernel(e)))?;
    check_room(env, group, need + size)?;
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

/// A probe's pages and ballast (`add`) must fit in half of what the group's limit leaves: a
/// group pushed into reclaim starts writeback (see `crate::scenario::probe`), and the probe
/// would judge nothing. The parser holds declared sizes to this; here what the group already
/// holds counts too.
fn check_room(env: &StepEnv, group: &str, add: u64) -> Result<(), Stop> {
    let Some(limit) = probe::bounding_limit(env.sc, group) else {
        return Ok(());
    };
    let cg = env.group(group);
    let file = crate::sys::cgroup::file_name(cg.version, "usage");
    let text = cg
        .read(file)
        .map_err(|e| Stop::Failed(Error::Kernel(e.to_string())))?;
    let usage: u64 = text.trim().parse().map_err(|_| {
        Stop::Failed(Error::Kernel(format!(
            "{group}'s {file} is not a number: {text:?}"
        )))
    })?;
    if usage + add <= limit / 2 {
        return Ok(());
    }
    let b = |v: u64| crate::model::units::human_bytes(v as i64);
    Err(Stop::Failed(Error::Environment(format!(
        "the probe in {group} has no room: it holds {} with its clean page cache dropped, the probe and its ballast add {}, more than half its limit {} (reclaim during a probe starts writeback)",
        b(usage),
        b(add),
        b(limit)
    ))))
}

/// Runs one step: the executor of its kind.
pub(super) fn execute_step(env: &mut StepEnv) -> Result<JobResult, Stop> {
    match env.step {
        Step::Write { .. }
        | Step::Sync
        | Step::Fsync { .. }
        | Step::Truncate { .. }
        | Step::Unlink { .. }
        | Step::MmapWrite { .. }
        | Step::Probe { .. } => {
            let (job, cg) = one_worker(env);
            run_job(env, job, cg)
        }
        Step::Sleep(d) => sleep(env, *d),
        Step::Reclaim {
            cgroup,
            size,
            checked,
        } => reclaim(env, cgroup, *size, *checked),
        Step::Hold(h) => hold(env, h),
        Step::Move {
            task,
            to,
            thread: false,
        } => move_task(env, task, to),
        Step::Move { task, to, .. } => move_thread(env, task, to),
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
            immune,
            outside,
            raise,
        } => exhaust(
            env,
            cgroup,
            (*anon, *within, *raise),
            (*bystanders, *immune, outside.as_deref()),
        ),
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
        Step::Migrate {
            task,
            region,
            node,
            by,
        } => migrate(env, task, *region, (*node, *by)),
        Step::Cgroups { cgroup, count } => make_cgroups(env, cgroup, *count),
        Step::Set {
            cgroup,
            file,
            value,
            from,
        } => set(env, (cgroup, file), value.as_deref(), from.as_deref()),
        Step::Drop { file, count } => drop_files(env, file, *count),
        Step::Child { cgroup, file } => child(env, cgroup, file),
        Step::Pressure { size, within } => {
            let pages = size / env.ctx.machine.page_size;
            wait_machine(env, "pgsteal_kswapd", pages, *within)
        }
        Step::Khugepaged { within, task } => {
            if let Some(task) = task {
                advise(env, task, Advice::Hugepage, Region::Anon)?;
            }
            wait_machine(env, KHUGEPAGED_SCANS, 2, *within)
        }
    }
}

/// The job of a step that runs one worker (write, sync, fsync, truncate, unlink, mmap-write,
/// probe; see `run_job`), and the group it runs in.
fn one_worker<'e>(env: &'e StepEnv) -> (Job, &'e Cgroup) {
    let path = |f: &str| env.path(f);
    match env.step {
        Step::Write {
            cgroup,
            file,
            size,
            block_size,
            fsync,
            ..
        } => (
            Job::Write {
                path: path(file),
                size: *size,
                block_size: *block_size,
                fsync: *fsync,
            },
            env.group(cgroup),
        ),
        Step::Sync => (Job::Sync, env.aux),
        Step::Fsync { cgroup, file } => (Job::Fsync { path: path(file) }, env.group(cgroup)),
        Step::Truncate { cgroup, file, size } => (
            Job::Truncate {
                path: path(file),
                size: *size,
            },
            env.group(cgroup),
        ),
        Step::Unlink { cgroup, file } => (Job::Unlink { path: path(file) }, env.group(cgroup)),
        Step::MmapWrite {
            cgroup,
            file,
            size,
            hold,
        } => (
            Job::MmapWrite {
                path: path(file),
                size: *size,
                hold_ms: hold.as_millis() as u64,
            },
            env.group(cgroup),
        ),
        Step::Probe { cgroup, file, size } => (
            Job::Write {
                path: path(file),
                size: *size,
                block_size: 1 << 20,
                fsync: false,
            },
            env.group(cgroup),
        ),
        other => unreachable!("not a step of one worker: {}", other.describe()),
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
