//! usage-covers: a group's usage (its page counter: v1 memory.usage_in_bytes, v2 memory.current)
//! is at least its anon + file (memory.stat), plus its kernel memory (v2 memory.stat kernel, v1
//! memory.kmem.usage_in_bytes) and socket buffers (v2 sock) where they are sampled. Every page
//! counted in the group's statistics was charged to its page counter first and is uncharged only
//! after it left them, so the counter holds them all (and charges in flight, swap cache on top).
//! A statistic that counts a page twice, or keeps a page that left, shows here; a missing one
//! does not (that is `holds-files` and `tasks`). The same holds for its LRU lists (plus kernel
//! memory and sockets): a list that keeps pages that left it shows here too.

use crate::check::args::CheckArgs;
use crate::check::{
    Check, CheckResult, CheckSpec, Kind, Needs, Outcome, columns, missing, opt, stale_lag,
};
use crate::model::contract::{v1, v2};
use crate::model::counter::{ANON, FILE, USAGE};
use crate::model::error::ScenarioError;
use crate::model::sum_label;
use crate::model::units::human_bytes;
use crate::model::{Machine, Record};

/// `usage-covers`: `cgroup`'s anon + file never exceeds its usage, at any sample.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageCovers {
    pub cgroup: String,
}

/// `usage-covers` in the check table.
pub const KIND: Kind = Kind {
    kind: "usage-covers",
    doc: "The group's anon + file (memory.stat), plus its kernel memory (v2 `kernel`, v1 \
memory.kmem.usage_in_bytes) and socket buffers (v2 `sock`) where the kernel shows them, \
never exceed its usage (the page counter: v1 memory.usage_in_bytes, v2 memory.current). \
Every page counted in the group's statistics was charged to its page counter first and \
is uncharged only after it left them, so the counter holds them all (and charges in \
flight, swap cache on top). A statistic that counts a page twice, or keeps a page that \
left, shows here; a missing one does not (that is `holds-files` and `tasks`). The same for \
the LRU lists (inactive_anon + active_anon + inactive_file + active_file + unevictable, plus \
kernel memory and sockets) where all five are sampled: every page on a group's LRU lists was \
charged to it before it was added and is uncharged only after it left them. The \
statistics are compared with the largest usage of their stale window (0.1 s; 3 s for a \
parent; the usage is read before and after the statistics, and the larger read counts), and an excess must last 2 samples (one that began during a `fault` loop below a \
parent also 3 s: the parent's unflushed statistics may show a burst between two samples that \
no usage read saw). Tolerance: the unflushed-stats bound + 64 \
pages × CPUs (charged between the usage read and the memory.stat read), with the \
unflushed bound once per part. Not exercised when the parts stayed within twice the \
tolerance. Result name: \
`usage-covers(<cgroup>)`.",
    keys: &[opt(
        "cgroup",
        "the group (default: the only declared group)",
    )],
    parse,
    promises: &[
        &v2::TRACK_KERNEL,
        &v2::TRACK_SOCK,
        &v1::USAGE,
        &v1::KMEM_USAGE,
    ],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(UsageCovers {
        cgroup: i.cgroup("cgroup")?,
    }))
}

impl CheckSpec for UsageCovers {
    fn name(&self) -> String {
        format!("usage-covers({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: [USAGE, ANON, FILE].map(String::from).to_vec(),
            ..Needs::default()
        }
    }
    /// A gap is confirmed by the samples up to it (see `Gap`).
    fn online(&self) -> bool {
        true
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        usage_covers(self.name(), rec, &self.cgroup)
    }
}

/// Samples above the usage by more than the tolerance this many times in a row fail.
const RUN: usize = 2;

/// The sums a group's usage must hold, of the parts sampled: its statistics' anon and file, and
/// its LRU lists (every page on a memcg's LRU lists was charged to it before it was added, and is
/// uncharged only after it left them); each with its kernel memory (v2 `kernel`, v1 `kmem`) and
/// socket buffers (v2 `sock`), which are charged but on no LRU list, where the kernel shows them.
const SUMS: [&[&str]; 2] = [
    &[ANON, FILE, "kernel", "kmem", "sock"],
    &[
        "inactive_anon",
        "active_anon",
        "inactive_file",
        "active_file",
        "unevictable",
        "kernel",
        "kmem",
        "sock",
    ],
];

