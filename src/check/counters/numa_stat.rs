//! numa-stat: a group's per-node counts (v2 memory.numa_stat, summed over the nodes) equal its
//! memory.stat. The kernel keeps a node counter of a memcg twice, per memcg and per memcg and node
//! (the lruvec), updated together and flushed together; memory.stat shows the first,
//! memory.numa_stat the second. A kernel that updates one and not the other shows a group that
//! holds dirty pages on no node.

use crate::check::args::CheckArgs;
use crate::check::{
    Check, CheckResult, CheckSpec, Kind, Needs, Outcome, columns, missing, opt, req,
};
use crate::model::contract::{v1, v2};
use crate::model::counter::{V1_NUMA, V1Numa, numa_key};
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;
use crate::model::{Column, Record, Series};

/// `numa-stat`: `cgroup`'s counters equal their sums over the nodes, at every sample (cgroup v2).
#[derive(Debug, Clone, PartialEq)]
pub struct NumaStat {
    pub cgroup: String,
    pub counters: Vec<String>,
    /// Every node counter the kernel shows (the invariant every v2 scenario gets), not `counters`.
    pub all: bool,
}

/// `numa-stat` in the check table.
pub const KIND: Kind = Kind {
    kind: "numa-stat",
    doc: "cgroup v2: each counter in memory.stat equals its sum over the nodes in \
memory.numa_stat. The kernel keeps a node counter of a memcg twice, per memcg and per \
memcg and node (the lruvec), updated together and flushed together; memory.stat shows \
the first, memory.numa_stat the second. A kernel that updates one and not the other \
shows a group that holds dirty pages on no node. memory.numa_stat is read just before \
and after memory.stat, so what memory.stat showed must lie between the two sums; a gap \
must last 3 samples (dirty goes up and down within one pass while writeback takes \
pages: one sample 1.0 MiB outside on Debian 6.1 under dirty-migration). Tolerance: the \
unflushed-stats bound. Under v1, whose memory.numa_stat lists LRU sizes only (in pages), \
the check every group gets compares each of its lines with the memory.stat LRU counters it \
covers (hierarchical_file with total_inactive_file + total_active_file, file with \
inactive_file + active_file, ...), a declared one is not run; without CONFIG_NUMA (no \
memory.numa_stat) none is: a note says so. Not exercised when none \
of the counters rose above the tolerance; one that did not is named in the detail. \
Result name: `numa-stat(<cgroup>)`.",
    keys: &[
        opt("cgroup", "the group (default: the only declared group)"),
        req(
            "counters",
            "node counters only: `dirty`, `writeback`, `file`, `anon`, `mapped`, `shmem` (those with \
a /proc/vmstat key; no `.local`)",
        ),
    ],
    parse,
    promises: &[&v2::NUMA_STAT, &v1::NUMA_STAT],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    let counters = i.counters()?;
    if let Some(c) = counters.iter().find(|c| numa_key(c).is_none()) {
        let span = i.need::<Vec<String>>("counters")?.span();
        return Err(i.err(
            span,
            format!("{c} is not kept per node (memory.numa_stat has the node counters: those with a /proc/vmstat key, and no .local)"),
        ));
    }
    Ok(Check::new(NumaStat {
        cgroup: i.cgroup("cgroup")?,
        counters,
        all: false,
    }))
}

impl CheckSpec for NumaStat {
    fn name(&self) -> String {
        format!("numa-stat({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: self.counters.clone(),
            numa: Some(self.cgroup.clone()),
            all_counters: self.all,
            ..Needs::default()
        }
    }
    /// A run of samples that disagree is confirmed when it happens.
    fn online(&self) -> bool {
        true
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        if !self.all {
            return numa_stat(self.name(), rec, &self.cgroup, &self.counters);
        }
        // Every node counter sampled with its numa_stat sums.
        let counters: Vec<String> = rec
            .series
            .columns()
            .iter()
            .filter_map(|c| match c {
                Column::Numa {
                    group,
                    counter,
                    pre: false,
                } if group == &self.cgroup => Some(counter.clone()),
                _ => None,
            })
            .collect();
        if counters.is_empty() {
            return missing(
                self.name(),
                format!("{}'s memory.numa_stat was not sampled", self.cgroup),
            );
        }
        if counters.iter().any(|c| V1_NUMA.iter().any(|l| l.name == c)) {
            return v1_lru(self.name(), rec, &self.cgroup);
        }
        numa_stat(self.name(), rec, &self.cgroup, &counters)
    }
}

/// Samples apart by more than the tolerance this many times in a row fail. The bracket of the two
/// numa_stat reads holds what memory.stat showed while the counter moves one way; while a writer
/// dirties pages and writeback takes them, dirty goes up and down within one pass (up to 1.0 MiB
/// outside the bracket in one sample on Debian 6.1 under dirty-migration). A count the kernel
/// keeps wrong stays wrong.
const RUN: usize = 3;

