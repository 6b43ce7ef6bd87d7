//! `memcgtest run`: the scenarios selected, where their groups and files go (checked before
//! anything runs), each scenario run in turn with progress, and the run's exit code.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::exec::runner;
use crate::model::error::{Error, exit};
use crate::report::progress;
use crate::sys::cgroup::{self, detect, detect::Choice};
use crate::sys::env;
use crate::sys::{cleanup, lock};
use crate::{model, report, scenario, vm};

/// Where a run puts its groups and files, and where it finds its scenarios (the global options).
pub struct Place<'a> {
    pub cgroup: Choice,
    pub parent: Option<&'a Path>,
    pub scratch: &'a Path,
    pub slow_scratch: Option<&'a Path>,
    pub scenario_dir: Option<&'a Path>,
}

/// What `memcgtest run` was asked for.
pub struct Options<'a> {
    /// The scenarios by name; all when empty.
    pub names: &'a [String],
    pub format: report::Format,
    pub report_dir: Option<&'a Path>,
    /// Stream typed events on stdout (a VM guest) instead of the format.
    pub events: bool,
    pub origin: &'a str,
    pub build_id: Option<&'a str>,
    pub quick: bool,
    pub timeout: Option<Duration>,
    pub stall: Option<Duration>,
    /// Run scenarios to their end past a failed online check.
    pub keep_going: bool,
    pub sample_interval: Option<Duration>,
    pub no_wait: bool,
    /// The machine is the run's own: scenarios that need that run (`Feature::Dedicated`).
    pub dedicated: bool,
    /// A known failure fails the run (exit 1).
    pub strict: bool,
    /// A performance check left without a verdict makes the run a skip (125): `--require-performance`.
    pub require_performance: bool,
    /// Stop after the first scenario that fails (`--fail-fast`).
    pub fail_fast: bool,
}

/// What a run must have judged to count, beyond its scenarios' statuses.
#[derive(Debug, Clone, Copy, Default)]
pub struct Demands {
    /// A known failure fails the run (`--strict`).
    pub strict: bool,
    /// Every performance check must reach a verdict (`--require-performance`).
    pub performance: bool,
}

/// This machine cannot test at all: 125.
fn untestable(msg: impl std::fmt::Display) -> Error {
    Error::Environment(format!("nothing can be tested: {msg}"))
}

/// A run of scenarios under way: the context they run in, the machine's description, when it
/// started and its KCIDB ids; `_live` keeps `cleanup` away from its groups and files.
pub struct Session {
    pub ctx: crate::exec::Context,
    pub environment: model::env::EnvInfo,
    pub started: chrono::DateTime<chrono::Utc>,
    pub ids: report::kcidb::Ids,
    _live: lock::LiveLock,
}

impl Session {
    /// The run's report of `results`, with its wall time so far.
    pub fn report(&self, results: Vec<model::ScenarioResult>, quick: bool) -> model::RunReport {
        let mut rep = model::RunReport::new(
            self.environment.clone(),
            quick,
            self.started,
            self.ids.clone(),
            results,
        );
        rep.seconds = (chrono::Utc::now() - self.started).as_seconds_f64();
        rep
    }
}

/// Opens a run: root, the liveness lock, the test parent, scratch and report directories
/// checked (`writeback`: a scenario writes through the page cache), signal handlers, the
/// machine described, progress on (typed events with `--events`), the start event sent.
pub fn open_session(place: &Place, o: &Options, writeback: bool) -> Result<Session, Error> {
    if !nix::unistd::geteuid().is_root() {
        return Err(untestable(
            "memcgtest needs root to run scenarios (it creates cgroups and writes /proc/sys/vm)",
        ));
    }
    // Held for the whole run: `cleanup` leaves this run's groups and files alone.
    let live = own_liveness().map_err(untestable)?;
    let (parent, scratch, slow_scratch) = test_place(place, writeback, o.report_dir)?;
    cleanup::install_signal_handlers();
    let started = chrono::Utc::now();
    // A VM guest (`--events`) runs nothing but memcgtest: no other writer to measure.
    let writers = if o.events {
        env::Writers::Alone
    } else {
        env::Writers::Measure
    };
    let environment = env::gather(place.cgroup, place.parent, place.scratch, true, writers);
    // `--events` (a VM guest): stdout carries typed events for the host, not the format.
    let mode = if o.events {
        progress::Mode::Events
    } else if std::io::stderr().is_terminal() {
        progress::Mode::Live
    } else {
        progress::Mode::Off
    };
    let ctx = crate::exec::Context {
        parent,
        scratch,
        slow_scratch,
        wait_sysctls: !o.no_wait,
        quick: o.quick,
        dedicated: o.dedicated,
        timeout: o.timeout,
        stall: match o.stall {
            Some(d) if d.is_zero() => None,
            Some(d) => Some(d),
            None if o.quick => Some(crate::exec::watchdog::QUICK_STALL),
            None => Some(crate::exec::watchdog::STALL),
        },
        keep_going: o.keep_going,
        machine: crate::sys::proc::machine(Path::new(crate::sys::proc::PROC)),
        progress: crate::exec::Progress::new(mode),
    };
    let ids = report::kcidb::Ids::new(o.origin, o.build_id, &environment, started);
    let header = model::RunReport::new(environment.clone(), o.quick, started, ids.clone(), vec![]);
    ctx.progress.event(&model::Event::Start {
        format: o.format,
        report: Box::new(header),
    });
    Ok(Session {
        ctx,
        environment,
        started,
        ids,
        _live: live,
    })
}

