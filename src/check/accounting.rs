//! The accounting checks that compare a group's dirty/writeback counters with an independent
//! reference (see `crate::oracle`): `tracks-global` and `dirty-probe`.
//!
//! The reference is the page cache's own count of the files the group wrote (cachestat, sampled
//! as `oracle.files.*`) when the record has it, else machine-wide /proc/vmstat. With /proc/vmstat
//! every other writer on the machine moves the reference too, so a window in which the rest of the
//! machine (`oracle.root` or /proc/vmstat, minus the run's own groups `oracle.run`) moved by more
//! than the tolerance is inconclusive: reported with the amount, and never a failure.

use super::{
    CheckResult, Columns, Outcome, columns, missing, row_at_or_after, row_at_or_before, sum,
};
use crate::oracle::{files_column, machine_column};
use crate::record::{Record, StepRecord};
use crate::units::human_bytes;

/// How long a disagreement between a group's memory.stat and its reference must last to count,
/// from its first sample. The memcg flush resets a group's pending-update count when the first CPU
/// of a flush is done, and a flusher drops its lock between CPUs; a reader in that gap skips its
/// own flush and sees stats stale beyond the batching bound until the other flusher finishes
/// (6.12 under TCG: 8 MiB of writeback for 65 ms during the periodic flush). Real accounting
/// errors last.
pub const STALE_WINDOW: f64 = 0.1;

/// What the rest of the machine holds dirty or under writeback, sample by sample: a machine-wide
/// total (the memcg root's, or /proc/vmstat's) minus the run's own top group.
struct Foreign {
    total: Vec<usize>,
    /// Bytes per unit of `total` (page size for /proc/vmstat, 1 for the memcg root).
    unit: i64,
    run: Vec<usize>,
    label: &'static str,
}

impl Foreign {
    fn at(&self, rec: &Record, r: usize) -> i64 {
        let total: i64 = self.total.iter().map(|&c| rec.series.get(r, c)).sum();
        let run: i64 = self.run.iter().map(|&c| rec.series.get(r, c)).sum();
        total * self.unit - run
    }
    /// The largest change over `rows` from row `r0`.
    fn moved(&self, rec: &Record, r0: usize, rows: &[usize]) -> i64 {
        let f0 = self.at(rec, r0);
        rows.iter()
            .map(|&r| (self.at(rec, r) - f0).abs())
            .max()
            .unwrap_or(0)
    }
}

/// The reference a group's counters are compared with, read before (`pre`) and after (`post`)
/// the cgroup files of each sampler pass.
struct Reference {
    /// For messages, e.g. "global nr_dirty+nr_writeback x 4096 B".
    label: String,
    pre: Vec<usize>,
    post: Vec<usize>,
    /// Bytes per unit (page size for /proc/vmstat, 1 for the per-file truth).
    unit: i64,
    /// How far the reference itself may lag: the node counters' per-CPU drift; 0 for the page
    /// cache's tags.
    drift: i64,
    per_file: bool,
    /// Only for the global reference, when the run's top group was sampled.
    foreign: Option<Foreign>,
}

impl Reference {
    fn at(&self, rec: &Record, r: usize, cols: &[usize]) -> i64 {
        cols.iter().map(|&c| rec.series.get(r, c)).sum::<i64>() * self.unit
    }
    fn lo(&self, rec: &Record, r: usize) -> i64 {
        self.at(rec, r, &self.pre).min(self.at(rec, r, &self.post))
    }
    fn hi(&self, rec: &Record, r: usize) -> i64 {
        self.at(rec, r, &self.pre).max(self.at(rec, r, &self.post))
    }
    /// memory.stat is not one snapshot: its lines are read one after another, so pages that move
    /// from dirty to writeback during a slow pass can be seen in both (or neither). The
    /// reference's own counters moving against each other during the pass bounds that, beyond
    /// what the bracket already covers.
    fn skew(&self, rec: &Record, r: usize) -> i64 {
        let each: i64 = self
            .pre
            .iter()
            .zip(&self.post)
            .map(|(&a, &b)| (rec.series.get(r, b) - rec.series.get(r, a)).abs())
            .sum();
        (each * self.unit) - (self.at(rec, r, &self.post) - self.at(rec, r, &self.pre)).abs()
    }
}

