//! holds-files: a group's `file` counter holds the page cache of the files its tasks wrote.
//! cachestat(2) counts each file's cached pages in the page cache itself (see
//! `exec::sample::pagecache`); every page a task of the group added to the cache was charged to
//! the group, so its hierarchical `file` (v1 total_cache, v2 file) is at least their sum. It may
//! hold more (files it only read, filesystem metadata), so the check is one-sided. A move takes
//! mapped pages away: scenarios that move judge it before the move only (`phase`).

use crate::check::args::CheckArgs;
use crate::check::{
    Check, CheckResult, CheckSpec, Kind, Needs, Outcome, columns, missing, opt, stale_lag,
};
use crate::model::contract::{v1, v2};
use crate::model::counter::{FILE, HELD};
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;
use crate::model::{Column, Record};

/// `holds-files`: `cgroup`'s file counter is at least the cached pages of its files, at every
/// sample (of `phase`, when given).
#[derive(Debug, Clone, PartialEq)]
pub struct HoldsFiles {
    pub cgroup: String,
    pub phase: Option<String>,
}

/// `holds-files` in the check table.
pub const KIND: Kind = Kind {
    kind: "holds-files",
    doc: "The group's `file` counter (v1 total_cache, v2 file; hierarchical) is at least the \
page cache its own files hold, at every sample (of `phase`, when given). cachestat(2) \
counts each file's cached pages in the page cache itself; every page a task of the \
group (or of a group below it) added to the cache was charged to the group, so its \
`file` holds at least their sum. It may hold more (files it only read, filesystem \
metadata), so the check is one-sided. The truth is read before and after the group's \
files, and per file the smaller of the two is used (a file growing while another shrinks, \
as a writer at its group's limit evicts an older file, would make the smaller of the two \
sums no bound: stock 6.12 v1, dirty-migration's probe, 1.4 MiB); the read after walks \
each file from its end (one walk from the start counts a file appended at its end while \
its start is evicted twice over: 2 MiB on 6.12). A shortfall is measured from the least \
the files held within the group's stale window (0.1 s for a leaf; 3 s for a group with \
sampled children, whose statistics may lag by up to the periodic flush) or at the sample \
before (a read that finds another stats flush under way skips its own and shows an earlier \
flush: 4.6 MiB for 3 samples 400 ms apart on 6.12 under TCG) and must last 2 samples in a row. A move takes mapped pages away, so scenarios that move judge it \
before the move only (`phase`). Tolerance: the unflushed-stats bound. Not run on a \
kernel without cachestat (a note says so) or when a group outside the subtree writes \
the group's files; not exercised when the files never held more than the tolerance. \
Result name: `holds-files(<cgroup>)`.",
    keys: &[
        opt("cgroup", "the group (default: the only declared group)"),
        opt("phase", "only samples of this declared phase"),
    ],
    parse,
    promises: &[
        &v2::TRACK_USER,
        &v2::STAT_FILE,
        &v1::STAT_LOCAL,
        &v1::ACCOUNTING_CHARGE,
    ],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(HoldsFiles {
        cgroup: i.cgroup("cgroup")?,
        phase: i.phase()?,
    }))
}

impl CheckSpec for HoldsFiles {
    fn name(&self) -> String {
        format!("holds-files({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: vec![FILE.into()],
            reference: Some(self.cgroup.clone()),
            per_file: true,
            ..Needs::default()
        }
    }
    /// A shortfall is confirmed by the samples up to it.
    fn online(&self) -> bool {
        true
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        holds_files(self.name(), rec, &self.cgroup, self.phase.as_deref())
    }
}

/// Samples below the truth by more than the tolerance this many times in a row fail: one may be
/// a charge whose statistics the read did not see yet.
const RUN: usize = 2;

pub fn holds_files(name: String, rec: &Record, cgroup: &str, phase: Option<&str>) -> CheckResult {
    let file = match columns(rec, cgroup, &[FILE.into()]) {
        Ok(c) => c[0].1,
        Err(e) => return missing(name, e),
    };
    let s = &rec.series;
    let truth = |pre| s.col(&Column::files(cgroup, FILE, pre));
    let (Some(pre), Some(post)) = (truth(true), truth(false)) else {
        return missing(
            name,
            format!(
                "no per-file truth for {cgroup} (no step in its subtree writes a file, or a group outside it writes one too; see the notes)"
            ),
        );
    };
    let rows = rows_in(rec, phase);
    let tol = rec.machine.stat_batch_bytes() as i64;
    let f = Files {
        rec,
        cgroup,
        file,
        pre,
        post,
        held: s.col(&Column::files(cgroup, HELD, false)),
        lag: stale_lag(rec, cgroup),
    };
    let (mut run, mut worst, mut most) = (0, (0, i64::MIN), 0);
    for &r in &rows {
        let gap = f.short(r);
        most = most.max(f.lo(r));
        run = if gap > tol { run + 1 } else { 0 };
        if gap > worst.1 {
            worst = (r, gap);
        }
        if run >= RUN {
            return f.missed(name, r, gap, tol);
        }
    }
    if most <= tol {
        return missing(
            name,
            format!(
                "{cgroup}'s files held at most {} of page cache{}, within the tolerance: the check could not fail",
                human_bytes(most),
                phase.map_or(String::new(), |p| format!(" in phase {p}"))
            ),
        );
    }
    passed(
        name,
        cgroup,
        worst.1,
        rows.len(),
        most,
        tolerance_text(rec, f.lag),
    )
}