/// Ends a run: the finish event, the format on stdout (unless events are streamed), the report
/// directory; returns the exit code (`verdict` from the results, kept bad when the report
/// cannot be written).
pub fn close_session(
    s: &Session,
    rep: &model::RunReport,
    o: &Options,
    verdict: Result<u8, Error>,
) -> Result<u8, Error> {
    s.ctx.progress.event(&model::Event::Finish {
        seconds: rep.seconds,
    });
    if !o.events {
        print!("{}", report::render(rep, o.format));
    }
    // With --events (the guest of `memcgtest vm`), the reader of the events renders the text
    // formats, the timelines and index.html; the samples (CSV) are what only this machine has.
    match o.report_dir {
        Some(dir) if o.events => {
            with_report(verdict, report::write_samples(rep, dir, false).map(drop))
        }
        Some(dir) => with_report(verdict, report::write_dir(rep, dir)),
        None => verdict,
    }
}

/// Runs the selected scenarios and renders the report; the verdict is the run's exit code
/// (see [`run_verdict`]).
pub fn run_scenarios(place: &Place, o: &Options) -> Result<u8, Error> {
    let selected = select(place.scenario_dir, o.names, o.sample_interval)?;
    let writeback = selected.iter().any(|s| s.requires.writeback);
    let session = open_session(place, o, writeback)?;
    let in_vm = std::env::var_os("MEMCGTEST_KMSG").is_some();
    let results = run_each(&session.ctx, &selected, o, in_vm);
    let rep = session.report(results, o.quick);
    let demands = Demands {
        strict: o.strict,
        performance: o.require_performance,
    };
    let verdict = run_verdict(&rep.scenarios, cleanup::interrupted(), demands);
    close_session(&session, &rep, o, verdict)
}

/// The scenarios `names` asks for (all when empty), with `--sample-interval` applied.
fn select(
    scenario_dir: Option<&Path>,
    names: &[String],
    sample_interval: Option<Duration>,
) -> Result<Vec<scenario::Scenario>, Error> {
    let all = scenario::load_all(scenario_dir)?;
    let mut selected = Vec::new();
    for n in names {
        match all.iter().find(|s| &s.name == n) {
            Some(s) => selected.push(s.clone()),
            None => {
                let known: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
                return Err(Error::Usage(format!(
                    "no scenario named {n:?} (known: {})",
                    known.join(", ")
                )));
            }
        }
    }
    if names.is_empty() {
        selected = all;
    }
    if let Some(i) = sample_interval {
        for s in &mut selected {
            s.sample.interval = i;
        }
    }
    Ok(selected)
}

/// Where the run's groups and files go, checked before anything runs: the test parent (with the
/// memory controller for its children), the scratch directory (with writeback when a scenario
/// needs it) and the report directory.
fn test_place(
    place: &Place,
    writeback: bool,
    report_dir: Option<&Path>,
) -> Result<(cgroup::Cgroup, PathBuf, Option<PathBuf>), Error> {
    let layout = detect::detect().map_err(untestable)?;
    let parent = env::test_parent(&layout, place.cgroup, place.parent).map_err(untestable)?;
    if !writable_dir(&parent.path) {
        return Err(untestable(format!(
            "cannot create cgroups below {}",
            parent.path.display()
        )));
    }
    if parent.version == cgroup::Version::V2
        && let Err(e) = parent.enable_memory_for_children()
    {
        return Err(untestable(format!(
            "cannot enable the memory controller below {} ({e}). cgroup v2 forbids it in a group \
                 that has processes of its own. Delegate an empty subtree and pass it with --parent, e.g. \
                 `mkdir /sys/fs/cgroup/memcgtest.slice && echo +memory > /sys/fs/cgroup/cgroup.subtree_control` \
                 then --parent /sys/fs/cgroup/memcgtest.slice, or run under `systemd-run --scope -p Delegate=yes`",
            parent.path.display()
        )));
    }
    // The scratch and report directories are this machine's: checked before anything runs.
    let scratch = scratch_dir(place.scratch, "--scratch", writeback)?;
    let slow_scratch = match place.slow_scratch {
        Some(d) => Some(scratch_dir(d, "--slow-scratch", writeback)?),
        None => None,
    };
    if let Some(dir) = report_dir
        && !(std::fs::create_dir_all(dir).is_ok() && writable_dir(dir))
    {
        return Err(untestable(format!(
            "report directory {} cannot be created or is not writable",
            dir.display()
        )));
    }
    Ok((parent, scratch, slow_scratch))
}

