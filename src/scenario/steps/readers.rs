//! The readers of the step kinds whose keys depend on each other or name something to look up
//! (the others read theirs in the step table): write's block size, what a hold holds, an
//! advice and its region, await's counter.

use super::{CGROUP, StepArgs, TASK, file_name};
use crate::model::counter::{Counter, Source, counter};
use crate::model::source::{Key, opt};
use crate::model::step::{Advice, Mover, Region, Target};
use crate::scenario::{Hold, ScenarioError, Step};

/// `write`: the block size is 1..64M, 1M when not set; a quick size at most the size.
pub(super) fn write(i: &StepArgs) -> Result<Step, ScenarioError> {
    let size = i.positive_size("size")?;
    let block_size = match i.get::<String>("block_size")? {
        Some(b) => {
            let n = i.text().size(&b)?;
            if n == 0 || n > 64 << 20 {
                return Err(i.err(b.span(), "block_size must be 1..64M"));
            }
            n
        }
        None => 1 << 20,
    };
    let quick_size = match i.get::<String>("quick_size")? {
        Some(q) => match i.text().positive_size(&q, "quick_size")? {
            n if n > size => return Err(i.err(q.span(), "quick_size must be at most size")),
            n => Some(n),
        },
        None => None,
    };
    Ok(Step::Write {
        cgroup: i.cgroup()?,
        file: i.file()?,
        size,
        block_size,
        fsync: i.flag("fsync")?,
        quick_size,
    })
}

/// The keys of `hold`.
pub(super) const HOLD_KEYS: &[Key] = &[
    TASK,
    CGROUP,
    opt("anon", "bytes of anonymous memory it touches (default 0)"),
    opt(
        "shmem",
        "bytes of a memfd it maps and writes: shared memory (default 0)",
    ),
    opt(
        "file",
        "a file it maps `size` bytes of, and writes `write` bytes of `<file>.written`",
    ),
    opt("size", "bytes of `file` it maps (default 0)"),
    opt(
        "dirty",
        "dirty the mapped pages rather than read them (default false)",
    ),
    opt(
        "redirty",
        "keep dirtying the mapping until `wait` (needs file, size, dirty; default false)",
    ),
    opt(
        "write",
        "bytes of `<file>.written` it keeps rewriting in the background until `wait` (default 0)",
    ),
    opt(
        "huge",
        "its anonymous memory in huge pages, MADV_HUGEPAGE on a 2 MiB boundary (default false: 4 KiB pages)",
    ),
    opt(
        "mlock",
        "mlock its anonymous memory: unevictable (default false)",
    ),
    opt(
        "zero",
        "write its anonymous memory with zeros: zero pages when swapped out (default false)",
    ),
    opt(
        "lazyfree",
        "bytes of its anonymous memory given back with MADV_FREE after touching it (default 0)",
    ),
    opt(
        "shmem_huge",
        "its shmem in a file on a tmpfs of its own mounted with huge=always, in a mount namespace of its own: shmem huge pages (default false: a memfd)",
    ),
    opt(
        "threads",
        "threads that sleep until it exits: a kernel stack each, 0..4096 (default 0)",
    ),
    opt(
        "files",
        "empty files it makes in 100 directories: inodes and dentries, slab, 0..1000000 (default 0)",
    ),
    opt(
        "fds",
        "grow its descriptor table to this many (one descriptor dup'ed that high): vmalloc'ed, 0..1048576 (default 0)",
    ),
    opt(
        "readonly",
        "map `file` read-only, from a descriptor opened read-only, on a 2 MiB boundary: what MADV_COLLAPSE of a file needs (default false)",
    ),
    opt(
        "nohugepage",
        "with readonly: MADV_NOHUGEPAGE on the mapping before it is touched, so khugepaged does not collapse it in the background into huge pages charged to this task's group (default false)",
    ),
    opt(
        "sock",
        "bytes it queues on a TCP connection to itself over loopback, in a network namespace of its own, never read: socket buffers (default 0)",
    ),
    opt(
        "unkillable",
        "oom_score_adj -1000: the OOM killer may not pick it, so at its group's limit the kernel must refuse what it asks; its pipes then stop at the first refused (ENOMEM, or ENFILE when the pipe's inode cannot be had) and it closes its last 64 again, room for its own replies at the limit; the step records how many it kept (default false)",
    ),
    opt(
        "pipes",
        "pipes it makes and keeps open, 0..100000: each a pipe_inode_info, two files, an inode and a dentry, and its ring of pipe_size / 4 KiB slots (40 bytes each), all accounted kernel memory (slab) (default 0)",
    ),
    opt(
        "pipe_size",
        "each pipe's capacity (F_SETPIPE_SZ), a power of two from 4K to 16M: at 1M its 10 KiB ring is above the largest kmalloc cache (8 KiB), so SLUB takes it from the page allocator and counts it as slab_unreclaimable all the same (default the kernel's 64K)",
    ),
    opt(
        "sparse",
        "bytes of address space it maps and touches one page in every 2 MiB of: a page table page each (default 0)",
    ),
];

