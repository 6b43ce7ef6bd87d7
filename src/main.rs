//! memcgtest's command line; the library is `lib.rs`. See README.md.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use memcgtest::error::{Error, exit};
use memcgtest::exec::{runner, workload};
use memcgtest::sys::cgroup::detect::{self, Choice};
use memcgtest::sys::{cgroup, cleanup, lock, sysctl};
use memcgtest::{ab, compare, env, model, progress, report, scenario, vm};

mod cli;

use cli::{Cli, Command, Format};

fn main() -> ExitCode {
    // In a VM this binary is the initramfs's /init.
    if std::process::id() == 1 && std::env::args().next().as_deref() == Some("/init") {
        vm::guest::init_main();
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    // A panic still unwinds through the runner's guards (cleanup); then it is a tool failure.
    let result = std::panic::catch_unwind(|| run(cli)).unwrap_or_else(|_| {
        Err(Error::Internal(
            "panic; test cgroups were cleaned up".into(),
        ))
    });
    match result {
        Ok(verdict) => ExitCode::from(verdict),
        Err(e) => {
            match e {
                // file:line:column first, as compilers print it, for editors.
                Error::Scenario(_) => eprintln!("{e}"),
                _ => eprintln!("memcgtest: {e}"),
            }
            ExitCode::from(e.exit_code())
        }
    }
}

/// Runs a command. `Ok` is the verdict of a command that finished and reported it: `exit::OK`,
/// `exit::FAIL` (a check failed, a scenario the kernel stopped, a regression), or for `vm` the
/// guest's code passed through. Everything else is an [`Error`], whose kind is the exit code.
fn run(cli: Cli) -> Result<u8, Error> {
    match &cli.command {
        Command::Worker { job } => {
            // Exits 1 when a system call failed for the kernel's reasons, else 125 (see
            // `Error::of_worker`); the runner reads the code back (`Error::of_worker_status`).
            workload::worker_main(job).map_err(|e| Error::of_worker(&e))?;
            Ok(exit::OK)
        }
        Command::Env { json } => {
            // The charge-moving probe creates a marked group: held live while it exists.
            let _live = own_liveness().ok();
            let e = env::gather(cli.cgroup, cli.parent.as_deref(), &cli.scratch, true);
            if *json {
                println!("{}", serde_json::to_string_pretty(&e).map_err(internal)?);
            } else {
                print!("{}", env::render(&e));
            }
            Ok(exit::OK)
        }
        Command::List { json } => list(&cli, *json),
        Command::Check { files } => check_files(files),
        Command::Completions { shell } => {
            clap_complete::generate(
                *shell,
                &mut Cli::command(),
                "memcgtest",
                &mut std::io::stdout(),
            );
            Ok(exit::OK)
        }
        Command::Man => {
            clap_mangen::Man::new(Cli::command())
                .render(&mut std::io::stdout())
                .map_err(internal)?;
            Ok(exit::OK)
        }
        Command::Cleanup => cleanup_leftovers(&cli),
        Command::Vm { .. } => run_vm(&cli),
        Command::Ab { .. } => run_ab(&cli),
        Command::Run {
            names,
            format,
            report,
            origin,
            build_id,
            quick,
            timeout,
            stall,
            sample_interval,
            no_wait,
            events,
        } => {
            if !report::kcidb::valid_origin(origin) {
                return Err(Error::Usage(format!(
                    "--origin {origin:?}: KCIDB wants [a-z0-9_]+"
                )));
            }
            run_scenarios(
                &cli,
                names,
                (*format, report.as_deref(), *events),
                (origin, build_id.as_deref()),
                *quick,
                (*timeout, *stall, *sample_interval, *no_wait),
            )
        }
        Command::Compare {
            base,
            new,
            threshold,
            per_run,
            format,
        } => compare_results(base, new, *threshold, *per_run, *format),
    }
}

/// `memcgtest list`.
fn list(cli: &Cli, json: bool) -> Result<u8, Error> {
    let all = scenario::load_all(cli.scenario_dir.as_deref())?;
    if json {
        let v: Vec<serde_json::Value> = all
            .iter()
            .map(|s| {
                serde_json::json!({
                    "name": s.name, "summary": s.summary, "description": s.description, "origin": s.origin,
                    "requires": s.requires, "source": s.source,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v).map_err(internal)?);
    } else {
        for s in &all {
            let cg: Vec<&str> = s.requires.cgroup.iter().map(|v| v.as_str()).collect();
            println!("{:<24} {}", s.name, s.summary);
            println!(
                "{:<24} origin: \"{}\"{}; needs cgroup {}{}{}",
                "",
                s.origin.subject,
                s.origin
                    .commit
                    .as_ref()
                    .map(|c| format!(" ({c})"))
                    .unwrap_or_default(),
                cg.join("/"),
                if s.requires.writeback {
                    ", a writeback filesystem"
                } else {
                    ""
                },
                s.requires
                    .features
                    .iter()
                    .map(|f| format!(", {}", f.name()))
                    .collect::<String>()
            );
        }
    }
    Ok(exit::OK)
}

/// `memcgtest check`.
fn check_files(files: &[PathBuf]) -> Result<u8, Error> {
    // Every file is checked; errors go to stderr in file order, the last one through
    // `main` (exit 2).
    let mut bad: Option<Error> = None;
    for f in files {
        match scenario::load_file(f) {
            Ok(s) => println!(
                "{}: ok ({}: {} phases, {} checks)",
                f.display(),
                s.name,
                s.phases.len(),
                s.checks.len()
            ),
            Err(e) => {
                if let Some(earlier) = bad.replace(e.into()) {
                    eprintln!("{earlier}");
                }
            }
        }
    }
    bad.map_or(Ok(exit::OK), Err)
}

/// `memcgtest cleanup`.
fn cleanup_leftovers(cli: &Cli) -> Result<u8, Error> {
    let roots = cleanup_roots(cli.parent.as_deref())?;
    let scratch: Vec<PathBuf> = std::iter::once(&cli.scratch)
        .chain(&cli.slow_scratch)
        .filter_map(|d| d.canonicalize().ok())
        .collect();
    let (removed, failed) = cleanup::clean(&cleanup::Places {
        cgroup_roots: &roots,
        scratch_dirs: &scratch,
        run_dir: Path::new(lock::RUN_DIR),
        proc_sys: Path::new(sysctl::PROC_SYS),
    });
    for r in &removed {
        println!("removed {r}");
    }
    for f in &failed {
        eprintln!("memcgtest: cleanup: {f}");
    }
    if removed.is_empty() && failed.is_empty() {
        println!("nothing to clean up");
    }
    // Leftovers that would not go are this machine's problem, not the kernel under test's.
    if failed.is_empty() {
        Ok(exit::OK)
    } else {
        Err(Error::Environment(format!(
            "cleanup: {} leftovers could not be removed",
            failed.len()
        )))
    }
}

/// The VM options of `vm` and `ab`; kernel, modules and report are set per boot.
fn vm_options(cli: &Cli, a: &cli::VmArgs, guest: &[String]) -> vm::Options {
    vm::Options {
        kernel: PathBuf::new(),
        modules: None,
        cgroup: match cli.cgroup {
            Choice::V1 => "v1".into(),
            _ => "v2".into(),
        },
        accel: a.accel,
        cpus: a.cpus.unwrap_or_else(|| {
            memcgtest::sys::proc::machine(Path::new(memcgtest::sys::proc::PROC))
                .cpus
                .min(4) as u32
        }),
        memory_mib: a.memory >> 20,
        disk_mib: a.disk >> 20,
        slow_disk_bps: a.slow_disk_bps,
        timeout: a.timeout,
        console_log: None,
        report: None,
        allow_splats: a.allow_splats,
        show_console: a.show_console,
        selftest: None,
        swap: a.swap,
        work_parent: cli.scratch.clone(),
        scenario_dir: cli.scenario_dir.clone(),
        guest_args: guest.to_vec(),
        qemu: a.qemu.clone(),
    }
}

/// `memcgtest vm`.
fn run_vm(cli: &Cli) -> Result<u8, Error> {
    let Command::Vm {
        kernel,
        modules,
        console_log,
        report,
        selftest,
        vm: a,
        guest,
    } = &cli.command
    else {
        unreachable!()
    };
    // Its work directory in the scratch directory is marked: held live while it exists.
    let _live = own_liveness().ok();
    let opts = vm::Options {
        kernel: kernel.clone(),
        modules: modules.clone(),
        console_log: console_log.clone(),
        report: report.clone(),
        selftest: selftest.clone(),
        ..vm_options(cli, a, guest)
    };
    Ok(vm::run(&opts)?)
}

/// `memcgtest ab`.
fn run_ab(cli: &Cli) -> Result<u8, Error> {
    let Command::Ab {
        base,
        new,
        base_modules,
        new_modules,
        rounds,
        threshold,
        format,
        report,
        vm: a,
        guest,
    } = &cli.command
    else {
        unreachable!()
    };
    if guest.first().is_some_and(|c| c != "run")
        || guest
            .iter()
            .any(|g| g == "--format" || g.starts_with("--format="))
    {
        return Err(Error::Usage(
            "ab: the guest command is run [NAMES] [RUN OPTIONS], without --format (ab's own --format chooses stdout)".into(),
        ));
    }
    let _live = own_liveness().ok();
    let kernels = ab::Kernels {
        base: (base.clone(), base_modules.clone()),
        new: (new.clone(), new_modules.clone()),
    };
    let rep = ab::run(
        &vm_options(cli, a, guest),
        &kernels,
        *rounds,
        *threshold,
        report.as_deref(),
    )?;
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&rep).map_err(internal)?),
        _ => print!("{}", ab::render(&rep)),
    }
    eprintln!("memcgtest ab: {} (exit {})", rep.verdict, rep.exit);
    Ok(rep.exit)
}