/// The LRU lists, all of which the second sum needs.
const LRU: [&str; 5] = [
    "inactive_anon",
    "active_anon",
    "inactive_file",
    "active_file",
    "unevictable",
];

/// The unflushed statistics of each part plus a charge batch per CPU: the usage is read before
/// memory.stat, so pages charged in between are in the statistics only (the per-CPU charge
/// stock, 64 pages, is charged ahead and usually hides them).
fn tolerance(m: &Machine, parts: usize) -> (i64, String) {
    let batch = 64 * m.cpus * m.page_size;
    let t = m.stat_batch_bytes() * parts as u64 + batch;
    (
        t as i64,
        format!(
            "{} = {parts} x {} + 64 pages x {} CPUs (charged between the usage read and the memory.stat read)",
            human_bytes(t as i64),
            m.stat_batch_explained(),
            m.cpus
        ),
    )
}

/// The group's usage against each sum it must hold (see `SUMS`): the first sum that broke it
/// fails the check; else it passes on the sums that could have failed.
pub fn usage_covers(name: String, rec: &Record, cgroup: &str) -> CheckResult {
    let want = [USAGE, ANON, FILE].map(String::from);
    let usage = match columns(rec, cgroup, &want) {
        Ok(c) => c[0].1,
        Err(e) => return missing(name, e),
    };
    let mut results = Vec::new();
    for (i, sum) in SUMS.iter().enumerate() {
        let parts: Vec<(&str, usize)> = (sum.iter())
            .filter_map(|p| Some((*p, rec.series.col(&crate::model::Column::group(cgroup, p))?)))
            .collect();
        // The LRU sum only with all five lists.
        if i > 0 && parts.iter().filter(|(p, _)| LRU.contains(p)).count() < LRU.len() {
            continue;
        }
        let r = covers(name.clone(), rec, cgroup, usage, parts);
        if r.outcome == Outcome::Fail {
            return r;
        }
        results.push(r);
    }
    let first = results.iter().position(|r| r.outcome == Outcome::Pass);
    results.swap_remove(first.unwrap_or(0))
}

/// The usage against one sum of `parts`.
fn covers(
    name: String,
    rec: &Record,
    cgroup: &str,
    usage: usize,
    parts: Vec<(&str, usize)>,
) -> CheckResult {
    let (tol, tol_text) = tolerance(&rec.machine, parts.len());
    let c = Covers {
        rec,
        cgroup,
        usage,
        again: rec.series.col(&crate::model::Column::again(cgroup, USAGE)),
        parts,
        tol,
        tol_text,
        lag: stale_lag(rec, cgroup),
    };
    let s = &rec.series;
    let mut gap = crate::check::Gap::new(rec, cgroup);
    let (mut worst, mut most) = (i64::MIN, 0);
    for r in 0..s.len() {
        let t = s.t[r];
        let held = c.held(r);
        let ceil = c.ceiling(r);
        let over = held - ceil;
        most = most.max(held);
        if held > tol {
            worst = worst.max(over);
        }
        if gap.confirmed(t, over > tol, RUN) {
            return c.uncovered(name, r, ceil);
        }
    }
    if most <= 2 * tol {
        return missing(
            name,
            format!(
                "{cgroup}'s {} reached at most {}, within twice the tolerance: the check could not fail",
                c.names().join(" + "),
                human_bytes(most)
            ),
        );
    }
    c.passed(name, (worst, most), &gap)
}

/// What the check compares: the group's usage column, the parts of it that were sampled, the
/// tolerance and how long the statistics may lag the page counter.
struct Covers<'a> {
    rec: &'a Record,
    cgroup: &'a str,
    usage: usize,
    /// The usage read again after the statistics, where sampled.
    again: Option<usize>,
    /// Each part's name and column.
    parts: Vec<(&'a str, usize)>,
    tol: i64,
    tol_text: String,
    lag: f64,
}