/// The rows judged: those of `phase`, or every row.
fn rows_in(rec: &Record, phase: Option<&str>) -> Vec<usize> {
    let s = &rec.series;
    let in_phase = |t: f64| {
        phase.is_none_or(|p| {
            rec.phases
                .iter()
                .any(|x| x.name == p && x.start <= t && t <= x.end)
        })
    };
    (0..s.len()).filter(|&r| in_phase(s.t[r])).collect()
}

/// The group's file counter and the truth of its files: their sums read before and after the
/// group's files (`pre`, `post`) and, in newer records, the least each file held (`held`).
struct Files<'a> {
    rec: &'a Record,
    cgroup: &'a str,
    file: usize,
    pre: usize,
    post: usize,
    held: Option<usize>,
    /// A group's statistics can be stale for a moment (a concurrent flush), a parent's for up to
    /// the periodic flush: a count at least what the files held some time in that window is
    /// stale, not short.
    lag: f64,
}

impl Files<'_> {
    /// The truth at the moment of the cgroup read at row `r`: per file at least the smaller of
    /// its reads before and after (`held`, see `pagecache::HELD`); records without it take the
    /// smaller of the two sums, which is no bound when one file grows while another shrinks.
    fn lo(&self, r: usize) -> i64 {
        let s = &self.rec.series;
        match self.held {
            Some(h) => s.get(r, h),
            None => s.get(r, self.pre).min(s.get(r, self.post)),
        }
    }

    /// How far the file counter at row `r` is short of the least the files held in the `lag`
    /// before it, or at the sample before it. A read that finds another stats flush under way
    /// skips its own (the flusher zeroed the group's pending-update count at its first CPU) and
    /// shows the other CPUs as of their last flush: with the sampler slowed to a pass per 400 ms
    /// by a 70 MB/s writer under TCG, 4.6 MiB below the files for 3 samples, never below what
    /// they held at the sample before (6.12, full dirty-migration).
    fn short(&self, r: usize) -> i64 {
        let s = &self.rec.series;
        let t = s.t[r];
        let floor = (0..=r)
            .rev()
            .take_while(|&q| q + 1 >= r || t - s.t[q] <= self.lag)
            .map(|q| self.lo(q))
            .min()
            .unwrap_or(0);
        floor - s.get(r, self.file)
    }

    /// The failure for a file counter short of its files' page cache (by `gap` at row `r`).
    fn missed(&self, name: String, r: usize, gap: i64, tol: i64) -> CheckResult {
        let (s, cgroup) = (&self.rec.series, self.cgroup);
        let t = s.t[r];
        let mut res = CheckResult::new(
            name,
            Outcome::Fail,
            format!("{cgroup}.file {}", human_bytes(s.get(r, self.file))),
            format!(
                ">= its files' page cache {} - {}",
                human_bytes(self.lo(r)),
                human_bytes(tol)
            ),
            format!(
                "at t={t:.3}s (phase {}) {cgroup}'s file counter was {} short of the page cache its own files held (cachestat) at any time in the {:.0} ms before or at the sample before, for {RUN} samples in a row: pages its tasks added to the cache are not counted in it: {}",
                self.rec.phase_at(t),
                human_bytes(gap),
                self.lag * 1000.0,
                s.describe_row(r)
            ),
        );
        res.at = Some(t);
        res.columns = vec![s.columns()[self.file].clone()];
        res
    }
}

/// The tolerance text: the unflushed-stats bound, and how stale the group's count may be.
fn tolerance_text(rec: &Record, lag: f64) -> String {
    format!(
        "{}, for {RUN} samples in a row; a count the files reached within the last {:.0} ms or at the sample before is stale, not short (a read during another stats flush skips its own)",
        rec.machine.stat_batch_explained(),
        lag * 1000.0,
    )
}

fn passed(
    name: String,
    cgroup: &str,
    worst: i64,
    samples: usize,
    most: i64,
    tol_text: String,
) -> CheckResult {
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!(
            "largest shortfall {} over {samples} samples",
            human_bytes(worst.max(0)),
        ),
        format!("{cgroup}.file >= its files' page cache"),
        format!(
            "{cgroup}'s file counter held the page cache of its files (up to {}) at every sample",
            human_bytes(most)
        ),
    );
    res.tolerance = Some(tol_text);
    res
}
