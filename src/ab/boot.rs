//! One boot of an A/B: booted again while the host was busy, its result saved.

use std::path::Path;

use anyhow::{Context, Result};

use super::{BUSY_CPUS, BootResult, RETRIES, Side, failures};
use crate::model::error::{Error, exit};
use crate::vm;

/// Boots until the host was quiet during the boot (at most [`RETRIES`] times again), pushing
/// every boot onto `boots` (those run again as not used). Returns the counted boot's result and
/// the accelerator it ran under.
pub(super) fn boot_until_quiet(
    opts: &vm::Options,
    round: u32,
    side: Side,
    boots: &mut Vec<BootResult>,
) -> Result<(Option<serde_json::Value>, vm::AccelChoice)> {
    let mut o = opts.clone();
    for attempt in 0.. {
        if crate::sys::cleanup::interrupted() {
            return Err(Error::Interrupted.into());
        }
        if let Some(d) = &o.report {
            let _ = std::fs::remove_dir_all(d);
        }
        let (mut b, result, accel) = one_boot(&o, round, side)?;
        o.accel = accel;
        let busy = b.host_busy_cpus > BUSY_CPUS;
        // A guest that found the machine busy during its paired measurements judged none of
        // them, or judged nothing at all (125) with one of them inconclusive, though the boot's
        // average load stayed low: a burst; it too runs again (a failure is kept).
        let crowded = result.as_ref().is_some_and(|r| match b.code {
            exit::OK => inconclusive_only(r),
            exit::UNTESTABLE => any_inconclusive_rate(r),
            _ => false,
        });
        if ((busy && b.code != exit::UNTESTABLE) || crowded) && attempt < RETRIES {
            eprintln!(
                "memcgtest ab: {}: its figures do not count; booting it again",
                if crowded {
                    "the guest found the machine busy during its paired measurements and judged nothing".to_string()
                } else {
                    format!(
                        "other processes used {:.2} CPUs on average during that boot (more than {BUSY_CPUS})",
                        b.host_busy_cpus
                    )
                }
            );
            b.used = false;
            boots.push(b);
            continue;
        }
        if busy {
            eprintln!(
                "memcgtest ab: the host stayed busy ({:.2} CPUs by other processes); this boot's figures count, a verdict may be weaker",
                b.host_busy_cpus
            );
        }
        boots.push(b);
        return Ok((result, accel));
    }
    unreachable!("the loop returns by its last attempt")
}

/// The outcomes of a run's performance checks.
fn rate_outcomes(v: &serde_json::Value) -> Vec<&str> {
    let checks = (v["scenarios"].as_array().into_iter().flatten())
        .flat_map(|s| s["checks"].as_array().into_iter().flatten());
    checks
        .filter(|c| c["performance"] == true)
        .filter_map(|c| c["outcome"].as_str())
        .collect()
}

/// Whether a run's result judged none of its performance checks, and the machine was busy
/// during some of them (an inconclusive one): nothing else kept it from a verdict.
pub(super) fn inconclusive_only(v: &serde_json::Value) -> bool {
    let perf = rate_outcomes(v);
    perf.iter().all(|o| *o != "pass" && *o != "fail") && perf.contains(&"inconclusive")
}

/// Whether a performance check of a run's result was left inconclusive by a busy machine.
pub(super) fn any_inconclusive_rate(v: &serde_json::Value) -> bool {
    rate_outcomes(v).contains(&"inconclusive")
}

/// Boots once and measures what else the host did meanwhile. A run that reported nothing
/// tested nothing (125).
fn one_boot(
    opts: &vm::Options,
    round: u32,
    side: Side,
) -> Result<(BootResult, Option<serde_json::Value>, vm::AccelChoice)> {
    use crate::sys::proc::{PROC, Who, cpu_seconds, user_cpu_seconds};
    // User time on both sides: see `user_cpu_seconds` for why not system time.
    let ours = || cpu_seconds(Who::Process).0 + cpu_seconds(Who::Children).0;
    let (busy0, ours0, t0) = (
        user_cpu_seconds(Path::new(PROC))?,
        ours(),
        std::time::Instant::now(),
    );
    let out = vm::execute(opts)?;
    let seconds = t0.elapsed().as_secs_f64();
    let others = user_cpu_seconds(Path::new(PROC))? - busy0 - (ours() - ours0);
    let mut b = BootResult {
        round,
        side,
        code: out.code,
        seconds,
        host_busy_cpus: (others / seconds.max(1e-3)).max(0.0),
        used: true,
        failures: Vec::new(),
    };
    let Some((rep, _)) = &out.report else {
        if b.code == exit::OK {
            b.code = exit::UNTESTABLE;
        }
        return Ok((b, None, out.accel));
    };
    b.failures = failures(rep);
    let v = serde_json::to_value(rep).context("serialize a boot's result")?;
    Ok((b, Some(v), out.accel))
}

pub(super) fn save(path: &Path, v: &serde_json::Value) -> Result<()> {
    write(path, &(serde_json::to_string_pretty(v)? + "\n"))
}

/// Writes `text` to `path`, its directory made first.
pub(super) fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).with_context(|| format!("mkdir {}", d.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("write {}", path.display()))
}
