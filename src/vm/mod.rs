//! `memcgtest vm`: boot a kernel image in qemu and run memcgtest inside it. The host builds an
//! initramfs (this binary as /init, its shared libraries, the resolved modules, the scenario
//! files, /vm.json), formats a sparse ext4 scratch disk, boots qemu with four serial channels
//! (see `qemu`), shows the progress the guest's events (`events`) tell live, decides the verdict
//! from the guest's status line, the kernel console (panics, splats) and the clock, and renders
//! stdout and `--report` from the typed report the events carry, with the verdicts applied.
//!
//! This file holds the options, the guest's command line, the verdict of a boot and the run as a
//! whole; `boot.rs` one boot (qemu, the serial channels, the fall back from KVM to TCG).

mod boot;
pub mod console;
pub mod events;
pub mod guest;
mod image;
pub mod initramfs;
pub mod modules;
pub mod qemu;
mod report;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::model::error::{Error, exit};
use crate::sys::cleanup;
use boot::boot_with_fallback;
use events::Stream;
use image::{build_initramfs, make_disk};
use qemu::Accel;
use report::write_report;

/// `--accel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AccelChoice {
    /// KVM when /dev/kvm works, else (or when a KVM guest fails to start) TCG.
    Auto,
    Kvm,
    Tcg,
}

/// Options of `memcgtest vm`.
#[derive(Debug, Clone)]
pub struct Options {
    pub kernel: PathBuf,
    pub modules: Option<PathBuf>,
    /// "v1" or "v2".
    pub cgroup: String,
    pub accel: AccelChoice,
    pub cpus: u32,
    pub memory_mib: u64,
    /// NUMA nodes of the guest (memory split evenly, CPUs spread over them).
    pub numa_nodes: u32,
    pub disk_mib: u64,
    /// Write rate qemu allows the slow disk, bytes per second.
    pub slow_disk_bps: u64,
    pub timeout: Option<Duration>,
    pub console_log: Option<PathBuf>,
    pub report: Option<PathBuf>,
    pub allow_splats: bool,
    pub show_console: bool,
    pub selftest: Option<String>,
    /// Swap file size in the guest (0: none).
    pub swap: u64,
    /// Where the temporary directory (initramfs, disk image, channel files) goes.
    pub work_parent: PathBuf,
    pub scenario_dir: Option<PathBuf>,
    /// The command the guest runs: run/env/list and their options.
    pub guest_args: Vec<String>,
    pub qemu: String,
    /// More kernel command line (e.g. `memcg_mutate=stat:file_dirty:drop` for the schemata
    /// kernel of kernel-patches/schemata).
    pub append: String,
}

impl Options {
    /// What the guest runs and the VM it runs in (size, nodes, command line added), as text:
    /// the part of a run's key (`series`, `mutate`) that is not the kernel or the binary.
    pub fn shape(&self) -> String {
        format!(
            "{:?} {:?} {} {} {} {} {}",
            self.guest_args,
            self.append,
            self.cpus,
            self.memory_mib,
            self.numa_nodes,
            self.swap,
            self.disk_mib
        )
    }
}

/// The scratch disk's image in the work directory.
const SCRATCH_IMAGE: &str = "scratch.img";
/// The slow disk's image (beside the scratch disk's) and size: for scenarios about pages under
/// writeback (`scratch = "slow"`), whose writes qemu throttles so writeback lasts seconds.
const SLOW_IMAGE: &str = "slow.img";
const SLOW_DISK_MIB: u64 = 1024;

/// The swap disk's image (beside the scratch disk's), sparse: the guest writes its header.
const SWAP_IMAGE: &str = "swap.img";
/// The host's load for the guest (sys::hostload), in the work directory.
const HOST_LOAD: &str = "host-load";

/// Formats both disks and makes the swap disk's image (again, for a second boot).
fn make_disks(disk: &Path, opts: &Options) -> Result<()> {
    make_disk(disk, opts.disk_mib)?;
    make_disk(&disk.with_file_name(SLOW_IMAGE), SLOW_DISK_MIB)?;
    if opts.swap > 0 {
        let p = disk.with_file_name(SWAP_IMAGE);
        let f = std::fs::File::create(&p).with_context(|| format!("create {}", p.display()))?;
        f.set_len(opts.swap)
            .with_context(|| format!("truncate {}", p.display()))?;
    }
    Ok(())
}

/// Default whole-VM timeout: TCG is 5-20x slower than the hardware.
pub fn default_timeout(accel: Accel) -> Duration {
    match accel {
        Accel::Kvm => Duration::from_secs(20 * 60),
        Accel::Tcg => Duration::from_secs(60 * 60),
    }
}

