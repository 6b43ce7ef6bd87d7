//! `memcgtest vm`: boot a kernel image in qemu and run memcgtest inside it. The host builds an
//! initramfs (this binary as /init, its shared libraries, the resolved modules, the scenario
//! files, /vm.json), formats a sparse ext4 scratch disk, boots qemu with four serial channels
//! (see `qemu`), shows the progress the guest's events (`events`) tell live, decides the verdict
//! from the guest's status line, the kernel console (panics, splats) and the clock, and renders
//! stdout and `--report` from the typed report the events carry, with the verdicts applied.

pub mod console;
pub mod events;
pub mod guest;
mod image;
pub mod initramfs;
pub mod modules;
pub mod qemu;
mod report;

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

use crate::model::error::{Error, exit};
use crate::report::progress::{Mode, Progress};
use crate::sys::{cleanup, hostload};
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

fn kvm_usable() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok()
}

/// Reads what was appended to `path` since `off`.
fn read_new(path: &Path, off: &mut u64) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Ok(mut f) = std::fs::File::open(path)
        && f.seek(SeekFrom::Start(*off)).is_ok()
        && f.read_to_end(&mut buf).is_ok()
    {
        *off += buf.len() as u64;
    }
    buf
}

/// How long a KVM guest may stay silent on the console before `--accel auto` gives up on KVM.
/// A kernel under KVM prints its first line well within a second; on these machines (nested
/// virtualization) a KVM guest either reports an emulation failure at once or never prints at all.
const KVM_SILENCE: Duration = Duration::from_secs(5);

/// The qemu command line of one boot, its output going to `qlog`; qemu dies with us.
fn qemu_command(
    opts: &Options,
    accel: Accel,
    initrd: &Path,
    disk: &Path,
    serial: &[PathBuf; 4],
    qlog: &Path,
) -> Result<Command> {
    let cfg = qemu::Config {
        accel,
        cpus: opts.cpus,
        memory_mib: opts.memory_mib,
        kernel: opts.kernel.clone(),
        initrd: initrd.to_path_buf(),
        append: qemu::kernel_cmdline(""),
        disk: disk.to_path_buf(),
        slow_disk: disk.with_file_name(SLOW_IMAGE),
        slow_disk_bps: opts.slow_disk_bps,
        swap_disk: (opts.swap > 0).then(|| disk.with_file_name(SWAP_IMAGE)),
        serial: serial.clone(),
        host_load: disk.with_file_name(HOST_LOAD),
    };
    let qlog_file = std::fs::File::create(qlog)?;
    let mut cmd = Command::new(&opts.qemu);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.args(qemu::args(&cfg))
        .stdin(Stdio::null())
        .stdout(qlog_file.try_clone()?)
        .stderr(qlog_file);
    // qemu dies with us, even if we are SIGKILLed.
    use std::os::unix::process::CommandExt;
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    Ok(cmd)
}

/// The guest's four serial channels (console, events, stderr, status; see `qemu`) as files in
/// the work directory, and how far each has been read.
struct Channels {
    paths: [PathBuf; 4],
    offsets: [u64; 4],
    /// A stderr line not complete yet.
    err_line: Vec<u8>,
}

impl Channels {
    const CONSOLE: usize = 0;
    const EVENTS: usize = 1;
    const STDERR: usize = 2;
    const STATUS: usize = 3;

    /// Creates the four files, empty.
    fn create(dir: &Path) -> Result<Channels> {
        let paths = ["console", "events", "stderr", "status"].map(|n| dir.join(n));
        for p in &paths {
            std::fs::write(p, "").with_context(|| format!("create {}", p.display()))?;
        }
        Ok(Channels {
            paths,
            offsets: [0; 4],
            err_line: Vec::new(),
        })
    }

    /// What was appended to channel `i` since the last read.
    fn read(&mut self, i: usize) -> Vec<u8> {
        read_new(&self.paths[i], &mut self.offsets[i])
    }

