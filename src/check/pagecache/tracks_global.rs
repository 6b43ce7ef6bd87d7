//! tracks-global: a group's counters rise with their reference during its write steps.

use crate::check::args::CheckArgs;
use crate::check::pagecache::reference::{
    Reference, STALE_WINDOW, Window, group_and_reference, inconclusive_text, tol_text, windows,
};
use crate::check::{
    Check, CheckResult, CheckSpec, Kind, Needs, Outcome, missing, opt, req, row_at_or_after,
    row_at_or_before, sum,
};
use crate::model::StepKind;
use crate::model::contract::{v1, v2};
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;
use crate::model::{Column, Record, join_names};

/// tracks-global: during each of the group's write steps, the rise of its counters follows the
/// rise of the reference, sample by sample. Each sample reads the reference before and after the
/// cgroup files, so its value at the moment of the cgroup read lies in that bracket.
/// Tolerance: the memcg per-CPU stat batch, the reference's own drift (node counters), pages that
/// one side held at the window's start and the other did not (they may be written back during the
/// window), and the read skew of one pass. A clamped underflow (the memcg counter pinned at 0
/// while the files' dirty pages rise) fails here.
pub fn tracks_global(
    name: String,
    rec: &Record,
    cgroup: &str,
    counters: &[String],
    global: &[String],
    during: &[StepKind],
    phase: Option<&str>,
) -> CheckResult {
    let (cols, reference) = match group_and_reference(&name, rec, cgroup, counters, global) {
        Ok(x) => x,
        Err(missing) => return *missing,
    };
    let spans = windows(rec, cgroup, during, phase);
    let whole = match judge(&name, rec, &cols, &reference, &spans) {
        Ok(t) => t,
        Err(fail) => return *fail,
    };
    // Then every counter on its own against its own truth: a kernel that counts right but shows
    // dirty pages as writeback (or the reverse) keeps the sum right.
    // Each counter pairs with its own truth: per file by name; globally only where the vmstat
    // keys are the counters' own (`global` is a list a scenario may order differently).
    let paired = reference.per_file
        || counters.iter().zip(global).all(|(c, g)| {
            crate::model::counter::counter(c).and_then(|k| k.vmstat) == Some(g.as_str())
        });
    if cols.len() > 1 && reference.pre.len() == cols.len() && paired {
        for (i, c) in cols.iter().enumerate() {
            let one = reference.only(i);
            if let Err(fail) = judge(&name, rec, std::slice::from_ref(c), &one, &spans) {
                return *fail;
            }
        }
    }
    let judged: Vec<Column> = cols.iter().map(|(c, _)| c.clone()).collect();
    verdict(name, rec, &reference, during, &judged, whole)
}

/// Follows `cols` against `reference` over the windows, sample by sample: the tally, or the
/// failure of the first gap that lasted.
fn judge(
    name: &str,
    rec: &Record,
    cols: &[(Column, usize)],
    reference: &Reference,
    spans: &[Window],
) -> Result<Tally, Box<CheckResult>> {
    let mut tally = Tally {
        judged: 0,
        samples: 0,
        worst: 0,
        max_rise: 0,
        skipped: Vec::new(),
    };
    for w in spans {
        let start = Start::new(rec, cols, reference, w);
        if let Some(f) = &reference.foreign {
            let moved = f.moved(rec, start.r0, &start.rows);
            if moved > start.base + start.room_excess {
                tally.skipped.push((w.what.clone(), moved));
                continue;
            }
        }
        tally.judged += 1;
        if let Some(gap) = follow(rec, cols, reference, &start, &mut tally) {
            return Err(Box::new(stale_gap(
                name.to_string(),
                rec,
                reference,
                &cols.iter().map(|(c, _)| c.clone()).collect::<Vec<_>>(),
                &w.what,
                gap,
            )));
        }
    }
    Ok(tally)
}

/// A window as judged: its first row and the rows up to its end, its unlinks, the group's and
/// the reference's values at its start, and the tolerance they allow.
struct Start {
    r0: usize,
    rows: Vec<usize>,
    /// (start, end, what the files held when it began) of each unlink in the window.
    unlinks: Vec<(f64, f64, i64)>,
    cg0: i64,
    ref0_lo: i64,
    ref0_hi: i64,
    room_excess: i64,
    room_deficit: i64,
    /// The stat batch, the reference's drift and its read skew at the start.
    base: i64,
}

