//! The worker process's side: what each job does inside the cgroup it was placed in.

use std::fs;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::{Job, JobResult};

/// Entry point of a worker process: runs the job and prints its result as JSON.
pub fn worker_main(job_json: &str) -> Result<()> {
    let job: Job = serde_json::from_str(job_json).context("bad worker job")?;
    lock_own_memory(&job)?;
    let mut result = run_job(&job)?;
    // Every fault of the process (exec and start included: it joined its group before exec).
    (result.minflt, result.majflt) = crate::sys::proc::faults(crate::sys::proc::Who::Process);
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string(&result)?)?;
    Ok(())
}

/// `mlockall` flags of a worker that locks its own pages before its job (0: none). At a memory
/// limit whose file pages are all dirty or under writeback, reclaim swaps out the group's anon,
/// and the swap-out's writeback counts in the group's writeback but is no page of its files: a
/// writer's own 1 MiB buffer made test.writeback 1.4 MiB above its files' for 0.3 s (6.12, v1,
/// dirty-migration). File workloads therefore lock what they fault (MCL_ONFAULT: nothing is
/// faulted in ahead); the mmap writer only its memory so far, not the mapping under test. Jobs
/// whose anon memory is the subject (hold, fault, usemem) stay reclaimable.
fn own_memory_lock(job: &Job) -> libc::c_int {
    match job {
        Job::Write { .. }
        | Job::Sync
        | Job::Fsync { .. }
        | Job::Truncate { .. }
        | Job::Unlink { .. }
        | Job::Create { .. }
        | Job::Read { .. } => libc::MCL_CURRENT | libc::MCL_FUTURE | libc::MCL_ONFAULT,
        Job::MmapWrite { .. } => libc::MCL_CURRENT | libc::MCL_ONFAULT,
        Job::Hold { .. } | Job::Fault { .. } | Job::Usemem { .. } | Job::Compaction => 0,
    }
}

/// Locks the worker's own pages as [`own_memory_lock`] says, once RLIMIT_MEMLOCK is raised to
/// unlimited, so no later allocation can fail for the lock (MCL_FUTURE). Where the limit cannot
/// be raised (no CAP_SYS_RESOURCE: a rootless container) the worker runs unlocked, as before.
/// A refusal with no limit is the machine's, so the error carries no errno.
fn lock_own_memory(job: &Job) -> Result<()> {
    let flags = own_memory_lock(job);
    let unlimited = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: a valid rlimit.
    if flags == 0 || unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &unlimited) } != 0 {
        return Ok(());
    }
    // SAFETY: mlockall has no memory-safety preconditions.
    if unsafe { libc::mlockall(flags) } != 0 {
        bail!(
            "mlockall: {} (file workers lock their own memory so that limit reclaim cannot swap \
             it out)",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

pub(super) fn run_job(job: &Job) -> Result<JobResult> {
    match job {
        Job::Write {
            path,
            size,
            block_size,
            fsync,
        } => write_file(path, *size, *block_size, *fsync),
        Job::Sync => {
            let t = Instant::now();
            nix::unistd::sync();
            Ok(JobResult {
                seconds: t.elapsed().as_secs_f64(),
                ..Default::default()
            })
        }
        Job::Fsync { path } => {
            let f = fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
            let t = Instant::now();
            f.sync_all()
                .with_context(|| format!("fsync {}", path.display()))?;
            Ok(JobResult {
                seconds: t.elapsed().as_secs_f64(),
                ..Default::default()
            })
        }
        Job::Compaction => compaction_loop(),
        Job::Truncate { path, size } => {
            let f = fs::OpenOptions::new()
                .write(true)
                .open(path)
                .with_context(|| format!("open {}", path.display()))?;
            let t = Instant::now();
            f.set_len(*size)
                .with_context(|| format!("truncate {}", path.display()))?;
            Ok(JobResult {
                seconds: t.elapsed().as_secs_f64(),
                ..Default::default()
            })
        }
        Job::Unlink { path } => {
            let t = Instant::now();
            fs::remove_file(path).with_context(|| format!("unlink {}", path.display()))?;
            Ok(JobResult {
                seconds: t.elapsed().as_secs_f64(),
                ..Default::default()
            })
        }
        Job::MmapWrite {
            path,
            size,
            hold_ms,
        } => mmap_write(path, *size, *hold_ms),
        Job::Hold {
            anon,
            shmem,
            file,
            file_size,
            dirty,
            redirty,
            write,
            extras,
        } => hold(
            (*anon, *shmem),
            file.as_deref(),
            (*file_size, *dirty, *redirty),
            *write,
            extras,
        ),
        Job::Create { path, size } => {
            let r = write_file(path, *size, 1 << 20, true)?;
            drop_cache(path)?;
            Ok(r)
        }
        Job::Read { path, warm } => read_file(path, *warm),
        Job::Fault { size, duration_ms } => fault_loop(*size, *duration_ms),
        Job::Usemem { size, small } => usemem(*size, *small),
    }
}

/// CPU seconds (user + system) this process used so far.
pub(super) fn cpu_seconds() -> f64 {
    let (user, sys) = crate::sys::proc::cpu_seconds(crate::sys::proc::Who::Process);
    user + sys
}

/// Drops a file's clean pages from the page cache.
pub(super) fn drop_cache(path: &std::path::Path) -> Result<()> {
    let f = fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    // SAFETY: advice on an open descriptor.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r != 0 {
        bail!(
            "posix_fadvise DONTNEED {}: {}{}",
            path.display(),
            std::io::Error::from_raw_os_error(r),
            if r == libc::ENOSYS {
                " (a kernel without CONFIG_ADVISE_SYSCALLS cannot drop a file's cache)"
            } else {
                ""
            }
        );
    }
    Ok(())
}

/// Streams a file from a cold cache, like `dd of=/dev/null bs=1M`.
/// Reads a file in 1 MiB reads, from a cold cache unless `warm` (then what the page cache holds
/// stays: a second read references its pages, evicted ones refault).
pub(super) fn read_file(path: &std::path::Path, warm: bool) -> Result<JobResult> {
    if !warm {
        drop_cache(path)?;
    }
    let mut f = fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    let cpu0 = cpu_seconds();
    let t = Instant::now();
    let mut total = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("read {}", path.display()))?;
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    Ok(JobResult {
        bytes: total,
        seconds: t.elapsed().as_secs_f64(),
        fsync_seconds: 0.0,
        cpu_seconds: cpu_seconds() - cpu0,
        ..Default::default()
    })
}

