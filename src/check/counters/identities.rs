//! identities: what a group's counters must say of each other at every sample, by how the
//! kernel keeps and prints them: parts within their totals (huge pages within anon, mapped, dirty
//! and shmem within file, slab within kernel), sums that are sums (slab, pgscan, pgsteal), the
//! pages the LRU lists must hold, watermarks above what they watched, v1's memory+swap
//! counter against memory and swap, and a group's own values within its hierarchical ones (equal
//! for a group with no children). Every scenario gets it for every group.

use crate::check::hierarchy::parts::ANCESTOR_LAG;
use crate::check::{Check, CheckArgs, CheckResult, CheckSpec, Kind, Needs, Outcome, missing, opt};
use crate::model::contract::{Contract, Doc, v1, v2};
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;
use crate::model::{Column, Machine, Record, StepKind, counter};

/// How two sides of a rule compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rel {
    /// Equal (within the tolerance).
    Eq,
    /// The left side at most the right.
    Le,
}

/// Slack a rule needs beyond the statistics' unflushed bound, in pages per CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slack {
    None,
    /// Pages off the LRU lists for a moment: isolated by reclaim, compaction or migration (32 a
    /// batch each: SWAP_CLUSTER_MAX, COMPACT_CLUSTER_MAX) and waiting in the per-CPU LRU batches
    /// (31 a batch, a few kinds), plus a huge page isolated whole.
    Lru,
    /// Charges in flight between two files read one after another: a charge batch per CPU.
    Charge,
}

/// One identity or bound between a group's counters.
#[derive(Debug, Clone, Copy)]
struct Rule {
    lhs: &'static [&'static str],
    rel: Rel,
    rhs: &'static [&'static str],
    slack: Slack,
    /// The kernel fact it rests on.
    why: &'static str,
    /// The documented promises (of either version) whose meaning it holds the counters to.
    promises: &'static [&'static Contract],
    /// Only under cgroup v2 (the counters exist in v1 too but mean otherwise there).
    v2_only: bool,
}

const fn rule(
    lhs: &'static [&'static str],
    rel: Rel,
    rhs: &'static [&'static str],
    slack: Slack,
    why: &'static str,
    promises: &'static [&'static Contract],
) -> Rule {
    Rule {
        lhs,
        rel,
        rhs,
        slack,
        why,
        promises,
        v2_only: false,
    }
}

