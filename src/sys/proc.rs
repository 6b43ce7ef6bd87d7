//! The /proc readers of the cold paths: mounts (mountinfo), a process's cgroups, /proc/vmstat
//! snapshots, swap areas, MemTotal, the node counters' drift (zoneinfo) and the machine; and the
//! process's own CPU time. Each reads under a /proc root (`*_in`, or a `proc_root` argument) so the
//! unit tests use a temp tree; the plain forms read the real /proc. The `procfs` crate parses
//! mountinfo, /proc/PID/cgroup, meminfo and vmstat. The sampler's hot path does not come here
//! (see `exec::sample`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};
use procfs::{FromRead, SystemInfoInterface};

use crate::model::Machine;
use crate::model::Stat;

/// The real /proc.
pub const PROC: &str = "/proc";

/// One mount, from a line of mountinfo; paths unescaped (`\040` is a space).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The path inside the filesystem that is the root of this mount (not "/" for bind mounts and
    /// containers' cgroup mounts).
    pub root: String,
    pub mount_point: PathBuf,
    pub fs_type: String,
    /// Per-superblock options as `key` or `key=value`, sorted (v1 cgroup mounts name their
    /// controllers here).
    pub super_options: Vec<String>,
}

/// Parses mountinfo text; an error is the 1-based number of a line that is not a mountinfo line.
/// Blank lines are skipped.
pub fn parse_mountinfo(text: &str) -> Result<Vec<Mount>, usize> {
    let mut mounts = Vec::new();
    for (no, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let m = procfs::process::MountInfo::from_line(line).map_err(|_| no + 1)?;
        let mut super_options: Vec<String> = m
            .super_options
            .into_iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{k}={v}"),
                None => k,
            })
            .collect();
        super_options.sort();
        mounts.push(Mount {
            root: unescape_octal(&m.root),
            mount_point: PathBuf::from(unescape_octal(&m.mount_point.to_string_lossy())),
            fs_type: m.fs_type,
            super_options,
        });
    }
    Ok(mounts)
}

/// mountinfo escapes space, tab, newline and backslash as \ooo.
fn unescape_octal(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        // Three octal digits (bytes, not a str slice: what follows a backslash may be the middle
        // of a multi-byte character), at most \377.
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)) && d[0] <= b'3');
        if bytes[i] == b'\\'
            && let Some(d) = octal
        {
            out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One line of /proc/PID/cgroup: the hierarchy id (0: cgroup2), its v1 controllers and the
/// process's cgroup path in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    pub hierarchy: u32,
    pub controllers: Vec<String>,
    pub path: String,
}

/// Parses /proc/PID/cgroup text; lines that are not cgroup lines are skipped.
pub fn parse_cgroups(text: &str) -> Vec<Membership> {
    text.lines()
        .filter_map(|line| procfs::ProcessCGroups::from_read(line.as_bytes()).ok())
        .flat_map(|c| c.0)
        .map(|c| Membership {
            hierarchy: c.hierarchy,
            controllers: c.controllers,
            path: c.pathname,
        })
        .collect()
}

/// The filesystem type holding `path`, from /proc/self/mountinfo (longest matching mount point).
pub fn fstype_of(path: &Path) -> Option<String> {
    fstype_in(Path::new(PROC), path)
}

/// [`fstype_of`] under a /proc at `proc`.
pub fn fstype_in(proc: &Path, path: &Path) -> Option<String> {
    let mounts =
        parse_mountinfo(&std::fs::read_to_string(proc.join("self/mountinfo")).ok()?).ok()?;
    let path = path.canonicalize().ok()?;
    mounts
        .into_iter()
        .filter(|m| path.starts_with(&m.mount_point))
        // The last of the longest: a later mount on the same point hides the earlier ones.
        .max_by_key(|m| m.mount_point.as_os_str().len())
        .map(|m| m.fs_type)
}

/// /proc/vmstat under `proc_root`, all keys (sorted by key).
pub fn vmstat_snapshot(proc_root: &Path) -> Result<Stat> {
    let path = proc_root.join("vmstat");
    let vm =
        procfs::VmStat::from_file(&path).with_context(|| format!("read {}", path.display()))?;
    let mut keys: Vec<(String, i64)> = vm.0.into_iter().collect();
    keys.sort();
    Ok(Stat(keys))
}