/// A fresh private anonymous mapping of `size` bytes, read-write; with `small_pages`, advised
/// MADV_NOHUGEPAGE so every 4 KiB page faults on its own (pft, the 2010 move benchmark).
pub(super) fn map_anon(
    size: u64,
    small_pages: bool,
) -> Result<std::ptr::NonNull<std::ffi::c_void>> {
    use nix::sys::mman::{MapFlags, MmapAdvise, ProtFlags, madvise, mmap_anonymous};
    let len = std::num::NonZeroUsize::new(size as usize).context("mapping of 0 bytes")?;
    // SAFETY: a new mapping; callers write only inside its length.
    let ptr = unsafe {
        mmap_anonymous(
            None,
            len,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_PRIVATE,
        )
    }
    .context("mmap anonymous memory")?;
    if small_pages {
        // SAFETY: advice on the mapping just made.
        let _ = unsafe { madvise(ptr, size as usize, MmapAdvise::MADV_NOHUGEPAGE) };
    }
    Ok(ptr)
}

/// Creates `path` with `size` bytes and maps it shared, read-write.
pub(super) fn map_shared_file(
    path: &std::path::Path,
    size: u64,
) -> Result<std::ptr::NonNull<std::ffi::c_void>> {
    let f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("create {}", path.display()))?;
    map_shared(&f, size).with_context(|| format!("truncate and map {}", path.display()))
}

/// Sets the length of our own file `f` to `size` and maps all of it shared, read-write.
fn map_shared(f: &fs::File, size: u64) -> Result<std::ptr::NonNull<std::ffi::c_void>> {
    use nix::sys::mman::{MapFlags, ProtFlags, mmap};
    f.set_len(size).context("ftruncate")?;
    let len = std::num::NonZeroUsize::new(size as usize).context("file mapping of 0 bytes")?;
    // SAFETY: a shared mapping of a file we own; callers stay inside its length.
    unsafe {
        mmap(
            None,
            len,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_SHARED,
            f,
            0,
        )
    }
    .context("mmap")
}

/// A memfd of `size` bytes, mapped shared with every page written: `size` bytes of shmem, all
/// mapped, charged to the caller's group. The mapping stays until the task exits.
fn touch_shmem(size: u64) -> Result<(std::os::fd::OwnedFd, Region)> {
    use nix::sys::memfd::{MFdFlags, memfd_create};
    let fd = memfd_create(c"memcgtest-shmem", MFdFlags::MFD_CLOEXEC).context("memfd_create")?;
    let f = fs::File::from(fd);
    let ptr = map_shared(&f, size).context("map the memfd")?;
    let base = ptr.as_ptr() as *mut u8;
    for off in (0..size as usize).step_by(4096) {
        // SAFETY: off < size, inside the mapping.
        unsafe { base.add(off).write_volatile(0x5a) };
    }
    let region = Region {
        addr: base as usize,
        len: size as usize,
    };
    Ok((f.into(), region))
}

