//! The page cache's own count of a file's pages: cachestat(2) (Linux 6.5+, syscall 451) walks the
//! file's mapping and counts cached pages and those tagged dirty and writeback. It does not read
//! the statistics counters that memcg and /proc/vmstat keep, and it sees only the files asked
//! about, so other processes on the machine cannot change it. This is the truth the accounting
//! checks compare a group's memory.stat with.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// cachestat(2)'s number: the same on every architecture (the syscall table was unified at 424).
const SYS_CACHESTAT: libc::c_long = 451;

#[repr(C)]
struct Range {
    off: u64,
    len: u64,
}

#[repr(C)]
#[derive(Default)]
struct Raw {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// Pages of one file in the page cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pages {
    pub cache: u64,
    pub dirty: u64,
    pub writeback: u64,
}

/// cachestat(2) over `len` bytes from `off` (len 0: to the end of the file).
fn call_range(fd: libc::c_int, off: u64, len: u64) -> std::io::Result<Pages> {
    let range = Range { off, len };
    let mut raw = Raw::default();
    // SAFETY: both pointers are valid for the duration of the call; the kernel writes `raw` only.
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            fd,
            &range as *const Range,
            &mut raw as *mut Raw,
            0u32,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Pages {
        cache: raw.nr_cache,
        dirty: raw.nr_dirty,
        writeback: raw.nr_writeback,
    })
}

fn call(fd: libc::c_int) -> std::io::Result<Pages> {
    call_range(fd, 0, 0)
}

/// How many pieces `pages_backwards` walks a file in.
const PIECES: u64 = 16;

/// The file's pages counted from its end to its start, a sixteenth at a time. One walk takes
/// time (a 1 GiB file under TCG: tens of milliseconds) and counts each page when it passes it:
/// while a writer at its group's limit appends at the end and reclaim evicts the oldest pages
/// at the start, a walk from the start counts pages evicted behind it and pages appended before
/// it gets there, up to both rates times the walk (2 MiB seen on 6.12); a walk from the end
/// misses both, so it counts no more than the file held when it began, less what the walk let
/// pass (within one piece, a sixteenth of the skew).
fn call_backwards(fd: libc::c_int) -> std::io::Result<Pages> {
    // SAFETY: fstat on our open descriptor into a zeroed struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let piece = (st.st_size.max(0) as u64 / PIECES).max(1 << 20) & !4095;
    let mut off = (st.st_size.max(0) as u64 / piece) * piece;
    // The last piece runs to the end of the file, whatever was appended since the fstat.
    let mut sum = call_range(fd, off, 0)?;
    while off > 0 {
        off -= piece;
        let p = call_range(fd, off, piece)?;
        sum.cache += p.cache;
        sum.dirty += p.dirty;
        sum.writeback += p.writeback;
    }
    Ok(sum)
}

/// The pages of the file at `path`; all zero when it does not exist (unlinked, or not written yet).
/// The file is opened for each call and closed at once: a descriptor kept open would keep an
/// unlinked file's pages alive and change what the workload does.
pub fn pages(path: &Path) -> std::io::Result<Pages> {
    with_file(path, call)
}

/// As `pages`, walking the file from its end (see `call_backwards`).
pub fn pages_backwards(path: &Path) -> std::io::Result<Pages> {
    with_file(path, call_backwards)
}

fn with_file(path: &Path, f: fn(libc::c_int) -> std::io::Result<Pages>) -> std::io::Result<Pages> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a valid NUL-terminated path; the descriptor is closed below on every path.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOATIME,
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOENT) => Ok(Pages::default()),
            _ => Err(e),
        };
    }
    let r = f(fd);
    // SAFETY: fd is ours and open.
    unsafe { libc::close(fd) };
    r
}

/// Whether this kernel has cachestat(2): Ok, or why not. A call on an invalid descriptor answers
/// EBADF where the syscall exists and ENOSYS where it does not (older than 6.5, or built without
/// CONFIG_CACHESTAT_SYSCALL, which `make tinyconfig` turns off).
/// `MEMCGTEST_NO_CACHESTAT=1` makes it answer no, to exercise the fallback on a kernel that has it.
pub fn support() -> Result<(), String> {
    if std::env::var_os("MEMCGTEST_NO_CACHESTAT").is_some_and(|v| v == "1") {
        return Err("cachestat(2) disabled by MEMCGTEST_NO_CACHESTAT=1".into());
    }
    match call(-1) {
        Err(e) if e.raw_os_error() == Some(libc::EBADF) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => Err(
            "cachestat(2) gives ENOSYS (Linux older than 6.5, or CONFIG_CACHESTAT_SYSCALL off)"
                .into(),
        ),
        Err(e) => Err(format!("cachestat(2) is not usable: {e}")),
        Ok(_) => Err("cachestat(2) accepted an invalid descriptor".into()),
    }
}