/// The identities and bounds, over the counters of the counter table. A rule applies where
/// every counter it names was sampled (the kernel shows them under this cgroup version).
const RULES: &[Rule] = &[
    rule(
        &["slab"],
        Rel::Eq,
        &["slab_reclaimable", "slab_unreclaimable"],
        Slack::None,
        "memory.stat prints slab as slab_reclaimable + slab_unreclaimable",
        &[&v2::STAT_SLAB],
    ),
    rule(
        &["anon_thp"],
        Rel::Le,
        &["anon"],
        Slack::None,
        "a mapped anonymous huge page is counted in anon too",
        &[&v2::STAT_THP, &v1::STAT_LOCAL],
    ),
    rule(
        &["file_thp"],
        Rel::Le,
        &["file"],
        Slack::None,
        "a page cache huge page is counted in file too",
        &[&v2::STAT_THP],
    ),
    rule(
        &["shmem_thp"],
        Rel::Le,
        &["shmem"],
        Slack::None,
        "a shmem huge page is counted in shmem too",
        &[&v2::STAT_THP],
    ),
    rule(
        &["shmem"],
        Rel::Le,
        &["file"],
        Slack::None,
        "shmem pages are page cache pages (NR_FILE_PAGES)",
        &[&v2::STAT_FILE, &v1::STAT_LOCAL],
    ),
    rule(
        &["mapped"],
        Rel::Le,
        &["file"],
        Slack::None,
        "a mapped file page is a page cache page",
        &[&v2::STAT_MAPPED, &v1::STAT_LOCAL],
    ),
    rule(
        &["dirty"],
        Rel::Le,
        &["file"],
        Slack::None,
        "a dirty file page is a page cache page",
        &[&v2::STAT_DIRTY, &v1::STAT_DIRTY],
    ),
    rule(
        &["writeback"],
        Rel::Le,
        &["file", "swapcached"],
        Slack::None,
        "a page under writeback is a page cache page or a swap cache page being swapped out",
        &[&v2::STAT_WRITEBACK, &v1::STAT_DIRTY],
    ),
    rule(
        &["anon", "file"],
        Rel::Le,
        &[
            "inactive_anon",
            "active_anon",
            "inactive_file",
            "active_file",
            "unevictable",
        ],
        Slack::Lru,
        "every mapped anonymous page and page cache page is on an LRU list, but for those isolated or batched for a moment",
        &[&v2::STAT_LRU, &v1::STAT_LRU],
    ),
    rule(
        &["slab", "kernel_stack", "pagetables", "percpu", "vmalloc"],
        Rel::Le,
        &["kernel"],
        Slack::Charge,
        "slab objects, kernel stacks, page tables, percpu and accounted vmalloc memory are charged as kernel memory (MEMCG_KMEM), in whole pages",
        &[&v2::STAT_KERNEL],
    ),
    Rule {
        v2_only: true,
        ..rule(
            &["swapcached"],
            Rel::Le,
            &["swap"],
            Slack::Charge,
            "v2 charges a page's swap slot from swap-out until the slot is freed, and a page leaves the swap cache before its slot goes (v1 uncharges the slot of a page swapped in: it may be cached without it)",
            &[&v2::STAT_SWAPCACHED],
        )
    },
    rule(
        &["swapcached"],
        Rel::Le,
        &["usage"],
        Slack::Charge,
        "a page in the swap cache that a group's statistics count is charged to it (NR_SWAPCACHE is counted on the folio's memcg, and a swapped-in folio is charged before it is added)",
        &[&v2::STAT_SWAPCACHED, &v1::STAT_SWAP],
    ),
    rule(
        &["swap_max_events"],
        Rel::Le,
        &["swap_fail_events"],
        Slack::None,
        "a swap charge refused at memory.swap.max counts as a failed swap-out too",
        &[&v2::SWAP_EVENTS],
    ),
    rule(
        &["oom_group_kills"],
        Rel::Le,
        &["oom_kills"],
        Slack::None,
        "an OOM that kills a whole group kills at least one task in it",
        &[&v2::EVENTS_OOM_GROUP_KILL],
    ),
    rule(
        &["usage"],
        Rel::Le,
        &["peak"],
        Slack::Charge,
        "the page counter's watermark is the most it ever held (read after the usage)",
        &[&v2::PEAK_MAX, &v1::MAX_USAGE],
    ),
    rule(
        &["swap"],
        Rel::Le,
        &["swap_peak"],
        Slack::Charge,
        "the swap counter's watermark is the most it ever held",
        &[&v2::SWAP_PEAK_MAX],
    ),
    rule(
        &["memsw"],
        Rel::Le,
        &["memsw_peak"],
        Slack::Charge,
        "the memory+swap counter's watermark is the most it ever held",
        &[&v1::MAX_USAGE],
    ),
    rule(
        &["kmem"],
        Rel::Le,
        &["kmem_peak"],
        Slack::Charge,
        "the kernel memory counter's watermark is the most it ever held",
        &[&v1::KMEM_USAGE],
    ),
    rule(
        &["kmem"],
        Rel::Le,
        &["usage"],
        Slack::Charge,
        "cgroup v1 charges kernel memory to the memory counter too",
        &[&v1::KMEM_USAGE],
    ),
    rule(
        &["memsw"],
        Rel::Eq,
        &["usage", "swap"],
        Slack::Charge,
        "cgroup v1's memory+swap counter is charged with every page and keeps the charge of a page swapped out",
        &[&v1::MEMSW_USAGE],
    ),
    rule(
        &["hierarchical_memory_limit"],
        Rel::Le,
        &["hierarchical_memsw_limit"],
        Slack::None,
        "v1 refuses a memory+swap limit below the memory limit",
        &[&v1::HIERARCHICAL_LIMIT],
    ),
    rule(
        &["pgscan"],
        Rel::Eq,
        &["pgscan_kswapd", "pgscan_direct", "pgscan_khugepaged"],
        Slack::None,
        "memory.stat prints pgscan as the sum of its kinds",
        &[&v2::STAT_RECLAIM],
    ),
    rule(
        &["pgsteal"],
        Rel::Eq,
        &["pgsteal_kswapd", "pgsteal_direct", "pgsteal_khugepaged"],
        Slack::None,
        "memory.stat prints pgsteal as the sum of its kinds",
        &[&v2::STAT_RECLAIM],
    ),
    rule(
        &["pgsteal"],
        Rel::Le,
        &["pgscan"],
        Slack::None,
        "reclaim frees only pages it scanned",
        &[&v2::STAT_RECLAIM],
    ),
    rule(
        &["pgmajfault"],
        Rel::Le,
        &["pgfault"],
        Slack::None,
        "a major fault is a fault",
        &[&v2::STAT_FAULTS],
    ),
    rule(
        &["workingset_activate_anon"],
        Rel::Le,
        &["workingset_refault_anon"],
        Slack::None,
        "a refaulting page is activated only after it refaulted",
        &[&v2::STAT_WORKINGSET],
    ),
    rule(
        &["workingset_activate_file"],
        Rel::Le,
        &["workingset_refault_file"],
        Slack::None,
        "a refaulting page is activated only after it refaulted",
        &[&v2::STAT_WORKINGSET],
    ),
    rule(
        &["workingset_restore_anon"],
        Rel::Le,
        &["workingset_refault_anon"],
        Slack::None,
        "a restored working set page is a refault",
        &[&v2::STAT_WORKINGSET],
    ),
    rule(
        &["workingset_restore_file"],
        Rel::Le,
        &["workingset_refault_file"],
        Slack::None,
        "a restored working set page is a refault",
        &[&v2::STAT_WORKINGSET],
    ),
    rule(
        &["pglazyfreed"],
        Rel::Le,
        &["pglazyfree"],
        Slack::None,
        "reclaim frees lazily freed pages only after MADV_FREE marked them",
        &[&v2::STAT_LAZYFREE],
    ),
];

