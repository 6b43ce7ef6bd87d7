//! tasks: a group's anon equals what its tasks count of their own anonymous memory. Each task's
//! mm keeps its own page counter (RssAnon in /proc/PID/status), raised at every fault and
//! lowered at every unmap, apart from the memcg statistics. A task that entered the group before
//! exec faults all of its memory there, so the group's anon (v1 rss) is the sum of its tasks'
//! RssAnon, and of the tasks of the groups below it. The sampler reads the tasks just before and
//! after the group files (see `exec::sample::tasks`).
//!
//! The group's swap likewise holds at least what its tasks swapped out (VmSwap).
//!
//! Two kinds of step are not judged: a `move` (v1 moves the charge after the task is in its new
//! group) and a `release` (an exiting task's mm is detached, so its status shows no RssAnon,
//! before its pages are freed).

use crate::check::args::CheckArgs;
use crate::check::{
    Check, CheckResult, CheckSpec, Kind, Needs, Outcome, columns, missing, opt, stale_lag,
};
use crate::model::StepKind;
use crate::model::column::EXTRA_THREADS;
use crate::model::contract::{v1, v2};
use crate::model::counter::{ANON, MEMSW, SWAP};
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;
use crate::model::{Column, Machine, Record};

/// `tasks`: `cgroup`'s anon equals its tasks' own count at every sample. With
/// `needs = "charge-moving"`, not run where the kernel cannot move charges (a task that moved
/// without its charge leaves it behind, by design).
#[derive(Debug, Clone, PartialEq)]
pub struct Tasks {
    pub cgroup: String,
    pub needs_moving: bool,
}

/// `tasks` in the check table.
pub const KIND: Kind = Kind {
    kind: "tasks",
    doc: "The group's anon (v1 rss) equals what its tasks, and those of the groups below it, \
count of their own anonymous memory: the sum of RssAnon in /proc/PID/status of every pid \
in their cgroup.procs. Each task's mm keeps that page counter itself, raised at every \
fault and lowered at every unmap, apart from the memcg statistics; a task that entered the \
group before exec (memcgtest's workers do) faults all of its memory there. And the group's \
swap holds what its tasks swapped out (VmSwap: the swap entries in their page tables): v2 \
memory.swap.current is charged when a page enters the swap cache, before its entry goes \
into the page table, and stays charged until the slot is freed; v1 counts total_swap only \
once the page left the swap cache, so there total_swapcached is added (a lower bound only: \
a swapped-in page keeps its slot). And, where the kernel shows it (v2), the group's \
pagetables equal its tasks' VmPTE (the mm's own count of its page table pages: they are \
allocated in the task's context, so charged to its group, and both counts rise and fall \
with them; the pgd is in neither), within the unflushed-stats bound + 16 pages. cgroup.procs is opened on every pass (cgroup v1 serves \
a kept descriptor its first pid list again), and the tasks are read just before and after \
the group files. A gap must last 2 samples beyond the group's stale window (0.1 s; 3 s for \
a parent), and for a parent also 3 s when it began during a `fault` loop below it (its \
unflushed statistics may show a burst between two samples: the loop cycles 64 MiB faster \
than the sampler on a fast machine). Samples during `move` steps (v1 moves the charge after the task) and `release` \
steps (an exiting task's mm is detached before its pages are freed) are not judged. \
RssShmem is no truth for shmem (it counts tmpfs pages charged elsewhere), and VmLck none for \
unevictable (it counts locked address space, faulted or not: workers lock theirs with \
MCL_ONFAULT). Tolerance: the unflushed-stats bound + the mm counter's batch (max(32, 2 × \
CPUs) × CPUs pages, at least 256) + 64 pages for each thread beyond a task's first (before \
6.2 each thread caches up to 64 events of its mm's counters, and a sleeping one never passes \
them on). Not exercised when the tasks held no more than twice \
the tolerance of anon and swapped out no more; with `needs = \"charge-moving\"`, not run \
where charges cannot move (a task that moved without its charge leaves it behind, by \
design). Result name: `tasks(<cgroup>)`.",
    keys: &[
        opt("cgroup", "the group (default: the only declared group)"),
        opt("needs", "`\"charge-moving\"`"),
    ],
    parse,
    promises: &[
        &v2::TRACK_USER,
        &v2::STAT_ANON,
        &v2::SWAP_CURRENT,
        &v2::STAT_SWAPCACHED,
        &v1::STAT_LOCAL,
        &v1::STAT_SWAP,
        &v1::ACCOUNTING_CHARGE,
        &v1::SWAPCACHE,
    ],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(Tasks {
        cgroup: i.cgroup("cgroup")?,
        needs_moving: i.needs_moving()?,
    }))
}

