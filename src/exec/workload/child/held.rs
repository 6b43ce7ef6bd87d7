//! What a held task makes and keeps until it exits (see `holder`): anonymous memory in small or
//! huge pages, shmem, file mappings, sparse page tables, socket and kernel memory; and the
//! advice an `advise` step gives a region of it.

use std::fs;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::{map_anon, map_shared, map_shared_file};
use crate::exec::workload::HoldExtras;

/// A memfd of `size` bytes, mapped shared with every page written: `size` bytes of shmem, all
/// mapped, charged to the caller's group. The mapping stays until the task exits.
pub(super) fn touch_shmem(size: u64) -> Result<(std::os::fd::OwnedFd, Region)> {
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

/// Maps `size` bytes of anonymous memory with 4 KiB pages (no THP, like the 2010 move-charge
/// benchmark) and touches every page. The mapping is leaked on purpose: the task holds it.
/// A held task's anonymous memory, touched as `extras` says: in huge pages or 4 KiB ones, with
/// zeros or a pattern, mlocked, part of it given back with MADV_FREE. Kept until the task exits.
pub(super) fn hold_anon(size: u64, extras: &HoldExtras) -> Result<Option<Region>> {
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
pub(super) struct Region {
    pub(super) addr: usize,
    pub(super) len: usize,
}

/// MADV_COLLAPSE (Linux 6.1), not in every libc's headers.
const MADV_COLLAPSE: libc::c_int = 25;

/// Applies an `advise` step's advice to `region`; returns a note when the kernel declined a
/// collapse (an old kernel, no CONFIG_READ_ONLY_THP_FOR_FS for a file, no huge page to be had):
/// the checks over the fields it would have moved then say they were not exercised.
pub(super) fn advise(region: Region, advice: crate::model::step::Advice) -> Result<Option<String>> {
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
            // EINVAL: the kernel cannot collapse such a mapping at all (before 6.1, or a file
            // without CONFIG_READ_ONLY_THP_FOR_FS); anything else five times over is this run's.
            return Ok(last.map(|e| match e.raw_os_error() {
                Some(libc::EINVAL) => format!("MADV_COLLAPSE: {e}: this kernel cannot collapse it"),
                _ => format!("MADV_COLLAPSE: {e} (5 tries)"),
            }));
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
/// boundary, every page read: the file has no writer, so MADV_COLLAPSE may put it in huge pages,
/// and so may khugepaged in the background (CONFIG_READ_ONLY_THP_FOR_FS), charging them to this
/// task's group, unless `nohugepage` marks the mapping MADV_NOHUGEPAGE before it is touched.
pub(super) fn map_file_readonly(
    path: &std::path::Path,
    size: u64,
    nohugepage: bool,
) -> Result<(fs::File, Region)> {
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
    if nohugepage {
        // SAFETY: the range is the mapping just made.
        let r = unsafe { libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_NOHUGEPAGE) };
        if r != 0 {
            bail!(
                "madvise MADV_NOHUGEPAGE: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    advise(region, crate::model::step::Advice::Touch)?;
    Ok((f, region))
}

/// `size` bytes of address space, one byte written in every 2 MiB of it (4 KiB pages): a page
/// table page for each, and little memory.
pub(super) fn touch_sparse(size: u64) -> Result<()> {
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
pub(super) fn hold_sock(bytes: u64) -> Result<Vec<std::os::fd::OwnedFd>> {
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
pub(super) fn map_huge(size: u64) -> Result<std::ptr::NonNull<std::ffi::c_void>> {
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
pub(super) fn touch_huge_tmpfs(dir: &std::path::Path, size: u64) -> Result<(fs::File, Region)> {
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

/// What a held task keeps of its kernel memory until it exits: its threads, the descriptor
/// dup'ed high, its pipes.
pub(super) type KernelMemory = (
    Vec<std::thread::JoinHandle<()>>,
    Option<std::os::fd::OwnedFd>,
    Vec<std::os::fd::OwnedFd>,
);

/// The kernel memory a held task makes: threads (kernel stacks), empty files (inodes and
/// dentries), a grown descriptor table (vmalloc), pipes (slab). Returned to be kept until it exits.
pub(super) fn kernel_memory(extras: &HoldExtras) -> Result<KernelMemory> {
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
    // Room for the descriptor dup'ed high and for both ends of every pipe.
    let room = (extras.fds as u64 + 1).max(2 * extras.pipes as u64 + 256);
    if extras.fds > 0 || extras.pipes > 0 {
        let max = libc::rlimit {
            rlim_cur: room,
            rlim_max: room,
        };
        // SAFETY: a valid rlimit; root may raise it up to fs.nr_open.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &max) } != 0 {
            bail!(
                "setrlimit RLIMIT_NOFILE {room}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    if extras.fds > 0 {
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
    let pipes = make_pipes(extras.pipes, extras.pipe_size, extras.unkillable)?;
    Ok((threads, fd, pipes))
}

/// `n` pipes, each resized to `size` bytes when not 0 (F_SETPIPE_SZ; root may pass
/// fs.pipe-max-size). The kernel allocates a pipe's ring of `size` / 4 KiB slots with
/// GFP_KERNEL_ACCOUNT: charged to the task's group. Both ends are kept. With `refusable`, the
/// first pipe the kernel refuses ends the making (ENOMEM, or ENFILE, which pipe(2) returns when
/// it cannot allocate the pipe's inode or pipe_inode_info: create_pipe_files), and the last 64
/// made are closed again.
fn make_pipes(n: u32, size: u64, refusable: bool) -> Result<Vec<std::os::fd::OwnedFd>> {
    use std::os::fd::FromRawFd;
    let mut fds = Vec::with_capacity(2 * n as usize);
    for i in 0..n {
        let mut p = [0i32; 2];
        // SAFETY: p has room for the two descriptors pipe2 returns.
        if unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            let e = std::io::Error::last_os_error();
            if refusable && matches!(e.raw_os_error(), Some(libc::ENOMEM | libc::ENFILE)) {
                // Room for what the task must still do at its limit: its replies to the runner
                // go through a pipe whose pages are charged to its group (Debian's 6.1 refused
                // the page of its last reply). 64 pipes give back about 150 KiB.
                let keep = fds.len().saturating_sub(2 * 64);
                fds.truncate(keep);
                break;
            }
            bail!("pipe {} of {n}: {e}", i + 1);
        }
        // SAFETY: both descriptors were just made and are owned here.
        fds.extend(p.map(|d| unsafe { std::os::fd::OwnedFd::from_raw_fd(d) }));
        // SAFETY: a pipe descriptor of ours.
        if size > 0 && unsafe { libc::fcntl(p[1], libc::F_SETPIPE_SZ, size as libc::c_int) } < 0 {
            bail!(
                "F_SETPIPE_SZ {size} on pipe {} of {n}: {}",
                i + 1,
                std::io::Error::last_os_error()
            );
        }
    }
    Ok(fds)
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