/// `memcgtest compare`.
fn compare_results(
    base: &Path,
    new: &Path,
    threshold: f64,
    per_run: bool,
    format: Format,
) -> Result<u8, Error> {
    let (b, n) = match (compare::load(base), compare::load(new)) {
        (Ok(b), Ok(n)) => (b, n),
        (Err(e), _) | (_, Err(e)) => return Err(Error::Usage(format!("{e:#}"))),
    };
    let rows = if per_run {
        compare::compare(&compare::per_run(&b), &compare::per_run(&n), threshold)
    } else {
        compare::compare(&b, &n, threshold)
    };
    if rows.is_empty() {
        return Err(Error::Usage(format!(
            "{} and {} have no measurement in common",
            base.display(),
            new.display()
        )));
    }
    let costs = compare::costs(&b, &n);
    match format {
        Format::Json => {
            let v = serde_json::json!({ "measurements": rows, "cost": costs });
            println!("{}", serde_json::to_string_pretty(&v).map_err(internal)?)
        }
        _ => print!(
            "{}{}",
            compare::render(&rows, threshold),
            compare::render_costs(&costs)
        ),
    }
    Ok(
        if rows
            .iter()
            .any(|r| r.verdict == compare::Verdict::Regression)
        {
            exit::FAIL
        } else {
            exit::OK
        },
    )
}