    /// Passes on what arrived: events to the stream (and the progress display), the guest's
    /// stderr as lines, the console to stderr with `show_console`. Returns whether anything came
    /// on the events or stderr channel.
    fn poll(&mut self, b: &mut Boot, progress: &Progress, show_console: bool) -> bool {
        let ev = self.read(Self::EVENTS);
        let err = self.read(Self::STDERR);
        b.events.feed(&ev, progress);
        for l in events::complete_lines(&mut self.err_line, &err) {
            if !l.is_empty() {
                progress.say(&l);
            }
        }
        let con = self.read(Self::CONSOLE);
        if show_console && !con.is_empty() {
            let _ = std::io::stderr().lock().write_all(&con);
        }
        !ev.is_empty() || !err.is_empty()
    }

    /// Whether the kernel has printed anything yet.
    fn console_started(&self) -> bool {
        self.offsets[Self::CONSOLE] > 0
    }

    /// After qemu is gone: the rest of the events and stderr passed on, and the whole of each
    /// channel kept in the boot (the status line parsed).
    fn finish(&mut self, b: &mut Boot, progress: &Progress) {
        let ev = self.read(Self::EVENTS);
        b.events.feed(&ev, progress);
        let mut rest = self.read(Self::STDERR);
        rest.push(b'\n');
        for l in events::complete_lines(&mut self.err_line, &rest) {
            if !l.is_empty() {
                progress.say(&l);
            }
        }
        progress.finish();
        let read =
            |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).to_string();
        b.console = read(&self.paths[Self::CONSOLE]);
        b.results = read(&self.paths[Self::EVENTS]);
        b.status = read(&self.paths[Self::STATUS])
            .lines()
            .find_map(|l| l.trim().strip_prefix(guest::STATUS_PREFIX)?.parse().ok());
    }
}

/// Whether a KVM guest failed: qemu reported it, or the kernel stayed silent too long.
fn kvm_failed(qlog: &Path, channels: &Channels, since: Instant) -> bool {
    let ql = std::fs::read_to_string(qlog).unwrap_or_default();
    let silent = !channels.console_started() && since.elapsed() > KVM_SILENCE;
    ql.contains("KVM internal error") || ql.contains("emulation failure") || silent
}

/// One boot under `accel`: the guest's events are shown as they come (a live line when stderr is
/// a terminal, else plain lines), its stderr is forwarded. With `watch_kvm`, a KVM failure is
/// noticed early and reported as `Ok(None)` so the caller can fall back to TCG.
fn boot(
    opts: &Options,
    work: &mut Work,
    accel: Accel,
    initrd: &Path,
    disk: &Path,
    timeout: Duration,
    watch_kvm: bool,
) -> Result<Option<Boot>> {
    let mut channels = Channels::create(&work.dir)?;
    let qlog = work.dir.join("qemu.log");
    let load_file = disk.with_file_name(HOST_LOAD);
    hostload::create(&load_file)?;
    let mut cmd = qemu_command(opts, accel, initrd, disk, &channels.paths, &qlog)?;
    let start = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| anyhow!("start {} (install qemu-system-x86): {e}", opts.qemu))?;
    let qemu_pid = child.id() as i32;
    work.child = Some(child);
    // Publishes until this boot ends (dropped before qemu is reaped).
    let publisher = hostload::Publisher::start(&load_file, qemu_pid);
    let mut b = Boot::default();
    let progress = Progress::new(if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        Mode::Live
    } else {
        Mode::Lines
    });
    loop {
        std::thread::sleep(Duration::from_millis(100));
        if channels.poll(&mut b, &progress, opts.show_console) {
            b.first_output.get_or_insert(start.elapsed().as_secs_f64());
        }
        let exited = work.child.as_mut().unwrap().try_wait()?.is_some();
        if watch_kvm && !exited && kvm_failed(&qlog, &channels, start) {
            // A failed KVM guest is paused, not gone: qemu still holds the disk image.
            drop(publisher);
            work.stop_qemu();
            return Ok(None);
        }
        if exited {
            break;
        }
        if start.elapsed() > timeout {
            b.timed_out = true;
            break;
        }
        if cleanup::interrupted() {
            b.interrupted = true;
            break;
        }
    }
    drop(publisher);
    work.stop_qemu();
    b.seconds = start.elapsed().as_secs_f64();
    channels.finish(&mut b, &progress);
    b.qemu_log = String::from_utf8_lossy(&std::fs::read(&qlog).unwrap_or_default()).to_string();
    if !b.results.is_empty() {
        b.first_output = Some(b.first_output.unwrap_or(b.seconds).min(b.seconds));
    }
    if watch_kvm && b.status.is_none() && !console::kernel_started(&b.console) {
        return Ok(None);
    }
    Ok(Some(b))
}