/// The libraries `ldd` lists for a dynamic executable (the loader included), as absolute paths.
pub fn parse_ldd(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        let path = match l.split_once("=>") {
            Some((_, rest)) => rest.split_whitespace().next().unwrap_or(""),
            None => l.split_whitespace().next().unwrap_or(""),
        };
        if path.starts_with('/') {
            out.push(path.to_string());
        }
    }
    out
}

/// The guest's memcgtest command line: the global options the VM decides, then the user's. A
/// `run` streams events (`--events`) and, when the host has `--report`, writes its report
/// directory on the scratch disk (for the CSV samples and SVG timelines only the guest has).
pub fn guest_command(
    user: &[String],
    cgroup: &str,
    scenario_dir: bool,
    report: bool,
) -> Result<Vec<String>> {
    let mut user: Vec<String> = user.to_vec();
    if user.is_empty() {
        user.push("run".into());
    }
    let cmd = user[0].as_str();
    if !["run", "explore", "env", "list"].contains(&cmd) {
        bail!(
            "the guest command must be run, explore, env or list (got {cmd:?}): memcgtest vm --kernel K -- run [NAMES] [OPTIONS]"
        );
    }
    for forbidden in [
        "--scratch",
        "--slow-scratch",
        "--parent",
        "--cgroup",
        "--report",
        "--scenario-dir",
        "--events",
    ] {
        if user
            .iter()
            .any(|a| a == forbidden || a.starts_with(&format!("{forbidden}=")))
        {
            bail!(
                "{forbidden} is decided by `memcgtest vm` (use the vm option of that name) and cannot be passed to the guest"
            );
        }
    }
    let mut a = vec![
        user[0].clone(),
        "--cgroup".into(),
        cgroup.into(),
        "--scratch".into(),
        guest::SCRATCH.into(),
        "--slow-scratch".into(),
        guest::SLOW_SCRATCH.into(),
    ];
    if scenario_dir {
        a.extend(["--scenario-dir".into(), "/scenarios".into()]);
    }
    let runs = cmd == "run" || cmd == "explore";
    if runs {
        // The guest is the run's own machine.
        a.extend(["--events".into(), "--dedicated".into()]);
    }
    if runs && report {
        a.extend(["--report".into(), guest::REPORT_DIR.into()]);
    }
    a.extend(user[1..].iter().cloned());
    Ok(a)
}

/// What one boot produced.
#[derive(Debug, Default)]
pub struct Boot {
    pub status: Option<u8>,
    pub timed_out: bool,
    pub interrupted: bool,
    pub console: String,
    pub qemu_log: String,
    /// What the guest wrote on stdout: the events of a `run`, the text of `env` and `list`.
    pub results: String,
    /// The events of a `run`, read as they came.
    pub events: Stream,
    pub seconds: f64,
    /// Seconds from qemu's start to the first byte on the events or stderr channel.
    pub first_output: Option<f64>,
}

/// How a boot ended, as the host judges it: from the clock, the kernel console and the guest's
/// status line, in that order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BootVerdict {
    /// A signal stopped the host.
    Interrupted,
    /// The guest did not finish in time: a hung kernel, or a workload it throttles forever.
    Timeout { seconds: u64, console: String },
    /// The kernel panicked: its panic line and the lines before it.
    Panic { line: String, excerpt: String },
    /// A fatal splat (BUG, Oops, ...) outside any scenario's allowance.
    Splat {
        kind: String,
        first: String,
        excerpt: String,
    },
    /// The guest's own exit status (0, 1, 2 or 125): its verdict stands.
    Guest(u8),
    /// The guest exited with a code memcgtest never uses.
    UnexpectedCode(u8),
    /// The kernel printed nothing: qemu could not start it.
    DidNotStart { qemu: String },
    /// The guest died without an exit status.
    Died { console: String },
}

impl BootVerdict {
    /// The exit code of the boot.
    pub fn exit_code(&self) -> u8 {
        match self {
            BootVerdict::Interrupted | BootVerdict::DidNotStart { .. } => exit::UNTESTABLE,
            BootVerdict::Timeout { .. }
            | BootVerdict::Panic { .. }
            | BootVerdict::Splat { .. }
            | BootVerdict::UnexpectedCode(_)
            | BootVerdict::Died { .. } => exit::FAIL,
            BootVerdict::Guest(c) => *c,
        }
    }
}