impl CheckSpec for Tasks {
    fn name(&self) -> String {
        format!("tasks({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: vec![ANON.into()],
            tasks: Some(self.cgroup.clone()),
            ..Needs::default()
        }
    }
    /// A gap is confirmed by the samples up to it (see `Gap`).
    fn online(&self) -> bool {
        true
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        if let Some(r) = crate::check::without_moving(&self.name(), rec, self.needs_moving) {
            return r;
        }
        tasks(self.name(), rec, &self.cgroup)
    }
}

/// Samples off by more than the tolerance this many times in a row fail: one may be a fault or
/// an unmap the statistics did not show yet.
const RUN: usize = 2;

/// Step kinds during which the group's anon and its tasks' own count part by design.
const NOT_JUDGED: [StepKind; 2] = [StepKind::Move, StepKind::Release];

/// How far the two counts may differ: the memcg statistics' unflushed bound plus the mm
/// counter's own (since 6.2 a percpu_counter with batch max(32, 2 x CPUs) on each CPU; before,
/// up to 64 events cached per thread, a few threads per task).
fn tolerance(m: &Machine) -> (i64, String) {
    let mm_pages = (32.max(2 * m.cpus) * m.cpus).max(4 * 64);
    let t = m.stat_batch_bytes() + mm_pages * m.page_size;
    (
        t as i64,
        format!(
            "{} = {} + {mm_pages} pages (the mm counter's per-CPU batch: max(32, 2 x CPUs) x CPUs since 6.2; 64 per thread before)",
            human_bytes(t as i64),
            m.stat_batch_explained()
        ),
    )
}

/// The failure at row `r`: the group's `v` outside [floor, ceil] (the tasks' count over the
/// last `lag` seconds) by more than `tol`.
fn broke(
    name: String,
    rec: &Record,
    r: usize,
    col: &Column,
    v: i64,
    (floor, ceil, tol, lag): (i64, i64, i64, f64),
    tol_text: String,
) -> CheckResult {
    let s = &rec.series;
    let t = s.t[r];
    let (what, by) = if v < floor {
        ("short of", floor - v)
    } else {
        ("above", v - ceil)
    };
    let mut res = CheckResult::new(
        name,
        Outcome::Fail,
        format!("{col} {}", human_bytes(v)),
        format!(
            "its tasks' anon {}..{} +- {}",
            human_bytes(floor),
            human_bytes(ceil),
            human_bytes(tol)
        ),
        format!(
            "at t={t:.3}s (phase {}) {col} was {} {what} what its tasks counted of their own anonymous memory (RssAnon in /proc/PID/status) at any time in the {:.0} ms before, for {RUN} samples in a row: {}",
            rec.phase_at(t),
            human_bytes(by),
            lag * 1000.0,
            s.describe_row(r)
        ),
    );
    res.at = Some(t);
    res.columns = vec![col.clone()];
    res.tolerance = Some(tol_text);
    res
}

pub fn tasks(name: String, rec: &Record, cgroup: &str) -> CheckResult {
    let (col, g) = match columns(rec, cgroup, &[ANON.into()]) {
        Ok(c) => c[0].clone(),
        Err(e) => return missing(name, e),
    };
    let s = &rec.series;
    let truth = |pre| s.col(&Column::tasks(cgroup, ANON, pre));
    let (Some(pre), Some(post)) = (truth(true), truth(false)) else {
        return missing(name, format!("the tasks of {cgroup} were not sampled"));
    };
    let (tol, tol_text) = tolerance(&rec.machine);
    // A parent's statistics may lag its children's up to the periodic flush (see hierarchy).
    let lag = stale_lag(rec, cgroup);
    let skipped = |t: f64| {
        rec.steps
            .iter()
            .chain(&rec.stopped)
            .any(|st| NOT_JUDGED.contains(&st.kind) && st.start <= t && t <= st.end + lag)
    };
    let rows: Vec<usize> = (0..s.len()).filter(|&r| !skipped(s.t[r])).collect();
    let threads = thread_slack(rec, cgroup);
    let mut gap = crate::check::Gap::new(rec, cgroup);
    let (mut most, mut worst) = (0, 0);
    for &r in &rows {
        let (floor, ceil) = tasks_window(s, (pre, post), r, lag);
        let v = s.get(r, g);
        let off = (floor - v).max(v - ceil);
        most = most.max(s.get(r, pre).max(s.get(r, post)));
        worst = worst.max(off);
        if gap.confirmed(s.t[r], off > tol + threads(r), RUN) {
            let window = (floor, ceil, tol, lag);
            return broke(name, rec, r, &col, v, window, tol_text);
        }
    }
    let swapped = match swap(&name, rec, cgroup, &rows, (tol, &tol_text, lag)) {
        Ok(s) => s,
        Err(f) => return *f,
    };
    let tables = match pagetables(&name, rec, cgroup, &rows, lag) {
        Ok(t) => t,
        Err(f) => return *f,
    };
    if most <= 2 * tol && swapped.is_none() && tables.is_none() {
        return missing(
            name,
            format!(
                "{cgroup}'s tasks held at most {} of anon, within twice the tolerance, and swapped out no more: the check could not fail",
                human_bytes(most)
            ),
        );
    }
    let also = also_held(swapped, tables);
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!(
            "largest gap {} over {} samples",
            human_bytes(worst.max(0)),
            rows.len()
        ),
        format!("{col} = its tasks' RssAnon; swap >= their VmSwap"),
        format!(
            "{col} equalled what its tasks counted of their own anonymous memory (up to {}) at every sample{also}",
            human_bytes(most)
        ),
    );
    let not_judged = s.len() - rows.len();
    res.tolerance = Some(format!(
        "{tol_text}, for {RUN} samples in a row; a count the tasks had within the last {:.0} ms is stale, not wrong{}{}",
        lag * 1000.0,
        gap.text(),
        if not_judged > 0 {
            format!(
                "; {not_judged} samples during moves and exits not judged (the charge follows the task; an exiting task's mm is detached before its pages are freed)"
            )
        } else {
            String::new()
        }
    ));
    res
}