/// A scratch directory (`flag`) checked: it exists, is writable and, when a scenario needs
/// writeback, on a filesystem that has it.
fn scratch_dir(dir: &Path, flag: &str, writeback: bool) -> Result<PathBuf, Error> {
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    if !writable_dir(&canonical) {
        return Err(untestable(format!(
            "scratch directory {} is missing, not a directory or not writable; pass {flag} DIR",
            dir.display()
        )));
    }
    let fstype = crate::sys::proc::fstype_of(&canonical);
    if writeback && !env::supports_writeback(fstype.as_deref()) {
        return Err(untestable(format!(
            "scratch directory {} is on {}, which has no writeback: pages there never become dirty in \
             memory.stat. Pass {flag} DIR on ext4, xfs or btrfs",
            dir.display(),
            fstype.as_deref().unwrap_or("an unknown filesystem")
        )));
    }
    Ok(canonical)
}

/// Runs the scenarios one after another (until interrupted), with progress and remembered
/// durations.
fn run_each(
    ctx: &crate::exec::Context,
    selected: &[scenario::Scenario],
    o: &Options,
    in_vm: bool,
) -> Vec<model::ScenarioResult> {
    let quick = o.quick;
    let mut durations = if in_vm {
        progress::Durations::none()
    } else {
        progress::Durations::load()
    };
    let keys: Vec<String> = selected
        .iter()
        .map(|s| progress::key(&s.name, quick))
        .collect();
    let mut results = Vec::new();
    for (i, sc) in selected.iter().enumerate() {
        if cleanup::interrupted() {
            break;
        }
        let (expected, after) = durations.expected(&keys, i);
        ctx.progress.scenario(
            (i + 1, selected.len()),
            &sc.name,
            &sc.summary,
            expected,
            after,
        );
        kmsg(&format!("{}{}", vm::console::BEGIN, sc.name));
        let r = runner::run_scenario(ctx, sc);
        kmsg(&format!("{}{}", vm::console::END, sc.name));
        ctx.progress.done(&r);
        // Skips and errors end early: only whole runs say how long the next one takes.
        if matches!(
            r.status,
            model::Status::Pass | model::Status::Fail | model::Status::Known
        ) {
            durations.seconds.insert(keys[i].clone(), r.seconds);
        }
        let failed = r.status == model::Status::Fail;
        results.push(r);
        if failed && o.fail_fast {
            break;
        }
    }
    ctx.progress.finish();
    durations.save();
    results
}

/// The run's exit once its report was written or not. A kernel found bad stays bad (1) when the
/// report cannot be written (the error goes to stderr): git bisect would take 125 for "skip" and
/// let the bad commit escape. Otherwise an unwritable report is the machine's (125); a verdict
/// that is already an error stays that error.
pub fn with_report(verdict: Result<u8, Error>, written: anyhow::Result<()>) -> Result<u8, Error> {
    match (verdict, written) {
        (v, Ok(())) => v,
        (Ok(exit::FAIL), Err(e)) => {
            eprintln!("memcgtest: report: {e:#}");
            Ok(exit::FAIL)
        }
        (Ok(_), Err(e)) => Err(Error::Environment(format!("report: {e:#}"))),
        (Err(v), Err(e)) => {
            eprintln!("memcgtest: report: {e:#}");
            Err(v)
        }
    }
}

