//! within-node: a group counts no more of an event than the node counted.

use crate::check::args::CheckArgs;
use crate::check::hierarchy::parts::ANCESTOR_LAG;
use crate::check::{CGROUP, Check, CheckResult, CheckSpec, Kind, Needs, Outcome, missing};
use crate::model::error::ScenarioError;
use crate::model::node_events::{NODE_EVENTS, NodeEvent, node_keys};
use crate::model::{Column, Record};

/// The columns of one node event: the group's count, the node keys read before the group files
/// and after them.
struct Cols {
    event: &'static NodeEvent,
    group: usize,
    pre: Vec<usize>,
    post: Vec<usize>,
}

impl Cols {
    fn new(rec: &Record, cgroup: &str, event: &'static NodeEvent) -> Option<Cols> {
        let s = &rec.series;
        let keys = |f: fn(&str) -> Column| -> Option<Vec<usize>> {
            event.node.iter().map(|k| s.col(&f(k))).collect()
        };
        Some(Cols {
            event,
            group: s.col(&Column::group(cgroup, event.counter))?,
            pre: keys(Column::vmstat_pre)?,
            post: keys(Column::vmstat)?,
        })
    }

    fn node(&self, rec: &Record, r: usize, pre: bool) -> i64 {
        let cols = if pre { &self.pre } else { &self.post };
        cols.iter().map(|&c| rec.series.get(r, c)).sum()
    }

    fn all(&self) -> Vec<usize> {
        let mut v = vec![self.group];
        v.extend(&self.pre);
        v.extend(&self.post);
        v
    }
}

/// How far the group's count may run ahead of the node's: per CPU, one call's count made in the
/// memcg before the node (`Batch`).
fn tolerance(rec: &Record, event: &NodeEvent) -> (i64, String) {
    let m = &rec.machine;
    let per_cpu = event.batch.pages(m);
    (
        per_cpu * m.cpus as i64,
        format!(
            "{} CPUs x {per_cpu} events counted in the memcg a moment before the node ({:?} batch)",
            m.cpus, event.batch
        ),
    )
}

/// How old the events a group's read shows may be: none for the v2 top group before 6.16, whose
/// cpu.stat the sampler reads first (it flushed the whole subtree); for any other, ANCESTOR_LAG
/// (a read flushes only what the kernel thinks is pending; the periodic flush takes everything).
fn lag(rec: &Record, cgroup: &str) -> f64 {
    if rec.machine.flushed_before_read(rec.version, cgroup) {
        0.0
    } else {
        ANCESTOR_LAG
    }
}

/// The worst window of one event: the rows (a, b) where the group rose most beyond the node, and
/// the row whose node read bounds what the group showed at a.
struct Worst {
    excess: i64,
    a: usize,
    since: usize,
    b: usize,
    /// The first sample judged from (the first with a node read `lag` or more before it).
    first: usize,
}

/// Over every pair of samples a < b: the group's rise T(b) - T(a) against the node's. The node
/// is read before the group and after it, and the group at a shows every event up to `lag`
/// before it: the node's true rise over what the group counted is at most Vpost(b) - Vpre(a'),
/// a' the last sample `lag` or more before a. The largest (T(b) - Vpost(b)) - (T(a) - Vpre(a')),
/// in one pass keeping the least T(a) - Vpre(a') so far.
fn worst(rec: &Record, c: &Cols, lag: f64) -> Option<Worst> {
    let s = &rec.series;
    let mut since: Option<usize> = None;
    let mut least: Option<(usize, usize, i64)> = None;
    let mut first = None;
    let mut out: Option<Worst> = None;
    for b in 0..s.len() {
        if let Some((a, a0, low)) = least {
            let excess = s.get(b, c.group) - c.node(rec, b, false) - low;
            if out.as_ref().is_none_or(|w| excess > w.excess) {
                out = Some(Worst {
                    excess,
                    a,
                    since: a0,
                    b,
                    first: first.unwrap_or(a),
                });
            }
        }
        // a' for a = b: the last sample `lag` or more before it.
        let mut next = since.map_or(0, |x| x + 1);
        while next <= b && s.t[next] <= s.t[b] - lag {
            since = Some(next);
            next += 1;
        }
        let Some(a0) = since else { continue };
        first.get_or_insert(b);
        let low = s.get(b, c.group) - c.node(rec, a0, true);
        if least.is_none_or(|(_, _, l)| low < l) {
            least = Some((b, a0, low));
        }
    }
    out
}

