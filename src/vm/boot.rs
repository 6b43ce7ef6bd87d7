//! One boot of the guest: qemu's command line, the four serial channels read as they fill (the
//! events shown live, the guest's stderr passed on), the loop that waits for the guest to end,
//! time out or be interrupted, and the fall back from KVM to TCG when a KVM guest does not start.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};

use super::qemu::{self, Accel};
use super::{
    AccelChoice, Boot, HOST_LOAD, Options, SLOW_IMAGE, SWAP_IMAGE, Work, console, default_timeout,
    events, guest, make_disks,
};
use crate::report::progress::{Mode, Progress};
use crate::sys::{cleanup, hostload};

fn kvm_usable() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok()
}

/// Where `--accel auto` remembers that a KVM guest did not start on this host: the host's boot
/// id (/proc/sys/kernel/random/boot_id). Until the host boots again, later boots go to TCG at
/// once instead of spending KVM_SILENCE and a second pair of disks on the try.
const KVM_FAILED_MARK: &str = "/run/memcgtest-kvm-failed";

fn host_boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_string())
}

/// Whether a KVM guest failed to start earlier in this boot of the host.
fn kvm_failed_before(mark: &Path) -> bool {
    let seen = std::fs::read_to_string(mark).unwrap_or_default();
    host_boot_id().is_some_and(|id| seen.trim() == id)
}

fn remember_kvm_failed(mark: &Path) {
    if let Some(id) = host_boot_id() {
        let _ = std::fs::write(mark, format!("{id}\n"));
    }
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
        numa_nodes: opts.numa_nodes,
        kernel: opts.kernel.clone(),
        initrd: initrd.to_path_buf(),
        append: qemu::kernel_cmdline(&opts.append),
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

/// Boots under the chosen accelerator; when KVM was only tried (auto) and the guest did not start
/// under it, boots again under TCG on a fresh disk. Returns the boot, its timeout, the accelerator
/// and the fallback note.
pub(super) fn boot_with_fallback(
    opts: &Options,
    work: &mut Work,
    mods: &[(String, PathBuf)],
    initrd: &Path,
    disk: &Path,
) -> Result<(Boot, Duration, Accel, String)> {
    let mark = Path::new(KVM_FAILED_MARK);
    let mut note = String::new();
    let mut fell_back = false;
    let mut accel = match opts.accel {
        AccelChoice::Tcg => Accel::Tcg,
        AccelChoice::Kvm => Accel::Kvm,
        AccelChoice::Auto if kvm_usable() && kvm_failed_before(mark) => {
            note = format!(
                "a KVM guest did not start earlier in this boot of the host ({KVM_FAILED_MARK}); using TCG (remove the file to try KVM again)"
            );
            eprintln!("memcgtest vm: {note}");
            Accel::Tcg
        }
        AccelChoice::Auto if kvm_usable() => Accel::Kvm,
        AccelChoice::Auto => Accel::Tcg,
    };
    let b = loop {
        let timeout = opts.timeout.unwrap_or_else(|| default_timeout(accel));
        eprintln!(
            "memcgtest vm: booting {} with {} ({} CPUs, {} MiB, {} NUMA node{}, cgroup {}{}), timeout {}s",
            opts.kernel.display(),
            accel.as_str(),
            opts.cpus,
            opts.memory_mib,
            opts.numa_nodes,
            if opts.numa_nodes == 1 { "" } else { "s" },
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
            Some(b) => {
                // Remembered only once the same kernel started under TCG: a kernel that does
                // not start at all says nothing about KVM.
                if fell_back && console::kernel_started(&b.console) {
                    remember_kvm_failed(mark);
                }
                break (b, timeout);
            }
            None => {
                note = "KVM was tried first but the guest did not start under it (nested virtualization?); fell back to TCG".into();
                eprintln!("memcgtest vm: {note}");
                fell_back = true;
                make_disks(disk, opts)?;
                accel = Accel::Tcg;
            }
        }
    };
    let (b, timeout) = b;
    Ok((b, timeout, accel, note))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kvm_failure_is_remembered_for_this_host_boot_only() {
        let d = tempfile::tempdir().unwrap();
        let mark = d.path().join("kvm-failed");
        assert!(!kvm_failed_before(&mark));
        remember_kvm_failed(&mark);
        assert!(kvm_failed_before(&mark));
        std::fs::write(&mark, "another-boot-id\n").unwrap();
        assert!(
            !kvm_failed_before(&mark),
            "a mark of an earlier host boot is stale"
        );
    }
}
