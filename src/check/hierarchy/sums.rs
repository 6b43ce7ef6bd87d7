//! hierarchy: a parent's hierarchical counter against its own plus its children's.

use super::flush::Flush;
use super::parts::{ANCESTOR_LAG, Parts, children, flushed};
use crate::check::args::CheckArgs;
use crate::check::{Check, CheckResult, CheckSpec, Kind, Needs, Outcome, missing, req};
use crate::model::Column;
use crate::model::Record;
use crate::model::contract::{v1, v2};
use crate::model::counter;
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;

/// hierarchy: the parent's hierarchical counter equals its own (v1 `.local`, sampled on v1) plus
/// its children's hierarchical counters, at every sample. A parent that shows what its parts
/// summed to a little earlier (or a value between two samples of theirs) is stale, not wrong, for
/// up to ANCESTOR_LAG; so is one that counts more pages than its page counter holds (usage, where
/// sampled: a burst in a child that no sample saw, not yet flushed to the parent), for up to
/// ANCESTOR_LAG from the start of the gap. Any other difference fails when it is there in two
/// consecutive samples.
pub fn hierarchy(name: String, rec: &Record, parent: &str, counters: &[String]) -> CheckResult {
    let children = children(rec, parent);
    if children.is_empty() {
        return missing(name, format!("{parent} has no child groups"));
    }
    // When a fault loop below the parent may have left an unseen burst in its statistics.
    let churn = crate::check::Churn::new(rec, parent);
    let mut seen = Seen::default();
    let mut all = Vec::new();
    for c in counters {
        match Parts::new(rec, parent, &children, c) {
            Ok(p) => all.push((c.as_str(), p)),
            Err(why) => return missing(name, why),
        }
    }
    let flush = Flush {
        parts: (all.iter())
            .filter(|(c, x)| flushed(c) && !x.fresh)
            .map(|(_, x)| x)
            .collect(),
    };
    for (c, parts) in &all {
        seen.peak(rec, c, parts);
        if let Some(at) = follow(rec, c, parts, (&churn, &flush), &mut seen) {
            return broken(name, rec, &parts.column, c, at);
        }
    }
    if seen.moved.is_empty() {
        return missing(
            name,
            format!(
                "{parent}'s {} never rose above twice their tolerance: a wrong sum could not show",
                counters.join(", ")
            ),
        );
    }
    let mut res = passed(
        name,
        rec,
        parent,
        &seen.moved,
        children.len(),
        seen.worst,
        seen.lag,
    );
    if !seen.idle.is_empty() {
        res.detail += &format!(
            "; not exercised (they stayed near 0): {}",
            seen.idle.join(", ")
        );
    }
    res
}

/// What the counters showed, for the pass line.
#[derive(Default)]
struct Seen<'a> {
    /// The largest gap within tolerance (sizes only: events have no bytes).
    worst: i64,
    /// The longest a parent was seen stale: how long, when, which counter.
    lag: Option<(f64, f64, String)>,
    /// The counters the parent showed above twice the tolerance, with their peaks.
    moved: Vec<String>,
    /// Those it did not: a gap in those could not show.
    idle: Vec<&'a str>,
}

impl<'a> Seen<'a> {
    /// Files counter `c` as moved (with its peak) or idle.
    fn peak(&mut self, rec: &Record, c: &'a str, x: &Parts) {
        // The parent's or its parts' peak: a parent that never shows what its parts count (a
        // statistic not passed up) moved all the same.
        let top = (0..rec.series.len())
            .map(|r| rec.series.get(r, x.p).max(x.sum(rec, r)))
            .max()
            .unwrap_or(0);
        if top > 2 * x.tol_base {
            self.moved.push(format!(
                "{c} up to {}",
                if x.events {
                    top.to_string()
                } else {
                    human_bytes(top)
                }
            ));
        } else {
            self.idle.push(c);
        }
    }
}