/// within-node: none of `cgroup`'s events the node also counts rose by more than the node's
/// between any two samples.
pub fn within_node(name: String, rec: &Record, cgroup: &str) -> CheckResult {
    let cols: Vec<Cols> = (NODE_EVENTS.iter())
        .filter_map(|e| Cols::new(rec, cgroup, e))
        .collect();
    if cols.is_empty() || rec.series.len() < 2 {
        return missing(
            name,
            format!("no event of {cgroup} was sampled with its /proc/vmstat keys before and after"),
        );
    }
    let s = &rec.series;
    let last = s.len() - 1;
    let (mut rose, mut judged) = (Vec::new(), 0);
    for c in &cols {
        let Some(w) = worst(rec, c, lag(rec, cgroup)) else {
            continue;
        };
        let (tol, why) = tolerance(rec, c.event);
        if w.excess > tol {
            return failure(name, rec, cgroup, c, &w, (tol, why));
        }
        judged += 1;
        let d = s.get(last, c.group) - s.get(w.first, c.group);
        if d > 0 {
            rose.push(format!(
                "{} +{d} (at most {} beyond the node)",
                c.event.counter,
                w.excess.max(0)
            ));
        }
    }
    if judged == 0 {
        return missing(
            name,
            format!(
                "{cgroup}'s reads may show its events up to {} s late, and no sample came that long after the first",
                lag(rec, cgroup)
            ),
        );
    }
    if rose.is_empty() {
        return missing(
            name,
            format!(
                "none of {cgroup}'s {} events the node counts too rose",
                cols.len()
            ),
        );
    }
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!(
            "{} of {} events rose, none beyond the node's",
            rose.len(),
            cols.len()
        ),
        "<= the node's rise over the same samples (/proc/vmstat)".into(),
        format!(
            "{cgroup}'s events rose within the node's: {}",
            rose.join(", ")
        ),
    );
    res.tolerance = Some(format!(
        "per event: one call's count per CPU (counted in the memcg a moment before the node){}",
        match lag(rec, cgroup) {
            l if l > 0.0 => format!("; the group's reads may show its events up to {l} s late"),
            _ => String::new(),
        }
    ));
    res.columns = cols
        .iter()
        .map(|c| Column::group(cgroup, c.event.counter))
        .collect();
    res
}

fn failure(
    name: String,
    rec: &Record,
    cgroup: &str,
    c: &Cols,
    w: &Worst,
    (tol, why): (i64, String),
) -> CheckResult {
    let s = &rec.series;
    let col = Column::group(cgroup, c.event.counter);
    let group = s.get(w.b, c.group) - s.get(w.a, c.group);
    let node = c.node(rec, w.b, false) - c.node(rec, w.since, true);
    let keys = c.event.node.join(" + ");
    let (ta, tb) = (s.t[w.a], s.t[w.b]);
    let since = match w.since == w.a {
        true => String::new(),
        false => format!(
            " (from t={:.3}s: its read at t={ta:.3}s may show events up to {ANCESTOR_LAG} s late)",
            s.t[w.since]
        ),
    };
    let mut res = CheckResult::new(
        name,
        Outcome::Fail,
        format!("{col} +{group}"),
        format!("<= /proc/vmstat {keys} +{node} + {tol}"),
        format!(
            "from t={ta:.3}s to t={tb:.3}s (phase {}) {col} rose by {group} while the node's {keys} \
rose by {node}{since}: {} {} more than the whole machine counted (every path that counts one for a \
memcg counts it for the node too); {}",
            rec.phase_at(tb),
            group - node,
            c.event.counter,
            s.describe_cols(w.b, &c.all())
        ),
    );
    res.tolerance = Some(format!("{tol}: {why}"));
    res.at = Some(tb);
    res.bound = Some(node + tol);
    res.columns = vec![col];
    res
}

/// `within-node`: a group's events within the node's.
#[derive(Debug, Clone, PartialEq)]
pub struct WithinNode {
    pub cgroup: String,
}

/// `within-node` in the check table.
pub const KIND: Kind = Kind {
    kind: "within-node",
    doc: "A group counts no more of an event than the whole machine: wherever the kernel \
counts pgfault, pgmajfault, pgactivate, pgdeactivate, pglazyfree(d), swpin_zero, swpout_zero, \
zswpin, zswpout, zswpwb or a thp_* event for a memcg, the same code counts it in the node's vm \
events (/proc/vmstat); so do kswapd's scans and steals (pgscan_kswapd, pgsteal_kswapd) and \
every scan and steal by LRU type (the group's pgscan within pgscan_anon + pgscan_file, pgsteal \
within pgsteal_anon + pgsteal_file). Not pgscan_direct, pgsteal_direct or pgrefill: the node \
does not count a cgroup's own reclaim under them. /proc/vmstat is read before and after the \
group files, so over any two samples the group's rise is held to the node's rise between the \
read before the first and the read after the second. Other processes only add to the node's \
count: a busy machine weakens the check, never fails it. Tolerance per event: per CPU, the \
most one call counts in the memcg a moment before the node (1 for a fault or a huge page, a \
huge page's pages for a folio, a reclaim batch of 32 pages plus a huge page, 4096 with the \
multi-gen LRU, for reclaim's counts). A group's read may show its events late: the v2 top \
group's are flushed by the sampler before Linux 6.16 (its cpu.stat is read first), but any other group's (all \
of them on v1) may be up to 3 s old (the periodic flush, as in `hierarchy`), so its rise from \
a sample is held to the node's from 3 s before that sample. It fails on the event and the \
window where the group rose most beyond the node, naming both rises. Every scenario gets one for its own top group. Result name: \
`within-node(<cgroup>)`.",
    keys: &[CGROUP],
    parse,
    promises: &[],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(WithinNode {
        cgroup: i.cgroup("cgroup")?,
    }))
}

impl CheckSpec for WithinNode {
    fn name(&self) -> String {
        format!("within-node({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        let keys = node_keys();
        Needs {
            all_counters: true,
            vmstat: keys.clone(),
            vmstat_pre: keys,
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        within_node(self.name(), rec, &self.cgroup)
    }
}