/// The per-file truth of `cgroup` when it was sampled for every counter, else the global
/// /proc/vmstat keys (with the machine view for inconclusive windows, when sampled).
fn reference(
    rec: &Record,
    cgroup: &str,
    counters: &[String],
    global: &[String],
) -> Result<Reference, String> {
    let col = |name: &str| rec.series.col(name);
    let files: Option<(Vec<usize>, Vec<usize>)> = counters
        .iter()
        .map(|c| {
            Some((
                col(&files_column(cgroup, c, true))?,
                col(&files_column(cgroup, c, false))?,
            ))
        })
        .collect::<Option<Vec<_>>>()
        .map(|v| v.into_iter().unzip());
    if let Some((pre, post)) = files {
        return Ok(Reference {
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
        let i = col(&format!("vmstat.{k}"))
            .ok_or_else(|| format!("/proc/vmstat {k} was not sampled (missing on this kernel?)"))?;
        post.push(i);
        pre.push(col(&format!("vmstat.pre.{k}")).unwrap_or(i));
    }
    let dw = ["dirty", "writeback"];
    let machine = |which: &str| -> Option<Vec<usize>> {
        dw.iter().map(|c| col(&machine_column(which, c))).collect()
    };
    let foreign = machine("run").map(|run| match machine("root") {
        Some(total) => Foreign {
            total,
            unit: 1,
            run,
            label: "the memcg root's dirty+writeback minus this run's groups'",
        },
        None => Foreign {
            total: ["nr_dirty", "nr_writeback"]
                .iter()
                .filter_map(|k| col(&format!("vmstat.{k}")))
                .collect(),
            unit: page,
            run,
            label: "global nr_dirty+nr_writeback minus this run's groups' dirty+writeback",
        },
    });
    Ok(Reference {
        label: format!("{} x {page} B", global.join("+")),
        pre,
        post,
        unit: page,
        drift: rec.machine.node_drift_bytes() as i64,
        per_file: false,
        foreign,
    })
}

/// The windows tracks-global looks at: each matching step of the group (or its descendants) and
/// helpers such as sync that follow one of them; with `phase`, one window from the first matching
/// step's start to the last one's end in that phase (a workload that keeps running across steps).
/// Another group's writes, and the sync after them, are not this group's to follow.
fn windows(
    rec: &Record,
    cgroup: &str,
    during: &[String],
    phase: Option<&str>,
) -> Vec<(f64, f64, String)> {
    let mine = |g: &str| g == cgroup || g.starts_with(&format!("{cgroup}/"));
    let mut last_owner_mine = true;
    let mut matching: Vec<&StepRecord> = Vec::new();
    for s in &rec.steps {
        let include = if s.cgroup.is_empty() {
            last_owner_mine
        } else {
            last_owner_mine = mine(&s.cgroup);
            last_owner_mine
        };
        if include
            && during.iter().any(|k| k == s.kind)
            && phase.is_none_or(|p| rec.phases.get(s.phase).is_some_and(|x| x.name == p))
        {
            matching.push(s);
        }
    }
    match (phase, matching.first(), matching.last()) {
        (Some(p), Some(first), Some(last)) => vec![(first.start, last.end, format!("phase {p}"))],
        _ => matching
            .iter()
            .map(|s| (s.start, s.end, s.describe.clone()))
            .collect(),
    }
}

/// Windows that could not be judged: what, and how far the rest of the machine moved.
fn inconclusive_text(skipped: &[(String, i64)], foreign: Option<&Foreign>) -> String {
    let most = skipped.iter().map(|(_, m)| *m).max().unwrap_or(0);
    format!(
        "{} window(s) inconclusive: other writers on the machine moved {} by up to {} (first: '{}')",
        skipped.len(),
        foreign.map_or("the machine's counters", |f| f.label),
        human_bytes(most),
        skipped.first().map_or("", |(w, _)| w.as_str())
    )
}

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
    during: &[String],
    phase: Option<&str>,
) -> CheckResult {
    let cols = match columns(rec, cgroup, counters) {
        Ok(c) => c,
        Err(e) => return missing(name, e),
    };
    let reference = match reference(rec, cgroup, counters, global) {
        Ok(r) => r,
        Err(e) => return missing(name, format!("cannot verify: {e}")),
    };
    let batch = rec.machine.stat_batch_bytes() as i64;
    let cg_label = cols
        .iter()
        .map(|(c, _)| c.as_str())
        .collect::<Vec<_>>()
        .join("+");
    let (mut judged, mut samples, mut worst, mut max_rise) = (0, 0, 0i64, 0i64);
    let mut skipped: Vec<(String, i64)> = Vec::new();
    let spans = windows(rec, cgroup, during, phase);
    for (w_start, w_end, w_what) in &spans {
        let r0 = row_at_or_before(rec, *w_start);
        // Up to the first sample after the step: the one that shows what it did (a short write
        // can fall between two samples; the runner samples after every step).
        let w_end = row_at_or_after(rec, *w_end).map_or(*w_end, |r| rec.series.t[r]);
        let rows: Vec<usize> = rec.series.rows_between(*w_start, w_end).collect();
        let cg0 = sum(rec, r0, &cols);
        let (ref0_lo, ref0_hi) = (reference.lo(rec, r0), reference.hi(rec, r0));
        // Pages one side holds at the window's start and the other does not may be written back
        // during it. Globally that is every other group's dirty pages (either direction, as
        // before). Per file it is one-sided: pages only the truth has can make the group look
        // high, pages only the group has (metadata it dirtied) can make it look short.
        let (room_excess, room_deficit) = if reference.per_file {
            ((ref0_lo - cg0).max(0), (cg0 - ref0_hi).max(0))
        } else {
            let o = (ref0_lo - cg0).max(0);
            (o, o)
        };
        let base = batch + reference.drift + reference.skew(rec, r0);
        if let Some(f) = &reference.foreign {
            let moved = f.moved(rec, r0, &rows);
            if moved > base + room_excess {
                skipped.push((w_what.clone(), moved));
                continue;
            }
        }
        judged += 1;
        let mut bad_since: Option<f64> = None;
        for r in rows {
            samples += 1;
            let slack = base + reference.skew(rec, r);
            let dcg = sum(rec, r, &cols) - cg0;
            let (d_lo, d_hi) = (
                reference.lo(rec, r) - ref0_hi,
                reference.hi(rec, r) - ref0_lo,
            );
            max_rise = max_rise.max(d_lo);
            let (gap, tol) = if dcg < d_lo {
                (d_lo - dcg, slack + room_deficit)
            } else if dcg > d_hi {
                (dcg - d_hi, slack + room_excess)
            } else {
                (0, slack)
            };
            let t = rec.series.t[r];
            if gap <= tol {
                bad_since = None;
                worst = worst.max(gap);
                continue;
            }
            // A gap must last STALE_WINDOW from its first sample (see STALE_WINDOW).
            let since = *bad_since.get_or_insert(t);
            if t - since < STALE_WINDOW {
                continue;
            }
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
            res.tolerance = Some(tol_text(rec, &reference, Some(tol - slack)));
            res.at = Some(t);
            res.column = Some(cg_label.clone());
            return res;
        }
    }
    let skipped_text =
        (!skipped.is_empty()).then(|| inconclusive_text(&skipped, reference.foreign.as_ref()));
    if judged == 0
        && let Some(why) = &skipped_text
    {
        return missing(
            name,
            format!(
                "every window was inconclusive, so the machine-wide counters cannot be judged on this kernel (no per-file truth): {why}"
            ),
        );
    }
    if judged == 0 || samples == 0 {
        return missing(
            name,
            format!("no {} step ran with samples to compare", during.join("/")),
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
    res.tolerance = Some(tol_text(rec, &reference, None));
    res
}

/// How the tolerance was made up; `room`: the start-of-window term of the failing sample.
fn tol_text(rec: &Record, reference: &Reference, room: Option<i64>) -> String {
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

/// dirty-probe: after each probe step (exactly W bytes written with writeback held off), the
/// group's dirty + writeback is W — or, with the per-file truth, what the group's files hold
/// dirty or under writeback (W plus anything still dirty from before). A hidden negative offset
/// (a clamped underflow from earlier phases) shows as a deficit. If the reference did not rise by
/// W, writeback was not held off: not exercised.
pub fn dirty_probe(name: String, rec: &Record, cgroup: &str) -> CheckResult {
    let counters = ["dirty".to_string(), "writeback".to_string()];
    let cols: Columns = match columns(rec, cgroup, &counters) {
        Ok(c) => c,
        Err(e) => return missing(name, e),
    };
    let reference = match reference(
        rec,
        cgroup,
        &counters,
        &["nr_dirty".into(), "nr_writeback".into()],
    ) {
        Ok(r) => r,
        Err(e) => return missing(name, format!("cannot verify: {e}")),
    };
    let tol = rec.machine.stat_batch_bytes() as i64;
    let gtol = tol + reference.drift;
    let probes: Vec<_> = rec.steps.iter().filter(|s| s.kind == "probe").collect();
    if probes.is_empty() {
        return missing(name, "the scenario ran no probe step".into());
    }
    let mut lines = Vec::new();
    for st in probes {
        let w = st.bytes as i64;
        let r0 = row_at_or_before(rec, st.start);
        let Some(r) = row_at_or_after(rec, st.end) else {
            return missing(name, "no sample after the probe".into());
        };
        let rise = reference.lo(rec, r) - reference.hi(rec, r0);
        if let Some(f) = &reference.foreign {
            let rows: Vec<usize> = (r0..=r).collect();
            let moved = f.moved(rec, r0, &rows);
            if moved > gtol {
                return missing(
                    name,
                    format!(
                        "inconclusive: other writers on the machine moved {} by {} during the probe (tolerance {}), and this kernel gives no per-file truth",
                        f.label,
                        human_bytes(moved),
                        human_bytes(gtol)
                    ),
                );
            }
        }
        if rise < w - gtol {
            return missing(
                name,
                format!(
                    "writeback was not held off: {} rose by {} of the {} the probe wrote",
                    reference.label,
                    human_bytes(rise),
                    human_bytes(w)
                ),
            );
        }
        let cg = sum(rec, r, &cols);
        // What the group should show: the files' pages (bracketed), or the probe's size.
        let (want_lo, want_hi) = if reference.per_file {
            (reference.lo(rec, r), reference.hi(rec, r))
        } else {
            (w, w)
        };
        let deficit = if cg < want_lo {
            want_lo - cg
        } else if cg > want_hi {
            want_hi - cg
        } else {
            0
        };
        if deficit.abs() > tol {
            let t = rec.series.t[r];
            let mut res = CheckResult::new(
                name,
                Outcome::Fail,
                format!("{cgroup}.dirty+writeback = {cg} ({})", human_bytes(cg)),
                format!(
                    "{want_lo} ({}) +- {}",
                    human_bytes(want_lo),
                    human_bytes(tol)
                ),
                format!(
                    "after the probe in phase {} wrote {} ({} rose by {}), the group shows {}: {} of {} ({}) at t={t:.3}s",
                    rec.phases[st.phase].name,
                    human_bytes(w),
                    reference.label,
                    human_bytes(rise),
                    human_bytes(cg),
                    if deficit > 0 {
                        "a deficit"
                    } else {
                        "an excess"
                    },
                    human_bytes(deficit.abs()),
                    if deficit > 0 {
                        "a hidden negative offset: the counter underflowed earlier and the clamp at 0 hid it"
                    } else {
                        "pages counted that were not written"
                    },
                ),
            );
            res.tolerance = Some(rec.machine.stat_batch_explained());
            res.at = Some(t);
            res.bound = Some(want_lo - tol);
            res.column = Some(format!("{cgroup}.dirty+writeback"));
            return res;
        }
        lines.push(format!("{} of {}", human_bytes(cg), human_bytes(want_lo)));
    }
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!("dirty+writeback after each probe: {}", lines.join(", ")),
        format!(
            "{} +- {}",
            if reference.per_file {
                "what the group's files hold dirty or under writeback"
            } else {
                "each probe's size"
            },
            human_bytes(tol)
        ),
        format!(
            "the group's dirty count showed exactly what each probe wrote (reference: {})",
            reference.label
        ),
    );
    res.tolerance = Some(rec.machine.stat_batch_explained());
    res
}

/// observed: the group's counters were seen above 0 while its reference was — with the per-file
/// truth, while the group's own files had such pages (e.g. pages under writeback), else while the
/// global counters did. If the reference never rose, nothing happened to observe: not exercised.
/// Without per-file truth, a miss while other writers moved the machine's counters is
/// inconclusive: the global rise may have been theirs.
pub fn observed(
    name: String,
    rec: &Record,
    cgroup: &str,
    counters: &[String],
    global: &[String],
) -> CheckResult {
    let cols = match columns(rec, cgroup, counters) {
        Ok(c) => c,
        Err(e) => return missing(name, e),
    };
    let reference = match reference(rec, cgroup, counters, global) {
        Ok(r) => r,
        Err(e) => return missing(name, format!("cannot verify: {e}")),
    };
    let floor = reference.drift;
    let all: Vec<usize> = (0..rec.series.len()).collect();
    let rmax = all.iter().map(|&r| reference.lo(rec, r)).max().unwrap_or(0);
    let cmax = all.iter().map(|&r| sum(rec, r, &cols)).max().unwrap_or(0);
    let cl = counters.join("+");
    if rmax <= floor {
        return missing(
            name,
            format!(
                "nothing to observe: {} never rose above {}",
                reference.label,
                human_bytes(floor)
            ),
        );
    }
    if cmax <= 0
        && let Some(f) = &reference.foreign
    {
        let moved = f.moved(rec, 0, &all);
        if moved > rec.machine.stat_batch_bytes() as i64 + floor {
            return missing(
                name,
                format!(
                    "inconclusive: {cgroup}.{cl} never rose above 0, but other writers on the machine moved {} by up to {} (no per-file truth on this kernel)",
                    f.label,
                    human_bytes(moved)
                ),
            );
        }
    }
    let outcome = if cmax > 0 {
        Outcome::Pass
    } else {
        Outcome::Fail
    };
    CheckResult::new(
        name,
        outcome,
        format!("{cgroup}.{cl} up to {}", human_bytes(cmax)),
        "> 0 at some sample".into(),
        match outcome {
            Outcome::Pass => format!(
                "{cgroup}.{cl} reached {} while {} reached {}",
                human_bytes(cmax),
                reference.label,
                human_bytes(rmax)
            ),
            _ => format!(
                "{} reached {} but {cgroup}.{cl} never rose above 0: the group's pages were not accounted",
                reference.label,
                human_bytes(rmax)
            ),
        },
    )
}