/// The reason, for stderr and for the scenario the guest died in; empty when the guest's own
/// verdict stands.
impl std::fmt::Display for BootVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BootVerdict::Interrupted => write!(f, "interrupted"),
            BootVerdict::Timeout { seconds, console } => write!(
                f,
                "timeout: the guest did not finish within {seconds}s (hung kernel?); qemu was killed\nLast console lines:\n{console}"
            ),
            BootVerdict::Panic { line, excerpt } => write!(f, "kernel panic: {line}\n{excerpt}"),
            BootVerdict::Splat {
                kind,
                first,
                excerpt,
            } => write!(f, "kernel {kind} during the run: {first}\n{excerpt}"),
            BootVerdict::Guest(_) => Ok(()),
            BootVerdict::UnexpectedCode(c) => {
                write!(f, "the guest exited with unexpected code {c}")
            }
            BootVerdict::DidNotStart { qemu } => write!(
                f,
                "the VM did not start: the kernel printed nothing. qemu said:\n{qemu}"
            ),
            BootVerdict::Died { console } => write!(
                f,
                "the guest died without an exit status\nLast console lines:\n{console}"
            ),
        }
    }
}

/// The verdict of a boot.
pub fn verdict(b: &Boot, timeout: Duration) -> BootVerdict {
    if b.interrupted {
        return BootVerdict::Interrupted;
    }
    if b.timed_out {
        return BootVerdict::Timeout {
            seconds: timeout.as_secs(),
            console: console::tail(&b.console, 15),
        };
    }
    if let Some(p) = console::panic(&b.console) {
        let last = p.lines().last().unwrap_or("");
        let line = last.find("Kernel panic").map_or(last, |i| &last[i..]);
        return BootVerdict::Panic {
            line: line.to_string(),
            excerpt: p.clone(),
        };
    }
    let fatal = console::splats(&b.console)
        .into_iter()
        .find(|s| console::is_fatal(s.kind));
    if let Some(s) = fatal {
        return BootVerdict::Splat {
            kind: s.kind.to_string(),
            first: s.excerpt.lines().next().unwrap_or("").trim().to_string(),
            excerpt: s.excerpt,
        };
    }
    match b.status {
        Some(c) if [exit::OK, exit::FAIL, exit::USAGE, exit::UNTESTABLE].contains(&c) => {
            BootVerdict::Guest(c)
        }
        Some(c) => BootVerdict::UnexpectedCode(c),
        None if !console::kernel_started(&b.console) => BootVerdict::DidNotStart {
            qemu: console::tail(&b.qemu_log, 10),
        },
        None => BootVerdict::Died {
            console: console::tail(&b.console, 20),
        },
    }
}

/// The temporary directory and the running qemu; both go away on drop (error, panic, signal).
struct Work {
    dir: PathBuf,
    child: Option<Child>,
}