/// Samples in a row a rule must be broken for: one may be a concurrent stats flush between two
/// lines of memory.stat.
const RUN: usize = 2;

/// A rule as it applies to one group: its columns, and what it is called.
struct Applied {
    text: String,
    why: String,
    lhs: Vec<usize>,
    rel: Rel,
    rhs: Vec<usize>,
    tol: i64,
    bytes: bool,
    /// Columns of the rule read twice in a sample, each with its second read.
    again: Vec<(usize, usize)>,
    /// Seconds one side may lag the other: a memory.stat counter's own and hierarchical values
    /// come from different views (before 6.8 the own one sums the per-CPU deltas at the read,
    /// the hierarchical one is the last flush, which the periodic flush renews every 2 s: 3.5
    /// MiB apart in a leaf on Debian's 6.1 under v1 while a writer ran).
    stale: f64,
    /// The documented promise it holds for this cgroup version, if any.
    promise: Option<&'static Contract>,
    /// LRU rules: the machine's pages isolated from the LRU lists (nr_isolated_anon/_file, read
    /// before and after the group files), added to each sample's tolerance. move_pages(2)
    /// isolates a whole run of pages before it moves any: 15.8 MiB of a group's 32 MiB of shmem
    /// off its lists for tens of ms under TCG (6.12, numa-migration), beyond the static slack.
    isolated: Vec<usize>,
}

/// Pages isolated off the LRU lists (reclaim, compaction, migration).
const ISOLATED: [&str; 2] = ["nr_isolated_anon", "nr_isolated_file"];

