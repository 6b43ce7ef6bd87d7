//! memcgtest's command line; the library is `lib.rs`. See README.md.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use memcgtest::exec::workload;
use memcgtest::model::Version;
use memcgtest::model::error::{Error, exit};
use memcgtest::suite;
use memcgtest::sys::cgroup::detect::{self, Choice};
use memcgtest::sys::env;
use memcgtest::sys::{cgroup, cleanup, lock, sysctl};
use memcgtest::{ab, compare, contracts, coverage, mutate, report, scenario, series, vm};

mod cli;

use cli::{Cli, Command, CoverageFormat, Format};

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
    if cli.cgroup == Choice::Both && !matches!(cli.command, Command::Series { .. }) {
        return Err(Error::Usage(
            "--cgroup both is for `memcgtest series` (each patch under v1 and v2)".into(),
        ));
    }
    match &cli.command {
        Command::Worker { job } => {
            // Exits 1 when a system call failed for the kernel's reasons, else 125 (see
            // `Error::of_worker`); the runner reads the code back (`Error::of_worker_status`).
            workload::worker_main(job).map_err(|e| Error::of_worker(&e))?;
            Ok(exit::OK)
        }
        Command::Env { output } => show_env(&cli, output.format()),
        Command::List { output } => list(&cli, output.format()),
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
        Command::Contracts {
            results,
            format,
            require,
        } => show_contracts(&cli, results, *format, *require),
        Command::Coverage {
            results,
            format,
            require,
            matrix,
        } => show_coverage(&cli, results, matrix, *format, *require),
        Command::Vm { .. } => run_vm(&cli),
        Command::Ab { .. } => run_ab(&cli),
        Command::Series { .. } => run_series(&cli),
        Command::Mutate { .. } => run_mutate(&cli),
        Command::Run { .. } => run_suite(&cli),
        Command::Compare {
            base,
            new,
            threshold,
            pool_repetitions,
            format,
            behaviour,
            fail_on_change,
            ..
        } => match behaviour {
            true => compare::behaviour::command(
                base,
                new,
                matches!(format, Format::Json),
                *fail_on_change,
            ),
            false => compare_results(base, new, *threshold, *pool_repetitions, *format),
        },
        Command::Explore { .. } => run_explore(&cli),
    }
}

/// The environment, with the probes that make a throw-away group (held live while it exists:
/// `cleanup` leaves it alone) and the machine's other writers measured.
fn probed_env(cli: &Cli) -> env::EnvInfo {
    let _live = suite::own_liveness().ok();
    env::gather(
        cli.cgroup,
        cli.parent.as_deref(),
        &cli.scratch,
        true,
        env::Writers::Measure,
    )
}

/// `memcgtest env`.
fn show_env(cli: &Cli, format: Format) -> Result<u8, Error> {
    let e = probed_env(cli);
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&e).map_err(internal)?),
        Format::Human => print!("{}", report::env::render(&e)),
    }
    Ok(exit::OK)
}

/// `memcgtest run`.
fn run_suite(cli: &Cli) -> Result<u8, Error> {
    let Command::Run {
        names,
        origin,
        build_id,
        quick,
        sample_interval,
        require_performance,
        fail_fast,
        session,
    } = &cli.command
    else {
        unreachable!()
    };
    if !report::kcidb::valid_origin(origin) {
        return Err(Error::Usage(format!(
            "--origin {origin:?}: KCIDB wants [a-z0-9_]+"
        )));
    }
    suite::run_scenarios(
        &place(cli, cli.scenario_dir.as_deref()),
        &suite::Options {
            names,
            origin,
            build_id: build_id.as_deref(),
            quick: *quick,
            sample_interval: *sample_interval,
            require_performance: *require_performance,
            fail_fast: *fail_fast,
            ..session_options(session)
        },
    )
}

/// `memcgtest explore`.
fn run_explore(cli: &Cli) -> Result<u8, Error> {
    let Command::Explore {
        seed,
        budget,
        cases,
        out,
        shrink_time,
        first,
        session,
    } = &cli.command
    else {
        unreachable!()
    };
    // Explore makes its own scenarios: --scenario-dir is not read.
    let place = place(cli, None);
    let run = session_options(session);
    memcgtest::explore::explore(
        &place,
        &memcgtest::explore::Options {
            run,
            seed: *seed,
            budget: *budget,
            cases: *cases,
            out: out.as_deref(),
            shrink_time: *shrink_time,
            first: *first,
        },
    )
}

