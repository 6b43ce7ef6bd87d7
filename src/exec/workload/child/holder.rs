//! The holder task (`Job::Hold`, driven by `Holder`): makes what it holds, says "ready", then
//! serves the runner's commands until "exit".

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::held::{
    Region, advise, hold_anon, hold_sock, kernel_memory, map_file, map_file_readonly, touch_anon,
    touch_huge_tmpfs, touch_shmem, touch_sparse,
};
use crate::exec::workload::{HoldExtras, JobResult};

/// The holder task: sets up its memory, says "ready SECONDS", then serves commands, one per line:
/// "grow BYTES" (more anonymous memory; answers "ok SECONDS"), "wait" (stop the background
/// writer after its current block; "ok SECONDS"), "exit". Its JobResult is printed by `worker_main` at exit.
pub(super) fn hold(
    (anon, shmem): (u64, u64),
    file: Option<&std::path::Path>,
    (file_size, dirty, redirty): (u64, bool, bool),
    write: u64,
    extras: &HoldExtras,
) -> Result<JobResult> {
    let t = Instant::now();
    // Before any thread starts: the network namespace is the task's (threads inherit it).
    // A kernel without TCP (CONFIG_INET) holds none: a note, and the checks over sock say
    // they were not exercised.
    let mut notes = Vec::new();
    if extras.unkillable {
        std::fs::write("/proc/self/oom_score_adj", "-1000").context("oom_score_adj -1000")?;
    }
    let _sock = match extras.sock {
        0 => Vec::new(),
        n => hold_sock(n).unwrap_or_else(|e| {
            notes.push(format!("no socket memory held: {e:#}"));
            Vec::new()
        }),
    };
    let anon_region = hold_anon(anon, extras)?;
    // Kept open and mapped until the task exits, which frees it.
    let (_shmem, shmem_region) = hold_shmem(shmem, extras)?;
    touch_sparse(extras.sparse)?;
    let _kernel = kernel_memory(extras)?;
    let readonly = extras.readonly.then_some(extras.nohugepage);
    let (_readonly, mapping, file_region) = hold_file(file, file_size, dirty, readonly)?;
    let mut total = anon + shmem + file_size;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writers = start_writers((mapping, file), (file_size, redirty, write), &stop);
    let mut out = std::io::stdout().lock();
    let made = match extras.pipes {
        0 => String::new(),
        _ => format!("made={} ", _kernel.2.len() / 2),
    };
    writeln!(
        out,
        "ready {} {made}{}",
        t.elapsed().as_secs_f64(),
        notes.join("; ")
    )?;
    out.flush()?;
    let regions = (anon_region, shmem_region, file_region);
    serve(&mut out, regions, &stop, &mut writers, &mut total)?;
    drop(out);
    Ok(JobResult {
        bytes: total,
        seconds: t.elapsed().as_secs_f64(),
        fsync_seconds: 0.0,
        cpu_seconds: 0.0,
        ..Default::default()
    })
}

/// A held task's `shmem` bytes: in huge pages on a tmpfs of its own with `shmem_huge`, else a
/// memfd; the descriptor, and the region mapped.
fn hold_shmem(
    shmem: u64,
    extras: &HoldExtras,
) -> Result<(Option<std::os::fd::OwnedFd>, Option<Region>)> {
    Ok(match (&extras.shmem_huge, shmem) {
        (_, 0) => (None, None),
        (Some(dir), n) => {
            let (f, r) = touch_huge_tmpfs(dir, n)?;
            (Some(f.into()), Some(r))
        }
        (None, n) => {
            let (f, r) = touch_shmem(n)?;
            (Some(f), Some(r))
        }
    })
}

