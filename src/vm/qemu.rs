//! qemu's command line, built by pure functions. Four 16550 UARTs carry four channels, each with a
//! file of its own on the host: ttyS0 the kernel console (and the guest init's own messages),
//! ttyS1 the results the guest's `memcgtest run` prints on stdout (KTAP, JSON or human), ttyS2 its
//! stderr (progress), ttyS3 one status line with the exit code. UARTs rather than virtio-serial:
//! the 8250 driver is built into Debian's kernels and into the project's minimal config, so no
//! module is needed before the results can flow, and kernel messages can never mix with results.

use std::path::{Path, PathBuf};

/// How to run guest code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    Kvm,
    Tcg,
}

impl Accel {
    pub fn as_str(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// Everything qemu needs for one boot.
#[derive(Debug, Clone)]
pub struct Config {
    pub accel: Accel,
    pub cpus: u32,
    pub memory_mib: u64,
    /// NUMA nodes the guest's memory and CPUs are split over (1: no -numa options).
    pub numa_nodes: u32,
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    pub append: String,
    /// The scratch disk image (raw, ext4).
    pub disk: PathBuf,
    /// The slow disk image (raw, ext4) and the write rate qemu allows it, bytes per second.
    pub slow_disk: PathBuf,
    pub slow_disk_bps: u64,
    /// The swap disk image (raw, sparse; the guest writes the swap header), when there is swap.
    pub swap_disk: Option<PathBuf>,
    /// Files for ttyS0..ttyS3.
    pub serial: [PathBuf; 4],
    /// The block the host publishes its load in (sys::hostload), read-only to the guest.
    pub host_load: PathBuf,
}

/// The virtio-blk serials the guest looks for in /sys/block/*/serial.
pub const DISK_SERIAL: &str = "memcgtest-scratch";
pub const SLOW_DISK_SERIAL: &str = "memcgtest-slow";
pub const SWAP_DISK_SERIAL: &str = "memcgtest-swap";
pub const LOAD_DISK_SERIAL: &str = "memcgtest-load";

/// The kernel command line. `panic=-1` reboots at once on a panic, which -no-reboot turns into
/// qemu exiting; 8250.nr_uarts=4 makes sure ttyS1..3 exist. `tsc=reliable` turns off the
/// clocksource watchdog: under TCG the guest's TSC is the host's monotonic clock scaled, the same
/// on every vCPU, but the watchdog compares it with an emulated HPET read a host-scheduling delay
/// apart, and in 4 of 73 boots (2026-12-03, all of them the charging-cost mutant's) it called the
/// TSC unstable half-way through fault-overhead and switched the guest to the HPET, whose every
/// read is an emulated device access: the rest of that boot's measurements were slower for a
/// reason that is not the kernel's.
pub fn kernel_cmdline(extra: &str) -> String {
    let mut s =
        String::from("console=ttyS0,115200 panic=-1 8250.nr_uarts=4 tsc=reliable rdinit=/init");
    if !extra.trim().is_empty() {
        s.push(' ');
        s.push_str(extra.trim());
    }
    s
}

/// The CPU a TCG guest gets: every feature TCG has, but the fast-string ones (see `args`).
pub const TCG_CPU: &str = "max,-erms,-fsrm";

/// qemu-system-x86_64's arguments for `cfg`.
pub fn args(cfg: &Config) -> Vec<String> {
    let mut a: Vec<String> = [
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-no-reboot",
        "-machine",
        "pc",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    match cfg.accel {
        Accel::Kvm => a.extend(["-accel", "kvm", "-cpu", "host"].map(String::from)),
        // Without ERMS and FSRM the kernel clears and copies pages with `rep stosq`/`rep movsq`
        // (8 bytes an iteration) instead of `rep stosb`/`rep movsb`, which TCG emulates a
        // byte at a time: measured on 6.12, usemem 174 -> 1835 MB/s, buffered writes 80 -> 183
        // MB/s, the quick suite 221 -> 180 s (docs/findings.md).
        Accel::Tcg => a.extend(["-accel", "tcg,thread=multi", "-cpu", TCG_CPU].map(String::from)),
    }
    a.extend([
        "-smp".into(),
        smp(cfg.cpus, cfg.numa_nodes),
        "-m".into(),
        format!("{}M", cfg.memory_mib),
    ]);
    a.extend(numa_args(cfg.cpus, cfg.memory_mib, cfg.numa_nodes));
    a.extend([
        "-kernel".into(),
        cfg.kernel.display().to_string(),
        "-initrd".into(),
        cfg.initrd.display().to_string(),
        "-append".into(),
        cfg.append.clone(),
        // The disks are scratch, thrown away after the boot: `cache=unsafe` makes qemu ignore the
        // guest's flushes, so a guest fsync or sync waits for its writes to reach qemu (the
        // host's page cache) and no longer for the host's fdatasync of the image, which took
        // seconds whenever another process on the host was writing (docs/vm.md).
        "-drive".into(),
        format!(
            "file={},if=none,id=scratch,format=raw,cache=unsafe",
            escape_opt(&cfg.disk)
        ),
        "-device".into(),
        format!("virtio-blk-pci,drive=scratch,serial={DISK_SERIAL}"),
        // Writes wait in qemu's throttle queue, so the guest's pages stay under writeback.
        "-drive".into(),
        format!(
            "file={},if=none,id=slow,format=raw,cache=unsafe,throttling.bps-write={}",
            escape_opt(&cfg.slow_disk),
            cfg.slow_disk_bps
        ),
        "-device".into(),
        format!("virtio-blk-pci,drive=slow,serial={SLOW_DISK_SERIAL}"),
        // The host's load, read by the guest with O_DIRECT: qemu reads the file through the
        // host's page cache (the default cache mode), so each read sees the latest line.
        "-drive".into(),
        format!(
            "file={},if=none,id=load,format=raw,readonly=on",
            escape_opt(&cfg.host_load)
        ),
        "-device".into(),
        format!("virtio-blk-pci,drive=load,serial={LOAD_DISK_SERIAL}"),
    ]);
    // Swap on a block device of its own: the kernel swaps a huge page out whole only to a
    // non-rotational block device (a swap file takes 4 KiB pages: thp_swpout_fallback).
    if let Some(swap) = &cfg.swap_disk {
        a.extend([
            "-drive".into(),
            format!(
                "file={},if=none,id=swap,format=raw,cache=unsafe",
                escape_opt(swap)
            ),
            "-device".into(),
            format!("virtio-blk-pci,drive=swap,serial={SWAP_DISK_SERIAL}"),
        ]);
    }
    for s in &cfg.serial {
        a.push("-serial".into());
        a.push(format!("file:{}", s.display()));
    }
    a
}

/// The guest's CPUs: with more than one node each CPU is a socket of its own. qemu's default
/// topology makes them cores of one package sharing its last-level cache, and a kernel whose
/// cache siblings sit on different nodes warns at boot ("llc-sibling CPU #0 is not on the same
/// node"), a splat the run would blame on the kernel.
pub fn smp(cpus: u32, nodes: u32) -> String {
    match nodes {
        0 | 1 => cpus.to_string(),
        _ => format!("{cpus},sockets={cpus},cores=1,threads=1"),
    }
}

/// The guest's RAM, touched before the guest starts (a page the guest uses for the first time
/// would otherwise fault in the host, and where the host is itself a VM in its hypervisor, at a
/// cost that differs from boot to boot and lands on whatever the guest is measuring then); with
/// `nodes` > 1, split over that many NUMA nodes: one RAM backend each, node 0 taking what does not
/// divide evenly, CPU i on node i mod `nodes`. A node without a CPU is a memory-only node, which
/// qemu allows.
pub fn numa_args(cpus: u32, memory_mib: u64, nodes: u32) -> Vec<String> {
    if nodes <= 1 {
        return vec!["-mem-prealloc".into()];
    }
    let each = memory_mib / nodes as u64;
    let mut a = Vec::new();
    for n in 0..nodes {
        let size = if n == 0 {
            memory_mib - each * (nodes as u64 - 1)
        } else {
            each
        };
        a.push("-object".into());
        a.push(format!(
            "memory-backend-ram,id=ram{n},size={size}M,prealloc=on"
        ));
        let mut node = format!("node,nodeid={n},memdev=ram{n}");
        for c in (n..cpus).step_by(nodes as usize) {
            node.push_str(&format!(",cpus={c}"));
        }
        a.push("-numa".into());
        a.push(node);
    }
    a
}

/// qemu option values escape a comma by doubling it.
fn escape_opt(p: &Path) -> String {
    p.display().to_string().replace(',', ",,")
}

/// Checks that `path` is an x86 boot image (bzImage): "HdrS" at 0x202 and the boot sector's
/// 0xAA55 at 0x1FE. Anything else is refused before qemu is started.
pub fn check_kernel_image(path: &Path) -> Result<(), String> {
    let data = std::fs::read(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    if data.len() < 0x210 || &data[0x202..0x206] != b"HdrS" || data[0x1fe..0x200] != [0x55, 0xaa] {
        return Err(format!(
            "{} is not a bootable x86 kernel image (no bzImage header: expected \"HdrS\" at 0x202; \
             pass arch/x86/boot/bzImage or /boot/vmlinuz-*, not vmlinux)",
            path.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(accel: Accel) -> Config {
        Config {
            accel,
            cpus: 2,
            memory_mib: 2048,
            numa_nodes: 1,
            kernel: "/k/bzImage".into(),
            initrd: "/t/initrd".into(),
            append: kernel_cmdline(""),
            disk: "/t/a,b.img".into(),
            slow_disk: "/t/slow.img".into(),
            slow_disk_bps: 4 << 20,
            swap_disk: None,
            serial: ["/t/0".into(), "/t/1".into(), "/t/2".into(), "/t/3".into()],
            host_load: "/t/host-load".into(),
        }
    }

    #[test]
    fn tcg_uses_multithreading_and_cpu_max() {
        let a = args(&cfg(Accel::Tcg)).join(" ");
        assert!(
            a.contains("-accel tcg,thread=multi -cpu max,-erms,-fsrm"),
            "{a}"
        );
        assert!(a.contains("-no-reboot"));
        assert!(a.contains("-smp 2 -m 2048M"));
        assert!(a.contains("-kernel /k/bzImage -initrd /t/initrd"));
        assert!(a.contains("serial=memcgtest-scratch"));
        // A comma in a path is doubled, so qemu does not split the option there.
        assert!(a.contains("file=/t/a,,b.img,if=none"));
        assert!(a.contains(
            "file=/t/host-load,if=none,id=load,format=raw,readonly=on -device virtio-blk-pci,drive=load,serial=memcgtest-load"
        ));
        assert!(
            a.ends_with("-serial file:/t/0 -serial file:/t/1 -serial file:/t/2 -serial file:/t/3")
        );
    }

    #[test]
    fn numa_nodes_split_memory_and_cpus() {
        assert_eq!(numa_args(2, 2048, 1), ["-mem-prealloc"]);
        let a = numa_args(2, 2048, 2).join(" ");
        assert_eq!(
            a,
            "-object memory-backend-ram,id=ram0,size=1024M,prealloc=on -numa node,nodeid=0,memdev=ram0,cpus=0 \
             -object memory-backend-ram,id=ram1,size=1024M,prealloc=on -numa node,nodeid=1,memdev=ram1,cpus=1"
        );
        // Memory that does not divide goes to node 0; a third node without a CPU has memory only.
        let a = numa_args(2, 1000, 3).join(" ");
        assert!(a.contains("id=ram0,size=334M"), "{a}");
        assert!(a.ends_with("nodeid=2,memdev=ram2"), "{a}");
        let mut c = cfg(Accel::Tcg);
        c.numa_nodes = 2;
        let a = args(&c).join(" ");
        assert!(!a.contains("-mem-prealloc"), "{a}");
        assert!(
            a.contains(
                "-smp 2,sockets=2,cores=1,threads=1 -m 2048M -object memory-backend-ram,id=ram0"
            ),
            "{a}"
        );
    }

    #[test]
    fn kvm_uses_the_host_cpu() {
        let a = args(&cfg(Accel::Kvm)).join(" ");
        assert!(a.contains("-accel kvm -cpu host"));
    }

    #[test]
    fn cmdline_panics_reboot_at_once() {
        let c = kernel_cmdline("  loglevel=4 ");
        assert!(c.starts_with("console=ttyS0,115200 panic=-1"));
        assert!(c.ends_with("rdinit=/init loglevel=4"));
        assert!(c.contains(" tsc=reliable "));
    }

    #[test]
    fn non_kernels_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("notakernel");
        std::fs::write(&p, vec![0u8; 4096]).unwrap();
        let e = check_kernel_image(&p).unwrap_err();
        assert!(e.contains("not a bootable x86 kernel image"), "{e}");
        let mut k = vec![0u8; 4096];
        k[0x1fe] = 0x55;
        k[0x1ff] = 0xaa;
        k[0x202..0x206].copy_from_slice(b"HdrS");
        std::fs::write(&p, k).unwrap();
        assert!(check_kernel_image(&p).is_ok());
        assert!(check_kernel_image(&dir.path().join("missing")).is_err());
    }
}
