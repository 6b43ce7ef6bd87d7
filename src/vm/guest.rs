//! The guest side: memcgtest itself is the initramfs's /init (PID 1). It mounts the pseudo
//! filesystems, loads the modules the host resolved, mounts the scratch disk and the requested
//! cgroup layout, runs `memcgtest run --events ...` with stdout (the events) on ttyS1 and stderr
//! on ttyS2, writes "memcgtest-exit=N" on ttyS3, and reboots (which qemu's -no-reboot turns into
//! an exit).
//! Whatever fails on the way becomes a status line, so the host never has to guess.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsFd;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nix::mount::{MsFlags, mount};
use serde::{Deserialize, Serialize};

use super::qemu::{DISK_SERIAL, LOAD_DISK_SERIAL, SLOW_DISK_SERIAL, SWAP_DISK_SERIAL};

/// What the host tells the guest, in /vm.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GuestConfig {
    /// Arguments of the memcgtest command to run ("run", "--quick", ...).
    pub args: Vec<String>,
    /// "v1" or "v2".
    pub cgroup: String,
    /// Module files in the initramfs, in load order.
    pub modules: Vec<String>,
    /// Hidden self-tests of the VM runner: "panic" (sysrq crash) or "hang".
    pub selftest: Option<String>,
    /// Bytes of swap file to create on the scratch disk and enable (0: none).
    #[serde(default)]
    pub swap: u64,
}

pub const CONFIG_PATH: &str = "/vm.json";
pub const SCRATCH: &str = "/scratch";
/// The slow disk's mount point (`--slow-scratch`).
pub const SLOW_SCRATCH: &str = "/slow";
/// Where the guest writes --report output on the scratch disk (read back by the host).
pub const REPORT_DIR: &str = "/scratch/report";
pub const STATUS_PREFIX: &str = "memcgtest-exit=";

fn say(msg: &str) {
    // stdout of PID 1 is /dev/console (ttyS0).
    println!("memcgtest-init: {msg}");
}

fn mnt(src: &str, target: &str, fstype: &str, data: Option<&str>) -> Result<()> {
    std::fs::create_dir_all(target).with_context(|| format!("mkdir {target}"))?;
    mount(Some(src), target, Some(fstype), MsFlags::empty(), data)
        .with_context(|| format!("mount -t {fstype} {src} {target}"))
}

/// Puts a serial port in raw mode so "\n" is not turned into "\r\n" on the way out.
fn raw_tty(f: &File) {
    use nix::sys::termios::{SetArg, cfmakeraw, tcgetattr, tcsetattr};
    if let Ok(mut t) = tcgetattr(f.as_fd()) {
        cfmakeraw(&mut t);
        let _ = tcsetattr(f.as_fd(), SetArg::TCSANOW, &t);
    }
}

fn open_tty(path: &str) -> Result<File> {
    let f = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(path)
        .with_context(|| format!("open {path}"))?;
    raw_tty(&f);
    Ok(f)
}

use std::os::unix::fs::OpenOptionsExt;

fn load_module(path: &str) -> Result<()> {
    let f = File::open(path).with_context(|| format!("open {path}"))?;
    use std::os::fd::AsRawFd;
    let r = unsafe { libc::syscall(libc::SYS_finit_module, f.as_raw_fd(), c"".as_ptr(), 0) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            bail!("finit_module {path}: {e}");
        }
    }
    Ok(())
}