/// Compares the parent's `c` with the sum of its parts at every sample: where a difference that
/// is neither a one-sample burst nor a stale parent persisted, if one did. Notes the largest gap
/// within tolerance and the longest lag in `seen`.
fn follow<'a>(
    rec: &Record,
    c: &'a str,
    x: &Parts,
    (churn, flush): (&crate::check::Churn, &Flush),
    seen: &mut Seen<'a>,
) -> Option<Broken> {
    let parts = |r: usize| x.sum(rec, r);
    // The files of one pass are read one after another, so a burst (a task exiting and freeing
    // everything at once) between the parent's read and a child's shows in that one sample. A
    // real disagreement (stale or wrong totals) is still there at the next pass.
    let mut prev_bad: Option<usize> = None;
    // When the current run of gaps began.
    let mut gap_since: Option<f64> = None;
    for r in 0..rec.series.len() {
        let pv = rec.series.get(r, x.p);
        let ov = x.own.map(|o| rec.series.get(r, o)).unwrap_or(0);
        let kv = parts(r) - ov;
        let gap = (pv - ov - kv).abs();
        let tol = x.tol(rec, r);
        let t = rec.series.t[r];
        if gap <= tol {
            // The pass line's figure is the sizes' (events have no bytes).
            if !x.events {
                seen.worst = seen.worst.max(gap);
            }
            gap_since = None;
            continue;
        }
        let since = *gap_since.get_or_insert(t);
        let above_usage = x.usage.is_some_and(|u| pv > rec.series.get(r, u) + tol);
        // Page counters and memory.events are raised in every ancestor at once (the charge and
        // memcg_memory_event walk up the tree): only memory.stat's counters wait for a flush, so
        // only they can be stale.
        let stale = if flushed(c) && !x.fresh {
            flush
                .stale_by(rec, x, r, since)
                .or(
                    ((above_usage || churn.at(since)) && t - since <= ANCESTOR_LAG)
                        .then_some(t - since),
                )
        } else if churn.faulting(t) {
            // Read skew a fault loop's rate hides (see Churn::faulting): not judged.
            prev_bad = None;
            continue;
        } else {
            None
        };
        if let Some(ago) = stale {
            if seen.lag.as_ref().is_none_or(|(l, _, _)| ago > *l) {
                seen.lag = Some((ago, t, c.to_string()));
            }
            prev_bad = None;
            continue;
        }
        let persists = prev_bad == Some(r.wrapping_sub(1)) && r > 0;
        prev_bad = Some(r);
        if persists {
            return Some(Broken {
                r,
                pv,
                ov,
                kv,
                gap,
                tol,
                kids: x.kids.len(),
                exact: x.tol_base == 0,
            });
        }
    }
    None
}

/// The pass result: the largest gap seen, and the longest a parent lagged (`lag`: how long, when,
/// which counter).
fn passed(
    name: String,
    rec: &Record,
    parent: &str,
    moved: &[String],
    kids: usize,
    worst: i64,
    lag: Option<(f64, f64, String)>,
) -> CheckResult {
    let batch = rec.machine.stat_batch_bytes() as i64;
    let stale = lag.map_or(String::new(), |(ago, t, c)| {
        format!(
            "; the parent's {c} lagged its parts by up to {:.0} ms (at t={t:.3}s: it showed what they summed to earlier, a late stats flush of the ancestor, within the {ANCESTOR_LAG:.0} s allowed)",
            ago * 1000.0
        )
    });
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!(
            "largest gap {} over {} samples",
            human_bytes(worst),
            rec.series.len()
        ),
        format!("parent = own + {} children", kids),
        format!(
            "{parent}'s counters equal the sum of their parts: {}{stale}",
            moved.join(", ")
        ),
    );
    res.tolerance = Some(format!(
        "{} groups x the memcg per-CPU stat batch ({}) plus read skew; a stale parent for up to {ANCESTOR_LAG:.0} s",
        kids + 1,
        human_bytes(batch)
    ));
    res
}

/// Where a parent's hierarchical counter broke: row, parent, own and children's values, the gap
/// and its tolerance, the number of children.
struct Broken {
    r: usize,
    pv: i64,
    ov: i64,
    kv: i64,
    gap: i64,
    tol: i64,
    kids: usize,
    /// No per-CPU residue to allow for (see `Parts::tol_base`).
    exact: bool,
}

