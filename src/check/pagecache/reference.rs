//! The reference the accounting checks (`tracks-global`, `dirty-probe`, `observed`) compare a
//! group's dirty/writeback counters with (see `crate::oracle`).
//!
//! The reference is the page cache's own count of the files the group wrote (cachestat, sampled
//! as `oracle.files.*`) when the record has it, else machine-wide /proc/vmstat. With /proc/vmstat
//! every other writer on the machine moves the reference too, so a window in which the rest of the
//! machine (`oracle.root` or /proc/vmstat, minus the run's own groups `oracle.run`) moved by more
//! than the tolerance is inconclusive: reported with the amount, and never a failure.

use crate::model::counter::DIRTY_WRITEBACK;
use crate::model::units::human_bytes;
use crate::model::{Column, is_below};
use crate::model::{Record, StepKind, StepRecord};

/// How long a disagreement between a group's memory.stat and its reference must last to count,
/// from its first sample. The memcg flush resets a group's pending-update count when the first CPU
/// of a flush is done, and a flusher drops its lock between CPUs; a reader in that gap skips its
/// own flush and sees stats stale beyond the batching bound until the other flusher finishes
/// (6.12 under TCG: 8 MiB of writeback for 65 ms during the periodic flush). Real accounting
/// errors last.
pub const STALE_WINDOW: f64 = 0.1;

/// What the rest of the machine holds dirty or under writeback, sample by sample: a machine-wide
/// total (the memcg root's, or /proc/vmstat's) minus the run's own top group, plus the run's
/// groups outside the judged group's line (neither its ancestors nor below it): a sibling
/// writing beside the judged group moves the machine-wide counters as much as a stranger does.
#[derive(Clone)]
pub(super) struct Foreign {
    pub(super) total: Vec<usize>,
    /// Bytes per unit of `total` (page size for /proc/vmstat, 1 for the memcg root).
    pub(super) unit: i64,
    pub(super) run: Vec<usize>,
    /// dirty and writeback of the run's other groups (the topmost of each other line).
    pub(super) others: Vec<usize>,
    pub(super) label: String,
}

impl Foreign {
    pub(super) fn at(&self, rec: &Record, r: usize) -> i64 {
        let sum = |cols: &[usize]| -> i64 { cols.iter().map(|&c| rec.series.get(r, c)).sum() };
        sum(&self.total) * self.unit - sum(&self.run) + sum(&self.others)
    }
    /// The largest change over `rows` from row `r0`.
    pub(super) fn moved(&self, rec: &Record, r0: usize, rows: &[usize]) -> i64 {
        let f0 = self.at(rec, r0);
        rows.iter()
            .map(|&r| (self.at(rec, r) - f0).abs())
            .max()
            .unwrap_or(0)
    }
}

/// The reference a group's counters are compared with, read before (`pre`) and after (`post`)
/// the cgroup files of each sampler pass.
pub(super) struct Reference {
    /// For messages, e.g. "global nr_dirty+nr_writeback x 4096 B".
    pub(super) label: String,
    pub(super) pre: Vec<usize>,
    pub(super) post: Vec<usize>,
    /// Bytes per unit (page size for /proc/vmstat, 1 for the per-file truth).
    pub(super) unit: i64,
    /// How far the reference itself may lag: the node counters' per-CPU drift; 0 for the page
    /// cache's tags.
    pub(super) drift: i64,
    pub(super) per_file: bool,
    /// Only for the global reference, when the run's top group was sampled.
    pub(super) foreign: Option<Foreign>,
    /// Every counter of the check (pre, post), of which `pre`/`post` are the ones judged: the
    /// others moving during a pass are pages that may have been read on either side.
    pub(super) all: Vec<(usize, usize)>,
    /// What each of `all` is: the group's counter (per file) or the /proc/vmstat key.
    pub(super) names: Vec<String>,
}

impl Reference {
    fn at(&self, rec: &Record, r: usize, cols: &[usize]) -> i64 {
        cols.iter().map(|&c| rec.series.get(r, c)).sum::<i64>() * self.unit
    }
    pub(super) fn lo(&self, rec: &Record, r: usize) -> i64 {
        self.at(rec, r, &self.pre).min(self.at(rec, r, &self.post))
    }
    pub(super) fn hi(&self, rec: &Record, r: usize) -> i64 {
        self.at(rec, r, &self.pre).max(self.at(rec, r, &self.post))
    }
    /// memory.stat is not one snapshot: its lines are read one after another, so pages that move
    /// from dirty to writeback during a slow pass can be seen in both (or neither), and a page
    /// that moves out of a counter and back within one pass is in neither bracket end. How far
    /// the reference's counters moved during the pass, beyond the net change of the judged ones,
    /// bounds that: for the sum, their moving against each other; for one counter, the others'
    /// movement.
    pub(super) fn skew(&self, rec: &Record, r: usize) -> i64 {
        let each: i64 = self
            .all
            .iter()
            .map(|&(a, b)| (rec.series.get(r, b) - rec.series.get(r, a)).abs())
            .sum();
        (each * self.unit) - (self.at(rec, r, &self.post) - self.at(rec, r, &self.pre)).abs()
    }