/// Whether /proc/vmstat has `key`.
pub fn vmstat_has(key: &str) -> bool {
    vmstat_has_in(Path::new(PROC), key)
}

/// [`vmstat_has`] under a /proc at `proc`.
pub fn vmstat_has_in(proc: &Path, key: &str) -> bool {
    vmstat_snapshot(proc).is_ok_and(|s| s.get(key).is_some())
}

/// Pages dirtied machine-wide (/proc/vmstat nr_dirtied) over `window`, for `memcgtest env`: other
/// writers are active when it rose while memcgtest itself wrote nothing.
pub fn pages_dirtied_during(proc_root: &Path, window: Duration) -> Option<i64> {
    let read = || vmstat_snapshot(proc_root).ok()?.get("nr_dirtied");
    let a = read()?;
    std::thread::sleep(window);
    Some(read()? - a)
}

/// Whether any swap area is enabled (/proc/swaps lists one below its header).
pub fn swap_enabled() -> bool {
    swap_enabled_in(Path::new(PROC))
}

/// [`swap_enabled`] under a /proc at `proc`.
pub fn swap_enabled_in(proc: &Path) -> bool {
    std::fs::read_to_string(proc.join("swaps"))
        .map(|s| s.lines().count() > 1)
        .unwrap_or(false)
}

/// The capability that lets a task lower an oom_score_adj (to -1000: unkillable).
pub const CAP_SYS_RESOURCE: u32 = 24;

/// Whether this process has capability `cap` (a bit of CapEff in /proc/self/status).
pub fn has_capability(cap: u32) -> bool {
    let status = std::fs::read_to_string(Path::new(PROC).join("self/status")).unwrap_or_default();
    has_capability_in(&status, cap)
}

/// [`has_capability`] from the text of a /proc/PID/status.
pub fn has_capability_in(status: &str, cap: u32) -> bool {
    (status.lines())
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .is_some_and(|bits| cap < 64 && bits >> cap & 1 == 1)
}

/// MemTotal from /proc/meminfo in bytes (0 if unreadable).
pub fn mem_total_bytes() -> u64 {
    mem_total_bytes_in(Path::new(PROC))
}

/// vm.dirty_ratio and vm.dirty_bytes, where readable.
pub fn dirty_limits() -> Option<crate::model::DirtyLimits> {
    let read = |k: &str| -> Option<u64> {
        std::fs::read_to_string(format!("/proc/sys/vm/{k}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some(crate::model::DirtyLimits {
        ratio: read("dirty_ratio")?,
        bytes: read("dirty_bytes")?,
    })
}

/// The free memory (MemFree of /proc/meminfo), KiB.
pub fn mem_free_kb() -> Option<u64> {
    procfs::Meminfo::from_file(Path::new(PROC).join("meminfo"))
        .ok()
        .map(|m| m.mem_free / 1024)
}

/// [`mem_total_bytes`] under a /proc at `proc`.
pub fn mem_total_bytes_in(proc: &Path) -> u64 {
    procfs::Meminfo::from_file(proc.join("meminfo")).map_or(0, |m| m.mem_total)
}

/// Sums, over NUMA nodes, the largest "vm stats threshold" of the node's zones, from /proc/zoneinfo.
pub fn zoneinfo_threshold(text: &str) -> u64 {
    let mut per_node: Vec<(String, u64)> = Vec::new();
    let mut node = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Node ") {
            node = rest.split(',').next().unwrap_or("").to_string();
        } else if let Some(v) = line.trim().strip_prefix("vm stats threshold:") {
            let v: u64 = v.trim().parse().unwrap_or(0);
            match per_node.iter_mut().find(|(n, _)| *n == node) {
                Some((_, m)) => *m = (*m).max(v),
                None => per_node.push((node.clone(), v)),
            }
        }
    }
    per_node.iter().map(|(_, m)| m).sum()
}

/// This machine: online CPUs, page size and the node counters' drift (from `proc_root`/zoneinfo;
/// 125 pages per CPU when unreadable).
pub fn machine(proc_root: &Path) -> Machine {
    let page_size = page_size();
    let cpus = {
        use nix::unistd::{SysconfVar, sysconf};
        sysconf(SysconfVar::_NPROCESSORS_ONLN)
            .ok()
            .flatten()
            .unwrap_or(1) as u64
    };
    let threshold = std::fs::read_to_string(proc_root.join("zoneinfo"))
        .map(|z| zoneinfo_threshold(&z))
        .unwrap_or(125);
    Machine {
        cpus,
        page_size,
        node_drift_pages: threshold * cpus,
        lru_gen: lru_gen(&proc_root.with_file_name("sys")),
        top_flushed: crate::model::record::cpu_stat_flushes_memcg(&kernel_release()),
    }
}