/// `hold`: what the task holds, sizes and counts 0 when not set. A hold holds something; a flag
/// that needs what is not there (redirty a dirtied mapping, readonly a clean one, huge, mlock,
/// zero and shmem_huge their memory) is refused at the flag.
pub(super) fn hold(i: &StepArgs) -> Result<Step, ScenarioError> {
    let size = i.size_or_zero("size")?;
    let write = i.size_or_zero("write")?;
    let file = i.get::<String>("file")?;
    if (size > 0 || write > 0) && file.is_none() {
        return Err(i.err(
            i.keys.span.clone(),
            "a hold with size or write needs a file",
        ));
    }
    let dirty = i.flag("dirty")?;
    refuse_flag(
        i,
        "redirty",
        size == 0 || !dirty,
        "redirty keeps dirtying the mapping: it needs a file, a size and dirty = true",
    )?;
    let redirty = i.flag("redirty")?;
    let anon = i.size_or_zero("anon")?;
    let shmem = i.size_or_zero("shmem")?;
    let (threads, files, fds) = kernel_memory(i)?;
    let (sock, sparse) = (i.size_or_zero("sock")?, i.size_or_zero("sparse")?);
    let (pipes, pipe_size) = pipes(i)?;
    if [anon, shmem, size, write, sock, sparse] == [0; 6] && threads + files + fds + pipes == 0 {
        return Err(i.err(
            i.keys.span.clone(),
            "a hold must hold something: anon, shmem, size, write, threads, files, fds, pipes, sock or sparse more than 0",
        ));
    }
    let readonly = i.flag("readonly")?;
    refuse_flag(
        i,
        "readonly",
        size == 0 || dirty || write > 0,
        "readonly maps the file read-only: it needs a file and a size, and neither dirty nor write",
    )?;
    let nohugepage = i.flag("nohugepage")?;
    refuse_flag(
        i,
        "nohugepage",
        !readonly,
        "nohugepage keeps khugepaged off a read-only mapping: it needs readonly",
    )?;
    let lazyfree = i.size_or_zero("lazyfree")?;
    if lazyfree > anon {
        return Err(i.err(
            i.keys.span.clone(),
            "lazyfree gives back part of the anonymous memory: at most anon",
        ));
    }
    refuse_unheld(i, anon, shmem)?;
    Ok(Step::Hold(Hold {
        task: i.task()?,
        cgroup: i.cgroup()?,
        anon,
        shmem,
        file: file.map(|f| file_name(i.text(), &f)).transpose()?,
        size,
        dirty,
        redirty,
        write,
        huge: i.flag("huge")?,
        mlock: i.flag("mlock")?,
        zero: i.flag("zero")?,
        lazyfree,
        shmem_huge: i.flag("shmem_huge")?,
        threads,
        files,
        fds,
        readonly,
        nohugepage,
        sock,
        sparse,
        pipes,
        pipe_size,
        unkillable: i.flag("unkillable")?,
    }))
}

/// A hold's `pipes` (0..100000) and their `pipe_size` (4K..16M, a power of two as the kernel
/// rounds it; only with pipes; 0 when not set: the kernel's default).
fn pipes(i: &StepArgs) -> Result<(u32, u64), ScenarioError> {
    let pipes = match i.get::<u32>("pipes")? {
        Some(n) if *n.get_ref() > 100_000 => {
            return Err(i.err(n.span(), "pipes must be 0..100000"));
        }
        Some(n) => n.into_inner(),
        None => 0,
    };
    let size = i.size_or_zero("pipe_size")?;
    if size != 0 && (pipes == 0 || !size.is_power_of_two() || !(4096..=16 << 20).contains(&size)) {
        return Err(i.err(
            i.keys.span.clone(),
            "pipe_size is each pipe's capacity: a power of two from 4K to 16M, with pipes",
        ));
    }
    Ok((pipes, size))
}