    /// The same reference for counter `i` alone.
    pub(super) fn only(&self, i: usize) -> Reference {
        Reference {
            label: self.label_for(&self.names[i]),
            pre: vec![self.pre[i]],
            post: vec![self.post[i]],
            unit: self.unit,
            drift: self.drift,
            per_file: self.per_file,
            foreign: self.foreign.clone(),
            all: self.all.clone(),
            names: self.names.clone(),
        }
    }

    fn label_for(&self, name: &str) -> String {
        match self.label.split_once(" (") {
            Some((head, _)) if self.per_file => format!("{head} ({name}, cachestat)"),
            _ => format!("{name} x {} B", self.unit),
        }
    }
}

/// The per-file truth of `cgroup` when it was sampled for every counter, else the global
/// /proc/vmstat keys (with the machine view for inconclusive windows, when sampled).
/// The group's columns and their reference, or the not-exercised result saying which is missing:
/// the common start of every accounting check.
pub(super) fn group_and_reference(
    name: &str,
    rec: &Record,
    cgroup: &str,
    counters: &[String],
    global: &[String],
) -> Result<(crate::check::Columns, Reference), Box<crate::check::CheckResult>> {
    let cols = crate::check::columns(rec, cgroup, counters)
        .map_err(|e| Box::new(crate::check::missing(name.into(), e)))?;
    let reference = reference(rec, cgroup, counters, global).map_err(|e| {
        Box::new(crate::check::missing(
            name.into(),
            format!("cannot verify: {e}"),
        ))
    })?;
    Ok((cols, reference))
}

pub(super) fn reference(
    rec: &Record,
    cgroup: &str,
    counters: &[String],
    global: &[String],
) -> Result<Reference, String> {
    let col = |c: &Column| rec.series.col(c);
    let files: Option<(Vec<usize>, Vec<usize>)> = counters
        .iter()
        .map(|c| {
            Some((
                col(&Column::files(cgroup, c, true))?,
                col(&Column::files(cgroup, c, false))?,
            ))
        })
        .collect::<Option<Vec<_>>>()
        .map(|v| v.into_iter().unzip());
    if let Some((pre, post)) = files {
        let all = pre.iter().copied().zip(post.iter().copied()).collect();
        return Ok(Reference {
            all,
            names: counters.to_vec(),
            label: format!(
                "the page cache of the files {cgroup} wrote ({}, cachestat)",
                counters.join("+")
            ),
            pre,
            post,
            unit: 1,
            drift: 0,
            per_file: true,
            foreign: None,
        });
    }
    let page = rec.machine.page_size as i64;
    let mut pre = Vec::new();
    let mut post = Vec::new();
    for k in global {
        let i = col(&Column::vmstat(k))
            .ok_or_else(|| format!("/proc/vmstat {k} was not sampled (missing on this kernel?)"))?;
        post.push(i);
        pre.push(col(&Column::vmstat_pre(k)).unwrap_or(i));
    }
    let dw = DIRTY_WRITEBACK;
    let machine = |which: &str| -> Option<Vec<usize>> {
        dw.iter().map(|c| col(&Column::machine(which, c))).collect()
    };
    let (others, names) = other_lines(rec, cgroup);
    let plus = if names.is_empty() {
        String::new()
    } else {
        format!(", plus {}'s", names.join(", "))
    };
    let foreign = machine("run").map(|run| match machine("root") {
        Some(total) => Foreign {
            total,
            unit: 1,
            run,
            others,
            label: format!("the memcg root's dirty+writeback minus this run's groups'{plus}"),
        },
        None => Foreign {
            total: ["nr_dirty", "nr_writeback"]
                .iter()
                .filter_map(|k| col(&Column::vmstat(k)))
                .collect(),
            unit: page,
            run,
            others,
            label: format!(
                "global nr_dirty+nr_writeback minus this run's groups' dirty+writeback{plus}"
            ),
        },
    });
    Ok(Reference {
        names: global.to_vec(),
        all: pre.iter().copied().zip(post.iter().copied()).collect(),
        label: format!("{} x {page} B", global.join("+")),
        pre,
        post,
        unit: page,
        drift: rec.machine.node_drift_bytes() as i64,
        per_file: false,
        foreign,
    })
}