pub fn numa_stat(name: String, rec: &Record, cgroup: &str, counters: &[String]) -> CheckResult {
    let cols = match columns(rec, cgroup, counters) {
        Ok(c) => c,
        Err(e) => return missing(name, e),
    };
    let s = &rec.series;
    let (mut most, mut worst) = (0i64, 0i64);
    // Counters that never rose above the tolerance: a gap in them could not show.
    let mut quiet = Vec::new();
    for ((col, stat), counter) in cols.iter().zip(counters) {
        let tol = tol_of(rec, counter);
        let top = (0..s.len()).map(|r| s.get(r, *stat)).max().unwrap_or(0);
        if top <= tol {
            quiet.push(counter.as_str());
        }
        let numa = |pre| s.col(&Column::numa(cgroup, counter, pre));
        let (Some(pre), Some(post)) = (numa(true), numa(false)) else {
            return missing(
                name,
                format!("{cgroup}'s memory.numa_stat {counter} was not sampled"),
            );
        };
        match compare(s, (pre, post), |r| s.get(r, *stat), tol) {
            Err(at) => return apart(name, rec, cgroup, (col, counter), tol, at),
            // The figures of the message are the sizes' (events have no bytes).
            Ok((m, w)) if !events(counter) => {
                most = most.max(m);
                worst = worst.max(w);
            }
            Ok(_) => {}
        }
    }
    if quiet.len() == counters.len() {
        return missing(
            name,
            format!(
                "{cgroup}'s {} stayed within the tolerance ({}): the check could not fail",
                counters.join(", "),
                human_bytes(most)
            ),
        );
    }
    passed(name, rec, cgroup, counters, &quiet, (most, worst))
}

/// Whether counter `c` counts events rather than bytes.
fn events(c: &str) -> bool {
    crate::model::counter::counter(c).is_some_and(|k| k.unit == crate::model::counter::Unit::Events)
}

/// The unflushed bound: in pages for a size, in events for an event count.
fn tol_of(rec: &Record, c: &str) -> i64 {
    let batch = rec.machine.stat_batch_bytes() as i64;
    if events(c) {
        batch / rec.machine.page_size as i64
    } else {
        batch
    }
}

/// `v` of counter `c`, for messages: a count for events, a size otherwise.
fn amount(c: &str, v: i64) -> String {
    if events(c) {
        v.to_string()
    } else {
        human_bytes(v)
    }
}

/// A sample at which memory.stat showed `v`, `gap` outside the nodes' sums `a` (read just
/// before it) and `b` (just after).
struct Outside {
    r: usize,
    a: i64,
    b: i64,
    v: i64,
    gap: i64,
}

/// Compares `value` (what memory.stat showed) at every sample with the nodes' sums in columns
/// `pre` and `post`: the sample that completes the first run of RUN gaps above `tol`, or else the
/// largest value and the largest gap.
fn compare(
    s: &Series,
    (pre, post): (usize, usize),
    value: impl Fn(usize) -> i64,
    tol: i64,
) -> Result<(i64, i64), Outside> {
    let (mut most, mut worst, mut run) = (0i64, 0i64, 0);
    for r in 0..s.len() {
        // What memory.stat showed against the nodes' sums read just before and after it.
        let (a, b) = (s.get(r, pre), s.get(r, post));
        let v = value(r);
        let gap = (a.min(b) - v).max(v - a.max(b)).max(0);
        most = most.max(v);
        worst = worst.max(gap);
        run = if gap > tol { run + 1 } else { 0 };
        if run >= RUN {
            return Err(Outside { r, a, b, v, gap });
        }
    }
    Ok((most, worst))
}

/// The nodes' sums read before and after a sample (`a`, `b`), as `amount` writes them: one
/// figure when they agree, else their range.
fn sums(a: i64, b: i64, amount: impl Fn(i64) -> String) -> String {
    if a == b {
        amount(a)
    } else {
        format!("{}..{}", amount(a.min(b)), amount(a.max(b)))
    }
}

/// The failure for a v2 counter (column `col`) that stayed outside its nodes' sums.
fn apart(
    name: String,
    rec: &Record,
    cgroup: &str,
    (col, counter): (&Column, &str),
    tol: i64,
    at: Outside,
) -> CheckResult {
    let Outside { r, a, b, v, gap } = at;
    let t = rec.series.t[r];
    let mut res = CheckResult::new(
        name,
        Outcome::Fail,
        format!(
            "{col} {} but its nodes sum to {}",
            amount(counter, v),
            sums(a, b, |x| amount(counter, x))
        ),
        format!("equal within {}", amount(counter, tol)),
        format!(
            "at t={t:.3}s (phase {}) {cgroup}'s memory.stat {counter} was {} outside the sums over the nodes of its memory.numa_stat read just before and after it, for {RUN} samples in a row: the per-node (lruvec) count and the memcg's count no longer move together: {}",
            rec.phase_at(t),
            amount(counter, gap),
            rec.series.describe_row(r)
        ),
    );
    res.at = Some(t);
    res.columns = vec![col.clone()];
    res
}