/// Where a run's groups and files go, from the global options.
fn place<'a>(cli: &'a Cli, scenario_dir: Option<&'a Path>) -> suite::Place<'a> {
    suite::Place {
        cgroup: cli.cgroup,
        parent: cli.parent.as_deref(),
        scratch: &cli.scratch,
        slow_scratch: cli.slow_scratch.as_deref(),
        scenario_dir,
    }
}

/// The run options `run` and `explore` share; `run`'s own ones at their defaults.
fn session_options(s: &cli::SessionArgs) -> suite::Options<'_> {
    suite::Options {
        names: &[],
        format: s.format,
        report_dir: s.report.as_deref(),
        events: s.events,
        origin: report::kcidb::DEFAULT_ORIGIN,
        build_id: None,
        quick: false,
        timeout: s.timeout,
        stall: s.stall,
        keep_going: s.keep_going,
        sample_interval: None,
        no_wait: s.no_wait,
        dedicated: s.dedicated,
        strict: s.strict,
        require_performance: false,
        fail_fast: false,
    }
}

/// The runs of `run --format json` result files (or directories of them).
fn load_reports(results: &[PathBuf]) -> Result<Vec<memcgtest::model::RunReport>, Error> {
    let mut reports = Vec::new();
    for path in results {
        for v in compare::load(path).map_err(|e| Error::Usage(format!("{e:#}")))? {
            let rep: memcgtest::model::RunReport = serde_json::from_value(v).map_err(|e| {
                Error::Usage(format!("{}: not a run's results: {e}", path.display()))
            })?;
            reports.push(rep);
        }
    }
    Ok(reports)
}

/// `memcgtest contracts`.
fn show_contracts(
    cli: &Cli,
    results: &[PathBuf],
    format: CoverageFormat,
    require: Option<f64>,
) -> Result<u8, Error> {
    let scenarios = scenario::load_all(cli.scenario_dir.as_deref())?;
    let reports = load_reports(results)?;
    let table = contracts::table(&scenarios, &reports);
    match format {
        CoverageFormat::Human => print!("{}", contracts::render(&table)),
        CoverageFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&table).map_err(internal)?
        ),
        CoverageFormat::Markdown => print!("{}", contracts::markdown(&table)),
    }
    let mut versions: Vec<memcgtest::model::Version> = (reports.iter())
        .filter_map(|r| r.environment.cgroup.selected.clone().ok())
        .collect();
    versions.sort_by_key(|v| v.as_str());
    versions.dedup();
    let share = if reports.is_empty() {
        table.judged_pct()
    } else {
        table.reached_pct(&versions)
    };
    match require {
        // The suite falls short, not the kernel: never 1.
        Some(r) if share < r => Err(Error::Usage(format!(
            "promises judged: {share:.1} %, below --require {r} %"
        ))),
        _ => Ok(exit::OK),
    }
}

/// `memcgtest coverage`.
fn show_coverage(
    cli: &Cli,
    results: &[PathBuf],
    matrices: &[PathBuf],
    format: CoverageFormat,
    require: Option<f64>,
) -> Result<u8, Error> {
    let scenarios = scenario::load_all(cli.scenario_dir.as_deref())?;
    let reports = load_reports(results)?;
    let probed = if results.is_empty() {
        let e = probed_env(cli);
        let version = e.cgroup.selected.clone().map_err(Error::Environment)?;
        if e.interface.is_empty() {
            return Err(Error::Environment(
                "could not read the memcg interface: probing makes a throw-away group and needs root and a writable test parent".into(),
            ));
        }
        Some((version, e.kernel, e.interface))
    } else {
        None
    };
    let mut tables = coverage::tables(&reports, probed, &scenarios);
    coverage::apply_matrices(&mut tables, &load_matrices(matrices)?);
    if tables.is_empty() {
        return Err(Error::Usage(
            "the results hold no run on a cgroup version (memcgtest run --format json)".into(),
        ));
    }
    match format {
        CoverageFormat::Human => print!("{}", coverage::render(&tables)),
        CoverageFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&tables).map_err(internal)?
        ),
        CoverageFormat::Markdown => print!("{}", coverage::markdown(&tables)),
    }
    let low: Vec<String> = tables
        .iter()
        .filter(|t| require.is_some_and(|r| t.covered_pct() < r))
        .map(|t| format!("cgroup {}: {:.1} %", t.version.as_str(), t.covered_pct()))
        .collect();
    if !low.is_empty() {
        // The suite falls short, not the kernel: never 1.
        return Err(Error::Usage(format!(
            "coverage below --require {} %: {}",
            require.unwrap_or(0.0),
            low.join(", ")
        )));
    }
    Ok(exit::OK)
}