/// The dirty and writeback columns of the run's groups outside `cgroup`'s line (not its
/// ancestors, not below it), the topmost of each other line only (a group's values hold its
/// children's), and their names.
fn other_lines(rec: &Record, cgroup: &str) -> (Vec<usize>, Vec<String>) {
    let groups = rec.series.groups();
    let outside = |g: &str| g != cgroup && !is_below(g, cgroup) && !is_below(cgroup, g);
    let (mut cols, mut names) = (Vec::new(), Vec::new());
    for g in groups.iter().copied().filter(|g| outside(g)) {
        if groups.iter().any(|a| outside(a) && is_below(g, a)) {
            continue;
        }
        let pair: Option<Vec<usize>> = DIRTY_WRITEBACK
            .iter()
            .map(|c| rec.series.col(&Column::group(g, c)))
            .collect();
        if let Some(pair) = pair {
            cols.extend(pair);
            names.push(g.to_string());
        }
    }
    (cols, names)
}

/// A stretch of a run over which tracks-global follows a group's counters.
pub(super) struct Window {
    pub(super) start: f64,
    pub(super) end: f64,
    pub(super) what: String,
    /// (start, end) of the unlink steps in the window. unlink(2) removes the name first and the
    /// file's pages only after (do_unlinkat: the final iput truncates the inode), so while it
    /// runs the per-file reference, read by path, already shows nothing and the group's count
    /// falls as the kernel removes them (6.12 under TCG: 120 MiB of dirty pages in 140 ms).
    pub(super) unlinks: Vec<(f64, f64)>,
}

/// The windows tracks-global looks at: each matching step of the group (or its descendants) and
/// helpers such as sync that follow one of them; with `phase`, one window from the first matching
/// step's start to the last one's end in that phase (a workload that keeps running across steps).
/// Another group's writes, and the sync after them, are not this group's to follow.
pub(super) fn windows(
    rec: &Record,
    cgroup: &str,
    during: &[StepKind],
    phase: Option<&str>,
) -> Vec<Window> {
    let mine = |g: &str| g == cgroup || g.starts_with(&format!("{cgroup}/"));
    let mut last_owner_mine = true;
    let mut matching: Vec<&StepRecord> = Vec::new();
    for s in rec.steps.iter().chain(&rec.stopped) {
        let include = if s.cgroup.is_empty() {
            last_owner_mine
        } else {
            last_owner_mine = mine(&s.cgroup);
            last_owner_mine
        };
        if include
            && during.contains(&s.kind)
            && phase.is_none_or(|p| rec.phases.get(s.phase).is_some_and(|x| x.name == p))
        {
            matching.push(s);
        }
    }
    let unlinks = |steps: &[&StepRecord]| {
        (steps.iter())
            .filter(|s| s.kind == StepKind::Unlink)
            .map(|s| (s.start, s.end))
            .collect()
    };
    match (phase, matching.first(), matching.last()) {
        (Some(p), Some(first), Some(last)) => vec![Window {
            start: first.start,
            end: last.end,
            what: format!("phase {p}"),
            unlinks: unlinks(&matching),
        }],
        _ => (matching.iter())
            .map(|s| Window {
                start: s.start,
                end: s.end,
                what: s.describe.clone(),
                unlinks: unlinks(std::slice::from_ref(s)),
            })
            .collect(),
    }
}

/// Windows that could not be judged: what, and how far the rest of the machine moved.
pub(super) fn inconclusive_text(skipped: &[(String, i64)], foreign: Option<&Foreign>) -> String {
    let most = skipped.iter().map(|(_, m)| *m).max().unwrap_or(0);
    format!(
        "{} window(s) inconclusive: other writers on the machine moved {} by up to {} (first: '{}')",
        skipped.len(),
        foreign.map_or("the machine's counters", |f| f.label.as_str()),
        human_bytes(most),
        skipped.first().map_or("", |(w, _)| w.as_str())
    )
}

/// How the tolerance was made up; `room`: the start-of-window term of the failing sample.
pub(super) fn tol_text(rec: &Record, reference: &Reference, room: Option<i64>) -> String {
    let room = room.map_or("at each window start".to_string(), |b| {
        format!("at the window start: {}", human_bytes(b))
    });
    if reference.per_file {
        return format!(
            "{} + pages one side held and the other did not {room} + read skew (how far the files' dirty and writeback moved apart during the sample's pass); a gap counts when it lasts 100 ms from its first sample (a concurrent flush can leave a group stale that long)",
            rec.machine.stat_batch_explained(),
        );
    }
    format!(
        "{} + node counter drift {} pages ({} = vm stats threshold x {} CPUs) + other groups' dirty pages {room} + read skew (how far the global counters moved apart during the sample's pass); a gap counts when it lasts 100 ms from its first sample (a concurrent flush can leave a group stale that long)",
        rec.machine.stat_batch_explained(),
        rec.machine.node_drift_pages,
        human_bytes(rec.machine.node_drift_bytes() as i64),
        rec.machine.cpus
    )
}