/// A failure of memcgtest itself (serializing its own results): 125.
fn internal(e: impl std::fmt::Display) -> Error {
    Error::Internal(e.to_string())
}

/// This machine cannot test at all: 125.
fn untestable(msg: impl std::fmt::Display) -> Error {
    Error::Environment(format!("nothing can be tested: {msg}"))
}

fn run_scenarios(
    cli: &Cli,
    names: &[String],
    (format, report_dir, events): (report::Format, Option<&Path>, bool),
    (origin, build_id): (&str, Option<&str>),
    quick: bool,
    (timeout, stall, sample_interval, no_wait): (
        Option<std::time::Duration>,
        Option<std::time::Duration>,
        Option<std::time::Duration>,
        bool,
    ),
) -> Result<u8, Error> {
    let selected = select(cli, names, sample_interval)?;
    if !nix::unistd::geteuid().is_root() {
        return Err(untestable(
            "memcgtest run needs root (it creates cgroups and writes /proc/sys/vm)",
        ));
    }
    // Held for the whole run: `cleanup` leaves this run's groups and files alone.
    let _live = own_liveness().map_err(untestable)?;
    let (parent, scratch, slow_scratch) = test_place(cli, &selected, report_dir)?;
    cleanup::install_signal_handlers();
    let started = chrono::Utc::now();
    let environment = env::gather(cli.cgroup, cli.parent.as_deref(), &cli.scratch, true);
    let in_vm = std::env::var_os("MEMCGTEST_KMSG").is_some();
    // `--events` (a VM guest): stdout carries typed events for the host, not the format.
    let mode = if events {
        progress::Mode::Events
    } else if std::io::stderr().is_terminal() {
        progress::Mode::Live
    } else {
        progress::Mode::Off
    };
    let ctx = runner::Context {
        parent,
        scratch,
        slow_scratch,
        wait_sysctls: !no_wait,
        quick,
        timeout,
        stall: match stall {
            Some(d) if d.is_zero() => None,
            Some(d) => Some(d),
            None if quick => Some(memcgtest::exec::watchdog::QUICK_STALL),
            None => Some(memcgtest::exec::watchdog::STALL),
        },
        machine: memcgtest::sys::proc::machine(Path::new(memcgtest::sys::proc::PROC)),
        progress: runner::Progress::new(mode),
    };
    let ids = report::kcidb::Ids::new(origin, build_id, &environment, started);
    let header = model::RunReport::new(environment.clone(), quick, started, ids.clone(), vec![]);
    ctx.progress.event(&model::Event::Start {
        format,
        report: Box::new(header),
    });
    let results = run_each(&ctx, &selected, quick, in_vm);
    let mut rep = model::RunReport::new(environment, quick, started, ids, results);
    rep.seconds = (chrono::Utc::now() - started).as_seconds_f64();
    ctx.progress.event(&model::Event::Finish {
        seconds: rep.seconds,
    });
    if !events {
        print!("{}", report::render(&rep, format));
    }
    let verdict = run_verdict(&rep.scenarios, cleanup::interrupted());
    match report_dir {
        Some(dir) => with_report(verdict, report::write_dir(&rep, dir)),
        None => verdict,
    }
}