/// The v2 pass result: the largest value and gap of the sizes, and the counters that stayed
/// `quiet` (within the tolerance).
fn passed(
    name: String,
    rec: &Record,
    cgroup: &str,
    counters: &[String],
    quiet: &[&str],
    (most, worst): (i64, i64),
) -> CheckResult {
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!(
            "largest gap {} over {} samples",
            human_bytes(worst),
            rec.series.len()
        ),
        "memory.stat = sum over nodes of memory.numa_stat".into(),
        format!(
            "{cgroup}'s {} equalled their sums over the nodes at every sample (up to {})",
            counters.join(", "),
            human_bytes(most)
        ) + &if quiet.is_empty() {
            String::new()
        } else {
            format!(
                "; {} never rose above the tolerance, so a gap in it could not show",
                quiet.join(", ")
            )
        },
    );
    res.tolerance = Some(format!(
        "{}, for {RUN} samples in a row; memory.numa_stat is read just before and after memory.stat, and the count memory.stat showed may lie anywhere between the two",
        rec.machine.stat_batch_explained()
    ));
    res
}

/// cgroup v1: each line of memory.numa_stat, summed over the nodes, equals the memory.stat LRU
/// counters it covers (`hierarchical_file` = total_inactive_file + total_active_file, `file` =
/// inactive_file + active_file, ...): both are the memcg's LRU sizes, kept per node (the lruvec)
/// and per memcg together. memory.numa_stat is read just before and after memory.stat; a gap
/// must last RUN samples.
fn v1_lru(name: String, rec: &Record, cgroup: &str) -> CheckResult {
    let s = &rec.series;
    let batch = rec.machine.stat_batch_bytes() as i64;
    let (mut most, mut worst) = (0i64, 0i64);
    let mut judged = 0;
    for line in V1_NUMA {
        let numa = |pre| s.col(&Column::numa(cgroup, line.name, pre));
        let (Some(pre), Some(post)) = (numa(true), numa(false)) else {
            continue;
        };
        let parts: Option<Vec<usize>> = line
            .parts
            .iter()
            .map(|p| s.col(&Column::group(cgroup, p)))
            .collect();
        let Some(parts) = parts else {
            continue;
        };
        judged += 1;
        let tol = batch * parts.len() as i64;
        let value = |r: usize| parts.iter().map(|&c| s.get(r, c)).sum::<i64>();
        match compare(s, (pre, post), value, tol) {
            Err(at) => return lru_apart(name, rec, cgroup, line, tol, at),
            Ok((m, w)) => {
                most = most.max(m);
                worst = worst.max(w);
            }
        }
    }
    if judged == 0 {
        return missing(name, format!("{cgroup}'s memory.numa_stat was not sampled"));
    }
    if most <= 2 * batch {
        return missing(
            name,
            format!(
                "{cgroup}'s LRU lists held at most {}, within twice the tolerance: the check could not fail",
                human_bytes(most)
            ),
        );
    }
    lru_passed(name, rec, cgroup, judged, (most, worst))
}

/// The v1 failure for a memory.numa_stat line whose LRU counters stayed outside its nodes' sums.
fn lru_apart(
    name: String,
    rec: &Record,
    cgroup: &str,
    line: &V1Numa,
    tol: i64,
    at: Outside,
) -> CheckResult {
    let Outside { r, a, b, v, gap } = at;
    let t = rec.series.t[r];
    let sum = line.parts.join(" + ");
    let mut res = CheckResult::new(
        name,
        Outcome::Fail,
        format!(
            "{cgroup}'s {sum} {} but memory.numa_stat {} sums to {}",
            human_bytes(v),
            line.key,
            sums(a, b, human_bytes)
        ),
        format!("equal within {}", human_bytes(tol)),
        format!(
            "at t={t:.3}s (phase {}) {cgroup}'s memory.stat {sum} was {} outside the sums over the nodes of its memory.numa_stat line {} read just before and after it, for {RUN} samples in a row: the per-node LRU sizes and the memcg's no longer agree: {}",
            rec.phase_at(t),
            human_bytes(gap),
            line.key,
            rec.series.describe_row(r)
        ),
    );
    res.at = Some(t);
    res.columns = line
        .parts
        .iter()
        .map(|p| Column::group(cgroup, p))
        .collect();
    res
}

/// The v1 pass result: how many lines were judged, the largest LRU size and gap.
fn lru_passed(
    name: String,
    rec: &Record,
    cgroup: &str,
    judged: usize,
    (most, worst): (i64, i64),
) -> CheckResult {
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!(
            "largest gap {} over {} samples",
            human_bytes(worst),
            rec.series.len()
        ),
        "memory.stat LRU counters = sums over nodes of memory.numa_stat".into(),
        format!(
            "{cgroup}'s {judged} memory.numa_stat lines (its own LRU lists and its hierarchy's, up to {}) equalled memory.stat's LRU counters at every sample",
            human_bytes(most)
        ),
    );
    res.tolerance = Some(format!(
        "{} per counter summed, for {RUN} samples in a row",
        rec.machine.stat_batch_explained()
    ));
    res
}