/// A hold's kernel memory: `threads` (0..4096), `files` (0..1000000), `fds` (0..1048576).
fn kernel_memory(i: &StepArgs) -> Result<(u32, u32, u32), ScenarioError> {
    let count = |key: &str, max: u32| -> Result<u32, ScenarioError> {
        match i.get::<u32>(key)? {
            Some(n) if *n.get_ref() > max => {
                Err(i.err(n.span(), format!("{key} must be 0..{max}")))
            }
            Some(n) => Ok(n.into_inner()),
            None => Ok(0),
        }
    };
    Ok((
        count("threads", 4096)?,
        count("files", 1_000_000)?,
        count("fds", 1 << 20)?,
    ))
}

/// The flags about a hold's anonymous memory (huge, mlock, zero) need some, shmem_huge shmem.
fn refuse_unheld(i: &StepArgs, anon: u64, shmem: u64) -> Result<(), ScenarioError> {
    for (key, of, what) in [
        ("huge", anon, "anonymous"),
        ("mlock", anon, "anonymous"),
        ("zero", anon, "anonymous"),
        ("shmem_huge", shmem, "shmem"),
    ] {
        let msg = format!("{key} is about {what} memory the task does not hold");
        refuse_flag(i, key, of == 0, msg)?;
    }
    Ok(())
}

/// Refuses flag `key` set to true when `bad` (what the flag needs is missing), at the flag.
fn refuse_flag(
    i: &StepArgs,
    key: &str,
    bad: bool,
    msg: impl Into<String>,
) -> Result<(), ScenarioError> {
    if let Some(f) = i.get::<bool>(key)?
        && *f.get_ref()
        && bad
    {
        return Err(i.err(f.span(), msg));
    }
    Ok(())
}

/// `advise`: the advice and the region must be known words.
pub(super) fn advise(i: &StepArgs) -> Result<Step, ScenarioError> {
    let a = i.need::<String>("advice")?;
    let advice = Advice::parse(a.get_ref()).ok_or_else(|| {
        i.err(
            a.span(),
            format!(
                "unknown advice {:?} (known: pageout, cold, collapse, touch, hugepage)",
                a.get_ref()
            ),
        )
    })?;
    Ok(Step::Advise {
        task: i.task()?,
        advice,
        region: region(i)?,
    })
}

/// The mapping of a held task that `advise` and `migrate` work on: `region`, default anon.
fn region(i: &StepArgs) -> Result<Region, ScenarioError> {
    Ok(match i.get::<String>("region")? {
        None => Region::Anon,
        Some(r) => Region::parse(r.get_ref()).ok_or_else(|| {
            i.err(
                r.span(),
                format!(
                    "unknown region {:?} (known: anon, shmem, file)",
                    r.get_ref()
                ),
            )
        })?,
    })
}

/// `migrate`: a region of a held task and the node (0..63, or "away") its pages go to.
pub(super) fn migrate(i: &StepArgs) -> Result<Step, ScenarioError> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Node {
        Number(u32),
        Word(String),
    }
    let n = i.need::<Node>("node")?;
    let target = match n.get_ref() {
        Node::Number(x) => Target::parse(&x.to_string()),
        Node::Word(w) => (w == "away").then_some(Target::Away),
    };
    let Some(node) = target else {
        return Err(i.err(n.span(), "node must be 0..63 or \"away\""));
    };
    let by = match i.get::<String>("by")? {
        None => Mover::default(),
        Some(b) => Mover::parse(b.get_ref()).ok_or_else(|| {
            i.err(
                b.span(),
                format!(
                    "by must be move_pages, mbind or migrate_pages, not {:?}",
                    b.get_ref()
                ),
            )
        })?,
    };
    Ok(Step::Migrate {
        task: i.task()?,
        region: region(i)?,
        node,
        by,
    })
}

/// `await`: a memory.stat counter of the group (`counter`), at least `size`, within `duration`.
pub(super) fn await_counter(i: &StepArgs) -> Result<Step, ScenarioError> {
    let c = i.need::<String>("counter")?;
    if !matches!(
        counter(c.get_ref()),
        Some(Counter {
            source: Source::Stat { .. },
            ..
        })
    ) {
        return Err(i.err(
            c.span(),
            "counter must be a memory.stat counter (dirty, writeback, file, anon, ...)",
        ));
    }
    Ok(Step::Await {
        cgroup: i.cgroup()?,
        counter: c.into_inner(),
        size: i.positive_size("size")?,
        within: i.duration()?,
    })
}