/// The scenarios `names` asks for (all when empty), with `--sample-interval` applied.
fn select(
    cli: &Cli,
    names: &[String],
    sample_interval: Option<std::time::Duration>,
) -> Result<Vec<scenario::Scenario>, Error> {
    let all = scenario::load_all(cli.scenario_dir.as_deref())?;
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
    cli: &Cli,
    selected: &[scenario::Scenario],
    report_dir: Option<&Path>,
) -> Result<(cgroup::Cgroup, PathBuf, Option<PathBuf>), Error> {
    let layout = detect::detect().map_err(untestable)?;
    let parent =
        env::test_parent(&layout, cli.cgroup, cli.parent.as_deref()).map_err(untestable)?;
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
    let writeback = selected.iter().any(|s| s.requires.writeback);
    let scratch = scratch_dir(&cli.scratch, "--scratch", writeback)?;
    let slow_scratch = match &cli.slow_scratch {
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
    let fstype = memcgtest::sys::proc::fstype_of(&canonical);
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
    ctx: &runner::Context,
    selected: &[scenario::Scenario],
    quick: bool,
    in_vm: bool,
) -> Vec<model::ScenarioResult> {
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
        if matches!(r.status, model::Status::Pass | model::Status::Fail) {
            durations.seconds.insert(keys[i].clone(), r.seconds);
        }
        results.push(r);
    }
    ctx.progress.finish();
    durations.save();
    results
}

/// The run's exit once its report was written or not. A kernel found bad stays bad (1) when the
/// report cannot be written (the error goes to stderr): git bisect would take 125 for "skip" and
/// let the bad commit escape. Otherwise an unwritable report is the machine's (125); a verdict
/// that is already an error stays that error.
fn with_report(verdict: Result<u8, Error>, written: anyhow::Result<()>) -> Result<u8, Error> {
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
/// reason; nothing passed (every scenario skipped): 125; else 0.
fn run_verdict(results: &[model::ScenarioResult], interrupted: bool) -> Result<u8, Error> {
    use model::Status;
    if interrupted {
        return Err(Error::Interrupted);
    }
    let failed = |r: &&model::ScenarioResult| {
        r.status == Status::Fail
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
    if !results.iter().any(|r| r.status == Status::Pass) {
        return Err(untestable("every scenario was skipped"));
    }
    Ok(exit::OK)
}

/// Takes this process's liveness lock (see `lock.rs`).
fn own_liveness() -> anyhow::Result<lock::LiveLock> {
    lock::LiveLock::acquire(Path::new(lock::RUN_DIR), std::process::id() as i32)
}

/// Where `cleanup` looks for cgroups: below a validated `--parent`, else the whole memory
/// hierarchy (v1) and cgroup2 tree, wherever a run with any `--parent` could have put them.
fn cleanup_roots(parent: Option<&Path>) -> Result<Vec<cgroup::Cgroup>, Error> {
    let layout = detect::detect().map_err(|e| Error::Environment(e.to_string()))?;
    let (mut roots, mut refused) = (Vec::new(), Vec::new());
    for c in [Choice::V1, Choice::V2] {
        let Ok(h) = layout.pick(c) else { continue };
        match parent {
            Some(p) => match env::checked_parent(p, &h.mount_point, h.version) {
                Ok(p) => roots.push(cgroup::Cgroup::new(p, h.version)),
                Err(e) => refused.push(e),
            },
            None => roots.push(cgroup::Cgroup::new(h.mount_point.clone(), h.version)),
        }
    }
    if parent.is_some() && roots.is_empty() {
        return Err(Error::Environment(format!(
            "cleanup: {}",
            refused.join("; ")
        )));
    }
    Ok(roots)
}

/// An existing directory this process may create files in.
fn writable_dir(p: &Path) -> bool {
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
    use model::{ScenarioResult, Status};

    fn result(status: Status, error: Option<Error>) -> ScenarioResult {
        ScenarioResult {
            name: "s".into(),
            summary: String::new(),
            status,
            reason: error.as_ref().map(|e| e.to_string()).unwrap_or_default(),
            cgroup_version: None,
            seconds: 0.0,
            samples: 0,
            phases: vec![],
            checks: vec![],
            notes: vec![],
            moves: vec![],
            measurements: vec![],
            record: None,
            error,
        }
    }

    fn code(results: &[ScenarioResult], interrupted: bool) -> u8 {
        match run_verdict(results, interrupted) {
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
        let e = run_verdict(&[pass(), machine()], false).unwrap_err();
        assert!(e.to_string().contains("s could not run: ENOSPC"), "{e}");
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