/// The running kernel's release (`uname -r`), empty when uname fails.
pub fn kernel_release() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether the multi-gen LRU is on: `sys_root`/kernel/mm/lru_gen/enabled holds a non-zero
/// mask (absent without CONFIG_LRU_GEN).
fn lru_gen(sys_root: &Path) -> bool {
    let text = std::fs::read_to_string(sys_root.join("kernel/mm/lru_gen/enabled"));
    let mask = text.ok().and_then(|t| {
        let t = t.trim();
        u64::from_str_radix(t.strip_prefix("0x").unwrap_or(t), 16).ok()
    });
    mask.is_some_and(|m| m != 0)
}

/// The page size (4096 where sysconf cannot say).
pub fn page_size() -> u64 {
    use nix::unistd::{SysconfVar, sysconf};
    sysconf(SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .unwrap_or(4096) as u64
}

/// Whose CPU time [`cpu_seconds`] reports.
#[derive(Debug, Clone, Copy)]
pub enum Who {
    /// The calling process (RUSAGE_SELF).
    Process,
    /// The calling thread (RUSAGE_THREAD).
    Thread,
    /// The calling process's children that ended and were waited for (RUSAGE_CHILDREN).
    Children,
}

/// Page faults so far: (minor, major), as getrusage counts them (the task's own count, kept apart
/// from the memcg statistics).
pub fn faults(who: Who) -> (u64, u64) {
    let who = match who {
        Who::Process => libc::RUSAGE_SELF,
        Who::Thread => libc::RUSAGE_THREAD,
        Who::Children => libc::RUSAGE_CHILDREN,
    };
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut ru) };
    (ru.ru_minflt as u64, ru.ru_majflt as u64)
}

/// CPU time used so far: (user, system) seconds.
pub fn cpu_seconds(who: Who) -> (f64, f64) {
    let who = match who {
        Who::Process => libc::RUSAGE_SELF,
        Who::Thread => libc::RUSAGE_THREAD,
        Who::Children => libc::RUSAGE_CHILDREN,
    };
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// User CPU time the whole machine has spent since boot (/proc/stat: user and nice, summed over
/// CPUs; a KVM guest's time is in them), seconds. System, irq and softirq time are left out:
/// much of it is work for whoever causes it (writeback of a VM's disk image, interrupts), which
/// a caller comparing with its own user time could not tell from a stranger's.
pub fn user_cpu_seconds(proc: &Path) -> Result<f64> {
    let path = proc.join("stat");
    let k = <procfs::KernelStats as procfs::FromReadSI>::from_file(&path, &procfs::LocalSystemInfo)
        .with_context(|| format!("read {}", path.display()))?;
    let ticks = k.total.user + k.total.nice;
    Ok(ticks as f64 / procfs::LocalSystemInfo.ticks_per_second() as f64)
}

/// What the whole machine has done so far, for telling what the rest of it did during a measured
/// step (see `model::Load`): user CPU time (/proc/stat, see [`user_cpu_seconds`]), pages dirtied
/// (/proc/vmstat nr_dirtied) and, where the kernel has PSI, the time some task waited for a CPU
/// and for I/O (/proc/pressure/{cpu,io} "some total", µs).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MachineCounters {
    pub user_seconds: f64,
    pub dirtied_pages: i64,
    pub cpu_some_us: Option<u64>,
    pub io_some_us: Option<u64>,
}

/// The machine's counters now, under a /proc at `proc`.
pub fn machine_counters(proc: &Path) -> Result<MachineCounters> {
    let pressure = |what: &str| {
        std::fs::read_to_string(proc.join("pressure").join(what))
            .ok()
            .and_then(|t| psi_some_total(&t))
    };
    Ok(MachineCounters {
        user_seconds: user_cpu_seconds(proc)?,
        dirtied_pages: vmstat_snapshot(proc)?.get("nr_dirtied").unwrap_or(0),
        cpu_some_us: pressure("cpu"),
        io_some_us: pressure("io"),
    })
}