impl Work {
    /// Kills qemu (its whole process group) and waits for it, so its disk image lock is released.
    fn stop_qemu(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = c.wait();
        }
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        self.stop_qemu();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What a VM run produced: the exit code and, for a `run`, the typed report (verdicts applied)
/// with the format the guest was asked for; for `env` and `list`, the guest's text.
pub struct Outcome {
    pub code: u8,
    /// The accelerator the guest ran under (after a fallback, TCG).
    pub accel: AccelChoice,
    pub report: Option<(crate::model::RunReport, crate::report::Format)>,
    pub text: String,
    /// Why the boot ended, when the guest's own verdict does not stand (a panic, a timeout).
    pub reason: String,
}

/// Runs the whole thing and prints its result on stdout; returns the verdict (the guest's code,
/// or 1 for a bad kernel). A host that cannot run the VM is an `Error::Environment` (125), a bad
/// guest command `Error::Usage`.
pub fn run(opts: &Options) -> Result<u8> {
    let out = execute(opts)?;
    match &out.report {
        Some((rep, format)) => print!("{}", crate::report::render(rep, *format)),
        None => print!("{}", out.text),
    }
    let _ = std::io::stdout().flush();
    Ok(out.code)
}

/// One boot of `v` whose report directory and console go to DIR/STEM and DIR/STEM.console (for
/// `series` and `mutate`): its outcome and wall time. The accelerator it ran under is kept in
/// `kept` for the next boot (no KVM retry after a TCG fallback); a signal during the boot is
/// `Error::Interrupted`.
pub fn boot_recorded(
    kept: &mut Options,
    mut v: Options,
    dir: &Path,
    stem: &str,
) -> Result<(Result<Outcome>, f64)> {
    v.report = Some(dir.join(stem));
    v.console_log = Some(dir.join(format!("{stem}.console")));
    let start = std::time::Instant::now();
    let result = execute(&v);
    if cleanup::interrupted() {
        return Err(crate::model::error::Error::Interrupted.into());
    }
    if let Ok(out) = &result {
        kept.accel = out.accel;
    }
    Ok((result, start.elapsed().as_secs_f64()))
}

/// Boots the kernel, runs the guest command and writes `--report`; stdout is the caller's. The
/// verdict and diagnosis go to stderr.
pub fn execute(opts: &Options) -> Result<Outcome> {
    let args = preflight(opts)?;
    let mods = match &opts.modules {
        Some(d) => modules::resolve(d, modules::WANTED)?,
        None => Vec::new(),
    };
    let cfg = guest::GuestConfig {
        args: args.clone(),
        cgroup: opts.cgroup.clone(),
        modules: mods
            .iter()
            .map(|(n, _)| format!("/modules/{n}.ko"))
            .collect(),
        selftest: opts.selftest.clone(),
        swap: opts.swap,
    };
    let dir = opts
        .work_parent
        .join(format!("{}{}-vm", cleanup::MARKER, std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("mkdir {}", dir.display()))?;
    let mut work = Work { dir, child: None };
    cleanup::install_signal_handlers();
    let (initrd, disk) = images(opts, &work, &cfg, &mods)?;

    let (b, timeout, accel, note) = boot_with_fallback(opts, &mut work, &mods, &initrd, &disk)?;
    if let Some(p) = &opts.console_log {
        std::fs::write(p, &b.console).with_context(|| format!("write {}", p.display()))?;
    }
    let boot_verdict = verdict(&b, timeout);
    let (mut code, reason) = (boot_verdict.exit_code(), boot_verdict.to_string());
    let failed = splat_failures(opts, &b.console);
    if !failed.is_empty() && (code == exit::OK || code == exit::UNTESTABLE) {
        code = exit::FAIL;
    }
    let mut out = Outcome {
        code,
        accel: match accel {
            Accel::Kvm => AccelChoice::Kvm,
            Accel::Tcg => AccelChoice::Tcg,
        },
        report: None,
        text: String::new(),
        reason: reason.clone(),
    };
    if args[0] == "run" || args[0] == "explore" {
        (out.code, out.report) = finish_run(opts, &b, &reason, &failed, &work, code);
    } else {
        out.text = b.results.clone();
    }
    if !reason.is_empty() {
        eprintln!("memcgtest vm: {reason}");
    }
    for (n, why) in &failed {
        eprintln!("memcgtest vm: {n}: {why}");
    }
    if out.code != exit::OK && reason.is_empty() && b.status == Some(exit::UNTESTABLE) {
        eprintln!(
            "memcgtest vm: the guest could not test. Last console lines:\n{}",
            console::tail(&b.console, 12)
        );
    }
    // Where the boot's time went: qemu's start to the guest's first output, the scenarios (the
    // run's own clock), and the rest (the guest's samples written, its shutdown).
    let scenarios = (out.report.as_ref())
        .map(|(rep, _)| format!(", scenarios {:.1}s", rep.seconds))
        .unwrap_or_default();
    eprintln!(
        "memcgtest vm: {} under {}{}: {:.1}s, first result after {}{scenarios}; exit {}",
        opts.kernel.display(),
        accel.as_str(),
        if note.is_empty() { "" } else { " (fallback)" },
        b.seconds,
        b.first_output
            .map(|s| format!("{s:.1}s"))
            .unwrap_or("-".into()),
        out.code,
    );
    drop(work);
    Ok(out)
}

/// Before anything is built: a kernel image qemu can boot, qemu itself (else
/// `Error::Environment`), and a guest command `memcgtest vm` runs (else `Error::Usage`). Returns
/// the guest's command line.
fn preflight(opts: &Options) -> Result<Vec<String>> {
    let infra = |msg: String| -> Result<Vec<String>> {
        Err(Error::Environment(format!("vm: {msg}")).into())
    };
    if let Err(e) = qemu::check_kernel_image(&opts.kernel) {
        return infra(e);
    }
    if Command::new(&opts.qemu).arg("--version").output().is_err() {
        return infra(format!(
            "{} not found (apt-get install qemu-system-x86)",
            opts.qemu
        ));
    }
    match guest_command(
        &opts.guest_args,
        &opts.cgroup,
        opts.scenario_dir.is_some(),
        opts.report.is_some(),
    ) {
        Ok(a) => Ok(a),
        Err(e) => Err(Error::Usage(format!("vm: {e}")).into()),
    }
}

/// Writes the initramfs (read back first: a malformed archive would only show as an unexplained
/// boot failure) and the scratch disk into the work directory.
fn images(
    opts: &Options,
    work: &Work,
    cfg: &guest::GuestConfig,
    mods: &[(String, PathBuf)],
) -> Result<(PathBuf, PathBuf)> {
    let initrd = work.dir.join("initramfs.cpio");
    let archive = build_initramfs(opts, cfg, mods)?;
    // Read it back: a malformed archive would only show as an unexplained boot failure.
    let entries = initramfs::list(&archive).context("initramfs reads back")?;
    eprintln!(
        "memcgtest vm: initramfs {} entries, {:.1} MiB",
        entries.len(),
        archive.len() as f64 / 1048576.0
    );
    std::fs::write(&initrd, archive).with_context(|| format!("write {}", initrd.display()))?;
    let disk = work.dir.join(SCRATCH_IMAGE);
    make_disks(&disk, opts)?;

    Ok((initrd, disk))
}

/// The scenarios kernel splats fail, with why: splats during a scenario (unless
/// --allow-splats); the others are reported on stderr.
fn splat_failures(opts: &Options, console_text: &str) -> Vec<(String, String)> {
    // Splats during a scenario fail it (unless --allow-splats); others are reported.
    let splats = console::splats(console_text);
    let mut failed: Vec<(String, String)> = Vec::new();
    for s in &splats {
        match &s.scenario {
            Some(n) if !opts.allow_splats => {
                if !failed.iter().any(|(f, _)| f == n) {
                    let first = s.excerpt.lines().find(|l| l.contains(s.kind)).unwrap_or("");
                    // "kernel panic", not "kernel kernel panic".
                    let what = s.kind.strip_prefix("kernel ").unwrap_or(s.kind);
                    failed.push((
                        n.clone(),
                        format!("kernel {what} during the scenario: {}", first.trim()),
                    ));
                }
            }
            _ => eprintln!(
                "memcgtest vm: kernel {} {}:\n{}",
                s.kind,
                s.scenario
                    .as_ref()
                    .map(|n| format!("during {n} (allowed by --allow-splats)"))
                    .unwrap_or("outside any scenario".into()),
                console::tail(&s.excerpt, 12)
            ),
        }
    }
    failed
}

/// The run's report as the events tell it, with the scenario the guest died in (if it did)
/// failed with the first line of the verdict's `reason` and the splat verdicts applied; and the
/// format stdout is to carry. None when the run never started.
fn typed_report(
    b: &Boot,
    reason: &str,
    failed: &[(String, String)],
) -> Option<(crate::model::RunReport, crate::report::Format)> {
    let cut = match reason.lines().next() {
        Some(l) if !l.is_empty() => l,
        _ => "the guest stopped during the scenario",
    };
    let (mut rep, format) = b.events.report(cut)?;
    rep.fail(failed);
    Some((rep, format))
}

/// The exit code once the events channel was read: a run that would pass (0) but whose channel
/// carried lines that were no events is the tool's fault, 125; any other verdict stands.
fn with_stream_errors(code: u8, errors: &[String]) -> u8 {
    if code == exit::OK && !errors.is_empty() {
        exit::UNTESTABLE
    } else {
        code
    }
}

/// The results of a `run` (see `typed_report`), written to `--report`. Returns the exit code
/// (`code`, or 125 for a run that would pass but whose events channel carried lines that were no
/// events) and the report with the format stdout is to carry.
fn finish_run(
    opts: &Options,
    b: &Boot,
    reason: &str,
    failed: &[(String, String)],
    work: &Work,
    code: u8,
) -> (u8, Option<(crate::model::RunReport, crate::report::Format)>) {
    for e in &b.events.errors {
        eprintln!("memcgtest vm: events channel: {e}");
    }
    let code = with_stream_errors(code, &b.events.errors);
    let Some((rep, format)) = typed_report(b, reason, failed) else {
        return (code, None);
    };
    if let Some(dest) = &opts.report {
        let from_guest = b.events.finished() && b.status.is_some();
        let disk = work.dir.join(SCRATCH_IMAGE);
        if let Err(e) = write_report(&rep, &work.dir, &disk, from_guest, dest) {
            eprintln!("memcgtest vm: report: {e:#}");
        }
    }
    (code, Some((rep, format)))
}

#[cfg(test)]
mod tests;
