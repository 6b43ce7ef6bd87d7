//! The parts of a parent's hierarchical counter: its own value and its children's, the columns
//! they are in, how far one sampler pass can skew them, and how long the parent may lag them. Both
//! the hierarchy check (`sums`) and its stale-or-wrong judge (`flush`) read them.

use crate::check::groups;
use crate::model::Column;
use crate::model::Record;
use crate::model::counter::{self, USAGE};

/// How much a set of columns can move while one sampler pass reads the files one after another:
/// their rate of change around the row times the pass duration (the `sampler.pass_us` column).
pub(super) fn read_skew(rec: &Record, row: usize, cols: &[usize]) -> i64 {
    let Some(pc) = rec.series.col(&Column::pass()) else {
        return 0;
    };
    let pass = rec.series.get(row, pc) as f64 / 1e6;
    let mut rate = 0.0f64;
    for &c in cols {
        for (a, b) in [
            (row.saturating_sub(1), row),
            (row, (row + 1).min(rec.series.len() - 1)),
        ] {
            let dt = rec.series.t[b] - rec.series.t[a];
            if dt > 0.0 {
                let r = (rec.series.get(b, c) - rec.series.get(a, c)).abs() as f64 / dt;
                rate = rate.max(r);
            }
        }
    }
    (rate * pass * cols.len() as f64) as i64
}

/// The parent's direct child groups among the sampled ones.
pub(super) fn children(rec: &Record, parent: &str) -> Vec<String> {
    groups(rec)
        .into_iter()
        .filter(|g| crate::model::is_child(g, parent))
        .collect()
}

/// Whether the kernel keeps `c` with the memcg statistics (memory.stat, flushed from per-CPU
/// deltas: a parent can lag), rather than in a page counter or an event file it raises in every
/// ancestor at once.
pub(in crate::check) fn flushed(c: &str) -> bool {
    match counter::counter(c).map(|k| k.source) {
        Some(counter::Source::File { v1, v2, .. }) => {
            [v1, v2].iter().flatten().any(|l| l.file == "memory.stat")
        }
        _ => true,
    }
}

/// Whether `c` is an event count the kernel keeps exact in every ancestor (memory.events:
/// memcg_memory_event raises the group's and each ancestor's atomic count at once), so a
/// parent's differs from its parts' by read skew only.
pub(super) fn exact(c: &str) -> bool {
    counter::counter(c).is_some_and(|k| k.unit == counter::Unit::Events) && !flushed(c)
}

/// How long a parent's hierarchical counters may lag its children's: the memcg's periodic flush
/// of the whole tree (FLUSH_TIME, 2 s in mm/memcontrol.c) plus 1 s for the deferrable work to run
/// on a busy or emulated machine. A read flushes only what the kernel thinks is pending; since
/// 6.16 ("memcg: optimize memcg_rstat_updated") an update stops counting towards the ancestors at
/// the first group already due for a flush, so a parent read after its child stays stale until
/// the periodic flush, whose period has no bound under load (docs/findings.md).
pub const ANCESTOR_LAG: f64 = 3.0;

/// One counter's columns: the parent's hierarchical one, its own (v1 `.local`) and its
/// children's, and the parent's page counter where it bounds the counter; with the tolerance of
/// their sum.
pub(super) struct Parts {
    /// The parent's hierarchical column, and where it is in a row.
    pub(super) column: Column,
    pub(super) p: usize,
    /// The parent's own value (v1 `.local`), where sampled.
    pub(super) own: Option<usize>,
    /// Each child's hierarchical column.
    pub(super) kids: Vec<usize>,
    /// Every column above but the page counter, for the read skew.
    pub(super) all: Vec<usize>,
    /// The parent's page counter (exact at every read), for counters of pages in memory: a
    /// parent counting more than it is charged for shows statistics not yet flushed.
    pub(super) usage: Option<usize>,
    /// A count of events, not a size.
    pub(super) events: bool,
    /// (children + 1) x the unflushed-stats bound (in events for an event count); 0 for
    /// memory.events, which have no per-CPU residue.
    pub(super) tol_base: i64,
    /// The parent was flushed right before it was read (the v2 top group: see `fresh`), so it
    /// cannot be stale.
    pub(super) fresh: bool,
}