/// The tolerance of a rule over `terms` counters: the statistics' unflushed bound for each, plus
/// its slack.
fn tolerance(m: &Machine, terms: usize, slack: Slack, bytes: bool) -> i64 {
    let unit = if bytes { m.page_size as i64 } else { 1 };
    let batch = 2 * 64 * m.cpus as i64 * unit;
    let extra = match slack {
        Slack::None => 0,
        Slack::Lru => (4 * 32 + 31) * m.cpus as i64 * unit + (2 << 20) * m.cpus as i64,
        Slack::Charge => 64 * m.cpus as i64 * unit,
    };
    batch * terms.max(1) as i64 + extra
}

/// The rules that apply to `cgroup`'s sampled columns: the table's, and each counter sampled
/// with its own value (`.local`) within its hierarchical one, equal for a group without
/// sampled children.
fn applied(rec: &Record, cgroup: &str) -> Vec<Applied> {
    let s = &rec.series;
    let col = |c: &str| s.col(&Column::group(cgroup, c));
    let unit_bytes = |c: &str| {
        crate::model::counter::counter(c)
            .is_none_or(|k| k.unit == crate::model::counter::Unit::Bytes)
    };
    let mut out = Vec::new();
    for r in RULES {
        if r.v2_only && rec.version != crate::model::Version::V2 {
            continue;
        }
        let (Some(lhs), Some(rhs)) = (
            r.lhs.iter().map(|c| col(c)).collect::<Option<Vec<_>>>(),
            r.rhs.iter().map(|c| col(c)).collect::<Option<Vec<_>>>(),
        ) else {
            continue;
        };
        let bytes = unit_bytes(r.lhs[0]);
        out.push(Applied {
            text: format!(
                "{} {} {}",
                r.lhs.join(" + "),
                if r.rel == Rel::Eq { "=" } else { "<=" },
                r.rhs.join(" + ")
            ),
            why: r.why.to_string(),
            lhs,
            rel: r.rel,
            rhs,
            tol: tolerance(&rec.machine, r.lhs.len() + r.rhs.len(), r.slack, bytes),
            bytes,
            again: again_of(s, [r.lhs, r.rhs].concat().iter().map(|c| col(c))),
            stale: 0.0,
            promise: of_version(r.promises, rec),
            isolated: match r.slack {
                Slack::Lru => (ISOLATED.iter())
                    .flat_map(|k| [Column::vmstat(k), Column::vmstat_pre(k)])
                    .filter_map(|c| s.col(&c))
                    .collect(),
                _ => Vec::new(),
            },
        });
    }
    let leaf = !(s.groups().iter()).any(|g| crate::model::is_below(g, cgroup));
    for (i, c) in s.columns().iter().enumerate() {
        let Column::Group {
            group,
            counter,
            local: true,
        } = c
        else {
            continue;
        };
        let Some(total) = col(counter).filter(|_| group == cgroup) else {
            continue;
        };
        let bytes = unit_bytes(counter);
        out.push(Applied {
            text: if leaf {
                format!("{counter}.local = {counter}")
            } else {
                format!("{counter}.local <= {counter}")
            },
            why: if leaf {
                "a group without children holds all of its hierarchical count itself".into()
            } else {
                "a group's own count is part of its hierarchical one".into()
            },
            lhs: vec![i],
            rel: if leaf { Rel::Eq } else { Rel::Le },
            rhs: vec![total],
            tol: tolerance(&rec.machine, 2, Slack::None, bytes),
            bytes,
            again: Vec::new(),
            stale: match counter::counter(counter).map(|c| &c.source) {
                Some(counter::Source::Stat { .. }) => ANCESTOR_LAG,
                _ => 0.0,
            },
            promise: of_version(&[&v2::EVENTS_LOCAL, &v1::STAT_TOTAL], rec),
            isolated: Vec::new(),
        });
    }
    out
}

/// The columns among `cols` that the sampler read a second time, each with that read.
fn again_of(
    s: &crate::model::Series,
    cols: impl Iterator<Item = Option<usize>>,
) -> Vec<(usize, usize)> {
    cols.flatten()
        .filter_map(|c| match &s.columns()[c] {
            Column::Group {
                group,
                counter,
                local: false,
            } => Some((c, s.col(&Column::again(group, counter))?)),
            _ => None,
        })
        .collect()
}