/// The pass line's words on the swap and page tables judged (the most the tasks had of each).
fn also_held(swapped: Option<i64>, tables: Option<i64>) -> String {
    let swap = swapped.map(|most| {
        format!(
            "; its swap held what its tasks had swapped out (up to {})",
            human_bytes(most)
        )
    });
    let tables = tables.map(|most| {
        format!(
            "; its pagetables equalled its tasks' VmPTE (up to {})",
            human_bytes(most)
        )
    });
    swap.unwrap_or_default() + &tables.unwrap_or_default()
}

/// What the tasks counted (columns `pre` and `post`, read just before and after the group's
/// files) over the `lag` seconds up to row `r`: the least and the most. The count at the group
/// read lies between the reads around it, and a group count the tasks had at any moment of the
/// window is stale, not wrong.
fn tasks_window(
    s: &crate::model::Series,
    (pre, post): (usize, usize),
    r: usize,
    lag: f64,
) -> (i64, i64) {
    (0..=r).rev().take_while(|&q| s.t[r] - s.t[q] <= lag).fold(
        (i64::MAX, i64::MIN),
        |(lo, hi), q| {
            let (a, b) = (s.get(q, pre), s.get(q, post));
            (lo.min(a.min(b)), hi.max(a.max(b)))
        },
    )
}

/// What the tasks' threads may hold back of their mm's counters at row r: before 6.2 each thread
/// beyond the first caches up to 64 events (SPLIT_RSS_COUNTING), and a sleeping one never passes
/// them on (768 threads of a task that made kernel stacks: RssAnon 2.2 MiB below the group's anon
/// on Debian's 6.1). 0 where the threads were not sampled.
fn thread_slack(rec: &Record, cgroup: &str) -> impl Fn(usize) -> i64 {
    let s = &rec.series;
    let cols: Vec<usize> = [true, false]
        .iter()
        .filter_map(|&pre| s.col(&Column::tasks(cgroup, EXTRA_THREADS, pre)))
        .collect();
    let page = rec.machine.page_size as i64;
    move |r| cols.iter().map(|&c| s.get(r, c)).max().unwrap_or(0) * 64 * page
}