/// The exit of a run from its scenarios' results, in this order: interrupted by a signal: 125
/// (the run is incomplete, whatever it saw); a failed check or a scenario the kernel stopped
/// (`Error::Kernel`: worker killed, timeout): 1; a scenario the machine stopped: 125 with its
/// reason; nothing judged (every scenario skipped, none for a busy machine only: see
/// `ScenarioResult::judged`): 125; with `--require-performance`, a performance check without a
/// verdict: 125; else 0. A known failure counts as a pass, or with `strict` as a failure.
pub fn run_verdict(
    results: &[model::ScenarioResult],
    interrupted: bool,
    demands: Demands,
) -> Result<u8, Error> {
    use model::Status;
    if interrupted {
        return Err(Error::Interrupted);
    }
    let failed = |r: &&model::ScenarioResult| {
        r.status == Status::Fail
            || (demands.strict && r.status == Status::Known)
            || r.error
                .as_ref()
                .is_some_and(|e| e.exit_code() == exit::FAIL)
    };
    if results.iter().any(|r| failed(&r)) {
        return Ok(exit::FAIL);
    }
    if let Some(r) = results.iter().find(|r| r.status == Status::Error) {
        let e = r.error.clone().unwrap_or(Error::Internal(r.reason.clone()));
        return Err(match e {
            Error::Environment(m) => Error::Environment(format!("{} could not run: {m}", r.name)),
            other => other,
        });
    }
    if !results.iter().any(|r| r.judged()) {
        return Err(untestable("every scenario was skipped"));
    }
    if demands.performance {
        if !results
            .iter()
            .flat_map(|r| &r.checks)
            .any(|c| c.performance)
        {
            return Err(untestable(
                "--require-performance: no performance check (ratio, throughput) ran",
            ));
        }
        let left = results.iter().find_map(|r| {
            let c = r.performance_unjudged().next()?;
            Some(format!("{}: {}: {}", r.name, c.name, c.detail))
        });
        if let Some(why) = left {
            return Err(Error::Environment(format!(
                "the performance was not judged (--require-performance): {why}"
            )));
        }
    }
    Ok(exit::OK)
}

/// Takes this process's liveness lock (see `lock.rs`): while it is held, `cleanup` leaves this
/// run's groups and files alone.
pub fn own_liveness() -> anyhow::Result<lock::LiveLock> {
    lock::LiveLock::acquire(Path::new(lock::RUN_DIR), std::process::id() as i32)
}

/// An existing directory this process may create files in.
pub fn writable_dir(p: &Path) -> bool {
    p.is_dir() && nix::unistd::access(p, nix::unistd::AccessFlags::W_OK).is_ok()
}