/// The promise of `list` made for the record's cgroup version.
fn of_version(list: &[&'static Contract], rec: &Record) -> Option<&'static Contract> {
    let doc = match rec.version {
        crate::model::Version::V1 => Doc::V1,
        crate::model::Version::V2 => Doc::V2,
    };
    list.iter().copied().find(|c| c.doc == doc)
}

fn amount(v: i64, bytes: bool) -> String {
    if bytes { human_bytes(v) } else { v.to_string() }
}

/// identities: every rule that applies to `cgroup` holds at every sample, within its tolerance,
/// but for one sample at a time (`RUN`). A rule whose counters stayed within twice its tolerance
/// could not fail: it is listed as not exercised, and with none exercised the check is not.
pub fn identities(name: String, rec: &Record, cgroup: &str) -> CheckResult {
    let rules = applied(rec, cgroup);
    if rules.is_empty() {
        return missing(
            name,
            format!("no two related counters of {cgroup} were sampled"),
        );
    }
    let s = &rec.series;
    // v1 charge moving is a transaction across the group's counters (the destination is
    // precharged for memory and memory+swap, swap statistics move entry by entry, the
    // precharge is settled at the end: 16.7 MiB of memsw = usage + swap apart for 40 ms on
    // 6.12): samples during a move, and its stale window after, are not judged.
    let lag = crate::check::stale_lag(rec, cgroup);
    let moving = |t: f64| {
        rec.steps
            .iter()
            .chain(&rec.stopped)
            .any(|st| st.kind == StepKind::Move && st.start <= t && t <= st.end + lag)
    };
    let rows: Vec<usize> = (0..s.len()).filter(|&r| !moving(s.t[r])).collect();
    let mut held = Vec::new();
    let mut idle = Vec::new();
    let mut judged: Vec<String> = Vec::new();
    for a in &rules {
        let top = match judge_rule(rec, a, &rows) {
            Ok(top) => top,
            Err(r) => return broken(name, rec, cgroup, a, r),
        };
        if top > 2 * a.tol {
            held.push(format!("{} (up to {})", a.text, amount(top, a.bytes)));
            judged.extend(
                a.promise
                    .map(|p| p.id.to_string())
                    .filter(|p| !judged.contains(p)),
            );
        } else {
            idle.push(a.text.clone());
        }
    }
    if held.is_empty() {
        return missing(
            name,
            format!(
                "none of {cgroup}'s {} identities had counters that moved beyond their tolerance: none could fail ({})",
                rules.len(),
                idle.join("; ")
            ),
        );
    }
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!(
            "{} of {} identities exercised, held at all {} samples",
            held.len(),
            rules.len(),
            rows.len()
        ),
        "every identity within its tolerance".into(),
        format!(
            "{cgroup}: {}{}",
            held.join("; "),
            if idle.is_empty() {
                String::new()
            } else {
                format!(
                    "; not exercised (their counters stayed near 0): {}",
                    idle.join("; ")
                )
            }
        ),
    );
    res.tolerance = Some(format!(
        "per rule: {} per counter in it, plus for the LRU rules the pages off the lists for a moment (isolated by reclaim or migration, in per-CPU LRU batches, a huge page per CPU) and for watermarks and counters read apart a charge batch per CPU; broken in {RUN} samples in a row",
        rec.machine.stat_batch_explained()
    ));
    res.columns = rules
        .iter()
        .flat_map(|a| a.lhs.iter().chain(&a.rhs))
        .map(|&c| s.columns()[c].clone())
        .collect();
    res.promises = judged;
    res
}

/// One rule over the rows judged: the largest amount either side reached, or the row where the
/// rule had been off by more than its tolerance for `RUN` samples in a row.
fn judge_rule(rec: &Record, a: &Applied, rows: &[usize]) -> Result<i64, usize> {
    let s = &rec.series;
    let (mut run, mut top) = (0, 0i64);
    for &r in rows {
        let (l, h) = (a.side(s, r, &a.lhs), a.side(s, r, &a.rhs));
        top = top.max(l.1.abs()).max(h.1.abs());
        // With a lag allowed, either side may show what the other showed up to then.
        let recent = (0..=r).rev().take_while(|&q| s.t[r] - s.t[q] <= a.stale);
        let off = recent
            .map(|q| {
                a.gap(l, a.side(s, q, &a.rhs))
                    .min(a.gap(a.side(s, q, &a.lhs), h))
            })
            .min()
            .unwrap_or_else(|| a.gap(l, h));
        run = if off > a.tol + a.isolated_at(s, r, rec.machine.page_size) {
            run + 1
        } else {
            0
        };
        if run >= RUN {
            return Err(r);
        }
    }
    Ok(top)
}

impl Applied {
    /// Bytes the machine had isolated from the LRU lists at row `r` (the larger of the reads
    /// before and after the group files, anon and file each).
    fn isolated_at(&self, s: &crate::model::Series, r: usize, page: u64) -> i64 {
        let pages: i64 = (self.isolated.chunks(2))
            .map(|pair| pair.iter().map(|&c| s.get(r, c)).max().unwrap_or(0))
            .sum();
        pages.max(0) * page as i64
    }

    /// A side's sum at row `r` as a range: a counter read twice in the sample (the usage, before
    /// and after the group's other files, see `Column::Again`) held a value between its two reads
    /// when the others were read.
    fn side(&self, s: &crate::model::Series, r: usize, cols: &[usize]) -> (i64, i64) {
        cols.iter().fold((0, 0), |(lo, hi), &c| {
            let v = s.get(r, c);
            let w = (self.again.iter())
                .find(|(first, _)| *first == c)
                .map_or(v, |&(_, again)| s.get(r, again));
            (lo + v.min(w), hi + v.max(w))
        })
    }

    /// How far the left side is off the right: for `=` the distance between the ranges, for
    /// `<=` how far the left's least exceeds the right's most.
    fn gap(&self, l: (i64, i64), h: (i64, i64)) -> i64 {
        match self.rel {
            Rel::Eq => (l.0 - h.1).max(h.0 - l.1).max(0),
            Rel::Le => l.0 - h.1,
        }
    }
}

fn broken(name: String, rec: &Record, cgroup: &str, a: &Applied, r: usize) -> CheckResult {
    let s = &rec.series;
    let t = s.t[r];
    let read = |c: usize| match a.again.iter().find(|(first, _)| *first == c) {
        Some(&(_, again)) => format!(
            "{} {} (read again: {})",
            s.columns()[c],
            amount(s.get(r, c), a.bytes),
            amount(s.get(r, again), a.bytes)
        ),
        None => format!("{} {}", s.columns()[c], amount(s.get(r, c), a.bytes)),
    };
    let side = |cols: &[usize]| {
        cols.iter()
            .map(|&c| read(c))
            .collect::<Vec<_>>()
            .join(" + ")
    };
    let (l, h): (i64, i64) = (
        a.lhs.iter().map(|&c| s.get(r, c)).sum(),
        a.rhs.iter().map(|&c| s.get(r, c)).sum(),
    );
    let mut res = CheckResult::new(
        name,
        Outcome::Fail,
        format!("{} = {}", side(&a.lhs), amount(l, a.bytes)),
        format!(
            "{} {} = {} +- {}",
            if a.rel == Rel::Eq { "=" } else { "<=" },
            side(&a.rhs),
            amount(h, a.bytes),
            amount(a.tol, a.bytes)
        ),
        format!(
            "at t={t:.3}s (phase {}) {cgroup}'s {} broke by {} for {RUN} samples in a row, though {} {}",
            rec.phase_at(t),
            a.text,
            amount(
                a.gap(a.side(s, r, &a.lhs), a.side(s, r, &a.rhs)).abs(),
                a.bytes
            ),
            a.why,
            s.csv_line(r)
        ),
    );
    res.at = Some(t);
    res.bound = Some(h);
    res.columns = a.lhs.iter().map(|&c| s.columns()[c].clone()).collect();
    res.tolerance = Some(format!(
        "{} (the statistics' unflushed bound per counter, and this rule's slack)",
        amount(a.tol, a.bytes)
    ));
    match a.promise {
        Some(p) => res.breaking(p),
        None => res,
    }
}

/// `identities`: the identities and bounds between `cgroup`'s counters hold at every sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Identities {
    pub cgroup: String,
}