impl Start {
    fn new(rec: &Record, cols: &[(Column, usize)], reference: &Reference, w: &Window) -> Start {
        let batch = rec.machine.stat_batch_bytes() as i64;
        let r0 = row_at_or_before(rec, w.start);
        // The window's unlinks, with what the files held when each began (see `Window::unlinks`;
        // only the per-file reference is read by name).
        let unlinks: Vec<(f64, f64, i64)> = (w.unlinks.iter())
            .filter(|_| reference.per_file)
            .map(|&(a, b)| (a, b, reference.hi(rec, row_at_or_before(rec, a))))
            .collect();
        // Up to the first sample after the step: the one that shows what it did (a short write
        // can fall between two samples; the runner samples after every step). After an unlink,
        // for twice STALE_WINDOW more: pages it left counted would be a leak.
        let end = (unlinks.iter())
            .map(|&(_, b, _)| b + 2.0 * STALE_WINDOW)
            .fold(w.end, f64::max);
        let w_end = row_at_or_after(rec, end).map_or(end, |r| rec.series.t[r]);
        let rows: Vec<usize> = rec.series.rows_between(w.start, w_end).collect();
        let cg0 = sum(rec, r0, cols);
        let (ref0_lo, ref0_hi) = (reference.lo(rec, r0), reference.hi(rec, r0));
        // Pages one side holds at the window's start and the other does not may be written back
        // during it. Globally that is every other group's dirty pages (either direction, as
        // before). Per file it is one-sided: pages only the truth has can make the group look
        // high, pages only the group has (metadata it dirtied) can make it look short.
        let (room_excess, room_deficit) = rooms(reference.per_file, cg0, ref0_lo, ref0_hi);
        Start {
            r0,
            rows,
            unlinks,
            cg0,
            ref0_lo,
            ref0_hi,
            room_excess,
            room_deficit,
            base: batch + reference.drift + reference.skew(rec, r0),
        }
    }
}

/// Follows the window's rows from its start: the first gap beyond tolerance that lasted
/// STALE_WINDOW, if one did. Counts the samples, the largest gap and the largest rise in `tally`.
fn follow(
    rec: &Record,
    cols: &[(Column, usize)],
    reference: &Reference,
    w: &Start,
    tally: &mut Tally,
) -> Option<Gap> {
    let mut bad_since: Option<f64> = None;
    for &r in &w.rows {
        tally.samples += 1;
        let t = rec.series.t[r];
        let slack = w.base + reference.skew(rec, r);
        let dcg = sum(rec, r, cols) - w.cg0;
        let (d_lo, d_hi) = (
            reference.lo(rec, r) - w.ref0_hi,
            reference.hi(rec, r) - w.ref0_lo,
        );
        tally.max_rise = tally.max_rise.max(d_lo);
        let (gap, tol) = if dcg < d_lo {
            (d_lo - dcg, slack + w.room_deficit)
        } else if dcg > d_hi {
            (
                dcg - d_hi,
                slack + w.room_excess + unlinking(&w.unlinks, t, reference.lo(rec, r)),
            )
        } else {
            (0, slack)
        };
        if gap <= tol {
            bad_since = None;
            tally.worst = tally.worst.max(gap);
            continue;
        }
        // A gap must last STALE_WINDOW from its first sample (see STALE_WINDOW).
        let since = *bad_since.get_or_insert(t);
        if t - since < STALE_WINDOW {
            continue;
        }
        return Some(Gap {
            t,
            r,
            r0: w.r0,
            since,
            dcg,
            d_lo,
            d_hi,
            gap,
            tol,
            slack,
        });
    }
    None
}

/// What the per-file reference lost since the start of an unlink (start, end, the files' pages
/// then) running at `t`, where it now shows `now`: pages the kernel may still be removing. Once
/// the step has returned, they are gone, and a count that stays high is judged as any other.
fn unlinking(unlinks: &[(f64, f64, i64)], t: f64, now: i64) -> i64 {
    (unlinks.iter())
        .filter(|&&(a, b, _)| a <= t && t <= b)
        .map(|&(_, _, before)| before - now)
        .max()
        .unwrap_or(0)
        .max(0)
}

/// The room for pages one side held at the window's start: (excess, deficit).
fn rooms(per_file: bool, cg0: i64, ref0_lo: i64, ref0_hi: i64) -> (i64, i64) {
    if per_file {
        ((ref0_lo - cg0).max(0), (cg0 - ref0_hi).max(0))
    } else {
        let o = (ref0_lo - cg0).max(0);
        (o, o)
    }
}