/// `memcgtest list`.
fn list(cli: &Cli, format: Format) -> Result<u8, Error> {
    let all = scenario::load_all(cli.scenario_dir.as_deref())?;
    if format == Format::Json {
        let v: Vec<serde_json::Value> = all
            .iter()
            .map(|s| {
                serde_json::json!({
                    "name": s.name, "summary": s.summary, "description": s.description, "origin": s.origin,
                    "requires": s.requires, "source": s.source, "fixes": s.fixes,
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
            for f in &s.fixes {
                println!("{:<24} guards fix {f}", "");
            }
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
        numa_nodes: a.numa_nodes,
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
        append: a.append.clone(),
    }
}

/// The guest command of `ab` and `series`: `run [NAMES] [RUN OPTIONS]` (or nothing), without
/// `--format` (the command's own `--format` chooses stdout; the guests' results come as events).
fn check_guest_run(what: &str, guest: &[String]) -> Result<(), Error> {
    if guest.first().is_some_and(|c| c != "run")
        || (guest.iter()).any(|g| g == "--format" || g.starts_with("--format="))
    {
        return Err(Error::Usage(format!(
            "{what}: the guest command is run [NAMES] [RUN OPTIONS], without --format ({what}'s own --format chooses stdout)"
        )));
    }
    Ok(())
}

/// `memcgtest series`.
fn run_series(cli: &Cli) -> Result<u8, Error> {
    let Command::Series {
        tree,
        mbox,
        base,
        range,
        config,
        output,
        jobs,
        format,
        ab,
        ab_scenarios,
        ab_rounds,
        ab_threshold,
        ab_behaviour,
        ab_fail_on_change,
        strategy,
        vm: a,
        guest,
    } = &cli.command
    else {
        unreachable!()
    };
    check_guest_run("series", guest)?;
    let guest = match guest.as_slice() {
        [] => vec!["run".to_string(), "--quick".to_string()],
        _ => guest.clone(),
    };
    let source = match (mbox, range) {
        (Some(file), None) => series::Source::Mbox {
            file: file.clone(),
            base: base.clone(),
        },
        (None, Some(r)) => series::Source::range(r)
            .ok_or_else(|| Error::Usage(format!("series: --range {r}: not BASE..HEAD")))?,
        _ => {
            return Err(Error::Usage(
                "series: give --mbox FILE or --range BASE..HEAD".into(),
            ));
        }
    };
    let cgroups = match cli.cgroup {
        Choice::V1 => vec!["v1".to_string()],
        Choice::Both => vec!["v1".to_string(), "v2".to_string()],
        Choice::V2 | Choice::Auto => vec!["v2".to_string()],
    };
    let _live = suite::own_liveness().ok();
    let opts = series::Options {
        tree: tree.clone(),
        source,
        fragments: config.clone(),
        cgroups,
        output: output.clone(),
        jobs: jobs.unwrap_or_else(|| {
            memcgtest::sys::proc::machine(Path::new(memcgtest::sys::proc::PROC)).cpus as usize
        }),
        ab: ab.then(|| series::AbOptions {
            judging: ab::Judging {
                rounds: *ab_rounds,
                threshold_pct: *ab_threshold,
                behaviour: *ab_behaviour,
                fail_on_change: *ab_fail_on_change,
            },
            guest: (["run".to_string()].into_iter())
                .chain(guest.iter().find(|g| *g == "--quick").cloned())
                .chain(ab_scenarios.iter().cloned())
                .collect(),
        }),
        vm: vm_options(cli, a, &guest),
        strategy: strategy.map(|s| match s {
            cli::StrategyArg::Every => series::Strategy::Every,
            cli::StrategyArg::Head => series::Strategy::Head,
        }),
    };
    let rep = series::run(&opts)?;
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&rep).map_err(internal)?),
        Format::Human => print!("{}", series::render::render(&rep)),
    }
    Ok(rep.exit)
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
    let _live = suite::own_liveness().ok();
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
        new_append,
        rounds,
        threshold,
        format,
        report,
        behaviour,
        fail_on_change,
        vm: a,
        guest,
    } = &cli.command
    else {
        unreachable!()
    };
    check_guest_run("ab", guest)?;
    let _live = suite::own_liveness().ok();
    let kernels = ab::Kernels {
        base: (base.clone(), base_modules.clone()),
        new: (new.clone(), new_modules.clone()),
        new_append: new_append.clone(),
    };
    let judging = ab::Judging {
        rounds: *rounds,
        threshold_pct: *threshold,
        behaviour: *behaviour,
        fail_on_change: *fail_on_change,
    };
    let rep = ab::run(
        &vm_options(cli, a, guest),
        &kernels,
        judging,
        report.as_deref(),
    )?;
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&rep).map_err(internal)?),
        Format::Human => print!("{}", ab::render(&rep)),
    }
    eprintln!("memcgtest ab: {} (exit {})", rep.verdict, rep.exit);
    Ok(rep.exit)
}

