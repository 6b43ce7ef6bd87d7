//! The steps without a worker, on the kernel's files: reclaim (memory.reclaim), await (a
//! group's memory.stat), cgroups (empty groups), pressure and khugepaged (the machine's knobs
//! and counts).

use std::time::{Duration, Instant};

use anyhow::anyhow;

use super::StepEnv;
use super::watch::{Watch, watched};
use crate::exec::context::Stop;
use crate::exec::workload::{self, JobResult, Limits, WaitError};
use crate::model::counter::FILE;
use crate::model::error::Error;
use crate::scenario::Step;
use crate::sys::cgroup::{Cgroup, stat};
use crate::sys::sysctl::SysctlGuard;

/// Writes `size` to the group's memory.reclaim. The kernel answers EAGAIN when it reclaimed
/// less than asked: with the reclaimable memory the scenario put there, that is its failure.
pub(super) fn reclaim(
    env: &StepEnv,
    cgroup: &str,
    size: u64,
    checked: bool,
) -> Result<JobResult, Stop> {
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
        // Left to the checks on the step: what it took is in the samples around it.
        Err(e) if e.errno() == Some(libc::EAGAIN) && checked => Ok(JobResult {
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

/// khugepaged's count of its full scans (a pseudo key of `wait_machine`).
pub(super) const KHUGEPAGED_SCANS: &str = "khugepaged.full_scans";

/// Before a `pressure` or `khugepaged` step, on a machine of the run's own: the knobs it turns,
/// restored after the step (`after_step`). `pressure` puts every node's low watermark above its
/// free memory (`pressure_min_free_kb`: min_free_kbytes at 85 % of the free memory of the node
/// with the most for its size, scaled to the machine; the low watermark is 1.25 times that), so
/// kswapd wakes at the next allocation and reclaims up to the high watermark (1.5 times) from
/// every group; nothing may allocate below the min watermark meanwhile but the kernel's reserves.
pub(in crate::exec) fn tune_machine(step: &Step, sysctls: &mut SysctlGuard) -> Result<(), Stop> {
    match step {
        Step::Pressure { .. } => {
            let sys = std::path::Path::new("/sys");
            let min = match crate::sys::numa::nodes_meminfo_in(sys) {
                Some(nodes) => crate::sys::numa::pressure_min_free_kb(&nodes),
                None => crate::sys::proc::mem_free_kb().map(|f| f / 100 * 85),
            };
            let min = min.ok_or_else(|| {
                Stop::Failed(Error::Environment("no MemFree in /proc/meminfo".into()))
            })?;
            sysctls.set("vm.min_free_kbytes", &min.to_string())?;
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
pub(super) fn wait_machine(
    env: &StepEnv,
    key: &str,
    by: u64,
    within: Duration,
) -> Result<JobResult, Stop> {
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

/// Writes `value` to the group's `file` in one write(2), recording how it ended and what the file
/// reads before and after it: through a new descriptor each time, and right after the write
/// through the descriptor written to (memory.peak and memory.swap.peak reset per descriptor).
/// The kernel's answer is the record's, not the step's: a refused write, or a file this kernel
/// does not have (ENOENT), does not stop the scenario (the `knob` check judges it).
pub(super) fn set(
    env: &StepEnv,
    (cgroup, file): (&str, &str),
    value: Option<&str>,
    from: Option<&str>,
) -> Result<JobResult, Stop> {
    let dir = match cgroup {
        crate::scenario::ROOT => crate::sys::cgroup::hierarchy_root(&env.ctx.parent.path),
        g => env.group(g).path.clone(),
    };
    let path = dir.join(file);
    if !path.exists() {
        // A knob of a later kernel (memory.swap.peak: 6.5): the checks say it is not there.
        let knob = crate::model::KnobWrite {
            file: file.to_string(),
            written: value.map(str::to_string),
            error: Some("ENOENT".into()),
            ..Default::default()
        };
        return Ok(JobResult {
            knob: Some(knob),
            ..Default::default()
        });
    }
    let read = |p: &std::path::Path| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let before = read(&path);
    let value = match value {
        Some(v) => Some(relative_value(env, &dir, v)?),
        None => None,
    };
    let value = value.as_deref();
    let watch = (value.is_some() && from.is_none() && watched(env.ctx.parent.version, file))
        .then(|| Watch::start(&path));
    let mut span = (Instant::now(), None);
    let (error, same_fd) = match (value, from) {
        (Some(v), None) => write_once(&path, v, &mut span, watch.as_ref()),
        (Some(v), Some(g)) => (write_from(&env.group(g).path, &path, v)?, None),
        (None, _) => (None, None),
    };
    let (t, ended) = span;
    let seconds = ended
        .unwrap_or_else(Instant::now)
        .duration_since(t)
        .as_secs_f64();
    let during = watch.map(|w| w.finish(t, seconds * 1e3));
    let knob = crate::model::KnobWrite {
        file: file.to_string(),
        written: value.map(str::to_string),
        error,
        before,
        after: read(&path),
        same_fd,
        during,
    };
    Ok(JobResult {
        seconds,
        knob: Some(knob),
        ..Default::default()
    })
}

/// `value` with a `current+SIZE` form resolved: the group's usage now plus SIZE, in bytes.
fn relative_value(env: &StepEnv, dir: &std::path::Path, value: &str) -> Result<String, Stop> {
    let Some(add) = crate::model::step::plus_current(value) else {
        return Ok(value.to_string());
    };
    let add = add.map_err(|e| Stop::Failed(Error::Environment(e)))?;
    let cg = Cgroup::new(dir, env.ctx.parent.version);
    let file = crate::sys::cgroup::file_name(cg.version, crate::model::counter::USAGE);
    let usage = (cg.read(file).ok())
        .and_then(|s| s.trim().parse::<u64>().ok())
        .ok_or_else(|| {
            Stop::Failed(Error::Kernel(format!(
                "{value}: {} has no readable {file}",
                dir.display()
            )))
        })?;
    Ok((usage + add).to_string())
}

/// One write(2) of `value` to `path`; the errno name it failed with, and what the descriptor
/// written to reads right after (None for a file that cannot be read, or a failed write).
/// `span` gets the times right before the write(2), after the open, and right after it; the
/// `watch` reading the file meanwhile is told when it begins.
fn write_once(
    path: &std::path::Path,
    value: &str,
    span: &mut (Instant, Option<Instant>),
    watch: Option<&Watch>,
) -> (Option<String>, Option<String>) {
    use std::io::{Read, Seek, Write};
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path);
    let (mut f, readable) = match opened {
        Ok(f) => (f, true),
        Err(_) => match std::fs::OpenOptions::new().write(true).open(path) {
            Ok(f) => (f, false),
            Err(e) => return (Some(errno_name(&e)), None),
        },
    };
    span.0 = Instant::now();
    if let Some(w) = watch {
        w.mark();
    }
    let wrote = f.write_all(value.as_bytes());
    span.1 = Some(Instant::now());
    if let Err(e) = wrote {
        return (Some(errno_name(&e)), None);
    }
    let mut s = String::new();
    let same = (readable && f.rewind().is_ok() && f.read_to_string(&mut s).is_ok())
        .then(|| s.trim().to_string());
    (None, same)
}

/// One write(2) of `value` to `path` by a process forked into the group at `group` (it writes
/// "0" to the group's cgroup.procs, which moves the writer itself): the errno name it failed
/// with. The child only makes system calls on what was prepared before the fork.
fn write_from(
    group: &std::path::Path,
    path: &std::path::Path,
    value: &str,
) -> Result<Option<String>, Stop> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &std::path::Path| CString::new(p.as_os_str().as_bytes()).expect("no NUL in a path");
    let (procs, knob) = (c(&group.join("cgroup.procs")), c(path));
    let fail = |what: &str, e: std::io::Error| {
        Stop::Failed(Error::Environment(format!(
            "{what} for a write to {} from {}: {e}",
            path.display(),
            group.display()
        )))
    };
    // SAFETY: the child calls only open, write, close and _exit on data made before the fork.
    match unsafe { nix::unistd::fork() }.map_err(|e| fail("fork", e.into()))? {
        nix::unistd::ForkResult::Child => unsafe {
            let put = |p: &CString, v: &[u8]| -> i32 {
                let fd = libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return *libc::__errno_location();
                }
                let n = libc::write(fd, v.as_ptr().cast(), v.len());
                let e = if n < 0 { *libc::__errno_location() } else { 0 };
                libc::close(fd);
                e
            };
            if put(&procs, b"0") != 0 {
                libc::_exit(255);
            }
            libc::_exit(put(&knob, value.as_bytes()).min(254));
        },
        nix::unistd::ForkResult::Parent { child } => {
            match nix::sys::wait::waitpid(child, None).map_err(|e| fail("waitpid", e.into()))? {
                nix::sys::wait::WaitStatus::Exited(_, 0) => Ok(None),
                nix::sys::wait::WaitStatus::Exited(_, 255) => Err(fail(
                    "moving the writer into the group",
                    std::io::Error::other("its cgroup.procs refused it"),
                )),
                nix::sys::wait::WaitStatus::Exited(_, e) => {
                    Ok(Some(errno_name(&std::io::Error::from_raw_os_error(e))))
                }
                other => Err(fail(
                    "the writer",
                    std::io::Error::other(format!("{other:?}")),
                )),
            }
        }
    }
}

/// `EINVAL` for an error with errno EINVAL; the error's text for one without an errno.
fn errno_name(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => format!("{:?}", nix::errno::Errno::from_raw(n)),
        None => e.to_string(),
    }
}