/// What the judged windows added up to.
struct Tally {
    judged: usize,
    samples: usize,
    worst: i64,
    max_rise: i64,
    skipped: Vec<(String, i64)>,
}

/// A gap beyond tolerance that lasted STALE_WINDOW: where it was and how large.
struct Gap {
    t: f64,
    r: usize,
    r0: usize,
    since: f64,
    dcg: i64,
    d_lo: i64,
    d_hi: i64,
    gap: i64,
    tol: i64,
    slack: i64,
}

/// The failure for a gap that lasted.
fn stale_gap(
    name: String,
    rec: &Record,
    reference: &Reference,
    judged: &[Column],
    w_what: &str,
    g: Gap,
) -> CheckResult {
    let cg_label = join_names(judged);
    let Gap {
        t,
        r,
        r0,
        since,
        dcg,
        d_lo,
        d_hi,
        gap,
        tol,
        slack,
    } = g;
    let deficit = dcg < d_lo;
    let mut res = CheckResult::new(
        name,
        Outcome::Fail,
        format!("{cg_label} rose by {} ({dcg} B)", human_bytes(dcg)),
        format!(
            "{} rose by {} .. {}, within {}",
            reference.label,
            human_bytes(d_lo),
            human_bytes(d_hi),
            human_bytes(tol)
        ),
        format!(
            "at t={t:.3}s (sample {r}, phase {}, step '{w_what}'), since t={:.3}s the group's {} and {} differ by {} ({}), for {:.0} ms: {}",
            rec.phase_at(t),
            rec.series.t[r0],
            if deficit {
                "count is short"
            } else {
                "count is too high"
            },
            reference.label,
            human_bytes(gap),
            if deficit {
                "deficit: the memcg missed dirty pages the reference counted, e.g. a clamped underflow"
            } else {
                "excess: the memcg counted pages the reference did not"
            },
            (t - since) * 1000.0,
            rec.series.describe_row(r)
        ),
    );
    res.tolerance = Some(tol_text(rec, reference, Some(tol - slack)));
    res.at = Some(t);
    res.columns = judged.to_vec();
    res
}

/// The verdict once every window passed: inconclusive, nothing to judge, or a pass.
fn verdict(
    name: String,
    rec: &Record,
    reference: &Reference,
    during: &[StepKind],
    judged_cols: &[Column],
    tally: Tally,
) -> CheckResult {
    let cg_label = join_names(judged_cols);
    let batch = rec.machine.stat_batch_bytes() as i64;
    let Tally {
        judged,
        samples,
        worst,
        max_rise,
        skipped,
    } = tally;
    let skipped_text =
        (!skipped.is_empty()).then(|| inconclusive_text(&skipped, reference.foreign.as_ref()));
    if judged == 0
        && let Some(why) = &skipped_text
    {
        return crate::check::inconclusive(
            name,
            format!(
                "every window was inconclusive, so the machine-wide counters cannot be judged on this kernel (no per-file truth): {why}"
            ),
        );
    }
    if judged == 0 || samples == 0 {
        return missing(
            name,
            format!(
                "no {} step ran with samples to compare",
                crate::model::step::join(during, "/")
            ),
        );
    }
    if max_rise <= batch + reference.drift {
        return missing(
            name,
            format!(
                "no dirty data reached the counters: {} rose by at most {}",
                reference.label,
                human_bytes(max_rise)
            ),
        );
    }
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!(
            "largest gap {} over {samples} samples in {judged} steps",
            human_bytes(worst)
        ),
        "gap within tolerance".into(),
        format!(
            "{cg_label} followed {} (it rose by up to {}){}",
            reference.label,
            human_bytes(max_rise),
            skipped_text.map_or(String::new(), |s| format!("; {s}"))
        ),
    );
    res.tolerance = Some(tol_text(rec, reference, None));
    res
}

/// `tracks-global`: during steps of the kinds in `during`, the rise of the group's counters
/// (summed) follows the rise of its reference (summed; the `global` /proc/vmstat keys without
/// per-file truth), sample by sample.
#[derive(Debug, Clone, PartialEq)]
pub struct TracksGlobal {
    pub cgroup: String,
    pub counters: Vec<String>,
    pub global: Vec<String>,
    pub during: Vec<StepKind>,
    /// Only steps of this phase.
    pub phase: Option<String>,
}