/// The group's swap holds what its tasks swapped out: every swap entry in their page tables
/// (VmSwap) was charged to the group when the page was added to the swap cache (v2
/// memory.swap.current) and stays charged until the slot is freed, after the entry left the page
/// table. v1 counts swap (total_swap) only once the page left the swap cache, so there the swap
/// cache is added (total_swapcached). A lower bound only: swapped-in pages keep their slots. Ok:
/// None when the tasks never swapped out more than twice the tolerance, else the most they had.
fn swap(
    name: &str,
    rec: &Record,
    cgroup: &str,
    rows: &[usize],
    (tol, tol_text, lag): (i64, &str, f64),
) -> Result<Option<i64>, Box<CheckResult>> {
    let s = &rec.series;
    let (Some(pre), Some(post)) = (
        s.col(&Column::tasks(cgroup, SWAP, true)),
        s.col(&Column::tasks(cgroup, SWAP, false)),
    ) else {
        return Ok(None);
    };
    // v1 is the version with memsw; its swap cache is where pages wait to be counted as swap.
    let v1 = s.col(&Column::group(cgroup, MEMSW)).is_some();
    let parts: Vec<&str> = if v1 {
        vec![SWAP, "swapcached"]
    } else {
        vec![SWAP]
    };
    let cols: Option<Vec<usize>> = parts
        .iter()
        .map(|p| s.col(&Column::group(cgroup, p)))
        .collect();
    let Some(cols) = cols else {
        return Ok(None);
    };
    let held = |r: usize| cols.iter().map(|&c| s.get(r, c)).sum::<i64>();
    let threads = thread_slack(rec, cgroup);
    let (mut run, mut most) = (0, 0);
    for &r in rows {
        let floor = tasks_window(s, (pre, post), r, lag).0;
        most = most.max(s.get(r, pre).max(s.get(r, post)));
        let v = held(r);
        run = if floor - v > tol + threads(r) {
            run + 1
        } else {
            0
        };
        if run >= RUN {
            let t = s.t[r];
            let what = parts.join(" + ");
            let mut res = CheckResult::new(
                name.to_string(),
                Outcome::Fail,
                format!("{cgroup}.{what} {}", human_bytes(v)),
                format!(
                    ">= its tasks' VmSwap {} - {}",
                    human_bytes(floor),
                    human_bytes(tol)
                ),
                format!(
                    "at t={t:.3}s (phase {}) {cgroup}'s {what} was {} short of what its tasks had swapped out (VmSwap in /proc/PID/status: swap entries in their page tables) at every moment of the {:.0} ms before, for {RUN} samples in a row: swap charges were lost: {}",
                    rec.phase_at(t),
                    human_bytes(floor - v),
                    lag * 1000.0,
                    s.describe_row(r)
                ),
            );
            res.at = Some(t);
            res.columns = parts.iter().map(|p| Column::group(cgroup, p)).collect();
            res.tolerance = Some(tol_text.to_string());
            return Err(Box::new(res));
        }
    }
    Ok((most > 2 * tol).then_some(most))
}

/// The group's page tables are its tasks' (v2 memory.stat pagetables against the sum of VmPTE):
/// a task's page table pages are allocated in its own context, so charged to its group, and
/// both counts rise and fall with them (the pgd is in neither). Tolerance: the unflushed-stats
/// bound + 16 pages. Ok: None when the group shows no pagetables or its tasks never held more
/// than twice the tolerance, else the most they held.
fn pagetables(
    name: &str,
    rec: &Record,
    cgroup: &str,
    rows: &[usize],
    lag: f64,
) -> Result<Option<i64>, Box<CheckResult>> {
    let s = &rec.series;
    let (Some(g), Some(pre), Some(post)) = (
        s.col(&Column::group(cgroup, TABLES)),
        s.col(&Column::tasks(cgroup, TABLES, true)),
        s.col(&Column::tasks(cgroup, TABLES, false)),
    ) else {
        return Ok(None);
    };
    let tol = (rec.machine.stat_batch_bytes() + 16 * rec.machine.page_size) as i64;
    let (mut run, mut most) = (0, 0);
    for &r in rows {
        let (floor, ceil) = tasks_window(s, (pre, post), r, lag);
        most = most.max(s.get(r, pre).max(s.get(r, post)));
        let v = s.get(r, g);
        run = if v < floor - tol || v > ceil + tol {
            run + 1
        } else {
            0
        };
        if run >= RUN {
            let t = s.t[r];
            let mut res = CheckResult::new(
                name.to_string(),
                Outcome::Fail,
                format!("{cgroup}.{TABLES} {}", human_bytes(v)),
                format!(
                    "its tasks' VmPTE {}..{} +- {}",
                    human_bytes(floor),
                    human_bytes(ceil),
                    human_bytes(tol)
                ),
                format!(
                    "at t={t:.3}s (phase {}) {cgroup}'s pagetables were {} what its tasks counted of their page tables (VmPTE in /proc/PID/status) at any time in the {:.0} ms before, for {RUN} samples in a row: {}",
                    rec.phase_at(t),
                    if v < floor {
                        format!("{} short of", human_bytes(floor - v))
                    } else {
                        format!("{} above", human_bytes(v - ceil))
                    },
                    lag * 1000.0,
                    s.describe_row(r)
                ),
            );
            res.at = Some(t);
            res.columns = vec![Column::group(cgroup, TABLES)];
            res.tolerance = Some(format!(
                "{} = the unflushed-stats bound + 16 pages",
                human_bytes(tol)
            ));
            return Err(Box::new(res));
        }
    }
    Ok((most > 2 * tol).then_some(most))
}

/// The group counter and task column of page tables.
const TABLES: &str = "pagetables";