impl Covers<'_> {
    fn names(&self) -> Vec<&str> {
        self.parts.iter().map(|(n, _)| *n).collect()
    }

    /// The parts' sum at row `r`.
    fn held(&self, r: usize) -> i64 {
        (self.parts.iter())
            .map(|(_, c)| self.rec.series.get(r, *c))
            .sum::<i64>()
    }

    /// The parts at row `r`, one by one ("anon 1.0 MiB + file 2.0 MiB").
    fn split(&self, r: usize) -> String {
        (self.parts.iter())
            .map(|(n, c)| format!("{n} {}", human_bytes(self.rec.series.get(r, *c))))
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// The largest usage in the `lag` up to row `r`. Statistics may lag the page counter (a
    /// parent's up to the periodic flush): pages freed a moment ago are still in them. They must
    /// fit the largest usage of that window. Each row's usage was read before its statistics
    /// and again after them (`again`): the sampler may be kept off the CPU between its reads
    /// while a reader charges megabytes (4 MiB between the reads of one sample, 4 readers on 2
    /// CPUs on 6.18 v1), so the row's larger read counts.
    fn ceiling(&self, r: usize) -> i64 {
        let s = &self.rec.series;
        let t = s.t[r];
        (0..=r)
            .rev()
            .take_while(|&q| t - s.t[q] <= self.lag)
            .map(|q| {
                let again = self.again.map_or(i64::MIN, |c| s.get(q, c));
                s.get(q, self.usage).max(again)
            })
            .max()
            .unwrap_or(0)
    }

    /// The failure for parts that stayed above the usage (`ceil` at row `r`).
    fn uncovered(self, name: String, r: usize, ceil: i64) -> CheckResult {
        let (rec, cgroup, s) = (self.rec, self.cgroup, &self.rec.series);
        let t = s.t[r];
        let held = self.held(r);
        let names = self.names();
        let sum_cols = crate::check::group_columns(cgroup, &names);
        let mut res = CheckResult::new(
            name,
            Outcome::Fail,
            format!("{} {}", sum_label(&sum_cols), human_bytes(held)),
            format!(
                "<= {cgroup}'s usage {} + {}",
                human_bytes(ceil),
                human_bytes(self.tol)
            ),
            format!(
                "at t={t:.3}s (phase {}) {cgroup}'s {} ({}) were {} above the most its page counter held in the {:.0} ms before, for {RUN} samples in a row: its statistics count pages that were never charged to it, or twice: {}",
                rec.phase_at(t),
                names.join(" + "),
                self.split(r),
                human_bytes(held - ceil),
                self.lag * 1000.0,
                s.describe_row(r)
            ),
        );
        res.at = Some(t);
        res.bound = Some(ceil);
        res.columns = sum_cols;
        res.tolerance = Some(self.tol_text);
        res
    }

    /// The pass result: the closest the parts came to the usage (`worst`) and their largest sum
    /// (`most`).
    fn passed(
        &self,
        name: String,
        (worst, most): (i64, i64),
        gap: &crate::check::Gap,
    ) -> CheckResult {
        let (cgroup, names) = (self.cgroup, self.names());
        let mut res = CheckResult::new(
            name,
            Outcome::Pass,
            format!(
                "closest: {} {} {} the usage, over {} samples",
                names.join(" + "),
                human_bytes(worst.abs()),
                if worst > 0 { "above" } else { "below" },
                self.rec.series.len()
            ),
            format!("{cgroup}'s {} <= its usage", names.join(" + ")),
            format!(
                "{cgroup}'s usage held its {} (up to {}) at every sample",
                names.join(" + "),
                human_bytes(most)
            ),
        );
        res.tolerance = Some(format!(
            "{}, for {RUN} samples in a row; statistics may lag the counter by {:.0} ms{}",
            self.tol_text,
            self.lag * 1000.0,
            gap.text()
        ));
        res
    }
}