/// `tracks-global` in the check table.
pub const KIND: Kind = Kind {
    kind: "tracks-global",
    doc:
        "During each step of a kind in `during`, up to the first sample after it, the rise of the \
group's
counters (summed) equals the rise of its reference, sample by sample; then each \
counter on its
own against its own reference (dirty against the files' dirty pages, \
writeback against their
writeback: a kernel that shows one under the other's name keeps \
the sum right). The reference is
the page cache of the files the group and the groups \
below it wrote (cachestat(2): the page
cache's own tags, see [the accounting \
oracle](oracle.md)), or without per-file truth the `global`
/proc/vmstat counters; it is \
read before and after the cgroup files, so its value at the cgroup
read lies in that \
bracket. The steps judged are those of the group or a group below it (a step
without a \
group, such as `sync`, counts when the last step with a group was one of these); \
with
`phase`, one window from the first to the last such step of that phase. A clamped \
underflow (the
memcg counter pinned at 0 while the files' dirty pages rise) fails here. \
Tolerance: the
unflushed-stats bound, plus pages one side held at the window's start and \
the other did not (per
file one-sided: the files' extra pages widen only the excess \
side, the group's only the deficit
side; globally: other groups' dirty pages), plus node \
counter drift (global only: \"vm stats
threshold\" from /proc/zoneinfo × CPUs), plus \
read skew (memory.stat's lines are read one after
another: how far the reference's dirty \
and writeback moved against each other during that
sample's pass; for one counter alone, \
how far the others moved). A gap counts when it lasts
100 ms from its first bad sample \
(a concurrent stats flush can leave a group stale that long, \
see
[Findings](findings.md)). During an `unlink` with per-file truth the group may \
count what the
files held when it began: unlink(2) removes the name first and the pages \
in its final iput, and
the reference is read by name (6.12 under TCG: 120 MiB of dirty \
pages took 140 ms to go);
after it the window goes on for 200 ms, and pages still \
counted then are a leak. Not exercised when no such step ran with samples, or no \
dirty data
reached the counters (the reference rose by no more than the bound); without \
per-file truth a
window in which the rest of the machine moved by more than the \
tolerance is inconclusive, and
all windows inconclusive is inconclusive. Each counter \
is judged on its own only with per-file
truth, or where the `global` keys are, in order, \
the counters' own /proc/vmstat keys. Result
name: `tracks-global(<cgroup>)`.",
    keys: &[
        opt(
            "cgroup",
            "the group whose counters are followed (default: the only declared group)",
        ),
        req(
            "counters",
            "the counters summed and followed (the built-in scenarios use `[\"dirty\", \
\"writeback\"]`)",
        ),
        opt(
            "global",
            "the /proc/vmstat keys of the machine-wide reference, used without per-file truth (the \
parser does not check their spelling) (default `[\"nr_dirty\", \"nr_writeback\"]`)",
        ),
        opt(
            "during",
            "step kinds during which the counters are followed (default `[\"write\", \"sync\", \
\"mmap-write\", \"probe\", \"truncate\", \"unlink\"]`)",
        ),
        opt("phase", "only steps of this declared phase"),
    ],
    parse,
    promises: &[&v2::STAT_DIRTY, &v2::STAT_WRITEBACK, &v1::STAT_DIRTY],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(TracksGlobal {
        cgroup: i.cgroup("cgroup")?,
        counters: i.counters()?,
        global: i.global(&["nr_dirty", "nr_writeback"])?,
        during: i.kinds(
            "during",
            &[
                StepKind::Write,
                StepKind::Sync,
                StepKind::MmapWrite,
                StepKind::Probe,
                StepKind::Truncate,
                StepKind::Unlink,
            ],
        )?,
        phase: i.phase()?,
    }))
}

impl CheckSpec for TracksGlobal {
    fn name(&self) -> String {
        format!("tracks-global({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs::accounting(&self.cgroup, self.counters.clone(), self.global.clone())
    }
    /// A gap is confirmed by the samples up to it, other writers measured up to it.
    fn online(&self) -> bool {
        true
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        tracks_global(
            self.name(),
            rec,
            &self.cgroup,
            &self.counters,
            &self.global,
            &self.during,
            self.phase.as_deref(),
        )
    }
}