/// `memcgtest compare`.
fn compare_results(
    base: &Path,
    new: &Path,
    threshold: f64,
    pool_repetitions: bool,
    format: Format,
) -> Result<u8, Error> {
    let (b, n) = match (compare::load(base), compare::load(new)) {
        (Ok(b), Ok(n)) => (b, n),
        (Err(e), _) | (_, Err(e)) => return Err(Error::Usage(format!("{e:#}"))),
    };
    let samples = if pool_repetitions {
        compare::Samples::PooledRepetitions
    } else {
        compare::Samples::Runs
    };
    let rows = compare::compare_runs(&b, &n, threshold, samples);
    // Busy samples make rows too few to judge, never none: no rows means other scenarios.
    let Some(code) = compare::exit_code(&rows) else {
        return Err(Error::Usage(format!(
            "{} and {} have no measurement in common",
            base.display(),
            new.display()
        )));
    };
    let costs = compare::costs(&b, &n);
    match format {
        Format::Json => {
            let v = serde_json::json!({ "samples": samples, "measurements": rows, "cost": costs });
            println!("{}", serde_json::to_string_pretty(&v).map_err(internal)?)
        }
        Format::Human => print!(
            "{}{}",
            compare::render(&rows, threshold, samples),
            compare::render_costs(&costs)
        ),
    }
    Ok(code)
}

/// A failure of memcgtest itself (serializing its own results): 125.
fn internal(e: impl std::fmt::Display) -> Error {
    Error::Internal(e.to_string())
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

/// The kill matrices memcgtest ships, then those given (a later one wins).
fn load_matrices(files: &[PathBuf]) -> Result<Vec<memcgtest::model::mutant::Matrix>, Error> {
    let mut v = Vec::new();
    for text in coverage::MATRICES {
        v.push(serde_json::from_str(text).map_err(internal)?);
    }
    for f in files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| Error::Usage(format!("{}: {e}", f.display())))?;
        v.push(
            serde_json::from_str(&text)
                .map_err(|e| Error::Usage(format!("{}: not a kill matrix: {e}", f.display())))?,
        );
    }
    Ok(v)
}

/// `memcgtest mutate`.
fn run_mutate(cli: &Cli) -> Result<u8, Error> {
    let Command::Mutate {
        kernel,
        fields,
        modes,
        mutants,
        results,
        output,
        dry_run,
        format,
        vm: a,
    } = &cli.command
    else {
        unreachable!()
    };
    let mut v = vm_options(cli, a, &[]);
    v.kernel = kernel.clone();
    // One mutant's few quick scenarios take a minute or two; a hung guest is a kill by timeout.
    v.timeout = v.timeout.or(Some(std::time::Duration::from_secs(600)));
    let _live = suite::own_liveness().ok();
    let o = mutate::Options {
        version: match cli.cgroup {
            Choice::V1 => Version::V1,
            _ => Version::V2,
        },
        vm: v,
        output: output.clone(),
        results: results.clone(),
        fields: fields.clone(),
        modes: modes.clone(),
        mutants: mutants.clone(),
        scenario_dir: cli.scenario_dir.clone(),
        dry_run: *dry_run,
    };
    let matrix = mutate::run(&o)?;
    match format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&matrix).map_err(internal)?
        ),
        Format::Human => print!("{}", mutate::render::render(&matrix)),
    }
    Ok(exit::OK)
}
