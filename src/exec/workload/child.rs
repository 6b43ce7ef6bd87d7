//! The worker process's side: what each job does inside the cgroup it was placed in. The holder
//! task is in holder.rs, what it holds in held.rs.

use std::fs;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::{Job, JobResult};

mod held;
mod holder;

use holder::hold;

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
        Job::Create { path, size } => create_cold(path, *size),
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
pub(crate) fn drop_cache(path: &std::path::Path) -> Result<()> {
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
    let mut buf = vec![0u8; crate::model::step::READ_REQUEST_BYTES as usize];
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
    let mut cpus = 0u64;
    while t.elapsed() < until {
        let ptr = map_anon(size, true)?;
        let base = ptr.as_ptr() as *mut u8;
        for off in (0..size as usize).step_by(4096) {
            // SAFETY: inside the mapping.
            unsafe { base.add(off).write_volatile(1) };
            faults += 1;
        }
        unsafe { munmap(ptr, size as usize) }.context("munmap")?;
        // SAFETY: no arguments; -1 on error.
        let cpu = unsafe { libc::sched_getcpu() };
        if (0..64).contains(&cpu) {
            cpus |= 1 << cpu;
        }
    }
    Ok(JobResult {
        bytes: faults,
        cpus,
        seconds: t.elapsed().as_secs_f64(),
        fsync_seconds: 0.0,
        cpu_seconds: cpu_seconds() - cpu0,
        ..Default::default()
    })
}

/// Byte `i` of every block a writer writes: not zeros, so no filesystem can cheat with holes or
/// compression.
fn pattern(i: usize) -> u8 {
    (i % 251) as u8 + 1
}

/// Removes `path` if it is there.
fn unlink_if_any(path: &PathBuf) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("unlink {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Buffered writes as dd does them: the measured time is the write loop only (dd without
/// conv=fdatasync); an fsync afterwards is timed separately.
pub(super) fn write_file(
    path: &PathBuf,
    size: u64,
    block_size: u64,
    fsync: bool,
) -> Result<JobResult> {
    unlink_if_any(path)?;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("create {}", path.display()))?;
    let buf: Vec<u8> = (0..block_size as usize).map(pattern).collect();
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

/// The alignment O_DIRECT asks of offsets, lengths and buffers: a page covers every block size.
const DIRECT_ALIGN: usize = 4096;

/// A file of `size` bytes on disk and not in the page cache, for steps that read it cold.
/// Written with O_DIRECT where the filesystem takes it: the blocks go from the buffer to the disk
/// with no page-cache copy to make, write back and drop (in a TCG guest, copying a page costs
/// more than the virtual disk's write of it). Otherwise (a size that is not whole pages, a
/// filesystem that refuses O_DIRECT with EINVAL) through the page cache, fsynced and dropped.
pub(super) fn create_cold(path: &PathBuf, size: u64) -> Result<JobResult> {
    const BLOCK: usize = 1 << 20;
    // A new file written with O_DIRECT has no page cache to drop.
    if size.is_multiple_of(DIRECT_ALIGN as u64)
        && let Some(r) = write_direct(path, size, BLOCK)?
    {
        return Ok(r);
    }
    let r = write_file(path, size, BLOCK as u64, true)?;
    drop_cache(path)?;
    Ok(r)
}

/// Writes `size` bytes (whole pages) to a new `path` with O_DIRECT in `block` writes and fsyncs
/// it (the extents and the size); None, with nothing left behind, where the filesystem refuses
/// O_DIRECT.
fn write_direct(path: &PathBuf, size: u64, block: usize) -> Result<Option<JobResult>> {
    unlink_if_any(path)?;
    let refused = |e: &std::io::Error| e.raw_os_error() == Some(libc::EINVAL);
    let mut f = match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_DIRECT)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if refused(&e) => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("create {} (O_DIRECT)", path.display())),
    };
    // The same bytes as write_file's, in an aligned window of a larger buffer.
    let mut raw = vec![0u8; block + DIRECT_ALIGN];
    let off = raw.as_ptr().align_offset(DIRECT_ALIGN);
    let buf = &mut raw[off..off + block];
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern(i);
    }
    let t = Instant::now();
    let mut done = 0u64;
    while done < size {
        let n = (size - done).min(block as u64) as usize;
        match f.write_all(&buf[..n]) {
            Ok(()) => done += n as u64,
            Err(e) if done == 0 && refused(&e) => {
                drop(f);
                fs::remove_file(path).with_context(|| format!("unlink {}", path.display()))?;
                return Ok(None);
            }
            Err(e) => {
                return Err(e).with_context(|| format!("write {} (O_DIRECT)", path.display()));
            }
        }
    }
    let seconds = t.elapsed().as_secs_f64();
    let t = Instant::now();
    f.sync_all()
        .with_context(|| format!("fsync {}", path.display()))?;
    Ok(Some(JobResult {
        bytes: size,
        seconds,
        fsync_seconds: t.elapsed().as_secs_f64(),
        ..Default::default()
    }))
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