/// The "some" line's total (µs) of a /proc/pressure file.
pub fn psi_some_total(text: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with("some "))?
        .split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// Field `n` of a /proc/PID/stat text, numbered from 1 as proc(5) does (3 the state, 5 the
/// process group, 10 minflt, 14 utime). The command (field 2) may hold spaces and parentheses,
/// so the fields from 3 on are counted after its last ')'.
pub fn stat_field(text: &str, n: usize) -> Option<&str> {
    let rest = &text[text.rfind(')')? + 1..];
    rest.split_whitespace().nth(n.checked_sub(3)?)
}

/// User CPU seconds of processes `pids` so far (utime of /proc/PID/stat; a process gone since
/// counts 0), under a /proc at `proc`.
pub fn user_seconds_of(proc: &Path, pids: &[i32]) -> f64 {
    let tps = procfs::LocalSystemInfo.ticks_per_second() as f64;
    pids.iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(proc.join(p.to_string()).join("stat")).ok()?;
            stat_field(&text, 14)?.parse::<u64>().ok()
        })
        .map(|t| t as f64 / tps)
        .sum()
}

/// The processes in process group `pgid` (field 5 of /proc/PID/stat), under a /proc at `proc`.
pub fn group_members(proc: &Path, pgid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    let pgid = pgid.to_string();
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(proc.join(pid.to_string()).join("stat"));
            stat.is_ok_and(|t| stat_field(&t, 5) == Some(pgid.as_str()))
        })
        .collect()
}