/// The failure for a difference that is neither a one-sample burst nor a stale parent.
fn broken(name: String, rec: &Record, column: &Column, c: &str, b: Broken) -> CheckResult {
    let Broken {
        r,
        pv,
        ov,
        kv,
        gap,
        tol,
        kids,
        exact,
    } = b;
    let t = rec.series.t[r];
    // Events are counts, sizes bytes.
    let amount = |v: i64| {
        if counter::counter(c).is_some_and(|k| k.unit == counter::Unit::Events) {
            v.to_string()
        } else {
            human_bytes(v)
        }
    };
    let why = if flushed(c) {
        format!(
            "and is not what the parts summed to at any time in the {ANCESTOR_LAG:.0} s before (so not a late flush)"
        )
    } else {
        "and the kernel raises it in every ancestor at once (no flush to wait for)".to_string()
    };
    let mut res = CheckResult::new(
        name,
        Outcome::Fail,
        format!("{column} = {}", amount(pv)),
        format!(
            "own {} + children {} = {} +- {}",
            amount(ov),
            amount(kv),
            amount(ov + kv),
            amount(tol)
        ),
        format!(
            "at t={t:.3}s (phase {}) the parent's hierarchical {c} differs from the sum of its parts by {}, as in the sample before (t={:.3}s), {why}: {}",
            rec.phase_at(t),
            amount(gap),
            rec.series.t[r - 1],
            rec.series.describe_row(r)
        ),
    );
    let base = if exact {
        "no per-CPU residue (memory.events raise every ancestor's count at once; on v2 the top group's statistics are flushed right before it is read), only what the parts counted since the sample before (the parent is read first)"
            .to_string()
    } else {
        format!(
            "{} groups x {}",
            kids + 1,
            rec.machine.stat_batch_explained()
        )
    };
    res.tolerance = Some(format!(
        "{base} plus read skew (rate of change x sampler pass time), in two consecutive samples (one pass reads the files one after another, so a burst between two reads shows in one sample only); a parent equal to what its parts summed to up to {ANCESTOR_LAG:.0} s earlier is stale, not wrong (the periodic flush, every 2 s, bounds that)"
    ));
    res.at = Some(t);
    res.columns = vec![column.clone()];
    res
}

/// `hierarchy`: the parent's hierarchical counter equals its own plus its children's (v1), or the
/// sum of its children's (v2), at every sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Hierarchy {
    pub parent: String,
    pub counters: Vec<String>,
    /// Every counter the kernel shows that sums over the tree (the invariant every parent gets),
    /// not `counters`.
    pub all: bool,
}

/// The counters that sum over the tree, of those sampled for `parent`: memory.stat's (not the
/// limits v1 derives), the files of their own whose own value is sampled too (v2 memory.events
/// with memory.events.local), and the page counters where the parent has no value of its own
/// to miss (v2: a parent holds no tasks; there no memory.stat counter has a `.local`), and on v2
/// every event file of the top group (no tasks, no limits: no event of its own). Not the
/// watermarks: a peak is no sum.
fn additive(rec: &Record, parent: &str) -> Vec<String> {
    use counter::{Kind, Source};
    let s = &rec.series;
    let sampled = |c: &Column| s.col(c).is_some();
    // The v2 top group holds no tasks and has no limits of its own, so none of its events
    // (memory.swap.events has no .local twin) are its own. (v1 raises a memory event in the
    // group alone: its oom_kill is no sum.)
    let top = parent == crate::model::TOP_GROUP;
    let v2 = !s
        .columns()
        .iter()
        .any(|c| matches!(c, Column::Group { group, local: true, counter } if group == parent && counter::counter(counter).is_some_and(|k| matches!(k.source, Source::Stat { .. }))));
    s.columns()
        .iter()
        .filter_map(|c| match c {
            Column::Group {
                group,
                counter,
                local: false,
            } if group == parent => Some(counter),
            _ => None,
        })
        .filter(|name| {
            let Some(k) = counter::counter(name) else {
                return false;
            };
            match (k.source, k.kind) {
                (_, Kind::Limit) => false,
                _ if name.ends_with("peak") => false,
                (Source::Stat { .. }, _) => true,
                (Source::File { .. }, _) => {
                    sampled(&Column::local(parent, name))
                        || (v2 && k.kind == Kind::Size)
                        || (v2 && top && k.unit == counter::Unit::Events)
                }
            }
        })
        .cloned()
        .collect()
}