/// In a VM (MEMCGTEST_KMSG set by the guest init), marks scenario boundaries in the kernel log so
/// the host can tell which scenario a kernel splat happened in.
fn kmsg(msg: &str) {
    if std::env::var_os("MEMCGTEST_KMSG").is_some() {
        let _ = std::fs::write("/dev/kmsg", format!("{msg}\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::error::{Error, exit};
    use model::{ScenarioResult, Status};

    fn result(status: Status, error: Option<Error>) -> ScenarioResult {
        let reason = error.as_ref().map(|e| e.to_string()).unwrap_or_default();
        ScenarioResult {
            error,
            ..crate::model::fixtures::result("s", status, &reason)
        }
    }

    fn code(results: &[ScenarioResult], interrupted: bool) -> u8 {
        match run_verdict(results, interrupted, Demands::default()) {
            Ok(v) => v,
            Err(e) => e.exit_code(),
        }
    }

    #[test]
    fn run_exit_codes() {
        let pass = || result(Status::Pass, None);
        let fail = || result(Status::Fail, None);
        let skip = || result(Status::Skip, None);
        let kernel = || result(Status::Error, Some(Error::Kernel("timeout".into())));
        let machine = || result(Status::Error, Some(Error::Environment("ENOSPC".into())));
        assert_eq!(code(&[pass(), skip()], false), 0);
        assert_eq!(code(&[pass(), fail()], false), 1);
        // A timeout or a worker the kernel killed blames the kernel.
        assert_eq!(code(&[pass(), kernel()], false), 1);
        // A disk full in the scratch directory does not.
        assert_eq!(code(&[pass(), machine()], false), 125);
        // A failed check wins over the machine's trouble elsewhere: the kernel is bad.
        assert_eq!(code(&[machine(), fail()], false), 1);
        // Nothing passed: nothing was tested.
        assert_eq!(code(&[skip(), skip()], false), 125);
        // A signal makes the run incomplete, whatever it saw.
        assert_eq!(code(&[fail()], true), 125);
        let interrupted = result(Status::Error, Some(Error::Interrupted));
        assert_eq!(code(&[pass(), interrupted], false), 125);
        let e = run_verdict(&[pass(), machine()], false, Demands::default()).unwrap_err();
        assert!(e.to_string().contains("s could not run: ENOSPC"), "{e}");
    }

    /// A skip whose only unjudged purpose is inconclusive (the machine was busy) after other
    /// checks passed judged the kernel: 0, or 125 with --require-performance; a skip for a
    /// condition never reached judged nothing.
    #[test]
    fn a_busy_skip_judged_the_accounting() {
        use crate::model::Outcome;
        use crate::model::fixtures::check;
        let skip = |purpose: Outcome| {
            let mut ratio = check("ratio(p: write a/b)", purpose);
            (ratio.purpose, ratio.performance) = (true, true);
            let mut r = result(Status::Skip, None);
            r.checks = vec![check("under-limit(a)", Outcome::Pass), ratio];
            r
        };
        let busy = skip(Outcome::Inconclusive);
        assert!(busy.judged());
        assert_eq!(code(std::slice::from_ref(&busy), false), 0);
        let perf = Demands {
            performance: true,
            ..Demands::default()
        };
        let e = run_verdict(std::slice::from_ref(&busy), false, perf).unwrap_err();
        assert_eq!(e.exit_code(), 125);
        assert!(e.to_string().contains("ratio(p: write a/b)"), "{e}");
        // A failure elsewhere still blames the kernel.
        let fail = result(Status::Fail, None);
        assert_eq!(run_verdict(&[busy, fail], false, perf).unwrap(), 1);
        let unreached = skip(Outcome::NotExercised);
        assert!(!unreached.judged());
        assert_eq!(code(&[unreached], false), 125);
        // An accounting check left inconclusive by other writers: an accounting bug would look
        // the same, so nothing was judged.
        let mut blind = skip(Outcome::Pass);
        let mut probe = check("dirty-probe(a)", Outcome::Inconclusive);
        probe.purpose = true;
        blind.checks.push(probe);
        assert!(!blind.judged());
        assert_eq!(code(&[blind], false), 125);
        // Only implied invariants passed beside the busy rates: nothing the scenario declared.
        let mut rates_only = skip(Outcome::Inconclusive);
        rates_only.checks.remove(0);
        let mut held = check("hierarchy(a)", Outcome::Pass);
        held.implied = true;
        rates_only.checks.push(held);
        assert!(!rates_only.judged());
        // Another of its rates was judged (fault-overhead: one of three ratios quiet enough).
        let mut judged_rate = check("ratio(q: fault a/b)", Outcome::Pass);
        (judged_rate.purpose, judged_rate.performance) = (true, true);
        rates_only.checks.push(judged_rate);
        assert!(rates_only.judged());
        // A pass whose performance check was inconclusive: 0, or 125 when required.
        let mut pass = skip(Outcome::Inconclusive);
        pass.status = Status::Pass;
        assert_eq!(code(&[pass.clone()], false), 0);
        assert!(run_verdict(std::slice::from_ref(&pass), false, perf).is_err());
        // Nothing in the selection measures speed: no performance verdict at all, 125.
        pass.checks.retain(|c| !c.performance);
        assert_eq!(code(std::slice::from_ref(&pass), false), 0);
        let e = run_verdict(&[pass], false, perf).unwrap_err();
        assert!(e.to_string().contains("no performance check"), "{e}");
    }

    /// A known failure exits 0 (and counts as something tested), with --strict 1.
    #[test]
    fn a_known_failure_is_0_unless_strict() {
        let known = || result(Status::Known, None);
        let skip = || result(Status::Skip, None);
        let strict = Demands {
            strict: true,
            ..Demands::default()
        };
        assert_eq!(
            run_verdict(&[known(), skip()], false, Demands::default()).unwrap(),
            0
        );
        assert_eq!(run_verdict(&[known(), skip()], false, strict).unwrap(), 1);
    }

    #[test]
    fn a_failed_run_stays_1_when_the_report_cannot_be_written() {
        let unwritable = || {
            Err(anyhow::anyhow!(
                "write /r/results.json: No space left on device"
            ))
        };
        let code = |r: Result<u8, Error>| r.unwrap_or_else(|e| e.exit_code());
        assert_eq!(code(with_report(Ok(exit::FAIL), unwritable())), 1);
        assert_eq!(code(with_report(Ok(exit::OK), unwritable())), 125);
        assert_eq!(
            code(with_report(Err(Error::Interrupted), unwritable())),
            125
        );
        assert_eq!(code(with_report(Ok(exit::OK), Ok(()))), 0);
        assert_eq!(code(with_report(Ok(exit::FAIL), Ok(()))), 1);
    }
}