/// The bytes of pages process `pid` dirtied (/proc/PID/io write_bytes: counted when a page is
/// dirtied, see folio_account_dirtied), 0 once it is gone.
pub fn dirtied_bytes_of(proc: &Path, pid: i32) -> u64 {
    let text = std::fs::read_to_string(proc.join(pid.to_string()).join("io"));
    text.ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("write_bytes:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Where a task is, for a stall's diagnosis: "PID (comm) STATE in WCHAN: f1 < f2 < ..." from
/// /proc/PID/{stat,wchan,stack} (the stack needs CONFIG_STACKTRACE and root; a running task
/// has none), the first `frames` frames without their offsets. None once the task is gone.
pub fn task_state(proc: &Path, pid: i32, frames: usize) -> Option<String> {
    let dir = proc.join(pid.to_string());
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let comm = &stat[stat.find('(')? + 1..stat.rfind(')')?];
    let state = stat_field(&stat, 3).unwrap_or("?");
    let wchan = std::fs::read_to_string(dir.join("wchan")).unwrap_or_default();
    let wchan = match wchan.trim() {
        "" | "0" => String::new(),
        w => format!(" in {w}"),
    };
    let stack: Vec<String> = std::fs::read_to_string(dir.join("stack"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f = l.split_whitespace().nth(1)?;
            Some(f.split('+').next().unwrap_or(f).to_string())
        })
        .take(frames)
        .collect();
    let stack = if stack.is_empty() {
        String::new()
    } else {
        format!(": {}", stack.join(" < "))
    };
    Some(format!("{pid} ({comm}) {state}{wchan}{stack}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_s_dirtied_bytes_are_its_write_bytes() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("9")).unwrap();
        std::fs::write(
            d.path().join("9/io"),
            "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n",
        )
        .unwrap();
        assert_eq!(dirtied_bytes_of(d.path(), 9), 8192);
        assert_eq!(dirtied_bytes_of(d.path(), 10), 0);
        // Process groups: 9 leads its own, 11 (a command with a space and a ')') is in it.
        std::fs::write(d.path().join("9/stat"), "9 (qemu) S 1 9 9 0").unwrap();
        std::fs::create_dir(d.path().join("11")).unwrap();
        std::fs::write(d.path().join("11/stat"), "11 (a b) c) S 9 9 9 0").unwrap();
        std::fs::create_dir(d.path().join("12")).unwrap();
        std::fs::write(d.path().join("12/stat"), "12 (x) S 1 12 12 0").unwrap();
        let mut m = group_members(d.path(), 9);
        m.sort();
        assert_eq!(m, vec![9, 11]);
    }

    #[test]
    fn a_task_state_names_its_wait_and_stack() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("7");
        std::fs::create_dir(&t).unwrap();
        std::fs::write(t.join("stat"), "7 (memcgtest (w)) D 1 7 7 0").unwrap();
        std::fs::write(t.join("wchan"), "folio_wait_bit_common").unwrap();
        std::fs::write(
            t.join("stack"),
            "[<0>] folio_wait_bit_common+0x13c/0x320\n[<0>] __filemap_get_folio+0x1f0/0x370\n[<0>] ext4_da_write_begin+0xd5/0x320\n",
        )
        .unwrap();
        assert_eq!(
            task_state(d.path(), 7, 2).as_deref(),
            Some(
                "7 (memcgtest (w)) D in folio_wait_bit_common: folio_wait_bit_common < __filemap_get_folio"
            )
        );
        std::fs::write(t.join("stack"), "").unwrap();
        std::fs::write(t.join("wchan"), "0").unwrap();
        assert_eq!(
            task_state(d.path(), 7, 2).as_deref(),
            Some("7 (memcgtest (w)) D")
        );
        assert_eq!(task_state(d.path(), 8, 2), None);
    }

    #[test]
    fn pressure_and_process_times_are_read() {
        let psi = "some avg10=0.00 avg60=0.00 avg300=0.00 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7\n";
        assert_eq!(psi_some_total(psi), Some(123456));
        assert_eq!(psi_some_total("full total=1\n"), None);
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("42")).unwrap();
        // comm with a space and a ')' in it; utime 250 ticks.
        std::fs::write(
            d.path().join("42/stat"),
            "42 (a b) c) S 1 42 42 0 -1 4194304 100 0 0 0 250 30 0 0 20 0 1 0 5 0 0\n",
        )
        .unwrap();
        let tps = procfs::LocalSystemInfo.ticks_per_second() as f64;
        assert_eq!(user_seconds_of(d.path(), &[42, 43]), 250.0 / tps);
    }

    #[test]
    fn zoneinfo_threshold_takes_the_largest_per_node() {
        let z = "Node 0, zone DMA\n  vm stats threshold: 4\nNode 0, zone Normal\n  vm stats threshold: 24\nNode 1, zone Normal\n  vm stats threshold: 16\n";
        assert_eq!(zoneinfo_threshold(z), 40);
    }

    /// A /proc with what a real one has of the files read here.
    fn fake_proc() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("self")).unwrap();
        let root = Path::new("/").canonicalize().unwrap();
        let here = std::env::temp_dir().canonicalize().unwrap();
        std::fs::write(
            d.path().join("self/mountinfo"),
            format!(
                "22 1 8:1 / {} rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
                 23 22 0:20 / {} rw,nosuid shared:2 - tmpfs tmpfs rw\n",
                root.display(),
                here.display()
            ),
        )
        .unwrap();
        std::fs::write(
            d.path().join("vmstat"),
            "nr_dirty 12\npgmigrate_success 3\nnr_dirtied 7\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("swaps"),
            "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n",
        )
        .unwrap();
        let mut meminfo = String::from("MemTotal:        2048 kB\n");
        for k in [
            "MemFree",
            "Buffers",
            "Cached",
            "SwapCached",
            "Active",
            "Inactive",
            "SwapTotal",
            "SwapFree",
            "Dirty",
            "Writeback",
            "Mapped",
            "Slab",
            "Committed_AS",
            "VmallocTotal",
            "VmallocUsed",
            "VmallocChunk",
        ] {
            meminfo += &format!("{k}:  100 kB\n");
        }
        std::fs::write(d.path().join("meminfo"), meminfo).unwrap();
        std::fs::write(
            d.path().join("zoneinfo"),
            "Node 0, zone      DMA\n  pagesets\n    vm stats threshold: 4\n\
             Node 0, zone   Normal\n    vm stats threshold: 24\n",
        )
        .unwrap();
        d
    }

    #[test]
    fn the_longest_mount_point_gives_the_filesystem_type() {
        let p = fake_proc();
        let here = std::env::temp_dir();
        assert_eq!(fstype_in(p.path(), &here).as_deref(), Some("tmpfs"));
        assert_eq!(fstype_in(p.path(), Path::new("/")).as_deref(), Some("ext4"));
        assert_eq!(fstype_in(&p.path().join("absent"), Path::new("/")), None);
    }

    #[test]
    fn vmstat_swaps_and_meminfo() {
        let p = fake_proc();
        assert!(vmstat_has_in(p.path(), "pgmigrate_success"));
        assert!(!vmstat_has_in(p.path(), "pgmigrate"));
        assert!(!swap_enabled_in(p.path()));
        std::fs::write(
            p.path().join("swaps"),
            "Filename Type Size Used Priority\n/dev/vdb partition 1024 0 -2\n",
        )
        .unwrap();
        assert!(swap_enabled_in(p.path()));
        assert_eq!(mem_total_bytes_in(p.path()), 2048 * 1024);
        assert_eq!(mem_total_bytes_in(&p.path().join("absent")), 0);
    }

    #[test]
    fn vmstat_snapshots_and_the_machine() {
        let p = fake_proc();
        let s = vmstat_snapshot(p.path()).unwrap();
        assert_eq!(s.get("nr_dirty"), Some(12));
        let e = vmstat_snapshot(&p.path().join("absent")).unwrap_err();
        assert!(format!("{e:#}").contains("absent/vmstat"), "{e:#}");
        assert_eq!(
            pages_dirtied_during(p.path(), Duration::from_millis(1)),
            Some(0)
        );
        let m = machine(p.path());
        assert_eq!(m.node_drift_pages, 24 * m.cpus);
        let m = machine(&p.path().join("absent"));
        assert_eq!(m.node_drift_pages, 125 * m.cpus);
    }

    #[test]
    fn mountinfo_paths_are_unescaped_and_bad_lines_named() {
        let mi = "30 22 0:26 /a\\040b /mnt/with\\040space rw - cgroup cgroup rw,memory,name=x\n";
        let m = parse_mountinfo(mi).unwrap();
        assert_eq!(m[0].root, "/a b");
        assert_eq!(m[0].mount_point, PathBuf::from("/mnt/with space"));
        assert_eq!(m[0].fs_type, "cgroup");
        assert_eq!(m[0].super_options, ["memory", "name=x", "rw"]);
        assert_eq!(parse_mountinfo(&format!("\n{mi}1 2 3\n")), Err(3));
        assert_eq!(unescape_octal("/plain"), "/plain");
    }

    #[test]
    fn cgroup_membership_skips_what_is_not_a_cgroup_line() {
        let c = parse_cgroups("4:memory:/a/b\nnonsense\n0::/user.slice\n");
        assert_eq!(
            c,
            [
                Membership {
                    hierarchy: 4,
                    controllers: vec!["memory".into()],
                    path: "/a/b".into()
                },
                Membership {
                    hierarchy: 0,
                    controllers: vec![],
                    path: "/user.slice".into()
                }
            ]
        );
    }

    #[test]
    fn cpu_time_is_counted() {
        let (u, s) = cpu_seconds(Who::Process);
        assert!(u >= 0.0 && s >= 0.0);
        let (u, s) = cpu_seconds(Who::Thread);
        assert!(u >= 0.0 && s >= 0.0);
    }

    #[test]
    fn user_cpu_time_is_user_and_nice() {
        let d = tempfile::tempdir().unwrap();
        let tps = procfs::LocalSystemInfo.ticks_per_second() as f64;
        std::fs::write(
            d.path().join("stat"),
            "cpu  100 2 30 5000 40 5 6 7 0 0\ncpu0 100 2 30 5000 40 5 6 7 0 0\nintr 1\nctxt 9\nbtime 1\nprocesses 3\nprocs_running 1\nprocs_blocked 0\n",
        )
        .unwrap();
        // user 100 + nice 2; system, idle, iowait, irq, softirq and steal are not.
        let s = user_cpu_seconds(d.path()).unwrap();
        assert!((s - 102.0 / tps).abs() < 1e-9, "{s}");
        let e = user_cpu_seconds(&d.path().join("none")).unwrap_err();
        assert!(format!("{e:#}").contains("none/stat"), "{e:#}");
        assert!(user_cpu_seconds(Path::new(PROC)).unwrap() > 0.0);
    }

    #[test]
    fn a_capability_is_a_bit_of_capeff() {
        // A container's root: everything but CAP_SYS_RESOURCE (24).
        let status = "Name:\tx\nCapPrm:\t000001fffeffffff\nCapEff:\t000001fffeffffff\n";
        assert!(!has_capability_in(status, 24));
        assert!(has_capability_in(status, 21) && has_capability_in(status, 0));
        assert!(has_capability_in("CapEff:\t000001ffffffffff\n", 24));
        assert!(!has_capability_in("Name:\tx\n", 0));
    }
}