/// What a VM run produced: the exit code and, for a `run`, the typed report (verdicts applied)
/// with the format the guest was asked for; for `env` and `list`, the guest's text.
pub struct Outcome {
    pub code: u8,
    /// The accelerator the guest ran under (after a fallback, TCG).
    pub accel: AccelChoice,
    pub report: Option<(crate::model::RunReport, crate::report::Format)>,
    pub text: String,
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

/// Boots the kernel, runs the guest command and writes `--report`; stdout is the caller's. The
/// verdict and diagnosis go to stderr.
pub fn execute(opts: &Options) -> Result<Outcome> {
    let infra =
        |msg: String| -> Result<Outcome> { Err(Error::Environment(format!("vm: {msg}")).into()) };
    if let Err(e) = qemu::check_kernel_image(&opts.kernel) {
        return infra(e);
    }
    if Command::new(&opts.qemu).arg("--version").output().is_err() {
        return infra(format!(
            "{} not found (apt-get install qemu-system-x86)",
            opts.qemu
        ));
    }
    let args = match guest_command(
        &opts.guest_args,
        &opts.cgroup,
        opts.scenario_dir.is_some(),
        opts.report.is_some(),
    ) {
        Ok(a) => a,
        Err(e) => return Err(Error::Usage(format!("vm: {e}")).into()),
    };
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
    eprintln!(
        "memcgtest vm: {} under {}{}: {:.1}s, first result after {}; exit {}",
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

/// Boots under the chosen accelerator; when KVM was only tried (auto) and the guest did not start
/// under it, boots again under TCG on a fresh disk. Returns the boot, its timeout, the accelerator
/// and the fallback note.
fn boot_with_fallback(
    opts: &Options,
    work: &mut Work,
    mods: &[(String, PathBuf)],
    initrd: &Path,
    disk: &Path,
) -> Result<(Boot, Duration, Accel, String)> {
    let mut accel = match opts.accel {
        AccelChoice::Tcg => Accel::Tcg,
        AccelChoice::Kvm => Accel::Kvm,
        AccelChoice::Auto if kvm_usable() => Accel::Kvm,
        AccelChoice::Auto => Accel::Tcg,
    };
    let mut note = String::new();
    let b = loop {
        let timeout = opts.timeout.unwrap_or_else(|| default_timeout(accel));
        eprintln!(
            "memcgtest vm: booting {} with {} ({} CPUs, {} MiB, cgroup {}{}), timeout {}s",
            opts.kernel.display(),
            accel.as_str(),
            opts.cpus,
            opts.memory_mib,
            opts.cgroup,
            if mods.is_empty() {
                String::new()
            } else {
                format!(
                    ", modules {}",
                    mods.iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            },
            timeout.as_secs()
        );
        let watch = opts.accel == AccelChoice::Auto && accel == Accel::Kvm;
        match boot(opts, work, accel, initrd, disk, timeout, watch)? {
            Some(b) => break (b, timeout),
            None => {
                note = "KVM was tried first but the guest did not start under it (nested virtualization?); fell back to TCG".into();
                eprintln!("memcgtest vm: {note}");
                make_disks(disk, opts)?;
                accel = Accel::Tcg;
            }
        }
    };
    let (b, timeout) = b;
    Ok((b, timeout, accel, note))
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