/// The block device whose virtio serial is `serial`, waiting for the driver to probe it.
fn find_disk(serial_want: &str, timeout: Duration) -> Result<String> {
    let start = Instant::now();
    loop {
        if let Ok(rd) = std::fs::read_dir("/sys/block") {
            for e in rd.flatten() {
                let serial = std::fs::read_to_string(e.path().join("serial")).unwrap_or_default();
                if serial.trim() == serial_want {
                    return Ok(format!("/dev/{}", e.file_name().to_string_lossy()));
                }
            }
        }
        if start.elapsed() > timeout {
            let have: Vec<String> = std::fs::read_dir("/sys/block")
                .map(|rd| {
                    rd.flatten()
                        .map(|e| e.file_name().to_string_lossy().to_string())
                        .collect()
                })
                .unwrap_or_default();
            bail!(
                "no block device with serial {serial_want} after {}s (block devices: {}); the kernel \
                 needs virtio-pci and virtio-blk, built in or given with --modules",
                timeout.as_secs(),
                if have.is_empty() {
                    "none".into()
                } else {
                    have.join(", ")
                }
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Mounts, disks, cgroups and swap; returns the device the host publishes its load on.
fn setup(cfg: &GuestConfig) -> Result<Option<String>> {
    mnt("proc", "/proc", "proc", None)?;
    mnt("sysfs", "/sys", "sysfs", None)?;
    mnt("devtmpfs", "/dev", "devtmpfs", None)?;
    mnt("tmpfs", "/run", "tmpfs", None)?;
    mnt("tmpfs", "/tmp", "tmpfs", None)?;
    for m in &cfg.modules {
        load_module(m)?;
    }
    if !cfg.modules.is_empty() {
        say(&format!("loaded {} modules", cfg.modules.len()));
    }
    let disk = find_disk(DISK_SERIAL, Duration::from_secs(20))?;
    mnt(&disk, SCRATCH, "ext4", None)?;
    let slow = find_disk(SLOW_DISK_SERIAL, Duration::from_secs(20))?;
    mnt(&slow, SLOW_SCRATCH, "ext4", None)?;
    // The host's load (sys::hostload): without it the guest judges its steps on its own load.
    let load = find_disk(LOAD_DISK_SERIAL, Duration::from_secs(5))
        .inspect_err(|e| {
            say(&format!(
                "no host-load disk, the host's load is not seen: {e:#}"
            ))
        })
        .ok();
    match cfg.cgroup.as_str() {
        "v2" => {
            mnt("cgroup2", "/sys/fs/cgroup", "cgroup2", None)
                .context("this kernel has no cgroup v2")?;
            std::fs::write("/sys/fs/cgroup/cgroup.subtree_control", "+memory").context(
                "enable +memory in /sys/fs/cgroup/cgroup.subtree_control (CONFIG_MEMCG?)",
            )?;
        }
        "v1" => {
            mnt("tmpfs", "/sys/fs/cgroup", "tmpfs", None)?;
            mnt("cgroup", "/sys/fs/cgroup/memory", "cgroup", Some("memory")).context(
                "this kernel has no cgroup v1 memory controller (CONFIG_MEMCG_V1 on 6.10+)",
            )?;
        }
        other => bail!("unknown cgroup layout {other:?}"),
    }
    if cfg.swap > 0 {
        let dev = find_disk(SWAP_DISK_SERIAL, Duration::from_secs(20))?;
        // virtio-blk says it is rotational; swap keeps clusters (and takes huge pages whole)
        // only on a non-rotational device. Kernels where the file is read-only keep the default.
        let name = dev.trim_start_matches("/dev/");
        let _ = std::fs::write(format!("/sys/block/{name}/queue/rotational"), "0");
        make_swap(&dev, cfg.swap)?;
    }
    say(&format!(
        "scratch disk {disk} on {SCRATCH}, slow disk {slow} on {SLOW_SCRATCH}, cgroup {}, swap {} MiB",
        cfg.cgroup,
        cfg.swap >> 20
    ));
    Ok(load)
}

/// The first page of a version-1 swap area (include/linux/swap.h, union swap_header): after 1024
/// boot bytes, version 1, the last usable page, no bad pages; "SWAPSPACE2" ends the page.
pub fn swap_header(bytes: u64, page: usize) -> Vec<u8> {
    let mut h = vec![0u8; page];
    let last_page = (bytes / page as u64 - 1) as u32;
    h[1024..1028].copy_from_slice(&1u32.to_le_bytes());
    h[1028..1032].copy_from_slice(&last_page.to_le_bytes());
    h[page - 10..].copy_from_slice(b"SWAPSPACE2");
    h
}

/// Writes a swap header onto the swap disk (a block device: huge pages swap out whole) and
/// enables it.
fn make_swap(path: &str, bytes: u64) -> Result<()> {
    let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .unwrap_or(4096) as usize;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .with_context(|| format!("open {path}"))?;
    f.write_all(&swap_header(bytes, page))?;
    f.sync_all().with_context(|| format!("fsync {path}"))?;
    drop(f);
    let c = std::ffi::CString::new(path).unwrap();
    // SAFETY: a NUL-terminated path.
    if unsafe { libc::swapon(c.as_ptr(), 0) } != 0 {
        bail!("swapon {path}: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

fn run(cfg: &GuestConfig) -> Result<u8> {
    let load = setup(cfg)?;
    match cfg.selftest.as_deref() {
        Some("panic") => {
            say("self-test: crashing the kernel through sysrq");
            std::fs::write("/proc/sysrq-trigger", "c").context("write /proc/sysrq-trigger")?;
        }
        Some("hang") => {
            say("self-test: hanging");
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        _ => {}
    }
    let out = open_tty("/dev/ttyS1")?;
    let err = open_tty("/dev/ttyS2")?;
    let mut cmd = std::process::Command::new("/init");
    if let Some(dev) = &load {
        cmd.env(crate::sys::hostload::ENV, dev);
    }
    let status = cmd
        .args(&cfg.args)
        .env("MEMCGTEST_KMSG", "1")
        .env("PATH", "/bin")
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .context("start memcgtest run")?;
    nix::unistd::sync();
    match status.code() {
        Some(c) => Ok(c as u8),
        None => bail!("memcgtest in the guest was killed by a signal ({status})"),
    }
}

/// PID 1's main: never returns.
pub fn init_main() -> ! {
    let cfg: Result<GuestConfig> = std::fs::read_to_string(CONFIG_PATH)
        .context("read /vm.json")
        .and_then(|t| serde_json::from_str(&t).context("parse /vm.json"));
    let code = match cfg {
        Err(e) => {
            say(&format!("{e:#}"));
            125
        }
        Ok(cfg) => match std::panic::catch_unwind(|| run(&cfg)) {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                say(&format!("error: {e:#}"));
                125
            }
            Err(_) => {
                say("internal error (panic)");
                125
            }
        },
    };
    if Path::new("/dev/ttyS3").exists()
        && let Ok(mut f) = open_tty("/dev/ttyS3")
    {
        let _ = writeln!(f, "{STATUS_PREFIX}{code}");
        let _ = nix::sys::termios::tcdrain(f.as_fd());
    }
    nix::unistd::sync();
    let _ = nix::mount::umount(SCRATCH);
    let _ = nix::sys::reboot::reboot(nix::sys::reboot::RebootMode::RB_AUTOBOOT);
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_header_is_version_1_with_the_last_page_and_the_magic() {
        let h = swap_header(1 << 20, 4096);
        assert_eq!(h.len(), 4096);
        assert_eq!(u32::from_le_bytes(h[1024..1028].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(h[1028..1032].try_into().unwrap()), 255);
        assert_eq!(&h[4086..], b"SWAPSPACE2");
    }
}