/// `identities` in the check table.
pub const KIND: Kind = Kind {
    kind: "identities",
    doc: "What a group's counters must say of each other at every sample, by how the kernel \
keeps and prints them: parts within their totals (anon_thp within anon, file_thp, shmem, \
mapped and dirty within file, writeback within file + swapcached, the swap cache within the usage, slab, kernel stacks, \
page tables, percpu and vmalloc within kernel, swap.max events within swap fail events, the swap cache within swap (v2), \
group OOM kills within OOM kills), sums that are sums (slab, pgscan, pgsteal), \
reclaim's and the working set's events within what they count (pgsteal <= pgscan, \
pgmajfault <= pgfault, activations and restores <= refaults, pglazyfreed <= pglazyfree), \
every mapped anonymous and page cache page on an LRU list (within the pages isolated or \
batched for a moment; not the other way round: unmapped pages stay on the lists until \
their batch is freed), each watermark at least its counter, v1's memory+swap counter equal to memory \
plus swap, v1's hierarchical memory+swap limit at least its memory limit, and a group's \
own values within its hierarchical ones (v1 memory.stat, v2 memory.events.local; equal \
for a group without children). A rule applies where the kernel shows every counter it \
names. The usage is read before and after the group's other files; a rule holds with \
any value between the two reads. It fails when a rule is broken beyond its tolerance in two \
samples in a row. \
Samples during a `move` step (v1 charge moving precharges the destination and settles \
at the end) and its stale window after are not judged. \
Rules whose counters never moved beyond twice their tolerance are listed as not \
exercised; the pass line names the others with how far their counters went. Every \
scenario gets one for every group. Result name: `identities(<cgroup>)`.",
    keys: &[opt(
        "cgroup",
        "the declared group judged; may be left out when the scenario declares one group only",
    )],
    parse,
    promises: &[
        &v2::STAT_SLAB,
        &v2::STAT_THP,
        &v2::STAT_FILE,
        &v2::STAT_MAPPED,
        &v2::STAT_DIRTY,
        &v2::STAT_WRITEBACK,
        &v2::STAT_LRU,
        &v2::STAT_KERNEL,
        &v2::SWAP_EVENTS,
        &v2::EVENTS_OOM_GROUP_KILL,
        &v2::PEAK_MAX,
        &v2::SWAP_PEAK_MAX,
        &v2::STAT_RECLAIM,
        &v2::STAT_FAULTS,
        &v2::STAT_WORKINGSET,
        &v2::STAT_LAZYFREE,
        &v2::EVENTS_LOCAL,
        &v1::STAT_LOCAL,
        &v1::STAT_DIRTY,
        &v1::STAT_LRU,
        &v1::MAX_USAGE,
        &v1::KMEM_USAGE,
        &v1::MEMSW_USAGE,
        &v1::HIERARCHICAL_LIMIT,
        &v1::STAT_TOTAL,
    ],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(Identities {
        cgroup: i.cgroup("cgroup")?,
    }))
}

impl CheckSpec for Identities {
    fn name(&self) -> String {
        format!("identities({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs {
            all_counters: true,
            vmstat: ISOLATED.map(String::from).to_vec(),
            ..Needs::default()
        }
    }
    /// A gap is confirmed by the samples up to it.
    fn online(&self) -> bool {
        true
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        identities(self.name(), rec, &self.cgroup)
    }
}

/// The counters the rules judge (for the coverage table): every counter a rule names.
pub fn judged() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for r in RULES {
        for c in r.lhs.iter().chain(r.rhs) {
            if !out.contains(c) {
                out.push(c);
            }
        }
    }
    out
}