/// `hierarchy` in the check table.
pub const KIND: Kind = Kind {
    kind: "hierarchy",
    doc: "The parent's hierarchical counter equals its own (v1 `.local`, sampled automatically) \
plus its children's hierarchical counters (on v2, which has no local value, the sum of \
its children's), at every sample: memory.stat's hierarchical counters are defined as \
that sum. It fails when two consecutive samples disagree (one pass reads the files one \
after another, so a burst, such as a task exiting, between two reads shows in one \
sample only). A parent that shows what its parts summed to at some sample in the last \
3 s, or a value between two consecutive samples of theirs, is stale, not wrong (a late \
stats flush of the ancestor: the memcg's periodic flush runs every 2 s, plus 1 s for \
the deferred work to run on a busy or emulated machine). A flush moves all of a group's \
statistics at once, so once a gap has lasted 100 ms, the moment its parts summed to the \
parent's value must be one the parent's other counters allow too: a parent whose other \
counters show it flushed after its child changed, with this one still at its old value, \
keeps a statistic from its ancestors (where those counters disagree among themselves, a \
flush racing another, they tell nothing). So is a parent that counts \
more pages than its own page counter holds (where `usage` is sampled), for up to 3 s \
from the start of the gap. Only memory.stat's counters can be stale so: page counters \
(usage, swap, the watermarks' groups) and memory.events are raised in every ancestor at \
once, and a parent behind its parts there fails at the second sample, except while a \
`fault` step runs below the parent (and 100 ms after): its loop maps and unmaps a region \
about as often as the sampler reads, so the parent's and a child's reads may see it in \
different states at every sample (Debian 6.1: 6 MiB, the region, in consecutive samples). \
The pass line says \
how long the parent lagged. Tolerance: \
(children + 1) × the unflushed-stats bound + read skew (rate of change × the sampler's \
pass time); for memory.events (and on v2 the flushed top group's statistics events) no \
per-CPU residue (an event raises the group's count and each ancestor's at once), only read \
skew and what the parts counted since the sample before (the parent is read before them). Not exercised when the parent has no sampled child groups. Every declared \
group with declared children gets a `hierarchy` check of the scenario's sampled \
memory.stat counters unless the file has one for it; so does the scenario's own top group \
(`hierarchy((top))`): the runner's `memcgtest-<pid>-<scenario>` group, sampled as `(top)`, \
holds the declared top-level groups and the helpers' group `aux` (sampled too) and nothing \
else, so a statistic the kernel does not pass to the ancestors shows there in every scenario \
(on v2 its memory.events and memory.swap.events too: it holds no tasks and no limits, so no \
event is its own). \
On v2 the sampler reads the top group's cpu.stat before its memory.stat: before Linux 6.16 \
that read flushes the statistics of its whole subtree (cgroup_rstat_flush), so there the top \
group cannot be stale and gets no 3 s allowance; since 6.16 each controller has its own rstat \
tree and cpu.stat flushes only CPU times, so the top group is judged as any parent. Result name: `hierarchy(<parent>)`.",
    keys: &[
        req("parent", "the declared parent group"),
        req("counters", "the counters compared"),
    ],
    parse,
    promises: &[
        &v2::CURRENT,
        &v2::EVENTS_HIERARCHICAL,
        &v2::SWAP_CURRENT,
        &v1::STAT_TOTAL,
        &v1::HIERARCHY_CHARGE,
    ],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(Hierarchy {
        parent: i.named_cgroup("parent")?,
        counters: i.counters()?,
        all: false,
    }))
}

impl CheckSpec for Hierarchy {
    fn name(&self) -> String {
        format!("hierarchy({})", self.parent)
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: self.counters.clone(),
            local_counters: self.counters.clone(),
            all_counters: self.all,
            ..Needs::default()
        }
    }
    /// A gap is confirmed by the samples up to it (the read skew looks at the next sample: the online judge waits for it).
    fn online(&self) -> bool {
        true
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        if self.all {
            let counters = additive(rec, &self.parent);
            return hierarchy(self.name(), rec, &self.parent, &counters);
        }
        hierarchy(self.name(), rec, &self.parent, &self.counters)
    }
}