/// usemem's measure: the throughput of writing fresh anonymous memory (faults, zeroing, charging
/// and the writes themselves).
pub(super) fn usemem(size: u64, small: bool) -> Result<JobResult> {
    use nix::sys::mman::munmap;
    let cpu0 = cpu_seconds();
    let t = Instant::now();
    let ptr = map_anon(size, small)?;
    // SAFETY: written inside the fresh mapping, then unmapped.
    unsafe { std::ptr::write_bytes(ptr.as_ptr() as *mut u8, 0x5a, size as usize) };
    let seconds = t.elapsed().as_secs_f64();
    unsafe { munmap(ptr, size as usize) }.context("munmap")?;
    Ok(JobResult {
        bytes: size,
        seconds,
        fsync_seconds: 0.0,
        cpu_seconds: cpu_seconds() - cpu0,
        ..Default::default()
    })
}

/// pft's loop: map anonymous memory, fault in every page by writing it, unmap; for `duration_ms`.
/// Reports the faults (pages touched) as `bytes`.
pub(super) fn fault_loop(size: u64, duration_ms: u64) -> Result<JobResult> {
    use nix::sys::mman::munmap;
    let cpu0 = cpu_seconds();
    let t = Instant::now();
    let until = Duration::from_millis(duration_ms);
    let mut faults = 0u64;
    while t.elapsed() < until {
        let ptr = map_anon(size, true)?;
        let base = ptr.as_ptr() as *mut u8;
        for off in (0..size as usize).step_by(4096) {
            // SAFETY: inside the mapping.
            unsafe { base.add(off).write_volatile(1) };
            faults += 1;
        }
        unsafe { munmap(ptr, size as usize) }.context("munmap")?;
    }
    Ok(JobResult {
        bytes: faults,
        seconds: t.elapsed().as_secs_f64(),
        fsync_seconds: 0.0,
        cpu_seconds: cpu_seconds() - cpu0,
        ..Default::default()
    })
}

/// Maps `size` bytes of anonymous memory with 4 KiB pages (no THP, like the 2010 move-charge
/// benchmark) and touches every page. The mapping is leaked on purpose: the task holds it.
/// A held task's anonymous memory, touched as `extras` says: in huge pages or 4 KiB ones, with
/// zeros or a pattern, mlocked, part of it given back with MADV_FREE. Kept until the task exits.
fn hold_anon(size: u64, extras: &super::HoldExtras) -> Result<Option<Region>> {
    use nix::sys::mman::{MmapAdvise, madvise, mlock};
    if size == 0 {
        return Ok(None);
    }
    let ptr = if extras.huge {
        map_huge(size)?
    } else {
        map_anon(size, true)?
    };
    let base = ptr.as_ptr() as *mut u8;
    let byte = if extras.zero { 0 } else { 0x5a };
    for off in (0..size as usize).step_by(4096) {
        // SAFETY: off < size, inside the mapping.
        unsafe { base.add(off).write_volatile(byte) };
    }
    if extras.mlock {
        // SAFETY: the mapping just made; RLIMIT_MEMLOCK is no limit for root.
        unsafe { mlock(ptr, size as usize) }.context("mlock the held memory")?;
    }
    if extras.lazyfree > 0 {
        // SAFETY: advice on the mapping just made.
        unsafe {
            madvise(
                ptr,
                extras.lazyfree.min(size) as usize,
                MmapAdvise::MADV_FREE,
            )
        }
        .context("madvise MADV_FREE")?;
    }
    Ok(Some(Region {
        addr: base as usize,
        len: size as usize,
    }))
}

/// A mapping a held task keeps until it exits, which an `advise` step works on.
#[derive(Debug, Clone, Copy)]
struct Region {
    addr: usize,
    len: usize,
}

/// MADV_COLLAPSE (Linux 6.1), not in every libc's headers.
const MADV_COLLAPSE: libc::c_int = 25;