/// Whether `parent`'s statistics were flushed right before each read: the v2 top group, whose
/// cpu.stat the sampler reads first, on kernels before 6.16 (reading a v2 group's cpu.stat
/// flushed the rstat tree below it, the memcg statistics with it; see
/// `crate::model::record::cpu_stat_flushes_memcg`).
pub(super) fn fresh(rec: &Record, parent: &str) -> bool {
    rec.machine.flushed_before_read(rec.version, parent)
}

impl Parts {
    /// The columns of counter `c`, or which one was not sampled.
    pub(super) fn new(
        rec: &Record,
        parent: &str,
        children: &[String],
        c: &str,
    ) -> Result<Parts, String> {
        let events = counter::counter(c).is_some_and(|k| k.unit == counter::Unit::Events);
        let batch = rec.machine.stat_batch_bytes() as i64
            / if events {
                rec.machine.page_size as i64
            } else {
                1
            };
        // memory.events are exact in every ancestor (memcg_memory_event raises the group's
        // and each ancestor's count at once, atomically): only read skew separates them. So are
        // memory.stat's events at a freshly flushed top group (`fresh`): the flush leaves no
        // per-CPU residue anywhere below it, and the top group, holding no tasks and no pages,
        // raises none of its own. Its sizes keep the bound: creating a child charges the
        // child's memcg structures (slab, percpu) to the parent (mem_cgroup_css_alloc:
        // set_active_memcg(parent)), a size of the top group's own that no child shows.
        let fresh = fresh(rec, parent);
        let tol_base = if exact(c) || (events && fresh) {
            0
        } else {
            batch * (children.len() as i64 + 1)
        };
        let column = Column::group(parent, c);
        let Some(p) = rec.series.col(&column) else {
            return Err(format!("column {column} was not sampled"));
        };
        let own = rec.series.col(&Column::local(parent, c));
        let mut kids = Vec::new();
        for ch in children {
            let child = Column::group(ch, c);
            match rec.series.col(&child) {
                Some(i) => kids.push(i),
                None => return Err(format!("column {child} was not sampled")),
            }
        }
        let mut all: Vec<usize> = vec![p];
        all.extend(&kids);
        all.extend(own);
        let usage = (counter::global_key(c).is_some())
            .then(|| rec.series.col(&Column::group(parent, USAGE)))
            .flatten();
        Ok(Parts {
            column,
            p,
            own,
            kids,
            all,
            usage,
            events,
            tol_base,
            fresh,
        })
    }

    /// For a count with no residue (`tol_base` 0): how much its parts rose since the sample
    /// before. The parent is read before its parts, so events between its read and theirs show
    /// in the parts only, and they all came after the parts' previous read: a parent short of
    /// its parts by at most that is read skew. A slow, steady count (a huge page faulted every
    /// pass) is short by one in every sample, which a rate x pass-time skew rounds to 0 (seen on
    /// 6.12: (top).thp_fault_alloc 9 against its parts' 10 in two samples). A parent that lost
    /// events stays short once they stop rising.
    pub(super) fn since_last(&self, rec: &Record, r: usize) -> i64 {
        if self.tol_base != 0 || r == 0 {
            return 0;
        }
        (self.sum(rec, r) - self.sum(rec, r - 1)).max(0)
    }

    /// How far the parent may differ from its parts at row `r`: the residue bound, read skew and
    /// (for exact counts) what the parts counted since the sample before.
    pub(super) fn tol(&self, rec: &Record, r: usize) -> i64 {
        self.tol_base + read_skew(rec, r, &self.all) + self.since_last(rec, r)
    }

    /// The parent's own value plus its children's at row `r`.
    pub(super) fn sum(&self, rec: &Record, r: usize) -> i64 {
        self.own.map(|o| rec.series.get(r, o)).unwrap_or(0)
            + self.kids.iter().map(|&k| rec.series.get(r, k)).sum::<i64>()
    }
}