/// A held task's mapping of `file_size` bytes of `file`: read-only (the file kept open) with
/// `readonly` (Some(nohugepage)), else shared and touched (written with `dirty`). Returns the
/// open file, the shared mapping's address and the region mapped.
fn hold_file(
    file: Option<&std::path::Path>,
    file_size: u64,
    dirty: bool,
    readonly: Option<bool>,
) -> Result<(Option<fs::File>, Option<usize>, Option<Region>)> {
    let mut mapping = None;
    let mut file_region = None;
    let mut readonly_file = None;
    if let Some(f) = file
        && file_size > 0
    {
        if let Some(nohugepage) = readonly {
            let (fd, r) = map_file_readonly(f, file_size, nohugepage)?;
            readonly_file = Some(fd);
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
    Ok((readonly_file, mapping, file_region))
}

/// The writers a held task runs in the background until "wait": the shared `mapping` of
/// `file_size` bytes dirtied over and over (`redirty`), and/or a buffered rewrite of `write`
/// bytes of <file>.written (new pages all the time, which also gives compaction work).
fn start_writers(
    (mapping, file): (Option<usize>, Option<&std::path::Path>),
    (file_size, redirty, write): (u64, bool, u64),
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Vec<JoinHandle<Result<JobResult>>> {
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
    writers
}

/// Serves the holder's commands from stdin until "exit" (see `hold`), answering each on `out`.
/// "grow" adds what it touched to `total`, "wait" sets `stop` and adds what the `writers` wrote;
/// "advise" works on one of the `regions` (anon, shmem, file).
fn serve(
    out: &mut std::io::StdoutLock,
    (anon_region, shmem_region, file_region): (Option<Region>, Option<Region>, Option<Region>),
    stop: &std::sync::atomic::AtomicBool,
    writers: &mut Vec<JoinHandle<Result<JobResult>>>,
    total: &mut u64,
) -> Result<()> {
    use crate::model::step::{Advice, Region as Which};
    use std::io::BufRead;
    for line in std::io::stdin().lock().lines() {
        let line = line.context("read command")?;
        let mut it = line.split_whitespace();
        match (it.next(), it.next()) {
            (Some("grow"), Some(n)) => {
                let n: u64 = n.parse().context("grow BYTES")?;
                let t = Instant::now();
                touch_anon(n)?;
                *total += n;
                writeln!(out, "ok {}", t.elapsed().as_secs_f64())?;
            }
            (Some("wait"), None) => {
                let t = Instant::now();
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                for w in writers.drain(..) {
                    let r = w
                        .join()
                        .map_err(|_| anyhow::anyhow!("writer thread panicked"))??;
                    *total += r.bytes;
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
            (Some(cmd @ ("migrate" | "where")), Some(w)) => {
                let t = Instant::now();
                let which = Which::parse(w).context("migrate|where REGION [NODE]")?;
                let to = match cmd {
                    "migrate" => Some((
                        (it.next())
                            .and_then(crate::model::step::Target::parse)
                            .context("migrate REGION NODE|away MOVER")?,
                        (it.next())
                            .and_then(crate::model::step::Mover::parse)
                            .context("migrate REGION NODE|away MOVER")?,
                    )),
                    _ => None,
                };
                let region = match which {
                    Which::Anon => anon_region,
                    Which::Shmem => shmem_region,
                    Which::File => file_region,
                };
                let placed = match region {
                    Some(r) => placed(r, to)?,
                    None => String::new(),
                };
                writeln!(out, "ok {} {placed}", t.elapsed().as_secs_f64())?;
            }
            (Some("exit"), None) => break,
            _ => bail!("unknown holder command {line:?}"),
        }
        out.flush()?;
    }
    Ok(())
}

/// Asks the kernel to move `region`'s pages to `to` with its mover (None: only where they
/// are); answers the node moved to and where the pages are then: "NODE
/// PAGES_ON_NODE0,PAGES_ON_NODE1,... UNPLACED" (see `numa::move_pages`; NODE -1 for none).
fn placed(
    region: Region,
    to: Option<(crate::model::step::Target, crate::model::step::Mover)>,
) -> Result<String> {
    use crate::model::step::{Mover, Target};
    use crate::sys::numa::{mbind_move, memory_nodes, migrate_process, move_pages, pages_per_node};
    let by = to.map(|t| t.1);
    let node = match to.map(|t| t.0) {
        None => None,
        Some(Target::Node(n)) => Some(n),
        Some(Target::Away) => {
            let (per, _) = pages_per_node(&move_pages(region.addr, region.len, None)?);
            let most = (0..per.len()).max_by_key(|&n| per[n]).unwrap_or(0) as u32;
            let nodes = memory_nodes();
            let at = nodes.iter().position(|&n| n == most).map_or(0, |i| i + 1);
            Some(nodes[at % nodes.len()])
        }
    };
    match (node, by) {
        (Some(n), Some(Mover::Mbind)) => {
            mbind_move(region.addr, region.len, n).with_context(|| format!("mbind to node {n}"))?
        }
        // What could not move shows in where the pages are (below).
        (Some(n), Some(Mover::MigratePages)) => {
            migrate_process(n).with_context(|| format!("migrate_pages to node {n}"))?;
        }
        _ => {}
    }
    // move_pages moves (Mover::MovePages), or says where the pages are after the others.
    let to = node.filter(|_| by == Some(Mover::MovePages));
    let status = move_pages(region.addr, region.len, to)
        .with_context(|| format!("move_pages to node {to:?}"))?;
    let (per, unplaced) = pages_per_node(&status);
    let per: Vec<String> = per.iter().map(|p| p.to_string()).collect();
    let node = node.map_or(-1, |n| n as i64);
    Ok(format!("{node} {} {unplaced}", per.join(",")))
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