/// Applies an `advise` step's advice to `region`; returns a note when the kernel declined a
/// collapse (an old kernel, no CONFIG_READ_ONLY_THP_FOR_FS for a file, no huge page to be had):
/// the checks over the fields it would have moved then say they were not exercised.
fn advise(region: Region, advice: crate::model::step::Advice) -> Result<Option<String>> {
    use crate::model::step::Advice;
    let base = region.addr as *mut u8;
    let call = |advice: libc::c_int| {
        // SAFETY: advice on a mapping the task made and keeps.
        let r = unsafe { libc::madvise(base.cast(), region.len, advice) };
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    match advice {
        Advice::Pageout => call(libc::MADV_PAGEOUT).context("madvise MADV_PAGEOUT")?,
        Advice::Cold => call(libc::MADV_COLD).context("madvise MADV_COLD")?,
        Advice::Hugepage => call(libc::MADV_HUGEPAGE).context("madvise MADV_HUGEPAGE")?,
        Advice::Collapse => {
            // EAGAIN: a page was busy (under writeback, locked, on a per-CPU batch): try again.
            let mut last = None;
            for _ in 0..5 {
                match call(MADV_COLLAPSE) {
                    Ok(()) => return Ok(None),
                    Err(e) => last = Some(e),
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            return Ok(last.map(|e| format!("MADV_COLLAPSE: {e}")));
        }
        Advice::Touch => {
            let mut sum = 0u8;
            for off in (0..region.len).step_by(4096) {
                // SAFETY: off < len, inside the mapping.
                sum = sum.wrapping_add(unsafe { base.add(off).read_volatile() });
            }
            std::hint::black_box(sum);
        }
    }
    Ok(None)
}

/// `size` bytes of `path`, an existing file, opened read-only and mapped read-only on a 2 MiB
/// boundary, every page read: the file has no writer, so MADV_COLLAPSE may put it in huge pages.
fn map_file_readonly(path: &std::path::Path, size: u64) -> Result<(fs::File, Region)> {
    const HUGE: usize = 2 << 20;
    let f = fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let len = size as usize;
    // Reserve room for an aligned mapping, then map the file over its aligned part.
    let room = map_anon(size + HUGE as u64, false)?;
    let aligned = (room.as_ptr() as usize).next_multiple_of(HUGE);
    // SAFETY: MAP_FIXED inside the reservation just made; the file stays open.
    let p = unsafe {
        libc::mmap(
            aligned as *mut libc::c_void,
            len,
            libc::PROT_READ,
            libc::MAP_SHARED | libc::MAP_FIXED,
            f.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        bail!(
            "mmap {} read-only: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    let region = Region { addr: aligned, len };
    advise(region, crate::model::step::Advice::Touch)?;
    Ok((f, region))
}

/// `size` bytes of address space, one byte written in every 2 MiB of it (4 KiB pages): a page
/// table page for each, and little memory.
fn touch_sparse(size: u64) -> Result<()> {
    use nix::sys::mman::{MapFlags, ProtFlags, mmap_anonymous};
    if size == 0 {
        return Ok(());
    }
    let len = std::num::NonZeroUsize::new(size as usize).context("sparse mapping of 0 bytes")?;
    // SAFETY: a new mapping, written only inside its length; never unmapped (the task holds it).
    let ptr = unsafe {
        mmap_anonymous(
            None,
            len,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_PRIVATE | MapFlags::MAP_NORESERVE,
        )
    }
    .context("mmap the sparse region")?;
    let base = ptr.as_ptr() as *mut u8;
    // SAFETY: advice on the mapping just made: no huge page may fill a 2 MiB stretch.
    unsafe { libc::madvise(base.cast(), size as usize, libc::MADV_NOHUGEPAGE) };
    for off in (0..size as usize).step_by(2 << 20) {
        // SAFETY: off < size, inside the mapping.
        unsafe { base.add(off).write_volatile(1) };
    }
    Ok(())
}

/// `bytes` queued on TCP connections this task makes to itself over loopback, never read: the
/// receivers' queues and the senders' unsent data are socket memory charged to its group (v2
/// memory.stat sock). A connection holds what its autotuned buffers take (a few MiB), so as
/// many are opened as it takes (at most 64). In a network namespace of its own (its loopback
/// brought up), so nothing of the machine's network is touched. Returns the sockets, kept open.
fn hold_sock(bytes: u64) -> Result<Vec<std::os::fd::OwnedFd>> {
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::OwnedFd;
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)
        .context("unshare a network namespace")?;
    loopback_up()?;
    let listener = TcpListener::bind("127.0.0.1:0").context("listen on loopback")?;
    let block = vec![0x5au8; 64 << 10];
    let mut left = bytes as usize;
    let mut fds = Vec::new();
    while left > 0 && fds.len() < 2 * 64 {
        let mut tx = TcpStream::connect(listener.local_addr()?).context("connect over loopback")?;
        let (rx, _) = listener.accept().context("accept on loopback")?;
        tx.set_nonblocking(true)?;
        let mut stuck = 0;
        while left > 0 && stuck < 20 {
            match tx.write(&block[..left.min(block.len())]) {
                Ok(n) => left -= n,
                // Both buffers full: that is all this connection holds.
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    stuck += 1;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(e).context("write to the loopback connection"),
            }
        }
        fds.push(OwnedFd::from(tx));
        fds.push(OwnedFd::from(rx));
    }
    fds.push(OwnedFd::from(listener));
    Ok(fds)
}

/// Brings up `lo` in this task's network namespace (SIOCSIFFLAGS with IFF_UP).
fn loopback_up() -> Result<()> {
    // SAFETY: a plain socket for the ioctl, closed below.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if s < 0 {
        bail!("socket: {}", std::io::Error::last_os_error());
    }
    // SAFETY: s was just made and is owned here.
    let s = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(s) };
    // SAFETY: an all-zero ifreq is valid; the name is NUL-terminated.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, c) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *d = *c as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS with a valid ifreq.
    unsafe {
        if libc::ioctl(s.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) < 0 {
            bail!("SIOCGIFFLAGS lo: {}", std::io::Error::last_os_error());
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(s.as_raw_fd(), libc::SIOCSIFFLAGS, &req) < 0 {
            bail!("bring up lo: {}", std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `size` bytes of anonymous memory on a 2 MiB boundary, advised MADV_HUGEPAGE: the kernel
/// faults it in huge pages where it can.
fn map_huge(size: u64) -> Result<std::ptr::NonNull<std::ffi::c_void>> {
    use nix::sys::mman::{MmapAdvise, madvise, munmap};
    const HUGE: usize = 2 << 20;
    let len = size as usize;
    let ptr = map_anon(size + HUGE as u64, false)?;
    let start = ptr.as_ptr() as usize;
    let aligned = start.next_multiple_of(HUGE);
    // The slack before and after the aligned region goes back.
    // SAFETY: parts of the mapping just made, not used.
    unsafe {
        if aligned > start {
            munmap(ptr, aligned - start).context("munmap")?;
        }
        let end = aligned + len;
        let tail = start + len + HUGE - end;
        if tail > 0 {
            munmap(
                std::ptr::NonNull::new(end as *mut std::ffi::c_void).unwrap(),
                tail,
            )
            .context("munmap")?;
        }
    }
    let huge = std::ptr::NonNull::new(aligned as *mut std::ffi::c_void).unwrap();
    // SAFETY: advice on the aligned mapping.
    unsafe { madvise(huge, len, MmapAdvise::MADV_HUGEPAGE) }.context("madvise MADV_HUGEPAGE")?;
    Ok(huge)
}

/// `size` bytes of shmem in huge pages: a tmpfs mounted with huge=always at `dir`, in a mount
/// namespace of this task's own (it goes with the task), a file there written through a shared
/// mapping. Returns the file, kept open.
fn touch_huge_tmpfs(dir: &std::path::Path, size: u64) -> Result<(fs::File, Region)> {
    use nix::mount::{MsFlags, mount};
    use nix::sched::{CloneFlags, unshare};
    fs::create_dir_all(dir).with_context(|| format!("mkdir {}", dir.display()))?;
    unshare(CloneFlags::CLONE_NEWNS).context("unshare a mount namespace")?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .context("make the mounts private")?;
    let opts = format!("huge=always,size={}", size + (4 << 20));
    mount(
        Some("tmpfs"),
        dir,
        Some("tmpfs"),
        MsFlags::empty(),
        Some(opts.as_str()),
    )
    .with_context(|| format!("mount a tmpfs with huge=always at {}", dir.display()))?;
    let path = dir.join("shmem");
    let ptr = map_shared_file(&path, size)?;
    let base = ptr.as_ptr() as *mut u8;
    for off in (0..size as usize).step_by(4096) {
        // SAFETY: off < size, inside the mapping.
        unsafe { base.add(off).write_volatile(0x5a) };
    }
    let f = fs::File::open(&path).with_context(|| format!("open {}", path.display()))?;
    let region = Region {
        addr: base as usize,
        len: size as usize,
    };
    Ok((f, region))
}

/// The kernel memory a held task makes: threads (kernel stacks), empty files (inodes and
/// dentries), a grown descriptor table (vmalloc). Returned to be kept until it exits.
fn kernel_memory(
    extras: &super::HoldExtras,
) -> Result<(
    Vec<std::thread::JoinHandle<()>>,
    Option<std::os::fd::OwnedFd>,
)> {
    let mut threads = Vec::new();
    for _ in 0..extras.threads {
        // Small user stacks: the kernel stack is the point.
        threads.push(
            std::thread::Builder::new()
                .stack_size(64 << 10)
                .spawn(|| {
                    loop {
                        std::thread::park();
                    }
                })
                .context("start a thread")?,
        );
    }
    if let Some((dir, n)) = &extras.files {
        for i in 0..*n {
            let d = dir.join((i % 100).to_string());
            if i < 100 {
                fs::create_dir_all(&d).with_context(|| format!("mkdir {}", d.display()))?;
            }
            let p = d.join(i.to_string());
            fs::File::create(&p).with_context(|| format!("create {}", p.display()))?;
        }
    }
    let mut fd = None;
    if extras.fds > 0 {
        let max = libc::rlimit {
            rlim_cur: extras.fds as u64 + 1,
            rlim_max: extras.fds as u64 + 1,
        };
        // SAFETY: a valid rlimit; root may raise it up to fs.nr_open.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &max) } != 0 {
            bail!(
                "setrlimit RLIMIT_NOFILE {}: {}",
                extras.fds + 1,
                std::io::Error::last_os_error()
            );
        }
        let null = fs::File::open("/dev/null").context("open /dev/null")?;
        // SAFETY: dup2 onto a number above every descriptor in use.
        let r = unsafe { libc::dup2(null.as_raw_fd(), extras.fds as i32) };
        if r < 0 {
            bail!(
                "dup2 to descriptor {}: {}",
                extras.fds,
                std::io::Error::last_os_error()
            );
        }
        // SAFETY: r is the descriptor just made, owned here.
        fd = Some(unsafe { std::os::fd::FromRawFd::from_raw_fd(r) });
    }
    Ok((threads, fd))
}

pub(super) fn touch_anon(size: u64) -> Result<()> {
    if size == 0 {
        return Ok(());
    }
    let ptr = map_anon(size, true)?;
    let base = ptr.as_ptr() as *mut u8;
    for off in (0..size as usize).step_by(4096) {
        // SAFETY: off < size, inside the mapping.
        unsafe { base.add(off).write_volatile(0x5a) };
    }
    Ok(())
}

/// Maps `size` bytes of `path` shared and dirties (or reads) every page; the mapping is kept.
/// Maps `size` bytes of `path` shared and touches every page (a write with `dirty`); returns
/// the mapping's address, kept until the task exits.
pub(super) fn map_file(path: &std::path::Path, size: u64, dirty: bool) -> Result<usize> {
    let ptr = map_shared_file(path, size)?;
    let base = ptr.as_ptr() as *mut u8;
    let mut sum = 0u8;
    for off in (0..size as usize).step_by(4096) {
        // SAFETY: off < size, inside the mapping.
        unsafe {
            if dirty {
                base.add(off).write_volatile(0xa5);
            } else {
                sum = sum.wrapping_add(base.add(off).read_volatile());
            }
        }
    }
    std::hint::black_box(sum);
    Ok(base as usize)
}

/// Writes to every page of the mapping at `addr` over and over until `stop`: its pages are
/// dirtied again as soon as writeback cleans them, so at any moment some are dirty and some
/// under writeback. Returns the bytes dirtied.
pub(super) fn redirty_until(
    addr: usize,
    size: u64,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<JobResult> {
    let base = addr as *mut u8;
    let t = Instant::now();
    let mut total = 0u64;
    let mut round = 0u8;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        round = round.wrapping_add(1);
        for off in (0..size as usize).step_by(4096) {
            // SAFETY: off < size, inside the mapping `map_file` made, which lives until exit.
            unsafe { base.add(off).write_volatile(round) };
        }
        total += size;
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(JobResult {
        bytes: total,
        seconds: t.elapsed().as_secs_f64(),
        fsync_seconds: 0.0,
        cpu_seconds: 0.0,
        ..Default::default()
    })
}

/// Writes `size` bytes of `path` 1 MiB at a time, truncates it and starts again, until `stop` is
/// set; then returns what it wrote in all.
pub(super) fn rewrite_until(
    path: &std::path::Path,
    size: u64,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<JobResult> {
    use std::io::{Seek, SeekFrom};
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("create {}", path.display()))?;
    let block = 1usize << 20;
    let buf: Vec<u8> = (0..block).map(|i| (i % 251) as u8 + 1).collect();
    let t = Instant::now();
    let mut total = 0u64;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        // Truncate, so every round writes into new page-cache pages: pages are charged (and
        // their dirty counts kept) in the group of the task that created them, so only new pages
        // show where the writer is now.
        f.set_len(0)
            .with_context(|| format!("truncate {}", path.display()))?;
        f.seek(SeekFrom::Start(0))
            .with_context(|| format!("seek {}", path.display()))?;
        let mut left = size;
        while left > 0 && !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let n = left.min(block as u64) as usize;
            f.write_all(&buf[..n])
                .with_context(|| format!("write {}", path.display()))?;
            left -= n as u64;
            total += n as u64;
        }
    }
    Ok(JobResult {
        bytes: total,
        seconds: t.elapsed().as_secs_f64(),
        fsync_seconds: 0.0,
        cpu_seconds: 0.0,
        ..Default::default()
    })
}

/// The holder task: sets up its memory, says "ready SECONDS", then serves commands, one per line:
/// "grow BYTES" (more anonymous memory; answers "ok SECONDS"), "wait" (stop the background
/// writer after its current block; "ok SECONDS"), "exit". Its JobResult is printed by `worker_main` at exit.
pub(super) fn hold(
    (anon, shmem): (u64, u64),
    file: Option<&std::path::Path>,
    (file_size, dirty, redirty): (u64, bool, bool),
    write: u64,
    extras: &super::HoldExtras,
) -> Result<JobResult> {
    use crate::model::step::{Advice, Region as Which};
    use std::io::BufRead;
    let t = Instant::now();
    // Before any thread starts: the network namespace is the task's (threads inherit it).
    // A kernel without TCP (CONFIG_INET) holds none: a note, and the checks over sock say
    // they were not exercised.
    let mut notes = Vec::new();
    let _sock = match extras.sock {
        0 => Vec::new(),
        n => hold_sock(n).unwrap_or_else(|e| {
            notes.push(format!("no socket memory held: {e:#}"));
            Vec::new()
        }),
    };
    let anon_region = hold_anon(anon, extras)?;
    // Kept open and mapped until the task exits, which frees it.
    let (_shmem, shmem_region): (Option<std::os::fd::OwnedFd>, _) =
        match (&extras.shmem_huge, shmem) {
            (_, 0) => (None, None),
            (Some(dir), n) => {
                let (f, r) = touch_huge_tmpfs(dir, n)?;
                (Some(f.into()), Some(r))
            }
            (None, n) => {
                let (f, r) = touch_shmem(n)?;
                (Some(f), Some(r))
            }
        };
    touch_sparse(extras.sparse)?;
    let _kernel = kernel_memory(extras)?;
    let mut mapping = None;
    let mut file_region = None;
    let mut _readonly = None;
    if let Some(f) = file
        && file_size > 0
    {
        if extras.readonly {
            let (fd, r) = map_file_readonly(f, file_size)?;
            _readonly = Some(fd);
            file_region = Some(r);
        } else {
            let addr = map_file(f, file_size, dirty)?;
            mapping = Some(addr);
            file_region = Some(Region {
                addr,
                len: file_size as usize,
            });
        }
    }
    let mut total = anon + shmem + file_size;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Background writers until "wait": the mapping dirtied over and over, and/or a buffered
    // rewrite of <file>.written (new pages all the time, which also gives compaction work).
    let mut writers = Vec::new();
    if let Some(addr) = mapping.filter(|_| redirty) {
        let stop = stop.clone();
        writers.push(std::thread::spawn(move || {
            redirty_until(addr, file_size, &stop)
        }));
    }
    if let Some(f) = file.filter(|_| write > 0) {
        let p = f.with_extension("written");
        let stop = stop.clone();
        writers.push(std::thread::spawn(move || rewrite_until(&p, write, &stop)));
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "ready {} {}",
        t.elapsed().as_secs_f64(),
        notes.join("; ")
    )?;
    out.flush()?;
    for line in std::io::stdin().lock().lines() {
        let line = line.context("read command")?;
        let mut it = line.split_whitespace();
        match (it.next(), it.next()) {
            (Some("grow"), Some(n)) => {
                let n: u64 = n.parse().context("grow BYTES")?;
                let t = Instant::now();
                touch_anon(n)?;
                total += n;
                writeln!(out, "ok {}", t.elapsed().as_secs_f64())?;
            }
            (Some("wait"), None) => {
                let t = Instant::now();
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                for w in writers.drain(..) {
                    let r = w
                        .join()
                        .map_err(|_| anyhow::anyhow!("writer thread panicked"))??;
                    total += r.bytes;
                }
                writeln!(out, "ok {}", t.elapsed().as_secs_f64())?;
            }
            (Some("advise"), Some(a)) => {
                let t = Instant::now();
                let advice = Advice::parse(a).context("advise ADVICE REGION")?;
                let which = it
                    .next()
                    .and_then(Which::parse)
                    .context("advise ADVICE REGION")?;
                let region = match which {
                    Which::Anon => anon_region,
                    Which::Shmem => shmem_region,
                    Which::File => file_region,
                };
                // The scenario's parser checks the task holds it; a task without is a no-op.
                let note = match region {
                    Some(r) => advise(r, advice)?,
                    None => Some(format!("the task holds no {} memory", which.name())),
                };
                writeln!(
                    out,
                    "ok {} {}",
                    t.elapsed().as_secs_f64(),
                    note.unwrap_or_default()
                )?;
            }
            (Some("exit"), None) => break,
            _ => bail!("unknown holder command {line:?}"),
        }
        out.flush()?;
    }
    drop(out);
    Ok(JobResult {
        bytes: total,
        seconds: t.elapsed().as_secs_f64(),
        fsync_seconds: 0.0,
        cpu_seconds: 0.0,
        ..Default::default()
    })
}

/// Buffered writes as dd does them: the measured time is the write loop only (dd without
/// conv=fdatasync); an fsync afterwards is timed separately.
pub(super) fn write_file(
    path: &PathBuf,
    size: u64,
    block_size: u64,
    fsync: bool,
) -> Result<JobResult> {
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("unlink {}", path.display())),
    }
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("create {}", path.display()))?;
    // Not zeros, so no filesystem can cheat with holes or compression.
    let buf: Vec<u8> = (0..block_size).map(|i| (i % 251) as u8 + 1).collect();
    let t = Instant::now();
    let mut left = size;
    while left > 0 {
        let n = left.min(block_size) as usize;
        f.write_all(&buf[..n])
            .with_context(|| format!("write {}", path.display()))?;
        left -= n as u64;
    }
    let seconds = t.elapsed().as_secs_f64();
    let mut fsync_seconds = 0.0;
    if fsync {
        let t = Instant::now();
        f.sync_all()
            .with_context(|| format!("fsync {}", path.display()))?;
        fsync_seconds = t.elapsed().as_secs_f64();
    }
    Ok(JobResult {
        bytes: size,
        seconds,
        fsync_seconds,
        cpu_seconds: 0.0,
        ..Default::default()
    })
}

/// Dirties a shared file mapping page by page (each first write faults, and the page is marked
/// dirty and accounted then), keeps the pages dirty for a while, then msyncs them.
pub(super) fn mmap_write(path: &std::path::Path, size: u64, hold_ms: u64) -> Result<JobResult> {
    use nix::sys::mman::{MsFlags, msync, munmap};
    let ptr = map_shared_file(path, size)?;
    let page = 4096usize;
    let t = Instant::now();
    let base = ptr.as_ptr() as *mut u8;
    for off in (0..size as usize).step_by(page) {
        // SAFETY: off < size, inside the mapping.
        unsafe { base.add(off).write_volatile(0xa5) };
    }
    let seconds = t.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_millis(hold_ms));
    let t = Instant::now();
    // SAFETY: the mapping is ours and still mapped.
    unsafe { msync(ptr, size as usize, MsFlags::MS_SYNC) }
        .with_context(|| format!("msync {}", path.display()))?;
    let fsync_seconds = t.elapsed().as_secs_f64();
    // SAFETY: unmapping what we mapped.
    unsafe { munmap(ptr, size as usize) }.context("munmap")?;
    Ok(JobResult {
        bytes: size,
        seconds,
        fsync_seconds,
        cpu_seconds: 0.0,
        ..Default::default()
    })
}

const COMPACT_MEMORY: &str = "/proc/sys/vm/compact_memory";

/// Triggers compaction of all zones over and over (like `yes 1 > compact_memory`).
pub(super) fn compaction_loop() -> Result<JobResult> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .open(COMPACT_MEMORY)
        .with_context(|| format!("open {COMPACT_MEMORY}"))?;
    loop {
        if let Err(e) = f.write_all(b"1") {
            bail!("write {COMPACT_MEMORY}: {e}");
        }
    }
}
